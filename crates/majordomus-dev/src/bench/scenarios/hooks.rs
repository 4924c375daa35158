//! The hook command's scenario: a client's pre-edit hook, as the client runs it.

use super::super::setup::spawned;
use super::*;

/// A Claude Code `PreToolUse` event for an edit of `src/parser/lexer.rs` in `root`.
pub(super) fn pre_edit_event(root: &std::path::Path) -> Vec<u8> {
    let file = root.join("src/parser/lexer.rs");
    json!({
        "session_id": "bench-hook-session",
        "cwd": root,
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": file, "old_string": "a", "new_string": "b", "replace_all": false},
        "tool_use_id": "toolu_bench",
    })
    .to_string()
    .into_bytes()
}

/// Runs one `majordomus hook claude-code PreToolUse` with `event` on its stdin: the time from
/// spawning it to its exit, and what it printed.
pub(super) async fn run_hook(
    scratch: &Scratch,
    root: &std::path::Path,
    event: &[u8],
) -> Result<(Duration, String), String> {
    let mut command = tokio::process::Command::new(scratch.exe());
    command
        .args(["hook", "claude-code", "PreToolUse"])
        .current_dir(root);
    spawned(command, event.to_vec(), "the hook").await
}

/// From spawning `majordomus hook` to its exit. With a server (`guarded`): another session
/// claims `src/parser` and the hook answers an edit of a file in it (under the default
/// policy, refuses it). Without one: the hook finds no server and exits at once with no
/// output.
pub(super) async fn hook(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    guarded: bool,
) -> Result<ScenarioRow, String> {
    let repository = TempRepository::new(
        scratch,
        if guarded {
            "hook-guard"
        } else {
            "hook-fail-open"
        },
    )?;
    let root = repository.root().to_path_buf();
    let event = pre_edit_event(&root);
    let server = if guarded {
        let (server, lease) = ServeProcess::start(scratch, &root).await?;
        let url = lease.url.clone().ok_or("the ready lease names no URL")?;
        let session = connect_kept_alive(&url, &lease.token, "codex").await?;
        let claimant = Caller::Mcp(session);
        let announce = registered("peers.announce");
        if let Outcome::Failure(why) = claimant
            .call(
                announce,
                &json!({"intent": "port the parser", "scope": ["src/parser"]}),
            )
            .await
        {
            server.stop().await;
            return Err(format!("the other session could not claim: {why}"));
        }
        Some((server, claimant))
    } else {
        None
    };
    let budget = Budget::scenario(options, 50, 300, 4.0);
    let samples = budget
        .sample(|| async {
            let (elapsed, printed) = run_hook(scratch, &root, &event).await?;
            match (guarded, printed.is_empty()) {
                (true, true) => Err("the guard said nothing about a claimed file".to_string()),
                (false, false) => Err(format!("with no server the hook printed {printed}")),
                _ => Ok(elapsed),
            }
        })
        .await;
    if let Some((server, claimant)) = server {
        claimant.close().await;
        server.stop().await;
    }
    let note = if guarded {
        "spawn → read the event → find the lease → POST /api/v1/hooks/guard (a repository-wide listing) → the answer printed → exit"
    } else {
        "spawn → read the event → find no server → exit 0, nothing printed"
    };
    Ok(ScenarioRow::latency(scenario, Summary::of(&samples?), note))
}
