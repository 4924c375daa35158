//! The claims an announcement meets: one walk of the board's index per path.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::pairs::PairSample;
use crate::paths::ClaimPath;
use crate::peers::{Overlap, OverlapPath, PeerId, SideKind};

use super::{PeerBoard, left_seconds_ago};

impl PeerBoard {
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
