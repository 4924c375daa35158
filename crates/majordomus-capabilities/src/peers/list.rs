//! `peers.list`: the listing of one checkout, the repository or every machine; a board's
//! peers read wherever the board is ([`Board::peers`], [`read_board`]), which asks a remote
//! board's `peers.list`, so the operation and its reading of boards live together; and the
//! repository's listing kept between calls by what its boards read ([`repository_reply`]).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use majordomus_checkout::git::Checkout;
use majordomus_checkout::notice::Noticed;
use majordomus_domain::changes::WorktreeChanges;
use majordomus_domain::checkouts::{Checkouts, ServerStanding};
use majordomus_domain::conflicts::ConflictSummary;
use majordomus_domain::peers::{Peer, PeerCheckout};

use crate::board::{Board, Unasked, ask};
use crate::leases::{ListedLease, listed_leases};
use crate::wire;
use majordomus_core::api::CapabilityError;
use majordomus_core::context::{Context, Site};
use majordomus_core::port::BoardPort;
use majordomus_core::registry::{
    Declaration, Exposure, Form, HttpMethod, Kind, Moment, Needs, Operation, Reply, Stability,
    inline_or_blocking,
};
use majordomus_core::survey;
use majordomus_federation::{Federation, FederationStatus};

use super::answer::{BoardView, ListedPeer, PeerList, PeerListInput, find_overlaps, listing_of};
use super::boards::{Detail, listed_board, stamp};
use super::cache::{EncodedListing, Kept, KeptListings, Latest, answer_kept, this_board_reply};
use super::changes::{capped, read_changes};
use super::federated::merge_everywhere;
use super::reading::{changes_read, conflicts_read, latest_reading};
use super::render;

/// `peers.list`.
pub struct PeersList;

impl Operation for PeersList {
    type Input = PeerListInput;
    type Output = PeerList;
    const DECLARATION: Declaration = Declaration {
        id: "peers.list",
        kind: Kind::Query,
        title: "Peers of this repository",
        description: "Every session on this repository, in every worktree: its client, when it \
            was last seen, what it claims, and what each worktree changed as git knows it. \
            `overlaps`: pairs of peers whose claims meet; `change_overlaps`: changes that meet \
            another worktree's claims or changes; `conflicts`: merges that would conflict now. \
            `boards` and `complete` say which checkouts were read, so a short board is never \
            taken for an empty repository.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_peers"),
            http: Some((HttpMethod::Get, "/api/v1/peers")),
            cli: Some(&["peers"]),
        },
        tags: &["peers", "coordination"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        needs: Needs::Anyone,
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
        render::peer_list(output)
    }

    async fn run(ctx: &Context, input: PeerListInput) -> Result<PeerList, CapabilityError> {
        listing(ctx, input.checkouts.into(), Detail::Whole).await
    }

    fn encoded_size_estimate(output: &PeerList) -> usize {
        output.size_estimate()
    }

    /// A serving process answers its listings from memory in the form the surface writes
    /// while what they list reads the same (see [`this_board_reply`] and
    /// [`repository_reply`]): they are what siblings and busy agents ask for most, and a
    /// crowded board's is large.
    async fn reply(
        ctx: &Context,
        input: PeerListInput,
        form: Form,
    ) -> Result<Reply<PeerList>, CapabilityError> {
        let Some(port) = ctx.port() else {
            return Self::run(ctx, input).await.map(Reply::Typed);
        };
        let kept = port
            .listing_slot()
            .get_or_init(KeptListings::<RepositoryKey>::default)
            .ok_or_else(|| CapabilityError::internal("the listing slot keeps something else"))?;
        match input.checkouts.into() {
            Checkouts::This => this_board_reply(ctx, port, &kept.this, form).await,
            Checkouts::Repository => {
                repository_reply(ctx, port, Checkouts::Repository, &kept.repository, form).await
            }
            Checkouts::Everywhere => {
                repository_reply(ctx, port, Checkouts::Everywhere, &kept.everywhere, form).await
            }
        }
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        PeerListInput::bench_cases()
    }
}

/// The listing of `checkouts`; with [`Detail::PeersOnly`] or [`Detail::PeersMeeting`], its
/// peers and boards alone.
pub(crate) async fn listing(
    ctx: &Context,
    checkouts: Checkouts,
    detail: Detail<'_>,
) -> Result<PeerList, CapabilityError> {
    let read = read_listing(ctx, checkouts, detail).await?;
    Ok(read.assemble(ctx, SystemTime::now()).await?.0)
}

/// A listing as read from its boards, before their peers are copied into it: what a kept
/// listing is compared with ([`RepositoryKey`]), so that a listing whose boards did not
/// change is answered without copying a peer.
pub(super) struct ReadListing<'a> {
    checkouts: Checkouts,
    detail: Detail<'a>,
    /// This checkout's board first, then the siblings in git's order.
    boards: Vec<ReadBoard<'a>>,
    conflicts: Option<ConflictSummary>,
    /// The repository's leases held and messages queued, for a whole listing of more than
    /// this checkout.
    leases: Vec<ListedLease>,
    messages_queued: usize,
}

/// Reads the listing of `checkouts` (see [`listing`]).
async fn read_listing<'a>(
    ctx: &'a Context,
    checkouts: Checkouts,
    detail: Detail<'a>,
) -> Result<ReadListing<'a>, CapabilityError> {
    // The repository's listing with the boards other machines publish, joined by this
    // checkout's board when it is assembled (see [`Board::everywhere`]).
    let gathered = match checkouts {
        Checkouts::Everywhere => Checkouts::Repository,
        other => other,
    };
    let (boards, conflicts) = gather(ctx, gathered, detail).await?;
    let (leases, messages_queued) = if checkouts != Checkouts::This && detail == Detail::Whole {
        (listed_leases(ctx).await, crate::mailbox::queued(ctx).await)
    } else {
        (Vec::new(), 0)
    };
    Ok(ReadListing {
        checkouts,
        detail,
        boards,
        conflicts,
        leases,
        messages_queued,
    })
}

impl ReadListing<'_> {
    /// The listing answered to the call's caller, its boards' peers copied at `now` and,
    /// for a whole listing, its overlaps found; with the version of this process's board
    /// it copied and until when that board's ages hold, when it copied the whole board.
    async fn assemble(
        self,
        ctx: &Context,
        now: SystemTime,
    ) -> Result<(PeerList, Option<Pinned>), CapabilityError> {
        let mut pinned = None;
        let boards = self
            .boards
            .into_iter()
            .map(|board| {
                let (view, peers, this_board) = board.listed(now);
                pinned = pinned.or(this_board);
                (view, peers)
            })
            .collect();
        let mut listing = listing_of(ctx.caller().cloned(), boards, self.conflicts);
        if self.checkouts == Checkouts::Everywhere {
            listing = Board::here(ctx).await.everywhere(&ctx.site, listing).await;
        }
        listing.leases = self.leases;
        listing.messages_queued = self.messages_queued;
        if self.detail == Detail::Whole {
            // A crowded repository's peers take a while to compare: not on a worker.
            let size = listing.size_estimate();
            listing = inline_or_blocking(size, "finding the overlaps", move || {
                find_overlaps(&mut listing);
                listing
            })
            .await?;
        }
        Ok((listing, pinned))
    }
}

/// The repository's listing (`checkouts: repository` or `everywhere`) from a serving
/// process, kept between calls as this board's is ([`this_board_reply`]).
///
/// Every board is read on every call, as for a listing made anew: this board's version,
/// each followed sibling's memory, every other sibling's lease (and its server asked), the
/// repository's reading of the worktrees, its leases and its messages. While all of it reads
/// as the kept listing's did ([`RepositoryKey`]) and the ages of this board's peers still
/// hold, the kept listing is answered, with the caller and each followed board's age
/// written in: peers are copied and compared, and the listing encoded, only when something
/// changed. A listing with a board whose peers its server was asked for, or with other
/// machines' boards, is made anew every call.
async fn repository_reply(
    ctx: &Context,
    port: &dyn BoardPort,
    checkouts: Checkouts,
    kept: &Latest<RepositoryKey>,
    form: Form,
) -> Result<Reply<PeerList>, CapabilityError> {
    let read = read_listing(ctx, checkouts, Detail::Whole).await?;
    let now = SystemTime::now();
    let federated = checkouts == Checkouts::Everywhere && port.federation().is_on();
    let ages: Vec<u64> = read
        .boards
        .iter()
        .filter_map(|board| board.age)
        .map(|age| age.as_millis() as u64)
        .collect();
    let caller = ctx.caller().cloned();
    if !federated
        && let Some(listing) = kept.latest()
        && listing.holds_at(now)
        && listing.key.reads_as(&read)
    {
        return answer_kept(listing, caller, ages, form).await;
    }
    let Some(mut key) = (!federated).then(|| RepositoryKey::of(&read)).flatten() else {
        return Ok(Reply::Typed(read.assemble(ctx, now).await?.0));
    };
    let (listing, pinned) = read.assemble(ctx, now).await?;
    key.this_board = pinned.map(|pinned| pinned.version);
    let size = listing.size_estimate();
    let encoded = inline_or_blocking(size, "encoding the listing", move || {
        EncodedListing::encode(listing, size)
    })
    .await??;
    let made = Arc::new(Kept {
        key,
        made_at: now,
        same_until: pinned.and_then(|pinned| pinned.same_until),
        listing: encoded,
    });
    kept.keep(made.clone());
    answer_kept(made, caller, ages, form).await
}

/// What a kept repository listing was made of, but for the peers' records, which are named
/// by where they are kept: this board's by its version, a followed sibling's by the memory
/// its follower holds (replaced, never changed, when the sibling's board changes). A
/// listing read the same is the kept one, at the cost of comparing what was read.
pub(super) struct RepositoryKey {
    boards: Vec<(BoardEntry, KeptPeers)>,
    /// The version of this process's board the listing copied.
    this_board: Option<u64>,
    conflicts: Option<ConflictSummary>,
    leases: Vec<ListedLease>,
    messages_queued: usize,
}

/// A board's peers as a [`RepositoryKey`] names them.
enum KeptPeers {
    /// None were read: the board has no server, or it could not be asked.
    None,
    ThisBoard,
    /// Held so that the memory is not freed and its address given to another.
    Followed(Arc<Vec<(Peer, bool)>>),
}

impl RepositoryKey {
    /// The key of a listing read as `read`, this board at the version read; `None` when it
    /// cannot be kept: a board's peers were asked of its server.
    fn of(read: &ReadListing) -> Option<Self> {
        let mut this_board = None;
        let boards = read
            .boards
            .iter()
            .map(|board| {
                let peers = match &board.peers {
                    ReadPeers::Copied(peers) if peers.is_empty() => KeptPeers::None,
                    ReadPeers::Copied(_) => return None,
                    ReadPeers::ThisBoard { version, .. } => {
                        this_board = Some(*version);
                        KeptPeers::ThisBoard
                    }
                    ReadPeers::Followed(peers) => KeptPeers::Followed(peers.clone()),
                };
                Some((board.entry.clone(), peers))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(RepositoryKey {
            boards,
            this_board,
            conflicts: read.conflicts.clone(),
            leases: read.leases.clone(),
            messages_queued: read.messages_queued,
        })
    }

    /// Whether `read` reads as the listing kept under this key did.
    fn reads_as(&self, read: &ReadListing) -> bool {
        self.boards.len() == read.boards.len()
            && self
                .boards
                .iter()
                .zip(&read.boards)
                .all(|((entry, peers), board)| {
                    let same_peers = match (peers, &board.peers) {
                        (KeptPeers::None, ReadPeers::Copied(read)) => read.is_empty(),
                        (KeptPeers::ThisBoard, ReadPeers::ThisBoard { version, .. }) => {
                            self.this_board == Some(*version)
                        }
                        (KeptPeers::Followed(kept), ReadPeers::Followed(read)) => {
                            Arc::ptr_eq(kept, read)
                        }
                        _ => false,
                    };
                    same_peers && *entry == board.entry
                })
            && self.conflicts == read.conflicts
            && self.leases == read.leases
            && self.messages_queued == read.messages_queued
    }
}

/// The boards of `checkouts` on this machine, as read, and the conflicts predicted between
/// them for a whole listing of the repository.
async fn gather<'a>(
    ctx: &'a Context,
    checkouts: Checkouts,
    detail: Detail<'a>,
) -> Result<(Vec<ReadBoard<'a>>, Option<ConflictSummary>), CapabilityError> {
    let site = &ctx.site;
    let whole_repository = checkouts == Checkouts::Repository && site.checkout.common_dir.is_some();
    let (covered, noticed) = survey::covered_and_noticed(site, checkouts).await?;
    let noticed = noticed.as_ref();
    let boards = futures::future::join_all(
        covered
            .into_iter()
            .map(|checkout| read_board(ctx, checkout, !whole_repository, detail, noticed)),
    );
    let whole_repository = whole_repository && detail == Detail::Whole;
    // The worktrees nobody serves and the conflict prediction are read in the background,
    // one reading at a time: a repository of a hundred worktrees costs a `git status` per
    // worktree about once a second there, not on every call, and never runs them all at
    // once. A server waits for it at most half the probe timeout; a process that does not
    // serve (a person's `majordomus peers`) has no later call to profit from it, and waits
    // for it to finish.
    let wait = match ctx.server() {
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
    for board in &mut boards {
        if whole_repository && board.entry.changes.is_none() {
            let worktree = &board.entry.stamp.worktree;
            board.entry.changes = Some(changes_read(reading.as_deref(), worktree));
        }
    }
    let conflicts = whole_repository.then(|| conflicts_read(reading.as_deref()));
    Ok((boards, conflicts))
}

/// One board as a listing read it, before its peers are copied into the listing.
pub(super) struct ReadBoard<'a> {
    pub entry: BoardEntry,
    /// How long ago the board's server last confirmed it, for a board read from memory.
    pub age: Option<Duration>,
    pub peers: ReadPeers<'a>,
}

/// What a listing says of a board besides its peers and their age.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct BoardEntry {
    pub stamp: PeerCheckout,
    pub standing: ServerStanding,
    pub url: Option<String>,
    /// Why the board could not be read; absent when it was, or had nobody to read.
    pub reason: Option<String>,
    pub changes: Option<WorktreeChanges>,
}

/// A board's peers as read: copied only when a listing is made of them.
pub(super) enum ReadPeers<'a> {
    /// Copied already: asked of the board's server, or only some of this process's board.
    Copied(Vec<ListedPeer>),
    /// This process's whole board, which stood at `version` when it was read.
    ThisBoard {
        port: &'a dyn BoardPort,
        version: u64,
    },
    /// A followed sibling's board, as the follower keeps it.
    Followed(Arc<Vec<(Peer, bool)>>),
}

/// The version of this process's board a listing copied, and the first instant one of its
/// ages would read differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pinned {
    pub version: u64,
    pub same_until: Option<SystemTime>,
}

impl ReadBoard<'_> {
    /// The board's entry in a listing and its peers, copied at `now`; and, for this
    /// process's whole board, which version of it was copied.
    pub(super) fn listed(self, now: SystemTime) -> (BoardView, Vec<ListedPeer>, Option<Pinned>) {
        let (peers, pinned) = match self.peers {
            ReadPeers::Copied(peers) => (peers, None),
            ReadPeers::ThisBoard { port, .. } => {
                let snapshot = port.board_snapshot(now);
                let pinned = Pinned {
                    version: snapshot.version,
                    same_until: snapshot.same_until,
                };
                let peers = ListedPeer::on_this_board(snapshot.peers, &port.bridged_peers());
                (peers, Some(pinned))
            }
            ReadPeers::Followed(peers) => (
                peers
                    .iter()
                    .map(|(peer, bridged)| ListedPeer {
                        peer: peer.clone(),
                        bridged: *bridged,
                        qualified_id: String::new(),
                    })
                    .collect(),
                None,
            ),
        };
        let BoardEntry {
            stamp,
            standing,
            url,
            reason,
            changes,
        } = self.entry;
        let (mut view, peers) = listed_board(stamp, standing, url, reason, changes, peers);
        view.age_ms = self.age.map(|age| age.as_millis() as u64);
        (view, peers, pinned)
    }
}

/// Reads one checkout's board ([`Board`]), and what the worktree changed: from the answer
/// of its server, read here for this process's own board, or, when `read_here`, for a board
/// without a server. Otherwise `changes` is left for the repository reading to fill. The
/// call began when the worktree registry's notice stood at `noticed`.
pub(super) async fn read_board<'a>(
    ctx: &'a Context,
    checkout: Checkout,
    read_here: bool,
    detail: Detail<'_>,
    noticed: Option<&Noticed>,
) -> ReadBoard<'a> {
    let this_checkout = checkout.id == ctx.site.checkout.id;
    let stamp = stamp(&checkout, this_checkout);
    let board = Board::listed(ctx, checkout, noticed).await;
    let read_here = (read_here || board.is_local()) && detail == Detail::Whole;
    let BoardPeers {
        peers,
        changes: reported_changes,
        reason,
    } = board.peers(&ctx.site, detail).await;
    let changes = match reported_changes {
        Some(changes) => Some(capped(changes)),
        None if read_here => read_changes(&ctx.site, board.checkout()).await,
        None => None,
    };
    ReadBoard {
        entry: BoardEntry {
            stamp,
            standing: board.standing(),
            url: board.url(),
            reason,
            changes,
        },
        age: board.age(),
        peers,
    }
}

/// What a board gave of itself for a listing.
pub(super) struct BoardPeers<'a> {
    pub peers: ReadPeers<'a>,
    /// The worktree's changes, as the board's own server read them.
    pub changes: Option<WorktreeChanges>,
    /// Why the board could not be read; absent when it was, or had nobody to read.
    pub reason: Option<String>,
}

impl<'a> Board<'a> {
    /// The board's peers, each marked when a bridge carries its client, and the worktree's
    /// changes as a remote server reported them (from memory, with their age, for a followed
    /// one). A remote board that does not answer has no peers; it is unread only when its
    /// standing says it should have answered. For [`Detail::PeersMeeting`], this process's
    /// own board lists only the peers whose claims meet the paths.
    pub(super) async fn peers(&self, site: &Site, detail: Detail<'_>) -> BoardPeers<'a> {
        match self {
            Board::Local { port, .. } => {
                let now = SystemTime::now();
                let peers = match detail {
                    Detail::PeersMeeting(paths) => ReadPeers::Copied(ListedPeer::on_this_board(
                        port.board_peers_meeting(paths, now),
                        &port.bridged_peers(),
                    )),
                    Detail::Whole | Detail::PeersOnly => ReadPeers::ThisBoard {
                        port: *port,
                        version: port.board_version(now),
                    },
                };
                BoardPeers {
                    peers,
                    changes: None,
                    reason: None,
                }
            }
            Board::Viewed { view, .. } => BoardPeers {
                peers: ReadPeers::Followed(view.peers.clone()),
                changes: view.changes.as_ref().map(|changes| WorktreeChanges {
                    read_seconds_ago: Some(view.read.as_secs()),
                    ..(**changes).clone()
                }),
                reason: None,
            },
            Board::Remote(found) => {
                let this = PeerListInput {
                    checkouts: wire::Checkouts::This,
                };
                match ask::<PeersList>(found, site, &this, site.probe_timeout()).await {
                    Ok(answer) => BoardPeers {
                        changes: answer
                            .boards
                            .into_iter()
                            .next()
                            .and_then(|b| b.changes)
                            .map(Into::into),
                        peers: ReadPeers::Copied(answer.peers),
                        reason: None,
                    },
                    Err(Unasked::Failed(error)) => BoardPeers {
                        peers: ReadPeers::Copied(Vec::new()),
                        changes: None,
                        reason: Some(error.to_string()),
                    },
                    Err(Unasked::NoServer(_)) => BoardPeers {
                        peers: ReadPeers::Copied(Vec::new()),
                        changes: None,
                        reason: (!found.standing.readable).then(|| {
                            found.standing.reason.clone().unwrap_or_else(|| {
                                format!("its server is {}", found.standing.standing.as_str())
                            })
                        }),
                    },
                }
            }
        }
    }

    /// `listing`, this machine's boards, joined with the boards other machines publish to
    /// the federation. Only a serving process follows the federation: a remote board's
    /// server is asked for its own such listing (it gathers the siblings itself, so it gets
    /// the time of a gather and a little more), and without one the listing is answered
    /// with the reason.
    pub(crate) async fn everywhere(&self, site: &Site, listing: PeerList) -> PeerList {
        match self {
            Board::Local { port, .. } => {
                let federation = port.federation();
                if !federation.is_on() {
                    return merge_everywhere(listing, None, &[], FederationStatus::off());
                }
                merge_everywhere(
                    listing,
                    federation.machine(),
                    &federation.remote_boards(),
                    federation.status(),
                )
            }
            Board::Remote(found) | Board::Viewed { found, .. } => {
                let config = &site.config.federation;
                if config.url.is_some() {
                    let everywhere = PeerListInput {
                        checkouts: wire::Checkouts::Everywhere,
                    };
                    let patience = site.probe_timeout() * 2 + Duration::from_secs(1);
                    if let Ok(answer) = ask::<PeersList>(found, site, &everywhere, patience).await {
                        return answer;
                    }
                }
                let status = Federation::status_without_server(config);
                merge_everywhere(listing, None, &[], status)
            }
        }
    }
}
