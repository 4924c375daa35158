//! `peers.announce`: a claim recorded on this board, answered with every claim and change in
//! the repository that meets it.

use std::sync::Arc;
use std::time::SystemTime;

use majordomus_checkout::resolve::{ResolveError, resolve_scope};
use majordomus_domain::board::{CheckedAnnouncement, Recorded};
use majordomus_domain::changes::changes_meeting;
use majordomus_domain::limits;
use majordomus_domain::listing::claims_meeting;
use majordomus_domain::paths::ClaimPath;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::federated::remote_overlaps;
use majordomus_core::api::CapabilityError;
use majordomus_core::context::{Context, Site};
use majordomus_core::registry::{
    Declaration, Exposure, Kind, Moment, Needs, Operation, Stability, unreached,
};

use super::answer::is_zero;
use super::siblings::read_siblings;
use super::wire::{self, AnnounceInput};
use super::wire_changes;

/// `peers.announce`.
pub struct PeersAnnounce;

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
    pub announced: wire::Announced,
    /// How many more claims of other peers meet yours than `overlaps` lists; absent when it
    /// lists them all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_overlaps: usize,
    /// Other worktrees' changes, as git knows them (committed on their branch, staged,
    /// unstaged, untracked), that meet the claim just made: work already done there,
    /// announced or not. Your own worktree's changes are your own work and never listed.
    /// Empty is the ordinary case.
    pub change_overlaps: Vec<wire_changes::ChangeOverlap>,
    /// The other worktrees whose boards could not be read within the probe timeout, and
    /// why: their claims are missing from `overlaps`. Empty is the ordinary case.
    pub boards_unread: Vec<UnreadBoard>,
    /// Whether every worktree's board was read, so that `overlaps` covers the repository.
    pub complete: bool,
}

impl Operation for PeersAnnounce {
    type Input = AnnounceInput;
    type Output = AnnounceAnswer;
    const DECLARATION: Declaration = Declaration {
        id: "peers.announce",
        kind: Kind::Command,
        title: "Announce what you are working on",
        description: "Say in one line what this session is doing and which repository paths it \
            expects to touch. The answer names every other peer, in any worktree, whose claim \
            meets yours (`overlaps`), other worktrees' changes that meet it (`change_overlaps`) \
            and the worktrees that could not be asked (`boards_unread`). `.` is the whole \
            repository; a glob counts as its directory prefix; a link meets its target.",
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
        needs: Needs::Session,
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
        let announcement = CheckedAnnouncement::check(input.into())
            .map_err(|error| CapabilityError::invalid_input(error.to_string()))?;
        let (server, caller) = ctx.session().ok_or_else(|| unreached(&Self::DECLARATION))?;
        let paths = resolve(&ctx.site, &announcement.input().scope).await?;
        let Recorded {
            mut announced,
            paths: mine,
        } = server.announce_resolved(caller, announcement, paths, SystemTime::now())?;
        // The siblings' claims and changes are met on the paths the board holds for the claim
        // just made, without repeats.
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
                changes.push((view.stamp(), worktree_changes.into()));
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
            announced: announced.into(),
            more_overlaps,
            change_overlaps: changes_meeting(&mine, &changes)
                .into_iter()
                .map(wire_changes::ChangeOverlap::from)
                .collect(),
            complete: boards_unread.is_empty(),
            boards_unread,
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
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

/// Up to how many path components a scope may name in all to be resolved on the calling
/// thread. Resolving looks at each component at most once (an `lstat`, about a microsecond;
/// a link on the way costs a few more), so a scope of this size costs less than the hop to
/// a blocking thread and back, which on a loaded machine waits for that thread to be run.
const INLINE_SCOPE_COMPONENTS: usize = 32;

/// Where each scope path leads on disk; a path leading out of the checkout is bad input.
async fn resolve(site: &Arc<Site>, scope: &[String]) -> Result<Vec<ClaimPath>, CapabilityError> {
    resolve_on_disk(site, scope, |error| {
        CapabilityError::invalid_input(error.to_string())
    })
    .await
}

/// Where each of `paths` leads on disk, as a claim's scope is resolved; a path that cannot
/// be resolved is answered with `refusal` of why. A few paths in a small repository are
/// resolved on the calling thread (see [`Site::reads_inline`]), anything more on a blocking
/// thread.
pub(crate) async fn resolve_on_disk(
    site: &Arc<Site>,
    scope: &[String],
    refusal: impl FnOnce(ResolveError) -> CapabilityError,
) -> Result<Vec<ClaimPath>, CapabilityError> {
    let components: usize = scope
        .iter()
        .map(|raw| raw.split('/').filter(|c| !c.is_empty()).count())
        .sum();
    let resolved = if components <= INLINE_SCOPE_COMPONENTS && site.reads_inline() {
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
    resolved.map_err(refusal)
}
