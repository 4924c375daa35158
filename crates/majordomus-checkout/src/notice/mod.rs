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
//! That is Linux's implementation. The portable one, which macOS and Windows run (and Linux
//! with the `portable` feature), watches nothing: its notice never promises anything, and
//! every reader stats the files itself, which is always right and only slower.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

/// How many directories one notice watches at most: a registry of a few hundred worktrees.
/// Beyond it nothing is watched and the files are stat'd as before, so a repository of
/// thousands of worktrees never spends the user's inotify watches.
pub const MAX_WATCHED_DIRECTORIES: usize = 600;

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
