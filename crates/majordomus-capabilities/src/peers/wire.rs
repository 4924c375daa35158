//! The peers of `peers.list` and `peers.announce` as their answers write them, the waiting
//! mark `hooks.wait` answers with, and the input of `peers.announce`: types of the answers'
//! own, converted from the board's when an answer is made and into them when an input or a
//! sibling's listing is read.
//! Clients, scripts and other servers read these answers, so they change only when this file
//! does, never because a type of the board did; their doc comments are the descriptions the
//! schemas carry. The wire contract test pins what these types write.
//!
//! The peer's id, its checkout and the kind of an overlap's side are written in the words
//! every answer shares ([`crate::wire`]): the changes an answer lists name them too.

use majordomus_checkout::stamp_text::StampText;
use majordomus_domain::peers as board;
use majordomus_domain::{limits, text};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::{PeerCheckout, PeerId, SideKind};

/// The input of `peers.announce`: what the calling peer is working on and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnnounceInput {
    /// One line in your own words: the task, question or intent; no line breaks, control or
    /// format characters.
    #[schemars(
        length(min = 1, max = limits::INTENT_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub intent: String,
    /// Repository-relative paths (directories, files or globs) you expect to touch; `.` is
    /// the whole repository. Others read it to stay clear; nothing enforces it. A path holds
    /// at most 1,024 bytes and 64 components; repeated (in any spelling) it counts once.
    #[serde(default)]
    #[schemars(
        length(max = limits::SCOPE_PATHS),
        inner(
            length(min = 1, max = limits::PATH_BYTES),
            regex(pattern = text::PLAIN_TEXT_PATTERN)
        )
    )]
    pub scope: Vec<String>,
    /// Names this claim when one session carries several pieces of work (subagents); the
    /// same name announced again replaces it (`released` lists the paths let go). Leave it
    /// out to update your one unnamed claim. At most 32 named claims.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = limits::CLAIM_NAME_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub claim: Option<String>,
}

/// What a client said about itself when it initialized the MCP session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientInfo {
    /// The client's `clientInfo.name`, such as `claude-code`, `codex` or `gemini-cli`.
    pub name: String,
    /// The client's `clientInfo.version`.
    pub version: String,
    /// The client's `clientInfo.title`, when it sent one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// How a peer's client reached majordomus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Over the stdin and stdout of the `majordomus mcp` process it started: the process that
    /// serves, or a bridge to it.
    Stdio,
    /// MCP over HTTP at `/mcp`, spoken by the client itself.
    Http,
}

/// One claim a peer holds: what it is doing and which paths it expects to touch. A peer
/// may hold several, told apart by name; announcing under the same name replaces one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Announcement {
    /// The claim's name, when the peer gave one; absent for the peer's unnamed claim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One line in the peer's own words: the task, question or intent.
    pub intent: String,
    /// Repository-relative paths the peer expects to touch, as it wrote them. A warning
    /// to others, not a lock: nothing enforces it.
    pub scope: Vec<String>,
    /// When it was announced, RFC 3339 in UTC.
    pub at: StampText,
    /// Where each path of `scope` is on disk, in the same order, repository-relative (`.`
    /// for the whole repository) with symbolic links followed: what overlaps are found on.
    /// Present only when one of them differs from what its text says: a link followed, or
    /// a glob-looking name (`app/[slug]`) that exists and so is a literal path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved: Vec<String>,
}

/// One peer as its board records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Peer {
    /// Its id on its board: `p1`, `p2`, …
    pub id: PeerId,
    /// The client behind the connection.
    pub client: ClientInfo,
    /// How it is connected.
    pub transport: Transport,
    /// When it attached, RFC 3339 in UTC.
    pub connected_at: StampText,
    /// Seconds since its last message.
    pub last_seen_seconds_ago: u64,
    /// Whether its connection is still open. A peer that leaves holding claims stays on the
    /// board with `false`: the work it announced outlives the connection, for the claim
    /// grace, and then its claims are released.
    pub attached: bool,
    /// For a departed peer, seconds since its connection went; absent while attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_seconds_ago: Option<u64>,
    /// Every claim it holds, in name order with the unnamed claim first; empty if it has
    /// announced nothing.
    #[serde(default)]
    pub claims: Vec<Announcement>,
    /// The most recently announced of its claims, for a reader who wants one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub announcement: Option<Announcement>,
    /// The checkout it is attached to, stamped by whoever gathered the listing; absent when
    /// a server answers about its own board.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkout: Option<PeerCheckout>,
    /// Whether the session waits for the person, why and since when; absent while it works
    /// (or its client never said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
}

/// Why a session waits for the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WaitReason {
    /// Its client asks the person to allow a tool call.
    Permission,
    /// It asked the person something, or sits idle waiting for an answer.
    Question,
    /// It finished its turn and waits for the next prompt.
    Finished,
    /// The guard stopped its tool call: another live session holds what it changes.
    Blocked,
}

/// The live session that holds what a blocked session meant to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WaitHolder {
    /// Its id on its checkout's board.
    pub peer: PeerId,
    /// Its client, as it named itself.
    pub client: String,
    /// The worktree it works in, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
}

/// A session waiting for the person: why, since when, and what its client said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Waiting {
    /// Why it waits.
    pub reason: WaitReason,
    /// When it began waiting, RFC 3339 in UTC: a new reason in the same spell keeps it.
    pub since: StampText,
    /// What its client said, one line cleaned and cut to 200 characters; absent when the
    /// client said nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For `blocked`: the session that holds what it meant to change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<WaitHolder>,
}

/// One pair of claimed paths that meet: equal, or one inside the other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OverlapPath {
    /// Your path, as you wrote it.
    pub yours: String,
    /// The other peer's path, as it wrote it.
    pub theirs: String,
}

/// Another peer's claim on ground you claimed too, so a collision is known when it is made
/// rather than at merge time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Overlap {
    /// The other peer.
    pub peer: PeerId,
    /// Whether the other peer is still attached; an overlap with a departed peer is a
    /// weaker warning than one with a live session, and is listed after those.
    pub attached: bool,
    /// For a departed other peer, seconds since it left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_seconds_ago: Option<u64>,
    /// What the other side is: always `claim`, another peer's claim (what a worktree
    /// changed is listed in `change_overlaps`).
    #[serde(default)]
    pub kind: SideKind,
    /// What the other peer said that claim is for.
    pub intent: String,
    /// The checkout the other peer is attached to, when the answer knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkout: Option<PeerCheckout>,
    /// Pairs of paths that meet, one entry per pair: at most 8, the first by position in
    /// each scope.
    pub paths: Vec<OverlapPath>,
    /// How many more pairs of paths meet than `paths` lists; absent when it lists them all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_paths: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What the board answers an announcement with: you as the board now records you, whose
/// claims on this board meet yours, and which paths your update stopped claiming.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Announced {
    /// The announcing peer, flattened into the answer.
    #[serde(flatten)]
    pub peer: Peer,
    /// Every claim of another peer that meets the one just made, in every worktree of the
    /// repository whose board could be read, departed peers included (after the live
    /// ones); an answer lists at most 32 and counts the rest. Empty is the ordinary case.
    pub overlaps: Vec<Overlap>,
    /// Paths the replaced claim of the same name held that no path of the new one meets:
    /// ground you just stopped warning others off. Empty is the ordinary case.
    pub released: Vec<String>,
}

/// One peer of an overlap in a listing, and which of its claims meet the other peer's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OverlapSide {
    /// The peer.
    pub peer: PeerId,
    /// Whether that peer is still attached; an overlap with a departed peer is a weaker
    /// warning than one with a live session, and is listed after those.
    pub attached: bool,
    /// For a departed peer, seconds since it left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_seconds_ago: Option<u64>,
    /// What this side is: always `claim`, a peer's claims.
    #[serde(default)]
    pub kind: SideKind,
    /// The checkout that peer is attached to, when the answer knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkout: Option<PeerCheckout>,
    /// The names of that peer's claims that meet the other peer's, in the peer's claim
    /// order, `null` for its unnamed claim. What each is for is its `intent` in `peers`.
    #[serde(default)]
    pub claims: Vec<Option<String>>,
}

/// Two peers whose claims meet, as a listing reports them: one entry per pair of peers,
/// however many of their claims meet. The top-level fields are one peer, `with` the other;
/// in `paths` `theirs` is the top-level peer's path and `yours` the `with` peer's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ListedOverlap {
    /// One peer of the pair.
    #[serde(flatten)]
    pub side: OverlapSide,
    /// Pairs of paths that meet, each once, whichever claims hold them: at most 8, the first
    /// by position in each peer's claims.
    pub paths: Vec<OverlapPath>,
    /// How many more pairs of paths meet than `paths` lists; absent when it lists them all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_paths: u32,
    /// The other peer of the pair: the one whose paths are `yours` in `paths`.
    pub with: OverlapSide,
}

/// One peer as a listing reports it: its board's record, whether a bridge carries its client,
/// and an id that no other peer of the listing shares.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ListedPeer {
    /// The peer as its board records it.
    #[serde(flatten)]
    pub peer: Peer,
    /// Whether its client reaches the server through a `majordomus mcp` bridge (another
    /// process's, forwarding over HTTP) rather than being served by the process it started
    /// or connecting over HTTP itself; `transport` says how the client reached majordomus.
    #[serde(default)]
    pub bridged: bool,
    /// Its id qualified by its checkout, `p1@<first 8 digits of the checkout id>`: every
    /// board has its own `p1`, this is unique across the repository's boards.
    #[serde(default)]
    pub qualified_id: String,
}

impl From<AnnounceInput> for board::AnnounceInput {
    fn from(input: AnnounceInput) -> Self {
        board::AnnounceInput {
            intent: input.intent,
            scope: input.scope,
            claim: input.claim,
        }
    }
}

impl From<board::ClientInfo> for ClientInfo {
    fn from(client: board::ClientInfo) -> Self {
        ClientInfo {
            name: client.name,
            version: client.version,
            title: client.title,
        }
    }
}

impl From<ClientInfo> for board::ClientInfo {
    fn from(client: ClientInfo) -> Self {
        board::ClientInfo {
            name: client.name,
            version: client.version,
            title: client.title,
        }
    }
}

impl From<board::Transport> for Transport {
    fn from(transport: board::Transport) -> Self {
        match transport {
            board::Transport::Stdio => Transport::Stdio,
            board::Transport::Http => Transport::Http,
        }
    }
}

impl From<Transport> for board::Transport {
    fn from(transport: Transport) -> Self {
        match transport {
            Transport::Stdio => board::Transport::Stdio,
            Transport::Http => board::Transport::Http,
        }
    }
}

impl From<board::Announcement> for Announcement {
    fn from(claim: board::Announcement) -> Self {
        Announcement {
            name: claim.name,
            intent: claim.intent,
            scope: claim.scope,
            at: claim.at.into(),
            resolved: claim.resolved,
        }
    }
}

impl From<Announcement> for board::Announcement {
    fn from(claim: Announcement) -> Self {
        board::Announcement {
            name: claim.name,
            intent: claim.intent,
            scope: claim.scope,
            at: claim.at.into(),
            resolved: claim.resolved,
            compared: Default::default(),
        }
    }
}

impl From<board::WaitReason> for WaitReason {
    fn from(reason: board::WaitReason) -> Self {
        match reason {
            board::WaitReason::Permission => WaitReason::Permission,
            board::WaitReason::Question => WaitReason::Question,
            board::WaitReason::Finished => WaitReason::Finished,
            board::WaitReason::Blocked => WaitReason::Blocked,
        }
    }
}

impl From<WaitReason> for board::WaitReason {
    fn from(reason: WaitReason) -> Self {
        match reason {
            WaitReason::Permission => board::WaitReason::Permission,
            WaitReason::Question => board::WaitReason::Question,
            WaitReason::Finished => board::WaitReason::Finished,
            WaitReason::Blocked => board::WaitReason::Blocked,
        }
    }
}

impl From<board::Waiting> for Waiting {
    fn from(waiting: board::Waiting) -> Self {
        Waiting {
            reason: waiting.reason.into(),
            since: waiting.since.into(),
            message: waiting.message,
            holder: waiting.holder.map(|holder| WaitHolder {
                peer: holder.peer.into(),
                client: holder.client,
                worktree: holder.worktree,
            }),
        }
    }
}

impl From<Waiting> for board::Waiting {
    fn from(waiting: Waiting) -> Self {
        board::Waiting {
            reason: waiting.reason.into(),
            since: waiting.since.into(),
            message: waiting.message,
            holder: waiting.holder.map(|holder| board::WaitHolder {
                peer: holder.peer.into(),
                client: holder.client,
                worktree: holder.worktree,
            }),
        }
    }
}

impl From<board::Peer> for Peer {
    fn from(peer: board::Peer) -> Self {
        Peer {
            id: peer.id.into(),
            client: peer.client.into(),
            transport: peer.transport.into(),
            connected_at: peer.connected_at.into(),
            last_seen_seconds_ago: peer.last_seen_seconds_ago,
            attached: peer.attached,
            left_seconds_ago: peer.left_seconds_ago,
            claims: peer.claims.into_iter().map(Announcement::from).collect(),
            announcement: peer.announcement.map(Announcement::from),
            checkout: peer.checkout.map(Into::into),
            waiting: peer.waiting.map(Waiting::from),
        }
    }
}

impl From<Peer> for board::Peer {
    /// The peer as its answer wrote it: what the reader believes of it is its own decision.
    fn from(peer: Peer) -> Self {
        board::Peer {
            id: peer.id.into(),
            client: peer.client.into(),
            transport: peer.transport.into(),
            connected_at: peer.connected_at.into(),
            last_seen_seconds_ago: peer.last_seen_seconds_ago,
            attached: peer.attached,
            left_seconds_ago: peer.left_seconds_ago,
            claims: peer
                .claims
                .into_iter()
                .map(board::Announcement::from)
                .collect(),
            announcement: peer.announcement.map(board::Announcement::from),
            checkout: peer.checkout.map(Into::into),
            waiting: peer.waiting.map(board::Waiting::from),
        }
    }
}

impl From<board::OverlapPath> for OverlapPath {
    fn from(pair: board::OverlapPath) -> Self {
        OverlapPath {
            yours: pair.yours,
            theirs: pair.theirs,
        }
    }
}

impl From<board::Overlap> for Overlap {
    fn from(overlap: board::Overlap) -> Self {
        Overlap {
            peer: overlap.peer.into(),
            attached: overlap.attached,
            left_seconds_ago: overlap.left_seconds_ago,
            kind: overlap.kind.into(),
            intent: overlap.intent,
            checkout: overlap.checkout.map(Into::into),
            paths: overlap.paths.into_iter().map(OverlapPath::from).collect(),
            more_paths: overlap.more_paths,
        }
    }
}

impl From<board::Announced> for Announced {
    fn from(announced: board::Announced) -> Self {
        Announced {
            peer: announced.peer.into(),
            overlaps: announced.overlaps.into_iter().map(Overlap::from).collect(),
            released: announced.released,
        }
    }
}

impl From<board::OverlapSide> for OverlapSide {
    fn from(side: board::OverlapSide) -> Self {
        OverlapSide {
            peer: side.peer.into(),
            attached: side.attached,
            left_seconds_ago: side.left_seconds_ago,
            kind: side.kind.into(),
            checkout: side.checkout.map(Into::into),
            claims: side.claims,
        }
    }
}

impl From<board::ListedOverlap> for ListedOverlap {
    fn from(overlap: board::ListedOverlap) -> Self {
        ListedOverlap {
            side: overlap.side.into(),
            paths: overlap.paths.into_iter().map(OverlapPath::from).collect(),
            more_paths: overlap.more_paths,
            with: overlap.with.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_domain::ids::Stamp;
    use serde_json::json;

    fn peer() -> Peer {
        Peer {
            id: board::PeerId::nth(1).into(),
            client: ClientInfo {
                name: "codex".into(),
                version: "1.0".into(),
                title: None,
            },
            transport: Transport::Stdio,
            connected_at: "2026-11-30T02:26:47Z".parse::<Stamp>().unwrap().into(),
            last_seen_seconds_ago: 4,
            attached: true,
            left_seconds_ago: None,
            claims: vec![],
            announcement: None,
            checkout: None,
            waiting: None,
        }
    }

    fn schema_of<T: JsonSchema>() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(T)).unwrap()
    }

    fn required(schema: &serde_json::Value) -> Vec<&str> {
        let mut names: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        names.sort_unstable();
        names
    }

    /// Every field a peer can have, each set: what a reader gets back is what the board had.
    #[test]
    fn a_peer_with_every_field_set_reads_back_as_its_board_had_it() {
        let at: Stamp = "2026-12-01T11:59:00Z".parse().unwrap();
        let claim = |name: Option<&str>| board::Announcement {
            name: name.map(str::to_owned),
            intent: "restructure src".into(),
            scope: vec!["src".into(), "app/[slug]".into()],
            at,
            resolved: vec!["src".into(), "app/[slug]".into()],
            compared: Default::default(),
        };
        let held = board::Peer {
            id: board::PeerId::nth(7),
            client: board::ClientInfo {
                name: "codex".into(),
                version: "0.171.0".into(),
                title: Some("Codex".into()),
            },
            transport: board::Transport::Http,
            connected_at: at,
            last_seen_seconds_ago: 4,
            attached: false,
            left_seconds_ago: Some(12),
            claims: vec![claim(None), claim(Some("docs"))],
            announcement: Some(claim(Some("docs"))),
            checkout: Some(board::PeerCheckout {
                id: "c0ffee".into(),
                worktree: "/repo".into(),
                branch: Some("main".into()),
                this_checkout: true,
                machine: Some("laptop".into()),
            }),
            waiting: Some(board::Waiting {
                reason: board::WaitReason::Blocked,
                since: at,
                message: Some("held".into()),
                holder: Some(board::WaitHolder {
                    peer: board::PeerId::nth(2),
                    client: "claude-code".into(),
                    worktree: Some("/repo-wt".into()),
                }),
            }),
        };
        let text = serde_json::to_string(&Peer::from(held.clone())).unwrap();
        let read: Peer = serde_json::from_str(&text).unwrap();
        assert_eq!(board::Peer::from(read), held);
    }

    #[test]
    fn absent_options_are_left_out() {
        let v = serde_json::to_value(peer()).unwrap();
        let object = v.as_object().unwrap();
        assert!(!object.contains_key("announcement"));
        assert!(!object.contains_key("checkout"));
        assert!(!v["client"].as_object().unwrap().contains_key("title"));
        assert_eq!(v["transport"], "stdio");
    }

    #[test]
    fn announced_flattens_the_peer_in_json_and_schema() {
        let answer = Announced {
            peer: peer(),
            overlaps: vec![],
            released: vec!["docs".into()],
        };
        let v = serde_json::to_value(&answer).unwrap();
        assert_eq!(v["id"], "p1");
        assert_eq!(v["released"], json!(["docs"]));
        let back: Announced = serde_json::from_value(v).unwrap();
        assert_eq!(back, answer);

        let schema = schema_of::<Announced>();
        let properties = schema["properties"].as_object().unwrap();
        for field in [
            "id",
            "client",
            "transport",
            "connected_at",
            "last_seen_seconds_ago",
            "attached",
            "claims",
            "announcement",
            "checkout",
            "overlaps",
            "released",
        ] {
            assert!(properties.contains_key(field), "{field} missing");
        }
        assert!(!properties.contains_key("peer"));
        assert_eq!(
            required(&schema),
            [
                "attached",
                "client",
                "connected_at",
                "id",
                "last_seen_seconds_ago",
                "overlaps",
                "released",
                "transport"
            ]
        );
    }

    #[test]
    fn peer_schema_requires_what_the_seed_requires() {
        assert_eq!(
            required(&schema_of::<Peer>()),
            [
                "attached",
                "client",
                "connected_at",
                "id",
                "last_seen_seconds_ago",
                "transport"
            ]
        );
        let overlap = schema_of::<Overlap>();
        assert_eq!(required(&overlap), ["attached", "intent", "paths", "peer"]);
        assert!(!required(&overlap).contains(&"more_paths"));
        let paths = overlap["properties"]["paths"]["description"]
            .as_str()
            .unwrap();
        assert!(
            paths.contains(&format!("at most {}", limits::OVERLAP_PATH_PAIRS)),
            "{paths}"
        );
    }

    #[test]
    fn a_listed_overlap_names_two_peers_and_their_claims() {
        let side = |n: u64, left_seconds_ago: Option<u64>, claims: Vec<Option<String>>| {
            board::OverlapSide {
                peer: board::PeerId::nth(n),
                attached: left_seconds_ago.is_none(),
                left_seconds_ago,
                kind: board::SideKind::Claim,
                checkout: None,
                claims,
            }
        };
        let listed = ListedOverlap::from(board::ListedOverlap {
            side: side(1, Some(240), vec![None, Some("parser".into())]),
            paths: vec![board::OverlapPath {
                yours: "src/a".into(),
                theirs: "src".into(),
            }],
            more_paths: 0,
            with: side(2, None, vec![Some("fix".into())]),
        });
        let v = serde_json::to_value(&listed).unwrap();
        assert_eq!(v["peer"], "p1");
        assert_eq!(v["with"]["peer"], "p2");
        assert_eq!(
            (&v["kind"], &v["with"]["kind"]),
            (&json!("claim"), &json!("claim"))
        );
        assert_eq!(v["left_seconds_ago"], 240);
        assert!(v["with"].get("left_seconds_ago").is_none(), "{v}");
        assert_eq!(v["claims"], json!([null, "parser"]));
        assert!(
            v.get("intent").is_none(),
            "an intent is listed once, on its peer"
        );
        assert!(v.get("more_paths").is_none(), "{v}");
        assert_eq!(v["paths"][0]["theirs"], "src");
        assert_eq!(serde_json::from_value::<ListedOverlap>(v).unwrap(), listed);

        let schema = schema_of::<ListedOverlap>();
        assert_eq!(required(&schema), ["attached", "paths", "peer", "with"]);
    }

    #[test]
    fn announce_input_matches_the_seed_contract() {
        let schema = schema_of::<AnnounceInput>();
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(required(&schema), ["intent"]);
        assert_eq!(schema["properties"]["scope"]["default"], json!([]));
        let input: AnnounceInput = serde_json::from_str(r#"{"intent":"x"}"#).unwrap();
        assert!(input.scope.is_empty() && input.claim.is_none());
        assert!(serde_json::from_str::<AnnounceInput>(r#"{"scope":[]}"#).is_err());
        assert!(serde_json::from_str::<AnnounceInput>(r#"{"intent":"x","paths":[]}"#).is_err());
        let input: AnnounceInput = serde_json::from_str(
            r#"{"intent":"fix the parser","scope":["src/parse"],"claim":"p"}"#,
        )
        .unwrap();
        let board = board::AnnounceInput::from(input);
        assert_eq!(
            (board.intent.as_str(), board.scope, board.claim),
            (
                "fix the parser",
                vec!["src/parse".to_owned()],
                Some("p".into())
            )
        );
    }

    #[test]
    fn announce_input_schema_carries_the_limits() {
        let schema = schema_of::<AnnounceInput>();
        let properties = &schema["properties"];
        assert_eq!(properties["intent"]["minLength"], 1);
        assert_eq!(properties["intent"]["maxLength"], limits::INTENT_CHARS);
        assert_eq!(properties["scope"]["maxItems"], limits::SCOPE_PATHS);
        assert_eq!(properties["scope"]["items"]["minLength"], 1);
        assert_eq!(
            properties["scope"]["items"]["maxLength"],
            limits::PATH_BYTES
        );
        assert_eq!(properties["claim"]["minLength"], 1, "{schema:#}");
        assert_eq!(properties["claim"]["maxLength"], limits::CLAIM_NAME_CHARS);
        // the descriptions state the limits the board applies
        let scope = properties["scope"]["description"].as_str().unwrap();
        assert!(scope.contains("1,024 bytes and 64 components"), "{scope}");
        let claim = properties["claim"]["description"].as_str().unwrap();
        assert!(claim.contains(&format!("{} named claims", limits::NAMED_CLAIMS)));
    }

    #[test]
    fn a_peer_checkout_schema_requires_what_the_seed_requires() {
        assert_eq!(
            required(&schema_of::<PeerCheckout>()),
            ["id", "this_checkout", "worktree"]
        );
    }

    /// How a client came and why a session waits are written in the words the domain names
    /// them by in text for people.
    #[test]
    fn transports_and_reasons_are_written_as_the_domain_names_them() {
        for transport in [board::Transport::Stdio, board::Transport::Http] {
            let written = serde_json::to_value(Transport::from(transport)).unwrap();
            assert_eq!(written, transport.as_str());
            let read: Transport = serde_json::from_value(written).unwrap();
            assert_eq!(board::Transport::from(read), transport);
        }
        for reason in [
            board::WaitReason::Permission,
            board::WaitReason::Question,
            board::WaitReason::Finished,
            board::WaitReason::Blocked,
        ] {
            let written = serde_json::to_value(WaitReason::from(reason)).unwrap();
            assert_eq!(written, reason.as_str());
            let read: WaitReason = serde_json::from_value(written).unwrap();
            assert_eq!(board::WaitReason::from(read), reason);
        }
    }
}
