//! `episodes.list`, `episodes.attach` and `episodes.detach`: the episodes the serving process
//! holds in memory.

use serde_json::json;

use super::{Case, Expect, check, long};
use crate::testing::Caller;
use majordomus_core::api::ErrorKind;

#[test]
fn episodes_list() {
    check(
        "episodes.list",
        vec![
            Case::new(
                "a process that does not serve holds no episode",
                Caller::Observer,
                json!({}),
                Expect::Refusal(
                    ErrorKind::Refused,
                    &[
                        "no majordomus server is running for",
                        "`majordomus episodes log`",
                    ],
                ),
            ),
            Case::new(
                "a fresh server holds none",
                Caller::Sessionless,
                json!({}),
                Expect::Answer(json!({ "episodes": [], "open": 0, "detached": 0, "mine": null })),
            ),
            Case::new(
                "the caller's own episode is picked out",
                Caller::Peer,
                json!({}),
                Expect::Answer(json!({
                    "episodes": [{ "external_id": "conv-1", "state": "open", "peer": "p1" }],
                    "open": 1,
                    "mine": { "external_id": "conv-1" },
                })),
            )
            .after("episodes.attach", json!({ "external_id": "conv-1" })),
            Case::new(
                "a session seen through its hooks holds the episode of its id",
                Caller::Sessionless,
                json!({}),
                Expect::Answer(json!({
                    "episodes": [{ "external_id": "s1", "state": "open", "peer": "p1" }],
                    "mine": null,
                })),
            )
            .after(
                "hooks.news",
                json!({ "client": "claude-code", "session_id": "s1", "moment": "prompt" }),
            ),
            Case::new(
                "the episode of an ended session waits for its client",
                Caller::Sessionless,
                json!({}),
                Expect::Answer(json!({
                    "episodes": [{ "external_id": "s1", "state": "detached", "peer": null }],
                    "open": 0,
                    "detached": 1,
                })),
            )
            .after(
                "hooks.news",
                json!({ "client": "claude-code", "session_id": "s1", "moment": "prompt" }),
            )
            .after(
                "hooks.end",
                json!({ "client": "claude-code", "session_id": "s1" }),
            ),
            Case::new(
                "it takes no field",
                Caller::Sessionless,
                json!({ "mine": true }),
                Expect::Refusal(ErrorKind::InvalidInput, &["unknown field `mine`"]),
            ),
        ],
    );
}

#[test]
fn episodes_attach() {
    check(
        "episodes.attach",
        vec![
            Case::new(
                "the first attach opens the episode",
                Caller::Peer,
                json!({ "external_id": "conv-1" }),
                Expect::Answer(json!({
                    "resumed": false,
                    "episode": {
                        "external_id": "conv-1",
                        "state": "open",
                        "peer": "p1",
                        "attachments": 1,
                    },
                })),
            ),
            Case::new(
                "attaching what one holds only refreshes it",
                Caller::Peer,
                json!({ "external_id": "conv-1" }),
                Expect::Answer(json!({ "resumed": true, "episode": { "attachments": 1 } })),
            )
            .after("episodes.attach", json!({ "external_id": "conv-1" })),
            Case::new(
                "coming back to an earlier episode resumes it",
                Caller::Peer,
                json!({ "external_id": "conv-1" }),
                Expect::Answer(json!({ "resumed": true, "episode": { "attachments": 2 } })),
            )
            .after("episodes.attach", json!({ "external_id": "conv-1" }))
            .after("episodes.attach", json!({ "external_id": "conv-2" })),
            Case::new(
                "an attach needs a session",
                Caller::Sessionless,
                json!({ "external_id": "conv-1" }),
                Expect::Refusal(
                    ErrorKind::Refused,
                    &["needs an MCP session", "`majordomus_session_attach`"],
                ),
            ),
            Case::new(
                "nor can a process that does not serve make one",
                Caller::Observer,
                json!({ "external_id": "conv-1" }),
                Expect::Refusal(ErrorKind::Refused, &["needs an MCP session"]),
            ),
            Case::new(
                "a blank id",
                Caller::Peer,
                json!({ "external_id": " " }),
                Expect::Refusal(ErrorKind::InvalidInput, &["external_id"]),
            ),
            Case::new(
                "an id over the limit",
                Caller::Peer,
                json!({ "external_id": long(257) }),
                Expect::Refusal(ErrorKind::InvalidInput, &["256"]),
            ),
            Case::new(
                "an id of two lines",
                Caller::Peer,
                json!({ "external_id": "conv\n1" }),
                Expect::Refusal(ErrorKind::InvalidInput, &["external_id"]),
            ),
            Case::new(
                "the id is required",
                Caller::Peer,
                json!({}),
                Expect::Refusal(
                    ErrorKind::InvalidInput,
                    &["`external_id`", "(it is required)"],
                ),
            ),
        ],
    );
}

#[test]
fn episodes_detach() {
    check(
        "episodes.detach",
        vec![
            Case::new(
                "a connection closes its own episode",
                Caller::Peer,
                json!({}),
                Expect::Answer(json!({
                    "external_id": "conv-1",
                    "reason": "detach",
                    "episode": { "external_id": "conv-1" },
                })),
            )
            .after("episodes.attach", json!({ "external_id": "conv-1" })),
            Case::new(
                "a connection that holds none has none to close",
                Caller::Peer,
                json!({}),
                Expect::Refusal(ErrorKind::NotFound, &["this connection holds no episode"]),
            ),
            Case::new(
                "an episode is closed by its id without a session",
                Caller::Sessionless,
                json!({ "external_id": "s1" }),
                Expect::Answer(json!({ "external_id": "s1", "reason": "detach" })),
            )
            .after(
                "hooks.news",
                json!({ "client": "claude-code", "session_id": "s1", "moment": "prompt" }),
            ),
            Case::new(
                "an unknown episode",
                Caller::Sessionless,
                json!({ "external_id": "conv-9" }),
                Expect::Refusal(
                    ErrorKind::NotFound,
                    &["this server holds no episode `conv-9`"],
                ),
            ),
            Case::new(
                "a second close finds nothing",
                Caller::Peer,
                json!({ "external_id": "conv-1" }),
                Expect::Refusal(ErrorKind::NotFound, &["no episode `conv-1`"]),
            )
            .after("episodes.attach", json!({ "external_id": "conv-1" }))
            .after("episodes.detach", json!({})),
            Case::new(
                "without a session, the episode must be named",
                Caller::Sessionless,
                json!({}),
                Expect::Refusal(ErrorKind::Refused, &["without `external_id`"]),
            ),
            Case::new(
                "a process that does not serve holds no episode to close",
                Caller::Observer,
                json!({ "external_id": "conv-1" }),
                Expect::Refusal(
                    ErrorKind::Refused,
                    &["`episodes.detach` is answered by the checkout's running server"],
                ),
            ),
            Case::new(
                "an id over the limit",
                Caller::Sessionless,
                json!({ "external_id": long(257) }),
                Expect::Refusal(ErrorKind::InvalidInput, &["256"]),
            ),
        ],
    );
}
