//! A JSON file of the repository's common git dir that every worktree's server reads and
//! changes alike: the lease table ([`crate::lease_table`]) and the mailbox
//! ([`crate::mailbox_file`]).
//!
//! Every change is a read, a change and a write under an exclusive `flock` on a lock file
//! beside it, so no two processes change it from the same reading; the kernel lets the lock
//! go when its process dies, so a killed server never leaves the file locked. The file is
//! replaced whole (written beside it, synced, renamed over it), so a reader needs no lock and
//! never reads half of it. What it holds is written in a wire type of its own ([`Stored`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::files;

/// The most bytes such a file is read to: a full lease table (every lease with a full queue)
/// or a full mailbox is far smaller; a larger file is not majordomus's and is refused.
const FILE_BYTES: u64 = 8 * 1024 * 1024;

/// A value kept as JSON in a shared file, and in a federated repository's key: written in a
/// wire type of its own, converted from the domain's value on writing and back into it on
/// reading. The domain's types know no serialisation, and a file outlives the build that
/// wrote it, so what is kept changes only where its wire type is written down.
pub trait Stored: Default + From<Self::Wire> {
    /// The value as it is written.
    type Wire: Serialize + DeserializeOwned + From<Self>;

    /// The value read from its JSON.
    fn read(bytes: &[u8]) -> serde_json::Result<Self> {
        serde_json::from_slice::<Self::Wire>(bytes).map(Self::from)
    }

    /// The JSON it is written as.
    fn written(self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&Self::Wire::from(self))
    }
}

/// What identifies one version of the file: it is replaced whole by every change, so a new
/// inode (or time, or size) says it changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStamp {
    ino: u64,
    mtime: i64,
    mtime_nsec: i64,
    len: u64,
}

/// How long after its last write a file's stamp is sure to be that version's alone: a
/// filesystem's clock can be as coarse as a few milliseconds (or seconds), and a write in the
/// same tick, of the same length, to an inode freed and given out again, would carry the
/// same stamp. A second, as git takes its index to be racy.
const SETTLED_AFTER: Duration = Duration::from_secs(1);

/// How long a reading taken at a stamp that was not settled answers, the file still showing
/// that stamp: another write in the same tick may have left it too, so a reader reads again
/// soon, not at once (a waiting request polls about this often).
pub const UNSETTLED_READING_LASTS: Duration = Duration::from_millis(20);

/// Whether a reading taken at a stamp the file still shows answers, `age` after it was taken:
/// always if the stamp was settled then ([`FileStamp::settled`]), otherwise for
/// [`UNSETTLED_READING_LASTS`].
pub fn reading_answers(settled: bool, age: Duration) -> bool {
    settled || age < UNSETTLED_READING_LASTS
}

/// Where the worktree registry's notice, which covers the shared files, stood when a kept
/// reading of one was last found current. While the notice stands there, nothing changed
/// the file, and the reading answers with no `stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Vouched(Option<u64>);

impl Vouched {
    /// A reading made by a look that began when the notice stood at `generation` (`None`:
    /// the notice does not cover the file, or watches nothing).
    pub fn at(generation: Option<u64>) -> Vouched {
        Vouched(generation)
    }

    /// Whether the notice still stands at `generation`, where the reading was vouched for.
    pub fn holds(self, generation: Option<u64>) -> bool {
        generation.is_some() && self.0 == generation
    }

    /// The reading was found at the stamp it was taken at, by a look that began at
    /// `generation`: vouched for there, when that stamp was settled. An unsettled stamp may
    /// be another write's in the same tick as well, and answers only briefly.
    pub fn confirm(&mut self, generation: Option<u64>, settled: bool) {
        if generation.is_some() && settled {
            self.0 = generation;
        }
    }
}

impl FileStamp {
    /// Whether, as of `now`, no later write can leave the file with this same stamp: it was
    /// written at least [`SETTLED_AFTER`] before, so any later write has a later time. A
    /// reading taken at a stamp that was not settled may be of another version.
    pub fn settled(&self, now: SystemTime) -> bool {
        let (Ok(seconds), Ok(nanos)) = (u64::try_from(self.mtime), u32::try_from(self.mtime_nsec))
        else {
            return false;
        };
        UNIX_EPOCH
            .checked_add(Duration::new(seconds, 0))
            .and_then(|at| at.checked_add(Duration::from_nanos(u64::from(nanos))))
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age >= SETTLED_AFTER)
    }
}

/// The lease table's name among the shared files.
pub(crate) const LEASE_TABLE: &str = "leases";

/// The mailbox's name among the shared files.
pub(crate) const MAILBOX: &str = "messages";

/// Every shared file of a repository, by name. The worktree registry's notice covers them
/// all, so that a reading of one is trusted while the notice stands still, with no `stat`.
pub const SHARED_FILES: [&str; 2] = [LEASE_TABLE, MAILBOX];

/// Where the shared file `name` of the repository whose common git dir is `common_dir` is.
pub fn shared_path(common_dir: &Path, name: &str) -> PathBuf {
    common_dir.join("majordomus").join(format!("{name}.json"))
}

/// One shared file of a repository, `<git-common-dir>/majordomus/<name>.json`, with its lock
/// `<name>.lock` beside it.
#[derive(Clone, Debug)]
pub(crate) struct SharedFile {
    path: PathBuf,
    lock: PathBuf,
    /// What the file holds, as its errors name it: "lease table".
    what: &'static str,
}

impl SharedFile {
    /// The file `name` of the repository whose common git dir is `common_dir`.
    pub(crate) fn new(common_dir: &Path, name: &str, what: &'static str) -> SharedFile {
        let path = shared_path(common_dir, name);
        SharedFile {
            lock: path.with_extension("lock"),
            path,
            what,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What the file holds now; the empty value when nobody wrote it yet.
    pub(crate) fn read<V: Stored>(&self) -> io::Result<V> {
        let bytes = match File::open(&self.path) {
            Ok(file) => {
                let mut bytes = Vec::new();
                io::Read::read_to_end(&mut io::Read::take(file, FILE_BYTES + 1), &mut bytes)?;
                bytes
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(V::default()),
            Err(error) => return Err(error),
        };
        if bytes.len() as u64 > FILE_BYTES {
            return Err(io::Error::other(format!(
                "{} is over {FILE_BYTES} bytes, more than any {}",
                self.path.display(),
                self.what
            )));
        }
        V::read(&bytes).map_err(|error| {
            io::Error::other(format!(
                "{} is not a {} ({error}); remove it to start again",
                self.path.display(),
                self.what
            ))
        })
    }

    /// Which version of the file is there now; `None` when there is none.
    pub(crate) fn stamp(&self) -> Option<FileStamp> {
        fs::metadata(&self.path).ok().map(|m| {
            let (mtime, mtime_nsec) = files::modified(&m);
            FileStamp {
                ino: files::identity(&m).1,
                mtime,
                mtime_nsec,
                len: m.len(),
            }
        })
    }

    /// Changes what the file holds under the lock: `change` gets it as it is and answers
    /// whether it changed it; a changed value is written before the lock goes.
    pub(crate) fn change<V: Stored, T>(
        &self,
        change: impl FnOnce(&mut V) -> (T, bool),
    ) -> io::Result<T> {
        self.change_keeping(change, |_| ())
            .map(|(answer, _)| answer)
    }

    /// [`SharedFile::change`], handing back what `keep` takes of a changed value (a copy of
    /// it, say) with the stamp of the file as written ([`Written`]).
    pub(crate) fn change_keeping<V: Stored, T, K>(
        &self,
        change: impl FnOnce(&mut V) -> (T, bool),
        keep: impl FnOnce(&V) -> K,
    ) -> io::Result<(T, Option<Written<K>>)> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        files::create_private_dir(dir)?;
        let lock = files::private_file(
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )
        .open(&self.lock)?;
        lock.lock()?;
        let mut value = self.read()?;
        let (answer, changed) = change(&mut value);
        if changed {
            let kept = keep(&value);
            let mut file = tempfile::NamedTempFile::new_in(dir)?;
            files::set_mode(file.path(), 0o600)?;
            let mut bytes = value.written().map_err(io::Error::other)?;
            bytes.push(b'\n');
            file.write_all(&bytes)?;
            file.as_file().sync_all()?;
            file.persist(&self.path).map_err(|error| error.error)?;
            // Stamped while the lock is held: no other change can have replaced the file yet.
            let written = self.stamp().map(|stamp| Written { stamp, value: kept });
            drop(lock);
            return Ok((answer, written));
        }
        drop(lock);
        Ok((answer, None))
    }
}

/// What a change kept of the value it wrote (see [`SharedFile::change_keeping`]), and the
/// stamp of the file holding that value, taken before the lock went: for as long as the file
/// shows that stamp it holds that value, so a reader in this process need not read it back
/// (the stamp's [`FileStamp::settled`] rule applies as to any reading).
#[derive(Debug)]
pub struct Written<V> {
    pub stamp: FileStamp,
    pub value: V,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written_at(seconds: i64, nanos: i64) -> FileStamp {
        FileStamp {
            ino: 7,
            mtime: seconds,
            mtime_nsec: nanos,
            len: 10,
        }
    }

    #[test]
    fn a_stamp_settles_a_second_after_its_write() {
        let stamp = written_at(1_000, 500_000_000);
        let at = |seconds: u64, nanos: u32| UNIX_EPOCH + Duration::new(seconds, nanos);
        assert!(!stamp.settled(at(1_000, 600_000_000)), "the same tick");
        assert!(!stamp.settled(at(1_001, 499_999_999)));
        assert!(stamp.settled(at(1_001, 500_000_000)));
        assert!(!stamp.settled(at(999, 0)), "written after now");
        assert!(
            !written_at(-5, 0).settled(at(1_000, 0)),
            "a time before the epoch is not trusted"
        );
    }
}
