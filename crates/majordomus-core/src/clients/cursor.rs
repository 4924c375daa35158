//! Cursor.
//!
//! - Hooks: `afterFileEdit` (`file_path`), which cannot block and whose answer is ignored;
//!   the conversation is `conversation_id`, the directory the first of `workspace_roots`.
//!   Cursor has no hook before an edit, so nothing is ever refused or asked there.
//! - Configuration: the server in `.cursor/mcp.json`, the hooks in `.cursor/hooks.json`
//!   (`{"version": 1, "hooks": {…}}`). Cursor may ask once to enable the project's server,
//!   which nothing on disk says.

use serde_json::{Value, json};

use super::wiring::{FileParts, Part, Places, Program, Scope, hook_parts, json_file, server_entry};
use super::{Contract, Hook, HookClient, Moment, Read, WillRun, named_file};

pub struct Cursor;

const ENABLE_NOTE: &str = "Cursor may ask once to enable the project's server (Settings, MCP)";

impl Contract for Cursor {
    fn hooks(&self) -> &'static [Hook] {
        &[Hook {
            event: "afterFileEdit",
            moment: Moment::AfterTool,
            matcher: None,
        }]
    }

    fn session_id<'a>(&self, input: &'a Value) -> Option<&'a str> {
        input.get("conversation_id")?.as_str()
    }

    fn cwd<'a>(&self, input: &'a Value) -> Option<&'a str> {
        input.get("workspace_roots")?.get(0)?.as_str()
    }

    fn is_shell_tool(&self, _tool: &str) -> bool {
        false
    }

    fn edited_files(&self, input: &Value) -> Option<Vec<String>> {
        named_file(input, "file_path")
    }

    fn can_ask_person(&self, _env: &dyn Fn(&str) -> Option<String>) -> bool {
        false
    }

    fn refusal(&self, _event: &str, _reason: &str) -> Value {
        Value::Null
    }

    fn asking(&self, _event: &str, _told: &str) -> Value {
        Value::Null
    }

    fn warning(&self, _event: &str, _told: &str) -> Value {
        Value::Null
    }

    fn policy_asks(&self, event: &str, _person: bool, told: &str, _all: &[String]) -> Value {
        self.asking(event, told)
    }

    fn after_edit(&self, _event: &str, _told: &str) -> Option<Value> {
        None
    }

    fn news(&self, _event: &str, _told: &str) -> Option<Value> {
        None
    }

    fn executables(&self) -> &'static [&'static str] {
        &["cursor", "cursor-agent"]
    }

    fn markers(&self) -> &'static [&'static str] {
        &[".cursor"]
    }

    fn hook_entry(&self, _hook: &Hook, command: String) -> Value {
        json!({ "command": command })
    }

    fn wiring(
        &self,
        scope: Scope,
        places: &Places,
        program: &Program,
        _read: Read<'_>,
    ) -> Vec<FileParts> {
        let base = match scope {
            Scope::Project => &places.root,
            Scope::User => &places.home,
        };
        let mut hooks = vec![Part::Default {
            parents: &[],
            key: "version",
            value: json!(1),
        }];
        hooks.extend(hook_parts(HookClient::Cursor, program));
        vec![
            json_file(
                base.join(".cursor/mcp.json"),
                vec![server_entry(program.server())],
            ),
            json_file(base.join(".cursor/hooks.json"), hooks),
        ]
    }

    fn personal_files(&self) -> &'static [&'static str] {
        &[]
    }

    fn first_run_note(&self) -> Option<&'static str> {
        Some(ENABLE_NOTE)
    }

    fn will_run(&self, _places: &Places, _files: &[FileParts], _read: Read<'_>) -> WillRun {
        WillRun::Unchecked(ENABLE_NOTE)
    }
}
