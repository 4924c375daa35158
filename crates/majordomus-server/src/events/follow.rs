//! Following the sibling worktrees: each live sibling's `/api/v1/events?checkouts=this` (only
//! ever `this`, so two servers never ask each other back) is read while this server is asked
//! about the repository — while a stream covering it is open, and for [`LINGER`](super::siblings::LINGER) after a
//! listing or announce last wanted a sibling's board.
//!
//! For the streams covering the repository, a sibling's events are re-emitted stamped with its
//! checkout. And its board — the `checkouts=this` listing its server answers — is kept in
//! memory: read when following begins, read again whenever an event says it changed and every
//! [`REFRESH`], and confirmed in between by the `alive` events the sibling sends while nothing
//! happens (asked for four times per bound). A listing or an announce takes a board from memory
//! only while it was confirmed within the bound (`Site::sibling_view_bound`) and its server
//! still runs; otherwise it asks the sibling as if nothing were kept, so a sibling that stopped
//! answering is reported unread, never listed from an old memory.
//!
//! Everything here is bounded by the worktrees: one follower per sibling, at most
//! [`MAX_FOLLOWED`], and a board is kept only while its follower runs. A follower ends when its
//! sibling's stream ends, breaks or falls silent, when the sibling's lease names another
//! server, when its worktree is gone, when nobody asked about the repository for [`LINGER`](super::siblings::LINGER),
//! and with the server.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use majordomus_checkout::git::Checkout;
use majordomus_checkout::lease::{LeaseWatch, lease_path};
use majordomus_domain::checkouts::Checkouts;
use majordomus_domain::sync::LockExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::bus::EventBus;
use super::siblings::{Following, Siblings};
use super::wire::{Change, Envelope, MAX_EVENT_BYTES, ReceivedEvent, read_stream};
use majordomus_capabilities::peers::{PeerListInput, PeersList};
use majordomus_capabilities::wire::{self, PeerCheckout};
use majordomus_core::context::{CHANGES_INTERVAL, Site};
use majordomus_core::survey;

/// How often the worktrees are looked at again for siblings to follow or let go.
const LOOK_AGAIN: Duration = Duration::from_secs(2);

/// How many siblings one server follows (or is trying to) at once; the listing still reads
/// every board.
pub(super) const MAX_FOLLOWED: usize = 64;

/// How often a followed board is read again though no event said it changed: what changes
/// without an event — the seconds since a peer was last seen or left, the worktree's changes
/// on disk — stays as true as a live read's, to about a second.
const REFRESH: Duration = CHANGES_INTERVAL;

/// The least time between two reads of a followed board that changed: a sibling at work
/// changes faster than it is worth reading, and each read costs both servers a listing.
/// Until the read, its board is marked outdated and a listing reads it live, so nothing
/// stale is served in between.
const REREAD_GAP: Duration = Duration::from_millis(20);

/// What following needs of the serving process: its checkout, the bus its streams read and
/// the siblings' boards are kept in, where its tasks run, and when it stops.
#[derive(Clone)]
pub(crate) struct Follow {
    pub(crate) site: Arc<Site>,
    pub(crate) events: Arc<EventBus>,
    pub(crate) tasks: TaskTracker,
    pub(crate) shutdown: CancellationToken,
}

/// Follows the siblings for as long as the server runs: started with it, it waits, costing
/// nothing, until a stream covering the repository opens or a listing wants a sibling's board,
/// and lets every sibling go again once neither has happened for a while.
pub(crate) fn follow(state: &Follow) {
    state.tasks.spawn(run(state.clone()));
}

async fn run(state: Follow) {
    let mut followed: HashMap<String, CancellationToken> = HashMap::new();
    loop {
        let wanted = state.events.repository_streams() > 0 || state.events.siblings.wanted_lately();
        if wanted {
            look(&state, &mut followed).await;
        } else {
            for (_, stop) in followed.drain() {
                stop.cancel();
            }
        }
        tokio::select! {
            _ = state.shutdown.cancelled() => break,
            _ = state.events.siblings.wake.notified() => {}
            _ = tokio::time::sleep(LOOK_AGAIN), if wanted => {}
        }
    }
}

/// Starts following the siblings not followed yet, and lets go of those whose follower ended
/// or whose worktree is gone.
async fn look(state: &Follow, followed: &mut HashMap<String, CancellationToken>) {
    let Ok(checkouts) = survey::covered_checkouts(&state.site, Checkouts::Repository).await else {
        return;
    };
    let siblings: Vec<Checkout> = checkouts
        .into_iter()
        .filter(|checkout| checkout.id != state.site.checkout.id)
        .collect();
    followed.retain(|id, stop| {
        let listed = siblings.iter().any(|checkout| &checkout.id == id);
        if !listed {
            stop.cancel();
        }
        listed && !stop.is_cancelled()
    });
    for checkout in siblings {
        if followed.contains_key(&checkout.id) {
            continue;
        }
        // A sibling without a live server lets its place go at once, so the places fill
        // with live ones over a few looks.
        if followed.len() >= MAX_FOLLOWED {
            break;
        }
        let stop = state.shutdown.child_token();
        followed.insert(checkout.id.clone(), stop.clone());
        state.tasks.spawn(follow_one(state.clone(), checkout, stop));
    }
}

/// Ends a follower's part, however it ends: its board is forgotten and its place freed.
struct Ending<'a> {
    siblings: &'a Siblings,
    checkout_id: String,
    follower: u64,
    stop: CancellationToken,
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        self.siblings.forget(&self.checkout_id, self.follower);
        self.stop.cancel();
    }
}

/// Follows one sibling until its stream ends or breaks, its lease names another server, or
/// the follower lets it go; cancels `stop` when it ends, so the next look starts it again if
/// the sibling is live.
async fn follow_one(state: Follow, checkout: Checkout, stop: CancellationToken) {
    let siblings = &state.events.siblings;
    let follower = siblings.followers.fetch_add(1, Ordering::Relaxed);
    let _ending = Ending {
        siblings,
        checkout_id: checkout.id.clone(),
        follower,
        stop: stop.clone(),
    };
    let stamp = PeerCheckout {
        id: checkout.id.clone(),
        worktree: checkout.root.display().to_string(),
        branch: checkout.branch.clone(),
        this_checkout: false,
        machine: None,
    };
    let found = survey::survey(&state.site, checkout.clone()).await;
    let answers = found.answers();
    let (Some(lease), true) = (found.lease, answers) else {
        return;
    };
    let Some(url) = lease.url.clone() else {
        return;
    };
    let site = &state.site;
    let patience = site.probe_timeout();
    let bound = site.sibling_view_bound();
    let silence = bound * 4;
    let url = format!(
        "{}/api/v1/events?checkouts=this&alive_ms={}",
        url.trim_end_matches('/'),
        (bound / 4).as_millis().max(1)
    );
    let response = site.http.get(&url).bearer_auth(&lease.token).send();
    let response = match tokio::time::timeout(patience, response).await {
        Ok(Ok(response)) if response.status().is_success() => response,
        _ => return,
    };
    tell_streams(&state, &stamp, Change::SiblingReached);
    let watch = Arc::new(Mutex::new(LeaseWatch::new(lease_path(&checkout), &lease)));
    let mut events = read_stream(response);
    let this = PeerListInput {
        checkouts: wire::Checkouts::This,
    };
    // The stream was open before the first read, so no change slips between the two.
    let mut following = Following {
        owner: Arc::new(lease.owner()),
        lease,
        standing: found.standing,
        read_at: Instant::now(),
    };
    let mut read_due = Instant::now();
    let mut heard_at = Instant::now();
    let reason = loop {
        if Instant::now() >= read_due {
            let asked = Instant::now();
            let answer = tokio::select! {
                _ = stop.cancelled() => return,
                answer = survey::ask::<PeersList>(site, &following.lease, &this, patience) => answer,
            };
            match answer {
                Ok(answer) => {
                    following.read_at = asked;
                    siblings.keep(&checkout.id, follower, &following, answer);
                    read_due = asked + REFRESH;
                }
                Err(error) => break format!("its board could not be read: {error}"),
            }
        }
        let silent_from = heard_at + silence;
        let next = tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep_until(read_due.min(silent_from).into()) => None,
            next = events.next() => Some(next),
        };
        let Some(next) = next else {
            if Instant::now() >= silent_from {
                break format!("its stream was silent for {} ms", silence.as_millis());
            }
            continue;
        };
        heard_at = Instant::now();
        let event = match next {
            None => break "its stream ended".to_string(),
            Some(Err(error)) => break error,
            Some(Ok(event)) => event,
        };
        match heard(&state, &stamp, event) {
            Heard::Alive => {
                let watch = watch.clone();
                let still =
                    tokio::task::spawn_blocking(move || watch.lock_or_recover().still_there())
                        .await
                        .unwrap_or(false);
                if !still {
                    break "its lease no longer names the server followed".to_string();
                }
                siblings.confirm(&checkout.id, follower, heard_at);
            }
            Heard::Changed => {
                siblings.outdated(&checkout.id, follower);
                read_due = read_due.min(following.read_at + REREAD_GAP);
            }
            Heard::Nothing => {}
            Heard::Lost(reason) => break reason,
        }
    };
    tell_streams(&state, &stamp, Change::SiblingLost { reason: &reason });
}

/// What one of a sibling's events means to its follower.
enum Heard {
    /// Nothing happened since the last event.
    Alive,
    /// Its board changed, or may have: read it again.
    Changed,
    /// Nothing to do.
    Nothing,
    /// Following must stop, for this reason.
    Lost(String),
}

/// Reads one of a sibling's events, re-emitting it, stamped with the sibling's checkout, for
/// the streams that cover the repository.
fn heard(state: &Follow, stamp: &PeerCheckout, event: ReceivedEvent) -> Heard {
    let Value::Object(mut body) = event.body else {
        return Heard::Lost("it sent an event that is not a JSON object".into());
    };
    match body.get("kind").and_then(Value::as_str) {
        Some("alive") => Heard::Alive,
        Some("ready") => Heard::Nothing,
        Some("dropped") => Heard::Lost("it dropped this server's stream as too slow".into()),
        Some("resync") => {
            tell_streams(state, stamp, Change::SiblingReached);
            Heard::Changed
        }
        Some(_) => {
            if state.events.repository_streams() > 0 {
                body.insert(
                    "checkout".into(),
                    serde_json::to_value(stamp).expect("checkouts serialise"),
                );
                let data = Value::Object(body).to_string();
                if data.len() > MAX_EVENT_BYTES {
                    return Heard::Lost(format!("it sent an event over {MAX_EVENT_BYTES} bytes"));
                }
                state.events.publish_sibling(data);
            }
            Heard::Changed
        }
        None => Heard::Lost("it sent an event without a kind".into()),
    }
}

/// Tells the streams covering the repository, if any is open, how a sibling is followed.
fn tell_streams(state: &Follow, stamp: &PeerCheckout, change: Change<'_>) {
    if state.events.repository_streams() > 0 {
        let data = serde_json::to_string(&Envelope {
            checkout: stamp,
            change,
        })
        .expect("events serialise");
        state.events.publish_sibling(data);
    }
}
