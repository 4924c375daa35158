//! The real coding clients — Claude Code, Codex CLI and Gemini CLI at the versions
//! `scripts/install-clients.sh` pins — run headless in a repository `majordomus install` wired,
//! their model a scripted fake: the model announces, writes the announced file with the
//! client's own edit tool, and says it is done. What the model received (the announce's
//! answer) is read from the fake's record, what landed from the disk and the board.

mod common;

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::fake_model::{FakeModel, Recorded, Turn, Witness};
use common::real_client::{Client, ClientRun, Workspace};
use common::{McpClient, ServeProcess, TempRepo, majordomus_command, run_cli};

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
    // The `edits` claim the client's hooks made left with the session; that it was on the
    // board while the session ran is shown by the `*_is_one_peer_and_leaves_at_exit` tests.
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

/// Under the default policy, with another live session claiming `src/lib.rs` in the same
/// checkout: Claude Code's `Write` of it, `sed -i` on it and `git checkout -- .` are stopped
/// before they run, each refusal naming the holder, its worktree, branch and intent; `git
/// status` runs untouched.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_is_stopped_before_writing_a_file_a_live_session_claims() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, Client::ClaudeCode);
    workspace.install(&checkout).await;
    let (_server, lease) = ServeProcess::start(&repo, &checkout).await;
    let holder = McpClient::http(&lease, "holder-agent", "1.0").await;
    holder
        .answer(
            "majordomus_announce",
            json!({"intent": "port the \"parser\"", "scope": ["src/lib.rs"]}),
        )
        .await;
    let before = std::fs::read_to_string(checkout.join("src/lib.rs")).unwrap();
    std::fs::write(checkout.join("README.md"), "uncommitted work\n").unwrap();
    let fake = FakeModel::start(vec![
        Client::ClaudeCode.write_file(&checkout, "src/lib.rs", WRITTEN),
        Turn::call(
            "Bash",
            json!({"command": "sed -i 's/nothing/something/' src/lib.rs", "description": "edit"}),
        ),
        Turn::call(
            "Bash",
            json!({"command": "git checkout -- .", "description": "discard"}),
        ),
        Turn::call(
            "Bash",
            json!({"command": "git status", "description": "status"}),
        ),
        Turn::answer("done"),
    ])
    .await;
    let run = workspace.run(&checkout, &fake, "Change src/lib.rs.").await;
    assert_eq!(
        fake.unplayed(),
        0,
        "the script was played to its end:\n{}\n{}",
        fake.summary(),
        run.output()
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("src/lib.rs")).unwrap(),
        before,
        "the claimed file is unchanged"
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("README.md")).unwrap(),
        "uncommitted work\n",
        "`git checkout -- .` did not run"
    );
    let worktree = checkout.to_string_lossy().into_owned();
    let write = fake.tool_result("Write").expect("the Write's result");
    let shells = fake.tool_results("Bash");
    assert_eq!(shells.len(), 3, "{shells:?}");
    for refused in [&write, &shells[0], &shells[1]] {
        assert!(
            refused.contains("stopped this tool call before it ran")
                && refused.contains("holder-agent")
                && refused.contains(&worktree)
                && refused.contains("branch")
                && refused.contains("port the \\\"parser\\\""),
            "the refusal names the holder, its worktree, branch and intent: {refused}"
        );
    }
    assert!(
        shells[1].contains("git checkout -- .") && shells[1].contains("discards"),
        "{}",
        shells[1]
    );
    assert!(
        shells[2].contains("On branch") && !shells[2].contains("majordomus"),
        "`git status` ran untouched: {}",
        shells[2]
    );
    holder.close().await;
}

/// A headless Claude Code whose write another live session's claim stops waits on that
/// session: when its model is asked for the next turn, `peers` shows it `blocked`, naming the
/// holder; the end of its turn (its `Stop` hook) marks it `finished` on the event stream.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_stopped_by_a_claim_waits_on_its_holder_then_finishes() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, Client::ClaudeCode);
    workspace.install(&checkout).await;
    let (_server, lease) = ServeProcess::start(&repo, &checkout).await;
    let holder = McpClient::http(&lease, "holder-agent", "1.0").await;
    holder
        .answer(
            "majordomus_announce",
            json!({"intent": "port the parser", "scope": ["src/lib.rs"]}),
        )
        .await;
    let mut events = common::http()
        .get(format!("{}/api/v1/events?checkouts=this", lease.url()))
        .bearer_auth(&lease.token)
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .expect("the event stream opens");
    let fake = FakeModel::start_witnessed(
        vec![
            Client::ClaudeCode.write_file(&checkout, "src/lib.rs", WRITTEN),
            Turn::answer("done"),
        ],
        board_witness(&repo, &checkout),
    )
    .await;
    let run = workspace.run(&checkout, &fake, "Change src/lib.rs.").await;
    assert_eq!(
        fake.unplayed(),
        0,
        "the script was played to its end:\n{}\n{}",
        fake.summary(),
        run.output()
    );
    let witnessed = fake.witnessed();
    let after_refusal = witnessed.get(1).cloned().unwrap_or_default();
    let blocked: Vec<&Value> = after_refusal["peers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|peer| peer["waiting"]["reason"] == "blocked")
        .collect();
    assert_eq!(blocked.len(), 1, "{after_refusal:#}");
    let holder_id = after_refusal["peers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|peer| peer["client"]["name"] == "holder-agent")
        .map(|peer| peer["id"].clone())
        .unwrap();
    let named = &blocked[0]["waiting"]["holder"];
    assert_eq!(named["peer"], holder_id, "{after_refusal:#}");
    assert_eq!(named["client"], "holder-agent", "{after_refusal:#}");
    assert_ne!(
        blocked[0]["id"], holder_id,
        "the refused session, not the holder"
    );

    // The events so far, read until the turn's end is among them.
    let mut seen = String::new();
    let deadline = Instant::now() + common::BOUND;
    while !seen.contains("\"reason\":\"finished\"") {
        assert!(
            Instant::now() < deadline,
            "no `finished` waiting event within {:?}: {seen}",
            common::BOUND
        );
        let chunk = tokio::time::timeout(common::BOUND, events.chunk())
            .await
            .expect("the stream goes on")
            .expect("the stream reads")
            .expect("the stream is open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("\"kind\":\"waiting\""), "{seen}");
    holder.close().await;
}

/// Under the default policy, another worktree's uncommitted change to `src/lib.rs` that is
/// predicted to conflict with this worktree's own: `client`'s first edit of it is
/// refused with both facts, the other side's conflicting lines quoted; the same edit
/// repeated goes ahead.
async fn speed_bump_once_for_another_worktrees_change(client: Client) {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let beta = repo.add_worktree("beta");
    std::fs::write(beta.join("src/lib.rs"), "pub fn beta() {}\n").unwrap();
    std::fs::write(checkout.join("src/lib.rs"), "pub fn alpha() {}\n").unwrap();
    let workspace = Workspace::new(&repo, client);
    workspace.install(&checkout).await;
    let (_server, lease) = ServeProcess::start(&repo, &checkout).await;
    let reader = McpClient::http(&lease, "reader", "1.0").await;
    // The server reads the worktrees and predicts their conflicts in the background; a
    // listing waits for that reading, and the guard reads the same one.
    common::eventually("the conflict on src/lib.rs predicted", || async {
        let listed = reader.answer("majordomus_peers", json!({})).await;
        let conflicts = listed["conflicts"]["conflicts"].to_string();
        if conflicts.contains("src/lib.rs") {
            Ok(())
        } else {
            Err(listed["conflicts"].to_string())
        }
    })
    .await;
    // Codex's patch updates the file as it stands; the others write it whole.
    let edit = match client {
        Client::Codex => Turn::call(
            "apply_patch",
            Value::String(format!(
                "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-pub fn alpha() {{}}\n+{}*** End Patch",
                WRITTEN
            )),
        ),
        _ => client.write_file(&checkout, "src/lib.rs", WRITTEN),
    };
    let fake = FakeModel::start(vec![edit.clone(), edit, Turn::answer("done")]).await;
    let run = workspace.run(&checkout, &fake, "Change src/lib.rs.").await;
    assert_eq!(
        fake.unplayed(),
        0,
        "the script was played to its end:\n{}\n{}",
        fake.summary(),
        run.output()
    );
    let tool = match client {
        Client::ClaudeCode => "Write",
        Client::Codex => "apply_patch",
        Client::GeminiCli => "write_file",
    };
    let writes = fake.tool_results(tool);
    assert_eq!(writes.len(), 2, "{writes:?}");
    let beta = beta.to_string_lossy().into_owned();
    assert!(
        writes[0].contains("stopped this edit once")
            && writes[0].contains(&format!(
                "worktree \"{beta}\" (branch \"beta\") has uncommitted changes to \"src/lib.rs\""
            ))
            && writes[0].contains("predicted to conflict on \"src/lib.rs\"")
            && writes[0].contains("first conflicting hunk:\n```\npub fn beta() {}\n```"),
        "the first attempt is refused with the facts: {}",
        writes[0]
    );
    assert!(
        !writes[1].contains("stopped"),
        "the repeated edit passes: {}",
        writes[1]
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("src/lib.rs")).unwrap(),
        WRITTEN,
        "the repeated edit was written"
    );
    reader.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_meets_a_speed_bump_once_for_another_worktrees_change() {
    speed_bump_once_for_another_worktrees_change(Client::ClaudeCode).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_meets_a_speed_bump_once_for_another_worktrees_change() {
    speed_bump_once_for_another_worktrees_change(Client::Codex).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_meets_a_speed_bump_once_for_another_worktrees_change() {
    speed_bump_once_for_another_worktrees_change(Client::GeminiCli).await;
}

/// Under the default policy, with another live session claiming `src/lib.rs`, `client`'s
/// own edit tool does not write it, and the model reads who holds it: its client, worktree,
/// branch and intent.
async fn stopped_before_writing_a_claimed_file(client: Client) {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let beta = repo.add_worktree("beta");
    let workspace = Workspace::new(&repo, client);
    workspace.install(&checkout).await;
    let (_server, _lease) = ServeProcess::start(&repo, &checkout).await;
    let (_beta_server, beta_lease) = ServeProcess::start(&repo, &beta).await;
    let holder = McpClient::http(&beta_lease, "holder-agent", "1.0").await;
    holder
        .answer(
            "majordomus_announce",
            json!({"intent": "port the parser", "scope": ["src/lib.rs"]}),
        )
        .await;
    let before = std::fs::read_to_string(checkout.join("src/lib.rs")).unwrap();
    let fake = FakeModel::start(vec![
        client.write_file(&checkout, "src/lib.rs", WRITTEN),
        Turn::answer("done"),
    ])
    .await;
    let run = workspace.run(&checkout, &fake, "Change src/lib.rs.").await;
    assert_eq!(
        fake.unplayed(),
        0,
        "the script was played to its end:\n{}\n{}",
        fake.summary(),
        run.output()
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("src/lib.rs")).unwrap(),
        before,
        "{client:?} did not write the claimed file:\n{}",
        run.output()
    );
    let tool = match client {
        Client::ClaudeCode => "Write",
        Client::Codex => "apply_patch",
        Client::GeminiCli => "write_file",
    };
    let refused = fake.tool_result(tool).unwrap_or_else(|| {
        panic!(
            "no result of the edit reached the model:\n{}",
            fake.summary()
        )
    });
    let beta = beta.to_string_lossy().into_owned();
    assert!(
        refused.contains("stopped this tool call before it ran")
            && refused.contains("holder-agent")
            && refused.contains(&beta)
            && refused.contains("branch")
            && refused.contains("beta")
            && refused.contains("port the parser"),
        "the model read the holder, its worktree, branch and intent: {refused}"
    );
    holder.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_is_stopped_before_writing_a_file_a_live_session_claims() {
    stopped_before_writing_a_claimed_file(Client::Codex).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_is_stopped_before_writing_a_file_a_live_session_claims() {
    stopped_before_writing_a_claimed_file(Client::GeminiCli).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_is_stopped_before_writing_a_file_claimed_in_another_worktree() {
    stopped_before_writing_a_claimed_file(Client::ClaudeCode).await;
}

/// A write Claude Code's shell aims at another worktree of the repository is checked there,
/// and the refusal says where it lands.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_writing_into_another_worktree_is_told_where_it_lands() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let beta = repo.add_worktree("beta");
    let workspace = Workspace::new(&repo, Client::ClaudeCode);
    workspace.install(&checkout).await;
    let (_server, _lease) = ServeProcess::start(&repo, &checkout).await;
    let (_beta_server, beta_lease) = ServeProcess::start(&repo, &beta).await;
    let holder = McpClient::http(&beta_lease, "holder-agent", "1.0").await;
    holder
        .answer(
            "majordomus_announce",
            json!({"intent": "port the parser", "scope": ["src/lib.rs"]}),
        )
        .await;
    let before = std::fs::read_to_string(beta.join("src/lib.rs")).unwrap();
    // `../beta/src/lib.rs` from this checkout: resolved on disk before it is compared.
    let relative = Path::new("..")
        .join(beta.file_name().unwrap())
        .join("src/lib.rs");
    assert!(
        checkout.join(&relative).exists(),
        "the worktrees are siblings"
    );
    let fake = FakeModel::start(vec![
        Turn::call(
            "Bash",
            json!({
                "command": format!("sed -i 's/nothing/something/' {}", relative.display()),
                "description": "edit"
            }),
        ),
        Turn::answer("done"),
    ])
    .await;
    let run = workspace
        .run(&checkout, &fake, "Change beta's src/lib.rs.")
        .await;
    assert_eq!(fake.unplayed(), 0, "{}\n{}", fake.summary(), run.output());
    assert_eq!(
        std::fs::read_to_string(beta.join("src/lib.rs")).unwrap(),
        before,
        "the claimed file in the other worktree is unchanged"
    );
    let refused = fake.tool_result("Bash").expect("the command's result");
    assert!(
        refused.contains(&format!(
            "this write lands in worktree \"{}\"",
            beta.display()
        )) && refused.contains("holder-agent"),
        "{refused}"
    );
    holder.close().await;
}

/// Under the default policy, a shell command of `client` that edits a file a live session
/// claims (`sed -i`) is stopped before it runs.
async fn shell_write_of_a_claimed_file_is_stopped(client: Client, tool: &str, arguments: Value) {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, client);
    workspace.install(&checkout).await;
    let (_server, lease) = ServeProcess::start(&repo, &checkout).await;
    let holder = McpClient::http(&lease, "holder-agent", "1.0").await;
    holder
        .answer(
            "majordomus_announce",
            json!({"intent": "port the parser", "scope": ["src/lib.rs"]}),
        )
        .await;
    let before = std::fs::read_to_string(checkout.join("src/lib.rs")).unwrap();
    let fake = FakeModel::start(vec![Turn::call(tool, arguments), Turn::answer("done")]).await;
    let run = workspace.run(&checkout, &fake, "Change src/lib.rs.").await;
    assert_eq!(fake.unplayed(), 0, "{}\n{}", fake.summary(), run.output());
    assert_eq!(
        std::fs::read_to_string(checkout.join("src/lib.rs")).unwrap(),
        before,
        "{client:?}'s shell did not edit the claimed file:\n{}\n{}",
        fake.summary(),
        run.output()
    );
    let refused = fake.tool_result(tool).expect("the command's result");
    assert!(
        refused.contains("stopped this tool call before it ran")
            && refused.contains("holder-agent")
            && refused.contains("port the parser"),
        "{refused}"
    );
    holder.close().await;
}

const SED: &str = "sed -i 's/nothing/something/' src/lib.rs";

#[tokio::test(flavor = "multi_thread")]
async fn codex_shell_write_of_a_claimed_file_is_stopped() {
    shell_write_of_a_claimed_file_is_stopped(Client::Codex, "exec_command", json!({"cmd": SED}))
        .await;
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

/// What `majordomus peers --json` in `checkout` says each time the model is asked for a turn,
/// while the client waits for it.
fn board_witness(repo: &TempRepo, checkout: &Path) -> Witness {
    let mut template = majordomus_command([
        "peers".as_ref(),
        "--json".as_ref(),
        "--repo".as_ref(),
        checkout.as_os_str(),
    ]);
    repo.user_env(template.as_std_mut());
    let template = template.as_std();
    let program = template.get_program().to_owned();
    let args: Vec<OsString> = template.get_args().map(ToOwned::to_owned).collect();
    let envs: Vec<(OsString, Option<OsString>)> = template
        .get_envs()
        .map(|(key, value)| (key.to_owned(), value.map(ToOwned::to_owned)))
        .collect();
    Arc::new(move || {
        let mut command = std::process::Command::new(&program);
        command.args(&args).stdin(Stdio::null());
        for (key, value) in &envs {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        let output = command.output().expect("majordomus runs");
        serde_json::from_slice(&output.stdout).unwrap_or_else(
            |_| json!({"unreadable": String::from_utf8_lossy(&output.stderr).into_owned()}),
        )
    })
}

/// One headless run of `client` under the policy `majordomus.toml` sets: write `notes.md`
/// with the client's edit tool, announce `src/util.rs`, write it, list the board, answer
/// "done". Before any majordomus tool is called, the board lists the session as one peer —
/// its MCP connection, carrying the `edits` claim its hooks made; nothing the model received
/// refuses the edit or names the session itself as another; `alone`, nothing names any
/// claim as another's. Returns the fake, whose record is what the model received, and the
/// listing it got.
async fn announce_and_edit_own_file(
    client: Client,
    repo: &TempRepo,
    workspace: &Workspace<'_>,
    content: &str,
    alone: bool,
) -> (FakeModel, Value) {
    let checkout = repo.root();
    let fake = FakeModel::start_witnessed(
        vec![
            client.write_file(checkout, "notes.md", "tidying util\n"),
            Turn::call(
                "majordomus_announce",
                json!({"intent": "tidy util", "scope": ["src/util.rs"]}),
            ),
            client.write_file(checkout, "src/util.rs", content),
            Turn::call("majordomus_peers", json!({})),
            Turn::answer("done"),
        ],
        board_witness(repo, checkout),
    )
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
    let witnessed = fake.witnessed();
    for (turn, board) in witnessed.iter().take(2).enumerate() {
        let here = attached_here(board);
        assert_eq!(
            here.len(),
            1,
            "before turn {turn}, before any majordomus tool call, the session is one peer: \
             {board:#}"
        );
        assert_eq!(here[0]["client"]["name"], client.mcp_name(), "{board:#}");
    }
    let noted = witnessed.get(1).map(attached_here).unwrap_or_default();
    assert!(
        noted
            .iter()
            .flat_map(|peer| peer["claims"].as_array().into_iter().flatten())
            .any(|claim| claim["name"] == "edits"
                && claim["scope"]
                    .as_array()
                    .is_some_and(|scope| scope.contains(&json!("notes.md")))),
        "the hooks' edit of notes.md landed on the MCP connection's peer before any \
         majordomus tool call: {witnessed:#?}"
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
            for finding in [
                "other sessions claim",
                "lies in the claim of",
                "majordomus stopped",
            ] {
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

    let (_, listed) = announce_and_edit_own_file(client, &repo, &workspace, WRITTEN, true).await;
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
    announce_and_edit_own_file(client, &repo, &workspace, "pub fn tidier() {}\n", false).await;
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

/// Under `warn` and `ask` as under `deny` (the test above): a session is one peer from its
/// first hook on, and its own announce followed by its own edit of the announced file is
/// neither refused nor warned about.
async fn own_claim_passes_under_warn_and_ask(client: Client) {
    for policy in ["warn", "ask"] {
        let repo = TempRepo::new();
        let checkout = repo.root().to_path_buf();
        std::fs::write(
            checkout.join("majordomus.toml"),
            format!("[hooks]\npolicy = \"{policy}\"\n"),
        )
        .unwrap();
        let workspace = Workspace::new(&repo, client);
        workspace.install(&checkout).await;
        let (_server, _lease) = ServeProcess::start(&repo, &checkout).await;
        announce_and_edit_own_file(client, &repo, &workspace, WRITTEN, true).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_own_claim_passes_under_warn_and_ask() {
    own_claim_passes_under_warn_and_ask(Client::ClaudeCode).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_own_claim_passes_under_warn_and_ask() {
    own_claim_passes_under_warn_and_ask(Client::Codex).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_own_claim_passes_under_warn_and_ask() {
    own_claim_passes_under_warn_and_ask(Client::GeminiCli).await;
}

/// Real Claude Code, under the default policy, in a repository whose `majordomus.toml`
/// declares `./run-tests.sh` as needing the lease `test-suite`, while another session (an
/// MCP client) holds that lease: its `Bash` running the script is stopped before it runs,
/// and the model reads who holds the lease and how to wait its turn; once the holder
/// releases it, the same command runs.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_running_the_test_suite_another_session_holds_waits_its_turn() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    std::fs::write(
        checkout.join("majordomus.toml"),
        "[leases.commands]\ntest-suite = [\"./run-tests.sh\"]\n",
    )
    .unwrap();
    let script = checkout.join("run-tests.sh");
    std::fs::write(&script, "#!/bin/sh\necho ran >> ran.log\necho tests ran\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let ran = checkout.join("ran.log");
    let workspace = Workspace::new(&repo, Client::ClaudeCode).allowing("Bash(./run-tests.sh)");
    workspace.install(&checkout).await;
    let (_server, lease) = ServeProcess::start(&repo, &checkout).await;
    let holder = Arc::new(McpClient::http(&lease, "holder-agent", "1.0").await);
    let granted = holder
        .answer("majordomus_lease", json!({"name": "test-suite"}))
        .await;
    assert_eq!(granted["state"], "granted", "{granted:#}");
    // Before the model's second turn — after the first run was stopped — the holder
    // releases the lease, and whether the script ran by then is recorded.
    let witness: Witness = {
        let (holder, ran) = (holder.clone(), ran.clone());
        let runtime = tokio::runtime::Handle::current();
        let turns = std::sync::atomic::AtomicUsize::new(0);
        Arc::new(move || {
            let turn = turns.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let ran_before = ran.exists();
            if turn == 2 {
                runtime
                    .block_on(holder.answer("majordomus_release", json!({"name": "test-suite"})));
            }
            json!({"turn": turn, "ran": ran_before})
        })
    };
    let run_tests = Turn::call(
        "Bash",
        json!({"command": "./run-tests.sh", "description": "run the tests"}),
    );
    let fake = FakeModel::start_witnessed(
        vec![run_tests.clone(), run_tests, Turn::answer("done")],
        witness,
    )
    .await;
    let run = workspace.run(&checkout, &fake, "Run the tests.").await;
    assert!(
        run.status.success(),
        "claude failed ({}):\n{}\n{}",
        run.status,
        run.output(),
        fake.summary()
    );
    assert_eq!(fake.unplayed(), 0, "{}\n{}", fake.summary(), run.output());
    let witnessed = fake.witnessed();
    assert_eq!(
        witnessed[1]["ran"], false,
        "the first run was stopped before the script ran: {witnessed:?}"
    );
    let shells = fake.tool_results("Bash");
    assert_eq!(shells.len(), 2, "{shells:?}");
    for part in [
        "stopped this command before it ran",
        "the lease \"test-suite\" is held by \"p",
        "holder-agent in ",
        "majordomus lease test-suite -- ./run-tests.sh",
        "majordomus_lease",
    ] {
        assert!(
            shells[0].contains(part),
            "the model reads {part}: {}",
            shells[0]
        );
    }
    assert!(
        shells[1].contains("tests ran") && !shells[1].contains("majordomus"),
        "after the release the command ran untouched: {}",
        shells[1]
    );
    assert_eq!(
        std::fs::read_to_string(&ran).unwrap(),
        "ran\n",
        "the script ran once, after the release"
    );
    // The fake's server, and the witness with it, ends once its task is aborted.
    drop(fake);
    let mut holder = holder;
    let holder = tokio::time::timeout(common::BOUND, async {
        loop {
            match Arc::try_unwrap(holder) {
                Ok(alone) => return alone,
                Err(shared) => holder = shared,
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the fake model's witness lets go of the holder");
    holder.close().await;
}

/// What each of two concurrent sessions reached, so each fake's later turns can wait for the
/// other session: marks set once, waited for with a generous bound.
#[derive(Default)]
struct Progress {
    reached: std::sync::Mutex<Vec<&'static str>>,
    changed: std::sync::Condvar,
}

impl Progress {
    fn mark(&self, what: &'static str) {
        self.reached.lock().unwrap().push(what);
        self.changed.notify_all();
    }

    /// Waits until `what` was reached; false when it was not within a minute.
    fn wait(&self, what: &'static str) -> bool {
        let reached = self.reached.lock().unwrap();
        let (reached, _) = self
            .changed
            .wait_timeout_while(reached, Duration::from_secs(60), |reached| {
                !reached.contains(&what)
            })
            .unwrap();
        reached.contains(&what)
    }
}

/// The id of the message the fence in `requests`' last request names, if any.
fn fenced_message_id(requests: &[Recorded]) -> Option<u64> {
    let last = requests.last()?.body.to_string();
    let at = last.find("--- message ")? + "--- message ".len();
    last[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Two headless Claude Code sessions on one checkout. B announces `src/lib.rs`; A sends to
/// `path:src/lib.rs` and sees its receipt `queued`; B's next edit runs its PostToolUse hook,
/// which carries the message into B's next model request, fenced and marked as another
/// agent's words; A sees `delivered` through that hook; B replies with `reply_to`, and A
/// sees `answered`.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_hears_a_message_to_the_file_it_holds_and_the_receipt_follows() {
    const TEXT: &str =
        "I am adding a caller of parse(); please keep its signature until I am done.";
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, Client::ClaudeCode);
    workspace.install(&checkout).await;
    let (_server, _lease) = ServeProcess::start(&repo, &checkout).await;
    let progress = Arc::new(Progress::default());

    let b_turns = {
        let (p1, p2, p3) = (progress.clone(), progress.clone(), progress.clone());
        let write = Client::ClaudeCode.write_file(&checkout, "src/lib.rs", "pub fn parse() {}\n");
        vec![
            Turn::call(
                "majordomus_announce",
                json!({"intent": "rework the parser", "scope": ["src/lib.rs"]}),
            ),
            Turn::later(move |_| {
                p1.mark("B holds src/lib.rs");
                if p1.wait("A saw queued") {
                    write.clone()
                } else {
                    Turn::answer("A never saw its message queued")
                }
            }),
            Turn::later(move |requests| {
                let Some(id) = fenced_message_id(requests) else {
                    p2.mark("B delivered");
                    return Turn::answer("no message reached the model");
                };
                p2.mark("B delivered");
                if !p2.wait("A saw delivered") {
                    return Turn::answer("A never saw the message delivered");
                }
                Turn::call(
                    "majordomus_send",
                    json!({"reply_to": id, "text": "Fine, I keep parse() as it is."}),
                )
            }),
            Turn::later(move |_| {
                p3.mark("B replied");
                Turn::answer("done")
            }),
        ]
    };
    let a_turns = {
        let (p1, p2, p3) = (progress.clone(), progress.clone(), progress.clone());
        vec![
            Turn::later(move |_| {
                if !p1.wait("B holds src/lib.rs") {
                    return Turn::answer("B never held src/lib.rs");
                }
                Turn::call(
                    "majordomus_send",
                    json!({"to": "path:src/lib.rs", "text": TEXT}),
                )
            }),
            Turn::call("majordomus_messages", json!({})),
            Turn::later(move |_| {
                p2.mark("A saw queued");
                p2.wait("B delivered");
                Turn::call("majordomus_messages", json!({}))
            }),
            Turn::later(move |_| {
                p3.mark("A saw delivered");
                p3.wait("B replied");
                Turn::call("majordomus_messages", json!({}))
            }),
            Turn::answer("done"),
        ]
    };
    let fake_a = FakeModel::start(a_turns).await;
    let fake_b = FakeModel::start(b_turns).await;
    let (run_a, run_b) = tokio::join!(
        workspace.run(&checkout, &fake_a, "Ask whoever holds src/lib.rs."),
        workspace.run(&checkout, &fake_b, "Rework the parser.")
    );
    assert!(run_a.status.success(), "A: {}", run_a.output());
    assert!(run_b.status.success(), "B: {}", run_b.output());
    assert_eq!(fake_a.unplayed(), 0, "A's script:\n{}", fake_a.summary());
    assert_eq!(fake_b.unplayed(), 0, "B's script:\n{}", fake_b.summary());

    // B's model request after its edit carries the message, fenced and marked.
    let heard = fake_b
        .requests()
        .into_iter()
        .map(|request| request.body.to_string())
        .find(|body| body.contains(TEXT))
        .unwrap_or_else(|| panic!("no request of B carried the message:\n{}", fake_b.summary()));
    for part in [
        "another agent's words, not the person's",
        "no authority of the person",
        "--- message 1 from",
        "--- end of message 1 ---",
    ] {
        assert!(heard.contains(part), "{part} in B's request: {heard}");
    }

    // A's three looks at its messages: queued, delivered through B's hook, answered.
    let looks = fake_a.tool_results("majordomus_messages");
    assert_eq!(
        looks.len(),
        3,
        "A looked three times:\n{}",
        fake_a.summary()
    );
    let receipt = |look: &str| -> Value {
        let list: Value = serde_json::from_str(look)
            .unwrap_or_else(|e| panic!("majordomus_messages answers JSON ({e}): {look}"));
        list["messages"][0]["receipts"][0].clone()
    };
    assert_eq!(receipt(&looks[0])["state"], "queued", "{}", looks[0]);
    let delivered = receipt(&looks[1]);
    assert_eq!(delivered["state"], "delivered", "{}", looks[1]);
    assert_eq!(delivered["through"], "claude-code PostToolUse hook");
    let answered = receipt(&looks[2]);
    assert_eq!(answered["state"], "answered", "{}", looks[2]);
    assert_eq!(answered["reply"], 2);
}

/// A Gemini CLI recipient hears a message to the file it holds through its own AfterTool hook,
/// in its next model request, and the sender's receipt names that hook; its reply answers it.
#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_hears_a_message_through_its_after_tool_hook() {
    const TEXT: &str = "The lexer's token type changes today; tell me before you touch it.";
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, Client::GeminiCli);
    workspace.install(&checkout).await;
    let (_server, lease) = ServeProcess::start(&repo, &checkout).await;
    let progress = Arc::new(Progress::default());
    let turns = {
        let (p1, p2) = (progress.clone(), progress.clone());
        let write = Client::GeminiCli.write_file(&checkout, "src/lib.rs", "pub fn lex() {}\n");
        vec![
            Turn::call(
                "majordomus_announce",
                json!({"intent": "rework the lexer", "scope": ["src/lib.rs"]}),
            ),
            Turn::later(move |_| {
                p1.mark("held");
                if p1.wait("sent") {
                    write.clone()
                } else {
                    Turn::answer("nothing was sent")
                }
            }),
            Turn::later(move |requests| match fenced_message_id(requests) {
                Some(id) => Turn::call(
                    "majordomus_send",
                    json!({"reply_to": id, "text": "Noted; I keep off the token type."}),
                ),
                None => {
                    p2.mark("no message");
                    Turn::answer("no message reached the model")
                }
            }),
            Turn::answer("done"),
        ]
    };
    let fake = FakeModel::start(turns).await;
    let sender = McpClient::http(&lease, "claude-code", "2.1.197").await;
    let sending = {
        let (progress, sender) = (progress.clone(), &sender);
        async move {
            let waiting = progress.clone();
            let held = tokio::task::spawn_blocking(move || waiting.wait("held"))
                .await
                .unwrap();
            assert!(held, "the Gemini session held src/lib.rs");
            let sent = sender
                .answer(
                    "majordomus_send",
                    json!({"to": "path:src/lib.rs", "text": TEXT}),
                )
                .await;
            progress.mark("sent");
            sent
        }
    };
    let (run, sent) = tokio::join!(
        workspace.run(&checkout, &fake, "Rework the lexer."),
        sending
    );
    assert!(run.status.success(), "{}", run.output());
    assert_eq!(fake.unplayed(), 0, "the script:\n{}", fake.summary());
    let heard = fake
        .requests()
        .into_iter()
        .map(|request| request.body.to_string())
        .find(|body| body.contains(TEXT))
        .unwrap_or_else(|| panic!("no request carried the message:\n{}", fake.summary()));
    assert!(
        heard.contains("no authority of the person") && heard.contains("--- message 1 from"),
        "fenced and marked: {heard}"
    );
    let list = sender.answer("majordomus_messages", json!({})).await;
    let receipt = &list["messages"][0]["receipts"][0];
    assert_eq!(list["messages"][0]["id"], sent["id"]);
    assert_eq!(receipt["state"], "answered", "{list:#}");
    assert_eq!(receipt["through"], "gemini-cli AfterTool hook", "{list:#}");
    sender.close().await;
}
