//! Whether a lease's owner still runs, and whether the executable it ran is still on disk.
//!
//! The operating system is asked through `platform`, one of two implementations of the same
//! few functions: Linux's own (`/proc` and pidfds), and a portable one built on the `sysinfo`
//! crate, which asks each system its own way (`proc_pidinfo` on macOS, a process snapshot on
//! Windows). The portable one is what macOS and Windows run; the `portable` feature makes
//! Linux run it too, so that it is tested here. A start time is only ever compared with one
//! read the same way on the same machine, so each implementation may count it its own way.

use std::fs;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// What an executable file looked like when a server started from it. A server whose stamp
/// no longer matches the file at that path runs code that has since been replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutableStamp {
    /// Absolute path of the executable the server runs.
    pub path: String,
    /// The file's modification time, RFC 3339 in UTC to the nanosecond (a rebuild within the
    /// same second still changes it).
    pub mtime: String,
    /// The file's size in bytes.
    pub size: u64,
}

impl ExecutableStamp {
    /// Whether the file at the stamped path still has the stamped time and size.
    pub fn matches_disk(&self) -> bool {
        executable_stamp(Path::new(&self.path)).as_ref() == Some(self)
    }
}

/// The stamp of the file at `path` now; `None` if it cannot be read.
pub fn executable_stamp(path: &Path) -> Option<ExecutableStamp> {
    let metadata = fs::metadata(path).ok()?;
    let mtime = OffsetDateTime::from(metadata.modified().ok()?)
        .format(&Rfc3339)
        .ok()?;
    Some(ExecutableStamp {
        path: path.to_string_lossy().into_owned(),
        mtime,
        size: metadata.len(),
    })
}

#[cfg(linux_native)]
#[path = "linux.rs"]
mod platform;
#[cfg(not(linux_native))]
#[path = "portable.rs"]
mod platform;

/// When process `pid` started, as this platform counts it (on Linux, clock ticks since boot);
/// `None` where there is no such process or the system does not say.
pub fn process_start_time(pid: u32) -> Option<u64> {
    platform::start_time(pid)
}

/// The parent of process `pid`; `None` when it cannot be told.
pub fn parent_of(pid: u32) -> Option<u32> {
    platform::parent_of(pid)
}

/// Whether process `pid` runs and is the process that started at `start` (when known), so
/// that a pid the system has since given to another process does not pass for the owner.
/// A zombie has finished its work and counts as gone.
pub fn process_alive(pid: u32, start: Option<u64>) -> bool {
    // 0 and negative pids (as the system reads them) name process groups, never an owner.
    pid > 0 && i32::try_from(pid).is_ok() && platform::alive(pid, start)
}

/// A process held so that asking whether it still runs is cheap: a server asks it about a
/// sibling's owner on every listing. On Linux it is a pidfd, opened first and the process's
/// start time checked after, so the descriptor names the process that started then or is
/// never trusted; once that process ends, it reads as ended however its pid is reused.
/// Where nothing can be held (a kernel without pidfds, a sandbox that refuses the call, the
/// portable implementation) every question goes to [`process_alive`].
#[derive(Debug)]
pub struct ProcessHandle {
    pid: u32,
    start: Option<u64>,
    held: Held,
}

#[derive(Debug)]
enum Held {
    /// The very process asked about, held by the platform.
    Watched(platform::Watch),
    /// It had ended, or was another process, when the handle was made.
    Gone,
    /// Nothing could be held: each question is asked afresh.
    Unheld,
}

impl ProcessHandle {
    /// Holds process `pid`, the one that started at `start` when that is known.
    pub fn open(pid: u32, start: Option<u64>) -> Self {
        let held = match platform::Watch::open(pid) {
            // The watch is opened first and the process checked after: what it holds is the
            // process that started at `start`, or it is never trusted.
            Some(watch) if process_alive(pid, start) => Held::Watched(watch),
            Some(_) => Held::Gone,
            None => Held::Unheld,
        };
        ProcessHandle { pid, start, held }
    }

    /// Whether the process still runs; a zombie has ended.
    pub fn alive(&self) -> bool {
        match &self.held {
            Held::Watched(watch) => watch
                .running()
                .unwrap_or_else(|| process_alive(self.pid, self.start)),
            Held::Gone => false,
            Held::Unheld => process_alive(self.pid, self.start),
        }
    }
}

/// Makes `command` start in a process group of its own, so that [`kill_group`] ends
/// whatever it starts too, and a terminal's Ctrl-C meant for this process does not reach it
/// (`setpgid` on Unix; a new process group on Windows).
pub fn in_own_group(command: &mut std::process::Command) -> &mut std::process::Command {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        command.process_group(0)
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt as _;
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        command.creation_flags(CREATE_NEW_PROCESS_GROUP)
    }
}

/// Makes `command` start detached from this process's terminal: in a group of its own on
/// Unix, without a console on Windows.
pub fn detached(command: &mut std::process::Command) -> &mut std::process::Command {
    #[cfg(unix)]
    {
        in_own_group(command)
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt as _;
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        const DETACHED_PROCESS: u32 = 0x0000_0008;
        command.creation_flags(CREATE_NEW_PROCESS_GROUP | DETACHED_PROCESS)
    }
}

/// Ends `child`, started with [`in_own_group`], and on Unix everything in its group.
/// Windows has no signal to a group: there only the child itself is ended.
pub fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(group) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) on the process group this child leads.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    let _ = child.kill();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn this_process_is_alive_with_its_start_time_and_not_with_another() {
        let pid = std::process::id();
        let start = process_start_time(pid).expect("this system has /proc");
        assert!(process_alive(pid, Some(start)));
        assert!(process_alive(pid, None));
        assert!(!process_alive(pid, Some(start + 1)));
    }

    #[test]
    fn a_held_process_is_alive_until_it_ends_and_a_wrong_start_is_never_alive() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let start = process_start_time(pid).expect("this system has /proc");
        let held = ProcessHandle::open(pid, Some(start));
        #[cfg(linux_native)]
        assert!(
            matches!(held.held, Held::Watched(_)),
            "this kernel gives pidfds"
        );
        assert!(held.alive());
        assert!(!ProcessHandle::open(pid, Some(start + 1)).alive());
        child.kill().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while held.alive() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(
            !held.alive(),
            "a killed process reads as ended before it is reaped"
        );
        child.wait().unwrap();
        assert!(!held.alive());
        assert!(!ProcessHandle::open(0, None).alive());
    }

    #[test]
    fn a_finished_child_is_gone_and_nonsense_pids_are_never_alive() {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_alive(pid, None));
        assert!(!process_alive(0, None));
        assert!(!process_alive(u32::MAX, None));
    }

    #[test]
    fn an_unreaped_child_is_a_zombie_and_counts_as_gone() {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        // It exits and is not reaped until the wait below.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while process_alive(pid, None) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!process_alive(pid, None));
        assert!(!ProcessHandle::open(pid, None).alive());
        child.wait().unwrap();
    }

    #[test]
    fn a_stamp_changes_when_the_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("majordomus");
        fs::write(&path, b"one").unwrap();
        let stamp = executable_stamp(&path).unwrap();
        assert_eq!(stamp.size, 3);
        assert!(stamp.matches_disk());

        let replacement = dir.path().join("next");
        fs::write(&replacement, b"two").unwrap();
        let earlier = fs::File::open(&path)
            .unwrap()
            .metadata()
            .unwrap()
            .modified()
            .unwrap();
        let later = earlier + std::time::Duration::from_nanos(1);
        fs::File::options()
            .write(true)
            .open(&replacement)
            .unwrap()
            .set_modified(later)
            .unwrap();
        fs::rename(&replacement, &path).unwrap();
        assert!(!stamp.matches_disk(), "same size, one nanosecond later");

        fs::remove_file(&path).unwrap();
        assert!(!stamp.matches_disk());
        assert_eq!(executable_stamp(&path), None);
    }
}
