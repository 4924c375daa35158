//! A board's entry in a listing: its peers stamped with the checkout and qualified by it, and
//! how much of a listing to make.

use majordomus_checkout::git::Checkout;
use majordomus_domain::changes::WorktreeChanges;
use majordomus_domain::checkouts::ServerStanding;
use majordomus_domain::paths::ClaimPath;
use majordomus_domain::peers::PeerCheckout;

use super::answer::{BoardView, ListedPeer};

/// How much of a listing to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Detail<'a> {
    /// All of it: the peers and boards, the worktrees' changes, the overlaps and the
    /// predicted conflicts.
    Whole,
    /// The peers and the boards they were read from, and nothing compared: what a hook
    /// reads its own findings from. No worktree's changes are read and no conflict is
    /// predicted for it, and the overlaps are left empty.
    PeersOnly,
    /// As [`Detail::PeersOnly`], but this checkout's board lists only its peers with a claim
    /// that meets one of the paths, found through the board's index (its `attached` then
    /// counts only them); other boards list all of theirs. What a guard, a prompt's news and
    /// a message to a path read: the board's other peers would be copied only to be passed
    /// over.
    PeersMeeting(&'a [ClaimPath]),
}

/// How many digits of the checkout id qualify a peer id in a listing.
const QUALIFIER_DIGITS: usize = 8;

/// A checkout as answers name it.
pub(super) fn stamp(checkout: &Checkout, this_checkout: bool) -> PeerCheckout {
    PeerCheckout {
        id: checkout.id.clone(),
        worktree: checkout.root.display().to_string(),
        branch: checkout.branch.clone(),
        this_checkout,
        machine: None,
    }
}

/// A board's entry in a listing and its peers, each stamped with the board's checkout and
/// qualified by it.
pub(super) fn listed_board(
    stamp: PeerCheckout,
    standing: ServerStanding,
    url: Option<String>,
    reason: Option<String>,
    changes: Option<WorktreeChanges>,
    peers: Vec<ListedPeer>,
) -> (BoardView, Vec<ListedPeer>) {
    let short_checkout: String = stamp.id.chars().take(QUALIFIER_DIGITS).collect();
    let peers: Vec<ListedPeer> = peers
        .into_iter()
        .map(|mut listed| {
            listed.qualified_id = format!("{}@{short_checkout}", listed.peer.id);
            listed.peer.checkout = Some(stamp.clone());
            listed
        })
        .collect();
    let view = BoardView {
        id: stamp.id.clone(),
        worktree: stamp.worktree.clone(),
        branch: stamp.branch.clone(),
        this_checkout: stamp.this_checkout,
        standing: standing.into(),
        url,
        attached: peers.iter().filter(|listed| listed.peer.attached).count(),
        reason,
        changes: changes.map(Into::into),
        machine: None,
        age_seconds: None,
        age_ms: None,
    };
    (view, peers)
}
