//! What one server publishes to the federation: its board, as one versioned JSON document
//! under one key, and how a document another machine published is read. Everything a
//! remote publishes is hostile input: it is bounded before it is parsed and every text in it
//! is held to the limits a local peer is held to before it is listed or compared.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::time::SystemTime;

use majordomus_checkout::config::{FEDERATION_NAME_CHARS, FEDERATION_TTL_SECS};
use majordomus_checkout::stamp_text::StampText;
use majordomus_domain::checkouts::ServerStanding;
use majordomus_domain::ids::{Stamp, identity_digest};
use majordomus_domain::limits;
use majordomus_domain::paths::{ClaimPath, check_written, normalize, without_repeats};
use majordomus_domain::peers::{Announcement, Peer, WaitHolder};
use majordomus_domain::text::{self, Field};
use serde::{Deserialize, Serialize};

use crate::wire::{PublishedPeer, PublishedStanding};

/// The version of the document this code writes and reads. A reader ignores, with a reason,
/// a board of any other version rather than guess at it.
pub const DOCUMENT_VERSION: u32 = 1;

/// Bytes of one published board. A board of a hundred busy agents is a few dozen KB; the
/// bound keeps a hostile publisher from filling a reader's memory.
pub const BOARD_BYTES: usize = 256 * 1024;

/// Peers one published board may list: a server's session limit by default, and a few
/// departed peers beside.
pub const BOARD_PEERS: usize = 1_024;

/// Characters of a published worktree path (Linux refuses longer paths) and branch name.
pub const WORKTREE_BYTES: usize = 4_096;
pub const BRANCH_CHARS: usize = 256;

/// Characters of a reason an ignored board is given, as answers show it.
const REASON_CHARS: usize = 300;

/// Characters of one token of a bucket key before it is shortened with a digest.
const KEY_TOKEN_CHARS: usize = 64;

/// One server's board as it is published: which machine and checkout, where its server
/// stands, who is on it and what they claim.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BoardDocument {
    /// [`DOCUMENT_VERSION`] of the writer.
    pub version: u32,
    /// The machine's name in the federation.
    pub machine: String,
    /// The checkout the board is of.
    pub checkout: PublishedCheckout,
    /// Where the checkout's server stands, as it knows it.
    pub standing: PublishedStanding,
    /// How many seconds the board is to be believed unless it is published again.
    pub ttl_secs: u64,
    /// When it was published, RFC 3339 in UTC.
    pub published_at: StampText,
    /// The board's peers, as `peers.list` with `checkouts: this` answers them.
    pub peers: Vec<PublishedPeer>,
    /// Peers left out to keep the document within [`BOARD_BYTES`] and [`BOARD_PEERS`].
    #[serde(default)]
    pub omitted_peers: usize,
}

/// The checkout a published board is of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishedCheckout {
    /// Its identity digest on its machine.
    pub id: String,
    /// Where it is on its machine.
    pub worktree: String,
    /// The branch checked out there, when it could be read.
    pub branch: Option<String>,
}

/// The three tokens of a board's key, `<repository>.<machine>.<checkout>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BoardKey {
    pub repository: String,
    pub machine: String,
    pub checkout: String,
}

impl BoardKey {
    /// The key of a board: each part made a token a NATS key accepts.
    pub fn new(repository: &str, machine: &str, checkout_id: &str) -> BoardKey {
        BoardKey {
            repository: key_token(repository),
            machine: key_token(machine),
            checkout: key_token(checkout_id),
        }
    }

    /// Splits a key read from the bucket; `None` unless it has exactly three tokens.
    pub fn parse(key: &str) -> Option<BoardKey> {
        let mut tokens = key.split('.');
        let (Some(repository), Some(machine), Some(checkout), None) =
            (tokens.next(), tokens.next(), tokens.next(), tokens.next())
        else {
            return None;
        };
        Some(BoardKey {
            repository: repository.to_owned(),
            machine: machine.to_owned(),
            checkout: checkout.to_owned(),
        })
    }

    /// The key as the bucket stores it.
    pub fn as_key(&self) -> String {
        format!("{}.{}.{}", self.repository, self.machine, self.checkout)
    }

    /// What a watch of every board of one repository filters on.
    pub fn repository_filter(repository_token: &str) -> String {
        format!("{repository_token}.>")
    }
}

/// `text` as one token of a NATS key, different texts giving different tokens: ASCII
/// letters, digits and `-` stay; every other byte becomes `_` and two hex digits. A token
/// longer than 64 characters keeps its first 40 and adds `=` and a digest of the whole, a
/// character the escaping never writes.
pub fn key_token(text: &str) -> String {
    let mut token = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' {
            token.push(char::from(byte));
        } else {
            let _ = write!(token, "_{byte:02X}");
        }
    }
    if token.is_empty() {
        token.push('_');
    }
    if token.len() > KEY_TOKEN_CHARS {
        token.truncate(40);
        token.push('=');
        token.push_str(&identity_digest(text)[..16]);
    }
    token
}

impl BoardDocument {
    /// The document of a board: at most [`BOARD_PEERS`] peers, attached ones first, and as
    /// many as fit in [`BOARD_BYTES`]; the rest are counted in `omitted_peers`. Answers the
    /// serialized bytes with it.
    pub fn publish(
        machine: &str,
        checkout: PublishedCheckout,
        standing: ServerStanding,
        ttl_secs: u64,
        now: SystemTime,
        mut peers: Vec<Peer>,
    ) -> (BoardDocument, Vec<u8>) {
        peers.sort_by_key(|peer| !peer.attached);
        let total = peers.len();
        let mut document = BoardDocument {
            version: DOCUMENT_VERSION,
            machine: machine.to_owned(),
            checkout,
            standing: standing.into(),
            ttl_secs,
            published_at: Stamp::at(now).into(),
            peers: peers.into_iter().map(PublishedPeer::from).collect(),
            omitted_peers: 0,
        };
        let encode = |document: &BoardDocument| {
            serde_json::to_vec(document).expect("a board document serialises")
        };
        document.peers.truncate(BOARD_PEERS);
        document.omitted_peers = total - document.peers.len();
        let mut bytes = encode(&document);
        if bytes.len() > BOARD_BYTES {
            // The longest run of peers that fits, found in a logarithmic number of tries.
            let all = std::mem::take(&mut document.peers);
            let (mut fits, mut too_many) = (0, all.len());
            while too_many - fits > 1 {
                let middle = fits + (too_many - fits) / 2;
                document.peers = all[..middle].to_vec();
                if encode(&document).len() <= BOARD_BYTES {
                    fits = middle;
                } else {
                    too_many = middle;
                }
            }
            document.peers = all[..fits].to_vec();
            document.omitted_peers = total - fits;
            bytes = encode(&document);
        }
        (document, bytes)
    }

    /// Reads a document another machine published under `key`, or says why it is ignored.
    /// `key` must name the machine and checkout the document says it is of, and every text
    /// in it must pass the limits a local peer's would.
    pub fn read(key: &BoardKey, bytes: &[u8]) -> Result<RemoteBoard, String> {
        if bytes.len() > BOARD_BYTES {
            return Err(format!(
                "it is {} bytes, more than the {BOARD_BYTES} a published board may have",
                bytes.len()
            ));
        }
        let document: BoardDocument = serde_json::from_slice(bytes)
            .map_err(|error| reason(&format!("it is not a board document: {error}")))?;
        if document.version != DOCUMENT_VERSION {
            return Err(format!(
                "it is of version {}, and this majordomus reads version {DOCUMENT_VERSION}",
                document.version
            ));
        }
        plain("machine", &document.machine, FEDERATION_NAME_CHARS)?;
        if key_token(&document.machine) != key.machine {
            return Err("the machine it names is not the one its key names".into());
        }
        let checkout = &document.checkout;
        if checkout.id.len() != 32 || !checkout.id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("its checkout id is not a checkout's identity digest".into());
        }
        if checkout.id != key.checkout {
            return Err("the checkout it names is not the one its key names".into());
        }
        plain_bytes("worktree", &checkout.worktree, WORKTREE_BYTES)?;
        if let Some(branch) = &checkout.branch {
            plain("branch", branch, BRANCH_CHARS)?;
        }
        if !FEDERATION_TTL_SECS.contains(&document.ttl_secs) {
            return Err(format!(
                "its lifetime of {} seconds is outside {} to {}",
                document.ttl_secs,
                FEDERATION_TTL_SECS.start(),
                FEDERATION_TTL_SECS.end()
            ));
        }
        if document.peers.len() > BOARD_PEERS {
            return Err(format!(
                "it lists {} peers, more than the {BOARD_PEERS} a published board may",
                document.peers.len()
            ));
        }
        let mut ids = HashSet::with_capacity(document.peers.len());
        let mut claim_paths = Vec::new();
        let mut peers = Vec::with_capacity(document.peers.len());
        for (at, peer) in document.peers.into_iter().enumerate() {
            let peer = checked_peer(Peer::from(peer))
                .map_err(|why| reason(&format!("peer {}: {why}", at + 1)))?;
            if !ids.insert(peer.id.clone()) {
                return Err(reason(&format!("peer `{}` is listed twice", peer.id)));
            }
            for (claim, announced) in peer.claims.iter().enumerate() {
                let paths: Vec<ClaimPath> = announced
                    .scope
                    .iter()
                    .filter_map(|raw| normalize(raw, &checkout.worktree).ok())
                    .collect();
                claim_paths.push(ClaimPaths {
                    peer: peers.len(),
                    claim,
                    paths: without_repeats(paths),
                });
            }
            peers.push(peer);
        }
        Ok(RemoteBoard {
            machine: document.machine,
            checkout: document.checkout,
            standing: document.standing.into(),
            ttl_secs: document.ttl_secs,
            peers,
            omitted_peers: document.omitted_peers,
            claim_paths,
        })
    }
}

/// A board another machine published, as read and checked: what a listing shows of it, and
/// its claims' paths normalised once for announce-time overlaps.
#[derive(Clone, Debug)]
pub struct RemoteBoard {
    pub machine: String,
    pub checkout: PublishedCheckout,
    pub standing: ServerStanding,
    pub ttl_secs: u64,
    /// Its peers, each checked, its client's words cleaned as a local client's are.
    pub peers: Vec<Peer>,
    pub omitted_peers: usize,
    /// Every claim's normalised paths, without repeats.
    pub claim_paths: Vec<ClaimPaths>,
}

/// The normalised paths of one claim of a remote board.
#[derive(Clone, Debug)]
pub struct ClaimPaths {
    /// The peer's position in [`RemoteBoard::peers`].
    pub peer: usize,
    /// The claim's position in that peer's claims.
    pub claim: usize,
    pub paths: Vec<ClaimPath>,
}

/// A remote peer held to the rules of a local one, or why it is not.
fn checked_peer(mut peer: Peer) -> Result<Peer, String> {
    let id = peer.id.as_str();
    let digits = id.strip_prefix('p').unwrap_or("");
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("its id is not of the form `p<number>`".into());
    }
    peer.client = peer.client.sanitized();
    if peer.claims.len() > limits::NAMED_CLAIMS + 1 {
        return Err(format!(
            "it holds {} claims, more than a peer may",
            peer.claims.len()
        ));
    }
    let mut names = HashSet::with_capacity(peer.claims.len());
    for claim in &peer.claims {
        checked_claim(claim)?;
        if !names.insert(claim.name.as_deref()) {
            return Err("two of its claims have one name".into());
        }
    }
    if let Some(latest) = &peer.announcement {
        checked_claim(latest)?;
    }
    // A remote session waiting for the person is shown as a local one is: one clean line.
    if let Some(waiting) = &mut peer.waiting {
        waiting.message = waiting
            .message
            .take()
            .map(|message| text::sanitized(&message, limits::WAIT_MESSAGE_CHARS))
            .filter(|message| !message.is_empty());
        waiting.holder = waiting.holder.take().map(WaitHolder::sanitized);
    }
    // The reader stamps each peer with its checkout; a publisher's own stamp is not believed.
    peer.checkout = None;
    Ok(peer)
}

/// One claim held to the rules an announcement is held to.
fn checked_claim(claim: &Announcement) -> Result<(), String> {
    text::check(Field::Intent, claim.intent.trim()).map_err(|error| error.to_string())?;
    if let Some(name) = &claim.name {
        text::check(Field::ClaimName, name.trim()).map_err(|error| error.to_string())?;
    }
    if claim.scope.len() > limits::SCOPE_PATHS {
        return Err(format!(
            "a scope of {} paths, more than the {} a claim may have",
            claim.scope.len(),
            limits::SCOPE_PATHS
        ));
    }
    for path in &claim.scope {
        check_written(path).map_err(|error| error.to_string())?;
    }
    Ok(())
}

/// A text of at most `max_chars` characters, without line breaks, control or bidirectional
/// formatting characters.
fn plain(field: &str, value: &str, max_chars: usize) -> Result<(), String> {
    if value.chars().count() > max_chars {
        return Err(format!("its {field} is longer than {max_chars} characters"));
    }
    if text::find_refused(value).is_some() {
        return Err(format!("its {field} is not plain text"));
    }
    Ok(())
}

/// [`plain`], bounded in bytes.
fn plain_bytes(field: &str, value: &str, max_bytes: usize) -> Result<(), String> {
    if value.len() > max_bytes {
        return Err(format!("its {field} is longer than {max_bytes} bytes"));
    }
    plain(field, value, max_bytes)
}

/// A reason that may quote what a remote wrote, escaped and cut to a line.
fn reason(text: &str) -> String {
    text::sanitized(&text::for_terminal(text), REASON_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_domain::peers::{ClientInfo, PeerId, Transport};

    const CHECKOUT: &str = "0123456789abcdef0123456789abcdef";

    fn peer(n: u64, intent: &str, scope: &[&str]) -> Peer {
        let claim = Announcement {
            name: None,
            intent: intent.into(),
            scope: scope.iter().map(|s| (*s).to_owned()).collect(),
            at: "2026-11-30T02:26:47Z".parse().unwrap(),
            resolved: Vec::new(),
            compared: Default::default(),
        };
        Peer {
            id: PeerId::nth(n),
            client: ClientInfo {
                name: "codex".into(),
                version: "1".into(),
                title: None,
            },
            transport: Transport::Http,
            connected_at: "2026-11-30T02:26:47Z".parse().unwrap(),
            last_seen_seconds_ago: 0,
            attached: true,
            left_seconds_ago: None,
            announcement: Some(claim.clone()),
            claims: vec![claim],
            checkout: None,
            waiting: None,
        }
    }

    fn checkout() -> PublishedCheckout {
        PublishedCheckout {
            id: CHECKOUT.into(),
            worktree: "/work/repo".into(),
            branch: Some("main".into()),
        }
    }

    fn published(peers: Vec<Peer>) -> Vec<u8> {
        let (_, bytes) = BoardDocument::publish(
            "laptop",
            checkout(),
            ServerStanding::Ready,
            30,
            SystemTime::now(),
            peers,
        );
        bytes
    }

    fn key() -> BoardKey {
        BoardKey::new("repo", "laptop", CHECKOUT)
    }

    #[test]
    fn key_tokens_are_valid_distinct_and_bounded() {
        assert_eq!(key_token("laptop-7"), "laptop-7");
        assert_eq!(key_token("my.host"), "my_2Ehost");
        assert_ne!(key_token("my.host"), key_token("my_host"));
        assert_eq!(key_token("a b*>"), "a_20b_2A_3E");
        let long = "x".repeat(200);
        let token = key_token(&long);
        assert!(
            token.len() <= KEY_TOKEN_CHARS && token.contains('='),
            "{token}"
        );
        assert_ne!(token, key_token(&"x".repeat(201)));
        let key = BoardKey::new("repo", "my.host", CHECKOUT);
        assert_eq!(BoardKey::parse(&key.as_key()), Some(key));
        assert_eq!(BoardKey::parse("repo.a.b.c"), None);
        assert_eq!(BoardKey::parse("repo.a"), None);
    }

    #[test]
    fn a_published_board_reads_back() {
        let bytes = published(vec![peer(1, "parse", &["src/parser", "/work/repo/docs"])]);
        let board = BoardDocument::read(&key(), &bytes).unwrap();
        assert_eq!(board.machine, "laptop");
        assert_eq!(board.peers.len(), 1);
        assert_eq!(board.claim_paths.len(), 1);
        let components: Vec<&[String]> = board.claim_paths[0]
            .paths
            .iter()
            .map(ClaimPath::components)
            .collect();
        assert_eq!(components, [&["src", "parser"][..], &["docs"][..]]);
    }

    #[test]
    fn a_board_too_large_is_published_with_fewer_peers_and_says_so() {
        let wide: Vec<String> = (0..200).map(|n| format!("src/{n:0>900}")).collect();
        let wide: Vec<&str> = wide.iter().map(String::as_str).collect();
        let peers: Vec<Peer> = (1..=10).map(|n| peer(n, "wide", &wide)).collect();
        let (document, bytes) = BoardDocument::publish(
            "laptop",
            checkout(),
            ServerStanding::Ready,
            30,
            SystemTime::now(),
            peers,
        );
        assert!(bytes.len() <= BOARD_BYTES);
        assert!(document.omitted_peers > 0);
        assert_eq!(document.peers.len() + document.omitted_peers, 10);
        assert!(BoardDocument::read(&key(), &bytes).is_ok());
    }

    #[test]
    fn hostile_boards_are_ignored_with_a_reason() {
        let refused = |bytes: &[u8]| BoardDocument::read(&key(), bytes).unwrap_err();
        assert!(refused(&vec![b' '; BOARD_BYTES + 1]).contains("more than the"));
        assert!(refused(b"{\"version\": 1").contains("not a board document"));
        let escape = refused(b"{\"version\": \"\x1b[2J\"}");
        assert!(!escape.contains('\u{1b}'), "{escape}");

        let mut value: serde_json::Value =
            serde_json::from_slice(&published(vec![peer(1, "x", &["src"])])).unwrap();
        let with = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut changed = value.clone();
            edit(&mut changed);
            refused(&serde_json::to_vec(&changed).unwrap())
        };
        assert!(with(&|v| v["version"] = 2.into()).contains("version 2"));
        assert!(with(&|v| v["machine"] = "sandbox".into()).contains("its key names"));
        assert!(with(&|v| v["checkout"]["id"] = "../../etc".into()).contains("identity digest"));
        assert!(
            with(&|v| v["peers"][0]["claims"][0]["intent"] = "a\u{1b}]8;;evil".into())
                .contains("intent")
        );
        assert!(with(&|v| v["peers"][0]["id"] = "root".into()).contains("p<number>"));
        assert!(
            with(&|v| v["peers"][0]["claims"][0]["scope"] = vec!["a"; 300].into())
                .contains("300 paths")
        );
        assert!(with(&|v| v["ttl_secs"] = 0.into()).contains("lifetime"));
        let stamp = with(&|v| v["peers"][0]["claims"][0]["at"] = "\u{1b}[2J yesterday".into());
        assert!(stamp.contains("is not an instant"), "{stamp}");
        assert!(!stamp.contains('\u{1b}'), "{stamp}");
        assert!(
            with(&|v| v["published_at"] = "2026-11-30T02:26:47.5Z".into())
                .contains("is not an instant")
        );
        assert!(
            with(&|v| {
                let first = v["peers"][0].clone();
                v["peers"].as_array_mut().unwrap().push(first);
            })
            .contains("listed twice")
        );
        value["peers"][0]["client"]["name"] = "evil\u{1b}[31m".into();
        let board = BoardDocument::read(&key(), &serde_json::to_vec(&value).unwrap()).unwrap();
        assert!(!board.peers[0].client.name.contains('\u{1b}'));
    }
}
