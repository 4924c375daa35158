//! The real coding clients — Claude Code, Codex CLI and Gemini CLI at the versions
//! `scripts/install-clients.sh` pins — run headless in a repository `majordomus install` wired,
//! their model a scripted fake: the model announces, writes the announced file with the
//! client's own edit tool, and says it is done. What the model received (the announce's
//! answer) is read from the fake's record, what landed from the disk and the board.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::fake_model::{FakeModel, Recorded, Turn};
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

/// Every text the model received, in every request: the system prompt, the tools' results,
/// the hooks' context.
fn texts_received(requests: &[Recorded]) -> Vec<String> {
    fn strings(value: &Value, into: &mut Vec<String>) {
        match value {
            Value::String(text) => into.push(text.clone()),
            Value::Array(items) => items.iter().for_each(|item| strings(item, into)),
            Value::Object(fields) => fields.values().for_each(|field| strings(field, into)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    for request in requests {
        strings(&request.body, &mut found);
    }
    found
}

/// The peers of `board` in `checkout`'s own board that are attached.
fn attached_here(board: &Value) -> Vec<Value> {
    board["peers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|peer| peer["attached"] == true && peer["checkout"]["this_checkout"] == true)
        .cloned()
        .collect()
}

/// One headless run of `client` under `[hooks] policy = "deny"`: announce `src/util.rs`,
/// write it, list the board, answer "done". Nothing the model received refuses the edit or
/// names the session itself as another; `alone`, nothing names any claim as another's.
/// Returns the fake, whose record is what the model received, and the listing it got.
async fn run_under_deny(
    client: Client,
    repo: &TempRepo,
    workspace: &Workspace<'_>,
    content: &str,
    alone: bool,
) -> (FakeModel, Value) {
    let checkout = repo.root();
    let fake = FakeModel::start(vec![
        Turn::call(
            "majordomus_announce",
            json!({"intent": "tidy util", "scope": ["src/util.rs"]}),
        ),
        client.write_file(checkout, "src/util.rs", content),
        Turn::call("majordomus_peers", json!({})),
        Turn::answer("done"),
    ])
    .await;
    let run: ClientRun = workspace.run(checkout, &fake, "Tidy src/util.rs.").await;
    assert!(
        run.status.success(),
        "{client:?} failed ({}):\n{}\nthe fake model saw:\n{}",
        run.status,
        run.output(),
        fake.summary()
    );
    assert_eq!(fake.unplayed(), 0, "{}", fake.summary());
    assert_eq!(
        std::fs::read_to_string(checkout.join("src/util.rs"))
            .ok()
            .as_deref(),
        Some(content),
        "the session's own claim did not stop its own edit:\n{}",
        run.output()
    );
    let listed = fake
        .tool_result("majordomus_peers")
        .unwrap_or_else(|| panic!("the listing reached the model:\n{}", fake.summary()));
    // Some clients wrap a tool's text (Gemini CLI in `<untrusted_context>`): the JSON inside.
    let json_text = listed
        .find('{')
        .zip(listed.rfind('}'))
        .map_or("", |(start, end)| &listed[start..=end]);
    let listed: Value = serde_json::from_str(json_text)
        .unwrap_or_else(|e| panic!("the listing is JSON ({e}): {listed}"));
    let me = listed["caller"]
        .as_str()
        .expect("the listing names its caller");
    let named_as_another = format!("{me} (\"");
    for text in texts_received(&fake.requests()) {
        assert!(
            !text.contains("majordomus refused"),
            "the edit was refused: {text}"
        );
        assert!(
            !text.contains(&named_as_another),
            "the model was shown its own session ({me}) as another: {text}"
        );
        if alone {
            for finding in ["other sessions claim", "lies in the claim of"] {
                assert!(
                    !text.contains(finding),
                    "the model was told of its own claim as another session's: {text}"
                );
            }
        }
    }
    (fake, listed)
}

/// One session is one peer, is gone with its `edits` claim once it exits, and the next
/// session's edit of the same file is not refused.
async fn one_session_one_peer_gone_at_exit(client: Client) {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    std::fs::write(
        checkout.join("majordomus.toml"),
        "[hooks]\npolicy = \"deny\"\n",
    )
    .unwrap();
    let workspace = Workspace::new(&repo, client);
    workspace.install(&checkout).await;
    let (_server, _lease) = ServeProcess::start(&repo, &checkout).await;

    let (_, listed) = run_under_deny(client, &repo, &workspace, WRITTEN, true).await;
    let here = attached_here(&listed);
    assert_eq!(
        here.len(),
        1,
        "one session, one peer, its hooks and its MCP connection alike: {listed:#}"
    );
    assert_eq!(here[0]["id"], listed["caller"], "{listed:#}");
    let claims: Vec<&Value> = here[0]["claims"].as_array().unwrap().iter().collect();
    assert!(
        claims.iter().any(|claim| claim["name"] == "edits"),
        "the hooks' edit landed on the MCP connection's peer: {listed:#}"
    );
    assert!(
        claims.iter().any(|claim| claim["intent"] == "tidy util"),
        "{listed:#}"
    );

    // Gone within 5 s of its exit: no attached peer, no `edits` claim.
    let exited = Instant::now();
    loop {
        let board = peers(&repo, &checkout).await;
        let edits = board["peers"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|peer| peer["claims"].as_array().into_iter().flatten())
            .any(|claim| claim["name"] == "edits");
        if attached_here(&board).is_empty() && !edits {
            break;
        }
        assert!(
            exited.elapsed() < Duration::from_secs(5),
            "the finished session is still on the board: {board:#}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The same person's next run on the same file: not refused.
    // The finished session's announced claim may be told to it, as information.
    run_under_deny(client, &repo, &workspace, "pub fn tidier() {}\n", false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_is_one_peer_and_leaves_at_exit() {
    one_session_one_peer_gone_at_exit(Client::ClaudeCode).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_is_one_peer_and_leaves_at_exit() {
    one_session_one_peer_gone_at_exit(Client::Codex).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_is_one_peer_and_leaves_at_exit() {
    one_session_one_peer_gone_at_exit(Client::GeminiCli).await;
}
