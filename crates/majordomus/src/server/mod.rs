//! The serving process: its state (boards, lease) and the transports that reach it.

mod episodes;
pub mod http;
pub mod listen;
pub mod mcp;
pub mod run;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::SystemTime;

use majordomus_checkout::lease::{LeaseHandle, LeaseView};
use majordomus_domain::board::PeerBoard;
use majordomus_domain::checkouts::ServerStanding;
use majordomus_domain::episodes::EpisodeBoard;
use majordomus_domain::peers::{AnnounceInput, Announced, ClientInfo, Peer, PeerId, Transport};
use tokio_util::sync::CancellationToken;

use crate::context::Site;
use crate::episodes::Recorder;
use crate::federation::Federation;
use crate::registry::CapabilityError;

/// Everything one serving process holds in memory.
pub struct ServerState {
    pub site: Arc<Site>,
    board: Mutex<PeerBoard>,
    pub(crate) episodes: Arc<Mutex<EpisodeBoard>>,
    pub(crate) recorder: Recorder,
    /// Which peer each bridged worker holds now, by the worker's stable identity.
    workers: Mutex<std::collections::HashMap<String, PeerId>>,
    lease: Mutex<Option<LeaseHandle>>,
    lease_view: LeaseView,
    token: String,
    url: OnceLock<String>,
    leaseholder: AtomicBool,
    /// Cancelled when the ordered stop begins.
    pub shutdown: CancellationToken,
    /// Woken whenever a peer attaches or leaves, so the lifetime watcher need not poll.
    pub(crate) peers_changed: tokio::sync::Notify,
    /// This server's link to other machines' boards; off unless configured.
    pub federation: Federation,
}

impl ServerState {
    pub fn new(site: Arc<Site>, lease: LeaseHandle) -> Arc<Self> {
        let root = site.checkout.root.display().to_string();
        let grace = std::time::Duration::from_secs(site.config.timings.reattach_grace_secs);
        let episodes = Arc::new(Mutex::new(EpisodeBoard::new(grace)));
        let recorder = Recorder::start(&site, episodes.clone());
        let shutdown = run::stop_requested().child_token();
        let federation = Federation::new(&site.config.federation, shutdown.child_token());
        Arc::new(ServerState {
            board: Mutex::new(PeerBoard::new(root)),
            episodes,
            recorder,
            lease_view: lease.lease().redacted(),
            token: lease.lease().token.clone(),
            workers: Mutex::new(Default::default()),
            lease: Mutex::new(Some(lease)),
            url: OnceLock::new(),
            leaseholder: AtomicBool::new(true),
            shutdown,
            peers_changed: tokio::sync::Notify::new(),
            federation,
            site,
        })
    }

    pub(crate) fn board(&self) -> MutexGuard<'_, PeerBoard> {
        self.board
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn episode_board(&self) -> MutexGuard<'_, EpisodeBoard> {
        self.episodes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The lease this process holds, as answers show it: without the token.
    pub fn lease_view(&self) -> LeaseView {
        let mut view = self.lease_view.clone();
        view.url = self.url();
        view
    }

    /// The secret every HTTP request but the probe must carry.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    pub fn url(&self) -> Option<String> {
        self.url.get().cloned()
    }

    /// Records the address the listener answers on and publishes it in the lease.
    pub(crate) fn publish(&self, url: String) -> std::io::Result<bool> {
        let _ = self.url.set(url.clone());
        let mut lease = self.lease.lock().unwrap_or_else(|p| p.into_inner());
        match lease.as_mut() {
            Some(handle) => handle.publish_url(&url),
            None => Ok(false),
        }
    }

    pub fn is_leaseholder(&self) -> bool {
        self.leaseholder.load(Ordering::SeqCst)
    }

    /// Re-reads the lease file; once another process has taken it over this server never
    /// touches it again and says `leaseholder: false`.
    pub(crate) fn recheck_lease(&self) -> bool {
        if !self.is_leaseholder() {
            return false;
        }
        let mut lease = self.lease.lock().unwrap_or_else(|p| p.into_inner());
        let ours = lease.as_ref().is_some_and(|handle| handle.still_ours());
        if !ours {
            lease.take();
            self.leaseholder.store(false, Ordering::SeqCst);
            tracing::warn!(
                "another process took this checkout's lease over; serving existing sessions only"
            );
        }
        ours
    }

    /// Removes the lease if it is still ours (the ordered stop).
    pub(crate) fn release_lease(&self) -> bool {
        let handle = self.lease.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.leaseholder.store(false, Ordering::SeqCst);
        handle.is_some_and(|handle| handle.release())
    }

    /// This server's standing as it knows it from memory.
    pub fn own_standing(&self) -> ServerStanding {
        if self.is_leaseholder() && self.url().is_some() {
            ServerStanding::Ready
        } else if self.is_leaseholder() {
            ServerStanding::Starting
        } else {
            ServerStanding::Stale
        }
    }

    pub fn own_standing_reason(&self) -> Option<String> {
        match self.own_standing() {
            ServerStanding::Starting => Some("this server has not published its address yet".into()),
            ServerStanding::Stale => Some(
                "another process took this checkout's lease over; this one only finishes the sessions it has".into(),
            ),
            _ => None,
        }
    }

    pub fn attached_peers(&self) -> usize {
        self.board().attached_count()
    }

    pub fn board_peers(&self, now: SystemTime) -> Vec<Peer> {
        self.board().peers(now)
    }

    /// A new connection joins the board. A worker that comes back (after its session was lost
    /// or its server replaced) retires its former slot, so it is never listed twice nor told
    /// that it overlaps itself; it announces its claims again right after.
    pub(crate) fn attach(
        &self,
        transport: Transport,
        client: ClientInfo,
        worker: Option<&str>,
    ) -> PeerId {
        let mut board = self.board();
        let id = board.attach(transport, client, SystemTime::now());
        if let Some(worker) = worker {
            let mut workers = self.workers.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(former) = workers.insert(worker.to_string(), id.clone()) {
                board.retire(&former);
                tracing::info!(peer = %id, former = %former, "a worker came back; its former slot is retired");
            }
        }
        drop(board);
        tracing::info!(peer = %id, ?transport, "peer attached");
        self.peers_changed.notify_waiters();
        self.federation.board_changed();
        id
    }

    /// Every message of a connection refreshes its peer and its episode.
    pub(crate) fn touch(&self, peer: &PeerId) {
        let now = SystemTime::now();
        self.board().touch(peer, now);
        self.touch_episode(peer, now);
    }

    /// A connection went away: its peer departs (or is forgotten when it claimed nothing) and
    /// its episode waits for its client to come back.
    pub(crate) fn connection_lost(&self, peer: &PeerId) {
        self.board().detach(peer);
        self.episode_connection_lost(peer);
        tracing::info!(peer = %peer, "peer left");
        self.peers_changed.notify_waiters();
        self.federation.board_changed();
    }

    pub(crate) fn announce(
        &self,
        caller: &PeerId,
        input: AnnounceInput,
        now: SystemTime,
    ) -> Result<Announced, CapabilityError> {
        use majordomus_domain::board::AnnounceError;
        let announced = self
            .board()
            .announce(caller, input, now)
            .map_err(|error| match error {
                AnnounceError::InvalidInput(error) => {
                    CapabilityError::invalid_input(error.to_string())
                }
                AnnounceError::NotFound(error) => CapabilityError::not_found(error.to_string()),
            })?;
        self.note_claims(caller, &announced);
        self.federation.board_changed();
        Ok(announced)
    }

    /// The `initialize` instructions: what the board is for, the caller's id, who else is here.
    pub(crate) fn instructions(&self, me: &PeerId) -> String {
        majordomus_domain::briefing::instructions(me, &self.board_peers(SystemTime::now()))
    }
}
