//! The real coding clients — Claude Code, Codex CLI and Gemini CLI at the versions
//! `scripts/install-clients.sh` pins — run headless in a repository `majordomus install` wired,
//! their model a scripted fake: the model announces, writes the announced file with the
//! client's own edit tool, and says it is done. What the model received (the announce's
//! answer) is read from the fake's record, what landed from the disk and the board.

mod common;

use std::path::Path;

use serde_json::{Value, json};

use common::fake_model::{FakeModel, Turn};
use common::real_client::{Client, ClientRun, Workspace};
use common::{ServeProcess, TempRepo, run_cli};

const WRITTEN: &str = "pub fn tidy() {}\n";

/// `majordomus peers --json` in `checkout`.
async fn peers(repo: &TempRepo, checkout: &Path) -> Value {
    let output = run_cli(
        repo,
        [
            "peers".as_ref(),
            "--json".as_ref(),
            "--repo".as_ref(),
            checkout.as_os_str(),
        ],
    )
    .await;
    assert!(
        output.status.success(),
        "peers --json: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("peers --json prints JSON")
}

/// One headless session of `client`: announce `src/util.rs`, write it, answer "done".
async fn announce_then_write(client: Client) {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, client);
    workspace.install(&checkout).await;
    // The checkout's server, as another session keeps it: the client's `majordomus mcp`
    // bridges to it, and the board outlives the headless run.
    let (_server, _lease) = ServeProcess::start(&repo, &checkout).await;
    let fake = FakeModel::start(vec![
        Turn::call(
            "majordomus_announce",
            json!({"intent": "tidy util", "scope": ["src/util.rs"]}),
        ),
        client.write_file(&checkout, "src/util.rs", WRITTEN),
        Turn::answer("done"),
    ])
    .await;
    let run: ClientRun = workspace.run(&checkout, &fake, "Tidy src/util.rs.").await;
    assert!(
        run.status.success(),
        "{client:?} failed ({}):\n{}\nthe fake model saw:\n{}",
        run.status,
        run.output(),
        fake.summary()
    );
    assert_eq!(
        fake.unplayed(),
        0,
        "the script was not played to its end:\n{}",
        fake.summary()
    );
    let announced = fake.tool_result("majordomus_announce").unwrap_or_else(|| {
        panic!(
            "no request carried the announce's result:\n{}",
            fake.summary()
        )
    });
    assert!(
        announced.contains("\"intent\":\"tidy util\"") && announced.contains("src/util.rs"),
        "the announce's answer reached the model: {announced}"
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("src/util.rs"))
            .ok()
            .as_deref(),
        Some(WRITTEN),
        "the client wrote the file:\n{}",
        run.output()
    );
    let board = peers(&repo, &checkout).await;
    let announced_on_board = board["peers"].as_array().into_iter().flatten().any(|peer| {
        peer["client"]["name"] == client.mcp_name()
            && peer["claims"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|claim| {
                    claim["intent"] == "tidy util" && claim["scope"] == json!(["src/util.rs"])
                })
    });
    assert!(
        announced_on_board,
        "the board lists the session's announced claim: {board:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_announces_and_writes_headless() {
    announce_then_write(Client::ClaudeCode).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_announces_and_writes_headless() {
    announce_then_write(Client::Codex).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_announces_and_writes_headless() {
    announce_then_write(Client::GeminiCli).await;
}
