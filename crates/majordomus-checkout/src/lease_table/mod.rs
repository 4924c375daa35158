//! The repository's lease table on disk: `<git-common-dir>/majordomus/leases.json`, one
//! file every worktree's server and every `majordomus lease` reach alike.
//!
//! It is changed under its lock (`leases.lock`) and replaced whole, as every shared file is
//! ([`crate::shared_file`]), so two processes never both grant one lease, a killed server
//! never leaves the table locked, and a reader needs no lock. It outlives every server: a
//! restart finds the holders and the ports handed out as they were. It is written in types of
//! its own ([`wire`]), which the federation's key is written in too.

pub mod wire;

use std::io;
use std::path::Path;

use majordomus_domain::leases::{Holder, LeaseTable, Life, ProcessId};

use crate::process::{process_alive, process_start_time};
use crate::shared_file::{FileStamp, LEASE_TABLE, SharedFile, Stored};

impl Stored for LeaseTable {
    type Wire = wire::LeaseTable;
}

/// The lease table of one repository, by its common git dir.
#[derive(Clone, Debug)]
pub struct LeaseTableFile {
    file: SharedFile,
}

impl LeaseTableFile {
    /// The table of the repository whose common git dir is `common_dir`.
    pub fn new(common_dir: &Path) -> LeaseTableFile {
        LeaseTableFile {
            file: SharedFile::new(common_dir, LEASE_TABLE, "lease table"),
        }
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The table as it is now; empty when nobody wrote one yet.
    pub fn read(&self) -> io::Result<LeaseTable> {
        self.file.read()
    }

    /// Which version of the file is there now; `None` when there is none.
    pub fn stamp(&self) -> Option<FileStamp> {
        self.file.stamp()
    }

    /// Changes the table under the lock: `change` gets the table as it is and answers
    /// whether it changed it; a changed table is written before the lock goes.
    pub fn change<T>(&self, change: impl FnOnce(&mut LeaseTable) -> (T, bool)) -> io::Result<T> {
        self.file.change(change)
    }
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
    use std::fs;
    use std::time::SystemTime;

    use super::*;
    use crate::files;
    use majordomus_domain::leases::LeaseTtl;

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
                LeaseTtl::check(5).unwrap(),
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
