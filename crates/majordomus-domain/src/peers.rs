//! The peer board's vocabulary: who is attached, what they claimed, and where claims meet.
//!
//! The answers of `peers.announce` and `peers.list` write peers, claims and overlaps as types
//! of their own, converted from these. The doc comments of the types a schema still names
//! (a peer's id and checkout, why a session waits, the input of an announce) are the
//! descriptions clients read there.
//!
//! ```
//! use majordomus_domain::peers::{AnnounceInput, ClientInfo, PeerId};
//!
//! assert_eq!(PeerId::nth(3).as_str(), "p3");
//! let input: AnnounceInput =
//!     serde_json::from_str(r#"{"intent": "fix the parser", "scope": ["src/parse"]}"#).unwrap();
//! assert_eq!(input.scope, ["src/parse"]);
//! assert!(serde_json::from_str::<AnnounceInput>(r#"{"intent": "x", "paths": []}"#).is_err());
//! assert_eq!(ClientInfo::uninitialized().name, "(not initialized)");
//! ```

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::Stamp;
use crate::{limits, text};

/// A peer's id on one server's board: `p1`, `p2`, … in attachment order, never reused while
/// that server runs. A position on one board, not a durable identity.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct PeerId(pub String);

impl PeerId {
    /// The id of the `n`th peer to attach: `p{n}`.
    pub fn nth(n: u64) -> Self {
        PeerId(format!("p{n}"))
    }

    /// The id as written in answers.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PeerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a client said about itself when it initialized the MCP session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientInfo {
    /// The client's `clientInfo.name`, such as `claude-code`, `codex` or `gemini-cli`.
    pub name: String,
    /// The client's `clientInfo.version`.
    pub version: String,
    /// The client's `clientInfo.title`, when it sent one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl ClientInfo {
    /// What a peer is known as before (or without) an `initialize` naming its client.
    pub fn uninitialized() -> Self {
        ClientInfo {
            name: "(not initialized)".to_owned(),
            version: String::new(),
            title: None,
        }
    }

    /// What the board keeps of what a client said about itself. A client cannot correct its
    /// own name, so nothing is refused: line breaks, control and format characters become
    /// U+FFFD, each text is cut to its limit
    /// ([`limits::CLIENT_NAME_CHARS`], [`limits::CLIENT_VERSION_CHARS`],
    /// [`limits::CLIENT_TITLE_CHARS`]), a blank name reads as an uninitialized client and a
    /// blank title as none.
    pub fn sanitized(self) -> Self {
        let name = text::sanitized(&self.name, limits::CLIENT_NAME_CHARS);
        ClientInfo {
            name: if name.is_empty() {
                ClientInfo::uninitialized().name
            } else {
                name
            },
            version: text::sanitized(&self.version, limits::CLIENT_VERSION_CHARS),
            title: self
                .title
                .map(|title| text::sanitized(&title, limits::CLIENT_TITLE_CHARS))
                .filter(|title| !title.is_empty()),
        }
    }
}

/// How a peer's client reached majordomus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum Transport {
    /// Over the stdin and stdout of the `majordomus mcp` process it started: the process that
    /// serves, or a bridge to it.
    Stdio,
    /// MCP over HTTP at `/mcp`, spoken by the client itself.
    Http,
}

impl Transport {
    /// The word this transport is written as in answers.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One claim a peer holds: what it is doing and which paths it expects to touch. A peer
/// may hold several, told apart by name; announcing under the same name replaces one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    pub at: Stamp,
    /// Where each path of `scope` is on disk, in the same order, repository-relative (`.`
    /// for the whole repository) with symbolic links followed: what overlaps are found on.
    /// Present only when one of them differs from what its text says: a link followed, or
    /// a glob-looking name (`app/[slug]`) that exists and so is a literal path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved: Vec<String>,
}

/// Which checkout of the repository a peer is attached to. Peer ids restart at `p1` on
/// every board, so a repository-wide answer qualifies each peer with this.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
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

/// One peer as its board records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Its id on its board: `p1`, `p2`, …
    pub id: PeerId,
    /// The client behind the connection.
    pub client: ClientInfo,
    /// How it is connected.
    pub transport: Transport,
    /// When it attached, RFC 3339 in UTC.
    pub connected_at: Stamp,
    /// Seconds since its last message.
    pub last_seen_seconds_ago: u64,
    /// Whether its connection is still open. A peer that leaves holding claims stays on the
    /// board with `false`: the work it announced outlives the connection, for the claim
    /// grace, and then its claims are released.
    pub attached: bool,
    /// For a departed peer, seconds since its connection went; absent while attached.
    pub left_seconds_ago: Option<u64>,
    /// Every claim it holds, in name order with the unnamed claim first; empty if it has
    /// announced nothing.
    pub claims: Vec<Announcement>,
    /// The most recently announced of its claims, for a reader who wants one line.
    pub announcement: Option<Announcement>,
    /// The checkout it is attached to, stamped by whoever gathered the listing; absent when
    /// a server answers about its own board.
    pub checkout: Option<PeerCheckout>,
    /// Whether the session waits for the person, why and since when; absent while it works
    /// (or its client never said).
    pub waiting: Option<Waiting>,
}

/// Why a session waits for the person.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(test, derive(strum::VariantArray))]
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

impl WaitReason {
    /// The word answers write it as.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The live session that holds what a blocked session meant to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitHolder {
    /// Its id on its checkout's board.
    pub peer: PeerId,
    /// Its client, as it named itself.
    pub client: String,
    /// The worktree it works in, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
}

impl WaitHolder {
    /// What the board keeps of a holder a hook named: each text cleaned and cut to its bound
    /// ([`limits::CLIENT_NAME_CHARS`], [`limits::PATH_BYTES`] characters for the worktree).
    pub fn sanitized(self) -> WaitHolder {
        WaitHolder {
            peer: PeerId(text::sanitized(&self.peer.0, limits::CLIENT_NAME_CHARS)),
            client: text::sanitized(&self.client, limits::CLIENT_NAME_CHARS),
            worktree: self
                .worktree
                .map(|worktree| text::sanitized(&worktree, limits::PATH_BYTES))
                .filter(|worktree| !worktree.is_empty()),
        }
    }
}

/// A session waiting for the person: why, since when, and what its client said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    /// Why it waits.
    pub reason: WaitReason,
    /// When it began waiting, RFC 3339 in UTC: a new reason in the same spell keeps it.
    pub since: Stamp,
    /// What its client said, one line cleaned and cut to 200 characters; absent when the
    /// client said nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For `blocked`: the session that holds what it meant to change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<WaitHolder>,
}

/// One pair of claimed paths that meet: equal, or one inside the other.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OverlapPath {
    /// Your path, as you wrote it.
    pub yours: String,
    /// The other peer's path, as it wrote it.
    pub theirs: String,
}

/// Another peer's claim on ground you claimed too, so a collision is known when it is made
/// rather than at merge time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// The other peer.
    pub peer: PeerId,
    /// Whether the other peer is still attached; an overlap with a departed peer is a
    /// weaker warning than one with a live session, and is listed after those.
    pub attached: bool,
    /// For a departed other peer, seconds since it left.
    pub left_seconds_ago: Option<u64>,
    /// What the other side is: always `claim`, another peer's claim (what a worktree
    /// changed is listed in `change_overlaps`).
    pub kind: SideKind,
    /// What the other peer said that claim is for.
    pub intent: String,
    /// The checkout the other peer is attached to, when the answer knows it.
    pub checkout: Option<PeerCheckout>,
    /// Pairs of paths that meet, one entry per pair: at most 8, the first by position in
    /// each scope.
    pub paths: Vec<OverlapPath>,
    /// How many more pairs of paths meet than `paths` lists; absent when it lists them all.
    pub more_paths: u32,
}

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

/// What the board answers an announcement with: you as the board now records you, whose
/// claims on this board meet yours, and which paths your update stopped claiming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announced {
    /// The announcing peer.
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlapSide {
    /// The peer.
    pub peer: PeerId,
    /// Whether that peer is still attached; an overlap with a departed peer is a weaker
    /// warning than one with a live session, and is listed after those.
    pub attached: bool,
    /// For a departed peer, seconds since it left.
    pub left_seconds_ago: Option<u64>,
    /// What this side is: always `claim`, a peer's claims.
    pub kind: SideKind,
    /// The checkout that peer is attached to, when the answer knows it.
    pub checkout: Option<PeerCheckout>,
    /// The names of that peer's claims that meet the other peer's, in the peer's claim
    /// order, `null` for its unnamed claim. What each is for is its `intent` in `peers`.
    pub claims: Vec<Option<String>>,
}

/// Two peers whose claims meet, as a listing reports them: one entry per pair of peers,
/// however many of their claims meet. The top-level fields are one peer, `with` the other;
/// in `paths` `theirs` is the top-level peer's path and `yours` the `with` peer's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedOverlap {
    /// One peer of the pair.
    pub side: OverlapSide,
    /// Pairs of paths that meet, each once, whichever claims hold them: at most 8, the first
    /// by position in each peer's claims.
    pub paths: Vec<OverlapPath>,
    /// How many more pairs of paths meet than `paths` lists; absent when it lists them all.
    pub more_paths: u32,
    /// The other peer of the pair: the one whose paths are `yours` in `paths`.
    pub with: OverlapSide,
}

/// What one side of an overlap is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SideKind {
    /// A peer's claim: what it said it would touch.
    #[default]
    Claim,
    /// A worktree's changes, as git knows them: what was actually touched.
    Change,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::assert_serde_words;
    use serde_json::json;

    #[test]
    fn serde_writes_each_transport_as_as_str_says() {
        assert_serde_words(Transport::as_str);
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

    #[test]
    fn peer_ids_count_from_one() {
        assert_eq!(PeerId::nth(1).to_string(), "p1");
        assert_eq!(serde_json::to_value(PeerId::nth(12)).unwrap(), "p12");
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
    }

    #[test]
    fn a_peer_checkout_schema_requires_what_the_seed_requires() {
        assert_eq!(
            required(&schema_of::<PeerCheckout>()),
            ["id", "this_checkout", "worktree"]
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
}
