//! Other machines' boards joined to this repository's listing (`peers.list` with
//! `checkouts: everywhere`), and the remote claims an announcement meets. Pure: the remote
//! boards are a snapshot of what the federation holds, passed in.

use std::collections::BinaryHeap;

use majordomus_domain::index::PathIndex;
use majordomus_domain::limits;
use majordomus_domain::listing::silent;
use majordomus_domain::paths::{ClaimPath, normalize, without_repeats};
use majordomus_domain::peers::SideKind;
use majordomus_domain::peers::{Announced, Overlap, OverlapPath, PeerCheckout};

use super::answer::{BoardView, ListedPeer, PeerList};
use majordomus_federation::FederationStatus;
use majordomus_federation::document::RemoteBoard;
use majordomus_federation::view::HeldBoard;

/// `listing` (this repository's boards on this machine) with every remote board after them:
/// each local peer and board marked with `this_machine`, each remote one with its own
/// machine, and `complete` false when the federation says the remote boards may be short or
/// a remote board left peers out. Its overlaps are found afterwards across all of them
/// (`peers::find_overlaps`), by the caller that wants them.
pub(super) fn merge_everywhere(
    mut listing: PeerList,
    this_machine: Option<&str>,
    remote: &[HeldBoard],
    federation: FederationStatus,
) -> PeerList {
    let this_machine = this_machine.map(str::to_owned);
    for listed in &mut listing.peers {
        if let Some(checkout) = listed.peer.checkout.as_mut() {
            checkout.machine = this_machine.clone();
        }
    }
    for board in &mut listing.boards {
        board.machine = this_machine.clone();
    }
    for held in remote {
        let board = &held.board;
        let stamp = stamp(board);
        let attached = board.peers.iter().filter(|peer| peer.attached).count();
        let reason = (board.omitted_peers > 0).then(|| {
            format!(
                "{} of its peers were left out of what {} published, to keep the board within \
                 its size",
                board.omitted_peers, board.machine
            )
        });
        listing.boards.push(BoardView {
            id: board.checkout.id.clone(),
            worktree: board.checkout.worktree.clone(),
            branch: board.checkout.branch.clone(),
            this_checkout: false,
            standing: board.standing.into(),
            url: None,
            attached,
            reason,
            changes: None,
            machine: Some(board.machine.clone()),
            age_seconds: Some(held.age.as_secs()),
            age_ms: None,
        });
        listing
            .peers
            .extend(board.peers.iter().cloned().map(|mut peer| {
                peer.checkout = Some(stamp.clone());
                ListedPeer {
                    qualified_id: format!("{}@{}", peer.id, board.machine),
                    bridged: false,
                    peer,
                }
            }));
        listing.count += attached;
    }
    listing.silent = silent(&listing.peers);
    listing.complete =
        federation.reason.is_none() && listing.boards.iter().all(|board| board.reason.is_none());
    listing.federation = Some(federation);
    listing
}

/// Every claim of a remote board that meets the claim `announced` just made, one entry per
/// remote claim, its checkout naming the remote machine. The work is one index of the new
/// claim's paths and one lookup per remote path: never a comparison of every path with
/// every other.
pub(super) fn remote_overlaps(
    announced: &Announced,
    worktree: &str,
    remote: &[HeldBoard],
) -> Vec<Overlap> {
    let Some(latest) = &announced.peer.announcement else {
        return Vec::new();
    };
    let mine: Vec<ClaimPath> = without_repeats(
        latest
            .scope
            .iter()
            .filter_map(|raw| normalize(raw, worktree).ok())
            .collect(),
    );
    if mine.is_empty() {
        return Vec::new();
    }
    let mut index = PathIndex::new();
    for (at, path) in mine.iter().enumerate() {
        index.insert(path.components(), at);
    }
    let mut found = Vec::new();
    for held in remote {
        let board = &held.board;
        for claim in &board.claim_paths {
            // The least pairs (their path, your path) by position, and how many there were.
            let mut least: BinaryHeap<(usize, usize)> = BinaryHeap::new();
            let mut total = 0usize;
            for (theirs, path) in claim.paths.iter().enumerate() {
                index.for_each_meeting(path.components(), |&yours| {
                    total += 1;
                    if least.len() < limits::OVERLAP_PATH_PAIRS {
                        least.push((theirs, yours));
                    } else if let Some(mut greatest) = least.peek_mut()
                        && (theirs, yours) < *greatest
                    {
                        *greatest = (theirs, yours);
                    }
                });
            }
            if total == 0 {
                continue;
            }
            let listed = least.into_sorted_vec();
            let peer = &board.peers[claim.peer];
            found.push(Overlap {
                peer: peer.id.clone(),
                attached: peer.attached,
                left_seconds_ago: peer.left_seconds_ago,
                kind: SideKind::Claim,
                intent: peer.claims[claim.claim].intent.clone(),
                checkout: Some(stamp(board)),
                paths: listed
                    .iter()
                    .map(|&(theirs, yours)| OverlapPath {
                        yours: mine[yours].as_written().to_owned(),
                        theirs: claim.paths[theirs].as_written().to_owned(),
                    })
                    .collect(),
                more_paths: u32::try_from(total - listed.len()).unwrap_or(u32::MAX),
            });
        }
    }
    found
}

/// What each peer of a remote board is stamped with.
fn stamp(board: &RemoteBoard) -> PeerCheckout {
    PeerCheckout {
        id: board.checkout.id.clone(),
        worktree: board.checkout.worktree.clone(),
        branch: board.checkout.branch.clone(),
        this_checkout: false,
        machine: Some(board.machine.clone()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    use majordomus_domain::checkouts::ServerStanding;
    use majordomus_domain::peers::{Announcement, ClientInfo, Peer, PeerId, Transport};

    use super::*;
    use majordomus_federation::FederationState;
    use majordomus_federation::document::{BoardDocument, BoardKey, PublishedCheckout};

    fn peer(n: u64, scope: &[&str]) -> Peer {
        let claim = Announcement {
            name: None,
            intent: format!("work {n}"),
            scope: scope.iter().map(|s| (*s).to_owned()).collect(),
            at: "2026-11-30T02:26:47Z".parse().unwrap(),
            resolved: Vec::new(),
            compared: Default::default(),
        };
        Peer {
            id: PeerId::nth(n),
            client: ClientInfo::uninitialized(),
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

    /// A board of `machine` at `/work/repo`, the same path as this machine's checkout.
    fn remote(machine: &str, peers: Vec<Peer>) -> HeldBoard {
        let id = "0123456789abcdef0123456789abcdef";
        let checkout = PublishedCheckout {
            id: id.into(),
            worktree: "/work/repo".into(),
            branch: Some("feature".into()),
        };
        let (_, bytes) = BoardDocument::publish(
            machine,
            checkout,
            ServerStanding::Ready,
            30,
            SystemTime::now(),
            peers,
        );
        let board = BoardDocument::read(&BoardKey::new("r", machine, id), &bytes).unwrap();
        HeldBoard {
            board: Arc::new(board),
            age: Duration::from_secs(2),
        }
    }

    fn status(reason: Option<&str>) -> FederationStatus {
        FederationStatus {
            state: FederationState::Connected,
            summary: "connected to nats://n:4222".into(),
            url: Some("nats://n:4222".into()),
            machine: Some("laptop".into()),
            repository: Some("r".into()),
            remote_boards: 1,
            reason: reason.map(str::to_owned),
            ignored: Vec::new(),
        }
    }

    fn local() -> PeerList {
        let mut me = peer(1, &["src/parser"]);
        me.checkout = Some(PeerCheckout {
            id: "0123456789abcdef0123456789abcdef".into(),
            worktree: "/work/repo".into(),
            branch: Some("main".into()),
            this_checkout: true,
            machine: None,
        });
        PeerList {
            count: 1,
            caller: None,
            silent: 0,
            peers: vec![ListedPeer {
                qualified_id: me.id.to_string(),
                bridged: false,
                peer: me,
            }],
            overlaps: Vec::new(),
            more_overlaps: 0,
            boards: Vec::new(),
            complete: true,
            federation: None,
            leases: Vec::new(),
            messages_queued: 0,
            change_overlaps: Vec::new(),
            more_change_overlaps: 0,
            conflicts: None,
        }
    }

    #[test]
    fn remote_peers_join_the_listing_marked_with_their_machine_and_overlap_across() {
        let mut quiet = peer(2, &[]);
        quiet.claims.clear();
        quiet.announcement = None;
        let mut merged = merge_everywhere(
            local(),
            Some("laptop"),
            &[remote(
                "sandbox",
                vec![peer(1, &["src/parser/lexer.rs"]), quiet],
            )],
            status(None),
        );
        assert_eq!(merged.count, 3);
        assert_eq!(merged.silent, 1);
        assert!(merged.complete);
        let machines: Vec<Option<&str>> = merged
            .peers
            .iter()
            .map(|p| p.peer.checkout.as_ref().unwrap().machine.as_deref())
            .collect();
        assert_eq!(machines, [Some("laptop"), Some("sandbox"), Some("sandbox")]);
        super::super::answer::find_overlaps(&mut merged);
        assert_eq!(merged.overlaps.len(), 1);
        let overlap = &merged.overlaps[0];
        let side =
            |c: &Option<crate::wire::PeerCheckout>| c.as_ref().unwrap().machine.clone().unwrap();
        assert_eq!(side(&overlap.side.checkout), "laptop");
        assert_eq!(side(&overlap.with.checkout), "sandbox");
        let board = &merged.boards[0];
        assert_eq!(board.machine.as_deref(), Some("sandbox"));
        assert_eq!(board.age_seconds, Some(2));
        assert_eq!(board.url, None);

        let short = merge_everywhere(local(), Some("laptop"), &[], status(Some("down")));
        assert!(!short.complete);
        assert_eq!(short.federation.unwrap().reason.as_deref(), Some("down"));
    }

    #[test]
    fn an_announce_meets_remote_claims_through_the_index() {
        let board = remote(
            "sandbox",
            vec![
                peer(1, &["src/parser/lexer.rs", "docs"]),
                peer(2, &["apps"]),
                peer(3, &["."]),
            ],
        );
        let mut me = peer(7, &["src/parser", "/work/repo/docs/a.md", "tests"]);
        me.checkout = None;
        let announced = Announced {
            peer: me,
            overlaps: Vec::new(),
            released: Vec::new(),
        };
        let found = remote_overlaps(&announced, "/work/repo", &[board]);
        let summary: Vec<(String, Vec<(String, String)>)> = found
            .iter()
            .map(|o| {
                (
                    o.peer.to_string(),
                    o.paths
                        .iter()
                        .map(|p| (p.theirs.clone(), p.yours.clone()))
                        .collect(),
                )
            })
            .collect();
        let pair = |t: &str, y: &str| (t.to_owned(), y.to_owned());
        assert_eq!(
            summary,
            [
                (
                    "p1".to_owned(),
                    vec![
                        pair("src/parser/lexer.rs", "src/parser"),
                        pair("docs", "/work/repo/docs/a.md")
                    ]
                ),
                (
                    "p3".to_owned(),
                    vec![
                        pair(".", "src/parser"),
                        pair(".", "/work/repo/docs/a.md"),
                        pair(".", "tests")
                    ]
                ),
            ]
        );
        assert_eq!(
            found[0].checkout.as_ref().unwrap().machine.as_deref(),
            Some("sandbox")
        );
    }

    #[test]
    fn wide_remote_overlaps_list_a_few_pairs_and_count_the_rest() {
        let wide: Vec<String> = (0..20).map(|n| format!("x/{n:02}")).collect();
        let wide: Vec<&str> = wide.iter().map(String::as_str).collect();
        let board = remote("sandbox", vec![peer(1, &wide)]);
        let announced = Announced {
            peer: peer(9, &["x"]),
            overlaps: Vec::new(),
            released: Vec::new(),
        };
        let found = remote_overlaps(&announced, "/work/repo", &[board]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].paths.len(), limits::OVERLAP_PATH_PAIRS);
        assert_eq!(found[0].more_paths, 12);
        assert_eq!(found[0].paths[0].theirs, "x/00");
    }
}
