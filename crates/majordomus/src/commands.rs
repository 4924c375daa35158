//! The fixed commands: `mcp`, `serve`, `serve stop`, `serve ensure`, `allow`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use majordomus_checkout::allowances::{Allowances, Suggestion};
use majordomus_checkout::config::{self, UserFiles};
use majordomus_checkout::git::Checkout;
use majordomus_checkout::lease::{LeaseReading, lease_path, read_lease};
use majordomus_checkout::process::process_alive;
use majordomus_domain::checkouts::ServerStanding;

use crate::bridge::Bridge;
use crate::context::Site;
use crate::server::run::{Lifetime, Outcome, elect_and_start};
use crate::server::stops::StopRequests;
use crate::survey;

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
                crate::render::say!("serving {} at {url}", site.checkout.root.display());
            }
            let lifetime = idle.map_or(Lifetime::UntilStopped, |seconds| {
                Lifetime::IdleFor(Duration::from_secs(seconds))
            });
            running.run(lifetime, &stops).await;
            Ok(())
        }
        Outcome::Found(lease) => {
            crate::render::say!(
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
        crate::render::say!("no server serves {}", site.checkout.root.display());
        return Ok(());
    };
    if !process_alive(lease.pid, lease.process_start) {
        crate::render::say!(
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
            crate::server::http::STOP
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
    crate::render::say!("stopped the server of {}", site.checkout.root.display());
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
                let answer = serde_json::json!({"standing": standing, "url": url, "reason": found.standing.reason});
                crate::render::say!("{answer}");
            } else {
                crate::render::say!("{} {url}", standing.as_str());
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
        crate::render::say!(
            "{described} ({}) is already allowed for {root}",
            suggested.shown
        );
        return Ok(());
    }
    let path = UserFiles::of(&checkout)
        .allowances
        .ok_or("there is no place for your allowances: neither XDG_STATE_HOME nor HOME is set")?;
    Allowances::allow(&path, suggestion, &suggested.digest).map_err(|error| error.to_string())?;
    crate::render::say!(
        "allowed {described} for {root}: {}\n\
         A server already running in this repository keeps its settings until it starts again \
         (`majordomus serve stop` ends it; its clients start the next one). A change to the \
         suggestion needs to be allowed again.",
        suggested.shown
    );
    Ok(())
}
