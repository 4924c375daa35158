//! The siblings' boards kept in memory from their event streams, as `follow` reads them: a
//! listing or an announce takes a board from here only while its server confirmed it within
//! the bound (`Site::sibling_view_bound`) and still runs; otherwise it asks the sibling as if
//! nothing were kept, so a sibling that stopped answering is reported unread, never listed
//! from an old memory. A board is kept only while its follower runs.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use majordomus_checkout::lease::Lease;
use majordomus_checkout::process::ProcessHandle;
use majordomus_checkout::standing::Standing;
use majordomus_domain::changes::WorktreeChanges;
use majordomus_domain::peers::Peer;
use majordomus_domain::sync::LockExt;
use tokio::sync::Notify;

use majordomus_capabilities::peers::PeerList;
use majordomus_core::port::SiblingBoard;

/// How long the siblings are still followed after a listing or an announce last wanted one of
/// their boards: an agent at work asks again well within it and finds the boards in memory,
/// while a repository nobody asks about costs its servers nothing.
pub(super) const LINGER: Duration = Duration::from_secs(60);

/// The siblings' boards this server keeps, and when it was last asked about them.
#[derive(Default)]
pub(crate) struct Siblings {
    /// By checkout id; an entry lives only as long as the follower that wrote it.
    kept: Mutex<HashMap<String, Kept>>,
    /// When a listing or an announce last wanted a sibling's board.
    wanted_at: Mutex<Option<Instant>>,
    /// Wakes the follower: the repository is asked about after a quiet spell.
    pub(super) wake: Notify,
    /// Numbers the followers, so one that is ending never removes its successor's board.
    pub(super) followers: AtomicU64,
}

/// One followed sibling's board as its follower last read it.
struct Kept {
    follower: u64,
    lease: Lease,
    /// The lease's owner, held by its follower: asked on every listing whether it still runs.
    owner: Arc<ProcessHandle>,
    standing: Standing,
    peers: Arc<Vec<(Peer, bool)>>,
    changes: Option<Arc<WorktreeChanges>>,
    read_at: Instant,
    /// When its server last confirmed it; `None` once an event said it changed, until it is
    /// read again.
    confirmed: Option<Instant>,
}

impl Siblings {
    /// A listing or an announce wants the siblings' boards: following starts, or goes on for
    /// [`LINGER`] from now.
    pub(crate) fn wanted(&self) {
        let now = Instant::now();
        let quiet = self
            .wanted_at
            .lock_or_recover()
            .replace(now)
            .is_none_or(|last| now.duration_since(last) >= LINGER);
        if quiet {
            self.wake();
        }
    }

    /// Has the follower look at the siblings now.
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    pub(super) fn wanted_lately(&self) -> bool {
        self.wanted_at
            .lock_or_recover()
            .is_some_and(|last| last.elapsed() < LINGER)
    }

    /// `checkout_id`'s board, when it is kept, its server confirmed it within `bound`, and
    /// that server still runs (one killed a moment ago may not have been noticed by its
    /// follower yet).
    pub(crate) fn board(&self, checkout_id: &str, bound: Duration) -> Option<SiblingBoard> {
        let (board, owner) = {
            let kept = self.kept.lock_or_recover();
            let kept = kept.get(checkout_id)?;
            let age = kept.confirmed?.elapsed();
            if age >= bound {
                return None;
            }
            let board = SiblingBoard {
                lease: kept.lease.clone(),
                standing: kept.standing.clone(),
                peers: kept.peers.clone(),
                changes: kept.changes.clone(),
                read: kept.read_at.elapsed(),
                age,
            };
            (board, kept.owner.clone())
        };
        owner.alive().then_some(board)
    }

    /// Keeps what `follower` read of its sibling's board at `read_at`, unless a later
    /// follower of the same sibling keeps it already.
    pub(super) fn keep(
        &self,
        checkout_id: &str,
        follower: u64,
        found: &Following,
        answer: PeerList,
    ) {
        let Following {
            lease,
            owner,
            standing,
            read_at,
        } = found;
        let kept = Kept {
            follower,
            lease: lease.clone(),
            owner: owner.clone(),
            standing: standing.clone(),
            changes: answer
                .boards
                .into_iter()
                .next()
                .and_then(|board| board.changes)
                .map(|changes| Arc::new(changes.into())),
            peers: Arc::new(
                answer
                    .peers
                    .into_iter()
                    .map(|listed| (listed.peer, listed.bridged))
                    .collect(),
            ),
            read_at: *read_at,
            confirmed: Some(*read_at),
        };
        let mut boards = self.kept.lock_or_recover();
        if boards
            .get(checkout_id)
            .is_none_or(|current| current.follower <= follower)
        {
            boards.insert(checkout_id.to_string(), kept);
        }
    }

    /// `follower`'s sibling said at `at` that nothing changed since it last said something.
    pub(super) fn confirm(&self, checkout_id: &str, follower: u64, at: Instant) {
        if let Some(kept) = self.kept.lock_or_recover().get_mut(checkout_id)
            && kept.follower == follower
            && kept.confirmed.is_some()
        {
            kept.confirmed = Some(at);
        }
    }

    /// `follower`'s sibling said its board changed: what is kept is not listed until read
    /// again.
    pub(super) fn outdated(&self, checkout_id: &str, follower: u64) {
        if let Some(kept) = self.kept.lock_or_recover().get_mut(checkout_id)
            && kept.follower == follower
        {
            kept.confirmed = None;
        }
    }

    /// `follower` ends: the board it kept goes with it.
    pub(super) fn forget(&self, checkout_id: &str, follower: u64) {
        let mut kept = self.kept.lock_or_recover();
        if kept
            .get(checkout_id)
            .is_some_and(|current| current.follower == follower)
        {
            kept.remove(checkout_id);
        }
    }
}

/// The server a follower follows, and when it last read its board.
pub(super) struct Following {
    pub(super) lease: Lease,
    pub(super) owner: Arc<ProcessHandle>,
    pub(super) standing: Standing,
    pub(super) read_at: Instant,
}
