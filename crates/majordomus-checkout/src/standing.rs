//! Where a checkout's server stands, and what an election loser should do about it: pure
//! decisions over facts the caller gathered (the lease, its age, the probe's answer, whether
//! the owner's process and executable are still there), so every case can be tested exactly.

use std::time::Duration;

use majordomus_domain::checkouts::ServerStanding;

use crate::lease::{Lease, LeaseReading};

/// What the probe (`GET /` at the lease's URL) found. The app asks; this module judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeAnswer {
    /// A majordomus server answering for this checkout. `leaseholder` is false once another
    /// process has taken its lease over (an answer without the field counts as true).
    Ours { version: String, leaseholder: bool },
    /// A majordomus server answering for another checkout: the port was reused.
    Foreign { checkout_id: String },
    /// Something answered, but not as majordomus; what it said, in words.
    NotMajordomus(String),
    /// Nothing answered; why, e.g. "connection refused", "timed out after 300 ms".
    NoAnswer(String),
}

/// The facts a standing is judged from.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// The lease as read.
    pub reading: &'a LeaseReading,
    /// How old the lease is (see [`crate::lease_age`]); `None` when unknown, which counts
    /// as old: an undatable lease must not hold its checkout forever.
    pub age: Option<Duration>,
    /// The probe's answer; `None` when the lease names no URL to ask.
    pub probe: Option<&'a ProbeAnswer>,
    /// Whether the lease's owner still runs ([`Lease::owner_alive`]).
    pub owner_alive: bool,
    /// Whether the lease's executable stamp still matches the disk
    /// ([`crate::ExecutableStamp::matches_disk`]).
    pub executable_unchanged: bool,
    /// The version of the executable doing the judging.
    pub this_version: &'a str,
    /// How long a lease without a URL is presumed to be binding before it counts as abandoned.
    pub starting_grace: Duration,
}

/// A judged standing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub standing: ServerStanding,
    /// Why, in one sentence; present for every standing but absent and ready.
    pub reason: Option<String>,
    /// Whether the checkout's board counts as read when no peers are fetched from it: true
    /// when there is no live server to ask (its board is truly empty) or one that can be
    /// asked; false while a server may hold peers it cannot tell (starting, or frozen), so
    /// the gather reports itself incomplete instead of looking empty.
    pub readable: bool,
}

/// What an election loser should do about the lease that beat it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElectionVerdict {
    /// There is no lease (any more): try to create it again.
    Vacant,
    /// Its server answers for this checkout: use it.
    Live,
    /// Its server is silent but its process runs: wait, then judge again.
    Busy,
    /// Its owner is still binding: wait, then judge again.
    Binding,
    /// Nobody serves through it; why. Take it over.
    Stale(String),
}

/// Judges a checkout's standing: `absent` without a lease, `starting` while a young lease has
/// no URL yet, `ready` when the probe answers as this checkout's server, `outdated` when it
/// answers but its executable was replaced or its version differs, `stale` otherwise.
pub fn judge_standing(evidence: &Evidence<'_>) -> Standing {
    let young = evidence
        .age
        .is_some_and(|age| age < evidence.starting_grace);
    let lease = match evidence.reading {
        LeaseReading::Absent => return verdict(ServerStanding::Absent, None, true),
        // With the exclusive create done by linking a complete file, an empty lease is a
        // creator that crashed, or one on a file system without links caught mid-write.
        LeaseReading::Empty if young => {
            let reason = "its lease file is still being written".to_owned();
            return verdict(ServerStanding::Starting, Some(reason), false);
        }
        LeaseReading::Empty => {
            return stale("its lease file is empty".to_owned(), true);
        }
        LeaseReading::Corrupt(why) => {
            return stale(format!("its lease file is corrupt: {why}"), true);
        }
        LeaseReading::Document(lease, _) => lease,
    };
    let Some(url) = lease.url.as_deref() else {
        let age = evidence.age.map_or_else(
            || "of unknown age".to_owned(),
            |age| format!("{} old", words(age)),
        );
        if young {
            let reason = format!("it is still starting: its lease is {age} and has no URL yet");
            return verdict(ServerStanding::Starting, Some(reason), false);
        }
        let reason = format!(
            "abandoned while binding: its lease is {age} and still has no URL; {}",
            owner(lease, evidence.owner_alive)
        );
        return stale(reason, true);
    };
    match evidence.probe {
        Some(ProbeAnswer::Ours {
            version,
            leaseholder: true,
        }) => {
            let mut changes = Vec::new();
            if !evidence.executable_unchanged {
                changes.push(format!(
                    "its executable {} was replaced on disk after it started",
                    lease.executable.path
                ));
            }
            if version != evidence.this_version {
                changes.push(format!(
                    "it runs version {version}, this executable is {}",
                    evidence.this_version
                ));
            }
            if changes.is_empty() {
                verdict(ServerStanding::Ready, None, true)
            } else {
                verdict(ServerStanding::Outdated, Some(changes.join("; ")), true)
            }
        }
        Some(ProbeAnswer::Ours {
            leaseholder: false, ..
        }) => stale(
            format!("the server at {url} has lost this checkout's lease"),
            true,
        ),
        Some(ProbeAnswer::Foreign { checkout_id }) => stale(
            format!("{url} answers for another checkout ({checkout_id})"),
            true,
        ),
        Some(ProbeAnswer::NotMajordomus(what)) => {
            stale(format!("{url} is not a majordomus server ({what})"), true)
        }
        Some(ProbeAnswer::NoAnswer(why)) if evidence.owner_alive => stale(
            format!(
                "no answer at {url} ({why}); its process {} is alive but not answering",
                lease.pid
            ),
            false,
        ),
        Some(ProbeAnswer::NoAnswer(why)) => stale(
            format!("no answer at {url} ({why}); {}", owner(lease, false)),
            true,
        ),
        // Its server may hold peers nobody asked for: not read, rather than read as empty.
        None => stale(format!("its server at {url} was not asked"), false),
    }
}

/// Classifies the lease an election loser found: live, busy (silent but its process runs),
/// binding (no URL yet, young) or stale. `silent_for` is how
/// long its server has failed to answer probes; within `busy_grace` a silent server whose
/// process runs is busy, not dead.
pub fn classify_for_election(
    evidence: &Evidence<'_>,
    silent_for: Duration,
    busy_grace: Duration,
) -> ElectionVerdict {
    let judged = judge_standing(evidence);
    match judged.standing {
        ServerStanding::Absent => ElectionVerdict::Vacant,
        ServerStanding::Starting => ElectionVerdict::Binding,
        ServerStanding::Ready | ServerStanding::Outdated => ElectionVerdict::Live,
        ServerStanding::Stale => {
            let silent_but_running =
                matches!(evidence.probe, Some(ProbeAnswer::NoAnswer(_))) && evidence.owner_alive;
            if silent_but_running && silent_for < busy_grace {
                ElectionVerdict::Busy
            } else {
                ElectionVerdict::Stale(judged.reason.unwrap_or_default())
            }
        }
    }
}

fn verdict(standing: ServerStanding, reason: Option<String>, readable: bool) -> Standing {
    Standing {
        standing,
        reason,
        readable,
    }
}

fn stale(reason: String, readable: bool) -> Standing {
    verdict(ServerStanding::Stale, Some(reason), readable)
}

fn owner(lease: &Lease, alive: bool) -> String {
    let state = if alive { "still runs" } else { "is gone" };
    format!("its process {} {state}", lease.pid)
}

/// A duration as a person says it: "350 ms", "12 s", "5 min", "3 h".
fn words(duration: Duration) -> String {
    match duration.as_secs() {
        0 => format!("{} ms", duration.as_millis()),
        seconds @ 1..120 => format!("{seconds} s"),
        seconds @ 120..7200 => format!("{} min", seconds / 60),
        seconds => format!("{} h", seconds / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::ExecutableStamp;

    const URL: &str = "http://127.0.0.1:4100";
    const GRACE: Duration = Duration::from_secs(10);

    fn lease(url: Option<&str>) -> LeaseReading {
        let lease = Lease {
            schema: crate::LEASE_SCHEMA.into(),
            pid: 1234,
            process_start: Some(99),
            token: "0".repeat(64),
            root: "/r".into(),
            url: url.map(str::to_owned),
            started_at: "2026-01-01T00:00:00Z".into(),
            executable: ExecutableStamp {
                path: "/usr/bin/majordomus".into(),
                mtime: "2026-01-01T00:00:00Z".into(),
                size: 10,
            },
            version: "1.0.0".into(),
        };
        LeaseReading::Document(lease, Vec::new())
    }

    fn ours(version: &str, leaseholder: bool) -> ProbeAnswer {
        ProbeAnswer::Ours {
            version: version.into(),
            leaseholder,
        }
    }

    fn evidence<'a>(reading: &'a LeaseReading, probe: Option<&'a ProbeAnswer>) -> Evidence<'a> {
        Evidence {
            reading,
            age: Some(Duration::from_secs(60)),
            probe,
            owner_alive: true,
            executable_unchanged: true,
            this_version: "1.0.0",
            starting_grace: GRACE,
        }
    }

    fn judged(evidence: Evidence<'_>) -> (ServerStanding, String, bool) {
        let standing = judge_standing(&evidence);
        let reason = standing.reason.clone().unwrap_or_default();
        let needs_reason = !matches!(
            standing.standing,
            ServerStanding::Absent | ServerStanding::Ready
        );
        assert_eq!(standing.reason.is_some(), needs_reason, "{standing:?}");
        (standing.standing, reason, standing.readable)
    }

    #[test]
    fn no_lease_is_absent_and_an_empty_board() {
        let reading = LeaseReading::Absent;
        let (standing, _, readable) = judged(evidence(&reading, None));
        assert_eq!((standing, readable), (ServerStanding::Absent, true));
    }

    #[test]
    fn unreadable_leases_are_stale_but_read() {
        let empty = LeaseReading::Empty;
        let (standing, reason, readable) = judged(evidence(&empty, None));
        assert_eq!((standing, readable), (ServerStanding::Stale, true));
        assert!(reason.contains("empty"), "{reason}");

        let corrupt = LeaseReading::Corrupt("it is not a lease (EOF)".into());
        let (standing, reason, readable) = judged(evidence(&corrupt, None));
        assert_eq!((standing, readable), (ServerStanding::Stale, true));
        assert!(
            reason.contains("corrupt: it is not a lease (EOF)"),
            "{reason}"
        );
    }

    #[test]
    fn a_young_empty_lease_is_still_being_written() {
        let empty = LeaseReading::Empty;
        let young = Evidence {
            age: Some(Duration::from_millis(5)),
            ..evidence(&empty, None)
        };
        let (standing, _, readable) = judged(young);
        assert_eq!((standing, readable), (ServerStanding::Starting, false));
    }

    #[test]
    fn without_a_url_a_lease_is_starting_then_abandoned() {
        let reading = lease(None);
        let young = Evidence {
            age: Some(Duration::from_secs(3)),
            ..evidence(&reading, None)
        };
        let (standing, reason, readable) = judged(young);
        assert_eq!((standing, readable), (ServerStanding::Starting, false));
        assert!(reason.contains("3 s old"), "{reason}");

        let (standing, reason, readable) = judged(evidence(&reading, None));
        assert_eq!((standing, readable), (ServerStanding::Stale, true));
        assert!(reason.starts_with("abandoned while binding"), "{reason}");
        assert!(
            reason.contains("60 s old") && reason.contains("1234 still runs"),
            "{reason}"
        );

        let undated = Evidence {
            age: None,
            owner_alive: false,
            ..evidence(&reading, None)
        };
        let (standing, reason, _) = judged(undated);
        assert_eq!(standing, ServerStanding::Stale);
        assert!(
            reason.contains("unknown age") && reason.contains("1234 is gone"),
            "{reason}"
        );
    }

    #[test]
    fn a_server_that_answers_as_ours_is_ready_or_outdated() {
        let reading = lease(Some(URL));
        let same = ours("1.0.0", true);
        let (standing, _, readable) = judged(evidence(&reading, Some(&same)));
        assert_eq!((standing, readable), (ServerStanding::Ready, true));

        let older = ours("0.9.0", true);
        let (standing, reason, readable) = judged(evidence(&reading, Some(&older)));
        assert_eq!((standing, readable), (ServerStanding::Outdated, true));
        assert_eq!(reason, "it runs version 0.9.0, this executable is 1.0.0");

        let replaced = Evidence {
            executable_unchanged: false,
            ..evidence(&reading, Some(&same))
        };
        let (standing, reason, _) = judged(replaced);
        assert_eq!(standing, ServerStanding::Outdated);
        assert!(
            reason.contains("/usr/bin/majordomus was replaced on disk"),
            "{reason}"
        );
    }

    #[test]
    fn a_server_answering_as_someone_else_is_stale_but_read() {
        let reading = lease(Some(URL));
        let answers = [
            (ours("1.0.0", false), "lost this checkout's lease"),
            (
                ProbeAnswer::Foreign {
                    checkout_id: "abc".into(),
                },
                "another checkout (abc)",
            ),
            (
                ProbeAnswer::NotMajordomus("HTTP 404".into()),
                "not a majordomus server (HTTP 404)",
            ),
        ];
        for (answer, expected) in answers {
            let (standing, reason, readable) = judged(evidence(&reading, Some(&answer)));
            assert_eq!((standing, readable), (ServerStanding::Stale, true));
            assert!(
                reason.contains(URL) && reason.contains(expected),
                "{reason}"
            );
        }
    }

    #[test]
    fn silence_is_stale_and_makes_the_gather_incomplete_while_the_process_runs() {
        let reading = lease(Some(URL));
        let silent = ProbeAnswer::NoAnswer("connection refused".into());
        let dead = Evidence {
            owner_alive: false,
            ..evidence(&reading, Some(&silent))
        };
        let (standing, reason, readable) = judged(dead);
        assert_eq!((standing, readable), (ServerStanding::Stale, true));
        assert_eq!(
            reason,
            "no answer at http://127.0.0.1:4100 (connection refused); its process 1234 is gone"
        );

        let frozen = ProbeAnswer::NoAnswer("timed out after 300 ms".into());
        let (standing, reason, readable) = judged(evidence(&reading, Some(&frozen)));
        assert_eq!((standing, readable), (ServerStanding::Stale, false));
        assert!(
            reason.contains(URL) && reason.contains("alive but not answering"),
            "{reason}"
        );

        let (standing, reason, readable) = judged(evidence(&reading, None));
        assert_eq!((standing, readable), (ServerStanding::Stale, false));
        assert!(reason.contains("not asked"), "{reason}");
    }

    #[test]
    fn elections_follow_the_standing() {
        let busy_grace = Duration::from_secs(2);
        let classify = |evidence: Evidence<'_>, silent_for| {
            classify_for_election(&evidence, silent_for, busy_grace)
        };
        let absent = LeaseReading::Absent;
        assert_eq!(
            classify(evidence(&absent, None), Duration::ZERO),
            ElectionVerdict::Vacant
        );

        let binding = lease(None);
        let young = Evidence {
            age: Some(Duration::from_secs(1)),
            ..evidence(&binding, None)
        };
        assert_eq!(classify(young, Duration::ZERO), ElectionVerdict::Binding);
        let abandoned = classify(evidence(&binding, None), Duration::ZERO);
        assert!(matches!(abandoned, ElectionVerdict::Stale(why) if why.contains("abandoned")));

        let serving = lease(Some(URL));
        let older = ours("0.1.0", true);
        assert_eq!(
            classify(evidence(&serving, Some(&older)), Duration::ZERO),
            ElectionVerdict::Live
        );
        let lost = ours("1.0.0", false);
        assert!(matches!(
            classify(evidence(&serving, Some(&lost)), Duration::ZERO),
            ElectionVerdict::Stale(_)
        ));

        let silent = ProbeAnswer::NoAnswer("timed out after 300 ms".into());
        let running = evidence(&serving, Some(&silent));
        assert_eq!(
            classify(running, Duration::from_millis(500)),
            ElectionVerdict::Busy
        );
        let given_up = classify(running, Duration::from_secs(2));
        assert!(matches!(given_up, ElectionVerdict::Stale(why) if why.contains("not answering")));
        let dead = Evidence {
            owner_alive: false,
            ..running
        };
        assert!(
            matches!(classify(dead, Duration::ZERO), ElectionVerdict::Stale(why) if why.contains("gone"))
        );
    }

    #[test]
    fn durations_read_as_a_person_says_them() {
        assert_eq!(words(Duration::from_millis(350)), "350 ms");
        assert_eq!(words(Duration::from_secs(12)), "12 s");
        assert_eq!(words(Duration::from_secs(300)), "5 min");
        assert_eq!(words(Duration::from_secs(3 * 3600 + 5)), "3 h");
    }
}
