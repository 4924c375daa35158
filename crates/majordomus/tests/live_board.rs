//! The live board: the event stream at `/api/v1/events`, the `majordomus://board` resource
//! and overlap notices over MCP, the dashboard in a real headless Chromium, and
//! `majordomus peers --watch` in a pseudo-terminal.
//!
//! Real `majordomus` processes in temporary git repositories, real clients (reqwest reading
//! the stream, rmcp over Streamable HTTP, Chromium driven through the DevTools protocol,
//! `script` giving the watcher a terminal); every wait is a bounded poll.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use common::browser::Browser;
use common::*;
use futures::StreamExt as _;
use reqwest::StatusCode;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ReadResourceRequestParams, ResourceContents,
    ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use rmcp::service::NotificationContext;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;

// ---------------------------------------------------------------------------------------------
// Reading the event stream

/// One event as the stream carried it.
#[derive(Debug, Clone, PartialEq)]
struct Received {
    id: Option<u64>,
    body: Value,
}

impl Received {
    fn kind(&self) -> &str {
        self.body["kind"].as_str().unwrap_or("")
    }
}

/// An open `/api/v1/events` stream, read event by event.
struct EventStream {
    events: std::pin::Pin<
        Box<dyn futures::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>,
    >,
}

impl EventStream {
    async fn open(lease: &LeaseFile, checkouts: &str, last_event_id: Option<u64>) -> EventStream {
        let mut request = streaming_http()
            .get(format!(
                "{}/api/v1/events?checkouts={checkouts}",
                lease.url()
            ))
            .bearer_auth(&lease.token);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await.expect("the stream opens");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "an event stream"
        );
        let bytes = futures::stream::unfold(response, |mut response| async move {
            match response.chunk().await {
                Ok(Some(chunk)) => Some((Ok::<_, std::io::Error>(chunk), response)),
                Ok(None) => None,
                Err(error) => Some((Err(std::io::Error::other(error)), response)),
            }
        });
        EventStream {
            events: Box::pin(sse_stream::SseStream::from_bytes_stream(bytes)),
        }
    }

    /// The next event (comments and keep-alives skipped), within [`BOUND`].
    async fn next(&mut self) -> Received {
        loop {
            let sse = tokio::time::timeout(BOUND, self.events.next())
                .await
                .unwrap_or_else(|_| panic!("no event within {BOUND:?}"))
                .expect("the stream goes on")
                .expect("the stream is well formed");
            let Some(data) = sse.data else { continue };
            return Received {
                id: sse.id.map(|id| id.parse().expect("ids are numbers")),
                body: serde_json::from_str(&data).expect("every event is JSON"),
            };
        }
    }

    /// Events until one of `kind` (included).
    async fn until(&mut self, kind: &str) -> Vec<Received> {
        let mut seen = Vec::new();
        loop {
            let event = self.next().await;
            let done = event.kind() == kind;
            seen.push(event);
            if done {
                return seen;
            }
        }
    }
}

/// A client without a whole-request timeout, for streams that stay open.
fn streaming_http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(5))
        .build()
        .expect("an HTTP client builds")
}

async fn announce(client: &McpClient, intent: &str, scope: &[&str]) -> Value {
    client
        .answer(
            "majordomus_announce",
            json!({"intent": intent, "scope": scope}),
        )
        .await
}

fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server runs");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS is reported")
}

// ---------------------------------------------------------------------------------------------
// 1. The event stream

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_tells_of_attach_announce_and_overlap_in_order_and_resumes_without_loss() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let mut stream = EventStream::open(&lease, "this", None).await;
    let ready = stream.next().await;
    assert_eq!(ready.kind(), "ready", "{ready:?}");

    let first = McpClient::http(&lease, "claude-code", "2.1").await;
    announce(&first, "port the parser", &["src/parser"]).await;
    let second = McpClient::http(&lease, "codex", "0.130").await;
    announce(&second, "fix the lexer", &["src/parser/lexer.rs"]).await;

    let events = stream.until("overlap_began").await;
    let kinds: Vec<&str> = events.iter().map(Received::kind).collect();
    assert_eq!(
        kinds,
        [
            "attached",
            "announced",
            "attached",
            "announced",
            "overlap_began"
        ]
    );
    let ids: Vec<u64> = events
        .iter()
        .map(|e| e.id.expect("board events have ids"))
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "increasing: {ids:?}");
    assert!(ids[0] > ready.id.unwrap(), "after the ready mark");
    assert_eq!(events[0].body["peer"], "p1");
    assert_eq!(events[0].body["client"]["name"], "claude-code");
    assert_eq!(events[1].body["claim"]["intent"], "port the parser");
    assert_eq!(events[1].body["claim"]["scope"], json!(["src/parser"]));
    let began = &events[4].body;
    assert_eq!(
        (&began["peer"], &began["with"]),
        (&json!("p2"), &json!("p1"))
    );
    assert_eq!(
        began["paths"],
        json!([{"yours": "src/parser/lexer.rs", "theirs": "src/parser"}])
    );
    assert_eq!(
        began["checkout"]["worktree"],
        display(repo.root()),
        "every event names its checkout"
    );

    // Resuming after the first announcement replays exactly what came after it, then the
    // stream goes on live.
    let mut resumed = EventStream::open(&lease, "this", Some(ids[1])).await;
    let mut replayed = Vec::new();
    for _ in 0..3 {
        replayed.push(resumed.next().await);
    }
    assert_eq!(
        replayed,
        events[2..].to_vec(),
        "the missed events, once each"
    );
    announce(
        &first,
        "port the parser and its tests",
        &["src/parser", "tests"],
    )
    .await;
    let live = resumed.next().await;
    assert_eq!(live.kind(), "announced");
    assert_eq!(
        live.id,
        stream.next().await.id,
        "both streams see the same event"
    );
    assert!(live.id > Some(ids[4]));

    // An id from before this server (or garbage) is told to re-read, not replayed.
    let mut stale = EventStream::open(&lease, "this", Some(1)).await;
    let resync = stale.next().await;
    assert_eq!(resync.kind(), "resync", "{resync:?}");
    assert!(
        resync.body["reason"]
            .as_str()
            .unwrap()
            .contains("re-read the board")
    );

    first.close().await;
    let left = stream.next().await;
    assert_eq!((left.kind(), &left.body["peer"]), ("left", &json!("p1")));
    assert_eq!(
        left.body["claims_kept"], true,
        "its claims stay on the board"
    );
    second.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_stream_re_emits_a_sibling_worktrees_events_stamped_with_it() {
    let repo = TempRepo::new();
    let beta = repo.add_worktree("beta");
    let (_primary, primary_lease) = ServeProcess::start(&repo, repo.root()).await;
    let (_sibling, beta_lease) = ServeProcess::start(&repo, &beta).await;
    let mut this_only = EventStream::open(&primary_lease, "this", None).await;
    assert_eq!(this_only.next().await.kind(), "ready");
    let mut everything = EventStream::open(&primary_lease, "repository", None).await;
    assert_eq!(everything.next().await.kind(), "ready");
    let reached = everything.until("sibling_reached").await;
    assert_eq!(
        reached.last().unwrap().body["checkout"]["worktree"],
        display(&beta)
    );

    let worker = McpClient::http(&beta_lease, "gemini-cli", "0.30").await;
    announce(&worker, "translate the guide", &["docs"]).await;
    let events = everything.until("announced").await;
    let kinds: Vec<&str> = events.iter().map(Received::kind).collect();
    assert_eq!(kinds, ["attached", "announced"]);
    for event in &events {
        assert_eq!(
            event.body["checkout"]["worktree"],
            display(&beta),
            "{event:?}"
        );
        assert_eq!(event.body["checkout"]["this_checkout"], false);
    }
    assert_eq!(events[1].body["claim"]["intent"], "translate the guide");
    assert!(
        events[1].id > reached.last().unwrap().id,
        "ids go on increasing"
    );

    // The stream of this checkout alone never carried the sibling's events.
    let local = McpClient::http(&primary_lease, "codex", "0.130").await;
    let first = this_only.next().await;
    assert_eq!(first.kind(), "attached");
    assert_eq!(first.body["checkout"]["worktree"], display(repo.root()));
    assert_eq!(first.body["client"]["name"], "codex");
    local.close().await;
    worker.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_wants_the_token_and_a_loopback_origin() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let url = format!("{}/api/v1/events", lease.url());
    let anonymous = http().get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let wrong = http()
        .get(&url)
        .bearer_auth("not-the-token")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let foreign = http()
        .get(&url)
        .bearer_auth(&lease.token)
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), StatusCode::FORBIDDEN);
    let body: Value = foreign.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("evil.example"),
        "{body}"
    );
    let bad = http()
        .get(format!("{url}?checkouts=everything"))
        .bearer_auth(&lease.token)
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);

    // At most 128 streams at once; the next is told the limit, and a closed one frees its
    // place.
    let mut open = Vec::new();
    for _ in 0..128 {
        open.push(EventStream::open(&lease, "this", None).await);
    }
    let refused = streaming_http()
        .get(&url)
        .bearer_auth(&lease.token)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("128 event streams"),
        "{body}"
    );
    drop(open.pop());
    eventually("a closed stream to free its place", || async {
        let response = streaming_http()
            .get(&url)
            .bearer_auth(&lease.token)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        match response.status() {
            StatusCode::OK => Ok(()),
            other => Err(other.to_string()),
        }
    })
    .await;
}

/// Announces `rounds` claims of about 9 KB each (a long intent and eight long paths), each an
/// event of that size on every stream.
async fn announce_large(client: &McpClient, rounds: std::ops::Range<usize>) {
    let intent = "i".repeat(1000);
    for round in rounds {
        let scope: Vec<String> = (0..8)
            .map(|k| format!("area/{round}/{k}/{}", "p".repeat(900)))
            .collect();
        client
            .answer(
                "majordomus_announce",
                json!({"intent": intent, "scope": scope}),
            )
            .await;
    }
}

/// A raw `/api/v1/events` subscriber with a tiny receive window, which reads nothing after
/// the response's head.
async fn subscriber_that_never_reads(lease: &LeaseFile) -> tokio::net::TcpStream {
    let authority = lease.url().trim_start_matches("http://").to_string();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket
        .connect(authority.parse().unwrap())
        .await
        .expect("the server accepts");
    stream
        .write_all(
            format!(
                "GET /api/v1/events?checkouts=this HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {}\r\n\r\n",
                lease.token
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut head = vec![0u8; 64];
    let n = stream.read(&mut head).await.unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"));
    stream
}

/// How many of the connections from `clients` the server at `server` still holds open, as
/// the kernel's table of TCP sockets says: one the server has closed is no longer
/// established on its side (it waits, orphaned, to send what the client never read). The
/// table is read in chunks while other tests open and close sockets, so one reading may
/// list a socket twice or skip it: each connection counts once, seen in any of three.
fn held_open(server: std::net::SocketAddr, clients: &[std::net::SocketAddr]) -> usize {
    let port = |address: &std::net::SocketAddr| format!(":{:04X}", address.port());
    let mut open = std::collections::HashSet::new();
    for _ in 0..3 {
        let table = std::fs::read_to_string("/proc/net/tcp").expect("the kernel's TCP table");
        open.extend(
            table
                .lines()
                .skip(1)
                .map(|line| line.split_whitespace().collect::<Vec<_>>())
                .filter(|fields| fields.len() > 3 && fields[3] == "01")
                .filter(|fields| fields[1].ends_with(&port(&server)))
                .filter(|fields| {
                    clients
                        .iter()
                        .any(|client| fields[2].ends_with(&port(client)))
                })
                .map(|fields| fields[2].to_owned()),
        );
    }
    open.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_that_never_read_are_closed_at_the_write_deadline_and_their_memory_freed() {
    const STUCK: usize = 64;
    let repo = TempRepo::new();
    let (serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let client = McpClient::http(&lease, "claude-code", "2.1").await;
    // The backlog kept for resuming streams fills first, so that it weighs the same in the
    // memory measured before the subscribers come and after they are gone.
    announce_large(&client, 0..600).await;
    let before = vm_rss_kib(serve.pid());

    let mut stuck = Vec::new();
    for _ in 0..STUCK {
        stuck.push(subscriber_that_never_reads(&lease).await);
    }
    let server: std::net::SocketAddr = lease.url().trim_start_matches("http://").parse().unwrap();
    let clients: Vec<std::net::SocketAddr> = stuck
        .iter()
        .map(|stream| stream.local_addr().unwrap())
        .collect();
    assert_eq!(held_open(server, &clients), STUCK);
    announce_large(&client, 600..1200).await;
    let loaded = vm_rss_kib(serve.pid());
    assert!(
        loaded < before + 48 * 1024,
        "the server grew from {before} KiB to {loaded} KiB"
    );

    // Every write to them waits from the moment their buffers filled, during the
    // announcements: the server closes each within its write deadline of that.
    let margin = Duration::from_secs(10);
    let waiting = std::time::Instant::now();
    loop {
        let open = held_open(server, &clients);
        if open == 0 {
            break;
        }
        assert!(
            waiting.elapsed() < majordomus_server::listen::WRITE_DEADLINE + margin,
            "{open} of the {STUCK} streams that never read are still open"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for mut stream in stuck {
        // What the system still held for it, then the end: the server has let it go.
        let mut drained = Vec::new();
        let read = tokio::time::timeout(BOUND, stream.read_to_end(&mut drained))
            .await
            .expect("a closed stream reads to its end");
        assert!(
            read.is_ok() || read.is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
            "the stream ends with a close or a reset"
        );
    }
    eventually("the memory the streams held to be given back", || async {
        let after = vm_rss_kib(serve.pid());
        if after * 10 <= before * 11 {
            Ok(())
        } else {
            Err(format!(
                "{after} KiB, from {before} KiB before the streams ({loaded} KiB at most)"
            ))
        }
    })
    .await;

    // The server keeps serving, streams included.
    let mut fresh = EventStream::open(&lease, "this", None).await;
    announce(&client, "one more", &["docs"]).await;
    fresh.until("announced").await;
    client.close().await;
}

// ---------------------------------------------------------------------------------------------
// 2. MCP: the board resource and overlap notices

/// An MCP client that keeps every notification the server sends it.
#[derive(Clone)]
struct Listener {
    info: ClientConfig,
    heard: mpsc::UnboundedSender<Heard>,
}

#[derive(Debug)]
enum Heard {
    Updated(String),
    Message(Value),
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.heard.send(Heard::Updated(params.uri));
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.heard.send(Heard::Message(params.data));
    }
}

async fn next_heard(heard: &mut mpsc::UnboundedReceiver<Heard>) -> Heard {
    tokio::time::timeout(BOUND, heard.recv())
        .await
        .unwrap_or_else(|_| panic!("no notification within {BOUND:?}"))
        .expect("the client runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_to_the_board_is_told_of_changes_and_of_overlaps_with_its_claims() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let (sender, mut heard) = mpsc::unbounded_channel();
    let listener = Listener {
        info: ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("cursor", "3.0"),
        ),
        heard: sender,
    };
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", lease.url()))
        .auth_header(lease.token.clone());
    let transport = StreamableHttpClientTransport::with_client(http(), config);
    let watcher = tokio::time::timeout(BOUND, listener.serve(transport))
        .await
        .expect("initialized in time")
        .expect("initialized");

    let capabilities = watcher.peer_info().unwrap().capabilities.clone();
    assert_eq!(
        capabilities.resources.as_ref().and_then(|r| r.subscribe),
        Some(true)
    );
    #[allow(deprecated)]
    let logging = capabilities.logging.is_some();
    assert!(logging, "logging is declared");
    let resources = watcher.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["majordomus://board"]);

    let read = watcher
        .read_resource(ReadResourceRequestParams::new("majordomus://board"))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("the board is text: {read:?}")
    };
    let board: Value = serde_json::from_str(text).expect("the board is JSON");
    assert_eq!(board["caller"], "p1");
    assert_eq!(board["peers"][0]["client"]["name"], "cursor");
    assert_eq!(
        board["boards"].as_array().unwrap().len(),
        1,
        "this checkout only"
    );
    let unknown = watcher
        .read_resource(ReadResourceRequestParams::new("majordomus://nothing"))
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("majordomus://board"), "{unknown}");

    #[allow(deprecated)]
    watcher
        .subscribe(SubscribeRequestParams::new("majordomus://board"))
        .await
        .unwrap();
    watcher
        .call_tool(
            rmcp::model::CallToolRequestParams::new("majordomus_announce").with_arguments(
                json!({"intent": "rework the cli", "scope": ["apps/cli"]})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .unwrap();
    let Heard::Updated(uri) = next_heard(&mut heard).await else {
        panic!("the board changed first")
    };
    assert_eq!(uri, "majordomus://board");

    let other = McpClient::http(&lease, "gemini-cli", "0.30").await;
    announce(&other, "fix a flag", &["apps/cli/src/flags.rs"]).await;
    let mut message = None;
    let mut updated = false;
    while message.is_none() || !updated {
        match next_heard(&mut heard).await {
            Heard::Updated(uri) => {
                assert_eq!(uri, "majordomus://board");
                updated = true;
            }
            Heard::Message(data) => message = Some(data),
        }
    }
    let message = message.unwrap();
    assert_eq!(message["peer"], "p2", "{message}");
    assert!(
        message["message"]
            .as_str()
            .unwrap()
            .contains("p2 (gemini-cli 0.30)"),
        "{message}"
    );
    assert_eq!(
        message["paths"],
        json!([{"yours": "apps/cli", "theirs": "apps/cli/src/flags.rs"}])
    );

    let read = watcher
        .read_resource(ReadResourceRequestParams::new("majordomus://board"))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("the board is text")
    };
    let board: Value = serde_json::from_str(text).unwrap();
    assert_eq!(board["overlaps"].as_array().unwrap().len(), 1, "{board:#}");
    other.close().await;
    let _ = watcher.cancel().await;
}

// ---------------------------------------------------------------------------------------------
// 3. The dashboard in a real browser

fn screenshot_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("live_board")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_the_board_live_in_a_real_browser() {
    let repo = TempRepo::new();
    let feature = repo.add_worktree("feature");
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let first = McpClient::http(&lease, "claude-code", "2.1.154").await;
    announce(
        &first,
        "port the parser to the new AST",
        &["src/parser", "docs/parser.md"],
    )
    .await;

    let printed = run_cli(&repo, ["board", "--repo", repo.root().to_str().unwrap()]).await;
    assert!(printed.status.success(), "{printed:?}");
    let link = String::from_utf8(printed.stdout)
        .unwrap()
        .trim()
        .to_string();
    assert!(
        link.starts_with(&format!("{}/board?ticket=", lease.url())),
        "{link}"
    );
    assert!(
        !link.contains(&lease.token),
        "the lease token never rides in a URL"
    );

    let mut browser = Browser::launch(&repo).await;
    browser.call("Page.navigate", json!({"url": link})).await;
    let peers = browser
        .text_when("#peers", BOUND, |text| text.contains("claude-code 2.1.154"))
        .await;
    assert!(
        peers.contains("port the parser to the new AST (src/parser, docs/parser.md)"),
        "{peers}"
    );
    let worktrees = browser
        .text_when("#worktrees", BOUND, |text| text.contains("ready"))
        .await;
    assert!(worktrees.contains(&display(repo.root())), "{worktrees}");
    assert!(worktrees.contains(&display(&feature)), "{worktrees}");
    assert!(
        worktrees.contains("absent"),
        "the feature worktree has no server: {worktrees}"
    );
    let href = browser.eval("location.href").await;
    assert_eq!(
        href,
        format!("{}/board", lease.url()),
        "the ticket left the address bar"
    );
    browser.eval("window.__sameDocument = true").await;
    browser
        .text_when("#status", BOUND, |text| text == "live")
        .await;

    // Another agent claims ground that meets the first one's: the page shows it unreloaded.
    let second = McpClient::http(&lease, "codex", "0.130.0").await;
    announce(
        &second,
        "fix the lexer's <b>unicode</b> escapes",
        &["src/parser/lexer.rs"],
    )
    .await;
    let overlaps = browser
        .text_when("#overlaps", Duration::from_secs(2), |text| {
            text.contains("p2")
        })
        .await;
    assert!(overlaps.contains("p1"), "both sides named: {overlaps}");
    assert!(
        overlaps.contains("src/parser ~ src/parser/lexer.rs"),
        "{overlaps}"
    );
    let peers = browser
        .text_when("#peers", Duration::from_secs(2), |text| {
            text.contains("codex 0.130.0")
        })
        .await;
    assert!(
        peers.contains("fix the lexer's <b>unicode</b> escapes (src/parser/lexer.rs)"),
        "a peer's markup is shown as text: {peers}"
    );
    assert_eq!(
        browser.eval("document.querySelectorAll('b').length").await,
        0
    );
    assert_eq!(
        browser.eval("window.__sameDocument === true").await,
        true,
        "no reload"
    );
    assert_eq!(
        browser
            .eval("document.querySelectorAll('#peers tr.overlapping').length")
            .await,
        2,
        "both peers are highlighted"
    );

    browser
        .screenshot(1280, &screenshot_dir().join("board.png"))
        .await;
    browser
        .screenshot(420, &screenshot_dir().join("board-narrow.png"))
        .await;

    let local = format!("{}/", lease.url());
    assert!(!browser.requests.is_empty());
    for url in &browser.requests {
        assert!(
            url.starts_with(&local) || url == "about:blank",
            "a request left the server: {url}"
        );
    }

    // The ticket worked once; the cookie opens the page's routes and nothing else.
    let again = http().get(&link).send().await.unwrap();
    assert_eq!(
        again.status(),
        StatusCode::UNAUTHORIZED,
        "a ticket works once"
    );
    let statuses = browser
        .eval(
            "Promise.all(['/api/v1/peers?checkouts=this', '/api/v1/server', '/api/v1/episodes']\
             .map((u) => fetch(u).then((r) => r.status)))",
        )
        .await;
    assert_eq!(statuses, json!([200, 401, 401]));

    browser.close().await;
    first.close().await;
    second.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_lists_the_leases_and_their_queues_and_follows_a_hand_over() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let holder = McpClient::http(&lease, "claude-code", "2.1.154").await;
    let waiting = McpClient::http(&lease, "<b>bold</b>", "1.0").await;
    let granted = holder
        .answer("majordomus_lease", json!({"name": "db:staging"}))
        .await;
    assert_eq!(granted["state"], "granted", "{granted}");
    let queued = waiting
        .answer("majordomus_lease", json!({"name": "db:staging"}))
        .await;
    assert_eq!(queued["state"], "queued", "{queued}");

    let printed = run_cli(&repo, ["board", "--repo", repo.root().to_str().unwrap()]).await;
    assert!(printed.status.success(), "{printed:?}");
    let link = String::from_utf8(printed.stdout)
        .unwrap()
        .trim()
        .to_string();
    let mut browser = Browser::launch(&repo).await;
    browser.call("Page.navigate", json!({"url": link})).await;
    let leases = browser
        .text_when("#leases", BOUND, |text| text.contains("db:staging"))
        .await;
    assert!(leases.contains("p1 claude-code in"), "the holder: {leases}");
    assert!(
        leases.contains("p2 <b>bold</b> in"),
        "who waits, its markup shown as text: {leases}"
    );
    assert_eq!(
        browser.eval("document.querySelectorAll('b').length").await,
        0
    );
    browser
        .text_when("#status", BOUND, |text| text == "live")
        .await;

    // The holder lets go: the page, unreloaded, shows the next in line holding it.
    browser.eval("window.__sameDocument = true").await;
    holder
        .answer("majordomus_release", json!({"name": "db:staging"}))
        .await;
    let handed = browser
        .text_when("#leases", BOUND, |text| !text.contains("claude-code"))
        .await;
    assert!(handed.contains("p2 <b>bold</b> in"), "{handed}");
    assert!(handed.contains("WAITING"), "{handed}");
    let last = browser
        .text_when("#last-change", BOUND, |text| {
            text.contains("lease db:staging")
        })
        .await;
    assert!(last.contains("held by p2"), "{last}");
    assert_eq!(
        browser.eval("window.__sameDocument === true").await,
        true,
        "no reload"
    );
    browser
        .screenshot(1280, &screenshot_dir().join("board-leases.png"))
        .await;

    browser.close().await;
    holder.close().await;
    waiting.close().await;
}

/// The caller's own qualified id, from a listing of its repository.
async fn qualified_id(client: &McpClient) -> String {
    let listing = client.answer("majordomus_peers", json!({})).await;
    let caller = listing["caller"].as_str().unwrap().to_owned();
    listing["peers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == caller && p["checkout"]["this_checkout"] == true)
        .unwrap()["qualified_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_lists_the_messages_and_their_receipts_as_they_move() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let sender = McpClient::http(&lease, "claude-code", "2.1.154").await;
    let recipient = McpClient::http(&lease, "an-sdk-agent", "1.0").await;
    let to = qualified_id(&recipient).await;
    let hostile = "<img src=x onerror=\"document.title='owned'\"> may I take the lexer?";
    let sent = sender
        .answer("majordomus_send", json!({"to": to, "text": hostile}))
        .await;
    let id = sent["id"].as_u64().unwrap();

    let printed = run_cli(&repo, ["board", "--repo", repo.root().to_str().unwrap()]).await;
    assert!(printed.status.success(), "{printed:?}");
    let link = String::from_utf8(printed.stdout)
        .unwrap()
        .trim()
        .to_string();
    let mut browser = Browser::launch(&repo).await;
    browser.call("Page.navigate", json!({"url": link})).await;
    let messages = browser
        .text_when("#messages", BOUND, |text| {
            text.contains("may I take the lexer?")
        })
        .await;
    assert!(
        messages.contains("<img src=x"),
        "the sender's words are shown as text: {messages}"
    );
    assert!(
        messages.contains(&format!("{to} an-sdk-agent in")) && messages.contains(": queued"),
        "queued for its recipient: {messages}"
    );
    assert!(messages.contains("p1@"), "from the sender: {messages}");
    assert_eq!(
        browser
            .eval("document.querySelectorAll('img').length")
            .await,
        0
    );
    assert_ne!(browser.eval("document.title").await, "owned");

    // The recipient's next tool answer carries it, and it replies: the page, unreloaded,
    // follows the receipt through delivered to answered, and lists the reply.
    browser.eval("window.__sameDocument = true").await;
    let answer = recipient.answer("majordomus_peers", json!({})).await;
    assert_eq!(answer["inbox"]["messages"][0]["id"], id, "{answer:#}");
    let delivered = browser
        .text_when("#messages", BOUND, |text| {
            text.contains("delivered through majordomus_peers tool")
        })
        .await;
    assert!(!delivered.contains(": queued"), "{delivered}");
    let reply = recipient
        .answer(
            "majordomus_send",
            json!({"reply_to": id, "text": "yes, it is yours"}),
        )
        .await;
    let reply_id = reply["id"].as_u64().unwrap();
    let answered = browser
        .text_when("#messages", BOUND, |text| {
            text.contains(&format!(
                "answered through majordomus_peers tool, reply #{reply_id}"
            ))
        })
        .await;
    assert!(
        answered.contains(&format!("re #{id}: yes, it is yours")),
        "{answered}"
    );
    assert_eq!(
        browser
            .eval("document.querySelector('#messages tbody tr').dataset.id")
            .await,
        json!(reply_id.to_string()),
        "the newest message first"
    );
    assert_eq!(
        browser.eval("window.__sameDocument === true").await,
        true,
        "no reload"
    );

    // The cookie reads the messages; sending one still wants the token.
    let statuses = browser
        .eval(
            "Promise.all([fetch('/api/v1/messages'), fetch('/api/v1/messages', {method: 'POST', \
             headers: {'content-type': 'application/json'}, body: '{\"to\": \"path:x\", \
             \"text\": \"hi\"}'})].map((p) => p.then((r) => r.status)))",
        )
        .await;
    assert_eq!(statuses, json!([200, 401]));
    browser
        .screenshot(1280, &screenshot_dir().join("board-messages.png"))
        .await;

    browser.close().await;
    sender.close().await;
    recipient.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_assets_carry_a_strict_policy_and_want_a_ticket_or_the_cookie() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let page = http()
        .get(format!("{}/board", lease.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::UNAUTHORIZED);
    let forged = http()
        .get(format!("{}/board?ticket=0123", lease.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);
    let mint = http()
        .post(format!("{}/api/v1/board/tickets", lease.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        mint.status(),
        StatusCode::UNAUTHORIZED,
        "a ticket needs the token"
    );

    let with_token = |path: &str| {
        http()
            .get(format!("{}{path}", lease.url()))
            .bearer_auth(&lease.token)
            .send()
    };
    for (path, content_type) in [
        ("/board", "text/html; charset=utf-8"),
        ("/board/board.css", "text/css; charset=utf-8"),
        ("/board/board.js", "text/javascript; charset=utf-8"),
    ] {
        let response = with_token(path).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let headers = response.headers();
        assert_eq!(headers["content-type"], content_type);
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(policy.starts_with("default-src 'self'"), "{policy}");
        assert!(
            policy.contains("script-src 'self'") && !policy.contains("unsafe"),
            "{policy}"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff");
    }
    let html = with_token("/board").await.unwrap().text().await.unwrap();
    assert!(
        !html.contains("<script>") && !html.contains("style="),
        "no inline code"
    );
    let script = with_token("/board/board.js")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !script.contains("innerHTML"),
        "peers' words are inserted as text only"
    );
}

// ---------------------------------------------------------------------------------------------
// 4. `majordomus peers --watch` in a terminal

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_watch_redraws_on_every_change_and_ctrl_c_exits_zero() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let first = McpClient::http(&lease, "claude-code", "2.1").await;
    announce(&first, "write the guide", &["docs"]).await;

    // `script` runs the watcher in a pseudo-terminal of its own and copies the screen out;
    // what the test writes to it is typed at that terminal.
    // `exec`: the shell `script` starts must not stay as the watcher's parent, or a shell
    // without cooperative exit (dash) dies of the same Ctrl-C and `script` reports 130.
    let watcher_command = format!(
        "exec {} peers --watch --repo {}",
        bin().display(),
        repo.root().display()
    );
    let mut script = tokio::process::Command::new("script")
        .args([
            "--quiet",
            "--flush",
            "--return",
            "--command",
            &watcher_command,
            "/dev/null",
        ])
        .env("SHELL", "/bin/sh")
        .env("TERM", "xterm")
        .env("COLUMNS", "200")
        .env("LINES", "50")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("`script` (util-linux) runs");
    let mut typed = script.stdin.take().unwrap();
    let mut screen_out = script.stdout.take().unwrap();
    let screen = Arc::new(tokio::sync::Mutex::new(Vec::<u8>::new()));
    let copying = {
        let screen = screen.clone();
        tokio::spawn(async move {
            let mut buffer = vec![0u8; 8192];
            loop {
                match screen_out.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => screen.lock().await.extend_from_slice(&buffer[..n]),
                }
            }
        })
    };
    let shows = |needle: &'static str| {
        let screen = screen.clone();
        async move {
            eventually(&format!("the watcher to show {needle:?}"), || {
                let screen = screen.clone();
                async move {
                    let text = String::from_utf8_lossy(&screen.lock().await).into_owned();
                    if text.contains(needle) {
                        Ok(text)
                    } else {
                        Err(text
                            .chars()
                            .rev()
                            .take(600)
                            .collect::<Vec<_>>()
                            .into_iter()
                            .rev()
                            .collect())
                    }
                }
            })
            .await
        }
    };
    let text = shows("write the guide (docs)").await;
    assert!(
        text.contains("WORKTREE") && text.contains("CLAIMS"),
        "the peers table: {text}"
    );

    let second = McpClient::http(&lease, "codex", "0.130").await;
    announce(&second, "fix the guide's typos", &["docs/guide.md"]).await;
    let text = shows("overlap: p1").await;
    assert!(text.contains("docs ~ docs/guide.md"), "{text}");
    let redraws = text.matches("\x1b[H").count();
    assert!(redraws >= 2, "redrawn in place, {redraws} times: {text:?}");
    assert!(text.contains("\x1b[J"), "cleared below the board");

    typed.write_all(&[0x03]).await.unwrap();
    typed.flush().await.unwrap();
    let status = tokio::time::timeout(BOUND, script.wait())
        .await
        .expect("Ctrl-C ends the watcher")
        .unwrap();
    assert_eq!(status.code(), Some(0), "Ctrl-C is a normal end");
    let _ = copying.await;
    first.close().await;
    second.close().await;
}
