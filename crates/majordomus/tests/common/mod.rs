//! The harness of the end-to-end tests: real git repositories in temporary directories, real
//! `majordomus` processes, real MCP clients (rmcp's, over stdio and Streamable HTTP) and plain
//! HTTP.
//!
//! Every wait is a bounded poll ([`eventually`], [`BOUND`]); nothing here asserts on timing.
//! Every process a test starts is ended by its own pid: a [`ServeProcess`] on drop, an
//! [`McpClient`] by rmcp's child-process guard, and whatever they started in turn (a detached
//! server from `serve ensure`, a server that outlived its client) by [`TempRepo`] on drop,
//! which looks only for processes of this binary whose command line names its own temporary
//! directory.

#![allow(dead_code)] // each test binary uses its own part of the harness

pub(crate) mod browser;
pub(crate) mod fake_model;
pub(crate) mod file_server;
pub(crate) mod packages;
pub(crate) mod real_client;

use std::ffi::OsStr;
use std::fs::{self, File};
use std::future::Future;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::Value;
use tempfile::TempDir;

/// How long any one wait may take before the test fails instead of hanging. A bound, not an
/// expectation: every wait normally ends in milliseconds.
pub(crate) const BOUND: Duration = Duration::from_secs(10);

const POLL: Duration = Duration::from_millis(25);

// ---------------------------------------------------------------------------------------------
// Waiting

/// Polls `attempt` until it answers `Ok`, for at most [`BOUND`]; the last `Err` says what was
/// seen instead, in the panic message.
pub(crate) async fn eventually<T, F, Fut>(what: &str, attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    eventually_within(BOUND, what, attempt).await
}

/// [`eventually`], for at most `bound`: for the waits on a program's own start, which a busy
/// small machine can stretch past [`BOUND`].
pub(crate) async fn eventually_within<T, F, Fut>(bound: Duration, what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = Instant::now();
    loop {
        match attempt().await {
            Ok(value) => return value,
            Err(last) => {
                if started.elapsed() > bound {
                    panic!("gave up after {bound:?} waiting for {what}; last seen: {last}");
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The executable and the environment of the processes the tests start

/// The `majordomus` executable the tests run: a hard link (or copy) of the one Cargo built for
/// this test run, made once per test process. Others may rebuild `target/debug/majordomus`
/// while the tests run; the servers started here would then judge each other `outdated`
/// (their executable replaced on disk). The link keeps the tested file in place.
///
/// Each link has a `.used` marker touched by every test process that runs it; links whose
/// marker is older than an hour are removed, so old builds do not pile up on disk.
pub(crate) fn bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let built = Path::new(env!("CARGO_BIN_EXE_majordomus"));
        let metadata = fs::metadata(built).expect("cargo built the majordomus binary");
        let modified = metadata
            .modified()
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("majordomus-e2e");
        fs::create_dir_all(&dir).expect("the test scratch dir can be made");
        let stable = dir.join(format!("majordomus-{modified}-{}", metadata.len()));
        // The marker first: a binary is never without one, so no other test process takes
        // a link just being made for unused.
        let _ = File::create(used_marker(&stable));
        if !stable.exists() {
            let partial = dir.join(format!(".partial-{}", std::process::id()));
            let _ = fs::remove_file(&partial);
            if fs::hard_link(built, &partial).is_err() {
                fs::copy(built, &partial).expect("the majordomus binary can be copied");
            }
            // Another test process may have done the same meanwhile: the first link stays,
            // never replaced under a server already running from it.
            let _ = fs::hard_link(&partial, &stable);
            let _ = fs::remove_file(&partial);
        }
        remove_unused_binaries(&dir);
        stable.canonicalize().expect("the stable binary exists")
    })
}

fn used_marker(binary: &Path) -> PathBuf {
    let mut name = binary.as_os_str().to_owned();
    name.push(".used");
    PathBuf::from(name)
}

/// Removes the linked binaries no test process has used for an hour.
fn remove_unused_binaries(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let hour = Duration::from_secs(3600);
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("majordomus-") || name.ends_with(".used") {
            continue;
        }
        let marker = used_marker(&path);
        let unused = fs::metadata(&marker)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|used| used.elapsed().ok())
            .is_none_or(|idle| idle > hour);
        if unused {
            let _ = fs::remove_file(&path);
            let _ = fs::remove_file(&marker);
        }
    }
}

/// Removes every `GIT_*` variable, so an enclosing git (a hook, say) cannot redirect the
/// repositories the tests make.
pub(crate) fn clear_git_env(command: &mut std::process::Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            command.env_remove(&key);
        }
    }
}

/// A `majordomus` command with a clean environment, logging at `info` unless `RUST_LOG` says
/// otherwise. Its stdout and stderr are the caller's to direct, to a pipe or to a file from
/// [`TempRepo::log_file`]: left inherited, the child's log lines would be printed among the
/// test results, while in a log file they are shown only when the test fails.
pub(crate) fn majordomus_command<I, S>(args: I) -> tokio::process::Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = tokio::process::Command::new(bin());
    command.args(args);
    clear_git_env(command.as_std_mut());
    if std::env::var_os("RUST_LOG").is_none() {
        command.env("RUST_LOG", "info");
    }
    command.stdin(Stdio::null()).kill_on_drop(true);
    command
}

/// A `majordomus mcp` serving `repo` on pipes, as most clients start it, its log in a file
/// named after `label`: the child, what writes to its stdin, and its stdout read by lines.
pub(crate) fn mcp_on_pipes(
    repo: &TempRepo,
    label: &str,
) -> (
    tokio::process::Child,
    tokio::process::ChildStdin,
    tokio::io::BufReader<tokio::process::ChildStdout>,
) {
    let (_, log) = repo.log_file(label);
    let mut command = majordomus_command(["mcp", "--repo"]);
    repo.user_env(command.as_std_mut());
    command
        .arg(repo.root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log);
    let mut child = command.spawn().expect("majordomus mcp starts");
    let stdin = child.stdin.take().unwrap();
    let stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
    (child, stdin, stdout)
}

/// Runs git in `dir` with a fixed identity and no signing; panics with git's stderr on failure.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let mut command = std::process::Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Majordomus Test"])
        .args(["-c", "user.email=test@majordomus.invalid"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args);
    clear_git_env(&mut command);
    let output = command.output().expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("git speaks UTF-8 here")
}

// ---------------------------------------------------------------------------------------------
// Repositories

/// A repository with one commit on `main` in `<temp>/repo`; linked worktrees go beside it in
/// `<temp>/<name>`, the processes' stderr logs in `<temp>/logs`. Dropped: ends whatever
/// majordomus processes still run on it, prints the logs if the test is failing, removes it.
pub(crate) struct TempRepo {
    dir: TempDir,
    base: PathBuf,
    root: PathBuf,
    logs: PathBuf,
    counter: AtomicUsize,
}

impl TempRepo {
    pub(crate) fn new() -> TempRepo {
        let dir = tempfile::Builder::new()
            .prefix("majordomus-e2e-")
            .tempdir()
            .expect("a temporary directory");
        let base = dir
            .path()
            .canonicalize()
            .expect("the temporary directory exists");
        let root = base.join("repo");
        let logs = base.join("logs");
        fs::create_dir_all(root.join("src")).unwrap();
        fs::create_dir_all(&logs).unwrap();
        fs::write(
            root.join("README.md"),
            "# a repository for majordomus's tests\n",
        )
        .unwrap();
        fs::write(root.join("src/lib.rs"), "// nothing yet\n").unwrap();
        git(&root, &["init", "--quiet", "-b", "main"]);
        git(&root, &["add", "."]);
        git(&root, &["commit", "--quiet", "-m", "first"]);
        TempRepo {
            dir,
            base,
            root,
            logs,
            counter: AtomicUsize::new(0),
        }
    }

    /// The canonical root of the primary checkout.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The temporary directory everything of this repository lives in.
    pub(crate) fn base(&self) -> &Path {
        &self.base
    }

    /// The person's configuration directory for the processes of this test
    /// (`XDG_CONFIG_HOME`): `majordomus/config.toml` below it is their own file.
    pub(crate) fn user_config_home(&self) -> PathBuf {
        self.base.join("user/config")
    }

    /// Gives `command` the person's directories of this test, their configuration and their
    /// state (what they allowed), so that nothing of the person running the tests is read.
    pub(crate) fn user_env(&self, command: &mut std::process::Command) {
        command
            .env("XDG_CONFIG_HOME", self.user_config_home())
            .env("XDG_STATE_HOME", self.base.join("user/state"));
    }

    /// `majordomus allow <suggestion>` in `checkout`, as the person of this test: what the
    /// repository's `majordomus.toml` suggests is allowed. Answers what it printed.
    pub(crate) async fn allow(&self, checkout: &Path, suggestion: &str) -> String {
        let output = run_cli(
            self,
            ["allow", suggestion, "--repo", checkout.to_str().unwrap()],
        )
        .await;
        let printed = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "majordomus allow {suggestion}: {printed}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        printed
    }

    /// `git worktree add ../<name> -b <name>`; returns the new checkout's canonical root.
    pub(crate) fn add_worktree(&self, name: &str) -> PathBuf {
        let path = self.base.join(name);
        git(
            &self.root,
            &[
                "worktree",
                "add",
                "--quiet",
                "-b",
                name,
                path.to_str().unwrap(),
            ],
        );
        path.canonicalize().expect("the worktree exists")
    }

    /// A fresh log file for one process's stderr.
    pub(crate) fn log_file(&self, label: &str) -> (PathBuf, File) {
        let n = self.counter.fetch_add(1, Ordering::SeqCst);
        let path = self.logs.join(format!("{n:02}-{label}.log"));
        let file = File::create(&path).expect("a log file can be made");
        (path, file)
    }

    /// Whether a process's command line names this repository's temporary directory: the
    /// test that owns this repository started it.
    fn started_here(&self, pid: u32) -> bool {
        let Ok(exe) = fs::read_link(format!("/proc/{pid}/exe")) else {
            return false;
        };
        if exe != bin() {
            return false;
        }
        let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
            return false;
        };
        let base = self.base.to_string_lossy();
        cmdline
            .split(|&b| b == 0)
            .any(|arg| String::from_utf8_lossy(arg).starts_with(base.as_ref()))
    }

    /// The pids of the majordomus processes still running (not zombies) whose command line
    /// names this repository's temporary directory.
    pub(crate) fn live_processes(&self) -> Vec<u32> {
        let Ok(entries) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut pids: Vec<u32> = entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != std::process::id() && alive(pid) && self.started_here(pid))
            .collect();
        pids.sort_unstable();
        pids
    }

    /// The pids of the `majordomus serve` processes serving (or trying to serve) `checkout`.
    pub(crate) fn serve_processes(&self, checkout: &Path) -> Vec<u32> {
        self.live_processes()
            .into_iter()
            .filter(|&pid| {
                let args = cmdline(pid);
                args.get(1).map(String::as_str) == Some("serve")
                    && args.get(2).map(String::as_str) == Some("--repo")
                    && args.get(3).map(Path::new) == Some(checkout)
            })
            .collect()
    }
}

impl Default for TempRepo {
    fn default() -> Self {
        TempRepo::new()
    }
}

impl Drop for TempRepo {
    fn drop(&mut self) {
        // Whatever the test's own guards did not end: detached servers, servers that outlived
        // their client. Only processes of the tested binary naming this temporary directory.
        for pid in self.live_processes() {
            signal(pid, libc::SIGCONT);
            signal(pid, libc::SIGKILL);
        }
        if std::thread::panicking() {
            let mut logs: Vec<PathBuf> = fs::read_dir(&self.logs)
                .map(|entries| entries.filter_map(|e| Some(e.ok()?.path())).collect())
                .unwrap_or_default();
            logs.sort();
            for log in logs {
                let text = fs::read_to_string(&log).unwrap_or_default();
                eprintln!("----- {} -----\n{text}", log.display());
            }
            eprintln!(
                "----- (the repository was in {}) -----",
                self.dir.path().display()
            );
        }
    }
}

fn cmdline(pid: u32) -> Vec<String> {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|&b| b == 0)
                .filter(|arg| !arg.is_empty())
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `pid` runs and is not a zombie.
pub(crate) fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// The state letter of a process (`R`, `S`, `T` for stopped, `Z`, …), while it exists.
pub(crate) fn process_state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// Sends `signal` to `pid`. Only ever called with pids the tests started.
pub(crate) fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) has no memory effects; the pid is one of this test's processes.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// The git dir of a checkout: `.git` of the primary, `.git/worktrees/<name>` of a linked one.
pub(crate) fn git_dir(checkout: &Path) -> PathBuf {
    PathBuf::from(git(checkout, &["rev-parse", "--absolute-git-dir"]).trim())
        .canonicalize()
        .expect("the git dir exists")
}

/// Where a checkout's lease lives.
pub(crate) fn lease_path(checkout: &Path) -> PathBuf {
    git_dir(checkout).join("majordomus").join("lease.json")
}

/// `git status --porcelain` of a checkout, untracked and ignored files included.
pub(crate) fn porcelain(checkout: &Path) -> String {
    git(
        checkout,
        &[
            "status",
            "--porcelain",
            "--ignored",
            "--untracked-files=all",
        ],
    )
}

/// The mode bits of a file or directory.
pub(crate) fn mode(path: &Path) -> u32 {
    fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

// ---------------------------------------------------------------------------------------------
// Leases

/// A lease as the file says it.
#[derive(Clone, Debug)]
pub(crate) struct LeaseFile {
    pub url: Option<String>,
    pub token: String,
    pub pid: u32,
    pub raw: Value,
}

impl LeaseFile {
    /// The URL, which a ready lease has.
    pub(crate) fn url(&self) -> &str {
        self.url.as_deref().expect("the lease names a URL")
    }
}

/// Reads a checkout's lease; `None` when it is absent or not (yet) a whole document.
pub(crate) fn read_lease(checkout: &Path) -> Option<LeaseFile> {
    let text = fs::read_to_string(lease_path(checkout)).ok()?;
    let raw: Value = serde_json::from_str(&text).ok()?;
    Some(LeaseFile {
        url: raw["url"].as_str().map(str::to_string),
        token: raw["token"].as_str()?.to_string(),
        pid: u32::try_from(raw["pid"].as_u64()?).ok()?,
        raw,
    })
}

/// A plain HTTP client that never goes through a proxy.
pub(crate) fn http() -> reqwest::Client {
    static HTTP: OnceLock<reqwest::Client> = OnceLock::new();
    HTTP.get_or_init(|| {
        reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("an HTTP client builds")
    })
    .clone()
}

/// The repository's listing over plain REST (`GET /api/v1/peers`), as the server `lease`
/// names answers it to a caller without a session.
pub(crate) async fn peers_rest(lease: &LeaseFile) -> Value {
    http()
        .get(format!("{}/api/v1/peers", lease.url()))
        .bearer_auth(&lease.token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Asks `GET /` of a URL: the identity probe, no token.
pub(crate) async fn probe(url: &str) -> Result<Value, String> {
    let response = http()
        .get(format!("{url}/"))
        .send()
        .await
        .map_err(|e| format!("GET {url}/ failed: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("GET {url}/ answered {}", response.status()));
    }
    response
        .json()
        .await
        .map_err(|e| format!("GET {url}/ answered no JSON: {e}"))
}

/// Waits until the checkout's lease names a URL whose server answers the probe as the
/// leaseholder, and returns that lease.
pub(crate) async fn wait_ready(checkout: &Path) -> LeaseFile {
    eventually(
        &format!("a ready server for {}", checkout.display()),
        || async {
            let lease = read_lease(checkout).ok_or("no whole lease file yet")?;
            let url = lease.url.clone().ok_or("the lease has no URL yet")?;
            let identity = probe(&url).await?;
            if identity["leaseholder"] != Value::Bool(true) {
                return Err(format!("{url} answers {identity} (not the leaseholder)"));
            }
            Ok(lease)
        },
    )
    .await
}

/// Waits until a process has ended (it need not be our child: its pid just disappears).
pub(crate) async fn wait_gone(pid: u32) {
    eventually(&format!("process {pid} to end"), || async {
        if alive(pid) {
            Err("still running".to_string())
        } else {
            Ok(())
        }
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// `majordomus serve`

/// A `majordomus serve --repo DIR` the test started: killed (SIGKILL, after SIGCONT in case the
/// test froze it) by its own pid on drop if it still runs, and waited for.
pub(crate) struct ServeProcess {
    child: std::process::Child,
    pub checkout: PathBuf,
    pub log: PathBuf,
}

impl ServeProcess {
    pub(crate) fn spawn(repo: &TempRepo, checkout: &Path) -> ServeProcess {
        ServeProcess::spawn_with(repo, checkout, |_| {})
    }

    /// Spawns it after `configure` has had its say on the command (a `pre_exec`, say).
    pub(crate) fn spawn_with(
        repo: &TempRepo,
        checkout: &Path,
        configure: impl FnOnce(&mut std::process::Command),
    ) -> ServeProcess {
        let (log, file) = repo.log_file("serve");
        let mut command = std::process::Command::new(bin());
        command
            .arg("serve")
            .arg("--repo")
            .arg(checkout)
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file);
        clear_git_env(&mut command);
        repo.user_env(&mut command);
        if std::env::var_os("RUST_LOG").is_none() {
            command.env("RUST_LOG", "info");
        }
        configure(&mut command);
        let child = command.spawn().expect("majordomus serve starts");
        ServeProcess {
            child,
            checkout: checkout.to_path_buf(),
            log,
        }
    }

    /// Spawns it and waits until its lease is ready and names this process.
    pub(crate) async fn start(repo: &TempRepo, checkout: &Path) -> (ServeProcess, LeaseFile) {
        let serve = ServeProcess::spawn(repo, checkout);
        let lease = wait_ready(checkout).await;
        assert_eq!(
            lease.pid,
            serve.pid(),
            "the ready lease of {} names the server just started",
            checkout.display()
        );
        (serve, lease)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn signal(&mut self, signal: libc::c_int) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self::signal(self.pid(), signal);
        }
    }

    /// `SIGSTOP`, and waits until the system reports it stopped.
    pub(crate) async fn freeze(&mut self) {
        self.signal(libc::SIGSTOP);
        let pid = self.pid();
        eventually(&format!("process {pid} to stop"), || async {
            match process_state(pid) {
                Some('T') => Ok(()),
                other => Err(format!("state {other:?}")),
            }
        })
        .await;
    }

    /// `SIGCONT`.
    pub(crate) fn thaw(&mut self) {
        self.signal(libc::SIGCONT);
    }

    /// `kill -9`, and waits until it is reaped.
    pub(crate) async fn kill9(&mut self) -> ExitStatus {
        self.signal(libc::SIGKILL);
        self.wait_exit().await
    }

    /// Waits (bounded) until it has exited, and reaps it.
    pub(crate) async fn wait_exit(&mut self) -> ExitStatus {
        let pid = self.pid();
        let child = &mut self.child;
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().expect("the child can be waited for") {
                return status;
            }
            if started.elapsed() > BOUND {
                panic!("majordomus serve (pid {pid}) did not exit within {BOUND:?}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// What it wrote to stdout and stderr so far.
    pub(crate) fn output(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            signal(self.pid(), libc::SIGCONT);
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs a majordomus command to its end (bounded), with the person's directories of `repo`'s
/// test, and returns its output.
pub(crate) async fn run_cli<I, S>(repo: &TempRepo, args: I) -> std::process::Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = majordomus_command(args);
    repo.user_env(command.as_std_mut());
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let described = format!("{:?}", command.as_std());
    let output = tokio::time::timeout(BOUND, command.output())
        .await
        .unwrap_or_else(|_| panic!("{described} did not finish within {BOUND:?}"))
        .expect("majordomus runs");
    let (_, mut file) = repo.log_file("cli");
    let _ = writeln!(
        file,
        "{described}\n--- stdout\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let _ = writeln!(
        file,
        "--- stderr\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `majordomus serve status --json` in a checkout.
pub(crate) async fn serve_status(repo: &TempRepo, checkout: &Path) -> Value {
    let output = run_cli(
        repo,
        [
            "serve".as_ref(),
            "status".as_ref(),
            "--json".as_ref(),
            "--repo".as_ref(),
            checkout.as_os_str(),
        ],
    )
    .await;
    assert!(
        output.status.success(),
        "serve status: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "serve status --json prints JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

// ---------------------------------------------------------------------------------------------
// MCP clients

/// A connected rmcp client.
pub(crate) type Service = RunningService<RoleClient, ClientConfig>;

/// An rmcp client session, over stdio (with the pid of the `majordomus mcp` it spawned) or
/// over HTTP.
pub(crate) struct McpClient {
    service: Option<Service>,
    /// The `majordomus mcp` process, for a stdio client.
    pub pid: Option<u32>,
}

impl std::ops::Deref for McpClient {
    type Target = Service;
    fn deref(&self) -> &Service {
        self.service.as_ref().expect("the client is open")
    }
}

/// What a client says about itself in `initialize`.
pub(crate) fn client_config(name: &str, version: &str) -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(name, version),
    )
}

impl McpClient {
    /// Spawns `majordomus mcp --repo DIR` and initializes a session as client `name version`.
    pub(crate) async fn stdio(
        repo: &TempRepo,
        checkout: &Path,
        name: &str,
        version: &str,
    ) -> McpClient {
        let mut command = majordomus_command(["mcp", "--repo"]);
        command.arg(checkout);
        McpClient::stdio_command(repo, command, name, version).await
    }

    /// Spawns `command` (a `majordomus mcp` the test prepared, its environment say) and
    /// initializes a session as client `name version`.
    pub(crate) async fn stdio_command(
        repo: &TempRepo,
        command: tokio::process::Command,
        name: &str,
        version: &str,
    ) -> McpClient {
        let (_, log) = repo.log_file(&format!("mcp-{name}"));
        let described = format!("{:?}", command.as_std());
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(log)
            .spawn()
            .expect("majordomus mcp starts");
        let pid = transport.id();
        let Ok(initialized) =
            tokio::time::timeout(BOUND, client_config(name, version).serve(transport)).await
        else {
            panic!("{described} did not initialize within {BOUND:?}")
        };
        let service = initialized.unwrap_or_else(|e| panic!("{described} did not initialize: {e}"));
        McpClient {
            service: Some(service),
            pid,
        }
    }

    /// Opens a Streamable HTTP session at the lease's `/mcp` with its token.
    pub(crate) async fn http(lease: &LeaseFile, name: &str, version: &str) -> McpClient {
        let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", lease.url()))
            .auth_header(lease.token.clone());
        let transport = StreamableHttpClientTransport::with_client(http(), config);
        let Ok(initialized) =
            tokio::time::timeout(BOUND, client_config(name, version).serve(transport)).await
        else {
            panic!("no MCP session at {} within {BOUND:?}", lease.url())
        };
        let service =
            initialized.unwrap_or_else(|e| panic!("no MCP session at {}: {e}", lease.url()));
        McpClient {
            service: Some(service),
            pid: None,
        }
    }

    /// Calls a tool: its `structuredContent` when it answers, the text of an `isError` result
    /// when it refuses. A protocol error fails the test.
    pub(crate) async fn call(&self, tool: &str, arguments: Value) -> Result<Value, String> {
        call(self, tool, arguments).await
    }

    /// Calls a tool that must answer; panics with its refusal otherwise.
    pub(crate) async fn answer(&self, tool: &str, arguments: Value) -> Value {
        self.call(tool, arguments.clone())
            .await
            .unwrap_or_else(|refusal| panic!("{tool} {arguments} was refused: {refusal}"))
    }

    /// Ends the session: for stdio, closes the process's stdin and waits (bounded, by rmcp)
    /// until it exits; for HTTP, deletes the session.
    pub(crate) async fn close(mut self) {
        if let Some(service) = self.service.take() {
            let _ = tokio::time::timeout(BOUND, service.cancel()).await;
        }
        if let Some(pid) = self.pid {
            wait_gone(pid).await;
        }
    }
}

/// `tools/call`: `Ok(structuredContent)`, or `Err(text)` of an `isError` result.
pub(crate) async fn call(client: &Service, tool: &str, arguments: Value) -> Result<Value, String> {
    let arguments: JsonObject = match arguments {
        Value::Object(object) => object,
        Value::Null => JsonObject::new(),
        other => panic!("tool arguments must be an object, not {other}"),
    };
    let request = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
    let result = tokio::time::timeout(BOUND, client.call_tool(request))
        .await
        .unwrap_or_else(|_| panic!("{tool} did not answer within {BOUND:?}"))
        .unwrap_or_else(|e| panic!("{tool} failed at the protocol level: {e}"));
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect();
    if result.is_error == Some(true) {
        return Err(text.join("\n"));
    }
    let structured = result
        .structured_content
        .unwrap_or_else(|| panic!("{tool} answered without structuredContent: {text:?}"));
    if let Err(error) = output_validators(client).await[tool].validate(&structured) {
        panic!(
            "{tool}'s answer does not fit the output schema it advertises: {error}\n{structured:#}"
        );
    }
    if let Some(first) = text.first() {
        let as_text: Value = serde_json::from_str(first)
            .unwrap_or_else(|e| panic!("{tool}'s text content is not JSON ({e}): {first}"));
        assert_eq!(
            as_text, structured,
            "{tool}'s text content is its structuredContent"
        );
    }
    Ok(structured)
}

/// Every tool's output schema as `tools/list` advertises it, compiled once: a client checks
/// structured content against it, and the tool list is the same for every server of a build.
async fn output_validators(
    client: &Service,
) -> &'static std::collections::HashMap<String, jsonschema::Validator> {
    static VALIDATORS: tokio::sync::OnceCell<
        std::collections::HashMap<String, jsonschema::Validator>,
    > = tokio::sync::OnceCell::const_new();
    VALIDATORS
        .get_or_init(|| async {
            let tools = tokio::time::timeout(BOUND, client.list_all_tools())
                .await
                .unwrap_or_else(|_| panic!("tools/list did not answer within {BOUND:?}"))
                .unwrap_or_else(|e| panic!("tools/list failed: {e}"));
            tools
                .into_iter()
                .map(|tool| {
                    let schema = Value::Object(
                        tool.output_schema
                            .as_deref()
                            .cloned()
                            .unwrap_or_else(|| panic!("{} has no output schema", tool.name)),
                    );
                    let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| {
                        panic!("{}'s output schema does not compile: {e}", tool.name)
                    });
                    (tool.name.to_string(), validator)
                })
                .collect()
        })
        .await
}

// ---------------------------------------------------------------------------------------------
// Reading answers

/// The element of a JSON array whose `key` equals `value`.
pub(crate) fn find<'a>(array: &'a Value, key: &str, value: &str) -> &'a Value {
    array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"))
        .iter()
        .find(|item| item[key] == value)
        .unwrap_or_else(|| panic!("no element with {key} = {value} in {array:#}"))
}

/// The keys of a JSON object, sorted.
pub(crate) fn keys(object: &Value) -> Vec<String> {
    let mut keys: Vec<String> = object
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {object}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

/// A path as answers write it.
pub(crate) fn display(path: &Path) -> String {
    path.display().to_string()
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP, for what an ordinary client does not let a test do

/// A response read off a raw connection.
#[derive(Debug)]
pub(crate) struct RawResponse {
    pub status: u16,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RawResponse {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Writes `head` (request line and headers, without the blank line) and `body` on a fresh
/// connection to `url`'s host, and reads the response while still writing: a server may
/// answer (413, say) before the body is through and close the connection, which an
/// ordinary client reports as a failed write instead of the answer.
pub(crate) async fn raw_request(url: &str, head: &str, body: Vec<u8>) -> RawResponse {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .expect("the server accepts");
    let (mut reader, mut writer) = stream.into_split();
    let mut request = format!("{head}\r\nHost: {authority}\r\n\r\n").into_bytes();
    request.extend_from_slice(&body);
    let writing = tokio::spawn(async move {
        // The server may stop reading once it has refused; a failed write is expected then.
        let _ = writer.write_all(&request).await;
        writer
    });
    let reading = async {
        let mut raw = Vec::new();
        let mut buffer = [0u8; 8192];
        loop {
            if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&raw[..end]).into_owned();
                let mut lines = head.split("\r\n");
                let status = lines
                    .next()
                    .and_then(|line| line.split_whitespace().nth(1))
                    .and_then(|code| code.parse().ok())
                    .unwrap_or_else(|| panic!("a status line: {head}"));
                let headers: Vec<(String, String)> = lines
                    .filter_map(|line| line.split_once(':'))
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                    .collect();
                let length: usize = headers
                    .iter()
                    .find(|(k, _)| k == "content-length")
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                while raw.len() < end + 4 + length {
                    let n = reader.read(&mut buffer).await.expect("the response reads");
                    if n == 0 {
                        break;
                    }
                    raw.extend_from_slice(&buffer[..n]);
                }
                let body = String::from_utf8_lossy(&raw[end + 4..]).into_owned();
                return RawResponse {
                    status,
                    headers,
                    body,
                };
            }
            let n = reader.read(&mut buffer).await.expect("the response reads");
            assert!(
                n > 0,
                "the connection closed before a response: {:?}",
                String::from_utf8_lossy(&raw)
            );
            raw.extend_from_slice(&buffer[..n]);
        }
    };
    let response = tokio::time::timeout(BOUND, reading)
        .await
        .unwrap_or_else(|_| panic!("no response from {url} within {BOUND:?}"));
    writing.abort();
    response
}
