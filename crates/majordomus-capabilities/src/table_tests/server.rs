//! `server.status`: where this checkout's server stands, as the process asked knows it.

use serde_json::json;

use super::{Case, Expect, check};
use crate::testing::{Caller, URL};
use majordomus_core::api::ErrorKind;

#[test]
fn server_status() {
    check(
        "server.status",
        vec![
            Case::new(
                "a process that does not serve finds no server",
                Caller::Observer,
                json!({}),
                Expect::Answer(json!({
                    "standing": "absent",
                    "this_process": null,
                    "mcp_sessions": null,
                    "federation": { "state": "off" },
                    "servers": [{
                        "worktree": "<worktree>",
                        "this_checkout": true,
                        "primary": true,
                        "branch": "main",
                        "standing": "absent",
                        "peers": null,
                    }],
                })),
            ),
            Case::new(
                "the serving process answers from memory, its lease without the token",
                Caller::Sessionless,
                json!({}),
                Expect::Answer(json!({
                    "standing": "ready",
                    "this_process": { "url": URL, "token": null },
                    "mcp_sessions": { "live": 0, "parked": 0 },
                    "federation": { "state": "off" },
                    "servers": [{
                        "this_checkout": true,
                        "standing": "ready",
                        "reason": null,
                        "peers": 0,
                        "lease": { "url": URL },
                    }],
                })),
            ),
            Case::new(
                "an attached peer is counted",
                Caller::Peer,
                json!({ "checkouts": "this" }),
                Expect::Answer(json!({ "servers": [{ "peers": 1 }] })),
            ),
            Case::new(
                "a session seen through its hooks is counted",
                Caller::Sessionless,
                json!({ "checkouts": "repository" }),
                Expect::Answer(json!({ "servers": [{ "peers": 1 }] })),
            )
            .after(
                "hooks.end",
                json!({ "client": "codex", "session_id": "gone" }),
            )
            .after(
                "hooks.news",
                json!({ "client": "claude-code", "session_id": "s1", "moment": "prompt" }),
            ),
            Case::new(
                "everywhere covers this machine's checkouts without a federation",
                Caller::Sessionless,
                json!({ "checkouts": "everywhere" }),
                Expect::Answer(json!({ "servers": [{ "this_checkout": true }] })),
            ),
            Case::new(
                "an unknown width is bad input",
                Caller::Sessionless,
                json!({ "checkouts": "nowhere" }),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &[
                        "the input of `server.status` is not valid",
                        "see its input schema",
                    ],
                ),
            ),
            Case::new(
                "an unknown field is bad input",
                Caller::Observer,
                json!({ "checkout": "this" }),
                Expect::Refusal(ErrorKind::InvalidInput, &["unknown field `checkout`"]),
            ),
        ],
    );
}
