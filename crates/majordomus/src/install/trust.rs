//! Whether a client will itself run what install wrote: files in place are not enough when
//! the client skips them. Codex reads a project's `.codex/` only in a project the person
//! trusts, and `codex exec` silently skips hooks nobody reviewed (the review, `/hooks` in
//! Codex, records each hook's hash under `[hooks.state]` of the user's `config.toml`); Gemini
//! CLI ignores a folder's settings until the folder is trusted (`~/.gemini/trustedFolders.json`).
//! Claude Code's strict reading of its settings is checked where the files are read
//! ([`super::wiring::Format::StrictJson`]).

use std::path::Path;

use serde_json::Value;

use super::doctor::first_run_note;
use super::document::Part;
use super::read;
use super::wiring::{FileParts, Places};
use crate::capabilities::hooks::HookClient;

/// The step the person must take before `client` runs the project's wiring `files` in
/// `places.root`; `None` when nothing says it will not.
pub fn will_not_run(client: HookClient, places: &Places, files: &[FileParts]) -> Option<String> {
    match client {
        HookClient::Codex => {
            let config = read(&places.codex_home.join("config.toml"))
                .and_then(|text| text.parse::<toml_edit::DocumentMut>().ok());
            let trusted = config
                .as_ref()
                .is_some_and(|config| codex_trusts_project(config, &places.root));
            let reviewed = config
                .as_ref()
                .is_some_and(|config| codex_reviewed_hooks(config, files));
            (!trusted || !reviewed).then(|| first_run_note(client).unwrap_or_default().to_owned())
        }
        HookClient::GeminiCli => (!gemini_trusts(&places.home, &places.root))
            .then(|| first_run_note(client).unwrap_or_default().to_owned()),
        HookClient::ClaudeCode | HookClient::Cursor => None,
    }
}

/// Whether `[projects."<dir>"] trust_level = "trusted"` names `root` or a directory above it.
fn codex_trusts_project(config: &toml_edit::DocumentMut, root: &Path) -> bool {
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
fn codex_reviewed_hooks(config: &toml_edit::DocumentMut, files: &[FileParts]) -> bool {
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

/// Whether `~/.gemini/trustedFolders.json` trusts `root`: a `TRUST_FOLDER` entry for it or a
/// directory above it, or a `TRUST_PARENT` entry for a directory whose parent is one of those,
/// and no `DO_NOT_TRUST` entry nearer to it.
fn gemini_trusts(home: &Path, root: &Path) -> bool {
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
        let program = super::super::wiring::Program::at(Path::new("/usr/bin/majordomus"));
        let files = super::super::wiring::wiring(
            HookClient::Codex,
            super::super::wiring::Scope::Project,
            &places,
            &program,
        );
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
        ];
        let config = reviewed(&all);
        assert!(codex_trusts_project(&config, &places.root));
        assert!(codex_reviewed_hooks(&config, &files));
        assert!(!codex_reviewed_hooks(&reviewed(&all[..3]), &files));
        assert!(!codex_trusts_project(
            &"[projects.\"/x\"]\ntrust_level = \"trusted\"\n"
                .parse()
                .unwrap(),
            &places.root
        ));
    }

    #[test]
    fn gemini_trust_is_read_as_gemini_reads_it() {
        let home = tempfile::tempdir().unwrap();
        let root = Path::new("/w/repo/beta");
        assert!(!gemini_trusts(home.path(), root), "no file");
        std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
        let trust = |folders: Value| {
            std::fs::write(
                home.path().join(".gemini/trustedFolders.json"),
                folders.to_string(),
            )
            .unwrap();
            gemini_trusts(home.path(), root)
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
