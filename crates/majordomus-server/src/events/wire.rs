//! What an event is on the wire: each change of a board as its JSON says it, and a stream
//! of them read back, each held to a bound.
//!
//! A client, a waiting mark, pairs of paths and a checkout are written in the types the
//! answers write them in (`peers.list` names the same things), converted from the board's
//! when the event is made, so an event changes only where those types or this file do,
//! never because a type of the board did. A peer is named by its id's text.

use futures::{Stream, StreamExt};
use majordomus_capabilities::peers::wire::{ClientInfo, OverlapPath, Transport, Waiting};
use majordomus_capabilities::wire::PeerCheckout;
use majordomus_domain::limits;
use majordomus_domain::peers::{Announcement, PeerId};
use serde::Serialize;

/// The largest event, in bytes of JSON; a sibling's event over it is not re-emitted.
pub(super) const MAX_EVENT_BYTES: usize = 64 * 1024;

/// One change of a board, as its event's JSON says it (with `kind` the variant's name).
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change<'a> {
    /// A connection joined the board.
    Attached {
        peer: &'a str,
        client: ClientInfo,
        transport: Transport,
    },
    /// A connection went away; a peer that held claims stays on the board, marked left.
    Left { peer: &'a str, claims_kept: bool },
    /// A peer is no longer on the board at all.
    Removed { peer: &'a str, reason: String },
    /// A peer announced a claim (its paths sampled, the rest counted).
    Announced {
        peer: &'a str,
        claim: ClaimSample<'a>,
    },
    /// A re-announced claim stopped claiming these paths.
    Released {
        peer: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        claim: Option<&'a str>,
        paths: &'a [String],
        #[serde(skip_serializing_if = "is_zero")]
        more_paths: usize,
    },
    /// Two peers' claims began to meet; `paths` pairs `peer`'s paths (`yours`) with `with`'s
    /// (`theirs`).
    OverlapBegan {
        peer: &'a str,
        with: &'a str,
        intent: &'a str,
        with_intent: &'a str,
        paths: Vec<OverlapPath>,
        #[serde(skip_serializing_if = "is_zero")]
        more_paths: u32,
    },
    /// No claim of the two peers meets any more.
    OverlapEnded { peer: &'a str, with: &'a str },
    /// A sibling worktree's stream is followed from now on: re-read its board.
    SiblingReached,
    /// A sibling worktree's stream could not be followed or was lost: re-read its board.
    SiblingLost { reason: &'a str },
    /// A session began to wait for the person, or waits for another reason now.
    Waiting { peer: &'a str, waiting: Waiting },
    /// A session that waited for the person moved on (a prompt, a tool call, an announce).
    WaitingOver { peer: &'a str },
    /// A peer's named claim was handed to another session, which accepted it; it announces
    /// the claim on its own board.
    HandedOver {
        peer: &'a str,
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
            peer: peer.as_str(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_domain::peers::{self as board, WaitHolder, WaitReason};

    /// Every kind of change, as the board's own types wrote it before events wrote the
    /// answers' types: after the checkout each event names, the same bytes.
    #[test]
    fn every_change_is_written_as_before() {
        let p1 = PeerId::nth(1);
        let p2 = PeerId::nth(2);
        let checkout: PeerCheckout = board::PeerCheckout {
            id: "0123456789abcdef0123456789abcdef".into(),
            worktree: "/repo".into(),
            branch: Some("main".into()),
            this_checkout: true,
            machine: None,
        }
        .into();
        let client = board::ClientInfo {
            name: "codex".into(),
            version: "0.171.0".into(),
            title: Some("Codex".into()),
        };
        let bare = board::ClientInfo {
            name: "claude-code".into(),
            version: "2".into(),
            title: None,
        };
        let blocked = board::Waiting {
            reason: WaitReason::Blocked,
            since: "2026-12-01T10:00:00Z".parse().unwrap(),
            message: Some("held".into()),
            holder: Some(WaitHolder {
                peer: p2.clone(),
                client: "claude-code".into(),
                worktree: Some("/repo-b".into()),
            }),
        };
        let question = board::Waiting {
            reason: WaitReason::Question,
            since: "2026-12-01T10:00:01Z".parse().unwrap(),
            message: None,
            holder: None,
        };
        let paths = || {
            vec![OverlapPath::from(board::OverlapPath {
                yours: "src/a".into(),
                theirs: "src".into(),
            })]
        };
        let claim = Announcement {
            name: Some("parser".into()),
            intent: "fix".into(),
            scope: (0..10).map(|n| format!("src/{n}")).collect(),
            at: "2026-12-01T10:00:00Z".parse().unwrap(),
            resolved: vec![],
            compared: Default::default(),
        };
        let released: Vec<String> = vec!["docs".into()];
        let began = |more_paths| Change::OverlapBegan {
            peer: "p1",
            with: "p2",
            intent: "fix",
            with_intent: "docs",
            paths: paths(),
            more_paths,
        };
        let changes = vec![
            Change::Attached {
                peer: p1.as_str(),
                client: client.into(),
                transport: board::Transport::Http.into(),
            },
            Change::Attached {
                peer: p2.as_str(),
                client: bare.into(),
                transport: board::Transport::Stdio.into(),
            },
            Change::Left {
                peer: "p1",
                claims_kept: true,
            },
            Change::Removed {
                peer: "p1",
                reason: "gone".into(),
            },
            Change::Announced {
                peer: "p1",
                claim: ClaimSample::of(&claim),
            },
            Change::released(&p1, Some("parser"), &released),
            Change::released(&p1, None, &claim.scope),
            began(0),
            began(3),
            Change::OverlapEnded {
                peer: "p1",
                with: "p2",
            },
            Change::SiblingReached,
            Change::SiblingLost { reason: "lost" },
            Change::Waiting {
                peer: "p1",
                waiting: blocked.into(),
            },
            Change::Waiting {
                peer: "p2",
                waiting: question.into(),
            },
            Change::WaitingOver { peer: "p1" },
            Change::HandedOver {
                peer: "p1",
                claim: "parser",
                to: "p2@0123abcd",
            },
            Change::Lease {
                name: "db",
                holder: Some("p1 codex"),
                queued: 2,
            },
            Change::Lease {
                name: "db",
                holder: None,
                queued: 0,
            },
        ];
        let written: Vec<String> = changes
            .into_iter()
            .map(|change| {
                serde_json::to_string(&Envelope {
                    checkout: &checkout,
                    change,
                })
                .unwrap()
            })
            .collect();
        let checkout = r#"{"checkout":{"id":"0123456789abcdef0123456789abcdef","worktree":"/repo","branch":"main","this_checkout":true},"#;
        let before = [
            r#""kind":"attached","peer":"p1","client":{"name":"codex","version":"0.171.0","title":"Codex"},"transport":"http"}"#,
            r#""kind":"attached","peer":"p2","client":{"name":"claude-code","version":"2"},"transport":"stdio"}"#,
            r#""kind":"left","peer":"p1","claims_kept":true}"#,
            r#""kind":"removed","peer":"p1","reason":"gone"}"#,
            r#""kind":"announced","peer":"p1","claim":{"name":"parser","intent":"fix","scope":["src/0","src/1","src/2","src/3","src/4","src/5","src/6","src/7"],"more_paths":2}}"#,
            r#""kind":"released","peer":"p1","claim":"parser","paths":["docs"]}"#,
            r#""kind":"released","peer":"p1","paths":["src/0","src/1","src/2","src/3","src/4","src/5","src/6","src/7"],"more_paths":2}"#,
            r#""kind":"overlap_began","peer":"p1","with":"p2","intent":"fix","with_intent":"docs","paths":[{"yours":"src/a","theirs":"src"}]}"#,
            r#""kind":"overlap_began","peer":"p1","with":"p2","intent":"fix","with_intent":"docs","paths":[{"yours":"src/a","theirs":"src"}],"more_paths":3}"#,
            r#""kind":"overlap_ended","peer":"p1","with":"p2"}"#,
            r#""kind":"sibling_reached"}"#,
            r#""kind":"sibling_lost","reason":"lost"}"#,
            r#""kind":"waiting","peer":"p1","waiting":{"reason":"blocked","since":"2026-12-01T10:00:00Z","message":"held","holder":{"peer":"p2","client":"claude-code","worktree":"/repo-b"}}}"#,
            r#""kind":"waiting","peer":"p2","waiting":{"reason":"question","since":"2026-12-01T10:00:01Z"}}"#,
            r#""kind":"waiting_over","peer":"p1"}"#,
            r#""kind":"handed_over","peer":"p1","claim":"parser","to":"p2@0123abcd"}"#,
            r#""kind":"lease","name":"db","holder":"p1 codex","queued":2}"#,
            r#""kind":"lease","name":"db","queued":0}"#,
        ];
        let before: Vec<String> = before
            .iter()
            .map(|rest| format!("{checkout}{rest}"))
            .collect();
        assert_eq!(written, before);
    }
}
