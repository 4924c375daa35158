//! Nothing a client or a crash does loses a worker from the board: the election under load,
//! bridge failover with claim replay, the ordered stop, a lost lease, a replaced executable,
//! the declared idempotence of every tool, and malformed traffic on every surface.

mod common;

use common::*;
use serde_json::{Value, json};

/// The board of a checkout as one client sees it, from its own server's memory.
async fn board(client: &McpClient) -> Value {
    client
        .answer("majordomus_peers", json!({"checkouts": "this"}))
        .await
}

/// Waits until the board every client reads has exactly `expected` attached peers.
async fn attached_everywhere(clients: &[&McpClient], expected: usize) {
    for client in clients {
        eventually(&format!("{expected} attached peers"), || async {
            let board = board(client).await;
            if board["count"] == json!(expected) {
                Ok(())
            } else {
                Err(format!("{board:#}"))
            }
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_clients_starting_at_once_share_one_server() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let names: Vec<String> = (0..10).map(|n| format!("agent-{n}")).collect();
    let clients = futures::future::join_all(
        names
            .iter()
            .map(|name| McpClient::stdio(&repo, &root, name, "1.0")),
    )
    .await;
    let lease = wait_ready(&root).await;
    let pids: Vec<u32> = clients.iter().filter_map(|c| c.pid).collect();
    assert!(
        pids.contains(&lease.pid),
        "the server is one of the ten `majordomus mcp` processes"
    );

    for client in &clients {
        let status = client
            .answer("majordomus_server", json!({"checkouts": "this"}))
            .await;
        assert_eq!(status["servers"][0]["peers"], 10, "{status:#}");
        let board = board(client).await;
        let peers = board["peers"].as_array().unwrap();
        assert!(
            peers.iter().all(|peer| peer["transport"] == "stdio"),
            "every client reached majordomus over a `majordomus mcp` stdio: {board:#}"
        );
        let served_in_process: Vec<&Value> = peers
            .iter()
            .filter(|peer| peer["bridged"] == false)
            .collect();
        assert_eq!(
            served_in_process.len(),
            1,
            "one client is the server's own, every other is bridged: {board:#}"
        );
    }
    for client in clients {
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_server_loses_no_surviving_worker() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let owner = McpClient::stdio(&repo, &root, "owner", "1.0").await;
    let first_lease = wait_ready(&root).await;
    assert_eq!(
        Some(first_lease.pid),
        owner.pid,
        "the first client's process serves"
    );
    let mut survivors = Vec::new();
    for name in ["claude-code", "codex", "gemini-cli"] {
        survivors.push((name, McpClient::stdio(&repo, &root, name, "2.0").await));
    }
    for (name, client) in &survivors {
        client
            .answer(
                "majordomus_announce",
                json!({"intent": format!("{name} works"), "scope": ["src/shared", format!("src/{name}")]}),
            )
            .await;
    }
    owner
        .answer(
            "majordomus_announce",
            json!({"intent": "owner works", "scope": ["docs"]}),
        )
        .await;
    survivors[0]
        .1
        .answer(
            "majordomus_session_attach",
            json!({"external_id": "conv-7"}),
        )
        .await;

    // The server writes what it would hand over once changes have gathered for a moment.
    eventually(
        "the owner's claim to be written for the next server",
        || async {
            let written = std::fs::read_to_string(git_dir(&root).join("majordomus/claims.json"))
                .unwrap_or_default();
            if written.contains("owner works") {
                Ok(())
            } else {
                Err(written)
            }
        },
    )
    .await;
    signal(first_lease.pid, libc::SIGKILL);
    wait_gone(first_lease.pid).await;

    for (name, client) in &survivors {
        let answer = client
            .call("majordomus_peers", json!({"checkouts": "this"}))
            .await;
        assert!(
            answer.is_ok(),
            "{name}'s first call after the kill: {answer:?}"
        );
    }
    let clients: Vec<&McpClient> = survivors.iter().map(|(_, c)| c).collect();
    attached_everywhere(&clients, 3).await;

    let board = board(clients[0]).await;
    let peers = board["peers"].as_array().unwrap();
    for (name, _) in &survivors {
        let holders: Vec<&Value> = peers
            .iter()
            .filter(|p| p["client"]["name"] == *name)
            .collect();
        assert_eq!(holders.len(), 1, "{name} is listed exactly once: {board:#}");
        assert_eq!(holders[0]["attached"], true);
        let scope = &holders[0]["claims"][0]["scope"];
        assert_eq!(
            scope,
            &json!(["src/shared", format!("src/{name}")]),
            "{name}'s claim was replayed"
        );
    }
    let owner_listed: Vec<&Value> = peers
        .iter()
        .filter(|p| p["client"]["name"] == "owner")
        .collect();
    assert_eq!(owner_listed.len(), 1, "{board:#}");
    assert_eq!(
        (
            &owner_listed[0]["attached"],
            &owner_listed[0]["claims"][0]["scope"]
        ),
        (&json!(false), &json!(["docs"])),
        "the killed server's own client's claim was handed over, departed"
    );
    let overlaps = board["overlaps"].as_array().unwrap();
    assert_eq!(
        overlaps.len(),
        3,
        "each pair of survivors meets on src/shared once: {board:#}"
    );
    for overlap in overlaps {
        let one = peers.iter().find(|p| p["id"] == overlap["peer"]).unwrap();
        let other = peers
            .iter()
            .find(|p| p["id"] == overlap["with"]["peer"])
            .unwrap();
        assert_ne!(
            one["client"]["name"], other["client"]["name"],
            "no worker overlaps itself"
        );
    }

    let episodes = clients[0].answer("majordomus_episodes", json!({})).await;
    let journal = std::fs::read_to_string(git_dir(&root).join("majordomus/episodes.jsonl"))
        .unwrap_or_default();
    assert_eq!(
        episodes["mine"]["external_id"], "conv-7",
        "the episode was re-attached: {episodes:#}\n{journal}"
    );

    let lease = wait_ready(&root).await;
    let survivor_pids: Vec<u32> = clients.iter().filter_map(|c| c.pid).collect();
    assert!(
        survivor_pids.contains(&lease.pid),
        "a survivor serves now: {lease:?}"
    );
    assert_eq!(porcelain(&root), "", "the lease never shows in git status");

    drop(owner);
    for (_, client) in survivors {
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stopped_by_sigterm_hands_over_to_its_bridges() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let owner = McpClient::stdio(&repo, &root, "owner", "1.0").await;
    let first = wait_ready(&root).await;
    let a = McpClient::stdio(&repo, &root, "codex", "1.0").await;
    let b = McpClient::stdio(&repo, &root, "claude-code", "1.0").await;
    a.answer(
        "majordomus_announce",
        json!({"intent": "a", "scope": ["src/a"]}),
    )
    .await;
    b.answer(
        "majordomus_announce",
        json!({"intent": "b", "scope": ["src/b"]}),
    )
    .await;

    signal(first.pid, libc::SIGTERM);
    wait_gone(first.pid).await;

    a.answer("majordomus_peers", json!({"checkouts": "this"}))
        .await;
    b.answer("majordomus_peers", json!({"checkouts": "this"}))
        .await;
    attached_everywhere(&[&a, &b], 2).await;
    let lease = wait_ready(&root).await;
    assert_ne!(
        lease.pid, first.pid,
        "nothing of the stopped server is left in the lease"
    );
    assert!(
        [a.pid, b.pid].contains(&Some(lease.pid)),
        "one of the bridges serves now"
    );

    drop(owner);
    a.close().await;
    b.close().await;
}

/// A repository whose server gives up on a silent process quickly, that server, and an MCP
/// session of it.
async fn serve_briskly_with_a_session() -> (TempRepo, ServeProcess, LeaseFile, McpClient) {
    let repo = TempRepo::new();
    std::fs::write(
        repo.root().join("majordomus.toml"),
        "[timings]\nbusy_grace_ms = 300\nprobe_timeout_ms = 200\n",
    )
    .unwrap();
    let (server, lease) = ServeProcess::start(&repo, repo.root()).await;
    let session = McpClient::http(&lease, "claude-code", "1.0").await;
    (repo, server, lease, session)
}

/// Freezes `old`, lets a new server take its lease over, and lets `old` run again, deposed.
async fn depose(repo: &TempRepo, old: &mut ServeProcess) -> (ServeProcess, LeaseFile) {
    old.signal(libc::SIGSTOP);
    let (new, new_lease) = ServeProcess::start(repo, repo.root()).await;
    assert_ne!(new_lease.pid, old.pid());
    old.signal(libc::SIGCONT);
    (new, new_lease)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_lost_its_lease_says_so_and_keeps_its_sessions() {
    let (repo, mut old, old_lease, session) = serve_briskly_with_a_session().await;
    let root = repo.root().to_path_buf();
    session
        .answer("majordomus_peers", json!({"checkouts": "this"}))
        .await;

    let (_new, new_lease) = depose(&repo, &mut old).await;
    assert_ne!(new_lease.url, old_lease.url);

    let url = old_lease.url().to_string();
    eventually("the old server to admit it lost the lease", || async {
        let identity = probe(&url).await?;
        if identity["leaseholder"] == false {
            Ok(())
        } else {
            Err(identity.to_string())
        }
    })
    .await;
    let refused = http()
        .post(format!("{url}/mcp"))
        .bearer_auth(&old_lease.token)
        .header("Accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "late", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 409);
    let message = refused.text().await.unwrap();
    assert!(message.contains("lease"), "{message}");
    let still = session
        .answer("majordomus_peers", json!({"checkouts": "this"}))
        .await;
    assert_eq!(
        still["count"], 1,
        "the existing session is still served: {still:#}"
    );
    assert_eq!(
        read_lease(&root).unwrap().pid,
        new_lease.pid,
        "the old server never touched the lease again"
    );

    // Nor the claims the new server hands over: the old one's claims are not the checkout's.
    let newcomer = McpClient::http(&new_lease, "newcomer", "1.0").await;
    newcomer
        .answer(
            "majordomus_announce",
            json!({"intent": "new", "scope": ["src/new"]}),
        )
        .await;
    let handed_over = git_dir(&root).join("majordomus/claims.json");
    let written = eventually("the new server to write its claims", || async {
        let written = std::fs::read_to_string(&handed_over).unwrap_or_default();
        if written.contains("src/new") {
            Ok(written)
        } else {
            Err(written)
        }
    })
    .await;
    session
        .answer(
            "majordomus_announce",
            json!({"intent": "old", "scope": ["src/old"]}),
        )
        .await;
    // Three times as long as a server gathers changes before it writes them.
    tokio::time::sleep(std::time::Duration::from_millis(900)).await;
    assert_eq!(
        std::fs::read_to_string(&handed_over).unwrap(),
        written,
        "the old server wrote nothing there"
    );
    newcomer.close().await;
    session.close().await;
}

/// The lines of the checkout's episode journal that the server of process `pid` wrote.
fn journal_lines_of(root: &std::path::Path, pid: u32) -> Vec<Value> {
    let journal = std::fs::read_to_string(git_dir(root).join("majordomus/episodes.jsonl"))
        .unwrap_or_default();
    journal
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("each journal line is JSON"))
        .filter(|record| record["server"]["pid"] == pid)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_server_writes_nothing_more_to_the_journal() {
    let (repo, mut old, _, session) = serve_briskly_with_a_session().await;
    let root = repo.root().to_path_buf();
    session
        .answer(
            "majordomus_session_attach",
            json!({"external_id": "conv-deposed"}),
        )
        .await;
    session
        .answer(
            "majordomus_announce",
            json!({"intent": "tidy the docs", "scope": ["docs"]}),
        )
        .await;
    let before = journal_lines_of(&root, old.pid());
    assert!(
        before.len() >= 2,
        "the server journals while it holds the lease: {before:#?}"
    );

    let (_new, new_lease) = depose(&repo, &mut old).await;
    // The session leaves the server it came back to: its episode detaches there, which is
    // the journal's business only while that server holds the lease.
    session.close().await;
    old.wait_exit().await;

    let after = journal_lines_of(&root, old.pid());
    assert_eq!(
        after, before,
        "nothing written by the deposed server after its deposition"
    );
    assert_eq!(
        read_lease(&root).unwrap().pid,
        new_lease.pid,
        "the new server keeps the lease"
    );
}

/// Spawns `command`, whose executable was just written. A child another test forked while
/// that file was open for writing holds it open until it execs, and Linux refuses to run
/// the file meanwhile ("text file busy"), so the spawn is tried again within [`BOUND`].
async fn spawn_fresh_copy(command: &mut std::process::Command) -> std::process::Child {
    let deadline = std::time::Instant::now() + BOUND;
    loop {
        match command.spawn() {
            Err(error)
                if error.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            spawned => return spawned.expect("the copied executable runs"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_executable_makes_its_server_outdated() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let copy_dir = repo.base().join("bin");
    std::fs::create_dir_all(&copy_dir).unwrap();
    let copy = copy_dir.join("majordomus");
    std::fs::copy(bin(), &copy).unwrap();
    let (_, log) = repo.log_file("serve-copy");
    let mut server = std::process::Command::new(&copy);
    server
        .args(["serve", "--repo"])
        .arg(&root)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    clear_git_env(&mut server);
    let mut server = spawn_fresh_copy(&mut server).await;
    wait_ready(&root).await;

    let replacement = copy_dir.join("majordomus.new");
    std::fs::copy(bin(), &replacement).unwrap();
    std::fs::rename(&replacement, &copy).unwrap();

    let output = run_cli(
        &repo,
        [
            "serve",
            "status",
            "--json",
            "--checkouts",
            "this",
            "--repo",
            root.to_str().unwrap(),
        ],
    )
    .await;
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    let this = &status["servers"][0];
    assert_eq!(this["standing"], "outdated", "{status:#}");
    let reason = this["reason"].as_str().unwrap();
    assert!(
        reason.contains(copy.to_str().unwrap()),
        "the reason names the replaced file: {reason}"
    );

    signal(server.id(), libc::SIGTERM);
    assert!(server.wait().unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_declares_whether_it_reads_and_whether_it_repeats_safely() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let client = McpClient::stdio(&repo, &root, "claude-code", "1.0").await;
    let tools = client.list_all_tools().await.unwrap();
    let expected = [
        ("majordomus_peers", true, true),
        ("majordomus_server", true, true),
        ("majordomus_episodes", true, true),
        ("majordomus_conflicts", true, true),
        ("majordomus_announce", false, true),
        ("majordomus_session_attach", false, true),
        ("majordomus_session_detach", false, false),
        ("majordomus_lease", false, true),
        ("majordomus_release", false, false),
        ("majordomus_send", false, false),
        ("majordomus_messages", true, true),
    ];
    assert_eq!(tools.len(), expected.len());
    for (name, read_only, idempotent) in expected {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is listed"));
        let annotations = tool.annotations.as_ref().unwrap();
        assert_eq!(
            annotations.read_only_hint,
            Some(read_only),
            "{name} readOnlyHint"
        );
        assert_eq!(
            annotations.idempotent_hint,
            Some(idempotent),
            "{name} idempotentHint"
        );
    }
    client.close().await;
}

/// Starts a POST that announces a 10 MB body and reads the status the server answers with;
/// a server may answer before the body is through, so only the first part is sent.
async fn send_ten_megabytes(url: &str, path: &str, token: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        10 * 1024 * 1024
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let _ = stream.write_all(&[b' '; 64 * 1024]).await;
    let mut answer = vec![0u8; 1024];
    let read = tokio::time::timeout(BOUND, stream.read(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let status_line = String::from_utf8_lossy(&answer[..read]);
    status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {status_line:?}"))
}

/// Sends one raw line to a `majordomus mcp` process and reads the next frame it writes.
async fn exchange(
    stdin: &mut tokio::process::ChildStdin,
    stdout: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    line: &[u8],
) -> Value {
    use tokio::io::AsyncWriteExt;
    stdin.write_all(line).await.unwrap();
    stdin.write_all(b"\n").await.unwrap();
    stdin.flush().await.unwrap();
    let next = tokio::time::timeout(BOUND, stdout.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    serde_json::from_str(&next).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_traffic_is_refused_clearly_and_the_server_keeps_serving() {
    use tokio::io::AsyncBufReadExt;
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let (_server, lease) = ServeProcess::start(&repo, &root).await;
    let witness = McpClient::http(&lease, "witness", "1.0").await;
    let still_serving = || async {
        witness
            .answer("majordomus_peers", json!({"checkouts": "this"}))
            .await
    };
    let url = lease.url().to_string();
    let client = http();

    // REST: non-JSON, wrong types, unknown fields, 10 MB.
    let post = |path: &str, body: Vec<u8>| {
        client
            .post(format!("{url}{path}"))
            .bearer_auth(&lease.token)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let cases: [(&str, &[u8], u16, &str); 3] = [
        ("/api/v1/hooks/edit", b"{not json", 400, "not JSON"),
        (
            "/api/v1/hooks/guard",
            br#"{"client": "codex", "session_id": 5, "paths": ["src"]}"#,
            400,
            "invalid type",
        ),
        (
            "/api/v1/episodes/detach",
            br#"{"external_id": "x", "peer": "p1"}"#,
            400,
            "unknown field",
        ),
    ];
    for (path, body, status, says) in cases {
        let response = post(path, body.to_vec()).await.unwrap();
        assert_eq!(response.status(), status, "{path}");
        let text = response.text().await.unwrap();
        assert!(text.contains(says), "{path} answered {text}");
        still_serving().await;
    }
    for path in ["/api/v1/hooks/edit", "/mcp"] {
        let status = send_ten_megabytes(&url, path, &lease.token).await;
        assert_eq!(status, 413, "{path} refuses a 10 MB body");
        still_serving().await;
    }
    let wrong_word = client
        .get(format!("{url}/api/v1/peers?checkouts=everything"))
        .bearer_auth(&lease.token)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_word.status(), 400);
    still_serving().await;

    // MCP over HTTP: an unknown session, a 10 MB body, a tool given the wrong types.
    let unknown = client
        .post(format!("{url}/mcp"))
        .bearer_auth(&lease.token)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", "no-such-session")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let refusal = witness
        .call(
            "majordomus_announce",
            json!({"intent": ["not", "a", "string"]}),
        )
        .await;
    assert!(refusal.unwrap_err().contains("invalid type"));
    let refusal = witness
        .call("majordomus_peers", json!({"checkouts": "this", "extra": 1}))
        .await;
    assert!(refusal.unwrap_err().contains("unknown field"));
    still_serving().await;

    // MCP over stdio: not JSON, not UTF-8, then a whole session still works.
    let (_, log) = repo.log_file("raw-mcp");
    let mut bridge = majordomus_command(["mcp", "--repo"]);
    bridge
        .arg(&root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(log);
    bridge.kill_on_drop(true);
    let mut child = bridge.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    for bad in [&b"{\"jsonrpc\": "[..], &b"\xff\xfe\xfd"[..]] {
        let answer = exchange(&mut stdin, &mut stdout, bad).await;
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
        assert!(answer["id"].is_null());
        still_serving().await;
    }
    let initialized = exchange(
        &mut stdin,
        &mut stdout,
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    )
    .await;
    assert_eq!(
        initialized["result"]["serverInfo"]["name"], "majordomus",
        "{initialized}"
    );
    drop(stdin);
    let _ = tokio::time::timeout(BOUND, child.wait()).await;
    still_serving().await;
    witness.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_comes_back_never_overlaps_its_former_slot() {
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let (_server, lease) = ServeProcess::start(&repo, &root).await;
    let connect = || async {
        let mut config = client_config("codex", "1.0");
        let mut meta = rmcp::model::RequestMetaObject::default();
        meta.0
            .0
            .insert("majordomus/worker".into(), json!("worker-7"));
        config.meta = Some(meta);
        let transport = StreamableHttpClientTransport::with_client(
            http(),
            StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", lease.url()))
                .auth_header(lease.token.clone()),
        );
        config.serve(transport).await.unwrap()
    };
    let claim = json!({"intent": "port the parser", "scope": ["src/parser"]});

    let first = connect().await;
    call(&first, "majordomus_announce", claim.clone())
        .await
        .unwrap();
    let _ = first.cancel().await;

    let witness = McpClient::http(&lease, "witness", "1.0").await;
    eventually("the first session to depart", || async {
        let board = witness
            .answer("majordomus_peers", json!({"checkouts": "this"}))
            .await;
        let departed = board["peers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["attached"] == false);
        if departed {
            Ok(())
        } else {
            Err(board.to_string())
        }
    })
    .await;

    let again = connect().await;
    let replayed = call(&again, "majordomus_announce", claim).await.unwrap();
    assert_eq!(
        replayed["overlaps"],
        json!([]),
        "the worker is not told it overlaps itself"
    );
    let board = witness
        .answer("majordomus_peers", json!({"checkouts": "this"}))
        .await;
    let codex: Vec<&Value> = board["peers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["client"]["name"] == "codex")
        .collect();
    assert_eq!(codex.len(), 1, "the worker is listed once: {board:#}");
    assert_eq!(codex[0]["attached"], true);
    assert_eq!(board["overlaps"], json!([]));
    let _ = again.cancel().await;
    witness.close().await;
}

/// The peers of a board whose client has this name.
fn peers_named<'a>(board: &'a Value, name: &str) -> Vec<&'a Value> {
    board["peers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|peer| peer["client"]["name"] == name)
        .collect()
}

/// What ending the serving process with `ending` leaves of its board's claims: those of a
/// session that left before, and those of the session it served itself, are on the next
/// server's board, departed, until their grace ends, and a new announce meets them; a
/// bridged session that re-attached is listed once and never meets its own former claims.
async fn claims_outlive_the_serving_process(ending: libc::c_int) {
    const ANNOUNCE: &str = "majordomus_announce";
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    std::fs::write(
        root.join("majordomus.toml"),
        "[timings]\nclaim_grace_secs = 8\n",
    )
    .unwrap();
    let owner = McpClient::stdio(&repo, &root, "owner", "1.0").await;
    let first = wait_ready(&root).await;
    assert_eq!(
        Some(first.pid),
        owner.pid,
        "the first client's process serves"
    );
    let bridged = McpClient::stdio(&repo, &root, "bridged", "1.0").await;
    let bridged_claim = json!({"intent": "bridged works", "scope": ["src/bridged.rs"]});
    bridged.answer(ANNOUNCE, bridged_claim.clone()).await;
    owner
        .answer(
            ANNOUNCE,
            json!({"intent": "owner rewrites the library", "scope": ["src/lib.rs"]}),
        )
        .await;
    let leaver = McpClient::stdio(&repo, &root, "leaver", "1.0").await;
    leaver
        .answer(
            ANNOUNCE,
            json!({"intent": "leaver edits docs", "scope": ["docs"]}),
        )
        .await;
    leaver.close().await;
    eventually("the leaver to depart", || async {
        let board = board(&bridged).await;
        match peers_named(&board, "leaver").first() {
            Some(leaver) if leaver["attached"] == false => Ok(()),
            _ => Err(board.to_string()),
        }
    })
    .await;

    // The server writes what it would hand over once changes have gathered for a moment.
    let handed_over = git_dir(&root).join("majordomus/claims.json");
    eventually("the claims to be written for the next server", || async {
        let written = std::fs::read_to_string(&handed_over).unwrap_or_default();
        if ["owner rewrites", "leaver edits", "bridged works"]
            .iter()
            .all(|intent| written.contains(intent))
        {
            Ok(())
        } else {
            Err(written)
        }
    })
    .await;

    signal(first.pid, ending);
    wait_gone(first.pid).await;

    let next_board = eventually("the next server's board", || async {
        let board = board(&bridged).await;
        let listed = |name: &str| peers_named(&board, name).len() == 1;
        if listed("bridged") && listed("owner") && listed("leaver") {
            Ok(board)
        } else {
            Err(board.to_string())
        }
    })
    .await;
    let next = wait_ready(&root).await;
    assert_eq!(Some(next.pid), bridged.pid, "the bridge serves now");
    assert_eq!(peers_named(&next_board, "bridged")[0]["attached"], true);
    for (name, scope) in [("owner", "src/lib.rs"), ("leaver", "docs")] {
        let peer = peers_named(&next_board, name)[0];
        assert_eq!(peer["attached"], false, "{name} departed: {next_board:#}");
        assert!(peer["left_seconds_ago"].is_u64(), "{next_board:#}");
        assert_eq!(peer["claims"][0]["scope"], json!([scope]), "{next_board:#}");
    }
    assert_eq!(mode(&handed_over), 0o600);

    let newcomer = McpClient::stdio(&repo, &root, "newcomer", "1.0").await;
    let claim = json!({"intent": "newcomer fixes a bug", "scope": ["src/lib.rs"]});
    let met = newcomer.answer(ANNOUNCE, claim.clone()).await;
    let overlaps = met["overlaps"].as_array().unwrap();
    assert_eq!(overlaps.len(), 1, "{met:#}");
    assert_eq!(overlaps[0]["attached"], false);
    assert_eq!(overlaps[0]["intent"], "owner rewrites the library");
    assert_eq!(overlaps[0]["paths"][0]["theirs"], "src/lib.rs");

    let again = bridged.answer(ANNOUNCE, bridged_claim).await;
    assert_eq!(
        again["overlaps"],
        json!([]),
        "the bridged worker never meets its own former claims"
    );
    let listed = board(&newcomer).await;
    assert_eq!(peers_named(&listed, "bridged").len(), 1, "{listed:#}");

    eventually(
        "the departed claims to be released after their grace",
        || async {
            let listed = board(&newcomer).await;
            if peers_named(&listed, "owner").is_empty() && peers_named(&listed, "leaver").is_empty()
            {
                Ok(())
            } else {
                Err(listed.to_string())
            }
        },
    )
    .await;
    let alone = newcomer.answer(ANNOUNCE, claim).await;
    assert_eq!(alone["overlaps"], json!([]), "released claims meet nothing");
    drop(owner);
    newcomer.close().await;
    bridged.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn departed_claims_survive_a_killed_server() {
    claims_outlive_the_serving_process(libc::SIGKILL).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn departed_claims_survive_a_server_ended_by_sigterm() {
    claims_outlive_the_serving_process(libc::SIGTERM).await;
}
