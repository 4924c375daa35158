//! The checkout a directory belongs to, and the worktrees of its repository, as git sees them.
//!
//! Git is spawned once to find a checkout and once to list the repository's worktrees; each
//! listed worktree is turned into a [`Checkout`] from the files git keeps, because a gather
//! covers every worktree (a hundred is not unusual) and a spawn per worktree would dominate it.

use std::cell::RefCell;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::notice::{ChangeNotice, Noticed, Targets, add_directory, add_file};
use crate::shared_file::{SHARED_FILES, shared_path};
use majordomus_domain::ids::identity_digest;
use majordomus_domain::sync::LockExt;

/// Environment variables through which a caller (a git hook, a shell that exported `GIT_DIR`)
/// would point git at some other repository than the one the directory is in.
const LOCATING_VARIABLES: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

/// What the reftable backend leaves in `HEAD` for old readers; the real branch is elsewhere.
const REFTABLE_HEAD_STUB: &str = "refs/heads/.invalid";

/// Why a checkout or its worktrees could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    /// A directory git was asked about does not exist or cannot be resolved.
    #[error("cannot resolve {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The `git` executable could not be started at all.
    #[error("cannot run git ({0}): majordomus needs git on PATH")]
    GitUnavailable(#[source] io::Error),
    /// Git ran and refused; `stderr` is its own explanation.
    #[error("`git {command}` in {dir} failed: {stderr}")]
    Git {
        command: String,
        dir: PathBuf,
        stderr: String,
    },
}

/// One working tree: the primary one, a linked worktree, or a directory outside git.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    /// The canonical root of the working tree (the directory itself outside git).
    pub root: PathBuf,
    /// This checkout's own git dir: `.git` for the primary, `.git/worktrees/<name>` for a
    /// linked one; `None` outside git. Its lease lives here, out of the working tree.
    pub git_dir: Option<PathBuf>,
    /// The canonical git dir every checkout of the repository shares; `None` outside git.
    pub common_dir: Option<PathBuf>,
    /// The checked-out branch, short name; `None` when detached or outside git.
    pub branch: Option<String>,
    /// Whether this is the repository's primary working tree (true outside git: it has no
    /// siblings to defer to).
    pub primary: bool,
    /// `identity_digest` of the root: stable across restarts, reveals no path.
    pub id: String,
    /// `identity_digest` of the common dir: the same for every checkout of the repository.
    pub git_id: Option<String>,
}

/// One entry of `git worktree list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// The worktree's root as git registered it.
    pub path: PathBuf,
    /// The commit checked out; `None` for an unborn branch.
    pub head: Option<String>,
    /// The branch checked out, short name (without `refs/heads/`).
    pub branch: Option<String>,
    /// Whether git lists it first: the repository's primary working tree.
    pub primary: bool,
    /// Whether HEAD is detached.
    pub detached: bool,
    /// Whether git considers it prunable (its directory is gone).
    pub prunable: bool,
}

impl Checkout {
    /// The checkout containing `dir`. A directory outside any git repository is a checkout
    /// of its own, with no git dirs and no siblings.
    pub fn discover(dir: &Path) -> Result<Checkout, CheckoutError> {
        let dir = canonical(dir)?;
        let command = [
            "rev-parse",
            "--show-toplevel",
            "--absolute-git-dir",
            "--git-common-dir",
        ];
        let output = run_git(&dir, &command)?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            // LC_ALL=C keeps this message in English whatever the user's locale.
            if stderr.contains("not a git repository") {
                return Ok(Checkout::outside_git(dir));
            }
            return Err(git_failed(&dir, &command, &output));
        }
        let mut lines = output
            .stdout
            .split(|&byte| byte == b'\n')
            .map(crate::files::path_from_git);
        let (Some(toplevel), Some(git_dir), Some(common_dir)) =
            (lines.next(), lines.next(), lines.next())
        else {
            return Err(CheckoutError::Git {
                command: command.join(" "),
                dir,
                stderr: "printed fewer than three paths".into(),
            });
        };
        let root = canonical(&toplevel)?;
        let git_dir = canonical(&git_dir)?;
        // --git-common-dir may answer relative to the directory git ran in.
        let common_dir = canonical(&dir.join(common_dir))?;
        let branch = head_branch(&git_dir, &root)?;
        Ok(Checkout {
            id: path_digest(&root),
            git_id: Some(path_digest(&common_dir)),
            primary: git_dir == common_dir,
            root,
            git_dir: Some(git_dir),
            common_dir: Some(common_dir),
            branch,
        })
    }

    /// The branch checked out now, read again from `HEAD`: the one `discover` found goes stale
    /// when someone switches branches in a checkout whose server runs on.
    pub fn current_branch(&self) -> Option<String> {
        let git_dir = self.git_dir.as_deref()?;
        head_branch(git_dir, &self.root).ok().flatten()
    }

    /// The id of the repository's root commit, the oldest by commit time (then by id) when
    /// history has several: what every clone of the repository agrees on without being told.
    /// `None` outside git and before the first commit.
    pub fn root_commit(&self) -> Result<Option<String>, CheckoutError> {
        if self.git_dir.is_none() {
            return Ok(None);
        }
        let has_head = ["rev-parse", "--verify", "--quiet", "HEAD"];
        if !run_git(&self.root, &has_head)?.status.success() {
            return Ok(None);
        }
        let roots = ["log", "--max-parents=0", "--format=%ct %H", "HEAD"];
        let output = run_git(&self.root, &roots)?;
        if !output.status.success() {
            return Err(git_failed(&self.root, &roots, &output));
        }
        let listed = String::from_utf8_lossy(&output.stdout);
        Ok(listed
            .lines()
            .filter_map(|line| {
                let (time, id) = line.split_once(' ')?;
                Some((time.parse::<i64>().ok()?, id.to_owned()))
            })
            .min()
            .map(|(_, id)| id))
    }

    fn outside_git(root: PathBuf) -> Checkout {
        Checkout {
            id: path_digest(&root),
            root,
            git_dir: None,
            common_dir: None,
            branch: None,
            primary: true,
            git_id: None,
        }
    }
}

impl Worktree {
    /// This worktree as a [`Checkout`] of `repository` (any checkout of the same repository),
    /// read from the files git keeps instead of spawning git for it.
    ///
    /// A linked worktree's git dir is named by the `gitdir:` line of its `.git` file; the
    /// primary's is the common dir. A worktree whose directory is gone keeps its listed path
    /// and has no git dir, so its lease reads as absent.
    pub fn checkout(&self, repository: &Checkout) -> Checkout {
        let root = self
            .path
            .canonicalize()
            .unwrap_or_else(|_| self.path.clone());
        let git_dir = if self.primary {
            repository.common_dir.clone()
        } else {
            linked_git_dir(&root)
        };
        Checkout {
            id: path_digest(&root),
            root,
            git_dir,
            common_dir: repository.common_dir.clone(),
            branch: self.branch.clone(),
            primary: self.primary,
            git_id: repository.git_id.clone(),
        }
    }
}

/// The working trees of `checkout`'s repository in git's order, the primary first; bare
/// entries are skipped. Outside git the checkout is its own only worktree, so the answer
/// always includes the checkout asked about.
pub fn list_worktrees(checkout: &Checkout) -> Result<Vec<Worktree>, CheckoutError> {
    if checkout.git_dir.is_none() {
        return Ok(vec![Worktree {
            path: checkout.root.clone(),
            head: None,
            branch: None,
            primary: true,
            detached: false,
            prunable: false,
        }]);
    }
    let command = ["worktree", "list", "--porcelain", "-z"];
    let output = run_git(&checkout.root, &command)?;
    if !output.status.success() {
        return Err(git_failed(&checkout.root, &command, &output));
    }
    Ok(parse_worktree_list(&output.stdout))
}

/// The repository's worktrees as [`list_worktrees`] gives them, asked of git again only when
/// git's registry of them has changed on disk. A gather lists the worktrees on every call, and
/// spawning git is most of what a small gather costs; each worktree's [`Checkout`] is kept
/// with them, since making it resolves paths (a `readlink` per path component).
#[derive(Debug, Default)]
pub struct WorktreeList {
    cached: Mutex<Option<Kept>>,
    registry: Mutex<RegistryMemo>,
    /// The kernel's notice of changes to the registry's files, set up once a kept listing
    /// was found unchanged: from then on an unchanged registry costs one `read`, not a
    /// `stat` of each file.
    notice: ChangeNotice,
}

/// The listing in the cache, and the notice's generation when its registry was last found
/// unchanged by `stat`.
#[derive(Debug)]
struct Kept {
    listed: Arc<Listed>,
    verified: Option<u64>,
}

/// One listing, kept with the registry's stamp it was made at.
#[derive(Debug)]
struct Listed {
    stamp: RegistryStamp,
    worktrees: Vec<Worktree>,
    checkouts: Vec<Checkout>,
}

impl WorktreeList {
    /// The worktrees of `checkout`'s repository, from the cache while the registry is
    /// unchanged.
    pub fn list(&self, checkout: &Checkout) -> Result<Vec<Worktree>, CheckoutError> {
        Ok(self.listed(checkout)?.worktrees.clone())
    }

    /// The worktrees of `repository` (any checkout of it) as checkouts, in git's order, from
    /// the cache while the registry is unchanged.
    pub fn checkouts(&self, repository: &Checkout) -> Result<Vec<Checkout>, CheckoutError> {
        Ok(self.listed(repository)?.checkouts.clone())
    }

    /// The cached checkouts while the registry is unchanged, without spawning git: `None`
    /// when git has to be asked ([`WorktreeList::checkouts`]). Files `stamps` already holds
    /// are not asked of the file system again.
    ///
    /// While the registry's files have not changed since the kept listing was last found
    /// current, as the [`ChangeNotice`] in `stamps` says, nothing is asked of the file
    /// system at all; the notice itself is set up here, after the first such finding.
    /// Without `may_stat`, only the notice is asked: a registry too large to stat inline.
    pub fn kept_checkouts(
        &self,
        repository: &Checkout,
        stamps: &Stamps,
        may_stat: bool,
    ) -> Option<Vec<Checkout>> {
        let common = repository.common_dir.as_deref()?;
        let noticed = stamps.noticed.as_ref().map(|noticed| noticed.generation);
        let kept = {
            let cached = self.cached.lock_or_recover();
            let kept = cached.as_ref()?;
            if noticed.is_some() && kept.verified == noticed {
                return Some(kept.listed.checkouts.clone());
            }
            kept.listed.clone()
        };
        if !may_stat {
            return None;
        }
        let stamp = registry_stamp(common, &self.registry, stamps)?;
        if stamp != kept.stamp {
            return None;
        }
        self.notice
            .watch(|| registry_targets(repository, common, &self.registry.lock_or_recover()));
        if let Some(current) = self.cached.lock_or_recover().as_mut()
            && Arc::ptr_eq(&current.listed, &kept)
        {
            current.verified = noticed;
        }
        Some(kept.checkouts.clone())
    }

    /// Where the registry's notice stands now: besides the registry, it covers every other
    /// worktree's lease ([`lease_in`]) and the shared files.
    pub fn noticed(&self) -> Option<Noticed> {
        self.notice.now()
    }

    /// Lists the worktrees of `repository` and starts the registry's notice now, rather than
    /// after the first repository-wide call: a serving process that is only ever asked
    /// about its own checkout then trusts its branch from the notice too
    /// ([`BranchWatch::current`]), instead of stamping `HEAD` on every call. Each reader
    /// still checks its files itself once at the notice's generation before trusting it.
    pub fn watch_registry(&self, repository: &Checkout) -> Result<(), CheckoutError> {
        self.listed(repository)?;
        if let Some(common) = repository.common_dir.as_deref() {
            self.notice
                .watch(|| registry_targets(repository, common, &self.registry.lock_or_recover()));
        }
        Ok(())
    }

    /// The stamps of one call, with where the registry's notice stands at its start (see
    /// [`Stamps`]).
    pub fn stamps(&self) -> Stamps {
        Stamps {
            taken: RefCell::default(),
            noticed: self.notice.now(),
        }
    }

    /// How many worktrees the cache holds, if it holds a list: what checking the registry
    /// costs is about four `stat`s and a small read per worktree.
    pub fn cached_count(&self) -> Option<usize> {
        self.cached
            .lock_or_recover()
            .as_ref()
            .map(|kept| kept.listed.worktrees.len())
    }

    fn listed(&self, checkout: &Checkout) -> Result<Arc<Listed>, CheckoutError> {
        let stamp = checkout
            .common_dir
            .as_deref()
            .and_then(|common| registry_stamp(common, &self.registry, &Stamps::default()));
        let mut cached = self.cached.lock_or_recover();
        if let (Some(stamp), Some(kept)) = (&stamp, cached.as_ref())
            && *stamp == kept.listed.stamp
        {
            return Ok(kept.listed.clone());
        }
        let worktrees = list_worktrees(checkout)?;
        let checkouts = worktrees
            .iter()
            .map(|worktree| worktree.checkout(checkout))
            .collect();
        let listed = Arc::new(Listed {
            stamp: stamp.clone().unwrap_or_default(),
            worktrees,
            checkouts,
        });
        *cached = stamp.map(|_| Kept {
            listed: listed.clone(),
            verified: None,
        });
        Ok(listed)
    }
}

/// The branch a checkout has checked out, read again only when what names it changed on
/// disk: `HEAD`, and under reftable (where `HEAD` is a stub and git is asked) the table
/// list. A server reads its branch for every listing; a `stat` or two is all that costs
/// while nobody switches branches.
#[derive(Debug, Default)]
pub struct BranchWatch {
    cached: Mutex<Option<ReadBranch>>,
}

/// The branch as last read, with the stamp it was read at and the notice's generation when
/// that stamp was last found current.
#[derive(Debug)]
struct ReadBranch {
    stamp: HeadStamp,
    branch: Option<String>,
    verified: Option<u64>,
}

/// `HEAD`'s stamp, and the reftable table list's where the repository has one.
type HeadStamp = Vec<Option<FileStamp>>;

impl BranchWatch {
    /// [`Checkout::current_branch`], from the cache while `HEAD` is unchanged. Files
    /// `stamps` already holds are not asked of the file system again.
    ///
    /// While the registry's notice in `stamps` covers both files and has not moved since
    /// they were last found unchanged, neither is stamped.
    pub fn current(&self, checkout: &Checkout, stamps: &Stamps) -> Option<String> {
        let git_dir = checkout.git_dir.as_deref()?;
        let mut files = vec![git_dir.join("HEAD")];
        if let Some(common) = checkout.common_dir.as_deref() {
            files.push(common.join("reftable/tables.list"));
        }
        let noticed = stamps
            .noticed
            .as_ref()
            .filter(|noticed| files.iter().all(|file| noticed.covers(file)))
            .map(|noticed| noticed.generation);
        let mut cached = self.cached.lock_or_recover();
        if let Some(read) = cached.as_ref()
            && noticed.is_some()
            && read.verified == noticed
        {
            return read.branch.clone();
        }
        let stamp: HeadStamp = files.into_iter().map(|file| stamps.of(file)).collect();
        if let Some(read) = cached.as_mut()
            && read.stamp == stamp
        {
            read.verified = noticed;
            return read.branch.clone();
        }
        // Read after the stamp: a change in between is read now and seen as a change next
        // time, never missed.
        let branch = checkout.current_branch();
        *cached = Some(ReadBranch {
            stamp,
            branch: branch.clone(),
            verified: None,
        });
        branch
    }
}

/// One file's identity and version: path, inode, size, modification time. Git replaces the
/// files it rewrites by renaming a new one into place, so a rewrite changes the inode even
/// within one timestamp tick.
type FileStamp = (PathBuf, u64, u64, i64, i64);

/// The stamps one call takes, each file asked of the file system once. A repository-wide
/// call stamps the primary's `HEAD` and the reftable list both for this checkout's branch
/// ([`BranchWatch`]) and for the worktree registry ([`WorktreeList::kept_checkouts`]), and
/// these `stat`s are a good part of what such a call costs.
///
/// A call made with [`WorktreeList::stamps`] also holds where the registry's
/// [`ChangeNotice`] stood when it began: what was found current at that same generation is
/// current still, with nothing stamped at all.
#[derive(Debug, Default)]
pub struct Stamps {
    taken: RefCell<Vec<(PathBuf, Option<FileStamp>)>>,
    /// Where the registry's notice stood when the call began.
    pub noticed: Option<Noticed>,
}

impl Stamps {
    /// `path`'s stamp, taken now unless this call took it already.
    fn of(&self, path: PathBuf) -> Option<FileStamp> {
        if let Some((_, stamp)) = self.taken.borrow().iter().find(|(taken, _)| *taken == path) {
            return stamp.clone();
        }
        let stamp = file_stamp(path.clone());
        self.taken.borrow_mut().push((path, stamp.clone()));
        stamp
    }
}

fn file_stamp(path: PathBuf) -> Option<FileStamp> {
    fs::metadata(&path).ok().map(|m| {
        let (seconds, nanos) = crate::files::modified(&m);
        (path, crate::files::identity(&m).1, m.len(), seconds, nanos)
    })
}

/// Everything `git worktree list` reads: the primary's `HEAD`, the registry directory, each
/// linked worktree's `HEAD`, `gitdir` pointer, lock and the `.git` file it points at (whose
/// absence makes the worktree prunable), and the reftable table list where there is one.
type RegistryStamp = Vec<Option<FileStamp>>;

/// Stamps `common`'s worktree registry as [`RegistryStamp`] says, reading through `memo`:
/// the registry directory is listed again, and an entry's `gitdir` pointer read again, only
/// when its stamp changed or when it was too recent to trust (see [`SETTLED`]), so an
/// unchanged registry costs a few `stat`s per worktree and no reads.
fn registry_stamp(
    common: &Path,
    memo: &Mutex<RegistryMemo>,
    taken: &Stamps,
) -> Option<RegistryStamp> {
    let registry = common.join("worktrees");
    let directory = file_stamp(registry.clone());
    let mut stamps = vec![
        taken.of(common.join("HEAD")),
        taken.of(common.join("reftable/tables.list")),
        directory.clone(),
    ];
    let mut memo = memo.lock_or_recover();
    let now = SystemTime::now();
    // No registry is as settled as an old one: there is no time to mistrust in an absence,
    // and the directory's appearance changes its stamp.
    let still_absent = directory.is_none() && memo.found_absent();
    if !still_absent && !settled(directory.as_ref(), memo.directory.as_ref(), memo.listed_at) {
        let listed = match fs::read_dir(&registry) {
            Ok(entries) => entries
                .map(|entry| entry.map(|entry| entry.path()))
                .collect::<Result<Vec<_>, _>>()
                .ok()?,
            Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(_) => return None,
        };
        memo.entries = listed
            .into_iter()
            .map(|dir| RegistryEntry {
                dir,
                gitdir: None,
                read_at: now,
                pointer: PathBuf::new(),
            })
            .collect();
        memo.directory = directory;
        memo.listed_at = now;
    }
    for entry in &mut memo.entries {
        let gitdir = file_stamp(entry.dir.join("gitdir"));
        if !settled(gitdir.as_ref(), entry.gitdir.as_ref(), entry.read_at) {
            let pointer = fs::read_to_string(entry.dir.join("gitdir")).ok()?;
            entry.pointer = PathBuf::from(pointer.trim_end());
            entry.gitdir = gitdir.clone();
            entry.read_at = now;
        }
        stamps.push(file_stamp(entry.dir.join("HEAD")));
        stamps.push(gitdir);
        stamps.push(file_stamp(entry.dir.join("locked")));
        stamps.push(file_stamp(entry.pointer.clone()));
    }
    stamps.sort();
    Some(stamps)
}

/// What [`registry_stamp`] last read of the registry: its entries, and each entry's `gitdir`
/// pointer.
#[derive(Debug)]
struct RegistryMemo {
    /// The directory's stamp when it was listed, and when that was.
    directory: Option<FileStamp>,
    listed_at: SystemTime,
    entries: Vec<RegistryEntry>,
}

impl Default for RegistryMemo {
    fn default() -> Self {
        RegistryMemo {
            directory: None,
            listed_at: SystemTime::UNIX_EPOCH,
            entries: Vec::new(),
        }
    }
}

impl RegistryMemo {
    /// Whether there was no registry directory when it was last listed: a repository without
    /// linked worktrees.
    fn found_absent(&self) -> bool {
        self.directory.is_none() && self.listed_at != SystemTime::UNIX_EPOCH
    }
}

/// The lease's file name ([`crate::lease`]).
pub const LEASE_FILE: &str = "lease.json";

/// Where the lease of the checkout whose git dir is `git_dir` lives. The registry's notice
/// covers it in every other worktree, so that a repository-wide call trusts a lease it found
/// absent while the notice stands still ([`crate::notice::KnownAbsent`]).
pub fn lease_in(git_dir: &Path) -> PathBuf {
    git_dir.join("majordomus").join(LEASE_FILE)
}

/// What the registry's notice covers for a process in `repository`: the registry, each
/// worktree's `HEAD`, every other worktree's lease, and the repository's shared files (the
/// lease table, the mailbox). Its own lease is left out: its server rewrites the files it
/// keeps beside the lease as its board changes, and only the siblings' leases are ever
/// looked for.
fn registry_targets(repository: &Checkout, common: &Path, memo: &RegistryMemo) -> Targets {
    let own = repository.git_dir.as_deref();
    let registry = common.join("worktrees");
    let mut targets = Targets::new();
    for name in SHARED_FILES {
        add_file(&mut targets, &shared_path(common, name));
    }
    add_file(&mut targets, &common.join("HEAD"));
    add_file(&mut targets, &common.join("reftable/tables.list"));
    add_file(&mut targets, &common.join("reftable"));
    add_file(&mut targets, &registry);
    add_directory(&mut targets, &registry);
    if own != Some(common) {
        add_file(&mut targets, &lease_in(common));
    }
    for entry in &memo.entries {
        for name in ["HEAD", "gitdir", "locked"] {
            add_file(&mut targets, &entry.dir.join(name));
        }
        add_file(&mut targets, &entry.pointer);
        if own != Some(entry.dir.as_path()) {
            add_file(&mut targets, &lease_in(&entry.dir));
        }
    }
    targets
}

#[derive(Debug)]
struct RegistryEntry {
    dir: PathBuf,
    /// The `gitdir` file's stamp when `pointer` was read from it, and when that was.
    gitdir: Option<FileStamp>,
    read_at: SystemTime,
    pointer: PathBuf,
}

/// How much older than the moment it was read a file's modification time must be for an
/// unchanged stamp to mean unchanged contents. File times come from a clock that may tick
/// only every few milliseconds, so a change in the same tick as an earlier one can leave the
/// time as it was; once the time read is older than this, any later change has a later time.
const SETTLED: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether what was read at `read_at`, when the file's stamp was `seen`, still holds now that
/// its stamp is `now`: the stamps agree and the time in them had settled when it was read.
fn settled(now: Option<&FileStamp>, seen: Option<&FileStamp>, read_at: SystemTime) -> bool {
    let (Some(now), Some(seen)) = (now, seen) else {
        return false;
    };
    let (_, _, _, seconds, nanos) = *seen;
    let modified = u64::try_from(seconds).ok().map(|seconds| {
        SystemTime::UNIX_EPOCH
            + std::time::Duration::new(seconds, u32::try_from(nanos).unwrap_or(0))
    });
    now == seen
        && modified.is_some_and(|modified| {
            read_at
                .duration_since(modified)
                .is_ok_and(|age| age >= SETTLED)
        })
}

/// Parses `git worktree list --porcelain -z`: NUL-terminated `key[ value]` fields, each
/// record closed by an empty field.
fn parse_worktree_list(porcelain: &[u8]) -> Vec<Worktree> {
    let mut worktrees = Vec::new();
    // The record being read, and whether it is a bare repository (never a checkout).
    let mut current: Option<(Worktree, bool)> = None;
    let mut records = 0;
    for field in porcelain.split(|&byte| byte == 0) {
        let (key, value) = match field.iter().position(|&byte| byte == b' ') {
            Some(space) => (&field[..space], &field[space + 1..]),
            None => (field, &[][..]),
        };
        let text = || String::from_utf8_lossy(value).into_owned();
        match (key, current.as_mut()) {
            (b"", _) => {
                if let Some((worktree, false)) = current.take() {
                    worktrees.push(worktree);
                }
            }
            (b"worktree", _) => {
                if let Some((worktree, false)) = current.take() {
                    worktrees.push(worktree);
                }
                current = Some((
                    Worktree {
                        path: crate::files::path_from_git(value),
                        head: None,
                        branch: None,
                        primary: records == 0,
                        detached: false,
                        prunable: false,
                    },
                    false,
                ));
                records += 1;
            }
            (b"HEAD", Some((worktree, _))) => {
                // An unborn branch lists the all-zero id: there is no commit yet.
                worktree.head = Some(text()).filter(|id| id.bytes().any(|digit| digit != b'0'));
            }
            (b"branch", Some((worktree, _))) => {
                let reference = text();
                let short = reference.strip_prefix("refs/heads/").unwrap_or(&reference);
                worktree.branch = Some(short.to_owned());
            }
            (b"detached", Some((worktree, _))) => worktree.detached = true,
            (b"prunable", Some((worktree, _))) => worktree.prunable = true,
            (b"bare", Some((_, bare))) => *bare = true,
            _ => {}
        }
    }
    if let Some((worktree, false)) = current {
        worktrees.push(worktree);
    }
    worktrees
}

/// The branch `HEAD` names in `git_dir` (the git dir of the checkout at `root`), short name;
/// `None` when detached.
fn head_branch(git_dir: &Path, root: &Path) -> Result<Option<String>, CheckoutError> {
    let head_file = git_dir.join("HEAD");
    let head = fs::read_to_string(&head_file).map_err(|source| CheckoutError::Io {
        path: head_file,
        source,
    })?;
    let Some(reference) = head.trim_end().strip_prefix("ref: ") else {
        return Ok(None);
    };
    if reference != REFTABLE_HEAD_STUB {
        let short = reference.strip_prefix("refs/heads/").unwrap_or(reference);
        return Ok(Some(short.to_owned()));
    }
    // Under reftable the file is a stub; only git can say which branch HEAD names.
    let command = ["symbolic-ref", "--quiet", "--short", "HEAD"];
    let output = run_git(root, &command)?;
    Ok(output.status.success().then(|| {
        String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned()
    }))
}

/// The git dir a linked worktree's `.git` file points at.
fn linked_git_dir(root: &Path) -> Option<PathBuf> {
    let pointer = fs::read_to_string(root.join(".git")).ok()?;
    let target = pointer
        .lines()
        .find_map(|line| line.strip_prefix("gitdir: "))?;
    // Newer git may write the pointer relative to the worktree.
    let target = root.join(target.trim_end());
    Some(target.canonicalize().unwrap_or(target))
}

/// Runs git in `dir` (see [`git_command`]).
fn run_git(dir: &Path, args: &[&str]) -> Result<Output, CheckoutError> {
    git_command(dir, args)
        .output()
        .map_err(CheckoutError::GitUnavailable)
}

/// A git command for `dir`, shielded from the caller's repository-locating environment and
/// locale, and from any prompt.
pub(crate) fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command.arg("-C").arg(dir).args(args);
    for variable in LOCATING_VARIABLES {
        command.env_remove(variable);
    }
    command
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null());
    command
}

pub(crate) fn git_failed(dir: &Path, args: &[&str], output: &Output) -> CheckoutError {
    CheckoutError::Git {
        command: args.join(" "),
        dir: dir.to_path_buf(),
        stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
    }
}

fn canonical(path: &Path) -> Result<PathBuf, CheckoutError> {
    path.canonicalize().map_err(|source| CheckoutError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn path_digest(path: &Path) -> String {
    identity_digest(&path.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Repository, git};

    #[cfg(unix)]
    #[test]
    fn ids_are_the_digest_of_the_canonical_paths() {
        let repo = Repository::new();
        let checkout = Checkout::discover(&repo.root().join("src")).unwrap();
        assert_eq!(checkout.root, repo.root());
        assert_eq!(checkout.id, identity_digest(repo.root().to_str().unwrap()));
        let common = repo.root().join(".git");
        assert_eq!(checkout.common_dir.as_deref(), Some(common.as_path()));
        assert_eq!(checkout.git_dir.as_deref(), Some(common.as_path()));
        assert_eq!(
            checkout.git_id.as_deref(),
            Some(identity_digest(common.to_str().unwrap()).as_str())
        );
        assert_eq!(checkout.branch.as_deref(), Some("main"));
        assert!(checkout.primary);
        // Same directory, same ids: nothing random or time-dependent goes in.
        assert_eq!(Checkout::discover(&repo.root()).unwrap(), checkout);
        // A path through a symlink is the same checkout.
        let link = repo.root().with_file_name("link");
        std::os::unix::fs::symlink(repo.root(), &link).unwrap();
        assert_eq!(Checkout::discover(&link).unwrap(), checkout);
    }

    #[test]
    fn the_root_commit_is_the_oldest_and_every_clone_shares_it() {
        let repo = Repository::new();
        let checkout = Checkout::discover(&repo.root()).unwrap();
        let first = git(&repo.root(), &["rev-parse", "HEAD"]).trim().to_owned();
        assert_eq!(checkout.root_commit().unwrap(), Some(first.clone()));

        let clone = repo.root().with_file_name("clone");
        git(
            &repo.root(),
            &["clone", "--quiet", ".", clone.to_str().unwrap()],
        );
        let cloned = Checkout::discover(&clone).unwrap();
        git(
            &clone,
            &["commit", "--quiet", "--allow-empty", "-m", "second"],
        );
        assert_eq!(cloned.root_commit().unwrap(), Some(first.clone()));

        // A second root, committed later and merged in, is younger: the first stays the answer.
        git(&repo.root(), &["checkout", "--quiet", "--orphan", "other"]);
        let later = std::process::Command::new("git")
            .arg("-C")
            .arg(repo.root())
            .args([
                "-c",
                "user.name=Test",
                "-c",
                "user.email=test@example.invalid",
            ])
            .args([
                "-c",
                "commit.gpgsign=false",
                "commit",
                "--quiet",
                "-m",
                "another root",
            ])
            .env("GIT_COMMITTER_DATE", "4000000000 +0000")
            .status()
            .unwrap();
        assert!(later.success());
        git(&repo.root(), &["checkout", "--quiet", "main"]);
        git(
            &repo.root(),
            &[
                "merge",
                "--quiet",
                "--allow-unrelated-histories",
                "-m",
                "join",
                "other",
            ],
        );
        assert_eq!(checkout.root_commit().unwrap(), Some(first));

        let empty = repo.root().with_file_name("empty");
        fs::create_dir_all(&empty).unwrap();
        git(&empty, &["init", "--quiet"]);
        assert_eq!(
            Checkout::discover(&empty).unwrap().root_commit().unwrap(),
            None
        );
    }

    #[test]
    fn the_branch_is_found_under_the_reftable_backend_too() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git(
            &root,
            &[
                "init",
                "--quiet",
                "--ref-format=reftable",
                "--initial-branch",
                "tables",
            ],
        );
        let head = fs::read_to_string(root.join(".git/HEAD")).unwrap();
        assert!(head.contains(REFTABLE_HEAD_STUB), "{head}");
        let checkout = Checkout::discover(&root).unwrap();
        assert_eq!(checkout.branch.as_deref(), Some("tables"));
    }

    #[test]
    fn a_linked_worktree_has_its_own_git_dir_and_shares_the_common_one() {
        let repo = Repository::new();
        let linked = repo.add_worktree("feature/one");
        let primary = Checkout::discover(&repo.root()).unwrap();
        let checkout = Checkout::discover(&linked).unwrap();
        assert_eq!(checkout.root, linked);
        assert!(!checkout.primary);
        assert_eq!(checkout.branch.as_deref(), Some("feature/one"));
        assert_eq!(checkout.common_dir, primary.common_dir);
        assert_eq!(checkout.git_id, primary.git_id);
        assert_ne!(checkout.id, primary.id);
        let git_dir = checkout.git_dir.as_deref().unwrap();
        assert!(
            git_dir.starts_with(repo.root().join(".git/worktrees")),
            "{git_dir:?}"
        );
    }

    #[test]
    fn a_directory_outside_git_is_a_checkout_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let checkout = Checkout::discover(&root).unwrap();
        assert_eq!(checkout.root, root);
        assert_eq!(
            (checkout.git_dir.as_ref(), checkout.common_dir.as_ref()),
            (None, None)
        );
        assert_eq!(checkout.git_id, None);
        assert!(checkout.primary);
        let worktrees = list_worktrees(&checkout).unwrap();
        assert_eq!(worktrees.len(), 1);
        assert_eq!(worktrees[0].checkout(&checkout), checkout);
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let error = Checkout::discover(&dir.path().join("nope")).unwrap_err();
        assert!(matches!(error, CheckoutError::Io { .. }), "{error}");
    }

    #[test]
    fn detached_heads_and_unborn_branches_have_no_branch_or_head() {
        let repo = Repository::new();
        let detached = repo.root().with_file_name("detached");
        git(
            &repo.root(),
            &["worktree", "add", "--detach", detached.to_str().unwrap()],
        );
        let checkout = Checkout::discover(&detached).unwrap();
        assert_eq!(checkout.branch, None);
        let listed = list_worktrees(&checkout).unwrap();
        assert!(listed[1].detached && listed[1].branch.is_none() && listed[1].head.is_some());

        let unborn = tempfile::tempdir().unwrap();
        git(
            unborn.path(),
            &["init", "--quiet", "--initial-branch", "fresh"],
        );
        let checkout = Checkout::discover(unborn.path()).unwrap();
        assert_eq!(checkout.branch.as_deref(), Some("fresh"));
        let listed = list_worktrees(&checkout).unwrap();
        assert_eq!(listed[0].head, None);
        assert_eq!(listed[0].branch.as_deref(), Some("fresh"));
    }

    #[test]
    fn worktrees_are_listed_primary_first_and_become_the_checkouts_discover_finds() {
        let repo = Repository::new();
        let one = repo.add_worktree("one");
        let two = repo.add_worktree("topic/two");
        let from_linked = Checkout::discover(&two).unwrap();
        let listed = list_worktrees(&from_linked).unwrap();

        let branches: Vec<_> = listed.iter().map(|w| w.branch.as_deref()).collect();
        assert_eq!(branches, [Some("main"), Some("one"), Some("topic/two")]);
        let primaries: Vec<_> = listed.iter().map(|w| w.primary).collect();
        assert_eq!(primaries, [true, false, false]);
        assert!(
            listed
                .iter()
                .all(|w| w.head.is_some() && !w.detached && !w.prunable)
        );

        for (worktree, dir) in listed.iter().zip([repo.root(), one, two]) {
            assert_eq!(
                worktree.checkout(&from_linked),
                Checkout::discover(&dir).unwrap()
            );
        }
    }

    #[test]
    fn the_cached_list_follows_every_change_git_would_report() {
        let repo = Repository::new();
        let primary = Checkout::discover(&repo.root()).unwrap();
        let cache = WorktreeList::default();
        let branches = |cache: &WorktreeList| -> Vec<Option<String>> {
            let listed = cache.list(&primary).unwrap();
            assert_eq!(
                listed,
                list_worktrees(&primary).unwrap(),
                "the cache agrees with git"
            );
            let made: Vec<Checkout> = listed.iter().map(|w| w.checkout(&primary)).collect();
            assert_eq!(cache.checkouts(&primary).unwrap(), made);
            assert_eq!(
                cache.kept_checkouts(&primary, &Stamps::default(), true),
                Some(made)
            );
            listed.into_iter().map(|w| w.branch).collect()
        };
        assert_eq!(branches(&cache), [Some("main".to_string())]);
        let one = repo.add_worktree("one");
        assert_eq!(branches(&cache), [Some("main".into()), Some("one".into())]);
        git(&one, &["checkout", "--quiet", "-b", "renamed"]);
        assert_eq!(
            branches(&cache),
            [Some("main".into()), Some("renamed".into())]
        );
        git(&repo.root(), &["checkout", "--quiet", "-b", "trunk"]);
        assert_eq!(
            branches(&cache),
            [Some("trunk".into()), Some("renamed".into())]
        );
        fs::remove_dir_all(&one).unwrap();
        assert!(cache.list(&primary).unwrap()[1].prunable);
        assert_eq!(primary.current_branch().as_deref(), Some("trunk"));
    }

    #[test]
    fn a_settled_registry_still_shows_every_worktree_added_or_removed() {
        let repo = Repository::new();
        let primary = Checkout::discover(&repo.root()).unwrap();
        let one = repo.add_worktree("one");
        // As a registry nobody touched for a while: every file in it older than the settling.
        let long_ago = SystemTime::now() - SETTLED * 5;
        let seconds = long_ago
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let status = std::process::Command::new("find")
            .arg(repo.root().join(".git/worktrees"))
            .args([
                "-exec",
                "touch",
                "-h",
                "-d",
                &format!("@{seconds}"),
                "{}",
                "+",
            ])
            .status()
            .unwrap();
        assert!(status.success());
        let cache = WorktreeList::default();
        let paths = |cache: &WorktreeList| -> Vec<PathBuf> {
            let listed = cache.list(&primary).unwrap();
            assert_eq!(
                listed,
                list_worktrees(&primary).unwrap(),
                "the cache agrees with git"
            );
            listed.into_iter().map(|w| w.path).collect()
        };
        assert_eq!(paths(&cache).len(), 2);
        assert_eq!(paths(&cache).len(), 2, "read through the settled registry");
        let two = repo.add_worktree("two");
        assert_eq!(paths(&cache).len(), 3);
        // The new worktree's own files are watched too: a switch in it is seen.
        git(&two, &["checkout", "--quiet", "-b", "two-moved"]);
        assert_eq!(
            cache.list(&primary).unwrap()[2].branch.as_deref(),
            Some("two-moved")
        );
        git(
            &repo.root(),
            &["worktree", "remove", &two.display().to_string()],
        );
        assert_eq!(paths(&cache).len(), 2);
        git(&one, &["checkout", "--quiet", "-b", "moved"]);
        assert_eq!(
            cache.list(&primary).unwrap()[1].branch.as_deref(),
            Some("moved")
        );
    }

    #[test]
    fn a_repository_without_a_registry_shows_its_first_worktree_and_its_last_removal() {
        let repo = Repository::new();
        let primary = Checkout::discover(&repo.root()).unwrap();
        let cache = WorktreeList::default();
        let count = |cache: &WorktreeList| {
            let listed = cache.list(&primary).unwrap();
            assert_eq!(
                listed,
                list_worktrees(&primary).unwrap(),
                "the cache agrees with git"
            );
            listed.len()
        };
        assert!(!repo.root().join(".git/worktrees").exists());
        assert_eq!(count(&cache), 1);
        assert_eq!(count(&cache), 1, "read through the absent registry");
        let first = repo.add_worktree("first");
        assert_eq!(count(&cache), 2);
        // The new worktree's own files are watched from then on.
        git(&first, &["checkout", "--quiet", "-b", "first-moved"]);
        assert_eq!(count(&cache), 2);
        git(
            &repo.root(),
            &["worktree", "remove", &first.display().to_string()],
        );
        assert!(!repo.root().join(".git/worktrees").exists());
        assert_eq!(count(&cache), 1);
        assert_eq!(count(&cache), 1);
    }

    #[test]
    fn one_call_stamps_a_file_once_and_the_next_call_sees_it_anew() {
        let repo = Repository::new();
        let head = repo.root().join(".git/HEAD");
        let call = Stamps::default();
        let first = call.of(head.clone());
        assert!(first.is_some());
        git(&repo.root(), &["checkout", "--quiet", "-b", "moved"]);
        assert_eq!(
            call.of(head.clone()),
            first,
            "one call, one view of the file"
        );
        assert_ne!(
            Stamps::default().of(head),
            first,
            "the next call sees the switch"
        );
        assert_eq!(call.of(repo.root().join(".git/no-such-file")), None);
    }

    #[test]
    fn the_watched_branch_follows_every_switch() {
        let repo = Repository::new();
        let primary = Checkout::discover(&repo.root()).unwrap();
        let watch = BranchWatch::default();
        assert_eq!(
            watch.current(&primary, &Stamps::default()).as_deref(),
            Some("main")
        );
        for branch in ["two", "three", "main"] {
            git(&repo.root(), &["checkout", "--quiet", "-B", branch]);
            assert_eq!(
                watch.current(&primary, &Stamps::default()).as_deref(),
                Some(branch)
            );
            assert_eq!(
                watch.current(&primary, &Stamps::default()).as_deref(),
                Some(branch),
                "kept"
            );
        }
        git(&repo.root(), &["checkout", "--quiet", "--detach"]);
        assert_eq!(
            watch.current(&primary, &Stamps::default()),
            None,
            "detached"
        );
    }

    /// Only Linux's notice promises anything; the portable one leaves every read to a stat.
    #[cfg(linux_native)]
    #[test]
    fn a_noticed_registry_is_read_from_memory_and_every_change_is_still_seen() {
        let repo = Repository::new();
        let primary = Checkout::discover(&repo.root()).unwrap();
        let one = repo.add_worktree("one");
        let cache = WorktreeList::default();
        let branch = BranchWatch::default();
        // One call as a server makes it: its stamps, its branch, then the kept listing.
        let call = |cache: &WorktreeList| {
            let stamps = cache.stamps();
            let here = branch.current(&primary, &stamps);
            let kept = cache.kept_checkouts(&primary, &stamps, true);
            (here, kept, stamps.taken.borrow().len())
        };
        // Until a kept listing agrees with what git says: an unread or changed registry
        // has no kept listing, and git is asked.
        let settle = |cache: &WorktreeList| -> Vec<Option<String>> {
            for _ in 0..4 {
                if let (_, Some(kept), 0) = call(cache) {
                    let made: Vec<Checkout> = list_worktrees(&primary)
                        .unwrap()
                        .iter()
                        .map(|w| w.checkout(&primary))
                        .collect();
                    assert_eq!(kept, made, "what memory answers is what git says");
                    return kept.into_iter().map(|c| c.branch).collect();
                }
                cache.checkouts(&primary).unwrap();
            }
            panic!("the registry was never answered from memory without a stat");
        };
        assert_eq!(settle(&cache), [Some("main".into()), Some("one".into())]);
        assert!(cache.notice.now().is_some(), "the registry is watched");

        let two = repo.add_worktree("two");
        assert_eq!(call(&cache).1, None, "a new worktree is a change");
        assert_eq!(settle(&cache).len(), 3);

        git(&two, &["checkout", "--quiet", "-b", "two-moved"]);
        assert_eq!(
            call(&cache).1,
            None,
            "a linked worktree's switch is a change"
        );
        assert_eq!(settle(&cache)[2].as_deref(), Some("two-moved"));

        git(&repo.root(), &["checkout", "--quiet", "-b", "trunk"]);
        assert_eq!(
            call(&cache).0.as_deref(),
            Some("trunk"),
            "this checkout's switch"
        );
        assert_eq!(settle(&cache)[0].as_deref(), Some("trunk"));
        assert_eq!(
            call(&cache).0.as_deref(),
            Some("trunk"),
            "kept without a stat"
        );

        git(
            &repo.root(),
            &["worktree", "lock", &one.display().to_string()],
        );
        assert_eq!(call(&cache).1, None, "a lock is a change");
        settle(&cache);

        fs::remove_dir_all(&two).unwrap();
        assert_eq!(
            call(&cache).1,
            None,
            "a worktree's removed directory is a change"
        );
        settle(&cache);
        assert!(cache.list(&primary).unwrap()[2].prunable);

        git(&repo.root(), &["worktree", "prune"]);
        assert_eq!(call(&cache).1, None, "pruning is a change");
        assert_eq!(settle(&cache).len(), 2);
    }

    #[test]
    fn a_removed_worktree_directory_is_listed_as_prunable() {
        let repo = Repository::new();
        let gone = repo.add_worktree("gone");
        fs::remove_dir_all(&gone).unwrap();
        let primary = Checkout::discover(&repo.root()).unwrap();
        let listed = list_worktrees(&primary).unwrap();
        assert!(listed[1].prunable);
        let checkout = listed[1].checkout(&primary);
        assert_eq!(checkout.root, gone);
        assert_eq!(checkout.git_dir, None);
    }

    #[test]
    fn bare_entries_are_skipped_and_no_linked_worktree_becomes_primary() {
        let repo = Repository::new();
        let bare = repo.root().with_file_name("bare.git");
        let linked = repo.root().with_file_name("linked");
        let (root, bare_path) = (repo.root(), bare.to_str().unwrap());
        git(&root, &["clone", "--quiet", "--bare", ".", bare_path]);
        git(
            &bare,
            &[
                "worktree",
                "add",
                "--quiet",
                "-b",
                "work",
                linked.to_str().unwrap(),
            ],
        );
        let checkout = Checkout::discover(&linked).unwrap();
        assert!(!checkout.primary);
        let listed = list_worktrees(&checkout).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].branch.as_deref(), Some("work"));
        assert!(!listed[0].primary);
        assert_eq!(listed[0].checkout(&checkout), checkout);
    }

    #[test]
    fn the_callers_git_environment_is_removed() {
        let command = git_command(Path::new("/"), &["status"]);
        let removed: Vec<_> = command
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_str().unwrap())
            .collect();
        for variable in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_COMMON_DIR",
            "GIT_INDEX_FILE",
        ] {
            assert!(removed.contains(&variable), "{variable} is passed through");
        }
    }

    #[test]
    fn porcelain_parsing_handles_every_field() {
        let porcelain = b"worktree /r\0bare\0\0\
            worktree /r/a b\0HEAD 0123abcd\0branch refs/heads/x/y\0locked because\0\0\
            worktree /r/c\0HEAD 4567\0detached\0prunable gitdir file points nowhere\0\0";
        let listed = parse_worktree_list(porcelain);
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].path, Path::new("/r/a b"));
        assert_eq!(listed[0].branch.as_deref(), Some("x/y"));
        assert_eq!(listed[0].head.as_deref(), Some("0123abcd"));
        assert!(!listed[0].primary);
        assert!(listed[1].detached && listed[1].prunable);
        assert_eq!(listed[1].branch, None);
    }
}
