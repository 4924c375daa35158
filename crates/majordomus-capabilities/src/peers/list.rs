//! `peers.list`: the listing of one checkout, the repository or every machine; and a
//! board's peers read wherever the board is ([`Board::peers`], [`read_board`]), which asks a
//! remote board's `peers.list`, so the operation and its reading of boards live together.

use std::time::{Duration, SystemTime};

use majordomus_checkout::git::Checkout;
use majordomus_domain::changes::WorktreeChanges;
use majordomus_domain::checkouts::Checkouts;

use crate::board::{Board, Unasked, ask};
use crate::leases::listed_leases;
use crate::wire;
use majordomus_core::api::CapabilityError;
use majordomus_core::context::{Context, Site};
use majordomus_core::registry::{
    Declaration, ENCODE_INLINE_BYTES, Exposure, Form, HttpMethod, Kind, Moment, Needs, Operation,
    Reply, Stability,
};
use majordomus_core::survey;
use majordomus_federation::{Federation, FederationStatus};

use super::answer::{BoardView, ListedPeer, PeerList, PeerListInput, find_overlaps, listing_of};
use super::boards::{Detail, listed_board, stamp};
use super::cache::this_board_reply;
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

    /// This board's own listing, from the board this process serves, is answered from
    /// memory in the form the surface writes (see [`this_board_reply`]): it is what siblings
    /// and busy agents ask for most, and a crowded board's is large.
    async fn reply(
        ctx: &Context,
        input: PeerListInput,
        form: Form,
    ) -> Result<Reply<PeerList>, CapabilityError> {
        match (input.checkouts, ctx.port()) {
            (wire::Checkouts::This, Some(port)) => this_board_reply(ctx, port, form).await,
            _ => Self::run(ctx, input).await.map(Reply::Typed),
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
        listing.leases = listed_leases(ctx).await;
        listing.messages_queued = crate::mailbox::queued(ctx).await;
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
    detail: Detail<'_>,
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
    for (view, _) in &mut boards {
        if whole_repository && view.changes.is_none() {
            view.changes = Some(changes_read(reading.as_deref(), view).into());
        }
    }
    let conflicts = whole_repository.then(|| conflicts_read(reading.as_deref()));
    Ok(listing_of(ctx.caller().cloned(), boards, conflicts))
}

/// Reads one checkout's board ([`Board`]), and what the worktree changed: from the answer
/// of its server, read here for this process's own board, or, when `read_here`, for a board
/// without a server. Otherwise `changes` is left for the repository reading to fill.
pub(super) async fn read_board(
    ctx: &Context,
    checkout: Checkout,
    read_here: bool,
    detail: Detail<'_>,
) -> (BoardView, Vec<ListedPeer>) {
    let this_checkout = checkout.id == ctx.site.checkout.id;
    let stamp = stamp(&checkout, this_checkout);
    let board = Board::listed(ctx, checkout).await;
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
    let (mut view, peers) =
        listed_board(stamp, board.standing(), board.url(), reason, changes, peers);
    view.age_ms = board.age().map(|age| age.as_millis() as u64);
    (view, peers)
}

/// What a board gave of itself for a listing.
pub(crate) struct BoardPeers {
    pub peers: Vec<ListedPeer>,
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
    pub(crate) async fn peers(&self, site: &Site, detail: Detail<'_>) -> BoardPeers {
        match self {
            Board::Local { port, .. } => {
                let bridged = port.bridged_peers();
                let now = SystemTime::now();
                let peers = match detail {
                    Detail::PeersMeeting(paths) => port.board_peers_meeting(paths, now),
                    Detail::Whole | Detail::PeersOnly => port.board_peers(now),
                };
                let peers = ListedPeer::on_this_board(peers, &bridged);
                BoardPeers {
                    peers,
                    changes: None,
                    reason: None,
                }
            }
            Board::Viewed { view, .. } => BoardPeers {
                peers: view
                    .peers
                    .iter()
                    .map(|(peer, bridged)| ListedPeer {
                        peer: peer.clone(),
                        bridged: *bridged,
                        qualified_id: String::new(),
                    })
                    .collect(),
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
                        peers: answer.peers,
                        reason: None,
                    },
                    Err(Unasked::Failed(error)) => BoardPeers {
                        peers: Vec::new(),
                        changes: None,
                        reason: Some(error.to_string()),
                    },
                    Err(Unasked::NoServer(_)) => BoardPeers {
                        peers: Vec::new(),
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
