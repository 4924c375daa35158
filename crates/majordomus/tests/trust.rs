//! The trust boundary between a repository's `majordomus.toml`, which anyone who can push to
//! the repository writes, and the person's own configuration: real `majordomus` processes in a
//! temporary repository, the person's directories (configuration and state) the test's own.
//! A repository's federation or episode command is only a suggestion until the person allows
//! it, and the person's credentials never go to a server the repository names.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The person's token, in their own configuration file.
const TOKEN: &str = "the-persons-own-token-7f3a";

/// What a NATS server says first: who it is, and that it wants credentials, so that a client
/// holding any sends them in its `CONNECT`.
const INFO: &[u8] =
    b"INFO {\"server_id\":\"fake\",\"server_name\":\"fake\",\"version\":\"2.10.0\",\
\"proto\":1,\"max_payload\":1048576,\"headers\":true,\"auth_required\":true}\r\n";

/// A NATS server's greeting and nothing more: a plain TCP listener on loopback that sends
/// `INFO` on each connection and keeps every byte it receives, for the test to read. Its
/// tasks end when it is dropped.
struct FakeNats {
    port: u16,
    received: Arc<Mutex<Vec<u8>>>,
    connections: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeNats {
    async fn start() -> FakeNats {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn({
            let (received, connections) = (received.clone(), connections.clone());
            async move {
                let mut readers = tokio::task::JoinSet::new();
                while let Ok((mut socket, _)) = listener.accept().await {
                    connections.fetch_add(1, Ordering::SeqCst);
                    let received = received.clone();
                    readers.spawn(async move {
                        if socket.write_all(INFO).await.is_err() {
                            return;
                        }
                        let mut buffer = [0; 4096];
                        while let Ok(read @ 1..) = socket.read(&mut buffer).await {
                            received.lock().unwrap().extend_from_slice(&buffer[..read]);
                        }
                    });
                }
            }
        });
        FakeNats {
            port,
            received,
            connections,
            task,
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Every byte received so far, on every connection, as text.
    fn received(&self) -> String {
        String::from_utf8_lossy(&self.received.lock().unwrap()).into_owned()
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for FakeNats {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `majordomus doctor` in `checkout`, as the person of the test; what it printed.
async fn doctor(repo: &TempRepo, checkout: &Path) -> String {
    let output = run_cli(repo, ["doctor", "--repo", checkout.to_str().unwrap()]).await;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    printed
}

/// Ends `serve` in order (`majordomus serve stop`) and waits for it to exit.
async fn stop(repo: &TempRepo, serve: &mut ServeProcess) {
    let output = run_cli(
        repo,
        ["serve", "stop", "--repo", serve.checkout.to_str().unwrap()],
    )
    .await;
    assert!(output.status.success(), "{output:?}");
    serve.wait_exit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repositorys_federation_waits_to_be_allowed_and_never_gets_the_persons_token() {
    let repo = TempRepo::new();
    let root = repo.root();
    let suggested = FakeNats::start().await;
    let own = FakeNats::start().await;
    fs::write(
        root.join("majordomus.toml"),
        format!("[federation]\nurl = \"{}\"\n", suggested.url()),
    )
    .unwrap();
    let own_file = repo.user_config_home().join("majordomus/config.toml");
    fs::create_dir_all(own_file.parent().unwrap()).unwrap();
    fs::write(
        &own_file,
        format!(
            "[federation]\nurl = \"{}\"\ntoken = \"{TOKEN}\"\n",
            own.url()
        ),
    )
    .unwrap();

    // Not allowed: the server follows the person's own federation, token and all, as if the
    // repository suggested nothing; the repository's server hears nothing.
    let (mut serve, _) = ServeProcess::start(&repo, root).await;
    eventually("the person's own server to be sent their token", || async {
        let received = own.received();
        received
            .contains(&format!("\"auth_token\":\"{TOKEN}\""))
            .then_some(())
            .ok_or(received)
    })
    .await;
    assert_eq!(
        suggested.connections(),
        0,
        "the repository's server was connected to before it was allowed"
    );

    let said = doctor(&repo, root).await;
    assert!(
        said.contains(&format!(
            "this repository suggests a federation ({}) in majordomus.toml: not allowed, so not used; \
             to allow it, run `majordomus allow federation --repo {}`",
            suggested.url(),
            root.display()
        )),
        "{said}"
    );

    let allowed = repo.allow(root, "federation").await;
    assert!(
        allowed.contains(&format!(
            "allowed a federation for {}: {}",
            root.display(),
            suggested.url()
        )),
        "{allowed}"
    );
    let said = doctor(&repo, root).await;
    assert!(
        said.contains(&format!(
            "this repository suggests a federation ({}) in majordomus.toml: allowed",
            suggested.url()
        )),
        "{said}"
    );

    // Allowed: the next server connects to the repository's server, without the token.
    stop(&repo, &mut serve).await;
    let (_serve, _) = ServeProcess::start(&repo, root).await;
    eventually("the repository's server to be connected to", || async {
        let received = suggested.received();
        received.contains("CONNECT {").then_some(()).ok_or(received)
    })
    .await;
    let received = suggested.received();
    assert!(!received.contains(TOKEN), "{received}");
    assert!(!received.contains("\"auth_token\":\""), "{received}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repositorys_episode_command_runs_only_once_allowed() {
    let repo = TempRepo::new();
    let root = repo.root();
    let marker = root.join("command-ran");
    let script = root.join("record-episode.sh");
    fs::write(
        &script,
        format!("#!/bin/sh\ncat >> '{}'\n", marker.display()),
    )
    .unwrap();
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    fs::write(
        root.join("majordomus.toml"),
        "[episodes]\ncommand = [\"./record-episode.sh\"]\n",
    )
    .unwrap();
    let journal: PathBuf = root.join(".git/majordomus/episodes.jsonl");

    // Not allowed: an agent's episode goes to the built-in journal, and the script never runs.
    let (mut serve, lease) = ServeProcess::start(&repo, root).await;
    let agent = McpClient::http(&lease, "codex", "0.5.0").await;
    agent
        .answer(
            "majordomus_session_attach",
            json!({"external_id": "conv-before"}),
        )
        .await;
    eventually("the journal to record the episode", || async {
        let text = fs::read_to_string(&journal).unwrap_or_default();
        text.contains("conv-before").then_some(()).ok_or(text)
    })
    .await;
    agent.close().await;
    assert!(!marker.exists(), "the command ran before it was allowed");
    let said = doctor(&repo, root).await;
    assert!(
        said.contains(&format!(
            "this repository suggests an episode command (./record-episode.sh) in majordomus.toml: \
             not allowed, so not used; to allow it, run `majordomus allow episodes-command --repo {}`",
            root.display()
        )),
        "{said}"
    );

    repo.allow(root, "episodes-command").await;
    stop(&repo, &mut serve).await;
    let (_serve, lease) = ServeProcess::start(&repo, root).await;
    let agent = McpClient::http(&lease, "codex", "0.5.0").await;
    agent
        .answer(
            "majordomus_session_attach",
            json!({"external_id": "conv-after"}),
        )
        .await;
    let ran = fs::read_to_string(&marker).expect("the allowed command ran");
    assert!(ran.contains("conv-after"), "{ran}");
    agent.close().await;
}
