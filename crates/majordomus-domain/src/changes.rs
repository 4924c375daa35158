//! What each worktree actually changed, on the board beside what peers claim: the paths git
//! reports as committed on the worktree's branch, staged, unstaged or untracked, and where
//! they meet claims and each other.
//!
//! An agent that never announces still leaves changes, so a claim is checked against the
//! other worktrees' changes too. A worktree's own changes never meet its own peers' claims:
//! they are that worktree's own work. The answers write these, the ways a path was changed
//! ([`ChangeKind`]) too, as types of their own.
//!
//! ```
//! use majordomus_domain::changes::{ChangeKind, ChangedPath, WorktreeChanges, changes_meeting};
//! use majordomus_domain::paths::normalize;
//! use majordomus_domain::peers::PeerCheckout;
//!
//! let beta = PeerCheckout {
//!     id: "b".into(),
//!     worktree: "/repo-wt/beta".into(),
//!     branch: Some("feature/beta".into()),
//!     this_checkout: false,
//!     machine: None,
//! };
//! let changes = WorktreeChanges {
//!     paths: vec![ChangedPath { path: "src/parser/lexer.rs".into(), kinds: vec![ChangeKind::Unstaged] }],
//!     more_paths: 0,
//!     reason: None,
//!     read_seconds_ago: None,
//! };
//! let mine = [normalize("src/parser", "/repo").unwrap()];
//! let met = changes_meeting(&mine, &[(beta, changes)]);
//! assert_eq!(met[0].checkout.branch.as_deref(), Some("feature/beta"));
//! assert_eq!(met[0].paths[0].yours, "src/parser");
//! assert_eq!(met[0].paths[0].theirs, "src/parser/lexer.rs");
//! assert_eq!(met[0].paths[0].kinds, [ChangeKind::Unstaged]);
//! ```

use std::collections::BTreeMap;

use crate::index::PathIndex;
use crate::listing::{
    ClaimsMet, Listed, PeerPath, every_claims_paths, for_each_meeting_pair, peer_paths,
};
use crate::pairs::PairSample;
use crate::paths::ClaimPath;
use crate::peers::{Peer, PeerCheckout, PeerId, SideKind};

/// How many changed paths a board carries; the rest are counted in `more_paths`. A worktree
/// with more (a generated tree that is not ignored) is reported as such rather than copied
/// onto every answer.
pub const CHANGED_PATHS: usize = 2_000;

/// How a worktree changed a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum ChangeKind {
    /// Committed on the worktree's branch since the merge base with the default branch.
    Committed,
    /// Staged in the index, not committed.
    Staged,
    /// Changed in the working tree, not staged.
    Unstaged,
    /// A new file git does not track and does not ignore.
    Untracked,
}

impl ChangeKind {
    /// The word answers use.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One path a worktree changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedPath {
    /// Repository-relative, as git writes it.
    pub path: String,
    /// Each way it was changed (it may be committed and then edited again), in the order
    /// committed, staged, unstaged, untracked.
    pub kinds: Vec<ChangeKind>,
}

impl ChangedPath {
    /// Whether the path differs from its worktree's HEAD: changed in the index or the
    /// working tree, or untracked, rather than only committed on the branch.
    pub fn is_uncommitted(&self) -> bool {
        self.kinds.iter().any(|kind| *kind != ChangeKind::Committed)
    }
}

/// What a worktree changed, as its board carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorktreeChanges {
    /// Changed paths in path order, at most 2,000.
    pub paths: Vec<ChangedPath>,
    /// How many more paths are changed than `paths` lists; absent when it lists them all.
    pub more_paths: usize,
    /// Why the changes could not be read (git failed, or the worktree is gone); absent
    /// when they were.
    pub reason: Option<String>,
    /// How many seconds ago git read them, for a worktree without a server, whose changes
    /// are read in the background at most about once a second; absent when its own server
    /// (or the answering one) read them for this answer.
    pub read_seconds_ago: Option<u64>,
}

impl WorktreeChanges {
    /// Changes that could not be read, and why.
    pub fn unreadable(reason: impl Into<String>) -> Self {
        WorktreeChanges {
            paths: Vec::new(),
            more_paths: 0,
            reason: Some(reason.into()),
            read_seconds_ago: None,
        }
    }

    /// Whether anything is changed (that is known).
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.more_paths == 0
    }

    /// The paths as they meet: each taken literally (a file named `[slug]` is that file),
    /// those that are no valid repository path left out, and no more than [`CHANGED_PATHS`].
    fn meeting_paths(&self) -> Vec<(usize, ClaimPath)> {
        self.paths
            .iter()
            .take(CHANGED_PATHS)
            .enumerate()
            .filter_map(|(at, changed)| {
                Some((at, ClaimPath::from_key(&changed.path, &changed.path).ok()?))
            })
            .collect()
    }
}

/// One pair of paths where a claim or a change meets a worktree's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeOverlapPath {
    /// Your path: the claimed path as you wrote it, or, in a listing, the `with` side's path.
    pub yours: String,
    /// The changed path of the worktree this entry names.
    pub theirs: String,
    /// How that worktree changed `theirs`.
    pub kinds: Vec<ChangeKind>,
    /// How `yours` was changed, when the `with` side is itself a worktree's changes.
    pub your_kinds: Vec<ChangeKind>,
}

/// A worktree's changes on ground you claimed: "you claim `src/parser`; worktree `beta`
/// (branch `feature/beta`) has uncommitted changes to `src/parser/lexer.rs`".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeOverlap {
    /// What this side is: always `change`, a worktree's changes as git knows them.
    pub kind: SideKind,
    /// The worktree that changed the paths.
    pub checkout: PeerCheckout,
    /// Pairs of paths that meet: at most 8, the first by position in each list.
    pub paths: Vec<ChangeOverlapPath>,
    /// How many more pairs meet than `paths` lists; absent when it lists them all.
    pub more_paths: u32,
}

/// The other side of a listed overlap with a worktree's changes: a peer's claim, or another
/// worktree's changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeOverlapSide {
    /// `claim` (a peer's claim) or `change` (another worktree's changes).
    pub kind: SideKind,
    /// The checkout the claiming peer is attached to, or the worktree that changed.
    pub checkout: Option<PeerCheckout>,
    /// The peer, for a claim.
    pub peer: Option<PeerId>,
    /// Whether the peer is still attached, for a claim.
    pub attached: Option<bool>,
    /// For a claim of a departed peer, seconds since it left.
    pub left_seconds_ago: Option<u64>,
    /// For a claim: the names of the peer's claims that meet the changes, in the peer's
    /// claim order, `null` for its unnamed claim. What each is for is its `intent` in
    /// `peers`.
    pub claims: Vec<Option<String>>,
}

/// A worktree's changes meeting the claims of a peer of another worktree, or another
/// worktree's changes, as a listing reports it — one entry per worktree and peer, or per
/// pair of worktrees: the top-level fields name the worktree
/// whose changes are `theirs` in `paths`, and `with` the side whose paths are `yours`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedChangeOverlap {
    /// The changes of one worktree.
    pub overlap: ChangeOverlap,
    /// The claim or the changes they meet.
    pub with: ChangeOverlapSide,
}

/// Every worktree's changes that meet one of `paths` (a claim just made, unrepeated), one
/// entry per worktree in the order given, each listing the first few pairs and counting the
/// rest. The caller leaves out the claim's own worktree.
///
/// The claim's paths go into a trie; each changed path walks it once, so the work is the
/// changed paths times their depth plus the pairs that meet, never paths × changes.
pub fn changes_meeting(
    paths: &[ClaimPath],
    worktrees: &[(PeerCheckout, WorktreeChanges)],
) -> Vec<ChangeOverlap> {
    let mut claimed = PathIndex::new();
    for (at, path) in paths.iter().enumerate() {
        claimed.insert(path.components(), at);
    }
    let mut overlaps = Vec::new();
    for (checkout, changes) in worktrees {
        let mut met = PairSample::default();
        for (theirs, changed) in changes.meeting_paths() {
            claimed.for_each_meeting(changed.components(), |&yours| met.add((yours, theirs)));
        }
        let (listed, more_paths) = met.finish();
        if listed.is_empty() {
            continue;
        }
        overlaps.push(ChangeOverlap {
            kind: SideKind::Change,
            checkout: checkout.clone(),
            paths: listed
                .into_iter()
                .map(|(yours, theirs)| ChangeOverlapPath {
                    yours: paths[yours].as_written().to_owned(),
                    theirs: changes.paths[theirs].path.clone(),
                    kinds: changes.paths[theirs].kinds.clone(),
                    your_kinds: Vec::new(),
                })
                .collect(),
            more_paths,
        });
    }
    overlaps
}

/// Where one path sits in a listing: a path a peer claims, or a worktree's changed path.
#[derive(Debug, Clone, Copy)]
enum Entry {
    /// (peer, the peer's path)
    Claim {
        peer: usize,
        path: usize,
    },
    Change {
        worktree: usize,
        path: usize,
    },
}

/// The side a worktree's changes are paired with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Other {
    /// A peer's claims.
    Claim(usize),
    /// A later worktree.
    Change(usize),
}

/// Every worktree's changes that meet the claims of a peer of another worktree or another
/// worktree's changes, one entry per worktree and peer (naming the peer's claims that
/// meet) or per pair of worktrees, live claims before departed ones, each listing the first
/// few path pairs and counting the rest; at most [`crate::limits::OVERLAPS_LISTED`]
/// entries, the rest counted.
///
/// Peers are those of a repository-wide listing, each stamped with its checkout; a peer's
/// claims never meet its own worktree's changes. In an entry between two worktrees' changes
/// the one given earlier is the top-level side. The work is one sort of every distinct path
/// and one step per pair that meets, as in [`crate::listing::overlaps_among`].
pub fn change_overlaps_among(
    peers: &[Peer],
    worktrees: &[(PeerCheckout, WorktreeChanges)],
) -> Listed<ListedChangeOverlap> {
    if worktrees
        .iter()
        .all(|(_, changes)| changes.paths.is_empty())
    {
        // Nothing changed anywhere: no claim need be read at all.
        return Listed::default();
    }
    let claimed = every_claims_paths(peers);
    let distinct: Vec<Vec<PeerPath>> = claimed.iter().map(|c| peer_paths(c)).collect();
    let changed: Vec<Vec<(usize, ClaimPath)>> = worktrees
        .iter()
        .map(|(_, changes)| changes.meeting_paths())
        .collect();

    let mut entries: Vec<(&[String], Entry)> = Vec::new();
    for (p, paths) in distinct.iter().enumerate() {
        for (s, held) in paths.iter().enumerate() {
            entries.push((held.path.components(), Entry::Claim { peer: p, path: s }));
        }
    }
    for (w, paths) in changed.iter().enumerate() {
        for (at, path) in paths {
            entries.push((
                path.components(),
                Entry::Change {
                    worktree: w,
                    path: *at,
                },
            ));
        }
    }

    let worktree_of_peer: Vec<Option<usize>> = peers
        .iter()
        .map(|peer| {
            let id = &peer.checkout.as_ref()?.id;
            worktrees
                .iter()
                .position(|(checkout, _)| checkout.id == *id)
        })
        .collect();
    // (worktree, other side) -> pairs (changed path, the other side's path), and which
    // claims of a peer meet them
    let mut met: BTreeMap<(usize, Other), (PairSample, Option<ClaimsMet>)> = BTreeMap::new();
    for_each_meeting_pair(&mut entries, |one, other| {
        let (worktree, change, other, path) = match (*one, *other) {
            (Entry::Change { worktree, path }, Entry::Claim { peer, path: at })
            | (Entry::Claim { peer, path: at }, Entry::Change { worktree, path }) => {
                if worktree_of_peer[peer] == Some(worktree) {
                    return;
                }
                (worktree, path, Other::Claim(peer), at)
            }
            (
                Entry::Change {
                    worktree: a,
                    path: pa,
                },
                Entry::Change {
                    worktree: b,
                    path: pb,
                },
            ) => {
                if a == b {
                    return;
                }
                if a < b {
                    (a, pa, Other::Change(b), pb)
                } else {
                    (b, pb, Other::Change(a), pa)
                }
            }
            (Entry::Claim { .. }, Entry::Claim { .. }) => return,
        };
        let (pairs, claims) = met.entry((worktree, other)).or_insert_with(|| {
            let claims = match other {
                Other::Claim(peer) => Some(ClaimsMet::of(&peers[peer])),
                Other::Change(_) => None,
            };
            (PairSample::default(), claims)
        });
        pairs.add((change, path));
        if let (Other::Claim(peer), Some(claims)) = (other, claims) {
            claims.add(&distinct[peer][path].claims);
        }
    });

    let mut listed: Vec<ListedChangeOverlap> = met
        .into_iter()
        .map(|((w, other), (pairs, claims))| {
            let (checkout, changes) = &worktrees[w];
            let (pairs, more_paths) = pairs.finish();
            let (with, paths) = match other {
                Other::Claim(p) => {
                    let peer = &peers[p];
                    let yours = &distinct[p];
                    let side = ChangeOverlapSide {
                        kind: SideKind::Claim,
                        checkout: peer.checkout.clone(),
                        peer: Some(peer.id.clone()),
                        attached: Some(peer.attached),
                        left_seconds_ago: peer.left_seconds_ago,
                        claims: claims.map(|c| c.names(peer)).unwrap_or_default(),
                    };
                    let paths = pairs
                        .into_iter()
                        .map(|(theirs, y)| ChangeOverlapPath {
                            yours: yours[y].path.as_written().to_owned(),
                            theirs: changes.paths[theirs].path.clone(),
                            kinds: changes.paths[theirs].kinds.clone(),
                            your_kinds: Vec::new(),
                        })
                        .collect();
                    (side, paths)
                }
                Other::Change(o) => {
                    let (other_checkout, other_changes) = &worktrees[o];
                    let side = ChangeOverlapSide {
                        kind: SideKind::Change,
                        checkout: Some(other_checkout.clone()),
                        peer: None,
                        attached: None,
                        left_seconds_ago: None,
                        claims: Vec::new(),
                    };
                    let paths = pairs
                        .into_iter()
                        .map(|(theirs, y)| ChangeOverlapPath {
                            yours: other_changes.paths[y].path.clone(),
                            theirs: changes.paths[theirs].path.clone(),
                            kinds: changes.paths[theirs].kinds.clone(),
                            your_kinds: other_changes.paths[y].kinds.clone(),
                        })
                        .collect();
                    (side, paths)
                }
            };
            ListedChangeOverlap {
                overlap: ChangeOverlap {
                    kind: SideKind::Change,
                    checkout: checkout.clone(),
                    paths,
                    more_paths,
                },
                with,
            }
        })
        .collect();
    listed.sort_by_key(|overlap| overlap.with.attached == Some(false));
    Listed::capped(listed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::normalize;
    use crate::peers::{Announcement, ClientInfo, Transport};
    use crate::testing::Lcg;

    fn checkout(name: &str) -> PeerCheckout {
        PeerCheckout {
            id: format!("id-{name}"),
            worktree: format!("/wt/{name}"),
            branch: Some(name.to_owned()),
            this_checkout: name == "alpha",
            machine: None,
        }
    }

    fn changes(paths: &[(&str, &[ChangeKind])]) -> WorktreeChanges {
        WorktreeChanges {
            paths: paths
                .iter()
                .map(|(path, kinds)| ChangedPath {
                    path: (*path).to_owned(),
                    kinds: kinds.to_vec(),
                })
                .collect(),
            more_paths: 0,
            reason: None,
            read_seconds_ago: None,
        }
    }

    fn peer(n: u64, worktree: &str, scope: &[&str], attached: bool) -> Peer {
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
            attached,
            left_seconds_ago: (!attached).then_some(240),
            announcement: Some(claim.clone()),
            claims: vec![claim],
            checkout: Some(checkout(worktree)),
            waiting: None,
        }
    }

    use ChangeKind::{Committed, Staged, Unstaged, Untracked};

    /// (the changed worktree, the other side, its kind, [(changed path, other path)])
    type Side = (String, String, SideKind, Vec<(String, String)>);

    #[test]
    fn a_claim_meets_another_worktrees_changes_with_their_kinds() {
        let beta = changes(&[
            ("README.md", &[Unstaged]),
            ("src/parser/committed.rs", &[Committed, Unstaged]),
            ("src/parser/lexer.rs", &[Unstaged]),
            ("src/parser/new.rs", &[Untracked]),
            ("src/parser/staged.rs", &[Staged]),
        ]);
        let mine = [normalize("./src/parser/", "/wt/alpha").unwrap()];
        let met = changes_meeting(&mine, &[(checkout("beta"), beta)]);
        assert_eq!(met.len(), 1);
        assert_eq!(met[0].kind, SideKind::Change);
        let kinds: Vec<(&str, &str, Vec<ChangeKind>)> = met[0]
            .paths
            .iter()
            .map(|p| (p.yours.as_str(), p.theirs.as_str(), p.kinds.clone()))
            .collect();
        assert_eq!(
            kinds,
            [
                (
                    "./src/parser/",
                    "src/parser/committed.rs",
                    vec![Committed, Unstaged]
                ),
                ("./src/parser/", "src/parser/lexer.rs", vec![Unstaged]),
                ("./src/parser/", "src/parser/new.rs", vec![Untracked]),
                ("./src/parser/", "src/parser/staged.rs", vec![Staged]),
            ]
        );
        assert_eq!(met[0].kind, SideKind::Change);
        assert!(met[0].paths[0].your_kinds.is_empty());
        assert_eq!(met[0].more_paths, 0);
    }

    #[test]
    fn a_changed_name_that_looks_like_a_glob_is_a_literal_file() {
        let web = changes(&[("app/[slug]/page.tsx", &[Unstaged])]);
        let other = [normalize("app/other.ts", "/wt/alpha").unwrap()];
        assert!(changes_meeting(&other, &[(checkout("web"), web.clone())]).is_empty());
        let app = [normalize("app", "/wt/alpha").unwrap()];
        assert_eq!(changes_meeting(&app, &[(checkout("web"), web)]).len(), 1);
    }

    #[test]
    fn a_worktrees_own_changes_never_meet_its_own_peers() {
        let worktrees = [
            (checkout("alpha"), changes(&[("src/a.rs", &[Unstaged])])),
            (
                checkout("beta"),
                changes(&[("src/a.rs", &[Staged]), ("docs/x.md", &[Untracked])]),
            ),
        ];
        let peers = [
            peer(1, "alpha", &["src"], true),
            peer(2, "alpha", &["docs"], false),
            peer(1, "beta", &["src/a.rs"], true),
        ];
        let listed = change_overlaps_among(&peers, &worktrees).listed;
        let summary: Vec<Side> = listed
            .iter()
            .map(|o| {
                (
                    o.overlap.checkout.worktree.clone(),
                    match &o.with.peer {
                        Some(peer) => {
                            format!("{peer}@{}", o.with.checkout.as_ref().unwrap().worktree)
                        }
                        None => o.with.checkout.as_ref().unwrap().worktree.clone(),
                    },
                    o.with.kind,
                    o.overlap
                        .paths
                        .iter()
                        .map(|p| (p.theirs.clone(), p.yours.clone()))
                        .collect(),
                )
            })
            .collect();
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            summary,
            [
                // alpha's changes meet beta p1's claim
                (
                    "/wt/alpha".into(),
                    "p1@/wt/beta".into(),
                    SideKind::Claim,
                    vec![pair("src/a.rs", "src/a.rs")]
                ),
                // alpha's and beta's changes meet each other
                (
                    "/wt/alpha".into(),
                    "/wt/beta".into(),
                    SideKind::Change,
                    vec![pair("src/a.rs", "src/a.rs")]
                ),
                // beta's changes meet alpha p1's claim, never alpha's own changes' peers
                (
                    "/wt/beta".into(),
                    "p1@/wt/alpha".into(),
                    SideKind::Claim,
                    vec![pair("src/a.rs", "src")]
                ),
                // beta's changes meet departed alpha p2's claim: last
                (
                    "/wt/beta".into(),
                    "p2@/wt/alpha".into(),
                    SideKind::Claim,
                    vec![pair("docs/x.md", "docs")]
                ),
            ]
        );
        let between = &listed[1];
        assert_eq!(between.overlap.paths[0].kinds, [Unstaged]);
        assert_eq!(between.overlap.paths[0].your_kinds, [Staged]);
        assert_eq!(listed[3].with.left_seconds_ago, Some(240));
        assert_eq!(listed[3].with.attached, Some(false));
    }

    #[test]
    fn wide_overlaps_are_capped_with_a_count_and_the_work_stays_linear() {
        let many: Vec<(String, &[ChangeKind])> = (0..CHANGED_PATHS)
            .map(|n| (format!("gen/{n:05}.rs"), &[Untracked][..]))
            .collect();
        let many: Vec<(&str, &[ChangeKind])> = many.iter().map(|(p, k)| (p.as_str(), *k)).collect();
        let worktrees = [
            (checkout("beta"), changes(&many)),
            (checkout("gamma"), changes(&many)),
        ];
        let mine = [normalize(".", "/wt/alpha").unwrap()];
        let met = changes_meeting(&mine, &worktrees);
        assert_eq!(met.len(), 2);
        assert_eq!(met[0].paths.len(), crate::limits::OVERLAP_PATH_PAIRS);
        assert_eq!(met[0].more_paths as usize, CHANGED_PATHS - 8);
        let listed = change_overlaps_among(&[], &worktrees).listed;
        assert_eq!(listed.len(), 1, "beta's and gamma's changes meet once");
        assert_eq!(
            listed[0].overlap.paths.len() + listed[0].overlap.more_paths as usize,
            CHANGED_PATHS,
            "each equal pair once"
        );
    }

    #[test]
    fn random_listings_agree_with_comparing_every_pair() {
        let mut rng = Lcg(5);
        let names = ["alpha", "beta", "gamma"];
        for round in 0..40 {
            let worktrees: Vec<(PeerCheckout, WorktreeChanges)> = names
                .iter()
                .map(|name| {
                    let paths: Vec<String> = rng.scope(8);
                    let mut paths: Vec<String> = paths
                        .into_iter()
                        .filter(|p| !p.contains(['*', '?', '[', '{']) && *p != ".")
                        .collect();
                    paths.sort();
                    paths.dedup();
                    let paths: Vec<(&str, &[ChangeKind])> = paths
                        .iter()
                        .map(|p| (p.as_str(), &[Unstaged][..]))
                        .collect();
                    (checkout(name), changes(&paths))
                })
                .collect();
            let peers: Vec<Peer> = (0..rng.below(5))
                .map(|n| {
                    let scope = rng.scope(6);
                    let scope: Vec<&str> = scope.iter().map(String::as_str).collect();
                    peer(n as u64 + 1, names[rng.below(3)], &scope, rng.below(3) > 0)
                })
                .collect();
            let listed = change_overlaps_among(&peers, &worktrees).listed;
            let mut got: Vec<(String, String, usize)> = listed
                .iter()
                .map(|o| {
                    let with = match &o.with.peer {
                        Some(peer) => format!("{peer}@{}", o.with.checkout.as_ref().unwrap().id),
                        None => o.with.checkout.as_ref().unwrap().id.clone(),
                    };
                    (
                        o.overlap.checkout.id.clone(),
                        with,
                        o.overlap.paths.len() + o.overlap.more_paths as usize,
                    )
                })
                .collect();
            let mut expected = Vec::new();
            let as_path = |p: &str| ClaimPath::from_key(p, p).unwrap();
            for (w, (checkout, changes)) in worktrees.iter().enumerate() {
                for peer in &peers {
                    let own = peer.checkout.as_ref().unwrap().id == checkout.id;
                    let scope = crate::listing::claim_paths(peer, &peer.claims[0]);
                    let pairs = changes
                        .paths
                        .iter()
                        .flat_map(|c| scope.iter().map(move |s| (c, s)))
                        .filter(|(c, s)| as_path(&c.path).meets(s))
                        .count();
                    if !own && pairs > 0 {
                        expected.push((
                            checkout.id.clone(),
                            format!("{}@{}", peer.id, peer.checkout.as_ref().unwrap().id),
                            pairs,
                        ));
                    }
                }
                for (other, other_changes) in &worktrees[w + 1..] {
                    let pairs = changes
                        .paths
                        .iter()
                        .flat_map(|c| other_changes.paths.iter().map(move |o| (c, o)))
                        .filter(|(c, o)| as_path(&c.path).meets(&as_path(&o.path)))
                        .count();
                    if pairs > 0 {
                        expected.push((checkout.id.clone(), other.id.clone(), pairs));
                    }
                }
            }
            got.sort();
            expected.sort();
            assert_eq!(got, expected, "round {round}");
            let departed_after_live = listed
                .windows(2)
                .all(|w| !(w[0].with.attached == Some(false) && w[1].with.attached != Some(false)));
            assert!(departed_after_live, "round {round}");
        }
    }
}
