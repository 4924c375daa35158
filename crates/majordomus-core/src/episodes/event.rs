//! What a driver is told about an episode: one event, as one JSON object. The built-in journal
//! writes it as a line (with its sequence number); a repository's own command reads it on
//! stdin.

use majordomus_checkout::stamp_text::StampText;
use majordomus_domain::peers::Announcement;
use serde::{Deserialize, Serialize};

/// What happened to an episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum EventKind {
    /// A connection attached to an id nobody had open.
    Opened,
    /// A connection took up an episode that was already open: after a reconnect, a client
    /// restart, or a server that ended without closing it.
    Resumed,
    /// The connection holding it announced a claim (journal only).
    Announced,
    /// The claims its peer held were released from the board: the peer left and did not
    /// come back within the claim grace (journal only; `claims` lists them).
    Released,
    /// Its connection went away; it waits for its client.
    Detached,
    /// It ended; `reason` says how.
    Closed,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Why an episode was closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum CloseReason {
    /// Its client closed it with `episodes.detach`.
    Detach,
    /// It stayed detached longer than the reattach grace.
    Expired,
    /// Its server stopped in order.
    Shutdown,
}

impl CloseReason {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The MCP client behind the connection, as it named itself in `initialize`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventClient {
    pub name: String,
    pub version: String,
}

/// The server process that recorded an event, so a later reader can tell whether it still
/// runs (an episode it left open without a `closed` record was interrupted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventServer {
    pub pid: u32,
    /// The process start time (clock ticks since boot), so a recycled pid is not taken for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
}

impl EventServer {
    /// This process.
    pub fn this_process() -> EventServer {
        let pid = std::process::id();
        EventServer {
            pid,
            started: majordomus_checkout::process_start_time(pid),
        }
    }

    pub fn is_this_process(&self) -> bool {
        *self == EventServer::this_process()
    }

    pub fn still_runs(&self) -> bool {
        majordomus_checkout::process_alive(self.pid, self.started)
    }
}

/// One event of one episode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub event: EventKind,
    /// When it happened, RFC 3339 UTC.
    pub at: StampText,
    /// The client's own id for the episode.
    pub external_id: String,
    /// The provider the client's name maps to in `providers.toml` (`generic` when none).
    pub provider: String,
    /// The client as it named itself.
    pub client: EventClient,
    /// The checkout whose server recorded it.
    pub checkout_id: String,
    pub worktree: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The peer holding the episode on that server, when one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    pub server: EventServer,
    /// When the episode was first opened.
    pub opened_at: StampText,
    /// How many times a connection has taken it up so far.
    pub attachments: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<CloseReason>,
    /// Anything a reader should know about this event beyond its kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The claims announced during the episode on this server so far (for `announced`, the
    /// one just made; for `released`, those released).
    #[serde(default)]
    pub claims: Vec<JournalClaim>,
}

/// A claim as a journal line writes it: a type of the journal's own, converted from the
/// board's claims, so the lines already written stay readable whatever the board's types
/// become.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalClaim {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub intent: String,
    pub scope: Vec<String>,
    pub at: StampText,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved: Vec<String>,
}

impl From<Announcement> for JournalClaim {
    fn from(claim: Announcement) -> Self {
        JournalClaim {
            name: claim.name,
            intent: claim.intent,
            scope: claim.scope,
            at: claim.at.into(),
            resolved: claim.resolved,
        }
    }
}

impl From<JournalClaim> for Announcement {
    fn from(claim: JournalClaim) -> Self {
        Announcement {
            name: claim.name,
            intent: claim.intent,
            scope: claim.scope,
            at: claim.at.into(),
            resolved: claim.resolved,
            compared: Default::default(),
        }
    }
}

/// The note on a `resumed` event whose episode a previous server left open.
pub const INTERRUPTED_NOTE: &str = "interrupted: the previous server ended without closing it";

#[cfg(test)]
mod tests {
    use super::*;
    use strum::VariantArray;

    #[test]
    fn events_are_written_and_read_in_the_words_as_str_gives() {
        for &kind in EventKind::VARIANTS {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
            let read: EventKind = serde_json::from_value(kind.as_str().into()).unwrap();
            assert_eq!(read, kind);
        }
        for &reason in CloseReason::VARIANTS {
            assert_eq!(serde_json::to_value(reason).unwrap(), reason.as_str());
            let read: CloseReason = serde_json::from_value(reason.as_str().into()).unwrap();
            assert_eq!(read, reason);
        }
    }
}
