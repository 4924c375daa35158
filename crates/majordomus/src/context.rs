//! What a capability handler gets to work with.

use std::sync::Arc;
use std::time::Duration;

use majordomus_checkout::WorktreeList;
use majordomus_checkout::changes::ChangesCache;
use majordomus_checkout::config::Config;
use majordomus_checkout::conflicts::{ConflictPredictor, GitVersion};
use majordomus_checkout::git::Checkout;
use majordomus_domain::peers::PeerId;

use crate::capabilities::peers::RepositoryReadings;
use crate::server::ServerState;

/// The checkout this process is about, and how to reach other checkouts' servers.
pub struct Site {
    pub checkout: Checkout,
    pub config: Config,
    /// The repository's worktrees, listed by git only when they change.
    pub worktrees: WorktreeList,
    /// One HTTP client for probes and sibling reads, so connections are reused.
    pub http: reqwest::Client,
    /// Each worktree's changes, read by git at most once per [`CHANGES_INTERVAL`].
    pub changes: ChangesCache,
    /// Worktree snapshots and merge results kept between conflict predictions.
    pub conflicts: ConflictPredictor,
    /// The latest background reading of every worktree's changes and of the conflicts
    /// between them, for the boards of worktrees without a server and for `peers.list`.
    pub readings: RepositoryReadings,
    git_version: std::sync::OnceLock<Result<GitVersion, String>>,
}

/// How old a worktree's changes may be before git is asked again: fresh enough that an
/// edit shows within about a second, rare enough that a busy board costs git little.
pub const CHANGES_INTERVAL: Duration = Duration::from_secs(1);

impl Site {
    pub fn new(checkout: Checkout, config: Config) -> Self {
        let http = reqwest::Client::builder()
            .no_proxy()
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .expect("an HTTP client builds without TLS");
        Site {
            checkout,
            config,
            worktrees: WorktreeList::default(),
            http,
            changes: ChangesCache::new(CHANGES_INTERVAL),
            conflicts: ConflictPredictor::new(),
            readings: RepositoryReadings::default(),
            git_version: std::sync::OnceLock::new(),
        }
    }

    /// The version of the git on PATH, asked once per process (it runs git).
    pub fn git_version(&self) -> Result<GitVersion, String> {
        self.git_version
            .get_or_init(|| {
                GitVersion::of_git(&self.checkout.root).map_err(|error| error.to_string())
            })
            .clone()
    }

    pub fn probe_timeout(&self) -> Duration {
        Duration::from_millis(self.config.timings.probe_timeout_ms)
    }
}

/// One call's context: where it runs, the server it reached (if this process serves), and the
/// peer that made it (set only for calls that arrive through an MCP connection).
#[derive(Clone)]
pub struct Context {
    pub site: Arc<Site>,
    pub server: Option<Arc<ServerState>>,
    pub caller: Option<PeerId>,
}

impl Context {
    /// A context for a process that does not serve: every checkout, its own included, is read
    /// through its lease, as a sibling would be.
    pub fn observer(site: Arc<Site>) -> Self {
        Context {
            site,
            server: None,
            caller: None,
        }
    }
}
