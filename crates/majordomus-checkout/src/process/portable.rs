//! The portable answers, from the `sysinfo` crate: what macOS and Windows run, and Linux with
//! the `portable` feature. A start time is seconds since the Unix epoch; nothing is held, so
//! each question about a process asks the system afresh.

use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System};

/// What the system says of one process: its state, its parent and when it started.
struct Seen {
    zombie: bool,
    parent: Option<u32>,
    start_time: u64,
}

fn see(pid: u32) -> Option<Seen> {
    let pid = Pid::from_u32(pid);
    let mut system = System::new().ok()?;
    system.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[pid]),
        true,
        ProcessRefreshKind::nothing(),
    );
    let process = system.process(pid)?;
    Some(Seen {
        zombie: matches!(
            process.status(),
            ProcessStatus::Zombie | ProcessStatus::Dead
        ),
        parent: process.parent().map(Pid::as_u32),
        start_time: process.start_time(),
    })
}

pub(super) fn start_time(pid: u32) -> Option<u64> {
    see(pid).map(|seen| seen.start_time)
}

pub(super) fn parent_of(pid: u32) -> Option<u32> {
    see(pid)?.parent
}

pub(super) fn alive(pid: u32, start: Option<u64>) -> bool {
    see(pid).is_some_and(|seen| !seen.zombie && start.is_none_or(|start| start == seen.start_time))
}

/// Nothing can be held portably: every question is asked afresh.
#[derive(Debug)]
pub(super) enum Watch {}

impl Watch {
    pub(super) fn open(_pid: u32) -> Option<Watch> {
        None
    }

    pub(super) fn running(&self) -> Option<bool> {
        match *self {}
    }
}
