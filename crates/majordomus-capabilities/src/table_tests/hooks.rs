//! The hooks' capabilities: `hooks.guard`, `hooks.edit`, `hooks.news`, `hooks.wait` and
//! `hooks.end`, which ask only the serving process, and `hooks.leases` and `hooks.received`,
//! which read the repository's lease table and mailbox beside.

use serde_json::{Value, json};

use super::{Case, Expect, check, long};
use crate::testing::Caller;
use majordomus_core::api::ErrorKind;

/// A hook's files for the session `session_id`.
fn files(session_id: &str, paths: &[&str]) -> Value {
    json!({ "client": "claude-code", "session_id": session_id, "paths": paths })
}

const NOT_SERVED: &[&str] = &["is answered by the checkout's running server"];

#[test]
fn hooks_guard() {
    check(
        "hooks.guard",
        vec![
            Case::new(
                "a file nobody claims",
                Caller::Sessionless,
                files("s1", &["src/a.rs"]),
                Expect::Answer(json!({
                    "peer": "p1",
                    "findings": [],
                    "lines": [],
                    "bumps": [],
                    "complete": true,
                })),
            ),
            Case::new(
                "a file another session edited",
                Caller::Sessionless,
                files("s1", &["src/a.rs"]),
                Expect::Answer(json!({ "peer": "p2", "findings": [{ "peer": "p1" }] })),
            )
            .after("hooks.edit", files("s2", &["src/a.rs"])),
            Case::new(
                "a file an attached peer announced",
                Caller::Peer,
                files("s1", &["src/lexer/mod.rs"]),
                Expect::Answer(json!({ "peer": "p2", "findings": [{ "peer": "p1" }] })),
            )
            .after(
                "peers.announce",
                json!({ "intent": "the lexer", "scope": ["src/lexer"] }),
            ),
            Case::new(
                "the session's own edits meet nothing",
                Caller::Sessionless,
                files("s1", &["src/a.rs"]),
                Expect::Answer(json!({ "peer": "p1", "findings": [] })),
            )
            .after("hooks.edit", files("s1", &["src/a.rs"])),
            Case::new(
                "no paths",
                Caller::Sessionless,
                files("s1", &[]),
                Expect::Refusal(ErrorKind::InvalidInput, &["`paths` is empty"]),
            ),
            Case::new(
                "a path out of the checkout",
                Caller::Sessionless,
                files("s1", &["../elsewhere.rs"]),
                Expect::Refusal(ErrorKind::InvalidInput, &["`paths`"]),
            ),
            Case::new(
                "a session id of two lines",
                Caller::Sessionless,
                files("s\n1", &["src/a.rs"]),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["`session_id` is the client's conversation id"],
                ),
            ),
            Case::new(
                "a process that does not serve answers no hook",
                Caller::Observer,
                files("s1", &["src/a.rs"]),
                Expect::Refusal(ErrorKind::Refused, NOT_SERVED),
            ),
        ],
    );
}

#[test]
fn hooks_edit() {
    let many: Vec<String> = (0..257).map(|n| format!("src/f{n}.rs")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    check(
        "hooks.edit",
        vec![
            Case::new(
                "the first edit makes the session's claim",
                Caller::Sessionless,
                files("s1", &["src/a.rs"]),
                Expect::Answer(json!({ "edits": ["src/a.rs"], "peer": "p1", "findings": [] })),
            ),
            Case::new(
                "the latest edit comes first, each file once",
                Caller::Sessionless,
                files("s1", &["src/b.rs", "src/a.rs"]),
                Expect::Answer(json!({ "edits": ["src/b.rs", "src/a.rs", "src/c.rs"] })),
            )
            .after("hooks.edit", files("s1", &["src/a.rs", "src/c.rs"])),
            Case::new(
                "an edit on another session's claim is told",
                Caller::Sessionless,
                files("s2", &["src/a.rs"]),
                Expect::Answer(json!({
                    "edits": ["src/a.rs"],
                    "peer": "p2",
                    "findings": [{ "peer": "p1" }],
                })),
            )
            .after("hooks.edit", files("s1", &["src/a.rs"])),
            Case::new(
                "more files than the limit",
                Caller::Sessionless,
                files("s1", &many),
                Expect::Refusal(ErrorKind::InvalidInput, &["at most 256 files", "257"]),
            ),
            Case::new(
                "a file with control characters",
                Caller::Sessionless,
                files("s1", &["src/\u{7}.rs"]),
                Expect::Refusal(ErrorKind::InvalidInput, &["`paths`"]),
            ),
            Case::new(
                "an unknown client",
                Caller::Sessionless,
                json!({ "client": "vim", "session_id": "s1", "paths": ["src/a.rs"] }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["the input of `hooks.edit` is not valid"],
                ),
            ),
            Case::new(
                "a process that does not serve answers no hook",
                Caller::Observer,
                files("s1", &["src/a.rs"]),
                Expect::Refusal(ErrorKind::Refused, NOT_SERVED),
            ),
        ],
    );
}

#[test]
fn hooks_news() {
    let prompt = |session_id: &str| json!({ "client": "claude-code", "session_id": session_id, "moment": "prompt" });
    check(
        "hooks.news",
        vec![
            Case::new(
                "nothing new on an empty board",
                Caller::Sessionless,
                prompt("s1"),
                Expect::Answer(json!({ "peer": "p1", "lines": [], "inbox": null })),
            ),
            Case::new(
                "the session start on an empty board",
                Caller::Sessionless,
                json!({ "client": "codex", "session_id": "s1", "moment": "session_start" }),
                Expect::Answer(json!({ "peer": "p1", "lines": [] })),
            ),
            Case::new(
                "a session asking again is the same peer",
                Caller::Sessionless,
                prompt("s1"),
                Expect::Answer(json!({ "peer": "p1" })),
            )
            .after("hooks.news", prompt("s1")),
            Case::new(
                "another session's claim on the session's files is told",
                Caller::Sessionless,
                prompt("s1"),
                Expect::Answer(json!({
                    "peer": "p1",
                    "lines": [
                        "p2 (\"claude-code\" in worktree \"<worktree>\", branch \"main\") claims \
                         \"src/a.rs\" for \"files this session edited\", which meets your \"src/a.rs\"",
                    ],
                })),
            )
            .after("hooks.edit", files("s1", &["src/a.rs"]))
            .after("hooks.edit", files("s2", &["src/a.rs"])),
            Case::new(
                "each fact is told once",
                Caller::Sessionless,
                prompt("s1"),
                Expect::Answer(json!({ "peer": "p1", "lines": [] })),
            )
            .after("hooks.edit", files("s1", &["src/a.rs"]))
            .after("hooks.edit", files("s2", &["src/a.rs"]))
            .after("hooks.news", prompt("s1")),
            Case::new(
                "an event name of no characters",
                Caller::Sessionless,
                json!({ "client": "claude-code", "session_id": "s1", "moment": "prompt", "event": "" }),
                Expect::Refusal(ErrorKind::InvalidInput, &["`event` is one line of plain text"]),
            ),
            Case::new(
                "an unknown moment",
                Caller::Sessionless,
                json!({ "client": "claude-code", "session_id": "s1", "moment": "lunch" }),
                Expect::Refusal(ErrorKind::InvalidInput, &["the input of `hooks.news` is not valid"]),
            ),
            Case::new(
                "a session id over the limit",
                Caller::Sessionless,
                prompt(&long(257)),
                Expect::Refusal(ErrorKind::InvalidInput, &["`session_id`", "256"]),
            ),
            Case::new(
                "a process that does not serve answers no hook",
                Caller::Observer,
                prompt("s1"),
                Expect::Refusal(ErrorKind::Refused, NOT_SERVED),
            ),
        ],
    );
}

#[test]
fn hooks_wait() {
    let wait = |reason: &str, message: Value| json!({ "client": "claude-code", "session_id": "s1", "reason": reason, "message": message });
    check(
        "hooks.wait",
        vec![
            Case::new(
                "a permission prompt marks the session waiting",
                Caller::Sessionless,
                wait("permission", json!("may I run the tests?")),
                Expect::Answer(json!({
                    "peer": "p1",
                    "waiting": { "reason": "permission", "message": "may I run the tests?" },
                })),
            ),
            Case::new(
                "a session blocked names who holds it",
                Caller::Sessionless,
                json!({
                    "client": "claude-code",
                    "session_id": "s1",
                    "reason": "blocked",
                    "holder": { "peer": "p7", "client": "codex" },
                }),
                Expect::Answer(json!({
                    "waiting": { "reason": "blocked", "holder": { "peer": "p7", "client": "codex" } },
                })),
            ),
            Case::new(
                "a message over the limit",
                Caller::Sessionless,
                wait("question", json!(long(201))),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["`message` holds at most 200 characters; this one has 201"],
                ),
            ),
            Case::new(
                "a message of null",
                Caller::Sessionless,
                wait("question", Value::Null),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["the input of `hooks.wait` is not valid"],
                ),
            ),
            Case::new(
                "a holder without a peer",
                Caller::Sessionless,
                json!({
                    "client": "claude-code",
                    "session_id": "s1",
                    "reason": "blocked",
                    "holder": { "peer": "", "client": "codex" },
                }),
                Expect::Refusal(ErrorKind::InvalidInput, &["`holder.peer`", "not empty"]),
            ),
            Case::new(
                "an unknown reason",
                Caller::Sessionless,
                wait("boredom", json!("zzz")),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["the input of `hooks.wait` is not valid"],
                ),
            ),
            Case::new(
                "a process that does not serve answers no hook",
                Caller::Observer,
                wait("finished", json!("done")),
                Expect::Refusal(ErrorKind::Refused, NOT_SERVED),
            ),
        ],
    );
}

#[test]
fn hooks_end() {
    let end = |session_id: &str| json!({ "client": "claude-code", "session_id": session_id });
    check(
        "hooks.end",
        vec![
            Case::new(
                "a session never heard of",
                Caller::Sessionless,
                end("s1"),
                Expect::Answer(json!({ "known": false })),
            ),
            Case::new(
                "a session its hooks made known",
                Caller::Sessionless,
                end("s1"),
                Expect::Answer(json!({ "known": true })),
            )
            .after("hooks.edit", files("s1", &["src/a.rs"])),
            Case::new(
                "a session that ended already",
                Caller::Sessionless,
                end("s1"),
                Expect::Answer(json!({ "known": false })),
            )
            .after("hooks.edit", files("s1", &["src/a.rs"]))
            .after("hooks.end", end("s1")),
            Case::new(
                "a blank session id",
                Caller::Sessionless,
                end(""),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["`session_id` is the client's conversation id"],
                ),
            ),
            Case::new(
                "a process that does not serve answers no hook",
                Caller::Observer,
                end("s1"),
                Expect::Refusal(ErrorKind::Refused, NOT_SERVED),
            ),
        ],
    );
}

#[test]
fn hooks_leases() {
    let needs =
        |names: Value| json!({ "client": "claude-code", "session_id": "s1", "names": names });
    check(
        "hooks.leases",
        vec![
            Case::new(
                "a lease nobody holds",
                Caller::Sessionless,
                needs(json!(["test-suite"])),
                Expect::Answer(json!({ "peer": "p1", "held": [] })),
            ),
            Case::new(
                "a lease another session holds",
                Caller::Peer,
                needs(json!(["test-suite"])),
                Expect::Answer(json!({
                    "peer": "p2",
                    "held": [{ "name": "test-suite", "queued": 0, "queue": [] }],
                })),
            )
            .after("leases.acquire", json!({ "name": "test-suite" })),
            Case::new(
                "no lease named",
                Caller::Sessionless,
                needs(json!([])),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["`names` holds 1 to 32 leases; this one has 0"],
                ),
            ),
            Case::new(
                "a name no lease can have",
                Caller::Sessionless,
                needs(json!(["test suite!"])),
                Expect::Refusal(ErrorKind::InvalidInput, &["`names`"]),
            ),
            Case::new(
                "a process that does not serve answers no hook",
                Caller::Observer,
                needs(json!(["test-suite"])),
                Expect::Refusal(ErrorKind::Refused, NOT_SERVED),
            ),
        ],
    );
}

#[test]
fn hooks_received() {
    check(
        "hooks.received",
        vec![
            Case::new(
                "a hand nobody was given delivers nothing",
                Caller::Sessionless,
                json!({ "hand": 1 }),
                Expect::Answer(json!({ "delivered": 0 })),
            ),
            Case::new(
                "a hand beyond the largest",
                Caller::Sessionless,
                json!({ "hand": u64::MAX }),
                Expect::Refusal(ErrorKind::InvalidInput, &["`hand` is the inbox's hand"]),
            ),
            Case::new(
                "a hand that is not a whole number",
                Caller::Sessionless,
                json!({ "hand": 1.5 }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["the input of `hooks.received` is not valid"],
                ),
            ),
            Case::new(
                "a process that does not serve answers no hook",
                Caller::Observer,
                json!({ "hand": 1 }),
                Expect::Refusal(ErrorKind::Refused, NOT_SERVED),
            ),
        ],
    );
}
