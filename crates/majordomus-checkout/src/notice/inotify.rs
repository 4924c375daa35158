//! The notice from inotify.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use inotify::{EventMask, Inotify, WatchMask};
use majordomus_domain::sync::LockExt;

use super::{MAX_WATCHED_DIRECTORIES, Noticed, Targets};

/// How long after inotify refused to watch (no descriptor or watch to be had, too many
/// directories) it is not asked again: until then each call would pay for a refusal on top
/// of its stats.
const RETRY_REFUSED: Duration = Duration::from_secs(30);

/// What makes a watch untrustworthy: it was lost with its directory, may watch elsewhere
/// now, or events were dropped.
const ABOUT_THE_WATCH: EventMask = EventMask::Q_OVERFLOW
    .union(EventMask::IGNORED)
    .union(EventMask::DELETE_SELF)
    .union(EventMask::MOVE_SELF)
    .union(EventMask::UNMOUNT);

/// How many reads of the descriptor one question drains at most; a queue still not empty
/// then counts as a change, so a flood of unrelated events costs a bounded amount per call.
const MAX_READS: usize = 16;

/// Tells whether any of a set of files may have changed since a given moment, from inotify.
#[derive(Debug, Default)]
pub struct ChangeNotice {
    state: Mutex<NoticeState>,
}

#[derive(Debug, Default)]
struct NoticeState {
    /// The descriptor and what it watches; `None` while nothing is watched.
    watching: Option<Watching>,
    /// Moves on with every change noticed and every new set of targets.
    generation: u64,
    /// When inotify last refused to watch the targets given.
    refused_at: Option<Instant>,
}

#[derive(Debug)]
struct Watching {
    inotify: Inotify,
    targets: Arc<Targets>,
    /// By watch descriptor: the names in its directory that count (`None`: all of them).
    names: BTreeMap<i32, Option<BTreeSet<OsString>>>,
    /// Target directories that did not exist when watched: their parent watches for them
    /// to appear, and they are watched themselves once they do.
    missing: Vec<PathBuf>,
    /// A watch was lost or may watch elsewhere now (its directory removed or moved, the
    /// queue overflowed): the same targets are watched afresh when next given.
    stale: bool,
}

impl ChangeNotice {
    /// Whether this build's notice watches anything: inotify's does, where the kernel gives
    /// it a descriptor and the watches.
    pub const WATCHES: bool = true;

    /// Where the notice stands now, every change the kernel reported until now counted;
    /// `None` while it watches nothing, or since one of its watches was lost.
    pub fn now(&self) -> Option<Noticed> {
        let mut state = self.state.lock_or_recover();
        let watching = state.watching.as_mut()?;
        // A target directory that appeared is watched before anyone reads in it at the
        // new generation, so that what is written there next is noticed too.
        let drained = drain(watching).and_then(|changed| {
            if changed && !watching.missing.is_empty() {
                watching.watch_appeared()?;
            }
            Ok(changed)
        });
        let Ok(changed) = drained else {
            state.give_up();
            return None;
        };
        let stale = watching.stale;
        let targets = watching.targets.clone();
        if changed {
            state.generation += 1;
        }
        // A lost watch promises nothing until the targets are watched afresh.
        if stale {
            return None;
        }
        Some(Noticed {
            generation: state.generation,
            targets,
        })
    }

    /// Watches `targets` from now on. The same targets as now leave the notice as it is,
    /// unless one of its watches was lost; others replace what it watched and move the
    /// generation on, so what was read before is checked again. A directory that does not
    /// exist is left out (its parent, when watched, notices it appear); when inotify cannot
    /// be had, nothing is watched, and the targets are not even made again for
    /// [`RETRY_REFUSED`].
    pub fn watch(&self, targets: impl FnOnce() -> Targets) {
        let mut state = self.state.lock_or_recover();
        if state.watching.is_none()
            && state
                .refused_at
                .is_some_and(|at| at.elapsed() < RETRY_REFUSED)
        {
            return;
        }
        let targets = targets();
        if let Some(watching) = state.watching.as_mut()
            && *watching.targets == targets
            && !watching.stale
        {
            match watching.watch_appeared() {
                Ok(false) => {}
                Ok(true) => state.generation += 1,
                Err(_) => state.give_up(),
            }
            return;
        }
        state.generation += 1;
        state.watching = (targets.len() <= MAX_WATCHED_DIRECTORIES)
            .then(|| start(targets).ok())
            .flatten();
        state.refused_at = state.watching.is_none().then(Instant::now);
    }
}

impl NoticeState {
    /// inotify failed the notice: nothing is watched (nor asked again for
    /// [`RETRY_REFUSED`]), and what was read at the generation before is checked again.
    fn give_up(&mut self) {
        self.watching = None;
        self.generation += 1;
        self.refused_at = Some(Instant::now());
    }
}

/// What inotify reports a watched directory's entries and the directory itself for.
fn watch_mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::MODIFY
        | WatchMask::ATTRIB
        | WatchMask::CLOSE_WRITE
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
        | WatchMask::ONLYDIR
}

impl Watching {
    /// Watches `dir` for `wanted`, merged with what its descriptor already counts; false when
    /// `dir` does not exist.
    fn add(&mut self, dir: &Path, wanted: Option<BTreeSet<OsString>>) -> io::Result<bool> {
        let wd = match self.inotify.watches().add(dir, watch_mask()) {
            Ok(wd) => wd.get_watch_descriptor_id(),
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(error) => return Err(error),
        };
        match (self.names.get_mut(&wd), wanted) {
            (Some(Some(names)), Some(wanted)) => names.extend(wanted),
            (Some(counted), None) => *counted = None,
            (Some(None), Some(_)) => {}
            (None, wanted) => {
                self.names.insert(wd, wanted);
            }
        }
        Ok(true)
    }

    /// Watches the missing directories that exist now; true when any did.
    fn watch_appeared(&mut self) -> io::Result<bool> {
        let mut appeared = false;
        for dir in std::mem::take(&mut self.missing) {
            let wanted = self.targets.get(&dir).cloned().flatten();
            if self.add(&dir, wanted)? {
                appeared = true;
            } else {
                self.missing.push(dir);
            }
        }
        Ok(appeared)
    }
}

/// A new inotify descriptor watching `targets`. A missing directory is watched for through
/// its parent; one whose parent is missing too could appear unnoticed, so nothing is watched.
fn start(targets: Targets) -> io::Result<Watching> {
    let mut watching = Watching {
        inotify: Inotify::init()?,
        targets: Arc::new(targets),
        names: BTreeMap::new(),
        missing: Vec::new(),
        stale: false,
    };
    let targets = watching.targets.clone();
    for (dir, wanted) in targets.iter() {
        if !watching.add(dir, wanted.clone())? {
            watching.missing.push(dir.clone());
        }
    }
    for dir in watching.missing.clone() {
        let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
            return Err(io::ErrorKind::NotFound.into());
        };
        if !watching.add(parent, Some(BTreeSet::from([name.to_os_string()])))? {
            return Err(io::ErrorKind::NotFound.into());
        }
    }
    Ok(watching)
}

/// Reads what the kernel queued; true when any of it concerns a watched name, a watched
/// directory itself, or may have been lost.
fn drain(watching: &mut Watching) -> io::Result<bool> {
    let mut buffer = [0u8; 4096];
    let mut changed = false;
    for _ in 0..MAX_READS {
        let events = match watching.inotify.read_events(&mut buffer) {
            Ok(events) => events,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(changed),
            Err(error) => return Err(error),
        };
        for event in events {
            if event.mask.intersects(ABOUT_THE_WATCH) {
                watching.stale = true;
            }
            changed |= watching.stale
                || match watching.names.get(&event.wd.get_watch_descriptor_id()) {
                    Some(Some(names)) => event.name.is_some_and(|name| names.contains(name)),
                    Some(None) | None => true,
                };
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notice::{add_directory, add_file};
    use std::fs;

    fn generation(notice: &ChangeNotice) -> u64 {
        notice.now().expect("the notice watches").generation
    }

    #[test]
    fn a_watched_name_moves_the_generation_and_others_in_its_directory_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let head = dir.path().join("HEAD");
        fs::write(&head, "ref: refs/heads/main\n").unwrap();
        let notice = ChangeNotice::default();
        assert!(notice.now().is_none(), "nothing is watched yet");
        let mut targets = Targets::new();
        add_file(&mut targets, &head);
        notice.watch(|| targets.clone());
        let first = notice.now().unwrap();
        assert!(first.covers(&head));
        assert!(!first.covers(&dir.path().join("index")));

        fs::write(dir.path().join("index.lock"), "x").unwrap();
        fs::rename(dir.path().join("index.lock"), dir.path().join("index")).unwrap();
        assert_eq!(
            generation(&notice),
            first.generation,
            "unwatched names are drained"
        );

        fs::write(dir.path().join("HEAD.lock"), "ref: refs/heads/other\n").unwrap();
        fs::rename(dir.path().join("HEAD.lock"), &head).unwrap();
        let moved = generation(&notice);
        assert!(moved > first.generation, "renaming into HEAD is a change");
        assert_eq!(generation(&notice), moved, "and it is counted once");

        notice.watch(|| targets);
        assert_eq!(
            generation(&notice),
            moved,
            "the same targets change nothing"
        );
    }

    #[test]
    fn a_watched_directory_counts_every_entry_and_its_own_removal() {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("worktrees");
        fs::create_dir(&registry).unwrap();
        let notice = ChangeNotice::default();
        let mut targets = Targets::new();
        add_directory(&mut targets, &registry);
        add_file(&mut targets, &registry);
        notice.watch(|| targets);
        let first = generation(&notice);

        fs::create_dir(registry.join("feature")).unwrap();
        let added = generation(&notice);
        assert!(added > first);

        fs::remove_dir(registry.join("feature")).unwrap();
        fs::remove_dir(&registry).unwrap();
        assert!(notice.now().is_none(), "its watch is lost with it");
        assert!(notice.state.lock_or_recover().generation > added);
    }

    #[test]
    fn a_missing_directory_is_watched_for_through_its_parent_and_then_itself() {
        let dir = tempfile::tempdir().unwrap();
        let notice = ChangeNotice::default();
        let mut targets = Targets::new();
        add_file(&mut targets, &dir.path().join("HEAD"));
        notice.watch(|| targets.clone());
        let first = generation(&notice);
        let tables = dir.path().join("reftable/tables.list");
        add_file(&mut targets, &tables);
        notice.watch(|| targets.clone());
        let added = generation(&notice);
        assert!(added > first);

        fs::create_dir(dir.path().join("reftable")).unwrap();
        let appeared = generation(&notice);
        assert!(appeared > added, "the parent notices the directory appear");
        fs::write(&tables, "0x01.ref\n").unwrap();
        let written = generation(&notice);
        assert!(
            written > appeared,
            "the directory is watched from the generation that noticed it appear"
        );
        notice.watch(|| targets);
        assert_eq!(
            generation(&notice),
            written,
            "and the same targets are kept"
        );
        fs::write(&tables, "0x02.ref\n").unwrap();
        assert!(generation(&notice) > written);
    }

    #[test]
    fn a_watched_directory_removed_and_made_again_is_watched_again() {
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("worktrees/one");
        fs::create_dir_all(&entry).unwrap();
        let notice = ChangeNotice::default();
        let mut targets = Targets::new();
        add_directory(&mut targets, &dir.path().join("worktrees"));
        add_file(&mut targets, &entry.join("HEAD"));
        notice.watch(|| targets.clone());
        let first = generation(&notice);

        fs::remove_dir(&entry).unwrap();
        fs::create_dir(&entry).unwrap();
        assert!(notice.now().is_none(), "a lost watch promises nothing");
        let remade = notice.state.lock_or_recover().generation;
        assert!(remade > first);
        notice.watch(|| targets);
        let watched = generation(&notice);
        assert!(watched > remade, "the same targets are watched afresh");
        fs::write(entry.join("HEAD"), "ref: refs/heads/one\n").unwrap();
        assert!(
            generation(&notice) > watched,
            "a change in the directory made again is noticed"
        );
    }

    #[test]
    fn more_directories_than_the_limit_are_not_watched_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let notice = ChangeNotice::default();
        let mut targets = Targets::new();
        for entry in 0..=MAX_WATCHED_DIRECTORIES {
            add_directory(&mut targets, &dir.path().join(entry.to_string()));
        }
        notice.watch(|| targets);
        assert!(notice.now().is_none());
        notice.watch(|| unreachable!("a refusal is not asked again at once"));
        assert!(notice.now().is_none());
    }

    #[test]
    fn a_directory_whose_parent_is_missing_too_is_not_watched_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let notice = ChangeNotice::default();
        let mut targets = Targets::new();
        add_file(&mut targets, &dir.path().join("gone/worktree/.git"));
        notice.watch(|| targets);
        assert!(notice.now().is_none());
    }

    #[test]
    fn a_flood_of_unrelated_events_reads_as_a_change_rather_than_being_drained_forever() {
        let dir = tempfile::tempdir().unwrap();
        let notice = ChangeNotice::default();
        let mut targets = Targets::new();
        add_file(&mut targets, &dir.path().join("HEAD"));
        notice.watch(|| targets);
        let first = generation(&notice);
        for round in 0..2_000 {
            fs::write(dir.path().join("noise"), round.to_string()).unwrap();
        }
        let flooded = generation(&notice);
        assert!(flooded > first);
        let mut settled = flooded;
        for _ in 0..10 {
            let next = generation(&notice);
            if next == settled {
                return;
            }
            settled = next;
        }
        panic!("the queue was never drained");
    }
}
