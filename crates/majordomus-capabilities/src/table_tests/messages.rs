//! `messages.send` and `messages.list`: the repository's mailbox in its common git dir,
//! addressed to the live sessions of the board. A row has one caller; its other sessions
//! come to the board through their hooks.

use serde_json::{Value, json};

use super::{Case, Expect, check, long};
use crate::testing::Caller;
use majordomus_core::api::ErrorKind;

/// A hook's prompt for the session `session_id`: it puts that session on the board.
fn prompt(session_id: &str) -> Value {
    json!({ "client": "claude-code", "session_id": session_id, "moment": "prompt" })
}

/// A hook's edit of `path` by the session `session_id`: the session's `edits` claim holds it.
fn edit(session_id: &str, path: &str) -> Value {
    json!({ "client": "claude-code", "session_id": session_id, "paths": [path] })
}

/// A message of `text` to `address`.
fn to(address: &str, text: &str) -> Value {
    json!({ "to": address, "text": text })
}

/// The session `peer` of this board, seen through its hooks, as a message names it.
fn party(peer: &str) -> Value {
    json!({
        "qualified_id": format!("{peer}@<checkout>"),
        "label": format!("{peer}@<checkout> claude-code in alpha"),
        "checkout": "<checkout>",
        "machine": null,
    })
}

#[test]
fn messages_send() {
    let lexer = json!({ "intent": "the lexer", "scope": ["src/lexer"], "claim": "lexer" });
    check(
        "messages.send",
        vec![
            Case::new(
                "a session messages another by its qualified id",
                Caller::Peer,
                to("p2@<checkout>", "I am changing the token type"),
                Expect::Answer(json!({ "id": 1, "to": [party("p2")], "accepted": null })),
            )
            .after("hooks.news", prompt("s2")),
            Case::new(
                "a message to a path reaches whoever edits it",
                Caller::Peer,
                to("path:src/lexer.rs", "tell me before you touch it"),
                Expect::Answer(json!({ "to": [party("p2")] })),
            )
            .after("hooks.edit", edit("s2", "src/lexer.rs"))
            .after("hooks.news", prompt("s3")),
            Case::new(
                "a path may be written from the worktree's root",
                Caller::Peer,
                to("path:<worktree>/src/lexer.rs", "tell me before you touch it"),
                Expect::Answer(json!({ "to": [party("p2")] })),
            )
            .after("hooks.edit", edit("s2", "src/lexer.rs")),
            Case::new(
                "a message to a worktree reaches its live sessions but the sender",
                Caller::Peer,
                to("worktree:alpha", "I am about to rebase"),
                Expect::Answer(json!({ "to": [party("p2"), party("p3")] })),
            )
            .after("hooks.news", prompt("s2"))
            .after("hooks.news", prompt("s3")),
            Case::new(
                "the command line messages a session",
                Caller::Sessionless,
                to("p1@<checkout>", "the build is red"),
                Expect::Answer(json!({ "id": 1, "to": [party("p1")] })),
            )
            .after("hooks.news", prompt("s1")),
            Case::new(
                "messages are numbered in the mailbox",
                Caller::Peer,
                to("p2@<checkout>", "and another thing"),
                Expect::Answer(json!({ "id": 2 })),
            )
            .after("hooks.news", prompt("s2"))
            .after("messages.send", to("p2@<checkout>", "one thing")),
            Case::new(
                "a named claim is offered with the message",
                Caller::Peer,
                json!({ "to": "p2@<checkout>", "text": "the lexer is yours", "handoff": ["lexer"] }),
                Expect::Answer(json!({ "id": 1, "to": [party("p2")], "accepted": null })),
            )
            .after("peers.announce", lexer.clone())
            .after("hooks.news", prompt("s2")),
            Case::new(
                "a session no longer live is no recipient",
                Caller::Peer,
                to("p2@<checkout>", "are you there?"),
                Expect::Refusal(ErrorKind::NotFound, &["no live session is", "p2@"]),
            )
            .after("hooks.news", prompt("s2"))
            .after(
                "hooks.end",
                json!({ "client": "claude-code", "session_id": "s2" }),
            ),
            Case::new(
                "a session never on the board",
                Caller::Peer,
                to("p9@<checkout>", "hello"),
                Expect::Refusal(
                    ErrorKind::NotFound,
                    &["no live session is", "`majordomus_peers` lists the sessions"],
                ),
            ),
            Case::new(
                "a session sends no message to itself",
                Caller::Peer,
                to("p1@<checkout>", "a note to self"),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["a session does not send messages to itself"],
                ),
            ),
            Case::new(
                "a path nobody claims or edits",
                Caller::Peer,
                to("path:src/lexer.rs", "anyone?"),
                Expect::Refusal(
                    ErrorKind::NotFound,
                    &["no live session claims or edits", "src/lexer.rs"],
                ),
            )
            .after("hooks.news", prompt("s2")),
            Case::new(
                "a worktree nobody works in",
                Caller::Peer,
                to("worktree:beta", "anyone?"),
                Expect::Refusal(
                    ErrorKind::NotFound,
                    &["no live session works in worktree", "beta"],
                ),
            )
            .worktree("beta")
            .after("hooks.news", prompt("s2")),
            Case::new(
                "a process that does not serve sees no live session",
                Caller::Observer,
                to("p1@<checkout>", "hello"),
                Expect::Refusal(ErrorKind::NotFound, &["no live session is"]),
            ),
            Case::new(
                "a path out of the repository",
                Caller::Peer,
                to("path:../elsewhere.rs", "hello"),
                Expect::Refusal(
                    ErrorKind::NotFound,
                    &["`to` names a path that is not in the repository"],
                ),
            ),
            Case::new(
                "a worktree without a name",
                Caller::Peer,
                to("worktree: ", "hello"),
                Expect::Refusal(ErrorKind::InvalidInput, &["`to` is `worktree:` without a name"]),
            ),
            Case::new(
                "an address of no form",
                Caller::Peer,
                to("everyone", "hello"),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["\"everyone\"", "there is no message to everyone"],
                ),
            ),
            Case::new(
                "no recipient and no message to answer",
                Caller::Peer,
                json!({ "text": "hello" }),
                Expect::Refusal(ErrorKind::InvalidInput, &["`to` is missing"]),
            ),
            Case::new(
                "an answer to a message not kept",
                Caller::Peer,
                json!({ "reply_to": 9, "text": "yes" }),
                Expect::Refusal(ErrorKind::NotFound, &["message 9 is not kept"]),
            ),
            Case::new(
                "an answer to one's own message would go to oneself",
                Caller::Peer,
                json!({ "reply_to": 1, "text": "and also" }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["a session does not send messages to itself"],
                ),
            )
            .after("hooks.news", prompt("s2"))
            .after("messages.send", to("p2@<checkout>", "one thing")),
            Case::new(
                "nobody answers for the command line",
                Caller::Sessionless,
                json!({ "reply_to": 1, "text": "noted" }),
                Expect::Refusal(
                    ErrorKind::Refused,
                    &["sent from the command line", "there is nobody to reply to"],
                ),
            )
            .after("hooks.news", prompt("s1"))
            .after("messages.send", to("p1@<checkout>", "the build is red")),
            Case::new(
                "an acceptance names the message it answers",
                Caller::Peer,
                json!({ "to": "p2@<checkout>", "text": "taken", "accept": true }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["`accept` answers a handoff: name its message in `reply_to`"],
                ),
            ),
            Case::new(
                "a claim the sender does not hold",
                Caller::Peer,
                json!({ "to": "p2@<checkout>", "text": "yours", "handoff": ["parser"] }),
                Expect::Refusal(
                    ErrorKind::NotFound,
                    &["`handoff` names claim \"parser\", which you do not hold"],
                ),
            )
            .after("peers.announce", lexer.clone())
            .after("hooks.news", prompt("s2")),
            Case::new(
                "a handoff goes to one session",
                Caller::Peer,
                json!({ "to": "worktree:alpha", "text": "yours", "handoff": ["lexer"] }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["a handoff goes to exactly one session; the address reaches 2"],
                ),
            )
            .after("peers.announce", lexer)
            .after("hooks.news", prompt("s2"))
            .after("hooks.news", prompt("s3")),
            Case::new(
                "the command line holds no claims to hand over",
                Caller::Sessionless,
                json!({ "to": "p1@<checkout>", "text": "yours", "handoff": ["lexer"] }),
                Expect::Refusal(
                    ErrorKind::Refused,
                    &["the command line holds no claims to hand over"],
                ),
            )
            .after("hooks.news", prompt("s1")),
            Case::new(
                "more claims handed over than the limit",
                Caller::Peer,
                json!({
                    "to": "p2@<checkout>",
                    "text": "all yours",
                    "handoff": (0..9).map(|n| format!("c{n}")).collect::<Vec<_>>(),
                }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["`handoff` names at most 8 claims; this one names 9"],
                ),
            ),
            Case::new(
                "a blank text",
                Caller::Peer,
                to("p2@<checkout>", " "),
                Expect::Refusal(ErrorKind::InvalidInput, &["`text` is blank"]),
            ),
            Case::new(
                "a text over the limit",
                Caller::Peer,
                to("p2@<checkout>", &long(1_001)),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["a message holds at most 1000 characters; this one has 1001"],
                ),
            ),
            Case::new(
                "a text of two lines",
                Caller::Peer,
                to("p2@<checkout>", "one\ntwo"),
                Expect::Refusal(ErrorKind::InvalidInput, &["`text` spans several lines"]),
            ),
            Case::new(
                "the text is required",
                Caller::Peer,
                json!({ "to": "p2@<checkout>" }),
                Expect::Refusal(ErrorKind::InvalidInput, &["`text`", "(it is required)"]),
            ),
        ],
    );
}

#[test]
fn messages_list() {
    let sent = to("p2@<checkout>", "I am changing the token type");
    check(
        "messages.list",
        vec![
            Case::new(
                "an empty mailbox",
                Caller::Sessionless,
                json!({}),
                Expect::Answer(json!({ "session": null, "messages": [], "dropped": 0 })),
            ),
            Case::new(
                "a session's own, its message queued for its recipient",
                Caller::Peer,
                json!({}),
                Expect::Answer(json!({
                    "session": "p1@<checkout>",
                    "messages": [{
                        "id": 1,
                        "from": {
                            "qualified_id": "p1@<checkout>",
                            "label": "p1@<checkout> table-client in alpha",
                        },
                        "addressed": "p2@<checkout>",
                        "text": "I am changing the token type",
                        "reply_to": null,
                        "receipts": [{
                            "to": party("p2"),
                            "state": "queued",
                            "delivered_ms": null,
                            "through": null,
                        }],
                        "handoff": null,
                    }],
                    "dropped": 0,
                })),
            )
            .after("hooks.news", prompt("s2"))
            .after("messages.send", sent.clone()),
            Case::new(
                "a message handed to a hook stays queued, its hand never listed",
                Caller::Peer,
                json!({}),
                Expect::Answer(json!({
                    "messages": [{
                        "receipts": [{ "state": "queued", "handed": null }],
                    }],
                })),
            )
            .after("hooks.news", prompt("s2"))
            .after("messages.send", sent.clone())
            .after("hooks.news", prompt("s2")),
            Case::new(
                "an offered handoff is listed with its claims",
                Caller::Peer,
                json!({}),
                Expect::Answer(json!({
                    "messages": [{
                        "handoff": {
                            "claims": [{ "name": "lexer", "intent": "the lexer", "scope": ["src/lexer"] }],
                            "state": "offered",
                            "released": false,
                        },
                    }],
                })),
            )
            .after(
                "peers.announce",
                json!({ "intent": "the lexer", "scope": ["src/lexer"], "claim": "lexer" }),
            )
            .after("hooks.news", prompt("s2"))
            .after(
                "messages.send",
                json!({ "to": "p2@<checkout>", "text": "yours", "handoff": ["lexer"] }),
            ),
            Case::new(
                "without a session, everyone's",
                Caller::Sessionless,
                json!({}),
                Expect::Answer(json!({
                    "session": null,
                    "messages": [{
                        "from": { "qualified_id": "command-line", "label": "the command line" },
                        "addressed": "worktree:alpha",
                        "receipts": [{ "to": party("p1") }, { "to": party("p2") }],
                    }],
                })),
            )
            .after("hooks.news", prompt("s1"))
            .after("hooks.news", prompt("s2"))
            .after("messages.send", to("worktree:alpha", "the build is red")),
            Case::new(
                "a session's messages, asked by its qualified id",
                Caller::Sessionless,
                json!({ "session": "p2@<checkout>" }),
                Expect::Answer(json!({
                    "session": "p2@<checkout>",
                    "messages": [{ "id": 2, "addressed": "p2@<checkout>" }],
                })),
            )
            .after("hooks.news", prompt("s1"))
            .after("hooks.news", prompt("s2"))
            .after("messages.send", to("p1@<checkout>", "to the first"))
            .after("messages.send", to("p2@<checkout>", "to the second")),
            Case::new(
                "a session neither sender nor recipient of any",
                Caller::Sessionless,
                json!({ "session": "p3@<checkout>" }),
                Expect::Answer(json!({ "session": "p3@<checkout>", "messages": [] })),
            )
            .after("hooks.news", prompt("s2"))
            .after("hooks.news", prompt("s3"))
            .after("messages.send", to("p2@<checkout>", "to the second")),
            Case::new(
                "an empty session id",
                Caller::Sessionless,
                json!({ "session": "" }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["`session` is a qualified id of 1 to 256 characters"],
                ),
            ),
            Case::new(
                "a session id over the limit",
                Caller::Sessionless,
                json!({ "session": long(257) }),
                Expect::Refusal(ErrorKind::InvalidInput, &["1 to 256 characters"]),
            ),
            Case::new(
                "a session of null",
                Caller::Sessionless,
                json!({ "session": null }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["the input of `messages.list` is not valid"],
                ),
            ),
            Case::new(
                "it takes no recipient",
                Caller::Sessionless,
                json!({ "to": "p1@<checkout>" }),
                Expect::Refusal(ErrorKind::InvalidInput, &["unknown field `to`"]),
            ),
        ],
    );
}
