//! The predicted merge conflicts as `conflicts.predict` and `peers.list` write them: types of
//! the answers' own. A prediction is made in these words and turned into the repository
//! reading's summary ([`majordomus_domain::conflicts`]), which a listing writes back in them,
//! so the answers change only when this file does, never because a type of the domain did.
//! Their doc comments are the descriptions the schemas carry; the wire contract test pins
//! what they write.

use majordomus_domain::conflicts as domain;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One side of a predicted conflict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConflictSide {
    pub worktree: String,
    pub branch: Option<String>,
    pub checkout_id: String,
}

/// Two worktrees whose work would conflict if merged now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PredictedConflict {
    /// The worktree listed earlier.
    pub ours: ConflictSide,
    /// The worktree listed later.
    pub theirs: ConflictSide,
    /// The files that would conflict, in git's order.
    pub paths: Vec<String>,
    /// Conflicting files beyond those listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_paths: usize,
}

/// Untracked files of one worktree that a prediction left out, being too large to hash: a
/// conflict on them is not predicted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NotHashed {
    /// The worktree they are in.
    pub worktree: String,
    /// The files, repository-relative.
    pub paths: Vec<String>,
    /// Files left out beyond those named.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_paths: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The merge conflicts `conflicts.predict` finds, in short.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConflictSummary {
    /// How many pairs of worktrees with changes were merged.
    pub pairs: usize,
    /// The pairs of worktrees that would conflict if merged now, uncommitted work included,
    /// each naming at most 8 files and counting the rest; at most 32 pairs, the rest counted
    /// in `more_conflicts`. Empty is the ordinary case.
    pub conflicts: Vec<PredictedConflict>,
    /// How many more pairs of worktrees would conflict than `conflicts` lists; absent when
    /// it lists them all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_conflicts: usize,
    /// Why the prediction is missing or partial (git too old, a worktree unreadable);
    /// absent when every pair was merged. `conflicts.predict` tells more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Untracked files too large to hash (over 1 MiB), left out of the prediction, for each
    /// worktree that has some: at most 8 named each, the rest counted. Absent in the ordinary
    /// case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_hashed: Vec<NotHashed>,
    /// How many seconds ago the worktrees were read for this prediction: it is made in the
    /// background, at most about once a second, so a listing never waits for it long.
    #[serde(default)]
    pub predicted_seconds_ago: u64,
}

impl From<domain::ConflictSide> for ConflictSide {
    fn from(side: domain::ConflictSide) -> Self {
        ConflictSide {
            worktree: side.worktree,
            branch: side.branch,
            checkout_id: side.checkout_id,
        }
    }
}

impl From<ConflictSide> for domain::ConflictSide {
    fn from(side: ConflictSide) -> Self {
        domain::ConflictSide {
            worktree: side.worktree,
            branch: side.branch,
            checkout_id: side.checkout_id,
        }
    }
}

impl From<domain::PredictedConflict> for PredictedConflict {
    fn from(conflict: domain::PredictedConflict) -> Self {
        PredictedConflict {
            ours: conflict.ours.into(),
            theirs: conflict.theirs.into(),
            paths: conflict.paths,
            more_paths: conflict.more_paths,
        }
    }
}

impl From<PredictedConflict> for domain::PredictedConflict {
    fn from(conflict: PredictedConflict) -> Self {
        domain::PredictedConflict {
            ours: conflict.ours.into(),
            theirs: conflict.theirs.into(),
            paths: conflict.paths,
            more_paths: conflict.more_paths,
        }
    }
}

impl From<domain::NotHashed> for NotHashed {
    fn from(files: domain::NotHashed) -> Self {
        NotHashed {
            worktree: files.worktree,
            paths: files.paths,
            more_paths: files.more_paths,
        }
    }
}

impl From<domain::ConflictSummary> for ConflictSummary {
    fn from(summary: domain::ConflictSummary) -> Self {
        ConflictSummary {
            pairs: summary.pairs,
            conflicts: summary
                .conflicts
                .into_iter()
                .map(PredictedConflict::from)
                .collect(),
            more_conflicts: summary.more_conflicts,
            reason: summary.reason,
            not_hashed: summary
                .not_hashed
                .into_iter()
                .map(NotHashed::from)
                .collect(),
            predicted_seconds_ago: summary.predicted_seconds_ago,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_writes_every_field_the_domain_holds_and_leaves_out_what_is_empty() {
        let side = |worktree: &str| domain::ConflictSide {
            worktree: worktree.into(),
            branch: Some("main".into()),
            checkout_id: "c0ffee".into(),
        };
        let conflict = domain::PredictedConflict {
            ours: side("/repo"),
            theirs: side("/repo-wt"),
            paths: vec!["src/lib.rs".into()],
            more_paths: 2,
        };
        let summary = ConflictSummary::from(domain::ConflictSummary {
            pairs: 1,
            conflicts: vec![conflict.clone()],
            more_conflicts: 0,
            reason: None,
            not_hashed: vec![domain::NotHashed {
                worktree: "/repo".into(),
                paths: vec!["big.bin".into()],
                more_paths: 0,
            }],
            predicted_seconds_ago: 3,
        });
        let v = serde_json::to_value(&summary).unwrap();
        assert_eq!(v["conflicts"][0]["more_paths"], 2);
        assert_eq!(v["not_hashed"][0]["paths"][0], "big.bin");
        assert!(
            v.get("more_conflicts").is_none() && v.get("reason").is_none(),
            "{v}"
        );
        assert!(v["not_hashed"][0].get("more_paths").is_none(), "{v}");
        let read: ConflictSummary = serde_json::from_value(v).unwrap();
        assert_eq!(read, summary);
        let back: Vec<domain::PredictedConflict> =
            read.conflicts.into_iter().map(Into::into).collect();
        assert_eq!(back[0].theirs.worktree, conflict.theirs.worktree);
        assert_eq!(back[0].more_paths, conflict.more_paths);
    }
}
