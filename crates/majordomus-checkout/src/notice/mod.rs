//! The kernel's notice of changes to a few named files, so that asking "did any of them
//! change?" on every call costs one `read` of an inotify descriptor instead of a `stat` of
//! each: a repository-wide call otherwise stats the worktree registry, four files per
//! worktree, every time.
//!
//! A [`ChangeNotice`] only ever says "nothing changed": each change the kernel reports moves
//! its generation on, and a reader that recorded the generation when it last checked the
//! files itself may trust what it read while the generation stays the same. Whatever the
//! kernel cannot promise (its queue overflowed, a watched directory went away, no inotify
//! descriptor or watch could be had, more directories than [`MAX_WATCHED_DIRECTORIES`])
//! moves the generation on or ends the notice, and the reader checks the files itself as
//! before.
//!
//! [`KnownAbsent`] keeps, the same way, which files a reader found missing.
//!
//! That is Linux's implementation. The portable one, which macOS and Windows run (and Linux
//! with the `portable` feature), watches nothing: its notice never promises anything, and
//! every reader stats the files itself, which is always right and only slower.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use majordomus_domain::sync::LockExt;

#[cfg(linux_native)]
#[path = "inotify.rs"]
mod platform;
#[cfg(not(linux_native))]
#[path = "portable.rs"]
mod platform;

pub use platform::ChangeNotice;

/// What a notice covers: directories, each with the names in it whose changes count, or all
/// of its entries (`None`).
pub type Targets = BTreeMap<PathBuf, Option<BTreeSet<OsString>>>;

/// How many directories one notice watches at most: a registry of a few hundred worktrees,
/// each with its lease's directory. Beyond it nothing is watched and the files are stat'd
/// as before, so a repository of thousands of worktrees never spends the user's inotify
/// watches.
pub const MAX_WATCHED_DIRECTORIES: usize = 1_200;

/// The generation a notice stood at when a call asked it, with what it covered then.
#[derive(Clone, Debug)]
pub struct Noticed {
    pub generation: u64,
    targets: Arc<Targets>,
}

impl Noticed {
    /// Whether a change to `file` would have moved the generation on.
    pub fn covers(&self, file: &Path) -> bool {
        let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else {
            return false;
        };
        match self.targets.get(dir) {
            Some(None) => true,
            Some(Some(names)) => names.contains(name),
            None => false,
        }
    }

    /// The generation, when it covers `file`: what a reading of `file` that began here is
    /// trusted at.
    pub fn generation_of(&self, file: &Path) -> Option<u64> {
        self.covers(file).then_some(self.generation)
    }
}

/// Adds `file` to `targets`: its name, in its directory.
pub fn add_file(targets: &mut Targets, file: &Path) {
    let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else {
        return;
    };
    if let Some(names) = targets
        .entry(dir.to_path_buf())
        .or_insert_with(|| Some(BTreeSet::new()))
    {
        names.insert(name.to_os_string());
    }
}

/// Adds every entry of `dir` to `targets`.
pub fn add_directory(targets: &mut Targets, dir: &Path) {
    targets.insert(dir.to_path_buf(), None);
}

/// Files found absent while a notice stood at one generation: absent still while it stands
/// there and covers them. A repository-wide call looks for every sibling worktree's lease,
/// and a worktree nobody serves has none; this saves the `open` that finds nothing.
///
/// Only what was found at the generation the notice stands at now is kept, so it holds at
/// most one entry per file a call looks for, and at most [`MAX_KNOWN_ABSENT`].
#[derive(Debug, Default)]
pub struct KnownAbsent {
    found: Mutex<(u64, BTreeSet<PathBuf>)>,
}

/// The most files [`KnownAbsent`] holds: one per watched worktree's lease.
const MAX_KNOWN_ABSENT: usize = MAX_WATCHED_DIRECTORIES;

impl KnownAbsent {
    /// Whether `file` was found absent at `noticed`'s generation, which covers it.
    pub fn holds(&self, file: &Path, noticed: Option<&Noticed>) -> bool {
        let Some(generation) = noticed.and_then(|noticed| noticed.generation_of(file)) else {
            return false;
        };
        let found = self.found.lock_or_recover();
        found.0 == generation && found.1.contains(file)
    }

    /// `file` was found absent by a look that began when the notice stood at `noticed`. A
    /// change after that moved the generation on, and the finding is not trusted.
    pub fn record(&self, file: &Path, noticed: Option<&Noticed>) {
        let Some(generation) = noticed.and_then(|noticed| noticed.generation_of(file)) else {
            return;
        };
        let mut found = self.found.lock_or_recover();
        if generation < found.0 {
            return;
        }
        if generation > found.0 {
            *found = (generation, BTreeSet::new());
        }
        if found.1.len() < MAX_KNOWN_ABSENT {
            found.1.insert(file.to_path_buf());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noticed(generation: u64, file: &Path) -> Noticed {
        let mut targets = Targets::new();
        add_file(&mut targets, file);
        Noticed {
            generation,
            targets: Arc::new(targets),
        }
    }

    #[test]
    fn an_absence_holds_at_the_generation_it_was_found_at_and_for_covered_files_only() {
        let lease = Path::new("/repo/.git/worktrees/one/majordomus/lease.json");
        let other = Path::new("/repo/.git/worktrees/two/majordomus/lease.json");
        let absent = KnownAbsent::default();
        absent.record(lease, None);
        assert!(
            !absent.holds(lease, Some(&noticed(0, lease))),
            "no notice, no promise"
        );

        absent.record(lease, Some(&noticed(3, lease)));
        assert!(absent.holds(lease, Some(&noticed(3, lease))));
        assert!(!absent.holds(lease, None));
        assert!(
            !absent.holds(lease, Some(&noticed(4, lease))),
            "a change since"
        );
        absent.record(other, Some(&noticed(3, lease)));
        assert!(
            !absent.holds(other, Some(&noticed(3, other))),
            "a file the notice did not cover is not kept"
        );

        absent.record(other, Some(&noticed(4, other)));
        absent.record(lease, Some(&noticed(3, lease)));
        assert!(
            absent.holds(other, Some(&noticed(4, other))),
            "a look that began before the latest change is not kept"
        );
        assert!(!absent.holds(lease, Some(&noticed(4, lease))));
    }
}
