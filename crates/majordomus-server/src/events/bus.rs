//! The event bus the board's mutations publish to: the backlog ring, the subscribers, the
//! overlap notices of MCP sessions, and the siblings' boards kept from their streams.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use majordomus_capabilities::peers::wire::OverlapPath;
use majordomus_capabilities::wire::{self, PeerCheckout};
use majordomus_domain::board::{PeerBoard, Recorded, ReleasedClaims};
use majordomus_domain::checkouts::Checkouts;
use majordomus_domain::peers::{Announced, Announcement, PeerId, Waiting};
use majordomus_domain::sync::LockExt;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};

use super::overlaps::OverlapTracker;
use majordomus_core::context::Site;

use super::siblings::Siblings;
use super::wire::{Change, ClaimSample, Envelope, Event};

/// How many events the backlog keeps for streams that resume with `Last-Event-ID`.
pub(super) const BACKLOG_EVENTS: usize = 1024;
/// How many bytes of events the backlog keeps at most, whatever their number.
pub(super) const BACKLOG_BYTES: usize = 4 * 1024 * 1024;
/// How many events wait for one stream before it is dropped as too slow.
pub(super) const SUBSCRIBER_BUFFER: usize = 256;
/// How many event streams a server serves at once.
pub(super) const MAX_SUBSCRIBERS: usize = 128;
/// How many overlap notices wait for one MCP session before newer ones are dropped.
pub(super) const PEER_NOTICES: usize = 16;
/// How often an idle stream gets a comment, so proxies and clients see it is alive.
pub(super) const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The shortest span between `alive` events a stream may ask for (`alive_ms`).
pub(super) const MIN_ALIVE: Duration = Duration::from_millis(10);
/// How long an `EventSource` waits before reconnecting, as the stream tells it.
pub(super) const RETRY_MS: u64 = 1000;

/// A notice to one MCP session's client: a new overlap with another peer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct OverlapNotice {
    /// One line for a person.
    pub message: String,
    /// The peer whose announcement made the overlap.
    pub peer: wire::PeerId,
    /// What that peer said its claim is for.
    pub intent: String,
    /// Pairs of paths that meet: `yours` is the notified peer's path.
    pub paths: Vec<OverlapPath>,
}

/// The event bus of one server.
pub struct EventBus {
    inner: Mutex<Inner>,
    /// The id of the latest change of this checkout's board, for the MCP sessions that
    /// subscribed to the board resource: a watch coalesces, so a slow session never queues.
    latest_local: watch::Sender<u64>,
    checkout: PeerCheckout,
    /// The siblings' boards this server keeps, and whether it is asked about them.
    pub(crate) siblings: Siblings,
}

pub(super) struct Inner {
    next_id: u64,
    backlog: VecDeque<Arc<Event>>,
    backlog_bytes: usize,
    subscribers: Vec<Subscriber>,
    notices: HashMap<PeerId, mpsc::Sender<OverlapNotice>>,
    overlaps: OverlapTracker,
}

pub(super) struct Subscriber {
    scope: Checkouts,
    sender: mpsc::Sender<Arc<Event>>,
    fell_behind: Arc<AtomicBool>,
}

/// Why a stream could not be opened.
#[derive(Debug, thiserror::Error)]
#[error(
    "this server already serves {MAX_SUBSCRIBERS} event streams, its limit; close one or try again later"
)]
pub struct TooManyStreams;

/// What a new stream starts with, and what it then follows.
pub struct Subscription {
    pub(super) opening: Vec<Opening>,
    pub(super) receiver: mpsc::Receiver<Arc<Event>>,
    pub(super) fell_behind: Arc<AtomicBool>,
}

/// The first events of a stream, before the live ones.
pub(super) enum Opening {
    /// A fresh stream: it is live from this id on; read the board now.
    Ready { head: u64 },
    /// A resumed stream that cannot be continued without loss: re-read the board.
    Resync { head: u64, reason: String },
    /// An event the resuming client missed.
    Missed(Arc<Event>),
}

impl EventBus {
    /// A bus for the server of `site`'s checkout. Its first id is the time it starts, in
    /// microseconds since 1970, so ids keep increasing across a restart of the server and a
    /// client resuming from the previous server's id is told to re-read, never replayed
    /// another server's events.
    pub fn new(site: &Site) -> Self {
        let first = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |since| since.as_micros() as u64);
        let checkout = PeerCheckout {
            id: site.checkout.id.clone(),
            worktree: site.checkout.root.display().to_string(),
            branch: site.checkout.branch.clone(),
            this_checkout: true,
            machine: None,
        };
        EventBus {
            inner: Mutex::new(Inner {
                next_id: first,
                backlog: VecDeque::new(),
                backlog_bytes: 0,
                subscribers: Vec::new(),
                notices: HashMap::new(),
                overlaps: OverlapTracker::new(site.checkout.root.display().to_string()),
            }),
            latest_local: watch::Sender::new(first - 1),
            checkout,
            siblings: Siblings::default(),
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock_or_recover()
    }

    /// A lease changed through this server (the table is the repository's, not the board's:
    /// nothing of the board is locked for it).
    pub fn lease_changed(&self, name: &str, holder: Option<&str>, queued: usize) {
        let mut inner = self.inner();
        self.publish_local(
            &mut inner,
            Change::Lease {
                name,
                holder,
                queued,
            },
        );
    }

    /// A peer's waiting for the person began or changed (`Some`), or ended (`None`); the
    /// caller holds the board's lock.
    pub(crate) fn waiting(&self, peer: &PeerId, waiting: Option<&Waiting>) {
        let mut inner = self.inner();
        let peer = peer.as_str();
        let change = match waiting {
            Some(waiting) => Change::Waiting {
                peer,
                waiting: waiting.clone().into(),
            },
            None => Change::WaitingOver { peer },
        };
        self.publish_local(&mut inner, change);
    }

    /// `peer`'s claim was handed to `to` and left `peer`; the caller holds the board's lock.
    pub(crate) fn handed_over(&self, peer: &PeerId, claim: &Announcement, to: &str) {
        let name = claim.name.as_deref().unwrap_or_default();
        let mut inner = self.inner();
        let delta = inner.overlaps.withdraw(peer, claim.name.as_deref());
        self.publish_local(
            &mut inner,
            Change::released(peer, claim.name.as_deref(), &claim.scope),
        );
        self.publish_local(
            &mut inner,
            Change::HandedOver {
                peer: peer.as_str(),
                claim: name,
                to,
            },
        );
        for with in &delta.ended {
            self.publish_local(&mut inner, ended(peer, with));
        }
    }

    /// A peer attached; the caller holds the board's lock.
    pub(crate) fn attached(&self, board: &PeerBoard, peer: &PeerId) {
        let Some(view) = board.peer(peer, SystemTime::now()) else {
            return;
        };
        let mut inner = self.inner();
        self.publish_local(
            &mut inner,
            Change::Attached {
                peer: peer.as_str(),
                client: view.client.into(),
                transport: view.transport.into(),
            },
        );
    }

    /// A departed peer the previous server of this checkout handed over was put back on the
    /// board; the caller holds the board's lock. Nothing is published (nobody can follow a
    /// board that does not answer yet); its claims are known from now on, so an announce
    /// meeting them begins an overlap and its removal ends it.
    pub(crate) fn restored(&self, board: &PeerBoard, peer: &PeerId) {
        let Some(view) = board.peer(peer, SystemTime::now()) else {
            return;
        };
        let mut inner = self.inner();
        for (claim, compared) in view.claims.iter().zip(board.compared_paths(peer)) {
            inner.overlaps.announce(peer, claim, &compared);
        }
        inner.overlaps.departed(peer);
    }

    /// A worker came back as `by`: its former slot `former` left the board, its claims
    /// taken over by `by`, which announces them again right after.
    pub(crate) fn retired(&self, former: &PeerId, by: &PeerId) {
        let mut inner = self.inner();
        self.remove(&mut inner, former, &format!("its worker came back as {by}"));
    }

    /// A peer's connection went away; the caller holds the board's lock, on which the peer
    /// may stay (it held claims) and the earliest departed peers may have been forgotten.
    pub(crate) fn left(&self, board: &PeerBoard, peer: &PeerId) {
        let claims_kept = board.peer(peer, SystemTime::now()).is_some();
        let mut inner = self.inner();
        if claims_kept {
            inner.overlaps.departed(peer);
        }
        self.publish_local(
            &mut inner,
            Change::Left {
                peer: peer.as_str(),
                claims_kept,
            },
        );
        for forgotten in inner
            .overlaps
            .forgotten(|id| board.peer(id, SystemTime::now()).is_some())
        {
            self.remove(
                &mut inner,
                &forgotten,
                "it left the longest ago of the departed peers the board keeps",
            );
        }
    }

    /// Departed peers' claims outlived their grace and were released: the peers left the
    /// board. The caller holds the board's lock.
    pub(crate) fn expired<'a>(&self, released: impl IntoIterator<Item = &'a ReleasedClaims>) {
        let mut inner = self.inner();
        for release in released {
            self.remove(
                &mut inner,
                &release.peer,
                "its claims outlived the claim grace after it left",
            );
        }
    }

    /// Publishes that `peer` left the board for `reason`, and the overlaps that ended with it.
    fn remove(&self, inner: &mut Inner, peer: &PeerId, reason: &str) {
        let ended = inner.overlaps.remove_peer(peer);
        self.publish_local(
            inner,
            Change::Removed {
                peer: peer.as_str(),
                reason: reason.to_string(),
            },
        );
        for partner in &ended {
            self.publish_local(inner, self::ended(peer, partner));
        }
    }

    /// A peer announced; the caller holds the board's lock. Publishes the announcement, the
    /// paths it released, and the overlaps it began and ended, and tells each peer whose
    /// claim it newly meets.
    pub(crate) fn announced(&self, recorded: &Recorded) {
        let announced = &recorded.announced;
        let Some(claim) = &announced.peer.announcement else {
            return;
        };
        let peer = &announced.peer.id;
        let mut inner = self.inner();
        let delta = inner.overlaps.announce(peer, claim, &recorded.paths);
        self.publish_local(
            &mut inner,
            Change::Announced {
                peer: peer.as_str(),
                claim: ClaimSample::of(claim),
            },
        );
        if !announced.released.is_empty() {
            self.publish_local(
                &mut inner,
                Change::released(peer, claim.name.as_deref(), &announced.released),
            );
        }
        // A new overlap is always one the announced claim makes, so the answer lists it:
        // each peer's first overlap, found once for all those begun, not searched for each.
        let mut first_overlap = HashMap::new();
        if !delta.began.is_empty() {
            for overlap in &announced.overlaps {
                first_overlap.entry(&overlap.peer).or_insert(overlap);
            }
        }
        for with in &delta.began {
            let Some(&overlap) = first_overlap.get(with) else {
                continue;
            };
            self.publish_local(
                &mut inner,
                Change::OverlapBegan {
                    peer: peer.as_str(),
                    with: with.as_str(),
                    intent: &claim.intent,
                    with_intent: &overlap.intent,
                    paths: overlap.paths.iter().cloned().map(Into::into).collect(),
                    more_paths: overlap.more_paths,
                },
            );
            let notice = OverlapNotice {
                message: overlap_message(announced, claim, overlap),
                peer: peer.clone().into(),
                intent: claim.intent.clone(),
                paths: overlap
                    .paths
                    .iter()
                    .map(|pair| OverlapPath {
                        yours: pair.theirs.clone(),
                        theirs: pair.yours.clone(),
                    })
                    .collect(),
            };
            if let Some(inbox) = inner.notices.get(with) {
                // A client that does not read its notices loses the newest, never the board.
                let _ = inbox.try_send(notice);
            }
        }
        for with in &delta.ended {
            self.publish_local(&mut inner, ended(peer, with));
        }
    }

    fn publish_local(&self, inner: &mut Inner, change: Change<'_>) {
        let data = serde_json::to_string(&Envelope {
            checkout: &self.checkout,
            change,
        })
        .expect("events serialise");
        let id = publish(inner, true, data);
        self.latest_local.send_replace(id);
    }

    /// Re-emits a sibling's event (its JSON object, already stamped with its checkout).
    pub(super) fn publish_sibling(&self, data: String) {
        publish(&mut self.inner(), false, data);
    }

    /// Opens a stream of `scope`'s events, resuming after `last_seen` when given.
    pub fn subscribe(
        &self,
        scope: Checkouts,
        last_seen: Option<&str>,
    ) -> Result<Subscription, TooManyStreams> {
        let mut inner = self.inner();
        inner.subscribers.retain(|s| !s.sender.is_closed());
        if inner.subscribers.len() >= MAX_SUBSCRIBERS {
            return Err(TooManyStreams);
        }
        let head = inner.next_id - 1;
        let opening = match last_seen.map(str::trim) {
            None | Some("") => vec![Opening::Ready { head }],
            Some(text) => match text.parse::<u64>() {
                Err(_) => vec![Opening::Resync {
                    head,
                    reason: format!("`{}` is not an event id of this server", quoted(text)),
                }],
                Ok(seen) if seen > head => vec![Opening::Resync {
                    head,
                    reason: format!(
                        "event {seen} is not one of this server's (it has sent up to {head}): it may have restarted"
                    ),
                }],
                Ok(seen) => {
                    let oldest = inner.backlog.front().map_or(head + 1, |e| e.id);
                    if seen + 1 < oldest {
                        vec![Opening::Resync {
                            head,
                            reason: format!(
                                "the events after {seen} are no longer kept (the oldest kept is {oldest})"
                            ),
                        }]
                    } else {
                        inner
                            .backlog
                            .iter()
                            .filter(|e| e.id > seen && (e.local || scope != Checkouts::This))
                            .cloned()
                            .map(Opening::Missed)
                            .collect()
                    }
                }
            },
        };
        let (sender, receiver) = mpsc::channel(SUBSCRIBER_BUFFER);
        let fell_behind = Arc::new(AtomicBool::new(false));
        inner.subscribers.push(Subscriber {
            scope,
            sender,
            fell_behind: fell_behind.clone(),
        });
        Ok(Subscription {
            opening,
            receiver,
            fell_behind,
        })
    }

    /// How many open streams cover the repository: while there are some, the siblings'
    /// streams are followed and their events re-emitted.
    pub(super) fn repository_streams(&self) -> usize {
        let inner = self.inner();
        inner
            .subscribers
            .iter()
            .filter(|s| s.scope != Checkouts::This && !s.sender.is_closed())
            .count()
    }

    /// Overlap notices for `peer`'s session, from now until the receiver is dropped.
    pub(crate) fn notices_for(&self, peer: &PeerId) -> mpsc::Receiver<OverlapNotice> {
        let (sender, receiver) = mpsc::channel(PEER_NOTICES);
        let mut inner = self.inner();
        inner.notices.retain(|_, inbox| !inbox.is_closed());
        inner.notices.insert(peer.clone(), sender);
        receiver
    }

    /// Changes of this checkout's board, coalesced: the receiver sees the latest id.
    pub(crate) fn local_changes(&self) -> watch::Receiver<u64> {
        self.latest_local.subscribe()
    }
}

/// That no claim of `peer` and `with` meets any more.
fn ended<'a>(peer: &'a PeerId, with: &'a PeerId) -> Change<'a> {
    Change::OverlapEnded {
        peer: peer.as_str(),
        with: with.as_str(),
    }
}

/// Appends an event to the backlog and hands it to every stream it concerns; a stream whose
/// buffer is full is dropped (its stream ends with an event saying so).
pub(super) fn publish(inner: &mut Inner, local: bool, data: String) -> u64 {
    let id = inner.next_id;
    inner.next_id += 1;
    let event = Arc::new(Event { id, local, data });
    inner.backlog_bytes += event.data.len();
    inner.backlog.push_back(event.clone());
    while inner.backlog.len() > BACKLOG_EVENTS || inner.backlog_bytes > BACKLOG_BYTES {
        match inner.backlog.pop_front() {
            Some(old) => inner.backlog_bytes -= old.data.len(),
            None => break,
        }
    }
    inner.subscribers.retain(|subscriber| {
        if !local && subscriber.scope == Checkouts::This {
            return true;
        }
        match subscriber.sender.try_send(event.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                subscriber.fell_behind.store(true, Ordering::SeqCst);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    });
    id
}

pub(super) fn overlap_message(
    announced: &Announced,
    claim: &Announcement,
    overlap: &majordomus_domain::peers::Overlap,
) -> String {
    let client = &announced.peer.client;
    let pairs: Vec<String> = overlap
        .paths
        .iter()
        .map(|pair| format!("{} (yours: {})", pair.yours, pair.theirs))
        .collect();
    let more = if overlap.more_paths > 0 {
        format!(" and {} more", overlap.more_paths)
    } else {
        String::new()
    };
    format!(
        "peer {} ({} {}) now claims {}{more} for \"{}\", which meets your claim \"{}\"",
        announced.peer.id,
        client.name,
        client.version,
        pairs.join(", "),
        claim.intent,
        overlap.intent,
    )
}

/// A client's `Last-Event-ID` as an answer may quote it: plain and short.
pub(super) fn quoted(text: &str) -> String {
    majordomus_domain::text::sanitized(text, 40)
}
