//! Leases on shared resources, end to end: real servers in a repository with linked
//! worktrees, MCP sessions over HTTP and stdio, the REST route and `majordomus lease`.

mod common;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::AUTHORIZATION;
use serde_json::{Value, json};

use common::{
    LeaseFile, McpClient, ServeProcess, TempRepo, eventually, http, run_cli, signal, wait_gone,
};

const LEASE: &str = "majordomus_lease";
const RELEASE: &str = "majordomus_release";

/// Asks for `name` until it is granted (each call waiting up to 5 s), and answers the
/// grant.
async fn hold(client: &McpClient, name: &str) -> Value {
    loop {
        let answer = client
            .answer(LEASE, json!({"name": name, "wait_secs": 5}))
            .await;
        if answer["state"] == "granted" {
            return answer;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_sessions_racing_for_one_lease_never_hold_it_together_and_are_served_in_turn() {
    const SESSIONS: usize = 32;
    const ROUNDS: usize = 20;
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let feature = repo.add_worktree("feature");
    let (_server, lease) = ServeProcess::start(&repo, &root).await;
    // Half over HTTP to the primary's server, a quarter bridged to it over stdio, a quarter
    // in a linked worktree whose own server the first of them starts.
    let mut clients = Vec::new();
    for n in 0..SESSIONS {
        let name = format!("racer-{n}");
        clients.push(match n % 4 {
            0 | 1 => McpClient::http(&lease, &name, "1.0").await,
            2 => McpClient::stdio(&repo, &root, &name, "1.0").await,
            _ => McpClient::stdio(&repo, &feature, &name, "1.0").await,
        });
    }
    let records = repo.base().join("suite.log");
    fs::write(&records, "").unwrap();
    let runs = clients.into_iter().enumerate().map(|(n, client)| {
        let records = records.clone();
        tokio::spawn(async move {
            for round in 0..ROUNDS {
                let granted = hold(&client, "test-suite").await;
                let ticket = granted["ticket"].as_u64().unwrap();
                append(&records, &format!("enter {ticket} {n}"));
                // 1–20 ms, spread over the sessions and rounds.
                let held = 1 + (n * 7 + round * 13) % 20;
                tokio::time::sleep(Duration::from_millis(held as u64)).await;
                append(&records, &format!("leave {ticket} {n}"));
                let released = client.answer(RELEASE, json!({"name": "test-suite"})).await;
                assert_eq!(released["name"], "test-suite");
            }
            client.close().await;
        })
    });
    for run in futures::future::join_all(runs).await {
        run.unwrap();
    }

    let text = fs::read_to_string(&records).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        2 * SESSIONS * ROUNDS,
        "every grant was used once"
    );
    let mut last_ticket = None;
    let mut grants = vec![0; SESSIONS];
    for pair in lines.chunks(2) {
        let enter: Vec<&str> = pair[0].split(' ').collect();
        let leave: Vec<&str> = pair[1].split(' ').collect();
        assert_eq!(enter[0], "enter", "two held it at once: {pair:?}");
        assert_eq!(
            leave,
            ["leave", enter[1], enter[2]],
            "the holder left before anyone entered: {pair:?}"
        );
        let ticket: u64 = enter[1].parse().unwrap();
        assert!(
            last_ticket.is_none_or(|last| ticket > last),
            "granted out of queue order: ticket {ticket} after {last_ticket:?}"
        );
        last_ticket = Some(ticket);
        grants[enter[2].parse::<usize>().unwrap()] += 1;
    }
    assert_eq!(grants, vec![ROUNDS; SESSIONS], "nobody starved");
}

fn append(path: &Path, line: &str) {
    let mut file = OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file, "{line}").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_hands_the_lease_to_the_next_in_line_within_seconds() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let (_server, lease) = ServeProcess::start(&repo, &root).await;
    // The client is a process of its own that runs `majordomus mcp`, as an agent's client
    // does; it is the one killed.
    let mut client = tokio::process::Command::new("sh");
    client
        .args(["-c", r#""$0" mcp --repo "$1"; exit $?"#])
        .arg(common::bin())
        .arg(&root)
        .kill_on_drop(true);
    common::clear_git_env(client.as_std_mut());
    let doomed = McpClient::stdio_command(&repo, client, "doomed", "1.0").await;
    let next = McpClient::http(&lease, "next", "1.0").await;
    let granted = doomed.answer(LEASE, json!({"name": "test-suite"})).await;
    assert_eq!(granted["state"], "granted", "{granted}");
    let queued = next.answer(LEASE, json!({"name": "test-suite"})).await;
    assert_eq!(queued["state"], "queued", "{queued}");
    assert_eq!(queued["position"], 1);
    let holder = queued["holder"].as_str().unwrap();
    assert!(holder.contains("doomed"), "the holder is named: {holder}");

    let pid = doomed.pid.unwrap();
    signal(pid, libc::SIGKILL);
    let killed = Instant::now();
    wait_gone(pid).await;
    let told = eventually("the next in line to be told it holds the lease", || async {
        let answer = next.answer(LEASE, json!({"name": "test-suite"})).await;
        if answer["state"] == "granted" {
            Ok(answer)
        } else {
            Err(answer.to_string())
        }
    })
    .await;
    assert!(
        killed.elapsed() <= Duration::from_secs(5),
        "granted {:?} after the kill",
        killed.elapsed()
    );
    assert_eq!(told["ticket"], queued["ticket"], "{told}");
    next.close().await;
    drop(doomed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_is_granted_on_release_and_a_leased_command_gives_its_exit_code() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let (_server, lease) = ServeProcess::start(&repo, &root).await;
    let holder = McpClient::http(&lease, "holder", "1.0").await;
    let waiter = Arc::new(McpClient::stdio(&repo, &root, "waiter", "1.0").await);
    let witness = McpClient::http(&lease, "witness", "1.0").await;
    let mut events = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("{}/api/v1/events?checkouts=this", lease.url()))
        .bearer_auth(&lease.token)
        .send()
        .await
        .unwrap();
    assert_eq!(
        holder.answer(LEASE, json!({"name": "test-suite"})).await["state"],
        "granted"
    );
    let waiting = {
        let waiter = waiter.clone();
        tokio::spawn(async move {
            waiter
                .answer(LEASE, json!({"name": "test-suite", "wait_secs": 8}))
                .await
        })
    };
    // The board lists the holder and the waiter in its queue.
    let board = eventually("the waiter to be queued", || async {
        let board = witness.answer("majordomus_peers", json!({})).await;
        if board["leases"][0]["queued"] == 1 {
            Ok(board)
        } else {
            Err(board.to_string())
        }
    })
    .await;
    let listed = &board["leases"][0];
    assert_eq!(listed["name"], "test-suite", "{board:#}");
    assert!(
        listed["holder"].as_str().unwrap().contains("holder"),
        "{listed}"
    );
    assert!(
        listed["queue"][0].as_str().unwrap().contains("waiter"),
        "{listed}"
    );
    let text = run_cli(&repo, ["peers", "--repo", path(&root)]).await;
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("lease test-suite: held by p1 holder") && text.contains("waiting: p"),
        "{text}"
    );
    assert!(!waiting.is_finished(), "the call waits for the grant");
    let released = holder.answer(RELEASE, json!({"name": "test-suite"})).await;
    assert!(
        released["next"].as_str().unwrap().contains("waiter"),
        "{released}"
    );
    let granted = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the waiting call answers once the holder releases")
        .unwrap();
    assert_eq!(granted["state"], "granted", "{granted}");
    // The event stream told of the lease changing hands.
    let heard = tokio::time::timeout(common::BOUND, async {
        let mut text = String::new();
        while let Some(chunk) = events.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(line) = text
                .lines()
                .find(|line| line.contains(r#""kind":"lease""#) && line.contains("waiter"))
            {
                return line.to_string();
            }
        }
        panic!("the stream ended: {text}");
    })
    .await
    .expect("a lease event within the bound");
    assert!(heard.contains(r#""name":"test-suite""#), "{heard}");

    // A command waits its turn, runs holding the lease, and hands it on when it exits.
    let output = run_cli(
        &repo,
        [
            "lease",
            "--repo",
            path(&root),
            "test-suite",
            "--wait",
            "1",
            "--",
            "true",
        ],
    )
    .await;
    assert_eq!(
        output.status.code(),
        Some(75),
        "not granted within the wait"
    );
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("waiter"), "the holder is named: {said}");
    waiter.answer(RELEASE, json!({"name": "test-suite"})).await;
    let output = run_cli(
        &repo,
        ["lease", "--repo", path(&root), "test-suite", "--", "false"],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "the command's exit code");
    let output = run_cli(
        &repo,
        [
            "lease",
            "--repo",
            path(&root),
            "test-suite",
            "--",
            "sh",
            "-c",
            "exit 3",
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(3), "the command's exit code");
    let after = witness.answer(LEASE, json!({"name": "test-suite"})).await;
    assert_eq!(
        after["state"], "granted",
        "the command released it: {after}"
    );

    // Without a command, the lease is the caller's (here, this test's process) until released.
    let output = run_cli(&repo, ["lease", "--repo", path(&root), "db:staging"]).await;
    assert_eq!(output.status.code(), Some(0));
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(said.starts_with("granted db:staging"), "{said}");
    let queued = witness.answer(LEASE, json!({"name": "db:staging"})).await;
    assert!(
        queued["holder"]
            .as_str()
            .unwrap()
            .starts_with(&format!("process {}", std::process::id())),
        "{queued}"
    );
    let output = run_cli(&repo, ["release", "--repo", path(&root), "db:staging"]).await;
    assert_eq!(output.status.code(), Some(0));
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        said.contains("holds it now"),
        "handed to the witness: {said}"
    );

    holder.close().await;
    witness.close().await;
    Arc::into_inner(waiter).unwrap().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_worktrees_each_keep_their_own_port_across_a_server_restart() {
    let repo = TempRepo::new();
    let checkouts = [
        repo.root().to_path_buf(),
        repo.add_worktree("one"),
        repo.add_worktree("two"),
    ];
    let mut first = Vec::new();
    for checkout in &checkouts {
        let (mut server, lease) = ServeProcess::start(&repo, checkout).await;
        let client = McpClient::http(&lease, "dev-server", "1.0").await;
        let answer = client
            .answer(LEASE, json!({"name": "port:3000-3099"}))
            .await;
        assert_eq!(answer["state"], "granted", "{answer}");
        let port = answer["port"].as_u64().unwrap();
        assert!((3000..=3099).contains(&port), "{answer}");
        assert_eq!(answer["name"], format!("port:{port}"));
        first.push(port);
        client.close().await;
        server.signal(libc::SIGTERM);
        server.wait_exit().await;
    }
    let mut distinct = first.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "three worktrees, three ports: {first:?}");

    for (checkout, port) in checkouts.iter().zip(&first) {
        let (_server, lease) = ServeProcess::start(&repo, checkout).await;
        let client = McpClient::http(&lease, "dev-server", "1.0").await;
        let answer = client
            .answer(LEASE, json!({"name": "port:3000-3099"}))
            .await;
        assert_eq!(answer["port"], *port, "the same port again: {answer}");
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bound_is_refused_with_its_limit_named() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let (_server, lease) = ServeProcess::start(&repo, &root).await;
    let me = std::process::id();
    let refusals = [
        (
            json!({"name": "x".repeat(65), "pid": me}),
            400,
            "1 to 64 bytes",
        ),
        (json!({"name": "a b", "pid": me}), 400, "letters, digits"),
        (json!({"name": "port:9-1", "pid": me}), 400, "port:LOW-HIGH"),
        (
            json!({"name": "port:1-5000", "pid": me}),
            400,
            "at most 1024 ports",
        ),
        (
            json!({"name": "t", "pid": me, "ttl_secs": 0}),
            400,
            "1 to 86400 seconds",
        ),
        (
            json!({"name": "t", "pid": me, "ttl_secs": 86_401}),
            400,
            "1 to 86400 seconds",
        ),
        (
            json!({"name": "t", "pid": me, "wait_secs": 601}),
            400,
            "at most 600",
        ),
        (json!({"name": "t"}), 422, "`pid`"),
        (
            json!({"name": "t", "pid": 4_000_000}),
            400,
            "no running process",
        ),
    ];
    for (input, status, says) in refusals {
        let (got, body) = post(&lease, "/api/v1/leases", &input).await;
        assert_eq!(got, status, "{input}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{input}: {body}");
    }

    // One holder: 32 leases at most.
    for n in 0..32 {
        let (got, body) = post(
            &lease,
            "/api/v1/leases",
            &json!({"name": format!("mine-{n}"), "pid": me}),
        )
        .await;
        assert_eq!(got, 200, "{body}");
    }
    let (got, body) = post(
        &lease,
        "/api/v1/leases",
        &json!({"name": "one-more", "pid": me}),
    )
    .await;
    assert_eq!(got, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("32 leases"),
        "{body}"
    );

    // One lease: 64 queued at most, each a process of its own.
    let mut sleepers: Vec<std::process::Child> = (0..66)
        .map(|_| {
            std::process::Command::new("sleep")
                .arg("60")
                .spawn()
                .unwrap()
        })
        .collect();
    for sleeper in &sleepers[..65] {
        let (got, body) = post(
            &lease,
            "/api/v1/leases",
            &json!({"name": "crowded", "pid": sleeper.id()}),
        )
        .await;
        assert_eq!(got, 200, "{body}");
    }
    let (got, body) = post(
        &lease,
        "/api/v1/leases",
        &json!({"name": "crowded", "pid": sleepers[65].id()}),
    )
    .await;
    assert_eq!(got, 422, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("(64)"),
        "{body}"
    );
    let (got, body) = post(
        &lease,
        "/api/v1/leases/release",
        &json!({"name": "nothing", "pid": me}),
    )
    .await;
    assert_eq!(got, 404, "{body}");
    for sleeper in &mut sleepers {
        let _ = sleeper.kill();
        let _ = sleeper.wait();
    }
    // The dead leave the queue: the lease goes to nobody, and is free again.
    let mut late = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let (got, body) = post(
        &lease,
        "/api/v1/leases",
        &json!({"name": "crowded", "pid": late.id()}),
    )
    .await;
    let _ = late.kill();
    let _ = late.wait();
    assert_eq!(
        (got, body["state"].clone()),
        (200, json!("granted")),
        "{body}"
    );
}

async fn post(lease: &LeaseFile, route: &str, body: &Value) -> (u16, Value) {
    let response = http()
        .post(format!("{}{route}", lease.url()))
        .header(AUTHORIZATION, format!("Bearer {}", lease.token))
        .json(body)
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn path(checkout: &Path) -> &str {
    checkout.to_str().unwrap()
}

/// A grant made while the session did something else is told on its next prompt, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_granted_meanwhile_is_told_on_its_next_prompt_once() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let session = "6a1f3c2e-4b5d-4e6f-8a9b-0c1d2e3f4a5b";
    let mut command = common::majordomus_command(["mcp", "--repo"]);
    command.arg(&root).env("CLAUDE_CODE_SESSION_ID", session);
    let waiter = McpClient::stdio_command(&repo, command, "claude-code", "2.1.332").await;
    let lease = common::wait_ready(&root).await;
    let holder = McpClient::http(&lease, "holder", "1.0").await;
    holder.answer(LEASE, json!({"name": "db:staging"})).await;
    let queued = waiter.answer(LEASE, json!({"name": "db:staging"})).await;
    assert_eq!(queued["state"], "queued", "{queued}");
    let prompt = prompt_payload(&root, session);
    let before = prompt_hook(&repo, &prompt).await;
    assert!(!before.contains("You hold the lease"), "{before}");

    holder.answer(RELEASE, json!({"name": "db:staging"})).await;
    let told = prompt_hook(&repo, &prompt).await;
    assert!(
        told.contains("You hold the lease `db:staging` now"),
        "the grant is told: {told}"
    );
    let again = prompt_hook(&repo, &prompt).await;
    assert!(!again.contains("You hold the lease"), "told once: {again}");
    holder.close().await;
    waiter.close().await;
}

fn prompt_payload(root: &Path, session: &str) -> String {
    json!({
        "session_id": session,
        "transcript_path": format!("/home/dev/.claude/projects/-work-repo/{session}.jsonl"),
        "cwd": path(root),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Run the migrations against staging."
    })
    .to_string()
}

/// Runs Claude Code's prompt hook with `input`; answers what it printed.
async fn prompt_hook(repo: &TempRepo, input: &str) -> String {
    use tokio::io::AsyncWriteExt;
    let mut command = common::majordomus_command(["hook", "claude-code", "UserPromptSubmit"]);
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(common::BOUND, child.wait_with_output())
        .await
        .expect("the hook ends")
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "a hook exits 0");
    let (_, mut log) = repo.log_file("hook-prompt");
    let _ = log.write_all(&output.stderr);
    String::from_utf8_lossy(&output.stdout).into_owned()
}
