//! What a run found: the rows, the scenarios, the machine; as a terminal table, as Markdown
//! and as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::stats::Summary;
use super::{BenchTransport, Machine, ScenarioTarget, Target};
use majordomus::render::table;

/// One row of the matrix as measured.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// `capability/transport/case`.
    pub key: String,
    pub capability: &'static str,
    pub transport: BenchTransport,
    pub case: &'static str,
    /// The input every iteration sent: the case as its input type declares it.
    pub input: Value,
    /// `answer`, or `refusal` where the capability cannot run over this transport (a command
    /// without an MCP session to belong to).
    pub expected: &'static str,
    /// How the calls ended: `answer`, `refusal`, `failure`, or `mixed` (see `outcomes`).
    pub outcome: &'static str,
    /// How many measured calls ended each way.
    pub outcomes: BTreeMap<String, usize>,
    /// The first refusal's or failure's message.
    pub detail: Option<String>,
    #[serde(flatten)]
    pub summary: Summary,
    pub target: Target,
    /// Whether the median met the target; absent where there is none or nothing to compare.
    pub target_met: Option<bool>,
}

/// One scenario as measured.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioRow {
    pub name: &'static str,
    pub title: &'static str,
    /// `ms` for a latency (then `summary` holds it), `MB` for memory (then `value`).
    pub unit: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    pub target: ScenarioTarget,
    pub target_met: Option<bool>,
    /// `measured`, or `failed` (then `note` says why).
    pub outcome: &'static str,
    /// What was set up and what the answers said, in one or two sentences.
    pub note: String,
}

impl ScenarioRow {
    pub fn latency(
        scenario: &super::Scenario,
        summary: Summary,
        note: impl Into<String>,
    ) -> ScenarioRow {
        let target_met = match scenario.target {
            ScenarioTarget::MillisBelow(ms) => Some(summary.p50_ms < ms),
            _ => None,
        };
        ScenarioRow {
            name: scenario.name,
            title: scenario.title,
            unit: "ms",
            summary: Some(summary),
            value: None,
            target: scenario.target,
            target_met,
            outcome: "measured",
            note: note.into(),
        }
    }

    pub fn megabytes(scenario: &super::Scenario, mb: f64, note: impl Into<String>) -> ScenarioRow {
        let target_met = match scenario.target {
            ScenarioTarget::MegabytesBelow(limit) => Some(mb < limit),
            _ => None,
        };
        ScenarioRow {
            name: scenario.name,
            title: scenario.title,
            unit: "MB",
            summary: None,
            value: Some((mb * 10.0).round() / 10.0),
            target: scenario.target,
            target_met,
            outcome: "measured",
            note: note.into(),
        }
    }

    pub fn failed(scenario: &super::Scenario, why: impl Into<String>) -> ScenarioRow {
        ScenarioRow {
            name: scenario.name,
            title: scenario.title,
            unit: match scenario.target {
                ScenarioTarget::MegabytesBelow(_) => "MB",
                _ => "ms",
            },
            summary: None,
            value: None,
            target: scenario.target,
            target_met: None,
            outcome: "failed",
            note: why.into(),
        }
    }
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub schema: &'static str,
    /// The command line that produced it.
    pub command: String,
    pub started_at: String,
    pub duration_seconds: f64,
    pub machine: Machine,
    /// Where the rows were measured.
    pub setup: String,
    pub rows: Vec<Row>,
    pub scenarios: Vec<ScenarioRow>,
}

/// Decides `target_met` for every row that has a target and something to compare.
pub fn judge(rows: &mut [Row]) {
    let p50: BTreeMap<(String, BenchTransport, String), f64> = rows
        .iter()
        .filter(|row| row.summary.iterations > 0)
        .map(|row| {
            (
                (
                    row.capability.to_string(),
                    row.transport,
                    row.case.to_string(),
                ),
                row.summary.p50_ms,
            )
        })
        .collect();
    for row in rows.iter_mut() {
        if row.summary.iterations == 0 {
            continue;
        }
        row.target_met = match row.target {
            Target::Reference => None,
            Target::P50Below { micros } => Some(row.summary.p50_ms * 1000.0 < micros as f64),
            Target::AddsOver { base, micros } => p50
                .get(&(row.capability.to_string(), base, row.case.to_string()))
                .map(|base| (row.summary.p50_ms - base) * 1000.0 < micros as f64),
        };
    }
}

fn met(value: Option<bool>) -> &'static str {
    match value {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "—",
    }
}

fn outcome_cell(row: &Row) -> String {
    if row.outcome == row.expected {
        row.outcome.to_string()
    } else {
        format!("{} (expected {})", row.outcome, row.expected)
    }
}

const ROW_HEADERS: [&str; 10] = [
    "capability",
    "transport",
    "case",
    "n",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "target",
    "met",
    "outcome",
];

const SCENARIO_HEADERS: [&str; 8] = [
    "scenario", "n", "p50", "p90", "p99", "target", "met", "note",
];

/// A Markdown table; the columns named in `code` are set as code, the numeric ones (`n` and
/// the percentiles) aligned right.
fn markdown_table(headers: &[&str], code: &[usize], rows: &[Vec<String>]) -> String {
    let numeric = |header: &str| header == "n" || header.starts_with('p');
    let mut out = format!("| {} |\n", headers.join(" | "));
    let rules: Vec<&str> = headers
        .iter()
        .map(|h| if numeric(h) { "--:" } else { "---" })
        .collect();
    out.push_str(&format!("|{}|\n", rules.join("|")));
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(at, cell)| {
                let cell = cell.replace('|', "\\|");
                if code.contains(&at) {
                    format!("`{cell}`")
                } else {
                    cell
                }
            })
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

impl Report {
    fn row_cells(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|row| {
                vec![
                    row.capability.to_string(),
                    row.transport.as_str().to_string(),
                    row.case.to_string(),
                    row.summary.iterations.to_string(),
                    format!("{:.3}", row.summary.p50_ms),
                    format!("{:.3}", row.summary.p90_ms),
                    format!("{:.3}", row.summary.p99_ms),
                    row.target.short(),
                    met(row.target_met).to_string(),
                    outcome_cell(row),
                ]
            })
            .collect()
    }

    fn scenario_cells(&self) -> Vec<Vec<String>> {
        self.scenarios
            .iter()
            .map(|s| {
                let (n, p50, p90, p99) = scenario_figures(s);
                vec![
                    s.name.to_string(),
                    n,
                    p50,
                    p90,
                    p99,
                    s.target.describe(),
                    met(s.target_met).to_string(),
                    s.note.to_string(),
                ]
            })
            .collect()
    }

    /// The table printed on stdout.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "majordomus bench — {}", self.machine.summary());
        let _ = writeln!(out, "{}", self.command);
        if !self.rows.is_empty() {
            let _ = writeln!(out, "\nrows: {}\n", self.setup);
            let _ = writeln!(out, "{}", table(&ROW_HEADERS, &self.row_cells()));
        }
        if !self.scenarios.is_empty() {
            let _ = writeln!(
                out,
                "\n{}",
                table(&SCENARIO_HEADERS, &self.scenario_cells())
            );
        }
        let _ = writeln!(out, "\n(took {:.1} s)", self.duration_seconds);
        out
    }

    /// The same tables in Markdown, for BENCHMARKS.md.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let m = &self.machine;
        let _ = writeln!(out, "Command: `{}`  ", self.command);
        let _ = writeln!(
            out,
            "Run: {} · {:.1} s · majordomus {} ({} build)\n",
            self.started_at, self.duration_seconds, m.majordomus_version, m.profile
        );
        let _ = writeln!(out, "| machine | |\n|---|---|");
        let _ = writeln!(out, "| CPU | {} |", m.cpu_model.as_deref().unwrap_or("?"));
        let _ = writeln!(
            out,
            "| cores | {} logical{} |",
            m.logical_cores,
            m.physical_cores
                .map(|n| format!(", {n} physical"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "| memory | {} |",
            m.memory_mib
                .map(|mib| format!("{mib} MiB"))
                .unwrap_or_else(|| "?".into())
        );
        let _ = writeln!(
            out,
            "| OS | {} (Linux {}) |",
            m.os.as_deref().unwrap_or("?"),
            m.kernel.as_deref().unwrap_or("?")
        );
        let _ = writeln!(out, "| rustc | {} |", m.rustc.as_deref().unwrap_or("?"));
        let _ = writeln!(out, "| profile | {} |\n", m.profile);
        if !self.rows.is_empty() {
            let _ = writeln!(out, "Rows: {}.\n", self.setup);
            let _ = writeln!(
                out,
                "{}",
                markdown_table(&ROW_HEADERS, &[0, 2], &self.row_cells())
            );
        }
        if !self.scenarios.is_empty() {
            let _ = write!(
                out,
                "{}",
                markdown_table(&SCENARIO_HEADERS, &[0], &self.scenario_cells())
            );
        }
        out
    }
}

fn scenario_figures(s: &ScenarioRow) -> (String, String, String, String) {
    match (&s.summary, s.value) {
        (Some(summary), _) => (
            summary.iterations.to_string(),
            format!("{:.3} ms", summary.p50_ms),
            format!("{:.3} ms", summary.p90_ms),
            format!("{:.3} ms", summary.p99_ms),
        ),
        (None, Some(value)) => ("1".into(), format!("{value:.1} MB"), "—".into(), "—".into()),
        _ => ("0".into(), "—".into(), "—".into(), "—".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(transport: BenchTransport, p50_ms: f64) -> Row {
        Row {
            key: String::new(),
            capability: "peers.list",
            transport,
            case: "this",
            input: Value::Null,
            expected: "answer",
            outcome: "answer",
            outcomes: BTreeMap::new(),
            detail: None,
            summary: Summary {
                iterations: 10,
                p50_ms,
                ..Summary::default()
            },
            target: transport.target(),
            target_met: None,
        }
    }

    #[test]
    fn targets_are_judged_against_the_median_and_the_bridge_against_http() {
        let mut rows = vec![
            row(BenchTransport::InProcess, 0.01),
            row(BenchTransport::McpHttp, 0.4),
            row(BenchTransport::McpBridge, 1.2),
            row(BenchTransport::Rest, 0.25),
        ];
        judge(&mut rows);
        let verdicts: Vec<Option<bool>> = rows.iter().map(|r| r.target_met).collect();
        assert_eq!(verdicts, [None, Some(true), Some(true), Some(false)]);
        let mut alone = vec![row(BenchTransport::McpBridge, 0.3)];
        judge(&mut alone);
        assert_eq!(
            alone[0].target_met, None,
            "no HTTP row to compare the bridge with"
        );
    }
}
