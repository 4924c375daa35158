//! What worktrees changed, and where it meets claims or other changes, as `peers.list` and
//! `peers.announce` write them: types of the answers' own, converted from the domain's when
//! an answer is made and back into them when a sibling's listing is read, so the answers
//! change only when this file does. Their doc comments are the descriptions the schemas
//! carry; the wire contract test pins what they write.
//!
//! A checkout, a peer's id and the kind of a side are written in the words every answer
//! shares ([`crate::wire`]), as the peers the same answers list are.

use majordomus_domain::changes as domain;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::{PeerCheckout, PeerId, SideKind};

/// How a worktree changed a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
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

/// One path a worktree changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangedPath {
    /// Repository-relative, as git writes it.
    pub path: String,
    /// Each way it was changed (it may be committed and then edited again), in the order
    /// committed, staged, unstaged, untracked.
    pub kinds: Vec<ChangeKind>,
}

/// What a worktree changed, as its board carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorktreeChanges {
    /// Changed paths in path order, at most 2,000.
    pub paths: Vec<ChangedPath>,
    /// How many more paths are changed than `paths` lists; absent when it lists them all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_paths: usize,
    /// Why the changes could not be read (git failed, or the worktree is gone); absent
    /// when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How many seconds ago git read them, for a worktree without a server, whose changes
    /// are read in the background at most about once a second; absent when its own server
    /// (or the answering one) read them for this answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_seconds_ago: Option<u64>,
}

/// One pair of paths where a claim or a change meets a worktree's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangeOverlapPath {
    /// Your path: the claimed path as you wrote it, or, in a listing, the `with` side's path.
    pub yours: String,
    /// The changed path of the worktree this entry names.
    pub theirs: String,
    /// How that worktree changed `theirs`.
    pub kinds: Vec<ChangeKind>,
    /// How `yours` was changed, when the `with` side is itself a worktree's changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub your_kinds: Vec<ChangeKind>,
}

/// A worktree's changes on ground you claimed: "you claim `src/parser`; worktree `beta`
/// (branch `feature/beta`) has uncommitted changes to `src/parser/lexer.rs`".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangeOverlap {
    /// What this side is: always `change`, a worktree's changes as git knows them.
    pub kind: SideKind,
    /// The worktree that changed the paths.
    pub checkout: PeerCheckout,
    /// Pairs of paths that meet: at most 8, the first by position in each list.
    pub paths: Vec<ChangeOverlapPath>,
    /// How many more pairs meet than `paths` lists; absent when it lists them all.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub more_paths: u32,
}

/// The other side of a listed overlap with a worktree's changes: a peer's claim, or another
/// worktree's changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangeOverlapSide {
    /// `claim` (a peer's claim) or `change` (another worktree's changes).
    pub kind: SideKind,
    /// The checkout the claiming peer is attached to, or the worktree that changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout: Option<PeerCheckout>,
    /// The peer, for a claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerId>,
    /// Whether the peer is still attached, for a claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached: Option<bool>,
    /// For a claim of a departed peer, seconds since it left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_seconds_ago: Option<u64>,
    /// For a claim: the names of the peer's claims that meet the changes, in the peer's
    /// claim order, `null` for its unnamed claim. What each is for is its `intent` in
    /// `peers`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<Option<String>>,
}

/// A worktree's changes meeting the claims of a peer of another worktree, or another
/// worktree's changes, as a listing reports it — one entry per worktree and peer, or per
/// pair of worktrees: the top-level fields name the worktree
/// whose changes are `theirs` in `paths`, and `with` the side whose paths are `yours`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ListedChangeOverlap {
    /// The changes of one worktree.
    #[serde(flatten)]
    pub overlap: ChangeOverlap,
    /// The claim or the changes they meet.
    pub with: ChangeOverlapSide,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

impl From<domain::ChangeKind> for ChangeKind {
    fn from(kind: domain::ChangeKind) -> Self {
        match kind {
            domain::ChangeKind::Committed => ChangeKind::Committed,
            domain::ChangeKind::Staged => ChangeKind::Staged,
            domain::ChangeKind::Unstaged => ChangeKind::Unstaged,
            domain::ChangeKind::Untracked => ChangeKind::Untracked,
        }
    }
}

impl From<ChangeKind> for domain::ChangeKind {
    fn from(kind: ChangeKind) -> Self {
        match kind {
            ChangeKind::Committed => domain::ChangeKind::Committed,
            ChangeKind::Staged => domain::ChangeKind::Staged,
            ChangeKind::Unstaged => domain::ChangeKind::Unstaged,
            ChangeKind::Untracked => domain::ChangeKind::Untracked,
        }
    }
}

/// The kinds of a path as the answers write them.
fn kinds(kinds: Vec<domain::ChangeKind>) -> Vec<ChangeKind> {
    kinds.into_iter().map(ChangeKind::from).collect()
}

impl From<domain::ChangedPath> for ChangedPath {
    fn from(changed: domain::ChangedPath) -> Self {
        ChangedPath {
            path: changed.path,
            kinds: kinds(changed.kinds),
        }
    }
}

impl From<ChangedPath> for domain::ChangedPath {
    fn from(changed: ChangedPath) -> Self {
        domain::ChangedPath {
            path: changed.path,
            kinds: changed
                .kinds
                .into_iter()
                .map(domain::ChangeKind::from)
                .collect(),
        }
    }
}

impl From<domain::WorktreeChanges> for WorktreeChanges {
    fn from(changes: domain::WorktreeChanges) -> Self {
        WorktreeChanges {
            paths: changes.paths.into_iter().map(ChangedPath::from).collect(),
            more_paths: changes.more_paths,
            reason: changes.reason,
            read_seconds_ago: changes.read_seconds_ago,
        }
    }
}

impl From<WorktreeChanges> for domain::WorktreeChanges {
    fn from(changes: WorktreeChanges) -> Self {
        domain::WorktreeChanges {
            paths: changes
                .paths
                .into_iter()
                .map(domain::ChangedPath::from)
                .collect(),
            more_paths: changes.more_paths,
            reason: changes.reason,
            read_seconds_ago: changes.read_seconds_ago,
        }
    }
}

impl From<domain::ChangeOverlapPath> for ChangeOverlapPath {
    fn from(pair: domain::ChangeOverlapPath) -> Self {
        ChangeOverlapPath {
            yours: pair.yours,
            theirs: pair.theirs,
            kinds: kinds(pair.kinds),
            your_kinds: kinds(pair.your_kinds),
        }
    }
}

impl From<domain::ChangeOverlap> for ChangeOverlap {
    fn from(overlap: domain::ChangeOverlap) -> Self {
        ChangeOverlap {
            kind: overlap.kind.into(),
            checkout: overlap.checkout.into(),
            paths: overlap
                .paths
                .into_iter()
                .map(ChangeOverlapPath::from)
                .collect(),
            more_paths: overlap.more_paths,
        }
    }
}

impl From<domain::ChangeOverlapSide> for ChangeOverlapSide {
    fn from(side: domain::ChangeOverlapSide) -> Self {
        ChangeOverlapSide {
            kind: side.kind.into(),
            checkout: side.checkout.map(Into::into),
            peer: side.peer.map(Into::into),
            attached: side.attached,
            left_seconds_ago: side.left_seconds_ago,
            claims: side.claims,
        }
    }
}

impl From<domain::ListedChangeOverlap> for ListedChangeOverlap {
    fn from(listed: domain::ListedChangeOverlap) -> Self {
        ListedChangeOverlap {
            overlap: listed.overlap.into(),
            with: listed.with.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_domain::changes::ChangeKind as Kind;
    use majordomus_domain::peers as board;

    #[test]
    fn a_worktrees_changes_read_back_as_the_domain_had_them() {
        let held = domain::WorktreeChanges {
            paths: vec![domain::ChangedPath {
                path: "src/lib.rs".into(),
                kinds: vec![Kind::Committed, Kind::Unstaged],
            }],
            more_paths: 3,
            reason: Some("partly read".into()),
            read_seconds_ago: Some(2),
        };
        let text = serde_json::to_string(&WorktreeChanges::from(held.clone())).unwrap();
        let read: WorktreeChanges = serde_json::from_str(&text).unwrap();
        assert_eq!(domain::WorktreeChanges::from(read), held);
        let empty = serde_json::to_value(WorktreeChanges::from(domain::WorktreeChanges::default()));
        assert_eq!(empty.unwrap(), serde_json::json!({"paths": []}));
    }

    #[test]
    fn a_listed_change_overlap_flattens_the_changes_and_leaves_out_what_is_empty() {
        let checkout = board::PeerCheckout {
            id: "b".into(),
            worktree: "/wt/beta".into(),
            branch: None,
            this_checkout: false,
            machine: None,
        };
        let listed = ListedChangeOverlap::from(domain::ListedChangeOverlap {
            overlap: domain::ChangeOverlap {
                kind: board::SideKind::Change,
                checkout,
                paths: vec![domain::ChangeOverlapPath {
                    yours: "src".into(),
                    theirs: "src/lib.rs".into(),
                    kinds: vec![Kind::Staged],
                    your_kinds: vec![],
                }],
                more_paths: 0,
            },
            with: domain::ChangeOverlapSide {
                kind: board::SideKind::Claim,
                checkout: None,
                peer: Some(board::PeerId::nth(1)),
                attached: Some(true),
                left_seconds_ago: None,
                claims: vec![None],
            },
        });
        let v = serde_json::to_value(&listed).unwrap();
        assert_eq!(
            (&v["kind"], &v["with"]["kind"]),
            (&"change".into(), &"claim".into())
        );
        assert!(v.get("more_paths").is_none() && v["paths"][0].get("your_kinds").is_none());
        assert_eq!(
            serde_json::from_value::<ListedChangeOverlap>(v).unwrap(),
            listed
        );
    }

    /// The words a change is written as are the words the domain names it by in text for
    /// people.
    #[test]
    fn every_change_kind_is_written_as_the_domain_names_it() {
        for kind in [
            Kind::Committed,
            Kind::Staged,
            Kind::Unstaged,
            Kind::Untracked,
        ] {
            let written = serde_json::to_value(ChangeKind::from(kind)).unwrap();
            assert_eq!(written, kind.as_str());
            let read: ChangeKind = serde_json::from_value(written).unwrap();
            assert_eq!(Kind::from(read), kind);
        }
    }
}
