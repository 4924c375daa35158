//! The serving process: its state (boards, lease) and the transports that reach it.

pub mod http;
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
use crate::registry::CapabilityError;

/// Everything one serving process holds in memory.
pub struct ServerState {
    pub site: Arc<Site>,
    board: Mutex<PeerBoard>,
    pub(crate) episodes: Mutex<EpisodeBoard>,
    pub(crate) recorder: Recorder,
    lease: Mutex<Option<LeaseHandle>>,
    lease_view: LeaseView,
    token: String,
    url: OnceLock<String>,
    leaseholder: AtomicBool,
    /// Cancelled when the ordered stop begins.
    pub shutdown: CancellationToken,
    /// Woken whenever a peer attaches or leaves, so the lifetime watcher need not poll.
    pub(crate) peers_changed: tokio::sync::Notify,
}

impl ServerState {
    pub fn new(site: Arc<Site>, lease: LeaseHandle) -> Arc<Self> {
        let root = site.checkout.root.display().to_string();
        let grace = std::time::Duration::from_secs(site.config.timings.reattach_grace_secs);
        let recorder = Recorder::for_site(&site);
        Arc::new(ServerState {
            board: Mutex::new(PeerBoard::new(root)),
            episodes: Mutex::new(EpisodeBoard::new(grace)),
            recorder,
            lease_view: lease.lease().redacted(),
            token: lease.lease().token.clone(),
            lease: Mutex::new(Some(lease)),
            url: OnceLock::new(),
            leaseholder: AtomicBool::new(true),
            shutdown: CancellationToken::new(),
            peers_changed: tokio::sync::Notify::new(),
            site,
        })
    }

    pub(crate) fn board(&self) -> MutexGuard<'_, PeerBoard> {
        self.board.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn episode_board(&self) -> MutexGuard<'_, EpisodeBoard> {
        self.episodes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
            tracing::warn!("another process took this checkout's lease over; serving existing sessions only");
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

    /// A new connection joins the board.
    pub(crate) fn attach(&self, transport: Transport, client: ClientInfo) -> PeerId {
        let id = self.board().attach(transport, client, SystemTime::now());
        tracing::info!(peer = %id, ?transport, "peer attached");
        self.peers_changed.notify_waiters();
        id
    }

    /// Every message of a connection refreshes its peer and its episode.
    pub(crate) fn touch(&self, peer: &PeerId) {
        let now = SystemTime::now();
        self.board().touch(peer, now);
        self.episode_board().touch(peer, now);
    }

    /// A connection went away: its peer departs (or is forgotten when it claimed nothing) and
    /// its episode waits for its client to come back.
    pub(crate) fn connection_lost(&self, peer: &PeerId) {
        self.board().detach(peer);
        let detached = self.episode_board().connection_lost(peer, SystemTime::now());
        if let Some(episode) = detached {
            self.recorder.record_detached(self, &episode);
        }
        tracing::info!(peer = %peer, "peer left");
        self.peers_changed.notify_waiters();
    }

    pub(crate) fn announce(
        &self,
        caller: &PeerId,
        input: AnnounceInput,
        now: SystemTime,
    ) -> Result<Announced, CapabilityError> {
        use majordomus_domain::board::AnnounceError;
        let announced = self.board().announce(caller, input, now).map_err(|error| match error {
            AnnounceError::InvalidInput(message) => CapabilityError::invalid_input(message),
            AnnounceError::NotFound(message) => CapabilityError::not_found(message),
        })?;
        self.recorder.note_claims(self, caller, &announced);
        Ok(announced)
    }

    /// Closes the episodes whose client did not come back within the grace.
    pub(crate) fn reap_episodes(&self) {
        let _ = self.episode_board().reap(SystemTime::now());
    }

    /// Closes every episode: the server is stopping.
    pub(crate) fn close_all_episodes(&self) {
        let _ = self.episode_board().close_all(SystemTime::now());
    }

    /// The `initialize` instructions: what the board is for, the caller's id, who else is here.
    pub(crate) fn instructions(&self, me: &PeerId) -> String {
        let peers = self.board_peers(SystemTime::now());
        let others: Vec<String> = peers
            .iter()
            .filter(|peer| &peer.id != me && peer.attached)
            .map(|peer| {
                let claims: Vec<String> = peer
                    .claims
                    .iter()
                    .map(|claim| format!("{} [{}]", claim.intent, claim.scope.join(", ")))
                    .collect();
                if claims.is_empty() {
                    format!("{} ({}, no claim)", peer.id, peer.client.name)
                } else {
                    format!("{} ({}: {})", peer.id, peer.client.name, claims.join("; "))
                }
            })
            .collect();
        let others = if others.is_empty() {
            "Nobody else is attached to this checkout's board right now.".to_string()
        } else {
            format!("Also attached here: {}.", others.join(", "))
        };
        format!(
            "majordomus is the shared board of the agents working on this repository. You are \
             peer {me}. Call majordomus_announce with your intent and the paths you expect to \
             touch before you start, and majordomus_peers to see who works where across every \
             worktree and which claims collide. {others}"
        )
    }
}
