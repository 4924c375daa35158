//! The words several answers and inputs share, as they write them: a peer's id, the checkout
//! a peer is attached to, what a side of an overlap is, how wide a question is and where a
//! server stands. Types of the answers' own, converted from the domain's when an answer is
//! made and into them when an input or a sibling's answer is read, so what clients read
//! changes only when this file does, never because a type of the domain did. Their doc
//! comments are the descriptions the schemas carry; the wire contract test pins what they
//! write.

use majordomus_domain::checkouts as standing;
use majordomus_domain::peers as board;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A peer's id on one server's board: `p1`, `p2`, … in attachment order, never reused while
/// that server runs. A position on one board, not a durable identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct PeerId(pub String);

/// Which checkout of the repository a peer is attached to. Peer ids restart at `p1` on
/// every board, so a repository-wide answer qualifies each peer with this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PeerCheckout {
    /// The checkout's identity digest, as `server.status` reports `checkout_id`: stable
    /// across restarts and never a path.
    pub id: String,
    /// Where the checkout is on disk; unlike a peer id, it survives a reconnect.
    pub worktree: String,
    /// The branch checked out there, when it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Whether this is the checkout of the server that answered.
    pub this_checkout: bool,
    /// The machine the checkout is on, in an answer that reaches other machines (a listing
    /// with `checkouts: everywhere`, an announce meeting another machine's claim); absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

/// What one side of an overlap is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SideKind {
    /// A peer's claim: what it said it would touch.
    #[default]
    Claim,
    /// A worktree's changes, as git knows them: what was actually touched.
    Change,
}

/// Which checkouts of the repository a question covers. The whole repository costs a lease
/// read and a probe per checkout; this checkout alone costs nothing beyond its own memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Checkouts {
    /// Every checkout git registers for the repository, this one first. The default.
    #[default]
    Repository,
    /// Only the checkout whose server was asked; nothing else is enumerated or probed.
    This,
    /// Every checkout of the repository, plus the boards of the same repository that other
    /// machines publish to the federation this checkout's server follows, each marked with
    /// its machine. Without a federation configured it covers what `repository` covers.
    Everywhere,
}

/// Where a checkout's server stands, judged from its lease, whether the server the lease
/// names answers for that checkout, and whether it runs this executable's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServerStanding {
    /// There is no lease: no server serves this checkout.
    Absent,
    /// The lease has no address yet and is young: its owner is still binding a port.
    Starting,
    /// The server named by the lease answers for this checkout, at this executable's version.
    Ready,
    /// The server answers, but runs an older version or an executable since replaced on disk.
    Outdated,
    /// The lease is unreadable, or names a server that is gone or answers as someone else.
    Stale,
}

impl From<board::PeerId> for PeerId {
    fn from(id: board::PeerId) -> Self {
        PeerId(id.0)
    }
}

impl From<PeerId> for board::PeerId {
    fn from(id: PeerId) -> Self {
        board::PeerId(id.0)
    }
}

impl From<board::PeerCheckout> for PeerCheckout {
    fn from(checkout: board::PeerCheckout) -> Self {
        PeerCheckout {
            id: checkout.id,
            worktree: checkout.worktree,
            branch: checkout.branch,
            this_checkout: checkout.this_checkout,
            machine: checkout.machine,
        }
    }
}

impl From<PeerCheckout> for board::PeerCheckout {
    fn from(checkout: PeerCheckout) -> Self {
        board::PeerCheckout {
            id: checkout.id,
            worktree: checkout.worktree,
            branch: checkout.branch,
            this_checkout: checkout.this_checkout,
            machine: checkout.machine,
        }
    }
}

impl From<board::SideKind> for SideKind {
    fn from(kind: board::SideKind) -> Self {
        match kind {
            board::SideKind::Claim => SideKind::Claim,
            board::SideKind::Change => SideKind::Change,
        }
    }
}

impl From<SideKind> for board::SideKind {
    fn from(kind: SideKind) -> Self {
        match kind {
            SideKind::Claim => board::SideKind::Claim,
            SideKind::Change => board::SideKind::Change,
        }
    }
}

impl From<standing::Checkouts> for Checkouts {
    fn from(checkouts: standing::Checkouts) -> Self {
        match checkouts {
            standing::Checkouts::Repository => Checkouts::Repository,
            standing::Checkouts::This => Checkouts::This,
            standing::Checkouts::Everywhere => Checkouts::Everywhere,
        }
    }
}

impl From<Checkouts> for standing::Checkouts {
    fn from(checkouts: Checkouts) -> Self {
        match checkouts {
            Checkouts::Repository => standing::Checkouts::Repository,
            Checkouts::This => standing::Checkouts::This,
            Checkouts::Everywhere => standing::Checkouts::Everywhere,
        }
    }
}

impl From<standing::ServerStanding> for ServerStanding {
    fn from(standing: standing::ServerStanding) -> Self {
        match standing {
            standing::ServerStanding::Absent => ServerStanding::Absent,
            standing::ServerStanding::Starting => ServerStanding::Starting,
            standing::ServerStanding::Ready => ServerStanding::Ready,
            standing::ServerStanding::Outdated => ServerStanding::Outdated,
            standing::ServerStanding::Stale => ServerStanding::Stale,
        }
    }
}

impl From<ServerStanding> for standing::ServerStanding {
    fn from(standing: ServerStanding) -> Self {
        match standing {
            ServerStanding::Absent => standing::ServerStanding::Absent,
            ServerStanding::Starting => standing::ServerStanding::Starting,
            ServerStanding::Ready => standing::ServerStanding::Ready,
            ServerStanding::Outdated => standing::ServerStanding::Outdated,
            ServerStanding::Stale => standing::ServerStanding::Stale,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words a question's width and a server's standing are written as are the words the
    /// domain names them by, in queries, on the command line and in text for people.
    #[test]
    fn every_word_is_the_one_the_domain_names_it_by() {
        for checkouts in [
            standing::Checkouts::Repository,
            standing::Checkouts::This,
            standing::Checkouts::Everywhere,
        ] {
            let written = serde_json::to_value(Checkouts::from(checkouts)).unwrap();
            assert_eq!(written, checkouts.as_str());
            let read: Checkouts = serde_json::from_value(written).unwrap();
            assert_eq!(standing::Checkouts::from(read), checkouts);
        }
        assert!(serde_json::from_str::<Checkouts>("\"all\"").is_err());
        for server in [
            standing::ServerStanding::Absent,
            standing::ServerStanding::Starting,
            standing::ServerStanding::Ready,
            standing::ServerStanding::Outdated,
            standing::ServerStanding::Stale,
        ] {
            let written = serde_json::to_value(ServerStanding::from(server)).unwrap();
            assert_eq!(written, server.as_str());
            let read: ServerStanding = serde_json::from_value(written).unwrap();
            assert_eq!(standing::ServerStanding::from(read), server);
        }
    }

    #[test]
    fn every_standing_is_described_in_the_schema() {
        let schema = serde_json::to_value(schemars::schema_for!(ServerStanding)).unwrap();
        let variants = schema["oneOf"].as_array().unwrap();
        assert_eq!(variants.len(), 5);
        assert!(variants.iter().all(|v| v["description"].is_string()));
    }

    #[test]
    fn a_peer_id_is_written_as_its_text_and_a_side_as_its_kind() {
        assert_eq!(
            serde_json::to_value(PeerId::from(board::PeerId::nth(12))).unwrap(),
            "p12"
        );
        for (kind, word) in [
            (board::SideKind::Claim, "claim"),
            (board::SideKind::Change, "change"),
        ] {
            let written = serde_json::to_value(SideKind::from(kind)).unwrap();
            assert_eq!(written, word);
            let read: SideKind = serde_json::from_value(written).unwrap();
            assert_eq!(board::SideKind::from(read), kind);
        }
    }
}
