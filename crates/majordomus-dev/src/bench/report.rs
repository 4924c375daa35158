//! What a run found: the rows, the scenarios, the machine; as a terminal table, as Markdown
//! and as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::comparison::Comparison;
use super::stats::Summary;
use super::{BenchTransport, FLOOR, FLOOR_GOAL, Machine, ScenarioTarget, Target};
use majordomus_core::render::table;

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
    /// The median over the median of its transport's floor, to two decimals: what
    /// majordomus adds, as a multiple of what the transport costs anyway. The floor is the
    /// one measured alongside the row, call for call, where it was (`floor_p50_ms`), else the
    /// transport's floor row. Absent for the handler alone, for the floors themselves, and
    /// where the floor was not measured.
    pub floor_ratio: Option<f64>,
    /// The median of the transport's floor called alternately with this row's calls.
    pub floor_p50_ms: Option<f64>,
    /// What the row adds over its capability's work: its median less the same case's
    /// in-process median, over the floor's median, to two decimals. Where a capability's own
    /// work is more than a transport's floor (a gather, a write), `floor_ratio` says little
    /// about the transport's part, and this says it. Absent where either was not measured.
    pub added_floor_ratio: Option<f64>,
    /// The median of the floor server sent this row's own request and answering its own
    /// answer (kept from one of its calls), called alternately with the row's calls as the
    /// do-nothing floor is.
    pub answer_floor_p50_ms: Option<f64>,
    /// The median over `answer_floor_p50_ms`, to two decimals: what majordomus adds over a
    /// server that does nothing but take the same request and carry the same answer. Where
    /// `floor_ratio` is high and this is near 1, the time goes to moving and reading the
    /// bytes, not to producing the answer.
    pub answer_floor_ratio: Option<f64>,
}

/// What a throughput scenario's clients achieved together, and what it cost the server.
#[derive(Clone, Debug, Serialize)]
pub struct Throughput {
    pub clients: usize,
    /// From the first timed call to the end of the last, all clients together.
    pub seconds: f64,
    pub calls: usize,
    pub calls_per_second: f64,
    /// The server process's user and system CPU time over the run, in percent of one core.
    pub server_cpu_percent: f64,
    /// The server's resident memory (VmRSS) at the end of the run.
    pub server_rss_mb: f64,
    /// The same clients against the floor server (its do-nothing tool over the same
    /// transport, or its route) for as long: what they reach on this machine.
    pub floor_calls_per_second: f64,
    pub floor_p99_ms: f64,
    pub floor_server_cpu_percent: f64,
    /// The same clients against the floor server answering what majordomus answered the
    /// first of them, for as long; absent where the calls have no one answer (lease turns).
    pub answer_floor_calls_per_second: Option<f64>,
    pub answer_floor_p99_ms: Option<f64>,
}

/// The server's resident memory before and after sessions were opened.
#[derive(Clone, Debug, Serialize)]
pub struct Memory {
    pub sessions: usize,
    pub rss_before_mb: f64,
    pub rss_after_mb: f64,
    /// VmHWM: the most the process held at any moment.
    pub peak_mb: f64,
    /// (after − before) / sessions, in KB of 1,024 bytes.
    pub kb_per_session: f64,
}

/// The size of a `tools/list` result, and of what a client forwards of it to its model.
#[derive(Clone, Debug, Serialize)]
pub struct ToolsListSize {
    pub tools: usize,
    /// The `result` of `tools/list`, as compact JSON.
    pub result_bytes: usize,
    /// Each tool's `name`, `description` and `inputSchema`, as compact JSON: what a client
    /// puts in front of its model (the output schema, title and annotations stay with it).
    pub forwarded_bytes: usize,
    /// `result_bytes / 4`: a rough token count, the usual rule of thumb for English and JSON.
    pub result_tokens_estimate: usize,
    /// `forwarded_bytes / 4`.
    pub forwarded_tokens_estimate: usize,
}

/// The floor of a latency scenario: the least a call of its kind costs on this machine,
/// measured alternately with the scenario's own calls, as a row's floor is.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioFloor {
    /// What the floor does.
    pub what: &'static str,
    pub p50_ms: f64,
    /// The scenario's p50 over the floor's, to two decimals.
    pub ratio: f64,
}

impl ScenarioFloor {
    /// The floor `what` measured as `floor`, beside the scenario's `summary`.
    pub fn of(what: &'static str, summary: &Summary, floor: &Summary) -> Option<ScenarioFloor> {
        (floor.iterations > 0 && floor.p50_ms > 0.0).then(|| ScenarioFloor {
            what,
            p50_ms: floor.p50_ms,
            ratio: (summary.p50_ms / floor.p50_ms * 100.0).round() / 100.0,
        })
    }
}

/// One scenario as measured.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioRow {
    pub name: &'static str,
    pub title: &'static str,
    /// `ms` for a latency (then `summary` holds it); `calls/s` for a throughput (then
    /// `value`, with the calls' latencies in `summary` and the rest in `throughput`);
    /// `KB/session` for memory and `KB` for a size (then `value`).
    pub unit: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_list: Option<ToolsListSize>,
    /// What the scenario is read against, measured alternately with it, when it has a floor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<ScenarioFloor>,
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
            unit: "ms",
            summary: Some(summary),
            target_met,
            ..ScenarioRow::measured(scenario, note)
        }
    }

    pub fn throughput(
        scenario: &super::Scenario,
        summary: Summary,
        throughput: Throughput,
        note: impl Into<String>,
    ) -> ScenarioRow {
        let target_met = match scenario.target {
            ScenarioTarget::Throughput { per_second, p99_ms } => {
                Some(throughput.calls_per_second >= per_second && summary.p99_ms <= p99_ms)
            }
            _ => None,
        };
        ScenarioRow {
            unit: "calls/s",
            value: Some(throughput.calls_per_second.round()),
            summary: Some(summary),
            throughput: Some(throughput),
            target_met,
            ..ScenarioRow::measured(scenario, note)
        }
    }

    pub fn memory(
        scenario: &super::Scenario,
        memory: Memory,
        note: impl Into<String>,
    ) -> ScenarioRow {
        let target_met = match scenario.target {
            ScenarioTarget::KilobytesPerSessionAtMost(kb) => Some(memory.kb_per_session <= kb),
            _ => None,
        };
        ScenarioRow {
            unit: "KB/session",
            value: Some(memory.kb_per_session),
            memory: Some(memory),
            target_met,
            ..ScenarioRow::measured(scenario, note)
        }
    }

    pub fn tools_list(
        scenario: &super::Scenario,
        size: ToolsListSize,
        note: impl Into<String>,
    ) -> ScenarioRow {
        let kb = (size.result_bytes as f64 / 1024.0 * 10.0).round() / 10.0;
        let target_met = match scenario.target {
            ScenarioTarget::KilobytesAtMost(limit) => {
                Some(size.result_bytes as f64 <= limit * 1024.0)
            }
            _ => None,
        };
        ScenarioRow {
            unit: "KB",
            value: Some(kb),
            tools_list: Some(size),
            target_met,
            ..ScenarioRow::measured(scenario, note)
        }
    }

    /// The same scenario read against `floor`.
    pub fn with_floor(self, floor: Option<ScenarioFloor>) -> ScenarioRow {
        ScenarioRow { floor, ..self }
    }

    /// A measured scenario with no figure yet: what the constructors above fill in.
    fn measured(scenario: &super::Scenario, note: impl Into<String>) -> ScenarioRow {
        ScenarioRow {
            name: scenario.name,
            title: scenario.title,
            unit: "ms",
            summary: None,
            value: None,
            throughput: None,
            memory: None,
            tools_list: None,
            floor: None,
            target: scenario.target,
            target_met: None,
            outcome: "measured",
            note: note.into(),
        }
    }

    pub fn failed(scenario: &super::Scenario, why: impl Into<String>) -> ScenarioRow {
        ScenarioRow {
            unit: match scenario.target {
                ScenarioTarget::KilobytesPerSessionAtMost(_) => "KB/session",
                ScenarioTarget::KilobytesAtMost(_) => "KB",
                ScenarioTarget::Throughput { .. } => "calls/s",
                ScenarioTarget::None | ScenarioTarget::MillisBelow(_) => "ms",
            },
            outcome: "failed",
            ..ScenarioRow::measured(scenario, why)
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
    /// The floors first, then the capability rows in planned order.
    pub rows: Vec<Row>,
    pub scenarios: Vec<ScenarioRow>,
    /// This run against `--baseline`, if one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Comparison>,
}

/// Decides `target_met` for every row that has a target and something to compare, and
/// each row's ratio to its transport's floor.
pub(super) fn judge(rows: &mut [Row]) {
    let floors: BTreeMap<BenchTransport, f64> = rows
        .iter()
        .filter(|row| row.capability == FLOOR && row.summary.iterations > 0)
        .map(|row| (row.transport, row.summary.p50_ms))
        .collect();
    let handler: BTreeMap<(&str, &str), f64> = rows
        .iter()
        .filter(|row| row.transport == BenchTransport::InProcess && row.summary.iterations > 0)
        .map(|row| ((row.capability, row.case), row.summary.p50_ms))
        .collect();
    let hundredths = |ratio: f64| (ratio * 100.0).round() / 100.0;
    for row in rows.iter_mut() {
        if row.capability == FLOOR || row.summary.iterations == 0 {
            continue;
        }
        let floor = row
            .floor_p50_ms
            .or_else(|| {
                let floor = row.transport.floor()?;
                floors.get(&floor).copied()
            })
            .filter(|&floor| floor > 0.0);
        row.floor_ratio = floor.map(|floor| hundredths(row.summary.p50_ms / floor));
        row.added_floor_ratio = floor
            .zip(handler.get(&(row.capability, row.case)))
            .map(|(floor, handler)| hundredths((row.summary.p50_ms - handler).max(0.0) / floor));
        row.answer_floor_ratio = row
            .answer_floor_p50_ms
            .filter(|&floor| floor > 0.0)
            .map(|floor| hundredths(row.summary.p50_ms / floor));
    }
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

const ROW_HEADERS: [&str; 13] = [
    "capability",
    "transport",
    "case",
    "n",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "× floor",
    "added × floor",
    "× answer floor",
    "target",
    "met",
    "outcome",
];

const SCENARIO_HEADERS: [&str; 9] = [
    "scenario", "n", "p50", "p90", "p99", "× floor", "target", "met", "note",
];

/// The column the comparison with a baseline adds to both tables.
const BASELINE_HEADER: &str = "× baseline";

/// A Markdown table; the columns named in `code` are set as code, the numeric ones (`n`, the
/// percentiles and the ratios) aligned right.
fn markdown_table(headers: &[&str], code: &[usize], rows: &[Vec<String>]) -> String {
    let numeric = |header: &str| header == "n" || header.starts_with('p') || header.contains('×');
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
                if code.contains(&at) && cell != "—" {
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

fn floor_cell(row: &Row) -> String {
    if row.capability == FLOOR {
        return "floor".into();
    }
    row.floor_ratio
        .map(|ratio| format!("{ratio:.2}"))
        .unwrap_or_else(|| "—".into())
}

impl Report {
    /// The headers of a table, with the baseline's column when there is one.
    fn headers<'a>(&self, headers: &[&'a str]) -> Vec<&'a str> {
        let mut headers = headers.to_vec();
        if self.baseline.is_some() {
            headers.push(BASELINE_HEADER);
        }
        headers
    }

    /// The baseline's cell for `name`, when there is a baseline.
    fn baseline_cell(&self, name: &str) -> Option<String> {
        let comparison = self.baseline.as_ref()?;
        Some(match comparison.of(name) {
            Some(compared) if compared.flagged => format!("{:.2} SLOWER", compared.ratio),
            Some(compared) => format!("{:.2}", compared.ratio),
            None => "(not in baseline)".into(),
        })
    }

    fn row_cells(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|row| {
                let floor = row.capability == FLOOR;
                let mut cells = vec![
                    row.capability.to_string(),
                    row.transport.as_str().to_string(),
                    if floor {
                        "—".into()
                    } else {
                        row.case.to_string()
                    },
                    row.summary.iterations.to_string(),
                    format!("{:.3}", row.summary.p50_ms),
                    format!("{:.3}", row.summary.p90_ms),
                    format!("{:.3}", row.summary.p99_ms),
                    floor_cell(row),
                    row.added_floor_ratio
                        .map_or_else(|| "—".into(), |ratio| format!("{ratio:.2}")),
                    row.answer_floor_ratio
                        .map_or_else(|| "—".into(), |ratio| format!("{ratio:.2}")),
                    row.target.short(),
                    met(row.target_met).to_string(),
                    outcome_cell(row),
                ];
                cells.extend(self.baseline_cell(&row.key));
                cells
            })
            .collect()
    }

    fn scenario_cells(&self) -> Vec<Vec<String>> {
        self.scenarios
            .iter()
            .map(|s| {
                let (n, p50, p90, p99) = scenario_figures(s);
                let mut cells = vec![
                    s.name.to_string(),
                    n,
                    p50,
                    p90,
                    p99,
                    s.floor
                        .as_ref()
                        .map_or_else(|| "—".into(), |floor| format!("{:.2}", floor.ratio)),
                    s.target.describe(),
                    met(s.target_met).to_string(),
                    s.note.to_string(),
                ];
                cells.extend(self.baseline_cell(s.name));
                cells
            })
            .collect()
    }

    /// How to read the "× floor" column, under the rows.
    fn floor_legend(&self) -> Option<String> {
        let floors: Vec<String> = self
            .rows
            .iter()
            .filter(|row| row.capability == FLOOR && row.summary.iterations > 0)
            .map(|row| format!("{} {:.3} ms", row.key, row.summary.p50_ms))
            .collect();
        (!floors.is_empty()).then(|| {
            format!(
                "× floor: a row's p50 over the p50 of its transport's floor, called alternately with the row's own calls (`floor_p50_ms` in the JSON; the floor rows above, measured on their own first, read {}): a minimal rmcp server's do-nothing tool over stdio and Streamable HTTP, a minimal axum route over REST; a bridge's floor is stdio's. added × floor: the row's p50 less the same case's in-process p50, over the same floor (`added_floor_ratio`): what the transport and the serving add, apart from the capability's own work. × answer floor: the row's p50 over the p50 of the same floor server sent the row's own request and answering the row's own answer, handed to it from one of the row's calls, called alternately with them too (`answer_floor_ratio`): what majordomus adds over taking its request's bytes and carrying its answer's. Rows that read only this checkout's board (`peers.list` and `server.status` with `this`, `peers.announce`) are read against ≤ {FLOOR_GOAL}×.",
                floors.join(", ")
            )
        })
    }

    /// How to read the scenarios' "× floor" column: each floor, with the range of its
    /// medians over the scenarios read against it.
    fn scenario_floor_legend(&self) -> Option<String> {
        let mut floors: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
        for floor in self.scenarios.iter().filter_map(|s| s.floor.as_ref()) {
            let range = floors.entry(floor.what).or_insert((f64::MAX, 0.0));
            range.0 = range.0.min(floor.p50_ms);
            range.1 = range.1.max(floor.p50_ms);
        }
        (!floors.is_empty()).then(|| {
            let floors: Vec<String> = floors
                .into_iter()
                .map(|(what, (low, high))| format!("{what}, p50 {low:.3}–{high:.3} ms"))
                .collect();
            format!(
                "× floor of a scenario: its p50 over the p50 of its floor, run alternately with its own iterations (`floor` in the JSON): {}.",
                floors.join("; ")
            )
        })
    }

    /// What the comparison with the baseline found, in a few lines.
    fn baseline_summary(&self) -> Option<String> {
        let comparison = self.baseline.as_ref()?;
        let mut out = format!(
            "Compared with {} (measured {}): {} figure(s) in both runs (p50, or the scenario's value); ",
            comparison.file,
            if comparison.started_at.is_empty() {
                "at an unknown time"
            } else {
                &comparison.started_at
            },
            comparison.compared.len()
        );
        if comparison.flagged.is_empty() {
            let _ = write!(out, "none above {}× its baseline.", comparison.flag_above);
        } else {
            let _ = write!(
                out,
                "{} above {}× its baseline: {}.",
                comparison.flagged.len(),
                comparison.flag_above,
                comparison.flagged.join(", ")
            );
        }
        if !comparison.only_in_this_run.is_empty() {
            let _ = write!(
                out,
                "\nOnly in this run: {}.",
                comparison.only_in_this_run.join(", ")
            );
        }
        if !comparison.only_in_baseline.is_empty() {
            let _ = write!(
                out,
                "\nOnly in the baseline: {}.",
                comparison.only_in_baseline.join(", ")
            );
        }
        Some(out)
    }

    /// The table printed on stdout.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "majordomus bench — {}", self.machine.summary());
        let _ = writeln!(out, "{}", self.command);
        if !self.rows.is_empty() {
            let _ = writeln!(out, "\nrows: {}\n", self.setup);
            let _ = writeln!(
                out,
                "{}",
                table(&self.headers(&ROW_HEADERS), &self.row_cells())
            );
            if let Some(legend) = self.floor_legend() {
                let _ = writeln!(out, "{legend}");
            }
        }
        if !self.scenarios.is_empty() {
            let _ = writeln!(
                out,
                "\n{}",
                table(&self.headers(&SCENARIO_HEADERS), &self.scenario_cells())
            );
            if let Some(legend) = self.scenario_floor_legend() {
                let _ = writeln!(out, "{legend}");
            }
        }
        if let Some(summary) = self.baseline_summary() {
            let _ = writeln!(out, "\n{summary}");
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
                markdown_table(&self.headers(&ROW_HEADERS), &[0, 2], &self.row_cells())
            );
            if let Some(legend) = self.floor_legend() {
                let _ = writeln!(out, "{legend}\n");
            }
        }
        if !self.scenarios.is_empty() {
            let _ = writeln!(
                out,
                "{}",
                markdown_table(
                    &self.headers(&SCENARIO_HEADERS),
                    &[0],
                    &self.scenario_cells()
                )
            );
            if let Some(legend) = self.scenario_floor_legend() {
                let _ = writeln!(out, "{legend}\n");
            }
        }
        if let Some(summary) = self.baseline_summary() {
            let _ = writeln!(out, "{}", summary.replace('\n', "  \n"));
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
        (None, Some(value)) => (
            "1".into(),
            format!("{value:.1} {}", s.unit),
            "—".into(),
            "—".into(),
        ),
        _ => ("0".into(), "—".into(), "—".into(), "—".into()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
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
            floor_ratio: None,
            floor_p50_ms: None,
            added_floor_ratio: None,
            answer_floor_p50_ms: None,
            answer_floor_ratio: None,
        }
    }

    /// A report of rows named by key, with these medians.
    pub(crate) fn report_with_rows(rows: &[(&str, f64)]) -> Report {
        Report {
            schema: "majordomus-bench/v1",
            command: String::new(),
            started_at: String::new(),
            duration_seconds: 0.0,
            machine: Machine::describe(),
            setup: String::new(),
            rows: rows
                .iter()
                .map(|(key, p50)| Row {
                    key: key.to_string(),
                    ..row(BenchTransport::Rest, *p50)
                })
                .collect(),
            scenarios: Vec::new(),
            baseline: None,
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

    #[test]
    fn rows_are_read_against_their_transports_floor_and_the_bridge_against_stdio() {
        let floor = |transport, p50| Row {
            capability: FLOOR,
            ..row(transport, p50)
        };
        let mut rows = vec![
            floor(BenchTransport::McpStdio, 0.1),
            floor(BenchTransport::Rest, 0.05),
            row(BenchTransport::InProcess, 0.01),
            row(BenchTransport::McpStdio, 0.12),
            row(BenchTransport::McpBridge, 0.5),
            row(BenchTransport::Rest, 0.065),
            row(BenchTransport::McpHttp, 0.4),
        ];
        judge(&mut rows);
        let ratios: Vec<Option<f64>> = rows.iter().map(|r| r.floor_ratio).collect();
        assert_eq!(
            ratios,
            [None, None, None, Some(1.2), Some(5.0), Some(1.3), None],
            "no HTTP floor was measured"
        );
        let added: Vec<Option<f64>> = rows.iter().map(|r| r.added_floor_ratio).collect();
        assert_eq!(
            added,
            [None, None, None, Some(1.1), Some(4.9), Some(1.1), None],
            "each less the in-process 0.01 ms, over the same floor"
        );
    }
}
