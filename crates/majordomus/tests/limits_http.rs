//! What a server takes on at once: connections that never finish their request, and MCP
//! sessions beyond the limit, must neither silence the server nor cost its clients.

mod common;

use std::io;
use std::os::unix::process::CommandExt as _;

use common::*;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// The open-file limit the flooded server runs under, soft and hard: too low to raise.
const OPEN_FILES: libc::rlim_t = 256;

/// More idle connections than the server has file descriptors.
const IDLE_CONNECTIONS: usize = 400;

/// The places a server with [`OPEN_FILES`] serves in full: half the limit.
const FULL_PLACES: usize = 128;

/// 400 connections that send half a request head and then nothing, against a server that may
/// open only 256 files and whose header timeout outlasts the test, so that the first of them
/// keep their places throughout: the server keeps answering its probe and its bridged client,
/// nobody takes its lease, and it closes every connection beyond its full places itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_written_connections_neither_starve_the_server_nor_cost_its_lease() {
    let repo = TempRepo::new();
    std::fs::write(
        repo.root().join("majordomus.toml"),
        "[timings]\nheader_timeout_ms = 600000\n",
    )
    .unwrap();
    let serve = ServeProcess::spawn_with(&repo, repo.root(), |command| {
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // setrlimit, which is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: OPEN_FILES,
                    rlim_max: OPEN_FILES,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    });
    let lease = wait_ready(repo.root()).await;
    assert_eq!(lease.pid, serve.pid());
    assert_eq!(
        open_file_limit(serve.pid()),
        Some(OPEN_FILES),
        "the server runs under the lowered limit"
    );

    let client = McpClient::stdio(&repo, repo.root(), "flood-witness", "1.0").await;
    assert_ne!(client.pid, Some(serve.pid()), "the client is bridged");
    client
        .answer(
            "majordomus_announce",
            json!({"intent": "watching the flood", "scope": ["src"]}),
        )
        .await;

    let authority = lease.url().trim_start_matches("http://").to_string();
    let mut idle = Vec::with_capacity(IDLE_CONNECTIONS);
    for _ in 0..IDLE_CONNECTIONS {
        let mut stream = tokio::time::timeout(BOUND, TcpStream::connect(&authority))
            .await
            .expect("the server keeps accepting connections")
            .expect("the connection is made");
        stream
            .write_all(format!("GET / HTTP/1.1\r\nHost: {authority}\r\n").as_bytes())
            .await
            .expect("half a head is sent");
        idle.push(stream);
    }

    // All 400 are open on this side, and the first ones hold the server's full places, while
    // the server is asked about itself.
    let status = eventually("serve status to say ready during the flood", || async {
        let status = serve_status(&repo, repo.root()).await;
        if status["standing"] == "ready" {
            Ok(status)
        } else {
            Err(status.to_string())
        }
    })
    .await;
    assert_eq!(status["standing"], "ready", "{status:#}");
    assert_still_on_the_board(&client).await;
    assert_eq!(
        read_lease(repo.root()).map(|lease| lease.pid),
        Some(serve.pid()),
        "nobody took the lease over"
    );

    let mut closed = vec![false; idle.len()];
    eventually(
        "the server to close the idle connections beyond its full places",
        || {
            for (stream, closed) in idle.iter().zip(closed.iter_mut()) {
                *closed = *closed || closed_by_server(stream);
            }
            let count = closed.iter().filter(|closed| **closed).count();
            async move {
                if count >= IDLE_CONNECTIONS - FULL_PLACES {
                    Ok(())
                } else {
                    Err(format!("{count} closed"))
                }
            }
        },
    )
    .await;
    drop(idle);
    eventually("the server's descriptors to be given back", || async {
        match open_descriptors(serve.pid()) {
            Some(count) if count < 64 => Ok(()),
            other => Err(format!("{other:?} open")),
        }
    })
    .await;

    assert_still_on_the_board(&client).await;
    assert_eq!(
        read_lease(repo.root()).map(|lease| lease.pid),
        Some(serve.pid())
    );
    client.close().await;
}

/// A connection that never finishes its request head, or never sends one, is closed once the
/// header timeout has passed; one that sent its request is answered meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_finish_their_head_are_closed_after_the_header_timeout() {
    let repo = TempRepo::new();
    std::fs::write(
        repo.root().join("majordomus.toml"),
        "[timings]\nheader_timeout_ms = 500\n",
    )
    .unwrap();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let authority = lease.url().trim_start_matches("http://").to_string();
    let mut idle = Vec::new();
    for _ in 0..10 {
        let mut stream = TcpStream::connect(&authority).await.unwrap();
        stream
            .write_all(format!("POST /mcp HTTP/1.1\r\nHost: {authority}\r\n").as_bytes())
            .await
            .unwrap();
        idle.push(stream);
    }
    idle.push(TcpStream::connect(&authority).await.unwrap());
    let identity = probe(lease.url()).await.expect("the probe is answered");
    assert_eq!(identity["leaseholder"], true);
    for (n, stream) in idle.iter_mut().enumerate() {
        let mut buffer = [0u8; 256];
        let read = tokio::time::timeout(BOUND, stream.read(&mut buffer))
            .await
            .unwrap_or_else(|_| panic!("idle connection {n} was still open after {BOUND:?}"));
        match read {
            Ok(0) => {}
            Err(error) if error.kind() == io::ErrorKind::ConnectionReset => {}
            other => panic!(
                "idle connection {n} got {other:?} ({:?}) instead of being closed",
                String::from_utf8_lossy(&buffer)
            ),
        }
    }
}

/// Beyond `[limits] mcp_sessions`, a new session is refused with 503, Retry-After and the
/// limit in words; the open sessions keep working, and a place freed is a place taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_beyond_the_limit_gets_503_and_open_ones_keep_working() {
    let repo = TempRepo::new();
    std::fs::write(
        repo.root().join("majordomus.toml"),
        "[limits]\nmcp_sessions = 2\n",
    )
    .unwrap();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let first = McpClient::http(&lease, "first", "1.0").await;
    let second = McpClient::http(&lease, "second", "1.0").await;

    let refused = initialize(&lease).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    let retry_after = refused
        .headers()
        .get(RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    assert!(
        retry_after.is_some_and(|seconds| seconds > 0),
        "{:?}",
        refused.headers()
    );
    let body: Value = refused.json().await.expect("the refusal is JSON");
    assert_eq!(body["error"]["kind"], "unavailable", "{body:#}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains('2') && message.contains("mcp_sessions"),
        "the refusal names the limit: {body:#}"
    );

    for client in [&first, &second] {
        let status = client.answer("majordomus_server", json!({})).await;
        assert_eq!(status["standing"], "ready", "{status:#}");
    }

    first.close().await;
    let admitted = initialize(&lease).await;
    assert_eq!(
        admitted.status(),
        StatusCode::OK,
        "the closed session's place is free again"
    );
    assert!(admitted.headers().contains_key("mcp-session-id"));
    second.close().await;
}

/// The bridged client is answered, and finds itself attached with its claim.
async fn assert_still_on_the_board(client: &McpClient) {
    let peers = client.answer("majordomus_peers", json!({})).await;
    let caller = peers["caller"].as_str().expect("the caller is named");
    let me = find(&peers["peers"], "id", caller);
    assert_eq!(me["attached"], true, "{peers:#}");
    assert_eq!(
        me["announcement"]["intent"], "watching the flood",
        "{peers:#}"
    );
}

/// `initialize` on `/mcp` without a session, as a new client sends it.
async fn initialize(lease: &LeaseFile) -> reqwest::Response {
    http()
        .post(format!("{}/mcp", lease.url()))
        .header(AUTHORIZATION, format!("Bearer {}", lease.token))
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "one-too-many", "version": "1.0"}
            }
        }))
        .send()
        .await
        .expect("the server answers")
}

/// Whether the server has closed this connection (or reset it, having left bytes unread),
/// seen without waiting.
fn closed_by_server(stream: &TcpStream) -> bool {
    let mut buffer = [0u8; 64];
    match stream.try_read(&mut buffer) {
        Ok(0) => true,
        Ok(_) => panic!(
            "an idle connection was answered: {:?}",
            String::from_utf8_lossy(&buffer)
        ),
        Err(error) if error.kind() == io::ErrorKind::WouldBlock => false,
        Err(error) if error.kind() == io::ErrorKind::ConnectionReset => true,
        Err(error) => panic!("an idle connection failed: {error}"),
    }
}

/// The soft open-file limit of a process, as `/proc/<pid>/limits` says it.
fn open_file_limit(pid: u32) -> Option<libc::rlim_t> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    limits
        .lines()
        .find(|line| line.starts_with("Max open files"))?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()
}

/// How many file descriptors a process has open.
fn open_descriptors(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}
