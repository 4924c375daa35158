//! Linux's own answers: `/proc/<pid>/stat` for a process's state, parent and start time,
//! `kill(pid, 0)` for its existence, a pidfd to hold it.

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Clock ticks since boot (field 22 of `/proc/<pid>/stat`).
pub(super) fn start_time(pid: u32) -> Option<u64> {
    read_stat(pid).map(|stat| stat.start_time)
}

/// Field 4 of `/proc/<pid>/stat`.
pub(super) fn parent_of(pid: u32) -> Option<u32> {
    read_stat(pid).map(|stat| stat.parent)
}

/// Whether `pid` (a valid positive pid) runs, not a zombie, and started at `start` when that
/// is given.
pub(super) fn alive(pid: u32, start: Option<u64>) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
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

/// A pidfd: asking whether its process runs is one `poll`.
#[derive(Debug)]
pub(super) struct Watch(OwnedFd);

impl Watch {
    /// A pidfd for `pid`, when the kernel gives one.
    pub(super) fn open(pid: u32) -> Option<Watch> {
        let raw = libc::pid_t::try_from(pid).ok().filter(|&raw| raw > 0)?;
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw, 0) };
        let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
        // SAFETY: the kernel just returned this descriptor, and nothing else owns it.
        Some(Watch(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Whether the process still runs; `None` when the poll itself failed.
    pub(super) fn running(&self) -> Option<bool> {
        let mut ready = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no waiting.
        match unsafe { libc::poll(&mut ready, 1, 0) } {
            0 => Some(true),
            1.. => Some(false),
            _ => None,
        }
    }
}

/// The fields of `/proc/<pid>/stat` this module needs.
struct Stat {
    state: char,
    parent: u32,
    start_time: u64,
}

fn read_stat(pid: u32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The command name (field 2) is in parentheses and may itself hold spaces and parentheses,
/// so fields are counted from the last `)`: field 3 (state) comes first, field 4 (parent)
/// second, field 22 (start time) twentieth.
fn parse_stat(stat: &str) -> Option<Stat> {
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    let start_time = fields.nth(17)?.parse().ok()?;
    Some(Stat {
        state,
        parent,
        start_time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let stat = "42 (a) b) (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 19 20";
        let parsed = parse_stat(stat).unwrap();
        assert_eq!(
            (parsed.state, parsed.parent, parsed.start_time),
            ('S', 1, 987654)
        );
        assert!(parse_stat("42 (short) S 1 2").is_none());
        let weird =
            "4242 (a (weird) name) S 17 4242 4242 0 -1 4194560 1 2 3 4 5 6 7 8 9 10 11 12 77";
        assert_eq!(parse_stat(weird).map(|stat| stat.parent), Some(17));
    }
}
