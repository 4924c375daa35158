//! `--baseline FILE`: this run against an earlier run's `--json` report, figure by figure, so
//! that a change that slows something down says so in the run that measures it rather than
//! in a reader's comparison of two tables.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::comparison::{Compared, Comparison};
use super::report::{Report, ScenarioRow};

/// The ratio above which a figure is flagged, unless `--flag-above` says otherwise: the
/// shared 2-core machines the benchmark runs on move single rows by about ±50% between
/// runs, so only what is slower by more than that is worth a reader's attention.
pub const FLAG_ABOVE: f64 = 1.5;

/// The figure a row or scenario is compared by: the median where there is a distribution
/// (every row, and the latency and throughput scenarios), else the one value it measures
/// (KB per session, KB of `tools/list`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figure {
    pub value: f64,
    /// `p50_ms`, or the scenario's unit.
    pub unit: &'static str,
}

/// An earlier run's figures, by row key and scenario name.
#[derive(Clone, Debug)]
pub struct Baseline {
    pub file: String,
    pub started_at: String,
    figures: BTreeMap<String, f64>,
}

impl Baseline {
    /// Reads an earlier `--json` report. Rows and scenarios that measured nothing (failed)
    /// have no figure and count as missing.
    pub fn load(path: &Path) -> Result<Baseline, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("--baseline {}: {error}", path.display()))?;
        let report: Value = serde_json::from_str(&text)
            .map_err(|error| format!("--baseline {}: not JSON: {error}", path.display()))?;
        if !report["schema"]
            .as_str()
            .is_some_and(|schema| schema.starts_with("majordomus-bench/"))
        {
            return Err(format!(
                "--baseline {}: not a report of `majordomus-dev bench --json`",
                path.display()
            ));
        }
        let mut figures = BTreeMap::new();
        for row in report["rows"].as_array().into_iter().flatten() {
            if let (Some(key), Some(p50)) = (row["key"].as_str(), row["p50_ms"].as_f64())
                && row["iterations"].as_u64().is_some_and(|n| n > 0)
            {
                figures.insert(key.to_string(), p50);
            }
        }
        for scenario in report["scenarios"].as_array().into_iter().flatten() {
            let figure = scenario["summary"]["p50_ms"]
                .as_f64()
                .or_else(|| scenario["value"].as_f64());
            if let (Some(name), Some(figure)) = (scenario["name"].as_str(), figure)
                && scenario["outcome"] == "measured"
            {
                figures.insert(name.to_string(), figure);
            }
        }
        Ok(Baseline {
            file: path.display().to_string(),
            started_at: report["started_at"].as_str().unwrap_or("").to_string(),
            figures,
        })
    }
}

/// The figure a scenario is compared by; `None` if it measured nothing.
pub fn scenario_figure(scenario: &ScenarioRow) -> Option<Figure> {
    if scenario.outcome != "measured" {
        return None;
    }
    match (&scenario.summary, scenario.value) {
        (Some(summary), _) => Some(Figure {
            value: summary.p50_ms,
            unit: "p50_ms",
        }),
        (None, Some(value)) => Some(Figure {
            value,
            unit: scenario.unit,
        }),
        (None, None) => None,
    }
}

/// Compares every figure of `report` with the baseline's.
pub fn compare(report: &Report, baseline: &Baseline, flag_above: f64) -> Comparison {
    let here: Vec<(String, Figure)> = report
        .rows
        .iter()
        .filter(|row| row.summary.iterations > 0)
        .map(|row| {
            (
                row.key.clone(),
                Figure {
                    value: row.summary.p50_ms,
                    unit: "p50_ms",
                },
            )
        })
        .chain(
            report
                .scenarios
                .iter()
                .filter_map(|s| scenario_figure(s).map(|figure| (s.name.to_string(), figure))),
        )
        .collect();
    let mut compared = Vec::new();
    let mut only_in_this_run = Vec::new();
    for (name, figure) in &here {
        match baseline.figures.get(name) {
            Some(&before) if before > 0.0 => {
                let ratio = figure.value / before;
                compared.push(Compared {
                    name: name.clone(),
                    unit: figure.unit,
                    now: figure.value,
                    baseline: before,
                    ratio: (ratio * 100.0).round() / 100.0,
                    flagged: ratio > flag_above,
                });
            }
            _ => only_in_this_run.push(name.clone()),
        }
    }
    let measured_here: BTreeSet<&str> = here.iter().map(|(name, _)| name.as_str()).collect();
    let only_in_baseline = baseline
        .figures
        .keys()
        .filter(|name| !measured_here.contains(name.as_str()))
        .cloned()
        .collect();
    Comparison::new(
        baseline.file.clone(),
        baseline.started_at.clone(),
        flag_above,
        compared,
        only_in_this_run,
        only_in_baseline,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baseline(figures: &[(&str, f64)]) -> Baseline {
        Baseline {
            file: "before.json".into(),
            started_at: String::new(),
            figures: figures
                .iter()
                .map(|(name, value)| (name.to_string(), *value))
                .collect(),
        }
    }

    #[test]
    fn ratios_above_the_threshold_are_flagged_and_missing_names_listed() {
        let report = super::super::report::tests::report_with_rows(&[
            ("peers.list/rest/this", 0.30),
            ("server.status/rest/this", 0.11),
            ("floor/rest", 0.05),
        ]);
        let before = baseline(&[
            ("peers.list/rest/this", 0.10),
            ("server.status/rest/this", 0.10),
            ("episodes.list/rest/all", 0.07),
        ]);
        let comparison = compare(&report, &before, FLAG_ABOVE);
        assert_eq!(comparison.flagged, ["peers.list/rest/this"]);
        assert_eq!(comparison.of("peers.list/rest/this").unwrap().ratio, 3.0);
        assert_eq!(comparison.of("server.status/rest/this").unwrap().ratio, 1.1);
        assert_eq!(comparison.only_in_this_run, ["floor/rest"]);
        assert_eq!(comparison.only_in_baseline, ["episodes.list/rest/all"]);
    }
}
