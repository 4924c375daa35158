//! Following the sibling worktrees' streams, so that a stream covering the repository sees
//! every worktree's changes: each live sibling's `/api/v1/events?checkouts=this` (only ever
//! `this`, so two servers never ask each other back) is read while at least one such stream
//! is open, and its events are re-emitted stamped with the sibling's checkout.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use majordomus_domain::checkouts::Checkouts;
use majordomus_domain::peers::PeerCheckout;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Change, Envelope, MAX_EVENT_BYTES, ReceivedEvent, read_stream};
use crate::server::ServerState;
use crate::survey;

/// How often the worktrees are looked at again for siblings to follow or let go.
const LOOK_AGAIN: Duration = Duration::from_secs(2);
/// How many siblings one server follows (or is trying to) at once; the listing still reads
/// every board.
pub const MAX_FOLLOWED: usize = 64;
/// How long a followed stream may stay silent (it sends a comment every 15 s) before the
/// sibling is taken for gone.
const SILENCE: Duration = Duration::from_secs(45);

/// Starts following the siblings, once per server; the follower idles while no stream
/// covers the repository.
pub(super) fn follow(state: &Arc<ServerState>) {
    if state.events.siblings.set(()).is_ok() {
        state.tasks.spawn(run(state.clone()));
    }
}

async fn run(state: Arc<ServerState>) {
    let mut followed: HashMap<String, CancellationToken> = HashMap::new();
    let mut tick = tokio::time::interval(LOOK_AGAIN);
    loop {
        tokio::select! {
            _ = state.shutdown.cancelled() => break,
            _ = tick.tick() => {}
        }
        followed.retain(|_, stop| !stop.is_cancelled());
        if state.events.repository_streams() == 0 {
            for (_, stop) in followed.drain() {
                stop.cancel();
            }
            continue;
        }
        let Ok(checkouts) = survey::covered_checkouts(&state.site, Checkouts::Repository).await
        else {
            continue;
        };
        let siblings = checkouts
            .into_iter()
            .filter(|checkout| checkout.id != state.site.checkout.id);
        for checkout in siblings {
            if followed.contains_key(&checkout.id) {
                continue;
            }
            // A sibling without a live server lets its place go at once, so the places
            // fill with live ones over a few looks.
            if followed.len() >= MAX_FOLLOWED {
                break;
            }
            let stop = state.shutdown.child_token();
            followed.insert(checkout.id.clone(), stop.clone());
            state.tasks.spawn(follow_one(state.clone(), checkout, stop));
        }
    }
}

/// Follows one sibling until its stream ends or the follower lets it go; cancels `stop`
/// when it ends, so the next look starts it again if the sibling is live.
async fn follow_one(
    state: Arc<ServerState>,
    checkout: majordomus_checkout::git::Checkout,
    stop: CancellationToken,
) {
    let stamp = PeerCheckout {
        id: checkout.id.clone(),
        worktree: checkout.root.display().to_string(),
        branch: checkout.branch.clone(),
        this_checkout: false,
        machine: None,
    };
    let found = survey::survey(&state.site, checkout).await;
    let lease = match (&found.lease, found.answers()) {
        (Some(lease), true) => lease.clone(),
        _ => {
            stop.cancel();
            return;
        }
    };
    let url = format!(
        "{}/api/v1/events?checkouts=this",
        lease
            .url
            .as_deref()
            .unwrap_or_default()
            .trim_end_matches('/')
    );
    let response = state.site.http.get(&url).bearer_auth(&lease.token).send();
    let response = match tokio::time::timeout(state.site.probe_timeout(), response).await {
        Ok(Ok(response)) if response.status().is_success() => response,
        _ => {
            stop.cancel();
            return;
        }
    };
    state.events.publish_about(&stamp, Change::SiblingReached);
    let mut events = read_stream(response);
    let reason = loop {
        let next = tokio::select! {
            _ = stop.cancelled() => return,
            next = tokio::time::timeout(SILENCE, events.next()) => next,
        };
        match next {
            Err(_) => break format!("its stream was silent for {} s", SILENCE.as_secs()),
            Ok(None) => break "its stream ended".to_string(),
            Ok(Some(Err(error))) => break error,
            Ok(Some(Ok(event))) => {
                if let Some(reason) = re_emit(&state, &stamp, event) {
                    break reason;
                }
            }
        }
    };
    state
        .events
        .publish_about(&stamp, Change::SiblingLost { reason: &reason });
    stop.cancel();
}

/// Re-emits one of a sibling's events, stamped with its checkout; answers why following
/// must stop, if it must.
fn re_emit(state: &ServerState, stamp: &PeerCheckout, event: ReceivedEvent) -> Option<String> {
    let Value::Object(mut body) = event.body else {
        return Some("it sent an event that is not a JSON object".into());
    };
    match body.get("kind").and_then(Value::as_str) {
        Some("ready") => None,
        Some("dropped") => Some("it dropped this server's stream as too slow".into()),
        Some("resync") => {
            state.events.publish_about(stamp, Change::SiblingReached);
            None
        }
        Some(_) => {
            body.insert(
                "checkout".into(),
                serde_json::to_value(stamp).expect("checkouts serialise"),
            );
            let data = Value::Object(body).to_string();
            if data.len() > MAX_EVENT_BYTES {
                return Some(format!("it sent an event over {MAX_EVENT_BYTES} bytes"));
            }
            state.events.publish_sibling(data);
            None
        }
        None => Some("it sent an event without a kind".into()),
    }
}

impl super::EventBus {
    /// Publishes a change of a sibling's board, or of how it is followed.
    fn publish_about(&self, checkout: &PeerCheckout, change: Change<'_>) {
        let data = serde_json::to_string(&Envelope { checkout, change }).expect("events serialise");
        self.publish_sibling(data);
    }
}
