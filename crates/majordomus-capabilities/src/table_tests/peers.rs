//! `peers.announce`, and `peers.list` of this board (`checkouts: this`) and of every
//! worktree of the repository (`checkouts: repository`).

use serde_json::json;

use super::{Case, Expect, check, long};
use crate::testing::{Caller, SERVED_WORKTREE};
use majordomus_core::api::ErrorKind;

#[test]
fn peers_announce() {
    check(
        "peers.announce",
        vec![
            Case::new(
                "a claim on an empty board meets nothing",
                Caller::Peer,
                json!({ "intent": "rework the lexer", "scope": ["src/lexer"] }),
                Expect::Answer(json!({
                    "id": "p1",
                    "attached": true,
                    "announcement": { "intent": "rework the lexer", "scope": ["src/lexer"] },
                    "released": [],
                    "overlaps": [],
                    "change_overlaps": [],
                    "boards_unread": [],
                    "complete": true,
                })),
            ),
            Case::new(
                "a claim meets the files another session edited",
                Caller::Peer,
                json!({ "intent": "rework the lexer", "scope": ["src/lexer"] }),
                Expect::Answer(json!({
                    "overlaps": [{ "peer": "p2", "attached": true }],
                    "complete": true,
                })),
            )
            .after(
                "hooks.edit",
                json!({ "client": "codex", "session_id": "s2", "paths": ["src/lexer/mod.rs"] }),
            ),
            Case::new(
                "named claims stand side by side",
                Caller::Peer,
                json!({ "intent": "write the tests", "scope": ["tests"], "claim": "tests" }),
                Expect::Answer(json!({
                    "claims": [
                        { "name": null, "scope": ["src"] },
                        { "name": "tests", "scope": ["tests"] },
                    ],
                })),
            )
            .after(
                "peers.announce",
                json!({ "intent": "the code", "scope": ["src"] }),
            ),
            Case::new(
                "a narrower claim releases what it no longer covers",
                Caller::Peer,
                json!({ "intent": "only the lexer", "scope": ["src/lexer"] }),
                Expect::Answer(json!({
                    "claims": [{ "scope": ["src/lexer"] }],
                    "released": ["src/parser"],
                })),
            )
            .after(
                "peers.announce",
                json!({ "intent": "both", "scope": ["src/lexer", "src/parser"] }),
            ),
            Case::new(
                "a claim needs a session to belong to",
                Caller::Sessionless,
                json!({ "intent": "rework the lexer", "scope": ["src/lexer"] }),
                Expect::Refusal(
                    ErrorKind::Refused,
                    &["needs an MCP session", "`majordomus_announce`"],
                ),
            ),
            Case::new(
                "nor can a process that does not serve make one",
                Caller::Observer,
                json!({ "intent": "rework the lexer", "scope": ["src/lexer"] }),
                Expect::Refusal(ErrorKind::Refused, &["needs an MCP session"]),
            ),
            Case::new(
                "a caller who could never announce is told so before its input is read",
                Caller::Sessionless,
                json!({ "intent": long(1_001), "scope": ["src"] }),
                Expect::Refusal(ErrorKind::Refused, &["needs an MCP session"]),
            ),
            Case::new(
                "input the wire cannot carry is refused before the missing session",
                Caller::Sessionless,
                json!({ "intent": 7, "scope": ["src"] }),
                Expect::Refusal(ErrorKind::InvalidInput, &["expected a string"]),
            ),
            Case::new(
                "an intent over the limit",
                Caller::Peer,
                json!({ "intent": long(1_001), "scope": ["src"] }),
                Expect::Refusal(ErrorKind::InvalidInput, &["intent", "1000"]),
            ),
            Case::new(
                "an empty intent",
                Caller::Peer,
                json!({ "intent": "  ", "scope": ["src"] }),
                Expect::Refusal(ErrorKind::InvalidInput, &["intent"]),
            ),
            Case::new(
                "control characters in the intent",
                Caller::Peer,
                json!({ "intent": "red \u{1b}[31m text", "scope": ["src"] }),
                Expect::Refusal(ErrorKind::InvalidInput, &["intent"]),
            ),
            Case::new(
                "more scope paths than the limit",
                Caller::Peer,
                json!({
                    "intent": "everything",
                    "scope": (0..257).map(|n| format!("src/f{n}")).collect::<Vec<_>>(),
                }),
                Expect::Refusal(ErrorKind::InvalidInput, &["256", "257"]),
            ),
            Case::new(
                "a path out of the checkout",
                Caller::Peer,
                json!({ "intent": "elsewhere", "scope": ["../elsewhere"] }),
                Expect::Refusal(ErrorKind::InvalidInput, &["../elsewhere"]),
            ),
            Case::new(
                "a claim name over the limit",
                Caller::Peer,
                json!({ "intent": "named", "scope": ["src"], "claim": long(65) }),
                Expect::Refusal(ErrorKind::InvalidInput, &["64"]),
            ),
            Case::new(
                "the intent is required",
                Caller::Peer,
                json!({ "scope": ["src"] }),
                Expect::Refusal(ErrorKind::InvalidInput, &["`intent`", "(it is required)"]),
            ),
        ],
    );
}

#[test]
fn peers_list_this() {
    check(
        "peers.list",
        vec![
            Case::new(
                "a process that does not serve lists a board without a server",
                Caller::Observer,
                json!({ "checkouts": "this" }),
                Expect::Answer(json!({
                    "caller": null,
                    "peers": [],
                    "boards": [{ "this_checkout": true, "standing": "absent" }],
                })),
            ),
            Case::new(
                "the serving process lists its empty board",
                Caller::Sessionless,
                json!({ "checkouts": "this" }),
                Expect::Answer(json!({
                    "caller": null,
                    "peers": [],
                    "boards": [{ "this_checkout": true, "standing": "ready" }],
                })),
            ),
            Case::new(
                "an attached caller finds itself",
                Caller::Peer,
                json!({ "checkouts": "this" }),
                Expect::Answer(json!({
                    "caller": "p1",
                    "peers": [{ "id": "p1", "attached": true, "claims": [] }],
                })),
            ),
            Case::new(
                "a claim is listed with its peer",
                Caller::Peer,
                json!({ "checkouts": "this" }),
                Expect::Answer(json!({
                    "caller": "p1",
                    "peers": [{ "id": "p1", "claims": [{ "intent": "the lexer", "scope": ["src/lexer"] }] }],
                })),
            )
            .after("peers.announce", json!({ "intent": "the lexer", "scope": ["src/lexer"] })),
            Case::new(
                "a session's edits are its claim",
                Caller::Sessionless,
                json!({ "checkouts": "this" }),
                Expect::Answer(json!({
                    "peers": [{ "id": "p1", "claims": [{ "name": "edits", "scope": ["src/a.rs"] }] }],
                })),
            )
            .after(
                "hooks.edit",
                json!({ "client": "claude-code", "session_id": "s1", "paths": ["src/a.rs"] }),
            ),
            Case::new(
                "the listing of this checkout leaves the repository's readings out",
                Caller::Peer,
                json!({ "checkouts": "this" }),
                Expect::Answer(json!({ "conflicts": null, "leases": null, "messages_queued": null })),
            )
            .after("leases.acquire", json!({ "name": "test-suite" })),
            Case::new(
                "an unknown width is bad input",
                Caller::Sessionless,
                json!({ "checkouts": "galaxy" }),
                Expect::Refusal(ErrorKind::InvalidInput, &["the input of `peers.list` is not valid"]),
            ),
        ],
    );
}

#[test]
fn peers_list_repository() {
    check(
        "peers.list",
        vec![
            Case::new(
                "every worktree has a board, served or not",
                Caller::Observer,
                json!({ "checkouts": "repository" }),
                Expect::Answer(json!({
                    "caller": null,
                    "count": 0,
                    "peers": [],
                    "boards": [
                        {
                            "worktree": "<worktree>",
                            "branch": "main",
                            "this_checkout": true,
                            "standing": "absent",
                            "reason": null,
                            "changes": { "paths": [] },
                        },
                        {
                            "worktree": "<dir>/beta",
                            "branch": "beta",
                            "this_checkout": false,
                            "standing": "absent",
                            "reason": null,
                            "changes": { "paths": [] },
                        },
                    ],
                    "complete": true,
                    "conflicts": { "pairs": 0, "conflicts": [], "reason": null },
                    "leases": null,
                    "messages_queued": null,
                })),
            )
            .worktree("beta"),
            Case::new(
                "the repository is the default width",
                Caller::Sessionless,
                json!({}),
                Expect::Answer(json!({
                    "boards": [
                        { "this_checkout": true, "standing": "ready" },
                        { "worktree": "<dir>/beta", "standing": "absent" },
                    ],
                })),
            )
            .worktree("beta"),
            Case::new(
                "each worktree's changes are on its board",
                Caller::Observer,
                json!({ "checkouts": "repository" }),
                Expect::Answer(json!({
                    "boards": [
                        { "changes": { "paths": [{ "path": "README", "kinds": ["unstaged"] }] } },
                        { "changes": { "paths": [{ "path": "NOTES", "kinds": ["untracked"] }] } },
                    ],
                    "change_overlaps": [],
                })),
            )
            .worktree("beta")
            .write(SERVED_WORKTREE, "README", "changed in alpha\n")
            .write("beta", "NOTES", "written in beta\n"),
            Case::new(
                "two worktrees changing one file meet, and their merge would conflict",
                Caller::Observer,
                json!({ "checkouts": "repository" }),
                Expect::Answer(json!({
                    "change_overlaps": [{
                        "kind": "change",
                        "paths": [{ "yours": "README", "theirs": "README" }],
                        "with": { "kind": "change" },
                    }],
                    "conflicts": {
                        "pairs": 1,
                        "conflicts": [{
                            "ours": { "worktree": "<worktree>" },
                            "theirs": { "worktree": "<dir>/beta" },
                            "paths": ["README"],
                        }],
                    },
                })),
            )
            .worktree("beta")
            .write(SERVED_WORKTREE, "README", "the lexer first\n")
            .write("beta", "README", "the parser first\n"),
            Case::new(
                "the serving process's peers are qualified by their checkout",
                Caller::Peer,
                json!({ "checkouts": "repository" }),
                Expect::Answer(json!({
                    "caller": "p1",
                    "count": 2,
                    "peers": [
                        {
                            "id": "p1",
                            "qualified_id": "p1@<checkout>",
                            "checkout": { "worktree": "<worktree>", "this_checkout": true },
                        },
                        { "id": "p2", "qualified_id": "p2@<checkout>" },
                    ],
                    "boards": [{ "this_checkout": true, "standing": "ready", "attached": 2 }],
                })),
            )
            .after(
                "hooks.news",
                json!({ "client": "claude-code", "session_id": "s2", "moment": "prompt" }),
            ),
            Case::new(
                "the served worktree's changes are read at once",
                Caller::Peer,
                json!({ "checkouts": "repository" }),
                Expect::Answer(json!({
                    "boards": [{ "changes": { "paths": [{ "path": "README", "kinds": ["unstaged"] }] } }],
                })),
            )
            .write(SERVED_WORKTREE, "README", "changed in alpha\n"),
            Case::new(
                "a lease held is listed with its holder",
                Caller::Peer,
                json!({ "checkouts": "repository" }),
                Expect::Answer(json!({
                    "leases": [{
                        "name": "test-suite",
                        "holder": "p1 table-client in alpha",
                        "expires_in_secs": 600,
                        "queue": [],
                        "queued": 0,
                    }],
                })),
            )
            .after("leases.acquire", json!({ "name": "test-suite" })),
            Case::new(
                "messages not yet delivered are counted",
                Caller::Peer,
                json!({ "checkouts": "repository" }),
                Expect::Answer(json!({ "messages_queued": 1 })),
            )
            .after(
                "hooks.news",
                json!({ "client": "claude-code", "session_id": "s2", "moment": "prompt" }),
            )
            .after(
                "messages.send",
                json!({ "to": "p2@<checkout>", "text": "the build is red" }),
            ),
        ],
    );
}
