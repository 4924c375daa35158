//! `leases.acquire` and `leases.release`: the repository's lease table in its common git
//! dir, held by an MCP session or by a process named by pid. The process a row names is the
//! test's own, the one process sure to run while the row does.

use serde_json::{Value, json};

use super::{Case, Expect, check, long};
use crate::testing::Caller;
use majordomus_core::api::ErrorKind;
use majordomus_domain::limits::LEASES_PER_HOLDER;

/// A lease asked for, or let go of, by the test's own process.
fn by_process(name: &str) -> Value {
    json!({ "name": name, "pid": std::process::id() })
}

/// The test's own process as a lease's holder is named.
fn process() -> String {
    format!("process {} in alpha", std::process::id())
}

/// A pid no process has: Linux hands out pids below this.
const NO_PROCESS: u32 = 4_194_304;

#[test]
fn leases_acquire() {
    let full = (0..LEASES_PER_HOLDER).fold(
        Case::new(
            "a holder of as many leases as one may asks for one more",
            Caller::Peer,
            json!({ "name": "one-more" }),
            Expect::Refusal(
                ErrorKind::Refused,
                &["already holds or waits for 32 leases", "release one first"],
            ),
        ),
        |case, n| case.after("leases.acquire", json!({ "name": format!("suite-{n}") })),
    );
    check(
        "leases.acquire",
        vec![
            Case::new(
                "a lease nobody holds is granted to the session",
                Caller::Peer,
                json!({ "name": "test-suite" }),
                Expect::Answer(json!({
                    "name": "test-suite",
                    "state": "granted",
                    "ticket": 0,
                    "position": null,
                    "holder": null,
                    "expires_in_secs": 600,
                    "port": null,
                })),
            ),
            Case::new(
                "a grant lasts the ttl asked for",
                Caller::Peer,
                json!({ "name": "db:staging", "ttl_secs": 30 }),
                Expect::Answer(
                    json!({ "name": "db:staging", "state": "granted", "expires_in_secs": 30 }),
                ),
            ),
            Case::new(
                "asking again renews the grant on the same ticket",
                Caller::Peer,
                json!({ "name": "test-suite" }),
                Expect::Answer(json!({ "state": "granted", "ticket": 0, "expires_in_secs": 600 })),
            )
            .after(
                "leases.acquire",
                json!({ "name": "test-suite", "ttl_secs": 30 }),
            ),
            Case::new(
                "a lease another holds queues the caller, naming the holder",
                Caller::Peer,
                json!({ "name": "test-suite" }),
                Expect::Answer(json!({
                    "name": "test-suite",
                    "state": "queued",
                    "ticket": 1,
                    "position": 1,
                    "holder": process(),
                    "expires_in_secs": null,
                })),
            )
            .after("leases.acquire", by_process("test-suite")),
            Case::new(
                "waiting for a lease nobody lets go of ends queued",
                Caller::Peer,
                json!({ "name": "test-suite", "wait_secs": 1 }),
                Expect::Answer(json!({ "state": "queued", "position": 1, "holder": process() })),
            )
            .after("leases.acquire", by_process("test-suite")),
            Case::new(
                "a process holds a lease without a session",
                Caller::Sessionless,
                by_process("test-suite"),
                Expect::Answer(json!({ "name": "test-suite", "state": "granted", "ticket": 0 })),
            ),
            Case::new(
                "so does the command line, for the process it names",
                Caller::Observer,
                by_process("test-suite"),
                Expect::Answer(json!({ "name": "test-suite", "state": "granted" })),
            ),
            Case::new(
                "without a session, the process must be named",
                Caller::Sessionless,
                json!({ "name": "test-suite" }),
                Expect::Refusal(
                    ErrorKind::Refused,
                    &["a lease lasts for an MCP session or a process", "`pid`"],
                ),
            ),
            Case::new(
                "a pid no process has",
                Caller::Sessionless,
                json!({ "name": "test-suite", "pid": NO_PROCESS }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["`pid` 4194304 is no running process of this machine"],
                ),
            ),
            full,
            Case::new(
                "an empty name",
                Caller::Peer,
                json!({ "name": "" }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["a lease name is 1 to 64 bytes; this one has 0"],
                ),
            ),
            Case::new(
                "a name over the limit",
                Caller::Peer,
                json!({ "name": long(65) }),
                Expect::Refusal(ErrorKind::InvalidInput, &["1 to 64 bytes", "65"]),
            ),
            Case::new(
                "a name with a space",
                Caller::Peer,
                json!({ "name": "test suite" }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["a lease name is letters, digits and `-_.:/@`"],
                ),
            ),
            Case::new(
                "a port range from port 0",
                Caller::Peer,
                json!({ "name": "port:0-10" }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["`port:0-10` is not a port range"],
                ),
            ),
            Case::new(
                "a ttl of no seconds",
                Caller::Peer,
                json!({ "name": "test-suite", "ttl_secs": 0 }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["a lease's ttl is 1 to 86400 seconds; 0 is not"],
                ),
            ),
            Case::new(
                "a bad ttl is bad input before the question who would hold the lease",
                Caller::Sessionless,
                json!({ "name": "test-suite", "ttl_secs": 0 }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["a lease's ttl is 1 to 86400 seconds; 0 is not"],
                ),
            ),
            Case::new(
                "a ttl over a day",
                Caller::Peer,
                json!({ "name": "test-suite", "ttl_secs": 86_401 }),
                Expect::Refusal(ErrorKind::InvalidInput, &["86400", "86401 is not"]),
            ),
            Case::new(
                "a wait over the limit",
                Caller::Peer,
                json!({ "name": "test-suite", "wait_secs": 601 }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["`wait_secs` is at most 600; 601 is not"],
                ),
            ),
            Case::new(
                "a ttl of null",
                Caller::Peer,
                json!({ "name": "test-suite", "ttl_secs": null }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["the input of `leases.acquire` is not valid"],
                ),
            ),
            Case::new(
                "the name is required",
                Caller::Peer,
                json!({ "ttl_secs": 30 }),
                Expect::Refusal(ErrorKind::InvalidInput, &["`name`", "(it is required)"]),
            ),
        ],
    );
}

#[test]
fn leases_release() {
    check(
        "leases.release",
        vec![
            Case::new(
                "the holder lets go and nobody waited",
                Caller::Peer,
                json!({ "name": "test-suite" }),
                Expect::Answer(json!({ "name": "test-suite", "next": null })),
            )
            .after("leases.acquire", json!({ "name": "test-suite" })),
            Case::new(
                "the first in line holds it now",
                Caller::Peer,
                json!({ "name": "test-suite" }),
                Expect::Answer(json!({ "name": "test-suite", "next": process() })),
            )
            .after("leases.acquire", json!({ "name": "test-suite" }))
            .after("leases.acquire", by_process("test-suite")),
            Case::new(
                "leaving the queue hands nothing on",
                Caller::Peer,
                json!({ "name": "test-suite" }),
                Expect::Answer(json!({ "name": "test-suite", "next": null })),
            )
            .after("leases.acquire", by_process("test-suite"))
            .after("leases.acquire", json!({ "name": "test-suite" })),
            Case::new(
                "a process lets go of its own",
                Caller::Sessionless,
                by_process("test-suite"),
                Expect::Answer(json!({ "name": "test-suite", "next": null })),
            )
            .after("leases.acquire", by_process("test-suite")),
            Case::new(
                "a lease nobody holds",
                Caller::Peer,
                json!({ "name": "test-suite" }),
                Expect::Refusal(
                    ErrorKind::NotFound,
                    &["you neither hold nor wait for `test-suite`"],
                ),
            ),
            Case::new(
                "a lease another holds is not the caller's to let go of",
                Caller::Peer,
                json!({ "name": "test-suite" }),
                Expect::Refusal(ErrorKind::NotFound, &["you neither hold nor wait for"]),
            )
            .after("leases.acquire", by_process("test-suite")),
            Case::new(
                "a second release finds nothing",
                Caller::Peer,
                json!({ "name": "test-suite" }),
                Expect::Refusal(ErrorKind::NotFound, &["`test-suite`"]),
            )
            .after("leases.acquire", json!({ "name": "test-suite" }))
            .after("leases.release", json!({ "name": "test-suite" })),
            Case::new(
                "a port range the worktree was given no port of",
                Caller::Peer,
                json!({ "name": "port:3000-3099" }),
                Expect::Refusal(
                    ErrorKind::NotFound,
                    &["you neither hold nor wait for `port:3000-3099`"],
                ),
            ),
            Case::new(
                "without a session, the process must be named",
                Caller::Sessionless,
                json!({ "name": "test-suite" }),
                Expect::Refusal(
                    ErrorKind::Refused,
                    &["a lease lasts for an MCP session or a process"],
                ),
            ),
            Case::new(
                "a name with a space",
                Caller::Peer,
                json!({ "name": "test suite" }),
                Expect::Refusal(ErrorKind::InvalidInput, &["a lease name is letters"]),
            ),
            Case::new(
                "a release takes no ttl",
                Caller::Peer,
                json!({ "name": "test-suite", "ttl_secs": 30 }),
                Expect::Refusal(ErrorKind::InvalidInput, &["unknown field `ttl_secs`"]),
            ),
            Case::new(
                "the name is required",
                Caller::Peer,
                json!({}),
                Expect::Refusal(ErrorKind::InvalidInput, &["`name`", "(it is required)"]),
            ),
        ],
    );
}
