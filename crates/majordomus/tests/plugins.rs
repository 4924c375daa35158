//! The plugins and packages, installed as a person installs them, with no `majordomus install`:
//! the Claude Code and Codex plugins from the repository's marketplaces and the Gemini CLI
//! extension, each in a scratch home of the real client, which then lists majordomus's server as connected
//! and stops listing it once the plugin is removed; and the npm packages, packed and installed
//! from their tarballs into an empty project, whose `majordomus mcp` answers `initialize`.
//! Headless runs show the Claude Code plugin's and the Gemini CLI extension's hooks at work;
//! without `majordomus` on PATH they let the client go on.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

use majordomus_core::clients::HookClient;

use common::packages::{EndProcessesOf, PACK_DEADLINE, npm_tools};
use common::real_client::{Client, RUN_DEADLINE, Workspace, clients_dir};
use common::{TempRepo, bin, clear_git_env};

/// The workspace root: the repository holding the marketplace, the plugins and the packages.
fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the crate lives at crates/majordomus of the workspace")
        .to_path_buf()
}

/// The lines of `listing` that name majordomus's server.
fn majordomus_lines(listing: &str) -> Vec<&str> {
    listing
        .lines()
        .filter(|line| line.contains("majordomus"))
        .collect()
}

/// The rows of a Codex listing that are majordomus's (Codex's warnings may name the
/// temporary directory, whose name has majordomus in it).
fn codex_majordomus_rows(listing: &str) -> Vec<&str> {
    listing
        .lines()
        .filter(|line| line.starts_with("majordomus"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_plugin_brings_the_server_and_leaves_with_it() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, Client::ClaudeCode);
    let root = source_root();
    let steps: [&[&str]; 2] = [
        &["plugin", "marketplace", "add", root.to_str().unwrap()],
        &["plugin", "install", "majordomus@majordomus"],
    ];
    for args in steps {
        let (ok, printed) = workspace.client_cli(&checkout, args).await;
        assert!(ok, "claude {args:?} failed:\n{printed}");
    }
    assert!(
        !checkout.join(".mcp.json").exists() && !checkout.join(".claude").exists(),
        "nothing was written into the checkout"
    );
    let (ok, listing) = workspace.client_cli(&checkout, &["mcp", "list"]).await;
    let lines = majordomus_lines(&listing);
    assert!(
        ok && lines.len() == 1
            && lines[0].contains("plugin:majordomus:majordomus")
            && lines[0].contains("majordomus mcp")
            && lines[0].contains("Connected"),
        "claude mcp list shows the plugin's server connected:\n{listing}"
    );
    let (ok, printed) = workspace
        .client_cli(&checkout, &["plugin", "uninstall", "majordomus@majordomus"])
        .await;
    assert!(ok, "claude plugin uninstall failed:\n{printed}");
    let (_, listing) = workspace.client_cli(&checkout, &["mcp", "list"]).await;
    assert!(
        majordomus_lines(&listing).is_empty(),
        "the server left with the plugin:\n{listing}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_plugin_brings_the_server_and_leaves_with_it() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, Client::Codex);
    // Codex's home, which its first start makes.
    std::fs::create_dir_all(workspace.home().join(".codex")).unwrap();
    let root = source_root();
    let steps: [&[&str]; 2] = [
        &["plugin", "marketplace", "add", root.to_str().unwrap()],
        &["plugin", "add", "majordomus@majordomus"],
    ];
    for args in steps {
        let (ok, printed) = workspace.client_cli(&checkout, args).await;
        assert!(ok, "codex {args:?} failed:\n{printed}");
    }
    let (ok, plugins) = workspace.client_cli(&checkout, &["plugin", "list"]).await;
    assert!(
        ok && codex_majordomus_rows(&plugins)
            .iter()
            .any(|line| line.contains("installed, enabled") && line.contains("plugins/codex")),
        "Codex installed its own plugin from the repository:\n{plugins}"
    );
    assert!(
        !checkout.join(".codex").exists(),
        "nothing was written into the checkout"
    );
    let (ok, listing) = workspace.client_cli(&checkout, &["mcp", "list"]).await;
    let lines = codex_majordomus_rows(&listing);
    assert!(
        ok && lines.len() == 1 && lines[0].contains("mcp") && lines[0].contains("enabled"),
        "codex mcp list shows the plugin's server enabled:\n{listing}"
    );
    let (ok, printed) = workspace
        .client_cli(&checkout, &["plugin", "remove", "majordomus@majordomus"])
        .await;
    assert!(ok, "codex plugin remove failed:\n{printed}");
    let (_, listing) = workspace.client_cli(&checkout, &["mcp", "list"]).await;
    assert!(
        codex_majordomus_rows(&listing).is_empty(),
        "the server left with the plugin:\n{listing}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_extension_brings_the_server_and_leaves_with_it() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, Client::GeminiCli);
    let extension = source_root().join("plugins/gemini-cli");
    // What a person answers once: the folder they work in and the extension's source are
    // trusted (Gemini CLI asks before installing from an untrusted folder).
    let gemini_dir = workspace.home().join(".gemini");
    std::fs::create_dir_all(&gemini_dir).unwrap();
    std::fs::write(
        gemini_dir.join("trustedFolders.json"),
        json!({
            checkout.to_str().unwrap(): "TRUST_FOLDER",
            extension.to_str().unwrap(): "TRUST_FOLDER",
        })
        .to_string(),
    )
    .unwrap();
    let (ok, printed) = workspace
        .client_cli(
            &checkout,
            &[
                "extensions",
                "install",
                extension.to_str().unwrap(),
                "--consent",
            ],
        )
        .await;
    assert!(
        ok && printed.contains("installed successfully"),
        "gemini extensions install failed:\n{printed}"
    );
    assert!(
        !checkout.join(".gemini").exists(),
        "nothing was written into the checkout"
    );
    let (ok, listing) = workspace.client_cli(&checkout, &["mcp", "list"]).await;
    let lines = majordomus_lines(&listing);
    assert!(
        ok && lines.len() == 1
            && lines[0].contains("majordomus (from majordomus)")
            && lines[0].contains("Connected"),
        "gemini mcp list shows the extension's server connected:\n{listing}"
    );
    let (ok, printed) = workspace
        .client_cli(&checkout, &["extensions", "uninstall", "majordomus"])
        .await;
    assert!(ok, "gemini extensions uninstall failed:\n{printed}");
    let (_, listing) = workspace.client_cli(&checkout, &["mcp", "list"]).await;
    assert!(
        majordomus_lines(&listing).is_empty(),
        "the server left with the extension:\n{listing}"
    );
}

/// Runs `program args` in `dir` with `path` and a scratch `home`, to its end within
/// [`RUN_DEADLINE`]; panics with what it printed when it fails.
async fn run_ok(program: &str, args: &[&str], dir: &Path, path: &std::ffi::OsStr, home: &Path) {
    run_ok_within(RUN_DEADLINE, program, args, dir, path, home).await;
}

/// [`run_ok`], within `deadline`.
async fn run_ok_within(
    deadline: std::time::Duration,
    program: &str,
    args: &[&str],
    dir: &Path,
    path: &std::ffi::OsStr,
    home: &Path,
) {
    let mut command = tokio::process::Command::new(program);
    clear_git_env(command.as_std_mut());
    command
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", home)
        .env("npm_config_cache", home.join("npm-cache"))
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(deadline, command.output())
        .await
        .unwrap_or_else(|_| panic!("{program} {args:?} finishes in time"))
        .expect("the program starts");
    assert!(
        output.status.success(),
        "{program} {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn npm_packages_install_from_their_tarballs_and_serve_mcp() {
    let repo = TempRepo::new();
    let base = repo.base().to_path_buf();
    let home = base.join("home-npm");
    let tarballs = base.join("tarballs");
    let project = base.join("project");
    for dir in [&home, &project] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let mut paths = vec![npm_tools(&base), clients_dir().join("bin")];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(paths).unwrap();
    let script = source_root().join("scripts/npm-pack.sh");
    run_ok_within(
        PACK_DEADLINE,
        "bash",
        &[
            script.to_str().unwrap(),
            bin().to_str().unwrap(),
            tarballs.to_str().unwrap(),
        ],
        &source_root(),
        &path,
        &home,
    )
    .await;
    let version = env!("CARGO_PKG_VERSION");
    let launcher = tarballs.join(format!("majordomus-{version}.tgz"));
    let platform = tarballs.join(format!("majordomus-linux-x64-{version}.tgz"));
    std::fs::write(
        project.join("package.json"),
        json!({"name": "scratch", "version": "1.0.0", "private": true}).to_string(),
    )
    .unwrap();
    run_ok(
        "npm",
        &[
            "install",
            "--offline",
            "--no-audit",
            "--no-fund",
            platform.to_str().unwrap(),
            launcher.to_str().unwrap(),
        ],
        &project,
        &path,
        &home,
    )
    .await;
    let installed = project.join("node_modules/majordomus-linux-x64/bin/majordomus");
    let _end_servers = EndProcessesOf(
        std::fs::canonicalize(&installed).expect("the platform package carries the executable"),
    );

    let mut command = tokio::process::Command::new(project.join("node_modules/.bin/majordomus"));
    clear_git_env(command.as_std_mut());
    repo.user_env(command.as_std_mut());
    let (_, log) = repo.log_file("npm-majordomus-mcp");
    command
        .args(["mcp", "--repo", repo.root().to_str().unwrap()])
        .current_dir(repo.root())
        .env("PATH", &path)
        .env("HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log)
        .kill_on_drop(true);
    let mut child = command.spawn().expect("the npm launcher starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "npm-test", "version": "1"}},
    });
    stdin
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .unwrap();
    let answer: Value = tokio::time::timeout(RUN_DEADLINE, lines.next_line())
        .await
        .expect("majordomus mcp answers in time")
        .expect("its stdout reads")
        .map(|line| serde_json::from_str(&line).expect("the answer is JSON"))
        .expect("majordomus mcp answers initialize");
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "majordomus",
        "{answer}"
    );
    drop(stdin);
    let status = tokio::time::timeout(RUN_DEADLINE, child.wait())
        .await
        .expect("majordomus mcp ends when its stdin closes")
        .unwrap();
    assert!(
        status.success(),
        "the launcher passes the exit code on: {status}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn plugin_hooks_let_the_client_go_on_when_majordomus_is_not_installed() {
    let repo = TempRepo::new();
    // A PATH with `sh` and no `majordomus`.
    let bare = repo.base().join("bare-bin");
    std::fs::create_dir_all(&bare).unwrap();
    std::os::unix::fs::symlink("/bin/sh", bare.join("sh")).unwrap();
    let mut ran = 0;
    for file in [
        "plugins/claude-code/hooks/hooks.json",
        "plugins/gemini-cli/hooks/hooks.json",
    ] {
        let hooks: Value =
            serde_json::from_str(&std::fs::read_to_string(source_root().join(file)).unwrap())
                .unwrap();
        let commands = hooks["hooks"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|entries| entries.as_array().unwrap())
            .flat_map(|entry| entry["hooks"].as_array().unwrap())
            .map(|hook| hook["command"].as_str().unwrap().to_owned());
        for line in commands {
            let mut command = tokio::process::Command::new("/bin/sh");
            command
                .args(["-c", &line])
                .current_dir(repo.root())
                .env_clear()
                .env("PATH", &bare)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            let mut child = command.spawn().unwrap();
            let mut stdin = child.stdin.take().unwrap();
            // The hook may end before it reads its input, which is what it should do here: a
            // write into the closed pipe then fails, and that is no failure of the hook.
            let _ = stdin
                .write_all(br#"{"session_id":"s1","cwd":"/nowhere"}"#)
                .await;
            drop(stdin);
            let output = tokio::time::timeout(RUN_DEADLINE, child.wait_with_output())
                .await
                .expect("the hook ends in time")
                .unwrap();
            assert!(
                output.status.success() && output.stdout.is_empty() && output.stderr.is_empty(),
                "{line} without majordomus: {} {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            ran += 1;
        }
    }
    // One hook a wired event, as the clients' contracts list them.
    let wired: usize = [HookClient::ClaudeCode, HookClient::GeminiCli]
        .into_iter()
        .map(|client| client.contract().hooks().len())
        .sum();
    assert_eq!(ran, wired, "every hook of both plugins ran");
}

/// The longest budget a repository may give its hooks: a headless client's hook on a loaded
/// machine may run past the default and fail open, which is not what these runs look at.
const PATIENT_HOOKS: &str = "[hooks]\nbudget_ms = 2000\n";

/// A headless Claude Code run with only the plugin installed, its model writing a file
/// another live session claims: the plugin's hook stops the write before it lands.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_plugin_hooks_fire_in_a_headless_run() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, Client::ClaudeCode);
    let root = source_root();
    let steps: [&[&str]; 2] = [
        &["plugin", "marketplace", "add", root.to_str().unwrap()],
        &["plugin", "install", "majordomus@majordomus"],
    ];
    for args in steps {
        let (ok, printed) = workspace.client_cli(&checkout, args).await;
        assert!(ok, "claude {args:?} failed:\n{printed}");
    }
    std::fs::write(checkout.join("majordomus.toml"), PATIENT_HOOKS).unwrap();
    let (_server, lease) = common::ServeProcess::start(&repo, &checkout).await;
    let holder = hold_util(&lease).await;
    let before = std::fs::read_to_string(checkout.join("src/util.rs")).ok();
    let fake = common::fake_model::FakeModel::start(vec![
        Client::ClaudeCode.write_file(&checkout, "src/util.rs", "pub fn tidy() {}\n"),
        common::fake_model::Turn::answer("done"),
    ])
    .await;
    let run = workspace.run(&checkout, &fake, "Tidy src/util.rs.").await;
    assert!(
        run.status.success(),
        "claude failed ({}):\n{}\nthe fake model saw:\n{}",
        run.status,
        run.output(),
        fake.summary()
    );
    assert_guarded(&fake, "Write", &checkout, before.as_deref());
    holder.close().await;
}

/// A headless Gemini CLI run with only the extension installed, its model writing a file
/// another live session claims: the extension's hook stops the write before it lands.
#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_extension_hooks_fire_in_a_headless_run() {
    let repo = TempRepo::new();
    let checkout = repo.root().to_path_buf();
    let workspace = Workspace::new(&repo, Client::GeminiCli);
    let extension = source_root().join("plugins/gemini-cli");
    let gemini_dir = workspace.home().join(".gemini");
    std::fs::create_dir_all(&gemini_dir).unwrap();
    std::fs::write(
        gemini_dir.join("trustedFolders.json"),
        json!({extension.to_str().unwrap(): "TRUST_FOLDER"}).to_string(),
    )
    .unwrap();
    let (ok, printed) = workspace
        .client_cli(
            &checkout,
            &[
                "extensions",
                "install",
                extension.to_str().unwrap(),
                "--consent",
            ],
        )
        .await;
    assert!(ok, "gemini extensions install failed:\n{printed}");
    std::fs::write(checkout.join("majordomus.toml"), PATIENT_HOOKS).unwrap();
    let (_server, lease) = common::ServeProcess::start(&repo, &checkout).await;
    let holder = hold_util(&lease).await;
    let before = std::fs::read_to_string(checkout.join("src/util.rs")).ok();
    let fake = common::fake_model::FakeModel::start(vec![
        Client::GeminiCli.write_file(&checkout, "src/util.rs", "pub fn tidy() {}\n"),
        common::fake_model::Turn::answer("done"),
    ])
    .await;
    let run = workspace.run(&checkout, &fake, "Tidy src/util.rs.").await;
    assert!(
        run.status.success(),
        "gemini failed ({}):\n{}\nthe fake model saw:\n{}",
        run.status,
        run.output(),
        fake.summary()
    );
    assert_guarded(&fake, "write_file", &checkout, before.as_deref());
    holder.close().await;
}

/// Another live session, claiming `src/util.rs`.
async fn hold_util(lease: &common::LeaseFile) -> common::McpClient {
    let holder = common::McpClient::http(lease, "holder-agent", "1.0").await;
    holder
        .answer(
            "majordomus_announce",
            json!({"intent": "port util", "scope": ["src/util.rs"]}),
        )
        .await;
    holder
}

/// That the plugin's hook stopped the model's `tool` before it wrote `src/util.rs`, which
/// another live session claims, and told the model who holds it.
fn assert_guarded(
    fake: &common::fake_model::FakeModel,
    tool: &str,
    checkout: &Path,
    before: Option<&str>,
) {
    assert_eq!(
        std::fs::read_to_string(checkout.join("src/util.rs"))
            .ok()
            .as_deref(),
        before,
        "the claimed file was not written:\n{}",
        fake.summary()
    );
    let refused = fake.tool_result(tool).expect("the write's result");
    assert!(
        refused.contains("holder-agent") && refused.contains("port util"),
        "the model is told who holds the file: {refused}"
    );
}
