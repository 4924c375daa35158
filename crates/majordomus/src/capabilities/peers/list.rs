//! `peers.list`: the listing of one checkout, the repository or every machine.

use std::time::Duration;

use majordomus_domain::checkouts::Checkouts;

use crate::api::CapabilityError;
use crate::capabilities::board::Board;
use crate::context::Context;
use crate::registry::{
    Declaration, ENCODE_INLINE_BYTES, Exposure, HttpMethod, Kind, Moment, Operation, Reply,
    Stability,
};
use crate::survey;

use super::answer::{PeerList, PeerListInput, find_overlaps, listing_of};
use super::boards::{Detail, read_board};
use super::cache::this_board_encoded;
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
        render::peer_list(output)
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
