//! The board port kept in memory, for tests that call the capabilities as every transport
//! does without starting a server: no lease, no listener, no episode driver, no background
//! task. The board's rules are the domain's own coordination, called as the server calls it;
//! what only a serving process has (its lease, its address, its HTTP sessions, the
//! federation) is a fixed value, so an answer depends on the calls made and nothing else.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use futures::future::BoxFuture;
use majordomus_checkout::ancestry::ProcessStamp;
use majordomus_checkout::config::Config;
use majordomus_checkout::lease::{LEASE_SCHEMA, LeaseView};
use majordomus_checkout::process::ExecutableStamp;
use majordomus_domain::board::Signal;
use majordomus_domain::board::{CheckedAnnouncement, Recorded};
use majordomus_domain::checkouts::ServerStanding;
use majordomus_domain::coordination::Coordination;
use majordomus_domain::episodes::{Attached, ConnectionEpisode, EpisodeList};
use majordomus_domain::limits;
use majordomus_domain::paths::ClaimPath;
use majordomus_domain::peers::{
    AnnounceInput, ClientInfo, Peer, PeerId, Transport, WaitHolder, WaitReason, Waiting,
};
use majordomus_domain::sync::LockExt;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

use majordomus_core::api::CapabilityError;
use majordomus_core::context::testing::site_in_repository;
use majordomus_core::context::{Context, Site};
use majordomus_core::episodes::providers::GENERIC;
use majordomus_core::port::{
    BoardPort, BoardSnapshot, EDITS_CLAIM, KeptSlot, SiblingBoard, SpeedBumps,
};
use majordomus_federation::Federation;

/// The address the in-memory server says it answers on; nothing listens there.
pub(crate) const URL: &str = "http://127.0.0.1:9";

/// The intent of a session's `edits` claim.
const EDITS_INTENT: &str = "files this session edited";

/// A client session named by its hooks: the peer that speaks for it, and what it was told.
#[derive(Default)]
struct Session {
    peer: Option<PeerId>,
    told: HashSet<u64>,
}

/// A serving process's board, in memory only.
pub(crate) struct MemoryPort {
    root: String,
    claim_grace: Duration,
    boards: Mutex<Coordination>,
    sessions: Mutex<HashMap<String, Session>>,
    speed_bumps: Mutex<SpeedBumps>,
    federation: Federation,
    listing: KeptSlot,
}

impl MemoryPort {
    pub(crate) fn new(site: &Site) -> MemoryPort {
        let timings = &site.config.timings;
        MemoryPort {
            root: site.checkout.root.display().to_string(),
            claim_grace: timings.claim_grace(),
            boards: Mutex::new(Coordination::new(
                site.checkout.root.display().to_string(),
                timings.reattach_grace(),
            )),
            sessions: Mutex::default(),
            speed_bumps: Mutex::default(),
            federation: Federation::new(&site.config.federation, CancellationToken::new()),
            listing: KeptSlot::default(),
        }
    }

    /// Puts an MCP client's connection on the board, as its `initialize` would.
    pub(crate) fn attach(&self, client: &str) -> PeerId {
        let introduction = ClientInfo {
            name: client.to_owned(),
            version: "1.0.0".to_owned(),
            title: None,
        };
        self.boards()
            .peers_mut()
            .attach(Transport::Stdio, introduction, SystemTime::now())
    }

    fn boards(&self) -> MutexGuard<'_, Coordination> {
        self.boards.lock_or_recover()
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock_or_recover()
    }

    /// Releases the claims of peers that left longer than the claim grace ago.
    fn expire(&self, boards: &mut Coordination, now: SystemTime) {
        boards.expire(now, self.claim_grace);
    }

    /// Gives `peer` the episode `external_id`; a peer that did not hold it already takes
    /// over the claims of the departed peers that held it.
    fn attach_now(&self, peer: &PeerId, external_id: &str) -> Attached {
        let now = SystemTime::now();
        let mut boards = self.boards();
        let outcome = boards.take_episode(peer, external_id, GENERIC, now).outcome;
        Attached {
            episode: outcome.episode,
            resumed: outcome.resumed,
            reattach_grace_seconds: boards.episodes().grace().as_secs(),
        }
    }

    /// `peer`'s connection is gone: it departs, its `edits` claim withdrawn, and its episode
    /// waits for its client.
    fn leave(&self, peer: &PeerId) {
        let now = SystemTime::now();
        self.boards().depart(peer, EDITS_CLAIM, now);
    }
}

impl BoardPort for MemoryPort {
    fn own_standing(&self) -> ServerStanding {
        ServerStanding::Ready
    }

    fn own_standing_reason(&self) -> Option<String> {
        None
    }

    fn lease_view(&self) -> LeaseView {
        LeaseView {
            schema: LEASE_SCHEMA.to_owned(),
            pid: std::process::id(),
            process_start: None,
            root: self.root.clone(),
            url: self.url(),
            started_at: "2026-01-01T00:00:00Z".to_owned(),
            executable: ExecutableStamp {
                path: "majordomus".to_owned(),
                mtime: "2026-01-01T00:00:00Z".to_owned(),
                size: 0,
            },
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }

    fn url(&self) -> Option<String> {
        Some(URL.to_owned())
    }

    fn attached_peers(&self) -> usize {
        self.boards().peers().attached_count()
    }

    fn http_sessions(&self) -> (usize, usize) {
        (0, 0)
    }

    fn board_peers(&self, now: SystemTime) -> Vec<Peer> {
        let mut boards = self.boards();
        self.expire(&mut boards, now);
        boards.peers().peers(now)
    }

    fn board_peer(&self, id: &PeerId, now: SystemTime) -> Option<Peer> {
        let mut boards = self.boards();
        self.expire(&mut boards, now);
        boards.peers().peer(id, now)
    }

    fn board_peers_meeting(&self, paths: &[ClaimPath], now: SystemTime) -> Vec<Peer> {
        let mut boards = self.boards();
        self.expire(&mut boards, now);
        boards.peers().peers_meeting(paths, now)
    }

    fn board_peer_paths(&self, id: &PeerId) -> Vec<Arc<[ClaimPath]>> {
        self.boards().peers().compared_paths(id)
    }

    fn bridged_peers(&self) -> HashSet<PeerId> {
        HashSet::new()
    }

    fn board_version(&self, now: SystemTime) -> u64 {
        let mut boards = self.boards();
        self.expire(&mut boards, now);
        boards.peers().version()
    }

    fn board_snapshot(&self, now: SystemTime) -> BoardSnapshot {
        let mut boards = self.boards();
        self.expire(&mut boards, now);
        BoardSnapshot {
            version: boards.peers().version(),
            same_until: boards.peers().ages_same_until(now),
            peers: boards.peers().peers(now),
        }
    }

    fn listing_slot(&self) -> &KeptSlot {
        &self.listing
    }

    fn announce_resolved(
        &self,
        caller: &PeerId,
        announcement: CheckedAnnouncement,
        paths: Vec<ClaimPath>,
        now: SystemTime,
    ) -> Result<Recorded, CapabilityError> {
        let mut boards = self.boards();
        self.expire(&mut boards, now);
        let recorded = boards
            .peers_mut()
            .announce_resolved(caller, announcement, paths, now)
            .map_err(CapabilityError::from)?;
        boards.peers_mut().moved_on(caller);
        Ok(recorded)
    }

    fn list_episodes(&self, caller: Option<&PeerId>) -> EpisodeList {
        self.boards().episodes().list(caller, SystemTime::now())
    }

    fn attach_episode<'a>(
        &'a self,
        caller: &'a PeerId,
        external_id: &'a str,
    ) -> BoxFuture<'a, Attached> {
        Box::pin(async move { self.attach_now(caller, external_id) })
    }

    fn held_episode(&self, peer: &PeerId) -> Option<String> {
        self.boards().episodes().held_by(peer)
    }

    fn close_episode<'a>(
        &'a self,
        external_id: &'a str,
    ) -> BoxFuture<'a, Option<ConnectionEpisode>> {
        Box::pin(async move {
            self.boards()
                .episodes_mut()
                .close(external_id, SystemTime::now())
        })
    }

    /// The session's peer while it is attached; otherwise a new peer made for its hooks,
    /// which takes over its former peer's claims and holds the session's episode.
    fn hook_peer<'a>(
        &'a self,
        client: &'a str,
        session_id: &'a str,
        _ancestors: &'a [ProcessStamp],
    ) -> BoxFuture<'a, PeerId> {
        Box::pin(async move {
            let now = SystemTime::now();
            let made = {
                let mut sessions = self.sessions();
                let session = sessions.entry(session_id.to_owned()).or_default();
                let mut boards = self.boards();
                let attached = session
                    .peer
                    .as_ref()
                    .and_then(|peer| boards.peers().peer(peer, now))
                    .is_some_and(|peer| peer.attached);
                match session.peer.clone() {
                    Some(peer) if attached => {
                        boards.peers_mut().touch(&peer, now);
                        return peer;
                    }
                    former => {
                        let introduction = ClientInfo {
                            name: client.to_owned(),
                            version: String::new(),
                            title: Some("a session seen through its hooks".to_owned()),
                        };
                        let peer = boards
                            .peers_mut()
                            .attach(Transport::Http, introduction, now);
                        if let Some(former) = former {
                            boards.peers_mut().adopt(&former, &peer);
                        }
                        session.peer = Some(peer.clone());
                        peer
                    }
                }
            };
            self.attach_now(&made, session_id);
            made
        })
    }

    fn end_session(&self, session_id: &str) -> bool {
        let Some(session) = self.sessions().remove(session_id) else {
            return false;
        };
        if let Some(peer) = session.peer {
            self.leave(&peer);
        }
        true
    }

    fn wait(
        &self,
        peer: &PeerId,
        reason: WaitReason,
        message: Option<&str>,
        holder: Option<WaitHolder>,
    ) -> Option<Waiting> {
        let signal = Signal {
            reason,
            message: message.map(str::to_owned),
            holder,
        };
        let marked = self
            .boards()
            .peers_mut()
            .wait(peer, signal, SystemTime::now())?;
        Some(marked.waiting)
    }

    fn moved_on(&self, peer: &PeerId) {
        self.boards().peers_mut().moved_on(peer);
    }

    /// The files just edited first, then the claim's earlier files, each once, at most
    /// [`limits::SCOPE_PATHS`].
    fn record_edits(
        &self,
        peer: &PeerId,
        paths: &[ClaimPath],
    ) -> Result<Vec<String>, CapabilityError> {
        let now = SystemTime::now();
        let mut boards = self.boards();
        let earlier: Vec<String> = boards
            .peers()
            .peer(peer, now)
            .and_then(|known| {
                known
                    .claims
                    .into_iter()
                    .find(|claim| claim.name.as_deref() == Some(EDITS_CLAIM))
            })
            .map(|claim| claim.scope)
            .unwrap_or_default();
        let mut seen = HashSet::new();
        let scope: Vec<String> = paths
            .iter()
            .map(|path| path.as_written().to_owned())
            .chain(earlier)
            .filter(|path| seen.insert(path.clone()))
            .take(limits::SCOPE_PATHS)
            .collect();
        let input = AnnounceInput {
            intent: EDITS_INTENT.to_owned(),
            scope: scope.clone(),
            claim: Some(EDITS_CLAIM.to_owned()),
        };
        boards
            .peers_mut()
            .announce(peer, input, now)
            .map_err(|error| {
                CapabilityError::refused(format!("the edit was not recorded: {error}"))
            })?;
        Ok(scope)
    }

    fn mark_told(&self, session_id: &str, keys: &[u64]) {
        let mut sessions = self.sessions();
        let session = sessions.entry(session_id.to_owned()).or_default();
        session.told.extend(keys);
    }

    fn untold(&self, session_id: &str, keys: &[u64]) -> Vec<bool> {
        let mut sessions = self.sessions();
        let session = sessions.entry(session_id.to_owned()).or_default();
        keys.iter().map(|&key| session.told.insert(key)).collect()
    }

    fn bumped_before(&self, key: u64) -> bool {
        self.speed_bumps
            .lock_or_recover()
            .bumped_before(key, Instant::now())
    }

    fn federation(&self) -> &Federation {
        &self.federation
    }

    fn sibling_board(&self, _checkout_id: &str) -> Option<SiblingBoard> {
        None
    }

    fn lease_changed(&self, _name: &str, _holder: Option<&str>, _queued: usize) {}

    fn hand_over(&self, sender: &PeerId, names: &[String], _to: &str) -> usize {
        let now = SystemTime::now();
        self.boards().hand_off(sender, names, now).moved.len()
    }
}

/// Who makes a call.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Caller {
    /// A process that does not serve the checkout: the command line.
    Observer,
    /// The serving process, asked without an MCP session: a plain HTTP request.
    Sessionless,
    /// An MCP client attached to the serving process.
    Peer,
}

/// A repository of its own, served by a [`MemoryPort`]: its worktree is [`SERVED_WORKTREE`]
/// in a directory of its own, where the worktrees added beside it go too.
pub(crate) struct World {
    _dir: TempDir,
    pub site: Arc<Site>,
    pub port: Arc<MemoryPort>,
}

/// The name of the served worktree's directory: a fixed name, so that an answer naming a
/// worktree the way people do (by its directory's name) is the same on every run.
pub(crate) const SERVED_WORKTREE: &str = "alpha";

impl World {
    /// A new repository whose board holds nobody yet.
    pub(crate) fn empty() -> World {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let root = dir.path().join(SERVED_WORKTREE);
        std::fs::create_dir(&root).expect("the worktree's directory is made");
        let site = Arc::new(site_in_repository(&root, Config::default()));
        let port = Arc::new(MemoryPort::new(&site));
        World {
            _dir: dir,
            site,
            port,
        }
    }

    /// The directory that holds the repository's worktrees.
    pub(crate) fn dir(&self) -> &Path {
        self.site
            .checkout
            .root
            .parent()
            .expect("a worktree lies in the world's directory")
    }

    /// Adds the worktree `name` beside the served one, on a new branch of that name made
    /// from `main`; no server serves it.
    pub(crate) fn add_worktree(&self, name: &str) {
        let output = Command::new("git")
            .arg("-C")
            .arg(&self.site.checkout.root)
            .args(["worktree", "add", "--quiet", "-b", name])
            .arg(self.dir().join(name))
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .expect("git runs");
        assert!(
            output.status.success(),
            "git worktree add {name} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Writes `text` to `path` of the worktree `worktree`, left uncommitted.
    pub(crate) fn write(&self, worktree: &str, path: &str, text: &str) {
        let file = self.dir().join(worktree).join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).expect("the file's directory is made");
        }
        std::fs::write(file, text).expect("the file is written");
    }

    /// The context of a call made by `caller`; a [`Caller::Peer`] is attached first.
    pub(crate) fn context(&self, caller: Caller) -> Context {
        let server: Arc<dyn BoardPort> = self.port.clone();
        match caller {
            Caller::Observer => Context::observer(self.site.clone()),
            Caller::Sessionless => Context::served(self.site.clone(), server, None),
            Caller::Peer => {
                let caller = self.port.attach("table-client");
                Context::served(self.site.clone(), server, Some(caller))
            }
        }
    }
}
