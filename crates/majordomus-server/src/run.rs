//! Electing, starting, running and stopping a checkout's server.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use majordomus_checkout::{
    CreateError, ElectionVerdict, Lease, LeaseHandle, LeaseReading, ProbeAnswer,
    classify_for_election, lease_age, lease_path, read_lease, take_over, try_create,
};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::ServerState;
use super::stops::StopRequests;
use majordomus_core::context::Site;
use majordomus_core::survey;

/// The runtime a server is run on: two workers, whatever the machine. The benchmark builds
/// the same, so that what it measures in-process runs as the executable runs.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("the async runtime starts")
}

/// What an election left this process as.
pub enum Elected {
    /// It holds the lease and must serve.
    Won(LeaseHandle),
    /// Another process serves the checkout, at the lease's URL.
    Serving(Lease),
}

/// What a process already knows of a server's silence before it elects: the server at `url`
/// has not answered since `since`. The busy grace is counted from then, so a process that
/// waited on a frozen server does not wait the grace out a second time.
#[derive(Clone, Debug)]
pub struct Silence {
    pub url: String,
    pub since: Instant,
}

/// Runs the election until this process either holds the lease or has found the live
/// server: exclusive create wins; a loser judges the lease it found, waits while its owner is
/// binding or busy, and takes over exactly the file it judged when it is stale.
pub async fn elect(site: &Site) -> std::io::Result<Elected> {
    elect_after(site, None).await
}

/// [`elect`], counting the busy grace of a silent server from `known` when the lease still
/// names the server that went silent.
pub async fn elect_after(site: &Site, known: Option<Silence>) -> std::io::Result<Elected> {
    let path = lease_path(&site.checkout);
    let busy_grace = site.config.timings.busy_grace();
    let mut silent_since: Option<Instant> = None;
    loop {
        let (reading, age) = match attempt(&site.checkout.root, &path).await? {
            Attempt::Won(handle) => return Ok(Elected::Won(handle)),
            Attempt::Found(reading, age) => (reading, age),
        };
        let lease = match &reading {
            LeaseReading::Document(lease, _) => Some(lease.clone()),
            _ => None,
        };
        let url = lease.as_ref().and_then(|lease| lease.url.as_deref());
        let probe = match url {
            Some(url) => Some(survey::probe(site, url, &site.checkout.id).await),
            None => None,
        };
        if matches!(probe, Some(ProbeAnswer::NoAnswer(_))) {
            let known_since = known
                .as_ref()
                .filter(|known| Some(known.url.as_str()) == url)
                .map(|known| known.since);
            let since = silent_since.get_or_insert_with(Instant::now);
            if let Some(known_since) = known_since {
                *since = (*since).min(known_since);
            }
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
                let judged = match reading {
                    LeaseReading::Document(_, bytes) => Some(bytes),
                    _ => None,
                };
                let path = path.clone();
                blocking(move || {
                    let judged = judged.unwrap_or_else(|| std::fs::read(&path).unwrap_or_default());
                    take_over(&path, &judged)
                })
                .await?;
                silent_since = None;
            }
        }
    }
}

/// What one exclusive create of the lease came to.
enum Attempt {
    Won(LeaseHandle),
    /// Somebody else's lease is there, as read, and how old it is.
    Found(LeaseReading, Option<Duration>),
}

/// Tries to create the lease for this process and, when one is there, reads it: file I/O
/// with fsyncs, so on a blocking thread rather than on the async workers.
async fn attempt(root: &std::path::Path, path: &std::path::Path) -> std::io::Result<Attempt> {
    let (root, path) = (root.to_path_buf(), path.to_path_buf());
    blocking(move || {
        let candidate = Lease::new_for_this_process(&root, env!("CARGO_PKG_VERSION"));
        match try_create(&path, &candidate) {
            Ok(handle) => Ok(Attempt::Won(handle)),
            Err(CreateError::Exists) => {
                let reading = read_lease(&path);
                let age = lease_age(&path, &reading, SystemTime::now());
                Ok(Attempt::Found(reading, age))
            }
            Err(CreateError::Io(error)) => Err(error),
        }
    })
    .await
}

/// Runs file work on a blocking thread; a thread that could not finish is an I/O error.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(std::io::Error::other)?
}

/// What an election made of this process.
pub enum Outcome {
    /// It won, and its server is answering.
    Started(Running),
    /// Another process serves the checkout, by this lease.
    Found(Box<Lease>),
}

/// Why a process could neither serve its checkout nor find the server that does.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the election failed: {0}")]
    Election(std::io::Error),
    #[error("could not start serving: {0}")]
    Serving(std::io::Error),
}

/// Elects, and starts serving when this process won.
pub async fn elect_and_start(
    site: &Arc<Site>,
    stops: &StopRequests,
) -> Result<Outcome, StartError> {
    elect_and_start_after(site, None, stops).await
}

/// [`elect_and_start`], knowing a server's silence already (see [`elect_after`]).
pub async fn elect_and_start_after(
    site: &Arc<Site>,
    known: Option<Silence>,
    stops: &StopRequests,
) -> Result<Outcome, StartError> {
    match elect_after(site, known)
        .await
        .map_err(StartError::Election)?
    {
        Elected::Won(lease) => start(site.clone(), lease, stops.clone())
            .await
            .map(Outcome::Started)
            .map_err(StartError::Serving),
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
pub async fn start(
    site: Arc<Site>,
    lease: LeaseHandle,
    stops: StopRequests,
) -> std::io::Result<Running> {
    let state = ServerState::new(site, lease, stops);
    // The previous server's claims are on the board before anyone can reach this one.
    let restoring = state.clone();
    if let Err(error) =
        tokio::task::spawn_blocking(move || super::handover::restore(&restoring)).await
    {
        tracing::warn!(%error, "the claims the previous server handed over were not read");
    }
    super::handover::keep(&state);
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
    let publishing = state.clone();
    let published = {
        let url = url.clone();
        blocking(move || publishing.publish(url)).await?
    };
    if !published {
        tracing::info!("the lease was taken over before its URL could be published");
    }
    tracing::info!(%url, root = %state.site.checkout.root.display(), "serving");
    // what a predecessor killed mid-prediction left in the repository goes now
    let sweeping = state.site.clone();
    tokio::task::spawn_blocking(move || sweeping.conflicts.sweep_stale());
    // the worktrees listed and their registry watched before the first call needs them
    let listing = state.site.clone();
    tokio::task::spawn_blocking(move || {
        if let Err(error) = listing.worktrees.watch_registry(&listing.checkout) {
            tracing::debug!(%error, "the worktrees could not be listed at start");
        }
    });
    spawn_housekeeping(state.clone());
    super::sessions::watch_quiet_sessions(&state);
    super::events::follow_siblings(&super::events::Follow {
        site: state.site.clone(),
        events: state.events.clone(),
        tasks: state.tasks.clone(),
        shutdown: state.shutdown.clone(),
    });
    let federation = majordomus_federation::Federation::start(&state);
    Ok(Running {
        state,
        task,
        federation,
    })
}

/// The periodic chores of a serving process: notice a taken-over lease, let silent bridges
/// go, reap episodes whose client did not come back.
fn spawn_housekeeping(state: Arc<ServerState>) {
    let tasks = state.tasks.clone();
    tasks.spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = state.shutdown.cancelled() => break,
                _ = tick.tick() => {
                    state.recheck_lease().await;
                    state.let_silent_bridges_go();
                    state.forget_departed_workers();
                    state.reap_episodes();
                    majordomus_capabilities::leases::sweep(&state.site, state.as_ref()).await;
                    majordomus_capabilities::messages::sweep(&state.site, state.as_ref()).await;
                }
            }
        }
    });
}

/// When a server stops on its own. Whatever the lifetime, a server that lost its lease stops
/// once no connection is attached to it any more: its clients have moved to the server that
/// took over, and its hooks' sessions ask that server now.
#[derive(Clone, Copy, Debug)]
pub enum Lifetime {
    /// Only when asked to.
    UntilStopped,
    /// Once no peer, a session's hooks included, has been attached for this long.
    IdleFor(Duration),
    /// Once no connection is attached: the server of a `majordomus mcp` whose own client has
    /// gone serves on only for the clients bridged to it. A peer made for a session's hooks
    /// keeps it no longer, for hooks never start a server and have no connection to serve:
    /// their next event finds the next server, or none, and is answered or fails open.
    WhileConnected,
}

/// Why a server stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    Asked,
    Leaving,
    /// Nobody is attached any more, by its lifetime or because it lost its lease.
    Idle,
}

/// How long a server that hands its peers over waits for requests in flight before its
/// process goes: its client expects it gone within a tenth of a second.
const HAND_OVER_PATIENCE: Duration = Duration::from_millis(40);

impl Running {
    /// Waits until a stop request or the lifetime ends the server, then stops it in order.
    pub async fn run(self, lifetime: Lifetime, stops: &StopRequests) {
        let state = self.state.clone();
        let ending = tokio::select! {
            () = stops.asked() => Ending::Asked,
            () = stops.left() => Ending::Leaving,
            _ = idle(&state, lifetime) => {
                tracing::info!("no connection attached any more; stopping");
                Ending::Idle
            }
        };
        self.stop(ending).await;
    }

    /// The ordered stop. Only a stop that was asked for closes every episode as `shutdown`.
    /// A server whose process leaves with its client detaches every episode, for the server
    /// its bridged peers elect next to resume, and releases the lease as soon as that is
    /// recorded, so they find the checkout free. A server that stops because nobody is attached leaves its detached episodes
    /// open too: their clients are the ones most likely to come back, to the next server,
    /// and resume them within the grace.
    async fn stop(self, ending: Ending) {
        let state = self.state;
        // Other machines see this board go at once rather than when it expires; a process
        // leaving with its client still goes within its hand-over patience.
        state.federation.stop();
        let federation_patience = match ending {
            Ending::Leaving => HAND_OVER_PATIENCE,
            Ending::Asked | Ending::Idle => state.site.config.timings.stop_timeout(),
        };
        if let Some(federation) = self.federation
            && tokio::time::timeout(federation_patience, federation)
                .await
                .is_err()
        {
            tracing::warn!(
                "the federation did not stop within {} ms",
                federation_patience.as_millis()
            );
        }
        // Before the lease is let go, which ends this server's right to write the file, and
        // before the episodes are detached or closed, so each peer's is recorded with it.
        super::handover::save(&state).await;
        let patience = match ending {
            Ending::Asked => {
                state.close_all_episodes().await;
                state.release_lease();
                state.site.config.timings.stop_timeout()
            }
            Ending::Leaving => {
                state.detach_every_episode();
                if !state.recorder.flush(state.recorder.patience()).await {
                    tracing::warn!("not every episode record was written before the stop");
                }
                state.release_lease();
                HAND_OVER_PATIENCE
            }
            Ending::Idle => {
                // Sessions seen only through their hooks may still be on the board: their
                // episodes wait, detached, for the next server, as a leaving process's do.
                state.detach_every_episode();
                if !state.recorder.flush(state.recorder.patience()).await {
                    tracing::warn!("not every episode record was written before the stop");
                }
                state.release_lease();
                state.site.config.timings.stop_timeout()
            }
        };
        state.shutdown.cancel();
        state.tasks.close();
        let finished = async {
            let _ = self.task.await;
            state.tasks.wait().await;
        };
        if tokio::time::timeout(patience, finished).await.is_err() {
            tracing::info!(
                "sessions and background tasks did not end within {} ms; stopping anyway",
                patience.as_millis()
            );
        }
    }
}

/// Resolves once the lifetime ends: nobody attached for the lifetime's idle span, or no
/// connection attached to a server that serves only while connected; at once when no
/// connection is attached to a server that lost its lease.
async fn idle(state: &ServerState, lifetime: Lifetime) {
    loop {
        let changed = state.peers_changed.notified();
        let unconnected = state.connected_peers() == 0;
        if unconnected && (!state.is_leaseholder() || matches!(lifetime, Lifetime::WhileConnected))
        {
            return;
        }
        let span = match lifetime {
            Lifetime::IdleFor(span) if state.attached_peers() == 0 => Some(span),
            _ => None,
        };
        tokio::select! {
            _ = changed => {}
            _ = state.stepped_down.cancelled(), if state.is_leaseholder() => {}
            _ = tokio::time::sleep(span.unwrap_or(Duration::from_secs(1))) => {
                if span.is_some() && state.attached_peers() == 0 {
                    return;
                }
            }
        }
    }
}
