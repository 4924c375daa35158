//! The merge conflicts predicted between worktrees: two worktrees whose work would conflict
//! if merged now, and the short form of a whole prediction that the repository's reading
//! keeps and a listing of the repository carries. How the prediction is made (snapshot
//! commits, `git merge-tree`) is the app's business; these are only what it says. The
//! answers write them as types of their own.

/// One side of a predicted conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConflictSide {
    pub worktree: String,
    pub branch: Option<String>,
    pub checkout_id: String,
}

/// Two worktrees whose work would conflict if merged now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PredictedConflict {
    /// The worktree listed earlier.
    pub ours: ConflictSide,
    /// The worktree listed later.
    pub theirs: ConflictSide,
    /// The files that would conflict, in git's order.
    pub paths: Vec<String>,
    /// Conflicting files beyond those listed.
    pub more_paths: usize,
}

/// The first conflicting hunk of one file: each side's lines between the merge's markers,
/// at most 20 lines and 1,000 bytes each. Kept beside a prediction for the pre-edit guard
/// to quote; no answer carries it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConflictHunk {
    /// The file, repository-relative.
    pub path: String,
    /// The lines of the worktree listed earlier (`ours`).
    pub ours: String,
    /// The lines of the worktree listed later (`theirs`).
    pub theirs: String,
}

/// Untracked files of one worktree that a prediction left out, being too large to hash: a
/// conflict on them is not predicted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotHashed {
    /// The worktree they are in.
    pub worktree: String,
    /// The files, repository-relative.
    pub paths: Vec<String>,
    /// Files left out beyond those named.
    pub more_paths: usize,
}

/// The merge conflicts `conflicts.predict` finds, in short.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConflictSummary {
    /// How many pairs of worktrees with changes were merged.
    pub pairs: usize,
    /// The pairs of worktrees that would conflict if merged now, uncommitted work included,
    /// each naming at most 8 files and counting the rest; at most 32 pairs, the rest counted
    /// in `more_conflicts`. Empty is the ordinary case.
    pub conflicts: Vec<PredictedConflict>,
    /// How many more pairs of worktrees would conflict than `conflicts` lists; absent when
    /// it lists them all.
    pub more_conflicts: usize,
    /// Why the prediction is missing or partial (git too old, a worktree unreadable);
    /// absent when every pair was merged. `conflicts.predict` tells more.
    pub reason: Option<String>,
    /// Untracked files too large to hash (over 1 MiB), left out of the prediction, for each
    /// worktree that has some: at most 8 named each, the rest counted. Absent in the ordinary
    /// case.
    pub not_hashed: Vec<NotHashed>,
    /// How many seconds ago the worktrees were read for this prediction: it is made in the
    /// background, at most about once a second, so a listing never waits for it long.
    pub predicted_seconds_ago: u64,
}
