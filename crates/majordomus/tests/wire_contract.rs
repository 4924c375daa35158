//! The wire contract, pinned byte for byte: the OpenAPI document, every capability's input
//! and output schema, `tools/list`, a recorded answer of each capability, the journal's lines
//! and a published federation document. Other programs read these — clients, scripts, other
//! machines' servers, older journals — so a change to any of them must be deliberate: it
//! shows here as a diff of the pinned files under `tests/wire/`, which are written again by
//! running this test with `UPDATE_EXPECT=1`.
//!
//! Recorded answers come from a real server in a temporary repository with a linked worktree,
//! driven over MCP and REST as clients drive it. What differs between two runs by nature —
//! times, process ids, ports, temporary paths, digests of them — is replaced by a placeholder
//! naming its kind; everything else is compared exactly.

mod common;

use std::path::Path;

use common::*;
use expect_test::expect_file;
use serde_json::{Map, Value, json};

/// Pretty JSON with a final newline, as the pinned files hold it.
fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("JSON values encode");
    text.push('\n');
    text
}

#[test]
fn the_openapi_document_is_pinned() {
    expect_file!["wire/openapi.json"]
        .assert_eq(&pretty(&majordomus_capabilities::openapi::document()));
}

#[test]
fn every_capabilitys_schemas_are_pinned() {
    let schemas: Map<String, Value> = majordomus_capabilities::registry()
        .iter()
        .map(|capability| {
            (
                capability.declaration.id.to_owned(),
                json!({"input": capability.input_schema(), "output": capability.output_schema()}),
            )
        })
        .collect();
    expect_file!["wire/schemas.json"].assert_eq(&pretty(&Value::Object(schemas)));
}

#[test]
fn the_tool_list_is_pinned() {
    let tools = serde_json::to_value(majordomus_server::mcp::tool_list()).expect("encodes");
    expect_file!["wire/tools-list.json"].assert_eq(&pretty(&tools));
}

/// Keys whose numbers are process ids, ports, moments, the executable's size or a lease's
/// time left: they differ between runs and builds.
const VOLATILE_NUMBERS: &[&str] = &[
    "pid",
    "port",
    "process_start",
    "start_time",
    "started",
    "size",
    "expires_in_secs",
];

/// Whether a number under `key` is an age or a duration (`…_ago`, `…_ms`): not only its
/// value but whether it is there at all follows the moment — a sibling's board listed from
/// memory says how old it is (`age_ms`), one asked directly does not; a reading says how old
/// it is once it is done. The schemas pinned above hold these fields.
fn timed(key: &str) -> bool {
    key.ends_with("_ago") || key.ends_with("_ms")
}

/// `value` with what differs between runs by nature replaced by a placeholder of its kind:
/// the temporary directory and the build's (where the tested executable is linked), RFC 3339
/// times, hex digests and commit ids, loopback URLs, and
/// the numbers under [`VOLATILE_NUMBERS`], and ages and durations left out ([`timed`]). Iterative, as every walk over an answer is.
fn normalized(value: &Value, base: &Path) -> Value {
    let base = display(base);
    let time = regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
        .unwrap();
    let hex = regex::Regex::new(r"\b[0-9a-f]{8,64}\b").unwrap();
    let url = regex::Regex::new(r"http://127\.0\.0\.1:\d+").unwrap();
    let mut out = value.clone();
    let mut pending: Vec<&mut Value> = vec![&mut out];
    while let Some(node) = pending.pop() {
        match node {
            Value::String(text) => {
                let replaced = text
                    .replace(&base, "<tmp>")
                    .replace(env!("CARGO_TARGET_TMPDIR"), "<target-tmp>");
                let replaced = time.replace_all(&replaced, "<time>");
                let replaced = url.replace_all(&replaced, "<url>");
                *text = hex.replace_all(&replaced, "<hex>").into_owned();
            }
            Value::Array(items) => pending.extend(items.iter_mut()),
            Value::Object(fields) => {
                fields.retain(|key, field| !(field.is_number() && timed(key)));
                for (key, field) in fields.iter_mut() {
                    if field.is_number() && VOLATILE_NUMBERS.contains(&key.as_str()) {
                        *field = json!(format!("<{key}>"));
                    } else {
                        pending.push(field);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A REST call's JSON answer, whatever its status, with the status beside it.
async fn rest(lease: &LeaseFile, method: &str, path: &str, body: Value) -> Value {
    let url = format!("{}{path}", lease.url());
    let request = match method {
        "GET" => http().get(url),
        _ => http().post(url).json(&body),
    };
    let response = request
        .bearer_auth(&lease.token)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = response.status().as_u16();
    let answer: Value = response.json().await.unwrap_or_else(|e| {
        panic!("{method} {path} answered {status} with a body that is not JSON: {e}")
    });
    json!({"status": status, "answer": answer})
}

/// One answer of every capability, and one refusal, recorded in a fixed order over the
/// surfaces clients use, and the journal the session left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_answer_of_each_capability_and_the_journal_are_pinned() {
    let repo = TempRepo::new();
    let linked = repo.add_worktree("wt1");
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let first = McpClient::http(&lease, "claude-code", "2.1.0").await;
    let second = McpClient::stdio(&repo, &linked, "codex", "0.98.0").await;

    let mut answers = Map::new();
    let mut record = |name: &str, answer: Value| {
        answers.insert(name.to_owned(), normalized(&answer, repo.base()));
    };
    record(
        "episodes.attach",
        first
            .answer(
                "majordomus_session_attach",
                json!({"external_id": "conversation-1"}),
            )
            .await,
    );
    record(
        "peers.announce",
        first
            .answer(
                "majordomus_announce",
                json!({"intent": "restructure src", "scope": ["src"]}),
            )
            .await,
    );
    record(
        "peers.announce (meeting a claim in another worktree)",
        second
            .answer(
                "majordomus_announce",
                json!({"intent": "fix lib", "scope": ["src/lib.rs"], "claim": "fix"}),
            )
            .await,
    );
    record(
        "peers.announce (refused)",
        json!(
            second
                .call("majordomus_announce", json!({"intent": "two\nlines"}))
                .await
                .expect_err("a line break is refused")
        ),
    );
    // A listing reads the other worktree's board and both worktrees' changes as they come;
    // the one recorded is the settled one: the other worktree's claim met, every change read.
    let settled = eventually("a settled listing", || async {
        let listing = first.answer("majordomus_peers", json!({})).await;
        let met = listing["overlaps"]
            .as_array()
            .is_some_and(|o| !o.is_empty());
        let read = listing["boards"]
            .as_array()
            .is_some_and(|boards| boards.iter().all(|b| b["changes"].get("reason").is_none()));
        if met && read {
            Ok(listing)
        } else {
            Err(format!("{listing}"))
        }
    })
    .await;
    record("peers.list", settled);
    record(
        "server.status",
        first
            .answer("majordomus_server", json!({"checkouts": "this"}))
            .await,
    );
    record(
        "conflicts.predict",
        first.answer("majordomus_conflicts", json!({})).await,
    );
    record(
        "episodes.list",
        first.answer("majordomus_episodes", json!({})).await,
    );
    record(
        "leases.acquire",
        first
            .answer("majordomus_lease", json!({"name": "test-suite"}))
            .await,
    );
    record(
        "leases.acquire (queued)",
        second
            .answer("majordomus_lease", json!({"name": "test-suite"}))
            .await,
    );
    record(
        "leases.release",
        first
            .answer("majordomus_release", json!({"name": "test-suite"}))
            .await,
    );
    let hook = |paths: Value| json!({"client": "claude-code", "session_id": "s-1", "paths": paths});
    for (name, route, body) in [
        (
            "hooks.guard",
            "/api/v1/hooks/guard",
            hook(json!(["src/lib.rs"])),
        ),
        (
            "hooks.edit",
            "/api/v1/hooks/edit",
            hook(json!(["README.md"])),
        ),
        (
            "hooks.news",
            "/api/v1/hooks/news",
            json!({"client": "claude-code", "session_id": "s-1", "moment": "session_start"}),
        ),
        (
            "hooks.leases",
            "/api/v1/hooks/leases",
            json!({"client": "claude-code", "session_id": "s-1", "names": ["test-suite"]}),
        ),
        (
            "hooks.end",
            "/api/v1/hooks/end",
            json!({"client": "claude-code", "session_id": "s-1"}),
        ),
        ("peers.list (REST)", "/api/v1/peers", Value::Null),
    ] {
        let method = if body.is_null() { "GET" } else { "POST" };
        record(name, rest(&lease, method, route, body).await);
    }
    record(
        "episodes.detach",
        first.answer("majordomus_session_detach", json!({})).await,
    );
    expect_file!["wire/answers.json"].assert_eq(&pretty(&Value::Object(answers)));

    let journal = eventually("the detach is journalled", || async {
        let path = git_dir(repo.root()).join("majordomus/episodes.jsonl");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path:?}: {e}"))?;
        match text.contains("\"detach\"") {
            true => Ok(text),
            false => Err(text),
        }
    })
    .await;
    let lines: Vec<Value> = journal
        .lines()
        .map(|line| {
            normalized(
                &serde_json::from_str(line).expect("a journal line is JSON"),
                repo.base(),
            )
        })
        .collect();
    expect_file!["wire/journal.json"].assert_eq(&pretty(&Value::Array(lines)));
    second.close().await;
    first.close().await;
}

/// A published board as another machine's server reads it and this one writes it: the
/// pinned document is read into the document type and written back unchanged, so a field
/// renamed, added without a default or dropped shows here.
#[test]
fn a_published_federation_document_reads_and_writes_unchanged() {
    let pinned = expect_file!["wire/federation-document.json"];
    let document = json!({
        "version": majordomus_federation::document::DOCUMENT_VERSION,
        "machine": "laptop",
        "checkout": {
            "id": "0123456789abcdef",
            "worktree": "/home/someone/repo",
            "branch": "main"
        },
        "standing": "ready",
        "ttl_secs": 30,
        "published_at": "2026-12-01T12:00:00Z",
        "peers": [{
            "id": "p1",
            "qualified_id": "p1@0123abcd",
            "client": {"name": "claude-code", "version": "2.1.0"},
            "transport": "http",
            "bridged": false,
            "connected_at": "2026-12-01T11:58:00Z",
            "last_seen_seconds_ago": 3,
            "attached": true,
            "checkout": {
                "id": "0123456789abcdef",
                "worktree": "/home/someone/repo",
                "branch": "main",
                "this_checkout": true
            },
            "announcement": {
                "at": "2026-12-01T11:59:00Z",
                "intent": "restructure src",
                "scope": ["src"]
            },
            "claims": [{
                "at": "2026-12-01T11:59:00Z",
                "intent": "restructure src",
                "scope": ["src"]
            }]
        }],
        "omitted_peers": 0
    });
    let read: majordomus_federation::document::BoardDocument =
        serde_json::from_value(document).expect("the document reads");
    let written = serde_json::to_value(&read).expect("the document writes");
    pinned.assert_eq(&pretty(&written));
}
