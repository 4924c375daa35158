//! Whether a lease's owner still runs, and whether the executable it ran is still on disk.

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
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
    let nanos = i128::from(metadata.mtime()) * 1_000_000_000 + i128::from(metadata.mtime_nsec());
    let mtime = OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()?
        .format(&Rfc3339)
        .ok()?;
    Some(ExecutableStamp {
        path: path.to_string_lossy().into_owned(),
        mtime,
        size: metadata.size(),
    })
}

/// When process `pid` started, in clock ticks since boot (field 22 of `/proc/<pid>/stat`);
/// `None` where there is no such process or no `/proc`.
pub fn process_start_time(pid: u32) -> Option<u64> {
    read_stat(pid).map(|stat| stat.start_time)
}

/// Whether process `pid` runs and is the process that started at `start` (when known), so
/// that a pid the system has since given to another process does not pass for the owner.
/// A zombie has finished its work and counts as gone.
pub fn process_alive(pid: u32, start: Option<u64>) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        // 0 and negative pids name process groups, never a lease owner.
        return false;
    }
    // SAFETY: signal 0 delivers nothing; the kernel only checks that the process exists.
    let signalled = unsafe { libc::kill(raw, 0) } == 0;
    // EPERM: it exists but belongs to someone else.
    if !signalled && io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
        return false;
    }
    match read_stat(pid) {
        Some(stat) => stat.state != 'Z' && start.is_none_or(|start| start == stat.start_time),
        // No /proc (or hidden from us): kill's word is all there is.
        None => true,
    }
}

/// A process held by a pidfd, so asking whether it still runs is one `poll` rather than a
/// signal and a read of `/proc`: a server asks it about a sibling's owner on every listing.
///
/// The pidfd is opened first and the process's start time checked after, so the descriptor
/// names the process that started then or is never trusted; once that process ends, the
/// descriptor reads as ready however its pid is reused. Where pidfds are not available (a
/// kernel before 5.3, a sandbox that refuses the call) every question goes to
/// [`process_alive`].
#[derive(Debug)]
pub struct ProcessHandle {
    pid: u32,
    start: Option<u64>,
    held: Held,
}

#[derive(Debug)]
enum Held {
    /// The pidfd of the very process asked about.
    Pidfd(OwnedFd),
    /// It had ended, or was another process, when the handle was made.
    Gone,
    /// No pidfd could be opened: each question is asked afresh.
    Unheld,
}

impl ProcessHandle {
    /// Holds process `pid`, the one that started at `start` when that is known.
    pub fn open(pid: u32, start: Option<u64>) -> Self {
        let held = match open_pidfd(pid) {
            Some(fd) if process_alive(pid, start) => Held::Pidfd(fd),
            Some(_) => Held::Gone,
            None => Held::Unheld,
        };
        ProcessHandle { pid, start, held }
    }

    /// Whether the process still runs; a zombie has ended.
    pub fn alive(&self) -> bool {
        match &self.held {
            Held::Pidfd(fd) => {
                let mut ready = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd, no waiting.
                match unsafe { libc::poll(&mut ready, 1, 0) } {
                    0 => true,
                    1.. => false,
                    _ => process_alive(self.pid, self.start),
                }
            }
            Held::Gone => false,
            Held::Unheld => process_alive(self.pid, self.start),
        }
    }
}

/// A pidfd for `pid`, when the kernel gives one.
fn open_pidfd(pid: u32) -> Option<OwnedFd> {
    let raw = libc::pid_t::try_from(pid).ok().filter(|&raw| raw > 0)?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw, 0) };
    let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
    // SAFETY: the kernel just returned this descriptor, and nothing else owns it.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The fields of `/proc/<pid>/stat` this module needs.
struct Stat {
    state: char,
    start_time: u64,
}

fn read_stat(pid: u32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The command name (field 2) is in parentheses and may itself hold spaces and parentheses,
/// so fields are counted from the last `)`: field 3 (state) comes first, field 22 twentieth.
fn parse_stat(stat: &str) -> Option<Stat> {
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let start_time = fields.nth(18)?.parse().ok()?;
    Some(Stat { state, start_time })
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
        assert!(
            matches!(held.held, Held::Pidfd(_)),
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
        // Wait for it to exit without reaping it.
        while read_stat(pid).is_some_and(|stat| stat.state != 'Z') {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!process_alive(pid, None));
        child.wait().unwrap();
    }

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let stat = "42 (a) b) (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 19 20";
        let parsed = parse_stat(stat).unwrap();
        assert_eq!((parsed.state, parsed.start_time), ('S', 987654));
        assert!(parse_stat("42 (short) S 1 2").is_none());
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
