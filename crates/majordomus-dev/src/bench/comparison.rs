//! A run against its baseline, figure by figure: what `--baseline` adds to a report, apart
//! from how it is computed (`baseline`) and how it is shown (`report`).

use std::collections::BTreeMap;

use serde::Serialize;

/// One figure in both runs.
#[derive(Clone, Debug, Serialize)]
pub struct Compared {
    pub name: String,
    pub unit: &'static str,
    pub now: f64,
    pub baseline: f64,
    /// `now / baseline`, to two decimals.
    pub ratio: f64,
    /// Whether the ratio is above the threshold.
    pub flagged: bool,
}

/// This run against the baseline.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub file: String,
    /// When the baseline was measured.
    pub started_at: String,
    pub flag_above: f64,
    /// Every row and scenario measured in both runs, in this run's order.
    pub compared: Vec<Compared>,
    /// The names of the flagged ones.
    pub flagged: Vec<String>,
    /// Measured in this run only.
    pub only_in_this_run: Vec<String>,
    /// Measured in the baseline only.
    pub only_in_baseline: Vec<String>,
    /// Where each name is in `compared`, so that a table's rows find theirs without a search.
    #[serde(skip)]
    at: BTreeMap<String, usize>,
}

impl Comparison {
    pub fn new(
        file: String,
        started_at: String,
        flag_above: f64,
        compared: Vec<Compared>,
        only_in_this_run: Vec<String>,
        only_in_baseline: Vec<String>,
    ) -> Comparison {
        let at = compared
            .iter()
            .enumerate()
            .map(|(at, c)| (c.name.clone(), at))
            .collect();
        let flagged = compared
            .iter()
            .filter(|c| c.flagged)
            .map(|c| c.name.clone())
            .collect();
        Comparison {
            file,
            started_at,
            flag_above,
            compared,
            flagged,
            only_in_this_run,
            only_in_baseline,
            at,
        }
    }

    /// The comparison of `name`, if it was measured in both runs.
    pub fn of(&self, name: &str) -> Option<&Compared> {
        self.at.get(name).map(|&at| &self.compared[at])
    }
}
