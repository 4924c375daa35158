//! The fixed commands: `mcp`, `serve`, `serve stop`, `serve ensure`, `allow`, and `lease`'s
//! holding of a lease for a command's run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use majordomus_checkout::allowances::{Allowances, Suggestion};
use majordomus_checkout::config::{self, UserFiles};
use majordomus_checkout::git::Checkout;
use majordomus_checkout::lease::{LeaseReading, lease_path, read_lease};
use majordomus_checkout::process::process_alive;
use majordomus_domain::checkouts::ServerStanding;

use crate::bridge::Bridge;
use majordomus_core::context::Site;
use majordomus_core::survey;
use majordomus_server::run::{Lifetime, Outcome, elect_and_start};
use majordomus_server::stops::StopRequests;

/// `majordomus mcp`: serve the client on stdio, as the checkout's server or as a bridge to it.
pub async fn mcp(dir: PathBuf, stops: StopRequests) -> Result<(), String> {
    Bridge::run(Site::open(&dir)?, stops)
        .await
        .map_err(|error| error.to_string())
}

/// `majordomus serve`: serve the checkout until stopped (or idle, with `--idle`).
pub async fn serve(dir: PathBuf, idle: Option<u64>, stops: StopRequests) -> Result<(), String> {
    let site = Site::open(&dir)?;
    match elect_and_start(&site, &stops)
        .await
        .map_err(|error| error.to_string())?
    {
        Outcome::Started(running) => {
            if let Some(url) = running.state.url() {
                majordomus_core::render::say!("serving {} at {url}", site.checkout.root.display());
            }
            let lifetime = idle.map_or(Lifetime::UntilStopped, |seconds| {
                Lifetime::IdleFor(Duration::from_secs(seconds))
            });
            running.run(lifetime, &stops).await;
            Ok(())
        }
        Outcome::Found(lease) => {
            majordomus_core::render::say!(
                "already served: {} at {}",
                site.checkout.root.display(),
                lease.url.as_deref().unwrap_or("(binding)")
            );
            Ok(())
        }
    }
}

/// `majordomus serve stop`: ask the server named by the lease to stop in order (a request to
/// its stop route with the lease's token, the same on every platform), after checking the
/// lease's process still runs, and wait until it has gone.
pub async fn stop(dir: PathBuf) -> Result<(), String> {
    let site = Site::open(&dir)?;
    let path = lease_path(&site.checkout);
    let LeaseReading::Document(lease, _) = read_lease(&path) else {
        majordomus_core::render::say!("no server serves {}", site.checkout.root.display());
        return Ok(());
    };
    if !process_alive(lease.pid, lease.process_start) {
        majordomus_core::render::say!(
            "the server of {} is already gone (its lease is stale)",
            site.checkout.root.display()
        );
        return Ok(());
    }
    let Some(url) = lease.url.as_deref() else {
        return Err(format!(
            "the server of {} (process {}) is still starting; try again in a moment",
            site.checkout.root.display(),
            lease.pid
        ));
    };
    let asked = site
        .http
        .post(format!(
            "{}{}",
            url.trim_end_matches('/'),
            majordomus_server::http::STOP
        ))
        .bearer_auth(&lease.token)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status);
    if let Err(error) = asked {
        return Err(format!(
            "could not ask process {} to stop: {}",
            lease.pid,
            error.without_url()
        ));
    }
    let bound = site.config.timings.stop_timeout() + Duration::from_secs(2);
    let started = Instant::now();
    while process_alive(lease.pid, lease.process_start) {
        if started.elapsed() > bound {
            return Err(format!(
                "process {} did not stop within {} ms",
                lease.pid,
                bound.as_millis()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    majordomus_core::render::say!("stopped the server of {}", site.checkout.root.display());
    Ok(())
}

/// `majordomus serve ensure`: make sure a server is ready, starting a detached one if needed.
pub async fn ensure(dir: PathBuf, json: bool) -> Result<(), String> {
    let site = Site::open(&dir)?;
    let bound = site.config.timings.starting_grace() + Duration::from_secs(5);
    let started = Instant::now();
    let mut spawned = false;
    loop {
        let found = survey::survey(&site, site.checkout.clone()).await;
        let standing = found.standing.standing;
        if matches!(standing, ServerStanding::Ready | ServerStanding::Outdated) {
            let url = found.url().unwrap_or_default().to_string();
            if json {
                let standing = majordomus_capabilities::wire::ServerStanding::from(standing);
                let answer = serde_json::json!({"standing": standing, "url": url, "reason": found.standing.reason});
                majordomus_core::render::say!("{answer}");
            } else {
                majordomus_core::render::say!("{} {url}", standing.as_str());
            }
            return Ok(());
        }
        if started.elapsed() > bound {
            return Err(format!(
                "no server became ready within {} ms: {}",
                bound.as_millis(),
                found
                    .standing
                    .reason
                    .unwrap_or_else(|| standing.as_str().to_string())
            ));
        }
        if !spawned && matches!(standing, ServerStanding::Absent | ServerStanding::Stale) {
            spawn_detached_server(&site.checkout.root, site.config.timings.idle_timeout_secs)?;
            spawned = true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Starts `majordomus serve` in its own session, detached from this terminal; its election
/// decides whether it serves or leaves at once.
fn spawn_detached_server(root: &Path, idle_secs: u64) -> Result<(), String> {
    let executable =
        std::env::current_exe().map_err(|error| format!("cannot find this executable: {error}"))?;
    let mut command = std::process::Command::new(executable);
    command
        .arg("serve")
        .arg("--repo")
        .arg(root)
        .arg("--idle")
        .arg(idle_secs.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    majordomus_checkout::process::detached(&mut command);
    command
        .spawn()
        .map(drop)
        .map_err(|error| format!("could not start a server: {error}"))
}

/// `majordomus allow <suggestion>`: the person allows what `dir`'s repository suggests in its
/// `majordomus.toml` (a federation, an episode command), exactly as it reads now, recorded in
/// the person's own state for every worktree of the repository. What is allowed is printed,
/// since it is what will run or be connected to.
pub fn allow(dir: &Path, suggestion: Suggestion) -> Result<(), String> {
    let checkout = Checkout::discover(dir)
        .map_err(|error| format!("cannot use {}: {error}", dir.display()))?;
    let config = config::load(&checkout).map_err(|error| error.to_string())?;
    let root = checkout.root.display();
    let suggested = config.suggestions.of(suggestion).ok_or_else(|| {
        format!(
            "{root}/{} suggests no {}: there is nothing to allow",
            config::CONFIG_FILE,
            suggestion.word()
        )
    })?;
    let described = suggestion.described();
    if suggested.allowed {
        majordomus_core::render::say!(
            "{described} ({}) is already allowed for {root}",
            suggested.shown
        );
        return Ok(());
    }
    let path = UserFiles::of(&checkout)
        .allowances
        .ok_or("there is no place for your allowances: neither XDG_STATE_HOME nor HOME is set")?;
    Allowances::allow(&path, suggestion, &suggested.digest).map_err(|error| error.to_string())?;
    majordomus_core::render::say!(
        "allowed {described} for {root}: {}\n\
         A server already running in this repository keeps its settings until it starts again \
         (`majordomus serve stop` ends it; its clients start the next one). A change to the \
         suggestion needs to be allowed again.",
        suggested.shown
    );
    Ok(())
}

/// What `majordomus lease` was asked.
pub struct LeaseCommand {
    pub dir: PathBuf,
    pub name: String,
    pub ttl_secs: Option<u32>,
    /// How long to wait for the grant; without it, a command waits as long as it takes and
    /// a lease alone is not waited for.
    pub wait_secs: Option<u32>,
    /// The command to run while holding the lease; empty for a lease held for the caller.
    pub command: Vec<String>,
    pub json: bool,
}

/// The exit code of `majordomus lease` when the lease was not granted within the wait:
/// `EX_TEMPFAIL`, "try again later".
const EXIT_NOT_GRANTED: u8 = 75;

/// `majordomus lease NAME [-- COMMAND…]`: the lease for the caller's process (a script's
/// shell), or held for the run of COMMAND and released when it exits, with its exit code.
/// A request still queued when the wait ends leaves the queue: a script that was told "not
/// granted" must not come to hold the lease unknowingly.
pub async fn lease(asked: LeaseCommand) -> std::process::ExitCode {
    use std::process::ExitCode;
    let site = match Site::open(&asked.dir) {
        Ok(site) => site,
        Err(message) => {
            eprintln!("majordomus: {message}");
            return ExitCode::FAILURE;
        }
    };
    let ctx = majordomus_core::context::Context::observer(site);
    let pid = if asked.command.is_empty() {
        caller_pid()
    } else {
        std::process::id()
    };
    let registry = majordomus_capabilities::registry();
    let acquire = registry
        .by_id("leases.acquire")
        .expect("leases.acquire is built in");
    let release = registry
        .by_id("leases.release")
        .expect("leases.release is built in");
    let wait_until = asked
        .wait_secs
        .map(|secs| Instant::now() + Duration::from_secs(u64::from(secs)));
    let mut told_queued = false;
    let answer = loop {
        let wait_secs = match wait_until {
            Some(until) => until.saturating_duration_since(Instant::now()).as_secs(),
            None if asked.command.is_empty() => 0,
            None => u64::from(majordomus_domain::limits::LEASE_WAIT_SECS_MAX),
        };
        let input = serde_json::json!({
            "name": asked.name,
            "ttl_secs": asked.ttl_secs,
            "wait_secs": wait_secs,
            "pid": pid,
        });
        let answer = match acquire.call(&ctx, strip_nulls(input)).await {
            Ok(answer) => answer,
            Err(error) => {
                eprintln!("majordomus: {}", error.message);
                return ExitCode::from(
                    if error.kind == majordomus_core::api::ErrorKind::InvalidInput {
                        2
                    } else {
                        1
                    },
                );
            }
        };
        let granted = answer["state"] == "granted";
        let waited_out = wait_until.is_none_or(|until| Instant::now() >= until);
        if granted || (waited_out && (wait_until.is_some() || asked.command.is_empty())) {
            break answer;
        }
        if !told_queued {
            told_queued = true;
            eprintln!("majordomus: {}", acquire.render(&answer));
        }
    };
    let show = |answer: &serde_json::Value| {
        if asked.json {
            majordomus_core::render::say!(
                "{}",
                serde_json::to_string_pretty(answer).expect("answers serialise")
            );
        } else if asked.command.is_empty() {
            majordomus_core::render::say!("{}", acquire.render(answer));
        }
    };
    let name = answer["name"].as_str().unwrap_or(&asked.name).to_string();
    let release_input = serde_json::json!({ "name": name, "pid": pid });
    if answer["state"] != "granted" {
        show(&answer);
        let _ = release.call(&ctx, release_input).await;
        eprintln!(
            "majordomus: `{}` was not granted within the wait; left its queue",
            majordomus_domain::text::for_terminal(&asked.name)
        );
        return ExitCode::from(EXIT_NOT_GRANTED);
    }
    show(&answer);
    if asked.command.is_empty() {
        return ExitCode::SUCCESS;
    }
    let code = run_holding(&ctx, acquire, &asked, pid, answer).await;
    if let Err(error) = release.call(&ctx, release_input).await {
        eprintln!("majordomus: {}", error.message);
    }
    code
}

/// Runs the command while the lease is held, asking for it again every third of its ttl so
/// that a long run does not outlive its grant; answers the command's exit code (128 + the
/// signal that ended it).
async fn run_holding(
    ctx: &majordomus_core::context::Context,
    acquire: &majordomus_core::registry::Capability,
    asked: &LeaseCommand,
    pid: u32,
    granted: serde_json::Value,
) -> std::process::ExitCode {
    use std::process::ExitCode;
    let (program, args) = asked.command.split_first().expect("a command was given");
    let mut child = match tokio::process::Command::new(program).args(args).spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("majordomus: could not run `{program}`: {error}");
            return ExitCode::from(127);
        }
    };
    let ttl = granted["expires_in_secs"].as_u64().unwrap_or(1).max(3);
    let mut renew = tokio::time::interval(Duration::from_secs(ttl / 3));
    renew.tick().await;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            _ = renew.tick() => {
                let input = serde_json::json!({
                    "name": granted["name"], "ttl_secs": asked.ttl_secs, "pid": pid,
                });
                if let Err(error) = acquire.call(ctx, strip_nulls(input)).await {
                    eprintln!("majordomus: could not renew the lease: {}", error.message);
                }
            }
        }
    };
    match status {
        Ok(status) => match (status.code(), killed_by(status)) {
            (Some(code), _) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            (None, Some(signal)) => ExitCode::from(128 + u8::try_from(signal).unwrap_or(0)),
            (None, None) => ExitCode::FAILURE,
        },
        Err(error) => {
            eprintln!("majordomus: waiting for `{program}` failed: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The signal that ended a process, on Unix.
fn killed_by(status: std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        std::os::unix::process::ExitStatusExt::signal(&status)
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// The process that ran this command (a shell, a script), which a lease taken without a
/// command is held for; this process itself where its parent cannot be told.
pub(crate) fn caller_pid() -> u32 {
    majordomus_checkout::process::parent_of(std::process::id()).unwrap_or_else(std::process::id)
}

/// `input` without its `null` fields, which the capability's input would refuse.
fn strip_nulls(mut input: serde_json::Value) -> serde_json::Value {
    if let Some(object) = input.as_object_mut() {
        object.retain(|_, value| !value.is_null());
    }
    input
}
