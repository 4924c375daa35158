//! Each client's hook contract: which events majordomus answers, what their input says, and
//! what an answer must look like for the client to honour it.
//!
//! - Claude Code: `PreToolUse` / `PostToolUse` on `Write`, `Edit`, `MultiEdit` and
//!   `NotebookEdit` (absolute `file_path` or `notebook_path`), `SessionStart`,
//!   `UserPromptSubmit`. It honours `permissionDecision` `allow`, `ask` and `deny`; the
//!   reason reaches the model only on `deny`, and `additionalContext` reaches it on all four.
//! - Codex: the same events, edits being `apply_patch` with the patch in
//!   `tool_input.command`. Only a `deny` decision is honoured (`allow` or `ask` make the hook
//!   fail and the tool run), so none other is ever written; context without a decision
//!   works.
//! - Gemini CLI: `BeforeTool` / `AfterTool` on `write_file` and `replace` (absolute
//!   `file_path`), `SessionStart`, `BeforeAgent`. `BeforeTool` honours `decision` `deny`
//!   (with `reason`, sent to the model) and `ask`; `additionalContext` reaches the model on
//!   `AfterTool`, `BeforeAgent` and `SessionStart` only, so a warning before an edit is shown
//!   to the person and the model reads it once the edit is done.
//! - Cursor: `afterFileEdit` (`file_path`), which cannot block and whose answer is ignored.
//!
//! Claude Code, Codex and Gemini CLI say when a session ends (`SessionEnd`); nothing is
//! answered to it.
//!
//! Every client names the conversation: `session_id`, or Cursor's `conversation_id`.

use majordomus_checkout::config::GuardPolicy;
use serde_json::{Value, json};

use crate::capabilities::hooks::{HookClient, NewsMoment};
use crate::hooks::patch::touched_files;

/// What a hook event asks majordomus to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A file is about to change: check it against other sessions' claims.
    Guard(Vec<String>),
    /// Files just changed: record them in the session's `edits` claim.
    Edit(Vec<String>),
    /// Tell the session what it has not heard yet.
    News(NewsMoment),
    /// The session ended.
    End,
}

/// A hook event as majordomus understands it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The client's id of the conversation.
    pub session_id: String,
    /// The directory the client works in, when the input says.
    pub cwd: Option<String>,
    /// What to do.
    pub action: Action,
}

/// The events `majordomus install` wires for a client, in the order it writes them.
pub fn events(client: HookClient) -> &'static [&'static str] {
    match client {
        HookClient::ClaudeCode | HookClient::Codex => &[
            "PreToolUse",
            "PostToolUse",
            "SessionStart",
            "UserPromptSubmit",
            "SessionEnd",
        ],
        HookClient::GeminiCli => &[
            "BeforeTool",
            "AfterTool",
            "SessionStart",
            "BeforeAgent",
            "SessionEnd",
        ],
        HookClient::Cursor => &["afterFileEdit"],
    }
}

/// The tools whose calls edit files, as a hook matcher names them; `None` for an event
/// that is not about a tool.
pub fn edit_matcher(client: HookClient, event: &str) -> Option<&'static str> {
    match (client, event) {
        (HookClient::ClaudeCode, "PreToolUse" | "PostToolUse") => {
            Some("Write|Edit|MultiEdit|NotebookEdit")
        }
        (HookClient::Codex, "PreToolUse" | "PostToolUse") => Some("apply_patch"),
        (HookClient::GeminiCli, "BeforeTool" | "AfterTool") => Some("write_file|replace"),
        _ => None,
    }
}

/// Reads one hook input; `None` for an event majordomus has nothing to do with (another
/// tool, another event) or an input without a usable conversation id.
pub fn parse(client: HookClient, event: &str, input: &Value) -> Option<Event> {
    let session_id = match client {
        HookClient::Cursor => input.get("conversation_id"),
        _ => input.get("session_id"),
    }
    .and_then(Value::as_str)
    .map(str::trim)
    .filter(|id| !id.is_empty())?
    .to_owned();
    let cwd = match client {
        HookClient::Cursor => input
            .get("workspace_roots")
            .and_then(|roots| roots.get(0))
            .and_then(Value::as_str),
        _ => input.get("cwd").and_then(Value::as_str),
    }
    .map(str::to_owned);
    let action = match (client, event) {
        (HookClient::ClaudeCode | HookClient::Codex, "PreToolUse")
        | (HookClient::GeminiCli, "BeforeTool") => Action::Guard(edited_files(client, input)?),
        (HookClient::ClaudeCode | HookClient::Codex, "PostToolUse")
        | (HookClient::GeminiCli, "AfterTool") => Action::Edit(edited_files(client, input)?),
        (HookClient::Cursor, "afterFileEdit") => {
            Action::Edit(vec![input.get("file_path")?.as_str()?.to_owned()])
        }
        (HookClient::ClaudeCode | HookClient::Codex | HookClient::GeminiCli, "SessionStart") => {
            Action::News(NewsMoment::SessionStart)
        }
        (HookClient::ClaudeCode | HookClient::Codex, "UserPromptSubmit")
        | (HookClient::GeminiCli, "BeforeAgent") => Action::News(NewsMoment::Prompt),
        (HookClient::ClaudeCode | HookClient::Codex | HookClient::GeminiCli, "SessionEnd") => {
            Action::End
        }
        _ => return None,
    };
    Some(Event {
        session_id,
        cwd,
        action,
    })
}

/// The files a tool call edits, as its input names them; `None` when the tool edits none.
fn edited_files(client: HookClient, input: &Value) -> Option<Vec<String>> {
    let tool = input.get("tool_name")?.as_str()?;
    let arguments = input.get("tool_input")?;
    let named =
        |key: &str| -> Option<Vec<String>> { Some(vec![arguments.get(key)?.as_str()?.to_owned()]) };
    let files = match (client, tool) {
        (HookClient::ClaudeCode, "Write" | "Edit" | "MultiEdit") => named("file_path")?,
        (HookClient::ClaudeCode, "NotebookEdit") => named("notebook_path")?,
        (HookClient::Codex, "apply_patch") => touched_files(arguments.get("command")?.as_str()?),
        (HookClient::GeminiCli, "write_file" | "replace") => named("file_path")?,
        _ => return None,
    };
    (!files.is_empty()).then_some(files)
}

/// What majordomus has to say about one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Said {
    /// Other sessions claim files of an edit about to happen; the policy says what to do.
    Claimed {
        policy: GuardPolicy,
        lines: Vec<String>,
    },
    /// Other sessions claim files of an edit just made.
    ClaimedAfterEdit(Vec<String>),
    /// News for the session.
    News {
        moment: NewsMoment,
        lines: Vec<String>,
    },
    /// The server heard the session end; the client is told nothing.
    Ended,
}

/// The answer the client reads on stdout, in its own contract; `None` when it should get no
/// output at all.
pub fn answer(client: HookClient, event: &str, said: &Said) -> Option<Value> {
    match said {
        Said::Claimed { lines, .. } | Said::ClaimedAfterEdit(lines) | Said::News { lines, .. }
            if lines.is_empty() =>
        {
            None
        }
        Said::Ended => None,
        Said::Claimed { policy, lines } => Some(guard_answer(client, event, *policy, lines)),
        Said::ClaimedAfterEdit(lines) => match client {
            // Claude Code and Codex were told before the edit; Cursor reads nothing.
            HookClient::GeminiCli => Some(context(
                event,
                &text("other sessions claim the file just edited:", lines),
            )),
            _ => None,
        },
        Said::News { moment, lines } => {
            if client == HookClient::Cursor {
                return None;
            }
            let header = match moment {
                NewsMoment::SessionStart => "who else works on this repository:",
                NewsMoment::Prompt => "new on this repository's board since your last prompt:",
            };
            Some(context(event, &text(header, lines)))
        }
    }
}

/// The guard's answer before an edit, by policy, in what the client honours.
fn guard_answer(client: HookClient, event: &str, policy: GuardPolicy, lines: &[String]) -> Value {
    let found = text("other sessions claim files this edit changes:", lines);
    let refused = text(
        "majordomus refused this edit: this repository's policy (`[hooks] policy = \"deny\"` \
         in majordomus.toml) refuses edits of files other sessions claim.",
        lines,
    );
    match (client, policy) {
        (HookClient::ClaudeCode, GuardPolicy::Warn) => context(event, &found),
        (HookClient::ClaudeCode, GuardPolicy::Ask) => json!({
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "ask",
                "permissionDecisionReason": found,
                "additionalContext": found,
            }
        }),
        (HookClient::ClaudeCode | HookClient::Codex, GuardPolicy::Deny) => json!({
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": refused,
            }
        }),
        (HookClient::Codex, GuardPolicy::Warn) => context(event, &found),
        // Codex cannot ask the person; the agent is told the repository wants it to.
        (HookClient::Codex, GuardPolicy::Ask) => context(
            event,
            &format!(
                "{found}\nThis repository's policy (`[hooks] policy = \"ask\"` in \
                 majordomus.toml) leaves edits of files other sessions claim to the person \
                 to decide."
            ),
        ),
        // Before an edit Gemini CLI gives context to no one but the person; the model reads
        // the same once the edit is done (`AfterTool`).
        (HookClient::GeminiCli, GuardPolicy::Warn) => json!({ "systemMessage": found }),
        (HookClient::GeminiCli, GuardPolicy::Ask) => json!({
            "decision": "ask",
            "systemMessage": found,
        }),
        (HookClient::GeminiCli, GuardPolicy::Deny) => json!({
            "decision": "deny",
            "reason": refused,
        }),
        // Cursor has no hook before an edit.
        (HookClient::Cursor, _) => Value::Null,
    }
}

/// Context for the model, in the shape every client that takes it reads.
fn context(event: &str, text: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": text,
        }
    })
}

/// A header naming majordomus, and one line per fact.
fn text(header: &str, lines: &[String]) -> String {
    let mut text = if header.starts_with("majordomus") {
        header.to_owned()
    } else {
        format!("majordomus: {header}")
    };
    for line in lines {
        text.push_str("\n- ");
        text.push_str(line);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> Vec<String> {
        vec!["\"src/x.rs\" lies in the claim of p2".to_owned()]
    }

    #[test]
    fn codex_is_never_answered_allow_or_ask() {
        for policy in [GuardPolicy::Warn, GuardPolicy::Ask, GuardPolicy::Deny] {
            let said = Said::Claimed {
                policy,
                lines: lines(),
            };
            let answer = answer(HookClient::Codex, "PreToolUse", &said).unwrap();
            let decision = &answer["hookSpecificOutput"]["permissionDecision"];
            match policy {
                GuardPolicy::Deny => assert_eq!(decision, "deny"),
                _ => assert!(decision.is_null(), "{answer}"),
            }
        }
    }

    #[test]
    fn nothing_found_is_no_answer_at_all() {
        for client in HookClient::ALL {
            for said in [
                Said::Claimed {
                    policy: GuardPolicy::Deny,
                    lines: vec![],
                },
                Said::ClaimedAfterEdit(vec![]),
                Said::News {
                    moment: NewsMoment::Prompt,
                    lines: vec![],
                },
            ] {
                assert_eq!(answer(client, "PreToolUse", &said), None);
            }
        }
    }

    #[test]
    fn other_tools_and_events_are_not_majordomus_business() {
        let bash = json!({"session_id": "s", "tool_name": "Bash", "tool_input": {"command": "ls"}});
        assert_eq!(parse(HookClient::ClaudeCode, "PreToolUse", &bash), None);
        let stop = json!({"session_id": "s"});
        assert_eq!(parse(HookClient::ClaudeCode, "Stop", &stop), None);
        for client in [
            HookClient::ClaudeCode,
            HookClient::Codex,
            HookClient::GeminiCli,
        ] {
            let ended = parse(client, "SessionEnd", &stop).unwrap();
            assert_eq!(ended.action, Action::End);
        }
        let nameless = json!({"tool_name": "Write", "tool_input": {"file_path": "/x"}});
        assert_eq!(parse(HookClient::ClaudeCode, "PreToolUse", &nameless), None);
        let blank =
            json!({"session_id": "  ", "tool_name": "Write", "tool_input": {"file_path": "/x"}});
        assert_eq!(parse(HookClient::ClaudeCode, "PreToolUse", &blank), None);
    }
}
