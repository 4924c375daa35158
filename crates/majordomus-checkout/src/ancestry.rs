//! Which processes a process descends from, each named by its pid and its start time.
//!
//! A client runs its MCP server and its hooks as children (a hook through `sh -c`), so a
//! hook's ancestors include the process that is the MCP server's parent: that is how the two
//! doors of one agent session are told to be one where no session id reaches both. A pid
//! alone would let a process that took a dead client's pid pass for it; the start time does
//! not.
//!
//! The system is asked through [`crate::process`]'s seam: `/proc` on Linux, the portable
//! implementation elsewhere.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::process::{parent_of, process_start_time};

/// How many ancestors a walk goes up at most: a hook is a few levels under its client
/// (`sh -c`, perhaps a wrapper), and a bounded walk costs a bounded number of reads.
pub const ANCESTORS: usize = 16;

/// One process: its pid and when it started, as the platform counts it (clock ticks since
/// boot on Linux), so a pid the system gave to another process since is never taken for it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct ProcessStamp {
    /// The process id.
    #[serde(deserialize_with = "whole_number")]
    #[schemars(range(max = u32::MAX))]
    pub pid: u32,
    /// When the process started, in the system's own units. At most 2^53 − 1, the largest
    /// whole number every JSON reader keeps exactly (clock ticks since boot stay far below).
    #[serde(deserialize_with = "whole_number")]
    #[schemars(range(max = START_MAX))]
    pub start: u64,
}

/// The largest start time a stamp is read with: 2^53 − 1.
const START_MAX: u64 = (1 << 53) - 1;

/// A non-negative whole number, also when written as `676.0`: JSON Schema counts that as an
/// integer, so a client that validates against the schema may send it, and serde alone would
/// refuse it.
fn whole_number<'de, D, N>(deserializer: D) -> Result<N, D::Error>
where
    D: serde::Deserializer<'de>,
    N: TryFrom<u64>,
{
    struct Whole;
    impl serde::de::Visitor<'_> for Whole {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a non-negative whole number")
        }
        fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<u64, E> {
            Ok(value)
        }
        fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<u64, E> {
            u64::try_from(value).map_err(|_| E::custom("a process is never negative"))
        }
        fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<u64, E> {
            // 2^64 is the first float past u64::MAX; every whole float below it fits.
            if value.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&value) {
                Ok(value as u64)
            } else {
                Err(E::custom(format!("{value} is not a whole number")))
            }
        }
    }
    let value = deserializer.deserialize_u64(Whole)?;
    if value > START_MAX {
        return Err(serde::de::Error::custom(format!(
            "{value} is larger than {START_MAX}"
        )));
    }
    N::try_from(value).map_err(|_| serde::de::Error::custom(format!("{value} is out of range")))
}

impl ProcessStamp {
    /// The process `pid`, stamped with its start time; `None` when it is not running or this
    /// platform cannot say.
    pub fn of(pid: u32) -> Option<ProcessStamp> {
        let start = process_start_time(pid)?;
        Some(ProcessStamp { pid, start })
    }
}

/// The parent of this process, stamped; `None` when it cannot be told.
pub fn parent() -> Option<ProcessStamp> {
    parent_of(std::process::id()).and_then(ProcessStamp::of)
}

/// This process's ancestors, its parent first, at most [`ANCESTORS`] of them; the walk stops
/// at pid 1, at a process it cannot read, or at a parent that started after its child (its
/// pid was reused: the chain is broken there).
pub fn ancestors() -> Vec<ProcessStamp> {
    let mut found = Vec::new();
    let mut child = std::process::id();
    let mut child_start = process_start_time(child);
    while found.len() < ANCESTORS {
        let Some(parent) = parent_of(child).filter(|&pid| pid > 1) else {
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

#[cfg(test)]
mod reading {
    use super::*;

    #[test]
    fn a_stamp_is_read_from_whole_numbers_however_written() {
        let read = |text: &str| serde_json::from_str::<ProcessStamp>(text);
        let stamp = read(r#"{"pid": 676.0, "start": 90627}"#).unwrap();
        assert_eq!(
            stamp,
            ProcessStamp {
                pid: 676,
                start: 90627
            }
        );
        assert!(read(r#"{"pid": 1.5, "start": 1}"#).is_err());
        assert!(read(r#"{"pid": -1, "start": 1}"#).is_err());
        assert!(read(r#"{"pid": 4294967296, "start": 1}"#).is_err());
        assert!(read(r#"{"pid": 1.0e30, "start": 1}"#).is_err());
        assert!(read(r#"{"pid": 1, "start": 140288436594346672128}"#).is_err());
        assert!(read(r#"{"pid": 1, "start": 9007199254740992}"#).is_err());
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

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
