//! The repository's mailbox on disk: `<git-common-dir>/majordomus/messages.json`, one file
//! every worktree's server reaches alike, so a message to a session of another worktree is
//! queued where that session's server reads it, and its receipt is read where it was sent.
//!
//! As for the lease table, every change is a read, a change and a write under an exclusive
//! `flock` (on `messages.lock` beside it), and the file is replaced whole, so a reader needs
//! no lock and never reads half a mailbox. The mailbox bounds itself
//! (`majordomus_domain::messages`), so the file stays small.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use majordomus_domain::messages::Mailbox;

use crate::files;

/// The most bytes the file is read to: a full mailbox is far smaller; a larger file is not
/// majordomus's and is refused.
const MAILBOX_BYTES: u64 = 8 * 1024 * 1024;

/// The mailbox of one repository, by its common git dir.
#[derive(Clone, Debug)]
pub struct MailboxFile {
    path: PathBuf,
}

/// What identifies one version of the file: it is replaced whole by every change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MailboxStamp {
    ino: u64,
    mtime: i64,
    mtime_nsec: i64,
    len: u64,
}

impl MailboxFile {
    /// The mailbox of the repository whose common git dir is `common_dir`.
    pub fn new(common_dir: &Path) -> MailboxFile {
        MailboxFile {
            path: common_dir.join("majordomus").join("messages.json"),
        }
    }

    /// The mailbox as it is now; empty when nobody wrote one yet.
    pub fn read(&self) -> io::Result<Mailbox> {
        let bytes = match File::open(&self.path) {
            Ok(file) => {
                let mut bytes = Vec::new();
                io::Read::read_to_end(&mut io::Read::take(file, MAILBOX_BYTES + 1), &mut bytes)?;
                bytes
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Ok(Mailbox::default());
            }
            Err(error) => return Err(error),
        };
        if bytes.len() as u64 > MAILBOX_BYTES {
            return Err(io::Error::other(format!(
                "{} is over {MAILBOX_BYTES} bytes, more than any mailbox",
                self.path.display()
            )));
        }
        serde_json::from_slice(&bytes).map_err(|error| {
            io::Error::other(format!(
                "{} is not a mailbox ({error}); remove it to start again",
                self.path.display()
            ))
        })
    }

    /// Which version of the file is there now; `None` when there is none.
    pub fn stamp(&self) -> Option<MailboxStamp> {
        fs::metadata(&self.path).ok().map(|m| {
            let (mtime, mtime_nsec) = files::modified(&m);
            MailboxStamp {
                ino: files::identity(&m).1,
                mtime,
                mtime_nsec,
                len: m.len(),
            }
        })
    }

    /// Changes the mailbox under the lock: `change` gets it as it is and answers whether it
    /// changed it; a changed mailbox is written before the lock goes.
    pub fn change<T>(&self, change: impl FnOnce(&mut Mailbox) -> (T, bool)) -> io::Result<T> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        files::create_private_dir(dir)?;
        let lock = files::private_file(
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )
        .open(dir.join("messages.lock"))?;
        lock.lock()?;
        let mut mailbox = self.read()?;
        let (answer, changed) = change(&mut mailbox);
        if changed {
            let mut file = tempfile::NamedTempFile::new_in(dir)?;
            files::set_mode(file.path(), 0o600)?;
            let mut bytes = serde_json::to_vec(&mailbox).map_err(io::Error::other)?;
            bytes.push(b'\n');
            file.write_all(&bytes)?;
            file.as_file().sync_all()?;
            file.persist(&self.path).map_err(|error| error.error)?;
        }
        drop(lock);
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use majordomus_domain::messages::{Outgoing, Party};

    use super::*;

    #[test]
    fn changes_are_kept_and_read_back_by_another_reader() {
        let dir = tempfile::tempdir().unwrap();
        let file = MailboxFile::new(dir.path());
        assert_eq!(file.read().unwrap(), Mailbox::default());
        let party = |id: &str| Party {
            qualified_id: id.into(),
            connected_at: "t".into(),
            label: id.into(),
            checkout: "c".into(),
            machine: None,
        };
        let id = file
            .change(|mailbox| {
                let sent = mailbox.send(
                    Outgoing {
                        from: party("p1@c"),
                        addressed: "p2@c".into(),
                        to: vec![party("p2@c")],
                        text: "hello".into(),
                        reply_to: None,
                        handoff: Vec::new(),
                    },
                    1,
                );
                (sent, true)
            })
            .unwrap()
            .unwrap();
        let stamp = file.stamp();
        assert!(stamp.is_some());
        let again = MailboxFile::new(dir.path()).read().unwrap();
        assert_eq!(again.message(id).unwrap().text, "hello");
        file.change(|_| ((), false)).unwrap();
        assert_eq!(file.stamp(), stamp, "an unchanged mailbox is not written");
    }
}
