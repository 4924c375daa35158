//! The peers of a published board, and where its server stands, as the federation document
//! writes them: types of the document's own, converted from the board's when a board is
//! published and back into them when another machine's board is read. Machines running different builds read each
//! other's documents, so the document changes only when this file does, never because a
//! type of the board did. The wire contract test pins what these types write.

use majordomus_checkout::stamp_text::StampText;
use majordomus_domain::checkouts::ServerStanding;
use majordomus_domain::peers::{
    Announcement, ClientInfo, Peer, PeerCheckout, PeerId, Transport, WaitHolder, WaitReason,
    Waiting,
};
use serde::{Deserialize, Serialize};

/// One peer of a published board, as `peers.list` with `checkouts: this` answers it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PublishedPeer {
    id: String,
    client: PublishedClient,
    transport: PublishedTransport,
    connected_at: StampText,
    last_seen_seconds_ago: u64,
    attached: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    left_seconds_ago: Option<u64>,
    #[serde(default)]
    claims: Vec<PublishedClaim>,
    #[serde(skip_serializing_if = "Option::is_none")]
    announcement: Option<PublishedClaim>,
    #[serde(skip_serializing_if = "Option::is_none")]
    checkout: Option<PublishedPeerCheckout>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    waiting: Option<PublishedWaiting>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct PublishedClient {
    name: String,
    version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum PublishedTransport {
    Stdio,
    Http,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct PublishedClaim {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    intent: String,
    scope: Vec<String>,
    at: StampText,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    resolved: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct PublishedPeerCheckout {
    id: String,
    worktree: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    branch: Option<String>,
    this_checkout: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    machine: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct PublishedWaiting {
    reason: PublishedWaitReason,
    since: StampText,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    holder: Option<PublishedWaitHolder>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum PublishedWaitReason {
    Permission,
    Question,
    Finished,
    Blocked,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct PublishedWaitHolder {
    peer: String,
    client: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    worktree: Option<String>,
}

/// Where the published board's server stands, as it knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PublishedStanding {
    Absent,
    Starting,
    Ready,
    Outdated,
    Stale,
}

impl From<ServerStanding> for PublishedStanding {
    fn from(standing: ServerStanding) -> Self {
        match standing {
            ServerStanding::Absent => PublishedStanding::Absent,
            ServerStanding::Starting => PublishedStanding::Starting,
            ServerStanding::Ready => PublishedStanding::Ready,
            ServerStanding::Outdated => PublishedStanding::Outdated,
            ServerStanding::Stale => PublishedStanding::Stale,
        }
    }
}

impl From<PublishedStanding> for ServerStanding {
    fn from(standing: PublishedStanding) -> Self {
        match standing {
            PublishedStanding::Absent => ServerStanding::Absent,
            PublishedStanding::Starting => ServerStanding::Starting,
            PublishedStanding::Ready => ServerStanding::Ready,
            PublishedStanding::Outdated => ServerStanding::Outdated,
            PublishedStanding::Stale => ServerStanding::Stale,
        }
    }
}

impl From<Peer> for PublishedPeer {
    fn from(peer: Peer) -> Self {
        PublishedPeer {
            id: peer.id.0,
            client: PublishedClient {
                name: peer.client.name,
                version: peer.client.version,
                title: peer.client.title,
            },
            transport: match peer.transport {
                Transport::Stdio => PublishedTransport::Stdio,
                Transport::Http => PublishedTransport::Http,
            },
            connected_at: peer.connected_at.into(),
            last_seen_seconds_ago: peer.last_seen_seconds_ago,
            attached: peer.attached,
            left_seconds_ago: peer.left_seconds_ago,
            claims: peer.claims.into_iter().map(PublishedClaim::from).collect(),
            announcement: peer.announcement.map(PublishedClaim::from),
            checkout: peer.checkout.map(|checkout| PublishedPeerCheckout {
                id: checkout.id,
                worktree: checkout.worktree,
                branch: checkout.branch,
                this_checkout: checkout.this_checkout,
                machine: checkout.machine,
            }),
            waiting: peer.waiting.map(|waiting| PublishedWaiting {
                reason: match waiting.reason {
                    WaitReason::Permission => PublishedWaitReason::Permission,
                    WaitReason::Question => PublishedWaitReason::Question,
                    WaitReason::Finished => PublishedWaitReason::Finished,
                    WaitReason::Blocked => PublishedWaitReason::Blocked,
                },
                since: waiting.since.into(),
                message: waiting.message,
                holder: waiting.holder.map(|holder| PublishedWaitHolder {
                    peer: holder.peer.0,
                    client: holder.client,
                    worktree: holder.worktree,
                }),
            }),
        }
    }
}

impl From<PublishedPeer> for Peer {
    /// The peer as written: what the reader believes of it is its own decision.
    fn from(peer: PublishedPeer) -> Self {
        Peer {
            id: PeerId(peer.id),
            client: ClientInfo {
                name: peer.client.name,
                version: peer.client.version,
                title: peer.client.title,
            },
            transport: match peer.transport {
                PublishedTransport::Stdio => Transport::Stdio,
                PublishedTransport::Http => Transport::Http,
            },
            connected_at: peer.connected_at.into(),
            last_seen_seconds_ago: peer.last_seen_seconds_ago,
            attached: peer.attached,
            left_seconds_ago: peer.left_seconds_ago,
            claims: peer.claims.into_iter().map(Announcement::from).collect(),
            announcement: peer.announcement.map(Announcement::from),
            checkout: peer.checkout.map(|checkout| PeerCheckout {
                id: checkout.id,
                worktree: checkout.worktree,
                branch: checkout.branch,
                this_checkout: checkout.this_checkout,
                machine: checkout.machine,
            }),
            waiting: peer.waiting.map(|waiting| Waiting {
                reason: match waiting.reason {
                    PublishedWaitReason::Permission => WaitReason::Permission,
                    PublishedWaitReason::Question => WaitReason::Question,
                    PublishedWaitReason::Finished => WaitReason::Finished,
                    PublishedWaitReason::Blocked => WaitReason::Blocked,
                },
                since: waiting.since.into(),
                message: waiting.message,
                holder: waiting.holder.map(|holder| WaitHolder {
                    peer: PeerId(holder.peer),
                    client: holder.client,
                    worktree: holder.worktree,
                }),
            }),
        }
    }
}

impl From<Announcement> for PublishedClaim {
    fn from(claim: Announcement) -> Self {
        PublishedClaim {
            name: claim.name,
            intent: claim.intent,
            scope: claim.scope,
            at: claim.at.into(),
            resolved: claim.resolved,
        }
    }
}

impl From<PublishedClaim> for Announcement {
    fn from(claim: PublishedClaim) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_domain::ids::Stamp;

    /// Every field a peer can have, each set: what a reader gets back is what was published.
    #[test]
    fn a_peer_with_every_field_set_reads_back_as_it_was_published() {
        let at: Stamp = "2026-12-01T11:59:00Z".parse().unwrap();
        let claim = |name: Option<&str>| Announcement {
            name: name.map(str::to_owned),
            intent: "restructure src".into(),
            scope: vec!["src".into(), "app/[slug]".into()],
            at,
            resolved: vec!["src".into(), "app/[slug]".into()],
            compared: Default::default(),
        };
        let peer = Peer {
            id: PeerId::nth(7),
            client: ClientInfo {
                name: "codex".into(),
                version: "0.171.0".into(),
                title: Some("Codex".into()),
            },
            transport: Transport::Stdio,
            connected_at: at,
            last_seen_seconds_ago: 4,
            attached: false,
            left_seconds_ago: Some(12),
            claims: vec![claim(None), claim(Some("docs"))],
            announcement: Some(claim(Some("docs"))),
            checkout: Some(PeerCheckout {
                id: "0123456789abcdef0123456789abcdef".into(),
                worktree: "/home/someone/repo".into(),
                branch: Some("main".into()),
                this_checkout: false,
                machine: Some("laptop".into()),
            }),
            waiting: Some(Waiting {
                reason: WaitReason::Blocked,
                since: at,
                message: Some("waits for p2".into()),
                holder: Some(WaitHolder {
                    peer: PeerId::nth(2),
                    client: "claude-code".into(),
                    worktree: Some("/home/someone/repo-b".into()),
                }),
            }),
        };
        let written = serde_json::to_vec(&PublishedPeer::from(peer.clone())).unwrap();
        let read: PublishedPeer = serde_json::from_slice(&written).unwrap();
        assert_eq!(Peer::from(read), peer);
    }

    #[test]
    fn every_standing_is_written_as_its_word_and_reads_back() {
        for standing in [
            ServerStanding::Absent,
            ServerStanding::Starting,
            ServerStanding::Ready,
            ServerStanding::Outdated,
            ServerStanding::Stale,
        ] {
            let written = serde_json::to_value(PublishedStanding::from(standing)).unwrap();
            assert_eq!(written, standing.as_str());
            let read: PublishedStanding = serde_json::from_value(written).unwrap();
            assert_eq!(ServerStanding::from(read), standing);
        }
    }
}
