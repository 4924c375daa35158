//! The board's changes as they happen: a small event bus the board's mutations publish to
//! (under the board's lock, so the events come in the board's order), and what reads it —
//! the Server-Sent Events route `/api/v1/events`, the MCP sessions' notifications — and the
//! following of sibling worktrees' streams, which keeps their boards in memory.
//!
//! Publishing never waits and never grows anything without bound: the backlog is a ring
//! (at most `BACKLOG_EVENTS` events and `BACKLOG_BYTES` bytes), every subscriber has a
//! buffer of `SUBSCRIBER_BUFFER` events and is dropped, with a last event saying so, when it
//! fills; at most `MAX_SUBSCRIBERS` streams are open at once. A stream sends the events
//! that arrive within a millisecond of one another in one write.
//!
//! Adding a kind of event is one variant of [`Change`] and one call where the board changes.
//!
//! The parts, each using only those before it: what an event is on the wire and how a stream
//! is read back (`wire`), the overlap tracker (`overlaps`), the siblings' boards kept from
//! their streams (`siblings`), the bus itself (`bus`), each MCP session's feed (`feed`), the
//! following of the siblings' streams (`follow`); this file answers the `/api/v1/events`
//! route.

mod bus;
mod feed;
mod follow;
mod overlaps;
mod siblings;
mod wire;

pub use bus::EventBus;
use bus::{KEEP_ALIVE, MIN_ALIVE, Opening, RETRY_MS, SUBSCRIBER_BUFFER, Subscription};
pub use feed::SessionFeed;
pub(crate) use follow::{Follow, follow as follow_siblings};
pub use wire::{Change, ReceivedEvent, read_stream};

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::Query;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use majordomus_domain::checkouts::Checkouts;
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use majordomus_core::api::{ErrorKind, Rejection};

/// The query of `/api/v1/events`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StreamQuery {
    #[serde(default)]
    checkouts: majordomus_capabilities::wire::Checkouts,
    /// The token may ride in the query; the guard has checked it.
    #[serde(default, rename = "token")]
    _token: Option<String>,
    /// Asks for an `alive` event whenever nothing was sent for this many milliseconds (at
    /// least 10, at most the 15 s of the keep-alive comment it then replaces): a follower
    /// tells a quiet server from a hung one by them.
    #[serde(default)]
    alive_ms: Option<u64>,
}

/// `GET /api/v1/events`: the changes published on `events` as Server-Sent Events, until
/// `shutdown`.
pub(crate) fn stream(
    events: &EventBus,
    shutdown: &CancellationToken,
    query: Result<Query<StreamQuery>, axum::extract::rejection::QueryRejection>,
    headers: &HeaderMap,
) -> Response {
    let Query(query) = match query {
        Ok(query) => query,
        Err(rejection) => {
            return majordomus_core::api::error_response(
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
    let checkouts = Checkouts::from(query.checkouts);
    let subscription = match events.subscribe(checkouts, last_seen.as_deref()) {
        Ok(subscription) => subscription,
        Err(full) => {
            let mut refusal = majordomus_core::api::error_response(
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
    if checkouts != Checkouts::This {
        events.siblings.wake();
    }
    let keep_alive = match query.alive_ms {
        Some(ms) => KeepAlive::new()
            .interval(Duration::from_millis(ms).clamp(MIN_ALIVE, KEEP_ALIVE))
            .event(SseEvent::default().data(serde_json::json!({"kind": "alive"}).to_string())),
        None => KeepAlive::new().interval(KEEP_ALIVE),
    };
    let sent = sse_events(subscription).take_until(shutdown.clone().cancelled_owned());
    let mut response = Sse::new(sent).keep_alive(keep_alive).into_response();
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
    let live = gathered(receiver).map(|event| {
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

/// How long a stream waits, once an event came, for more before it sends: a board at work
/// changes thousands of times a second, and each event sent alone is a write to the socket
/// and a wake-up of its reader (a following sibling's server, most often). What arrives
/// meanwhile goes out in the same write.
const GATHER_EVENTS: Duration = Duration::from_millis(1);

/// The most events one write carries.
const GATHERED_EVENTS: usize = 64;

/// The events `receiver` gets, in order, each at most [`GATHER_EVENTS`] (and a timer's
/// tick) after it came.
fn gathered<T>(receiver: mpsc::Receiver<T>) -> impl Stream<Item = T> {
    futures::stream::unfold(receiver, |mut receiver| async move {
        let first = receiver.recv().await?;
        tokio::time::sleep(GATHER_EVENTS).await;
        let mut events = vec![first];
        while events.len() < GATHERED_EVENTS {
            match receiver.try_recv() {
                Ok(event) => events.push(event),
                Err(_) => break,
            }
        }
        Some((futures::stream::iter(events), receiver))
    })
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn gathered_events_come_all_in_order_and_a_lone_one_at_once() {
        let (sender, receiver) = mpsc::channel(SUBSCRIBER_BUFFER);
        let mut events = Box::pin(gathered(receiver));
        let burst = GATHERED_EVENTS * 3 + 5;
        for event in 0..burst {
            sender.send(event).await.unwrap();
        }
        let mut received = Vec::new();
        while received.len() < burst {
            received.push(events.next().await.unwrap());
        }
        assert_eq!(received, (0..burst).collect::<Vec<_>>());

        let sent = std::time::Instant::now();
        sender.send(burst).await.unwrap();
        assert_eq!(events.next().await, Some(burst));
        assert!(
            sent.elapsed() < Duration::from_millis(250),
            "{:?}",
            sent.elapsed()
        );
        drop(sender);
        assert_eq!(events.next().await, None, "the stream ends with its sender");
    }
}
