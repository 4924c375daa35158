//! The repository's lease table on disk: `<git-common-dir>/majordomus/leases.json`, one
//! file every worktree's server and every `majordomus lease` reach alike.
//!
//! Every change is a read, a change and a write under an exclusive `flock` on `leases.lock`
//! beside it, so two processes never both grant one lease; the kernel lets the lock go when
//! its process dies, so a killed server never leaves the table locked. The file is replaced
//! whole (written beside it, synced, renamed over it), so a reader needs no lock and never
//! reads half a table, and it outlives every server: a restart finds the holders and the
//! ports handed out as they were.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use majordomus_domain::leases::{Holder, LeaseTable, Life, ProcessId};

use crate::files;
use crate::process::{process_alive, process_start_time};

/// The most bytes the table file is read to: a full table (every lease with a full queue)
/// is far smaller; a larger file is not majordomus's and is refused.
const TABLE_BYTES: u64 = 8 * 1024 * 1024;

/// The lease table of one repository, by its common git dir.
#[derive(Clone, Debug)]
pub struct LeaseTableFile {
    path: PathBuf,
}

/// What identifies one version of the file: it is replaced whole by every change, so a new
/// inode (or time, or size) says it changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableStamp {
    ino: u64,
    mtime_nsec: i64,
    mtime: i64,
    len: u64,
}

impl LeaseTableFile {
    /// The table of the repository whose common git dir is `common_dir`.
    pub fn new(common_dir: &Path) -> LeaseTableFile {
        LeaseTableFile {
            path: common_dir.join("majordomus").join("leases.json"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The table as it is now; empty when nobody wrote one yet.
    pub fn read(&self) -> io::Result<LeaseTable> {
        read_table(&self.path)
    }

    /// Which version of the file is there now; `None` when there is none.
    pub fn stamp(&self) -> Option<TableStamp> {
        fs::metadata(&self.path).ok().map(|m| {
            let (mtime, mtime_nsec) = files::modified(&m);
            TableStamp {
                ino: files::identity(&m).1,
                mtime,
                mtime_nsec,
                len: m.len(),
            }
        })
    }

    /// Changes the table under the lock: `change` gets the table as it is and answers
    /// whether it changed it; a changed table is written before the lock goes.
    pub fn change<T>(&self, change: impl FnOnce(&mut LeaseTable) -> (T, bool)) -> io::Result<T> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        files::create_private_dir(dir)?;
        let lock = files::private_file(
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )
        .open(dir.join("leases.lock"))?;
        lock.lock()?;
        let mut table = read_table(&self.path)?;
        let (answer, changed) = change(&mut table);
        if changed {
            write_table(&self.path, &table)?;
        }
        drop(lock);
        Ok(answer)
    }
}

fn read_table(path: &Path) -> io::Result<LeaseTable> {
    let bytes = match File::open(path) {
        Ok(file) => {
            let mut bytes = Vec::new();
            io::Read::read_to_end(&mut io::Read::take(file, TABLE_BYTES + 1), &mut bytes)?;
            bytes
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(LeaseTable::default()),
        Err(error) => return Err(error),
    };
    if bytes.len() as u64 > TABLE_BYTES {
        return Err(io::Error::other(format!(
            "{} is over {TABLE_BYTES} bytes, more than any lease table",
            path.display()
        )));
    }
    serde_json::from_slice(&bytes).map_err(|error| {
        io::Error::other(format!(
            "{} is not a lease table ({error}); remove it to start again",
            path.display()
        ))
    })
}

fn write_table(path: &Path, table: &LeaseTable) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    files::set_mode(file.path(), 0o600)?;
    let mut bytes = serde_json::to_vec(table).map_err(io::Error::other)?;
    bytes.push(b'\n');
    file.write_all(&bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// This process, as a lease's life names it.
pub fn this_process() -> ProcessId {
    process_id(std::process::id())
}

/// Process `pid`, with its start time where it can be read.
pub fn process_id(pid: u32) -> ProcessId {
    ProcessId {
        pid,
        start: process_start_time(pid),
    }
}

/// Whether what `holder`'s life hangs on still runs, as any process can tell: the process,
/// or the server keeping the session (whose departure that server itself reports).
pub fn lives(holder: &Holder) -> bool {
    let process = match &holder.life {
        Life::Session { server, .. } => server,
        Life::Process { process } => process,
    };
    process_alive(process.pid, process.start)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;

    #[test]
    fn changes_are_kept_and_read_back_by_another_reader() {
        let dir = tempfile::tempdir().unwrap();
        let file = LeaseTableFile::new(dir.path());
        assert_eq!(file.read().unwrap(), LeaseTable::default());
        assert_eq!(file.stamp(), None);
        let holder = Holder {
            key: "k".into(),
            label: "me".into(),
            checkout: "c".into(),
            life: Life::Process {
                process: this_process(),
            },
            machine: None,
        };
        assert!(lives(&holder));
        file.change(|table| {
            let granted = table.acquire(
                "test-suite",
                holder.clone(),
                Duration::from_secs(5),
                SystemTime::now(),
            );
            (granted, true)
        })
        .unwrap()
        .unwrap();
        let stamp = file.stamp().unwrap();
        let again = LeaseTableFile::new(dir.path()).read().unwrap();
        assert_eq!(
            again.leases["test-suite"].holder.as_ref().unwrap().holder,
            holder
        );
        assert_eq!(file.change(|_| ((), false)).ok(), Some(()));
        assert_eq!(
            file.stamp(),
            Some(stamp),
            "an unchanged table is not written"
        );
        if let Some(mode) = files::mode(&fs::metadata(file.path()).unwrap()) {
            assert_eq!(mode & 0o777, 0o600);
        }
        fs::write(file.path(), "{").unwrap();
        let refused = file.read().unwrap_err().to_string();
        assert!(refused.contains("not a lease table"), "{refused}");
    }
}
