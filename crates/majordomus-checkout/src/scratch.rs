//! Object directories of this process's own, for git objects nobody should keep: the
//! snapshots and merge results of conflict prediction. git writes new objects where
//! `GIT_OBJECT_DIRECTORY` says and finds the repository's own through
//! `GIT_ALTERNATE_OBJECT_DIRECTORIES`, so a prediction never adds to the repository's
//! `objects/` and leaves nothing for `git gc` to collect.
//!
//! A process's area is `<common git dir>/majordomus/scratch/<pid>-<start>-<n>/` (`start`:
//! the process's start time, so a reused pid is not taken for the process; `n`: one area per
//! [`ScratchArea`] of the process), out of every working tree, each directory made 0700.
//! An [`ObjectDir`] goes when its last handle drops, an area with its [`ScratchArea`] or,
//! at the process's exit, with [`remove_process_areas`]; the areas of processes that no
//! longer run (one killed with SIGKILL) go when another process opens its area or a server
//! starts ([`sweep_stale`]).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use majordomus_domain::sync::LockExt;

use crate::process::{process_alive, process_start_time};

/// Where every process's area lives, under the common git dir.
const SCRATCH_DIR: &str = "majordomus/scratch";

/// The areas this process opened and has not removed yet, for [`remove_process_areas`].
static PROCESS_AREAS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// One area of this process in one repository.
#[derive(Debug)]
pub struct ScratchArea {
    path: PathBuf,
    /// The repository's own object directory, read through the alternates.
    repository_objects: PathBuf,
    next: AtomicU64,
}

/// An object directory in an area, removed with everything in it when dropped.
#[derive(Debug)]
pub struct ObjectDir {
    path: PathBuf,
    /// Keeps the area while a directory in it is in use.
    _area: Arc<ScratchArea>,
}

impl ScratchArea {
    /// Opens a new area of this process in the repository whose common git dir is
    /// `common_dir`, after removing the areas of processes that no longer run.
    pub fn open(common_dir: &Path) -> io::Result<Arc<ScratchArea>> {
        static NEXT_AREA: AtomicU64 = AtomicU64::new(0);
        sweep_stale(common_dir);
        let pid = std::process::id();
        let start = process_start_time(pid).unwrap_or(0);
        let n = NEXT_AREA.fetch_add(1, Ordering::Relaxed);
        let path = common_dir
            .join(SCRATCH_DIR)
            .join(format!("{pid}-{start}-{n}"));
        crate::files::create_private_dir(&path)?;
        PROCESS_AREAS.lock_or_recover().push(path.clone());
        Ok(Arc::new(ScratchArea {
            path,
            repository_objects: common_dir.join("objects"),
            next: AtomicU64::new(0),
        }))
    }

    /// Where the area is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new, empty object directory in the area; the area is made again if something
    /// removed it meanwhile, so one stray removal does not end this process's predictions.
    pub fn object_dir(self: &Arc<Self>) -> io::Result<ObjectDir> {
        let path = self.fresh_path("objects");
        crate::files::create_private_dir(&path)?;
        Ok(ObjectDir {
            path,
            _area: self.clone(),
        })
    }

    /// A name in the area no other use took, for a file of one use (a copy of an index);
    /// nothing is made there.
    pub fn fresh_path(&self, label: &str) -> PathBuf {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.path.join(format!("{label}-{n}"))
    }

    /// Makes `command` write new objects to `writes` only, and read objects from `writes`,
    /// then `reads`, then the repository's own store (and whatever that store borrows from).
    pub fn direct(&self, command: &mut Command, writes: &ObjectDir, reads: &[&ObjectDir]) {
        let alternates: Vec<Vec<u8>> = reads
            .iter()
            .map(|dir| dir.path.as_path())
            .chain([self.repository_objects.as_path()])
            .map(quoted)
            .collect();
        command.env("GIT_OBJECT_DIRECTORY", &writes.path).env(
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            &*crate::files::os_str_from_git(&alternates.join(&crate::files::PATH_LIST_SEPARATOR)),
        );
    }
}

impl Drop for ScratchArea {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
        PROCESS_AREAS
            .lock_or_recover()
            .retain(|path| *path != self.path);
    }
}

impl ObjectDir {
    /// Where the directory is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ObjectDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// One entry of `GIT_ALTERNATE_OBJECT_DIRECTORIES`, quoted as git reads it, so a path
/// holding the list's separator (`:`) or a quote is still one path.
fn quoted(path: &Path) -> Vec<u8> {
    let bytes = crate::files::git_bytes(path.as_os_str());
    let mut quoted = Vec::with_capacity(bytes.len() + 2);
    quoted.push(b'"');
    for &byte in bytes.iter() {
        if matches!(byte, b'"' | b'\\') {
            quoted.push(b'\\');
        }
        quoted.push(byte);
    }
    quoted.push(b'"');
    quoted
}

/// Removes every area this process opened and still has: what a process does as it exits,
/// since the values that own them may never be dropped then.
pub fn remove_process_areas() {
    let areas = std::mem::take(&mut *PROCESS_AREAS.lock_or_recover());
    for area in areas {
        let _ = fs::remove_dir_all(area);
    }
}

/// Removes the areas, in the repository whose common git dir is `common_dir`, of processes
/// that no longer run; an entry whose name is not an area's is left alone.
pub fn sweep_stale(common_dir: &Path) {
    let Ok(entries) = fs::read_dir(common_dir.join(SCRATCH_DIR)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(owner) else {
            continue;
        };
        if !process_alive(pid, (start != 0).then_some(start)) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The process an area's name `<pid>-<start>-<n>` says made it.
fn owner(name: &str) -> Option<(u32, u64)> {
    let mut fields = name.split('-');
    let pid = fields.next()?.parse().ok()?;
    let start = fields.next()?.parse().ok()?;
    fields.next()?.parse::<u64>().ok()?;
    fields.next().is_none().then_some((pid, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_quotes_read_as_git_and_the_sweep_expect() {
        assert_eq!(owner("12-345-0"), Some((12, 345)));
        assert_eq!(owner("12-345"), None);
        assert_eq!(owner("notes"), None);
        assert_eq!(owner("12-345-0-1"), None);
        assert_eq!(quoted(Path::new("/a:b/c\"d\\e")), br#""/a:b/c\"d\\e""#);
    }

    #[cfg(unix)]
    #[test]
    fn an_area_is_private_gone_when_dropped_and_a_dead_process_area_is_swept() {
        let common = tempfile::tempdir().unwrap();
        let area = ScratchArea::open(common.path()).unwrap();
        let mode = |path: &Path| crate::files::mode(&fs::metadata(path).unwrap()).unwrap() & 0o777;
        assert_eq!(mode(area.path()), 0o700);
        let dir = area.object_dir().unwrap();
        assert_eq!(mode(dir.path()), 0o700);
        let kept = dir.path().to_path_buf();
        drop(dir);
        assert!(!kept.exists(), "an object directory goes with its handle");
        fs::remove_dir_all(area.path()).unwrap();
        let again = area.object_dir().unwrap();
        assert_eq!(
            mode(area.path()),
            0o700,
            "an area removed meanwhile is made again"
        );
        drop(again);

        // a process that cannot be running: pid beyond the kernel's maximum
        let dead = common.path().join(SCRATCH_DIR).join("4194305-1-0");
        fs::create_dir_all(dead.join("objects-0")).unwrap();
        let unknown = common.path().join(SCRATCH_DIR).join("notes");
        fs::create_dir_all(&unknown).unwrap();
        sweep_stale(common.path());
        assert!(!dead.exists(), "a dead process's area is swept");
        assert!(unknown.exists(), "what is not an area is left alone");
        assert!(area.path().exists(), "a live process's area stays");

        let path = area.path().to_path_buf();
        drop(area);
        assert!(!path.exists(), "an area goes with its owner");
    }
}
