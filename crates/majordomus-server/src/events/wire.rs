//! What an event is on the wire: each change of a board as its JSON says it, and a stream
//! of them read back, each held to a bound.

use futures::{Stream, StreamExt};
use majordomus_domain::limits;
use majordomus_domain::peers::{
    Announcement, ClientInfo, OverlapPath, PeerCheckout, PeerId, Transport, Waiting,
};
use serde::Serialize;

/// The largest event, in bytes of JSON; a sibling's event over it is not re-emitted.
pub(super) const MAX_EVENT_BYTES: usize = 64 * 1024;

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
    /// A session began to wait for the person, or waits for another reason now.
    Waiting {
        peer: &'a PeerId,
        waiting: &'a Waiting,
    },
    /// A session that waited for the person moved on (a prompt, a tool call, an announce).
    WaitingOver { peer: &'a PeerId },
    /// A peer's named claim was handed to another session, which accepted it; it announces
    /// the claim on its own board.
    HandedOver {
        peer: &'a PeerId,
        claim: &'a str,
        to: &'a str,
    },
    /// A lease of the repository was asked for, handed on or let go through this server:
    /// who holds it now (none: nobody) and how many wait.
    Lease {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        holder: Option<&'a str>,
        queued: usize,
    },
}

pub(super) fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
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
    pub(super) fn of(claim: &'a Announcement) -> Self {
        let (scope, more_paths) = sample(&claim.scope);
        ClaimSample {
            name: claim.name.as_deref(),
            intent: &claim.intent,
            scope,
            more_paths,
        }
    }
}

impl<'a> Change<'a> {
    /// `peer`'s claim `claim` let go of `paths`, named as every event names paths: a sample,
    /// the rest counted.
    pub(super) fn released(peer: &'a PeerId, claim: Option<&'a str>, paths: &'a [String]) -> Self {
        let (paths, more_paths) = sample(paths);
        Change::Released {
            peer,
            claim,
            paths,
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
pub(super) struct Envelope<'a> {
    pub(super) checkout: &'a PeerCheckout,
    #[serde(flatten)]
    pub(super) change: Change<'a>,
}

/// One event as the backlog keeps it and the streams send it.
#[derive(Debug)]
pub(super) struct Event {
    /// Increasing over the server's life; see [`EventBus::new`] for where it starts.
    pub id: u64,
    /// Whether it is a change of this checkout's board (not a sibling's).
    pub local: bool,
    /// The JSON body.
    pub data: String,
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
pub(super) struct EventBound {
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
