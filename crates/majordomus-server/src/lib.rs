//! The serving process: its state (boards, lease) and the transports that reach it.

mod attention;
mod browsers;
pub mod dashboard;
mod episodes;
pub mod events;
mod gather;
mod handoff;
mod handover;
mod handover_state;
mod hook_sessions;
pub mod http;
pub mod listen;
pub mod mcp;
mod parking;
mod port;
pub mod run;
mod sessions;
pub mod stops;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Instant, SystemTime};

use majordomus_checkout::ancestry::ProcessStamp;
use majordomus_checkout::lease::{LeaseHandle, LeaseView};
use majordomus_domain::board::{CheckedAnnouncement, Recorded};
use majordomus_domain::checkouts::ServerStanding;
use majordomus_domain::coordination::{Coordination, Release};
use majordomus_domain::paths::ClaimPath;
use majordomus_domain::peers::{ClientInfo, Peer, PeerId, Transport};
use majordomus_domain::sync::LockExt;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use hook_sessions::ClientProcess;
use majordomus_core::api::CapabilityError;
use majordomus_core::context::Site;
use majordomus_core::episodes::Recorder;
use majordomus_core::port::KeptSlot;
use majordomus_federation::Federation;
use stops::StopRequests;

/// A connection's claim to be a worker that outlives its sessions.
#[derive(Clone, Copy, Debug)]
pub struct Worker<'a> {
    /// The identity a `majordomus mcp` process gives itself for its whole life.
    pub identity: &'a str,
    /// Whether its client reaches this server through that process as a bridge, rather than
    /// being served by this process itself.
    pub bridged: bool,
}

/// Which peer each worker holds now, and when each bridged one was last heard from.
#[derive(Default)]
struct Workers {
    by_identity: HashMap<String, WorkerSlot>,
    /// Bridged peers still attached, by when their connection last sent a message.
    heard: HashMap<PeerId, Instant>,
    /// Bridged peers let go for their silence whose session has not ended yet.
    silenced: HashSet<PeerId>,
}

#[derive(Clone, Debug)]
struct WorkerSlot {
    peer: PeerId,
    bridged: bool,
}

/// Everything one serving process holds in memory.
pub struct ServerState {
    pub site: Arc<Site>,
    /// The peers and the episodes they hold, under one lock: the rules that span both are
    /// the aggregate's, and its driver reports onto the episodes from its own thread.
    coordination: Arc<Mutex<Coordination>>,
    pub(crate) recorder: Recorder,
    /// The connections that named the worker behind them, and when the bridged ones were
    /// last heard from.
    workers: Mutex<Workers>,
    lease: Mutex<Option<LeaseHandle>>,
    lease_view: LeaseView,
    token: String,
    url: OnceLock<String>,
    leaseholder: AtomicBool,
    /// Cancelled when the ordered stop begins.
    pub shutdown: CancellationToken,
    /// The server's own background tasks (housekeeping, following siblings, letting quiet
    /// hook sessions go): each ends on `shutdown`, and the stop waits for them.
    pub(crate) tasks: TaskTracker,
    /// Cancelled once another process has taken the lease over: whoever serves a client
    /// through this server moves it to the new one.
    pub stepped_down: CancellationToken,
    /// The process's stop requests: `serve stop`'s request to this server
    /// (`POST /api/v1/server/stop` with the lease's token) asks the process to stop in
    /// order, as a signal would on Unix, the same way on every platform.
    pub(crate) stops: StopRequests,
    /// Woken whenever a peer attaches or leaves, so the lifetime watcher need not poll.
    pub(crate) peers_changed: tokio::sync::Notify,
    /// Every change of the board, published under the board's lock.
    pub(crate) events: Arc<events::EventBus>,
    /// The dashboard's one-time tickets and its browsers' cookies.
    pub(crate) dashboard: browsers::Access,
    /// The client sessions named by hooks and MCP connections, by the client's own id.
    sessions: Mutex<hook_sessions::HookSessions>,
    /// This server's link to other machines' boards; off unless configured.
    pub federation: Federation,
    /// The MCP-over-HTTP sessions, and the idle ones parked.
    pub(crate) parking: Arc<parking::Parking>,
    /// This board's own listing as last encoded, served again until the board changes.
    pub(crate) listing: KeptSlot,
    /// The claims handed to the next server of the checkout should this process end.
    handover: handover_state::HandOver,
    /// The edits the guard stopped once by a speed bump, which pass when repeated soon.
    speed_bumps: Mutex<majordomus_core::port::SpeedBumps>,
}

impl ServerState {
    pub fn new(site: Arc<Site>, lease: LeaseHandle, stops: StopRequests) -> Arc<Self> {
        let root = site.checkout.root.display().to_string();
        let grace = site.config.timings.reattach_grace();
        let coordination = Arc::new(Mutex::new(Coordination::new(root, grace)));
        let shutdown = CancellationToken::new();
        let federation = Federation::new(&site.config.federation, shutdown.child_token());
        Arc::new_cyclic(|this: &Weak<ServerState>| {
            let this = this.clone();
            let entitled = Box::new(move || {
                this.upgrade()
                    .is_some_and(|state| state.recheck_lease_blocking())
            });
            let recorder = Recorder::start(&site, coordination.clone(), entitled);
            ServerState {
                coordination,
                recorder,
                lease_view: lease.lease().redacted(),
                token: lease.lease().token.clone(),
                workers: Mutex::new(Default::default()),
                lease: Mutex::new(Some(lease)),
                url: OnceLock::new(),
                leaseholder: AtomicBool::new(true),
                shutdown,
                tasks: TaskTracker::new(),
                stepped_down: CancellationToken::new(),
                stops,
                peers_changed: tokio::sync::Notify::new(),
                events: Arc::new(events::EventBus::new(&site)),
                dashboard: browsers::Access::default(),
                sessions: Mutex::new(Default::default()),
                speed_bumps: Mutex::new(Default::default()),
                federation,
                parking: Arc::new(parking::Parking::new(
                    site.config.timings.session_park(),
                    site.config.timings.idle_timeout(),
                )),
                listing: KeptSlot::default(),
                handover: Default::default(),
                site,
            }
        })
    }

    /// The peers and their episodes. Nothing else is locked while it is held but the
    /// workers and the event bus, always after it.
    pub(crate) fn coordination(&self) -> MutexGuard<'_, Coordination> {
        self.coordination.lock_or_recover()
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
        let mut lease = self.lease.lock_or_recover();
        match lease.as_mut() {
            Some(handle) => handle.publish_url(&url),
            None => Ok(false),
        }
    }

    pub fn is_leaseholder(&self) -> bool {
        self.leaseholder.load(Ordering::SeqCst)
    }

    /// Whether this server still holds the lease, asked of the file on a blocking thread (a
    /// `stat`, and a read when the file changed): once another process has taken it over
    /// this server never touches it again and says `leaseholder: false`.
    pub async fn recheck_lease(self: &Arc<Self>) -> bool {
        if !self.is_leaseholder() {
            return false;
        }
        let state = self.clone();
        tokio::task::spawn_blocking(move || state.recheck_lease_blocking())
            .await
            .unwrap_or_else(|_| self.is_leaseholder())
    }

    fn recheck_lease_blocking(&self) -> bool {
        if !self.is_leaseholder() {
            return false;
        }
        let mut lease = self.lease.lock_or_recover();
        let ours = lease.as_mut().is_some_and(|handle| handle.recheck());
        if !ours {
            lease.take();
            self.leaseholder.store(false, Ordering::SeqCst);
            self.stepped_down.cancel();
            tracing::info!(
                "another process took this checkout's lease over; serving existing sessions only"
            );
        }
        ours
    }

    /// Removes the lease if it is still ours (the ordered stop).
    pub(crate) fn release_lease(&self) -> bool {
        let handle = self.lease.lock_or_recover().take();
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
        self.coordination().peers().attached_count()
    }

    pub fn board_peers(&self, now: SystemTime) -> Vec<Peer> {
        let mut coordination = self.coordination();
        self.expire_claims_under(&mut coordination, now);
        coordination.peers().peers(now)
    }

    /// [`Self::board_peers`] for the peers with a claim meeting one of `paths`.
    pub fn board_peers_meeting(&self, paths: &[ClaimPath], now: SystemTime) -> Vec<Peer> {
        let mut coordination = self.coordination();
        self.expire_claims_under(&mut coordination, now);
        coordination.peers().peers_meeting(paths, now)
    }

    /// [`Self::board_peers`] for the one peer `id`.
    pub fn board_peer(&self, id: &PeerId, now: SystemTime) -> Option<Peer> {
        let mut coordination = self.coordination();
        self.expire_claims_under(&mut coordination, now);
        coordination.peers().peer(id, now)
    }

    /// Releases the claims of peers that left longer than the claim grace ago, recording
    /// each release under the episode the peer held.
    pub(crate) fn expire_claims(&self, now: SystemTime) {
        self.expire_claims_under(&mut self.coordination(), now);
    }

    /// [`Self::expire_claims`] for a caller already holding the coordination, so that what
    /// it does next meets no claim whose grace ran out.
    fn expire_claims_under(&self, coordination: &mut Coordination, now: SystemTime) {
        let released = coordination.expire(now, self.site.config.timings.claim_grace());
        if released.is_empty() {
            return;
        }
        self.events
            .expired(released.iter().map(|release| &release.claims));
        self.record_released(released, now);
        self.claims_changed();
    }

    /// Queues released claims for the journal of the episode their peer held, under the
    /// coordination's lock, so the journal hears of them in the board's order.
    fn record_released(&self, released: Vec<Release>, now: SystemTime) {
        for Release { claims, episode } in released {
            tracing::info!(peer = %claims.peer, claims = claims.claims.len(), "claims released");
            if let Some(episode) = episode {
                self.recorder.released(&episode, claims.claims, now);
            }
        }
    }

    /// A new connection joins the board. A worker that comes back (after its session was lost
    /// or its server replaced) takes over its former slot's claims and the slot goes, so it
    /// is never listed twice nor told that it overlaps itself; it announces its claims again
    /// right after, which replaces them. A bridged worker is held to pinging: silent for the
    /// bridge silence, it is let go. The client `process` it runs for, if it names one, is
    /// held in the same step as the peer appears, so that no hook of that client ever finds
    /// the peer on the board without finding it its own. Public for the benchmark, which
    /// calls the capabilities in its own process as an attached peer.
    #[doc(hidden)]
    pub fn attach(
        &self,
        transport: Transport,
        client: ClientInfo,
        worker: Option<Worker<'_>>,
        process: Option<ProcessStamp>,
    ) -> PeerId {
        let living = process.and_then(ClientProcess::living);
        let mut sessions = self.sessions();
        let mut coordination = self.coordination();
        let now = SystemTime::now();
        let board = coordination.peers_mut();
        let id = board.attach(transport, client, now);
        if let Some(living) = living {
            sessions.hold(&id, living, board, now);
        }
        drop(sessions);
        self.events.attached(board, &id);
        if let Some(worker) = worker {
            let mut workers = self.workers();
            let slot = WorkerSlot {
                peer: id.clone(),
                bridged: worker.bridged,
            };
            if let Some(former) = workers
                .by_identity
                .insert(worker.identity.to_string(), slot)
            {
                let claims = board.adopt(&former.peer, &id);
                self.events.retired(&former.peer, &id);
                workers.heard.remove(&former.peer);
                tracing::info!(peer = %id, former = %former.peer, claims, "a worker came back and took its claims over");
            }
            if worker.bridged {
                workers.heard.insert(id.clone(), Instant::now());
            }
        }
        drop(coordination);
        tracing::info!(peer = %id, ?transport, "peer attached");
        self.board_changed();
        id
    }

    /// Tells whoever follows the board that it changed: the lifetime watcher (someone may
    /// have attached or left), the federation (it republishes) and the hand-over (it writes
    /// again).
    pub(crate) fn board_changed(&self) {
        self.peers_changed.notify_waiters();
        self.federation.board_changed();
        self.handover.board_changed();
    }

    /// Claims were announced or released, and nobody attached or left: only the federation,
    /// which publishes the claims, and the hand-over, which keeps them, are told. The watch
    /// for an idle server counts attached peers and is not woken for every announce.
    pub(crate) fn claims_changed(&self) {
        self.federation.board_changed();
        self.handover.board_changed();
    }

    fn workers(&self) -> MutexGuard<'_, Workers> {
        self.workers.lock_or_recover()
    }

    /// Every message of a connection refreshes its peer and its episode.
    pub(crate) fn touch(&self, peer: &PeerId) {
        let now = SystemTime::now();
        let mut coordination = self.coordination();
        coordination.peers_mut().touch(peer, now);
        coordination.episodes_mut().touch(peer, now);
        drop(coordination);
        if let Some(heard) = self.workers().heard.get_mut(peer) {
            *heard = Instant::now();
        }
    }

    /// A connection went away: its peer departs (or is forgotten when it claimed nothing) and
    /// its episode waits for its client to come back. Its `edits` claim goes with it: the
    /// files it edited show as the worktree's changes, and a lock on them would only refuse
    /// the next session; what it announced stays, departed, for the grace.
    pub(crate) fn connection_lost(&self, peer: &PeerId) {
        self.workers().heard.remove(peer);
        let now = SystemTime::now();
        {
            let mut coordination = self.coordination();
            let departure = coordination.depart(peer, majordomus_core::port::EDITS_CLAIM, now);
            self.events.left(coordination.peers(), peer);
            self.record_released(departure.released, now);
            if let Some(episode) = departure.detached {
                self.recorder.detached(&episode, now);
            }
        }
        tracing::info!(peer = %peer, "peer left");
        self.board_changed();
    }

    /// This process's MCP-over-HTTP sessions past their handshake: running, and parked.
    pub fn http_sessions(&self) -> (usize, usize) {
        self.parking.counts()
    }

    /// A connection ended: unless it was already let go for its silence, it is lost now.
    pub(crate) fn connection_closed(&self, peer: &PeerId) {
        if !self.workers().silenced.remove(peer) {
            self.connection_lost(peer);
        }
    }

    /// Whether the connection of `peer` was let go for its silence: its session may still
    /// exist, but its peer has left the board, so it must open a new session.
    pub(crate) fn was_silenced(&self, peer: &PeerId) -> bool {
        self.workers().silenced.contains(peer)
    }

    /// Lets go every bridged connection not heard from within the bridge silence: a bridge
    /// pings well within it, so a silent one is dead (killed, or its machine asleep) and its
    /// peer should not stay on the board until its session's idle timeout. The housekeeping
    /// calls it every second.
    pub(crate) fn let_silent_bridges_go(&self) {
        let silence = self.site.config.timings.bridge_silence();
        let silent: Vec<PeerId> = {
            let mut workers = self.workers();
            let silent: Vec<PeerId> = workers
                .heard
                .iter()
                .filter(|(_, heard)| heard.elapsed() >= silence)
                .map(|(peer, _)| peer.clone())
                .collect();
            for peer in &silent {
                workers.heard.remove(peer);
                workers.silenced.insert(peer.clone());
            }
            silent
        };
        for peer in silent {
            tracing::info!(peer = %peer, "a bridge went silent; its peer is let go");
            self.connection_lost(&peer);
        }
    }

    /// Forgets the workers whose peer is no longer on the board, so the map follows the
    /// board rather than every bridge that ever connected.
    pub(crate) fn forget_departed_workers(&self) {
        let coordination = self.coordination();
        let now = SystemTime::now();
        self.workers()
            .by_identity
            .retain(|_, slot| coordination.peers().peer(&slot.peer, now).is_some());
    }

    /// The peers on the board whose client reached this server through a bridge.
    pub fn bridged_peers(&self) -> HashSet<PeerId> {
        self.workers()
            .by_identity
            .values()
            .filter(|slot| slot.bridged)
            .map(|slot| slot.peer.clone())
            .collect()
    }

    /// The peers attached now.
    pub(crate) fn attached_peer_ids(&self) -> Vec<PeerId> {
        self.coordination()
            .peers()
            .peers(SystemTime::now())
            .into_iter()
            .filter(|peer| peer.attached)
            .map(|peer| peer.id)
            .collect()
    }

    /// Records a claim whose paths were resolved on disk, one per scope path, after
    /// releasing the claims whose grace ran out, so the answer never meets one of those.
    /// Public for the benchmark, which fills a board with claims it does not resolve.
    #[doc(hidden)]
    pub fn announce_resolved(
        &self,
        caller: &PeerId,
        announcement: CheckedAnnouncement,
        paths: Vec<ClaimPath>,
        now: SystemTime,
    ) -> Result<Recorded, CapabilityError> {
        let mut coordination = self.coordination();
        self.expire_claims_under(&mut coordination, now);
        let board = coordination.peers_mut();
        let recorded = board
            .announce_resolved(caller, announcement, paths, now)
            .map_err(CapabilityError::from)?;
        self.events.announced(&recorded);
        // An announce is the session moving on: whatever it waited for, it waits no more.
        if board.moved_on(caller) {
            self.events.waiting(caller, None);
        }
        self.note_claims(&coordination, caller, &recorded.announced, now);
        drop(coordination);
        self.claims_changed();
        Ok(recorded)
    }
}
