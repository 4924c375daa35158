//! `cargo xtask bench`: every capability, on every transport it is exposed on, once per case its
//! input type declares, each read against the floor of its transport (a server that does
//! nothing, measured in the same run) — plus the scenarios a reader of the numbers asks about
//! (cold starts, a gather over many worktrees, a crowded board, throughput under many clients,
//! memory with many sessions, the size of `tools/list`, boards federated across machines).
//! With `--baseline`, every figure is also compared with an earlier run's.
//!
//! The set of rows is a pure function of the registry ([`planned_rows`]); the runner measures
//! exactly that set (or the part of it a `--filter` selects), and the reference pages list the
//! same rows as each capability's benchmark targets. Nothing here asserts on timing: the
//! benchmark reports, the reader judges.

pub mod baseline;
mod catalog;
mod clients;
mod comparison;
pub mod executable;
pub mod floor;
mod guard;
mod machine;
mod nats;
mod report;
mod runner;
mod sampling;
mod scenarios;
mod setup;
mod stats;

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use majordomus_core::registry::{Capability, Declaration, Registry};

pub use catalog::{SCENARIOS, Scenario, ScenarioId, ScenarioTarget};
pub use guard::{GuardCase, Pace};

pub use machine::Machine;
pub use report::{Report, Row, ScenarioRow};
pub use stats::Summary;

/// One way a capability is reached, as the benchmark measures it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum BenchTransport {
    /// `Capability::call` with the context of a server running inside the bench process: the
    /// handler alone, no framing, no socket.
    #[serde(rename = "in-process")]
    InProcess,
    /// An rmcp client speaking to `majordomus mcp` over its stdin and stdout, the process
    /// serving the checkout itself.
    #[serde(rename = "mcp-stdio")]
    McpStdio,
    /// An rmcp client in a Streamable HTTP session at the lease's `/mcp`.
    #[serde(rename = "mcp-http")]
    McpHttp,
    /// An rmcp client speaking to a second `majordomus mcp` in the same checkout, which
    /// forwards over `/mcp` to the first.
    #[serde(rename = "mcp-bridge")]
    McpBridge,
    /// Plain JSON over HTTP on a kept-alive connection.
    #[serde(rename = "rest")]
    Rest,
}

impl BenchTransport {
    pub const ALL: [BenchTransport; 5] = [
        BenchTransport::InProcess,
        BenchTransport::McpStdio,
        BenchTransport::McpHttp,
        BenchTransport::McpBridge,
        BenchTransport::Rest,
    ];

    /// The word rows, filters and JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            BenchTransport::InProcess => "in-process",
            BenchTransport::McpStdio => "mcp-stdio",
            BenchTransport::McpHttp => "mcp-http",
            BenchTransport::McpBridge => "mcp-bridge",
            BenchTransport::Rest => "rest",
        }
    }

    /// How a reader of a reference page knows it.
    pub fn title(self) -> &'static str {
        match self {
            BenchTransport::InProcess => "in-process handler",
            BenchTransport::McpStdio => "MCP stdio",
            BenchTransport::McpHttp => "MCP Streamable HTTP",
            BenchTransport::McpBridge => "MCP through a bridge",
            BenchTransport::Rest => "REST",
        }
    }

    /// The transports a declaration is measured on: the handler always (every capability has
    /// one); the four MCP paths when it is an MCP tool; REST when it has an HTTP route.
    pub fn of(declaration: &Declaration) -> Vec<BenchTransport> {
        let mut transports = vec![BenchTransport::InProcess];
        if declaration.exposure.mcp_tool.is_some() {
            transports.extend([
                BenchTransport::McpStdio,
                BenchTransport::McpHttp,
                BenchTransport::McpBridge,
            ]);
        }
        if declaration.exposure.http.is_some() {
            transports.push(BenchTransport::Rest);
        }
        transports
    }

    /// The transport whose floor a row on this one is read against: its own, except the
    /// bridge's, which its client reaches over stdio (the ratio then says what the bridge,
    /// its HTTP session and the server behind it add together). The handler alone has none.
    pub fn floor(self) -> Option<BenchTransport> {
        match self {
            BenchTransport::InProcess => None,
            BenchTransport::McpStdio | BenchTransport::McpBridge => Some(BenchTransport::McpStdio),
            BenchTransport::McpHttp => Some(BenchTransport::McpHttp),
            BenchTransport::Rest => Some(BenchTransport::Rest),
        }
    }

    /// The goal a row on this transport is read against:
    /// MCP over HTTP p50 under 0.5 ms, REST and stdio under 0.2 ms, a bridge adding well
    /// under 1 ms to the HTTP session it forwards to. The handler alone has no goal of its own:
    /// it is the floor the others are read against.
    pub fn target(self) -> Target {
        match self {
            BenchTransport::InProcess => Target::Reference,
            BenchTransport::McpStdio | BenchTransport::Rest => Target::P50Below { micros: 200 },
            BenchTransport::McpHttp => Target::P50Below { micros: 500 },
            BenchTransport::McpBridge => Target::AddsOver {
                base: BenchTransport::McpHttp,
                micros: 1_000,
            },
        }
    }
}

impl fmt::Display for BenchTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A goal a measurement is read against. Goals, not assertions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// No goal of its own: the floor other rows are compared with.
    Reference,
    /// The median under this many microseconds.
    P50Below { micros: u64 },
    /// The median at most this many microseconds above the same capability and case on `base`.
    AddsOver { base: BenchTransport, micros: u64 },
}

impl Target {
    /// One line, as pages and tables print it.
    pub fn describe(self) -> String {
        match self {
            Target::Reference => "— (the floor the transports are read against)".into(),
            Target::P50Below { micros } => format!("p50 < {}", millis(micros)),
            Target::AddsOver { base, micros } => {
                format!("p50 < {} p50 + {}", base.title(), millis(micros))
            }
        }
    }

    /// Short form for the terminal table.
    pub fn short(self) -> String {
        match self {
            Target::Reference => "—".into(),
            Target::P50Below { micros } => format!("<{}", millis(micros)),
            Target::AddsOver { base, micros } => format!("{}+{}", base.as_str(), millis(micros)),
        }
    }
}

fn millis(micros: u64) -> String {
    let ms = micros as f64 / 1000.0;
    let text = format!("{ms:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} ms")
}

/// One row of the matrix: a capability, a transport it is exposed on, a case its input type
/// declares.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct RowKey {
    pub capability: &'static str,
    pub transport: BenchTransport,
    pub case: &'static str,
}

impl RowKey {
    /// `capability/transport/case`: what `--filter` matches and the JSON's `key`.
    pub fn name(&self) -> String {
        format!("{}/{}/{}", self.capability, self.transport, self.case)
    }
}

impl fmt::Display for RowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Every row the registry declares, in registry order, then transport, then case order: the
/// runner measures these, the reference pages list them and the tests check them.
pub fn planned_rows(registry: &Registry) -> Vec<RowKey> {
    registry.iter().flat_map(rows_of).collect()
}

/// The rows of one capability.
pub fn rows_of(capability: &Capability) -> Vec<RowKey> {
    let cases = capability.bench_cases();
    BenchTransport::of(&capability.declaration)
        .into_iter()
        .flat_map(|transport| {
            cases.iter().map(move |(case, _)| RowKey {
                capability: capability.id(),
                transport,
                case,
            })
        })
        .collect()
}

/// The `capability` of a floor row.
pub const FLOOR: &str = "floor";

/// The transports that have a floor, in the order the floors are measured and reported.
pub const FLOORS: [BenchTransport; 3] = [
    BenchTransport::McpStdio,
    BenchTransport::McpHttp,
    BenchTransport::Rest,
];

/// A floor's row key: `floor/<transport>`, what `--filter` matches.
pub fn floor_key(transport: BenchTransport) -> String {
    format!("{FLOOR}/{transport}")
}

/// The floors a run measures: those of the transports of the selected rows, so that every
/// row has its ratio, and those the filter names itself.
pub fn floors_for(rows: &[RowKey], filter: Option<&str>) -> Vec<BenchTransport> {
    FLOORS
        .into_iter()
        .filter(|&floor| {
            rows.iter().any(|row| row.transport.floor() == Some(floor))
                || filter.is_none_or(|text| floor_key(floor).contains(text))
        })
        .collect()
}

/// The ratio to its floor a reader holds the rows to that read only this checkout's board
/// (`peers.list` and `server.status` with `this`, `peers.announce`): what majordomus adds to
/// a call that does next to nothing should be small beside what the transport costs anyway.
pub const FLOOR_GOAL: f64 = 1.3;

/// Whether a row is expected to be refused rather than answered: a case whose input names no
/// one to act for but the caller's MCP session (`Operation::input_needs_session`), reached
/// over plain HTTP, where there is no session. The runner measures the refusal as honestly as
/// an answer; the expectation only labels it.
pub fn expects_refusal(capability: &Capability, input: &Value, transport: BenchTransport) -> bool {
    transport == BenchTransport::Rest && capability.input_needs_session(input)
}

/// The rows a `--filter` keeps: those whose `capability/transport/case` contains the text.
pub fn select(rows: Vec<RowKey>, filter: Option<&str>) -> Vec<RowKey> {
    match filter {
        None => rows,
        Some(text) => rows
            .into_iter()
            .filter(|row| row.name().contains(text))
            .collect(),
    }
}

/// What a benchmark run measures and how: the command line of `majordomus-dev bench`.
#[derive(Clone, Debug, clap::Args)]
pub struct Options {
    /// Measure in this checkout (it must have no server running) instead of a temporary repository
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Also write the report, with the machine description, as JSON
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the tables as Markdown
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Only rows (capability/transport/case) and scenarios whose name contains TEXT
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Also run the scenarios: cold starts, a 118-worktree gather, a 1,000-peer board, throughput with 8 and 32 clients, memory with 2,000 idle sessions, the size of tools/list, the guard by kind of finding, boards federated across machines (needs nats-server)
    #[arg(long)]
    pub scenarios: bool,
    /// Exactly N measured iterations per row and scenario (default: 200 to 2000 per row, bounded by time)
    #[arg(long, value_name = "N")]
    pub iterations: Option<usize>,
    /// The wall-clock budget of one row once its minimum iterations are done, in seconds.
    #[arg(skip = 2.0)]
    pub row_seconds: f64,
    /// Unmeasured calls before each row
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub warmup: usize,
    /// The `majordomus` executable to spawn (default: the one beside this executable)
    #[arg(long, value_name = "FILE")]
    pub majordomus: Option<PathBuf>,
    /// Compare with an earlier run's --json report: each figure's ratio to the baseline's p50 (or value), flagging those above --flag-above
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// The ratio to the baseline above which a figure is flagged
    #[arg(long, value_name = "RATIO", default_value_t = baseline::FLAG_ABOVE)]
    pub flag_above: f64,
    /// How long each throughput scenario's clients call
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub throughput_seconds: f64,
    /// Make every measured call of the row NAME this many milliseconds longer (to test --baseline)
    // How a test shows that `--baseline` flags a slower row, with a slowdown it controls.
    #[arg(long = "slow-row", value_name = "NAME:MILLIS", hide = true, value_parser = slow_row)]
    pub slow_rows: Vec<(String, Duration)>,
}

/// `NAME:MILLIS`, as `--slow-row` takes it.
fn slow_row(text: &str) -> Result<(String, Duration), String> {
    let (name, millis) = text
        .rsplit_once(':')
        .ok_or("expected NAME:MILLIS, such as peers.list/rest/this:20")?;
    let millis: u64 = millis
        .parse()
        .map_err(|_| format!("`{millis}` is not a whole number of milliseconds"))?;
    Ok((name.to_string(), Duration::from_millis(millis)))
}

/// How many iterations a row runs and for how long.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    pub warmup: usize,
    pub min: usize,
    pub max: usize,
    /// Stop after this long once `min` is reached.
    pub soft: Duration,
    /// Stop after this long whatever the count (at least one measured iteration).
    pub hard: Duration,
}

impl Budget {
    /// Runs `once` until the budget says stop, after its warm-up; `once` returns the measured span.
    pub(crate) async fn sample<F, Fut>(self, mut once: F) -> Result<Vec<Duration>, String>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Duration, String>>,
    {
        for _ in 0..self.warmup {
            once().await?;
        }
        let mut samples = Vec::with_capacity(self.max);
        let clock = Instant::now();
        loop {
            samples.push(once().await?);
            let spent = clock.elapsed();
            if samples.len() >= self.max
                || (samples.len() >= self.min && spent >= self.soft)
                || spent >= self.hard
            {
                return Ok(samples);
            }
        }
    }

    pub(crate) fn rows(options: &Options) -> Budget {
        match options.iterations {
            Some(n) => Budget {
                warmup: options.warmup.min(n),
                min: n.max(1),
                max: n.max(1),
                soft: Duration::from_secs(3600),
                hard: Duration::from_secs(60),
            },
            None => Budget {
                warmup: options.warmup,
                min: 200,
                max: 2000,
                soft: Duration::from_secs_f64(options.row_seconds),
                hard: Duration::from_secs(20),
            },
        }
    }

    /// A budget for the slow scenarios, where one iteration spawns a process or gathers a
    /// hundred boards.
    pub(crate) fn scenario(options: &Options, min: usize, max: usize, seconds: f64) -> Budget {
        match options.iterations {
            Some(n) => Budget {
                warmup: options.warmup.min(n).min(3),
                min: n.max(1),
                max: n.max(1),
                soft: Duration::from_secs(3600),
                hard: Duration::from_secs(60),
            },
            None => Budget {
                warmup: 3,
                min,
                max,
                soft: Duration::from_secs_f64(seconds),
                hard: Duration::from_secs_f64(seconds * 4.0),
            },
        }
    }
}

/// Runs the benchmark and prints (and writes) its report.
pub async fn run(options: Options) -> Result<(), String> {
    // Before anything is measured: a baseline that cannot be read should not cost a run.
    let baseline = options
        .baseline
        .as_deref()
        .map(baseline::Baseline::load)
        .transpose()?;
    let mut report = tokio::select! {
        report = runner::run(&options) => report?,
        _ = tokio::signal::ctrl_c() => {
            return Err("interrupted; every process the benchmark started has been ended".into());
        }
    };
    if let Some(baseline) = &baseline {
        report.baseline = Some(baseline::compare(&report, baseline, options.flag_above));
    }
    print!("{}", report.table());
    if let Some(path) = &options.json {
        let text = serde_json::to_string_pretty(&report).expect("reports serialise");
        std::fs::write(path, text + "\n")
            .map_err(|error| format!("could not write {}: {error}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &options.markdown {
        std::fs::write(path, report.markdown())
            .map_err(|error| format!("could not write {}: {error}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capability_is_measured_on_each_of_its_transports_once_per_case() {
        let registry = majordomus_capabilities::registry();
        let rows = planned_rows(registry);
        let unique: std::collections::BTreeSet<_> = rows.iter().cloned().collect();
        assert_eq!(unique.len(), rows.len(), "no row is planned twice");
        for capability in registry.iter() {
            let expected =
                BenchTransport::of(&capability.declaration).len() * capability.bench_cases().len();
            let got = rows
                .iter()
                .filter(|row| row.capability == capability.id())
                .count();
            assert_eq!(got, expected, "{}", capability.id());
        }
    }

    #[test]
    fn filters_match_the_row_name() {
        let rows = planned_rows(majordomus_capabilities::registry());
        let picked = select(rows, Some("peers.list/rest/"));
        assert!(!picked.is_empty());
        assert!(
            picked
                .iter()
                .all(|row| row.capability == "peers.list" && row.transport == BenchTransport::Rest)
        );
    }

    #[test]
    fn every_selected_row_brings_its_transports_floor() {
        let rows = select(
            planned_rows(majordomus_capabilities::registry()),
            Some("peers.list/mcp-bridge/"),
        );
        assert_eq!(
            floors_for(&rows, Some("peers.list/mcp-bridge/")),
            [BenchTransport::McpStdio]
        );
        assert_eq!(floors_for(&[], Some("floor/rest")), [BenchTransport::Rest]);
        assert!(floors_for(&[], Some("scenario/")).is_empty());
        assert_eq!(
            floors_for(&planned_rows(majordomus_capabilities::registry()), None),
            FLOORS
        );
    }

    #[test]
    fn targets_read_as_goals() {
        assert_eq!(BenchTransport::McpHttp.target().describe(), "p50 < 0.5 ms");
        assert_eq!(BenchTransport::Rest.target().describe(), "p50 < 0.2 ms");
        assert_eq!(
            BenchTransport::McpBridge.target().describe(),
            "p50 < MCP Streamable HTTP p50 + 1 ms"
        );
    }
}
