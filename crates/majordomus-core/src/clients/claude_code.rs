//! Claude Code.
//!
//! - Hooks: `PreToolUse` / `PostToolUse` on `Write`, `Edit`, `MultiEdit` and `NotebookEdit`
//!   (absolute `file_path` or `notebook_path`) and on `Bash` (`tool_input.command`),
//!   `SessionStart`, `UserPromptSubmit`, `SessionEnd`, and `Notification`
//!   (`notification_type` `permission_prompt`, `idle_prompt`, `elicitation_dialog`, with
//!   its `message`) and `Stop`, which say the session waits for the person and are answered
//!   with nothing; the conversation is `session_id`.
//! - Answers: `permissionDecision` `allow`, `ask` and `deny` are honoured; the reason reaches
//!   the model only on `deny`, and `additionalContext` reaches it on all four events.
//! - A person can be asked only in the interactive terminal: `CLAUDE_CODE_ENTRYPOINT` is
//!   `cli` there, `sdk-cli` for `claude -p`, `sdk-*` for its SDKs.
//! - Configuration: the server in `.mcp.json` (project) or `~/.claude.json` (user), the hooks
//!   in `.claude/settings.json`, and the person's approval of this one project server in
//!   `.claude/settings.local.json`, kept out of git. Claude Code ignores a settings file with
//!   comments or trailing commas ("Found 0 total hooks"), so those are strict JSON.

use serde_json::{Value, json};

use super::wiring::{
    FileParts, HOOK_TIMEOUT_SECONDS, Part, Places, Program, SERVER_NAME, Scope, command_group,
    hook_parts, json_file, server_entry, strict_file,
};
use super::{
    Contract, Hook, HookClient, Moment, Read, Waits, WillRun, claude_code_style_hooks, context,
    named_file, permission_decision, tool_call,
};

pub struct ClaudeCode;

/// The tools whose calls edit files, and the shell tool.
const TOOLS: &str = "Write|Edit|MultiEdit|NotebookEdit|Bash";

/// Its hooks, as Claude Code's contract has them: it says its session waits for the person
/// in a `Notification` (a permission prompt, a question, an idle prompt).
static HOOKS: [Hook; 7] = claude_code_style_hooks(
    TOOLS,
    Hook {
        event: "Notification",
        moment: Moment::Waits(Waits::Notified),
        matcher: None,
    },
);

/// Where Claude Code keeps the person's approval of the project's server.
const PERSONAL_FILES: &[&str] = &[".claude/settings.local.json"];

impl Contract for ClaudeCode {
    fn hooks(&self) -> &'static [Hook] {
        &HOOKS
    }

    fn is_shell_tool(&self, tool: &str) -> bool {
        tool == "Bash"
    }

    fn edited_files(&self, input: &Value) -> Option<Vec<String>> {
        match tool_call(input)? {
            ("Write" | "Edit" | "MultiEdit", arguments) => named_file(arguments, "file_path"),
            ("NotebookEdit", arguments) => named_file(arguments, "notebook_path"),
            _ => None,
        }
    }

    fn can_ask_person(&self, env: &dyn Fn(&str) -> Option<String>) -> bool {
        env("CLAUDE_CODE_ENTRYPOINT").as_deref() == Some("cli")
    }

    fn refusal(&self, event: &str, reason: &str) -> Value {
        permission_decision(event, "deny", reason, None)
    }

    fn asking(&self, event: &str, told: &str) -> Value {
        permission_decision(event, "ask", told, Some(told))
    }

    fn warning(&self, event: &str, told: &str) -> Value {
        context(event, told)
    }

    fn policy_asks(&self, event: &str, _person: bool, told: &str, _all: &[String]) -> Value {
        self.asking(event, told)
    }

    fn after_edit(&self, _event: &str, _told: &str) -> Option<Value> {
        // It was told before the edit.
        None
    }

    fn news(&self, event: &str, told: &str) -> Option<Value> {
        Some(context(event, told))
    }

    fn executables(&self) -> &'static [&'static str] {
        &["claude"]
    }

    fn markers(&self) -> &'static [&'static str] {
        &[".mcp.json", ".claude"]
    }

    fn hook_entry(&self, hook: &Hook, command: String) -> Value {
        command_group(hook, command, json!(HOOK_TIMEOUT_SECONDS), false)
    }

    fn wiring(
        &self,
        scope: Scope,
        places: &Places,
        program: &Program,
        _read: Read<'_>,
    ) -> Vec<FileParts> {
        let hooks = hook_parts(HookClient::ClaudeCode, program);
        match scope {
            Scope::Project => vec![
                json_file(
                    places.root.join(".mcp.json"),
                    vec![server_entry(program.server())],
                ),
                strict_file(places.root.join(".claude/settings.json"), hooks),
                strict_file(
                    places.root.join(PERSONAL_FILES[0]),
                    vec![Part::ListItem {
                        parents: &[],
                        key: "enabledMcpjsonServers",
                        item: SERVER_NAME,
                    }],
                ),
            ],
            Scope::User => vec![
                json_file(
                    places.home.join(".claude.json"),
                    vec![server_entry(program.server())],
                ),
                strict_file(places.home.join(".claude/settings.json"), hooks),
            ],
        }
    }

    fn personal_files(&self) -> &'static [&'static str] {
        PERSONAL_FILES
    }

    fn first_run_note(&self) -> Option<&'static str> {
        None
    }

    fn will_run(&self, _places: &Places, _files: &[FileParts], _read: Read<'_>) -> WillRun {
        // Its strict reading of the settings is checked where the files are read.
        WillRun::Yes
    }
}
