//! Real git repositories in temporary directories, for the tests of this crate.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// A repository with one commit on `main`, living in `<temp>/repo`; its linked worktrees and
/// any other sibling go beside it in `<temp>`, and all of it goes when this is dropped.
pub(crate) struct Repository {
    _dir: TempDir,
    root: PathBuf,
}

impl Repository {
    pub(crate) fn new() -> Repository {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("repo");
        fs::create_dir_all(root.join("src")).unwrap();
        fs::write(root.join("src/lib.rs"), "// nothing\n").unwrap();
        git(&root, &["init", "--quiet", "--initial-branch", "main"]);
        git(&root, &["add", "."]);
        git(&root, &["commit", "--quiet", "-m", "first"]);
        Repository { _dir: dir, root }
    }

    /// The canonical root of the primary worktree.
    pub(crate) fn root(&self) -> PathBuf {
        self.root.clone()
    }

    /// Adds a linked worktree on a new `branch` beside the primary; returns its root.
    pub(crate) fn add_worktree(&self, branch: &str) -> PathBuf {
        let path = self.root.with_file_name(branch.replace('/', "-"));
        let target = path.to_str().unwrap();
        git(
            &self.root,
            &["worktree", "add", "--quiet", "-b", branch, target],
        );
        path
    }
}

/// Runs git in `dir` with a fixed identity and no signing; panics with git's stderr on failure.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}
