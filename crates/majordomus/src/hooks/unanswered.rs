//! A server that let a hook's budget run out, remembered beside its lease.
//!
//! A frozen server (stopped, swapping, stuck) still accepts connections, so every hook would
//! wait out its whole budget before failing open: half a second before every edit and prompt.
//! The first hook that finds it answering neither its request within half the budget nor a
//! `GET /` within [`PROBE_TIMEOUT`] gives up then and writes a tiny file beside the lease
//! naming the server's address and when; for [`REMEMBERED_FOR`] the hooks of the checkout do not ask that server
//! at all, and afterwards one hook probes it with a short timeout ([`PROBE_TIMEOUT`]) before
//! trusting it with its budget again. A server at another address (a new lease) is not
//! concerned, and any answer forgets the record.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The file's name, in the directory of the lease (`<git-dir>/majordomus/`).
pub const FILE_NAME: &str = "hooks-unanswered.json";

/// How long a server that missed a hook's budget is not asked again.
pub const REMEMBERED_FOR: Duration = Duration::from_secs(30);

/// How long a probe of the server waits: halfway through a hook's budget, and for a
/// remembered server once [`REMEMBERED_FOR`] has passed.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(100);

/// More than the record ever holds: a larger file is not ours and is ignored.
const FILE_LIMIT_BYTES: u64 = 1024;

/// What the file holds.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// The address the lease named when the server did not answer.
    url: String,
    /// When, in milliseconds since the Unix epoch.
    at_unix_ms: u64,
}

/// What the hooks remember of a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// Nothing against it: ask it within the budget.
    Trusted,
    /// It missed a budget less than [`REMEMBERED_FOR`] ago: do not ask it.
    Unanswered,
    /// It missed a budget longer ago: probe it briefly first.
    Probe,
}

/// The record of the checkout whose lease is `lease`.
pub fn file_beside(lease: &Path) -> Option<PathBuf> {
    Some(lease.parent()?.join(FILE_NAME))
}

/// What is remembered of the server at `url`, read from `file` at `now`.
pub fn recall(file: &Path, url: &str, now: SystemTime) -> Memory {
    let Ok(opened) = std::fs::File::open(file) else {
        return Memory::Trusted;
    };
    let mut text = Vec::new();
    if opened
        .take(FILE_LIMIT_BYTES + 1)
        .read_to_end(&mut text)
        .is_err()
        || text.len() as u64 > FILE_LIMIT_BYTES
    {
        return Memory::Trusted;
    }
    let Ok(record) = serde_json::from_slice::<Record>(&text) else {
        return Memory::Trusted;
    };
    if record.url != url {
        return Memory::Trusted;
    }
    let since = unix_ms(now).saturating_sub(record.at_unix_ms);
    if u128::from(since) < REMEMBERED_FOR.as_millis() {
        Memory::Unanswered
    } else {
        Memory::Probe
    }
}

/// Records that the server at `url` did not answer in time, replacing the file whole (a
/// temporary file of mode 0600 renamed over it), so a hook reading meanwhile reads the old
/// record or the new one. Best effort: a hook that cannot write it only waits again next time.
pub fn remember(file: &Path, url: &str, now: SystemTime) {
    let Some(dir) = file.parent() else { return };
    let record = Record {
        url: url.to_owned(),
        at_unix_ms: unix_ms(now),
    };
    let Ok(text) = serde_json::to_vec(&record) else {
        return;
    };
    let written = tempfile::NamedTempFile::new_in(dir).and_then(|mut staged| {
        staged.write_all(&text)?;
        staged.persist(file).map_err(|error| error.error)?;
        Ok(())
    });
    if let Err(error) = written {
        tracing::debug!(%error, "the unanswered server is not remembered");
    }
}

/// Forgets the record: the server answered.
pub fn forget(file: &Path) {
    let _ = std::fs::remove_file(file);
}

fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_server_is_left_alone_for_a_while_then_probed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        let url = "http://127.0.0.1:4000";
        let now = SystemTime::now();
        assert_eq!(recall(&file, url, now), Memory::Trusted);
        remember(&file, url, now);
        if let Some(mode) = majordomus_checkout::files::mode(&std::fs::metadata(&file).unwrap()) {
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(
            recall(&file, url, now + Duration::from_secs(5)),
            Memory::Unanswered
        );
        assert_eq!(
            recall(&file, url, now + REMEMBERED_FOR + Duration::from_secs(1)),
            Memory::Probe
        );
        assert_eq!(
            recall(&file, "http://127.0.0.1:4001", now),
            Memory::Trusted,
            "another server is not concerned"
        );
        forget(&file);
        assert_eq!(recall(&file, url, now), Memory::Trusted);
        std::fs::write(&file, vec![b' '; 4096]).unwrap();
        assert_eq!(
            recall(&file, url, now),
            Memory::Trusted,
            "an oversized file"
        );
    }
}
