//! An MCP answer's first events sent together with its head.
//!
//! rmcp answers each request of a session with an event stream that opens with a priming
//! event (an id and a retry interval, no data, so a client cut off early can resume) and
//! carries the answer a moment later, from the session's own task. Sent as they come, that
//! is two writes on the connection and two wake-ups of the client for every call, the head
//! and priming event first; on a loopback connection that is a good part of what a call
//! costs. Held for the short time a call takes, the head, the priming event, the answer and
//! the stream's end leave in one write.
//!
//! The hold is bounded: a call that takes longer sends what it has when the window closes,
//! so the priming event still reaches a client whose call runs long, only a little later.
//! What that costs: a connection that breaks inside the window leaves its client without
//! the priming event's id to resume from, where it would have had it at once.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::Response;
use bytes::BytesMut;
use futures::{FutureExt as _, StreamExt as _};
use http_body_util::BodyExt as _;

/// The longest an answer's head and first events are held back: well past what a call of
/// the board takes, well under what a person or an agent would notice.
pub(super) const GATHER_WINDOW: Duration = Duration::from_millis(50);

/// `response` with the events its stream yields within `window`, up to and including the
/// first that carries a message, sent as one piece ahead of the rest. Anything but an event
/// stream passes through untouched.
pub(super) async fn first_events_together(response: Response, window: Duration) -> Response {
    if !is_event_stream(&response) {
        return response;
    }
    let (parts, mut body) = response.into_parts();
    let mut gathered = BytesMut::new();
    let closes = tokio::time::sleep(window);
    tokio::pin!(closes);
    let mut failure = None;
    let mut ended = loop {
        tokio::select! {
            biased;
            frame = body.frame() => match frame {
                None => break true,
                Some(Err(error)) => {
                    failure = Some(error);
                    break true;
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        gathered.extend_from_slice(&data);
                        if carries_message(&data) {
                            break false;
                        }
                    }
                }
            },
            () = &mut closes => break false,
        }
    };
    // What is already there after the message (most often the stream's end) goes too.
    while !ended && failure.is_none() {
        match body.frame().now_or_never() {
            None => break,
            Some(None) => ended = true,
            Some(Some(Err(error))) => failure = Some(error),
            Some(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    gathered.extend_from_slice(&data);
                }
            }
        }
    }
    let first = gathered.freeze();
    let body = match (ended, failure) {
        (true, None) => Body::from(first),
        (true, Some(error)) => Body::from_stream(futures::stream::iter([Ok(first), Err(error)])),
        (false, _) => Body::from_stream(
            futures::stream::once(async move { Ok::<Bytes, axum::Error>(first) })
                .chain(body.into_data_stream()),
        ),
    };
    Response::from_parts(parts, body)
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// Whether a piece of an event stream has a data line with something in it: an event with
/// empty data (rmcp's priming event, a keep-alive) is never dispatched to the client.
fn carries_message(chunk: &[u8]) -> bool {
    chunk.split(|&byte| byte == b'\n').any(|line| {
        line.strip_prefix(b"data:").is_some_and(|data| {
            !data
                .strip_prefix(b" ")
                .unwrap_or(data)
                .trim_ascii()
                .is_empty()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use http_body::Body as _;

    const PRIMING: &[u8] = b"data: \nid: 0/7\nretry: 3000\n\n";
    const MESSAGE: &[u8] = b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nid: 0/8\n\n";

    /// An event stream whose priming event is there at once and whose message comes after
    /// `delay`, then ends.
    fn answer_after(delay: Duration) -> Response {
        let events = futures::stream::once(async { Ok::<_, std::io::Error>(Bytes::from(PRIMING)) })
            .chain(futures::stream::once(async move {
                tokio::time::sleep(delay).await;
                Ok(Bytes::from(MESSAGE))
            }));
        let mut response = Response::new(Body::from_stream(events));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        response
    }

    async fn frames(response: Response) -> Vec<Bytes> {
        let mut body = response.into_body();
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            frames.push(frame.unwrap().into_data().unwrap());
        }
        frames
    }

    #[tokio::test]
    async fn a_quick_answer_leaves_with_its_priming_event_as_one_whole_body() {
        let response =
            first_events_together(answer_after(Duration::from_millis(5)), GATHER_WINDOW).await;
        assert_eq!(
            response.body().size_hint().exact(),
            Some((PRIMING.len() + MESSAGE.len()) as u64),
            "the stream had ended, so its length is known"
        );
        assert_eq!(frames(response).await, [[PRIMING, MESSAGE].concat()]);
    }

    #[tokio::test]
    async fn a_slow_answer_sends_its_priming_event_when_the_window_closes() {
        let started = tokio::time::Instant::now();
        let response = first_events_together(
            answer_after(Duration::from_millis(400)),
            Duration::from_millis(20),
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_millis(300),
            "the head leaves at the window's end, not with the answer"
        );
        assert_eq!(
            frames(response).await,
            [Bytes::from(PRIMING), Bytes::from(MESSAGE)],
            "the priming event first, the answer when it comes"
        );
    }

    #[tokio::test]
    async fn what_is_no_event_stream_passes_untouched() {
        let response = Response::new(Body::from("{}"));
        let passed = first_events_together(response, GATHER_WINDOW).await;
        assert_eq!(frames(passed).await, [Bytes::from("{}")]);
    }

    #[test]
    fn only_a_data_line_with_something_in_it_carries_a_message() {
        assert!(!carries_message(PRIMING));
        assert!(!carries_message(b": keep-alive\n\n"));
        assert!(!carries_message(b"data:\n\n"));
        assert!(carries_message(MESSAGE));
        assert!(carries_message(b"data:{}\n\n"));
    }
}
