//! `conflicts.predict`: which worktrees would conflict, and on which files, if they were
//! merged now — uncommitted work included. Its answer is written in the types of [`wire`].

use std::path::PathBuf;
use std::sync::Arc;

use majordomus_checkout::conflicts::{MAX_HASHED_UNTRACKED_BYTES, Snapshot};
use majordomus_checkout::git::Checkout;
use majordomus_domain::checkouts::Checkouts;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use majordomus_domain::conflicts::ConflictHunk;
use majordomus_domain::text::for_terminal;

use majordomus_core::api::CapabilityError;
use majordomus_core::context::{Context, INLINE_READ_WORKTREES, Site};
use majordomus_core::registry::{
    Declaration, Exposure, HttpMethod, Kind, Moment, Needs, Operation, Stability,
};
use majordomus_core::survey;

pub mod wire;

use wire::{ConflictSide, PredictedConflict};

/// What to ask of `conflicts.predict`. It always covers every worktree of the repository:
/// a conflict is between two of them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConflictsInput {}

/// One worktree, as the prediction read it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct PredictedWorktree {
    /// Where the worktree is.
    pub worktree: String,
    /// The branch checked out there, when it could be read.
    pub branch: Option<String>,
    /// The checkout's identity digest.
    pub checkout_id: String,
    /// How many paths it has changed: committed on its branch since the merge base with the
    /// default branch, staged, unstaged or untracked.
    pub changed: usize,
    /// Whether some of those changes are not committed.
    pub uncommitted: bool,
    /// The commit that stands for it in the merges (HEAD, or a snapshot commit holding its
    /// uncommitted work); absent when it has no changes or could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// Untracked files over 1 MiB, not hashed into its snapshot and so left out of the
    /// prediction (a conflict on them is not predicted): at most 16 named, repository-relative.
    /// Absent in the ordinary case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_hashed: Vec<String>,
    /// How many more untracked files were left out beyond those named.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_not_hashed: usize,
    /// Why it could not be read; absent when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The answer of `conflicts.predict`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ConflictPrediction {
    /// The version of the git that merged.
    pub git_version: Option<String>,
    /// Why the prediction is missing or partial (git too old or not found, or more pairs of
    /// worktrees with changes than one answer merges), in words; absent when every pair was
    /// merged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every worktree of the repository, this one first.
    pub worktrees: Vec<PredictedWorktree>,
    /// How many pairs of worktrees with changes were merged.
    pub pairs: usize,
    /// The pairs that would conflict. Empty is the ordinary case.
    pub conflicts: Vec<PredictedConflict>,
    /// Whether every worktree was read and every pair merged.
    pub complete: bool,
}

// The answers' descriptions name the bound in words.
const _: () = assert!(MAX_HASHED_UNTRACKED_BYTES == 1024 * 1024);

/// The most pairs of worktrees one prediction merges. Pairs grow with the square of the
/// worktrees with changes; this many (23 worktrees' worth) bounds a call's git work, and the
/// answer says when pairs were left unmerged.
pub const MAX_MERGED_PAIRS: usize = 256;

/// `conflicts.predict`.
pub struct ConflictsPredict;

impl Operation for ConflictsPredict {
    type Input = ConflictsInput;
    type Output = ConflictPrediction;
    const DECLARATION: Declaration = Declaration {
        id: "conflicts.predict",
        kind: Kind::Query,
        title: "Merge conflicts predicted between worktrees",
        description: "For every pair of worktrees with changes, whether merging them now would \
            conflict, and on which files, each worktree's work taken as it is (committed, \
            staged, unstaged, untracked; untracked files over 1 MiB are left out and named in \
            `not_hashed`). No worktree is touched. Needs git 2.38 or later.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_conflicts"),
            http: Some((HttpMethod::Get, "/api/v1/conflicts")),
            cli: Some(&["conflicts"]),
        },
        tags: &["conflicts", "coordination"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        needs: Needs::Anyone,
        moments: &[Moment {
            headline: "two worktrees edited the same lines and learned it at merge time",
            detail: "One had committed, the other had not; both believed they were alone. The \
                prediction merges their work as it stands, uncommitted edits included, and \
                names the file before either merges.",
        }],
    };

    fn render(output: &ConflictPrediction) -> String {
        let mut text = match &output.reason {
            Some(reason) if output.pairs == 0 => {
                format!("no prediction: {}", for_terminal(reason))
            }
            _ => format!(
                "{} worktree(s), {} pair(s) with changes merged, {} would conflict",
                output.worktrees.len(),
                output.pairs,
                output.conflicts.len()
            ),
        };
        if let Some(reason) = output.reason.as_ref().filter(|_| output.pairs > 0) {
            text.push_str(&format!("\n  partial: {}", for_terminal(reason)));
        }
        for conflict in &output.conflicts {
            text.push_str(&format!("\n  conflict: {}", rendered(conflict)));
        }
        for worktree in output.worktrees.iter().filter(|w| !w.not_hashed.is_empty()) {
            text.push_str(&format!(
                "\n  not hashed (untracked, over 1 MiB; left out): {}: {}{}",
                for_terminal(&worktree.worktree),
                for_terminal(&worktree.not_hashed.join(", ")),
                match worktree.more_not_hashed {
                    0 => String::new(),
                    more => format!(" and {more} more"),
                }
            ));
        }
        for worktree in output.worktrees.iter().filter(|w| w.reason.is_some()) {
            text.push_str(&format!(
                "\n  not read: {}: {}",
                for_terminal(&worktree.worktree),
                for_terminal(worktree.reason.as_deref().unwrap_or_default())
            ));
        }
        text
    }

    async fn run(
        ctx: &Context,
        _input: ConflictsInput,
    ) -> Result<ConflictPrediction, CapabilityError> {
        Ok(predict_repository(&ctx.site).await?.answer)
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![("repository", ConflictsInput {})]
    }
}

/// A prediction, and beside it the first conflicting hunks of each conflict it lists, in
/// the same order: the pre-edit guard quotes them, no answer carries them.
pub(crate) struct Predicted {
    pub(crate) answer: ConflictPrediction,
    pub(crate) hunks: Vec<Vec<ConflictHunk>>,
}

/// The prediction for every worktree of the repository: what `conflicts.predict` answers,
/// and what the background reading of the repository summarises for `peers.list`.
///
/// When nothing moved since the last prediction (every worktree's changes still fresh, every
/// snapshot and merge kept) and the repository has at most [`INLINE_READ_WORKTREES`]
/// worktrees, it is made here from what is kept: handing it to a blocking thread would cost
/// more than the prediction, the thread's wake-up most of all. Otherwise it is made on a
/// blocking thread, running git where it must.
pub(crate) async fn predict_repository(site: &Arc<Site>) -> Result<Predicted, CapabilityError> {
    let checkouts = survey::covered_checkouts(site, Checkouts::Repository).await?;
    if checkouts.len() <= INLINE_READ_WORKTREES
        && let Some(predicted) = predict(site, &checkouts, Git::KeptOnly)
    {
        return Ok(predicted);
    }
    let site = site.clone();
    tokio::task::spawn_blocking(move || predict(&site, &checkouts, Git::Run))
        .await
        .map_err(|error| CapabilityError::internal(format!("the prediction failed: {error}")))?
        .ok_or_else(|| CapabilityError::internal("the prediction was not made"))
}

/// Whether a prediction may run git, or is made only of what the caches keep.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Git {
    /// On a blocking thread: each reading is made as needed.
    Run,
    /// On the caller's thread: a reading that needs git makes the prediction `None`.
    KeptOnly,
}

/// Reads every worktree's changes, snapshots those with changes and merges every pair of
/// them, running git where `git` allows; `None` when it does not and git was needed. The
/// same readings give the same prediction either way.
fn predict(site: &Arc<Site>, checkouts: &[Checkout], git: Git) -> Option<Predicted> {
    let here = &site.checkout.root;
    let mut hunks = Vec::new();
    let mut answer = ConflictPrediction {
        git_version: None,
        reason: None,
        worktrees: Vec::new(),
        pairs: 0,
        conflicts: Vec::new(),
        complete: true,
    };
    let version = match git {
        Git::Run => site.git_version(),
        Git::KeptOnly => site.known_git_version()?,
    };
    match version {
        Ok(version) if version.can_merge_tree() => answer.git_version = Some(version.to_string()),
        Ok(version) => {
            answer.git_version = Some(version.to_string());
            answer.reason = Some(format!(
                "predicting conflicts needs git 2.38 or later (`git merge-tree --write-tree`); \
                 this git is {version}"
            ));
            answer.complete = false;
        }
        Err(error) => {
            answer.reason = Some(format!("git could not be asked its version: {error}"));
            answer.complete = false;
        }
    }
    let default_branch = site.config.changes.default_branch.as_deref();
    let mut snapshots: Vec<(usize, Snapshot)> = Vec::new();
    for checkout in checkouts {
        let mut view = PredictedWorktree {
            worktree: checkout.root.display().to_string(),
            branch: checkout.branch.clone(),
            checkout_id: checkout.id.clone(),
            changed: 0,
            uncommitted: false,
            snapshot: None,
            not_hashed: Vec::new(),
            more_not_hashed: 0,
            reason: None,
        };
        let changes = match git {
            Git::Run => site.changes.changes(&checkout.root, default_branch),
            Git::KeptOnly => site.changes.kept(&checkout.root)?,
        };
        match changes {
            Ok(changes) => {
                view.changed = changes.paths.len() + changes.omitted;
                view.uncommitted = changes.has_uncommitted();
                if answer.reason.is_none() && !changes.is_empty() {
                    let snapshot = match git {
                        Git::Run => site.conflicts.snapshot(&checkout.root, &changes),
                        Git::KeptOnly => site.conflicts.kept_snapshot(&checkout.root, &changes)?,
                    };
                    match snapshot {
                        Ok(snapshot) => {
                            view.snapshot = Some(snapshot.commit.clone());
                            view.not_hashed = snapshot.not_hashed.clone();
                            view.more_not_hashed = snapshot.more_not_hashed;
                            snapshots.push((answer.worktrees.len(), snapshot));
                        }
                        Err(error) => view.reason = Some(error.to_string()),
                    }
                }
            }
            Err(error) => view.reason = Some(error),
        }
        answer.complete &= view.reason.is_none();
        answer.worktrees.push(view);
    }
    if git == Git::Run {
        // Forgetting a removed worktree's snapshot removes its objects: not on the caller's
        // thread. A prediction made of what is kept leaves it to the next one that runs git,
        // at most a changes interval later.
        let roots: Vec<PathBuf> = checkouts.iter().map(|c| c.root.clone()).collect();
        site.conflicts.retain(&roots);
        site.changes.retain(&roots);
    }
    let all_pairs = snapshots.len() * snapshots.len().saturating_sub(1) / 2;
    if all_pairs > MAX_MERGED_PAIRS {
        answer.complete = false;
        answer.reason = Some(format!(
            "{} worktrees have changes, {all_pairs} pairs; only the first {MAX_MERGED_PAIRS} \
             pairs were merged",
            snapshots.len()
        ));
    }
    let pairs = snapshots
        .iter()
        .enumerate()
        .flat_map(|(at, ours)| snapshots[at + 1..].iter().map(move |theirs| (ours, theirs)))
        .take(MAX_MERGED_PAIRS);
    for ((ours, our_snapshot), (theirs, their_snapshot)) in pairs {
        answer.pairs += 1;
        let found = match git {
            Git::Run => site.conflicts.conflicts(here, our_snapshot, their_snapshot),
            Git::KeptOnly => Ok(site
                .conflicts
                .kept_conflicts(our_snapshot, their_snapshot)?),
        };
        match found {
            Ok(found) if found.paths.is_empty() => {}
            Ok(found) => {
                answer.conflicts.push(PredictedConflict {
                    ours: side(&answer.worktrees[*ours]),
                    theirs: side(&answer.worktrees[*theirs]),
                    paths: found.paths,
                    more_paths: found.omitted,
                });
                hunks.push(
                    found
                        .hunks
                        .into_iter()
                        .map(|hunk| ConflictHunk {
                            path: hunk.path,
                            ours: hunk.ours,
                            theirs: hunk.theirs,
                        })
                        .collect(),
                );
            }
            Err(error) => {
                answer.complete = false;
                let reason = format!(
                    "merging it with {} failed: {error}",
                    answer.worktrees[*theirs].worktree
                );
                answer.worktrees[*ours].reason.get_or_insert(reason);
            }
        }
    }
    Some(Predicted { answer, hunks })
}

/// A predicted merge conflict, for people: both worktrees and the files, `and N more` for
/// the files the answer only counts.
pub(crate) fn rendered(conflict: &PredictedConflict) -> String {
    let side = |side: &ConflictSide| match &side.branch {
        Some(branch) => format!(
            "{} (branch {})",
            for_terminal(&side.worktree),
            for_terminal(branch)
        ),
        None => for_terminal(&side.worktree).into_owned(),
    };
    let mut paths: Vec<String> = conflict
        .paths
        .iter()
        .map(|path| for_terminal(path).into_owned())
        .collect();
    if conflict.more_paths > 0 {
        paths.push(format!("and {} more", conflict.more_paths));
    }
    format!(
        "{} and {} on {}",
        side(&conflict.ours),
        side(&conflict.theirs),
        paths.join(", ")
    )
}

fn side(worktree: &PredictedWorktree) -> ConflictSide {
    ConflictSide {
        worktree: worktree.worktree.clone(),
        branch: worktree.branch.clone(),
        checkout_id: worktree.checkout_id.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{SERVED_WORKTREE, World};

    /// A prediction's answer, as it is written.
    fn written(predicted: &Predicted) -> String {
        serde_json::to_string(&predicted.answer).unwrap()
    }

    #[tokio::test]
    async fn a_prediction_of_what_is_kept_is_the_one_git_makes_and_is_not_made_without_it() {
        let world = World::empty();
        world.add_worktree("beta");
        world.write(SERVED_WORKTREE, "README", "alpha's line\n");
        world.write("beta", "README", "beta's line\n");
        let site = &world.site;
        let checkouts = survey::covered_checkouts(site, Checkouts::Repository)
            .await
            .unwrap();
        assert!(
            predict(site, &checkouts, Git::KeptOnly).is_none(),
            "nothing read yet: git has to run"
        );

        let made = predict(site, &checkouts, Git::Run).unwrap();
        assert_eq!((made.answer.pairs, made.answer.conflicts.len()), (1, 1));
        let kept = predict(site, &checkouts, Git::KeptOnly).unwrap();
        assert_eq!(written(&kept), written(&made));
        assert_eq!(kept.hunks[0][0].ours, made.hunks[0][0].ours);
        assert_eq!(
            written(&predict_repository(site).await.unwrap()),
            written(&made)
        );

        world.write("beta", "README", "beta's line, written again\n");
        assert!(
            predict(site, &checkouts, Git::KeptOnly).is_none(),
            "beta's changes are fresh, but its snapshot no longer holds"
        );
    }
}
