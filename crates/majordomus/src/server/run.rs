//! Electing, starting, running and stopping a checkout's server.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use majordomus_checkout::{
    CreateError, ElectionVerdict, Lease, LeaseHandle, LeaseReading, ProbeAnswer,
    classify_for_election, lease_age, lease_path, read_lease, take_over, try_create,
};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::ServerState;
use crate::context::Site;
use crate::survey;

/// What an election left this process as.
pub enum Elected {
    /// It holds the lease and must serve.
    Won(LeaseHandle),
    /// Another process serves the checkout, at the lease's URL.
    Serving(Lease),
}

/// Runs the election of DESIGN §5 until this process either holds the lease or has found the
/// live server: exclusive create wins; a loser judges the lease it found, waits while its owner
/// is binding or busy, and takes over exactly the file it judged when it is stale.
pub async fn elect(site: &Site) -> std::io::Result<Elected> {
    let path = lease_path(&site.checkout);
    let busy_grace = Duration::from_millis(site.config.timings.busy_grace_ms);
    let mut silent_since: Option<Instant> = None;
    loop {
        let candidate = Lease::new_for_this_process(&site.checkout.root, env!("CARGO_PKG_VERSION"));
        match try_create(&path, &candidate) {
            Ok(handle) => return Ok(Elected::Won(handle)),
            Err(CreateError::Exists) => {}
            Err(CreateError::Io(error)) => return Err(error),
        }
        let reading = read_lease(&path);
        let age = lease_age(&path, &reading, SystemTime::now());
        let lease = match &reading {
            LeaseReading::Document(lease, _) => Some(lease.clone()),
            _ => None,
        };
        let probe = match lease.as_ref().and_then(|lease| lease.url.as_deref()) {
            Some(url) => Some(survey::probe(site, url, &site.checkout.id).await),
            None => None,
        };
        if matches!(probe, Some(ProbeAnswer::NoAnswer(_))) {
            silent_since.get_or_insert_with(Instant::now);
        } else {
            silent_since = None;
        }
        let evidence = survey::evidence(site, &reading, age, probe.as_ref(), lease.as_ref());
        let silent_for = silent_since
            .map(|since| since.elapsed())
            .unwrap_or_default();
        match classify_for_election(&evidence, silent_for, busy_grace) {
            ElectionVerdict::Vacant => continue,
            ElectionVerdict::Live => {
                return Ok(Elected::Serving(lease.expect("a live server has a lease")));
            }
            ElectionVerdict::Busy | ElectionVerdict::Binding => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            ElectionVerdict::Stale(reason) => {
                tracing::info!(%reason, "taking over a stale lease");
                let judged = match &reading {
                    LeaseReading::Document(_, bytes) => bytes.clone(),
                    _ => std::fs::read(&path).unwrap_or_default(),
                };
                take_over(&path, &judged)?;
                silent_since = None;
            }
        }
    }
}

/// What an election made of this process.
pub enum Outcome {
    /// It won, and its server is answering.
    Started(Running),
    /// Another process serves the checkout, by this lease.
    Found(Box<Lease>),
}

/// Elects, and starts serving when this process won.
pub async fn elect_and_start(site: &Arc<Site>) -> Result<Outcome, String> {
    match elect(site)
        .await
        .map_err(|error| format!("the election failed: {error}"))?
    {
        Elected::Won(lease) => start(site.clone(), lease)
            .await
            .map(Outcome::Started)
            .map_err(|error| format!("could not start serving: {error}")),
        Elected::Serving(lease) => Ok(Outcome::Found(Box::new(lease))),
    }
}

/// A server that is answering.
pub struct Running {
    pub state: Arc<ServerState>,
    task: JoinHandle<()>,
    /// The federation's task, when one is configured.
    federation: Option<JoinHandle<()>>,
}

/// Binds the listener on an ephemeral loopback port, starts answering, and only then writes the
/// URL into the lease, so nobody is ever pointed at an address that does not answer yet.
pub async fn start(site: Arc<Site>, lease: LeaseHandle) -> std::io::Result<Running> {
    let state = ServerState::new(site, lease);
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let url = format!("http://127.0.0.1:{}", listener.local_addr()?.port());
    let router = super::http::router(state.clone());
    let shutdown = state.shutdown.clone();
    let header_timeout = state.site.config.timings.header_timeout();
    let task = tokio::spawn(super::listen::serve(
        listener,
        router,
        header_timeout,
        shutdown,
    ));
    if !state.publish(url.clone())? {
        tracing::warn!("the lease was taken over before its URL could be published");
    }
    tracing::info!(%url, root = %state.site.checkout.root.display(), "serving");
    spawn_housekeeping(state.clone());
    let federation = crate::federation::Federation::start(&state);
    Ok(Running {
        state,
        task,
        federation,
    })
}

/// The periodic chores of a serving process: notice a taken-over lease, reap episodes whose
/// client did not come back.
fn spawn_housekeeping(state: Arc<ServerState>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = state.shutdown.cancelled() => break,
                _ = tick.tick() => {
                    state.recheck_lease();
                    state.reap_episodes();
                }
            }
        }
    });
}

/// When a server stops on its own.
#[derive(Clone, Copy, Debug)]
pub enum Lifetime {
    /// Only on a signal or `serve stop`.
    UntilStopped,
    /// Once no peer has been attached for this long.
    IdleFor(Duration),
}

impl Running {
    /// Waits until a signal, `serve stop`, or the lifetime ends the server, then stops it in
    /// order: episodes closed as `shutdown`, the lease removed if still ours, sessions ended.
    pub async fn run(self, lifetime: Lifetime) {
        let state = self.state.clone();
        let asked = tokio::select! {
            _ = state.shutdown.cancelled() => true,
            _ = idle(&state, lifetime) => {
                tracing::info!("no peer attached any more; stopping");
                false
            }
        };
        self.stop(asked).await;
    }

    /// The ordered stop. A stop that was asked for (a signal, `serve stop`) closes every
    /// episode as `shutdown`. A server that stops because nobody is attached leaves its
    /// detached episodes open in the journal instead: their clients are the ones most likely
    /// to come back, to the next server, and resume them within the grace.
    async fn stop(self, asked: bool) {
        let state = self.state;
        if asked {
            state.close_all_episodes().await;
        } else if !state.recorder.flush(state.recorder.patience()).await {
            tracing::warn!("not every episode record was written before the stop");
        }
        let bound = Duration::from_millis(state.site.config.timings.stop_timeout_ms);
        // Other machines see this board go at once rather than when it expires.
        state.federation.stop();
        if let Some(federation) = self.federation
            && tokio::time::timeout(bound, federation).await.is_err()
        {
            tracing::warn!(
                "the federation did not stop within {} ms",
                bound.as_millis()
            );
        }
        state.release_lease();
        state.shutdown.cancel();
        if tokio::time::timeout(bound, self.task).await.is_err() {
            tracing::warn!(
                "sessions did not end within {} ms; stopping anyway",
                bound.as_millis()
            );
        }
    }
}

/// Cancelled on the first SIGTERM or SIGINT this process receives; every server of the
/// process stops in order when it is. A second signal ends the process at once.
pub fn stop_requested() -> CancellationToken {
    static STOP: OnceLock<CancellationToken> = OnceLock::new();
    STOP.get_or_init(|| {
        let token = CancellationToken::new();
        let cancel = token.clone();
        tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                tracing::warn!("cannot watch for stop signals");
                return;
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            tracing::info!("stop requested by signal");
            cancel.cancel();
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            tracing::warn!("second stop signal: exiting now");
            std::process::exit(130);
        });
        token
    })
    .clone()
}

/// Resolves once no peer has been attached for the lifetime's idle span.
async fn idle(state: &ServerState, lifetime: Lifetime) {
    let Lifetime::IdleFor(span) = lifetime else {
        return std::future::pending().await;
    };
    loop {
        let changed = state.peers_changed.notified();
        if state.attached_peers() == 0 {
            tokio::select! {
                _ = tokio::time::sleep(span) => {
                    if state.attached_peers() == 0 {
                        return;
                    }
                }
                _ = changed => {}
            }
        } else {
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }
}
