//! Where a hook's checkout is, and where its lease lies, found without starting git.
//!
//! A hook runs before every edit and must answer in a few milliseconds; starting git alone
//! costs about as much. So the checkout is found the way git finds it: the nearest directory
//! at or above the working directory that holds `.git`, a directory (the primary checkout)
//! or a file naming the git dir (a linked worktree). Only outside any repository is git asked,
//! because the lease of such a directory lives elsewhere.

use std::fs;
use std::path::{Component, Path, PathBuf};

use majordomus_checkout::git::Checkout;
use majordomus_checkout::lease::lease_path;

/// A hook's checkout: its root and its lease file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The canonical root of the checkout.
    pub root: PathBuf,
    /// Where the checkout's lease is, when there is one.
    pub lease: PathBuf,
}

impl Located {
    /// The git dir every checkout of the repository shares, read the way git reads it (a
    /// linked worktree's git dir names it in `commondir`): two checkouts with the same one
    /// are worktrees of one repository.
    pub fn common_dir(&self) -> Option<PathBuf> {
        let git_dir = self.lease.parent()?.parent()?;
        let common = match fs::read_to_string(git_dir.join("commondir")) {
            Ok(named) => git_dir.join(named.trim()),
            Err(_) => git_dir.to_path_buf(),
        };
        common.canonicalize().ok()
    }
}

/// The checkout `file` (absolute, or relative to `cwd`) lands in, found from the nearest
/// of its directories that exists; `None` when it lands in none.
pub fn checkout_of_file(cwd: &Path, file: &str) -> Option<Located> {
    let joined = cwd.join(file);
    joined
        .ancestors()
        .skip(1)
        .find(|dir| dir.is_dir())
        .and_then(checkout_of)
}

/// The checkout containing `dir`, if `dir` exists.
pub fn checkout_of(dir: &Path) -> Option<Located> {
    let dir = dir.canonicalize().ok()?;
    for candidate in dir.ancestors() {
        let marker = candidate.join(".git");
        let Ok(metadata) = fs::metadata(&marker) else {
            continue;
        };
        let git_dir = if metadata.is_dir() {
            marker
        } else {
            let text = fs::read_to_string(&marker).ok()?;
            let named = text.lines().find_map(|line| line.strip_prefix("gitdir:"))?;
            candidate.join(named.trim())
        };
        return Some(Located {
            root: candidate.to_path_buf(),
            lease: git_dir.join("majordomus").join("lease.json"),
        });
    }
    let checkout = Checkout::discover(&dir).ok()?;
    Some(Located {
        lease: lease_path(&checkout),
        root: checkout.root,
    })
}

/// `file` (absolute, or relative to `cwd`) as a path relative to `root`, with `/` between
/// components; `None` when it is not inside `root` or not valid UTF-8.
///
/// The file may not exist yet (a new file being written): the longest part of its path that
/// exists is resolved (symbolic links included, as `root` was) and the rest appended.
pub fn relative_to(root: &Path, cwd: &Path, file: &str) -> Option<String> {
    let joined = cwd.join(file);
    let mut lexical = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.as_path();
    let mut missing = Vec::new();
    let resolved = loop {
        if let Ok(resolved) = existing.canonicalize() {
            break resolved;
        }
        missing.push(existing.file_name()?);
        existing = existing.parent()?;
    };
    let mut full = resolved;
    full.extend(missing.iter().rev());
    let relative = full.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect();
    let parts = parts?;
    Some(if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
            .args(args)
            .output()
            .unwrap();
        assert!(status.status.success(), "{status:?}");
    }

    #[test]
    fn a_primary_checkout_and_a_linked_worktree_are_found_as_git_finds_them() {
        let temp = tempfile::tempdir().unwrap();
        let base = temp.path().canonicalize().unwrap();
        let repo = base.join("repo");
        fs::create_dir_all(repo.join("src/deep")).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "x"]);
        git(&repo, &["worktree", "add", "-q", "-b", "beta", "../beta"]);

        let found = checkout_of(&repo.join("src/deep")).unwrap();
        assert_eq!(found.root, repo);
        assert_eq!(found.lease, repo.join(".git/majordomus/lease.json"));
        let linked = checkout_of(&base.join("beta")).unwrap();
        assert_eq!(linked.root, base.join("beta"));
        // the lease git would name: `<git dir>/majordomus/lease.json` of the worktree
        let expected = lease_path(&Checkout::discover(&base.join("beta")).unwrap());
        let git_dir = |lease: &Path| lease.parent().unwrap().parent().unwrap().canonicalize();
        assert_eq!(git_dir(&linked.lease).unwrap(), git_dir(&expected).unwrap());
        assert_eq!(expected.file_name(), linked.lease.file_name());
    }

    #[test]
    fn files_become_root_relative_whether_or_not_they_exist() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        fs::create_dir_all(root.join("src")).unwrap();
        let at = |file: &str| relative_to(&root, &root.join("src"), file);
        assert_eq!(at("lexer.rs").as_deref(), Some("src/lexer.rs"));
        assert_eq!(at("../new/dir/file.rs").as_deref(), Some("new/dir/file.rs"));
        let absolute = root.join("src/x.rs").to_string_lossy().into_owned();
        assert_eq!(at(&absolute).as_deref(), Some("src/x.rs"));
        assert_eq!(at("../..").as_deref(), None, "above the root");
        assert_eq!(at("/etc/passwd"), None);
        assert_eq!(at("..").as_deref(), Some("."));
    }
}
