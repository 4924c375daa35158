//! The board's changes as they happen: a small event bus the board's mutations publish to
//! (under the board's lock, so the events come in the board's order), and what reads it —
//! the Server-Sent Events route `/api/v1/events`, the MCP sessions' notifications — and the
//! following of sibling worktrees' streams, which keeps their boards in memory.
//!
//! Publishing never waits and never grows anything without bound: the backlog is a ring
//! (at most [`BACKLOG_EVENTS`] events and [`BACKLOG_BYTES`] bytes), every subscriber has a
//! buffer of [`SUBSCRIBER_BUFFER`] events and is dropped, with a last event saying so, when
//! it fills; at most [`MAX_SUBSCRIBERS`] streams are open at once.
//!
//! Adding a kind of event is one variant of [`Change`] and one call where the board changes.

mod feed;
mod overlaps;
mod siblings;

pub use feed::SessionFeed;
pub(crate) use siblings::{Siblings, follow as follow_siblings};

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use majordomus_domain::board::{PeerBoard, ReleasedClaims};
use majordomus_domain::checkouts::Checkouts;
use majordomus_domain::limits;
use majordomus_domain::peers::{
    Announced, Announcement, ClientInfo, OverlapPath, PeerCheckout, PeerId, Transport,
};
use majordomus_domain::sync::LockExt;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};

use self::overlaps::OverlapTracker;
use super::ServerState;
use crate::api::{ErrorKind, Rejection};
use crate::context::Site;

/// How many events the backlog keeps for streams that resume with `Last-Event-ID`.
pub const BACKLOG_EVENTS: usize = 1024;
/// How many bytes of events the backlog keeps at most, whatever their number.
pub const BACKLOG_BYTES: usize = 4 * 1024 * 1024;
/// How many events wait for one stream before it is dropped as too slow.
pub const SUBSCRIBER_BUFFER: usize = 256;
/// How many event streams a server serves at once.
pub const MAX_SUBSCRIBERS: usize = 128;
/// How many overlap notices wait for one MCP session before newer ones are dropped.
pub const PEER_NOTICES: usize = 16;
/// The largest event, in bytes of JSON; a sibling's event over it is not re-emitted.
pub const MAX_EVENT_BYTES: usize = 64 * 1024;
/// How often an idle stream gets a comment, so proxies and clients see it is alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The shortest span between `alive` events a stream may ask for (`alive_ms`).
const MIN_ALIVE: Duration = Duration::from_millis(10);
/// How long an `EventSource` waits before reconnecting, as the stream tells it.
const RETRY_MS: u64 = 1000;

/// One change of a board, as its event's JSON says it (with `kind` the variant's name).
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change<'a> {
    /// A connection joined the board.
    Attached {
        peer: &'a PeerId,
        client: &'a ClientInfo,
        transport: Transport,
    },
    /// A connection went away; a peer that held claims stays on the board, marked left.
    Left { peer: &'a PeerId, claims_kept: bool },
    /// A peer is no longer on the board at all.
    Removed { peer: &'a PeerId, reason: String },
    /// A peer announced a claim (its paths sampled, the rest counted).
    Announced {
        peer: &'a PeerId,
        claim: ClaimSample<'a>,
    },
    /// A re-announced claim stopped claiming these paths.
    Released {
        peer: &'a PeerId,
        #[serde(skip_serializing_if = "Option::is_none")]
        claim: Option<&'a str>,
        paths: &'a [String],
        #[serde(skip_serializing_if = "is_zero")]
        more_paths: usize,
    },
    /// Two peers' claims began to meet; `paths` pairs `peer`'s paths (`yours`) with `with`'s
    /// (`theirs`).
    OverlapBegan {
        peer: &'a PeerId,
        with: &'a PeerId,
        intent: &'a str,
        with_intent: &'a str,
        paths: &'a [OverlapPath],
        #[serde(skip_serializing_if = "is_zero")]
        more_paths: u32,
    },
    /// No claim of the two peers meets any more.
    OverlapEnded { peer: &'a PeerId, with: &'a PeerId },
    /// A sibling worktree's stream is followed from now on: re-read its board.
    SiblingReached,
    /// A sibling worktree's stream could not be followed or was lost: re-read its board.
    SiblingLost { reason: &'a str },
    /// A lease of the repository was asked for, handed on or let go through this server:
    /// who holds it now (none: nobody) and how many wait.
    Lease {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        holder: Option<&'a str>,
        queued: usize,
    },
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// A claim as an event carries it: its first paths and how many more there are, so no event
/// grows with a scope.
#[derive(Debug, Serialize)]
pub struct ClaimSample<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    pub intent: &'a str,
    pub scope: &'a [String],
    #[serde(skip_serializing_if = "is_zero")]
    pub more_paths: usize,
}

impl<'a> ClaimSample<'a> {
    fn of(claim: &'a Announcement) -> Self {
        let (scope, more_paths) = sample(&claim.scope);
        ClaimSample {
            name: claim.name.as_deref(),
            intent: &claim.intent,
            scope,
            more_paths,
        }
    }
}

fn sample(paths: &[String]) -> (&[String], usize) {
    let shown = paths.len().min(limits::OVERLAP_PATH_PAIRS);
    (&paths[..shown], paths.len() - shown)
}

/// The envelope of every board event: which checkout's board changed, and how.
#[derive(Serialize)]
struct Envelope<'a> {
    checkout: &'a PeerCheckout,
    #[serde(flatten)]
    change: Change<'a>,
}

/// One event as the backlog keeps it and the streams send it.
#[derive(Debug)]
pub struct Event {
    /// Increasing over the server's life; see [`EventBus::new`] for where it starts.
    pub id: u64,
    /// Whether it is a change of this checkout's board (not a sibling's).
    pub local: bool,
    /// The JSON body.
    pub data: String,
}

/// A notice to one MCP session's client: a new overlap with another peer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OverlapNotice {
    /// One line for a person.
    pub message: String,
    /// The peer whose announcement made the overlap.
    pub peer: PeerId,
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

struct Inner {
    next_id: u64,
    backlog: VecDeque<Arc<Event>>,
    backlog_bytes: usize,
    subscribers: Vec<Subscriber>,
    notices: HashMap<PeerId, mpsc::Sender<OverlapNotice>>,
    overlaps: OverlapTracker,
}

struct Subscriber {
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
    opening: Vec<Opening>,
    receiver: mpsc::Receiver<Arc<Event>>,
    fell_behind: Arc<AtomicBool>,
}

/// The first events of a stream, before the live ones.
enum Opening {
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

    /// A peer attached; the caller holds the board's lock.
    pub(crate) fn attached(&self, board: &PeerBoard, peer: &PeerId) {
        let Some(view) = board.peer(peer, SystemTime::now()) else {
            return;
        };
        let mut inner = self.inner();
        self.publish_local(
            &mut inner,
            Change::Attached {
                peer,
                client: &view.client,
                transport: view.transport,
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
        for claim in &view.claims {
            inner
                .overlaps
                .announce(peer, claim.name.as_deref(), &claim.scope);
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
        self.publish_local(&mut inner, Change::Left { peer, claims_kept });
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
    pub(crate) fn expired(&self, released: &[ReleasedClaims]) {
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
                peer,
                reason: reason.to_string(),
            },
        );
        for partner in &ended {
            self.publish_local(
                inner,
                Change::OverlapEnded {
                    peer,
                    with: partner,
                },
            );
        }
    }

    /// A peer announced; the caller holds the board's lock. Publishes the announcement, the
    /// paths it released, and the overlaps it began and ended, and tells each peer whose
    /// claim it newly meets.
    pub(crate) fn announced(&self, announced: &Announced) {
        let Some(claim) = &announced.peer.announcement else {
            return;
        };
        let peer = &announced.peer.id;
        let mut inner = self.inner();
        let delta = inner
            .overlaps
            .announce(peer, claim.name.as_deref(), &claim.scope);
        self.publish_local(
            &mut inner,
            Change::Announced {
                peer,
                claim: ClaimSample::of(claim),
            },
        );
        if !announced.released.is_empty() {
            let (paths, more_paths) = sample(&announced.released);
            self.publish_local(
                &mut inner,
                Change::Released {
                    peer,
                    claim: claim.name.as_deref(),
                    paths,
                    more_paths,
                },
            );
        }
        for with in &delta.began {
            // A new overlap is always one the announced claim makes, so the answer lists it.
            let Some(overlap) = announced.overlaps.iter().find(|o| &o.peer == with) else {
                continue;
            };
            self.publish_local(
                &mut inner,
                Change::OverlapBegan {
                    peer,
                    with,
                    intent: &claim.intent,
                    with_intent: &overlap.intent,
                    paths: &overlap.paths,
                    more_paths: overlap.more_paths,
                },
            );
            let notice = OverlapNotice {
                message: overlap_message(announced, claim, overlap),
                peer: peer.clone(),
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
            self.publish_local(&mut inner, Change::OverlapEnded { peer, with });
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
    fn publish_sibling(&self, data: String) {
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
    fn repository_streams(&self) -> usize {
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

/// Appends an event to the backlog and hands it to every stream it concerns; a stream whose
/// buffer is full is dropped (its stream ends with an event saying so).
fn publish(inner: &mut Inner, local: bool, data: String) -> u64 {
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

fn overlap_message(
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
fn quoted(text: &str) -> String {
    majordomus_domain::text::sanitized(text, 40)
}

/// The query of `/api/v1/events`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StreamQuery {
    #[serde(default)]
    checkouts: Checkouts,
    /// The token may ride in the query; the guard has checked it.
    #[serde(default, rename = "token")]
    _token: Option<String>,
    /// Asks for an `alive` event whenever nothing was sent for this many milliseconds (at
    /// least 10, at most the 15 s of the keep-alive comment it then replaces): a follower
    /// tells a quiet server from a hung one by them.
    #[serde(default)]
    alive_ms: Option<u64>,
}

/// `GET /api/v1/events`: the board's changes as Server-Sent Events.
pub(crate) async fn stream(
    State(state): State<Arc<ServerState>>,
    query: Result<Query<StreamQuery>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
) -> Response {
    let Query(query) = match query {
        Ok(query) => query,
        Err(rejection) => {
            return super::http::error_response(
                StatusCode::BAD_REQUEST,
                ErrorKind::InvalidInput.as_str(),
                format!(
                    "{}; the parameters are `checkouts` (`this` or `repository`) and `alive_ms`",
                    rejection.body_text()
                ),
            );
        }
    };
    let last_seen = headers
        .get("last-event-id")
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    let subscription = match state
        .events
        .subscribe(query.checkouts, last_seen.as_deref())
    {
        Ok(subscription) => subscription,
        Err(full) => {
            let mut refusal = super::http::error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                Rejection::Unavailable.as_str(),
                full.to_string(),
            );
            refusal
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return refusal;
        }
    };
    if query.checkouts != Checkouts::This {
        state.events.siblings.wake();
    }
    let keep_alive = match query.alive_ms {
        Some(ms) => KeepAlive::new()
            .interval(Duration::from_millis(ms).clamp(MIN_ALIVE, KEEP_ALIVE))
            .event(SseEvent::default().data(serde_json::json!({"kind": "alive"}).to_string())),
        None => KeepAlive::new().interval(KEEP_ALIVE),
    };
    let events = sse_events(subscription).take_until(state.shutdown.clone().cancelled_owned());
    let mut response = Sse::new(events).keep_alive(keep_alive).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn sse_events(subscription: Subscription) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    let Subscription {
        opening,
        receiver,
        fell_behind,
    } = subscription;
    let first = futures::stream::iter(opening.into_iter().enumerate().map(|(at, opening)| {
        let event = match opening {
            Opening::Ready { head } => stream_event(head, serde_json::json!({"kind": "ready"})),
            Opening::Resync { head, reason } => stream_event(
                head,
                serde_json::json!({"kind": "resync", "reason": format!("{reason}; re-read the board")}),
            ),
            Opening::Missed(event) => SseEvent::default()
                .id(event.id.to_string())
                .data(&event.data),
        };
        Ok(if at == 0 { event.retry(Duration::from_millis(RETRY_MS)) } else { event })
    }));
    let live = tokio_stream_of(receiver).map(|event| {
        Ok(SseEvent::default()
            .id(event.id.to_string())
            .data(&event.data))
    });
    let last = futures::stream::once(async move { fell_behind.load(Ordering::SeqCst) })
        .filter_map(|fell_behind| async move {
            fell_behind.then(|| {
                Ok(SseEvent::default().data(
                    serde_json::json!({
                        "kind": "dropped",
                        "reason": format!(
                            "this stream fell {SUBSCRIBER_BUFFER} events behind and was dropped; reconnect with Last-Event-ID to resume"
                        ),
                    })
                    .to_string(),
                ))
            })
        });
    first.chain(live).chain(last)
}

fn stream_event(head: u64, body: serde_json::Value) -> SseEvent {
    SseEvent::default()
        .id(head.to_string())
        .data(body.to_string())
}

fn tokio_stream_of<T>(mut receiver: mpsc::Receiver<T>) -> impl Stream<Item = T> {
    futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))
}

/// An event as a reader of a stream receives it.
#[derive(Debug, Clone)]
pub struct ReceivedEvent {
    /// Its id, when it has one; what `Last-Event-ID` resumes from.
    pub id: Option<String>,
    /// Its JSON body.
    pub body: serde_json::Value,
}

/// Reads an event stream's body: its events in order, each parsed as JSON. An event over
/// [`MAX_EVENT_BYTES`] (bytes since the last blank line) or a body that is not a stream of
/// JSON events ends it with an error, so a misbehaving server cannot grow this process.
pub fn read_stream(
    response: reqwest::Response,
) -> impl Stream<Item = Result<ReceivedEvent, String>> + Send + Unpin {
    let bounded = futures::stream::unfold(
        (response, EventBound::default()),
        |(mut response, mut bound)| async move {
            match response.chunk().await {
                Ok(Some(chunk)) => match bound.admit(&chunk) {
                    Ok(()) => Some((Ok(chunk), (response, bound))),
                    Err(error) => Some((Err(error), (response, bound))),
                },
                Ok(None) => None,
                Err(error) => Some((
                    Err(std::io::Error::other(format!("the stream broke: {error}"))),
                    (response, bound),
                )),
            }
        },
    );
    let parsed = sse_stream::SseStream::from_bytes_stream(Box::pin(bounded));
    Box::pin(
        parsed
            .filter_map(|item| async move {
                match item {
                    Err(error) => Some(Err(format!("it is not a stream of events: {error}"))),
                    Ok(sse) => {
                        let data = sse.data?;
                        Some(
                            serde_json::from_str(&data)
                                .map(|body| ReceivedEvent { id: sse.id, body })
                                .map_err(|error| {
                                    format!("it sent an event that is not JSON: {error}")
                                }),
                        )
                    }
                }
            })
            .scan(false, |failed, item| {
                // The first error ends the stream: nothing after it can be trusted.
                let pass = if *failed { None } else { Some(item) };
                if matches!(pass, Some(Err(_))) {
                    *failed = true;
                }
                futures::future::ready(pass)
            }),
    )
}

/// Counts the bytes of the event being received.
#[derive(Default)]
struct EventBound {
    since_blank_line: usize,
    last_was_newline: bool,
}

impl EventBound {
    fn admit(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        for &byte in chunk {
            if byte == b'\n' && self.last_was_newline {
                self.since_blank_line = 0;
            } else {
                self.since_blank_line += 1;
            }
            self.last_was_newline = byte == b'\n';
            if self.since_blank_line > MAX_EVENT_BYTES + 1024 {
                return Err(std::io::Error::other(format!(
                    "it sent an event over {MAX_EVENT_BYTES} bytes"
                )));
            }
        }
        Ok(())
    }
}
