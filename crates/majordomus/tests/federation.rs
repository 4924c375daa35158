//! End-to-end tests of the federation: real `majordomus serve` processes in clones of one
//! repository (each clone standing for a machine) and a real `nats-server` with JetStream,
//! started here on a free port and stopped by its pid. A machine without `nats-server` fails
//! these tests: `scripts/install-test-deps.sh` installs it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::*;
use futures::StreamExt as _;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// A NATS server of the test's own

/// `nats-server -js` on a free loopback port with its store in a directory of the test,
/// ended by its pid on drop.
struct NatsServer {
    child: Option<std::process::Child>,
    port: u16,
    store: PathBuf,
    token: Option<String>,
}

/// Where `nats-server` is: on PATH, or where Debian's package puts it.
fn nats_binary() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|dir| dir.join("nats-server"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "nats-server is not installed: run scripts/install-test-deps.sh (Debian's package)"
            )
        })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

impl NatsServer {
    /// Starts one with JetStream, its store below `repo`'s directory; with `token`, clients
    /// must present it.
    async fn start(repo: &TempRepo, token: Option<&str>) -> NatsServer {
        let mut server = NatsServer {
            child: None,
            port: free_port(),
            store: repo.base().join("nats-store"),
            token: token.map(str::to_owned),
        };
        server.run(repo).await;
        server
    }

    /// Starts (again) on the same port and store.
    async fn run(&mut self, repo: &TempRepo) {
        let (_, log) = repo.log_file("nats-server");
        let mut command = std::process::Command::new(nats_binary());
        command
            .args([
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-sd",
            ])
            .arg(&self.store)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        if let Some(token) = &self.token {
            command.args(["--auth", token]);
        }
        self.child = Some(command.spawn().expect("nats-server starts"));
        let port = self.port;
        eventually("nats-server to accept connections", || async move {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .map(drop)
                .map_err(|error| error.to_string())
        })
        .await;
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Stops it by its pid (SIGTERM) and waits until it is gone.
    async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), libc::SIGTERM);
            let pid = child.id();
            eventually(&format!("nats-server {pid} to exit"), || {
                let exited = child.try_wait().ok().flatten().is_some();
                async move {
                    if exited {
                        Ok(())
                    } else {
                        Err("still running".to_string())
                    }
                }
            })
            .await;
        }
    }

    /// A client of the test's own.
    async fn client(&self) -> async_nats::Client {
        let mut options = async_nats::ConnectOptions::new();
        if let Some(token) = &self.token {
            options = options.token(token.clone());
        }
        options
            .connect(self.url())
            .await
            .expect("the test connects to nats-server")
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Machines: clones of one repository, each with its own server

/// `git clone` of the repository beside it: another machine's copy, the same root commit.
fn clone(repo: &TempRepo, name: &str) -> PathBuf {
    git(repo.base(), &["clone", "--quiet", "repo", name]);
    repo.base().join(name).canonicalize().unwrap()
}

/// Writes a `[federation]` section into the checkout's `majordomus.toml`, and allows it as
/// the person would (a repository's federation is only a suggestion until then).
async fn federate(repo: &TempRepo, checkout: &Path, url: &str, machine: &str, extra: &str) {
    std::fs::write(
        checkout.join("majordomus.toml"),
        format!("[federation]\nurl = \"{url}\"\nmachine = \"{machine}\"\n{extra}"),
    )
    .unwrap();
    let allowed = repo.allow(checkout, "federation").await;
    assert!(allowed.contains("allowed a federation"), "{allowed}");
}

/// Starts `majordomus serve` in `checkout` and waits until it is ready.
async fn serve(repo: &TempRepo, checkout: &Path) -> (ServeProcess, LeaseFile) {
    let serve = ServeProcess::spawn(repo, checkout);
    let lease = wait_ready(checkout).await;
    assert_eq!(lease.pid, serve.pid());
    (serve, lease)
}

/// `GET /api/v1/peers?checkouts=…` of a server.
async fn peers(lease: &LeaseFile, checkouts: &str) -> Value {
    let response = http()
        .get(format!(
            "{}/api/v1/peers?checkouts={checkouts}",
            lease.url()
        ))
        .bearer_auth(&lease.token)
        .send()
        .await
        .expect("the server answers");
    assert!(response.status().is_success(), "{}", response.status());
    response.json().await.expect("a listing")
}

/// The machine a listed peer or overlap side is marked with.
fn machine(side: &Value) -> &str {
    side["checkout"]["machine"].as_str().unwrap_or("(none)")
}

/// Waits until `lease`'s `everywhere` listing satisfies `check`; answers that listing.
async fn everywhere_until(
    lease: &LeaseFile,
    what: &str,
    check: impl Fn(&Value) -> Result<(), String>,
) -> Value {
    eventually(what, || async {
        let listing = peers(lease, "everywhere").await;
        check(&listing)
            .map(|()| listing.clone())
            .map_err(|why| format!("{why}: {listing}"))
    })
    .await
}

/// Whether the listing holds a peer of `machine` claiming with `intent`.
fn lists(listing: &Value, on: &str, intent: &str) -> bool {
    listing["peers"].as_array().is_some_and(|peers| {
        peers.iter().any(|peer| {
            machine(peer) == on
                && peer["claims"]
                    .as_array()
                    .is_some_and(|claims| claims.iter().any(|claim| claim["intent"] == intent))
        })
    })
}

fn remote_machines(listing: &Value) -> Vec<String> {
    listing["boards"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|board| board["age_seconds"].is_u64())
        .map(|board| board["machine"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Runs a `majordomus` command with the test's user directories.
async fn cli(repo: &TempRepo, args: &[&str]) -> std::process::Output {
    run_cli(repo, args).await
}

// ---------------------------------------------------------------------------------------------
// The tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_machines_see_each_other_and_their_overlap() {
    let repo = TempRepo::new();
    let nats = NatsServer::start(&repo, None).await;
    let alpha = clone(&repo, "alpha");
    let beta = clone(&repo, "beta");
    federate(&repo, &alpha, &nats.url(), "alpha", "").await;
    federate(&repo, &beta, &nats.url(), "beta", "").await;
    let (_alpha_server, alpha_lease) = serve(&repo, &alpha).await;
    let (_beta_server, beta_lease) = serve(&repo, &beta).await;

    let on_alpha = McpClient::http(&alpha_lease, "claude-code", "2.1.0").await;
    let on_beta = McpClient::http(&beta_lease, "codex", "0.130.0").await;
    on_alpha
        .answer(
            "majordomus_announce",
            json!({"intent": "rewrite the parser", "scope": ["src/parser"]}),
        )
        .await;
    everywhere_until(&beta_lease, "beta to see alpha's claim", |listing| {
        lists(listing, "alpha", "rewrite the parser")
            .then_some(())
            .ok_or_else(|| "alpha's claim is not listed".into())
    })
    .await;

    let answer = on_beta
        .answer(
            "majordomus_announce",
            json!({"intent": "fix the lexer", "scope": ["src/parser/lexer.rs"]}),
        )
        .await;
    let overlaps = answer["overlaps"].as_array().unwrap();
    assert_eq!(overlaps.len(), 1, "{answer:#}");
    assert_eq!(overlaps[0]["peer"], "p1");
    assert_eq!(machine(&overlaps[0]), "alpha");
    assert_eq!(overlaps[0]["intent"], "rewrite the parser");
    assert_eq!(
        overlaps[0]["paths"],
        json!([{"yours": "src/parser/lexer.rs", "theirs": "src/parser"}])
    );

    for (lease, other) in [(&alpha_lease, "beta"), (&beta_lease, "alpha")] {
        let listing = everywhere_until(lease, "both claims and their overlap", |listing| {
            let both = lists(listing, "alpha", "rewrite the parser")
                && lists(listing, "beta", "fix the lexer");
            let one_overlap = listing["overlaps"].as_array().is_some_and(|o| o.len() == 1);
            (both && one_overlap && listing["complete"] == true)
                .then_some(())
                .ok_or_else(|| "not yet both claims, one overlap, complete".into())
        })
        .await;
        let overlap = &listing["overlaps"][0];
        let mut sides = [machine(overlap), machine(&overlap["with"])];
        sides.sort();
        assert_eq!(sides, ["alpha", "beta"], "{overlap:#}");
        assert_eq!(listing["federation"]["state"], "connected");
        assert_eq!(remote_machines(&listing), [other]);
        assert_eq!(listing["count"], 2);
    }

    // A person's view of it: the CLI asks the checkout's own server.
    let output = cli(
        &repo,
        &[
            "peers",
            "--checkouts",
            "everywhere",
            "--json",
            "--repo",
            beta.to_str().unwrap(),
        ],
    )
    .await;
    assert!(output.status.success(), "{output:?}");
    let listing: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        lists(&listing, "alpha", "rewrite the parser"),
        "{listing:#}"
    );
    let output = cli(
        &repo,
        &["serve", "status", "--repo", beta.to_str().unwrap()],
    )
    .await;
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains(&format!("federation: connected to {}", nats.url())),
        "{text}"
    );
    on_alpha.close().await;
    on_beta.close().await;
}

/// Runs Claude Code's hook `event` for the conversation `session` in `checkout`, with
/// `fields` added to its input; it answers nothing.
async fn claude_code_hook(checkout: &Path, event: &str, session: &str, fields: Value) {
    use tokio::io::AsyncWriteExt as _;
    let mut input = json!({"session_id": session, "cwd": display(checkout),
        "hook_event_name": event});
    input
        .as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    let mut command = majordomus_command(["hook", "claude-code", event]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("majordomus hook starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(BOUND, child.wait_with_output())
        .await
        .expect("the hook ends in time")
        .unwrap();
    assert!(
        output.status.success() && output.stdout.is_empty(),
        "{output:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_waiting_for_its_person_on_one_machine_is_seen_waiting_on_the_other() {
    let repo = TempRepo::new();
    let nats = NatsServer::start(&repo, None).await;
    let alpha = clone(&repo, "alpha");
    let beta = clone(&repo, "beta");
    federate(&repo, &alpha, &nats.url(), "alpha", "").await;
    federate(&repo, &beta, &nats.url(), "beta", "").await;
    let (_alpha_server, _alpha_lease) = serve(&repo, &alpha).await;
    let (_beta_server, beta_lease) = serve(&repo, &beta).await;

    claude_code_hook(
        &alpha,
        "Notification",
        "alpha-session",
        json!({"notification_type": "permission_prompt",
            "message": "Claude needs your permission to use Bash\u{1b}[2J"}),
    )
    .await;
    let waits_on_alpha = |listing: &Value| -> Option<Value> {
        listing["peers"]
            .as_array()?
            .iter()
            .find(|peer| machine(peer) == "alpha" && peer.get("waiting").is_some())
            .map(|peer| peer["waiting"].clone())
    };
    let listing = everywhere_until(&beta_lease, "beta to see alpha's session wait", |l| {
        waits_on_alpha(l)
            .map(drop)
            .ok_or_else(|| "no waiting session of alpha".into())
    })
    .await;
    let waiting = waits_on_alpha(&listing).unwrap();
    assert_eq!(waiting["reason"], "permission", "{waiting}");
    let message = waiting["message"].as_str().unwrap();
    assert!(
        message.starts_with("Claude needs your permission to use Bash")
            && !message.contains('\u{1b}'),
        "{message:?}"
    );

    claude_code_hook(
        &alpha,
        "UserPromptSubmit",
        "alpha-session",
        json!({"prompt": "go on"}),
    )
    .await;
    everywhere_until(&beta_lease, "beta to see alpha's session move on", |l| {
        waits_on_alpha(l).map_or(Ok(()), |waiting| Err(format!("still waiting: {waiting}")))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_machine_leaves_and_a_federation_outage_is_said_and_survived() {
    let repo = TempRepo::new();
    let mut nats = NatsServer::start(&repo, None).await;
    let alpha = clone(&repo, "alpha");
    let beta = clone(&repo, "beta");
    federate(&repo, &alpha, &nats.url(), "alpha", "ttl_secs = 3\n").await;
    federate(&repo, &beta, &nats.url(), "beta", "ttl_secs = 3\n").await;
    let (mut alpha_server, alpha_lease) = serve(&repo, &alpha).await;
    let (_beta_server, beta_lease) = serve(&repo, &beta).await;
    let on_alpha = McpClient::http(&alpha_lease, "claude-code", "2.1.0").await;
    on_alpha
        .answer(
            "majordomus_announce",
            json!({"intent": "port the cli", "scope": ["src/cli"]}),
        )
        .await;
    let on_beta = McpClient::http(&beta_lease, "gemini-cli", "0.20.0").await;
    on_beta
        .answer(
            "majordomus_announce",
            json!({"intent": "write docs", "scope": ["docs"]}),
        )
        .await;
    everywhere_until(&beta_lease, "beta to see alpha", |listing| {
        lists(listing, "alpha", "port the cli")
            .then_some(())
            .ok_or_else(|| "alpha is not listed".into())
    })
    .await;

    // kill -9: nothing is deleted; the board expires within its lifetime of 3 s.
    alpha_server.kill9().await;
    drop(on_alpha);
    everywhere_until(&beta_lease, "alpha's board to expire", |listing| {
        remote_machines(listing)
            .is_empty()
            .then_some(())
            .ok_or_else(|| "a remote board is still listed".into())
    })
    .await;

    let (_alpha_server, alpha_lease) = serve(&repo, &alpha).await;
    let on_alpha = McpClient::http(&alpha_lease, "claude-code", "2.1.0").await;
    on_alpha
        .answer(
            "majordomus_announce",
            json!({"intent": "port the cli", "scope": ["src/cli"]}),
        )
        .await;
    everywhere_until(&beta_lease, "alpha to come back", |listing| {
        lists(listing, "alpha", "port the cli")
            .then_some(())
            .ok_or_else(|| "alpha is not listed".into())
    })
    .await;

    nats.stop().await;
    let down = everywhere_until(
        &beta_lease,
        "beta to say the federation is down",
        |listing| {
            (listing["complete"] == false)
                .then_some(())
                .ok_or_else(|| "still complete".into())
        },
    )
    .await;
    let reason = down["federation"]["reason"].as_str().unwrap();
    assert!(reason.contains("federation"), "{reason}");
    assert!(reason.contains("unreachable"), "{reason}");
    let local = peers(&beta_lease, "repository").await;
    assert_eq!(local["complete"], true, "{local:#}");
    assert_eq!(local["count"], 1, "{local:#}");
    assert_eq!(local["peers"][0]["claims"][0]["intent"], "write docs");
    let answer = on_beta
        .answer(
            "majordomus_announce",
            json!({"intent": "write more docs", "scope": ["docs"]}),
        )
        .await;
    assert_eq!(answer["announcement"]["intent"], "write more docs");

    nats.run(&repo).await;
    let back = everywhere_until(&beta_lease, "alpha's board to return", |listing| {
        (lists(listing, "alpha", "port the cli") && listing["complete"] == true)
            .then_some(())
            .ok_or_else(|| "alpha is not back, or the listing is not complete".into())
    })
    .await;
    assert_eq!(back["federation"]["state"], "connected");
    on_alpha.close().await;
    on_beta.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unconfigured_repository_publishes_nothing() {
    let repo = TempRepo::new();
    let nats = NatsServer::start(&repo, None).await;
    let watcher = nats.client().await;
    let mut everything = watcher.subscribe(">").await.unwrap();
    watcher.flush().await.unwrap();

    let (_server, lease) = serve(&repo, repo.root()).await;
    let agent = McpClient::http(&lease, "claude-code", "2.1.0").await;
    agent
        .answer(
            "majordomus_announce",
            json!({"intent": "stay home", "scope": ["src"]}),
        )
        .await;
    let listing = peers(&lease, "everywhere").await;
    assert_eq!(listing["federation"]["state"], "off");
    assert_eq!(listing["complete"], true);
    assert_eq!(machine(&listing["peers"][0]), "(none)");
    let status = cli(
        &repo,
        &[
            "serve",
            "status",
            "--json",
            "--repo",
            repo.root().to_str().unwrap(),
        ],
    )
    .await;
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["federation"]["state"], "off");
    let heard = tokio::time::timeout(Duration::from_secs(2), everything.next()).await;
    assert!(heard.is_err(), "an unconfigured server sent {heard:?}");

    // The same subscriber does hear a configured one: the silence above was not deafness.
    let configured = clone(&repo, "configured");
    federate(&repo, &configured, &nats.url(), "loud", "").await;
    let (_loud, _) = serve(&repo, &configured).await;
    let heard = tokio::time::timeout(BOUND, async {
        loop {
            let message = everything.next().await.expect("the subscription lasts");
            if message.subject.starts_with("$KV.majordomus-boards.") {
                return message;
            }
        }
    })
    .await
    .expect("a configured server publishes its board");
    assert!(heard.subject.contains(".loud."), "{}", heard.subject);
    agent.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_credential_is_said_plainly_and_local_work_goes_on() {
    let repo = TempRepo::new();
    let nats = NatsServer::start(&repo, Some("the-right-token")).await;
    federate(&repo, repo.root(), &nats.url(), "alpha", "").await;
    // The token sits in the user's own configuration, as it should, beside the server it is
    // for: the user's credentials go to no other.
    let xdg = repo.user_config_home().join("majordomus");
    std::fs::create_dir_all(&xdg).unwrap();
    std::fs::write(
        xdg.join("config.toml"),
        format!(
            "[federation]\nurl = \"{}\"\ntoken = \"a-wrong-token\"\n",
            nats.url()
        ),
    )
    .unwrap();
    let (_server, lease) = serve(&repo, repo.root()).await;

    let status = eventually(
        "serve status to say the credentials were refused",
        || async {
            let output = cli(
                &repo,
                &[
                    "serve",
                    "status",
                    "--json",
                    "--repo",
                    repo.root().to_str().unwrap(),
                ],
            )
            .await;
            let status: Value =
                serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())?;
            (status["federation"]["state"] == "refused")
                .then_some(status.clone())
                .ok_or_else(|| status["federation"].to_string())
        },
    )
    .await;
    let summary = status["federation"]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("refused: wrong credentials"),
        "{summary}"
    );
    assert!(summary.contains("authorization violation"), "{summary}");

    let agent = McpClient::http(&lease, "claude-code", "2.1.0").await;
    let answer = agent
        .answer(
            "majordomus_announce",
            json!({"intent": "work alone", "scope": ["src"]}),
        )
        .await;
    assert_eq!(answer["overlaps"], json!([]));
    let everywhere = agent
        .answer("majordomus_peers", json!({"checkouts": "everywhere"}))
        .await;
    assert_eq!(everywhere["complete"], false);
    let reason = everywhere["federation"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("federation") && reason.contains("wrong credentials"),
        "{reason}"
    );
    let local = agent
        .answer("majordomus_peers", json!({"checkouts": "repository"}))
        .await;
    assert_eq!(local["complete"], true);
    assert_eq!(local["count"], 1);

    // The right token, in another clone, connects: the refusal was the token's doing.
    let right = clone(&repo, "right");
    federate(&repo, &right, &nats.url(), "beta", "").await;
    std::fs::write(
        xdg.join("config.toml"),
        format!(
            "[federation]\nurl = \"{}\"\ntoken = \"the-right-token\"\n",
            nats.url()
        ),
    )
    .unwrap();
    let (_beta, beta_lease) = serve(&repo, &right).await;
    everywhere_until(&beta_lease, "the right token to connect", |listing| {
        (listing["federation"]["state"] == "connected")
            .then_some(())
            .ok_or_else(|| "not connected".into())
    })
    .await;
    agent.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_boards_are_ignored_with_a_reason_and_good_ones_listed() {
    let repo = TempRepo::new();
    let nats = NatsServer::start(&repo, None).await;
    federate(&repo, repo.root(), &nats.url(), "home", "").await;
    let (_server, lease) = serve(&repo, repo.root()).await;
    everywhere_until(&lease, "the federation to connect", |listing| {
        (listing["federation"]["state"] == "connected" && listing["complete"] == true)
            .then_some(())
            .ok_or_else(|| "not connected".into())
    })
    .await;

    let root = git(repo.root(), &["rev-list", "--max-parents=0", "HEAD"])
        .trim()
        .to_owned();
    let jetstream = async_nats::jetstream::new(nats.client().await);
    let bucket = jetstream.get_key_value("majordomus-boards").await.unwrap();
    let checkout = "0123456789abcdef0123456789abcdef";
    let board = |machine: &str, intent: &str| {
        json!({
            "version": 1,
            "machine": machine,
            "checkout": {"id": checkout, "worktree": "/work/repo", "branch": "main"},
            "standing": "ready",
            "ttl_secs": 30,
            "published_at": "2026-11-30T02:26:47Z",
            "peers": [{
                "id": "p1",
                "client": {"name": "claude-code", "version": "2"},
                "transport": "http",
                "connected_at": "2026-11-30T02:26:47Z",
                "last_seen_seconds_ago": 0,
                "attached": true,
                "claims": [{"intent": intent, "scope": ["src"], "at": "2026-11-30T02:26:47Z"}]
            }]
        })
    };
    let put = |machine: &str, value: Vec<u8>| {
        let bucket = bucket.clone();
        let key = format!("{root}.{machine}.{checkout}");
        async move { bucket.put(key, value.into()).await.unwrap() }
    };
    put("garbage", b"\x1b[2J not json".to_vec()).await;
    put(
        "liar",
        serde_json::to_vec(&board("someone-else", "claims")).unwrap(),
    )
    .await;
    put(
        "escape",
        serde_json::to_vec(&board("escape", "wipe \u{1b}[2J the screen")).unwrap(),
    )
    .await;
    put(
        "gamma",
        serde_json::to_vec(&board("gamma", "a fair claim")).unwrap(),
    )
    .await;

    let listing = everywhere_until(&lease, "the bad boards ignored, the good one listed", |l| {
        let ignored = l["federation"]["ignored"].as_array().map_or(0, Vec::len);
        (ignored == 3 && lists(l, "gamma", "a fair claim"))
            .then_some(())
            .ok_or_else(|| format!("{ignored} ignored"))
    })
    .await;
    assert_eq!(listing["complete"], false);
    assert!(
        listing["federation"]["reason"]
            .as_str()
            .unwrap()
            .contains("ignored")
    );
    let reasons: Vec<String> = listing["federation"]["ignored"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ignored| format!("{}: {}", ignored["key"], ignored["reason"]))
        .collect();
    let said = |machine: &str, why: &str| {
        assert!(
            reasons
                .iter()
                .any(|r| r.contains(&format!(".{machine}.")) && r.contains(why)),
            "{machine} ({why}) in {reasons:#?}"
        )
    };
    said("garbage", "not a board document");
    said("liar", "not the one its key names");
    said("escape", "intent");
    assert!(!listing.to_string().contains('\u{1b}'));
    assert_eq!(remote_machines(&listing), ["gamma"]);
}

// ---------------------------------------------------------------------------------------------
// Leases shared by machines

/// Waits until `lease`'s server says it is connected to the federation.
async fn connected(lease: &LeaseFile) {
    everywhere_until(
        lease,
        "the server to connect to the federation",
        |listing| {
            (listing["federation"]["state"] == "connected")
                .then_some(())
                .ok_or_else(|| "not connected".into())
        },
    )
    .await;
}

fn append(path: &Path, line: &str) {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file, "{line}").unwrap();
}

/// Asks for `name` until it is granted, each call waiting up to 3 s; a refusal (the
/// federation out of reach) is asked again after a pause.
async fn hold_through_outages(client: &McpClient, name: &str) -> Value {
    loop {
        match client
            .call("majordomus_lease", json!({"name": name, "wait_secs": 3}))
            .await
        {
            Ok(answer) if answer["state"] == "granted" => return answer,
            Ok(_) => {}
            Err(refusal) => {
                assert!(refusal.contains("federation"), "{refusal}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Releases `name`, asking again while the federation is out of reach. A release asked
/// again after a refusal may find the first one went through: then nothing is held.
async fn release_through_outages(client: &McpClient, name: &str) {
    let mut refused = false;
    loop {
        match client
            .call("majordomus_release", json!({"name": name}))
            .await
        {
            Ok(released) => {
                assert_eq!(released["name"], name);
                return;
            }
            Err(refusal) if refused && refusal.contains("neither hold nor wait") => return,
            Err(refusal) => {
                assert!(refusal.contains("federation"), "{refusal}");
                refused = true;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_machines_share_one_lease_and_never_hold_it_together_across_a_federation_restart() {
    const SESSIONS: usize = 16;
    const ROUNDS: usize = 3;
    let repo = TempRepo::new();
    let mut nats = NatsServer::start(&repo, None).await;
    let alpha = clone(&repo, "alpha");
    let beta = clone(&repo, "beta");
    federate(&repo, &alpha, &nats.url(), "alpha", "").await;
    federate(&repo, &beta, &nats.url(), "beta", "").await;
    let (_alpha_server, alpha_lease) = serve(&repo, &alpha).await;
    let (_beta_server, beta_lease) = serve(&repo, &beta).await;
    connected(&alpha_lease).await;
    connected(&beta_lease).await;

    let mut clients = Vec::new();
    for n in 0..2 * SESSIONS {
        let (lease, machine) = if n % 2 == 0 {
            (&alpha_lease, "alpha")
        } else {
            (&beta_lease, "beta")
        };
        clients.push((
            machine,
            McpClient::http(lease, &format!("racer-{n}"), "1.0").await,
        ));
    }
    let records = repo.base().join("staging.log");
    std::fs::write(&records, "").unwrap();
    let runs = clients
        .into_iter()
        .enumerate()
        .map(|(n, (machine, client))| {
            let records = records.clone();
            tokio::spawn(async move {
                for round in 0..ROUNDS {
                    let granted = hold_through_outages(&client, "db:staging").await;
                    let ticket = granted["ticket"].as_u64().unwrap();
                    append(&records, &format!("enter {ticket} {n} {machine}"));
                    let held = 1 + (n * 7 + round * 13) % 20;
                    tokio::time::sleep(Duration::from_millis(held as u64)).await;
                    append(&records, &format!("leave {ticket} {n} {machine}"));
                    release_through_outages(&client, "db:staging").await;
                }
                client.close().await;
            })
        });
    let runs: Vec<_> = runs.collect();

    // A third of the way, the federation goes away for a while.
    let third = std::time::Instant::now() + Duration::from_secs(120);
    while std::fs::read_to_string(&records).unwrap().lines().count() < 2 * SESSIONS * ROUNDS * 2 / 3
    {
        assert!(
            std::time::Instant::now() < third,
            "a third of the grants were not used within 120 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    nats.stop().await;
    let probe = McpClient::http(&alpha_lease, "probe", "1.0").await;
    let refusal = eventually(
        "a lease to be refused while the federation is away",
        || async {
            match probe
                .call("majordomus_lease", json!({"name": "db:staging"}))
                .await
            {
                Err(refusal) => Ok(refusal),
                Ok(answer) => Err(format!("answered during the outage: {answer}")),
            }
        },
    )
    .await;
    assert!(
        refusal.contains("the federation is out of reach"),
        "{refusal}"
    );
    assert!(refusal.contains("none is granted"), "{refusal}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    nats.run(&repo).await;
    for run in futures::future::join_all(runs).await {
        run.unwrap();
    }
    probe.close().await;

    let text = std::fs::read_to_string(&records).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        2 * 2 * SESSIONS * ROUNDS,
        "every grant used once"
    );
    let mut last_ticket = None;
    let mut grants = vec![0; 2 * SESSIONS];
    for pair in lines.chunks(2) {
        let enter: Vec<&str> = pair[0].split(' ').collect();
        let leave: Vec<&str> = pair[1].split(' ').collect();
        assert_eq!(enter[0], "enter", "two held it at once: {pair:?}");
        assert_eq!(
            leave,
            ["leave", enter[1], enter[2], enter[3]],
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
    assert_eq!(grants, vec![ROUNDS; 2 * SESSIONS], "nobody starved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_of_a_machine_that_dies_or_leaves_goes_to_the_next_in_line_on_another() {
    let repo = TempRepo::new();
    let _nats = NatsServer::start(&repo, None).await;
    let url = _nats.url();
    let alpha = clone(&repo, "alpha");
    let beta = clone(&repo, "beta");
    // alpha's holders live 3 s past its last renewal, beta's 30 s.
    federate(&repo, &alpha, &url, "alpha", "ttl_secs = 3\n").await;
    federate(&repo, &beta, &url, "beta", "").await;
    let (mut alpha_server, alpha_lease) = serve(&repo, &alpha).await;
    let (mut beta_server, beta_lease) = serve(&repo, &beta).await;
    connected(&alpha_lease).await;
    connected(&beta_lease).await;
    let on_alpha = McpClient::http(&alpha_lease, "claude-code", "2.1.0").await;
    let on_beta = McpClient::http(&beta_lease, "codex", "0.130.0").await;
    let granted = on_alpha
        .answer("majordomus_lease", json!({"name": "db:staging"}))
        .await;
    assert_eq!(granted["state"], "granted", "{granted}");
    let queued = on_beta
        .answer("majordomus_lease", json!({"name": "db:staging"}))
        .await;
    assert_eq!(queued["state"], "queued", "{queued}");
    let holder = queued["holder"].as_str().unwrap();
    assert!(holder.contains("claude-code in alpha on alpha"), "{holder}");
    let listing = peers(&beta_lease, "repository").await;
    assert_eq!(listing["leases"][0]["name"], "db:staging", "{listing:#}");
    assert_eq!(listing["leases"][0]["holder"], holder, "{listing:#}");

    // alpha dies: nobody renews its holders, and beta's session is granted once their
    // lifetime is over.
    alpha_server.kill9().await;
    drop(on_alpha);
    eventually("beta's session to be granted alpha's lease", || async {
        let answer = on_beta
            .answer(
                "majordomus_lease",
                json!({"name": "db:staging", "wait_secs": 1}),
            )
            .await;
        (answer["state"] == "granted")
            .then_some(())
            .ok_or_else(|| answer.to_string())
    })
    .await;

    // alpha comes back and queues; beta's server stops in order and takes its sessions out
    // of the table: alpha's is granted long before beta's 30 s would have run out.
    let (_alpha_server, alpha_lease) = serve(&repo, &alpha).await;
    connected(&alpha_lease).await;
    let on_alpha = McpClient::http(&alpha_lease, "claude-code", "2.1.0").await;
    let queued = on_alpha
        .answer("majordomus_lease", json!({"name": "db:staging"}))
        .await;
    assert_eq!(queued["state"], "queued", "{queued}");
    assert!(
        queued["holder"].as_str().unwrap().contains("on beta"),
        "{queued}"
    );
    drop(on_beta);
    beta_server.signal(libc::SIGTERM);
    beta_server.wait_exit().await;
    eventually("alpha's session to be granted once beta left", || async {
        let answer = on_alpha
            .answer(
                "majordomus_lease",
                json!({"name": "db:staging", "wait_secs": 1}),
            )
            .await;
        (answer["state"] == "granted")
            .then_some(())
            .ok_or_else(|| answer.to_string())
    })
    .await;
    on_alpha.close().await;
}

/// `majordomus lease` from the command line of a federated checkout is asked of that
/// checkout's server, which keeps the team's table: queued behind a session of another
/// machine with the holder named (exit 75), granted for a command's run once it is free, and
/// refused, naming how to start a server, when none runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_leases_through_its_checkouts_server_in_a_federation() {
    let repo = TempRepo::new();
    let nats = NatsServer::start(&repo, None).await;
    let url = nats.url();
    let alpha = clone(&repo, "alpha");
    let beta = clone(&repo, "beta");
    federate(&repo, &alpha, &url, "alpha", "").await;
    federate(&repo, &beta, &url, "beta", "").await;
    let lease_on_beta = |args: &[&str]| {
        let mut all = vec!["lease", "--repo", beta.to_str().unwrap()];
        all.extend_from_slice(args);
        all.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };

    let refused = cli(
        &repo,
        &lease_on_beta(&["db:staging"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("majordomus serve ensure"), "{said}");

    let (_alpha_server, alpha_lease) = serve(&repo, &alpha).await;
    let (_beta_server, beta_lease) = serve(&repo, &beta).await;
    connected(&alpha_lease).await;
    connected(&beta_lease).await;
    let on_alpha = McpClient::http(&alpha_lease, "claude-code", "2.1.0").await;
    let granted = on_alpha
        .answer("majordomus_lease", json!({"name": "db:staging"}))
        .await;
    assert_eq!(granted["state"], "granted", "{granted}");

    let args = lease_on_beta(&["db:staging", "--json"]);
    let queued = cli(&repo, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(queued.status.code(), Some(75), "{queued:?}");
    let answer: Value = serde_json::from_slice(&queued.stdout).expect("the answer is JSON");
    assert_eq!(answer["state"], "queued", "{answer}");
    assert!(
        answer["holder"].as_str().unwrap().contains("on alpha"),
        "{answer}"
    );

    on_alpha
        .answer("majordomus_release", json!({"name": "db:staging"}))
        .await;
    let marker = repo.base().join("ran");
    let script = format!("echo held > '{}'", marker.display());
    let args = lease_on_beta(&["db:staging", "--", "sh", "-c", &script]);
    let ran = cli(&repo, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert!(ran.status.success(), "{ran:?}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "held\n");
    let listing = peers(&alpha_lease, "repository").await;
    assert!(
        listing["leases"].as_array().is_none_or(Vec::is_empty),
        "released after the run: {listing:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// Messages between machines

/// Runs Claude Code's prompt hook for the conversation `session` in `checkout`: what it
/// prints, as JSON, `Null` when it prints nothing.
async fn prompt_hook(checkout: &Path, session: &str, prompt: &str) -> Value {
    use tokio::io::AsyncWriteExt as _;
    let input = json!({"session_id": session, "cwd": display(checkout),
        "hook_event_name": "UserPromptSubmit", "prompt": prompt});
    let mut command = majordomus_command(["hook", "claude-code", "UserPromptSubmit"]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("majordomus hook starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(BOUND, child.wait_with_output())
        .await
        .expect("the hook ends in time")
        .unwrap();
    assert!(
        output.status.success() && output.stderr.is_empty(),
        "{output:?}"
    );
    if output.stdout.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&output.stdout).unwrap()
    }
}

/// The caller of `client`, as its own server's listing names it: its qualified id and its
/// checkout's id.
async fn own_name(client: &McpClient) -> (String, String) {
    let listing = client.answer("majordomus_peers", json!({})).await;
    let caller = listing["caller"].as_str().unwrap().to_owned();
    let me = listing["peers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == caller && p["checkout"]["this_checkout"] == true)
        .unwrap_or_else(|| panic!("the caller is listed: {listing:#}"));
    (
        me["qualified_id"].as_str().unwrap().to_owned(),
        me["checkout"]["id"].as_str().unwrap().to_owned(),
    )
}

/// The receipt of message `id` to `to`, as `majordomus_messages` of `client` shows it.
async fn receipt_of(client: &McpClient, id: &Value, to: &str) -> Value {
    let list = client.answer("majordomus_messages", json!({})).await;
    list["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == *id)
        .unwrap_or_else(|| panic!("message {id} is listed: {list:#}"))["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["to"]["qualified_id"] == to)
        .unwrap_or_else(|| panic!("a receipt for {to}: {list:#}"))
        .clone()
}

/// Calls `tool` of `client` until an answer carries an inbox, and a few times more; answers
/// every message its inboxes carried, in order.
async fn inbox_of(client: &McpClient, tool: &str) -> Vec<Value> {
    let mut delivered = Vec::new();
    let deadline = std::time::Instant::now() + BOUND;
    let mut after = 0;
    while after < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "no message reached {tool}'s answers within {BOUND:?}"
        );
        let answer = client.answer(tool, json!({})).await;
        if let Some(messages) = answer["inbox"]["messages"].as_array() {
            assert!(
                answer["inbox"]["text"]
                    .as_str()
                    .unwrap()
                    .contains("no authority of the person"),
                "{answer:#}"
            );
            delivered.extend(messages.iter().cloned());
        }
        if delivered.is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        } else {
            after += 1;
        }
    }
    delivered
}

/// The peers of a listing holding claim `name`, by machine.
fn holders(listing: &Value, name: &str) -> Vec<String> {
    listing["peers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|peer| {
            peer["claims"]
                .as_array()
                .is_some_and(|claims| claims.iter().any(|claim| claim["name"] == name))
        })
        .map(|peer| format!("{}@{}", peer["id"].as_str().unwrap(), machine(peer)))
        .collect()
}

/// A session on one machine messages a session on another (by the id its listing gives it,
/// and by a path the other claims): each is shown it once, in its next tool answer or prompt
/// hook; the sender's receipts say delivered and through what, then answered, and the reply
/// comes back; a claim handed over moves to the other machine's session on acceptance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_crosses_machines_once_and_its_receipt_reply_and_handoff_come_back() {
    let repo = TempRepo::new();
    let mut nats = NatsServer::start(&repo, None).await;
    let alpha = clone(&repo, "alpha");
    let beta = clone(&repo, "beta");
    federate(&repo, &alpha, &nats.url(), "alpha", "").await;
    federate(&repo, &beta, &nats.url(), "beta", "").await;
    let (_alpha_server, alpha_lease) = serve(&repo, &alpha).await;
    let (_beta_server, beta_lease) = serve(&repo, &beta).await;
    connected(&alpha_lease).await;
    connected(&beta_lease).await;

    let on_alpha = McpClient::http(&alpha_lease, "claude-code", "2.1.0").await;
    let on_beta = McpClient::http(&beta_lease, "an-sdk-agent", "1.0").await;
    on_alpha
        .answer(
            "majordomus_announce",
            json!({"intent": "split the lexer", "scope": ["src/lexer"], "claim": "lexer"}),
        )
        .await;
    on_beta
        .answer(
            "majordomus_announce",
            json!({"intent": "rework the parser", "scope": ["src/parser"]}),
        )
        .await;
    // A Claude Code session on beta that exists through its hooks alone: an edit puts it on
    // the board.
    let hooked = "5d1e0c7a-on-beta";
    let file = beta.join("src/lib.rs");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "pub fn parse() {}\n").unwrap();
    claude_code_hook(
        &beta,
        "PostToolUse",
        hooked,
        json!({"tool_name": "Write",
               "tool_input": {"file_path": display(&file), "content": ""},
               "tool_response": {}}),
    )
    .await;
    let listing = everywhere_until(&alpha_lease, "alpha to see beta's sessions", |listing| {
        let edits = listing["peers"].as_array().is_some_and(|peers| {
            peers.iter().any(|peer| {
                machine(peer) == "beta" && peer["claims"].to_string().contains("src/lib.rs")
            })
        });
        (lists(listing, "beta", "rework the parser") && edits)
            .then_some(())
            .ok_or_else(|| "not yet both of beta's sessions".into())
    })
    .await;
    let remote = listing["peers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|peer| machine(peer) == "beta" && peer["client"]["name"] == "an-sdk-agent")
        .unwrap_or_else(|| panic!("beta's SDK session is listed on alpha: {listing:#}"));
    let listed_as = remote["qualified_id"].as_str().unwrap().to_owned();
    let (beta_id, beta_checkout) = own_name(&on_beta).await;
    let (alpha_id, _) = own_name(&on_alpha).await;
    assert_eq!(
        remote["checkout"]["id"], beta_checkout,
        "alpha lists beta's session with the checkout id beta's server gives it"
    );

    // By the id alpha's listing gives the session.
    let sent = on_alpha
        .answer(
            "majordomus_send",
            json!({"to": listed_as, "text": "May I change parse() to take a &str?"}),
        )
        .await;
    let to = &sent["to"][0];
    assert_eq!(
        (&to["qualified_id"], &to["checkout"], &to["machine"]),
        (&json!(beta_id), &json!(beta_checkout), &json!("beta")),
        "the recipient is named as beta's server names its own session: {sent:#}"
    );
    let question = sent["id"].clone();
    assert_eq!(
        receipt_of(&on_alpha, &question, &beta_id).await["state"],
        "queued"
    );
    // By a path a session of the other machine edits.
    let warned = on_alpha
        .answer(
            "majordomus_send",
            json!({"to": "path:src/lib.rs", "text": "Careful: lib.rs is regenerated on build."}),
        )
        .await;
    assert_eq!(warned["to"].as_array().unwrap().len(), 1, "{warned:#}");
    assert_eq!(warned["to"][0]["machine"], "beta", "{warned:#}");
    let hooked_id = warned["to"][0]["qualified_id"].as_str().unwrap().to_owned();

    let delivered = inbox_of(&on_beta, "majordomus_peers").await;
    assert_eq!(delivered.len(), 1, "shown once: {delivered:#?}");
    assert_eq!(delivered[0]["id"], question);
    assert_eq!(delivered[0]["from"], alpha_id.as_str());
    assert_eq!(delivered[0]["text"], "May I change parse() to take a &str?");
    let receipt = receipt_of(&on_alpha, &question, &beta_id).await;
    assert_eq!(
        (&receipt["state"], &receipt["through"]),
        (&json!("delivered"), &json!("majordomus_peers tool")),
        "{receipt:#}"
    );

    let said = eventually("beta's prompt hook to carry the message", || async {
        let said = prompt_hook(&beta, hooked, "go on").await;
        said["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no context yet: {said}"))
    })
    .await;
    assert!(
        said.contains(&format!("--- message {} from", warned["id"]))
            && said.contains("\"Careful: lib.rs is regenerated on build.\"")
            && said.contains("no authority of the person"),
        "fenced: {said}"
    );
    let again = prompt_hook(&beta, hooked, "more").await;
    assert!(
        !again.to_string().contains("regenerated on build"),
        "once: {again}"
    );
    let receipt = receipt_of(&on_alpha, &warned["id"], &hooked_id).await;
    assert_eq!(
        (&receipt["state"], &receipt["through"]),
        (
            &json!("delivered"),
            &json!("claude-code UserPromptSubmit hook")
        ),
        "{receipt:#}"
    );

    // The answer goes back, and the question's receipt says so.
    let reply = on_beta
        .answer(
            "majordomus_send",
            json!({"reply_to": question, "text": "Yes; I only touch the grammar."}),
        )
        .await;
    assert_eq!(reply["to"][0]["qualified_id"], alpha_id.as_str());
    // The listing of the messages is itself a tool answer: the reply comes with it.
    let replies = inbox_of(&on_alpha, "majordomus_messages").await;
    assert_eq!(replies.len(), 1, "{replies:#?}");
    assert_eq!(
        (
            &replies[0]["id"],
            &replies[0]["reply_to"],
            &replies[0]["text"]
        ),
        (
            &reply["id"],
            &question,
            &json!("Yes; I only touch the grammar.")
        )
    );
    let receipt = receipt_of(&on_alpha, &question, &beta_id).await;
    assert_eq!(
        (&receipt["state"], &receipt["reply"]),
        (&json!("answered"), &reply["id"]),
        "{receipt:#}"
    );
    let receipt = receipt_of(&on_alpha, &reply["id"], &alpha_id).await;
    assert_eq!(
        (&receipt["state"], &receipt["through"]),
        (&json!("delivered"), &json!("majordomus_messages tool")),
        "{receipt:#}"
    );

    // A claim handed to the other machine's session moves on acceptance, on both machines.
    let offer = on_alpha
        .answer(
            "majordomus_send",
            json!({"to": listed_as, "text": "The lexer is yours.", "handoff": ["lexer"]}),
        )
        .await;
    let offered = inbox_of(&on_beta, "majordomus_peers").await;
    assert_eq!(offered.len(), 1, "{offered:#?}");
    assert_eq!(offered[0]["handoff"][0]["name"], "lexer");
    let before = peers(&alpha_lease, "everywhere").await;
    assert_eq!(
        holders(&before, "lexer"),
        [format!("{}@alpha", alpha_id.split('@').next().unwrap())]
    );
    let accepted = on_beta
        .answer(
            "majordomus_send",
            json!({"reply_to": offer["id"], "text": "Taken.", "accept": true}),
        )
        .await;
    assert_eq!(accepted["accepted"], json!(["lexer"]));
    let beta_peer = format!("{}@beta", beta_id.split('@').next().unwrap());
    for lease in [&alpha_lease, &beta_lease] {
        everywhere_until(lease, "the lexer to be beta's alone", |listing| {
            (holders(listing, "lexer") == [beta_peer.clone()])
                .then_some(())
                .ok_or_else(|| format!("held by {:?}", holders(listing, "lexer")))
        })
        .await;
    }

    // A person's view of it: the command line asks the checkout's server, which follows the
    // federation.
    let output = cli(
        &repo,
        &["messages", "--json", "--repo", alpha.to_str().unwrap()],
    )
    .await;
    assert!(output.status.success(), "{output:?}");
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    let listed = list["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == question)
        .unwrap_or_else(|| panic!("the question is listed: {list:#}"));
    assert_eq!(listed["receipts"][0]["state"], "answered", "{list:#}");

    // While the federation is away a message is refused, naming the outage: it is never
    // queued where the other machine would not read it.
    nats.stop().await;
    let refusal = eventually(
        "a message to be refused while the federation is away",
        || async {
            match on_alpha
                .call(
                    "majordomus_send",
                    json!({"to": listed_as, "text": "Still there?"}),
                )
                .await
            {
                Err(refusal) => Ok(refusal),
                Ok(answer) => Err(format!("sent during the outage: {answer}")),
            }
        },
    )
    .await;
    assert!(
        refusal.contains("the federation is out of reach") && refusal.contains("none is sent"),
        "{refusal}"
    );

    // Once it is back, messages cross again.
    nats.run(&repo).await;
    let resent = eventually(
        "a message to be sent once the federation is back",
        || async {
            on_alpha
                .call(
                    "majordomus_send",
                    json!({"to": listed_as, "text": "Back again."}),
                )
                .await
        },
    )
    .await;
    let delivered = inbox_of(&on_beta, "majordomus_peers").await;
    assert_eq!(delivered.len(), 1, "{delivered:#?}");
    assert_eq!(
        (&delivered[0]["id"], &delivered[0]["text"]),
        (&resent["id"], &json!("Back again."))
    );
    on_alpha.close().await;
    on_beta.close().await;
}
