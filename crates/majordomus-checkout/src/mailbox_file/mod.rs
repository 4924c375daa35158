//! The repository's mailbox on disk: `<git-common-dir>/majordomus/messages.json`, one file
//! every worktree's server reaches alike, so a message to a session of another worktree is
//! queued where that session's server reads it, and its receipt is read where it was sent.
//!
//! It is changed under its lock (`messages.lock`) and replaced whole, as every shared file is
//! ([`crate::shared_file`]), so a reader needs no lock and never reads half a mailbox. The
//! mailbox bounds itself (`majordomus_domain::messages`), so the file stays small. It is
//! written in types of its own ([`wire`]), which the federation's key is written in too.

pub mod wire;

use std::io;
use std::path::Path;

use majordomus_domain::messages::Mailbox;

use crate::shared_file::{FileStamp, MAILBOX, SharedFile, Stored, Written};

impl Stored for Mailbox {
    type Wire = wire::Mailbox;
}

/// The mailbox of one repository, by its common git dir.
#[derive(Clone, Debug)]
pub struct MailboxFile {
    file: SharedFile,
}

impl MailboxFile {
    /// The mailbox of the repository whose common git dir is `common_dir`.
    pub fn new(common_dir: &Path) -> MailboxFile {
        MailboxFile {
            file: SharedFile::new(common_dir, MAILBOX, "mailbox"),
        }
    }

    /// The mailbox as it is now; empty when nobody wrote one yet.
    pub fn read(&self) -> io::Result<Mailbox> {
        self.file.read()
    }

    /// Which version of the file is there now; `None` when there is none.
    pub fn stamp(&self) -> Option<FileStamp> {
        self.file.stamp()
    }

    /// Where the file is: which repository's mailbox this is.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Changes the mailbox under the lock: `change` gets it as it is and answers whether it
    /// changed it; a changed mailbox is written before the lock goes, and handed back with
    /// the stamp it was written at.
    pub fn change<T>(
        &self,
        change: impl FnOnce(&mut Mailbox) -> (T, bool),
    ) -> io::Result<(T, Option<Written<Mailbox>>)> {
        self.file.change_keeping(change, Mailbox::clone)
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
            connected_at: Some("2026-12-01T10:00:00Z".parse().unwrap()),
            label: id.into(),
            checkout: "c".into(),
            machine: None,
        };
        let (id, written) = file
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
            .unwrap();
        let (id, written) = (id.unwrap(), written.expect("a changed mailbox is written"));
        let stamp = file.stamp();
        assert_eq!(
            stamp,
            Some(written.stamp),
            "the stamp of the file as written"
        );
        let again = MailboxFile::new(dir.path()).read().unwrap();
        assert_eq!(again.message(id).unwrap().text, "hello");
        assert_eq!(
            written.value, again,
            "the mailbox handed back is the one written"
        );
        let ((), unwritten) = file.change(|_| ((), false)).unwrap();
        assert!(unwritten.is_none());
        assert_eq!(file.stamp(), stamp, "an unchanged mailbox is not written");
    }
}
