//! Merge conflicts predicted before anyone merges: each worktree is taken as a commit that
//! includes its uncommitted work (a *snapshot*), and `git merge-tree` merges two snapshots
//! without touching anything.
//!
//! A snapshot is written with a private copy of the worktree's index (`GIT_INDEX_FILE`), so
//! `git add -A` there changes neither the worktree's index nor its files nor any ref; it only
//! adds objects to the repository's store, as any `git add` would. The snapshot commit has a
//! fixed author, committer and date, so one tree on one HEAD is always the same commit id,
//! and merges are cached by the pair of commits.
//!
//! `git merge-tree --write-tree` needs git 2.38 or later; [`GitVersion`] says which git runs.

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use majordomus_domain::sync::LockExt;

use crate::changes::{ChangeKind, Changes};
use crate::git::{CheckoutError, git_command, git_failed};

/// The first git whose `merge-tree` can merge without a worktree (`--write-tree`).
pub const MERGE_TREE_SINCE: GitVersion = GitVersion {
    major: 2,
    minor: 38,
    patch: 0,
};

/// How many merge results are kept; beyond it the cache starts again. Worktrees change a
/// few times a minute, so this is hours of pairs for a repository of a dozen worktrees.
const MERGES_KEPT: usize = 4_096;

/// How many conflicting paths one pair's result keeps; the rest are counted.
pub const MAX_CONFLICT_PATHS: usize = 256;

/// A git version, as `git version` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct GitVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl fmt::Display for GitVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl GitVersion {
    /// Reads `git version 2.47.3`, `git version 2.39.2.windows.1`, `git version 2.37.1
    /// (Apple Git-137)`.
    pub fn parse(text: &str) -> Option<GitVersion> {
        let numbers = text.trim().strip_prefix("git version ")?;
        let mut parts = numbers
            .split(|c: char| !c.is_ascii_digit())
            .map(|part| part.parse::<u32>().ok());
        Some(GitVersion {
            major: parts.next()??,
            minor: parts.next()??,
            patch: parts.next().flatten().unwrap_or(0),
        })
    }

    /// The git on PATH, as seen from `dir`.
    pub fn of_git(dir: &Path) -> Result<GitVersion, CheckoutError> {
        let args = ["version"];
        let output = git_command(dir, &args)
            .output()
            .map_err(CheckoutError::GitUnavailable)?;
        let text = String::from_utf8_lossy(&output.stdout);
        match GitVersion::parse(&text) {
            Some(version) if output.status.success() => Ok(version),
            _ => Err(git_failed(dir, &args, &output)),
        }
    }

    /// Whether this git can predict conflicts.
    pub fn can_merge_tree(self) -> bool {
        self >= MERGE_TREE_SINCE
    }
}

/// Writes a commit holding the worktree at `root` as it is now, uncommitted and untracked
/// (not ignored) work included, on top of its HEAD. `head` is HEAD's commit.
pub fn snapshot(root: &Path, head: &str) -> Result<String, CheckoutError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let index = git_path(root, "index")?;
    let private = git_path(root, "majordomus")?.join(format!(
        "snapshot-index-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CheckoutError::Io { path, source }
    };
    if let Some(dir) = private.parent() {
        fs::create_dir_all(dir).map_err(io_error(dir))?;
    }
    match fs::copy(&index, &private) {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io_error(&index)(error)),
    }
    let tree = (|| {
        run_with_index(root, &private, &["add", "-A"])?;
        run_with_index(root, &private, &["write-tree"])
    })();
    let _ = fs::remove_file(&private);
    let tree = tree?;
    let args = [
        "commit-tree",
        tree.as_str(),
        "-p",
        head,
        "-m",
        "majordomus snapshot",
    ];
    let mut command = git_command(root, &args);
    command
        .env("GIT_AUTHOR_NAME", "majordomus")
        .env("GIT_AUTHOR_EMAIL", "majordomus@localhost")
        .env("GIT_AUTHOR_DATE", "@0 +0000")
        .env("GIT_COMMITTER_NAME", "majordomus")
        .env("GIT_COMMITTER_EMAIL", "majordomus@localhost")
        .env("GIT_COMMITTER_DATE", "@0 +0000");
    let output = command.output().map_err(CheckoutError::GitUnavailable)?;
    if !output.status.success() {
        return Err(git_failed(root, &args, &output));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Where git keeps `name` for the worktree at `root` (`git rev-parse --git-path`).
fn git_path(root: &Path, name: &str) -> Result<PathBuf, CheckoutError> {
    let args = ["rev-parse", "--git-path", name];
    let output = git_command(root, &args)
        .output()
        .map_err(CheckoutError::GitUnavailable)?;
    if !output.status.success() {
        return Err(git_failed(root, &args, &output));
    }
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    Ok(if path.is_absolute() {
        path
    } else {
        root.join(path)
    })
}

fn run_with_index(root: &Path, index: &Path, args: &[&str]) -> Result<String, CheckoutError> {
    let output = git_command(root, args)
        .env("GIT_INDEX_FILE", index)
        .output()
        .map_err(CheckoutError::GitUnavailable)?;
    if !output.status.success() {
        return Err(git_failed(root, args, &output));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The paths that conflict when the commits `ours` and `theirs` are merged, in git's order:
/// empty when they merge cleanly.
pub fn merge_conflicts(dir: &Path, ours: &str, theirs: &str) -> Result<Vec<String>, CheckoutError> {
    let args = [
        "merge-tree",
        "--write-tree",
        "-z",
        "--name-only",
        "--no-messages",
        ours,
        theirs,
    ];
    let output = git_command(dir, &args)
        .output()
        .map_err(CheckoutError::GitUnavailable)?;
    match output.status.code() {
        Some(0) => Ok(Vec::new()),
        Some(1) => {
            // the merged tree's id, then each conflicting path once per conflicting stage
            let mut paths: Vec<String> = Vec::new();
            let fields = output.stdout.split(|&b| b == 0).skip(1);
            for field in fields.filter(|f| !f.is_empty()) {
                let path = String::from_utf8_lossy(field).into_owned();
                if paths.last() != Some(&path) && !paths.contains(&path) {
                    paths.push(path);
                }
            }
            Ok(paths)
        }
        _ => Err(git_failed(dir, &args, &output)),
    }
}

/// What predicting one pair of worktrees found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairConflicts {
    /// Conflicting paths, at most [`MAX_CONFLICT_PATHS`].
    pub paths: Vec<String>,
    /// Conflicting paths beyond the cap.
    pub omitted: usize,
}

/// Snapshots and merge results kept between predictions, so a prediction over unchanged
/// worktrees costs a few `stat` calls per changed path.
#[derive(Debug, Default)]
pub struct ConflictPredictor {
    snapshots: Mutex<HashMap<PathBuf, (Fingerprint, String)>>,
    merges: Mutex<HashMap<(String, String), PairConflicts>>,
}

/// What a snapshot depends on, as cheap signals: HEAD, the index file, and each changed
/// path's size and modification time. When none moved, the snapshot is the same.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    head: String,
    index: Option<Stamp>,
    files: Vec<(String, Option<Stamp>)>,
}

/// A file's inode, size and modification time: what changes when it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    inode: u64,
    size: u64,
    mtime: (i64, i64),
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        fs::symlink_metadata(path).ok().map(|m| Stamp {
            inode: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
        })
    }
}

impl Fingerprint {
    fn of(root: &Path, head: &str, changes: &Changes) -> Fingerprint {
        let index = git_index_stamp(root);
        let files = changes
            .paths
            .iter()
            .filter(|p| p.kinds.iter().any(|k| *k != ChangeKind::Committed))
            .map(|p| (p.path.clone(), Stamp::of(&root.join(&p.path))))
            .collect();
        Fingerprint {
            head: head.to_owned(),
            index,
            files,
        }
    }
}

/// The index file's identity and stamp, found without running git: `.git/index` for the
/// primary, `<gitdir>/index` for a linked worktree whose `.git` file points there.
fn git_index_stamp(root: &Path) -> Option<Stamp> {
    let dot_git = root.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = fs::read_to_string(&dot_git).ok()?;
        let target = text.lines().find_map(|l| l.strip_prefix("gitdir: "))?;
        root.join(target.trim())
    };
    Stamp::of(&git_dir.join("index"))
}

impl ConflictPredictor {
    pub fn new() -> ConflictPredictor {
        ConflictPredictor::default()
    }

    /// The snapshot of the worktree at `root` whose changes are `changes`: the kept one when
    /// nothing it depends on moved, a new one otherwise. A worktree with no uncommitted work
    /// is its HEAD.
    pub fn snapshot(&self, root: &Path, changes: &Changes) -> Result<String, CheckoutError> {
        let Some(head) = changes.head.as_deref() else {
            return Err(CheckoutError::Git {
                command: "rev-parse HEAD".into(),
                dir: root.to_path_buf(),
                stderr: "the worktree has no commit yet".into(),
            });
        };
        if !changes.has_uncommitted() {
            return Ok(head.to_owned());
        }
        let fingerprint = Fingerprint::of(root, head, changes);
        if let Some((kept, commit)) = self.snapshots.lock_or_recover().get(root)
            && *kept == fingerprint
        {
            return Ok(commit.clone());
        }
        let commit = snapshot(root, head)?;
        self.snapshots
            .lock_or_recover()
            .insert(root.to_path_buf(), (fingerprint, commit.clone()));
        Ok(commit)
    }

    /// The conflicts of merging `ours` and `theirs` (snapshot commits), from the cache when
    /// this pair was merged before.
    pub fn conflicts(
        &self,
        dir: &Path,
        ours: &str,
        theirs: &str,
    ) -> Result<PairConflicts, CheckoutError> {
        let key = if ours <= theirs {
            (ours.to_owned(), theirs.to_owned())
        } else {
            (theirs.to_owned(), ours.to_owned())
        };
        if let Some(found) = self.merges.lock_or_recover().get(&key) {
            return Ok(found.clone());
        }
        let mut paths = merge_conflicts(dir, &key.0, &key.1)?;
        let omitted = paths.len().saturating_sub(MAX_CONFLICT_PATHS);
        paths.truncate(MAX_CONFLICT_PATHS);
        let found = PairConflicts { paths, omitted };
        let mut merges = self.merges.lock_or_recover();
        if merges.len() >= MERGES_KEPT {
            merges.clear();
        }
        merges.insert(key, found.clone());
        Ok(found)
    }

    /// Forgets the snapshots of worktrees not in `roots`.
    pub fn retain(&self, roots: &[PathBuf]) {
        self.snapshots
            .lock_or_recover()
            .retain(|root, _| roots.contains(root));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changes::read_changes;
    use crate::testing::{Repository, git};

    fn lines(n: usize) -> String {
        (0..n).map(|k| format!("line {k}\n")).collect()
    }

    fn edit(root: &Path, path: &str, line: usize, text: &str) {
        let body = fs::read_to_string(root.join(path)).unwrap();
        let edited: String = body
            .lines()
            .enumerate()
            .map(|(k, l)| {
                if k == line {
                    format!("{text}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        fs::write(root.join(path), edited).unwrap();
    }

    #[test]
    fn versions_read_as_git_prints_them() {
        let parse = |t: &str| GitVersion::parse(t).map(|v| v.to_string());
        assert_eq!(parse("git version 2.47.3\n").as_deref(), Some("2.47.3"));
        assert_eq!(
            parse("git version 2.39.2.windows.1").as_deref(),
            Some("2.39.2")
        );
        assert_eq!(
            parse("git version 2.37.1 (Apple Git-137)").as_deref(),
            Some("2.37.1")
        );
        assert_eq!(parse("git version 2.40").as_deref(), Some("2.40.0"));
        assert_eq!(parse("hub version 2"), None);
        assert!(
            !GitVersion::parse("git version 2.37.9")
                .unwrap()
                .can_merge_tree()
        );
        assert!(
            GitVersion::parse("git version 2.38.0")
                .unwrap()
                .can_merge_tree()
        );
    }

    #[test]
    fn same_lines_conflict_other_lines_do_not_and_nothing_is_touched() {
        let repo = Repository::new();
        let root = repo.root();
        fs::write(root.join("src/parser.rs"), lines(40)).unwrap();
        git(&root, &["add", "."]);
        git(&root, &["commit", "--quiet", "-m", "parser"]);
        let alpha = repo.add_worktree("alpha");
        let beta = repo.add_worktree("beta");
        let gamma = repo.add_worktree("gamma");
        // alpha commits an edit of line 3; beta edits line 3 without committing; gamma
        // edits line 30
        edit(&alpha, "src/parser.rs", 3, "alpha's line");
        git(&alpha, &["commit", "--quiet", "-am", "alpha"]);
        edit(&beta, "src/parser.rs", 3, "beta's line");
        edit(&gamma, "src/parser.rs", 30, "gamma's line");
        fs::write(gamma.join("new.rs"), "untracked\n").unwrap();

        let before: Vec<String> = [&alpha, &beta, &gamma]
            .iter()
            .map(|w| git(w, &["status", "--porcelain"]))
            .collect();
        let refs_before = git(&root, &["for-each-ref"]);

        let predictor = ConflictPredictor::new();
        let snap = |root: &Path| {
            let changes = read_changes(root, Some("main")).unwrap();
            predictor.snapshot(root, &changes).unwrap()
        };
        let (a, b, c) = (snap(&alpha), snap(&beta), snap(&gamma));
        assert_eq!(
            a,
            git(&alpha, &["rev-parse", "HEAD"]).trim(),
            "committed work is HEAD"
        );
        assert_eq!(snap(&beta), b, "an unchanged worktree keeps its snapshot");

        let ab = predictor.conflicts(&root, &a, &b).unwrap();
        assert_eq!(ab.paths, ["src/parser.rs"]);
        assert!(predictor.conflicts(&root, &a, &c).unwrap().paths.is_empty());
        assert_eq!(
            predictor.conflicts(&root, &b, &a).unwrap(),
            ab,
            "cached either way round"
        );

        let after: Vec<String> = [&alpha, &beta, &gamma]
            .iter()
            .map(|w| git(w, &["status", "--porcelain"]))
            .collect();
        assert_eq!(before, after);
        assert_eq!(refs_before, git(&root, &["for-each-ref"]));

        // beta's edit moves to another line: a new snapshot, and no conflict
        edit(&beta, "src/parser.rs", 3, "line 3");
        edit(&beta, "src/parser.rs", 20, "beta's other line");
        let moved = snap(&beta);
        assert_ne!(moved, b);
        assert!(
            predictor
                .conflicts(&root, &a, &moved)
                .unwrap()
                .paths
                .is_empty()
        );
        assert!(GitVersion::of_git(&root).unwrap().can_merge_tree());
    }
}
