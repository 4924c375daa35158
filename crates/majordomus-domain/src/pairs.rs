//! The path pairs an overlap entry lists: the first few, and a count of the rest.
//!
//! Two wide claims can meet on hundreds of pairs of paths; listing each would make one
//! overlap as large as the product of the two scopes. An entry lists the least pairs by
//! position in each scope, up to [`limits::OVERLAP_PATH_PAIRS`], and counts the others.

use std::collections::BinaryHeap;

use crate::limits;

/// The pairs (index in one scope, index in the other) of two claims that meet, as they are
/// found: the least few kept, all counted. Each pair is added once.
#[derive(Debug, Default)]
pub(crate) struct PairSample {
    /// The least pairs seen so far, at most the cap, the greatest on top to be let go first.
    least: BinaryHeap<(usize, usize)>,
    total: usize,
}

impl PairSample {
    pub(crate) fn add(&mut self, pair: (usize, usize)) {
        self.total += 1;
        if self.least.len() < limits::OVERLAP_PATH_PAIRS {
            self.least.push(pair);
        } else if let Some(mut greatest) = self.least.peek_mut()
            && pair < *greatest
        {
            *greatest = pair;
        }
    }

    /// The pairs to list, in order, and how many more there were.
    pub(crate) fn finish(self) -> (Vec<(usize, usize)>, u32) {
        let listed = self.least.into_sorted_vec();
        let more = u32::try_from(self.total - listed.len()).unwrap_or(u32::MAX);
        (listed, more)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_pairs_are_listed_in_order_and_the_rest_counted() {
        let mut sample = PairSample::default();
        let mut all: Vec<(usize, usize)> =
            (0..30).flat_map(|y| (0..7).map(move |t| (y, t))).collect();
        // added in a scrambled order
        all.sort_by_key(|&(y, t)| (y * 7 + t) * 7919 % 210);
        for &pair in &all {
            sample.add(pair);
        }
        all.sort_unstable();
        let (listed, more) = sample.finish();
        assert_eq!(listed, all[..limits::OVERLAP_PATH_PAIRS]);
        assert_eq!(more as usize, 210 - limits::OVERLAP_PATH_PAIRS);

        let mut few = PairSample::default();
        few.add((2, 0));
        few.add((1, 5));
        assert_eq!(few.finish(), (vec![(1, 5), (2, 0)], 0));
    }
}
