//! What a worktree has actually changed, as git knows it: committed on its branch since the
//! merge base with the repository's default branch, staged, unstaged, and untracked (not
//! ignored). Agents that never announce still leave these, so the board shows them beside
//! the claims.
//!
//! Reading runs `git status` and, when HEAD or the default branch moved, `git merge-base`
//! and `git diff`; [`ChangesCache`] keeps the answer and reads again at most once per
//! interval, and only the cheap part when HEAD and the base have not moved. Nothing here
//! writes: `GIT_OPTIONAL_LOCKS=0` keeps `git status` from refreshing the index.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use majordomus_domain::sync::LockExt;

use crate::git::{CheckoutError, git_command, git_failed};

/// How many changed paths a worktree's changes carry; the rest are counted. A worktree with
/// more (a vendored tree not ignored, a generated directory) is reported as such rather
/// than copied onto every answer.
pub const MAX_CHANGED_PATHS: usize = 2_000;

/// The files `majordomus install` writes into a checkout (each client's MCP server entry,
/// hooks and approvals), repository-relative. They are majordomus's own wiring, the same in
/// every worktree one install wires, so they never count as a worktree's change or as a
/// predicted conflict: a board that reported them would report majordomus itself.
/// `install` builds its project files from this list.
pub const OWN_WIRING_FILES: &[&str] = &[
    ".mcp.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".codex/config.toml",
    ".codex/hooks.json",
    ".gemini/settings.json",
    ".cursor/mcp.json",
    ".cursor/hooks.json",
];

/// Whether `path` (repository-relative, `/` between components) is one of
/// [`OWN_WIRING_FILES`].
pub fn is_own_wiring(path: &str) -> bool {
    OWN_WIRING_FILES.contains(&path)
}

/// How a path was changed: the domain's kinds, which git's output is read into directly.
pub use majordomus_domain::changes::ChangeKind;

/// One changed path, repository-relative as git writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedPath {
    pub path: String,
    /// Each way it was changed, in [`ChangeKind`] order.
    pub kinds: Vec<ChangeKind>,
}

/// What one worktree has changed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Changes {
    /// The commit HEAD names, when it names one.
    pub head: Option<String>,
    /// The commit the branch's own commits are counted from (the merge base with the
    /// default branch), when there is one.
    pub base: Option<String>,
    /// The default branch it was compared with, as a ref name (`main`, `origin/main`).
    pub default_branch: Option<String>,
    /// Changed paths in path order, at most [`MAX_CHANGED_PATHS`].
    pub paths: Vec<ChangedPath>,
    /// Changed paths beyond the cap, counted but not listed.
    pub omitted: usize,
}

impl Changes {
    /// Whether anything is changed at all.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.omitted == 0
    }

    /// Whether the working tree or the index holds work that is not committed.
    pub fn has_uncommitted(&self) -> bool {
        self.omitted > 0
            || self
                .paths
                .iter()
                .any(|p| p.kinds.iter().any(|k| *k != ChangeKind::Committed))
    }
}

/// The repository's default branch as seen from `root`: `configured` when given and it
/// names a commit, else what `origin/HEAD` points at, else `main`, else `master`. `None` when
/// none exists (a repository without either, or with no commit yet).
pub fn default_branch(root: &Path, configured: Option<&str>) -> Option<String> {
    if let Some(name) = configured {
        return names_commit(root, name).then(|| name.to_owned());
    }
    let output = git_command(
        root,
        &["symbolic-ref", "-q", "--short", "refs/remotes/origin/HEAD"],
    )
    .output()
    .ok()?;
    if output.status.success() {
        let name = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if !name.is_empty() && names_commit(root, &name) {
            return Some(name);
        }
    }
    ["main", "master"]
        .into_iter()
        .find(|name| names_commit(root, &format!("refs/heads/{name}")))
        .map(str::to_owned)
}

fn names_commit(root: &Path, name: &str) -> bool {
    let spec = format!("{name}^{{commit}}");
    git_command(root, &["rev-parse", "--verify", "-q", &spec])
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Reads what the worktree at `root` has changed against the default branch: `configured`,
/// or the one [`default_branch`] finds.
pub fn read_changes(root: &Path, configured: Option<&str>) -> Result<Changes, CheckoutError> {
    let default_branch = default_branch(root, configured);
    let default_branch = default_branch.as_deref();
    let base = match default_branch {
        Some(branch) => merge_base(root, branch)?,
        None => None,
    };
    let committed = match &base {
        Some(base) => committed_paths(root, base)?,
        None => Vec::new(),
    };
    let (head, status) = status_entries(root)?;
    let mut changes = assemble(base, default_branch.map(str::to_owned), committed, status);
    changes.head = head;
    Ok(changes)
}

/// The merge base of HEAD and `branch`; `None` when they share no history or HEAD has no
/// commit yet.
fn merge_base(root: &Path, branch: &str) -> Result<Option<String>, CheckoutError> {
    let args = ["merge-base", "HEAD", branch];
    let output = git_command(root, &args)
        .output()
        .map_err(CheckoutError::GitUnavailable)?;
    match output.status.code() {
        Some(0) => Ok(Some(
            String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        )),
        // 1: no common ancestor; 128: HEAD is unborn
        Some(1 | 128) => Ok(None),
        _ => Err(git_failed(root, &args, &output)),
    }
}

/// Paths changed by the commits between `base` and HEAD. Renames are listed as the two paths
/// they touch, so a rename meets claims on either name.
fn committed_paths(root: &Path, base: &str) -> Result<Vec<String>, CheckoutError> {
    let args = ["diff", "--name-only", "-z", "--no-renames", base, "HEAD"];
    let output = git_command(root, &args)
        .output()
        .map_err(CheckoutError::GitUnavailable)?;
    if !output.status.success() {
        return Err(git_failed(root, &args, &output));
    }
    Ok(nul_fields(&output.stdout).map(str::to_owned).collect())
}

/// The commit HEAD names, and `git status` entries: a path and how it differs from HEAD
/// (staged) and from the index (unstaged), or that it is untracked.
fn status_entries(root: &Path) -> Result<StatusEntries, CheckoutError> {
    let args = [
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=dirty",
    ];
    let output = git_command(root, &args)
        .output()
        .map_err(CheckoutError::GitUnavailable)?;
    if !output.status.success() {
        return Err(git_failed(root, &args, &output));
    }
    Ok(parse_status(&output.stdout))
}

/// HEAD's commit (none on an unborn branch) and the changed paths, as `git status` says them.
type StatusEntries = (Option<String>, Vec<(String, ChangeKind)>);

/// Parses `git status --porcelain=v2 --branch -z --no-renames` output.
fn parse_status(bytes: &[u8]) -> StatusEntries {
    let mut head = None;
    let mut entries = Vec::new();
    for record in nul_fields(bytes) {
        if let Some(oid) = record.strip_prefix("# branch.oid ") {
            head = (oid != "(initial)").then(|| oid.to_owned());
            continue;
        }
        let mut fields = record.splitn(2, ' ');
        let (Some(tag), Some(rest)) = (fields.next(), fields.next()) else {
            continue;
        };
        match tag {
            "?" => entries.push((rest.to_owned(), ChangeKind::Untracked)),
            // ordinary: `1 XY sub mH mI mW hH hI path`; unmerged: `u XY sub m1 m2 m3 mW h1 h2 h3 path`
            "1" | "u" => {
                let skip = if tag == "1" { 7 } else { 9 };
                let mut parts = rest.splitn(skip + 1, ' ');
                let xy = parts.next().unwrap_or("..");
                let Some(path) = parts.nth(skip - 1) else {
                    continue;
                };
                let mut xy = xy.chars();
                if xy.next().is_some_and(|x| x != '.') {
                    entries.push((path.to_owned(), ChangeKind::Staged));
                }
                if xy.next().is_some_and(|y| y != '.') {
                    entries.push((path.to_owned(), ChangeKind::Unstaged));
                }
            }
            _ => {}
        }
    }
    (head, entries)
}

fn nul_fields(bytes: &[u8]) -> impl Iterator<Item = &str> {
    bytes
        .split(|&b| b == 0)
        .filter(|field| !field.is_empty())
        .filter_map(|field| std::str::from_utf8(field).ok())
}

fn assemble(
    base: Option<String>,
    default_branch: Option<String>,
    committed: Vec<String>,
    status: Vec<(String, ChangeKind)>,
) -> Changes {
    let mut kinds: BTreeMap<String, Vec<ChangeKind>> = BTreeMap::new();
    let all = committed
        .into_iter()
        .map(|path| (path, ChangeKind::Committed))
        .chain(status);
    for (path, kind) in all.filter(|(path, _)| !is_own_wiring(path)) {
        let entry = kinds.entry(path).or_default();
        if !entry.contains(&kind) {
            entry.push(kind);
        }
    }
    let total = kinds.len();
    let paths: Vec<ChangedPath> = kinds
        .into_iter()
        .take(MAX_CHANGED_PATHS)
        .map(|(path, mut kinds)| {
            kinds.sort_unstable();
            ChangedPath { path, kinds }
        })
        .collect();
    Changes {
        head: None,
        base,
        default_branch,
        omitted: total - paths.len(),
        paths,
    }
}

/// The changes of several worktrees, each read again at most once per `interval`, and by one
/// caller at a time: a caller that finds a worktree being read waits for that reading rather
/// than starting its own, so a crowd of calls arriving as an answer expires costs one run of
/// git, not one per call.
#[derive(Debug)]
pub struct ChangesCache {
    interval: Duration,
    entries: Mutex<Entries>,
    /// Wakes the callers waiting for a reading to finish.
    read: Condvar,
}

#[derive(Debug, Default)]
struct Entries {
    kept: HashMap<PathBuf, Cached>,
    /// The worktrees being read right now.
    reading: HashSet<PathBuf>,
}

#[derive(Debug)]
struct Cached {
    /// When the reading began: its age is counted from there.
    read_at: Instant,
    /// When it ended: a caller that waited for it takes it however old it is.
    ended_at: Instant,
    changes: Result<Changes, String>,
}

impl ChangesCache {
    /// A cache that reads a worktree again once its answer is `interval` old.
    pub fn new(interval: Duration) -> ChangesCache {
        ChangesCache {
            interval,
            entries: Mutex::default(),
            read: Condvar::new(),
        }
    }

    /// The changes of the worktree at `root` (against the `configured` default branch, or
    /// the one found), read now unless an answer younger than the interval is kept or
    /// another caller is reading it already. A failure is kept too, as git's words, so a
    /// broken worktree is not asked again on every call.
    pub fn changes(&self, root: &Path, configured: Option<&str>) -> Result<Changes, String> {
        self.changes_read_by(root, || {
            read_changes(root, configured).map_err(|error| error.to_string())
        })
    }

    /// [`ChangesCache::changes`], reading with `read` when this caller is the one to read.
    fn changes_read_by(
        &self,
        root: &Path,
        read: impl FnOnce() -> Result<Changes, String>,
    ) -> Result<Changes, String> {
        let mut entries = self.entries.lock_or_recover();
        loop {
            let now = Instant::now();
            if let Some(kept) = self.fresh(&entries, root, now) {
                return kept;
            }
            if !entries.reading.contains(root) {
                break;
            }
            entries = self.read.wait(entries).unwrap_or_else(|e| e.into_inner());
            if let Some(cached) = entries.kept.get(root)
                && cached.ended_at >= now
            {
                return cached.changes.clone();
            }
        }
        entries.reading.insert(root.to_path_buf());
        drop(entries);
        let reading = Reading { cache: self, root };
        let read_at = Instant::now();
        let changes = read();
        reading.end(Cached {
            read_at,
            ended_at: Instant::now(),
            changes: changes.clone(),
        });
        changes
    }

    /// The answer kept for the worktree at `root` if it is younger than the interval, without
    /// reading anything: a caller on an async thread asks this first and hands the reading
    /// to a blocking thread only when nothing fresh is kept.
    pub fn kept(&self, root: &Path) -> Option<Result<Changes, String>> {
        self.fresh(&self.entries.lock_or_recover(), root, Instant::now())
    }

    fn fresh(
        &self,
        entries: &Entries,
        root: &Path,
        now: Instant,
    ) -> Option<Result<Changes, String>> {
        let cached = entries.kept.get(root)?;
        (now.duration_since(cached.read_at) < self.interval).then(|| cached.changes.clone())
    }

    /// Forgets the worktrees not in `roots` (removed since), so the cache holds at most the
    /// repository's worktrees.
    pub fn retain(&self, roots: &[PathBuf]) {
        self.entries
            .lock_or_recover()
            .kept
            .retain(|root, _| roots.contains(root));
    }
}

/// One caller's reading of a worktree: however it ends (a panic included), the worktree is
/// no longer marked as being read and the callers waiting for it wake.
struct Reading<'a> {
    cache: &'a ChangesCache,
    root: &'a Path,
}

impl Reading<'_> {
    /// Keeps what was read.
    fn end(self, cached: Cached) {
        self.cache
            .entries
            .lock_or_recover()
            .kept
            .insert(self.root.to_path_buf(), cached);
    }
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.cache
            .entries
            .lock_or_recover()
            .reading
            .remove(self.root);
        self.cache.read.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Repository, git};
    use std::fs;

    fn kinds(changes: &Changes, path: &str) -> Vec<&'static str> {
        changes
            .paths
            .iter()
            .find(|p| p.path == path)
            .map(|p| p.kinds.iter().map(|k| k.as_str()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn every_kind_of_change_is_read_and_nothing_is_written() {
        let repo = Repository::new();
        let beta = repo.add_worktree("feature/beta");
        fs::create_dir_all(beta.join("src/parser")).unwrap();
        fs::write(beta.join("src/parser/committed.rs"), "c\n").unwrap();
        git(&beta, &["add", "."]);
        git(&beta, &["commit", "--quiet", "-m", "parser"]);
        fs::write(beta.join("src/parser/staged.rs"), "s\n").unwrap();
        git(&beta, &["add", "src/parser/staged.rs"]);
        fs::write(beta.join("src/lib.rs"), "// edited\n").unwrap();
        fs::write(beta.join("src/parser/new.rs"), "n\n").unwrap();
        fs::write(beta.join("src/parser/committed.rs"), "c again\n").unwrap();
        fs::write(beta.join(".gitignore"), "*.log\n").unwrap();
        fs::write(beta.join("debug.log"), "ignored\n").unwrap();
        let before = git(&beta, &["status", "--porcelain"]);
        let index = fs::metadata(repo.root().join(".git/worktrees/feature-beta/index"))
            .unwrap()
            .modified()
            .unwrap();

        assert_eq!(default_branch(&beta, None).as_deref(), Some("main"));
        let changes = read_changes(&beta, None).unwrap();
        assert_eq!(changes.default_branch.as_deref(), Some("main"));
        assert_eq!(
            kinds(&changes, "src/parser/committed.rs"),
            ["committed", "unstaged"]
        );
        assert_eq!(kinds(&changes, "src/parser/staged.rs"), ["staged"]);
        assert_eq!(kinds(&changes, "src/lib.rs"), ["unstaged"]);
        assert_eq!(kinds(&changes, "src/parser/new.rs"), ["untracked"]);
        assert_eq!(kinds(&changes, ".gitignore"), ["untracked"]);
        assert!(
            kinds(&changes, "debug.log").is_empty(),
            "ignored files are not changes"
        );
        assert!(changes.has_uncommitted() && changes.base.is_some());
        assert_eq!(
            changes.head.as_deref(),
            Some(git(&beta, &["rev-parse", "HEAD"]).trim())
        );

        let after = fs::metadata(repo.root().join(".git/worktrees/feature-beta/index"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(index, after, "the index is never refreshed");
        assert_eq!(git(&beta, &["status", "--porcelain"]), before);
        // the primary, on the default branch itself, has nothing of its own
        assert!(read_changes(&repo.root(), Some("main")).unwrap().is_empty());
    }

    #[test]
    fn the_default_branch_is_configured_or_found() {
        let repo = Repository::new();
        let root = repo.root();
        assert_eq!(default_branch(&root, None).as_deref(), Some("main"));
        assert_eq!(default_branch(&root, Some("nope")), None);
        git(&root, &["branch", "trunk"]);
        assert_eq!(
            default_branch(&root, Some("trunk")).as_deref(),
            Some("trunk")
        );
        git(&root, &["update-ref", "refs/remotes/origin/trunk", "HEAD"]);
        git(
            &root,
            &[
                "symbolic-ref",
                "refs/remotes/origin/HEAD",
                "refs/remotes/origin/trunk",
            ],
        );
        assert_eq!(default_branch(&root, None).as_deref(), Some("origin/trunk"));
    }

    #[test]
    fn majordomus_s_own_wiring_files_are_no_change() {
        let status = vec![
            (".mcp.json".to_owned(), ChangeKind::Untracked),
            (
                ".claude/settings.local.json".to_owned(),
                ChangeKind::Untracked,
            ),
            (".claude/agents.md".to_owned(), ChangeKind::Untracked),
            ("src/lib.rs".to_owned(), ChangeKind::Unstaged),
        ];
        let committed = vec![".gemini/settings.json".to_owned()];
        let changes = assemble(None, None, committed, status);
        let paths: Vec<&str> = changes.paths.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, [".claude/agents.md", "src/lib.rs"]);
    }

    #[test]
    fn beyond_the_cap_paths_are_counted() {
        let status = (0..MAX_CHANGED_PATHS + 5)
            .map(|n| (format!("gen/{n:05}"), ChangeKind::Untracked))
            .collect();
        let changes = assemble(None, None, vec![], status);
        assert_eq!(changes.paths.len(), MAX_CHANGED_PATHS);
        assert_eq!(changes.omitted, 5);
        assert!(changes.has_uncommitted());
    }

    #[test]
    fn status_lines_of_every_shape_parse() {
        let raw = b"1 M. N... 100644 100644 100644 aaa bbb staged only.rs\0\
                    1 .M N... 100644 100644 100644 aaa aaa both ways.rs\0\
                    u UU N... 100644 100644 100644 100644 a b c conflicted.rs\0\
                    ? new dir/file.rs\0\
                    # branch.oid abc\0";
        let (head, entries) = parse_status(raw);
        assert_eq!(head.as_deref(), Some("abc"));
        assert_eq!(
            entries,
            [
                ("staged only.rs".to_owned(), ChangeKind::Staged),
                ("both ways.rs".to_owned(), ChangeKind::Unstaged),
                ("conflicted.rs".to_owned(), ChangeKind::Staged),
                ("conflicted.rs".to_owned(), ChangeKind::Unstaged),
                ("new dir/file.rs".to_owned(), ChangeKind::Untracked),
            ]
        );
    }

    #[test]
    fn callers_arriving_while_a_worktree_is_read_wait_for_that_reading() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let cache = ChangesCache::new(Duration::ZERO);
        let root = Path::new("/a/worktree");
        let reads = AtomicUsize::new(0);
        let arrived = AtomicUsize::new(0);
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = Mutex::new(released);
        let slow_read = || {
            released.lock().unwrap().recv().unwrap();
            Ok(Changes::default())
        };
        std::thread::scope(|scope| {
            let first = scope.spawn(|| {
                cache.changes_read_by(root, || {
                    reads.fetch_add(1, Ordering::SeqCst);
                    slow_read()
                })
            });
            while reads.load(Ordering::SeqCst) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            let waiting: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        arrived.fetch_add(1, Ordering::SeqCst);
                        cache.changes_read_by(root, || {
                            reads.fetch_add(1, Ordering::SeqCst);
                            Ok(Changes::default())
                        })
                    })
                })
                .collect();
            while arrived.load(Ordering::SeqCst) < 8 {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(100));
            release.send(()).unwrap();
            assert!(first.join().unwrap().is_ok());
            for caller in waiting {
                assert!(caller.join().unwrap().is_ok());
            }
        });
        assert_eq!(
            reads.load(Ordering::SeqCst),
            1,
            "one reading served them all"
        );
        cache
            .changes_read_by(root, || {
                reads.fetch_add(1, Ordering::SeqCst);
                Ok(Changes::default())
            })
            .unwrap();
        assert_eq!(reads.load(Ordering::SeqCst), 2, "a later caller reads anew");
    }

    #[test]
    fn a_reading_that_panics_lets_the_next_caller_read() {
        let cache = ChangesCache::new(Duration::from_secs(3600));
        let root = Path::new("/a/worktree");
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cache.changes_read_by(root, || panic!("git went away"))
        }));
        assert!(panicked.is_err());
        assert!(
            cache
                .changes_read_by(root, || Ok(Changes::default()))
                .is_ok()
        );
    }

    #[test]
    fn the_cache_reads_again_only_after_its_interval() {
        let repo = Repository::new();
        let root = repo.root();
        let cache = ChangesCache::new(Duration::from_secs(3600));
        assert!(cache.changes(&root, Some("main")).unwrap().is_empty());
        fs::write(root.join("later.rs"), "x\n").unwrap();
        assert!(
            cache.changes(&root, Some("main")).unwrap().is_empty(),
            "kept"
        );
        let fresh = ChangesCache::new(Duration::ZERO);
        assert_eq!(
            kinds(&fresh.changes(&root, Some("main")).unwrap(), "later.rs"),
            ["untracked"]
        );
        cache.retain(&[]);
        assert_eq!(
            kinds(&cache.changes(&root, Some("main")).unwrap(), "later.rs"),
            ["untracked"]
        );
    }
}
