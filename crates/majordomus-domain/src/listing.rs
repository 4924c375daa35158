//! Overlaps across a repository-wide listing: peers gathered from several checkouts'
//! boards, each stamped with its checkout.
//!
//! ```
//! use majordomus_domain::listing::{overlaps_among, silent};
//! # use majordomus_domain::peers::{Announcement, ClientInfo, Peer, PeerCheckout, PeerId, Transport};
//! # fn peer(n: u64, worktree: &str, scope: &[&str]) -> Peer {
//! #     let claim = Announcement {
//! #         name: None,
//! #         intent: format!("work in {worktree}"),
//! #         scope: scope.iter().map(|s| s.to_string()).collect(),
//! #         at: "2026-11-30T02:26:47Z".into(),
//! #     };
//! #     Peer {
//! #         id: PeerId::nth(n),
//! #         client: ClientInfo::uninitialized(),
//! #         transport: Transport::Http,
//! #         connected_at: "2026-11-30T02:26:47Z".into(),
//! #         last_seen_seconds_ago: 0,
//! #         attached: true,
//! #         announcement: Some(claim.clone()),
//! #         claims: vec![claim],
//! #         checkout: Some(PeerCheckout {
//! #             id: majordomus_domain::ids::identity_digest(worktree),
//! #             worktree: worktree.into(),
//! #             branch: None,
//! #             this_checkout: false,
//! #         }),
//! #     }
//! # }
//! // `p1` of the primary checkout and `p1` of a linked worktree are different peers.
//! let peers = [
//!     peer(1, "/repo", &["apps/cli"]),
//!     peer(1, "/repo-wt/x", &["/repo-wt/x/apps/cli/src"]),
//! ];
//! let overlaps = overlaps_among(&peers);
//! assert_eq!(overlaps.len(), 1);
//! assert_eq!(overlaps[0].overlap.checkout.as_ref().unwrap().worktree, "/repo");
//! assert_eq!(overlaps[0].overlap.paths[0].theirs, "apps/cli");
//! assert_eq!(overlaps[0].overlap.paths[0].yours, "/repo-wt/x/apps/cli/src");
//! assert_eq!(silent(&peers), 0);
//! ```

use std::collections::{BTreeMap, BTreeSet};

use crate::paths::{normalize, normalize_relative};
use crate::peers::{ListedOverlap, Overlap, OverlapPath, OverlapSide, Peer};

/// Where one claimed path sits in the input: peer, claim of that peer, path of that claim.
#[derive(Debug, Clone, Copy)]
struct At {
    peer: usize,
    claim: usize,
    path: usize,
}

/// A claim's place in the input: (peer, claim of that peer).
type ClaimAt = (usize, usize);

/// Which paths of two claims meet, as (index in one, index in the other), in order.
type PathPairs = BTreeSet<(usize, usize)>;

/// Every pair of claims of different peers whose paths meet, each pair once.
///
/// Peers are different when their `(checkout.id, id)` differ, so the `p1` of two checkouts
/// are two peers. Each claim's paths are normalised against its own peer's worktree (or as
/// repository-relative when the peer has no checkout); a path that cannot be normalised
/// meets nothing. In each entry the peer given earlier is the top-level side and the later
/// one is `with`; entries are ordered by the earlier side's peer and claim, then the
/// later side's.
pub fn overlaps_among(peers: &[Peer]) -> Vec<ListedOverlap> {
    // Every claimed path under a key in which a path's descendants sort right after it: its
    // components joined by NUL, the lowest byte. The paths a path meets as an ancestor (or
    // equal) are then one contiguous run after it, and no pair of strings is compared
    // outside the pairs that meet.
    let mut entries: Vec<(String, At)> = Vec::new();
    for (p, peer) in peers.iter().enumerate() {
        let root = peer.checkout.as_ref().map(|c| c.worktree.as_str());
        for (c, claim) in peer.claims.iter().enumerate() {
            for (s, raw) in claim.scope.iter().enumerate() {
                let normalized = match root {
                    Some(root) => normalize(raw, root),
                    None => normalize_relative(raw),
                };
                if let Ok(path) = normalized {
                    let at = At {
                        peer: p,
                        claim: c,
                        path: s,
                    };
                    entries.push((path.components().join("\0"), at));
                }
            }
        }
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));

    // (earlier claim, later claim) -> {(earlier's path, later's path)}, where the earlier
    // claim's peer comes first in the input.
    let mut met: BTreeMap<(ClaimAt, ClaimAt), PathPairs> = BTreeMap::new();
    for (i, (key, one)) in entries.iter().enumerate() {
        let end = if key.is_empty() {
            entries.len()
        } else {
            i + entries[i..].partition_point(|(other, _)| at_or_below(other, key))
        };
        for (_, other) in &entries[i + 1..end] {
            if same_peer(&peers[one.peer], &peers[other.peer]) {
                continue;
            }
            let (earlier, later) = if one.peer < other.peer {
                (one, other)
            } else {
                (other, one)
            };
            met.entry(((earlier.peer, earlier.claim), (later.peer, later.claim)))
                .or_default()
                .insert((earlier.path, later.path));
        }
    }

    met.into_iter()
        .map(|(((ep, ec), (lp, lc)), pairs)| {
            let (earlier, later) = (&peers[ep], &peers[lp]);
            let (theirs, yours) = (&earlier.claims[ec], &later.claims[lc]);
            ListedOverlap {
                overlap: Overlap {
                    peer: earlier.id.clone(),
                    attached: earlier.attached,
                    intent: theirs.intent.clone(),
                    checkout: earlier.checkout.clone(),
                    paths: pairs
                        .into_iter()
                        .map(|(t, y)| OverlapPath {
                            yours: yours.scope[y].clone(),
                            theirs: theirs.scope[t].clone(),
                        })
                        .collect(),
                },
                with: OverlapSide {
                    peer: later.id.clone(),
                    attached: later.attached,
                    intent: yours.intent.clone(),
                    checkout: later.checkout.clone(),
                },
            }
        })
        .collect()
}

/// How many of `peers` are attached and hold no claim, so that a quiet board is not read
/// as one without collisions.
pub fn silent(peers: &[Peer]) -> usize {
    peers
        .iter()
        .filter(|p| p.attached && p.claims.is_empty())
        .count()
}

/// Whether `key` names `ancestor` itself or a path inside it (keys as `overlaps_among` makes
/// them).
fn at_or_below(key: &str, ancestor: &str) -> bool {
    key == ancestor || (key.starts_with(ancestor) && key.as_bytes().get(ancestor.len()) == Some(&0))
}

fn same_peer(a: &Peer, b: &Peer) -> bool {
    fn checkout_id(peer: &Peer) -> Option<&str> {
        peer.checkout.as_ref().map(|c| c.id.as_str())
    }
    a.id == b.id && checkout_id(a) == checkout_id(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::{Announcement, ClientInfo, PeerCheckout, PeerId, Transport};

    fn checkout(worktree: &str) -> PeerCheckout {
        PeerCheckout {
            id: crate::ids::identity_digest(worktree),
            worktree: worktree.into(),
            branch: Some("main".into()),
            this_checkout: worktree == "/repo",
        }
    }

    fn claim(name: Option<&str>, intent: &str, scope: &[&str]) -> Announcement {
        Announcement {
            name: name.map(str::to_owned),
            intent: intent.into(),
            scope: scope.iter().map(|s| (*s).to_owned()).collect(),
            at: "2026-11-30T02:26:47Z".into(),
        }
    }

    fn peer(n: u64, worktree: Option<&str>, claims: Vec<Announcement>) -> Peer {
        Peer {
            id: PeerId::nth(n),
            client: ClientInfo::uninitialized(),
            transport: Transport::Http,
            connected_at: "2026-11-30T02:26:47Z".into(),
            last_seen_seconds_ago: 0,
            attached: true,
            announcement: claims.last().cloned(),
            claims,
            checkout: worktree.map(checkout),
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
            .iter()
            .map(|o| (o.overlap.peer.to_string(), o.with.peer.to_string()))
            .collect();
        let expected = [("p1", "p3"), ("p1", "p4"), ("p2", "p4"), ("p3", "p4")];
        assert_eq!(pairs, expected.map(|(a, b)| (a.to_string(), b.to_string())));
    }

    /// (top-level peer @ worktree, with peer @ worktree, [(theirs, yours)])
    type Summary = (String, String, Vec<(String, String)>);

    fn summary(overlaps: &[ListedOverlap]) -> Vec<Summary> {
        let name = |peer: &PeerId, checkout: &Option<PeerCheckout>| match checkout {
            Some(c) => format!("{peer}@{}", c.worktree),
            None => peer.to_string(),
        };
        overlaps
            .iter()
            .map(|o| {
                (
                    name(&o.overlap.peer, &o.overlap.checkout),
                    name(&o.with.peer, &o.with.checkout),
                    o.overlap
                        .paths
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
        let listed = overlaps_among(&peers);
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
                    pairs(&[("/wt/b/apps/cli/src", "."), ("docs/cli.md", ".")])
                ),
                (
                    "p1@/wt/b".into(),
                    "p2@/wt/b".into(),
                    pairs(&[("apps/web", ".")])
                ),
            ]
        );
        let first = &listed[0];
        assert_eq!(first.overlap.intent, "cli");
        assert_eq!(first.with.intent, "flags");
        assert!(first.overlap.checkout.as_ref().unwrap().this_checkout);
        assert!(!first.with.checkout.as_ref().unwrap().this_checkout);
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
        assert!(overlaps_among(std::slice::from_ref(&me)).is_empty());
        // the same peer listed twice is still one peer
        assert!(overlaps_among(&[me.clone(), me]).is_empty());
    }

    #[test]
    fn departed_peers_overlap_and_say_so() {
        let mut gone = peer(1, Some("/repo"), vec![claim(None, "old", &["lib"])]);
        gone.attached = false;
        let here = peer(2, Some("/repo"), vec![claim(None, "new", &["lib/a.rs"])]);
        let listed = overlaps_among(&[gone, here]);
        assert_eq!(listed.len(), 1);
        assert!(!listed[0].overlap.attached);
        assert!(listed[0].with.attached);
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
            summary(&overlaps_among(&peers)),
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
        assert!(overlaps_among(&peers).is_empty());
    }
}
