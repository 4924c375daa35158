//! A site over a real git repository in a temporary directory, for the tests that reach the
//! checkout the way a serving process does: listing its worktrees, reading its changes.

use std::path::Path;
use std::process::Command;

use majordomus_checkout::config::Config;
use majordomus_checkout::git::Checkout;

use super::Site;

/// A site over a fresh repository made in `dir`, with one commit on `main`.
pub fn site_in_repository(dir: &Path, config: Config) -> Site {
    let root = dir
        .canonicalize()
        .expect("the directory has a canonical path");
    std::fs::write(root.join("README"), "a repository for a test\n").expect("a file is written");
    git(&root, &["init", "--quiet", "--initial-branch", "main"]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "--quiet", "-m", "first"]);
    let checkout = Checkout::discover(&root).expect("git finds the repository");
    Site::new(checkout, config)
}

/// Runs git in `dir` with a fixed identity, unsigned and blind to the caller's own repository.
fn git(dir: &Path, args: &[&str]) {
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
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Adds a linked worktree of `site`'s repository at `dir`, on a new branch of `dir`'s name.
pub fn add_worktree(site: &Site, dir: &Path) {
    let name = dir
        .file_name()
        .expect("the worktree's directory has a name")
        .to_string_lossy()
        .into_owned();
    let path = dir.to_string_lossy().into_owned();
    git(
        &site.checkout.root,
        &["worktree", "add", "--quiet", "-b", &name, &path],
    );
}
