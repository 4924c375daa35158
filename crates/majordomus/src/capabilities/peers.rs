//! `peers.list` and `peers.announce`: the board, repository-wide — every worktree's peers
//! and their claims, what each worktree actually changed, and where any of them meet.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;

use majordomus_checkout::changes::Changes;
use majordomus_checkout::git::Checkout;
use majordomus_checkout::resolve::resolve_scope;
use majordomus_domain::board::check_announcement;
use majordomus_domain::changes::{
    CHANGED_PATHS, ChangeKind, ChangeOverlap, ChangedPath, ListedChangeOverlap, SideKind,
    WorktreeChanges, change_overlaps_among, changes_meeting,
};
use majordomus_domain::checkouts::{Checkouts, ServerStanding};
use majordomus_domain::conflicts::{ConflictSummary, NotHashed};
use majordomus_domain::limits;
use majordomus_domain::listing::{claims_meeting, overlaps_among, silent};
use majordomus_domain::paths::{ClaimPath, without_repeats};
use majordomus_domain::peers::{
    AnnounceInput, Announced, ListedOverlap, Peer, PeerCheckout, PeerId,
};
use majordomus_domain::text::for_terminal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::CapabilityError;
use crate::capabilities::board::{Board, BoardPeers};
use crate::capabilities::conflicts::{ConflictPrediction, predict_repository};
use crate::capabilities::federated::remote_overlaps;
use crate::capabilities::leases::{ListedLease, lease_line, listed_leases};
use crate::context::{Context, RepositoryReading, Site};
use crate::federation::FederationStatus;
use crate::port::{BoardPort, CachedListing, ListingInputs};
use crate::registry::{
    BenchCases, Declaration, ENCODE_INLINE_BYTES, Exposure, HttpMethod, Kind, Moment, Operation,
    Reply, Stability,
};
use crate::render;
use crate::survey;

/// What to ask of `peers.list`: how wide the board is.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeerListInput {
    /// `repository` (the default): every checkout's board; `this`: only the board of the
    /// checkout the call reached, asking nobody else; `everywhere`: also the boards other
    /// machines publish to the federation, each marked with its machine.
    // `this` is what a gather asks a sibling, so a gather can never ask back.
    #[serde(default)]
    pub checkouts: Checkouts,
}

impl BenchCases for PeerListInput {
    fn bench_cases() -> Vec<(&'static str, Self)> {
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
    pub changes: Option<WorktreeChanges>,
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
    fn unread(id: String, worktree: String, branch: Option<String>, reason: String) -> Self {
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
    fn stamp(&self) -> PeerCheckout {
        PeerCheckout {
            id: self.id.clone(),
            worktree: self.worktree.clone(),
            branch: self.branch.clone(),
            this_checkout: self.this_checkout,
            machine: self.machine.clone(),
        }
    }
}

/// A prediction in short, as a listing carries it: at most a few files per pair and a few
/// dozen pairs (worktrees × worktrees), the rest counted, and why it is partial.
fn summary_of(prediction: ConflictPrediction) -> ConflictSummary {
    let unread: Vec<String> = prediction
        .worktrees
        .iter()
        .filter_map(|w| Some(format!("{}: {}", w.worktree, w.reason.as_deref()?)))
        .collect();
    let reason = prediction.reason.or_else(|| {
        (!prediction.complete).then(|| {
            format!(
                "not every worktree could be read and merged ({})",
                unread.join("; ")
            )
        })
    });
    let more_conflicts = prediction
        .conflicts
        .len()
        .saturating_sub(limits::OVERLAPS_LISTED);
    let conflicts = prediction
        .conflicts
        .into_iter()
        .take(limits::OVERLAPS_LISTED)
        .map(|mut conflict| {
            let beyond = conflict
                .paths
                .len()
                .saturating_sub(limits::OVERLAP_PATH_PAIRS);
            conflict.paths.truncate(limits::OVERLAP_PATH_PAIRS);
            conflict.more_paths += beyond;
            conflict
        })
        .collect();
    let not_hashed = prediction
        .worktrees
        .into_iter()
        .filter(|worktree| !worktree.not_hashed.is_empty())
        .map(|mut worktree| {
            let beyond = worktree
                .not_hashed
                .len()
                .saturating_sub(limits::OVERLAP_PATH_PAIRS);
            worktree.not_hashed.truncate(limits::OVERLAP_PATH_PAIRS);
            NotHashed {
                worktree: worktree.worktree,
                paths: worktree.not_hashed,
                more_paths: worktree.more_not_hashed + beyond,
            }
        })
        .collect();
    ConflictSummary {
        pairs: prediction.pairs,
        conflicts,
        more_conflicts,
        reason,
        not_hashed,
        predicted_seconds_ago: 0,
    }
}

/// One peer as a listing reports it: its board's record, whether a bridge carries its client,
/// and an id that no other peer of the listing shares.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ListedPeer {
    /// The peer as its board records it.
    #[serde(flatten)]
    pub peer: Peer,
    /// Whether its client reaches the server through a `majordomus mcp` bridge (another
    /// process's, forwarding over HTTP) rather than being served by the process it started
    /// or connecting over HTTP itself; `transport` says how the client reached majordomus.
    #[serde(default)]
    pub bridged: bool,
    /// Its id qualified by its checkout, `p1@<first 8 digits of the checkout id>`: every
    /// board has its own `p1`, this is unique across the repository's boards.
    #[serde(default)]
    pub qualified_id: String,
}

impl PeerList {
    /// About how many bytes the listing takes encoded: what its peers wrote, the changed
    /// paths and the overlaps, each with a little for the fields around them.
    fn size_estimate(&self) -> usize {
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
    pub caller: Option<PeerId>,
    /// Attached peers that claim nothing: five peers and five silent is not "no collisions".
    pub silent: usize,
    /// The peers, this checkout's board first and then the siblings in git's order, each
    /// stamped with its checkout (and a `qualified_id`) because every board has its own `p1`.
    pub peers: Vec<ListedPeer>,
    /// Every pair of peers whose claims meet, each pair once, across checkouts too, naming
    /// the claims of each side that meet (their intents are on the peers) and the first
    /// pairs of paths; pairs of live peers first, those with a departed side after; at most
    /// 32, the rest counted in `more_overlaps`. Empty is the ordinary case.
    pub overlaps: Vec<ListedOverlap>,
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
    pub change_overlaps: Vec<ListedChangeOverlap>,
    /// How many more entries `change_overlaps` would have; absent when it lists them all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_change_overlaps: usize,
    /// The merge conflicts predicted between worktrees, in short, for a listing of the
    /// repository; absent for `checkouts: this`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflicts: Option<ConflictSummary>,
    /// The repository's leases held now, for a listing of the repository: each holder and
    /// who waits, in turn; at most 32. Absent when none is held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leases: Vec<ListedLease>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `peers.list`.
pub struct PeersList;

impl Operation for PeersList {
    type Input = PeerListInput;
    type Output = PeerList;
    const DECLARATION: Declaration = Declaration {
        id: "peers.list",
        kind: Kind::Query,
        title: "Peers of this repository",
        description: "Every worker on this repository, in every worktree: its client, transport, \
            when it connected and was last seen (or left), and what it claims; and what each \
            worktree actually changed as git knows it (committed on its branch, staged, unstaged, \
            untracked). `overlaps` are the pairs of peers whose claims meet, naming the claims, \
            `change_overlaps` the changes that meet another worktree's claims or changes, `conflicts` the merges that \
            would conflict now. `boards` lists every checkout covered and `complete` says whether \
            each was read, so a short board is never taken for an empty repository. `checkouts: \
            this` reads this checkout's board alone; `everywhere` adds the boards other machines \
            publish to the federation.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_peers"),
            http: Some((HttpMethod::Get, "/api/v1/peers")),
            cli: Some(&["peers"]),
        },
        tags: &["peers", "coordination"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        moments: &[
            Moment {
                headline: "two sessions wrote to one checkout without knowing of each other",
                detail: "Each saw the other's edits only as unexplained changes to its files \
                    and took them for noise.",
            },
            Moment {
                headline: "two worktrees built the same feature in parallel",
                detail: "Each agent read a board that held only itself; the gather reads every \
                    worktree's board and names the overlap with both checkouts.",
            },
            Moment {
                headline: "an agent that never announced had already edited the files",
                detail: "Its worktree's changes are on the board as git sees them, and meet the \
                    claims of every other worktree.",
            },
        ],
    };

    fn render(output: &PeerList) -> String {
        let rows: Vec<Vec<String>> = output
            .peers
            .iter()
            .map(|listed| {
                let peer = &listed.peer;
                let checkout = peer.checkout.as_ref();
                let claims: Vec<String> = peer.claims.iter().map(render::claim).collect();
                vec![
                    // The table escapes every cell for the terminal.
                    checkout.map_or_else(
                        || "-".into(),
                        |c| match &c.machine {
                            Some(machine) => format!("{machine}:{}", c.worktree),
                            None => c.worktree.clone(),
                        },
                    ),
                    checkout
                        .and_then(|c| c.branch.clone())
                        .unwrap_or_else(|| "-".into()),
                    peer.id.to_string(),
                    format!("{} {}", peer.client.name, peer.client.version),
                    attachment(peer.attached, peer.left_seconds_ago),
                    format!("{}s ago", peer.last_seen_seconds_ago),
                    if claims.is_empty() {
                        "(silent)".into()
                    } else {
                        claims.join("; ")
                    },
                ]
            })
            .collect();
        let mut text = if rows.is_empty() {
            "nobody is on the board".to_string()
        } else {
            render::table(
                &[
                    "WORKTREE",
                    "BRANCH",
                    "PEER",
                    "CLIENT",
                    "ATTACHED",
                    "LAST SEEN",
                    "CLAIMS",
                ],
                &rows,
            )
        };
        text.push_str(&format!(
            "\n{} attached, {} silent, {} overlap(s), {} with changes",
            output.count,
            output.silent,
            output.overlaps.len() + output.more_overlaps,
            output.change_overlaps.len() + output.more_change_overlaps
        ));
        for overlap in &output.overlaps {
            let mut paths: Vec<String> = overlap
                .paths
                .iter()
                .map(|p| format!("{} ~ {}", for_terminal(&p.theirs), for_terminal(&p.yours)))
                .collect();
            if overlap.more_paths > 0 {
                paths.push(format!("{} more", overlap.more_paths));
            }
            let (side, with) = (&overlap.side, &overlap.with);
            text.push_str(&format!(
                "\n  overlap: {} ({}) and {} ({}) on {}",
                peer_side(
                    &side.peer,
                    &side.checkout,
                    side.attached,
                    side.left_seconds_ago
                ),
                claim_names(&side.claims),
                peer_side(
                    &with.peer,
                    &with.checkout,
                    with.attached,
                    with.left_seconds_ago
                ),
                claim_names(&with.claims),
                paths.join(", ")
            ));
        }
        if output.more_overlaps > 0 {
            text.push_str(&format!(
                "\n  and {} more overlap(s) between peers, not listed",
                output.more_overlaps
            ));
        }
        for overlap in &output.change_overlaps {
            text.push_str(&format!("\n  {}", change_overlap_line(overlap)));
        }
        if output.more_change_overlaps > 0 {
            text.push_str(&format!(
                "\n  and {} more change overlap(s), not listed",
                output.more_change_overlaps
            ));
        }
        for board in &output.boards {
            if let Some(changes) = board.changes.as_ref().filter(|c| !c.is_empty()) {
                text.push_str(&format!(
                    "\n  changed in {}: {}",
                    render::checkout(&board.stamp()),
                    changed_paths_line(changes)
                ));
            }
        }
        if let Some(conflicts) = &output.conflicts {
            for conflict in &conflicts.conflicts {
                text.push_str(&format!(
                    "\n  merge conflict predicted: {}",
                    render::conflict(conflict)
                ));
            }
            if conflicts.more_conflicts > 0 {
                text.push_str(&format!(
                    "\n  and {} more pair(s) of worktrees would conflict, not listed",
                    conflicts.more_conflicts
                ));
            }
            if let Some(reason) = &conflicts.reason {
                text.push_str(&format!(
                    "\n  no full conflict prediction: {}",
                    for_terminal(reason)
                ));
            }
            for left_out in &conflicts.not_hashed {
                text.push_str(&format!(
                    "\n  not hashed for the prediction (untracked, over 1 MiB) in {}: {}{}",
                    for_terminal(&left_out.worktree),
                    for_terminal(&left_out.paths.join(", ")),
                    match left_out.more_paths {
                        0 => String::new(),
                        more => format!(" and {more} more"),
                    }
                ));
            }
        }
        for lease in &output.leases {
            text.push_str(&format!("\n  {}", lease_line(lease)));
        }
        if let Some(federation) = &output.federation {
            text.push_str(&format!(
                "\nfederation: {}",
                for_terminal(&federation.summary)
            ));
            for ignored in &federation.ignored {
                text.push_str(&format!(
                    "\n  ignored {}: {}",
                    for_terminal(&ignored.key),
                    for_terminal(&ignored.reason)
                ));
            }
        }
        if !output.complete {
            text.push_str("\nINCOMPLETE: some boards could not be read:");
        }
        if let Some(reason) = output.federation.as_ref().and_then(|f| f.reason.as_ref()) {
            text.push_str(&format!("\n  {}", for_terminal(reason)));
        }
        for board in output.boards.iter().filter(|b| b.reason.is_some()) {
            text.push_str(&format!(
                "\n  {}: {}",
                for_terminal(&board.worktree),
                for_terminal(board.reason.as_deref().unwrap_or(""))
            ));
        }
        text
    }

    async fn run(ctx: &Context, input: PeerListInput) -> Result<PeerList, CapabilityError> {
        listing(ctx, input.checkouts, Detail::Whole).await
    }

    fn encoded_size_estimate(output: &PeerList) -> usize {
        output.size_estimate()
    }

    /// This board's own listing, from the board this process serves, is answered encoded
    /// from memory (see [`this_board_encoded`]): it is what siblings and busy agents ask
    /// for most, and a crowded board's is large.
    async fn reply(
        ctx: &Context,
        input: PeerListInput,
    ) -> Result<Reply<PeerList>, CapabilityError> {
        match (input.checkouts, ctx.server.as_deref()) {
            (Checkouts::This, Some(port)) => {
                this_board_encoded(ctx, port).await.map(Reply::Encoded)
            }
            _ => Self::run(ctx, input).await.map(Reply::Typed),
        }
    }
}

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

/// The listing of `checkouts`; with [`Detail::PeersOnly`], its peers and boards alone.
pub(crate) async fn listing(
    ctx: &Context,
    checkouts: Checkouts,
    detail: Detail,
) -> Result<PeerList, CapabilityError> {
    let mut listing = match checkouts {
        // The repository's listing with the boards other machines publish, joined by this
        // checkout's board (see [`Board::everywhere`]).
        Checkouts::Everywhere => {
            let here = gather(ctx, Checkouts::Repository, detail).await?;
            Board::here(ctx).await.everywhere(&ctx.site, here).await
        }
        _ => gather(ctx, checkouts, detail).await?,
    };
    if checkouts != Checkouts::This && detail == Detail::Whole {
        listing.leases = listed_leases(&ctx.site).await;
    }
    if detail == Detail::Whole {
        if listing.size_estimate() > ENCODE_INLINE_BYTES {
            // A crowded repository's peers take a while to compare: not on a worker.
            listing = tokio::task::spawn_blocking(move || {
                find_overlaps(&mut listing);
                listing
            })
            .await
            .map_err(|error| {
                CapabilityError::internal(format!("finding the overlaps failed: {error}"))
            })?;
        } else {
            find_overlaps(&mut listing);
        }
    }
    Ok(listing)
}

/// The listing of `checkouts` on this machine.
async fn gather(
    ctx: &Context,
    checkouts: Checkouts,
    detail: Detail,
) -> Result<PeerList, CapabilityError> {
    let site = &ctx.site;
    let whole_repository = checkouts == Checkouts::Repository && site.checkout.common_dir.is_some();
    let covered = survey::covered_checkouts(site, checkouts).await?;
    let boards = futures::future::join_all(
        covered
            .into_iter()
            .map(|checkout| read_board(ctx, checkout, !whole_repository, detail)),
    );
    let whole_repository = whole_repository && detail == Detail::Whole;
    // The worktrees nobody serves and the conflict prediction are read in the background,
    // one reading at a time: a repository of a hundred worktrees costs a `git status` per
    // worktree about once a second there, not on every call, and never runs them all at
    // once. A server waits for it at most half the probe timeout; a process that does not
    // serve (a person's `majordomus peers`) has no later call to profit from it, and waits
    // for it to finish.
    let wait = match ctx.server {
        Some(_) => site.probe_timeout() / 2,
        None => Duration::MAX,
    };
    let reading = async {
        if whole_repository {
            latest_reading(site, wait).await
        } else {
            None
        }
    };
    let (mut boards, reading) = tokio::join!(boards, reading);
    for (view, _) in &mut boards {
        if whole_repository && view.changes.is_none() {
            view.changes = Some(changes_read(reading.as_deref(), view));
        }
    }
    let conflicts = whole_repository.then(|| conflicts_read(reading.as_deref()));
    Ok(listing_of(ctx.caller.clone(), boards, conflicts))
}

/// The listing of `boards` (this checkout's first), answered to `caller`: what was read of
/// each, its overlaps not yet found (see [`find_overlaps`]).
fn listing_of(
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
        caller,
        silent: silent(&peers),
        overlaps: Vec::new(),
        more_overlaps: 0,
        change_overlaps: Vec::new(),
        more_change_overlaps: 0,
        complete: views.iter().all(|view| view.reason.is_none()),
        conflicts,
        peers,
        boards: views,
        federation: None,
        leases: Vec::new(),
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
        .filter_map(|view| Some((view.stamp(), view.changes.clone()?)))
        .collect();
    let overlaps = overlaps_among(&peers);
    let change_overlaps = change_overlaps_among(&peers, &changes);
    listing.overlaps = overlaps.listed;
    listing.more_overlaps = overlaps.more;
    listing.change_overlaps = change_overlaps.listed;
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

/// `checkouts: this` from the board this process serves, encoded as the surfaces write it.
///
/// The listing is made once per state of the board and served from memory until something
/// it lists changes: the board's version (any peer attached, heard from or gone, any claim
/// announced or released), the instant any listed age ticks over, the branch, the server's
/// standing and address, or the worktree's changes (which git reads at most about once a
/// second). So every answer is the one a listing made at that instant would be, at the
/// cost of a copy. The caller is the only field that depends on who asks: it is written
/// into each answer.
async fn this_board_encoded(ctx: &Context, port: &dyn BoardPort) -> Result<Bytes, CapabilityError> {
    let site = &ctx.site;
    let now = SystemTime::now();
    let checkout = survey::covered_checkouts(site, Checkouts::This)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| CapabilityError::internal("no checkout is covered by `this`"))?;
    let inputs = ListingInputs {
        branch: checkout.branch.clone(),
        standing: port.own_standing(),
        url: port.url(),
        changes: read_changes(site, &checkout).await,
    };
    let version = port.board_version(now);
    let cache = port.listing_cache();
    let listing = match cache.latest() {
        Some(kept) if kept.serves(version, now, &inputs) => kept,
        _ => {
            let made = Arc::new(encode_this(port, &checkout, inputs, now).await?);
            cache.keep(made.clone());
            made
        }
    };
    for_caller(&listing, ctx.caller.as_ref())
}

/// Makes this board's listing at `now`, encoded as a JSON value is (the keys in order), so
/// that it is byte for byte the answer the listing's value would give. A crowded board's
/// overlaps are found and its listing encoded on a blocking thread, not on a worker.
async fn encode_this(
    port: &dyn BoardPort,
    checkout: &Checkout,
    inputs: ListingInputs,
    now: SystemTime,
) -> Result<CachedListing, CapabilityError> {
    let snapshot = port.board_snapshot(now);
    let bridged = port.bridged_peers();
    let peers = snapshot
        .peers
        .into_iter()
        .map(|peer| ListedPeer {
            bridged: bridged.contains(&peer.id),
            qualified_id: String::new(),
            peer,
        })
        .collect();
    let board = listed_board(
        stamp(checkout, true),
        inputs.standing,
        inputs.url.clone(),
        None,
        inputs.changes.clone(),
        peers,
    );
    let listing = listing_of(None, vec![board], None);
    let (encoded, caller_at) = if listing.size_estimate() > ENCODE_INLINE_BYTES {
        tokio::task::spawn_blocking(move || encode_listing(listing))
            .await
            .map_err(|error| {
                CapabilityError::internal(format!("encoding the listing failed: {error}"))
            })??
    } else {
        encode_listing(listing)?
    };
    Ok(CachedListing {
        version: snapshot.version,
        made_at: now,
        same_until: snapshot.same_until,
        inputs,
        encoded: Bytes::from(encoded),
        caller_at,
    })
}

/// `listing` with its overlaps found, encoded, and where its caller's `null` is.
fn encode_listing(mut listing: PeerList) -> Result<(Vec<u8>, usize), CapabilityError> {
    find_overlaps(&mut listing);
    let encoded = serde_json::to_value(&listing)
        .and_then(|value| serde_json::to_vec(&value))
        .map_err(|error| {
            CapabilityError::internal(format!("could not encode the answer: {error}"))
        })?;
    // Keys are in order and `boards` precedes `caller`; nothing inside a board has a
    // `caller`, and a string cannot hold this text unescaped, so the first match is the
    // field.
    const CALLER: &[u8] = b",\"caller\":null,";
    let caller_at = encoded
        .windows(CALLER.len())
        .position(|window| window == CALLER)
        .map(|at| at + CALLER.len() - "null,".len())
        .ok_or_else(|| CapabilityError::internal("the encoded listing names no caller"))?;
    Ok((encoded, caller_at))
}

/// The kept listing as answered to `caller`: as it is for a call without a peer, with the
/// peer's id in place of its `null` otherwise.
fn for_caller(listing: &CachedListing, caller: Option<&PeerId>) -> Result<Bytes, CapabilityError> {
    let Some(caller) = caller else {
        return Ok(listing.encoded.clone());
    };
    let id = serde_json::to_vec(caller).map_err(|error| {
        CapabilityError::internal(format!("could not encode the caller: {error}"))
    })?;
    let (before, after) = listing.encoded.split_at(listing.caller_at);
    let after = &after["null".len()..];
    let mut answer = Vec::with_capacity(before.len() + id.len() + after.len());
    answer.extend_from_slice(before);
    answer.extend_from_slice(&id);
    answer.extend_from_slice(after);
    Ok(Bytes::from(answer))
}

/// How many digits of the checkout id qualify a peer id in a listing.
const QUALIFIER_DIGITS: usize = 8;

/// Whether a peer is attached, for people: `yes`, or how long ago it left.
fn attachment(attached: bool, left_seconds_ago: Option<u64>) -> String {
    match (attached, left_seconds_ago) {
        (true, _) => "yes".into(),
        (false, Some(seconds)) => render::left_ago(seconds),
        (false, None) => "left".into(),
    }
}

/// The claims of one side of an overlap for people, as the table names them: `[parser],
/// [docs]`, the unnamed one as `unnamed claim`; the first few, and how many more.
fn claim_names(claims: &[Option<String>]) -> String {
    /// How many claim names one overlap line shows of a side.
    const SHOWN: usize = 4;
    let mut names: Vec<String> = claims
        .iter()
        .take(SHOWN)
        .map(|name| match name {
            Some(name) => format!("[{}]", for_terminal(name)),
            None => "unnamed claim".to_owned(),
        })
        .collect();
    if claims.len() > SHOWN {
        names.push(format!("{} more claim(s)", claims.len() - SHOWN));
    }
    names.join(", ")
}

/// One side of an overlap for people: the peer, its worktree, and when it left if it did.
fn peer_side(
    peer: &PeerId,
    checkout: &Option<PeerCheckout>,
    attached: bool,
    left_seconds_ago: Option<u64>,
) -> String {
    let mut side = match checkout {
        Some(c) => match &c.machine {
            Some(machine) => format!(
                "{peer} in {} on {}",
                for_terminal(&c.worktree),
                for_terminal(machine)
            ),
            None => format!("{peer} in {}", for_terminal(&c.worktree)),
        },
        None => peer.to_string(),
    };
    if !attached {
        side.push_str(&format!(" ({})", attachment(attached, left_seconds_ago)));
    }
    side
}

/// A worktree's changes meeting a claim or other changes, as a sentence: "worktree
/// `/wt/beta` (branch `beta`) has uncommitted changes to `src/parser/lexer.rs` (unstaged);
/// p1 in `/wt/alpha` claims `src/parser` (rewrite the parser)".
fn change_overlap_line(overlap: &ListedChangeOverlap) -> String {
    let pairs = &overlap.overlap.paths;
    let mut theirs: Vec<(&str, &[ChangeKind])> = Vec::new();
    let mut yours: Vec<(&str, &[ChangeKind])> = Vec::new();
    for pair in pairs {
        if !theirs.iter().any(|(path, _)| *path == pair.theirs) {
            theirs.push((&pair.theirs, &pair.kinds));
        }
        if !yours.iter().any(|(path, _)| *path == pair.yours) {
            yours.push((&pair.yours, &pair.your_kinds));
        }
    }
    let with = &overlap.with;
    let other = match (with.kind, &with.peer) {
        (SideKind::Claim, Some(peer)) => {
            let claimed: Vec<String> = yours
                .iter()
                .map(|(path, _)| for_terminal(path).into_owned())
                .collect();
            format!(
                "{} claims {} ({})",
                peer_side(
                    peer,
                    &with.checkout,
                    with.attached.unwrap_or(true),
                    with.left_seconds_ago
                ),
                claimed.join(", "),
                claim_names(&with.claims)
            )
        }
        _ => format!(
            "{} has {}",
            with.checkout
                .as_ref()
                .map_or_else(|| "another worktree".into(), render::checkout),
            render::changes_to(&yours)
        ),
    };
    let more = if overlap.overlap.more_paths > 0 {
        format!(" ({} more pair(s) of paths)", overlap.overlap.more_paths)
    } else {
        String::new()
    };
    format!(
        "change overlap: {} has {}; {other}{more}",
        render::checkout(&overlap.overlap.checkout),
        render::changes_to(&theirs)
    )
}

/// How many paths a worktree changed, and the first few with how, for people.
fn changed_paths_line(changes: &WorktreeChanges) -> String {
    /// How many changed paths one line names.
    const SHOWN: usize = 5;
    let total = changes.paths.len() + changes.more_paths;
    let shown: Vec<String> = changes
        .paths
        .iter()
        .take(SHOWN)
        .map(|changed| {
            let kinds: Vec<&str> = changed.kinds.iter().map(|k| k.as_str()).collect();
            format!("{} ({})", for_terminal(&changed.path), kinds.join(", "))
        })
        .collect();
    let mut line = format!("{total} path(s): {}", shown.join(", "));
    if total > shown.len() {
        line.push_str(&format!(" and {} more", total - shown.len()));
    }
    line
}

/// A checkout as answers name it.
fn stamp(checkout: &Checkout, this_checkout: bool) -> PeerCheckout {
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
async fn read_board(
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
fn listed_board(
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

/// What a worktree changed, from the site's cache when it holds a reading younger than its
/// interval, otherwise read by git on a blocking thread (so at most about once a second per
/// worktree); `None` outside git.
///
/// The read gets half the probe timeout: a board asked by a sibling must answer within the
/// whole of it, and in a large repository `git status` can take longer. A read that runs
/// over is reported as such and left to finish, so the next call finds it in the cache.
async fn read_changes(site: &Arc<Site>, checkout: &Checkout) -> Option<WorktreeChanges> {
    checkout.common_dir.as_ref()?;
    if let Some(kept) = site.changes.kept(&checkout.root) {
        return Some(board_changes(kept));
    }
    let reader = site.clone();
    let root = checkout.root.clone();
    let read = tokio::task::spawn_blocking(move || {
        let default_branch = reader.config.changes.default_branch.as_deref();
        reader.changes.changes(&root, default_branch)
    });
    let budget = site.probe_timeout() / 2;
    Some(match tokio::time::timeout(budget, read).await {
        Ok(Ok(read)) => board_changes(read),
        Ok(Err(error)) => WorktreeChanges::unreadable(format!("reading them failed: {error}")),
        Err(_) => WorktreeChanges::unreadable(format!(
            "git did not finish reading them within {} ms; a later call will have them",
            budget.as_millis()
        )),
    })
}

/// A worktree's changes as git read them, as a board carries them; git's words when it
/// could not read them.
fn board_changes(read: Result<Changes, String>) -> WorktreeChanges {
    let changes = match read {
        Ok(changes) => changes,
        Err(error) => return WorktreeChanges::unreadable(error),
    };
    capped(WorktreeChanges {
        paths: changes
            .paths
            .into_iter()
            .map(|changed| ChangedPath {
                path: changed.path,
                kinds: changed.kinds,
            })
            .collect(),
        more_paths: changes.omitted,
        reason: None,
        read_seconds_ago: None,
    })
}

/// At most [`CHANGED_PATHS`] listed, the rest counted: a sibling's answer is held to the
/// same bound as a reading here.
fn capped(mut changes: WorktreeChanges) -> WorktreeChanges {
    let beyond = changes.paths.len().saturating_sub(CHANGED_PATHS);
    changes.paths.truncate(CHANGED_PATHS);
    changes.more_paths = changes.more_paths.saturating_add(beyond);
    changes
}

/// A board's changes from the repository reading, with their age; or why there are none yet.
fn changes_read(reading: Option<&RepositoryReading>, view: &BoardView) -> WorktreeChanges {
    let found = reading.and_then(|reading| {
        let mut changes = reading.changes.get(&view.worktree)?.clone();
        changes.read_seconds_ago = Some(reading.started.elapsed().as_secs());
        Some(changes)
    });
    found.unwrap_or_else(|| {
        WorktreeChanges::unreadable(
            "not read yet: git is still reading this worktree; a later call will have it",
        )
    })
}

/// The conflict summary from the repository reading, with its age; or why there is none yet.
fn conflicts_read(reading: Option<&RepositoryReading>) -> ConflictSummary {
    match reading {
        Some(reading) => ConflictSummary {
            predicted_seconds_ago: reading.started.elapsed().as_secs(),
            ..reading.conflicts.clone()
        },
        None => ConflictSummary {
            pairs: 0,
            conflicts: Vec::new(),
            more_conflicts: 0,
            reason: Some(
                "not predicted yet: the worktrees are still being read; a later call will \
                 have it"
                    .into(),
            ),
            not_hashed: Vec::new(),
            predicted_seconds_ago: 0,
        },
    }
}

/// The repository's latest reading of every worktree's changes and the conflicts predicted
/// between them, as a listing waits for it: what the guard compares a file with. `None` for
/// a checkout that has no siblings, or while no reading has finished.
pub(crate) async fn repository_reading(ctx: &Context) -> Option<Arc<RepositoryReading>> {
    ctx.site.checkout.common_dir.as_ref()?;
    latest_reading(&ctx.site, ctx.site.probe_timeout() / 2).await
}

/// The latest reading of the whole repository, a new one started in the background when it
/// is older than a second; see [`Site::repository_reading`] for how long it is waited for.
async fn latest_reading(site: &Arc<Site>, wait: Duration) -> Option<Arc<RepositoryReading>> {
    site.repository_reading(wait, read_repository(site.clone()))
        .await
}

/// Reads every worktree's changes (one after the other, on one blocking thread) and then
/// predicts the conflicts between them from the same, now cached, reading.
async fn read_repository(site: Arc<Site>) -> RepositoryReading {
    let started = Instant::now();
    let checkouts = survey::covered_checkouts(&site, Checkouts::Repository)
        .await
        .unwrap_or_default();
    let reader = site.clone();
    let changes = tokio::task::spawn_blocking(move || {
        let default_branch = reader.config.changes.default_branch.as_deref();
        checkouts
            .iter()
            .map(|checkout| {
                let changes = board_changes(reader.changes.changes(&checkout.root, default_branch));
                (checkout.root.display().to_string(), changes)
            })
            .collect()
    })
    .await
    .unwrap_or_default();
    let conflicts = match predict_repository(&site).await {
        Ok(prediction) => summary_of(prediction),
        Err(error) => ConflictSummary {
            pairs: 0,
            conflicts: Vec::new(),
            more_conflicts: 0,
            reason: Some(error.message),
            not_hashed: Vec::new(),
            predicted_seconds_ago: 0,
        },
    };
    RepositoryReading {
        started,
        took: started.elapsed(),
        changes,
        conflicts,
    }
}

/// `peers.announce`.
pub struct PeersAnnounce;

impl BenchCases for AnnounceInput {
    fn bench_cases() -> Vec<(&'static str, Self)> {
        vec![
            (
                "one_path",
                AnnounceInput {
                    intent: "benchmark the announce path".into(),
                    scope: vec!["src/bench".into()],
                    claim: None,
                },
            ),
            (
                "ten_paths_named",
                AnnounceInput {
                    intent: "benchmark a named claim of ten paths".into(),
                    scope: (0..10).map(|i| format!("crates/part{i}/src")).collect(),
                    claim: Some("bench".into()),
                },
            ),
        ]
    }
}

/// Another worktree's board that an announcement could not read in time.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct UnreadBoard {
    /// Where the worktree is.
    pub worktree: String,
    /// The branch checked out there, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Why its board could not be read.
    pub reason: String,
}

/// The answer of `peers.announce`: you as the board now records you, every claim and every
/// change in the repository that meets the one you made, and which boards could not be
/// asked.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct AnnounceAnswer {
    /// You, the claims that meet yours (at most 32, live peers' first) and the paths you
    /// stopped claiming.
    #[serde(flatten)]
    pub announced: Announced,
    /// How many more claims of other peers meet yours than `overlaps` lists; absent when it
    /// lists them all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_overlaps: usize,
    /// Other worktrees' changes, as git knows them (committed on their branch, staged,
    /// unstaged, untracked), that meet the claim just made: work already done there,
    /// announced or not. Your own worktree's changes are your own work and never listed.
    /// Empty is the ordinary case.
    pub change_overlaps: Vec<ChangeOverlap>,
    /// The other worktrees whose boards could not be read within the probe timeout, and
    /// why: their claims are missing from `overlaps`. Empty is the ordinary case.
    pub boards_unread: Vec<UnreadBoard>,
    /// Whether every worktree's board was read, so that `overlaps` covers the repository.
    pub complete: bool,
}

/// What a refusal of a call without a connection says: the claim must belong to a peer.
pub(crate) fn needs_a_session(tool: &str) -> CapabilityError {
    CapabilityError::refused(format!(
        "this call needs an MCP session to belong to: call the `{tool}` tool through \
         `majordomus mcp` (the bridge your MCP client runs) rather than over plain HTTP or a \
         session-less MCP request"
    ))
}

impl Operation for PeersAnnounce {
    type Input = AnnounceInput;
    type Output = AnnounceAnswer;
    const DECLARATION: Declaration = Declaration {
        id: "peers.announce",
        kind: Kind::Command,
        title: "Announce what you are working on",
        description: "Say in one line what this session is doing and which repository paths it \
            expects to touch. The answer lists every other peer, in any worktree, whose claim \
            meets yours (`overlaps`, live peers first), every other worktree's actual changes that \
            meet it (`change_overlaps`), and in `boards_unread` the worktrees that could not be \
            asked in time. Name a claim to hold several side by side; announcing under the same \
            name replaces it (`released` lists the paths no longer claimed). Paths are \
            repository-relative and taken as the file system has them: a link meets its target, a \
            link out of the repository is refused; `.` is the whole repository and a glob counts \
            as its directory prefix.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_announce"),
            // Only the MCP session calling it can act: a claim belongs to a peer, an attached
            // episode to a connection. Plain HTTP has no session, so a route could only ever
            // refuse; what hooks do over HTTP for a session is `hooks.*`, whose input names it.
            http: None,
            cli: None,
        },
        tags: &["peers", "coordination"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        moments: &[
            Moment {
                headline: "learned of a collision only at merge time",
                detail: "Two agents edited the same module for an hour; an announce tells the \
                    second one the moment it claims the ground.",
            },
            Moment {
                headline: "a subagent's work vanished from the board",
                detail: "Without names every announcement replaced the last; named claims stand \
                    side by side.",
            },
            Moment {
                headline: "told `overlaps: []` while a peer in another worktree held the ground",
                detail: "The announce reads every worktree's board within the probe timeout, and \
                    says which ones it could not read.",
            },
        ],
    };

    async fn run(ctx: &Context, input: AnnounceInput) -> Result<AnnounceAnswer, CapabilityError> {
        let tool = Self::DECLARATION
            .exposure
            .mcp_tool
            .unwrap_or(Self::DECLARATION.id);
        // Input that could never be accepted is bad input on every surface, before the
        // question whether this caller can announce at all.
        check_announcement(&input)
            .map_err(|error| CapabilityError::invalid_input(error.to_string()))?;
        let (Some(server), Some(caller)) = (&ctx.server, &ctx.caller) else {
            return Err(needs_a_session(tool));
        };
        let paths = resolve(&ctx.site, &input.scope).await?;
        let mine = without_repeats(paths.clone());
        let mut announced = server.announce_resolved(caller, input, paths, SystemTime::now())?;
        let (here, siblings) = read_siblings(ctx).await;
        for overlap in &mut announced.overlaps {
            overlap.checkout = Some(here.clone());
        }
        let mut boards_unread = Vec::new();
        let mut peers = Vec::new();
        let mut changes = Vec::new();
        for (view, board_peers) in siblings {
            if let Some(reason) = &view.reason {
                boards_unread.push(UnreadBoard {
                    worktree: view.worktree.clone(),
                    branch: view.branch.clone(),
                    reason: reason.clone(),
                });
            }
            if let Some(worktree_changes) = view.changes.clone() {
                changes.push((view.stamp(), worktree_changes));
            }
            peers.extend(board_peers.into_iter().map(|listed| listed.peer));
        }
        announced.overlaps.extend(claims_meeting(&mine, &peers));
        let remote = server.federation().remote_boards();
        if !remote.is_empty() {
            let worktree = ctx.site.checkout.root.display().to_string();
            announced
                .overlaps
                .extend(remote_overlaps(&announced, &worktree, &remote));
        }
        announced.overlaps.sort_by_key(|overlap| !overlap.attached);
        let more_overlaps = announced
            .overlaps
            .len()
            .saturating_sub(limits::OVERLAPS_LISTED);
        announced.overlaps.truncate(limits::OVERLAPS_LISTED);
        Ok(AnnounceAnswer {
            announced,
            more_overlaps,
            change_overlaps: changes_meeting(&mine, &changes),
            complete: boards_unread.is_empty(),
            boards_unread,
        })
    }
}

/// Up to how many scope paths are resolved on the calling thread: a few `readlink`s each,
/// less than the hop to a blocking thread and back that a wide scope is worth.
const INLINE_SCOPE_PATHS: usize = 4;

/// Where each scope path leads on disk; a path leading out of the checkout is bad input. A
/// small scope in a small repository is resolved on the calling thread (see
/// [`Site::reads_inline`]), anything more on a blocking thread.
async fn resolve(site: &Arc<Site>, scope: &[String]) -> Result<Vec<ClaimPath>, CapabilityError> {
    let resolved = if scope.len() <= INLINE_SCOPE_PATHS && site.reads_inline() {
        resolve_scope(&site.checkout.root, scope)
    } else {
        let root = site.checkout.root.clone();
        let scope = scope.to_vec();
        tokio::task::spawn_blocking(move || resolve_scope(&root, &scope))
            .await
            .map_err(|error| {
                CapabilityError::internal(format!("the scope could not be resolved: {error}"))
            })?
    };
    resolved.map_err(|error| CapabilityError::invalid_input(error.to_string()))
}

/// This checkout as answers name it, and every other worktree's board, each read as
/// `peers.list` reads it, all within one probe timeout: an announce is never held up by a
/// sibling that is slow or hung, and says which boards it could not read.
async fn read_siblings(ctx: &Context) -> (PeerCheckout, Vec<(BoardView, Vec<ListedPeer>)>) {
    let site = &ctx.site;
    let timeout = site.probe_timeout();
    let deadline = tokio::time::Instant::now() + timeout;
    let too_slow = format!("it did not answer within {} ms", timeout.as_millis());
    let listed = tokio::time::timeout_at(
        deadline,
        survey::covered_checkouts(site, Checkouts::Repository),
    )
    .await;
    let checkouts = match listed {
        Ok(Ok(checkouts)) => checkouts,
        failed => {
            let reason = match failed {
                Ok(Err(error)) => error.message,
                _ => format!(
                    "the worktrees could not be listed within {} ms",
                    timeout.as_millis()
                ),
            };
            let mut here = site.checkout.clone();
            here.branch = here.current_branch();
            let repository = site.checkout.common_dir.as_ref().map_or_else(
                || here.root.display().to_string(),
                |dir| dir.display().to_string(),
            );
            let unread = BoardView::unread(
                String::new(),
                repository,
                None,
                format!("the other worktrees' boards were not read: {reason}"),
            );
            return (stamp(&here, true), vec![(unread, Vec::new())]);
        }
    };
    let here = stamp(&checkouts[0], true);
    let any_sibling = checkouts.len() > 1;
    let siblings = checkouts.into_iter().skip(1).map(|checkout| {
        let too_slow = too_slow.clone();
        async move {
            let unread = BoardView::unread(
                checkout.id.clone(),
                checkout.root.display().to_string(),
                checkout.branch.clone(),
                too_slow,
            );
            tokio::time::timeout_at(deadline, read_board(ctx, checkout, false, Detail::Whole))
                .await
                .unwrap_or((unread, Vec::new()))
        }
    });
    // What the worktrees without a server changed comes from the repository reading, waited
    // for within the same deadline.
    let reading = async {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match any_sibling {
            true => latest_reading(site, left).await,
            false => None,
        }
    };
    let (mut boards, reading) = tokio::join!(futures::future::join_all(siblings), reading);
    for (view, _) in &mut boards {
        if view.changes.is_none()
            && let Some(reading) = &reading
        {
            view.changes = reading.changes.get(&view.worktree).cloned();
        }
    }
    (here, boards)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::conflicts::PredictedWorktree;
    use majordomus_domain::conflicts::{ConflictSide, PredictedConflict};

    fn side(name: &str) -> ConflictSide {
        ConflictSide {
            worktree: format!("/wt/{name}"),
            branch: Some(name.into()),
            checkout_id: name.into(),
        }
    }

    fn worktree(name: &str, reason: Option<&str>) -> PredictedWorktree {
        PredictedWorktree {
            worktree: format!("/wt/{name}"),
            branch: Some(name.into()),
            checkout_id: name.into(),
            changed: 3,
            uncommitted: true,
            snapshot: None,
            not_hashed: Vec::new(),
            more_not_hashed: 0,
            reason: reason.map(str::to_owned),
        }
    }

    #[test]
    fn a_conflict_summary_names_a_few_files_and_says_why_it_is_partial() {
        let prediction = ConflictPrediction {
            git_version: Some("2.47.3".into()),
            reason: None,
            worktrees: vec![
                PredictedWorktree {
                    not_hashed: (0..10).map(|n| format!("data/{n}.bin")).collect(),
                    more_not_hashed: 2,
                    ..worktree("alpha", None)
                },
                worktree("beta", Some("git failed")),
            ],
            pairs: 1,
            conflicts: vec![PredictedConflict {
                ours: side("alpha"),
                theirs: side("gamma"),
                paths: (0..20).map(|n| format!("src/{n:02}.rs")).collect(),
                more_paths: 5,
                hunks: Vec::new(),
            }],
            complete: false,
        };
        let summary = summary_of(prediction);
        assert_eq!(summary.pairs, 1);
        let conflict = &summary.conflicts[0];
        assert_eq!(conflict.paths.len(), limits::OVERLAP_PATH_PAIRS);
        assert_eq!(conflict.paths[0], "src/00.rs");
        assert_eq!(conflict.more_paths, 5 + 12, "the cut files are counted");
        let [left_out] = &summary.not_hashed[..] else {
            panic!("one worktree left files out: {:?}", summary.not_hashed);
        };
        assert_eq!(left_out.worktree, "/wt/alpha");
        assert_eq!(left_out.paths.len(), limits::OVERLAP_PATH_PAIRS);
        assert_eq!(
            left_out.more_paths,
            2 + 2,
            "the files not named are counted"
        );
        assert_eq!(
            summary.reason.as_deref(),
            Some("not every worktree could be read and merged (/wt/beta: git failed)")
        );

        let too_old = ConflictPrediction {
            git_version: Some("2.30.0".into()),
            reason: Some("predicting conflicts needs git 2.38 or later".into()),
            worktrees: vec![],
            pairs: 0,
            conflicts: vec![],
            complete: false,
        };
        assert_eq!(
            summary_of(too_old).reason.as_deref(),
            Some("predicting conflicts needs git 2.38 or later"),
            "the prediction's own reason comes first"
        );
    }

    #[test]
    fn a_conflict_summary_lists_a_few_dozen_pairs_and_counts_the_rest() {
        let names: Vec<String> = (0..12).map(|n| format!("w{n:02}")).collect();
        let conflicts: Vec<PredictedConflict> = names
            .iter()
            .enumerate()
            .flat_map(|(i, ours)| {
                names[i + 1..].iter().map(move |theirs| PredictedConflict {
                    ours: side(ours),
                    theirs: side(theirs),
                    paths: vec!["src/lib.rs".into()],
                    more_paths: 0,
                    hunks: Vec::new(),
                })
            })
            .collect();
        let prediction = ConflictPrediction {
            git_version: Some("2.47.3".into()),
            reason: None,
            worktrees: names.iter().map(|name| worktree(name, None)).collect(),
            pairs: conflicts.len(),
            conflicts,
            complete: true,
        };
        let summary = summary_of(prediction);
        assert_eq!(summary.conflicts.len(), limits::OVERLAPS_LISTED);
        assert_eq!(summary.more_conflicts, 66 - limits::OVERLAPS_LISTED);
        assert_eq!(summary.conflicts[0].theirs.worktree, "/wt/w01");
    }

    #[test]
    fn changes_beyond_the_bound_are_counted_not_listed() {
        let paths: Vec<ChangedPath> = (0..CHANGED_PATHS + 3)
            .map(|n| ChangedPath {
                path: format!("gen/{n}"),
                kinds: vec![ChangeKind::Untracked],
            })
            .collect();
        let answered = WorktreeChanges {
            paths,
            more_paths: 10,
            reason: None,
            read_seconds_ago: None,
        };
        let held = capped(answered);
        assert_eq!(held.paths.len(), CHANGED_PATHS);
        assert_eq!(held.more_paths, 13);
    }

    #[test]
    fn people_read_a_change_overlap_as_a_sentence() {
        let beta = PeerCheckout {
            id: "b".into(),
            worktree: "/wt/beta".into(),
            branch: Some("feature/beta".into()),
            this_checkout: false,
            machine: None,
        };
        let alpha = PeerCheckout {
            id: "a".into(),
            worktree: "/wt/alpha".into(),
            branch: Some("alpha".into()),
            this_checkout: true,
            machine: None,
        };
        let overlap = ListedChangeOverlap {
            overlap: ChangeOverlap {
                kind: SideKind::Change,
                checkout: beta,
                paths: vec![majordomus_domain::changes::ChangeOverlapPath {
                    yours: "src/parser".into(),
                    theirs: "src/parser/lexer.rs".into(),
                    kinds: vec![ChangeKind::Unstaged],
                    your_kinds: vec![],
                }],
                more_paths: 0,
            },
            with: majordomus_domain::changes::ChangeOverlapSide {
                kind: SideKind::Claim,
                checkout: Some(alpha),
                peer: Some(PeerId::nth(1)),
                attached: Some(false),
                left_seconds_ago: Some(240),
                claims: vec![None, Some("parser\u{1b}[2J".into())],
            },
        };
        assert_eq!(
            change_overlap_line(&overlap),
            "change overlap: worktree /wt/beta (branch feature/beta) has uncommitted changes to \
             src/parser/lexer.rs (unstaged); p1 in /wt/alpha (left 4 min ago) claims src/parser \
             (unnamed claim, [parser\\x1b[2J])"
        );
    }
}
