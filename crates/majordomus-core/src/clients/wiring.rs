//! The words every client's wiring is written in: the files and scopes, the parts majordomus
//! puts into a file ([`Part`]), the hook command and how an entry is recognised as
//! majordomus's own ([`Ours`]), and the pieces several clients write alike.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::HookClient;

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

    /// The hook command for `client`'s `event`.
    pub fn hook(&self, client: HookClient, event: &str) -> String {
        hook_command(&self.shell_word, client.as_str(), event)
    }

    /// majordomus's MCP server entry, as most clients write one.
    pub fn server(&self) -> Value {
        json!({"command": self.path, "args": ["mcp"]})
    }
}

/// The name of majordomus's server in every client's list of MCP servers.
pub const SERVER_NAME: &str = "majordomus";

/// How long a client waits for a hook: the hook gives up long before (`[hooks] budget_ms`);
/// this only bounds a hook that could not even start its clock.
pub const HOOK_TIMEOUT_SECONDS: u64 = 5;

/// Whether `path` names the majordomus executable, wherever it is.
pub fn names_majordomus(path: &str) -> bool {
    Path::new(path).file_name() == Some(OsStr::new("majordomus"))
}

/// Whether a shell word is the majordomus executable alone, as install writes it: a plain
/// path, or one in single quotes.
fn is_program_word(word: &str) -> bool {
    match word
        .strip_prefix('\'')
        .and_then(|word| word.strip_suffix('\''))
    {
        Some(quoted) => names_majordomus(&quoted.replace(r"'\''", "'")),
        None => !word.contains(char::is_whitespace) && names_majordomus(word),
    }
}

/// The hook command install writes: `majordomus hook <client> <event>` behind a check that
/// the executable is there, so a client whose person has no majordomus (a teammate sharing
/// the repository's files) runs a command that exits 0 rather than the shell's 127, which
/// Gemini CLI takes for "deny". Written for `sh -c`, which every client can run, whether it
/// hands the line to a shell of its own or splits it into words.
pub fn hook_command(program_word: &str, client: &str, event: &str) -> String {
    let guarded =
        format!("{CHECK_HEAD}{program_word}{CHECK_TAIL}{program_word} hook {client} {event}");
    format!("{WRAPPER_HEAD}{}'", guarded.replace('\'', r"'\''"))
}

const WRAPPER_HEAD: &str = "sh -c '";
const CHECK_HEAD: &str = "command -v ";
const CHECK_TAIL: &str = " >/dev/null 2>&1 || exit 0; exec ";

/// The command a hook runs, taken out of the wrapper [`hook_command`] writes (the same
/// program checked and run); any other command as it is. Earlier versions wrote the bare
/// command, so both forms are majordomus's own.
pub fn unwrapped(command: &str) -> String {
    let inner = command
        .strip_prefix(WRAPPER_HEAD)
        .and_then(|rest| rest.strip_suffix('\''))
        .map(|inner| inner.replace(r"'\''", "'"));
    let run = inner.as_deref().and_then(|inner| {
        let (check, run) = inner.split_once(CHECK_TAIL)?;
        let program = check.strip_prefix(CHECK_HEAD)?;
        run.strip_prefix(program)?
            .starts_with(" hook ")
            .then(|| run.to_owned())
    });
    run.unwrap_or_else(|| command.to_owned())
}

/// Which of a command's hooks are majordomus's: the command runs `majordomus hook <client>
/// <event>`, from wherever the executable is, bare or in the wrapper [`hook_command`] writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ours {
    suffix: String,
}

impl Ours {
    pub fn new(client: &str, event: &str) -> Ours {
        Ours {
            suffix: format!(" hook {client} {event}"),
        }
    }

    fn command(&self, command: &str) -> bool {
        let command = unwrapped(command);
        command.ends_with(&self.suffix) && command.contains("majordomus")
    }

    /// Whether `command` is ours as install writes it, or wrote it before: the executable,
    /// wherever it is, and nothing else before the subcommand (no environment).
    fn plain(&self, command: &str) -> bool {
        unwrapped(command)
            .strip_suffix(&self.suffix)
            .is_some_and(is_program_word)
    }

    /// `entry` with each plain command of ours written as from one place, so that an entry a
    /// moved executable wrote compares equal to the one install writes now.
    fn normalised(&self, entry: &Value) -> Value {
        let from_one_place = |hook: &mut Value| {
            if hook["command"].as_str().is_some_and(|c| self.plain(c)) {
                hook["command"] = Value::String(format!("majordomus{}", self.suffix));
            }
        };
        let mut entry = entry.clone();
        from_one_place(&mut entry);
        if let Some(hooks) = entry.get_mut("hooks").and_then(Value::as_array_mut) {
            hooks.iter_mut().for_each(from_one_place);
        }
        entry
    }

    /// Whether `existing`, an entry of ours, is what install writes as `wanted` but for where
    /// the executable is: anything else in it is the person's own.
    pub fn as_written(&self, existing: &Value, wanted: &Value) -> bool {
        self.normalised(existing) == self.normalised(wanted)
    }

    /// Whether an entry of ours in `entries` is the person's own (see [`Ours::as_written`]).
    pub fn someone_s_own<'a>(
        &self,
        mut entries: impl Iterator<Item = &'a Value>,
        wanted: &Value,
    ) -> bool {
        entries.any(|entry| self.entry(entry) && !self.as_written(entry, wanted))
    }

    /// Whether a hook entry runs our command: a flat entry (`{"command": …}`), or a group
    /// (`{"matcher": …, "hooks": [{"command": …}]}`) one of whose hooks does.
    pub fn entry(&self, entry: &Value) -> bool {
        let runs = |hook: &Value| hook["command"].as_str().is_some_and(|c| self.command(c));
        runs(entry)
            || entry["hooks"]
                .as_array()
                .is_some_and(|hooks| hooks.iter().any(runs))
    }

    /// The entry without our hooks; `None` when nothing else is left in it.
    pub fn without_ours(&self, entry: &Value) -> Option<Value> {
        let runs = |hook: &Value| hook["command"].as_str().is_some_and(|c| self.command(c));
        if runs(entry) {
            return None;
        }
        let mut entry = entry.clone();
        let hooks = entry.get_mut("hooks")?.as_array_mut()?;
        hooks.retain(|hook| !runs(hook));
        (!hooks.is_empty()).then_some(entry)
    }
}

/// One thing majordomus puts into a file.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    /// `key` of the object at `parents` is `value`: majordomus's own entry under its name,
    /// replacing one a moved executable wrote, never one written some other way.
    Entry {
        parents: &'static [&'static str],
        key: &'static str,
        value: Value,
    },
    /// The array `key` of the object at `parents` holds the string `item`.
    ListItem {
        parents: &'static [&'static str],
        key: &'static str,
        item: &'static str,
    },
    /// `key` of the object at `parents` is `value` unless it is already set; never removed,
    /// being part of the file's format rather than of majordomus.
    Default {
        parents: &'static [&'static str],
        key: &'static str,
        value: Value,
    },
    /// The list of hooks for `event` in the object at `parents` holds `entry`, and no other
    /// entry of ours (unless one was written some other way: that one stays, and `entry` does
    /// not go in).
    Hook {
        parents: &'static [&'static str],
        event: &'static str,
        entry: Value,
        ours: Ours,
    },
}

/// majordomus's server entry under its name in the `mcpServers` object.
pub fn server_entry(value: Value) -> Part {
    Part::Entry {
        parents: &["mcpServers"],
        key: SERVER_NAME,
        value,
    }
}

/// A file in plain JSON.
pub fn json_file(path: PathBuf, parts: Vec<Part>) -> FileParts {
    FileParts {
        path,
        format: Format::Json,
        parts,
    }
}

/// A file in strict JSON.
pub fn strict_file(path: PathBuf, parts: Vec<Part>) -> FileParts {
    FileParts {
        path,
        format: Format::StrictJson,
        parts,
    }
}

/// One hook part for each event `client` answers, under `hooks`, each its contract's entry
/// running the hook command.
pub fn hook_parts(client: HookClient, program: &Program) -> Vec<Part> {
    let contract = client.contract();
    contract
        .hooks()
        .iter()
        .map(|hook| Part::Hook {
            parents: &["hooks"],
            event: hook.event,
            entry: contract.hook_entry(hook, program.hook(client, hook.event)),
            ours: Ours::new(client.as_str(), hook.event),
        })
        .collect()
}

/// A hook entry of a `{"matcher": …, "hooks": [{"type": "command", …}]}` group, as Claude
/// Code, Codex and Gemini CLI write them (the matcher left out for an event not about a
/// tool); `name` names the hook where the client shows names.
pub fn command_group(hook: &super::Hook, command: String, timeout: Value, name: bool) -> Value {
    let mut entry = json!({"type": "command", "command": command, "timeout": timeout});
    if name {
        entry["name"] = json!(SERVER_NAME);
    }
    match hook.matcher {
        Some(matcher) => json!({"matcher": matcher, "hooks": [entry]}),
        None => json!({"hooks": [entry]}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_checkout::changes::OWN_WIRING_FILES;

    /// `client`'s wiring for `scope`, read as if no file were there yet.
    fn wiring(
        client: HookClient,
        scope: Scope,
        places: &Places,
        program: &Program,
    ) -> Vec<FileParts> {
        client.contract().wiring(scope, places, program, &|_| None)
    }

    /// The events `client`'s hooks are wired for, in order.
    fn events(client: HookClient) -> Vec<&'static str> {
        client
            .contract()
            .hooks()
            .iter()
            .map(|hook| hook.event)
            .collect()
    }

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
        majordomus_checkout::files::set_mode(&present, 0o755).unwrap();
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
