//! The lease: the small file by which a checkout's server is found, and whose exclusive
//! creation decides which process serves the checkout.
//!
//! A lease is only ever replaced whole (a temporary file renamed or linked into place), so a
//! reader sees a complete document or none. Every change made after creation (publishing the
//! URL, removing it, taking it over) happens under an advisory `flock` on `lease.lock` beside
//! it, after re-reading the file, so no process acts on a lease someone else has changed.
//! A server that releases its lease removes the lock file too, so a clean stop leaves nothing
//! of the lease behind. Its leaseholder may keep files beside it (the claims it hands to the
//! next server), changed under the same lock and only while the lease is its own.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use majordomus_domain::ids::Stamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::files;
use crate::git::{Checkout, LEASE_FILE, lease_in};
use crate::process::{
    ExecutableStamp, ProcessHandle, executable_stamp, process_alive, process_start_time,
};

/// The `schema` every lease this crate writes carries, and the only one it trusts on read.
pub const LEASE_SCHEMA: &str = "majordomus-lease/v1";

const LOCK_FILE: &str = "lease.lock";

/// A lease document, token included. Never put it in an answer: use [`Lease::redacted`]
/// (its `Debug` leaves the token out too, so a log line cannot leak it).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// [`LEASE_SCHEMA`] for every lease this crate trusts.
    pub schema: String,
    /// Process id of the owner.
    pub pid: u32,
    /// The owner's start time in clock ticks since boot, so a recycled pid is not mistaken
    /// for the owner; `None` where the system does not tell.
    #[serde(default)]
    pub process_start: Option<u64>,
    /// 256 bits of randomness as 64 hex digits: the secret every request must carry.
    pub token: String,
    /// Root of the checkout the owner serves.
    pub root: String,
    /// `None` while the owner is still binding its listener.
    #[serde(default)]
    pub url: Option<String>,
    /// When the owner started, RFC 3339 UTC.
    pub started_at: String,
    /// The owner's executable as it was on disk when the owner started.
    pub executable: ExecutableStamp,
    /// The majordomus version the owner runs.
    pub version: String,
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("schema", &self.schema)
            .field("pid", &self.pid)
            .field("process_start", &self.process_start)
            .field("token", &"<redacted>")
            .field("root", &self.root)
            .field("url", &self.url)
            .field("started_at", &self.started_at)
            .field("executable", &self.executable)
            .field("version", &self.version)
            .finish()
    }
}

/// A lease as answers show it: everything but the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LeaseView {
    /// The lease format, `majordomus-lease/v1`.
    pub schema: String,
    /// Process id of the server holding the lease.
    pub pid: u32,
    /// That process's start time in clock ticks since boot (tells a recycled pid apart).
    pub process_start: Option<u64>,
    /// Root of the checkout the lease is for.
    pub root: String,
    /// Where the server listens; null while it is still binding.
    pub url: Option<String>,
    /// When the server started, RFC 3339 UTC.
    pub started_at: String,
    /// The executable the server runs, as it was on disk when the server started.
    pub executable: ExecutableStamp,
    /// The majordomus version the server runs.
    pub version: String,
}

/// What reading a lease file found. Reading never fails: whatever is on disk is one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "a reading lives briefly, one per checkout; boxing the lease would only add an allocation"
)]
pub enum LeaseReading {
    /// There is no lease file.
    Absent,
    /// The file exists but holds nothing (or only whitespace).
    Empty,
    /// The file cannot be read or is not a lease this version understands; why, in words.
    Corrupt(String),
    /// A lease, and the exact bytes it was parsed from (what [`take_over`] compares).
    Document(Lease, Vec<u8>),
}

/// Why [`try_create`] did not make this process the leaseholder.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// A lease file is already there: some process holds, or held, the checkout.
    #[error("a lease already exists")]
    Exists,
    /// The lease directory or file could not be written.
    #[error("cannot write the lease: {0}")]
    Io(#[from] io::Error),
}

/// The lease this process created: it knows where it is and which token makes it ours.
#[derive(Debug)]
pub struct LeaseHandle {
    path: PathBuf,
    lease: Lease,
    /// The lease file's identity when it was last read and found ours: while the file at
    /// the path is still that one, unchanged, it is still ours without reading it again.
    verified: Option<FileIdentity>,
}

/// What tells one state of a file from another without reading it: a take-over writes a new
/// file (a new inode), and any write moves the size or the modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileIdentity {
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
}

impl FileIdentity {
    fn of(path: &Path) -> Option<FileIdentity> {
        let metadata = fs::metadata(path).ok()?;
        let (device, inode) = files::identity(&metadata);
        Some(FileIdentity {
            device,
            inode,
            size: metadata.len(),
            modified: files::modified(&metadata),
        })
    }
}

impl Lease {
    /// A lease for this process serving the checkout at `root`: fresh token, no URL yet.
    pub fn new_for_this_process(root: &Path, version: &str) -> Lease {
        let pid = std::process::id();
        Lease {
            schema: LEASE_SCHEMA.to_owned(),
            pid,
            process_start: process_start_time(pid),
            token: hex::encode(rand::random::<[u8; 32]>()),
            root: root.to_string_lossy().into_owned(),
            url: None,
            started_at: Stamp::at(SystemTime::now()).to_string(),
            executable: this_executable(),
            version: version.to_owned(),
        }
    }

    /// Everything but the token, for answers.
    pub fn redacted(&self) -> LeaseView {
        LeaseView {
            schema: self.schema.clone(),
            pid: self.pid,
            process_start: self.process_start,
            root: self.root.clone(),
            url: self.url.clone(),
            started_at: self.started_at.clone(),
            executable: self.executable.clone(),
            version: self.version.clone(),
        }
    }

    /// Whether the process that wrote this lease still runs (and is that process).
    pub fn owner_alive(&self) -> bool {
        process_alive(self.pid, self.process_start)
    }

    /// The process that wrote this lease, held so that asking again whether it runs is cheap
    /// (see [`ProcessHandle`]).
    pub fn owner(&self) -> ProcessHandle {
        ProcessHandle::open(self.pid, self.process_start)
    }
}

/// The stamp of the running executable. Should the system not say what that is, the stamp
/// still names what it can, and simply never matches the disk: the server reads as outdated
/// rather than failing to start.
fn this_executable() -> ExecutableStamp {
    let path = std::env::current_exe().unwrap_or_default();
    executable_stamp(&path).unwrap_or_else(|| ExecutableStamp {
        path: path.to_string_lossy().into_owned(),
        mtime: String::new(),
        size: 0,
    })
}

/// Where `checkout`'s lease lives: `<git dir>/majordomus/lease.json`, out of the working tree
/// and never tracked; outside git, `majordomus/<checkout id>/lease.json` in the user's
/// runtime dir (`$XDG_RUNTIME_DIR`), else cache dir (`$XDG_CACHE_HOME`, `~/.cache`).
pub fn lease_path(checkout: &Checkout) -> PathBuf {
    match &checkout.git_dir {
        Some(git_dir) => lease_in(git_dir),
        None => private_base(|name| std::env::var_os(name))
            .join("majordomus")
            .join(&checkout.id)
            .join(LEASE_FILE),
    }
}

/// The first of the user's private directories the environment names; the system temporary
/// dir, keyed by user, when it names none.
fn private_base(env: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let dir = |name| {
        env(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    dir("XDG_RUNTIME_DIR")
        .or_else(|| dir("XDG_CACHE_HOME"))
        .or_else(|| dir("HOME").map(|home| home.join(".cache")))
        .unwrap_or_else(files::per_user_temp_dir)
}

/// Reads the lease at `path`, never failing: trouble reading is itself a finding.
pub fn read_lease(path: &Path) -> LeaseReading {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return LeaseReading::Absent,
        Err(error) => return LeaseReading::Corrupt(format!("it cannot be read ({error})")),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return LeaseReading::Empty;
    }
    match serde_json::from_slice::<Lease>(&bytes) {
        Ok(lease) if lease.schema == LEASE_SCHEMA => LeaseReading::Document(lease, bytes),
        Ok(lease) => LeaseReading::Corrupt(format!(
            "its schema is {:?}, not {LEASE_SCHEMA:?}",
            lease.schema
        )),
        Err(error) => LeaseReading::Corrupt(format!("it is not a lease ({error})")),
    }
}

/// How old the lease read from `path` is at `now`: since its `started_at`, or, for a file
/// with no readable date, since the file was last written. `None` when neither is known,
/// and for a lease that was absent: there was no file to date, and a sibling nobody serves
/// is read on every repository-wide call, so no `stat` is spent finding that out again.
pub fn lease_age(path: &Path, reading: &LeaseReading, now: SystemTime) -> Option<Duration> {
    let started = match reading {
        LeaseReading::Absent => return None,
        LeaseReading::Document(lease, _) => OffsetDateTime::parse(&lease.started_at, &Rfc3339)
            .ok()
            .map(SystemTime::from),
        _ => None,
    };
    let since = started.or_else(|| fs::metadata(path).and_then(|meta| meta.modified()).ok())?;
    // A date in the future (a clock stepped back) makes a lease young, not invalid.
    Some(now.duration_since(since).unwrap_or_default())
}

/// Tries to become `path`'s leaseholder: creates the lease directory (0700) and then the
/// lease file (0600) only if there is none, with `lease` written in full and synced.
///
/// The document is written to a temporary file first and hard-linked into place, so the
/// exclusive create and the complete content arrive together: no rival ever reads a
/// half-written lease and judges it corrupt. Where the file system has no hard links, the
/// file is created with `O_EXCL` and written.
pub fn try_create(path: &Path, lease: &Lease) -> Result<LeaseHandle, CreateError> {
    let dir = lease_dir(path);
    files::create_private_dir(dir)?;
    let bytes = encode(lease)?;
    let temporary = write_temporary(dir, LEASE_FILE, &bytes)?;
    let linked = fs::hard_link(&temporary, path);
    remove_quietly(&temporary);
    match linked {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            return Err(CreateError::Exists);
        }
        Err(error) if files::hard_links_unsupported(&error) => create_exclusive(path, &bytes)?,
        Err(error) => return Err(error.into()),
    }
    sync_dir(dir)?;
    Ok(LeaseHandle {
        path: path.to_path_buf(),
        lease: lease.clone(),
        verified: None,
    })
}

/// Removes the lease at `path` if it still holds exactly the `judged` bytes (or is already
/// gone), under the lease lock. `Ok(false)`: it changed since it was judged, so the caller
/// must judge again. Afterwards the next exclusive create decides who serves.
pub fn take_over(path: &Path, judged: &[u8]) -> io::Result<bool> {
    let _lock = LeaseLock::acquire(path)?;
    match fs::read(path) {
        Ok(bytes) if bytes == judged => {
            remove_if_present(path)?;
            sync_dir(lease_dir(path))?;
            Ok(true)
        }
        Ok(_) => Ok(false),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(true),
        Err(error) => Err(error),
    }
}

impl LeaseHandle {
    /// Where the lease file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lease as this process last wrote it, token included.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Writes `url` into the lease (temporary file, fsync, rename, fsync of the directory),
    /// but only if the lease on disk is still ours. Call it once the listener answers, so a
    /// URL in a lease always works. `Ok(false)`: the lease was taken over; leave it alone.
    pub fn publish_url(&mut self, url: &str) -> io::Result<bool> {
        let _lock = LeaseLock::acquire(&self.path)?;
        if !self.still_ours() {
            return Ok(false);
        }
        let mut next = self.lease.clone();
        next.url = Some(url.to_owned());
        let dir = lease_dir(&self.path);
        let temporary = write_temporary(dir, LEASE_FILE, &encode(&next)?)?;
        if let Err(error) = fs::rename(&temporary, &self.path) {
            remove_quietly(&temporary);
            return Err(error);
        }
        sync_dir(dir)?;
        self.lease = next;
        Ok(true)
    }

    /// Whether the lease on disk still carries our token, read again only when the file at
    /// the path is no longer the one last found ours: a server asks this every second and on
    /// every new session, and a `stat` answers it until somebody writes the lease.
    pub fn recheck(&mut self) -> bool {
        recheck_token(&self.path, &self.lease.token, &mut self.verified)
    }

    /// Whether the lease on disk still carries our token.
    pub fn still_ours(&self) -> bool {
        matches!(read_lease(&self.path), LeaseReading::Document(lease, _) if lease.token == self.lease.token)
    }

    /// Removes the lease if it is still ours, and the lock file with it, so a clean stop
    /// leaves nothing behind; returns whether it removed the lease. A lease someone else has
    /// taken over is left to them, lock file included. Failures are logged, since a stopping
    /// server has no one left to tell.
    pub fn release(self) -> bool {
        let removed = LeaseLock::acquire(&self.path).and_then(|lock| {
            if !self.still_ours() {
                return Ok(false);
            }
            remove_if_present(&self.path)?;
            if let Err(error) = lock.remove() {
                tracing::warn!(path = %self.path.display(), %error, "could not remove the lease's lock file");
            }
            sync_dir(lease_dir(&self.path))?;
            Ok(true)
        });
        removed.unwrap_or_else(|error| {
            tracing::warn!(path = %self.path.display(), %error, "could not release the lease");
            false
        })
    }
}

/// A file the leaseholder keeps beside its lease, such as the claims it hands over to the
/// next server of its checkout. Every change of it happens under the lease lock and only
/// while the lease on disk is still this process's, so a server that lost its lease never
/// overwrites what its successor keeps there; its successor reads it once it holds the
/// lease ([`read_beside`]).
impl LeaseHandle {
    /// Replaces the file `name` beside the lease with `bytes` (a 0600 temporary file,
    /// fsync, rename, fsync of the directory), or removes it when `bytes` is `None`.
    /// `Ok(false)`: the lease is no longer ours, and nothing was written.
    pub fn write_beside(&self, name: &str, bytes: Option<&[u8]>) -> io::Result<bool> {
        let _lock = LeaseLock::acquire(&self.path)?;
        if !self.still_ours() {
            return Ok(false);
        }
        let dir = lease_dir(&self.path);
        let path = dir.join(name);
        match bytes {
            Some(bytes) => {
                let temporary = write_temporary(dir, name, bytes)?;
                if let Err(error) = fs::rename(&temporary, &path) {
                    remove_quietly(&temporary);
                    return Err(error);
                }
            }
            None => match fs::remove_file(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(true),
                Err(error) => return Err(error),
            },
        }
        sync_dir(dir)?;
        Ok(true)
    }

    /// Sets the modification time of the file `name` beside the lease to now, saying that
    /// what it holds was still true a moment ago. `Ok(false)`: the lease is no longer
    /// ours, or there is no such file, and nothing was touched.
    pub fn touch_beside(&self, name: &str) -> io::Result<bool> {
        let _lock = LeaseLock::acquire(&self.path)?;
        if !self.still_ours() {
            return Ok(false);
        }
        let opened =
            files::no_follow(OpenOptions::new().write(true)).open(lease_dir(&self.path).join(name));
        let file = match opened {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(error) => return Err(error),
        };
        file.set_modified(SystemTime::now())?;
        Ok(true)
    }

    /// Removes the temporary files a process killed while replacing the file `name` beside
    /// the lease left behind. Only the leaseholder writes there, so once this process holds
    /// the lease none of them is anybody's work in progress.
    pub fn remove_temporaries_beside(&self, name: &str) -> io::Result<()> {
        let _lock = LeaseLock::acquire(&self.path)?;
        if !self.still_ours() {
            return Ok(());
        }
        let prefix = format!(".{name}.");
        for entry in fs::read_dir(lease_dir(&self.path))? {
            let file_name = entry?.file_name();
            let file_name = file_name.to_string_lossy();
            if file_name.starts_with(&prefix) && file_name.ends_with(".tmp") {
                remove_quietly(&lease_dir(&self.path).join(&*file_name));
            }
        }
        Ok(())
    }
}

/// A file read from beside a lease: its bytes and when it was last written or touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BesideFile {
    /// What it holds.
    pub bytes: Vec<u8>,
    /// Its modification time.
    pub modified: SystemTime,
}

/// Why a file beside a lease was not read.
#[derive(Debug, thiserror::Error)]
pub enum BesideError {
    /// It is larger than its reader accepts.
    #[error("{path} holds more than {limit} bytes")]
    TooLarge {
        /// Where it is.
        path: String,
        /// The most its reader accepts.
        limit: u64,
    },
    /// It could not be opened or read (a symbolic link is not followed).
    #[error("cannot read {path}: {error}")]
    Io {
        /// Where it is.
        path: String,
        /// What went wrong.
        error: io::Error,
    },
}

/// Reads the file `name` beside the lease at `lease` (the next server's side of
/// [`LeaseHandle::write_beside`]): `Ok(None)` when there is none. At most `limit` bytes
/// are read; a larger file is refused rather than read in full, and a symbolic link is
/// not followed.
pub fn read_beside(
    lease: &Path,
    name: &str,
    limit: u64,
) -> Result<Option<BesideFile>, BesideError> {
    use std::io::Read as _;
    let path = lease_dir(lease).join(name);
    let failed = |error: io::Error| BesideError::Io {
        path: path.display().to_string(),
        error,
    };
    let file = match files::no_follow(OpenOptions::new().read(true)).open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(failed(error)),
    };
    let metadata = file.metadata().map_err(failed)?;
    if !metadata.is_file() {
        return Err(failed(io::Error::other("it is not a regular file")));
    }
    let modified = metadata.modified().map_err(failed)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if bytes.len() as u64 > limit {
        return Err(BesideError::TooLarge {
            path: path.display().to_string(),
            limit,
        });
    }
    Ok(Some(BesideFile { bytes, modified }))
}

/// Whether the lease at `path` still carries `token`, read again only when the file is no
/// longer the one `verified` last found so; `verified` is kept only when the file did not move
/// while it was read.
fn recheck_token(path: &Path, token: &str, verified: &mut Option<FileIdentity>) -> bool {
    let before = FileIdentity::of(path);
    if before.is_some() && before == *verified {
        return true;
    }
    let still =
        matches!(read_lease(path), LeaseReading::Document(lease, _) if lease.token == token);
    *verified = (still && FileIdentity::of(path) == before)
        .then_some(before)
        .flatten();
    still
}

/// Another process's lease, as a reader that keeps talking to its server follows it: whether
/// the file still names that server, answered by a `stat` until somebody writes the lease, so
/// a reader can ask it often and still notice a take-over (a new server, a new token) at once.
pub struct LeaseWatch {
    path: PathBuf,
    token: String,
    verified: Option<FileIdentity>,
}

impl LeaseWatch {
    /// Follows the lease file at `path`, which was read as `lease`.
    pub fn new(path: PathBuf, lease: &Lease) -> LeaseWatch {
        LeaseWatch {
            path,
            token: lease.token.clone(),
            verified: None,
        }
    }

    /// Whether the lease on disk still carries the token it was read with.
    pub fn still_there(&mut self) -> bool {
        recheck_token(&self.path, &self.token, &mut self.verified)
    }
}

/// An exclusive lock (`flock` on Unix, `LockFileEx` on Windows) on `lease.lock` beside a lease, held until dropped (closing the file
/// releases it).
///
/// The lock file may be removed, but only by its holder ([`LeaseLock::remove`]). That alone
/// would not be safe: a process that opened the file before it was removed would go on to lock
/// a file nobody else can reach, while the next process creates and locks a new one, and both
/// would hold "the" lock. So every taker, once it holds a lock, checks that the file it locked
/// is still the one at the path, and starts again on whatever is there when it is not.
struct LeaseLock {
    file: File,
    path: PathBuf,
}

/// How many times a taker starts again on a lock file removed or replaced while it waited.
/// Each time means another process held the lock and let it go, so a handful is plenty; the
/// bound turns a file system whose file identities cannot be compared into an error rather
/// than a process spinning forever.
const LOCK_ATTEMPTS: usize = 100;

impl LeaseLock {
    fn acquire(lease: &Path) -> io::Result<LeaseLock> {
        let dir = lease_dir(lease);
        files::create_private_dir(dir)?;
        let path = dir.join(LOCK_FILE);
        for _ in 0..LOCK_ATTEMPTS {
            let file = files::private_file(
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false),
            )
            .open(&path)?;
            file.lock()?;
            if files::is_the_file_at(&file, &path)? {
                return Ok(LeaseLock { file, path });
            }
        }
        Err(io::Error::other(format!(
            "{} was removed or replaced {LOCK_ATTEMPTS} times while waiting to lock it",
            path.display()
        )))
    }

    /// Removes the lock file, then lets the lock go. Safe only because the lock is held until
    /// the file is gone: whoever waits on it finds, once it has the lock, that it holds a
    /// removed file, and starts again.
    fn remove(self) -> io::Result<()> {
        remove_if_present(&self.path)?;
        drop(self.file);
        Ok(())
    }
}

fn lease_dir(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

fn encode(lease: &Lease) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(lease)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Writes `bytes` to a new 0600 file in `dir`, named after the file `name` it is to replace,
/// and syncs it; returns its path.
fn write_temporary(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    let suffix = hex::encode(rand::random::<[u8; 8]>());
    let path = dir.join(format!(".{name}.{}.{suffix}.tmp", std::process::id()));
    create_exclusive(&path, bytes)?;
    Ok(path)
}

/// Creates `path` (0600) only if it does not exist, writes `bytes` and syncs them. A file
/// left half-written by a failure is removed.
fn create_exclusive(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file =
        files::private_file(OpenOptions::new().write(true).create_new(true)).open(path)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if written.is_err() {
        remove_quietly(path);
    }
    written
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Best-effort cleanup of a temporary file; the failure that made it stray is already
/// being reported.
fn remove_quietly(path: &Path) {
    if let Err(error) = fs::remove_file(path) {
        tracing::debug!(path = %path.display(), %error, "could not remove a temporary lease file");
    }
}

/// Makes a creation, rename or removal in `dir` durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Repository, git};

    fn lease_document_in(dir: &Path) -> (PathBuf, Lease) {
        (lease_in(dir), Lease::new_for_this_process(dir, "1.2.3"))
    }

    fn document(path: &Path) -> (Lease, Vec<u8>) {
        match read_lease(path) {
            LeaseReading::Document(lease, bytes) => (lease, bytes),
            other => panic!("expected a lease, read {other:?}"),
        }
    }

    #[test]
    fn a_new_lease_describes_this_process() {
        let lease = Lease::new_for_this_process(Path::new("/r"), "1.2.3");
        assert_eq!(lease.schema, LEASE_SCHEMA);
        assert_eq!(lease.pid, std::process::id());
        assert!(lease.owner_alive());
        assert_eq!(lease.token.len(), 64);
        assert!(lease.token.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(
            lease.token,
            Lease::new_for_this_process(Path::new("/r"), "1").token
        );
        assert_eq!((lease.root.as_str(), lease.url.as_deref()), ("/r", None));
        assert!(lease.executable.matches_disk());
        assert!(OffsetDateTime::parse(&lease.started_at, &Rfc3339).is_ok());
    }

    #[test]
    fn the_redacted_view_has_no_token() {
        let lease = Lease::new_for_this_process(Path::new("/r"), "1.2.3");
        let view = serde_json::to_value(lease.redacted()).unwrap();
        assert!(view.get("token").is_none());
        assert!(!view.to_string().contains(&lease.token));
        assert!(
            !format!("{lease:?}").contains(&lease.token),
            "nor does its Debug"
        );
        assert_eq!(view["pid"], lease.pid);
        assert_eq!(view["executable"]["size"], lease.executable.size);
    }

    #[cfg(unix)]
    #[test]
    fn create_is_exclusive_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lease) = lease_document_in(dir.path());
        let handle = try_create(&path, &lease).unwrap();
        assert_eq!(handle.path(), path);
        assert_eq!(handle.lease(), &lease);
        assert_eq!(document(&path).0, lease);

        let rival = Lease::new_for_this_process(dir.path(), "1.2.3");
        assert!(matches!(
            try_create(&path, &rival),
            Err(CreateError::Exists)
        ));
        assert_eq!(document(&path).0, lease, "the loser wrote nothing");

        let mode = |p: &Path| files::mode(&fs::metadata(p).unwrap()).unwrap() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        // Only the lease is left behind: no temporary files.
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, [LEASE_FILE]);
    }

    #[test]
    fn of_many_simultaneous_creators_exactly_one_wins() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = lease_document_in(dir.path());
        let winners: usize = std::thread::scope(|scope| {
            let racers: Vec<_> = (0..10)
                .map(|_| {
                    scope.spawn(|| {
                        let lease = Lease::new_for_this_process(dir.path(), "1");
                        try_create(&path, &lease).is_ok()
                    })
                })
                .collect();
            racers
                .into_iter()
                .map(|racer| usize::from(racer.join().unwrap()))
                .sum()
        });
        assert_eq!(winners, 1);
    }

    #[test]
    fn readings_cover_absent_empty_corrupt_and_documents() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEASE_FILE);
        assert_eq!(read_lease(&path), LeaseReading::Absent);

        fs::write(&path, "").unwrap();
        assert_eq!(read_lease(&path), LeaseReading::Empty);
        fs::write(&path, " \n").unwrap();
        assert_eq!(read_lease(&path), LeaseReading::Empty);

        fs::write(&path, "{\"schema\": \"majordomus-lease/v1\", \"pid\": ").unwrap();
        assert!(
            matches!(read_lease(&path), LeaseReading::Corrupt(why) if why.contains("not a lease"))
        );

        let lease = Lease::new_for_this_process(dir.path(), "1.2.3");
        let mut value = serde_json::to_value(&lease).unwrap();
        value["schema"] = "majordomus-lease/v9".into();
        fs::write(&path, value.to_string()).unwrap();
        assert!(matches!(read_lease(&path), LeaseReading::Corrupt(why) if why.contains("v9")));

        value["schema"] = LEASE_SCHEMA.into();
        value["from_the_future"] = serde_json::json!({"anything": [1, 2]});
        value.as_object_mut().unwrap().remove("url");
        let written = value.to_string().into_bytes();
        fs::write(&path, &written).unwrap();
        assert_eq!(read_lease(&path), LeaseReading::Document(lease, written));

        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        assert!(
            matches!(read_lease(&path), LeaseReading::Corrupt(why) if why.contains("cannot be read"))
        );
    }

    #[test]
    fn age_counts_from_started_at_or_else_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut lease) = lease_document_in(dir.path());
        lease.started_at = "2026-01-01T00:00:00Z".into();
        let now =
            SystemTime::from(OffsetDateTime::parse("2026-01-01T00:00:07Z", &Rfc3339).unwrap());
        let reading = LeaseReading::Document(lease.clone(), Vec::new());
        assert_eq!(
            lease_age(&path, &reading, now),
            Some(Duration::from_secs(7))
        );
        let before = now - Duration::from_secs(60);
        assert_eq!(lease_age(&path, &reading, before), Some(Duration::ZERO));

        assert_eq!(
            lease_age(&path, &LeaseReading::Empty, now),
            None,
            "no file yet"
        );
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, "").unwrap();
        let written = fs::metadata(&path).unwrap().modified().unwrap();
        let later = written + Duration::from_secs(3);
        assert_eq!(
            lease_age(&path, &LeaseReading::Empty, later),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            lease_age(&path, &LeaseReading::Absent, later),
            None,
            "a lease read as absent has no age, whatever is written since"
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_url_is_published_only_while_the_lease_is_ours() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lease) = lease_document_in(dir.path());
        let mut handle = try_create(&path, &lease).unwrap();
        assert!(handle.still_ours());
        assert!(handle.publish_url("http://127.0.0.1:4100").unwrap());
        let (on_disk, _) = document(&path);
        assert_eq!(on_disk.url.as_deref(), Some("http://127.0.0.1:4100"));
        assert_eq!(on_disk.token, lease.token);
        assert_eq!(handle.lease(), &on_disk);
        assert_eq!(
            files::mode(&fs::metadata(&path).unwrap()).unwrap() & 0o777,
            0o600
        );

        // Someone takes the lease over and creates their own.
        let (_, judged) = document(&path);
        assert!(take_over(&path, &judged).unwrap());
        let rival = Lease::new_for_this_process(dir.path(), "1.2.3");
        try_create(&path, &rival).unwrap();
        assert!(!handle.still_ours());
        assert!(!handle.publish_url("http://127.0.0.1:4200").unwrap());
        assert_eq!(document(&path).0, rival, "their lease is untouched");
        assert!(!handle.release(), "and not removed by the old holder");
        assert_eq!(document(&path).0, rival);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_beside_the_lease_changes_only_while_the_lease_is_ours() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lease) = lease_document_in(dir.path());
        let handle = try_create(&path, &lease).unwrap();
        let beside = path.with_file_name("claims.json");
        assert!(read_beside(&path, "claims.json", 64).unwrap().is_none());
        assert!(
            !handle.touch_beside("claims.json").unwrap(),
            "nothing to date"
        );
        assert!(handle.write_beside("claims.json", Some(b"first")).unwrap());
        assert_eq!(
            files::mode(&fs::metadata(&beside).unwrap()).unwrap() & 0o777,
            0o600
        );
        let past = SystemTime::now() - Duration::from_secs(600);
        File::options()
            .write(true)
            .open(&beside)
            .unwrap()
            .set_modified(past)
            .unwrap();
        let read = read_beside(&path, "claims.json", 64).unwrap().unwrap();
        assert_eq!(
            (read.bytes.as_slice(), read.modified),
            (&b"first"[..], past)
        );
        assert!(handle.touch_beside("claims.json").unwrap());
        let touched = read_beside(&path, "claims.json", 64).unwrap().unwrap();
        assert!(touched.modified > past);
        assert!(matches!(
            read_beside(&path, "claims.json", 4),
            Err(BesideError::TooLarge { limit: 4, .. })
        ));

        // a process killed while replacing it left a temporary file
        let leftover = path.with_file_name(".claims.json.1.00.tmp");
        fs::write(&leftover, b"half").unwrap();
        handle.remove_temporaries_beside("claims.json").unwrap();
        assert!(!leftover.exists());
        assert!(path.exists() && beside.exists(), "only the leftover went");

        // Someone takes the lease over: the old holder neither writes, dates nor removes it.
        let (_, judged) = document(&path);
        assert!(take_over(&path, &judged).unwrap());
        try_create(&path, &Lease::new_for_this_process(dir.path(), "1.2.3")).unwrap();
        let before = fs::metadata(&beside).unwrap().modified().unwrap();
        assert!(!handle.write_beside("claims.json", Some(b"second")).unwrap());
        assert!(!handle.write_beside("claims.json", None).unwrap());
        assert!(!handle.touch_beside("claims.json").unwrap());
        assert_eq!(fs::read(&beside).unwrap(), b"first");
        assert_eq!(fs::metadata(&beside).unwrap().modified().unwrap(), before);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_beside_the_lease_is_removed_when_nothing_is_left_to_keep() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lease) = lease_document_in(dir.path());
        let handle = try_create(&path, &lease).unwrap();
        assert!(
            handle.write_beside("claims.json", None).unwrap(),
            "none to remove"
        );
        assert!(handle.write_beside("claims.json", Some(b"x")).unwrap());
        assert!(handle.write_beside("claims.json", None).unwrap());
        assert!(read_beside(&path, "claims.json", 64).unwrap().is_none());
        // a link is not followed
        let elsewhere = dir.path().join("elsewhere");
        fs::write(&elsewhere, b"secret").unwrap();
        std::os::unix::fs::symlink(&elsewhere, path.with_file_name("claims.json")).unwrap();
        assert!(matches!(
            read_beside(&path, "claims.json", 64),
            Err(BesideError::Io { .. })
        ));
        assert!(handle.touch_beside("claims.json").is_err());
    }

    #[test]
    fn a_recheck_follows_the_file_and_sees_a_take_over_or_an_edit() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lease) = lease_document_in(dir.path());
        let mut handle = try_create(&path, &lease).unwrap();
        assert!(handle.recheck());
        assert!(handle.recheck(), "unchanged, still ours");
        assert!(handle.publish_url("http://127.0.0.1:4100").unwrap());
        assert!(
            handle.recheck(),
            "our own new file is read again and found ours"
        );

        // The same file edited in place to name another token.
        let (mut edited, _) = document(&path);
        edited.token = "t".repeat(edited.token.len());
        fs::write(&path, serde_json::to_vec_pretty(&edited).unwrap()).unwrap();
        assert!(
            !handle.recheck(),
            "an edit is seen though the file is the same inode"
        );

        // Taken over: a new file with a rival's lease.
        let (_, judged) = document(&path);
        assert!(take_over(&path, &judged).unwrap());
        try_create(&path, &Lease::new_for_this_process(dir.path(), "1.2.3")).unwrap();
        assert!(!handle.recheck());
    }

    #[test]
    fn a_watch_sees_the_lease_it_read_until_another_server_takes_it_over() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lease) = lease_document_in(dir.path());
        let mut handle = try_create(&path, &lease).unwrap();
        assert!(handle.publish_url("http://127.0.0.1:4100").unwrap());
        let (read, judged) = document(&path);
        let mut watch = LeaseWatch::new(path.clone(), &read);
        assert!(watch.still_there());
        assert!(watch.still_there(), "unchanged, a stat answers");

        assert!(take_over(&path, &judged).unwrap());
        try_create(&path, &Lease::new_for_this_process(dir.path(), "1.2.3")).unwrap();
        assert!(
            !watch.still_there(),
            "a new server's lease is not the one read"
        );
        fs::remove_file(&path).unwrap();
        assert!(!watch.still_there(), "nor is no lease at all");
    }

    #[test]
    fn release_removes_only_our_own_lease() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lease) = lease_document_in(dir.path());
        let handle = try_create(&path, &lease).unwrap();
        assert!(handle.release());
        assert_eq!(read_lease(&path), LeaseReading::Absent);
    }

    #[test]
    fn a_released_lease_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lease) = lease_document_in(dir.path());
        let mut handle = try_create(&path, &lease).unwrap();
        assert!(handle.publish_url("http://127.0.0.1:4100").unwrap());
        assert!(path.with_file_name(LOCK_FILE).exists(), "publishing locked");
        assert!(handle.release());
        let left: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    #[test]
    fn a_lock_file_removed_or_replaced_after_opening_is_not_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = lease_document_in(dir.path());
        let held = LeaseLock::acquire(&path).unwrap();
        let lock_path = held.path.clone();
        // A rival opened the lock file and now waits for its lock.
        let waiting = File::open(&lock_path).unwrap();
        assert!(files::is_the_file_at(&waiting, &lock_path).unwrap());

        held.remove().unwrap();
        assert!(!lock_path.exists());
        assert!(
            !files::is_the_file_at(&waiting, &lock_path).unwrap(),
            "a removed lock file is no lock"
        );
        let next = LeaseLock::acquire(&path).unwrap();
        assert!(
            !files::is_the_file_at(&waiting, &lock_path).unwrap(),
            "nor is the one it was replaced by"
        );
        assert!(files::is_the_file_at(&next.file, &lock_path).unwrap());
    }

    #[test]
    fn the_lock_excludes_even_while_its_file_is_removed_and_made_again() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = lease_document_in(dir.path());
        let inside = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for racer in 0..8 {
                let (path, inside) = (&path, &inside);
                scope.spawn(move || {
                    for round in 0..200 {
                        let lock = LeaseLock::acquire(path).unwrap();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        if (racer + round) % 3 == 0 {
                            lock.remove().unwrap();
                        }
                    }
                });
            }
        });
    }

    #[test]
    fn take_over_removes_exactly_the_judged_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lease) = lease_document_in(dir.path());
        let mut handle = try_create(&path, &lease).unwrap();
        let (_, judged) = document(&path);

        // The holder published its URL after the lease was judged: the judgement is void.
        handle.publish_url("http://127.0.0.1:4100").unwrap();
        assert!(!take_over(&path, &judged).unwrap());
        assert!(handle.still_ours());

        let (_, current) = document(&path);
        assert!(take_over(&path, &current).unwrap());
        assert_eq!(read_lease(&path), LeaseReading::Absent);
        assert!(
            take_over(&path, &current).unwrap(),
            "already gone counts as taken"
        );

        fs::write(&path, "").unwrap();
        assert!(!take_over(&path, b"{}").unwrap());
        assert!(
            take_over(&path, b"").unwrap(),
            "an empty lease can be judged and removed"
        );
        assert_eq!(read_lease(&path), LeaseReading::Absent);
    }

    #[test]
    fn leases_sit_in_each_checkouts_git_dir_out_of_git_status() {
        let repo = Repository::new();
        let linked = repo.add_worktree("feature");
        let mut paths = Vec::new();
        for root in [repo.root(), linked.clone()] {
            let checkout = Checkout::discover(&root).unwrap();
            let path = lease_path(&checkout);
            let git_dir = checkout.git_dir.as_ref().unwrap();
            assert_eq!(path, git_dir.join("majordomus/lease.json"));
            let mut handle = try_create(&path, &Lease::new_for_this_process(&root, "1")).unwrap();
            assert!(handle.publish_url("http://127.0.0.1:1").unwrap());
            paths.push(path);
        }
        assert_ne!(paths[0], paths[1], "each checkout has its own lease");
        for root in [repo.root(), linked] {
            let status = git(
                &root,
                &[
                    "status",
                    "--porcelain",
                    "--ignored",
                    "--untracked-files=all",
                ],
            );
            assert_eq!(status, "", "in {}", root.display());
        }
    }

    #[test]
    fn outside_git_the_lease_is_keyed_by_checkout_id_in_a_private_dir() {
        let dir = tempfile::tempdir().unwrap();
        let checkout = Checkout::discover(dir.path()).unwrap();
        let path = lease_path(&checkout);
        assert!(path.ends_with(Path::new("majordomus").join(&checkout.id).join(LEASE_FILE)));
        assert!(!path.starts_with(&checkout.root));

        let env = |pairs: &'static [(&str, &str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| OsString::from(value))
            }
        };
        let runtime = &[
            ("XDG_RUNTIME_DIR", "/run/user/7"),
            ("XDG_CACHE_HOME", "/c"),
            ("HOME", "/h"),
        ];
        assert_eq!(private_base(env(runtime)), Path::new("/run/user/7"));
        assert_eq!(
            private_base(env(&[("XDG_CACHE_HOME", "/c"), ("HOME", "/h")])),
            Path::new("/c")
        );
        let relative = &[
            ("XDG_RUNTIME_DIR", "run"),
            ("XDG_CACHE_HOME", ""),
            ("HOME", "/h"),
        ];
        assert_eq!(private_base(env(relative)), Path::new("/h/.cache"));
        assert!(private_base(env(&[])).starts_with(std::env::temp_dir()));
    }
}
