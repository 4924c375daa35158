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
//!   (with `reason`, sent to the model) and `ask`, which a headless run waits on forever, so
//!   it is never answered; `additionalContext` reaches the model on
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
use crate::hooks::shell::{self, ShellEffects};

/// What a hook event asks majordomus to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A file is about to change: check it against other sessions' claims.
    Guard(Vec<String>),
    /// A shell command is about to run that writes files or discards work.
    Shell(ShellEffects),
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

/// The tools whose calls edit files (and, before a call, the shell tools), as a hook
/// matcher names them; `None` for an event that is not about a tool.
pub fn edit_matcher(client: HookClient, event: &str) -> Option<&'static str> {
    match (client, event) {
        (HookClient::ClaudeCode, "PreToolUse" | "PostToolUse") => {
            Some("Write|Edit|MultiEdit|NotebookEdit|Bash")
        }
        (HookClient::Codex, "PreToolUse" | "PostToolUse") => {
            Some("apply_patch|Bash|exec_command|shell")
        }
        (HookClient::GeminiCli, "BeforeTool" | "AfterTool") => {
            Some("write_file|replace|run_shell_command")
        }
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
        | (HookClient::GeminiCli, "BeforeTool") => match shell_command(client, input) {
            Some(command) => Action::Shell(shell::effects(&command).filter(|e| !e.is_empty())?),
            None => Action::Guard(edited_files(client, input)?),
        },
        (HookClient::ClaudeCode | HookClient::Codex, "PostToolUse")
        | (HookClient::GeminiCli, "AfterTool") => match shell_command(client, input) {
            // What a shell command wrote joins the session's `edits` claim as an edit does.
            Some(command) => Action::Edit(
                shell::effects(&command)
                    .map(|effects| effects.writes)
                    .filter(|writes| !writes.is_empty())?,
            ),
            None => Action::Edit(edited_files(client, input)?),
        },
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

/// The command a call of the client's shell tool runs; `None` for any other tool. Codex
/// may give the command as its words.
fn shell_command(client: HookClient, input: &Value) -> Option<String> {
    let tool = input.get("tool_name")?.as_str()?;
    let shell = match client {
        HookClient::ClaudeCode => tool == "Bash",
        HookClient::Codex => matches!(tool, "Bash" | "exec_command" | "shell"),
        HookClient::GeminiCli => tool == "run_shell_command",
        HookClient::Cursor => false,
    };
    if !shell {
        return None;
    }
    let command = input.get("tool_input")?;
    let command = command
        .get("command")
        .or(command.get("cmd"))
        .unwrap_or(command);
    match command {
        Value::String(text) => Some(text.clone()),
        Value::Array(words) => {
            let words: Option<Vec<&str>> = words.iter().map(Value::as_str).collect();
            shlex::try_join(words?).ok()
        }
        _ => None,
    }
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

/// What the guard found before an edit, by what each finding calls for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Live other sessions' claims on the files: under `guard`, they stop the edit.
    pub live: Vec<String>,
    /// Other worktrees' uncommitted changes to the files and conflicts predicted on them:
    /// under `guard`, the first attempt is refused and the same edit repeated soon passes.
    pub bumps: Vec<String>,
    /// Whether this edit is the repetition that passes the speed bumps.
    pub bump_passed: bool,
    /// Departed sessions' claims on the files: a line of context under `guard`.
    pub departed: Vec<String>,
    /// For a write that lands in another worktree than the session's own, a line naming
    /// it: said with the findings, never alone.
    pub landing: Vec<String>,
}

impl Found {
    fn is_empty(&self) -> bool {
        self.live.is_empty() && self.bumps.is_empty() && self.departed.is_empty()
    }

    fn all(&self) -> Vec<String> {
        self.landing
            .iter()
            .chain(&self.live)
            .chain(&self.bumps)
            .chain(&self.departed)
            .cloned()
            .collect()
    }
}

/// What majordomus has to say about one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Said {
    /// Other sessions claim files of an edit about to happen; the policy says what to do,
    /// and `person` whether the client has a person at hand to ask.
    Claimed {
        policy: GuardPolicy,
        person: bool,
        found: Found,
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

/// Whether the client running this hook has a person to ask. Claude Code names how it was
/// started in `CLAUDE_CODE_ENTRYPOINT` (`cli` for the interactive terminal, `sdk-cli` for
/// `claude -p`, `sdk-*` for its SDKs). Codex honours only `deny`, and headless Gemini CLI
/// waits forever on `ask` with nothing in a hook's input telling the two apart, so neither
/// is ever asked to ask.
pub fn can_ask_person(client: HookClient, claude_entrypoint: Option<&str>) -> bool {
    match client {
        HookClient::ClaudeCode => claude_entrypoint == Some("cli"),
        HookClient::Codex | HookClient::GeminiCli | HookClient::Cursor => false,
    }
}

/// The answer the client reads on stdout, in its own contract; `None` when it should get no
/// output at all.
pub fn answer(client: HookClient, event: &str, said: &Said) -> Option<Value> {
    match said {
        Said::Claimed { found, .. } if found.is_empty() => None,
        Said::ClaimedAfterEdit(lines) | Said::News { lines, .. } if lines.is_empty() => None,
        Said::Ended => None,
        Said::Claimed {
            policy,
            person,
            found,
        } => guard_answer(client, event, *policy, *person, found),
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

/// What a refused edit may do next.
const WAY_FORWARD: &str = "Nothing was written. Wait until the other session is done \
    with the file, talk to it about the change, or ask the person to allow the edit.";

/// The guard's answer before an edit, by policy, in what the client honours.
fn guard_answer(
    client: HookClient,
    event: &str,
    policy: GuardPolicy,
    person: bool,
    found: &Found,
) -> Option<Value> {
    let all = found.all();
    let told = text("other sessions claim files this edit changes:", &all);
    // What a finished session left is information under every policy: it refuses nobody
    // and asks nobody, so a person's next session is never stopped by their last one.
    let policy = match policy {
        GuardPolicy::Ask | GuardPolicy::Deny if found.live.is_empty() && found.bumps.is_empty() => {
            GuardPolicy::Warn
        }
        policy => policy,
    };
    match policy {
        GuardPolicy::Off => None,
        GuardPolicy::Warn => Some(warning(client, event, &told)),
        GuardPolicy::Ask => Some(match client {
            HookClient::Codex => context(
                event,
                &format!(
                    "{told}\nThis repository's policy (`[hooks] policy = \"ask\"` in \
                     majordomus.toml) leaves edits of files other sessions claim to the person \
                     to decide."
                ),
            ),
            HookClient::GeminiCli if !person => refusal(
                client,
                event,
                &text(
                    "majordomus refused this edit: this repository's policy (`[hooks] policy = \
                     \"ask\"` in majordomus.toml) leaves edits of files other sessions claim to \
                     the person, and this run has no person to ask.",
                    &all,
                ),
            ),
            _ => asking(client, event, &told),
        }),
        GuardPolicy::Deny => Some(refusal(
            client,
            event,
            &text(
                "majordomus refused this edit: this repository's policy (`[hooks] policy = \
                 \"deny\"` in majordomus.toml) refuses edits of files other sessions claim.",
                &all,
            ),
        )),
        GuardPolicy::Guard if found.live.is_empty() && !found.bumps.is_empty() => {
            Some(if found.bump_passed {
                warning(
                    client,
                    event,
                    &text(
                        "this edit was stopped once and repeated, so it goes ahead:",
                        &all,
                    ),
                )
            } else {
                let mut stopped = text(
                    "majordomus stopped this edit once, before it ran: it meets other \
                     worktrees' work.",
                    &all,
                );
                stopped.push_str(
                    "\nNothing was written. Repeat the same edit within five minutes and it \
                     goes ahead; or look at the other worktree's work first.",
                );
                refusal(client, event, &stopped)
            })
        }
        GuardPolicy::Guard if found.live.is_empty() => Some(warning(
            client,
            event,
            &text(
                "sessions that have left still claim files this edit changes:",
                &found.departed,
            ),
        )),
        GuardPolicy::Guard => {
            let mut stopped = text(
                "majordomus stopped this tool call before it ran: live sessions work on what it changes.",
                &all,
            );
            stopped.push('\n');
            stopped.push_str(WAY_FORWARD);
            Some(if person {
                asking(client, event, &stopped)
            } else {
                refusal(client, event, &stopped)
            })
        }
    }
}

/// A line for the agent that lets the edit go ahead.
fn warning(client: HookClient, event: &str, told: &str) -> Value {
    match client {
        // Before an edit Gemini CLI gives context to no one but the person; the model reads
        // the same once the edit is done (`AfterTool`).
        HookClient::GeminiCli => json!({ "systemMessage": told }),
        // Cursor has no hook before an edit.
        HookClient::Cursor => Value::Null,
        HookClient::ClaudeCode | HookClient::Codex => context(event, told),
    }
}

/// The person decides; the model reads the facts either way.
fn asking(client: HookClient, event: &str, told: &str) -> Value {
    match client {
        HookClient::GeminiCli => json!({ "decision": "ask", "systemMessage": told }),
        HookClient::Cursor => Value::Null,
        HookClient::ClaudeCode | HookClient::Codex => json!({
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "ask",
                "permissionDecisionReason": told,
                "additionalContext": told,
            }
        }),
    }
}

/// The edit is not made; the reason reaches the model as the tool's result.
fn refusal(client: HookClient, event: &str, reason: &str) -> Value {
    match client {
        HookClient::GeminiCli => json!({ "decision": "deny", "reason": reason }),
        HookClient::Cursor => Value::Null,
        HookClient::ClaudeCode | HookClient::Codex => json!({
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }),
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

    fn found(live: bool) -> Found {
        let line = "\"src/x.rs\" lies in the claim of p2".to_owned();
        if live {
            Found {
                live: vec![line],
                ..Found::default()
            }
        } else {
            Found {
                departed: vec![line],
                ..Found::default()
            }
        }
    }

    #[test]
    fn codex_is_never_answered_allow_or_ask() {
        for policy in [
            GuardPolicy::Guard,
            GuardPolicy::Warn,
            GuardPolicy::Ask,
            GuardPolicy::Deny,
        ] {
            for person in [false, true] {
                let said = Said::Claimed {
                    policy,
                    person: person && can_ask_person(HookClient::Codex, Some("cli")),
                    found: found(true),
                };
                let answer = answer(HookClient::Codex, "PreToolUse", &said).unwrap();
                let decision = &answer["hookSpecificOutput"]["permissionDecision"];
                match policy {
                    GuardPolicy::Deny | GuardPolicy::Guard => assert_eq!(decision, "deny"),
                    _ => assert!(decision.is_null(), "{answer}"),
                }
            }
        }
    }

    #[test]
    fn the_default_guard_stops_a_live_claim_asking_only_where_a_person_can_answer() {
        let person = can_ask_person(HookClient::ClaudeCode, Some("cli"));
        assert!(person);
        assert!(!can_ask_person(HookClient::ClaudeCode, Some("sdk-cli")));
        assert!(!can_ask_person(HookClient::ClaudeCode, None));
        assert!(!can_ask_person(HookClient::GeminiCli, Some("cli")));
        let said = |person| Said::Claimed {
            policy: GuardPolicy::Guard,
            person,
            found: found(true),
        };
        let asked = answer(HookClient::ClaudeCode, "PreToolUse", &said(true)).unwrap();
        assert_eq!(asked["hookSpecificOutput"]["permissionDecision"], "ask");
        let refused = answer(HookClient::ClaudeCode, "PreToolUse", &said(false)).unwrap();
        assert_eq!(refused["hookSpecificOutput"]["permissionDecision"], "deny");
        let reason = refused["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap();
        assert!(
            reason.contains("claim of p2") && reason.contains("Nothing was written"),
            "{reason}"
        );
        let gemini = answer(HookClient::GeminiCli, "BeforeTool", &said(false)).unwrap();
        assert_eq!(gemini["decision"], "deny");
        // a departed session's claim is a line of context, never a refusal
        let departed = Said::Claimed {
            policy: GuardPolicy::Guard,
            person: false,
            found: found(false),
        };
        let told = answer(HookClient::ClaudeCode, "PreToolUse", &departed).unwrap();
        assert!(told["hookSpecificOutput"]["permissionDecision"].is_null());
        assert!(
            told["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .unwrap()
                .contains("have left")
        );
        let bump = |bump_passed| Said::Claimed {
            policy: GuardPolicy::Guard,
            person: true,
            found: Found {
                bumps: vec!["worktree \"/w/b\" has uncommitted changes to \"src/x.rs\"".into()],
                bump_passed,
                ..Found::default()
            },
        };
        let first = answer(HookClient::ClaudeCode, "PreToolUse", &bump(false)).unwrap();
        assert_eq!(first["hookSpecificOutput"]["permissionDecision"], "deny");
        let again = answer(HookClient::ClaudeCode, "PreToolUse", &bump(true)).unwrap();
        assert!(again["hookSpecificOutput"]["permissionDecision"].is_null());
        assert!(
            again["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .unwrap()
                .contains("goes ahead")
        );
        let off = Said::Claimed {
            policy: GuardPolicy::Off,
            person: true,
            found: found(true),
        };
        assert_eq!(answer(HookClient::ClaudeCode, "PreToolUse", &off), None);
    }

    #[test]
    fn nothing_found_is_no_answer_at_all() {
        for client in HookClient::ALL {
            for said in [
                Said::Claimed {
                    policy: GuardPolicy::Deny,
                    person: false,
                    found: Found::default(),
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
        let test = json!({"session_id": "s", "tool_name": "run_shell_command",
            "tool_input": {"command": "cargo test && git status"}});
        assert_eq!(parse(HookClient::GeminiCli, "BeforeTool", &test), None);
        let sed = json!({"session_id": "s", "tool_name": "exec_command",
            "tool_input": {"cmd": ["sed", "-i", "s/a/b/", "src/lib.rs"]}});
        let Some(Event {
            action: Action::Shell(effects),
            ..
        }) = parse(HookClient::Codex, "PreToolUse", &sed)
        else {
            panic!("a shell write is the guard's business");
        };
        assert_eq!(effects.writes, ["src/lib.rs"]);
        let ran = json!({"session_id": "s", "tool_name": "Bash",
            "tool_input": {"command": "echo x > notes.md"}, "tool_response": {}});
        assert_eq!(
            parse(HookClient::ClaudeCode, "PostToolUse", &ran).map(|event| event.action),
            Some(Action::Edit(vec!["notes.md".into()])),
            "what a shell command wrote joins the session's edits"
        );
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
