//! `peers.announce` and `peers.list` of this board (`checkouts: this`).

use serde_json::json;

use super::{Case, Expect, check, long};
use crate::testing::Caller;
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
                "bad input is refused before the missing session",
                Caller::Sessionless,
                json!({ "intent": long(1_001), "scope": ["src"] }),
                Expect::Refusal(ErrorKind::InvalidInput, &["1000"]),
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
                "an unknown width is bad input",
                Caller::Sessionless,
                json!({ "checkouts": "galaxy" }),
                Expect::Refusal(ErrorKind::InvalidInput, &["the input of `peers.list` is not valid"]),
            ),
        ],
    );
}
