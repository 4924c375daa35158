//! `majordomus install`, `--dry-run`, `--uninstall` and `majordomus doctor`, run as a person
//! would, in a repository that already has each client's configuration: other servers, other
//! hooks, comments. What is there stays, a second run changes nothing, and uninstalling puts
//! every file back byte for byte.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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

/// Every file under `dir` (`.git` aside), by relative path, with its bytes and permission
/// bits; a link by where it points, a FIFO or other special file by its kind alone (reading a
/// FIFO would wait for a writer).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap().flatten() {
            let path = entry.path();
            if path.file_name() == Some(OsStr::new(".git")) {
                continue;
            }
            let metadata = path.symlink_metadata().unwrap();
            let kind = metadata.file_type();
            let relative = path.strip_prefix(dir).unwrap().to_path_buf();
            let mode = metadata.permissions().mode();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                files.insert(
                    relative,
                    (mode, target.into_os_string().into_encoded_bytes()),
                );
            } else if kind.is_file() {
                files.insert(relative, (mode, std::fs::read(&path).unwrap()));
            } else {
                files.insert(relative, (mode, b"(not a regular file)".to_vec()));
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

    /// Runs majordomus in the repository with the setup's home, as `configure` leaves the
    /// command; what it did.
    async fn output(
        &self,
        args: &[&str],
        configure: impl FnOnce(&mut tokio::process::Command),
    ) -> Output {
        let mut command = majordomus_command(args);
        command
            .current_dir(self.repo.root())
            .env("HOME", &self.home)
            .env_remove("CODEX_HOME")
            .env_remove("XDG_STATE_HOME")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        configure(&mut command);
        tokio::time::timeout(BOUND, command.output())
            .await
            .expect("majordomus finishes in time")
            .expect("majordomus runs")
    }

    /// Runs majordomus in the repository with the setup's home; its stdout, asserting it
    /// succeeded.
    async fn run(&self, args: &[&str]) -> String {
        let output = self.output(args, |_| {}).await;
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
        .filter(|command| command.contains(&suffix) && command.contains("majordomus"))
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
        "apply_patch|Bash|exec_command|shell"
    );

    // Gemini CLI: the server trusted, the hooks beside the other one, timeouts in ms.
    let gemini = setup.json(".gemini/settings.json");
    assert_eq!(gemini["mcpServers"]["majordomus"]["trust"], true);
    assert_eq!(gemini["mcpServers"]["docs"]["command"], "docs-mcp");
    let before_tool = &gemini["hooks"]["BeforeTool"];
    assert!(commands(before_tool).contains(&"./scripts/check-command".to_string()));
    assert_eq!(ours(&commands(before_tool), "gemini-cli", "BeforeTool"), 1);
    assert_eq!(
        before_tool[1]["matcher"],
        "write_file|replace|run_shell_command"
    );
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

/// Several clients named in one command are each wired, and no other; a person who reads only
/// the first line of what install prints (`| head -1`) gets no panic, and the command succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_clients_at_once_and_a_reader_that_goes_away() {
    let setup = Setup::new();
    let before = snapshot(setup.repo.root());
    let printed = setup.run(&["install", "codex", "gemini-cli"]).await;
    assert!(printed.contains("codex: "), "{printed}");
    assert!(printed.contains("gemini-cli: "), "{printed}");
    assert!(
        setup
            .read(".codex/config.toml")
            .contains("[mcp_servers.majordomus]")
    );
    assert!(
        setup
            .read(".gemini/settings.json")
            .contains("\"majordomus\"")
    );
    assert_eq!(
        setup.read(".mcp.json").as_bytes(),
        before[Path::new(".mcp.json")].1.as_slice(),
        "Claude Code was not named, so it is not wired"
    );

    // A reader that closes the pipe at once: the diff of the remaining clients does not fit
    // in what was read, and the write that finds the pipe closed ends install quietly.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = setup
        .output(&["install", "--dry-run"], |command| {
            command.stdout(writer);
        })
        .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "install --dry-run into a closed pipe: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
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

    assert!(
        told.contains("the guard's policy is `guard` (`[hooks] policy` in majordomus.toml)"),
        "the policy in force, by default: {told}"
    );

    let installed = setup.run(&["install", "claude-code"]).await;
    assert!(
        installed.contains("the guard's policy is `guard`"),
        "install names the policy in force: {installed}"
    );
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

/// Runs the command under a file-size limit of `bytes`, a write past it failing with EFBIG
/// (SIGXFSZ ignored), as a full disk fails a write halfway.
fn file_size_limit(bytes: u64) -> impl FnOnce(&mut tokio::process::Command) {
    move |command| {
        // SAFETY: the closure only makes two async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0
                    || libc::signal(libc::SIGXFSZ, libc::SIG_IGN) == libc::SIG_ERR
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

/// A write that fails halfway — the new settings, or the record of what install
/// wrote — leaves every file byte for byte as it was, and no temporary file behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_fails_halfway_leaves_every_file_as_it_was() {
    let setup = Setup::new();
    let notes: Vec<Value> = (0..4000)
        .map(|n| json!({"n": n, "note": format!("\"quoted\" note {n}")}))
        .collect();
    let large = serde_json::to_string_pretty(&json!({
        "permissions": {"allow": ["Bash(cargo test:*)"]},
        "notes": notes,
    }))
    .unwrap()
        + "\n";
    assert!(large.len() > 200_000, "{}", large.len());
    let settings = setup.repo.root().join(".claude/settings.json");
    std::fs::write(&settings, &large).unwrap();
    let record = lease_path(setup.repo.root()).with_file_name("install.json");
    let before = snapshot(setup.repo.root());

    // The settings cannot be written whole; then they can, but the record (which keeps the
    // original to restore it) cannot.
    for limit in [100_000, large.len() as u64 + 8_192] {
        let output = setup
            .output(&["install", "claude-code"], file_size_limit(limit))
            .await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "limit {limit}: {stderr}");
        assert!(
            stderr.contains("File too large") && stderr.contains("nothing was changed"),
            "limit {limit}: {stderr}"
        );
        assert_eq!(
            snapshot(setup.repo.root()),
            before,
            "limit {limit}: every file as it was, no temporary file left"
        );
        assert!(!record.exists(), "limit {limit}");
    }
    assert!(
        String::from_utf8_lossy(
            &setup
                .output(&["install", "claude-code"], file_size_limit(100_000))
                .await
                .stderr
        )
        .contains("cannot write .claude/settings.json: File too large"),
        "the first refusal names the file"
    );

    // Without the limit the same install goes through, and uninstall restores every byte.
    setup.run(&["install", "claude-code"]).await;
    let installed = std::fs::read_to_string(&settings).unwrap();
    assert!(installed.contains("hook claude-code PreToolUse"));
    assert!(installed.starts_with(&large[..1000]));
    setup.run(&["install", "claude-code", "--uninstall"]).await;
    assert_eq!(snapshot(setup.repo.root()), before);
}

/// 20 install/uninstall pairs while an editor keeps saving `.claude/settings.json`
/// (whole, by rename, as editors do) and another reader keeps reading it: none of the editor's
/// saves is lost (where the rename is an exchange), and nobody ever reads a partial file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_beside_an_editor_loses_none_of_its_saves_and_no_reader_sees_a_partial_file() {
    let setup = Setup::new();
    let settings = setup.repo.root().join(".claude/settings.json");
    std::fs::write(
        &settings,
        serde_json::to_string_pretty(&json!({"counter": 0, "theme": "dark"})).unwrap(),
    )
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let saves = Arc::new(std::sync::atomic::AtomicU64::new(0));

    // The editor: reads the file, checks its own last save is there, saves the next counter.
    let editor = {
        let (settings, stop, saves) = (settings.clone(), stop.clone(), saves.clone());
        std::thread::spawn(move || {
            let saved_as = settings.with_file_name(".settings.json.editor");
            let (mut counter, mut unparsed, mut lost) = (0u64, Vec::new(), Vec::new());
            let mut missing_since: Option<std::time::Instant> = None;
            while !stop.load(Ordering::SeqCst) {
                let text = std::fs::read_to_string(&settings).unwrap();
                let mut value: Value = match serde_json::from_str(&text) {
                    Ok(value) => value,
                    Err(error) => {
                        unparsed.push(format!("{error}: {} bytes", text.len()));
                        continue;
                    }
                };
                // An exchange may show install's text for a moment before its merge with
                // this save: a save is lost only if it does not come back.
                if value["counter"] != json!(counter) {
                    let since = *missing_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() < Duration::from_secs(2) {
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                    lost.push((counter, value["counter"].clone()));
                }
                missing_since = None;
                counter += 1;
                value["counter"] = json!(counter);
                std::fs::write(&saved_as, serde_json::to_string_pretty(&value).unwrap()).unwrap();
                std::fs::rename(&saved_as, &settings).unwrap();
                saves.store(counter, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
            }
            (counter, unparsed, lost)
        })
    };
    // Another reader: every reading parses.
    let reader = {
        let (settings, stop) = (settings.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut readings, mut unparsed) = (0u64, Vec::new());
            while !stop.load(Ordering::SeqCst) {
                let text = std::fs::read_to_string(&settings).unwrap();
                if let Err(error) = serde_json::from_str::<Value>(&text) {
                    unparsed.push(format!("{error}: {} bytes", text.len()));
                }
                readings += 1;
                std::thread::yield_now();
            }
            (readings, unparsed)
        })
    };

    // 20 pairs at least, and on until the editor saved 20 times among them: a loaded machine
    // may run the installs faster than the editor, which waits out any save it misses.
    let mut written = 0;
    let mut pairs = 0;
    while pairs < 20 || (saves.load(Ordering::SeqCst) < 20 && pairs < 400) {
        pairs += 1;
        let said = setup.run(&["install", "claude-code"]).await;
        written += said
            .matches("claude-code: updated .claude/settings.json")
            .count();
        let said = setup.run(&["install", "claude-code", "--uninstall"]).await;
        written += said
            .matches("claude-code: updated .claude/settings.json")
            .count();
    }
    // Long enough after the last uninstall for a save to follow it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    stop.store(true, Ordering::SeqCst);
    let (counter, editor_unparsed, lost) = editor.join().unwrap();
    let (readings, reader_unparsed) = reader.join().unwrap();

    assert!(written >= 20, "install wrote the settings {written} times");
    assert!(counter >= 20, "the editor saved {counter} times");
    // Only an exchange rename (Linux's, macOS's) hands back a save landing in the instant
    // between install's last reading and its rename; elsewhere (the portable rename) such a
    // save can be lost, the editor's last one too.
    let exchanging = cfg!(all(
        any(target_os = "linux", target_os = "macos"),
        not(feature = "portable")
    ));
    if exchanging {
        assert_eq!(lost, [], "saves lost (counter saved, counter found)");
    }
    assert_eq!(
        editor_unparsed,
        Vec::<String>::new(),
        "the editor read a partial file"
    );
    assert_eq!(
        reader_unparsed,
        Vec::<String>::new(),
        "a reader read a partial file"
    );
    assert!(readings > 100, "{readings} readings");
    let last: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    if exchanging {
        assert_eq!(
            last["counter"],
            json!(counter),
            "the editor's last save is there"
        );
    }
    assert_eq!(last["theme"], "dark");
    let left: Vec<String> = std::fs::read_dir(settings.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("majordomus"))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "no temporary file left");
}

/// A link leading out of the repository and a FIFO are refused, naming the file and
/// why, and left as they are (a link within the repository is followed); a `[mcp_servers.
/// majordomus]` entry of the person's own is kept and said so, and `--force` replaces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_out_fifos_and_an_entry_of_ones_own_are_refused_or_kept_with_a_message() {
    let setup = Setup::new();
    let root = setup.repo.root().to_path_buf();

    // A link out of the repository, to a file of the person's elsewhere.
    let outside = setup.repo.base().join("outside-settings.json");
    let outside_text = "{\n  \"theme\": \"light\"\n}\n";
    std::fs::write(&outside, outside_text).unwrap();
    let gemini = root.join(".gemini/settings.json");
    std::fs::remove_file(&gemini).unwrap();
    std::os::unix::fs::symlink(&outside, &gemini).unwrap();
    // A link within the repository, to the team's shared file.
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::rename(
        root.join(".cursor/mcp.json"),
        root.join("config/cursor-mcp.json"),
    )
    .unwrap();
    std::os::unix::fs::symlink("../config/cursor-mcp.json", root.join(".cursor/mcp.json")).unwrap();
    // A FIFO where Claude Code's settings are.
    let fifo = root.join(".claude/settings.json");
    std::fs::remove_file(&fifo).unwrap();
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
    let before = snapshot(&root);

    let output = setup.output(&["install", "all"], |_| {}).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "cannot use .gemini/settings.json: it leads to {} through a symbolic link, outside {}",
            outside.display(),
            root.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "cannot use .claude/settings.json: it is a FIFO (named pipe), not a regular file"
        ),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), outside_text);
    let now = snapshot(&root);
    for unchanged in [
        ".gemini/settings.json",
        ".claude/settings.json",
        ".cursor/mcp.json",
    ] {
        assert_eq!(
            now[Path::new(unchanged)],
            before[Path::new(unchanged)],
            "{unchanged}"
        );
    }
    // The link within the repository was followed: the shared file has the server.
    assert!(
        stdout.contains("cursor: updated .cursor/mcp.json"),
        "{stdout}"
    );
    let shared = std::fs::read_to_string(root.join("config/cursor-mcp.json")).unwrap();
    assert!(shared.contains("\"majordomus\""), "{shared}");
    // `doctor` reads the same files, and does not wait on the FIFO either.
    setup.run(&["doctor"]).await;
    setup.run(&["install", "cursor", "--uninstall"]).await;
    assert_eq!(
        snapshot(&root)[Path::new("config/cursor-mcp.json")],
        before[Path::new("config/cursor-mcp.json")]
    );

    // A Codex server entry of the person's own: kept, and said so.
    let config = root.join(".codex/config.toml");
    let own = format!(
        "{}\n[mcp_servers.majordomus]\ncommand = \"majordomus\"\nargs = [\"mcp\"]\nenv = {{ RUST_LOG = \"debug\" }}\n",
        EXISTING[2].1
    );
    std::fs::write(&config, &own).unwrap();
    let said = setup.run(&["install", "codex"]).await;
    assert!(
        said.contains(
            "codex: kept your own majordomus entry in .codex/config.toml; run with --force to replace it"
        ),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), own);
    let said = setup.run(&["install", "codex", "--uninstall"]).await;
    assert!(
        said.contains(
            "kept your own majordomus entry in .codex/config.toml; run with --force to remove it"
        ),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), own);

    // `--force` replaces it with install's own.
    let said = setup.run(&["install", "codex", "--force"]).await;
    assert!(said.contains("codex: updated .codex/config.toml"), "{said}");
    let parsed: toml_edit::DocumentMut = std::fs::read_to_string(&config).unwrap().parse().unwrap();
    let entry = parsed["mcp_servers"]["majordomus"].as_table().unwrap();
    assert!(entry.get("env").is_none(), "{entry}");
    assert_eq!(entry["args"][0].as_str(), Some("mcp"));
    assert_eq!(
        parsed["mcp_servers"]["docs"]["command"].as_str(),
        Some("docs-mcp")
    );
}

/// One `install` in the primary checkout wires every worktree: `doctor` in a linked worktree
/// says it is wired, and names what each client still needs before it runs the wiring (a
/// folder trust that Gemini CLI's own commands give, never a `gemini trust` it lacks). The
/// file of one person's approvals is kept out of git, and majordomus's own files, different
/// in the two worktrees, are never a change or a predicted conflict, while a real one is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_install_wires_every_worktree_and_its_files_are_never_a_conflict() {
    let setup = Setup::new();
    let beta = setup.repo.add_worktree("beta");
    std::fs::write(setup.repo.root().join("src/lib.rs"), "fn primary() {}\n").unwrap();
    std::fs::write(beta.join("src/lib.rs"), "fn beta() {}\n").unwrap();

    let said = setup.run(&["install", "all"]).await;
    assert!(
        said.contains(&format!("in the worktree {}:", beta.display())),
        "{said}"
    );
    for file in [
        ".mcp.json",
        ".claude/settings.json",
        ".gemini/settings.json",
    ] {
        assert!(beta.join(file).is_file(), "{file} in beta:\n{said}");
    }
    let exclude = std::fs::read_to_string(setup.repo.root().join(".git/info/exclude")).unwrap();
    assert_eq!(
        exclude.matches("/.claude/settings.local.json").count(),
        1,
        "{exclude}"
    );
    setup.run(&["install", "all"]).await;
    let again = std::fs::read_to_string(setup.repo.root().join(".git/info/exclude")).unwrap();
    assert_eq!(again, exclude, "a second install adds nothing");

    let doctor = setup
        .output(&["doctor"], |command| {
            command.current_dir(&beta);
        })
        .await;
    let told = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.status.success(), "{told}");
    for client in ["claude-code", "codex", "gemini-cli"] {
        assert!(
            told.contains(&format!(
                "{client} (configured in this repository): wired in this project"
            )),
            "{client} in:\n{told}"
        );
    }
    assert!(told.contains("/permissions trust"), "{told}");
    assert!(!told.contains("gemini trust"), "{told}");
    assert!(told.contains("/hooks"), "Codex's review is named: {told}");
    assert!(
        told.contains(&format!(
            "worktree {}: wired for",
            setup.repo.root().display()
        )),
        "{told}"
    );

    let own = [".mcp.json", ".claude/", ".codex/", ".gemini/", ".cursor/"];
    for args in [
        vec!["conflicts", "--json"],
        vec!["peers", "--checkouts", "repository", "--json"],
    ] {
        let output = setup.output(&args, |_| {}).await;
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{args:?}: {text}");
        assert!(
            text.contains("src/lib.rs"),
            "{args:?} sees real work: {text}"
        );
        for file in own {
            assert!(!text.contains(file), "{args:?} names {file}: {text}");
        }
    }

    setup.run(&["install", "all", "--uninstall"]).await;
    let left = std::fs::read_to_string(setup.repo.root().join(".git/info/exclude")).unwrap();
    assert!(!left.contains("settings.local.json"), "{left}");
    assert!(!beta.join(".mcp.json").exists(), "beta is unwired too");
}

/// A reader that goes away at once (`| head -1`) ends no command with a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_read_by_a_closed_pipe_end_quietly() {
    let setup = Setup::new();
    for args in [
        &["peers"][..],
        &["conflicts"],
        &["doctor"],
        &["serve", "status"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = setup
            .output(args, |command| {
                command.stdout(writer);
            })
            .await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(output.status.success(), "{args:?}: {stderr}");
    }
}

/// Claude Code ignores a `.claude/settings.json` with comments ("Found 0 total hooks"):
/// install writes none into it and refuses to wire one that has some, and doctor says why the
/// client ignores it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_code_settings_file_with_comments_is_named_not_wired_into() {
    let setup = Setup::new();
    setup.run(&["install", "claude-code"]).await;
    let written = setup.read(".claude/settings.json");
    serde_json::from_str::<Value>(&written).expect("install writes strict JSON");

    let commented = written.replacen('{', "{\n  // the team's hooks", 1);
    std::fs::write(setup.repo.root().join(".claude/settings.json"), &commented).unwrap();
    let output = setup.output(&["install", "claude-code"], |_| {}).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("strict JSON"), "{stderr}");
    assert_eq!(setup.read(".claude/settings.json"), commented);

    let told = setup.run(&["doctor"]).await;
    assert!(
        told.contains(
            ".claude/settings.json has comments or trailing commas, so the client ignores it"
        ),
        "{told}"
    );
}
