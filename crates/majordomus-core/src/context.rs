//! What a capability handler gets to work with: the site (the checkout this process is
//! about, its configuration and what is kept of its reading), the serving process through the
//! board port, and the caller.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use majordomus_checkout::changes::ChangesCache;
use majordomus_checkout::config::{Config, UserFiles};
use majordomus_checkout::conflicts::{ConflictPredictor, GitVersion};
use majordomus_checkout::git::Checkout;
use majordomus_checkout::notice::KnownAbsent;
use majordomus_checkout::{BranchWatch, WorktreeList};
use majordomus_domain::changes::WorktreeChanges;
use majordomus_domain::conflicts::{ConflictHunk, ConflictSummary};
use majordomus_domain::peers::PeerId;
use tokio::sync::watch;

use crate::api::CapabilityError;
use crate::port::BoardPort;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

/// The checkout this process is about, and how to reach other checkouts' servers.
pub struct Site {
    pub checkout: Checkout,
    pub config: Config,
    /// The repository's worktrees, listed by git only when they change.
    pub worktrees: WorktreeList,
    /// This checkout's branch, read again only when `HEAD` changes.
    pub branch: BranchWatch,
    /// The worktrees' leases found absent while the registry's notice stood still.
    pub absent_leases: KnownAbsent,
    /// One HTTP client for probes and sibling reads, so connections are reused.
    pub http: reqwest::Client,
    /// Each worktree's changes, read by git at most once per [`CHANGES_INTERVAL`].
    pub changes: ChangesCache,
    /// Worktree snapshots and merge results kept between conflict predictions.
    pub conflicts: ConflictPredictor,
    /// The latest background reading of every worktree's changes and of the conflicts
    /// between them, for the boards of worktrees without a server and for `peers.list`.
    readings: RepositoryReadings,
    git_version: std::sync::OnceLock<Result<GitVersion, String>>,
}

/// How old a worktree's changes may be before git is asked again: fresh enough that an
/// edit shows within about a second, rare enough that a busy board costs git little.
pub const CHANGES_INTERVAL: Duration = Duration::from_secs(1);

/// Up to how many worktrees a repository's small files are read inline (see
/// [`Site::reads_inline`]).
pub const INLINE_READ_WORKTREES: usize = 8;

impl Site {
    pub fn new(checkout: Checkout, config: Config) -> Self {
        let http = reqwest::Client::builder()
            .no_proxy()
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .expect("an HTTP client builds without TLS");
        let conflicts = ConflictPredictor::new(checkout.common_dir.clone());
        Site {
            checkout,
            config,
            worktrees: WorktreeList::default(),
            branch: BranchWatch::default(),
            absent_leases: KnownAbsent::default(),
            http,
            changes: ChangesCache::new(CHANGES_INTERVAL),
            conflicts,
            readings: RepositoryReadings::default(),
            git_version: std::sync::OnceLock::new(),
        }
    }

    /// Opens the site of a directory: its checkout and the repository's configuration. Every
    /// command and the benchmark start from here, so a directory outside git or a
    /// configuration that cannot be used is refused in the same words everywhere.
    pub fn open(dir: &std::path::Path) -> Result<Arc<Site>, String> {
        Site::open_with(dir, UserFiles::of)
    }

    /// [`Site::open`], with the person's own files (configuration, allowances) where
    /// `user_files` says for the checkout found: a benchmark's servers read the bench's own.
    pub fn open_with(
        dir: &std::path::Path,
        user_files: impl FnOnce(&Checkout) -> UserFiles,
    ) -> Result<Arc<Site>, String> {
        let checkout = Checkout::discover(dir)
            .map_err(|error| format!("cannot use {}: {error}", dir.display()))?;
        let config = majordomus_checkout::config::load_with(&checkout.root, &user_files(&checkout))
            .map_err(|error| error.to_string())?;
        Ok(Arc::new(Site::new(checkout, config)))
    }

    /// Whether the repository's few small files a call reads (the worktree registry's stamps,
    /// siblings' leases) are read on the calling thread: yes while the repository is known to
    /// have at most [`INLINE_READ_WORKTREES`] worktrees, whose handful of `stat`s and reads
    /// cost less than a hop to a blocking thread and back; beyond it, or before the
    /// worktrees were first listed, they are read on a blocking thread, so that a repository
    /// of a hundred worktrees never holds a runtime thread for a millisecond.
    pub fn reads_inline(&self) -> bool {
        self.worktrees
            .cached_count()
            .is_some_and(|count| count <= INLINE_READ_WORKTREES)
    }

    /// The version of the git on PATH, asked once per process (it runs git).
    pub fn git_version(&self) -> Result<GitVersion, String> {
        self.git_version
            .get_or_init(|| {
                GitVersion::of_git(&self.checkout.root).map_err(|error| error.to_string())
            })
            .clone()
    }

    /// The version of the git on PATH if it was asked already; `None` before the first
    /// [`Site::git_version`], which runs git.
    pub fn known_git_version(&self) -> Option<Result<GitVersion, String>> {
        self.git_version.get().cloned()
    }

    /// The serving process that keeps the repository's shared state (its lease table, its
    /// mailbox) when the repository is federated; `None` when it is not, and the state is
    /// kept in files of its git dir. A federated repository's state is reached only through its
    /// serving process (`port`, when this process serves), which follows the federation; never
    /// the file instead, so without it the answer is `no_server`'s refusal.
    pub fn federated_through<'a>(
        &self,
        port: Option<&'a dyn BoardPort>,
        no_server: &str,
    ) -> Result<Option<&'a dyn BoardPort>, CapabilityError> {
        if self.config.federation.url.is_none() {
            return Ok(None);
        }
        port.map(Some)
            .ok_or_else(|| CapabilityError::refused(no_server))
    }

    pub fn probe_timeout(&self) -> Duration {
        self.config.timings.probe_timeout()
    }

    /// How long ago a sibling's server may last have confirmed its board for a serving
    /// process to list that board from memory: the probe timeout, the time a live read of it
    /// is given. An older memory is not used; the board is asked as if nothing were kept, so
    /// a sibling that stopped answering is reported unread within twice the probe timeout,
    /// and a board listed from memory is never older than a live read could have been.
    pub fn sibling_view_bound(&self) -> Duration {
        self.probe_timeout()
    }

    /// The latest reading of the whole repository. One older than [`CHANGES_INTERVAL`] (or
    /// none) starts `read` in the background, unless a reading is under way; only one ever
    /// is. The new one is waited for, at most `wait`, when there is none yet or the last one
    /// took less than that; otherwise, and when it is not done in time, the previous reading
    /// is the answer (its age is stated where it is used). `read` is what the capabilities
    /// make of the repository: the site keeps it without knowing how it is made.
    pub async fn repository_reading(
        self: &Arc<Self>,
        wait: Duration,
        read: impl Future<Output = RepositoryReading> + Send + 'static,
    ) -> Option<Arc<RepositoryReading>> {
        let readings = &self.readings;
        let mut news = readings.latest.subscribe();
        let current = news.borrow_and_update().clone();
        if current
            .as_ref()
            .is_some_and(|reading| reading.started.elapsed() < CHANGES_INTERVAL)
        {
            return current;
        }
        if !readings.running.swap(true, Ordering::AcqRel) {
            tokio::spawn(publish_reading(self.clone(), read));
        }
        if current.as_ref().is_some_and(|reading| reading.took >= wait) {
            return current;
        }
        match tokio::time::timeout(wait, news.changed()).await {
            Ok(Ok(())) => news.borrow().clone(),
            _ => current,
        }
    }
}

/// What every worktree of the repository changed, as read here, and the merge conflicts
/// predicted between them, read together by one background task at a time.
#[derive(Default)]
struct RepositoryReadings {
    latest: watch::Sender<Option<Arc<RepositoryReading>>>,
    /// Whether a reading is under way; only one ever is.
    running: AtomicBool,
}

/// One reading of the whole repository.
pub struct RepositoryReading {
    /// When it began: its age is stated with what is read from it.
    pub started: Instant,
    /// How long it took: whether the next one is worth waiting for.
    pub took: Duration,
    /// Each worktree's changes, by where it is.
    pub changes: HashMap<String, WorktreeChanges>,
    /// The merge conflicts predicted between them, in short.
    pub conflicts: ConflictSummary,
    /// The first conflicting hunks of each conflict `conflicts` lists, in the same order,
    /// for the pre-edit guard to quote; no answer carries them.
    pub conflict_hunks: Vec<Vec<ConflictHunk>>,
}

/// Runs `read` and publishes it as the site's latest reading.
async fn publish_reading(site: Arc<Site>, read: impl Future<Output = RepositoryReading>) {
    /// Clears the site's `running` flag however the reading ends.
    struct Running(Arc<Site>);
    impl Drop for Running {
        fn drop(&mut self) {
            self.0.readings.running.store(false, Ordering::Release);
        }
    }
    let running = Running(site);
    let reading = read.await;
    running
        .0
        .readings
        .latest
        .send_replace(Some(Arc::new(reading)));
}

/// One call's context: where it runs, and how far the caller reaches into the serving
/// process. The serving process is seen through the board port only, so a capability
/// never depends on the server that runs it.
#[derive(Clone)]
pub struct Context {
    pub site: Arc<Site>,
    reach: Reach,
}

/// How far a caller must reach into the serving process for a capability to run, as its
/// declaration says: the registry refuses a caller who does not reach that far before the
/// capability runs, with the same words on every surface, and a capability that needs an
/// MCP session has no route or command, where it could never run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Runs for anyone, a process that does not serve included: other checkouts are read
    /// through their leases.
    Anyone,
    /// Runs only in the checkout's serving process, whose memory holds what it answers from
    /// (the hooks' sessions, the open episodes).
    Server,
    /// Runs only for an MCP session's peer: what it does belongs to that peer.
    Session,
}

/// How far a call reaches: a peer exists only on a serving process, so the three cases are
/// all there are.
#[derive(Clone)]
enum Reach {
    /// A process that does not serve: every checkout, its own included, is read through its
    /// lease, as a sibling would be.
    Observer,
    /// The serving process, asked without an MCP session (plain HTTP, hooks).
    Served(Arc<dyn BoardPort>),
    /// An MCP session's peer on the serving process.
    Session(Arc<dyn BoardPort>, PeerId),
}

impl Context {
    pub fn observer(site: Arc<Site>) -> Self {
        Context {
            site,
            reach: Reach::Observer,
        }
    }

    /// A call to the serving process `server`, made by `caller` when it came through an MCP
    /// session that has a peer.
    pub fn served(site: Arc<Site>, server: Arc<dyn BoardPort>, caller: Option<PeerId>) -> Self {
        let reach = match caller {
            Some(caller) => Reach::Session(server, caller),
            None => Reach::Served(server),
        };
        Context { site, reach }
    }

    /// The serving process, when this process serves.
    pub fn server(&self) -> Option<&Arc<dyn BoardPort>> {
        match &self.reach {
            Reach::Observer => None,
            Reach::Served(server) | Reach::Session(server, _) => Some(server),
        }
    }

    /// [`Self::server`] as the port a capability asks.
    pub fn port(&self) -> Option<&dyn BoardPort> {
        self.server().map(|server| server.as_ref())
    }

    /// The peer that made the call, for a call through an MCP session.
    pub fn caller(&self) -> Option<&PeerId> {
        match &self.reach {
            Reach::Session(_, caller) => Some(caller),
            Reach::Observer | Reach::Served(_) => None,
        }
    }

    /// Whether this call reaches as far as `needs` says.
    pub fn reaches(&self, needs: Needs) -> bool {
        match needs {
            Needs::Anyone => true,
            Needs::Server => self.server().is_some(),
            Needs::Session => self.caller().is_some(),
        }
    }

    /// The serving process and the calling peer, for a call that needs both.
    pub fn session(&self) -> Option<(&Arc<dyn BoardPort>, &PeerId)> {
        match &self.reach {
            Reach::Session(server, caller) => Some((server, caller)),
            Reach::Observer | Reach::Served(_) => None,
        }
    }
}
