//! Which peers' claims meet, kept beside the board so that an event can say when an overlap
//! between two peers begins and when it ends.
//!
//! The board answers an announcement with the claims the new one meets; whether two peers
//! still meet through another of their claims, or stopped meeting when a claim moved, needs
//! every claim of the peer. This keeps the claims in a path index of its own (the same
//! normalisation as the board) and asks it for a peer's partners before and after each
//! change: one walk per path, whose work is the pairs of paths that meet.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use majordomus_domain::board::DEPARTED_CAP;
use majordomus_domain::index::PathIndex;
use majordomus_domain::paths::{ClaimPath, normalize, same_places, without_repeats};
use majordomus_domain::peers::{Announcement, PeerId};

/// A claim's place: whose, and which of its claims (by name; `None` is the unnamed one).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ClaimKey {
    peer: PeerId,
    name: Option<String>,
}

/// The claims of a board, indexed by path.
pub(super) struct OverlapTracker {
    checkout_root: String,
    index: PathIndex<ClaimKey>,
    claims: HashMap<ClaimKey, Arc<[ClaimPath]>>,
    /// Each peer's claim names, so a peer's claims are found without a scan.
    names: HashMap<PeerId, BTreeSet<Option<String>>>,
    /// Departed peers that hold claims, earliest departure first, as the board keeps them.
    departed: VecDeque<PeerId>,
}

/// The peers an announcement began and stopped meeting.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Delta {
    pub began: Vec<PeerId>,
    pub ended: Vec<PeerId>,
}

impl OverlapTracker {
    pub(super) fn new(checkout_root: String) -> Self {
        OverlapTracker {
            checkout_root,
            index: PathIndex::new(),
            claims: HashMap::new(),
            names: HashMap::new(),
            departed: VecDeque::new(),
        }
    }

    /// `peer` announced `claim` (as the board recorded it), which the board compares on
    /// `compared`.
    pub(super) fn announce(
        &mut self,
        peer: &PeerId,
        claim: &Announcement,
        compared: &Arc<[ClaimPath]>,
    ) -> Delta {
        let paths = self.paths_of(claim, compared);
        self.replace(peer, claim.name.clone(), paths)
    }

    /// `peer`'s claim `name` left it, handed to another session.
    pub(super) fn withdraw(&mut self, peer: &PeerId, name: Option<&str>) -> Delta {
        self.replace(peer, name.map(str::to_owned), Vec::new().into())
    }

    /// `peer`'s claim `name` now holds `paths`. Over the same ground as before, the index and
    /// the peers it meets stay as they were, and nothing is walked.
    fn replace(&mut self, peer: &PeerId, name: Option<String>, paths: Arc<[ClaimPath]>) -> Delta {
        let key = ClaimKey {
            peer: peer.clone(),
            name,
        };
        if let Some(held) = self.claims.get_mut(&key)
            && same_places(held, &paths)
        {
            *held = paths;
            return Delta::default();
        }
        let before = self.partners(peer);
        self.unindex(&key);
        for path in paths.iter() {
            self.index.insert(path.components(), key.clone());
        }
        self.names
            .entry(peer.clone())
            .or_default()
            .insert(key.name.clone());
        self.claims.insert(key, paths);
        let after = self.partners(peer);
        Delta {
            began: after.difference(&before).cloned().collect(),
            ended: before.difference(&after).cloned().collect(),
        }
    }

    /// `peer` is gone from the board with its claims; answers the peers it met.
    pub(super) fn remove_peer(&mut self, peer: &PeerId) -> Vec<PeerId> {
        let partners = self.partners(peer);
        for name in self.names.remove(peer).unwrap_or_default() {
            self.unindex(&ClaimKey {
                peer: peer.clone(),
                name,
            });
        }
        self.departed.retain(|departed| departed != peer);
        partners.into_iter().collect()
    }

    /// `peer` left holding claims: it stays, until the board forgets it.
    pub(super) fn departed(&mut self, peer: &PeerId) {
        self.departed.push_back(peer.clone());
    }

    /// The departed peers the board no longer holds (`on_board` says which it does). The
    /// board forgets the earliest beyond [`DEPARTED_CAP`], so only those few are asked about.
    pub(super) fn forgotten(&mut self, on_board: impl Fn(&PeerId) -> bool) -> Vec<PeerId> {
        let mut gone = Vec::new();
        while self.departed.len() > DEPARTED_CAP
            || self.departed.front().is_some_and(|peer| !on_board(peer))
        {
            match self.departed.pop_front() {
                Some(peer) if !on_board(&peer) => gone.push(peer),
                Some(_) | None => {}
            }
        }
        gone
    }

    /// The claim's paths normalised by their text. When the board compared it on its text
    /// alone (nothing resolved differently on disk), those are the board's very paths,
    /// `compared`, which are shared rather than normalised again.
    fn paths_of(&self, claim: &Announcement, compared: &Arc<[ClaimPath]>) -> Arc<[ClaimPath]> {
        if claim.resolved.is_empty() {
            return compared.clone();
        }
        without_repeats(
            claim
                .scope
                .iter()
                .filter_map(|raw| normalize(raw, &self.checkout_root).ok())
                .collect(),
        )
        .into()
    }

    fn unindex(&mut self, key: &ClaimKey) {
        if let Some(paths) = self.claims.remove(key) {
            for path in paths.iter() {
                self.index.remove(path.components(), key);
            }
        }
    }

    /// Every other peer one of whose claims meets one of `peer`'s. A path's hits come
    /// claim by claim, so a hit of the peer just seen is passed over without a look-up.
    fn partners(&self, peer: &PeerId) -> BTreeSet<PeerId> {
        let mut partners = BTreeSet::new();
        let Some(names) = self.names.get(peer) else {
            return partners;
        };
        let mut last: Option<&PeerId> = None;
        for name in names {
            let key = ClaimKey {
                peer: peer.clone(),
                name: name.clone(),
            };
            for path in self.claims.get(&key).iter().flat_map(|paths| paths.iter()) {
                self.index.for_each_meeting(path.components(), |hit| {
                    if last == Some(&hit.peer) || &hit.peer == peer {
                        return;
                    }
                    last = Some(&hit.peer);
                    if !partners.contains(&hit.peer) {
                        partners.insert(hit.peer.clone());
                    }
                });
            }
        }
        partners
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> PeerId {
        PeerId::nth(n)
    }

    /// A claim as the board answers it: its scope's text alone.
    fn claim(name: Option<&str>, paths: &[&str]) -> Announcement {
        Announcement {
            name: name.map(str::to_owned),
            intent: "work".into(),
            scope: paths.iter().map(|p| p.to_string()).collect(),
            at: "2026-01-01T00:00:00Z".parse().unwrap(),
            resolved: Vec::new(),
            compared: Default::default(),
        }
    }

    /// The paths the board compares `claim` on, as it normalises them.
    fn compared(claim: &Announcement) -> Arc<[ClaimPath]> {
        let paths = claim.scope.iter().map(|raw| normalize(raw, "/repo"));
        without_repeats(paths.collect::<Result<_, _>>().unwrap()).into()
    }

    /// `peer` announces `claim` on the paths the board compares it on.
    fn announce(tracker: &mut OverlapTracker, peer: u64, claim: &Announcement) -> Delta {
        tracker.announce(&id(peer), claim, &compared(claim))
    }

    #[test]
    fn overlaps_begin_and_end_per_pair_of_peers() {
        let mut tracker = OverlapTracker::new("/repo".into());
        assert_eq!(
            announce(&mut tracker, 1, &claim(None, &["src"])),
            Delta::default()
        );
        let delta = announce(&mut tracker, 2, &claim(None, &["src/lib.rs"]));
        assert_eq!(delta.began, [id(1)]);
        // a second claim meeting the same peer begins nothing new
        let delta = announce(&mut tracker, 2, &claim(Some("more"), &["src/main.rs"]));
        assert_eq!(delta, Delta::default());
        // moving one claim away ends nothing while the other still meets
        let delta = announce(&mut tracker, 2, &claim(None, &["docs"]));
        assert_eq!(delta, Delta::default());
        let delta = announce(&mut tracker, 2, &claim(Some("more"), &[]));
        assert_eq!(delta.ended, [id(1)]);
        let delta = announce(&mut tracker, 3, &claim(None, &["."]));
        assert_eq!(delta.began, [id(1), id(2)]);
        assert_eq!(tracker.remove_peer(&id(3)), [id(1), id(2)]);
        assert!(tracker.partners(&id(1)).is_empty());
    }

    #[test]
    fn a_claim_of_this_board_is_indexed_on_the_paths_the_board_compared() {
        let mut tracker = OverlapTracker::new("/repo".into());
        announce(&mut tracker, 1, &claim(None, &["src"]));
        let mine = claim(None, &["./src/lib.rs"]);
        let paths = compared(&mine);
        assert_eq!(tracker.announce(&id(2), &mine, &paths).began, [id(1)]);
        let key = ClaimKey {
            peer: id(2),
            name: None,
        };
        assert!(Arc::ptr_eq(&tracker.claims[&key], &paths));
        assert_eq!(tracker.withdraw(&id(2), None).ended, [id(1)]);

        // a claim resolved differently on disk is indexed by its text
        let mut linked = claim(None, &["alias"]);
        linked.resolved = vec!["src".into()];
        let on_disk = compared(&claim(None, &["src"]));
        assert!(tracker.announce(&id(3), &linked, &on_disk).began.is_empty());
    }

    #[test]
    fn departed_peers_are_forgotten_as_the_board_forgets_them() {
        let mut tracker = OverlapTracker::new("/repo".into());
        for n in 1..=3 {
            announce(&mut tracker, n, &claim(None, &["a"]));
            tracker.departed(&id(n));
        }
        assert!(tracker.forgotten(|_| true).is_empty());
        let gone = tracker.forgotten(|peer| peer != &id(1));
        assert_eq!(gone, [id(1)]);
        assert_eq!(tracker.remove_peer(&id(1)), [id(2), id(3)]);
    }
}
