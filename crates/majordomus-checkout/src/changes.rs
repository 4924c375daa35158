//! What a worktree has actually changed, as git knows it: committed on its branch since the
//! merge base with the repository's default branch, staged, unstaged, and untracked (not
//! ignored). Agents that never announce still leave these, so the board shows them beside
//! the claims.
//!
//! A reading runs two git processes side by side: `git status`, which says what is not
//! committed and which commit HEAD names, and one that names the default branch and its
//! commit (`for-each-ref`, or `rev-parse` of a configured branch). The committed part
//! (`git merge-base` and `git diff` between the base and HEAD) is run only when HEAD or the
//! default branch's commit differs from the previous reading's; otherwise the previous
//! reading's base and committed paths are reused, which is sound because both are fixed by
//! those two commits. [`ChangesCache`] keeps the answer and reads again at most once per
//! interval, so what is uncommitted is never older than that interval. Nothing here writes:
//! `GIT_OPTIONAL_LOCKS=0` keeps `git status` from refreshing the index.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
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
    default_branch_tip(root, configured).map(|tip| tip.name)
}

/// A default branch, by name, and the commit it names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BranchTip {
    name: String,
    commit: String,
}

/// The refs a default branch is found among, in order of preference; `origin/HEAD` counts
/// for the branch it points at.
const DEFAULT_BRANCH_CANDIDATES: [&str; 3] = [
    "refs/remotes/origin/HEAD",
    "refs/heads/main",
    "refs/heads/master",
];

/// [`default_branch`] and its commit, learnt by one git process: a reading runs it every
/// time, to see whether the default branch moved.
fn default_branch_tip(root: &Path, configured: Option<&str>) -> Option<BranchTip> {
    if let Some(name) = configured {
        return commit_named(root, name).map(|commit| BranchTip {
            name: name.to_owned(),
            commit,
        });
    }
    let mut args = vec![
        "for-each-ref",
        "--format=%(refname)%00%(symref:short)%00%(objecttype)%00%(objectname)",
    ];
    args.extend(DEFAULT_BRANCH_CANDIDATES);
    let output = git_command(root, &args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let listed = String::from_utf8_lossy(&output.stdout);
    let commits: Vec<(&str, &str, &str)> = listed
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\0');
            let (refname, target, kind, commit) = (
                fields.next()?,
                fields.next()?,
                fields.next()?,
                fields.next()?,
            );
            (kind == "commit").then_some((refname, target, commit))
        })
        .collect();
    DEFAULT_BRANCH_CANDIDATES.iter().find_map(|candidate| {
        let (refname, target, commit) =
            commits.iter().find(|(refname, ..)| refname == candidate)?;
        let name = match refname.strip_prefix("refs/heads/") {
            Some(branch) => branch,
            // origin/HEAD counts only as the branch it points at
            None if !target.is_empty() => target,
            None => return None,
        };
        Some(BranchTip {
            name: name.to_owned(),
            commit: (*commit).to_owned(),
        })
    })
}

/// The commit `name` names, if it names one.
fn commit_named(root: &Path, name: &str) -> Option<String> {
    let spec = format!("{name}^{{commit}}");
    let output = git_command(root, &["rev-parse", "--verify", "-q", &spec])
        .output()
        .ok()?;
    let commit = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !commit.is_empty()).then_some(commit)
}

/// What a reading found committed on the branch, kept by [`ChangesCache`] for the next
/// reading: the merge base and the paths changed since are fixed by HEAD's commit and the
/// default branch's, so while neither moves they are reused rather than asked of git again.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CommittedPart {
    head: String,
    tip: BranchTip,
    base: Option<String>,
    /// The paths the branch's own commits changed; at most [`MAX_CHANGED_PATHS`], or the
    /// part is not kept (a larger branch is read whole every time rather than held).
    paths: Vec<String>,
}

/// Reads what the worktree at `root` has changed against the default branch: `configured`,
/// or the one [`default_branch`] finds.
pub fn read_changes(root: &Path, configured: Option<&str>) -> Result<Changes, CheckoutError> {
    read_changes_reusing(root, configured, None).map(|(changes, _)| changes)
}

/// [`read_changes`], reusing `previous` reading's committed part when HEAD and the default
/// branch still name the commits it was read at. What is uncommitted is read every time.
/// Returns the committed part the next reading may reuse.
fn read_changes_reusing(
    root: &Path,
    configured: Option<&str>,
    previous: Option<&Arc<CommittedPart>>,
) -> Result<ReadChanges, CheckoutError> {
    let (tip, status) = std::thread::scope(|scope| {
        let tip = scope.spawn(|| default_branch_tip(root, configured));
        let status = status_entries(root);
        let tip = tip
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (tip, status)
    });
    let (head, status) = status?;
    let committed = match (head.as_ref(), tip.as_ref()) {
        (Some(head), Some(tip)) => Some(match previous {
            Some(kept) if kept.head == *head && kept.tip == *tip => kept.clone(),
            _ => Arc::new(committed_part(root, head, tip)?),
        }),
        _ => None,
    };
    let (base, committed_paths) = match &committed {
        Some(part) => (part.base.clone(), part.paths.as_slice()),
        None => (None, &[][..]),
    };
    let mut changes = assemble(base, tip.map(|tip| tip.name), committed_paths, status);
    changes.head = head;
    let kept = committed.filter(|part| part.paths.len() <= MAX_CHANGED_PATHS);
    Ok((changes, kept))
}

/// The merge base of `head` and the default branch's `tip`, and the paths changed since.
fn committed_part(
    root: &Path,
    head: &str,
    tip: &BranchTip,
) -> Result<CommittedPart, CheckoutError> {
    let base = merge_base(root, head, &tip.commit)?;
    let paths = match &base {
        Some(base) => committed_paths(root, base, head)?,
        None => Vec::new(),
    };
    Ok(CommittedPart {
        head: head.to_owned(),
        tip: tip.clone(),
        base,
        paths,
    })
}

/// The merge base of two commits; `None` when they share no history.
fn merge_base(root: &Path, head: &str, tip: &str) -> Result<Option<String>, CheckoutError> {
    let args = ["merge-base", head, tip];
    let output = git_command(root, &args)
        .output()
        .map_err(CheckoutError::GitUnavailable)?;
    match output.status.code() {
        Some(0) => Ok(Some(
            String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        )),
        // 1: no common ancestor; 128: git could not walk to one (a shallow history)
        Some(1 | 128) => Ok(None),
        _ => Err(git_failed(root, &args, &output)),
    }
}

/// Paths changed by the commits between `base` and `head`. Renames are listed as the two
/// paths they touch, so a rename meets claims on either name.
fn committed_paths(root: &Path, base: &str, head: &str) -> Result<Vec<String>, CheckoutError> {
    let args = ["diff", "--name-only", "-z", "--no-renames", base, head];
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
    committed: &[String],
    status: Vec<(String, ChangeKind)>,
) -> Changes {
    let mut kinds: BTreeMap<String, Vec<ChangeKind>> = BTreeMap::new();
    let all = committed
        .iter()
        .map(|path| (path.clone(), ChangeKind::Committed))
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
/// git, not one per call. Each reading hands its committed part to the next, which reuses it
/// while HEAD and the default branch stay where they were.
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
    /// What the next reading may reuse; none after a failure.
    committed: Option<Arc<CommittedPart>>,
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
        self.changes_read_by(root, |previous| {
            read_changes_reusing(root, configured, previous.as_ref())
                .map_err(|error| error.to_string())
        })
    }

    /// [`ChangesCache::changes`], reading with `read` when this caller is the one to read;
    /// `read` is given the previous reading's committed part, and returns the next one's.
    fn changes_read_by(
        &self,
        root: &Path,
        read: impl FnOnce(Option<Arc<CommittedPart>>) -> Result<ReadChanges, String>,
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
        let previous = entries
            .kept
            .get(root)
            .and_then(|cached| cached.committed.clone());
        drop(entries);
        let reading = Reading { cache: self, root };
        let read_at = Instant::now();
        let (changes, committed) = match read(previous) {
            Ok((changes, committed)) => (Ok(changes), committed),
            Err(error) => (Err(error), None),
        };
        reading.end(Cached {
            read_at,
            ended_at: Instant::now(),
            changes: changes.clone(),
            committed,
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

/// What one reading returns: the changes, and the committed part the next may reuse.
type ReadChanges = (Changes, Option<Arc<CommittedPart>>);

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
        git(&root, &["update-ref", "-d", "refs/remotes/origin/trunk"]);
        assert_eq!(
            default_branch(&root, None).as_deref(),
            Some("main"),
            "an origin/HEAD that names no commit is passed over"
        );
    }

    /// The committed part a reading kept, with its paths replaced by one no commit touched:
    /// a reading that lists it has reused the part rather than asked git again.
    fn forged(kept: &Arc<CommittedPart>) -> Arc<CommittedPart> {
        Arc::new(CommittedPart {
            paths: vec!["forged.rs".to_owned()],
            ..CommittedPart::clone(kept)
        })
    }

    #[test]
    fn a_reused_merge_base_is_dropped_when_head_or_the_default_branch_moves() {
        let repo = Repository::new();
        let beta = repo.add_worktree("feature/beta");
        fs::write(beta.join("one.rs"), "1\n").unwrap();
        git(&beta, &["add", "."]);
        git(&beta, &["commit", "--quiet", "-m", "one"]);
        let (first, kept) = read_changes_reusing(&beta, None, None).unwrap();
        let kept = kept.expect("a committed part to reuse");
        assert_eq!(kinds(&first, "one.rs"), ["committed"]);

        // nothing moved: the part is reused, and what is uncommitted is read anew
        fs::write(beta.join("later.rs"), "l\n").unwrap();
        let (reused, again) = read_changes_reusing(&beta, None, Some(&forged(&kept))).unwrap();
        assert_eq!(kinds(&reused, "forged.rs"), ["committed"], "reused");
        assert_eq!(kinds(&reused, "later.rs"), ["untracked"]);
        assert_eq!(reused.base, first.base);
        assert_eq!(again.unwrap().paths, ["forged.rs"]);

        // HEAD moved: merge base and committed paths are read again
        git(&beta, &["add", "later.rs"]);
        git(&beta, &["commit", "--quiet", "-m", "later"]);
        let (moved, kept) = read_changes_reusing(&beta, None, Some(&forged(&kept))).unwrap();
        assert!(
            kinds(&moved, "forged.rs").is_empty(),
            "dropped when HEAD moved"
        );
        assert_eq!(kinds(&moved, "one.rs"), ["committed"]);
        assert_eq!(kinds(&moved, "later.rs"), ["committed"]);
        assert_eq!(moved.base, first.base);
        assert_eq!(
            moved.head.as_deref(),
            Some(git(&beta, &["rev-parse", "HEAD"]).trim())
        );

        // the default branch moved (to HEAD itself): the base is HEAD, nothing is committed
        let kept = kept.expect("a committed part to reuse");
        git(
            &repo.root(),
            &["merge", "--quiet", "--ff-only", "feature/beta"],
        );
        let (merged, _) = read_changes_reusing(&beta, None, Some(&forged(&kept))).unwrap();
        assert!(merged.is_empty(), "dropped when the default branch moved");
        assert_eq!(merged.base, merged.head);
    }

    #[test]
    fn the_cache_hands_each_reading_the_previous_committed_part() {
        let repo = Repository::new();
        let beta = repo.add_worktree("feature/beta");
        fs::write(beta.join("one.rs"), "1\n").unwrap();
        git(&beta, &["add", "."]);
        git(&beta, &["commit", "--quiet", "-m", "one"]);
        let cache = ChangesCache::new(Duration::ZERO);
        let handed = Mutex::new(Vec::new());
        let read = |previous: Option<Arc<CommittedPart>>| {
            handed.lock().unwrap().push(previous.clone());
            read_changes_reusing(&beta, None, previous.map(|kept| forged(&kept)).as_ref())
                .map_err(|error| error.to_string())
        };
        let first = cache.changes_read_by(&beta, read).unwrap();
        assert_eq!(kinds(&first, "one.rs"), ["committed"]);
        let second = cache.changes_read_by(&beta, read).unwrap();
        assert_eq!(kinds(&second, "forged.rs"), ["committed"]);
        cache
            .changes_read_by(&beta, |_| Err("git went away".to_owned()))
            .unwrap_err();
        let after_failure = cache.changes_read_by(&beta, read).unwrap();
        assert_eq!(kinds(&after_failure, "one.rs"), ["committed"]);
        let handed = handed.into_inner().unwrap();
        assert!(handed[0].is_none() && handed[1].is_some() && handed[2].is_none());
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
        let changes = assemble(None, None, &committed, status);
        let paths: Vec<&str> = changes.paths.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, [".claude/agents.md", "src/lib.rs"]);
    }

    #[test]
    fn beyond_the_cap_paths_are_counted() {
        let status = (0..MAX_CHANGED_PATHS + 5)
            .map(|n| (format!("gen/{n:05}"), ChangeKind::Untracked))
            .collect();
        let changes = assemble(None, None, &[], status);
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
            Ok((Changes::default(), None))
        };
        std::thread::scope(|scope| {
            let first = scope.spawn(|| {
                cache.changes_read_by(root, |_| {
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
                        cache.changes_read_by(root, |_| {
                            reads.fetch_add(1, Ordering::SeqCst);
                            Ok((Changes::default(), None))
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
            .changes_read_by(root, |_| {
                reads.fetch_add(1, Ordering::SeqCst);
                Ok((Changes::default(), None))
            })
            .unwrap();
        assert_eq!(reads.load(Ordering::SeqCst), 2, "a later caller reads anew");
    }

    #[test]
    fn a_reading_that_panics_lets_the_next_caller_read() {
        let cache = ChangesCache::new(Duration::from_secs(3600));
        let root = Path::new("/a/worktree");
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cache.changes_read_by(root, |_| panic!("git went away"))
        }));
        assert!(panicked.is_err());
        assert!(
            cache
                .changes_read_by(root, |_| Ok((Changes::default(), None)))
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
