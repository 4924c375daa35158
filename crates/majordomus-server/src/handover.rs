//! The claims a serving process hands to the next server of its checkout, so that claims
//! which outlive a connection outlive the process too: a server killed (`kill -9`) or ended
//! with its client (the SIGTERM a client sends its stdio server at exit) leaves its board's
//! claims to whichever server the checkout gets next.
//!
//! - *Where*: `claims.json` beside the lease (`<git dir>/majordomus/`, 0600), replaced whole
//!   (temporary file, fsync, rename) under the lease lock and only while the lease is this
//!   server's: a server that lost its lease never writes it again.
//! - *What*: every peer holding claims — departed ones with when they left, attached ones
//!   too, since they depart the instant the process dies — each with what lets its owner
//!   take its claims back: the worker identity its bridge named, the episode it held. At
//!   most [`DEPARTED_CAP`] peers (the latest to leave; the next board keeps no more) and
//!   [`MAX_BYTES`] bytes. No claims, no file.
//! - *When*: off the async workers, once changes have gathered for [`GATHER`] after a
//!   change of the board, and at every ordered stop before the lease is let go. While it
//!   holds attached peers' claims its modification time is refreshed every tenth of the
//!   claim grace (1 to 10 s): it says when the process was last known alive, which is when
//!   those peers left should it be killed.
//! - *The next server* reads it once it holds the lease, before it answers anyone: every
//!   peer in it is departed, since it left or since the file was last written or refreshed,
//!   and keeps the rest of its grace; a bridge re-attaching with its worker identity or a
//!   client resuming its episode takes its claims back, so a worker never overlaps its
//!   former slot. It then writes the file as its own.
//! - *How*: in types of the file's own, converted from the board's when it is written and
//!   back into them when it is read: the next server may be of another build, so what is on
//!   disk changes only where these types are written down, never because the board's did.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use majordomus_checkout::lease::read_beside;
use majordomus_checkout::stamp_text::StampText;
use majordomus_domain::board::{DEPARTED_CAP, HandedOver};
use majordomus_domain::peers::{Announcement, ClientInfo, PeerId, Transport};
use majordomus_domain::sync::LockExt;
use serde::{Deserialize, Serialize};

use super::handover_state::Written;
use super::{ServerState, WorkerSlot};

/// The file beside the lease.
const FILE: &str = "claims.json";

/// What the file says it is; a file of another schema is not read.
const SCHEMA: &str = "majordomus-claims/v1";

/// The most bytes the file holds: peers beyond it, the earliest to leave first, are left
/// out, and a larger file is not read. A real board's claims take a few kilobytes.
const MAX_BYTES: usize = 8 * 1024 * 1024;

/// How long changes of the board gather before the file is written: a burst of announces
/// costs one write.
const GATHER: Duration = Duration::from_millis(300);

/// The file as written.
#[derive(Serialize, Deserialize)]
struct Document {
    schema: String,
    /// The checkout it is for; a file found elsewhere (a worktree moved) is not read.
    root: String,
    peers: Vec<Record>,
}

/// One peer holding claims.
#[derive(Serialize, Deserialize)]
struct Record {
    client: ClientRecord,
    transport: TransportRecord,
    connected_at: StampText,
    /// When it left, in milliseconds since 1970; absent for a peer attached when written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    left_at_ms: Option<u64>,
    /// The episode it held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    episode: Option<String>,
    /// The worker that its connection named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    worker: Option<WorkerRecord>,
    claims: Vec<ClaimRecord>,
}

#[derive(Serialize, Deserialize)]
struct WorkerRecord {
    identity: String,
    bridged: bool,
}

/// What the peer's client said about itself.
#[derive(Serialize, Deserialize)]
struct ClientRecord {
    name: String,
    version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
}

/// How the peer's client reached the server.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum TransportRecord {
    Stdio,
    Http,
}

/// One claim the peer holds.
#[derive(Serialize, Deserialize)]
struct ClaimRecord {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    intent: String,
    scope: Vec<String>,
    at: StampText,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    resolved: Vec<String>,
}

impl From<ClientInfo> for ClientRecord {
    fn from(client: ClientInfo) -> Self {
        ClientRecord {
            name: client.name,
            version: client.version,
            title: client.title,
        }
    }
}

impl From<ClientRecord> for ClientInfo {
    fn from(client: ClientRecord) -> Self {
        ClientInfo {
            name: client.name,
            version: client.version,
            title: client.title,
        }
    }
}

impl From<Transport> for TransportRecord {
    fn from(transport: Transport) -> Self {
        match transport {
            Transport::Stdio => TransportRecord::Stdio,
            Transport::Http => TransportRecord::Http,
        }
    }
}

impl From<TransportRecord> for Transport {
    fn from(transport: TransportRecord) -> Self {
        match transport {
            TransportRecord::Stdio => Transport::Stdio,
            TransportRecord::Http => Transport::Http,
        }
    }
}

impl From<Announcement> for ClaimRecord {
    fn from(claim: Announcement) -> Self {
        ClaimRecord {
            name: claim.name,
            intent: claim.intent,
            scope: claim.scope,
            at: claim.at.into(),
            resolved: claim.resolved,
        }
    }
}

impl From<ClaimRecord> for Announcement {
    fn from(claim: ClaimRecord) -> Self {
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

fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// Puts the claims the previous server of this checkout handed over on the board, departed.
/// Runs once this server holds the lease and before anyone can reach it; blocking (it reads
/// a file).
pub(crate) fn restore(state: &ServerState) {
    let file = {
        let lease = state.lease.lock_or_recover();
        let Some(handle) = lease.as_ref() else {
            return;
        };
        if let Err(error) = handle.remove_temporaries_beside(FILE) {
            tracing::debug!(%error, "could not look for temporary claim files");
        }
        read_beside(handle.path(), FILE, MAX_BYTES as u64)
    };
    let file = match file {
        Ok(Some(file)) => file,
        Ok(None) => return,
        Err(error) => {
            tracing::warn!(%error, "the claims the previous server handed over are dropped");
            return;
        }
    };
    let document: Document = match serde_json::from_slice(&file.bytes) {
        Ok(document) => document,
        Err(error) => {
            tracing::warn!(%error, "the claims file beside the lease is not what this server writes; its claims are dropped");
            return;
        }
    };
    let root = state.site.checkout.root.display().to_string();
    if document.schema != SCHEMA || document.root != root {
        tracing::info!(schema = %document.schema, root = %document.root, "the claims file is for another checkout or format; not read");
        return;
    }
    let now = SystemTime::now();
    let ended = file.modified.min(now);
    let mut records = document.peers;
    records.drain(..records.len().saturating_sub(DEPARTED_CAP));
    records.sort_by_key(|record| record.left_at_ms.unwrap_or(unix_ms(ended)));
    let mut restored = 0;
    {
        let mut coordination = state.coordination();
        let board = coordination.peers_mut();
        let mut workers = state.workers();
        for record in records {
            let handed = HandedOver {
                client: record.client.into(),
                transport: record.transport.into(),
                connected_at: record.connected_at.into(),
                left_at: record
                    .left_at_ms
                    .map(|ms| (UNIX_EPOCH + Duration::from_millis(ms)).min(now)),
                episode: record.episode,
                claims: record.claims.into_iter().map(Announcement::from).collect(),
            };
            let (peer, released) = match board.restore(handed, ended) {
                Ok(Some(restored)) => restored,
                Ok(None) => continue,
                Err(error) => {
                    tracing::info!(%error, "a handed-over peer's claims are refused");
                    continue;
                }
            };
            restored += 1;
            state.events.restored(board, &peer);
            state.events.expired(&released);
            if let Some(worker) = record
                .worker
                .filter(|worker| super::mcp::is_worker_identity(&worker.identity))
            {
                let slot = WorkerSlot {
                    peer,
                    bridged: worker.bridged,
                };
                workers.by_identity.insert(worker.identity, slot);
            }
        }
    }
    tracing::info!(
        peers = restored,
        "took over the claims the previous server handed over"
    );
    state.expire_claims(now);
    state.handover.board_changed();
}

/// Keeps the file current while the server runs: written once changes have gathered,
/// its modification time refreshed while it holds attached peers' claims. Ends with the
/// server; the ordered stop writes it a last time ([`save`]).
pub(crate) fn keep(state: &Arc<ServerState>) {
    let heartbeat = (state.site.config.timings.claim_grace() / 10)
        .clamp(Duration::from_secs(1), Duration::from_secs(10));
    let tasks = state.tasks.clone();
    let state = state.clone();
    tasks.spawn(async move {
        let mut beat = tokio::time::interval(heartbeat);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = state.shutdown.cancelled() => break,
                _ = state.handover.changed.notified() => {
                    tokio::select! {
                        _ = state.shutdown.cancelled() => break,
                        _ = tokio::time::sleep(GATHER) => {}
                    }
                    let writing = state.clone();
                    let _ = tokio::task::spawn_blocking(move || write_if_changed(&writing)).await;
                }
                _ = beat.tick() => {
                    let touching = state.clone();
                    let _ = tokio::task::spawn_blocking(move || touch_if_live(&touching)).await;
                }
            }
        }
    });
}

/// Writes the file as the board is now and dates it now: the ordered stop calls it before
/// the lease is let go, so the next server finds every claim, the attached peers' departed
/// at this instant.
pub(crate) async fn save(state: &Arc<ServerState>) {
    let saving = state.clone();
    let _ = tokio::task::spawn_blocking(move || {
        write_if_changed(&saving);
        touch_if_live(&saving);
    })
    .await;
}

/// Writes the file if the board's hand-over differs from what was last written (removes
/// it when nobody holds claims). Blocking.
fn write_if_changed(state: &ServerState) {
    // Held from the snapshot to the write, so a later snapshot is never overwritten by an
    // earlier one written after it.
    let mut written = state.handover.written.lock_or_recover();
    let root = state.site.checkout.root.display().to_string();
    let (bytes, holds_attached) = encode(&root, snapshot(state));
    let mut digest = DefaultHasher::new();
    bytes.hash(&mut digest);
    let digest = digest.finish();
    if written.digest == Some(digest) {
        return;
    }
    let lease = state.lease.lock_or_recover();
    let Some(handle) = lease.as_ref() else {
        return;
    };
    let started = Instant::now();
    match handle.write_beside(FILE, bytes.as_deref()) {
        Ok(true) => {
            *written = Written {
                digest: Some(digest),
                holds_attached,
            };
            tracing::debug!(
                bytes = bytes.as_ref().map_or(0, Vec::len),
                took_ms = started.elapsed().as_millis() as u64,
                "the claims to hand over were written"
            );
        }
        Ok(false) => {}
        Err(error) => tracing::warn!(%error, "could not write the claims to hand over"),
    }
}

/// Refreshes the file's modification time while it holds attached peers. Blocking.
fn touch_if_live(state: &ServerState) {
    if !state.handover.written.lock_or_recover().holds_attached {
        return;
    }
    let lease = state.lease.lock_or_recover();
    if let Some(handle) = lease.as_ref()
        && let Err(error) = handle.touch_beside(FILE)
    {
        tracing::debug!(%error, "could not date the claims to hand over");
    }
}

/// The board's peers holding claims, as records, each with the worker behind it and, for
/// an attached one, the episode it holds.
fn snapshot(state: &ServerState) -> Vec<Record> {
    let coordination = state.coordination();
    let board = coordination.peers();
    let episodes = coordination.episodes();
    let workers = state.workers();
    let worker_of: HashMap<&PeerId, (&String, bool)> = workers
        .by_identity
        .iter()
        .map(|(identity, slot)| (&slot.peer, (identity, slot.bridged)))
        .collect();
    board
        .handed_over()
        .into_iter()
        .map(|(id, peer)| {
            let attached = peer.left_at.is_none();
            Record {
                worker: worker_of.get(&id).map(|(identity, bridged)| WorkerRecord {
                    identity: (*identity).clone(),
                    bridged: *bridged,
                }),
                episode: peer
                    .episode
                    .or_else(|| attached.then(|| episodes.held_by(&id)).flatten()),
                client: peer.client.into(),
                transport: peer.transport.into(),
                connected_at: peer.connected_at.into(),
                left_at_ms: peer.left_at.map(unix_ms),
                claims: peer.claims.into_iter().map(ClaimRecord::from).collect(),
            }
        })
        .collect()
}

/// The file's bytes (`None` when nobody holds claims) and whether it holds attached peers.
/// Records are taken from the latest to leave back while they fit in [`MAX_BYTES`], and
/// written in the order they left.
fn encode(root: &str, records: Vec<Record>) -> (Option<Vec<u8>>, bool) {
    let head = serde_json::to_vec(&Document {
        schema: SCHEMA.to_owned(),
        root: root.to_owned(),
        peers: Vec::new(),
    })
    .expect("a document encodes");
    // `{"schema":…,"root":…,"peers":[]}`: the records go between the brackets.
    let (open, close) = head.split_at(head.len() - 2);
    let mut size = head.len();
    let mut kept: Vec<(Vec<u8>, bool)> = Vec::new();
    for record in records.iter().rev() {
        let encoded = serde_json::to_vec(record).expect("a record encodes");
        if size + encoded.len() + 2 > MAX_BYTES {
            break;
        }
        size += encoded.len() + 2;
        kept.push((encoded, record.left_at_ms.is_none()));
    }
    if kept.is_empty() {
        return (None, false);
    }
    let holds_attached = kept.iter().any(|(_, attached)| *attached);
    let mut bytes = Vec::with_capacity(size);
    bytes.extend_from_slice(open);
    for (n, (encoded, _)) in kept.iter().rev().enumerate() {
        if n > 0 {
            bytes.extend_from_slice(b",\n");
        }
        bytes.extend_from_slice(encoded);
    }
    bytes.extend_from_slice(close);
    bytes.push(b'\n');
    (Some(bytes), holds_attached)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: usize, intent_chars: usize, attached: bool) -> Record {
        Record {
            client: ClientRecord {
                name: format!("agent-{n}"),
                version: "1".into(),
                title: None,
            },
            transport: TransportRecord::Stdio,
            connected_at: "2026-12-01T10:00:00Z".parse().unwrap(),
            left_at_ms: (!attached).then_some(1_000 + n as u64),
            episode: None,
            worker: None,
            claims: vec![ClaimRecord {
                name: None,
                intent: "i".repeat(intent_chars),
                scope: vec![format!("src/{n}")],
                at: "2026-12-01T10:00:00Z".parse().unwrap(),
                resolved: Vec::new(),
            }],
        }
    }

    fn decode(bytes: &[u8]) -> Document {
        serde_json::from_slice(bytes).expect("the file is one JSON document")
    }

    #[test]
    fn nobody_holding_claims_writes_no_file() {
        assert_eq!(encode("/r", Vec::new()), (None, false));
    }

    #[test]
    fn the_file_says_what_it_is_and_whether_live_peers_are_in_it() {
        let (bytes, live) = encode("/r", vec![record(0, 5, false), record(1, 5, true)]);
        let document = decode(&bytes.unwrap());
        assert_eq!(
            (document.schema.as_str(), document.root.as_str()),
            (SCHEMA, "/r")
        );
        let names: Vec<&str> = document
            .peers
            .iter()
            .map(|p| p.client.name.as_str())
            .collect();
        assert_eq!(names, ["agent-0", "agent-1"], "in the order they left");
        assert!(live);
        let (_, live) = encode("/r", vec![record(0, 5, false)]);
        assert!(!live, "departed peers alone need no dating");
    }

    #[test]
    fn beyond_its_size_the_earliest_to_leave_are_left_out() {
        // each record about 100 kB: the file holds what fits, the latest to leave
        let records: Vec<Record> = (0..200).map(|n| record(n, 100_000, n == 199)).collect();
        let (bytes, live) = encode("/r", records);
        let bytes = bytes.unwrap();
        assert!(bytes.len() <= MAX_BYTES, "{}", bytes.len());
        let document = decode(&bytes);
        let kept = document.peers.len();
        assert!((70..200).contains(&kept), "{kept}");
        assert_eq!(
            document.peers[0].client.name,
            format!("agent-{}", 200 - kept)
        );
        assert_eq!(document.peers[kept - 1].client.name, "agent-199");
        assert!(live);
    }

    /// Two peers, one with every field a record has set and one with none of the optional
    /// ones, as the board's own types wrote them before the file had types of its own.
    const WRITTEN: &str = concat!(
        r#"{"schema":"majordomus-claims/v1","root":"/repo","peers":[{"client":{"name":"codex","version":"0.171.0","title":"Codex"},"transport":"http","connected_at":"2026-12-01T10:00:00Z","left_at_ms":1796000000000,"episode":"conv-42","worker":{"identity":"w-1","bridged":true},"claims":[{"intent":"fix","scope":["src","app/[slug]"],"at":"2026-12-01T10:00:05Z","resolved":["src","app/[slug]"]},{"name":"docs","intent":"docs","scope":[],"at":"2026-12-01T10:00:06Z"}]},"#,
        "\n",
        r#"{"client":{"name":"claude-code","version":"2"},"transport":"stdio","connected_at":"2026-12-01T10:00:01Z","claims":[]}]}"#,
        "\n"
    );

    #[test]
    fn a_file_the_boards_types_wrote_reads_into_the_board_and_is_written_back_to_the_byte() {
        let document = decode(WRITTEN.as_bytes());
        let records: Vec<Record> = document
            .peers
            .into_iter()
            .map(|record| {
                let client = ClientInfo::from(record.client);
                let transport = Transport::from(record.transport);
                let claims: Vec<Announcement> =
                    record.claims.into_iter().map(Announcement::from).collect();
                Record {
                    client: client.into(),
                    transport: transport.into(),
                    claims: claims.into_iter().map(ClaimRecord::from).collect(),
                    ..record
                }
            })
            .collect();
        let (bytes, live) = encode("/repo", records);
        assert_eq!(String::from_utf8(bytes.unwrap()).unwrap(), WRITTEN);
        assert!(live, "the second peer was attached");
    }
}
