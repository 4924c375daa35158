//! What the benchmark stands on: a scratch directory (temporary repositories, the logs of the
//! processes it starts, a copy of the `majordomus` executable), `majordomus serve` processes
//! ended by their own pid, and a server running inside the bench process itself.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use majordomus_checkout::config::UserFiles;
use majordomus_checkout::{Lease, LeaseReading, lease_path, read_lease};
use majordomus_domain::checkouts::ServerStanding;
use majordomus_domain::peers::{ClientInfo, PeerId, Transport};
use tempfile::TempDir;
use tokio::task::JoinHandle;

use majordomus_core::context::{Context, Site};
use majordomus_core::survey;
use majordomus_server::ServerState;
use majordomus_server::run::{Elected, Lifetime, elect, start};
use majordomus_server::stops::StopRequests;

/// How long any one wait of the setup may take before the benchmark gives up with a message.
pub(super) const SETUP_BOUND: Duration = Duration::from_secs(30);

/// Spawns `command` (`what`, as the errors name it) with `input` on its stdin: the time from
/// its start to its exit, and what it printed.
pub(super) async fn spawned(
    mut command: tokio::process::Command,
    input: Vec<u8>,
    what: &str,
) -> Result<(Duration, String), String> {
    use tokio::io::AsyncWriteExt as _;
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    clean_env(command.as_std_mut());
    let started = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|error| format!("could not start {what}: {error}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(&input)
            .await
            .map_err(|error| format!("could not write the event: {error}"))?;
    }
    let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .map_err(|_| format!("{what} did not exit within 10 s"))?
        .map_err(|error| format!("{what} could not be waited for: {error}"))?;
    let elapsed = started.elapsed();
    if !output.status.success() {
        return Err(format!("{what} exited {}", output.status));
    }
    Ok((
        elapsed,
        String::from_utf8_lossy(&output.stdout).into_owned(),
    ))
}

/// Removes every `GIT_*` variable, so an enclosing git (a hook, say) cannot redirect the
/// repositories the benchmark makes.
pub(super) fn clean_env(command: &mut std::process::Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            command.env_remove(&key);
        }
    }
}

/// Runs git in `dir` with a fixed identity and no signing.
pub(super) fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut command = std::process::Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=majordomus bench"])
        .args(["-c", "user.email=bench@majordomus.invalid"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args);
    clean_env(&mut command);
    let output = command
        .output()
        .map_err(|error| format!("could not run git: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "git {} in {} failed: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The benchmark's temporary directory: repositories, logs and the executable the spawned
/// processes run. Removed when dropped.
pub(super) struct Scratch {
    dir: TempDir,
    base: PathBuf,
    exe: PathBuf,
    logs: PathBuf,
    counter: std::sync::atomic::AtomicUsize,
}

impl Scratch {
    /// A scratch directory holding a copy of `original`, the `majordomus` executable.
    pub(super) fn new(original: &Path) -> Result<Scratch, String> {
        let dir = tempfile::Builder::new()
            .prefix("majordomus-bench-")
            .tempdir()
            .map_err(|error| format!("could not make a temporary directory: {error}"))?;
        let base = dir
            .path()
            .canonicalize()
            .map_err(|error| format!("the temporary directory vanished: {error}"))?;
        let logs = base.join("logs");
        std::fs::create_dir_all(&logs).map_err(|error| error.to_string())?;
        // The spawned processes run a copy of the executable, so a rebuild of the original
        // during the run cannot make them judge each other `outdated`.
        let exe = base.join("majordomus");
        if std::fs::hard_link(original, &exe).is_err() {
            std::fs::copy(original, &exe)
                .map_err(|error| format!("could not copy {}: {error}", original.display()))?;
        }
        Ok(Scratch {
            dir,
            base,
            exe,
            logs,
            counter: Default::default(),
        })
    }

    pub(super) fn base(&self) -> &Path {
        &self.base
    }

    /// The executable spawned processes run.
    pub(super) fn exe(&self) -> &Path {
        &self.exe
    }

    /// A fresh log file for one process's stderr.
    pub(super) fn log(&self, label: &str) -> File {
        let n = self
            .counter
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        File::create(self.logs.join(format!("{n:03}-{label}.log")))
            .or_else(|_| File::create("/dev/null"))
            .expect("/dev/null can be opened")
    }

    /// Whether any process was started (and so left a log worth reading).
    pub(super) fn has_logs(&self) -> bool {
        self.counter.load(std::sync::atomic::Ordering::SeqCst) > 0
    }

    /// Keeps the scratch directory (and its logs) instead of removing it.
    pub(super) fn keep(self) -> PathBuf {
        self.dir.keep()
    }
}

/// A repository with one commit on `main` at `<scratch>/<label>/repo`; its linked worktrees
/// beside it.
pub(super) struct TempRepository {
    base: PathBuf,
    root: PathBuf,
}

impl TempRepository {
    pub(super) fn new(scratch: &Scratch, label: &str) -> Result<TempRepository, String> {
        let base = scratch.base().join(label);
        let root = base.join("repo");
        std::fs::create_dir_all(root.join("src")).map_err(|error| error.to_string())?;
        std::fs::write(
            root.join("README.md"),
            "# a repository for majordomus bench\n",
        )
        .map_err(|error| error.to_string())?;
        std::fs::write(root.join("src/lib.rs"), "// nothing yet\n")
            .map_err(|error| error.to_string())?;
        git(&root, &["init", "--quiet", "-b", "main"])?;
        git(&root, &["add", "."])?;
        git(&root, &["commit", "--quiet", "-m", "first"])?;
        Ok(TempRepository { base, root })
    }

    pub(super) fn root(&self) -> &Path {
        &self.root
    }

    /// `git worktree add ../<name> -b <name>`; the new checkout's root.
    pub(super) fn add_worktree(&self, name: &str) -> Result<PathBuf, String> {
        let path = self.base.join(name);
        let target = path.to_str().ok_or("the scratch path is not UTF-8")?;
        git(
            &self.root,
            &["worktree", "add", "--quiet", "-b", name, target],
        )?;
        Ok(path)
    }
}

/// A `majordomus serve` the benchmark started: asked to stop (SIGTERM) by its own pid, and
/// killed on drop if it still runs.
pub(super) struct ServeProcess {
    child: tokio::process::Child,
    pub pid: u32,
    pub dir: PathBuf,
}

impl ServeProcess {
    pub(super) fn spawn(scratch: &Scratch, dir: &Path) -> Result<ServeProcess, String> {
        let mut command = tokio::process::Command::new(scratch.exe());
        // `--idle` is a safety net only: should the benchmark itself be killed, its servers
        // still end on their own.
        command
            .arg("serve")
            .arg("--repo")
            .arg(dir)
            .arg("--idle")
            .arg("600")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(scratch.log("serve"))
            .kill_on_drop(true);
        clean_env(command.as_std_mut());
        let child = command
            .spawn()
            .map_err(|error| format!("could not start `majordomus serve`: {error}"))?;
        let pid = child.id().unwrap_or(0);
        Ok(ServeProcess {
            child,
            pid,
            dir: dir.to_path_buf(),
        })
    }

    /// Spawns it and waits until its lease is ready and names it.
    pub(super) async fn start(
        scratch: &Scratch,
        dir: &Path,
    ) -> Result<(ServeProcess, Lease), String> {
        let serve = ServeProcess::spawn(scratch, dir)?;
        let lease = wait_ready(dir).await?;
        if lease.pid != serve.pid {
            return Err(format!(
                "{} is already served by process {}; the benchmark needs checkouts of its own",
                dir.display(),
                lease.pid
            ));
        }
        Ok((serve, lease))
    }

    /// The ordered stop: SIGTERM, then a bounded wait, then SIGKILL.
    pub(super) async fn stop(mut self) {
        signal(self.pid, libc::SIGTERM);
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// Sends `signal` to `pid`. Only ever called with pids this benchmark started.
pub(super) fn signal(pid: u32, signal: libc::c_int) {
    if pid == 0 {
        return;
    }
    // SAFETY: kill(2) has no memory effects; the pid is one of the benchmark's children.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// Whether `pid` runs and is not a zombie.
pub(super) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Waits (bounded) until a process has ended; kills it (by its pid) if it has not.
pub(super) async fn wait_gone(pid: u32, bound: Duration) {
    let started = Instant::now();
    while alive(pid) {
        if started.elapsed() > bound {
            signal(pid, libc::SIGKILL);
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A `/proc/<pid>/status` field in KiB (`VmRSS`, `VmHWM`).
pub(super) fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The CPU time a process has used so far, user and system together (`utime` + `stime` of
/// `/proc/<pid>/stat`).
pub(super) fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields from the third on follow the command name's closing parenthesis (the name may
    // hold spaces); utime and stime are the 14th and 15th.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// Waits until the checkout's lease names a server that answers as ready, and returns it.
pub(super) async fn wait_ready(dir: &Path) -> Result<Lease, String> {
    let site = majordomus_core::context::Site::open(dir)?;
    let started = Instant::now();
    loop {
        let found = survey::survey(&site, site.checkout.clone()).await;
        if found.standing.standing == ServerStanding::Ready
            && let Some(lease) = found.lease
        {
            return Ok(lease);
        }
        if started.elapsed() > SETUP_BOUND {
            return Err(format!(
                "no server of {} became ready within {} s (standing {}{})",
                dir.display(),
                SETUP_BOUND.as_secs(),
                found.standing.standing.as_str(),
                found
                    .standing
                    .reason
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until a checkout has no lease any more (its server has stopped in order).
pub(super) async fn wait_no_lease(dir: &Path) -> Result<(), String> {
    let site = majordomus_core::context::Site::open(dir)?;
    let path = lease_path(&site.checkout);
    let started = Instant::now();
    while !matches!(read_lease(&path), LeaseReading::Absent) {
        if started.elapsed() > SETUP_BOUND {
            return Err(format!(
                "the lease of {} was still there after {} s",
                dir.display(),
                SETUP_BOUND.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

/// A server elected and started inside the bench process, stopped as `majordomus serve stop`
/// stops one: episodes close as `shutdown`, the lease goes, the listener stops.
pub(super) struct Serving {
    pub state: Arc<ServerState>,
    stops: StopRequests,
    task: JoinHandle<()>,
}

impl Serving {
    pub(super) async fn start(site: Arc<Site>) -> Result<Serving, String> {
        let dir = site.checkout.root.clone();
        let lease = match elect(&site)
            .await
            .map_err(|error| format!("the election in {} failed: {error}", dir.display()))?
        {
            Elected::Won(lease) => lease,
            Elected::Serving(lease) => {
                return Err(format!(
                    "{} is already served (process {} at {}); stop it with `majordomus serve stop --repo {}` or run the benchmark in a temporary repository (without --repo)",
                    dir.display(),
                    lease.pid,
                    lease.url.as_deref().unwrap_or("(binding)"),
                    dir.display()
                ));
            }
        };
        let stops = StopRequests::default();
        let running = start(site, lease, stops.clone())
            .await
            .map_err(|error| format!("could not serve {}: {error}", dir.display()))?;
        let state = running.state.clone();
        let task = tokio::spawn({
            let stops = stops.clone();
            async move { running.run(Lifetime::UntilStopped, &stops).await }
        });
        Ok(Serving { state, stops, task })
    }

    /// The ordered stop, awaited.
    pub(super) async fn stop(self) {
        self.stops.ask();
        let _ = self.task.await;
    }
}

/// A server running inside the bench process, with one peer attached to call as: the context
/// the handler sees when an MCP session of this process calls it.
pub(super) struct InProcessServer {
    serving: Serving,
    caller: PeerId,
}

impl InProcessServer {
    pub(super) async fn start(dir: &Path) -> Result<InProcessServer, String> {
        InProcessServer::serve(Site::open(dir)?).await
    }

    /// A server of `dir` that reads the person's files at `user_files` rather than the
    /// person's own: what the bench allowed its repositories to suggest.
    pub(super) async fn start_as(
        dir: &Path,
        user_files: UserFiles,
    ) -> Result<InProcessServer, String> {
        InProcessServer::serve(Site::open_with(dir, |_| user_files)?).await
    }

    async fn serve(site: Arc<Site>) -> Result<InProcessServer, String> {
        let serving = Serving::start(site).await?;
        let caller = serving.state.attach(
            Transport::Stdio,
            ClientInfo {
                name: "majordomus-bench".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                title: Some("in-process caller".into()),
            },
            None,
            None,
        );
        Ok(InProcessServer { serving, caller })
    }

    pub(super) fn state(&self) -> &Arc<majordomus_server::ServerState> {
        &self.serving.state
    }

    pub(super) fn context(&self) -> Context {
        Context::served(
            self.serving.state.site.clone(),
            self.serving.state.clone(),
            Some(self.caller.clone()),
        )
    }

    pub(super) async fn stop(self) {
        self.serving.stop().await;
    }
}

/// `majordomus-dev floor-server --http`, which says its URL on its first line of output and
/// serves until its stdin closes.
pub(super) struct FloorHttpServer {
    child: tokio::process::Child,
    pub(super) url: String,
}

impl FloorHttpServer {
    pub(super) async fn start(scratch: &Scratch) -> Result<FloorHttpServer, String> {
        use tokio::io::AsyncBufReadExt as _;
        let mut command = tokio::process::Command::new(super::floor::executable()?);
        command
            .args(["floor-server", "--http"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(scratch.log("floor-http"))
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|error| format!("could not start the HTTP floor server: {error}"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the floor server has no stdout")?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let url = tokio::time::timeout(SETUP_BOUND, lines.next_line())
            .await
            .map_err(|_| "the HTTP floor server said no URL within 30 s".to_string())?
            .map_err(|error| format!("the HTTP floor server's output: {error}"))?
            .ok_or("the HTTP floor server ended before saying its URL")?;
        Ok(FloorHttpServer { child, url })
    }

    pub(super) fn pid(&self) -> Result<u32, String> {
        self.child
            .id()
            .ok_or_else(|| "the HTTP floor server has ended".to_string())
    }

    /// Closes its stdin, which ends it; kills it if it lingers.
    pub(super) async fn stop(mut self) {
        drop(self.child.stdin.take());
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
