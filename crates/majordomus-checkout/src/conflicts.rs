//! Merge conflicts predicted before anyone merges: each worktree is taken as a commit that
//! includes its uncommitted work (a *snapshot*), and `git merge-tree` merges two snapshots
//! without touching anything.
//!
//! A snapshot is written with a private copy of the worktree's index (`GIT_INDEX_FILE`), so
//! hashing the worktree's work there changes neither the worktree's index nor its files nor
//! any ref; its objects, and those a merge writes, go to object directories of this
//! process's own ([`crate::scratch`]), so the repository's object store never grows with a
//! prediction. Untracked files over [`MAX_HASHED_UNTRACKED_BYTES`] are not hashed, and
//! named. The snapshot commit has a fixed author, committer and date, so one tree on one HEAD
//! is always the same commit id, and merges are cached by the pair of commits.
//!
//! `git merge-tree --write-tree` needs git 2.38 or later; [`GitVersion`] says which git runs.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use majordomus_domain::sync::LockExt;

use crate::changes::{ChangeKind, Changes, is_own_wiring};
use crate::git::{CheckoutError, git_command, git_failed};
use crate::scratch::{self, ObjectDir, ScratchArea};

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

/// Untracked files larger than this are not hashed into a snapshot, so they are left out of
/// the prediction (the answer names them). An untracked file that large is a build product, a
/// data set or an archive rather than work anyone merges by hand, and hashing it would copy it
/// whole, compressed, into an object directory on every change of its worktree.
pub const MAX_HASHED_UNTRACKED_BYTES: u64 = 1024 * 1024;

/// How many untracked files left out of one snapshot are named; the rest are counted.
pub const MAX_NOT_HASHED_NAMED: usize = 16;

/// A worktree taken as a commit: its HEAD when nothing is uncommitted, otherwise a snapshot
/// commit whose own objects live in a private object directory, kept while this value (or a
/// clone of it) is.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The commit that stands for the worktree.
    pub commit: String,
    /// Where the objects HEAD does not have are; `None` for HEAD itself.
    objects: Option<Arc<ObjectDir>>,
    /// Untracked files over [`MAX_HASHED_UNTRACKED_BYTES`] left out of it, at most
    /// [`MAX_NOT_HASHED_NAMED`], repository-relative.
    pub not_hashed: Vec<String>,
    /// How many more were left out beyond those named.
    pub more_not_hashed: usize,
}

impl Snapshot {
    /// A worktree with nothing uncommitted: its HEAD.
    fn head(head: &str) -> Snapshot {
        Snapshot {
            commit: head.to_owned(),
            objects: None,
            not_hashed: Vec::new(),
            more_not_hashed: 0,
        }
    }
}

/// Writes a commit holding the worktree at `root` as it is now, uncommitted and untracked
/// (not ignored) work included, on top of its HEAD (`head`, a commit). Everything is written
/// into a new object directory of `area`, through a copy of the worktree's index there, so
/// neither the worktree's index, files and refs nor the repository's object store change.
/// Untracked files over [`MAX_HASHED_UNTRACKED_BYTES`] are left out, and named.
pub fn snapshot(
    area: &Arc<ScratchArea>,
    root: &Path,
    head: &str,
) -> Result<Snapshot, CheckoutError> {
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CheckoutError::Io { path, source }
    };
    let objects = area.object_dir().map_err(io_error(area.path()))?;
    let index = area.fresh_path("index");
    /// Removes the index copy however the snapshot ends.
    struct Removed<'a>(&'a Path);
    impl Drop for Removed<'_> {
        fn drop(&mut self) {
            let _ = fs::remove_file(self.0);
        }
    }
    let _removed = Removed(&index);
    match fs::copy(git_path(root, "index")?, &index) {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io_error(&index)(error)),
    }
    let git = |args: &[&str]| {
        let mut command = git_command(root, args);
        command.env("GIT_INDEX_FILE", &index);
        area.direct(&mut command, &objects, &[]);
        command
    };
    run(root, &["add", "-u"], git(&["add", "-u"]), None)?;
    let listing = ["ls-files", "-z", "--others", "--exclude-standard"];
    let untracked = run(root, &listing, git(&listing), None)?;
    let mut hashed: Vec<u8> = Vec::new();
    let mut snapshot = Snapshot::head(head);
    // a name ending in `/` is a repository nested in the worktree: not the worktree's content
    let paths = untracked.split(|&b| b == 0);
    for path in paths.filter(|p| !p.is_empty() && !p.ends_with(b"/")) {
        let size = fs::symlink_metadata(root.join(crate::files::os_str_from_git(path)))
            .ok()
            .filter(|metadata| metadata.is_file())
            .map_or(0, |metadata| metadata.len());
        if size <= MAX_HASHED_UNTRACKED_BYTES {
            hashed.extend_from_slice(path);
            hashed.push(0);
        } else if snapshot.not_hashed.len() < MAX_NOT_HASHED_NAMED {
            let name = String::from_utf8_lossy(path).into_owned();
            snapshot.not_hashed.push(name);
        } else {
            snapshot.more_not_hashed += 1;
        }
    }
    if !hashed.is_empty() {
        // each path given as it is: no pathspec is matched against every file
        let adding = ["update-index", "--add", "--remove", "-z", "--stdin"];
        run(root, &adding, git(&adding), Some(hashed))?;
    }
    let tree = text(run(root, &["write-tree"], git(&["write-tree"]), None)?);
    let args = [
        "commit-tree",
        tree.as_str(),
        "-p",
        head,
        "-m",
        "majordomus snapshot",
    ];
    let mut command = git(&args);
    command
        .env("GIT_AUTHOR_NAME", "majordomus")
        .env("GIT_AUTHOR_EMAIL", "majordomus@localhost")
        .env("GIT_AUTHOR_DATE", "@0 +0000")
        .env("GIT_COMMITTER_NAME", "majordomus")
        .env("GIT_COMMITTER_EMAIL", "majordomus@localhost")
        .env("GIT_COMMITTER_DATE", "@0 +0000");
    snapshot.commit = text(run(root, &args, command, None)?);
    snapshot.objects = Some(Arc::new(objects));
    Ok(snapshot)
}

/// Runs `command` (git `args` in `dir`) to its end, with `input` on its stdin, and returns
/// its stdout; a refusal is git's own words.
fn run(
    dir: &Path,
    args: &[&str],
    mut command: Command,
    input: Option<Vec<u8>>,
) -> Result<Vec<u8>, CheckoutError> {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    if input.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = command.spawn().map_err(CheckoutError::GitUnavailable)?;
    // written from another thread, so that git's output never fills while it is fed
    let writer = input.zip(child.stdin.take()).map(|(input, mut stdin)| {
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })
    });
    let output = child
        .wait_with_output()
        .map_err(CheckoutError::GitUnavailable)?;
    if let Some(writer) = writer {
        let _ = writer.join();
    }
    if !output.status.success() {
        return Err(git_failed(dir, args, &output));
    }
    Ok(output.stdout)
}

fn text(stdout: Vec<u8>) -> String {
    String::from_utf8_lossy(&stdout).trim().to_owned()
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

/// The paths that conflict when the snapshots `ours` and `theirs` are merged, in git's
/// order: empty when they merge cleanly. The merge's result is written into an object
/// directory of `area` that is gone when this returns.
pub fn merge_conflicts(
    area: &Arc<ScratchArea>,
    dir: &Path,
    ours: &Snapshot,
    theirs: &Snapshot,
) -> Result<(Vec<String>, Vec<ConflictHunk>), CheckoutError> {
    let args = [
        "merge-tree",
        "--write-tree",
        "-z",
        "--name-only",
        "--no-messages",
        ours.commit.as_str(),
        theirs.commit.as_str(),
    ];
    let written = area.object_dir().map_err(|source| CheckoutError::Io {
        path: area.path().to_path_buf(),
        source,
    })?;
    let reads: Vec<&ObjectDir> = [ours, theirs]
        .iter()
        .filter_map(|snapshot| snapshot.objects.as_deref())
        .collect();
    let mut command = git_command(dir, &args);
    area.direct(&mut command, &written, &reads);
    let output = command.output().map_err(CheckoutError::GitUnavailable)?;
    match output.status.code() {
        Some(0) => Ok((Vec::new(), Vec::new())),
        Some(1) => {
            // the merged tree's id, then each conflicting path once per conflicting stage
            let mut fields = output.stdout.split(|&b| b == 0);
            let tree = String::from_utf8_lossy(fields.next().unwrap_or_default()).into_owned();
            let mut paths: Vec<String> = Vec::new();
            for field in fields.filter(|f| !f.is_empty()) {
                let path = String::from_utf8_lossy(field).into_owned();
                if is_own_wiring(&path) {
                    continue;
                }
                if paths.last() != Some(&path) && !paths.contains(&path) {
                    paths.push(path);
                }
            }
            let hunks = paths
                .iter()
                .take(HUNK_FILES)
                .filter_map(|path| {
                    let merged = merged_file(area, &written, &reads, dir, &tree, path)?;
                    first_hunk(path, &merged)
                })
                .collect();
            Ok((paths, hunks))
        }
        _ => Err(git_failed(dir, &args, &output)),
    }
}

/// How many conflicting files of one pair of worktrees keep a hunk.
pub const HUNK_FILES: usize = 8;

/// Bytes of one side of a kept hunk, at most.
pub const HUNK_BYTES: usize = 1_000;

/// Lines of one side of a kept hunk, at most.
pub const HUNK_LINES: usize = 20;

/// The largest merged file read for its hunk.
const MERGED_FILE_BYTES: u64 = 1024 * 1024;

/// The first conflicting hunk of one file, each side's lines as the merge left them between
/// its markers, cut to [`HUNK_LINES`] lines and [`HUNK_BYTES`] bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictHunk {
    /// The file, repository-relative.
    pub path: String,
    /// The lines of the snapshot merged first (`ours`).
    pub ours: String,
    /// The lines of the snapshot merged second (`theirs`).
    pub theirs: String,
}

/// The merged file `path` of `tree`, with its conflict markers, when it is a blob of at most
/// [`MERGED_FILE_BYTES`]; `None` when it cannot be read.
fn merged_file(
    area: &Arc<ScratchArea>,
    written: &ObjectDir,
    reads: &[&ObjectDir],
    dir: &Path,
    tree: &str,
    path: &str,
) -> Option<String> {
    let object = format!("{tree}:{path}");
    let run = |args: &[&str]| -> Option<Vec<u8>> {
        let mut command = git_command(dir, args);
        area.direct(&mut command, written, reads);
        let output = command.output().ok()?;
        output.status.success().then_some(output.stdout)
    };
    let size: u64 = String::from_utf8_lossy(&run(&["cat-file", "-s", &object])?)
        .trim()
        .parse()
        .ok()?;
    if size > MERGED_FILE_BYTES {
        return None;
    }
    Some(String::from_utf8_lossy(&run(&["cat-file", "blob", &object])?).into_owned())
}

/// The first region between `<<<<<<<`, `=======` and `>>>>>>>` in `merged`, each side
/// bounded; `None` when there is none (a conflict of modes or of a deleted file).
pub fn first_hunk(path: &str, merged: &str) -> Option<ConflictHunk> {
    let mut ours: Vec<&str> = Vec::new();
    let mut theirs: Vec<&str> = Vec::new();
    let mut side = 0;
    for line in merged.lines() {
        match side {
            0 if line.starts_with("<<<<<<<") => side = 1,
            1 if line.starts_with("|||||||") => side = 3,
            1 | 3 if line.starts_with("=======") => side = 2,
            2 if line.starts_with(">>>>>>>") => {
                return Some(ConflictHunk {
                    path: path.to_owned(),
                    ours: bounded_side(&ours),
                    theirs: bounded_side(&theirs),
                });
            }
            1 => ours.push(line),
            2 => theirs.push(line),
            _ => {}
        }
    }
    None
}

/// The lines joined, at most [`HUNK_LINES`] of them and [`HUNK_BYTES`] bytes, cut at a
/// character boundary, with a last line saying so when cut.
fn bounded_side(lines: &[&str]) -> String {
    let mut text = String::new();
    for line in lines.iter().take(HUNK_LINES) {
        if text.len() + line.len() + 1 > HUNK_BYTES {
            let mut end = HUNK_BYTES.saturating_sub(text.len());
            while !line.is_char_boundary(end.min(line.len())) {
                end -= 1;
            }
            text.push_str(&line[..end.min(line.len())]);
            text.push('\n');
            text.push_str("[cut]");
            return text;
        }
        text.push_str(line);
        text.push('\n');
    }
    if lines.len() > HUNK_LINES {
        text.push_str(&format!("[{} more lines]", lines.len() - HUNK_LINES));
    }
    text.trim_end_matches('\n').to_owned()
}

/// What predicting one pair of worktrees found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairConflicts {
    /// Conflicting paths, at most [`MAX_CONFLICT_PATHS`].
    pub paths: Vec<String>,
    /// Conflicting paths beyond the cap.
    pub omitted: usize,
    /// The first conflicting hunk of each of the first [`HUNK_FILES`] paths that has one,
    /// `ours` being the snapshot asked for as `ours`.
    pub hunks: Vec<ConflictHunk>,
}

/// Snapshots and merge results kept between predictions, so a prediction over unchanged
/// worktrees costs a few `stat` calls per changed path. The snapshots' objects live in this
/// process's scratch area of the repository (see [`crate::scratch`]), each for as long as
/// its snapshot is kept or in use; merge results leave nothing behind.
#[derive(Debug)]
pub struct ConflictPredictor {
    /// The repository's common git dir; `None` outside git, where nothing is predicted.
    common_dir: Option<PathBuf>,
    /// This predictor's scratch area, opened at its first snapshot or merge.
    area: Mutex<Option<Arc<ScratchArea>>>,
    snapshots: Mutex<HashMap<PathBuf, (Fingerprint, Snapshot)>>,
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
            inode: crate::files::identity(&m).1,
            size: m.len(),
            mtime: crate::files::modified(&m),
        })
    }
}

impl Fingerprint {
    fn of(root: &Path, head: &str, changes: &Changes) -> Fingerprint {
        let index = git_index_stamp(root);
        let files = uncommitted_paths(changes)
            .map(|path| (path.to_owned(), Stamp::of(&root.join(path))))
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

/// How many uncommitted paths [`ConflictPredictor::kept_snapshot`] checks on the caller's
/// thread: a few dozen `stat` calls take microseconds, a worktree's thousands would not.
pub const KEPT_CHECK_PATHS: usize = 32;

/// The commit a worktree's changes were read on; a worktree without one has nothing to
/// snapshot.
fn head_of<'a>(root: &Path, changes: &'a Changes) -> Result<&'a str, CheckoutError> {
    changes.head.as_deref().ok_or_else(|| CheckoutError::Git {
        command: "rev-parse HEAD".into(),
        dir: root.to_path_buf(),
        stderr: "the worktree has no commit yet".into(),
    })
}

/// The changed paths with work not committed: what a snapshot's fingerprint stats.
fn uncommitted_paths(changes: &Changes) -> impl Iterator<Item = &str> {
    changes
        .paths
        .iter()
        .filter(|p| p.kinds.iter().any(|k| *k != ChangeKind::Committed))
        .map(|p| p.path.as_str())
}

/// A pair of snapshots in the order their merge is kept under: a merge of `a` and `b` is
/// the merge of `b` and `a`, with the sides swapped.
fn in_key_order<'a>(ours: &'a Snapshot, theirs: &'a Snapshot) -> (&'a Snapshot, &'a Snapshot) {
    if ours.commit <= theirs.commit {
        (ours, theirs)
    } else {
        (theirs, ours)
    }
}

/// A kept merge's conflicts with `ours` and `theirs` as they were asked for.
fn as_asked(mut found: PairConflicts, ours: &Snapshot, theirs: &Snapshot) -> PairConflicts {
    if ours.commit > theirs.commit {
        for hunk in &mut found.hunks {
            std::mem::swap(&mut hunk.ours, &mut hunk.theirs);
        }
    }
    found
}

impl ConflictPredictor {
    /// A predictor for the repository whose common git dir is `common_dir`.
    pub fn new(common_dir: Option<PathBuf>) -> ConflictPredictor {
        ConflictPredictor {
            common_dir,
            area: Mutex::new(None),
            snapshots: Mutex::new(HashMap::new()),
            merges: Mutex::new(HashMap::new()),
        }
    }

    /// Removes the scratch areas that processes which no longer run left in the repository
    /// (what a server does as it starts).
    pub fn sweep_stale(&self) {
        if let Some(common_dir) = &self.common_dir {
            scratch::sweep_stale(common_dir);
        }
    }

    /// This predictor's scratch area, opened when first needed.
    fn area(&self) -> Result<Arc<ScratchArea>, CheckoutError> {
        let Some(common_dir) = &self.common_dir else {
            return Err(CheckoutError::Git {
                command: "rev-parse --git-common-dir".into(),
                dir: PathBuf::from("."),
                stderr: "not in a git repository".into(),
            });
        };
        let mut area = self.area.lock_or_recover();
        if let Some(open) = area.as_ref() {
            return Ok(open.clone());
        }
        let open = ScratchArea::open(common_dir).map_err(|source| CheckoutError::Io {
            path: common_dir.clone(),
            source,
        })?;
        *area = Some(open.clone());
        Ok(open)
    }

    /// The snapshot of the worktree at `root` whose changes are `changes`: the kept one when
    /// nothing it depends on moved, a new one otherwise. A worktree with no uncommitted work
    /// is its HEAD.
    pub fn snapshot(&self, root: &Path, changes: &Changes) -> Result<Snapshot, CheckoutError> {
        let head = head_of(root, changes)?;
        if !changes.has_uncommitted() {
            return Ok(Snapshot::head(head));
        }
        let fingerprint = Fingerprint::of(root, head, changes);
        if let Some(kept) = self.kept_with(root, &fingerprint) {
            return Ok(kept);
        }
        let made = snapshot(&self.area()?, root, head)?;
        // the snapshot replaced goes once no prediction still merges with it
        let replaced = self
            .snapshots
            .lock_or_recover()
            .insert(root.to_path_buf(), (fingerprint, made.clone()));
        drop(replaced);
        Ok(made)
    }

    /// What [`ConflictPredictor::snapshot`] would answer, when that takes no git: the HEAD
    /// of a worktree without uncommitted work, or the kept snapshot whose fingerprint still
    /// holds. Checking a fingerprint costs a `stat` per uncommitted path, so a worktree with
    /// more than [`KEPT_CHECK_PATHS`] of them is left to [`ConflictPredictor::snapshot`]
    /// and its blocking thread. `None` when git would have to run.
    pub fn kept_snapshot(
        &self,
        root: &Path,
        changes: &Changes,
    ) -> Option<Result<Snapshot, CheckoutError>> {
        let head = match head_of(root, changes) {
            Ok(head) => head,
            Err(error) => return Some(Err(error)),
        };
        if !changes.has_uncommitted() {
            return Some(Ok(Snapshot::head(head)));
        }
        if uncommitted_paths(changes).nth(KEPT_CHECK_PATHS).is_some() {
            return None;
        }
        self.kept_with(root, &Fingerprint::of(root, head, changes))
            .map(Ok)
    }

    /// The snapshot kept for `root`, if it was made of what `fingerprint` says.
    fn kept_with(&self, root: &Path, fingerprint: &Fingerprint) -> Option<Snapshot> {
        match self.snapshots.lock_or_recover().get(root) {
            Some((kept, snapshot)) if kept == fingerprint => Some(snapshot.clone()),
            _ => None,
        }
    }

    /// The conflicts of merging the snapshots `ours` and `theirs`, from the cache when this
    /// pair of commits was merged before.
    pub fn conflicts(
        &self,
        dir: &Path,
        ours: &Snapshot,
        theirs: &Snapshot,
    ) -> Result<PairConflicts, CheckoutError> {
        if let Some(found) = self.kept_conflicts(ours, theirs) {
            return Ok(found);
        }
        let (first, second) = in_key_order(ours, theirs);
        let (mut paths, hunks) = merge_conflicts(&self.area()?, dir, first, second)?;
        let omitted = paths.len().saturating_sub(MAX_CONFLICT_PATHS);
        paths.truncate(MAX_CONFLICT_PATHS);
        let found = PairConflicts {
            paths,
            omitted,
            hunks,
        };
        let mut merges = self.merges.lock_or_recover();
        if merges.len() >= MERGES_KEPT {
            merges.clear();
        }
        merges.insert((first.commit.clone(), second.commit.clone()), found.clone());
        Ok(as_asked(found, ours, theirs))
    }

    /// The conflicts of merging `ours` and `theirs` when this pair of commits was merged
    /// before; `None` when git would have to merge them.
    pub fn kept_conflicts(&self, ours: &Snapshot, theirs: &Snapshot) -> Option<PairConflicts> {
        let (first, second) = in_key_order(ours, theirs);
        let merges = self.merges.lock_or_recover();
        let found = merges.get(&(first.commit.clone(), second.commit.clone()))?;
        Some(as_asked(found.clone(), ours, theirs))
    }

    /// Forgets the snapshots of worktrees not in `roots`, and with them their objects.
    pub fn retain(&self, roots: &[PathBuf]) {
        let roots: HashSet<&PathBuf> = roots.iter().collect();
        let forgotten: Vec<(Fingerprint, Snapshot)> = {
            let mut snapshots = self.snapshots.lock_or_recover();
            let gone: Vec<PathBuf> = snapshots
                .keys()
                .filter(|root| !roots.contains(root))
                .cloned()
                .collect();
            gone.iter()
                .filter_map(|root| snapshots.remove(root))
                .collect()
        };
        // their directories are removed here, outside the lock
        drop(forgotten);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hunk_keeps_each_side_of_the_first_conflict_bounded() {
        let merged = "keep\n<<<<<<< aaa\nours\n=======\ntheirs 1\ntheirs 2\n>>>>>>> bbb\n\
            <<<<<<< aaa\nsecond\n=======\nsecond\n>>>>>>> bbb\n";
        let hunk = first_hunk("src/lib.rs", merged).unwrap();
        assert_eq!(
            (hunk.ours.as_str(), hunk.theirs.as_str()),
            ("ours", "theirs 1\ntheirs 2")
        );
        let long: String = (0..100)
            .map(|n| format!("line {n} {}\n", "x".repeat(80)))
            .collect();
        let merged = format!("<<<<<<< a\n=======\n{long}>>>>>>> b\n");
        let hunk = first_hunk("f", &merged).unwrap();
        assert!(
            hunk.theirs.len() <= HUNK_BYTES + 10,
            "{}",
            hunk.theirs.len()
        );
        assert!(hunk.theirs.ends_with("[cut]"));
        assert_eq!(first_hunk("f", "no conflict here\n"), None);
    }
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
        let huge = fs::File::create(gamma.join("huge.bin")).unwrap();
        huge.set_len(MAX_HASHED_UNTRACKED_BYTES + 1).unwrap();

        let before: Vec<String> = [&alpha, &beta, &gamma]
            .iter()
            .map(|w| git(w, &["status", "--porcelain"]))
            .collect();
        let refs_before = git(&root, &["for-each-ref"]);
        let objects_before = git(&root, &["count-objects", "-v"]);

        let common = root.join(".git");
        let predictor = ConflictPredictor::new(Some(common.clone()));
        let snap = |root: &Path| {
            let changes = read_changes(root, Some("main")).unwrap();
            predictor.snapshot(root, &changes).unwrap()
        };
        let (a, b, c) = (snap(&alpha), snap(&beta), snap(&gamma));
        assert_eq!(
            a.commit,
            git(&alpha, &["rev-parse", "HEAD"]).trim(),
            "committed work is HEAD"
        );
        assert_eq!(
            snap(&beta).commit,
            b.commit,
            "an unchanged worktree keeps its snapshot"
        );
        assert_eq!(c.not_hashed, ["huge.bin"], "too large to hash: named");
        assert!(b.not_hashed.is_empty());

        let ab = predictor.conflicts(&root, &a, &b).unwrap();
        assert_eq!(ab.paths, ["src/parser.rs"]);
        assert_eq!(
            (ab.hunks[0].ours.as_str(), ab.hunks[0].theirs.as_str()),
            ("alpha's line", "beta's line"),
            "each side's lines of the conflict are kept"
        );
        assert!(predictor.conflicts(&root, &a, &c).unwrap().paths.is_empty());
        let ba = predictor.conflicts(&root, &b, &a).unwrap();
        assert_eq!(ba.paths, ab.paths, "cached either way round");
        assert_eq!(
            (ba.hunks[0].ours.as_str(), ba.hunks[0].theirs.as_str()),
            ("beta's line", "alpha's line"),
            "the sides as asked"
        );

        let after: Vec<String> = [&alpha, &beta, &gamma]
            .iter()
            .map(|w| git(w, &["status", "--porcelain"]))
            .collect();
        assert_eq!(before, after);
        assert_eq!(refs_before, git(&root, &["for-each-ref"]));
        assert_eq!(
            objects_before,
            git(&root, &["count-objects", "-v"]),
            "the repository's object store did not grow"
        );
        // the snapshot is readable through its own objects, and holds the small untracked
        // file but not the huge one
        let objects = c.objects.as_ref().unwrap().path().display().to_string();
        let tree = Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(["ls-tree", "-r", "--name-only", &c.commit])
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &objects)
            .output()
            .unwrap();
        let tree = String::from_utf8_lossy(&tree.stdout);
        assert!(
            tree.contains("new.rs") && !tree.contains("huge.bin"),
            "{tree}"
        );

        // beta's edit moves to another line: a new snapshot, and no conflict
        edit(&beta, "src/parser.rs", 3, "line 3");
        edit(&beta, "src/parser.rs", 20, "beta's other line");
        let moved = snap(&beta);
        assert_ne!(moved.commit, b.commit);
        let replaced = b.objects.as_ref().unwrap().path().to_path_buf();
        drop(b);
        assert!(
            !replaced.exists(),
            "a replaced snapshot's objects go with it"
        );
        assert!(
            predictor
                .conflicts(&root, &a, &moved)
                .unwrap()
                .paths
                .is_empty()
        );
        assert!(GitVersion::of_git(&root).unwrap().can_merge_tree());
        let area = predictor.area().unwrap().path().to_path_buf();
        drop((a, c, moved, ab, predictor));
        assert!(!area.exists(), "the scratch area goes with the predictor");
        assert_eq!(objects_before, git(&root, &["count-objects", "-v"]));
    }

    #[test]
    fn what_is_kept_answers_without_git_and_nothing_else_does() {
        let repo = Repository::new();
        let root = repo.root();
        fs::write(root.join("src/parser.rs"), lines(10)).unwrap();
        git(&root, &["add", "."]);
        git(&root, &["commit", "--quiet", "-m", "parser"]);
        let clean = repo.add_worktree("clean");
        let alpha = repo.add_worktree("alpha");
        let beta = repo.add_worktree("beta");
        edit(&alpha, "src/parser.rs", 3, "alpha's line");
        edit(&beta, "src/parser.rs", 3, "beta's line");
        let predictor = ConflictPredictor::new(Some(root.join(".git")));
        let changes_of = |root: &Path| read_changes(root, Some("main")).unwrap();
        let kept = |root: &Path| {
            predictor
                .kept_snapshot(root, &changes_of(root))
                .map(|found| found.unwrap().commit)
        };

        assert_eq!(
            kept(&clean),
            Some(git(&clean, &["rev-parse", "HEAD"]).trim().to_owned()),
            "a worktree without uncommitted work is its HEAD, kept or not"
        );
        assert_eq!(kept(&alpha), None, "nothing made yet: git has to run");
        let a = predictor.snapshot(&alpha, &changes_of(&alpha)).unwrap();
        let b = predictor.snapshot(&beta, &changes_of(&beta)).unwrap();
        assert_eq!(kept(&alpha), Some(a.commit.clone()));

        assert!(predictor.kept_conflicts(&a, &b).is_none(), "not merged yet");
        let ab = predictor.conflicts(&root, &a, &b).unwrap();
        let kept_ab = predictor.kept_conflicts(&a, &b).unwrap();
        let kept_ba = predictor.kept_conflicts(&b, &a).unwrap();
        assert_eq!((&kept_ab.paths, &kept_ba.paths), (&ab.paths, &ab.paths));
        assert_eq!(
            (
                kept_ba.hunks[0].ours.as_str(),
                kept_ba.hunks[0].theirs.as_str()
            ),
            ("beta's line", "alpha's line"),
            "the sides as asked"
        );

        edit(
            &alpha,
            "src/parser.rs",
            5,
            "alpha's second line, a byte longer",
        );
        assert_eq!(kept(&alpha), None, "a file written since: git has to run");

        for n in 0..=KEPT_CHECK_PATHS {
            fs::write(beta.join(format!("new-{n}.rs")), "new\n").unwrap();
        }
        let many = changes_of(&beta);
        predictor.snapshot(&beta, &many).unwrap();
        assert!(
            predictor.kept_snapshot(&beta, &many).is_none(),
            "more uncommitted paths than are checked on the caller's thread"
        );
    }
}
