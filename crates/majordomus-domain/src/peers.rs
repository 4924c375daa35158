//! The peer board's vocabulary: who is attached, what they claimed, and where claims meet.
//!
//! The answers of `peers.announce` and `peers.list`, the input of an announce, the events of
//! the board, the published board and the hand-over file write these in types of their own,
//! converted from and into these; what clients read is described there.
//!
//! ```
//! use majordomus_domain::peers::{ClientInfo, PeerId, Transport, WaitReason};
//!
//! assert_eq!(PeerId::nth(3).as_str(), "p3");
//! assert_eq!(Transport::Stdio.as_str(), "stdio");
//! assert_eq!(WaitReason::Blocked.as_str(), "blocked");
//! assert_eq!(ClientInfo::uninitialized().name, "(not initialized)");
//! ```

use std::fmt;
use std::sync::Arc;

use crate::ids::Stamp;
use crate::paths::ClaimPath;
use crate::{limits, text};

/// A peer's id on one server's board: `p1`, `p2`, … in attachment order, never reused while
/// that server runs. A position on one board, not a durable identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// The client's `clientInfo.name`, such as `claude-code`, `codex` or `gemini-cli`.
    pub name: String,
    /// The client's `clientInfo.version`.
    pub version: String,
    /// The client's `clientInfo.title`, when it sent one.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    /// The claim's name, when the peer gave one; absent for the peer's unnamed claim.
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
    pub resolved: Vec<String>,
    /// The paths the board holding the claim compares it on, when this copy came from that
    /// board in this process: a reader then need not read `scope` into paths again.
    pub compared: KeptPaths,
}

/// The paths a board compares one claim on ([`ClaimPath`]s, without repeats), kept beside
/// the claim it listed. Not part of what the claim says: it is absent from every copy read
/// off the wire, and two announcements are equal whatever they keep here.
#[derive(Debug, Clone, Default)]
pub struct KeptPaths(pub Option<Arc<[ClaimPath]>>);

impl PartialEq for KeptPaths {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for KeptPaths {}

/// Which checkout of the repository a peer is attached to. Peer ids restart at `p1` on
/// every board, so a repository-wide answer qualifies each peer with this.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PeerCheckout {
    /// The checkout's identity digest, as `server.status` reports `checkout_id`: stable
    /// across restarts and never a path.
    pub id: String,
    /// Where the checkout is on disk; unlike a peer id, it survives a reconnect.
    pub worktree: String,
    /// The branch checked out there, when it could be read.
    pub branch: Option<String>,
    /// Whether this is the checkout of the server that answered.
    pub this_checkout: bool,
    /// The machine the checkout is on, in an answer that reaches other machines (a listing
    /// with `checkouts: everywhere`, an announce meeting another machine's claim); absent
    /// otherwise.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitHolder {
    /// Its id on its checkout's board.
    pub peer: PeerId,
    /// Its client, as it named itself.
    pub client: String,
    /// The worktree it works in, when known.
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// Why it waits.
    pub reason: WaitReason,
    /// When it began waiting, RFC 3339 in UTC: a new reason in the same spell keeps it.
    pub since: Stamp,
    /// What its client said, one line cleaned and cut to 200 characters; absent when the
    /// client said nothing.
    pub message: Option<String>,
    /// For `blocked`: the session that holds what it meant to change.
    pub holder: Option<WaitHolder>,
}

/// One pair of claimed paths that meet: equal, or one inside the other.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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

/// What a peer announces, as `peers.announce` was asked it: what it is working on and where,
/// not yet checked ([`crate::board::CheckedAnnouncement`] checks it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnounceInput {
    /// One line in the peer's own words: the task, question or intent.
    pub intent: String,
    /// Repository-relative paths (directories, files or globs) it expects to touch; `.` is
    /// the whole repository.
    pub scope: Vec<String>,
    /// The claim's name, when one session carries several pieces of work; none for the
    /// peer's one unnamed claim.
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
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

    #[test]
    fn peer_ids_count_from_one() {
        assert_eq!(PeerId::nth(1).to_string(), "p1");
        assert_eq!(PeerId::nth(12).as_str(), "p12");
    }
}
