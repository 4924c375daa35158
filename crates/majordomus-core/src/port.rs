//! The board port: what a capability needs of this checkout's serving process.
//!
//! A capability runs in whichever process a call reached. When that process serves the
//! checkout, the capability reads and changes the board — its peers and claims, its
//! episodes, the sessions its hooks speak for, the federation it follows — through this
//! port, and the server implements it. So the capabilities never name the server, and the
//! server, which dispatches calls to the capabilities, stays above them: the dependency
//! points one way. A process that does not serve has no port; the capabilities then read
//! this checkout's board as they read any sibling's, through its lease.

use std::any::Any;
use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use majordomus_checkout::lease::{Lease, LeaseView};
use majordomus_checkout::standing::Standing;
use majordomus_domain::board::{CheckedAnnouncement, Recorded};
use majordomus_domain::changes::WorktreeChanges;
use majordomus_domain::checkouts::ServerStanding;
use majordomus_domain::episodes::{Attached, ConnectionEpisode, EpisodeList};
use majordomus_domain::paths::ClaimPath;
use majordomus_domain::peers::{Peer, PeerId, WaitHolder, WaitReason, Waiting};

use crate::api::CapabilityError;
use majordomus_checkout::ancestry::ProcessStamp;
use majordomus_federation::Federation;

/// The name of the claim that holds the files a session edited
/// ([`BoardPort::record_edits`]); the hooks' answers say which claims are edits by it.
pub const EDITS_CLAIM: &str = "edits";

/// One fact a session may be told, with the key that says whether it already was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    pub key: u64,
    pub line: String,
}

/// A sibling checkout's board as a serving process keeps it in memory while it follows the
/// sibling's server: what that server answered about its own board, and how long ago it last
/// confirmed that nothing changed since.
#[derive(Clone)]
pub struct SiblingBoard {
    /// The lease of the server followed, token included: anything the memory does not hold is
    /// asked of that server.
    pub lease: Lease,
    /// Where that server stood when following it began.
    pub standing: Standing,
    /// The board's peers, each with whether a bridge carries its client.
    pub peers: Arc<Vec<(Peer, bool)>>,
    /// The worktree's changes as that server read them.
    pub changes: Option<Arc<WorktreeChanges>>,
    /// How long ago the board was read.
    pub read: Duration,
    /// How long ago the server last confirmed the board: when it was read, or since then its
    /// stream said nothing changed.
    pub age: Duration,
}

/// The board at one instant, read under one lock: its peers, the version they are of, and
/// until when their ages read as listed.
pub struct BoardSnapshot {
    pub version: u64,
    /// The first instant a listed age would read differently; `None` for an empty board.
    pub same_until: Option<SystemTime>,
    pub peers: Vec<Peer>,
}

/// Memory a capability keeps in the serving process from one call to the next, held here
/// without its type: the port outlives every call, and the capability that fills the slot is
/// its only reader, so all there is to know about what it keeps lives in that capability.
/// The listings of this board and of the repository are kept in one
/// (`capabilities::peers::cache`).
#[derive(Default)]
pub struct KeptSlot(OnceLock<Box<dyn Any + Send + Sync>>);

impl KeptSlot {
    /// What the slot keeps, made by `make` the first time; `None` when it keeps another type.
    pub fn get_or_init<T: Any + Send + Sync>(&self, make: impl FnOnce() -> T) -> Option<&T> {
        self.0.get_or_init(|| Box::new(make())).downcast_ref()
    }
}

/// This checkout's serving process, as the capabilities see it.
pub trait BoardPort: Send + Sync {
    /// Where this server stands, as it knows it from memory: a server never probes itself.
    fn own_standing(&self) -> ServerStanding;

    /// Why it stands so, for every standing but `ready`.
    fn own_standing_reason(&self) -> Option<String>;

    /// The lease this process holds, as answers show it: without the token.
    fn lease_view(&self) -> LeaseView;

    /// The address the server answers on, once it has published it.
    fn url(&self) -> Option<String>;

    /// How many of the board's peers are attached.
    fn attached_peers(&self) -> usize;

    /// The MCP-over-HTTP sessions past their handshake: how many run, how many are parked.
    fn http_sessions(&self) -> (usize, usize);

    /// The board's peers as they stand at `now`, the claims whose grace ran out released.
    fn board_peers(&self, now: SystemTime) -> Vec<Peer>;

    /// The board's peer `id` as it stands at `now`, the claims whose grace ran out released:
    /// [`BoardPort::board_peers`] for one peer, without a view of every other (a call that
    /// names its own session pays for one peer however many are on the board).
    fn board_peer(&self, id: &PeerId, now: SystemTime) -> Option<Peer>;

    /// [`BoardPort::board_peers`] for the peers with a claim that meets one of `paths`,
    /// found through the board's index: what a guard, a prompt's news and a message to a
    /// path read, paying for the claims that meet rather than a view of every peer.
    fn board_peers_meeting(&self, paths: &[ClaimPath], now: SystemTime) -> Vec<Peer>;

    /// The paths the board compares each claim of the peer `id` on, without a view of the
    /// peer; empty for a peer not on the board.
    fn board_peer_paths(&self, id: &PeerId) -> Vec<Arc<[ClaimPath]>>;

    /// The peers whose client reaches the server through a `majordomus mcp` bridge. Whether
    /// a peer is bridged is settled when it attaches, which changes the board's version.
    fn bridged_peers(&self) -> HashSet<PeerId>;

    /// The board's version at `now`, the claims whose grace ran out released first.
    fn board_version(&self, now: SystemTime) -> u64;

    /// The board's peers at `now` with their version, the claims whose grace ran out
    /// released first.
    fn board_snapshot(&self, now: SystemTime) -> BoardSnapshot;

    /// Where this board's own listing is kept between calls.
    fn listing_slot(&self) -> &KeptSlot;

    /// Records `caller`'s claim, whose paths were resolved on disk (one per scope path),
    /// and answers the claims of this board it meets, with the paths the board holds for it.
    fn announce_resolved(
        &self,
        caller: &PeerId,
        announcement: CheckedAnnouncement,
        paths: Vec<ClaimPath>,
        now: SystemTime,
    ) -> Result<Recorded, CapabilityError>;

    /// The episodes held in memory; `mine` is the one `caller`'s connection holds.
    fn list_episodes(&self, caller: Option<&PeerId>) -> EpisodeList;

    /// Ties `caller`'s connection to the episode the client calls `external_id`, opening or
    /// resuming it.
    fn attach_episode<'a>(
        &'a self,
        caller: &'a PeerId,
        external_id: &'a str,
    ) -> BoxFuture<'a, Attached>;

    /// The external id of the episode `peer`'s connection holds.
    fn held_episode(&self, peer: &PeerId) -> Option<String>;

    /// Closes the episode `external_id` on purpose; `None` when the server holds none so
    /// called.
    fn close_episode<'a>(
        &'a self,
        external_id: &'a str,
    ) -> BoxFuture<'a, Option<ConnectionEpisode>>;

    /// The peer that speaks for the client session `session_id` of the client named
    /// `client`, whose hook runs under the processes `ancestors`: its MCP connection's
    /// (named by the session id, else by the client process), or one made for its hooks.
    fn hook_peer<'a>(
        &'a self,
        client: &'a str,
        session_id: &'a str,
        ancestors: &'a [ProcessStamp],
    ) -> BoxFuture<'a, PeerId>;

    /// The client's hook says the session `session_id` ended.
    fn end_session(&self, session_id: &str) -> bool;

    /// Marks `peer` as waiting for the person for `reason` (`message`: what its client said;
    /// `holder`: who blocks it); the mark as the board shows it, `None` for a peer not
    /// attached.
    fn wait(
        &self,
        peer: &PeerId,
        reason: WaitReason,
        message: Option<&str>,
        holder: Option<WaitHolder>,
    ) -> Option<Waiting>;

    /// `peer` moved on (a prompt, a tool call, an announce): it waits for nobody.
    fn moved_on(&self, peer: &PeerId);

    /// Puts `paths` at the front of `peer`'s [`EDITS_CLAIM`]; answers the claim as it now
    /// stands.
    fn record_edits(
        &self,
        peer: &PeerId,
        paths: &[ClaimPath],
    ) -> Result<Vec<String>, CapabilityError>;

    /// Remembers that `session_id` was told the facts of `keys`.
    fn mark_told(&self, session_id: &str, keys: &[u64]);

    /// Whether `session_id` was not told yet each fact of `keys`, in order; each counts as
    /// told from now on. A key repeated is new once at most.
    fn untold(&self, session_id: &str, keys: &[u64]) -> Vec<bool>;

    /// Whether the edit `key` names (a session and its files) was stopped by a speed bump
    /// within [`SPEED_BUMP_WINDOW`]; remembered from now on when it was not.
    fn bumped_before(&self, key: u64) -> bool;

    /// The serving process's link to other machines' boards, and what it holds of them.
    fn federation(&self) -> &Federation;

    /// Sibling `checkout_id`'s board from memory, when this process follows that sibling and
    /// its server confirmed the board within the bound the site states
    /// (`Site::sibling_view_bound`); `None` when it must be asked. Asking is what starts (and
    /// keeps up) the following.
    fn sibling_board(&self, checkout_id: &str) -> Option<SiblingBoard>;

    /// Tells the event stream that the repository's lease `name` changed through this
    /// server: who holds it now, and how many wait.
    fn lease_changed(&self, name: &str, holder: Option<&str>, queued: usize);

    /// `sender`'s claims `names` were handed to `to` (a session, as people read it), which
    /// accepted: they leave `sender` on this board, recorded in its episode and published.
    /// Answers how many it held.
    fn hand_over(&self, sender: &PeerId, names: &[String], to: &str) -> usize;
}

/// How long an edit stopped once by a speed bump (another worktree's uncommitted change, a
/// predicted conflict) passes when it is repeated.
pub const SPEED_BUMP_WINDOW: std::time::Duration = std::time::Duration::from_secs(5 * 60);

/// The most edits a server remembers having stopped by a speed bump; the oldest go first.
pub const SPEED_BUMPS_KEPT: usize = 1_024;

/// The edits stopped once by a speed bump, and when: bounded by [`SPEED_BUMPS_KEPT`].
#[derive(Debug, Default)]
pub struct SpeedBumps {
    stopped: std::collections::HashMap<u64, std::time::Instant>,
}

impl SpeedBumps {
    /// Whether `key` was stopped within [`SPEED_BUMP_WINDOW`] before `now`; when it was
    /// not, it is remembered as stopped at `now`.
    pub fn bumped_before(&mut self, key: u64, now: std::time::Instant) -> bool {
        if let Some(at) = self.stopped.get(&key)
            && now.duration_since(*at) < SPEED_BUMP_WINDOW
        {
            return true;
        }
        self.stopped
            .retain(|_, at| now.duration_since(*at) < SPEED_BUMP_WINDOW);
        if self.stopped.len() >= SPEED_BUMPS_KEPT
            && let Some(oldest) = self
                .stopped
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(key, _)| *key)
        {
            self.stopped.remove(&oldest);
        }
        self.stopped.insert(key, now);
        false
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_speed_bump_lets_the_same_edit_pass_within_the_window_and_stays_bounded() {
        let mut bumps = SpeedBumps::default();
        let start = std::time::Instant::now();
        assert!(!bumps.bumped_before(7, start));
        assert!(bumps.bumped_before(7, start + Duration::from_secs(60)));
        assert!(!bumps.bumped_before(7, start + SPEED_BUMP_WINDOW + Duration::from_secs(1)));
        for key in 0..(3 * SPEED_BUMPS_KEPT as u64) {
            bumps.bumped_before(
                100 + key,
                start + SPEED_BUMP_WINDOW + Duration::from_secs(2),
            );
        }
        assert!(bumps.stopped.len() <= SPEED_BUMPS_KEPT);
    }
}
