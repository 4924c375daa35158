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
use common::{McpClient, ServeProcess, TempRepo, run_cli};

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
    // the client ran the hook command install wrote: the edit became an `edits` claim
    let edited_on_board = board["peers"].as_array().into_iter().flatten().any(|peer| {
        peer["claims"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|claim| claim["name"] == "edits" && claim["scope"] == json!(["src/util.rs"]))
    });
    assert!(
        edited_on_board,
        "the client's hooks put its edit on the board: {board:#}"
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

/// The first request `fake` received that carries `prompt` (the session's main loop), as
/// JSON text.
fn first_request_with(fake: &FakeModel, prompt: &str) -> String {
    fake.requests()
        .into_iter()
        .map(|request| request.body.to_string())
        .find(|body| body.contains(prompt))
        .unwrap_or_else(|| panic!("no request carried the prompt:\n{}", fake.summary()))
}

/// A Claude Code session that starts alone in the primary checkout, where nobody serves yet,
/// while two sessions work in worktree `beta`: its first model request already names them.
/// (Claude Code runs SessionStart before it starts its MCP servers.)
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_starting_alone_hears_the_other_worktree_in_its_first_request() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let beta = repo.add_worktree("beta");
    let workspace = Workspace::new(&repo, Client::ClaudeCode);
    workspace.install(&checkout).await;
    let (_beta_server, beta_lease) = ServeProcess::start(&repo, &beta).await;
    let codex = McpClient::http(&beta_lease, "codex", "0.171.0").await;
    codex
        .answer(
            "majordomus_announce",
            json!({"intent": "port the parser to nom", "scope": ["src/parser"]}),
        )
        .await;
    let gemini = McpClient::http(&beta_lease, "gemini-cli", "0.61.0").await;
    gemini
        .answer(
            "majordomus_announce",
            json!({"intent": "document the lexer", "scope": ["docs"]}),
        )
        .await;

    let fake = FakeModel::start(vec![Turn::answer("done")]).await;
    let prompt = "Say who else works here.";
    let run = workspace.run(&checkout, &fake, prompt).await;
    assert!(run.status.success(), "{}", run.output());
    let first = first_request_with(&fake, prompt);
    for part in [
        "2 other sessions are attached",
        "port the parser to nom",
        "document the lexer",
        "beta",
    ] {
        assert!(first.contains(part), "{part} in the first request: {first}");
    }
    codex.close().await;
    gemini.close().await;
}

/// A teammate without majordomus: the repository's `.gemini/settings.json` names hooks whose
/// program is not on their PATH, and `gemini -p` still answers.
#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_answers_where_majordomus_is_not_installed() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, Client::GeminiCli);
    workspace.install(&checkout).await;
    std::fs::remove_file(repo.base().join("tools/majordomus")).expect("majordomus goes");
    let fake = FakeModel::start(vec![Turn::answer("the fake model says hello")]).await;
    let run = workspace.run(&checkout, &fake, "Say hello.").await;
    assert!(run.status.success(), "{}", run.output());
    assert!(
        run.output().contains("the fake model says hello"),
        "{}",
        run.output()
    );
}

/// `policy = "ask"` never leaves a headless `gemini -p` waiting for a person who is not
/// there: the edit of a file another session claims is refused and the run ends.
#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_headless_under_ask_is_never_left_waiting() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    std::fs::write(
        checkout.join("majordomus.toml"),
        "[hooks]\npolicy = \"ask\"\n",
    )
    .unwrap();
    let beta = repo.add_worktree("beta");
    let workspace = Workspace::new(&repo, Client::GeminiCli);
    workspace.install(&checkout).await;
    let (_server, _lease) = ServeProcess::start(&repo, &checkout).await;
    let (_beta_server, beta_lease) = ServeProcess::start(&repo, &beta).await;
    let codex = McpClient::http(&beta_lease, "codex", "0.171.0").await;
    codex
        .answer(
            "majordomus_announce",
            json!({"intent": "tidy util", "scope": ["src/util.rs"]}),
        )
        .await;
    let fake = FakeModel::start(vec![
        Client::GeminiCli.write_file(&checkout, "src/util.rs", WRITTEN),
        Turn::answer("done"),
    ])
    .await;
    // `run` fails the test if the client has not ended within its deadline
    let run = workspace.run(&checkout, &fake, "Tidy src/util.rs.").await;
    assert_ne!(
        std::fs::read_to_string(checkout.join("src/util.rs"))
            .ok()
            .as_deref(),
        Some(WRITTEN),
        "the claimed file was not written:\n{}",
        run.output()
    );
    codex.close().await;
}
