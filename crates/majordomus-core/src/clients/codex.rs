//! Codex CLI.
//!
//! - Hooks: `PreToolUse` / `PostToolUse` on `apply_patch` (the raw patch in
//!   `tool_input.command`, read by [`super::patch`]) and on its shell tools (`Bash`,
//!   `exec_command`, `shell`; the command a string or its words, in `command` or `cmd`),
//!   `SessionStart`, `UserPromptSubmit`, `SessionEnd`, and `PermissionRequest` and `Stop`,
//!   which say the session waits for the person; the conversation is `session_id`.
//!   `PermissionRequest` is answered with nothing, which leaves the approval to the person.
//! - Answers: only a `deny` decision is honoured (`allow` or `ask` make the hook fail and the
//!   tool run), so none other is ever written, and nobody is ever asked; context without a
//!   decision works.
//! - Configuration: `config.toml` in the project's `.codex/` or in `$CODEX_HOME` (`~/.codex`)
//!   holds the server; the hooks go in `hooks.json` beside it, or in its `[hooks]` table
//!   where that layer keeps its hooks already (Codex warns when a layer has both).
//! - Trust: Codex reads a project's `.codex/` only in a project the person trusts, and
//!   `codex exec` silently skips hooks nobody reviewed (the review, `/hooks` in Codex,
//!   records each hook's hash under `[hooks.state]` of the user's `config.toml`).

use std::path::Path;

use serde_json::{Value, json};

use super::patch::touched_files;
use super::wiring::{
    FileParts, Format, HOOK_TIMEOUT_SECONDS, Part, Places, Program, SERVER_NAME, Scope,
    command_group, hook_parts, json_file,
};
use super::{
    Contract, Hook, HookClient, Moment, Read, Waits, WillRun, claude_code_style_hooks, context,
    permission_decision, tool_call,
};

pub struct Codex;

/// The tool whose calls edit files, and the shell tools.
const TOOLS: &str = "apply_patch|Bash|exec_command|shell";

/// Its hooks, as Claude Code's contract has them: its session waits for the person when it
/// asks for a tool call's approval (`PermissionRequest`, on every tool).
static HOOKS: [Hook; 7] = claude_code_style_hooks(
    TOOLS,
    Hook {
        event: "PermissionRequest",
        moment: Moment::Waits(Waits::ForPermission),
        matcher: None,
    },
);

const REVIEW_STEP: &str = "Codex reads a project's .codex/ only in a project it trusts, and \
     `codex exec` skips hooks nobody reviewed: start `codex` in each worktree and review \
     majordomus's hooks with `/hooks` (again whenever they change)";

impl Contract for Codex {
    fn hooks(&self) -> &'static [Hook] {
        &HOOKS
    }

    fn is_shell_tool(&self, tool: &str) -> bool {
        matches!(tool, "Bash" | "exec_command" | "shell")
    }

    fn edited_files(&self, input: &Value) -> Option<Vec<String>> {
        match tool_call(input)? {
            ("apply_patch", arguments) => Some(touched_files(arguments.get("command")?.as_str()?)),
            _ => None,
        }
    }

    fn can_ask_person(&self, _env: &dyn Fn(&str) -> Option<String>) -> bool {
        false
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
        context(
            event,
            &format!(
                "{told}\nThis repository's policy (`[hooks] policy = \"ask\"` in \
                 majordomus.toml) leaves edits of files other sessions claim to the person \
                 to decide."
            ),
        )
    }

    fn after_edit(&self, _event: &str, _told: &str) -> Option<Value> {
        // It was told before the edit.
        None
    }

    fn news(&self, event: &str, told: &str) -> Option<Value> {
        Some(context(event, told))
    }

    fn executables(&self) -> &'static [&'static str] {
        &["codex"]
    }

    fn markers(&self) -> &'static [&'static str] {
        &[".codex"]
    }

    fn hook_entry(&self, hook: &Hook, command: String) -> Value {
        command_group(hook, command, json!(HOOK_TIMEOUT_SECONDS), false)
    }

    fn wiring(
        &self,
        scope: Scope,
        places: &Places,
        program: &Program,
        read: Read<'_>,
    ) -> Vec<FileParts> {
        let dir = match scope {
            Scope::Project => places.root.join(".codex"),
            Scope::User => places.codex_home.clone(),
        };
        let config = dir.join("config.toml");
        let server = Part::Entry {
            parents: &["mcp_servers"],
            key: SERVER_NAME,
            value: program.server(),
        };
        let hooks = hook_parts(HookClient::Codex, program);
        let keeps_hooks = read(&config)
            .and_then(|text| text.parse::<toml_edit::DocumentMut>().ok())
            .is_some_and(|document| document.contains_key("hooks"));
        if keeps_hooks {
            let mut parts = vec![server];
            parts.extend(hooks);
            vec![FileParts {
                path: config,
                format: Format::Toml,
                parts,
            }]
        } else {
            vec![
                FileParts {
                    path: config,
                    format: Format::Toml,
                    parts: vec![server],
                },
                json_file(dir.join("hooks.json"), hooks),
            ]
        }
    }

    fn personal_files(&self) -> &'static [&'static str] {
        &[]
    }

    fn first_run_note(&self) -> Option<&'static str> {
        Some(REVIEW_STEP)
    }

    fn will_run(&self, places: &Places, files: &[FileParts], read: Read<'_>) -> WillRun {
        let config = read(&places.codex_home.join("config.toml"))
            .and_then(|text| text.parse::<toml_edit::DocumentMut>().ok());
        let trusted = config
            .as_ref()
            .is_some_and(|config| trusts_project(config, &places.root));
        let reviewed = config
            .as_ref()
            .is_some_and(|config| reviewed_hooks(config, files));
        if trusted && reviewed {
            WillRun::Yes
        } else {
            WillRun::NotYet(REVIEW_STEP.to_owned())
        }
    }
}

/// Whether `[projects."<dir>"] trust_level = "trusted"` names `root` or a directory above it.
fn trusts_project(config: &toml_edit::DocumentMut, root: &Path) -> bool {
    let Some(projects) = config.get("projects").and_then(|item| item.as_table_like()) else {
        return false;
    };
    root.ancestors().any(|dir| {
        projects
            .get(&dir.to_string_lossy())
            .and_then(|project| project.get("trust_level"))
            .and_then(|level| level.as_str())
            == Some("trusted")
    })
}

/// Whether every hook event install wrote has a reviewed hook of the file it is in
/// (`[hooks.state."<file>:<event>:<group>:<hook>"] trusted_hash`). Whether the review is of
/// the hook as it is now only Codex can say: its hash is its own.
fn reviewed_hooks(config: &toml_edit::DocumentMut, files: &[FileParts]) -> bool {
    let Some(states) = config
        .get("hooks")
        .and_then(|hooks| hooks.get("state"))
        .and_then(|state| state.as_table_like())
    else {
        return false;
    };
    let reviewed: Vec<&str> = states
        .iter()
        .filter(|(_, state)| state.get("trusted_hash").is_some())
        .map(|(key, _)| key)
        .collect();
    files.iter().all(|file| {
        file.parts.iter().all(|part| match part {
            Part::Hook { event, .. } => {
                let prefix = format!("{}:{}:", file.path.display(), snake_case(event));
                reviewed.iter().any(|key| key.starts_with(&prefix))
            }
            _ => true,
        })
    })
}

/// `PreToolUse` as Codex names the event in a hook's key: `pre_tool_use`.
fn snake_case(event: &str) -> String {
    let mut snake = String::with_capacity(event.len() + 4);
    for (at, c) in event.char_indices() {
        if c.is_ascii_uppercase() {
            if at > 0 {
                snake.push('_');
            }
            snake.push(c.to_ascii_lowercase());
        } else {
            snake.push(c);
        }
    }
    snake
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_names_events_in_snake_case() {
        assert_eq!(snake_case("PreToolUse"), "pre_tool_use");
        assert_eq!(snake_case("UserPromptSubmit"), "user_prompt_submit");
    }

    /// Codex's review is read from its keys, `<hooks file>:<event>:<group>:<hook>`, as
    /// `codex app-server`'s `hooks/list` names them.
    #[test]
    fn codex_s_review_and_project_trust_are_read_from_its_config() {
        let places = Places {
            root: "/w/repo".into(),
            home: "/home/dev".into(),
            codex_home: "/home/dev/.codex".into(),
        };
        let program = Program::at(Path::new("/usr/bin/majordomus"));
        let files = Codex.wiring(Scope::Project, &places, &program, &|_| None);
        let reviewed = |events: &[&str]| -> toml_edit::DocumentMut {
            let mut text = String::from("[projects.\"/w\"]\ntrust_level = \"trusted\"\n");
            for event in events {
                text.push_str(&format!(
                    "[hooks.state.\"/w/repo/.codex/hooks.json:{event}:0:0\"]\ntrusted_hash = \"sha256:0\"\n"
                ));
            }
            text.parse().unwrap()
        };
        let all = [
            "pre_tool_use",
            "post_tool_use",
            "session_start",
            "user_prompt_submit",
            "session_end",
            "permission_request",
            "stop",
        ];
        let config = reviewed(&all);
        assert!(trusts_project(&config, &places.root));
        assert!(reviewed_hooks(&config, &files));
        assert!(!reviewed_hooks(&reviewed(&all[..3]), &files));
        assert!(!trusts_project(
            &"[projects.\"/x\"]\ntrust_level = \"trusted\"\n"
                .parse()
                .unwrap(),
            &places.root
        ));
    }
}
