//! Episodes end to end: real `majordomus serve` and `majordomus mcp` processes on real git
//! repositories, rmcp clients, plain REST, and the journal as it lies on disk.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{LeaseFile, McpClient, ServeProcess, TempRepo, eventually, http, run_cli};
use serde_json::{Value, json};

const ATTACH: &str = "majordomus_session_attach";
const DETACH: &str = "majordomus_session_detach";
const EPISODES: &str = "majordomus_episodes";

/// The repository's journal: in the git common dir, shared by every worktree.
fn journal_path(repo: &TempRepo) -> PathBuf {
    repo.root()
        .join(".git")
        .join("majordomus")
        .join("episodes.jsonl")
}

/// Every record of the journal, in order.
fn journal(repo: &TempRepo) -> Vec<Value> {
    let text = fs::read_to_string(journal_path(repo)).unwrap_or_default();
    text.lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("a journal line is not JSON ({e}): {line}"))
        })
        .collect()
}

/// The records of one episode id, as `event` words (with the reason of a `closed`).
fn events_of(records: &[Value], id: &str) -> Vec<String> {
    records
        .iter()
        .filter(|record| record["external_id"] == id)
        .map(|record| match record["reason"].as_str() {
            Some(reason) => format!("{}:{reason}", record["event"].as_str().unwrap()),
            None => record["event"].as_str().unwrap().to_string(),
        })
        .collect()
}

fn write_config(dir: &Path, text: &str) {
    fs::write(dir.join("majordomus.toml"), text).unwrap();
}

async fn rest(lease: &LeaseFile, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let url = format!("{}{path}", lease.url());
    let request = match method {
        "GET" => http().get(&url),
        _ => http().post(&url),
    }
    .bearer_auth(&lease.token);
    let request = match body {
        Some(body) => request
            .header("content-type", "application/json")
            .body(body.to_string()),
        None => request,
    };
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = response.status().as_u16();
    let value = response.json().await.unwrap_or(Value::Null);
    (status, value)
}

fn episode<'a>(list: &'a Value, id: &str) -> Option<&'a Value> {
    list["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|episode| episode["external_id"] == id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_client_attaches_and_a_new_one_resumes_after_it_left() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;

    // 1. over `majordomus mcp`, bridged to the server started first
    let first = McpClient::stdio(&repo, repo.root(), "claude-code", "2.1.0").await;
    let attached = first
        .answer(ATTACH, json!({"external_id": "conv-42"}))
        .await;
    assert_eq!(attached["resumed"], false, "{attached:#}");
    assert_eq!(attached["reattach_grace_seconds"], 900);
    let opened = &attached["episode"];
    assert_eq!(opened["external_id"], "conv-42");
    assert_eq!(opened["provider"], "generic");
    assert_eq!(opened["attachments"], 1);
    assert_eq!(opened["state"], "open");
    assert!(opened["peer"].is_string(), "{opened:#}");
    let repository = opened["repository"].as_str().unwrap();
    assert!(repository.contains("journal"), "{repository}");
    let opened_at = opened["opened_at"].as_str().unwrap().to_string();

    let listed = first.answer(EPISODES, json!({})).await;
    assert_eq!(listed["mine"]["external_id"], "conv-42", "{listed:#}");
    assert_eq!(
        (listed["open"].as_u64(), listed["detached"].as_u64()),
        (Some(1), Some(0))
    );
    first
        .answer(
            "majordomus_announce",
            json!({"intent": "fix the parser", "scope": ["src/parser"]}),
        )
        .await;

    // attaching what one holds only refreshes it
    let again = first
        .answer(ATTACH, json!({"external_id": "conv-42"}))
        .await;
    assert_eq!(again["episode"]["attachments"], 1);

    // the CLI asks the running server
    let cli = run_cli(&repo, ["episodes", "--repo", repo.root().to_str().unwrap()]).await;
    assert!(cli.status.success(), "{cli:?}");
    let text = String::from_utf8_lossy(&cli.stdout);
    assert!(text.contains("conv-42") && text.contains("open"), "{text}");
    let cli = run_cli(
        &repo,
        [
            "episodes",
            "--json",
            "--repo",
            repo.root().to_str().unwrap(),
        ],
    )
    .await;
    let answer: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(answer["episodes"][0]["external_id"], "conv-42");
    assert!(
        answer.get("mine").is_none(),
        "the CLI holds no episode: {answer:#}"
    );

    // 2. the client exits: the episode is detached, not closed
    first.close().await;
    let watcher = McpClient::stdio(&repo, repo.root(), "codex-mcp-client", "0.5.0").await;
    let detached = eventually("conv-42 to be detached", || async {
        let list = watcher.answer(EPISODES, json!({})).await;
        match episode(&list, "conv-42") {
            // the state turns first; the journal's writer records it a moment later
            Some(e)
                if e["state"] == "detached"
                    && e["repository"]
                        .as_str()
                        .is_some_and(|r| r.contains("detached in the journal")) =>
            {
                Ok(e.clone())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(
        detached.get("peer").is_none(),
        "a detached episode has no peer: {detached:#}"
    );
    let (status, rest_list) = rest(&lease, "GET", "/api/v1/episodes", None).await;
    assert_eq!(status, 200);
    assert_eq!(rest_list["detached"], 1, "{rest_list:#}");

    let second = McpClient::stdio(&repo, repo.root(), "claude-code", "2.1.1").await;
    let resumed = second
        .answer(ATTACH, json!({"external_id": "conv-42"}))
        .await;
    assert_eq!(resumed["resumed"], true, "{resumed:#}");
    assert_eq!(resumed["episode"]["attachments"], 2);
    assert_eq!(resumed["episode"]["opened_at"], opened_at.as_str());
    assert_eq!(resumed["episode"]["state"], "open");
    assert!(
        resumed["episode"]["repository"]
            .as_str()
            .unwrap()
            .contains("resumed in the journal"),
        "{resumed:#}"
    );

    let records = journal(&repo);
    assert_eq!(
        events_of(&records, "conv-42"),
        ["opened", "announced", "detached", "resumed"],
        "{records:#?}"
    );
    let first_record = &records[0];
    assert_eq!(first_record["client"]["name"], "claude-code");
    assert_eq!(first_record["client"]["version"], "2.1.0");
    assert_eq!(
        first_record["provider"], "claude-code",
        "the client name maps to its provider"
    );
    assert_eq!(first_record["branch"], "main");
    assert_eq!(first_record["worktree"], repo.root().to_str().unwrap());
    let detached_record = records.iter().find(|r| r["event"] == "detached").unwrap();
    assert_eq!(detached_record["claims"][0]["intent"], "fix the parser");
    assert_eq!(records.last().unwrap()["client"]["version"], "2.1.1");

    watcher.close().await;
    second.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_episode_expires_after_the_grace() {
    let repo = TempRepo::new();
    write_config(repo.root(), "[timings]\nreattach_grace_secs = 2\n");
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;

    let client = McpClient::http(&lease, "gemini-cli-mcp-client", "0.9.0").await;
    let attached = client
        .answer(ATTACH, json!({"external_id": "short-lived"}))
        .await;
    assert_eq!(attached["reattach_grace_seconds"], 2);
    client.close().await;

    eventually("the episode to expire and leave the board", || async {
        let (_, list) = rest(&lease, "GET", "/api/v1/episodes", None).await;
        if episode(&list, "short-lived").is_none() {
            Ok(())
        } else {
            Err(list.to_string())
        }
    })
    .await;
    let records = journal(&repo);
    assert_eq!(
        events_of(&records, "short-lived"),
        ["opened", "detached", "closed:expired"],
        "{records:#?}"
    );
    assert_eq!(records[0]["provider"], "gemini-cli");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ordered_stop_closes_open_episodes_and_the_log_reads_them_back() {
    let repo = TempRepo::new();
    let root = repo.root().to_str().unwrap().to_string();
    let (mut serve, _lease) = ServeProcess::start(&repo, repo.root()).await;
    let client = McpClient::stdio(&repo, repo.root(), "cursor-vscode", "1.7.0").await;
    client
        .answer(ATTACH, json!({"external_id": "conv-stop"}))
        .await;
    client
        .answer(
            "majordomus_announce",
            json!({"intent": "document the journal", "scope": ["docs"], "claim": "docs"}),
        )
        .await;

    let stop = run_cli(&repo, ["serve", "stop", "--repo", &root]).await;
    assert!(stop.status.success(), "{stop:?}");
    assert!(serve.wait_exit().await.success());
    let records = journal(&repo);
    let events = events_of(&records, "conv-stop");
    assert_eq!(
        events.first().map(String::as_str),
        Some("opened"),
        "{records:#?}"
    );
    assert_eq!(
        events.last().map(String::as_str),
        Some("closed:shutdown"),
        "{records:#?}"
    );
    drop(client);

    // with no server running, the in-memory list refuses and points to the log
    let listed = run_cli(&repo, ["episodes", "--repo", &root]).await;
    assert!(!listed.status.success());
    let refusal = String::from_utf8_lossy(&listed.stderr);
    assert!(refusal.contains("no episode is in memory"), "{refusal}");
    assert!(refusal.contains("majordomus episodes log"), "{refusal}");

    let log = run_cli(&repo, ["episodes", "log", "--repo", &root]).await;
    assert!(log.status.success(), "{log:?}");
    let text = String::from_utf8_lossy(&log.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("conv-stop"))
        .unwrap_or_else(|| panic!("{text}"));
    for part in [
        "cursor-vscode 1.7.0",
        "(cursor)",
        "closed: shutdown",
        &root,
        "[main]",
        "[docs] document the journal (docs)",
    ] {
        assert!(line.contains(part), "`{part}` is missing from: {line}");
    }
    let log = run_cli(
        &repo,
        [
            "episodes", "log", "--json", "--since", "1h", "--repo", &root,
        ],
    )
    .await;
    let logged: Value = serde_json::from_slice(&log.stdout).unwrap();
    let logged = &logged.as_array().unwrap()[0];
    assert_eq!(logged["external_id"], "conv-stop");
    assert_eq!(logged["reason"], "shutdown");
    assert_eq!(logged["state"], "closed");
    let log = run_cli(
        &repo,
        [
            "episodes",
            "log",
            "--since",
            "2026-01-01T00:00:00Z",
            "--repo",
            &root,
        ],
    )
    .await;
    assert!(String::from_utf8_lossy(&log.stdout).contains("conv-stop"));
    let bad = run_cli(
        &repo,
        ["episodes", "log", "--since", "yesterday", "--repo", &root],
    )
    .await;
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("RFC 3339"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_episode_survives_a_killed_server_in_the_journal() {
    let repo = TempRepo::new();
    let (mut serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let client = McpClient::http(&lease, "claude-code", "2.1.0").await;
    let first = client
        .answer(ATTACH, json!({"external_id": "conv-crash"}))
        .await;
    let opened_at = first["episode"]["opened_at"].clone();
    serve.kill9().await;
    drop(client);

    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let client = McpClient::stdio(&repo, repo.root(), "claude-code", "2.1.0").await;
    let again = client
        .answer(ATTACH, json!({"external_id": "conv-crash"}))
        .await;
    assert_eq!(
        again["resumed"], true,
        "a crash is continued, not restarted: {again:#}"
    );
    assert_eq!(again["episode"]["opened_at"], opened_at);
    assert_eq!(again["episode"]["attachments"], 2);
    let repository = again["episode"]["repository"].as_str().unwrap();
    assert!(
        repository.contains("previous server ended without closing it"),
        "{repository}"
    );

    let records = journal(&repo);
    assert_eq!(
        events_of(&records, "conv-crash"),
        ["opened", "resumed"],
        "{records:#?}"
    );
    let resumed = &records[1];
    assert_eq!(
        resumed["note"],
        "interrupted: the previous server ended without closing it"
    );
    assert_ne!(resumed["server"]["pid"], records[0]["server"]["pid"]);

    let log = run_cli(
        &repo,
        ["episodes", "log", "--repo", repo.root().to_str().unwrap()],
    )
    .await;
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(text.contains("interrupted 1 time and resumed"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("conv-crash")).count(),
        1,
        "{text}"
    );
    client.close().await;
    let _ = lease;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_command_reports_or_is_reported_on() {
    // its last stderr line is the report
    let repo = TempRepo::new();
    let script = repo.root().join("record-episode.sh");
    fs::write(
        &script,
        "#!/bin/sh\nread event\necho 'recording…' >&2\necho \"tracker: $MAJORDOMUS_EPISODE_EVENT as T-42\" >&2\necho \"$event\" >> episodes-seen.jsonl\n",
    )
    .unwrap();
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    write_config(
        repo.root(),
        "[episodes]\ncommand = [\"./record-episode.sh\"]\n",
    );
    repo.allow(repo.root(), "episodes-command").await;
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let client = McpClient::http(&lease, "codex", "0.5.0").await;
    let attached = client
        .answer(ATTACH, json!({"external_id": "conv-cmd"}))
        .await;
    assert_eq!(
        attached["episode"]["repository"], "tracker: opened as T-42",
        "{attached:#}"
    );
    let closed = client.answer(DETACH, json!({})).await;
    assert_eq!(
        closed["episode"]["repository"], "tracker: closed as T-42",
        "{closed:#}"
    );
    let seen = fs::read_to_string(repo.root().join("episodes-seen.jsonl")).unwrap();
    let events: Vec<Value> = seen
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["event"], "opened");
    assert_eq!(events[0]["external_id"], "conv-cmd");
    assert_eq!(events[0]["provider"], "codex");
    assert_eq!(events[1]["reason"], "detach");
    assert!(
        !journal_path(&repo).exists(),
        "a command replaces the journal"
    );
    client.close().await;

    // a missing command is said to be missing
    let missing = TempRepo::new();
    write_config(
        missing.root(),
        "[episodes]\ncommand = [\"./no-such-recorder\", \"--json\"]\n",
    );
    missing.allow(missing.root(), "episodes-command").await;
    let (_serve, lease) = ServeProcess::start(&missing, missing.root()).await;
    let client = McpClient::http(&lease, "codex", "0.5.0").await;
    let attached = client
        .answer(ATTACH, json!({"external_id": "conv-missing"}))
        .await;
    let repository = attached["episode"]["repository"].as_str().unwrap();
    assert!(
        repository.contains("`./no-such-recorder --json` was not found"),
        "{repository}"
    );
    client.close().await;

    // a hanging command is cut off, and the attach still answers
    let hanging = TempRepo::new();
    write_config(
        hanging.root(),
        "[episodes]\ncommand = [\"sh\", \"-c\", \"sleep 60\"]\ntimeout_ms = 300\n",
    );
    hanging.allow(hanging.root(), "episodes-command").await;
    let (_serve, lease) = ServeProcess::start(&hanging, hanging.root()).await;
    let client = McpClient::http(&lease, "codex", "0.5.0").await;
    let attached = client
        .answer(ATTACH, json!({"external_id": "conv-hang"}))
        .await;
    let repository = attached["episode"]["repository"].as_str().unwrap();
    assert!(
        repository.contains("did not finish within 300 ms"),
        "{repository}"
    );
    let listed = client.answer(EPISODES, json!({})).await;
    assert_eq!(
        listed["mine"]["external_id"], "conv-hang",
        "the server keeps answering"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_inputs_are_refused_clearly_and_the_server_keeps_serving() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let attach = "/api/v1/episodes/attach";
    let detach = "/api/v1/episodes/detach";
    let message = |answer: &Value| {
        answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };

    // An episode belongs to a connection: plain HTTP has none, so attach is not offered there.
    let (status, answer) = rest(&lease, "POST", attach, Some(r#"{"external_id":"conv"}"#)).await;
    assert_eq!(status, 404, "{answer}");
    assert!(message(&answer).contains(attach), "{answer}");
    let (status, answer) = rest(&lease, "POST", detach, Some(r#"{"external_id":"nobody"}"#)).await;
    assert_eq!(status, 404, "{answer}");
    assert!(message(&answer).contains("nobody"), "{answer}");
    let (status, answer) = rest(&lease, "POST", detach, Some("{}")).await;
    assert_eq!(status, 422, "{answer}");
    let (status, answer) = rest(&lease, "POST", detach, Some(r#"{"id":"x"}"#)).await;
    assert_eq!(status, 400, "{answer}");
    let (status, answer) = rest(&lease, "GET", "/api/v1/episodes?mine=1", None).await;
    assert_eq!(status, 400, "{answer}");

    // the same refusals over MCP, and a deliberate detach
    let client = McpClient::stdio(&repo, repo.root(), "claude-code", "2.1.0").await;
    let refusal = client.call(ATTACH, json!({})).await.unwrap_err();
    assert!(refusal.contains("required"), "{refusal}");
    let refusal = client
        .call(ATTACH, json!({"external_id": "a\r\nb"}))
        .await
        .unwrap_err();
    assert!(refusal.contains("one-line"), "{refusal}");
    let refusal = client
        .call(ATTACH, json!({"external_id": "x", "peer": "p1"}))
        .await
        .unwrap_err();
    assert!(refusal.contains("peer"), "{refusal}");
    let refusal = client
        .call(ATTACH, json!({"external_id": "  "}))
        .await
        .unwrap_err();
    assert!(refusal.contains("blank"), "{refusal}");
    let refusal = client.call(DETACH, json!({})).await.unwrap_err();
    assert!(refusal.contains("holds no episode"), "{refusal}");

    client.answer(ATTACH, json!({"external_id": "first"})).await;
    // attaching another id detaches the first
    client
        .answer(ATTACH, json!({"external_id": "second"}))
        .await;
    let listed = client.answer(EPISODES, json!({})).await;
    assert_eq!(episode(&listed, "first").unwrap()["state"], "detached");
    assert_eq!(listed["mine"]["external_id"], "second");

    let closed = client.answer(DETACH, json!({})).await;
    assert_eq!(closed["external_id"], "second");
    assert_eq!(closed["reason"], "detach");
    assert!(
        closed["episode"]["repository"]
            .as_str()
            .unwrap()
            .contains("closed in the journal"),
        "{closed:#}"
    );
    let refusal = client.call(DETACH, json!({})).await.unwrap_err();
    assert!(
        refusal.contains("holds no episode"),
        "detach is not idempotent: {refusal}"
    );
    // over REST, naming the episode is enough
    let (status, answer) = rest(&lease, "POST", detach, Some(r#"{"external_id":"first"}"#)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["episode"]["state"], "detached");
    let (status, _) = rest(&lease, "POST", detach, Some(r#"{"external_id":"first"}"#)).await;
    assert_eq!(status, 404);

    let records = journal(&repo);
    assert_eq!(
        events_of(&records, "first"),
        ["opened", "detached", "closed:detach"]
    );
    assert_eq!(events_of(&records, "second"), ["opened", "closed:detach"]);
    let (status, listed) = rest(&lease, "GET", "/api/v1/episodes", None).await;
    assert_eq!(status, 200);
    assert_eq!(listed["episodes"], json!([]));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_of_every_worktree_write_one_journal() {
    let repo = TempRepo::new();
    let worktree = repo.add_worktree("feature");
    let (_main, main_lease) = ServeProcess::start(&repo, repo.root()).await;
    let (_feature, feature_lease) = ServeProcess::start(&repo, &worktree).await;
    let on_main = McpClient::http(&main_lease, "claude-code", "2.1.0").await;
    let on_feature = McpClient::http(&feature_lease, "codex", "0.5.0").await;
    let (a, b) = tokio::join!(
        on_main.answer(ATTACH, json!({"external_id": "main-work"})),
        on_feature.answer(ATTACH, json!({"external_id": "feature-work"})),
    );
    assert_eq!(a["resumed"], false);
    assert_eq!(b["resumed"], false);
    let records = journal(&repo);
    let mut seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, [1, 2], "{records:#?}");
    let feature = records
        .iter()
        .find(|r| r["external_id"] == "feature-work")
        .unwrap();
    assert_eq!(feature["branch"], "feature");
    assert_eq!(feature["worktree"], worktree.to_str().unwrap());
    assert!(
        !worktree.join(".git").is_dir(),
        "a linked worktree's .git is a file"
    );
    on_main.close().await;
    on_feature.close().await;
}
