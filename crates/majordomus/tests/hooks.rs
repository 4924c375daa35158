//! The client hooks end to end: `majordomus hook <client> <event>` fed each client's own
//! payloads (the fixtures in `tests/fixtures/hooks/`), against real servers in real
//! temporary repositories, and read back the way the client reads its answer.
//!
//! The scene most tests share: a linked worktree `beta` whose server holds a Codex session
//! that claims `src/parser` to "port the parser to nom"; the hooks run for a session in the
//! primary checkout, whose own server is running.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const OTHER_INTENT: &str = "port the parser to nom";
const CLAIMED_FILE: &str = "src/parser/lexer.rs";
const FREE_FILE: &str = "docs/guide.md";

/// A client's payload for `event`, from the fixtures, about `file` (relative to `root`) in
/// the conversation `session`.
fn payload(client: &str, event: &str, root: &Path, file: &str, session: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(client)
        .join(format!("{event}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the fixture {} reads: {e}", path.display()));
    let filled = text
        .replace("{{ROOT}}", &display(root))
        .replace("{{FILE}}", file)
        .replace("{{SESSION}}", session);
    let parsed: Value = serde_json::from_str(&filled)
        .unwrap_or_else(|e| panic!("the fixture {} is JSON once filled: {e}", path.display()));
    parsed.to_string()
}

/// What one hook process did.
struct Hook {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Hook {
    /// The answer the client reads: stdout as JSON.
    fn answer(&self) -> Value {
        assert_eq!(self.code, Some(0), "a hook always exits 0: {}", self.stderr);
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("the hook's stdout is JSON ({e}): {:?}", self.stdout))
    }

    /// The hook said nothing, the way a client reads "carry on": exit 0, no output at all.
    fn assert_silent(&self, what: &str) {
        assert_eq!(self.code, Some(0), "{what}: the hook exits 0");
        assert_eq!(self.stdout, "", "{what}: nothing on stdout");
        assert_eq!(self.stderr, "", "{what}: nothing on stderr");
    }
}

/// Runs `majordomus hook <client> <event>` with `input` on its stdin.
async fn hook(repo: &TempRepo, client: &str, event: &str, input: &str) -> Hook {
    let mut command = majordomus_command(["hook", client, event]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("majordomus hook starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = input.as_bytes().to_vec();
    let writing = tokio::spawn(async move {
        let _ = stdin.write_all(&input).await;
    });
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let ran = async {
        let (mut out, mut err) = (String::new(), String::new());
        let _ = tokio::join!(
            stdout.read_to_string(&mut out),
            stderr.read_to_string(&mut err)
        );
        let status = child.wait().await.expect("the hook can be waited for");
        (status, out, err)
    };
    let (status, stdout, stderr) = tokio::time::timeout(BOUND, ran).await.unwrap_or_else(|_| {
        panic!("majordomus hook {client} {event} did not end within {BOUND:?}")
    });
    writing.abort();
    let (_, mut log) = repo.log_file(&format!("hook-{client}-{event}"));
    let _ = std::io::Write::write_all(
        &mut log,
        format!("exit {status}\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n").as_bytes(),
    );
    Hook {
        code: status.code(),
        stdout,
        stderr,
    }
}

/// Writes the repository's `majordomus.toml` in `root`.
fn configure(root: &Path, text: &str) {
    std::fs::write(root.join("majordomus.toml"), text).expect("majordomus.toml is written");
}

/// The primary checkout served, and a Codex session in worktree `beta` claiming `src/parser`.
struct Scene {
    repo: TempRepo,
    beta: PathBuf,
    primary: ServeProcess,
    primary_lease: LeaseFile,
    beta_server: ServeProcess,
    codex: McpClient,
}

impl Scene {
    async fn new(config: Option<&str>) -> Scene {
        let repo = TempRepo::new();
        if let Some(config) = config {
            configure(repo.root(), config);
        }
        let beta = repo.add_worktree("beta");
        let (primary, primary_lease) = ServeProcess::start(&repo, repo.root()).await;
        let (beta_server, beta_lease) = ServeProcess::start(&repo, &beta).await;
        let codex = McpClient::http(&beta_lease, "codex", "0.98.0").await;
        codex
            .answer(
                "majordomus_announce",
                json!({"intent": OTHER_INTENT, "scope": ["src/parser"]}),
            )
            .await;
        Scene {
            repo,
            beta,
            primary,
            primary_lease,
            beta_server,
            codex,
        }
    }

    fn root(&self) -> &Path {
        self.repo.root()
    }

    async fn hook(&self, client: &str, event: &str, file: &str, session: &str) -> Hook {
        let input = payload(client, event, self.root(), file, session);
        hook(&self.repo, client, event, &input).await
    }

    /// `GET /api/v1/peers` of the primary checkout's server.
    async fn peers(&self) -> Value {
        rest_get(&self.primary_lease, "/api/v1/peers").await
    }
}

async fn rest_get(lease: &LeaseFile, path: &str) -> Value {
    let response = http()
        .get(format!("{}{path}", lease.url()))
        .bearer_auth(&lease.token)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    assert!(
        response.status().is_success(),
        "GET {path}: {}",
        response.status()
    );
    response.json().await.expect("the answer is JSON")
}

/// Whether `text` names the other session the way a reader needs it: peer, client,
/// worktree and intent.
fn names_the_codex_session(text: &str, scene: &Scene) {
    for part in [
        "p1 (".to_string(),
        "\"codex\"".to_string(),
        format!("\"{}\"", display(&scene.beta)),
        "branch \"beta\"".to_string(),
        format!("\"{OTHER_INTENT}\""),
        format!("\"{CLAIMED_FILE}\""),
    ] {
        assert!(text.contains(&part), "{part} is named in: {text}");
    }
}

/// 1. Claude Code: by default a live session's claim is refused with the way forward (no
///    person to ask in a hook run outside Claude Code's terminal); a warning as context
///    under `warn`; `ask` and `deny` as permission decisions; an edit elsewhere gets nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_is_warned_asked_or_refused_as_the_repository_says() {
    let scene = Scene::new(None).await;
    let stopped = scene
        .hook("claude-code", "PreToolUse", CLAIMED_FILE, "claude-1")
        .await
        .answer();
    let output = &stopped["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny", "{stopped:#}");
    let reason = output["permissionDecisionReason"].as_str().unwrap();
    names_the_codex_session(reason, &scene);
    assert!(reason.contains("Nothing was written. Wait"), "{reason}");

    configure(scene.root(), "[hooks]\npolicy = \"warn\"\n");
    let warned = scene
        .hook("claude-code", "PreToolUse", CLAIMED_FILE, "claude-1")
        .await
        .answer();
    let output = &warned["hookSpecificOutput"];
    assert_eq!(output["hookEventName"], "PreToolUse");
    assert!(output.get("permissionDecision").is_none(), "{warned:#}");
    names_the_codex_session(output["additionalContext"].as_str().unwrap(), &scene);

    configure(scene.root(), "[hooks]\npolicy = \"ask\"\n");
    let asked = scene
        .hook("claude-code", "PreToolUse", CLAIMED_FILE, "claude-1")
        .await
        .answer();
    let output = &asked["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "ask", "{asked:#}");
    names_the_codex_session(output["permissionDecisionReason"].as_str().unwrap(), &scene);
    names_the_codex_session(output["additionalContext"].as_str().unwrap(), &scene);

    configure(scene.root(), "[hooks]\npolicy = \"deny\"\n");
    let refused = scene
        .hook("claude-code", "PreToolUse", CLAIMED_FILE, "claude-1")
        .await
        .answer();
    let output = &refused["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny", "{refused:#}");
    let reason = output["permissionDecisionReason"].as_str().unwrap();
    names_the_codex_session(reason, &scene);
    assert!(reason.contains("policy = \"deny\""), "{reason}");

    scene
        .hook("claude-code", "PreToolUse", FREE_FILE, "claude-1")
        .await
        .assert_silent("an edit nobody else claims, under `deny`");
}

/// 1b. A claim made through a symbolic link guards what the link leads to: the Codex session
///     in `beta` claims `notes`, a link there to `docs`, and an edit of `docs/guide.md` in
///     the primary checkout is refused naming it, as the listing's overlaps name it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_through_a_link_guards_the_files_it_leads_to() {
    let scene = Scene::new(None).await;
    std::fs::create_dir_all(scene.beta.join("docs")).unwrap();
    std::os::unix::fs::symlink("docs", scene.beta.join("notes")).unwrap();
    scene
        .codex
        .answer(
            "majordomus_announce",
            json!({"intent": "rewrite the guide", "scope": ["notes"], "claim": "guide"}),
        )
        .await;

    let stopped = scene
        .hook("claude-code", "PreToolUse", FREE_FILE, "claude-linked")
        .await
        .answer();
    let output = &stopped["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny", "{stopped:#}");
    let reason = output["permissionDecisionReason"].as_str().unwrap();
    for part in ["\"rewrite the guide\"", "\"notes\"", "\"docs/guide.md\""] {
        assert!(reason.contains(part), "{part} is named in: {reason}");
    }
    assert!(
        !reason.contains(OTHER_INTENT),
        "only the linked claim: {reason}"
    );

    scene
        .hook("claude-code", "PreToolUse", "README.md", "claude-linked")
        .await
        .assert_silent("a file the link does not lead to");
}

/// 1. Codex: context without a decision for `warn` and `ask` (Codex would fail a hook that
///    answered `allow` or `ask`), `deny` refused; an edit elsewhere gets nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_is_warned_or_refused_and_never_answered_allow_or_ask() {
    let scene = Scene::new(None).await;
    for policy in ["warn", "ask", "deny"] {
        configure(scene.root(), &format!("[hooks]\npolicy = \"{policy}\"\n"));
        let answer = scene
            .hook("codex", "PreToolUse", CLAIMED_FILE, "codex-1")
            .await
            .answer();
        let output = &answer["hookSpecificOutput"];
        assert_eq!(output["hookEventName"], "PreToolUse", "{answer:#}");
        let decision = output.get("permissionDecision").and_then(Value::as_str);
        match policy {
            "deny" => {
                assert_eq!(decision, Some("deny"), "{answer:#}");
                names_the_codex_session(
                    output["permissionDecisionReason"].as_str().unwrap(),
                    &scene,
                );
            }
            _ => {
                assert_eq!(decision, None, "{policy}: {answer:#}");
                let context = output["additionalContext"].as_str().unwrap();
                names_the_codex_session(context, &scene);
                assert_eq!(
                    policy == "ask",
                    context.contains("to the person to decide"),
                    "{context}"
                );
            }
        }
        scene
            .hook("codex", "PreToolUse", FREE_FILE, "codex-1")
            .await
            .assert_silent(&format!("a patch of a free file under `{policy}`"));
    }
}

/// 1. Gemini CLI: by default a live session's claim is refused (a hook cannot tell a
///    headless run, where `ask` waits forever); under `warn` the person is shown the warning
///    before the edit and the model reads it after; `ask`, with nobody to ask, refuses
///    saying so; `deny` is `decision: "deny"` with a reason; elsewhere, nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_cli_is_shown_or_refused_as_the_repository_says() {
    let scene = Scene::new(None).await;
    let stopped = scene
        .hook("gemini-cli", "BeforeTool", CLAIMED_FILE, "gemini-1")
        .await
        .answer();
    assert_eq!(stopped["decision"], "deny", "{stopped:#}");
    names_the_codex_session(stopped["reason"].as_str().unwrap(), &scene);

    configure(scene.root(), "[hooks]\npolicy = \"warn\"\n");
    let shown = scene
        .hook("gemini-cli", "BeforeTool", CLAIMED_FILE, "gemini-1")
        .await
        .answer();
    assert!(shown.get("decision").is_none(), "{shown:#}");
    names_the_codex_session(shown["systemMessage"].as_str().unwrap(), &scene);
    let after = scene
        .hook("gemini-cli", "AfterTool", CLAIMED_FILE, "gemini-1")
        .await
        .answer();
    assert_eq!(after["hookSpecificOutput"]["hookEventName"], "AfterTool");
    names_the_codex_session(
        after["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap(),
        &scene,
    );

    configure(scene.root(), "[hooks]\npolicy = \"ask\"\n");
    let asked = scene
        .hook("gemini-cli", "BeforeTool", CLAIMED_FILE, "gemini-1")
        .await
        .answer();
    assert_eq!(asked["decision"], "deny", "{asked:#}");
    let reason = asked["reason"].as_str().unwrap();
    names_the_codex_session(reason, &scene);
    assert!(reason.contains("no person to ask"), "{reason}");

    configure(scene.root(), "[hooks]\npolicy = \"deny\"\n");
    let refused = scene
        .hook("gemini-cli", "BeforeTool", CLAIMED_FILE, "gemini-1")
        .await
        .answer();
    assert_eq!(refused["decision"], "deny", "{refused:#}");
    names_the_codex_session(refused["reason"].as_str().unwrap(), &scene);

    scene
        .hook("gemini-cli", "BeforeTool", FREE_FILE, "gemini-1")
        .await
        .assert_silent("an edit nobody else claims, under `deny`");
}

/// A server that answers every request `500`, counting them.
async fn failing_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 64 * 1024];
                let _ = stream.read(&mut buffer).await;
                counter.fetch_add(1, Ordering::SeqCst);
                let body = "{\"error\":{\"kind\":\"internal\",\"message\":\"broken\"}}";
                let response = format!(
                    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    (url, asked)
}

/// 2. Fail open: with no server, a frozen server, or a server answering 500, the hook exits
///    0 with no output, where a moment before (or after) it warned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_working_server_a_hook_says_nothing_and_exits_0() {
    let mut scene = Scene::new(Some("[hooks]\npolicy = \"deny\"\nbudget_ms = 300\n")).await;
    let refuse = |hook: &Hook| hook.answer()["hookSpecificOutput"]["permissionDecision"] == "deny";
    let before = scene
        .hook("claude-code", "PreToolUse", CLAIMED_FILE, "claude-1")
        .await;
    assert!(refuse(&before), "{}", before.stdout);

    // The sibling that holds the claim is frozen: once what the primary's server keeps of its
    // board is older than the probe timeout, the guard cannot read that board in time.
    scene.beta_server.freeze().await;
    let frozen = eventually("the guard to give up on the frozen board", || async {
        let hook = scene
            .hook("claude-code", "PreToolUse", CLAIMED_FILE, "claude-1")
            .await;
        match hook.stdout.is_empty() {
            true => Ok(hook),
            false => Err(hook.stdout),
        }
    })
    .await;
    frozen.assert_silent("the board with the claim frozen");
    scene.beta_server.thaw();
    let thawed = scene
        .hook("claude-code", "PreToolUse", CLAIMED_FILE, "claude-1")
        .await;
    assert!(refuse(&thawed), "{}", thawed.stdout);

    // The checkout's own server frozen.
    scene.primary.freeze().await;
    scene
        .hook("claude-code", "PreToolUse", CLAIMED_FILE, "claude-1")
        .await
        .assert_silent("the checkout's own server frozen");

    // No server at all.
    scene.primary.kill9().await;
    std::fs::remove_file(lease_path(scene.root())).expect("the dead server's lease goes");
    scene
        .hook("claude-code", "PreToolUse", CLAIMED_FILE, "claude-1")
        .await
        .assert_silent("no server");

    // A server that answers 500 to everything, named by the checkout's lease.
    let (url, asked) = failing_server().await;
    let lease = json!({
        "schema": "majordomus-lease/v1",
        "pid": std::process::id(),
        "process_start": null,
        "token": "0".repeat(64),
        "root": display(scene.root()),
        "url": url,
        "started_at": "2026-11-30T10:00:00Z",
        "executable": {"path": "/nonexistent", "mtime": "", "size": 0},
        "version": "0.1.0"
    });
    std::fs::write(lease_path(scene.root()), lease.to_string()).unwrap();
    for client in ["claude-code", "codex"] {
        scene
            .hook(client, "PreToolUse", CLAIMED_FILE, "s-500")
            .await
            .assert_silent(&format!("{client} against a server answering 500"));
    }
    scene
        .hook("gemini-cli", "BeforeTool", CLAIMED_FILE, "s-500")
        .await
        .assert_silent("gemini-cli against a server answering 500");
    assert!(
        asked.load(std::sync::atomic::Ordering::SeqCst) >= 3,
        "the hooks did ask the failing server"
    );
}

/// 2b. A frozen server is waited on once: the hook that finds it silent remembers it beside
///     the lease, and the next hooks fail open at once rather than each waiting out the budget
///     (500 ms by default, so ten hooks that each waited would take five seconds).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_costs_one_budget_not_one_per_hook() {
    let mut scene = Scene::new(None).await;
    let input = payload(
        "claude-code",
        "PreToolUse",
        scene.root(),
        CLAIMED_FILE,
        "claude-1",
    );
    let warned = hook(&scene.repo, "claude-code", "PreToolUse", &input).await;
    assert!(
        !warned.stdout.is_empty(),
        "the claim is found while the server answers"
    );
    let memory = lease_path(scene.root())
        .parent()
        .unwrap()
        .join("hooks-unanswered.json");
    assert!(!memory.exists(), "an answering server leaves no record");

    scene.primary.freeze().await;
    let started = std::time::Instant::now();
    for _ in 0..10 {
        hook(&scene.repo, "claude-code", "PreToolUse", &input)
            .await
            .assert_silent("the checkout's server frozen");
    }
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_millis(2500),
        "ten hooks against a frozen server took {took:?}"
    );
    assert!(
        memory.exists(),
        "the silence is remembered beside the lease"
    );
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&memory).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    scene.primary.thaw();
}

/// The peers of the primary checkout's board whose client is `client`.
fn peers_of<'a>(listing: &'a Value, client: &str) -> Vec<&'a Value> {
    listing["peers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|peer| {
            peer["client"]["name"] == client && peer["checkout"]["this_checkout"] == true
        })
        .collect()
}

/// 3. An edit becomes the session's `edits` claim, and another agent's announce of `src`
///    names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_lands_on_the_board_and_an_announce_meets_it() {
    let scene = Scene::new(None).await;
    scene
        .hook("claude-code", "PostToolUse", "src/lexer.rs", "claude-edits")
        .await
        .assert_silent("Claude Code was told before the edit");
    let listing = scene.peers().await;
    let editors = peers_of(&listing, "claude-code");
    assert_eq!(editors.len(), 1, "{listing:#}");
    let edits = &editors[0]["claims"][0];
    assert_eq!(edits["name"], "edits", "{listing:#}");
    assert_eq!(edits["scope"], json!(["src/lexer.rs"]));

    // A second edit goes first; the first stays.
    scene
        .hook("claude-code", "PostToolUse", "src/token.rs", "claude-edits")
        .await
        .assert_silent("a second edit");
    let listing = scene.peers().await;
    assert_eq!(
        peers_of(&listing, "claude-code")[0]["claims"][0]["scope"],
        json!(["src/token.rs", "src/lexer.rs"])
    );

    let other = McpClient::http(&scene.primary_lease, "gemini-cli", "0.61.0").await;
    let announced = other
        .answer(
            "majordomus_announce",
            json!({"intent": "tidy the sources", "scope": ["src"]}),
        )
        .await;
    // The beta worktree's agent claims `src/parser`, and an announce sees every worktree.
    let overlaps: Vec<&Value> = announced["overlaps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|overlap| overlap["checkout"]["this_checkout"] == true)
        .collect();
    assert_eq!(overlaps.len(), 1, "{announced:#}");
    assert!(
        announced["overlaps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|overlap| overlap["checkout"]["branch"] == "beta"),
        "{announced:#}"
    );
    assert_eq!(overlaps[0]["peer"], editors[0]["id"]);
    assert_eq!(overlaps[0]["intent"], "files this session edited");
    let theirs: Vec<&str> = overlaps[0]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| pair["theirs"].as_str().unwrap())
        .collect();
    assert_eq!(theirs, ["src/token.rs", "src/lexer.rs"]);
    other.close().await;
}

/// 4. `majordomus mcp` started with `CLAUDE_CODE_SESSION_ID=X` and the hooks of session `X`
///    are one peer whose episode `X` opened by itself; a hook session that no MCP
///    connection named is a peer of its own until its hooks go quiet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_and_the_mcp_connection_of_one_session_are_one_peer() {
    let repo = TempRepo::new();
    configure(repo.root(), "[hooks]\nsession_idle_secs = 1\n");
    let session = "9d4b2c1e-5f6a-4b7c-8d9e-0a1b2c3d4e5f";
    let mut command = majordomus_command(["mcp", "--repo"]);
    command
        .arg(repo.root())
        .env("CLAUDE_CODE_SESSION_ID", session);
    let client = McpClient::stdio_command(&repo, command, "claude-code", "2.1.332").await;
    let lease = wait_ready(repo.root()).await;

    let edit = payload(
        "claude-code",
        "PostToolUse",
        repo.root(),
        "src/lexer.rs",
        session,
    );
    hook(&repo, "claude-code", "PostToolUse", &edit)
        .await
        .assert_silent("an edit");
    let listing = client.answer("majordomus_peers", json!({})).await;
    let peers = listing["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 1, "one worker, one peer: {listing:#}");
    assert_eq!(
        peers[0]["id"], listing["caller"],
        "the MCP connection's peer"
    );
    assert_eq!(peers[0]["transport"], "stdio");
    assert_eq!(peers[0]["claims"][0]["name"], "edits");
    assert_eq!(peers[0]["claims"][0]["scope"], json!(["src/lexer.rs"]));
    let episodes = client.answer("majordomus_episodes", json!({})).await;
    assert_eq!(
        episodes["mine"]["external_id"], session,
        "the episode attached itself: {episodes:#}"
    );
    assert_eq!(episodes["mine"]["state"], "open");

    // A Gemini CLI session that no MCP connection named.
    let lone = payload(
        "gemini-cli",
        "AfterTool",
        repo.root(),
        "docs/guide.md",
        "gemini-alone",
    );
    hook(&repo, "gemini-cli", "AfterTool", &lone)
        .await
        .assert_silent("an edit with nobody else's claim on it");
    let listing = rest_get(&lease, "/api/v1/peers").await;
    let lone_peer = peers_of(&listing, "gemini-cli");
    assert_eq!(lone_peer.len(), 1, "{listing:#}");
    assert!(lone_peer[0]["attached"].as_bool().unwrap());
    assert_eq!(lone_peer[0]["claims"][0]["scope"], json!(["docs/guide.md"]));
    let lone_id = lone_peer[0]["id"].clone();
    let episodes = rest_get(&lease, "/api/v1/episodes").await;
    assert!(
        episodes["episodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["external_id"] == "gemini-alone" && e["peer"] == lone_id),
        "{episodes:#}"
    );

    // Quiet for longer than `session_idle_secs`: it leaves, and its `edits` claim with it
    // (what it edited shows as the worktree's changes); the MCP connection's peer stays.
    let departed = eventually("the quiet hook session to leave the board", || async {
        let listing = rest_get(&lease, "/api/v1/peers").await;
        match peers_of(&listing, "gemini-cli").first() {
            Some(lone) => Err(format!("still listed: {lone}")),
            None => Ok(listing),
        }
    })
    .await;
    assert_eq!(peers_of(&departed, "claude-code")[0]["attached"], true);
    assert_eq!(departed["count"], 1, "{departed:#}");
    client.close().await;
}

/// A `majordomus mcp` for `repo` that is told no session id, as Gemini CLI starts it.
fn mcp_without_a_session_id(repo: &TempRepo) -> tokio::process::Command {
    let mut command = majordomus_command(["mcp", "--repo"]);
    command
        .arg(repo.root())
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .env_remove("GEMINI_SESSION_ID");
    command
}

/// The attached peers of a listing.
fn attached(listing: &Value) -> Vec<&Value> {
    listing["peers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|peer| peer["attached"] == true)
        .collect()
}

/// 4b. Where no session id reaches the MCP server, the client process joins the two doors:
///     `majordomus mcp` names its parent, a hook its ancestors (here both run under this
///     test, which plays the client). One peer from the first hook on, whichever door came
///     first; its own announce followed by its own edit is not refused under `deny`; the
///     session's end takes its `edits` claim off the board and leaves its announced claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_shared_session_id_the_client_process_makes_one_peer() {
    let repo = TempRepo::new();
    configure(repo.root(), "[hooks]\npolicy = \"deny\"\n");
    let client = McpClient::stdio_command(
        &repo,
        mcp_without_a_session_id(&repo),
        "gemini-cli-mcp-client",
        "0.61.0",
    )
    .await;
    let lease = wait_ready(repo.root()).await;
    let run = |event: &'static str, file: &'static str, session: &'static str| {
        let input = payload("gemini-cli", event, repo.root(), file, session);
        let repo = &repo;
        async move { hook(repo, "gemini-cli", event, &input).await }
    };

    // The MCP connection first, then the hooks.
    let started = run("SessionStart", FREE_FILE, "gemini-one").await;
    started.assert_silent("nobody else is here");
    let listing = client.answer("majordomus_peers", json!({})).await;
    assert_eq!(
        attached(&listing).len(),
        1,
        "one session, one peer: {listing:#}"
    );
    let me = listing["caller"].clone();
    client
        .answer(
            "majordomus_announce",
            json!({"intent": "tidy the lexer", "scope": ["src/lexer.rs"]}),
        )
        .await;
    run("BeforeTool", "src/lexer.rs", "gemini-one")
        .await
        .assert_silent("its own claim refuses nothing and is not mentioned");
    run("AfterTool", "src/lexer.rs", "gemini-one")
        .await
        .assert_silent("its own claim is no other session's");
    let listing = rest_get(&lease, "/api/v1/peers").await;
    let peers = attached(&listing);
    assert_eq!(peers.len(), 1, "{listing:#}");
    assert_eq!(peers[0]["id"], me, "the hooks speak through the MCP peer");
    let names: Vec<&Value> = peers[0]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|claim| &claim["name"])
        .collect();
    assert!(names.contains(&&json!("edits")), "{listing:#}");

    // The hooks first, then the MCP connection (a second client process would do the
    // same; here a second session of the same client, whose connection opens later).
    run("AfterTool", "docs/notes.md", "gemini-two")
        .await
        .assert_silent("an edit of a free file");
    let listing = rest_get(&lease, "/api/v1/peers").await;
    assert_eq!(
        attached(&listing).len(),
        2,
        "the first session's connection speaks for it alone: {listing:#}"
    );
    let second = McpClient::stdio_command(
        &repo,
        mcp_without_a_session_id(&repo),
        "gemini-cli-mcp-client",
        "0.61.0",
    )
    .await;
    let listing = second.answer("majordomus_peers", json!({})).await;
    assert_eq!(attached(&listing).len(), 2, "{listing:#}");
    let joined = attached(&listing)
        .into_iter()
        .find(|peer| peer["id"] == listing["caller"])
        .cloned()
        .expect("the second connection is listed");
    assert_eq!(
        joined["claims"][0]["scope"],
        json!(["docs/notes.md"]),
        "the connection took over the hooks' session: {listing:#}"
    );

    // The first session ends: its `edits` claim goes, its announce stays.
    run("SessionEnd", FREE_FILE, "gemini-one")
        .await
        .assert_silent("nothing is answered to a session's end");
    let listing = rest_get(&lease, "/api/v1/peers").await;
    let mine = listing["peers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|peer| peer["id"] == me)
        .expect("the first session is listed");
    let claims: Vec<&Value> = mine["claims"].as_array().unwrap().iter().collect();
    assert_eq!(claims.len(), 1, "{listing:#}");
    assert_eq!(claims[0]["intent"], "tidy the lexer");
    second.close().await;
    client.close().await;
}

/// 4d. Cursor names its conversation `conversation_id` in its hooks and nothing reaches its
///     MCP server: its recorded `afterFileEdit` payload joins the MCP connection of the same
///     client process, and a second conversation's does not take the first one's peer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursor_conversations_join_their_mcp_connection_by_the_client_process() {
    let repo = TempRepo::new();
    let client = McpClient::stdio_command(
        &repo,
        mcp_without_a_session_id(&repo),
        "cursor-vscode",
        "1.0.0",
    )
    .await;
    let lease = wait_ready(repo.root()).await;
    let edit = payload(
        "cursor",
        "afterFileEdit",
        repo.root(),
        "src/lexer.rs",
        "cursor-conversation-1",
    );
    hook(&repo, "cursor", "afterFileEdit", &edit)
        .await
        .assert_silent("Cursor reads no answer after an edit");
    let listing = client.answer("majordomus_peers", json!({})).await;
    let peers = attached(&listing);
    assert_eq!(peers.len(), 1, "one conversation, one peer: {listing:#}");
    assert_eq!(peers[0]["id"], listing["caller"]);
    assert_eq!(peers[0]["claims"][0]["name"], "edits");
    assert_eq!(peers[0]["claims"][0]["scope"], json!(["src/lexer.rs"]));

    let other = payload(
        "cursor",
        "afterFileEdit",
        repo.root(),
        "docs/guide.md",
        "cursor-conversation-2",
    );
    hook(&repo, "cursor", "afterFileEdit", &other)
        .await
        .assert_silent("a second conversation's edit");
    let listing = rest_get(&lease, "/api/v1/peers").await;
    let peers = attached(&listing);
    assert_eq!(
        peers.len(),
        2,
        "the connection speaks for its first conversation only: {listing:#}"
    );
    client.close().await;
}

/// 4e. A file whose edit was undone (`git checkout`) leaves the session's `edits` claim once
///     the claim has settled; a file still changed stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undone_edit_leaves_the_edits_claim() {
    let repo = TempRepo::new();
    let root = repo.root();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lexer.rs"), "fn lex() {}\n").unwrap();
    git(root, &["add", "src/lexer.rs"]);
    git(root, &["commit", "-q", "-m", "lexer"]);
    let client = McpClient::stdio_command(
        &repo,
        mcp_without_a_session_id(&repo),
        "gemini-cli-mcp-client",
        "0.61.0",
    )
    .await;
    let lease = wait_ready(root).await;
    std::fs::write(root.join("src/lexer.rs"), "fn lex(input: &str) {}\n").unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(root.join("docs/guide.md"), "# guide\n").unwrap();
    for file in ["src/lexer.rs", "docs/guide.md"] {
        let edit = payload("gemini-cli", "AfterTool", root, file, "undoing");
        hook(&repo, "gemini-cli", "AfterTool", &edit)
            .await
            .assert_silent("an edit nobody else claims");
    }
    let edits_scope = |listing: &Value| -> Value {
        attached(listing)
            .first()
            .and_then(|peer| {
                peer["claims"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|claim| claim["name"] == "edits")
                    .map(|claim| claim["scope"].clone())
            })
            .unwrap_or(Value::Null)
    };
    let listing = rest_get(&lease, "/api/v1/peers").await;
    assert_eq!(
        edits_scope(&listing),
        json!(["docs/guide.md", "src/lexer.rs"]),
        "{listing:#}"
    );

    git(root, &["checkout", "--", "src/lexer.rs"]);
    // The claim settles 10 s after its latest edit and is compared every 10 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    loop {
        let listing = rest_get(&lease, "/api/v1/peers").await;
        if edits_scope(&listing) == json!(["docs/guide.md"]) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the undone file is still claimed: {listing:#}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    client.close().await;
}

/// 4c. A client process that ends takes its peer off the board, though its `majordomus mcp`
///     lives on: what it edited leaves with it (the worktree's changes show the files).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ends_when_its_client_process_ends() {
    let repo = TempRepo::new();
    // The client: a shell that runs `majordomus mcp` and stays its parent until killed.
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg("\"$0\" mcp --repo \"$1\"; exit 0")
        .arg(mcp_without_a_session_id(&repo).as_std().get_program())
        .arg(repo.root())
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .env_remove("GEMINI_SESSION_ID")
        .env("RUST_LOG", "info")
        .kill_on_drop(true);
    let client = McpClient::stdio_command(&repo, command, "gemini-cli-mcp-client", "0.61.0").await;
    let shell = client.pid.expect("the client runs as a process");
    let lease = wait_ready(repo.root()).await;
    client
        .answer(
            "majordomus_announce",
            json!({"intent": "tidy the lexer", "scope": ["src/lexer.rs"]}),
        )
        .await;
    let listing = rest_get(&lease, "/api/v1/peers").await;
    assert_eq!(attached(&listing).len(), 1, "{listing:#}");

    // SAFETY: a signal to the shell this test started.
    assert_eq!(unsafe { libc::kill(shell as i32, libc::SIGKILL) }, 0);
    eventually("the ended client's peer to leave the board", || async {
        let listing = rest_get(&lease, "/api/v1/peers").await;
        if attached(&listing).is_empty() {
            Ok(listing)
        } else {
            Err(format!("still attached: {listing}"))
        }
    })
    .await;
    client.close().await;
}

/// 5. The session-start summary, then prompts that say only what is new, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_hears_a_summary_then_each_new_overlap_once() {
    let scene = Scene::new(None).await;
    let session = "claude-news";
    let started = scene
        .hook("claude-code", "SessionStart", FREE_FILE, session)
        .await
        .answer();
    let summary = started["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert_eq!(
        started["hookSpecificOutput"]["hookEventName"],
        "SessionStart"
    );
    assert!(summary.contains("1 other session is attached"), "{summary}");
    for part in [
        "\"codex\"",
        &format!("\"{OTHER_INTENT}\""),
        "\"src/parser\"",
    ] {
        assert!(summary.contains(part), "{part} in {summary}");
    }

    scene
        .hook("claude-code", "UserPromptSubmit", FREE_FILE, session)
        .await
        .assert_silent("the first prompt, nothing new");
    scene
        .hook("claude-code", "PostToolUse", "src/lexer.rs", session)
        .await
        .assert_silent("an edit outside every claim");
    scene
        .hook("claude-code", "UserPromptSubmit", FREE_FILE, session)
        .await
        .assert_silent("a prompt after an edit that meets nobody");

    scene
        .codex
        .answer(
            "majordomus_announce",
            json!({"intent": "split the lexer", "scope": ["src/lexer.rs"], "claim": "lexer"}),
        )
        .await;
    let told = scene
        .hook("claude-code", "UserPromptSubmit", FREE_FILE, session)
        .await
        .answer();
    let news = told["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert_eq!(
        told["hookSpecificOutput"]["hookEventName"],
        "UserPromptSubmit"
    );
    for part in [
        "\"codex\"",
        "\"split the lexer\"",
        "which meets your \"src/lexer.rs\"",
    ] {
        assert!(news.contains(part), "{part} in {news}");
    }
    assert!(!news.contains(OTHER_INTENT), "only what is new: {news}");
    scene
        .hook("claude-code", "UserPromptSubmit", FREE_FILE, session)
        .await
        .assert_silent("the same overlap is never told twice");

    // Another client's prompt hook, for a session of its own, hears it once too.
    let gemini = scene
        .hook("gemini-cli", "BeforeAgent", "src/lexer.rs", "gemini-news")
        .await;
    gemini.assert_silent("a session with no claim has nothing new");
}

/// 1. A Codex patch touching more files than one request to the server holds is checked in
///    as many requests as it takes: a claimed file at its very end is refused under `deny`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_patch_of_three_hundred_files_is_checked_to_its_last_file() {
    let scene = Scene::new(Some("[hooks]\npolicy = \"deny\"\n")).await;
    let mut patch = String::from("*** Begin Patch\n");
    for n in 0..299 {
        patch += &format!("*** Add File: docs/generated/page{n}.md\n+text\n");
    }
    patch += &format!("*** Update File: {CLAIMED_FILE}\n@@\n-old\n+new\n*** End Patch\n");
    let mut input: Value = serde_json::from_str(&payload(
        "codex",
        "PreToolUse",
        scene.root(),
        FREE_FILE,
        "codex-wide",
    ))
    .unwrap();
    input["tool_input"]["command"] = json!(patch);
    let answer = hook(&scene.repo, "codex", "PreToolUse", &input.to_string())
        .await
        .answer();
    let output = &answer["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny", "{answer:#}");
    names_the_codex_session(output["permissionDecisionReason"].as_str().unwrap(), &scene);
}

/// 4. A `majordomus mcp` whose own client leaves ends within 5 s, though a session's hooks
///    put a peer of their own on its board: hooks start no server, and keep none alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_client_left_ends_though_a_session_of_hooks_is_on_its_board() {
    use tokio::io::AsyncBufReadExt as _;
    let repo = TempRepo::new();
    let (mut child, mut stdin, mut stdout) = mcp_on_pipes(&repo, "mcp-own-client");
    // The connection names a conversation of its own, so the hooks of another one (run by
    // this same test process) do not join it.
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "claude-code", "version": "2.1.0"},
            "_meta": {"majordomus/client-session": "the-clients-own"}
        }
    });
    stdin
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(BOUND, stdout.read_line(&mut answer))
        .await
        .expect("initialize is answered in time")
        .unwrap();
    assert!(answer.contains(r#""id":1"#), "{answer}");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    let lease = wait_ready(repo.root()).await;
    assert_eq!(
        Some(lease.pid),
        child.id(),
        "the client's own process serves"
    );

    let edit = payload(
        "codex",
        "PostToolUse",
        repo.root(),
        "src/lexer.rs",
        "hooks-only",
    );
    hook(&repo, "codex", "PostToolUse", &edit)
        .await
        .assert_silent("an edit nobody else claims");
    let listing = rest_get(&lease, "/api/v1/peers").await;
    assert_eq!(
        listing["peers"].as_array().map(Vec::len),
        Some(2),
        "the client and the peer of the hooks: {listing:#}"
    );

    // The client goes the way clients go: its end of the pipe closes.
    drop(stdin);
    let exited = tokio::time::timeout(std::time::Duration::from_secs(5), child.wait())
        .await
        .expect("the server ends within 5 s of its last client")
        .unwrap();
    assert!(exited.success(), "{exited}");
    assert!(
        read_lease(repo.root()).is_none(),
        "the lease was released on the way out"
    );
}

/// 4. Codex names its conversation only in each `tools/call`'s turn metadata: a Codex
///    connection through a bridge learns it there, and its hooks land on that one peer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_turn_metadata_makes_its_connection_and_hooks_one_peer() {
    use rmcp::model::{CallToolRequestParams, RequestMetaObject};
    let repo = TempRepo::new();
    let serving = McpClient::stdio(&repo, repo.root(), "claude-code", "2.1.332").await;
    let codex = McpClient::stdio(&repo, repo.root(), "codex-mcp-client", "0.98.0").await;
    let lease = wait_ready(repo.root()).await;
    assert_ne!(
        codex.pid,
        Some(lease.pid),
        "the Codex connection is bridged"
    );

    let thread = "0199f3a1-15e4-77d3-93ef-f954c7978c66";
    let mut meta = RequestMetaObject::new();
    meta.0.0.insert(
        "x-codex-turn-metadata".into(),
        json!({"session_id": thread, "turn_id": "0199f3a1-7c2d", "model": "gpt-5-codex"}),
    );
    let mut request = CallToolRequestParams::new("majordomus_peers");
    request.meta = Some(meta);
    let listed = tokio::time::timeout(BOUND, codex.call_tool(request))
        .await
        .expect("the call answers in time")
        .expect("the call answers");
    let caller = listed.structured_content.expect("an answer")["caller"].clone();

    let edit = payload("codex", "PostToolUse", repo.root(), "src/lexer.rs", thread);
    hook(&repo, "codex", "PostToolUse", &edit)
        .await
        .assert_silent("an edit nobody else claims");
    let listing = rest_get(&lease, "/api/v1/peers").await;
    let peers = listing["peers"].as_array().unwrap();
    assert_eq!(
        peers.len(),
        2,
        "the two connections, no peer of the hooks: {listing:#}"
    );
    let codex_peer = peers.iter().find(|peer| peer["id"] == caller).unwrap();
    assert_eq!(codex_peer["client"]["name"], "codex-mcp-client");
    assert_eq!(codex_peer["claims"][0]["name"], "edits");
    assert_eq!(codex_peer["claims"][0]["scope"], json!(["src/lexer.rs"]));
    let episodes = rest_get(&lease, "/api/v1/episodes").await;
    let episode = episodes["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["external_id"] == thread)
        .unwrap_or_else(|| panic!("the thread's episode: {episodes:#}"));
    assert_eq!(episode["peer"], caller);
    assert_eq!(episode["state"], "open");
    codex.close().await;
    serving.close().await;
}

/// 4. Claude Code 2.1 speaks the session-less revision of MCP to its stdio servers: no
///    `initialize`, its name in every request's `_meta`. Its `majordomus mcp` still joins the
///    board as that client and, named by `CLAUDE_CODE_SESSION_ID`, holds the session's
///    episode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_less_client_joins_as_itself_with_its_session() {
    use tokio::io::{AsyncBufReadExt as _, BufReader};
    let repo = TempRepo::new();
    let session = "728be965-20aa-40db-a112-cb4efa1377ed";
    let (_, log) = repo.log_file("raw-mcp");
    let mut command = majordomus_command(["mcp", "--repo"]);
    command
        .arg(repo.root())
        .env("CLAUDE_CODE_SESSION_ID", session)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log);
    let mut child = command.spawn().expect("majordomus mcp starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "title": "Claude Code", "version": "2.1.332"},
        "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": true}}
    });
    let mut ask = async |id: u64, method: &str, params: Value| -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .unwrap();
        let line = tokio::time::timeout(BOUND, lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    };
    let tools = ask(1, "tools/list", json!({"_meta": meta})).await;
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "majordomus_peers")),
        "{tools:#}"
    );
    let listed = ask(
        2,
        "tools/call",
        json!({"name": "majordomus_peers", "arguments": {}, "_meta": meta}),
    )
    .await;
    let board = &listed["result"]["structuredContent"];
    assert_eq!(
        board["peers"][0]["client"]["name"], "claude-code",
        "{listed:#}"
    );
    assert_eq!(board["peers"][0]["id"], board["caller"]);
    let episodes = ask(
        3,
        "tools/call",
        json!({"name": "majordomus_episodes", "arguments": {}, "_meta": meta}),
    )
    .await;
    assert_eq!(
        episodes["result"]["structuredContent"]["mine"]["external_id"], session,
        "{episodes:#}"
    );
    drop(stdin);
    let _ = tokio::time::timeout(BOUND, child.wait()).await;
}

/// 2. Whatever a hook is fed — not JSON, an unknown client or event, an input over the
///    limit, a file outside the checkout — it exits 0 and says nothing, even with a server
///    that would have warned about a claimed file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_fed_nonsense_exits_0_and_says_nothing() {
    let scene = Scene::new(Some("[hooks]\npolicy = \"deny\"\n")).await;
    let claimed = payload("claude-code", "PreToolUse", scene.root(), CLAIMED_FILE, "s");
    let refused = hook(&scene.repo, "claude-code", "PreToolUse", &claimed).await;
    assert_eq!(
        refused.answer()["hookSpecificOutput"]["permissionDecision"],
        "deny",
        "the same edit is refused when the input is right"
    );
    let outside = payload(
        "claude-code",
        "PreToolUse",
        scene.root(),
        "../outside/lexer.rs",
        "s",
    );
    let mut oversized = claimed.clone();
    oversized.insert_str(
        1,
        &format!("\"padding\": \"{}\", ", "x".repeat(9 * 1024 * 1024)),
    );
    for (what, client, event, input) in [
        ("not JSON", "claude-code", "PreToolUse", "{\"session_id\": "),
        ("an unknown client", "vim", "PreToolUse", claimed.as_str()),
        (
            "an event majordomus does not answer",
            "claude-code",
            "Stop",
            claimed.as_str(),
        ),
        (
            "a file outside the checkout",
            "claude-code",
            "PreToolUse",
            outside.as_str(),
        ),
        (
            "an input over the limit",
            "claude-code",
            "PreToolUse",
            oversized.as_str(),
        ),
    ] {
        hook(&scene.repo, client, event, input)
            .await
            .assert_silent(what);
    }
    hook(&scene.repo, "claude-code", "", &claimed)
        .await
        .assert_silent("an empty event word");
}

/// 3. A session that starts alone in its worktree, before any server serves it (Claude Code
///    runs SessionStart before it starts its MCP servers), hears who works in the other
///    worktrees: the hook reads their boards through their leases itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_starting_where_no_server_serves_hears_the_other_worktrees() {
    let repo = TempRepo::new();
    let beta = repo.add_worktree("beta");
    let (_beta_server, beta_lease) = ServeProcess::start(&repo, &beta).await;
    let codex = McpClient::http(&beta_lease, "codex", "0.171.0").await;
    codex
        .answer(
            "majordomus_announce",
            json!({"intent": OTHER_INTENT, "scope": ["src/parser"]}),
        )
        .await;
    let gemini = McpClient::http(&beta_lease, "gemini-cli", "0.61.0").await;
    gemini
        .answer(
            "majordomus_announce",
            json!({"intent": "document the lexer", "scope": ["docs"]}),
        )
        .await;
    assert!(
        !lease_path(repo.root()).exists(),
        "nobody serves the primary"
    );

    let input = payload(
        "claude-code",
        "SessionStart",
        repo.root(),
        FREE_FILE,
        "claude-alone",
    );
    let started = hook(&repo, "claude-code", "SessionStart", &input)
        .await
        .answer();
    let summary = started["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        summary.contains("2 other sessions are attached"),
        "{summary}"
    );
    for part in [
        "\"codex\"",
        "\"gemini-cli\"",
        &format!("\"{OTHER_INTENT}\""),
        "\"document the lexer\"",
        "beta",
    ] {
        assert!(summary.contains(part), "{part} in {summary}");
    }
    assert!(
        !lease_path(repo.root()).exists(),
        "the hook started no server"
    );
    codex.close().await;
    gemini.close().await;
}

/// Claude Code's `Bash` call of `command` in the conversation `session`, as its hook reads it.
fn bash_payload(root: &Path, command: &str, session: &str) -> String {
    let filled = payload("claude-code", "PreToolUse-Bash", root, "", session);
    let mut input: Value = serde_json::from_str(&filled).unwrap();
    input["tool_input"]["command"] = json!(command);
    input.to_string()
}

/// 5. A shell command the repository declares as needing a lease (`[leases.commands]`),
///    while another live session holds it: stopped before it runs under `guard`, naming the
///    holder, its worktree and the queue, with the way to wait its turn; a line under
///    `warn`, nothing under `off`. The session holding the lease itself, or nobody holding
///    it, passes; a command the repository does not declare is never asked about.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_needing_a_lease_another_session_holds_is_stopped_naming_the_holder() {
    let repo = TempRepo::new();
    let declared = "[leases.commands]\ntest-suite = [\"cargo test\", \"npm test\"]\n";
    configure(repo.root(), declared);
    let beta = repo.add_worktree("beta");
    let (_primary, _primary_lease) = ServeProcess::start(&repo, repo.root()).await;
    let (_beta_server, beta_lease) = ServeProcess::start(&repo, &beta).await;
    let codex = McpClient::http(&beta_lease, "codex", "0.98.0").await;
    let granted = codex
        .answer("majordomus_lease", json!({"name": "test-suite"}))
        .await;
    assert_eq!(granted["state"], "granted", "{granted:#}");
    // The Claude Code session's own MCP connection, which its hooks speak as, waits in line.
    let session = "5e0c8a2f-7b3d-4c1e-9a6f-2d8b4e0c1a3f";
    let mut command = majordomus_command(["mcp", "--repo"]);
    command
        .arg(repo.root())
        .env("CLAUDE_CODE_SESSION_ID", session);
    let claude = McpClient::stdio_command(&repo, command, "claude-code", "2.1.332").await;
    let queued = claude
        .answer("majordomus_lease", json!({"name": "test-suite"}))
        .await;
    assert_eq!(queued["state"], "queued", "{queued:#}");

    let run = |command: &str, session: &str| {
        let input = bash_payload(repo.root(), command, session);
        let repo = &repo;
        async move { hook(repo, "claude-code", "PreToolUse", &input).await }
    };
    let stopped = run("cd src && FOO=1 cargo test --workspace", session)
        .await
        .answer();
    let output = &stopped["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny", "{stopped:#}");
    let reason = output["permissionDecisionReason"].as_str().unwrap();
    for part in [
        "stopped this command before it ran",
        "the lease \"test-suite\" is held by \"p1 codex in beta\"",
        "waiting, in turn: \"",
        "claude-code in ",
        "(this session is number 1 in line)",
        "`majordomus_lease` for `test-suite` with `wait_secs`",
        "`majordomus lease test-suite -- cargo test --workspace`",
    ] {
        assert!(reason.contains(part), "{part} in {reason}");
    }
    run("cargo build && git status", session)
        .await
        .assert_silent("a command no lease is declared for");
    run("echo cargo test", session)
        .await
        .assert_silent("a command that only names a declared one");

    // The holder lets go: the session in line holds it, and its own command passes.
    codex
        .answer("majordomus_release", json!({"name": "test-suite"}))
        .await;
    run("npm test", session)
        .await
        .assert_silent("the command of the session holding the lease");
    let other = run("npm test", "claude-other").await.answer();
    let reason = other["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("held by \"p")
            && reason.contains("claude-code in ")
            && reason.contains("nobody waits"),
        "another session is stopped, naming the new holder: {reason}"
    );

    configure(
        repo.root(),
        &format!("{declared}[hooks]\npolicy = \"warn\"\n"),
    );
    let warned = run("npm test", "claude-other").await.answer();
    let output = &warned["hookSpecificOutput"];
    assert!(output.get("permissionDecision").is_none(), "{warned:#}");
    assert!(
        output["additionalContext"]
            .as_str()
            .unwrap()
            .contains("another session holds a lease this command needs"),
        "{warned:#}"
    );
    configure(
        repo.root(),
        &format!("{declared}[hooks]\npolicy = \"off\"\n"),
    );
    run("npm test", "claude-other")
        .await
        .assert_silent("the guard is off");

    configure(repo.root(), declared);
    claude
        .answer("majordomus_release", json!({"name": "test-suite"}))
        .await;
    run("npm test", "claude-other")
        .await
        .assert_silent("a lease nobody holds");
    codex.close().await;
    claude.close().await;
}

/// Waits until the hand-over file at `path` holds `text`.
async fn handed_over_holds(path: &Path, text: &str) {
    eventually(
        &format!("`{text}` to be written for the next server"),
        || async {
            let written = std::fs::read_to_string(path).unwrap_or_default();
            if written.contains(text) {
                Ok(())
            } else {
                Err(written)
            }
        },
    )
    .await;
}

/// 3b. An edit is kept for the next server: the hand-over file, written once changes have
///     gathered, holds the `edits` claim of a session already on the board.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_is_handed_over_to_the_next_server() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let (_serve, lease) = ServeProcess::start(&repo, &root).await;
    let other = McpClient::http(&lease, "codex", "0.98.0").await;
    other
        .answer(
            "majordomus_announce",
            json!({"intent": "write the guide", "scope": ["docs"]}),
        )
        .await;
    let guard = payload("claude-code", "PreToolUse", &root, "src/lexer.rs", "handed");
    hook(&repo, "claude-code", "PreToolUse", &guard)
        .await
        .assert_silent("a file nobody claims");
    let handed_over = PathBuf::from(git(&root, &["rev-parse", "--absolute-git-dir"]).trim())
        .join("majordomus/claims.json");
    handed_over_holds(&handed_over, "write the guide").await;
    // The session's joining is written once changes have gathered (300 ms): past that, only
    // the edit itself can have the file written again.
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;

    let edit = payload(
        "claude-code",
        "PostToolUse",
        &root,
        "src/lexer.rs",
        "handed",
    );
    hook(&repo, "claude-code", "PostToolUse", &edit)
        .await
        .assert_silent("an edit nobody else claims");
    handed_over_holds(&handed_over, "src/lexer.rs").await;
    other.close().await;
}
