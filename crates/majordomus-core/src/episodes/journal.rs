//! The built-in episode driver: an append-only journal of JSON lines in the repository's git
//! common dir (`<common_dir>/majordomus/episodes.jsonl`), shared by the servers of every
//! worktree. Outside git it lies next to the checkout's lease.
//!
//! Each record is one line written by one `write` on a file opened with `O_APPEND`, under an
//! exclusive `flock`, then fsynced: servers of several worktrees appending at once never
//! interleave, and a record that was answered for is on disk.
//!
//! The journal rotates: a record that would take the file past [`ROTATE_AT_BYTES`] goes into
//! a fresh file, and the full one becomes the previous journal (`episodes.1.jsonl`), replacing
//! the one before it. Numbering and what is open continue across the two, and readers read
//! both, so at most twice the limit is kept and nothing recent is lost.
//!
//! A [`Journal`] keeps an index of the episodes the journal shows open (opened or resumed,
//! never closed). It is built from the whole file once and then kept up by reading only what
//! was appended since — by this process or by another one — so a lookup costs the new tail.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use majordomus_checkout::files;
use majordomus_checkout::git::Checkout;
use majordomus_domain::ids::Stamp;
use serde::{Deserialize, Serialize};

use super::event::{Event, EventKind, EventServer};

/// The journal's file name.
pub const JOURNAL_FILE: &str = "episodes.jsonl";

/// The file the journal becomes when it rotates: the records just before the current file's.
pub const PREVIOUS_JOURNAL_FILE: &str = "episodes.1.jsonl";

/// How large the journal grows before it rotates. A busy repository writes a few hundred
/// bytes per event; this is months of work, and bounds the disk the journal takes.
pub const ROTATE_AT_BYTES: u64 = 64 * 1024 * 1024;

/// The `schema` every record carries.
pub const RECORD_SCHEMA: &str = "majordomus-episode/v1";

/// Where the journal of `checkout`'s repository lives: in the git common dir every worktree
/// shares, or next to the lease for a directory outside git.
pub fn journal_path(checkout: &Checkout) -> PathBuf {
    match &checkout.common_dir {
        Some(common) => common.join("majordomus").join(JOURNAL_FILE),
        None => majordomus_checkout::lease_path(checkout)
            .parent()
            .map(|dir| dir.join(JOURNAL_FILE))
            .unwrap_or_else(|| PathBuf::from(JOURNAL_FILE)),
    }
}

/// Where the journal at `path` keeps its previous file once it has rotated.
pub fn previous_path(path: &Path) -> PathBuf {
    path.with_file_name(PREVIOUS_JOURNAL_FILE)
}

/// One line of the journal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub schema: String,
    /// Its number in the journal: 1 for the first record, one more for each after it.
    pub seq: u64,
    #[serde(flatten)]
    pub event: Event,
}

/// What the journal shows about an episode that is open in it: opened or resumed and not
/// closed since.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenMark {
    /// The record that opened it.
    pub opened_seq: u64,
    pub opened_at: Stamp,
    /// Its attachments as last recorded.
    pub attachments: u32,
    /// The server that recorded its last event.
    pub server: EventServer,
    /// The worktree of that server.
    pub worktree: String,
}

#[derive(Debug, Default)]
struct Index {
    /// The highest sequence number read.
    last_seq: u64,
    open: HashMap<String, OpenMark>,
    /// Lines that could not be read as records.
    unreadable: u64,
    /// How far the file has been read: always the end of a whole line.
    offset: u64,
    /// Device and inode of the file read, to notice it was replaced.
    file_id: Option<(u64, u64)>,
}

impl Index {
    fn apply(&mut self, record: &Record) {
        self.last_seq = self.last_seq.max(record.seq);
        let event = &record.event;
        let mark = || OpenMark {
            opened_seq: record.seq,
            opened_at: event.opened_at.into(),
            attachments: event.attachments,
            server: event.server,
            worktree: event.worktree.clone(),
        };
        match event.event {
            EventKind::Opened => {
                self.open.insert(event.external_id.clone(), mark());
            }
            EventKind::Closed => {
                self.open.remove(&event.external_id);
            }
            // A release says nothing about whether the episode is open.
            EventKind::Released => {}
            EventKind::Resumed | EventKind::Detached | EventKind::Announced => {
                let entry = self
                    .open
                    .entry(event.external_id.clone())
                    .or_insert_with(mark);
                entry.attachments = entry.attachments.max(event.attachments);
                entry.server = event.server;
                entry.worktree = event.worktree.clone();
            }
        }
    }

    /// Reads the whole lines from `bytes` (the file from `offset` on), leaving a partial last
    /// line for later.
    fn consume(&mut self, bytes: &[u8]) {
        let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        for line in bytes[..end].split(|&b| b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Record>(line) {
                Ok(record) => self.apply(&record),
                Err(_) => self.unreadable += 1,
            }
        }
        self.offset += end as u64 + 1;
    }
}

/// The journal of one repository, as one server process writes it.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    index: Index,
    rotate_at: u64,
}

/// How a journal file is locked: exclusively to append or rotate, shared to read.
#[derive(Clone, Copy)]
enum Lock {
    Exclusive,
    Shared,
}

/// An advisory lock on an open file (`flock` on Unix, `LockFileEx` on Windows), released
/// when dropped.
struct Locked<'a>(&'a File);

impl<'a> Locked<'a> {
    fn take(file: &'a File, lock: Lock) -> io::Result<Locked<'a>> {
        loop {
            let taken = match lock {
                Lock::Exclusive => file.lock(),
                Lock::Shared => file.lock_shared(),
            };
            match taken {
                Ok(()) => return Ok(Locked(file)),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// The byte at `offset` of `file`, if it has one there.
fn byte_at(file: &File, offset: u64) -> io::Result<Option<u8>> {
    let mut byte = [0u8; 1];
    #[cfg(unix)]
    let read = std::os::unix::fs::FileExt::read_at(file, &mut byte, offset)?;
    #[cfg(windows)]
    let read = std::os::windows::fs::FileExt::seek_read(file, &mut byte, offset)?;
    Ok((read == 1).then_some(byte[0]))
}

impl Journal {
    /// The journal at `path`, its index built from what the file holds now (an absent or
    /// unreadable file is read as empty and looked at again on the next use).
    pub fn open(path: PathBuf) -> Journal {
        Journal::rotating_at(path, ROTATE_AT_BYTES)
    }

    /// The journal at `path`, rotating once a record would take it past `rotate_at` bytes.
    fn rotating_at(path: PathBuf, rotate_at: u64) -> Journal {
        let mut journal = Journal {
            path,
            index: Index::default(),
            rotate_at,
        };
        if let Ok(file) = File::open(&journal.path) {
            let _ = journal.catch_up(&file);
        }
        journal
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lines of the journal that could not be read as records, as far as it was read.
    pub fn unreadable(&self) -> u64 {
        self.index.unreadable
    }

    /// Brings the index up to the end of `file`, rebuilding it when the file was replaced or
    /// truncated since it was last read. A rebuild reads the previous journal first, so that
    /// numbering and open episodes carry over a rotation.
    fn catch_up(&mut self, file: &File) -> io::Result<()> {
        let metadata = file.metadata()?;
        // Where the system gives no file identity (Windows), a rotation is told by the new
        // file being shorter than what was read.
        let id = files::identity(&metadata);
        if self.index.file_id != Some(id) || metadata.len() < self.index.offset {
            self.index = Index::default();
            if let Ok(previous) = fs::read(previous_path(&self.path)) {
                self.index.consume(&previous);
            }
            self.index.offset = 0;
            self.index.file_id = Some(id);
        }
        let mut reader = file;
        reader.seek(SeekFrom::Start(self.index.offset))?;
        let mut tail = Vec::new();
        reader.read_to_end(&mut tail)?;
        self.index.consume(&tail);
        Ok(())
    }

    /// Opens the current journal file for appending and takes its exclusive lock.
    fn lock_current(&self) -> io::Result<(File, u64)> {
        let mut options = OpenOptions::new();
        files::private_file(options.read(true).append(true).create(true));
        let file = open_locked(&self.path, &options, Lock::Exclusive)?
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        let length = file.metadata()?.len();
        Ok((file, length))
    }

    /// Appends `event` as the next record and returns its sequence number once it is on disk.
    pub fn append(&mut self, event: &Event) -> io::Result<u64> {
        if let Some(dir) = self.path.parent() {
            files::create_private_dir(dir)?;
        }
        let (mut file, mut length) = self.lock_current()?;
        self.catch_up(&file)?;
        let mut record = self.next_record(event);
        if length > 0 && length + record_line(&record, false)?.len() as u64 > self.rotate_at {
            fs::rename(&self.path, previous_path(&self.path))?;
            // The full file's lock is held until `file` is replaced: whoever waits on it
            // then finds the path moved and opens the new file, which may already hold
            // records of other processes, so the record is numbered again.
            (file, length) = self.lock_current()?;
            self.catch_up(&file)?;
            record = self.next_record(event);
        }
        // A record cut short (a process killed inside its write) must not swallow this one.
        let torn = length > 0 && byte_at(&file, length - 1)?.is_some_and(|last| last != b'\n');
        if torn {
            self.index.unreadable += 1;
        }
        let line = record_line(&record, torn)?;
        let written = (&file).write(&line)?;
        if written != line.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!(
                    "only {written} of {} bytes of the record were written",
                    line.len()
                ),
            ));
        }
        file.sync_data()?;
        self.index.apply(&record);
        self.index.offset = length + line.len() as u64;
        Ok(record.seq)
    }

    /// `event` as the record that follows the last one read.
    fn next_record(&self, event: &Event) -> Record {
        Record {
            schema: RECORD_SCHEMA.to_string(),
            seq: self.index.last_seq + 1,
            event: event.clone(),
        }
    }

    /// What the journal shows about `external_id` if it is open there, read up to the latest
    /// record any process appended.
    pub fn open_mark(&mut self, external_id: &str) -> Option<OpenMark> {
        match File::open(&self.path) {
            Ok(file) => {
                if let Ok(_lock) = Locked::take(&file, Lock::Shared) {
                    let _ = self.catch_up(&file);
                }
            }
            // removed since it was read: nothing is open in it any more
            Err(error) if error.kind() == io::ErrorKind::NotFound => self.index = Index::default(),
            Err(_) => {}
        }
        self.index.open.get(external_id).cloned()
    }
}

/// Opens the file at `path` and locks it (exclusive or shared) until it closes; `None`
/// when there is none. The file is opened again when another process rotated it between
/// the open and the lock, so what is locked is the current journal, never one that has just
/// become the previous one.
fn open_locked(path: &Path, options: &OpenOptions, lock: Lock) -> io::Result<Option<File>> {
    loop {
        let file = match options.open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        // Held until `file` closes, whoever holds it: dropping the guard would let go early.
        std::mem::forget(Locked::take(&file, lock)?);
        if files::is_the_file_at(&file, path)? {
            return Ok(Some(file));
        }
    }
}

/// The line `record` is written as; after a torn line, it starts on a line of its own.
fn record_line(record: &Record, after_torn_line: bool) -> io::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(512);
    if after_torn_line {
        line.push(b'\n');
    }
    serde_json::to_writer(&mut line, record).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// Everything a journal holds, for a reader such as `majordomus episodes log`.
#[derive(Debug, Default)]
pub struct Contents {
    pub records: Vec<Record>,
    /// Lines that could not be read as records.
    pub unreadable: usize,
}

/// Reads a whole journal, the previous file's records first; `None` when there is none. A
/// partial last line (a record being written right now) is left out.
pub fn read_journal(path: &Path) -> io::Result<Option<Contents>> {
    // The shared lock keeps a rotation out while both files are read, so none of their
    // records is read twice or missed.
    let current = open_locked(path, OpenOptions::new().read(true), Lock::Shared)?;
    let previous = match fs::read(previous_path(path)) {
        Ok(bytes) => Some(bytes),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };
    let current = match current {
        Some(mut file) => {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            Some(bytes)
        }
        None => None,
    };
    if previous.is_none() && current.is_none() {
        return Ok(None);
    }
    let mut contents = Contents::default();
    for bytes in previous.iter().chain(current.iter()) {
        contents.read_lines(bytes);
    }
    Ok(Some(contents))
}

impl Contents {
    /// Reads the whole lines of `bytes` as records.
    fn read_lines(&mut self, bytes: &[u8]) {
        let end = bytes.iter().rposition(|&b| b == b'\n').unwrap_or(0);
        for line in bytes[..end].split(|&b| b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Record>(line) {
                Ok(record) => self.records.push(record),
                Err(_) => self.unreadable += 1,
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::super::event::{CloseReason, EventClient, EventKind, EventServer};
    use super::*;

    pub(crate) fn event(kind: EventKind, id: &str) -> Event {
        Event {
            event: kind,
            at: "2026-11-30T02:26:40Z".parse().unwrap(),
            external_id: id.into(),
            provider: "claude-code".into(),
            client: EventClient {
                name: "claude-code".into(),
                version: "2.1.0".into(),
            },
            checkout_id: "c0ffee".into(),
            worktree: "/repo".into(),
            branch: Some("main".into()),
            peer: Some("p1".into()),
            server: EventServer::this_process(),
            opened_at: "2026-11-30T02:26:40Z".parse().unwrap(),
            attachments: 1,
            reason: (kind == EventKind::Closed).then_some(CloseReason::Detach),
            note: None,
            claims: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::event::CloseReason;
    use super::tests_support::event;
    use super::*;

    #[test]
    fn records_are_numbered_lines_that_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("majordomus").join(JOURNAL_FILE);
        let mut journal = Journal::open(path.clone());
        assert_eq!(journal.append(&event(EventKind::Opened, "a")).unwrap(), 1);
        assert_eq!(journal.append(&event(EventKind::Opened, "b")).unwrap(), 2);
        assert_eq!(journal.append(&event(EventKind::Closed, "a")).unwrap(), 3);
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with('\n'));
        let contents = read_journal(&path).unwrap().unwrap();
        assert_eq!(contents.unreadable, 0);
        let seqs: Vec<u64> = contents.records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [1, 2, 3]);
        assert_eq!(contents.records[2].event.reason, Some(CloseReason::Detach));
        assert_eq!(contents.records[0].schema, RECORD_SCHEMA);
        if let Some(mode) = files::mode(&fs::metadata(&path).unwrap()) {
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(read_journal(&dir.path().join("none")).unwrap().is_none());
    }

    #[test]
    fn the_index_knows_what_is_open_and_follows_other_writers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let mut first = Journal::open(path.clone());
        first.append(&event(EventKind::Opened, "a")).unwrap();
        let mut resumed = event(EventKind::Resumed, "a");
        resumed.attachments = 2;
        first.append(&resumed).unwrap();
        first.append(&event(EventKind::Opened, "b")).unwrap();
        first.append(&event(EventKind::Closed, "b")).unwrap();

        // a second process starts: its index is built from the file
        let mut second = Journal::open(path.clone());
        let mark = second.open_mark("a").unwrap();
        assert_eq!((mark.opened_seq, mark.attachments), (1, 2));
        assert!(second.open_mark("b").is_none());

        // what one appends, the other sees on its next look, and numbering continues
        second.append(&event(EventKind::Opened, "c")).unwrap();
        assert_eq!(first.open_mark("c").unwrap().opened_seq, 5);
        assert_eq!(first.append(&event(EventKind::Closed, "a")).unwrap(), 6);
        assert!(second.open_mark("a").is_none());
        assert_eq!(second.append(&event(EventKind::Detached, "c")).unwrap(), 7);
    }

    #[test]
    fn a_torn_or_foreign_line_is_skipped_and_never_swallows_a_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let mut journal = Journal::open(path.clone());
        journal.append(&event(EventKind::Opened, "a")).unwrap();
        // a writer killed in the middle of a line, then someone's stray text
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"schema\":\"majordomus-epi").unwrap();
        drop(file);
        assert_eq!(journal.append(&event(EventKind::Opened, "b")).unwrap(), 2);
        let contents = read_journal(&path).unwrap().unwrap();
        assert_eq!(contents.records.len(), 2);
        assert_eq!(contents.unreadable, 1);
        let fresh = Journal::open(path.clone());
        assert_eq!(fresh.unreadable(), 1);
        // a partial last line is not read until it is whole
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"partial\":").unwrap();
        assert_eq!(read_journal(&path).unwrap().unwrap().unreadable, 1);
    }

    #[test]
    fn a_replaced_journal_is_read_again_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let mut journal = Journal::open(path.clone());
        journal.append(&event(EventKind::Opened, "a")).unwrap();
        journal.append(&event(EventKind::Opened, "b")).unwrap();
        fs::remove_file(&path).unwrap();
        assert!(journal.open_mark("a").is_none());
        assert_eq!(journal.append(&event(EventKind::Opened, "c")).unwrap(), 1);
    }

    #[test]
    fn a_full_journal_rotates_and_numbering_and_open_episodes_carry_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let line = record_line(
            &Journal::open(path.clone()).next_record(&event(EventKind::Opened, "x")),
            false,
        )
        .unwrap()
        .len() as u64;
        // room for three records a file
        let mut journal = Journal::rotating_at(path.clone(), line * 3 + line / 2);
        journal.append(&event(EventKind::Opened, "early")).unwrap();
        for n in 0..2 {
            journal
                .append(&event(EventKind::Opened, &format!("x{n}")))
                .unwrap();
        }
        assert!(!previous_path(&path).exists());
        let seq = journal.append(&event(EventKind::Opened, "y")).unwrap();
        assert_eq!(seq, 4, "numbering goes on in the new file");
        assert!(previous_path(&path).exists());
        assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 1);

        // another process reads both files: the episode opened before the rotation is open
        let mut other = Journal::rotating_at(path.clone(), line * 3 + line / 2);
        assert_eq!(other.open_mark("early").unwrap().opened_seq, 1);
        let seqs = |path: &Path| -> Vec<u64> {
            read_journal(path)
                .unwrap()
                .unwrap()
                .records
                .iter()
                .map(|r| r.seq)
                .collect()
        };
        assert_eq!(seqs(&path), [1, 2, 3, 4]);

        // the next rotation drops the oldest file: at most two files are ever kept
        for n in 0..3 {
            other
                .append(&event(EventKind::Resumed, &format!("x{n}")))
                .unwrap();
        }
        assert_eq!(seqs(&path), [4, 5, 6, 7]);
        assert_eq!(journal.append(&event(EventKind::Closed, "y")).unwrap(), 8);
        let files = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, 2, "the journal and its previous file");
    }

    #[test]
    fn concurrent_appenders_never_interleave() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut journal = Journal::open(path);
                    for n in 0..25 {
                        let mut e = event(EventKind::Opened, &format!("t{t}-{n}"));
                        e.note = Some("x".repeat(3000));
                        journal.append(&e).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let contents = read_journal(&path).unwrap().unwrap();
        assert_eq!(contents.unreadable, 0);
        let mut seqs: Vec<u64> = contents.records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs.len(), 100);
        seqs.dedup();
        assert_eq!(
            seqs,
            (1..=100).collect::<Vec<_>>(),
            "one number per record, in file order"
        );
    }

    #[test]
    fn the_journal_lies_in_the_common_dir_or_next_to_the_lease() {
        let checkout = Checkout {
            root: "/r/wt".into(),
            git_dir: Some("/r/.git/worktrees/wt".into()),
            common_dir: Some("/r/.git".into()),
            branch: None,
            primary: false,
            id: "x".into(),
            git_id: Some("y".into()),
        };
        assert_eq!(
            journal_path(&checkout),
            Path::new("/r/.git/majordomus/episodes.jsonl")
        );
        let outside = Checkout {
            git_dir: None,
            common_dir: None,
            ..checkout
        };
        let lease = majordomus_checkout::lease_path(&outside);
        assert_eq!(journal_path(&outside), lease.with_file_name(JOURNAL_FILE));
    }
}
