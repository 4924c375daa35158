//! The lifecycle of the processes a client's MCP config starts: a server that steps down takes
//! its own client along, a client leaving never splits another agent's episode, a lost answer
//! is never papered over by a resend, a frozen server or a killed bridge costs seconds rather
//! than minutes, and `majordomus mcp` goes at once and quietly when its client ends it.
//!
//! Every `majordomus mcp` here runs at the default log level (no `RUST_LOG`), its stderr kept
//! in a file: expected events — failovers, sessions coming and going — must leave it empty.

mod common;

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use rmcp::ServiceExt as _;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

const ATTACH: &str = "majordomus_session_attach";
const DETACH: &str = "majordomus_session_detach";
const EPISODES: &str = "majordomus_episodes";
const PEERS: &str = "majordomus_peers";
const ANNOUNCE: &str = "majordomus_announce";

fn write_config(dir: &Path, text: &str) {
    fs::write(dir.join("majordomus.toml"), text).unwrap();
}

/// `majordomus mcp` at the default log level, with an rmcp client on its stdio.
struct QuietClient {
    service: Option<Service>,
    pid: u32,
    stderr: PathBuf,
}

impl QuietClient {
    async fn start(repo: &TempRepo, checkout: &Path, name: &str) -> QuietClient {
        let (stderr, log) = repo.log_file(&format!("quiet-mcp-{name}"));
        let mut command = majordomus_command(["mcp", "--repo"]);
        command.arg(checkout).env_remove("RUST_LOG");
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(log)
            .spawn()
            .expect("majordomus mcp starts");
        let pid = transport.id().expect("the child has a pid");
        let Ok(initialized) =
            tokio::time::timeout(BOUND, client_config(name, "1.0").serve(transport)).await
        else {
            panic!("majordomus mcp did not initialize within {BOUND:?}")
        };
        let service =
            initialized.unwrap_or_else(|e| panic!("majordomus mcp did not initialize: {e}"));
        QuietClient {
            service: Some(service),
            pid,
            stderr,
        }
    }

    fn service(&self) -> &Service {
        self.service.as_ref().expect("the client is open")
    }

    async fn call(&self, tool: &str, arguments: Value) -> Result<Value, String> {
        call(self.service(), tool, arguments).await
    }

    async fn answer(&self, tool: &str, arguments: Value) -> Value {
        self.call(tool, arguments.clone())
            .await
            .unwrap_or_else(|refusal| panic!("{tool} {arguments} was refused: {refusal}"))
    }

    async fn board(&self) -> Value {
        self.answer(PEERS, json!({"checkouts": "this"})).await
    }

    /// Ends the session the way Claude Code does: stdin closed, then SIGTERM 100 ms later;
    /// waits until the process is gone.
    async fn leave_like_claude_code(&mut self) {
        let service = self.service.take().expect("the client is open");
        let closing = tokio::spawn(async move {
            let _ = tokio::time::timeout(BOUND, service.cancel()).await;
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        signal(self.pid, libc::SIGTERM);
        wait_gone(self.pid).await;
        let _ = closing.await;
    }

    /// Closes stdin, waits until the process is gone, and returns where its stderr went.
    async fn close(mut self) -> PathBuf {
        if let Some(service) = self.service.take() {
            let _ = tokio::time::timeout(BOUND, service.cancel()).await;
        }
        wait_gone(self.pid).await;
        self.stderr.clone()
    }
}

/// Asserts that no `majordomus mcp` whose stderr went to `logs` wrote anything there: at the
/// default log level, everything these tests put them through is expected.
fn assert_quiet(logs: &[PathBuf]) {
    for log in logs {
        let stderr = fs::read_to_string(log).unwrap_or_default();
        assert!(
            stderr.is_empty(),
            "`majordomus mcp` wrote to stderr at the default log level ({}):\n{stderr}",
            log.display()
        );
    }
}

/// The journal's records of one episode id, as `event` words (with the reason of a `closed`).
fn journal_events(checkout: &Path, id: &str) -> Vec<String> {
    let path = git_dir(checkout).join("majordomus").join("episodes.jsonl");
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("journal lines are JSON"))
        .filter(|record| record["external_id"] == id)
        .map(|record| match record["reason"].as_str() {
            Some(reason) => format!("{}:{reason}", record["event"].as_str().unwrap()),
            None => record["event"].as_str().unwrap().to_string(),
        })
        .collect()
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

/// Asserts that no overlap of a listing pairs a worker with itself.
fn assert_no_self_overlap(board: &Value) {
    let peers = board["peers"].as_array().unwrap();
    let client_of = |id: &Value| {
        peers
            .iter()
            .find(|peer| &peer["id"] == id)
            .map(|peer| peer["client"]["name"].clone())
            .unwrap_or_else(|| panic!("overlap names an unlisted peer {id}: {board:#}"))
    };
    for overlap in board["overlaps"].as_array().unwrap() {
        assert_ne!(
            client_of(&overlap["peer"]),
            client_of(&overlap["with"]["peer"]),
            "a worker overlaps itself: {board:#}"
        );
    }
}

/// Waits until `pid` is stopped by SIGSTOP.
async fn wait_stopped(pid: u32) {
    eventually(&format!("process {pid} to stop"), || async {
        match process_state(pid) {
            Some('T') => Ok(()),
            other => Err(format!("state {other:?}")),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_steps_down_takes_its_own_client_to_the_new_board() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let busy_grace = Duration::from_millis(300);
    write_config(
        &root,
        "[timings]\nbusy_grace_ms = 300\nprobe_timeout_ms = 200\nbridge_silence_ms = 1500\n",
    );
    let a = QuietClient::start(&repo, &root, "agent-a").await;
    let first = wait_ready(&root).await;
    assert_eq!(first.pid, a.pid, "the first client's process serves");
    let b = QuietClient::start(&repo, &root, "agent-b").await;
    a.answer(ANNOUNCE, json!({"intent": "a works", "scope": ["src/a"]}))
        .await;
    b.answer(ANNOUNCE, json!({"intent": "b works", "scope": ["src/b"]}))
        .await;

    signal(a.pid, libc::SIGSTOP);
    wait_stopped(a.pid).await;
    eventually("b to take the frozen server over", || async {
        b.board().await;
        match read_lease(&root) {
            Some(lease) if lease.pid == b.pid && lease.url.is_some() => Ok(()),
            other => Err(format!("lease {other:?}")),
        }
    })
    .await;
    let second = wait_ready(&root).await;
    signal(a.pid, libc::SIGCONT);
    let thawed = Instant::now();

    let bound = busy_grace + Duration::from_secs(2);
    let board = loop {
        let status = a
            .answer("majordomus_server", json!({"checkouts": "this"}))
            .await;
        let board = a.board().await;
        let moved = status["this_process"]["pid"] == second.pid
            && status["servers"][0]["standing"] == "ready"
            && peers_named(&board, "agent-a").len() == 1
            && peers_named(&board, "agent-a")[0]["claims"]
                .as_array()
                .unwrap()
                .len()
                == 1;
        if moved {
            break board;
        }
        assert!(
            thawed.elapsed() <= bound,
            "a's client was not on the new board within {bound:?} of SIGCONT:\n{status:#}\n{board:#}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let a_peer = peers_named(&board, "agent-a")[0];
    assert_eq!(a_peer["attached"], true, "{board:#}");
    assert_eq!(
        a_peer["claims"][0]["scope"],
        json!(["src/a"]),
        "a's claim was replayed, once: {board:#}"
    );
    assert_eq!(peers_named(&board, "agent-b").len(), 1, "{board:#}");
    assert_no_self_overlap(&board);

    let peek = a
        .answer(
            ANNOUNCE,
            json!({"intent": "a reads b's code", "scope": ["src/b/api.rs"], "claim": "peek"}),
        )
        .await;
    let overlaps = peek["overlaps"].as_array().unwrap();
    assert_eq!(
        overlaps.len(),
        1,
        "a is told of b's claim, and of nothing of its own: {peek:#}"
    );
    assert_eq!(overlaps[0]["intent"], "b works");
    let board = a.board().await;
    assert_eq!(peers_named(&board, "agent-a").len(), 1, "{board:#}");
    assert_no_self_overlap(&board);
    let status = a
        .answer("majordomus_server", json!({"checkouts": "this"}))
        .await;
    assert_eq!(status["servers"][0]["standing"], "ready", "{status:#}");
    assert_eq!(status["this_process"]["pid"], second.pid, "{status:#}");

    let old = first.url().to_string();
    eventually("the stepped-down server to end", || async {
        match probe(&old).await {
            Err(_) => Ok(()),
            Ok(identity) => Err(format!("{old} still answers {identity}")),
        }
    })
    .await;
    assert!(alive(a.pid), "a's process goes on bridging its client");

    let logs = [a.close().await, b.close().await];
    assert_quiet(&logs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_hands_the_others_over_and_their_episodes_go_on() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let mut a = QuietClient::start(&repo, &root, "agent-a").await;
    assert_eq!(wait_ready(&root).await.pid, a.pid, "a's process serves");
    let b = QuietClient::start(&repo, &root, "agent-b").await;
    let attached = b.answer(ATTACH, json!({"external_id": "conv-b"})).await;
    let opened_at = attached["episode"]["opened_at"].clone();
    b.answer(ANNOUNCE, json!({"intent": "b works", "scope": ["src/b"]}))
        .await;

    a.leave_like_claude_code().await;

    let episodes = eventually("b's episode to go on under the next server", || async {
        let episodes = b.answer(EPISODES, json!({})).await;
        if episodes["mine"]["external_id"] == "conv-b" && episodes["mine"]["state"] == "open" {
            Ok(episodes)
        } else {
            Err(episodes.to_string())
        }
    })
    .await;
    assert_eq!(
        episodes["mine"]["opened_at"], opened_at,
        "the same episode, not a new one: {episodes:#}"
    );
    let lease = wait_ready(&root).await;
    assert_eq!(lease.pid, b.pid, "b's process serves now");
    let board = b.board().await;
    assert_eq!(board["peers"][0]["claims"][0]["scope"], json!(["src/b"]));

    assert_eq!(
        journal_events(&root, "conv-b"),
        ["opened", "announced", "detached", "resumed", "announced"],
        "conv-b was opened once, detached when its server went, resumed by the next one with \
         its claim replayed, and never closed"
    );
    let log = run_cli(&repo, ["episodes", "log", "--repo", root.to_str().unwrap()]).await;
    assert!(log.status.success(), "{log:?}");
    let text = String::from_utf8_lossy(&log.stdout);
    assert_eq!(
        text.lines()
            .filter(|line| line.starts_with("conv-b"))
            .count(),
        1,
        "one episode for one conversation:\n{text}"
    );

    let logs = [a.stderr.clone(), b.close().await];
    assert_quiet(&logs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_costs_a_bridged_call_about_the_busy_grace() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let busy_grace = Duration::from_millis(1000);
    write_config(&root, "[timings]\nbusy_grace_ms = 1000\n");
    let (mut server, _) = ServeProcess::start(&repo, &root).await;
    let client = QuietClient::start(&repo, &root, "agent").await;
    client
        .answer(ANNOUNCE, json!({"intent": "works", "scope": ["src"]}))
        .await;

    server.freeze().await;
    let asked = Instant::now();
    let board = client.board().await;
    let took = asked.elapsed();
    let bound = busy_grace + Duration::from_secs(3);
    assert!(
        took <= bound,
        "the call answered after {took:?}, over the bound of {bound:?}"
    );
    assert_eq!(board["peers"][0]["claims"][0]["scope"], json!(["src"]));
    assert_eq!(
        read_lease(&root).map(|lease| lease.pid),
        Some(client.pid),
        "the bridge took the frozen server over"
    );
    server.thaw();

    let logs = [client.close().await];
    assert_quiet(&logs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_bridge_leaves_the_board_within_seconds() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let (_server, lease) = ServeProcess::start(&repo, &root).await;
    let witness = McpClient::http(&lease, "witness", "1.0").await;
    let doomed = QuietClient::start(&repo, &root, "doomed").await;
    doomed
        .answer(ATTACH, json!({"external_id": "conv-doomed"}))
        .await;
    let board = witness.answer(PEERS, json!({"checkouts": "this"})).await;
    assert_eq!(peers_named(&board, "doomed").len(), 1, "{board:#}");

    signal(doomed.pid, libc::SIGKILL);
    let killed = Instant::now();
    eventually("the killed bridge's peer to leave the board", || async {
        let board = witness.answer(PEERS, json!({"checkouts": "this"})).await;
        if peers_named(&board, "doomed").is_empty() {
            Ok(())
        } else {
            Err(board.to_string())
        }
    })
    .await;
    assert!(
        killed.elapsed() <= Duration::from_secs(10),
        "the peer stayed {:?}",
        killed.elapsed()
    );
    let episodes = witness.answer(EPISODES, json!({})).await;
    let episode = episodes["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|episode| episode["external_id"] == "conv-doomed")
        .unwrap_or_else(|| panic!("{episodes:#}"));
    assert_eq!(
        episode["state"], "detached",
        "its episode waits for the client: {episodes:#}"
    );
    let board = witness.answer(PEERS, json!({"checkouts": "this"})).await;
    assert_eq!(board["count"], 1, "only the witness is attached: {board:#}");
    witness.close().await;
}

/// Spawns `majordomus mcp` at the default log level with raw pipes, and initialises it.
async fn raw_mcp(
    repo: &TempRepo,
    checkout: &Path,
) -> (tokio::process::Child, tokio::process::ChildStdin, PathBuf) {
    let (stderr, log) = repo.log_file("raw-mcp");
    let mut command = majordomus_command(["mcp", "--repo"]);
    command
        .arg(checkout)
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log);
    let mut child = command.spawn().expect("majordomus mcp starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let lines: [&[u8]; 3] = [
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"majordomus_peers","arguments":{"checkouts":"this"}}}"#,
    ];
    for line in lines {
        stdin.write_all(line).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
    }
    stdin.flush().await.unwrap();
    for id in [1, 2] {
        let line = tokio::time::timeout(BOUND, stdout.next_line())
            .await
            .expect("an answer within the bound")
            .unwrap()
            .expect("a line");
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], id, "{answer}");
        assert!(answer.get("result").is_some(), "{answer}");
    }
    // stdout stays open until the process exits; nothing more is read from it.
    tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });
    (child, stdin, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_mcp_ends_cleanly_on_sigint_sigterm_or_end_of_input() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    for ending in ["SIGINT", "SIGTERM", "end of input"] {
        let (mut child, stdin, stderr) = raw_mcp(&repo, &root).await;
        let pid = child.id().unwrap();
        assert_eq!(
            read_lease(&root).map(|lease| lease.pid),
            Some(pid),
            "it serves the checkout"
        );
        match ending {
            "SIGINT" => signal(pid, libc::SIGINT),
            "SIGTERM" => signal(pid, libc::SIGTERM),
            _ => drop(stdin),
        }
        let status = tokio::time::timeout(BOUND, child.wait())
            .await
            .unwrap_or_else(|_| panic!("still running {BOUND:?} after {ending}"))
            .unwrap();
        assert_eq!(status.code(), Some(0), "after {ending}");
        assert!(
            !lease_path(&root).exists(),
            "no lease is left behind after {ending}"
        );
        assert_quiet(&[stderr]);
    }
}

/// Claude Code ends its stdio server when the session ends; the next session of the checkout
/// starts a new one. What the first session claimed is on that new board, departed, and the
/// next session's announce of the same path meets it, quietly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_ended_with_its_server_leaves_its_claims_to_the_next_one() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let mut first = QuietClient::start(&repo, &root, "first").await;
    assert_eq!(wait_ready(&root).await.pid, first.pid, "it serves alone");
    first
        .answer(
            ANNOUNCE,
            json!({"intent": "rewrite the library", "scope": ["src/lib.rs"]}),
        )
        .await;
    first.leave_like_claude_code().await;
    assert!(!lease_path(&root).exists(), "its server went with it");

    let next = QuietClient::start(&repo, &root, "next").await;
    assert_eq!(wait_ready(&root).await.pid, next.pid, "a new server");
    let board = next.board().await;
    let departed = peers_named(&board, "first");
    assert_eq!(departed.len(), 1, "{board:#}");
    assert_eq!(departed[0]["attached"], false);
    assert_eq!(departed[0]["claims"][0]["scope"], json!(["src/lib.rs"]));
    let met = next
        .answer(
            ANNOUNCE,
            json!({"intent": "fix a bug", "scope": ["src/lib.rs"]}),
        )
        .await;
    assert_eq!(met["overlaps"].as_array().unwrap().len(), 1, "{met:#}");
    assert_eq!(met["overlaps"][0]["attached"], false);
    assert_eq!(met["overlaps"][0]["intent"], "rewrite the library");

    let logs = [first.stderr.clone(), next.close().await];
    assert_quiet(&logs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_ids_are_qualified_by_checkout_in_a_repository_listing() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let beta = repo.add_worktree("beta");
    let in_root = QuietClient::start(&repo, &root, "agent-root").await;
    let bridged = QuietClient::start(&repo, &root, "agent-bridged").await;
    let in_beta = QuietClient::start(&repo, &beta, "agent-beta").await;

    let listing = in_root
        .answer(PEERS, json!({"checkouts": "repository"}))
        .await;
    assert_eq!(listing["complete"], true, "{listing:#}");
    let peers = listing["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 3, "{listing:#}");
    let mut qualified: Vec<&str> = Vec::new();
    for peer in peers {
        let checkout = peer["checkout"]["id"].as_str().unwrap();
        assert_eq!(
            peer["qualified_id"],
            format!("{}@{}", peer["id"].as_str().unwrap(), &checkout[..8]),
            "{peer:#}"
        );
        assert_eq!(peer["transport"], "stdio", "{peer:#}");
        qualified.push(peer["qualified_id"].as_str().unwrap());
    }
    let mut unique = qualified.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 3, "qualified ids are unique: {qualified:?}");
    let id_of = |name: &str| peers_named(&listing, name)[0]["id"].clone();
    assert_eq!(
        id_of("agent-root"),
        id_of("agent-beta"),
        "each board keeps counting from p1"
    );
    let bridged_of = |name: &str| peers_named(&listing, name)[0]["bridged"].clone();
    assert_eq!(bridged_of("agent-root"), false);
    assert_eq!(bridged_of("agent-bridged"), true);
    assert_eq!(bridged_of("agent-beta"), false);

    let logs = [
        in_beta.close().await,
        bridged.close().await,
        in_root.close().await,
    ];
    assert_quiet(&logs);
}

/// A TCP proxy between a bridge and the real server that relays everything, except that it
/// loses the answer to the next request naming the tool it was armed with: that request
/// reaches the server and runs, and its connection closes before a byte of the answer
/// comes back.
struct AnswerLoser {
    address: SocketAddr,
    armed: Arc<Mutex<Option<String>>>,
    lost: Arc<AtomicUsize>,
    accepting: tokio::task::JoinHandle<()>,
}

impl AnswerLoser {
    async fn start(upstream: &str) -> AnswerLoser {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let upstream = upstream.trim_start_matches("http://").to_string();
        let armed: Arc<Mutex<Option<String>>> = Arc::default();
        let lost = Arc::new(AtomicUsize::new(0));
        let accepting = tokio::spawn({
            let (armed, lost) = (armed.clone(), lost.clone());
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    let server = TcpStream::connect(&upstream).await.unwrap();
                    tokio::spawn(relay(client, server, armed.clone(), lost.clone()));
                }
            }
        });
        AnswerLoser {
            address,
            armed,
            lost,
            accepting,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    fn arm(&self, tool: &str) {
        *self.armed.lock().unwrap() = Some(tool.to_string());
    }

    fn lost(&self) -> usize {
        self.lost.load(Ordering::SeqCst)
    }
}

impl Drop for AnswerLoser {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

/// Relays one connection. Once the client's bytes name the armed tool, the server's answer
/// is read to its end (so the call has run) and dropped, and the connection closes.
async fn relay(
    client: TcpStream,
    server: TcpStream,
    armed: Arc<Mutex<Option<String>>>,
    lost: Arc<AtomicUsize>,
) {
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let losing = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let upstream = tokio::spawn({
        let losing = losing.clone();
        async move {
            let mut seen: Vec<u8> = Vec::new();
            let mut buffer = [0u8; 16 * 1024];
            loop {
                let read = match from_client.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(read) => read,
                };
                seen.extend_from_slice(&buffer[..read]);
                {
                    let mut armed = armed.lock().unwrap();
                    let hit = armed.as_ref().is_some_and(|tool| {
                        seen.windows(tool.len())
                            .any(|window| window == tool.as_bytes())
                    });
                    if hit {
                        armed.take();
                        losing.store(true, Ordering::SeqCst);
                    }
                }
                if seen.len() > 64 * 1024 {
                    seen.drain(..seen.len() - 1024);
                }
                if to_server.write_all(&buffer[..read]).await.is_err() {
                    return;
                }
            }
        }
    });
    let mut answer: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let read = match from_server.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        if losing.load(Ordering::SeqCst) {
            answer.extend_from_slice(&buffer[..read]);
            let complete = [&b"\"result\""[..], &b"\"error\""[..]]
                .iter()
                .any(|marker| answer.windows(marker.len()).any(|window| window == *marker));
            if complete {
                lost.fetch_add(1, Ordering::SeqCst);
                break;
            }
        } else if to_client.write_all(&buffer[..read]).await.is_err() {
            break;
        }
    }
    upstream.abort();
}

/// Points the checkout's lease at `url` instead of its server's own address, keeping its
/// token (so the server still holds it) and its mode.
fn redirect_lease(checkout: &Path, url: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = lease_path(checkout);
    let mut lease: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    lease["url"] = json!(url);
    let temporary = path.with_extension("redirect");
    fs::write(&temporary, serde_json::to_vec(&lease).unwrap()).unwrap();
    fs::set_permissions(&temporary, fs::Permissions::from_mode(0o600)).unwrap();
    fs::rename(&temporary, &path).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_is_resent_only_for_a_call_that_may_repeat() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let (_server, lease) = ServeProcess::start(&repo, &root).await;
    let loser = AnswerLoser::start(lease.url()).await;
    redirect_lease(&root, &loser.url());
    let client = QuietClient::start(&repo, &root, "agent").await;
    client
        .answer(ATTACH, json!({"external_id": "conv-lost"}))
        .await;
    client
        .answer(ANNOUNCE, json!({"intent": "works", "scope": ["src"]}))
        .await;

    loser.arm(DETACH);
    let detached = client
        .call(DETACH, json!({"external_id": "conv-lost"}))
        .await;
    assert_eq!(loser.lost(), 1, "the detach's answer was lost on the way");
    let told = detached.expect_err("a detach whose answer was lost is not reported done");
    assert!(told.contains("outcome unknown"), "{told}");
    assert!(told.contains(DETACH), "{told}");
    assert_eq!(
        journal_events(&root, "conv-lost"),
        ["opened", "announced", "closed:detach"],
        "the detach ran once, was not sent again, and the episode was not replayed"
    );
    let episodes = client.answer(EPISODES, json!({})).await;
    assert_eq!(episodes["episodes"], json!([]), "{episodes:#}");

    loser.arm(PEERS);
    let board = client.board().await;
    assert_eq!(loser.lost(), 2, "the listing's answer was lost on the way");
    let peers = peers_named(&board, "agent");
    assert_eq!(peers.len(), 1, "the resent listing answers: {board:#}");
    assert_eq!(
        peers[0]["claims"][0]["scope"],
        json!(["src"]),
        "its claim was replayed: {board:#}"
    );

    let logs = [client.close().await];
    assert_quiet(&logs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stop_stops_a_serving_mcp_in_order() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let client = QuietClient::start(&repo, &root, "agent").await;
    assert_eq!(wait_ready(&root).await.pid, client.pid);
    client
        .answer(ATTACH, json!({"external_id": "conv-own"}))
        .await;

    // The stop route asks for the lease's token; without it, nothing stops.
    let lease = wait_ready(&root).await;
    let refused = reqwest::Client::new()
        .post(format!(
            "{}/api/v1/server/stop",
            lease.url.as_deref().unwrap()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(wait_ready(&root).await.pid, client.pid, "still serving");

    let stop = run_cli(&repo, ["serve", "stop", "--repo", root.to_str().unwrap()]).await;
    assert!(stop.status.success(), "{stop:?}");
    wait_gone(client.pid).await;
    assert_eq!(
        journal_events(&root, "conv-own"),
        ["opened", "closed:shutdown"],
        "an asked stop closes the episodes it holds"
    );
    assert!(!lease_path(&root).exists(), "the lease went with it");
    let logs = [client.close().await];
    assert_quiet(&logs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridges_carry_on_after_their_server_is_killed_without_a_word_on_stderr() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let doomed = QuietClient::start(&repo, &root, "doomed").await;
    assert_eq!(wait_ready(&root).await.pid, doomed.pid);
    let survivors = [
        QuietClient::start(&repo, &root, "agent-1").await,
        QuietClient::start(&repo, &root, "agent-2").await,
    ];
    for (n, survivor) in survivors.iter().enumerate() {
        survivor
            .answer(
                ANNOUNCE,
                json!({"intent": format!("agent {n} works"), "scope": [format!("src/{n}")]}),
            )
            .await;
    }
    survivors[0]
        .answer(ATTACH, json!({"external_id": "conv-survivor"}))
        .await;

    signal(doomed.pid, libc::SIGKILL);
    wait_gone(doomed.pid).await;
    for survivor in &survivors {
        eventually("both survivors on the new board", || async {
            let board = survivor.board().await;
            let back = ["agent-1", "agent-2"].iter().all(|name| {
                peers_named(&board, name).len() == 1
                    && peers_named(&board, name)[0]["attached"] == true
            });
            if back && board["count"] == 2 {
                Ok(())
            } else {
                Err(board.to_string())
            }
        })
        .await;
    }
    let episodes = survivors[0].answer(EPISODES, json!({})).await;
    assert_eq!(
        episodes["mine"]["external_id"], "conv-survivor",
        "{episodes:#}"
    );

    let [first, second] = survivors;
    let (first, second) = tokio::join!(first.close(), second.close());
    assert_quiet(&[first, second]);
}

/// What is left in a directory, by name, sorted; nothing when the directory is gone.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A server stopped cleanly, by SIGINT or by `serve stop`, leaves nothing of its lease
/// behind: no lease, no lock file, no temporary file. Its lease directory is in the git dir
/// of a checkout that may live for years, and a newcomer looking there should not have to
/// wonder whether an empty `lease.lock` means a server is still around.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_leaves_nothing_in_the_lease_directory() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let lease_dir = lease_path(&root).parent().unwrap().to_path_buf();

    let (mut serve, _) = ServeProcess::start(&repo, &root).await;
    assert!(
        !files_in(&lease_dir).is_empty(),
        "a serving server has its lease in {}",
        lease_dir.display()
    );
    serve.signal(libc::SIGINT);
    let status = serve.wait_exit().await;
    assert!(status.success(), "exit status after SIGINT: {status:?}");
    assert_eq!(files_in(&lease_dir), [""; 0], "left after SIGINT");

    let (mut serve, _) = ServeProcess::start(&repo, &root).await;
    let stop = run_cli(&repo, ["serve", "stop", "--repo", root.to_str().unwrap()]).await;
    assert!(stop.status.success(), "{stop:?}");
    let status = serve.wait_exit().await;
    assert!(status.success(), "exit status after serve stop: {status:?}");
    assert_eq!(files_in(&lease_dir), [""; 0], "left after serve stop");
}
