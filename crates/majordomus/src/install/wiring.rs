//! Where each client reads its MCP servers and its hooks, and what majordomus puts there: the
//! server entry, one hook per event it answers, and what the client needs to start the
//! server without asking (Claude Code's approval of this one project server, Gemini CLI's
//! `trust` on this server's entry).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::document::{Ours, Part, hook_command};
use crate::capabilities::hooks::HookClient;
use crate::hooks::clients::{edit_matcher, events};

/// Whose configuration is edited: the repository's (shared through it) or the user's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Project,
    User,
}

impl Scope {
    pub fn from_word(word: &str) -> Option<Scope> {
        match word {
            "project" => Some(Scope::Project),
            "user" => Some(Scope::User),
            _ => None,
        }
    }
}

/// How a file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    /// JSON read by a strict parser: no comments, no trailing commas. Claude Code ignores a
    /// settings file that has any ("Found 0 total hooks"), so install never writes one.
    StrictJson,
    Toml,
}

/// One file and what majordomus puts into it.
#[derive(Clone, Debug)]
pub struct FileParts {
    pub path: PathBuf,
    pub format: Format,
    pub parts: Vec<Part>,
}

/// The directories the configurations live in.
#[derive(Clone, Debug)]
pub struct Places {
    /// The checkout's root (project scope).
    pub root: PathBuf,
    /// The user's home directory (user scope).
    pub home: PathBuf,
    /// Codex's own directory: `$CODEX_HOME`, else `~/.codex`.
    pub codex_home: PathBuf,
}

/// How the configurations name the majordomus executable.
#[derive(Clone, Debug)]
pub struct Program {
    /// For a command run without a shell (an MCP server entry).
    pub path: String,
    /// The same, as a word of a shell command line (a hook).
    pub shell_word: String,
}

impl Program {
    /// `majordomus` when the one found on PATH is this very executable, else this
    /// executable's absolute path.
    pub fn this_executable() -> Program {
        let this = std::env::current_exe()
            .ok()
            .and_then(|path| path.canonicalize().ok());
        let on_path = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("majordomus"))
                .find(|candidate| candidate.is_file())
                .and_then(|found| found.canonicalize().ok())
        });
        match this {
            Some(this) if on_path.as_ref() != Some(&this) => Program::at(&this),
            _ => Program {
                path: "majordomus".into(),
                shell_word: "majordomus".into(),
            },
        }
    }

    /// The executable at `path`.
    pub fn at(path: &Path) -> Program {
        let path = path.to_string_lossy().into_owned();
        let plain = path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+@%:,".contains(c));
        let shell_word = if plain {
            path.clone()
        } else {
            format!("'{}'", path.replace('\'', r"'\''"))
        };
        Program { path, shell_word }
    }

    fn hook(&self, client: HookClient, event: &str) -> String {
        hook_command(&self.shell_word, client.as_str(), event)
    }

    fn server(&self) -> Value {
        json!({"command": self.path, "args": ["mcp"]})
    }
}

/// The project files install writes that hold one person's approvals (Claude Code's approval
/// of the project's server): kept out of git, since a teammate approves for themselves.
pub const PERSONAL_FILES: &[&str] = &[".claude/settings.local.json"];

/// The name of majordomus's server in every client's list of MCP servers.
pub const SERVER_NAME: &str = "majordomus";

/// How long a client waits for a hook: the hook gives up long before (`[hooks] budget_ms`);
/// this only bounds a hook that could not even start its clock.
pub const HOOK_TIMEOUT_SECONDS: u64 = 5;

/// Everything majordomus puts into `client`'s configuration for `scope`.
pub fn wiring(
    client: HookClient,
    scope: Scope,
    places: &Places,
    program: &Program,
) -> Vec<FileParts> {
    let base = match scope {
        Scope::Project => places.root.clone(),
        Scope::User => places.home.clone(),
    };
    let hooks = |timeout: Value, named: bool| -> Vec<Part> {
        events(client)
            .iter()
            .map(|event| {
                let mut hook = json!({"type": "command", "command": program.hook(client, event), "timeout": timeout});
                if named {
                    hook["name"] = json!(SERVER_NAME);
                }
                let entry = match edit_matcher(client, event) {
                    Some(matcher) => json!({"matcher": matcher, "hooks": [hook]}),
                    None => json!({"hooks": [hook]}),
                };
                Part::Hook {
                    parents: &["hooks"],
                    event,
                    entry,
                    ours: Ours::new(client.as_str(), event),
                }
            })
            .collect()
    };
    let server_entry = |value: Value| Part::Entry {
        parents: &["mcpServers"],
        key: SERVER_NAME,
        value,
    };
    let json = |path: PathBuf, parts: Vec<Part>| FileParts {
        path,
        format: Format::Json,
        parts,
    };
    let strict = |path: PathBuf, parts: Vec<Part>| FileParts {
        path,
        format: Format::StrictJson,
        parts,
    };
    match client {
        HookClient::ClaudeCode => {
            let seconds = json!(HOOK_TIMEOUT_SECONDS);
            match scope {
                Scope::Project => vec![
                    json(base.join(".mcp.json"), vec![server_entry(program.server())]),
                    strict(base.join(".claude/settings.json"), hooks(seconds, false)),
                    strict(
                        base.join(PERSONAL_FILES[0]),
                        vec![Part::ListItem {
                            parents: &[],
                            key: "enabledMcpjsonServers",
                            item: SERVER_NAME,
                        }],
                    ),
                ],
                Scope::User => vec![
                    json(
                        base.join(".claude.json"),
                        vec![server_entry(program.server())],
                    ),
                    strict(base.join(".claude/settings.json"), hooks(seconds, false)),
                ],
            }
        }
        HookClient::Codex => {
            let dir = match scope {
                Scope::Project => base.join(".codex"),
                Scope::User => places.codex_home.clone(),
            };
            let config = dir.join("config.toml");
            let server = Part::Entry {
                parents: &["mcp_servers"],
                key: SERVER_NAME,
                value: program.server(),
            };
            let hook_parts = hooks(json!(HOOK_TIMEOUT_SECONDS), false);
            // Codex warns when one layer has both a hooks.json and a [hooks] table: the hooks
            // go where the layer keeps its hooks already.
            if toml_has_hooks(&config) {
                let mut parts = vec![server];
                parts.extend(hook_parts);
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
                    json(dir.join("hooks.json"), hook_parts),
                ]
            }
        }
        HookClient::GeminiCli => {
            let mut server = program.server();
            server["trust"] = json!(true);
            let mut parts = vec![server_entry(server)];
            parts.extend(hooks(json!(HOOK_TIMEOUT_SECONDS * 1000), true));
            vec![json(base.join(".gemini/settings.json"), parts)]
        }
        HookClient::Cursor => {
            let mut hook_parts = vec![Part::Default {
                parents: &[],
                key: "version",
                value: json!(1),
            }];
            hook_parts.extend(events(client).iter().map(|event| Part::Hook {
                parents: &["hooks"],
                event,
                entry: json!({"command": program.hook(client, event)}),
                ours: Ours::new(client.as_str(), event),
            }));
            vec![
                json(
                    base.join(".cursor/mcp.json"),
                    vec![server_entry(program.server())],
                ),
                json(base.join(".cursor/hooks.json"), hook_parts),
            ]
        }
    }
}

/// Whether a Codex `config.toml` keeps hooks in a `[hooks]` table.
fn toml_has_hooks(config: &Path) -> bool {
    super::read(config)
        .and_then(|text| text.parse::<toml_edit::DocumentMut>().ok())
        .is_some_and(|document| document.contains_key("hooks"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_checkout::changes::OWN_WIRING_FILES;

    #[test]
    fn a_path_with_spaces_is_quoted_for_the_shell_only() {
        let program = Program::at(Path::new("/opt/my tools/majordomus"));
        assert_eq!(program.path, "/opt/my tools/majordomus");
        assert_eq!(program.shell_word, "'/opt/my tools/majordomus'");
        assert_eq!(
            program.hook(HookClient::Codex, "PreToolUse"),
            concat!(
                r"sh -c 'command -v '\''/opt/my tools/majordomus'\'' >/dev/null 2>&1 ",
                r"|| exit 0; exec '\''/opt/my tools/majordomus'\'' hook codex PreToolUse'"
            )
        );
        assert_eq!(
            Program::at(Path::new("/usr/bin/majordomus")).shell_word,
            "/usr/bin/majordomus"
        );
    }

    /// What a client runs when the executable is missing exits 0 (Gemini CLI takes any other
    /// status but 1 for "deny"), and runs the hook when it is there.
    #[test]
    fn a_hook_command_exits_0_without_majordomus_and_runs_it_with() {
        let dir = tempfile::tempdir().unwrap();
        let run = |program: &Program| {
            let command = program.hook(HookClient::GeminiCli, "BeforeTool");
            // as the clients run it: through a shell
            std::process::Command::new("sh")
                .arg("-c")
                .arg(&command)
                .env("PATH", "/usr/bin:/bin")
                .output()
                .unwrap()
        };
        let missing = run(&Program::at(&dir.path().join("my tools/majordomus")));
        assert_eq!(missing.status.code(), Some(0), "{missing:?}");
        assert!(missing.stdout.is_empty() && missing.stderr.is_empty());
        let bare = Program {
            path: "majordomus".into(),
            shell_word: "majordomus".into(),
        };
        assert_eq!(run(&bare).status.code(), Some(0), "not on PATH");

        let present = dir.path().join("my tools/majordomus");
        std::fs::create_dir_all(present.parent().unwrap()).unwrap();
        std::fs::write(&present, "#!/bin/sh\necho \"ran $*\"\n").unwrap();
        std::fs::set_permissions(
            &present,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let ran = run(&Program::at(&present));
        assert_eq!(
            String::from_utf8_lossy(&ran.stdout),
            "ran hook gemini-cli BeforeTool\n"
        );
    }

    /// The board leaves out exactly the files install writes into a checkout.
    #[test]
    fn every_project_file_is_one_the_board_knows_as_majordomus_s_own() {
        let places = Places {
            root: "/w/repo".into(),
            home: "/home/dev".into(),
            codex_home: "/home/dev/.codex".into(),
        };
        let program = Program::at(Path::new("/usr/bin/majordomus"));
        let mut written: Vec<String> = HookClient::ALL
            .into_iter()
            .flat_map(|client| wiring(client, Scope::Project, &places, &program))
            .map(|file| {
                let relative = file.path.strip_prefix(&places.root).unwrap();
                relative.to_string_lossy().into_owned()
            })
            .collect();
        written.sort();
        written.dedup();
        let mut own: Vec<String> = OWN_WIRING_FILES.iter().map(|f| f.to_string()).collect();
        own.sort();
        assert_eq!(written, own);
    }

    #[test]
    fn every_client_is_wired_for_each_event_it_answers() {
        let places = Places {
            root: "/w/repo".into(),
            home: "/home/dev".into(),
            codex_home: "/home/dev/.codex".into(),
        };
        let program = Program::at(Path::new("/usr/bin/majordomus"));
        for client in HookClient::ALL {
            for scope in [Scope::Project, Scope::User] {
                let files = wiring(client, scope, &places, &program);
                let hooks: Vec<&str> = files
                    .iter()
                    .flat_map(|file| &file.parts)
                    .filter_map(|part| match part {
                        Part::Hook { event, .. } => Some(*event),
                        _ => None,
                    })
                    .collect();
                assert_eq!(hooks, events(client), "{client} {scope:?}");
                let servers = files
                    .iter()
                    .flat_map(|file| &file.parts)
                    .filter(|part| {
                        matches!(
                            part,
                            Part::Entry {
                                key: SERVER_NAME,
                                ..
                            }
                        )
                    })
                    .count();
                assert_eq!(servers, 1, "{client} {scope:?}");
            }
        }
    }
}
