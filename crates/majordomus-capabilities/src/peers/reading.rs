//! The background reading of the whole repository: every worktree's changes and the
//! conflicts predicted between them, one reading at a time, waited for by the listings.

use std::sync::Arc;
use std::time::{Duration, Instant};

use majordomus_domain::changes::WorktreeChanges;
use majordomus_domain::checkouts::Checkouts;
use majordomus_domain::conflicts::{ConflictSummary, NotHashed};
use majordomus_domain::limits;

use crate::conflicts::{ConflictPrediction, Predicted, predict_repository};
use majordomus_core::context::{Context, RepositoryReading, Site};
use majordomus_core::survey;

use super::changes::board_changes;

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
            conflict.into()
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

/// The changes of the worktree at `worktree` from the repository reading, with their age; or
/// why there are none yet.
pub(super) fn changes_read(reading: Option<&RepositoryReading>, worktree: &str) -> WorktreeChanges {
    let found = reading.and_then(|reading| {
        let mut changes = reading.changes.get(worktree)?.clone();
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
pub(super) fn conflicts_read(reading: Option<&RepositoryReading>) -> ConflictSummary {
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
pub(super) async fn latest_reading(
    site: &Arc<Site>,
    wait: Duration,
) -> Option<Arc<RepositoryReading>> {
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
    let (conflicts, conflict_hunks) = match predict_repository(&site).await {
        Ok(Predicted { answer, mut hunks }) => {
            // The summary lists the first conflicts, and the hunks are of those.
            hunks.truncate(limits::OVERLAPS_LISTED);
            (summary_of(answer), hunks)
        }
        Err(error) => {
            let summary = ConflictSummary {
                pairs: 0,
                conflicts: Vec::new(),
                more_conflicts: 0,
                reason: Some(error.message),
                not_hashed: Vec::new(),
                predicted_seconds_ago: 0,
            };
            (summary, Vec::new())
        }
    };
    RepositoryReading {
        started,
        took: started.elapsed(),
        changes,
        conflicts,
        conflict_hunks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conflicts::PredictedWorktree;
    use crate::conflicts::wire::{ConflictSide, PredictedConflict};

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
}
