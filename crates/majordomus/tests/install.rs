//! `majordomus install`, `--dry-run`, `--uninstall` and `majordomus doctor`, run as a person
//! would, in a repository that already has each client's configuration: other servers, other
//! hooks, comments. What is there stays, a second run changes nothing, and uninstalling puts
//! every file back byte for byte.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use common::*;
use serde_json::{Value, json};

/// The configurations the repository had before majordomus, by path relative to its root.
const EXISTING: [(&str, &str); 6] = [
    (
        ".mcp.json",
        "{\n    \"mcpServers\": {\n        \"docs\": { \"command\": \"docs-mcp\", \"args\": [\"--stdio\"] }\n    }\n}\n",
    ),
    (
        ".claude/settings.json",
        "{\n  \"permissions\": { \"allow\": [\"Bash(cargo test:*)\"] },\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"Bash\",\n        \"hooks\": [{ \"type\": \"command\", \"command\": \"./scripts/check-command\" }]\n      }\n    ]\n  }\n}\n",
    ),
    (
        ".codex/config.toml",
        "# The team's Codex settings.\nmodel = \"gpt-5-codex\" # keep in step with CI\n\n[mcp_servers.docs] # the docs server\ncommand = \"docs-mcp\"\nargs = [\"--stdio\"]\n",
    ),
    (
        ".gemini/settings.json",
        "{\n  \"mcpServers\": { \"docs\": { \"command\": \"docs-mcp\" } },\n  \"hooks\": {\n    \"BeforeTool\": [\n      { \"matcher\": \"run_shell_command\", \"hooks\": [{ \"type\": \"command\", \"command\": \"./scripts/check-command\", \"timeout\": 2000 }] }\n    ]\n  }\n}",
    ),
    (
        ".cursor/mcp.json",
        "{\n  // servers every developer gets\n  \"mcpServers\": { \"docs\": { \"command\": \"docs-mcp\" } }\n}\n",
    ),
    (
        ".cursor/hooks.json",
        "{\n  \"version\": 1,\n  \"hooks\": { \"afterFileEdit\": [{ \"command\": \"./scripts/format\" }] }\n}\n",
    ),
];

/// The files majordomus adds where there were none.
const CREATED: [&str; 2] = [".claude/settings.local.json", ".codex/hooks.json"];

/// Every file under `dir` (`.git` aside), by relative path, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap().flatten() {
            let path = entry.path();
            if path.file_name() == Some(OsStr::new(".git")) {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap().to_path_buf();
                files.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// A repository holding [`EXISTING`], and a home of its own for the user's configuration.
struct Setup {
    repo: TempRepo,
    home: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let repo = TempRepo::new();
        for (path, text) in EXISTING {
            let path = repo.root().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let home = repo.base().join("home");
        std::fs::create_dir_all(&home).unwrap();
        Setup { repo, home }
    }

    /// Runs majordomus in the repository with the setup's home; its stdout, asserting it
    /// succeeded.
    async fn run(&self, args: &[&str]) -> String {
        let mut command = majordomus_command(args);
        command
            .current_dir(self.repo.root())
            .env("HOME", &self.home)
            .env_remove("CODEX_HOME")
            .env_remove("XDG_STATE_HOME")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let output = tokio::time::timeout(BOUND, command.output())
            .await
            .expect("majordomus finishes in time")
            .expect("majordomus runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success(),
            "majordomus {args:?} failed: {stderr}\n{stdout}"
        );
        assert_eq!(stderr, "", "majordomus {args:?} is quiet on stderr");
        stdout
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.repo.root().join(path))
            .unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// A JSON configuration, comments allowed, as a value.
    fn json(&self, path: &str) -> Value {
        let text = self.read(path);
        let without_comments: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        serde_json::from_str(&without_comments).unwrap_or_else(|e| panic!("{path}: {e}\n{text}"))
    }
}

/// The hook commands of a client's hook list, whatever its shape.
fn commands(hooks: &Value) -> Vec<String> {
    hooks
        .as_array()
        .unwrap_or_else(|| panic!("a hook list: {hooks}"))
        .iter()
        .flat_map(|entry| match entry["hooks"].as_array() {
            Some(inner) => inner.clone(),
            None => vec![entry.clone()],
        })
        .filter_map(|hook| hook["command"].as_str().map(str::to_owned))
        .collect()
}

fn ours(commands: &[String], client: &str, event: &str) -> usize {
    let suffix = format!(" hook {client} {event}");
    commands
        .iter()
        .filter(|command| command.ends_with(&suffix) && command.contains("majordomus"))
        .count()
}

/// 6. Install merges into what is there, a second run changes nothing, and uninstall restores
///    every file byte for byte (and removes the ones it created).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_merges_is_idempotent_and_uninstall_restores_every_byte() {
    let setup = Setup::new();
    let before = snapshot(setup.repo.root());

    let said = setup.run(&["install", "all", "--scope", "project"]).await;
    for line in [
        "claude-code: updated .mcp.json",
        "claude-code: updated .claude/settings.json",
        "claude-code: created .claude/settings.local.json",
        "codex: updated .codex/config.toml",
        "codex: created .codex/hooks.json",
        "gemini-cli: updated .gemini/settings.json",
        "cursor: updated .cursor/mcp.json",
        "cursor: updated .cursor/hooks.json",
    ] {
        assert!(said.contains(line), "{line} in:\n{said}");
    }

    // Claude Code: the server beside the other one, its hooks beside the other hook, and the
    // approval of exactly this project server.
    let mcp = setup.json(".mcp.json");
    assert_eq!(mcp["mcpServers"]["docs"]["args"], json!(["--stdio"]));
    assert_eq!(mcp["mcpServers"]["majordomus"]["args"], json!(["mcp"]));
    let settings = setup.json(".claude/settings.json");
    assert_eq!(
        settings["permissions"]["allow"],
        json!(["Bash(cargo test:*)"])
    );
    let pre = commands(&settings["hooks"]["PreToolUse"]);
    assert!(
        pre.contains(&"./scripts/check-command".to_string()),
        "{pre:?}"
    );
    for event in [
        "PreToolUse",
        "PostToolUse",
        "SessionStart",
        "UserPromptSubmit",
    ] {
        assert_eq!(
            ours(&commands(&settings["hooks"][event]), "claude-code", event),
            1,
            "{event}"
        );
    }
    assert_eq!(
        setup.json(".claude/settings.local.json"),
        json!({"enabledMcpjsonServers": ["majordomus"]})
    );

    // Codex: the TOML keeps its comments and its other server; the hooks in hooks.json.
    let config = setup.read(".codex/config.toml");
    assert!(
        config.starts_with(EXISTING[2].1),
        "the original text comes first:\n{config}"
    );
    let parsed: toml_edit::DocumentMut = config.parse().unwrap();
    assert_eq!(
        parsed["mcp_servers"]["majordomus"]["args"][0].as_str(),
        Some("mcp")
    );
    assert_eq!(
        parsed["mcp_servers"]["docs"]["command"].as_str(),
        Some("docs-mcp")
    );
    let codex_hooks = setup.json(".codex/hooks.json");
    for event in [
        "PreToolUse",
        "PostToolUse",
        "SessionStart",
        "UserPromptSubmit",
    ] {
        assert_eq!(
            ours(&commands(&codex_hooks["hooks"][event]), "codex", event),
            1,
            "{event}"
        );
    }
    assert_eq!(
        codex_hooks["hooks"]["PreToolUse"][0]["matcher"],
        "apply_patch"
    );

    // Gemini CLI: the server trusted, the hooks beside the other one, timeouts in ms.
    let gemini = setup.json(".gemini/settings.json");
    assert_eq!(gemini["mcpServers"]["majordomus"]["trust"], true);
    assert_eq!(gemini["mcpServers"]["docs"]["command"], "docs-mcp");
    let before_tool = &gemini["hooks"]["BeforeTool"];
    assert!(commands(before_tool).contains(&"./scripts/check-command".to_string()));
    assert_eq!(ours(&commands(before_tool), "gemini-cli", "BeforeTool"), 1);
    assert_eq!(before_tool[1]["matcher"], "write_file|replace");
    assert_eq!(before_tool[1]["hooks"][0]["timeout"], 5000);

    // Cursor: the comment stays; the hook beside the other one.
    assert!(
        setup
            .read(".cursor/mcp.json")
            .contains("// servers every developer gets")
    );
    let cursor = setup.json(".cursor/hooks.json");
    assert_eq!(cursor["version"], 1);
    let edits = commands(&cursor["hooks"]["afterFileEdit"]);
    assert_eq!(edits[0], "./scripts/format");
    assert_eq!(ours(&edits, "cursor", "afterFileEdit"), 1);

    // A second run changes nothing.
    let installed = snapshot(setup.repo.root());
    let again = setup.run(&["install", "all"]).await;
    assert_eq!(again.trim(), "nothing to change");
    assert_eq!(snapshot(setup.repo.root()), installed);

    // Uninstall: every file as it was, the created ones gone.
    let said = setup.run(&["install", "all", "--uninstall"]).await;
    for created in CREATED {
        assert!(
            said.contains(&format!("removed {created}")),
            "{created} in:\n{said}"
        );
    }
    assert_eq!(
        snapshot(setup.repo.root()),
        before,
        "uninstall restores every byte"
    );
    assert_eq!(
        setup.run(&["install", "all", "--uninstall"]).await.trim(),
        "nothing to change"
    );
}

/// 6. `--dry-run` prints the diff and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_prints_the_diff_and_writes_nothing() {
    let setup = Setup::new();
    let before = snapshot(setup.repo.root());
    let diff = setup.run(&["install", "codex", "--dry-run"]).await;
    assert!(
        diff.contains("--- a/.codex/config.toml\n+++ b/.codex/config.toml"),
        "{diff}"
    );
    assert!(diff.contains("+[mcp_servers.majordomus]"), "{diff}");
    assert!(
        diff.contains("--- /dev/null\n+++ b/.codex/hooks.json"),
        "{diff}"
    );
    assert!(diff.contains(" hook codex PreToolUse"), "{diff}");
    assert!(
        !diff.contains("-model"),
        "the rest of the file is untouched: {diff}"
    );
    assert_eq!(
        snapshot(setup.repo.root()),
        before,
        "a dry run writes nothing"
    );
    assert!(
        !snapshot(&setup.home)
            .keys()
            .any(|path| path.ends_with("install.json"))
    );
}

/// Uninstalling a file someone changed after install takes out only majordomus's entries:
/// their change stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstall_keeps_what_someone_added_since() {
    let setup = Setup::new();
    setup.run(&["install", "gemini-cli"]).await;
    let path = setup.repo.root().join(".gemini/settings.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen("{\n", "{\n  \"theme\": \"dark\",\n", 1);
    std::fs::write(&path, &edited).unwrap();

    setup.run(&["install", "gemini-cli", "--uninstall"]).await;
    let left = setup.json(".gemini/settings.json");
    assert_eq!(left["theme"], "dark", "the later change stays: {left:#}");
    assert!(left["mcpServers"].get("majordomus").is_none(), "{left:#}");
    assert_eq!(left["mcpServers"]["docs"]["command"], "docs-mcp");
    assert_eq!(
        commands(&left["hooks"]["BeforeTool"]),
        ["./scripts/check-command"]
    );
    assert!(left["hooks"].get("AfterTool").is_none(), "{left:#}");
}

/// The user's own configuration, in their home, and `doctor` on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_says_which_clients_are_wired_and_what_to_run() {
    let setup = Setup::new();
    let told = setup.run(&["doctor"]).await;
    for client in ["claude-code", "codex", "gemini-cli", "cursor"] {
        assert!(
            told.contains(&format!(
                "{client} (configured in this repository): not wired"
            )),
            "{client} in:\n{told}"
        );
        assert!(
            told.contains(&format!("run `majordomus install {client}`")),
            "{told}"
        );
    }

    setup.run(&["install", "claude-code"]).await;
    setup.run(&["install", "codex", "--scope", "user"]).await;
    let told = setup.run(&["doctor"]).await;
    assert!(
        told.contains("claude-code (configured in this repository): wired in this project"),
        "{told}"
    );
    assert!(
        told.contains("codex (configured in this repository): wired for this user"),
        "{told}"
    );
    assert!(
        told.contains("gemini-cli (configured in this repository): not wired"),
        "{told}"
    );
    let user_config = std::fs::read_to_string(setup.home.join(".codex/config.toml")).unwrap();
    assert!(
        user_config.contains("[mcp_servers.majordomus]"),
        "{user_config}"
    );
    assert!(setup.home.join(".codex/hooks.json").is_file());

    setup
        .run(&["install", "codex", "--scope", "user", "--uninstall"])
        .await;
    assert!(
        !setup.home.join(".codex").exists(),
        "what install made in the home is gone"
    );
}
