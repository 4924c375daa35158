//! The answer of `peers.list`: its input, every board and peer it lists, and how its
//! overlaps are found among them.

use std::collections::HashSet;

use majordomus_domain::changes::{WorktreeChanges, change_overlaps_among};
use majordomus_domain::conflicts::ConflictSummary;
use majordomus_domain::listing::{overlaps_among, silent};
use majordomus_domain::peers::{Peer, PeerCheckout, PeerId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{wire, wire_changes};
use crate::conflicts;
use crate::leases::ListedLease;
use crate::wire::{Checkouts, ServerStanding};
use majordomus_federation::FederationStatus;

/// What to ask of `peers.list`: how wide the board is.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeerListInput {
    /// `repository` (the default): every checkout's board; `this`: only the checkout the
    /// call reached; `everywhere`: also other machines' boards from the federation.
    // `this` is what a gather asks a sibling, so a gather can never ask back.
    #[serde(default)]
    pub checkouts: Checkouts,
}

impl PeerListInput {
    /// The cases every surface is measured with.
    pub(crate) fn bench_cases() -> Vec<(&'static str, Self)> {
        vec![
            (
                "this",
                PeerListInput {
                    checkouts: Checkouts::This,
                },
            ),
            (
                "repository",
                PeerListInput {
                    checkouts: Checkouts::Repository,
                },
            ),
            (
                "everywhere",
                PeerListInput {
                    checkouts: Checkouts::Everywhere,
                },
            ),
        ]
    }
}

/// One checkout's board as the gather found it, read or not: a listing that dropped the
/// checkouts it could not reach would look like a repository where nobody else works.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct BoardView {
    /// The checkout's identity digest, as `server.status` reports it.
    pub id: String,
    /// Where the checkout is.
    pub worktree: String,
    /// The branch checked out there, when it could be read.
    pub branch: Option<String>,
    /// Whether this is the checkout of the server answering.
    pub this_checkout: bool,
    /// Where its server stands, by the same reading `server.status` reports.
    pub standing: ServerStanding,
    /// The address its lease names, when it has one.
    pub url: Option<String>,
    /// How many of this board's peers are attached.
    pub attached: usize,
    /// Why this board is missing from the answer; absent when it was read.
    pub reason: Option<String>,
    /// What the worktree has changed, as git knows it — committed on its branch since the
    /// merge base with the default branch, staged, unstaged, untracked — whether or not
    /// anybody announced it. Read by the worktree's own server when it answers, else here.
    /// Absent for a checkout outside git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<wire_changes::WorktreeChanges>,
    /// The machine the checkout is on, in a listing across machines (`checkouts:
    /// everywhere`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// For another machine's board: how many seconds ago it was published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_seconds: Option<u64>,
    /// For a sibling worktree's board listed from the answering server's memory rather than
    /// asked for this call: how many milliseconds ago its server last confirmed it. The
    /// answering server follows its siblings' event streams, reads a board again whenever
    /// its server says it changed, and lists it from memory only while this is within the
    /// probe timeout; an older board is asked, and reported unread if it does not answer.
    /// Absent when the board was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_ms: Option<u64>,
}

impl BoardView {
    /// A board that could not be read, and why.
    pub(super) fn unread(
        id: String,
        worktree: String,
        branch: Option<String>,
        reason: String,
    ) -> Self {
        BoardView {
            id,
            worktree,
            branch,
            this_checkout: false,
            standing: ServerStanding::Absent,
            url: None,
            attached: 0,
            reason: Some(reason),
            changes: None,
            machine: None,
            age_seconds: None,
            age_ms: None,
        }
    }

    /// The checkout, as overlaps name it.
    pub(super) fn stamp(&self) -> PeerCheckout {
        PeerCheckout {
            id: self.id.clone(),
            worktree: self.worktree.clone(),
            branch: self.branch.clone(),
            this_checkout: self.this_checkout,
            machine: self.machine.clone(),
        }
    }
}

/// One peer as a listing holds it: its board's record, which overlaps are found on, whether
/// a bridge carries its client, and an id that no other peer of the listing shares. Written
/// and read as [`wire::ListedPeer`].
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(into = "wire::ListedPeer", from = "wire::ListedPeer")]
pub struct ListedPeer {
    /// The peer as its board records it.
    pub peer: Peer,
    /// Whether its client reaches the server through a `majordomus mcp` bridge.
    pub bridged: bool,
    /// Its id qualified by its checkout, unique across the repository's boards.
    pub qualified_id: String,
}

impl From<ListedPeer> for wire::ListedPeer {
    fn from(listed: ListedPeer) -> Self {
        wire::ListedPeer {
            peer: listed.peer.into(),
            bridged: listed.bridged,
            qualified_id: listed.qualified_id,
        }
    }
}

impl From<wire::ListedPeer> for ListedPeer {
    fn from(listed: wire::ListedPeer) -> Self {
        ListedPeer {
            peer: listed.peer.into(),
            bridged: listed.bridged,
            qualified_id: listed.qualified_id,
        }
    }
}

impl ListedPeer {
    /// The peers of this process's own board, each marked by whether a bridge carries its
    /// client; their qualified ids are given once the whole listing is gathered.
    pub(super) fn on_this_board(peers: Vec<Peer>, bridged: &HashSet<PeerId>) -> Vec<ListedPeer> {
        peers
            .into_iter()
            .map(|peer| ListedPeer {
                bridged: bridged.contains(&peer.id),
                qualified_id: String::new(),
                peer,
            })
            .collect()
    }
}

impl PeerList {
    /// About how many bytes the listing takes encoded: what its peers wrote, the changed
    /// paths and the overlaps, each with a little for the fields around them.
    pub(super) fn size_estimate(&self) -> usize {
        let claims: usize = self
            .peers
            .iter()
            .flat_map(|listed| &listed.peer.claims)
            .map(|claim| {
                let scope: usize = claim
                    .scope
                    .iter()
                    .chain(&claim.resolved)
                    .map(|p| p.len() + 4)
                    .sum();
                claim.intent.len() + claim.name.as_ref().map_or(0, String::len) + scope + 64
            })
            .sum();
        let peers = self.peers.len() * 512;
        let changes: usize = self
            .boards
            .iter()
            .filter_map(|board| board.changes.as_ref())
            .flat_map(|changes| &changes.paths)
            .map(|changed| changed.path.len() + 32)
            .sum();
        let overlaps: usize = self
            .overlaps
            .iter()
            .map(|o| {
                let paths: usize = o
                    .paths
                    .iter()
                    .map(|p| p.yours.len() + p.theirs.len() + 24)
                    .sum();
                paths + (o.side.claims.len() + o.with.claims.len()) * 16 + 600
            })
            .sum();
        let change_overlaps: usize = self
            .change_overlaps
            .iter()
            .map(|o| {
                let paths: usize = o
                    .overlap
                    .paths
                    .iter()
                    .map(|p| p.yours.len() + p.theirs.len() + 48)
                    .sum();
                paths + o.with.claims.len() * 16 + 600
            })
            .sum();
        claims + peers + changes + overlaps + change_overlaps + self.boards.len() * 512
    }
}

impl std::borrow::Borrow<Peer> for ListedPeer {
    fn borrow(&self) -> &Peer {
        &self.peer
    }
}

/// The answer of `peers.list`: every worker of the repository, from every checkout's board.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct PeerList {
    /// Attached peers across every board that was read, the caller included.
    pub count: usize,
    /// The caller's own peer id, when the call came through an MCP session. It is a position
    /// on this checkout's board and is handed out anew after a reconnect.
    pub caller: Option<crate::wire::PeerId>,
    /// Attached peers that claim nothing: five peers and five silent is not "no collisions".
    pub silent: usize,
    /// The peers, this checkout's board first and then the siblings in git's order, each
    /// stamped with its checkout (and a `qualified_id`) because every board has its own `p1`.
    #[schemars(with = "Vec<wire::ListedPeer>")]
    pub peers: Vec<ListedPeer>,
    /// Every pair of peers whose claims meet, each pair once, across checkouts too, naming
    /// the claims of each side that meet (their intents are on the peers) and the first
    /// pairs of paths; pairs of live peers first, those with a departed side after; at most
    /// 32, the rest counted in `more_overlaps`. Empty is the ordinary case.
    pub overlaps: Vec<wire::ListedOverlap>,
    /// How many more pairs of peers meet than `overlaps` lists; absent when it lists them
    /// all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_overlaps: usize,
    /// One entry per checkout covered, read or not.
    pub boards: Vec<BoardView>,
    /// Whether every board covered was read; when false a board's `reason` (or the
    /// federation's) says why, so "nobody else is here" is never said when the truth is "I
    /// could not ask".
    pub complete: bool,
    /// With `checkouts: everywhere`: where the federation stands, and why other machines'
    /// boards may be missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub federation: Option<FederationStatus>,
    /// Every place where a worktree's changes meet the claims of a peer of another
    /// worktree, or another worktree's changes: one entry per worktree and peer (naming the
    /// peer's claims that meet) or per pair of worktrees, live peers first, every side named
    /// with its kind (`claim` or `change`); at most 32, the rest counted in
    /// `more_change_overlaps`. A worktree's changes never meet the claims of its own peers:
    /// they are that worktree's own work. Empty is the ordinary case.
    #[serde(default)]
    pub change_overlaps: Vec<wire_changes::ListedChangeOverlap>,
    /// How many more entries `change_overlaps` would have; absent when it lists them all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_change_overlaps: usize,
    /// The merge conflicts predicted between worktrees, in short, for a listing of the
    /// repository; absent for `checkouts: this`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflicts: Option<conflicts::wire::ConflictSummary>,
    /// The repository's leases held now, for a listing of the repository: each holder and
    /// who waits, in turn; at most 32. Absent when none is held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leases: Vec<ListedLease>,
    /// Messages between sessions not yet delivered to their recipients, repository-wide, for
    /// a listing of the repository (`majordomus messages` lists them); absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub messages_queued: usize,
}

pub(super) fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The listing of `boards` (this checkout's first), answered to `caller`: what was read of
/// each, its overlaps not yet found (see [`find_overlaps`]).
pub(super) fn listing_of(
    caller: Option<PeerId>,
    boards: Vec<(BoardView, Vec<ListedPeer>)>,
    conflicts: Option<ConflictSummary>,
) -> PeerList {
    let mut peers = Vec::new();
    let mut views = Vec::new();
    for (view, board_peers) in boards {
        peers.extend(board_peers);
        views.push(view);
    }
    PeerList {
        count: views
            .iter()
            .filter(|view| view.reason.is_none())
            .map(|view| view.attached)
            .sum(),
        caller: caller.map(Into::into),
        silent: silent(&peers),
        overlaps: Vec::new(),
        more_overlaps: 0,
        change_overlaps: Vec::new(),
        more_change_overlaps: 0,
        complete: views.iter().all(|view| view.reason.is_none()),
        conflicts: conflicts.map(conflicts::wire::ConflictSummary::from),
        peers,
        boards: views,
        federation: None,
        leases: Vec::new(),
        messages_queued: 0,
    }
}

/// Finds the overlaps of `listing`'s claims and of its boards' changes, read off the peers'
/// records (the listing's own fields ride along, so nothing is copied).
pub(crate) fn find_overlaps(listing: &mut PeerList) {
    let (peers, listed): (Vec<Peer>, Vec<(bool, String)>) = std::mem::take(&mut listing.peers)
        .into_iter()
        .map(|listed| (listed.peer, (listed.bridged, listed.qualified_id)))
        .unzip();
    let changes: Vec<(PeerCheckout, WorktreeChanges)> = listing
        .boards
        .iter()
        .filter_map(|view| Some((view.stamp(), view.changes.clone()?.into())))
        .collect();
    let overlaps = overlaps_among(&peers);
    let change_overlaps = change_overlaps_among(&peers, &changes);
    listing.overlaps = overlaps
        .listed
        .into_iter()
        .map(wire::ListedOverlap::from)
        .collect();
    listing.more_overlaps = overlaps.more;
    listing.change_overlaps = change_overlaps
        .listed
        .into_iter()
        .map(wire_changes::ListedChangeOverlap::from)
        .collect();
    listing.more_change_overlaps = change_overlaps.more;
    listing.peers = peers
        .into_iter()
        .zip(listed)
        .map(|(peer, (bridged, qualified_id))| ListedPeer {
            peer,
            bridged,
            qualified_id,
        })
        .collect();
}
