//! Real coding clients run headless against a [`FakeModel`]: Claude Code (`claude -p`), Codex
//! CLI (`codex exec`) and Gemini CLI (`gemini -p`), as `scripts/install-clients.sh` installs
//! them at pinned versions.
//!
//! A [`Workspace`] is one person's machine in a test's temporary directory: a scratch home
//! (and Codex home) holding what each client needs to run without a login or a dialog — the
//! fake's URL and a fake key, the folder trusted as a person would once — and a PATH on
//! which `majordomus` is the binary under test and `node` is the installed Node. What a
//! client prints goes to a log file of the [`TempRepo`], shown only when the test fails.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::fake_model::{FakeModel, Turn};
use super::{TempRepo, bin, clear_git_env};

/// How long one headless run may take before the test fails: a bound, not an expectation
/// (each run takes a few seconds).
pub(crate) const RUN_DEADLINE: Duration = Duration::from_secs(60);

/// How long what a finished client started (its MCP servers, its hooks) may take to end on
/// its own before it is killed.
const LEFTOVER_GRACE: Duration = Duration::from_secs(5);

/// Where the install script puts the clients unless this names another directory.
const CLIENTS_VAR: &str = "MAJORDOMUS_TEST_CLIENTS";

/// The model Codex and Gemini CLI are told to use: one they know, so they offer their usual
/// tools (Codex offers `apply_patch` only to models it has metadata for; Gemini CLI asks a
/// classifier first when left on `auto`). Claude Code's default is its current model.
const CODEX_MODEL: &str = "gpt-5.5";
const GEMINI_MODEL: &str = "gemini-2.5-flash";

/// A coding client the tests drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Client {
    ClaudeCode,
    Codex,
    GeminiCli,
}

impl Client {
    /// The word `majordomus install` and the hooks name it by.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Codex => "codex",
            Client::GeminiCli => "gemini-cli",
        }
    }

    /// The name the client gives itself in MCP's `clientInfo`.
    pub(crate) fn mcp_name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Codex => "codex-mcp-client",
            Client::GeminiCli => "gemini-cli-mcp-client",
        }
    }

    /// The scripted turn that writes `content` to `relative` in `checkout` with the
    /// client's own edit tool: Claude Code's `Write`, Codex's `apply_patch`, Gemini CLI's
    /// `write_file` (absolute paths where the tool wants them).
    pub(crate) fn write_file(self, checkout: &Path, relative: &str, content: &str) -> Turn {
        let absolute = checkout.join(relative).to_string_lossy().into_owned();
        match self {
            Client::ClaudeCode => {
                Turn::call("Write", json!({"file_path": absolute, "content": content}))
            }
            Client::Codex => {
                let mut patch = format!("*** Begin Patch\n*** Add File: {relative}\n");
                for line in content.lines() {
                    patch.push_str(&format!("+{line}\n"));
                }
                patch.push_str("*** End Patch");
                Turn::call("apply_patch", Value::String(patch))
            }
            Client::GeminiCli => Turn::call(
                "write_file",
                json!({"file_path": absolute, "content": content}),
            ),
        }
    }

    fn program(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude",
            Client::Codex => "codex",
            Client::GeminiCli => "gemini",
        }
    }
}

/// The directory the clients are installed in (`bin/` holds `node`, `claude`, `codex` and
/// `gemini`). Panics, saying how to install them, when they are missing: a test that needs
/// them fails rather than passing without them.
pub(crate) fn clients_dir() -> PathBuf {
    let dir = std::env::var_os(CLIENTS_VAR).map_or_else(
        || {
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .expect("the target dir holds the tests' tmp dir")
                .join("real-clients")
        },
        PathBuf::from,
    );
    let missing: Vec<&str> = ["node", "claude", "codex", "gemini"]
        .into_iter()
        .filter(|program| !dir.join("bin").join(program).is_file())
        .collect();
    assert!(
        missing.is_empty(),
        "the real clients are not installed in {} (missing: {}); run `bash scripts/install-clients.sh` \
         (scripts/test.sh does), or set {CLIENTS_VAR} to where they are",
        dir.display(),
        missing.join(", ")
    );
    dir
}

/// What a finished run left.
pub(crate) struct ClientRun {
    pub status: ExitStatus,
    pub elapsed: Duration,
    /// The log file holding what the client printed.
    pub log: PathBuf,
}

impl ClientRun {
    /// What the client printed, stdout then stderr.
    pub(crate) fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// One person's machine for a client: a scratch home and PATH in the test's temporary
/// directory, pointed at one fake model.
pub(crate) struct Workspace<'a> {
    repo: &'a TempRepo,
    client: Client,
    home: PathBuf,
    path: std::ffi::OsString,
    /// Claude Code's permission rules allowed for the run beyond majordomus's tools.
    allowed_tools: Vec<String>,
}

impl<'a> Workspace<'a> {
    /// A scratch home for `client`, `majordomus` and the installed clients on its PATH.
    pub(crate) fn new(repo: &'a TempRepo, client: Client) -> Workspace<'a> {
        let clients = clients_dir();
        let home = repo.base().join(format!("home-{}", client.word()));
        let tools = repo.base().join("tools");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&tools).unwrap();
        let link = tools.join("majordomus");
        if !link.exists() {
            std::os::unix::fs::symlink(bin(), &link).expect("majordomus can be linked");
        }
        let mut paths = vec![tools, clients.join("bin")];
        paths.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let path = std::env::join_paths(paths).expect("PATH can be joined");
        Workspace {
            repo,
            client,
            home,
            path,
            allowed_tools: Vec::new(),
        }
    }

    /// Also allows Claude Code's permission rule `rule` (`Bash(./run-tests.sh)`) for the
    /// headless run, as a person allows a command they trust: without it `claude -p` refuses
    /// a command that is not read-only by itself, and the guard's passing would prove nothing.
    /// A rule is one word: the list is given to Claude Code joined by commas.
    pub(crate) fn allowing(mut self, rule: &str) -> Workspace<'a> {
        assert!(
            !rule.contains([' ', ',']),
            "a rule without spaces or commas: {rule}"
        );
        self.allowed_tools.push(rule.to_owned());
        self
    }

    fn codex_home(&self) -> PathBuf {
        self.home.join(".codex")
    }

    /// A command with this workspace's environment, run in `dir`.
    fn command(&self, program: &Path, dir: &Path) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(program);
        clear_git_env(command.as_std_mut());
        command
            .current_dir(dir)
            .env("HOME", &self.home)
            .env("CODEX_HOME", self.codex_home())
            .env("PATH", &self.path)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CACHE_HOME")
            .stdin(Stdio::null());
        command
    }

    /// The scratch home the client runs with.
    pub(crate) fn home(&self) -> &Path {
        &self.home
    }

    /// The client's own command line (`claude plugin install …`, `gemini mcp list`) in `dir`,
    /// with this workspace's environment, to its end within [`RUN_DEADLINE`]: whether it
    /// succeeded, and what it printed (stdout then stderr).
    pub(crate) async fn client_cli(&self, dir: &Path, args: &[&str]) -> (bool, String) {
        let program = clients_dir().join("bin").join(self.client.program());
        let mut command = self.command(&program, dir);
        command.args(args).kill_on_drop(true);
        let output = tokio::time::timeout(RUN_DEADLINE, command.output())
            .await
            .unwrap_or_else(|_| panic!("{} {args:?} finishes in time", self.client.program()))
            .expect("the client starts");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), printed)
    }

    /// `majordomus install <client>` in `checkout`, as the person would run it; panics with
    /// its output when it fails.
    pub(crate) async fn install(&self, checkout: &Path) {
        let mut command = self.command(Path::new("majordomus"), checkout);
        command.args(["install", self.client.word()]);
        let output = tokio::time::timeout(super::BOUND, command.output())
            .await
            .expect("install finishes")
            .expect("majordomus runs");
        assert!(
            output.status.success(),
            "majordomus install {} failed:\n{}{}",
            self.client.word(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// What a person does once, by hand, before a headless run works: trusts the folder
    /// (Claude Code's trust dialog, Codex's project trust and hook review, Gemini CLI's
    /// trusted folders) and points the client at the model API — here the fake, with a fake
    /// key.
    async fn prepare(&self, checkout: &Path, fake: &FakeModel) {
        let folder = checkout.to_string_lossy().into_owned();
        let write = |path: PathBuf, text: String| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
        };
        match self.client {
            Client::ClaudeCode => write(
                self.home.join(".claude.json"),
                json!({"projects": {folder: {"hasTrustDialogAccepted": true}}}).to_string(),
            ),
            Client::Codex => {
                let mut config = toml_edit::DocumentMut::new();
                config["model"] = toml_edit::value(CODEX_MODEL);
                config["model_provider"] = toml_edit::value("fake");
                let mut provider = toml_edit::Table::new();
                provider["name"] = toml_edit::value("fake model API");
                provider["base_url"] = toml_edit::value(format!("{}/v1", fake.url()));
                provider["wire_api"] = toml_edit::value("responses");
                provider["env_key"] = toml_edit::value("FAKE_MODEL_API_KEY");
                let mut providers = toml_edit::Table::new();
                providers.set_implicit(true);
                providers["fake"] = toml_edit::Item::Table(provider);
                config["model_providers"] = toml_edit::Item::Table(providers);
                let mut project = toml_edit::Table::new();
                project["trust_level"] = toml_edit::value("trusted");
                let mut projects = toml_edit::Table::new();
                projects.set_implicit(true);
                projects[folder.as_str()] = toml_edit::Item::Table(project);
                config["projects"] = toml_edit::Item::Table(projects);
                write(self.codex_home().join("config.toml"), config.to_string());
                self.review_codex_hooks(checkout).await;
            }
            Client::GeminiCli => {
                write(
                    self.home.join(".gemini/settings.json"),
                    json!({"security": {"auth": {"selectedType": "gemini-api-key"}}}).to_string(),
                );
                write(
                    self.home.join(".gemini/trustedFolders.json"),
                    json!({folder: "TRUST_FOLDER"}).to_string(),
                );
            }
        }
    }

    /// Codex runs a hook only once a person has reviewed it (`/hooks` in its TUI), which
    /// records the hook's hash in the user's `config.toml`; `codex exec` skips the others
    /// without a word. Does the same: asks `codex app-server` for the hooks `checkout` has
    /// (`hooks/list`) and records each one's current hash as trusted.
    async fn review_codex_hooks(&self, checkout: &Path) {
        use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
        let program = clients_dir().join("bin").join("codex");
        let mut command = self.command(&program, checkout);
        command
            .arg("app-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut server = command.spawn().expect("codex app-server starts");
        let mut stdin = server.stdin.take().unwrap();
        let mut lines = tokio::io::BufReader::new(server.stdout.take().unwrap()).lines();
        let requests = [
            json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "majordomus-tests", "version": "1"}}}),
            json!({"method": "initialized"}),
            json!({"id": 2, "method": "hooks/list", "params": {"cwds": [checkout]}}),
        ];
        for request in requests {
            stdin
                .write_all(format!("{request}\n").as_bytes())
                .await
                .expect("codex app-server reads its stdin");
        }
        let listed = tokio::time::timeout(super::BOUND, async {
            while let Some(line) = lines.next_line().await.expect("codex app-server answers") {
                let message: Value = serde_json::from_str(&line).unwrap_or_default();
                if message["id"] == 2 {
                    return message;
                }
            }
            panic!("codex app-server ended without listing the hooks");
        })
        .await
        .expect("codex app-server lists the hooks in time");
        let _ = server.kill().await;
        let path = self.codex_home().join("config.toml");
        let mut config: toml_edit::DocumentMut = std::fs::read_to_string(&path)
            .unwrap()
            .parse()
            .expect("the Codex config written above parses");
        let hooks = listed["result"]["data"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|entry| entry["hooks"].as_array().into_iter().flatten());
        let mut reviewed = 0;
        for hook in hooks {
            let (Some(key), Some(hash)) = (hook["key"].as_str(), hook["currentHash"].as_str())
            else {
                continue;
            };
            let state = config["hooks"]
                .or_insert(toml_edit::table())
                .as_table_mut()
                .expect("[hooks] is a table");
            state.set_implicit(true);
            let states = state
                .entry("state")
                .or_insert(toml_edit::table())
                .as_table_mut()
                .expect("[hooks.state] is a table");
            states.set_implicit(true);
            states[key]["trusted_hash"] = toml_edit::value(hash);
            reviewed += 1;
        }
        assert!(reviewed > 0, "codex lists no hooks to review: {listed}");
        std::fs::write(&path, config.to_string()).unwrap();
    }

    /// Runs the client headless in `checkout` with `prompt`, against `fake`, to its end
    /// (at most [`RUN_DEADLINE`], else the test fails); whatever the run left in its
    /// process group is ended after it.
    pub(crate) async fn run(&self, checkout: &Path, fake: &FakeModel, prompt: &str) -> ClientRun {
        self.prepare(checkout, fake).await;
        let program = clients_dir().join("bin").join(self.client.program());
        let mut command = self.command(&program, checkout);
        match self.client {
            Client::ClaudeCode => {
                command
                    .args(["-p", prompt])
                    // Edits and majordomus's tools without a prompt, as a person allows them
                    // for a headless run.
                    .args(["--permission-mode", "acceptEdits"])
                    .arg("--allowedTools")
                    .arg(
                        std::iter::once("mcp__majordomus")
                            .chain(self.allowed_tools.iter().map(String::as_str))
                            .collect::<Vec<_>>()
                            .join(","),
                    )
                    .env("ANTHROPIC_BASE_URL", fake.url())
                    .env("ANTHROPIC_API_KEY", "fake-key")
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
            }
            Client::Codex => {
                command
                    .args(["exec", "--sandbox", "workspace-write", prompt])
                    .env("FAKE_MODEL_API_KEY", "fake-key");
            }
            Client::GeminiCli => {
                command
                    .args([
                        "-m",
                        GEMINI_MODEL,
                        "--approval-mode",
                        "auto_edit",
                        "-p",
                        prompt,
                    ])
                    .env("GOOGLE_GEMINI_BASE_URL", fake.url())
                    .env("GEMINI_API_KEY", "fake-key");
            }
        }
        let (log, file) = self.repo.log_file(self.client.word());
        command
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .process_group(0)
            .kill_on_drop(true);
        let started = Instant::now();
        let mut child = command.spawn().expect("the client starts");
        let group = child.id().expect("the client has a pid");
        let finished = tokio::time::timeout(RUN_DEADLINE, child.wait()).await;
        let elapsed = started.elapsed();
        let status = match finished {
            Ok(status) => {
                end_group(group, LEFTOVER_GRACE).await;
                status.expect("the client can be waited for")
            }
            Err(_) => {
                end_group(group, Duration::ZERO).await;
                let _ = child.wait().await;
                panic!(
                    "{} did not finish within {RUN_DEADLINE:?}; the fake model saw:\n{}",
                    self.client.program(),
                    fake.summary()
                );
            }
        };
        let _ = writeln!(
            std::fs::OpenOptions::new().append(true).open(&log).unwrap(),
            "--- {} ran for {elapsed:?} and {status}",
            self.client.program()
        );
        ClientRun {
            status,
            elapsed,
            log,
        }
    }
}

/// The live processes of process group `group`.
fn group_members(group: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let rest = stat.rsplit_once(')')?.1.to_owned();
                    let mut fields = rest.split_whitespace();
                    let state = fields.next()?;
                    let pgrp = fields.nth(1)?.parse::<u32>().ok()?;
                    Some(pgrp == group && state != "Z" && state != "X")
                })
                .unwrap_or(false)
        })
        .collect()
}

/// Ends the process group a run started (the client made it, so everything in it is the
/// run's): waits up to `grace` for its members to end on their own, then kills each by pid.
async fn end_group(group: u32, grace: Duration) {
    let started = Instant::now();
    while !group_members(group).is_empty() && started.elapsed() < grace {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for pid in group_members(group) {
        super::signal(pid, libc::SIGKILL);
    }
}
