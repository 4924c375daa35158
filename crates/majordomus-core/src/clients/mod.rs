//! Each client majordomus wires, one module per client, each holding that client's whole
//! contract ([`Contract`]): the hook events it runs and the tools they match, how its hook
//! input names the conversation, the directory and the files a tool call edits, what an
//! answer must look like for it to be honoured, where its configuration lives and what
//! majordomus writes there, and whether the client will run that wiring at all.
//!
//! [`HookClient`] is the one list of clients. [`HookClient::contract`] is the only match on it
//! that says anything about a client: a new client is a module implementing [`Contract`] and
//! a variant, and the compiler names what else it needs.
//!
//! What is the same for every client is read here once: the conversation id and working
//! directory of an input ([`parse`]), a shell tool's command ([`shell`]). This module uses
//! nothing else of the crate: the hook command decides what to say, `install` and `doctor`
//! write and check the files, each by asking the client's contract.

pub mod claude_code;
pub mod codex;
pub mod cursor;
pub mod gemini_cli;
pub mod patch;
pub mod shell;
pub mod wiring;

use std::path::Path;

use majordomus_domain::peers::WaitReason;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use shell::ShellEffects;
use wiring::{FileParts, Places, Program, Scope};

/// A client whose hooks majordomus speaks.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[derive(strum::IntoStaticStr, strum::EnumCount)]
#[strum(serialize_all = "kebab-case")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum HookClient {
    /// Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// Google's Gemini CLI.
    GeminiCli,
    /// Cursor.
    Cursor,
}

impl HookClient {
    /// Every client, in the order commands list them; sized by the enum, so a new variant
    /// left out of it does not compile.
    pub const ALL: [HookClient; <HookClient as strum::EnumCount>::COUNT] = [
        HookClient::ClaudeCode,
        HookClient::Codex,
        HookClient::GeminiCli,
        HookClient::Cursor,
    ];

    /// The client's contract.
    pub fn contract(self) -> &'static dyn Contract {
        match self {
            HookClient::ClaudeCode => &claude_code::ClaudeCode,
            HookClient::Codex => &codex::Codex,
            HookClient::GeminiCli => &gemini_cli::GeminiCli,
            HookClient::Cursor => &cursor::Cursor,
        }
    }

    /// The word commands, configs and answers name it by.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The client a word names, if any.
    pub fn from_word(word: &str) -> Option<HookClient> {
        HookClient::ALL
            .into_iter()
            .find(|client| client.as_str() == word)
    }
}

impl std::fmt::Display for HookClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a hook asks for news.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NewsMoment {
    /// The session starts (or resumes): a short summary of who works where.
    SessionStart,
    /// The person sent a prompt: only what is new for this session since it was last told.
    Prompt,
}

/// What a hook event is, whatever the client calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// A tool is about to run: an edit tool, or the shell tool.
    BeforeTool,
    /// A tool ran, or a file was just edited.
    AfterTool,
    /// The session starts, or the person sent a prompt.
    News(NewsMoment),
    /// The session ended.
    SessionEnd,
    /// The session waits for the person, as its client says.
    Waits(Waits),
}

/// How a client says its session waits for the person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waits {
    /// A tool call waits for the person's permission (Codex's `PermissionRequest`).
    ForPermission,
    /// The turn is over (`Stop`, Gemini CLI's `AfterAgent`).
    Finished,
    /// A notification, whose kind its input says (`Notification`): a permission prompt, a
    /// question, an idle prompt; other kinds are not about waiting.
    Notified,
}

/// One hook majordomus answers in a client: the event as the client names it, what it is,
/// and the tools it is for, as a hook matcher names them (`None` for an event not about a
/// tool).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hook {
    pub event: &'static str,
    pub moment: Moment,
    pub matcher: Option<&'static str>,
}

/// The hooks of a client that follows Claude Code's hook contract (Codex CLI does): edits
/// guarded before the tools in `tools` and recorded after them, news at the session's start
/// and with each prompt, the session's end, its waiting for the person as `waits` says it,
/// and the end of its turn (`Stop`).
pub(super) const fn claude_code_style_hooks(tools: &'static str, waits: Hook) -> [Hook; 7] {
    [
        Hook {
            event: "PreToolUse",
            moment: Moment::BeforeTool,
            matcher: Some(tools),
        },
        Hook {
            event: "PostToolUse",
            moment: Moment::AfterTool,
            matcher: Some(tools),
        },
        Hook {
            event: "SessionStart",
            moment: Moment::News(NewsMoment::SessionStart),
            matcher: None,
        },
        Hook {
            event: "UserPromptSubmit",
            moment: Moment::News(NewsMoment::Prompt),
            matcher: None,
        },
        Hook {
            event: "SessionEnd",
            moment: Moment::SessionEnd,
            matcher: None,
        },
        waits,
        Hook {
            event: "Stop",
            moment: Moment::Waits(Waits::Finished),
            matcher: None,
        },
    ]
}

/// Whether a client will itself run the wiring install wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WillRun {
    /// Nothing says it will not.
    Yes,
    /// Nothing can be checked; the note says what the client may ask for.
    Unchecked(&'static str),
    /// It will not, until the person takes this step.
    NotYet(String),
}

/// Reads a file as `install` does (links followed, never waiting on a FIFO); `None` when it
/// cannot be read.
pub type Read<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// One client's contract with majordomus. Each client's module implements it whole; what is
/// common to several clients is a function of this module or of [`wiring`] that they call.
pub trait Contract: Sync {
    /// The hooks majordomus answers, in the order install writes them.
    fn hooks(&self) -> &'static [Hook];

    /// The conversation a hook input is about, as the client names it: `session_id`, unless
    /// the client says otherwise.
    fn session_id<'a>(&self, input: &'a Value) -> Option<&'a str> {
        input.get("session_id")?.as_str()
    }

    /// The directory the client works in, when the input says: `cwd`, unless the client says
    /// otherwise.
    fn cwd<'a>(&self, input: &'a Value) -> Option<&'a str> {
        input.get("cwd")?.as_str()
    }

    /// Whether `tool` is the client's shell tool.
    fn is_shell_tool(&self, tool: &str) -> bool;

    /// The files a tool call (or an edit event) names; `None` when it edits none.
    fn edited_files(&self, input: &Value) -> Option<Vec<String>>;

    /// Whether the client running this hook has a person to ask; `env` reads the hook's
    /// environment.
    fn can_ask_person(&self, env: &dyn Fn(&str) -> Option<String>) -> bool;

    /// The edit is not made; `reason` reaches the model as the tool's result.
    fn refusal(&self, event: &str, reason: &str) -> Value;

    /// The person decides; the model reads `told` either way.
    fn asking(&self, event: &str, told: &str) -> Value;

    /// A line for the agent that lets the edit go ahead.
    fn warning(&self, event: &str, told: &str) -> Value;

    /// The answer when the repository's policy leaves a claimed file to the person:
    /// `told` says what was found, `all` is each finding, `person` whether one is at hand.
    fn policy_asks(&self, event: &str, person: bool, told: &str, all: &[String]) -> Value;

    /// What the model is told after an edit of files other sessions claim, if anything.
    fn after_edit(&self, event: &str, told: &str) -> Option<Value>;

    /// The news for the session, if the client reads any.
    fn news(&self, event: &str, told: &str) -> Option<Value>;

    /// The executables the client is run as.
    fn executables(&self) -> &'static [&'static str];

    /// What in a repository shows the client is used there.
    fn markers(&self) -> &'static [&'static str];

    /// One hook's entry in the client's hook list, running `command`.
    fn hook_entry(&self, hook: &Hook, command: String) -> Value;

    /// Everything majordomus puts into the client's configuration for `scope`.
    fn wiring(
        &self,
        scope: Scope,
        places: &Places,
        program: &Program,
        read: Read<'_>,
    ) -> Vec<FileParts>;

    /// The project files the wiring writes that hold one person's approvals: kept out of
    /// git, since a teammate approves for themselves.
    fn personal_files(&self) -> &'static [&'static str];

    /// What the client needs beyond its files the first time it meets majordomus in a
    /// project, in a sentence; `None` when the files are all it needs.
    fn first_run_note(&self) -> Option<&'static str>;

    /// Whether the client will run the project's wiring `files` in `places.root`.
    fn will_run(&self, places: &Places, files: &[FileParts], read: Read<'_>) -> WillRun;
}

/// What a hook event asks majordomus to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A file is about to change: check it against other sessions' claims.
    Guard(Vec<String>),
    /// A shell command is about to run: the files it writes, the work it discards, the
    /// commands that may need a lease.
    Shell(ShellEffects),
    /// Files just changed: record them in the session's `edits` claim.
    Edit(Vec<String>),
    /// Tell the session what it has not heard yet.
    News(NewsMoment),
    /// The session ended.
    End,
    /// The session waits for the person, for `reason`; `message` is what the client said,
    /// as it said it.
    Wait {
        reason: WaitReason,
        message: Option<String>,
    },
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

/// Reads one hook input; `None` for an event majordomus has nothing to do with (another
/// tool, another event) or an input without a usable conversation id.
pub fn parse(client: HookClient, event: &str, input: &Value) -> Option<Event> {
    let contract = client.contract();
    let session_id = contract
        .session_id(input)
        .map(str::trim)
        .filter(|id| !id.is_empty())?
        .to_owned();
    let cwd = contract.cwd(input).map(str::to_owned);
    let hook = contract.hooks().iter().find(|hook| hook.event == event)?;
    let action = match hook.moment {
        Moment::BeforeTool => match shell_command(contract, input) {
            // Whether it needs a lease is known only once the repository's settings are read.
            Some(command) => Action::Shell(shell::effects(&command)?),
            None => Action::Guard(edited_files(contract, input)?),
        },
        Moment::AfterTool => match shell_command(contract, input) {
            // What a shell command wrote joins the session's `edits` claim as an edit does.
            Some(command) => Action::Edit(
                shell::effects(&command)
                    .map(|effects| effects.writes)
                    .filter(|writes| !writes.is_empty())?,
            ),
            None => Action::Edit(edited_files(contract, input)?),
        },
        Moment::News(moment) => Action::News(moment),
        Moment::SessionEnd => Action::End,
        Moment::Waits(waits) => Action::Wait {
            reason: match waits {
                Waits::ForPermission => WaitReason::Permission,
                Waits::Finished => WaitReason::Finished,
                Waits::Notified => notified_reason(input)?,
            },
            message: input
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
        },
    };
    Some(Event {
        session_id,
        cwd,
        action,
    })
}

/// Why a notification says the session waits, by its kind (Claude Code's
/// `notification_type`, Gemini CLI's too), or by its words where a client names no kind;
/// `None` for a notification that is not about waiting (a login that worked, say).
fn notified_reason(input: &Value) -> Option<WaitReason> {
    match input.get("notification_type").and_then(Value::as_str) {
        Some("permission_prompt" | "ToolPermission") => Some(WaitReason::Permission),
        Some("idle_prompt" | "elicitation_dialog") => Some(WaitReason::Question),
        Some(_) => None,
        None => {
            let message = input.get("message")?.as_str()?.to_lowercase();
            if message.contains("permission") {
                Some(WaitReason::Permission)
            } else if message.contains("waiting for your input") {
                Some(WaitReason::Question)
            } else {
                None
            }
        }
    }
}

/// The command a call of the client's shell tool runs; `None` for any other tool. Codex
/// may give the command as its words.
fn shell_command(contract: &dyn Contract, input: &Value) -> Option<String> {
    let tool = input.get("tool_name")?.as_str()?;
    if !contract.is_shell_tool(tool) {
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

/// The files a tool call edits, as its input names them; `None` when it edits none.
fn edited_files(contract: &dyn Contract, input: &Value) -> Option<Vec<String>> {
    let files = contract.edited_files(input)?;
    (!files.is_empty()).then_some(files)
}

/// The tool a call is of, and its arguments.
fn tool_call(input: &Value) -> Option<(&str, &Value)> {
    Some((input.get("tool_name")?.as_str()?, input.get("tool_input")?))
}

/// The one path an edit tool's `key` argument names.
fn named_file(arguments: &Value, key: &str) -> Option<Vec<String>> {
    Some(vec![arguments.get(key)?.as_str()?.to_owned()])
}

/// Context for the model, in the shape every client that takes it reads.
pub fn context(event: &str, text: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": text,
        }
    })
}

/// A decision in the shape Claude Code and Codex read (`hookSpecificOutput`).
fn permission_decision(event: &str, decision: &str, reason: &str, context: Option<&str>) -> Value {
    let mut answer = json!({
        "hookSpecificOutput": {
            "hookEventName": event,
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    });
    if let Some(context) = context {
        answer["hookSpecificOutput"]["additionalContext"] = json!(context);
    }
    answer
}

/// A header naming majordomus, and one line per fact.
pub fn text(header: &str, lines: &[String]) -> String {
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
    use strum::VariantArray;

    #[test]
    fn each_clients_waiting_signal_names_its_reason() {
        let wait = |client, event, input: Value| parse(client, event, &input).map(|e| e.action);
        let said = |reason, message: &str| {
            Some(Action::Wait {
                reason,
                message: Some(message.to_owned()),
            })
        };
        assert_eq!(
            wait(
                HookClient::ClaudeCode,
                "Notification",
                json!({"session_id": "s", "notification_type": "permission_prompt",
                    "message": "Claude needs your permission to use Bash"})
            ),
            said(
                WaitReason::Permission,
                "Claude needs your permission to use Bash"
            )
        );
        assert_eq!(
            wait(
                HookClient::ClaudeCode,
                "Notification",
                json!({"session_id": "s", "message": "Claude is waiting for your input"})
            ),
            said(WaitReason::Question, "Claude is waiting for your input"),
            "a client too old to name the kind is read by its words"
        );
        assert_eq!(
            wait(
                HookClient::GeminiCli,
                "Notification",
                json!({"session_id": "s", "notification_type": "ToolPermission",
                    "message": "Tool write_file requires confirmation"})
            ),
            said(
                WaitReason::Permission,
                "Tool write_file requires confirmation"
            )
        );
        let finished = Some(Action::Wait {
            reason: WaitReason::Finished,
            message: None,
        });
        for (client, event) in [
            (HookClient::ClaudeCode, "Stop"),
            (HookClient::Codex, "Stop"),
            (HookClient::GeminiCli, "AfterAgent"),
        ] {
            assert_eq!(wait(client, event, json!({"session_id": "s"})), finished);
        }
        assert_eq!(
            wait(
                HookClient::Codex,
                "PermissionRequest",
                json!({"session_id": "s", "tool_name": "Bash",
                    "tool_input": {"command": "rm -rf target"}})
            ),
            Some(Action::Wait {
                reason: WaitReason::Permission,
                message: None,
            })
        );
    }

    #[test]
    fn clients_are_written_and_read_in_the_words_as_str_gives() {
        assert_eq!(HookClient::VARIANTS, HookClient::ALL);
        for client in HookClient::ALL {
            assert_eq!(serde_json::to_value(client).unwrap(), client.as_str());
            let read: HookClient = serde_json::from_value(client.as_str().into()).unwrap();
            assert_eq!(read, client);
        }
    }

    #[test]
    fn other_tools_and_events_are_not_majordomus_business() {
        let read =
            json!({"session_id": "s", "tool_name": "Read", "tool_input": {"file_path": "/x"}});
        assert_eq!(parse(HookClient::ClaudeCode, "PreToolUse", &read), None);
        let test = json!({"session_id": "s", "tool_name": "run_shell_command",
            "tool_input": {"command": "cargo test && git status"}});
        let Some(Event {
            action: Action::Shell(test),
            ..
        }) = parse(HookClient::GeminiCli, "BeforeTool", &test)
        else {
            panic!("a shell command may need a lease");
        };
        assert!(test.changes_nothing());
        assert_eq!(test.commands, [["cargo", "test"], ["git", "status"]]);
        let listing = json!({"session_id": "s", "tool_name": "Bash", "tool_input": {"command": "ls"},
            "tool_response": {}});
        assert_eq!(
            parse(HookClient::ClaudeCode, "PostToolUse", &listing),
            None,
            "a command that wrote nothing adds no edit"
        );
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
        assert_eq!(parse(HookClient::Cursor, "stop", &stop), None);
        for client in [
            HookClient::ClaudeCode,
            HookClient::Codex,
            HookClient::GeminiCli,
        ] {
            let ended = parse(client, "SessionEnd", &stop).unwrap();
            assert_eq!(ended.action, Action::End);
        }
        let login = json!({"session_id": "s", "notification_type": "auth_success",
            "message": "Logged in"});
        assert_eq!(parse(HookClient::ClaudeCode, "Notification", &login), None);
        let nameless = json!({"tool_name": "Write", "tool_input": {"file_path": "/x"}});
        assert_eq!(parse(HookClient::ClaudeCode, "PreToolUse", &nameless), None);
        let blank =
            json!({"session_id": "  ", "tool_name": "Write", "tool_input": {"file_path": "/x"}});
        assert_eq!(parse(HookClient::ClaudeCode, "PreToolUse", &blank), None);
    }
}
