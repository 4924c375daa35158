//! Overlaps across a repository-wide listing: peers gathered from several checkouts'
//! boards, each stamped with its checkout. A listing names each pair of peers that meet
//! once, with the claims involved by name, so it grows with the pairs of peers (and is
//! capped), never with the pairs of their claims.
//!
//! ```
//! use majordomus_domain::listing::{overlaps_among, silent};
//! # use majordomus_domain::peers::{Announcement, ClientInfo, Peer, PeerCheckout, PeerId, Transport};
//! # fn peer(n: u64, worktree: &str, scope: &[&str]) -> Peer {
//! #     let claim = Announcement {
//! #         name: None,
//! #         intent: format!("work in {worktree}"),
//! #         scope: scope.iter().map(|s| s.to_string()).collect(),
//! #         at: "2026-11-30T02:26:47Z".parse().unwrap(),
//! #         resolved: vec![],
//! #         compared: Default::default(),
//! #     };
//! #     Peer {
//! #         id: PeerId::nth(n),
//! #         client: ClientInfo::uninitialized(),
//! #         transport: Transport::Http,
//! #         connected_at: "2026-11-30T02:26:47Z".parse().unwrap(),
//! #         last_seen_seconds_ago: 0,
//! #         attached: true,
//! #         left_seconds_ago: None,
//! #         announcement: Some(claim.clone()),
//! #         claims: vec![claim],
//! #         checkout: Some(PeerCheckout {
//! #             id: majordomus_domain::ids::identity_digest(worktree),
//! #             worktree: worktree.into(),
//! #             branch: None,
//! #             this_checkout: false,
//! #             machine: None,
//! #         }),
//! #         waiting: None,
//! #     }
//! # }
//! // `p1` of the primary checkout and `p1` of a linked worktree are different peers.
//! let peers = [
//!     peer(1, "/repo", &["apps/cli"]),
//!     peer(1, "/repo-wt/x", &["/repo-wt/x/apps/cli/src"]),
//! ];
//! let overlaps = overlaps_among(&peers);
//! assert_eq!((overlaps.listed.len(), overlaps.more), (1, 0));
//! let overlap = &overlaps.listed[0];
//! assert_eq!(overlap.side.checkout.as_ref().unwrap().worktree, "/repo");
//! assert_eq!(overlap.side.claims, [None]);
//! assert_eq!(overlap.paths[0].theirs, "apps/cli");
//! assert_eq!(overlap.paths[0].yours, "/repo-wt/x/apps/cli/src");
//! assert_eq!(silent(&peers), 0);
//! ```

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

use crate::index::PathIndex;
use crate::limits;
use crate::pairs::PairSample;
use crate::paths::{ClaimPath, normalize, normalize_relative, without_repeats};
use crate::peers::SideKind;
use crate::peers::{Announcement, ListedOverlap, Overlap, OverlapPath, OverlapSide, Peer};

/// The overlaps of a listing: the entries it lists and how many more there were.
#[derive(Debug)]
pub struct Listed<T> {
    /// At most [`limits::OVERLAPS_LISTED`] entries.
    pub listed: Vec<T>,
    /// How many entries were left out.
    pub more: usize,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed {
            listed: Vec::new(),
            more: 0,
        }
    }
}

impl<T> Listed<T> {
    /// The first [`limits::OVERLAPS_LISTED`] of `all`, the rest counted.
    pub(crate) fn capped(mut all: Vec<T>) -> Self {
        let more = all.len().saturating_sub(limits::OVERLAPS_LISTED);
        all.truncate(limits::OVERLAPS_LISTED);
        Listed { listed: all, more }
    }
}

/// One number per peer, the same for two entries of one peer: peers are different when
/// their `(checkout.machine, checkout.id, id)` differ, so the `p1` of two checkouts are two
/// peers, and so are those of two machines' checkouts at one path.
pub(crate) fn identities<P: Borrow<Peer>>(peers: &[P]) -> Vec<usize> {
    type Identity<'a> = (Option<(Option<&'a str>, &'a str)>, &'a str);
    let mut identities: HashMap<Identity, usize> = HashMap::new();
    peers
        .iter()
        .map(|peer| {
            let peer: &Peer = peer.borrow();
            let key = (
                peer.checkout
                    .as_ref()
                    .map(|c| (c.machine.as_deref(), c.id.as_str())),
                peer.id.as_str(),
            );
            let next = identities.len();
            *identities.entry(key).or_insert(next)
        })
        .collect()
}

/// One path a peer claims, however many of its claims name it, and which claims those are
/// (by position, ascending).
pub(crate) struct PeerPath<'a> {
    pub(crate) path: &'a ClaimPath,
    pub(crate) claims: Vec<usize>,
}

/// A peer's paths, each once, in the order its claims first name them: the paths of two of
/// its claims that name the same ground are compared once, so the work of a listing grows
/// with the distinct paths peers claim, not with the claims that repeat them.
pub(crate) fn peer_paths(claims: &[Arc<[ClaimPath]>]) -> Vec<PeerPath<'_>> {
    let mut at: HashMap<&[String], usize> = HashMap::new();
    let mut paths: Vec<PeerPath> = Vec::new();
    for (claim, claim_paths) in claims.iter().enumerate() {
        for path in claim_paths.iter() {
            let next = paths.len();
            let index = *at.entry(path.components()).or_insert(next);
            if index == next {
                paths.push(PeerPath {
                    path,
                    claims: Vec::new(),
                });
            }
            let held = &mut paths[index].claims;
            if held.last() != Some(&claim) {
                held.push(claim);
            }
        }
    }
    paths
}

/// Which claims of a peer take part in an overlap, by position.
pub(crate) struct ClaimsMet(Vec<bool>);

impl ClaimsMet {
    pub(crate) fn of(peer: &Peer) -> Self {
        ClaimsMet(vec![false; peer.claims.len()])
    }

    pub(crate) fn add(&mut self, claims: &[usize]) {
        for &claim in claims {
            self.0[claim] = true;
        }
    }

    /// The names of the claims met, in the peer's order (`None` for its unnamed claim).
    pub(crate) fn names(&self, peer: &Peer) -> Vec<Option<String>> {
        peer.claims
            .iter()
            .zip(&self.0)
            .filter(|(_, met)| **met)
            .map(|(claim, _)| claim.name.clone())
            .collect()
    }
}

/// One pair of peers that meet, as it is found.
struct PeersMeeting {
    pairs: PairSample,
    earlier: ClaimsMet,
    later: ClaimsMet,
}

/// Every pair of peers whose claims meet, each pair once: which claims of each side meet
/// the other's, the first few pairs of paths that meet (each pair of paths once, however
/// many claims hold them) and a count of the rest; pairs of live peers first, then those
/// with one departed side, then those with two; at most [`limits::OVERLAPS_LISTED`]
/// entries, the rest counted.
///
/// Peers are different when their `(checkout.machine, checkout.id, id)` differ (see
/// [`identities`]). Each claim's paths are read by [`claim_paths`] and its repeats dropped.
/// In each entry the peer given earlier is the top-level side and the later one is `with`;
/// within each rank, entries are ordered by the earlier side, then the later side.
///
/// The work is a sort of every peer's distinct paths plus one step per pair of them that
/// meet (see [`for_each_meeting_pair`]), and the answer holds at most
/// [`limits::OVERLAPS_LISTED`] entries of at most [`limits::OVERLAP_PATH_PAIRS`] path pairs
/// each, and the names of claims, however many claims meet.
pub fn overlaps_among(peers: &[Peer]) -> Listed<ListedOverlap> {
    let normalized = every_claims_paths(peers);
    let identity = identities(peers);
    let distinct: Vec<Vec<PeerPath>> = normalized.iter().map(|c| peer_paths(c)).collect();

    let mut entries: Vec<(&[String], (usize, usize))> = Vec::new();
    for (p, paths) in distinct.iter().enumerate() {
        for (s, held) in paths.iter().enumerate() {
            entries.push((held.path.components(), (p, s)));
        }
    }

    // (earlier peer, later peer) -> what they meet on, where the earlier peer comes first
    // in the input.
    let mut met: BTreeMap<(usize, usize), PeersMeeting> = BTreeMap::new();
    for_each_meeting_pair(&mut entries, |&one, &other| {
        if identity[one.0] == identity[other.0] {
            return;
        }
        let (earlier, later) = if one.0 < other.0 {
            (one, other)
        } else {
            (other, one)
        };
        let meeting = met
            .entry((earlier.0, later.0))
            .or_insert_with(|| PeersMeeting {
                pairs: PairSample::default(),
                earlier: ClaimsMet::of(&peers[earlier.0]),
                later: ClaimsMet::of(&peers[later.0]),
            });
        meeting.pairs.add((earlier.1, later.1));
        meeting.earlier.add(&distinct[earlier.0][earlier.1].claims);
        meeting.later.add(&distinct[later.0][later.1].claims);
    });

    let side = |peer: &Peer, claims: &ClaimsMet| OverlapSide {
        peer: peer.id.clone(),
        attached: peer.attached,
        left_seconds_ago: peer.left_seconds_ago,
        kind: SideKind::Claim,
        checkout: peer.checkout.clone(),
        claims: claims.names(peer),
    };
    let mut listed: Vec<ListedOverlap> = met
        .into_iter()
        .map(|((ep, lp), meeting)| {
            let (earlier, later) = (&peers[ep], &peers[lp]);
            let (pairs, more_paths) = meeting.pairs.finish();
            ListedOverlap {
                side: side(earlier, &meeting.earlier),
                paths: pairs
                    .into_iter()
                    .map(|(t, y)| OverlapPath {
                        yours: distinct[lp][y].path.as_written().to_owned(),
                        theirs: distinct[ep][t].path.as_written().to_owned(),
                    })
                    .collect(),
                more_paths,
                with: side(later, &meeting.later),
            }
        })
        .collect();
    listed.sort_by_key(|o| u8::from(!o.side.attached) + u8::from(!o.with.attached));
    Listed::capped(listed)
}

/// A claim's place in the input: (peer, claim of that peer).
type ClaimAt = (usize, usize);

/// One claim of another peer that meets a claim of a given peer, as that peer is told of
/// it: the claims by position in the input, and the first few pairs of paths that meet
/// (`yours` the given peer's) with a count of the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMeeting {
    /// (peer, claim of that peer): the given peer's claim.
    pub mine: (usize, usize),
    /// (peer, claim of that peer): the other peer's claim.
    pub theirs: (usize, usize),
    /// The pairs of paths that meet, ordered by the position of the path of whichever of
    /// the two peers comes earlier in the input, then the other's; at most
    /// [`limits::OVERLAP_PATH_PAIRS`].
    pub paths: Vec<OverlapPath>,
    /// How many more pairs of paths meet than `paths` lists.
    pub more_paths: u32,
}

/// Every claim of another peer that meets a claim of `peers[me]`, one entry per pair of
/// claims: pairs with live peers first, then those with one departed side, then those with
/// two, each rank in the order of the earlier claim of the pair, then the later one.
///
/// What a session is told of the overlaps that involve it, without comparing the claims of
/// every other pair of peers: its paths go into a trie and each other claim's paths walk it
/// once, so the work is the other paths times their depth plus the pairs that meet.
pub fn claims_meeting_peer<P: Borrow<Peer>>(peers: &[P], me: usize) -> Vec<ClaimMeeting> {
    let identity = identities(peers);
    let peer_of = |at: usize| -> &Peer { peers[at].borrow() };
    let mine: Vec<Arc<[ClaimPath]>> = peer_of(me)
        .claims
        .iter()
        .map(|claim| claim_paths(peer_of(me), claim))
        .collect();
    let mut index = PathIndex::new();
    for (claim, paths) in mine.iter().enumerate() {
        for (at, path) in paths.iter().enumerate() {
            index.insert(path.components(), (claim, at));
        }
    }
    // (earlier claim, later claim) -> pairs (earlier's path, later's path)
    let mut met: BTreeMap<(ClaimAt, ClaimAt), PairSample> = BTreeMap::new();
    let mut theirs_of: HashMap<(usize, usize), Arc<[ClaimPath]>> = HashMap::new();
    for (p, peer) in peers.iter().map(Borrow::borrow).enumerate() {
        if identity[p] == identity[me] {
            continue;
        }
        for (c, claim) in peer.claims.iter().enumerate() {
            let theirs = claim_paths(peer, claim);
            for (t, path) in theirs.iter().enumerate() {
                index.for_each_meeting(path.components(), |&(my_claim, y)| {
                    let (key, pair) = if p < me {
                        (((p, c), (me, my_claim)), (t, y))
                    } else {
                        (((me, my_claim), (p, c)), (y, t))
                    };
                    met.entry(key).or_default().add(pair);
                });
            }
            theirs_of.insert((p, c), theirs);
        }
    }
    let mut meetings: Vec<ClaimMeeting> = met
        .into_iter()
        .map(|((earlier, later), pairs)| {
            let (mine_at, theirs_at) = if earlier.0 == me {
                (earlier, later)
            } else {
                (later, earlier)
            };
            let (pairs, more_paths) = pairs.finish();
            let theirs = &theirs_of[&theirs_at];
            let my_paths = &mine[mine_at.1];
            ClaimMeeting {
                mine: mine_at,
                theirs: theirs_at,
                paths: pairs
                    .into_iter()
                    .map(|(e, l)| {
                        let (y, t) = if earlier.0 == me { (e, l) } else { (l, e) };
                        OverlapPath {
                            yours: my_paths[y].as_written().to_owned(),
                            theirs: theirs[t].as_written().to_owned(),
                        }
                    })
                    .collect(),
                more_paths,
            }
        })
        .collect();
    meetings.sort_by_key(|m| {
        u8::from(!peer_of(m.mine.0).attached) + u8::from(!peer_of(m.theirs.0).attached)
    });
    meetings
}

/// [`claim_paths`] of every claim of every peer, by peer and claim.
pub(crate) fn every_claims_paths(peers: &[Peer]) -> Vec<Vec<Arc<[ClaimPath]>>> {
    peers
        .iter()
        .map(|peer| {
            peer.claims
                .iter()
                .map(|claim| claim_paths(peer, claim))
                .collect()
        })
        .collect()
}

/// The paths a claim of a listed peer is compared on, without repeats: where its server
/// resolved them on disk when it says so (`resolved`, one per scope path), else its text
/// normalised against the peer's worktree (or as repository-relative when the peer has no
/// checkout), as its board compared them. A path that cannot be read either way meets
/// nothing. The work is one pass over the claim's paths, whichever board it is on.
pub fn claim_paths(peer: &Peer, claim: &Announcement) -> Arc<[ClaimPath]> {
    if let Some(kept) = &claim.compared.0 {
        return kept.clone();
    }
    let paths = if !claim.resolved.is_empty() && claim.resolved.len() == claim.scope.len() {
        claim
            .scope
            .iter()
            .zip(&claim.resolved)
            .filter_map(|(written, key)| ClaimPath::from_key(written, key).ok())
            .collect()
    } else {
        let root = peer.checkout.as_ref().map(|c| c.worktree.as_str());
        claim
            .scope
            .iter()
            .filter_map(|raw| match root {
                Some(root) => normalize(raw, root).ok(),
                None => normalize_relative(raw).ok(),
            })
            .collect()
    };
    without_repeats(paths).into()
}

/// Calls `meet` once for every pair of entries whose paths meet (equal, or one an ancestor
/// of the other on whole components), the ancestor or the earlier of two equal ones first.
///
/// The work is a sort of the entries plus one step per pair that meets: sorted by
/// components, the paths below a path follow it, so one pass that keeps the chain of
/// ancestors of the current path visits exactly the meeting pairs, never a pair that does
/// not meet and never one twice.
pub(crate) fn for_each_meeting_pair<T>(
    entries: &mut [(&[String], T)],
    mut meet: impl FnMut(&T, &T),
) {
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    // Runs of equal keys that are ancestors of the current key, outermost first.
    let mut ancestors: Vec<Range<usize>> = Vec::new();
    let mut start = 0;
    while start < entries.len() {
        let key = entries[start].0;
        let end = entries[start..]
            .iter()
            .position(|(other, _)| *other != key)
            .map_or(entries.len(), |n| start + n);
        while ancestors
            .last()
            .is_some_and(|run| !key.starts_with(entries[run.start].0))
        {
            ancestors.pop();
        }
        for (i, (_, one)) in entries[start..end].iter().enumerate() {
            for run in &ancestors {
                for (_, other) in &entries[run.clone()] {
                    meet(other, one);
                }
            }
            for (_, other) in &entries[start..start + i] {
                meet(other, one);
            }
        }
        ancestors.push(start..end);
        start = end;
    }
}

/// Every claim of `peers` (gathered from other worktrees' boards, each stamped with its
/// checkout) that meets one of `paths` (a claim just made, unrepeated): one entry per
/// claim, live peers before departed ones, each listing the first few path pairs and
/// counting the rest.
///
/// The new claim's paths go into a trie; each of the others' paths walks it once, so the
/// work is their paths times their depth plus the pairs that meet, never paths × paths.
pub fn claims_meeting(paths: &[ClaimPath], peers: &[Peer]) -> Vec<Overlap> {
    let mut claimed = PathIndex::new();
    for (at, path) in paths.iter().enumerate() {
        claimed.insert(path.components(), at);
    }
    let mut overlaps: Vec<Overlap> = Vec::new();
    for peer in peers {
        for claim in &peer.claims {
            let theirs = claim_paths(peer, claim);
            let mut met = PairSample::default();
            for (t, path) in theirs.iter().enumerate() {
                claimed.for_each_meeting(path.components(), |&yours| met.add((yours, t)));
            }
            let (listed, more_paths) = met.finish();
            if listed.is_empty() {
                continue;
            }
            overlaps.push(Overlap {
                peer: peer.id.clone(),
                attached: peer.attached,
                left_seconds_ago: peer.left_seconds_ago,
                kind: SideKind::Claim,
                intent: claim.intent.clone(),
                checkout: peer.checkout.clone(),
                paths: listed
                    .into_iter()
                    .map(|(y, t)| OverlapPath {
                        yours: paths[y].as_written().to_owned(),
                        theirs: theirs[t].as_written().to_owned(),
                    })
                    .collect(),
                more_paths,
            });
        }
    }
    overlaps.sort_by_key(|overlap| !overlap.attached);
    overlaps
}

/// How many of `peers` are attached and hold no claim, so that a quiet board is not read
/// as one without collisions.
pub fn silent<P: Borrow<Peer>>(peers: &[P]) -> usize {
    peers
        .iter()
        .map(Borrow::borrow)
        .filter(|p| p.attached && p.claims.is_empty())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits;
    use crate::peers::{Announcement, ClientInfo, PeerCheckout, PeerId, Transport};
    use crate::testing::{Lcg, claim};

    fn checkout(worktree: &str) -> PeerCheckout {
        PeerCheckout {
            id: crate::ids::identity_digest(worktree),
            worktree: worktree.into(),
            branch: Some("main".into()),
            this_checkout: worktree == "/repo",
            machine: None,
        }
    }

    fn peer(n: u64, worktree: Option<&str>, claims: Vec<Announcement>) -> Peer {
        Peer {
            id: PeerId::nth(n),
            client: ClientInfo::uninitialized(),
            transport: Transport::Http,
            connected_at: "2026-11-30T02:26:47Z".parse().unwrap(),
            last_seen_seconds_ago: 0,
            attached: true,
            left_seconds_ago: None,
            announcement: claims.last().cloned(),
            claims,
            checkout: worktree.map(checkout),
            waiting: None,
        }
    }

    #[test]
    fn a_sibling_name_that_sorts_between_a_path_and_its_children_does_not_meet() {
        let peers = [
            peer(1, Some("/repo"), vec![claim(None, "a", &["src/a"])]),
            peer(
                2,
                Some("/repo"),
                vec![claim(None, "a-b", &["src/a-b", "src/a.c"])],
            ),
            peer(
                3,
                Some("/repo"),
                vec![claim(None, "inside a", &["src/a/b"])],
            ),
            peer(4, Some("/repo"), vec![claim(None, "everything", &["."])]),
        ];
        let pairs: Vec<(String, String)> = overlaps_among(&peers)
            .listed
            .iter()
            .map(|o| (o.side.peer.to_string(), o.with.peer.to_string()))
            .collect();
        let expected = [("p1", "p3"), ("p1", "p4"), ("p2", "p4"), ("p3", "p4")];
        assert_eq!(pairs, expected.map(|(a, b)| (a.to_string(), b.to_string())));
    }

    /// (top-level peer @ worktree, with peer @ worktree, [(theirs, yours)])
    type Summary = (String, String, Vec<(String, String)>);

    fn name(peer: &PeerId, checkout: &Option<PeerCheckout>) -> String {
        match checkout {
            Some(c) => format!("{peer}@{}", c.worktree),
            None => peer.to_string(),
        }
    }

    fn summary(overlaps: &[ListedOverlap]) -> Vec<Summary> {
        overlaps
            .iter()
            .map(|o| {
                (
                    name(&o.side.peer, &o.side.checkout),
                    name(&o.with.peer, &o.with.checkout),
                    o.paths
                        .iter()
                        .map(|p| (p.theirs.clone(), p.yours.clone()))
                        .collect(),
                )
            })
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(t, y)| ((*t).to_owned(), (*y).to_owned()))
            .collect()
    }

    #[test]
    fn each_meeting_pair_across_checkouts_is_listed_once() {
        let peers = [
            peer(1, Some("/repo"), vec![claim(None, "cli", &["apps/cli"])]),
            peer(2, Some("/repo"), vec![claim(None, "docs", &["docs"])]),
            peer(
                1,
                Some("/wt/b"),
                vec![
                    claim(None, "flags", &["/wt/b/apps/cli/src", "docs/cli.md"]),
                    claim(Some("web"), "web", &["apps/web"]),
                ],
            ),
            peer(2, Some("/wt/b"), vec![claim(None, "all", &["."])]),
        ];
        let listed = overlaps_among(&peers).listed;
        assert_eq!(
            summary(&listed),
            [
                (
                    "p1@/repo".into(),
                    "p1@/wt/b".into(),
                    pairs(&[("apps/cli", "/wt/b/apps/cli/src")])
                ),
                (
                    "p1@/repo".into(),
                    "p2@/wt/b".into(),
                    pairs(&[("apps/cli", ".")])
                ),
                (
                    "p2@/repo".into(),
                    "p1@/wt/b".into(),
                    pairs(&[("docs", "docs/cli.md")])
                ),
                (
                    "p2@/repo".into(),
                    "p2@/wt/b".into(),
                    pairs(&[("docs", ".")])
                ),
                (
                    "p1@/wt/b".into(),
                    "p2@/wt/b".into(),
                    pairs(&[
                        ("/wt/b/apps/cli/src", "."),
                        ("docs/cli.md", "."),
                        ("apps/web", ".")
                    ])
                ),
            ]
        );
        let first = &listed[0];
        assert_eq!(first.side.claims, [None]);
        assert_eq!(first.with.claims, [None]);
        assert_eq!(listed[4].side.claims, [None, Some("web".to_owned())]);
        assert!(first.side.checkout.as_ref().unwrap().this_checkout);
        assert!(!first.with.checkout.as_ref().unwrap().this_checkout);
    }

    #[test]
    fn many_claims_on_one_ground_are_one_entry_per_pair_of_peers_and_the_pairs_are_capped() {
        let intent = "x".repeat(limits::INTENT_CHARS);
        let peers: Vec<Peer> = (1..=14)
            .map(|n| {
                let mut claims = vec![claim(None, &intent, &["."])];
                claims.extend(
                    (0..limits::NAMED_CLAIMS)
                        .map(|c| claim(Some(&format!("c{c:02}")), &intent, &[".", "src"])),
                );
                peer(n, Some("/repo"), claims)
            })
            .collect();
        let overlaps = overlaps_among(&peers);
        assert_eq!(overlaps.listed.len(), limits::OVERLAPS_LISTED);
        assert_eq!(overlaps.more, 14 * 13 / 2 - limits::OVERLAPS_LISTED);
        let first = &overlaps.listed[0];
        assert_eq!(first.side.claims.len(), 1 + limits::NAMED_CLAIMS);
        assert_eq!(first.side.claims[0], None);
        assert_eq!(first.with.claims[1].as_deref(), Some("c00"));
        // each pair of paths once, however many claims hold it
        assert_eq!(
            summary(&overlaps.listed[..1])[0].2,
            pairs(&[(".", "."), (".", "src"), ("src", "."), ("src", "src")])
        );
        assert_eq!(first.more_paths, 0);
        // what an entry holds is bounded by the pairs it lists and the claims it names, never
        // by the intents, which are listed once, on the peers
        assert!(overlaps.listed.iter().all(|entry| {
            entry.paths.len() <= limits::OVERLAP_PATH_PAIRS
                && entry.side.claims.len() <= 1 + limits::NAMED_CLAIMS
                && entry.with.claims.len() <= 1 + limits::NAMED_CLAIMS
        }));
    }

    #[test]
    fn a_peer_never_overlaps_itself() {
        let me = peer(
            1,
            Some("/repo"),
            vec![
                claim(None, "a", &["src"]),
                claim(Some("sub"), "b", &["src/x"]),
            ],
        );
        assert!(overlaps_among(std::slice::from_ref(&me)).listed.is_empty());
        // the same peer listed twice is still one peer
        assert!(overlaps_among(&[me.clone(), me]).listed.is_empty());
    }

    #[test]
    fn checkouts_at_one_path_on_two_machines_hold_different_peers() {
        let on = |machine: &str, scope: &[&str]| {
            let mut one = peer(1, Some("/workspace"), vec![claim(None, machine, scope)]);
            one.checkout.as_mut().unwrap().machine = Some(machine.into());
            one
        };
        let listed = overlaps_among(&[on("laptop", &["src"]), on("sandbox", &["src/a"])]).listed;
        assert_eq!(listed.len(), 1);
        let machine = |side: &Option<PeerCheckout>| side.as_ref().unwrap().machine.clone();
        assert_eq!(machine(&listed[0].side.checkout).as_deref(), Some("laptop"));
        assert_eq!(
            machine(&listed[0].with.checkout).as_deref(),
            Some("sandbox")
        );
    }

    #[test]
    fn departed_peers_overlap_and_say_so() {
        let mut gone = peer(1, Some("/repo"), vec![claim(None, "old", &["lib"])]);
        gone.attached = false;
        let here = peer(2, Some("/repo"), vec![claim(None, "new", &["lib/a.rs"])]);
        let listed = overlaps_among(&[gone, here]).listed;
        assert_eq!(listed.len(), 1);
        assert!(!listed[0].side.attached);
        assert!(listed[0].with.attached);
    }

    #[test]
    fn live_pairs_are_listed_before_pairs_with_a_departed_side() {
        let mut gone = peer(1, Some("/repo"), vec![claim(None, "old", &["lib"])]);
        gone.attached = false;
        gone.left_seconds_ago = Some(300);
        let peers = [
            gone,
            peer(2, Some("/repo"), vec![claim(None, "a", &["lib/a.rs"])]),
            peer(3, Some("/wt"), vec![claim(None, "b", &["lib/a.rs"])]),
        ];
        let order: Vec<(String, String, Option<u64>)> = overlaps_among(&peers)
            .listed
            .iter()
            .map(|o| {
                (
                    name(&o.side.peer, &o.side.checkout),
                    name(&o.with.peer, &o.with.checkout),
                    o.side.left_seconds_ago,
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                ("p2@/repo".into(), "p3@/wt".into(), None),
                ("p1@/repo".into(), "p2@/repo".into(), Some(300)),
                ("p1@/repo".into(), "p3@/wt".into(), Some(300)),
            ]
        );
    }

    #[test]
    fn a_claim_resolved_on_disk_meets_on_what_its_server_resolved() {
        let mut through_link = claim(None, "via the link", &["alias/a.rs", "app/[slug]/page.tsx"]);
        through_link.resolved = vec!["src/a.rs".into(), "app/[slug]/page.tsx".into()];
        let peers = [
            peer(1, Some("/wt"), vec![through_link]),
            peer(
                2,
                Some("/repo"),
                vec![claim(None, "direct", &["src/a.rs", "app/other.ts"])],
            ),
        ];
        assert_eq!(
            summary(&overlaps_among(&peers).listed),
            [(
                "p1@/wt".into(),
                "p2@/repo".into(),
                pairs(&[("alias/a.rs", "src/a.rs")])
            )]
        );
        // a `resolved` that does not match the scope is not trusted: the text is read
        let mut mismatched = claim(None, "x", &["alias/a.rs"]);
        mismatched.resolved = vec!["src/a.rs".into(), "extra".into()];
        let peers = [peers[1].clone(), peer(3, Some("/wt"), vec![mismatched])];
        assert!(overlaps_among(&peers).listed.is_empty());
    }

    /// (peer @ worktree, attached, [(yours, theirs)])
    type Met = (String, bool, Vec<(String, String)>);

    #[test]
    fn a_new_claim_meets_other_worktrees_claims_naming_their_checkouts() {
        let mut gone = peer(4, Some("/wt/b"), vec![claim(None, "left", &["src"])]);
        gone.attached = false;
        gone.left_seconds_ago = Some(61);
        let peers = [
            gone,
            peer(
                1,
                Some("/repo"),
                vec![
                    claim(None, "whole src", &["src"]),
                    claim(Some("d"), "docs", &["docs"]),
                ],
            ),
            peer(2, Some("/wt/b"), vec![claim(None, "elsewhere", &["tests"])]),
        ];
        let mine: Vec<ClaimPath> = ["src/main.rs", "docs/x.md", "src/lib.rs"]
            .iter()
            .map(|p| normalize(p, "/wt/a").unwrap())
            .collect();
        let met = claims_meeting(&mine, &peers);
        let got: Vec<Met> = met
            .iter()
            .map(|o| {
                (
                    name(&o.peer, &o.checkout),
                    o.attached,
                    o.paths
                        .iter()
                        .map(|p| (p.yours.clone(), p.theirs.clone()))
                        .collect(),
                )
            })
            .collect();
        let pair = |y: &str, t: &str| (y.to_owned(), t.to_owned());
        assert_eq!(
            got,
            [
                (
                    "p1@/repo".into(),
                    true,
                    vec![pair("src/main.rs", "src"), pair("src/lib.rs", "src")]
                ),
                ("p1@/repo".into(), true, vec![pair("docs/x.md", "docs")]),
                (
                    "p4@/wt/b".into(),
                    false,
                    vec![pair("src/main.rs", "src"), pair("src/lib.rs", "src")]
                ),
            ]
        );
        assert_eq!(met[2].left_seconds_ago, Some(61));
        assert_eq!(
            met[0].checkout.as_ref().unwrap().branch.as_deref(),
            Some("main")
        );
    }

    #[test]
    fn random_claims_meeting_agrees_with_comparing_every_pair() {
        let mut rng = Lcg(23);
        for round in 0..60 {
            let peers: Vec<Peer> = (0..rng.below(6))
                .map(|n| {
                    let claims = (0..rng.below(3))
                        .map(|c| {
                            let scope = rng.scope(10);
                            let scope: Vec<&str> = scope.iter().map(String::as_str).collect();
                            claim(Some(&format!("c{c}")), "work", &scope)
                        })
                        .collect();
                    let mut peer = peer(n as u64 + 1, Some("/wt/b"), claims);
                    peer.attached = rng.below(3) > 0;
                    peer
                })
                .collect();
            let mine = without_repeats(
                rng.scope(12)
                    .iter()
                    .map(|p| normalize(p, "/wt/a").unwrap())
                    .collect(),
            );
            let got: Vec<(PeerId, bool, usize)> = claims_meeting(&mine, &peers)
                .into_iter()
                .map(|o| (o.peer, o.attached, o.paths.len() + o.more_paths as usize))
                .collect();
            let mut expected = Vec::new();
            for peer in &peers {
                for claim in &peer.claims {
                    let theirs = claim_paths(peer, claim);
                    let pairs = mine
                        .iter()
                        .flat_map(|y| theirs.iter().map(move |t| (y, t)))
                        .filter(|(y, t)| y.meets(t))
                        .count();
                    if pairs > 0 {
                        expected.push((peer.id.clone(), peer.attached, pairs));
                    }
                }
            }
            expected.sort_by_key(|e| !e.1);
            assert_eq!(got, expected, "round {round}");
        }
    }

    #[test]
    fn paths_that_cannot_be_normalised_meet_nothing() {
        let peers = [
            peer(
                1,
                Some("/repo"),
                vec![claim(None, "x", &["../up", "/elsewhere/a", "a"])],
            ),
            peer(
                2,
                None,
                vec![claim(None, "y", &["/repo/a", "a/b", "../up"])],
            ),
            peer(3, None, vec![claim(None, "z", &["up", "elsewhere/a"])]),
        ];
        assert_eq!(
            summary(&overlaps_among(&peers).listed),
            [("p1@/repo".into(), "p2".into(), pairs(&[("a", "a/b")]))]
        );
    }

    #[test]
    fn peers_without_claims_are_silent_only_while_attached() {
        let mut gone = peer(3, None, vec![]);
        gone.attached = false;
        let peers = [
            peer(1, None, vec![]),
            peer(2, None, vec![claim(None, "x", &[])]),
            gone,
            peer(4, Some("/wt"), vec![]),
        ];
        assert_eq!(silent(&peers), 2);
        assert!(overlaps_among(&peers).listed.is_empty());
    }
    /// `overlaps_among` by its definition: every pair of different peers, every pair of
    /// their claims' unrepeated normalised paths compared directly, each pair of paths once
    /// (by their position among the peer's paths, its claims in order); and the number of
    /// pairs of peers beyond the cap.
    fn brute_force(peers: &[Peer]) -> (Vec<Counted>, usize) {
        let normal = |peer: &Peer, raw: &str| match &peer.checkout {
            Some(c) => normalize(raw, &c.worktree).ok(),
            None => normalize_relative(raw).ok(),
        };
        // every path of a peer once, with the claims that hold it
        let unrepeated = |peer: &Peer| -> Vec<(ClaimPath, Vec<usize>)> {
            let mut kept: Vec<(ClaimPath, Vec<usize>)> = Vec::new();
            for (c, claim) in peer.claims.iter().enumerate() {
                for path in claim.scope.iter().filter_map(|raw| normal(peer, raw)) {
                    match kept
                        .iter_mut()
                        .find(|k| k.0.components() == path.components())
                    {
                        Some(k) if k.1.contains(&c) => {}
                        Some(k) => k.1.push(c),
                        None => kept.push((path, vec![c])),
                    }
                }
            }
            kept
        };
        let mut expected: Vec<(u8, Counted)> = Vec::new();
        for (i, earlier) in peers.iter().enumerate() {
            for later in &peers[i + 1..] {
                if same_peer(earlier, later) {
                    continue;
                }
                let mut pairs = Vec::new();
                for t in unrepeated(earlier) {
                    for y in unrepeated(later) {
                        if t.0.meets(&y.0) {
                            pairs.push((t.0.as_written().to_owned(), y.0.as_written().to_owned()));
                        }
                    }
                }
                if !pairs.is_empty() {
                    let more = pairs.len().saturating_sub(limits::OVERLAP_PATH_PAIRS);
                    pairs.truncate(limits::OVERLAP_PATH_PAIRS);
                    let rank = u8::from(!earlier.attached) + u8::from(!later.attached);
                    expected.push((
                        rank,
                        (
                            name(&earlier.id, &earlier.checkout),
                            name(&later.id, &later.checkout),
                            pairs,
                            more as u32,
                        ),
                    ));
                }
            }
        }
        expected.sort_by_key(|(rank, _)| *rank);
        let more = expected.len().saturating_sub(limits::OVERLAPS_LISTED);
        expected.truncate(limits::OVERLAPS_LISTED);
        (expected.into_iter().map(|(_, e)| e).collect(), more)
    }

    fn same_peer(a: &Peer, b: &Peer) -> bool {
        let checkout_id = |peer: &Peer| peer.checkout.as_ref().map(|c| c.id.clone());
        a.id == b.id && checkout_id(a) == checkout_id(b)
    }

    /// A [`Summary`] with the count of pairs not listed.
    type Counted = (String, String, Vec<(String, String)>, u32);

    fn with_more(overlaps: &[ListedOverlap]) -> Vec<Counted> {
        summary(overlaps)
            .into_iter()
            .zip(overlaps)
            .map(|((a, b, pairs), o)| (a, b, pairs, o.more_paths))
            .collect()
    }

    #[test]
    fn random_listings_agree_with_the_simple_definition() {
        let mut rng = Lcg(11);
        let worktrees = [Some("/repo"), Some("/wt/b"), None];
        for round in 0..60 {
            let mut peers = Vec::new();
            for n in 0..rng.below(7) {
                let worktree = worktrees[rng.below(worktrees.len())];
                let claims = (0..rng.below(3))
                    .map(|c| {
                        let mut scope = rng.scope(10);
                        if rng.below(4) == 0
                            && let Some(root) = worktree
                        {
                            scope.push(format!("{root}/{}", rng.path()));
                        }
                        let scope: Vec<&str> = scope.iter().map(String::as_str).collect();
                        claim(Some(&format!("c{c}")), "work", &scope)
                    })
                    .collect();
                peers.push(peer(1 + n as u64 % 3, worktree, claims));
            }
            if let Some(again) = peers.first().cloned() {
                peers.push(again);
            }
            let listed = overlaps_among(&peers);
            let (expected, more) = brute_force(&peers);
            assert_eq!(with_more(&listed.listed), expected, "round {round}");
            assert_eq!(listed.more, more, "round {round}");
        }
    }

    /// (my claim, their peer and claim, [(yours, theirs)], more)
    type Meeting = (ClaimAt, ClaimAt, Vec<(String, String)>, u32);

    /// `claims_meeting_peer` by its definition: every claim of `me` against every claim of
    /// every other peer, pairs of paths ordered by the earlier peer's path, then the later's.
    fn meetings_by_brute_force(peers: &[Peer], me: usize) -> Vec<Meeting> {
        // (rank, earlier claim, later claim, the meeting)
        let mut expected: Vec<(u8, ClaimAt, ClaimAt, Meeting)> = Vec::new();
        for (p, other) in peers.iter().enumerate() {
            if same_peer(other, &peers[me]) {
                continue;
            }
            for (mc, mine) in peers[me].claims.iter().enumerate() {
                for (tc, theirs) in other.claims.iter().enumerate() {
                    let my_paths = claim_paths(&peers[me], mine);
                    let their_paths = claim_paths(other, theirs);
                    let mut pairs: Vec<((usize, usize), (String, String))> = Vec::new();
                    for (y, yours) in my_paths.iter().enumerate() {
                        for (t, path) in their_paths.iter().enumerate() {
                            if yours.meets(path) {
                                let order = if p < me { (t, y) } else { (y, t) };
                                let written =
                                    (yours.as_written().to_owned(), path.as_written().to_owned());
                                pairs.push((order, written));
                            }
                        }
                    }
                    if pairs.is_empty() {
                        continue;
                    }
                    pairs.sort();
                    let more = pairs.len().saturating_sub(limits::OVERLAP_PATH_PAIRS) as u32;
                    pairs.truncate(limits::OVERLAP_PATH_PAIRS);
                    let rank = u8::from(!other.attached) + u8::from(!peers[me].attached);
                    let (earlier, later) = if p < me {
                        ((p, tc), (me, mc))
                    } else {
                        ((me, mc), (p, tc))
                    };
                    let listed = pairs.into_iter().map(|(_, written)| written).collect();
                    expected.push((rank, earlier, later, ((me, mc), (p, tc), listed, more)));
                }
            }
        }
        expected.sort_by_key(|(rank, earlier, later, _)| (*rank, *earlier, *later));
        expected
            .into_iter()
            .map(|(_, _, _, meeting)| meeting)
            .collect()
    }

    #[test]
    fn random_claims_meeting_one_peer_agree_with_comparing_its_claims_with_every_other() {
        let mut rng = Lcg(31);
        let worktrees = [Some("/repo"), Some("/wt/b"), None];
        for round in 0..60 {
            let peers: Vec<Peer> = (0..1 + rng.below(6))
                .map(|n| {
                    let worktree = worktrees[rng.below(worktrees.len())];
                    let claims = (0..rng.below(3))
                        .map(|c| {
                            let scope = rng.scope(10);
                            let scope: Vec<&str> = scope.iter().map(String::as_str).collect();
                            claim(Some(&format!("c{c}")), "work", &scope)
                        })
                        .collect();
                    let mut peer = peer(1 + n as u64 % 3, worktree, claims);
                    peer.attached = rng.below(3) > 0;
                    peer
                })
                .collect();
            let me = rng.below(peers.len());
            let got: Vec<Meeting> = claims_meeting_peer(&peers, me)
                .into_iter()
                .map(|m| {
                    let pairs = m.paths.into_iter().map(|p| (p.yours, p.theirs)).collect();
                    (m.mine, m.theirs, pairs, m.more_paths)
                })
                .collect();
            assert_eq!(got, meetings_by_brute_force(&peers, me), "round {round}");
        }
    }

    #[test]
    fn repeats_count_once_and_wide_overlaps_are_capped_with_a_count() {
        let copies = vec!["a"; 200_000];
        let peers = [
            peer(1, Some("/repo"), vec![claim(None, "one", &copies)]),
            peer(2, Some("/repo"), vec![claim(None, "two", &copies)]),
        ];
        let listed = overlaps_among(&peers).listed;
        assert_eq!(
            with_more(&listed),
            [(
                "p1@/repo".to_owned(),
                "p2@/repo".to_owned(),
                pairs(&[("a", "a")]),
                0
            )]
        );

        let wide: Vec<String> = (0..20).map(|n| format!("x/{n:02}")).collect();
        let wide: Vec<&str> = wide.iter().map(String::as_str).collect();
        let peers = [
            peer(1, Some("/repo"), vec![claim(None, "wide", &wide)]),
            peer(2, None, vec![claim(None, "all of x", &["x", "x/00/y"])]),
        ];
        let listed = overlaps_among(&peers).listed;
        assert_eq!(listed.len(), 1);
        let overlap = &listed[0];
        assert_eq!(overlap.paths.len(), limits::OVERLAP_PATH_PAIRS);
        assert_eq!(overlap.more_paths, 21 - 8);
        assert_eq!(
            (
                overlap.paths[0].theirs.as_str(),
                overlap.paths[0].yours.as_str()
            ),
            ("x/00", "x")
        );
        assert_eq!(
            (
                overlap.paths[1].theirs.as_str(),
                overlap.paths[1].yours.as_str()
            ),
            ("x/00", "x/00/y")
        );
    }
}
