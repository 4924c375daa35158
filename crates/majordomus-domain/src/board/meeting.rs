//! The claims an announcement meets: one walk of the board's index per path.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use crate::pairs::PairSample;
use crate::paths::ClaimPath;
use crate::peers::{Overlap, OverlapPath, Peer, PeerId, SideKind};

use super::{PeerBoard, left_seconds_ago, view};

impl PeerBoard {
    /// The peers, departed ones included, with a claim that meets one of `paths`, in
    /// attachment order: what a guard or a message to a path reads of the board. One walk
    /// of the index per path finds them, so a crowded board costs the claims that meet, not
    /// a view of every peer.
    pub fn peers_meeting(&self, paths: &[ClaimPath], now: SystemTime) -> Vec<Peer> {
        let mut meeting = BTreeSet::new();
        for path in paths {
            self.index.for_each_meeting(path.components(), |hit| {
                meeting.insert(hit.peer);
            });
        }
        meeting
            .into_iter()
            .filter_map(|number| Some(view(number, self.peers.get(&number)?, now)))
            .collect()
    }

    /// Every other peer's claim that meets one of `paths` (without repeats), one entry per
    /// claim: attached peers first, each group in attachment order and then claim order,
    /// each listing the first few path pairs and counting the rest.
    ///
    /// One walk of the index per path finds exactly the paths it meets, so the work is the
    /// number of meeting pairs (plus the peer's own paths, skipped): with paths unrepeated
    /// and at most [`limits::PATH_COMPONENTS`] deep, two claims of `n` and `m` paths meet
    /// on at most about `(n + m) × 64` pairs, never `n × m`. A walk meets a claim's paths
    /// one after another (they sit side by side in the trie), so a hit of the claim just met
    /// is counted without looking the claim up again.
    pub(super) fn overlaps_with(
        &self,
        number: u64,
        paths: &[ClaimPath],
        now: SystemTime,
    ) -> Vec<Overlap> {
        let mut met: BTreeMap<(u64, &Option<String>), usize> = BTreeMap::new();
        let mut samples: Vec<PairSample> = Vec::new();
        let mut last: Option<((u64, &Option<String>), usize)> = None;
        for (yours, path) in paths.iter().enumerate() {
            self.index.for_each_meeting(path.components(), |hit| {
                if hit.peer == number {
                    return;
                }
                let claim = (hit.peer, &hit.name);
                let at = match last {
                    Some((seen, at)) if seen == claim => at,
                    _ => {
                        let at = *met.entry(claim).or_insert_with(|| {
                            samples.push(PairSample::default());
                            samples.len() - 1
                        });
                        last = Some((claim, at));
                        at
                    }
                };
                samples[at].add((yours, hit.path));
            });
        }
        let mut overlaps: Vec<Overlap> = met
            .into_iter()
            .map(|((peer, name), at)| {
                let pairs = std::mem::take(&mut samples[at]);
                let slot = &self.peers[&peer];
                let claim = &slot.claims[name];
                let (listed, more_paths) = pairs.finish();
                Overlap {
                    peer: PeerId::nth(peer),
                    attached: slot.attached,
                    left_seconds_ago: left_seconds_ago(slot, now),
                    kind: SideKind::Claim,
                    intent: claim.intent.clone(),
                    checkout: None,
                    paths: listed
                        .into_iter()
                        .map(|(yours, theirs)| OverlapPath {
                            yours: paths[yours].as_written().to_owned(),
                            theirs: claim.paths[theirs].as_written().to_owned(),
                        })
                        .collect(),
                    more_paths,
                }
            })
            .collect();
        overlaps.sort_by_key(|overlap| !overlap.attached);
        overlaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::normalize_relative;
    use crate::peers::{AnnounceInput, ClientInfo, Transport};
    use std::time::{Duration, UNIX_EPOCH};

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_005_600 + seconds)
    }

    fn claim(board: &mut PeerBoard, peer: &PeerId, scope: &[&str]) {
        let input = AnnounceInput {
            intent: "work".into(),
            scope: scope.iter().map(|path| (*path).to_owned()).collect(),
            claim: None,
        };
        board.announce(peer, input, at(1)).unwrap();
    }

    fn meeting(board: &PeerBoard, paths: &[&str]) -> Vec<PeerId> {
        let paths: Vec<ClaimPath> = paths
            .iter()
            .map(|path| normalize_relative(path).unwrap())
            .collect();
        board
            .peers_meeting(&paths, at(2))
            .into_iter()
            .map(|peer| peer.id)
            .collect()
    }

    #[test]
    fn the_peers_meeting_paths_are_those_a_claim_of_meets_in_attachment_order() {
        let mut board = PeerBoard::new("/srv/repo");
        let attach = |board: &mut PeerBoard| {
            board.attach(Transport::Stdio, ClientInfo::uninitialized(), at(0))
        };
        let (sources, docs, idle, gone) = (
            attach(&mut board),
            attach(&mut board),
            attach(&mut board),
            attach(&mut board),
        );
        claim(&mut board, &sources, &["src/parser", "src/lexer.rs"]);
        claim(&mut board, &docs, &["docs"]);
        claim(&mut board, &gone, &["src"]);
        board.detach(&gone, None, at(1));

        assert_eq!(
            meeting(&board, &["src/parser/mod.rs"]),
            [sources.clone(), gone.clone()]
        );
        assert_eq!(
            meeting(&board, &["docs/guide.md", "README.md"]),
            vec![docs.clone()]
        );
        assert_eq!(meeting(&board, &["."]), [sources, docs, gone]);
        assert!(meeting(&board, &["tests"]).is_empty());
        assert!(
            !meeting(&board, &["."]).contains(&idle),
            "a peer without claims meets nothing"
        );
    }
}
