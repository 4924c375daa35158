//! Gemini CLI.
//!
//! - Hooks: `BeforeTool` / `AfterTool` on `write_file` and `replace` (absolute `file_path`)
//!   and on `run_shell_command`, `SessionStart`, `BeforeAgent`, `SessionEnd`, and
//!   `Notification` (`notification_type` `ToolPermission`) and `AfterAgent` (the turn is
//!   over), which say the session waits for the person and are answered with nothing; the
//!   conversation is `session_id`. Any exit status but 0 and 1 is taken for "deny", which is
//!   why every hook command exits 0 when majordomus is missing.
//! - Answers: `BeforeTool` honours `decision` `deny` (with `reason`, sent to the model) and
//!   `ask`, which a headless run waits on forever, so it is never answered where no person
//!   can be asked, and nothing in a hook's input says whether one can. `additionalContext`
//!   reaches the model on `AfterTool`, `BeforeAgent` and `SessionStart` only, so a warning
//!   before an edit is shown to the person and the model reads it once the edit is done.
//! - Configuration: `.gemini/settings.json` holds the server, with `"trust": true` so that a
//!   headless run offers its tools, and the hooks (timeouts in milliseconds, each named).
//! - Trust: Gemini CLI ignores a folder's settings until the folder is trusted
//!   (`~/.gemini/trustedFolders.json`); 0.61 has no `gemini trust` command.

use std::path::Path;

use serde_json::{Value, json};

use super::wiring::{
    FileParts, HOOK_TIMEOUT_SECONDS, Places, Program, Scope, command_group, hook_parts, json_file,
    server_entry,
};
use super::{
    Contract, Hook, HookClient, Moment, NewsMoment, Read, Waits, WillRun, context, named_file,
    text, tool_call,
};

pub struct GeminiCli;

/// The tools whose calls edit files, and the shell tool.
const TOOLS: &str = "write_file|replace|run_shell_command";

const TRUST_STEP: &str = "Gemini CLI reads a folder's .gemini/settings.json only once the \
     folder is trusted: start `gemini` there and trust it in the first-run dialog, or run \
     `/permissions trust` in a session; a headless `gemini -p` trusts it for one run with \
     `--skip-trust`";

impl Contract for GeminiCli {
    fn hooks(&self) -> &'static [Hook] {
        &[
            Hook {
                event: "BeforeTool",
                moment: Moment::BeforeTool,
                matcher: Some(TOOLS),
            },
            Hook {
                event: "AfterTool",
                moment: Moment::AfterTool,
                matcher: Some(TOOLS),
            },
            Hook {
                event: "SessionStart",
                moment: Moment::News(NewsMoment::SessionStart),
                matcher: None,
            },
            Hook {
                event: "BeforeAgent",
                moment: Moment::News(NewsMoment::Prompt),
                matcher: None,
            },
            Hook {
                event: "SessionEnd",
                moment: Moment::SessionEnd,
                matcher: None,
            },
            Hook {
                event: "Notification",
                moment: Moment::Waits(Waits::Notified),
                matcher: None,
            },
            Hook {
                event: "AfterAgent",
                moment: Moment::Waits(Waits::Finished),
                matcher: None,
            },
        ]
    }

    fn is_shell_tool(&self, tool: &str) -> bool {
        tool == "run_shell_command"
    }

    fn edited_files(&self, input: &Value) -> Option<Vec<String>> {
        match tool_call(input)? {
            ("write_file" | "replace", arguments) => named_file(arguments, "file_path"),
            _ => None,
        }
    }

    fn can_ask_person(&self, _env: &dyn Fn(&str) -> Option<String>) -> bool {
        false
    }

    fn refusal(&self, _event: &str, reason: &str) -> Value {
        json!({ "decision": "deny", "reason": reason })
    }

    fn asking(&self, _event: &str, told: &str) -> Value {
        json!({ "decision": "ask", "systemMessage": told })
    }

    fn warning(&self, _event: &str, told: &str) -> Value {
        // Before an edit Gemini CLI gives context to no one but the person; the model reads
        // the same once the edit is done (`AfterTool`).
        json!({ "systemMessage": told })
    }

    fn policy_asks(&self, event: &str, person: bool, told: &str, all: &[String]) -> Value {
        if person {
            return self.asking(event, told);
        }
        self.refusal(
            event,
            &text(
                "majordomus refused this edit: this repository's policy (`[hooks] policy = \
                 \"ask\"` in majordomus.toml) leaves edits of files other sessions claim to \
                 the person, and this run has no person to ask.",
                all,
            ),
        )
    }

    fn after_edit(&self, event: &str, told: &str) -> Option<Value> {
        Some(context(event, told))
    }

    fn news(&self, event: &str, told: &str) -> Option<Value> {
        Some(context(event, told))
    }

    fn executables(&self) -> &'static [&'static str] {
        &["gemini"]
    }

    fn markers(&self) -> &'static [&'static str] {
        &[".gemini"]
    }

    fn hook_entry(&self, hook: &Hook, command: String) -> Value {
        command_group(hook, command, json!(HOOK_TIMEOUT_SECONDS * 1000), true)
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
        let mut server = program.server();
        server["trust"] = json!(true);
        let mut parts = vec![server_entry(server)];
        parts.extend(hook_parts(HookClient::GeminiCli, program));
        vec![json_file(base.join(".gemini/settings.json"), parts)]
    }

    fn personal_files(&self) -> &'static [&'static str] {
        &[]
    }

    fn first_run_note(&self) -> Option<&'static str> {
        Some(TRUST_STEP)
    }

    fn will_run(&self, places: &Places, _files: &[FileParts], read: Read<'_>) -> WillRun {
        if trusts(&places.home, &places.root, read) {
            WillRun::Yes
        } else {
            WillRun::NotYet(TRUST_STEP.to_owned())
        }
    }
}

/// Whether `~/.gemini/trustedFolders.json` trusts `root`: a `TRUST_FOLDER` entry for it or a
/// directory above it, or a `TRUST_PARENT` entry for a directory whose parent is one of those,
/// and no `DO_NOT_TRUST` entry nearer to it.
fn trusts(home: &Path, root: &Path, read: Read<'_>) -> bool {
    let Some(folders) = read(&home.join(".gemini/trustedFolders.json"))
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
    else {
        return false;
    };
    let Some(folders) = folders.as_object() else {
        return false;
    };
    for dir in root.ancestors() {
        let level = |path: &Path| {
            folders
                .get(&*path.to_string_lossy())
                .and_then(Value::as_str)
        };
        match level(dir) {
            Some("TRUST_FOLDER") => return true,
            Some("DO_NOT_TRUST") => return false,
            _ => {}
        }
        let parented = folders
            .iter()
            .any(|(path, level)| level == "TRUST_PARENT" && Path::new(path).parent() == Some(dir));
        if parented {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_trust_is_read_as_gemini_reads_it() {
        let home = tempfile::tempdir().unwrap();
        let root = Path::new("/w/repo/beta");
        let read = |path: &Path| std::fs::read_to_string(path).ok();
        assert!(!trusts(home.path(), root, &read), "no file");
        std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
        let trust = |folders: Value| {
            std::fs::write(
                home.path().join(".gemini/trustedFolders.json"),
                folders.to_string(),
            )
            .unwrap();
            trusts(home.path(), root, &read)
        };
        assert!(trust(serde_json::json!({"/w/repo/beta": "TRUST_FOLDER"})));
        assert!(trust(serde_json::json!({"/w": "TRUST_FOLDER"})));
        assert!(trust(serde_json::json!({"/w/repo/alpha": "TRUST_PARENT"})));
        assert!(!trust(serde_json::json!({"/w/other": "TRUST_FOLDER"})));
        assert!(!trust(
            serde_json::json!({"/w": "TRUST_FOLDER", "/w/repo/beta": "DO_NOT_TRUST"})
        ));
    }
}
