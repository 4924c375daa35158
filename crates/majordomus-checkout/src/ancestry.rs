//! Which processes a process descends from, each named by its pid and its start time.
//!
//! A client runs its MCP server and its hooks as children (a hook through `sh -c`), so a
//! hook's ancestors include the process that is the MCP server's parent: that is how the two
//! doors of one agent session are told to be one where no session id reaches both. A pid
//! alone would let a process that took a dead client's pid pass for it; the start time does
//! not.
//!
//! Linux reads `/proc/<pid>/stat`; elsewhere the portable answer is that nothing is known, so
//! nothing joins and each door stays a peer of its own.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How many ancestors a walk goes up at most: a hook is a few levels under its client
/// (`sh -c`, perhaps a wrapper), and a bounded walk costs a bounded number of reads.
pub const ANCESTORS: usize = 16;

/// One process: its pid and when it started (clock ticks since boot on Linux), so a pid the
/// system gave to another process since is never taken for it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct ProcessStamp {
    /// The process id.
    pub pid: u32,
    /// When the process started, in the system's own units.
    pub start: u64,
}

impl ProcessStamp {
    /// The process `pid`, stamped with its start time; `None` when it is not running or this
    /// platform cannot say.
    pub fn of(pid: u32) -> Option<ProcessStamp> {
        let start = platform::start_time(pid)?;
        Some(ProcessStamp { pid, start })
    }
}

/// The parent of this process, stamped; `None` when it cannot be told.
pub fn parent() -> Option<ProcessStamp> {
    platform::parent_of(std::process::id()).and_then(ProcessStamp::of)
}

/// This process's ancestors, its parent first, at most [`ANCESTORS`] of them; the walk stops
/// at pid 1, at a process it cannot read, or at a parent that started after its child (its
/// pid was reused: the chain is broken there).
pub fn ancestors() -> Vec<ProcessStamp> {
    let mut found = Vec::new();
    let mut child = std::process::id();
    let mut child_start = platform::start_time(child);
    while found.len() < ANCESTORS {
        let Some(parent) = platform::parent_of(child).filter(|&pid| pid > 1) else {
            break;
        };
        let Some(stamp) = ProcessStamp::of(parent) else {
            break;
        };
        if child_start.is_some_and(|started| stamp.start > started) {
            break;
        }
        found.push(stamp);
        child = parent;
        child_start = Some(stamp.start);
    }
    found
}

#[cfg(target_os = "linux")]
mod platform {
    /// Field 4 of `/proc/<pid>/stat`.
    pub fn parent_of(pid: u32) -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parent_in_stat(&stat)
    }

    /// The command name (field 2) may hold spaces and parentheses: fields are counted from
    /// the last `)`, state first, parent second.
    pub fn parent_in_stat(stat: &str) -> Option<u32> {
        stat[stat.rfind(')')? + 1..]
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }

    pub fn start_time(pid: u32) -> Option<u64> {
        crate::process::process_start_time(pid)
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    pub fn parent_of(_pid: u32) -> Option<u32> {
        None
    }

    pub fn start_time(_pid: u32) -> Option<u64> {
        None
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_past_a_command_name_with_parentheses_and_spaces() {
        let stat = "4242 (a (weird) name) S 17 4242 4242 0 -1 4194560";
        assert_eq!(platform::parent_in_stat(stat), Some(17));
    }

    #[test]
    fn a_child_finds_this_process_among_its_ancestors() {
        let me = ProcessStamp::of(std::process::id()).expect("this system has /proc");
        assert_eq!(ancestors().first().copied(), parent());
        // A shell's walk is this crate's walk from another process: its parent is this one.
        let output = std::process::Command::new("sh")
            .args(["-c", "cut -d' ' -f4 /proc/$$/stat"])
            .output()
            .unwrap();
        let parent: u32 = String::from_utf8(output.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(parent, me.pid);
        assert!(ancestors().len() <= ANCESTORS);
        assert!(ancestors().iter().all(|stamp| stamp.start <= me.start));
    }
}
