//! One checkout's board as a listing reads it: its peers stamped with the checkout, and what
//! the worktree changed.

use majordomus_checkout::git::Checkout;
use majordomus_domain::changes::WorktreeChanges;
use majordomus_domain::checkouts::ServerStanding;
use majordomus_domain::peers::PeerCheckout;

use crate::capabilities::board::{Board, BoardPeers};
use crate::context::Context;

use super::answer::{BoardView, ListedPeer};
use super::changes::{capped, read_changes};

/// How much of a listing to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Detail {
    /// All of it: the peers and boards, the worktrees' changes, the overlaps and the
    /// predicted conflicts.
    Whole,
    /// The peers and the boards they were read from, and nothing compared: what a hook
    /// reads its own findings from. No worktree's changes are read and no conflict is
    /// predicted for it, and the overlaps are left empty.
    PeersOnly,
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

/// Reads one checkout's board ([`Board`]), and what the worktree changed: from the answer
/// of its server, read here for this process's own board, or, when `read_here`, for a board
/// without a server. Otherwise `changes` is left for the repository reading to fill.
pub(super) async fn read_board(
    ctx: &Context,
    checkout: Checkout,
    read_here: bool,
    detail: Detail,
) -> (BoardView, Vec<ListedPeer>) {
    let this_checkout = checkout.id == ctx.site.checkout.id;
    let stamp = stamp(&checkout, this_checkout);
    let board = Board::listed(ctx, checkout).await;
    let read_here = (read_here || board.is_local()) && detail == Detail::Whole;
    let BoardPeers {
        peers,
        changes: reported_changes,
        reason,
    } = board.peers(&ctx.site).await;
    let changes = match reported_changes {
        Some(changes) => Some(capped(changes)),
        None if read_here => read_changes(&ctx.site, board.checkout()).await,
        None => None,
    };
    let (mut view, peers) =
        listed_board(stamp, board.standing(), board.url(), reason, changes, peers);
    view.age_ms = board.age().map(|age| age.as_millis() as u64);
    (view, peers)
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
        standing,
        url,
        attached: peers.iter().filter(|listed| listed.peer.attached).count(),
        reason,
        changes,
        machine: None,
        age_seconds: None,
        age_ms: None,
    };
    (view, peers)
}
