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
mod clients;
pub mod executable;
pub mod floor;
mod guard;
mod machine;
mod nats;
mod report;
mod runner;
mod scenarios;
mod setup;
mod stats;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use majordomus::capabilities::hooks::HookClient;
use majordomus::registry::{Capability, Declaration, Kind, Registry};

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

/// Whether a row is expected to be refused rather than answered: a command reached over plain
/// HTTP has no MCP session to belong to, and the commands an agent calls as MCP tools act for
/// their session. (The hooks' commands name their session in their input; they are not MCP
/// tools.)
/// The runner measures the refusal as honestly as an answer; the expectation only labels it.
pub fn expects_refusal(declaration: &Declaration, transport: BenchTransport) -> bool {
    declaration.kind == Kind::Command
        && declaration.exposure.mcp_tool.is_some()
        && transport == BenchTransport::Rest
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

/// The scenarios, by the name `--filter` matches and the JSON reports.
pub const SCENARIOS: [Scenario; 43] = [
    Scenario {
        id: ScenarioId::ColdStartBridge,
        name: "scenario/cold-start/bridge",
        title: "`majordomus mcp` spawned to its first answered tool call, a server already running (it bridges)",
        target: ScenarioTarget::MillisBelow(15.0),
    },
    Scenario {
        id: ScenarioId::ColdStartServing,
        name: "scenario/cold-start/serving",
        title: "`majordomus mcp` spawned to its first answered tool call, no server running (it elects and serves)",
        target: ScenarioTarget::None,
    },
    Scenario {
        id: ScenarioId::Gather,
        name: "scenario/gather/118-worktrees-7-live",
        title: "`peers.list` (checkouts: repository) over 118 linked worktrees, 7 of them with a live server",
        target: ScenarioTarget::MillisBelow(200.0),
    },
    Scenario {
        id: ScenarioId::BoardAnnounce,
        name: "scenario/board/announce-1000x10",
        title: "`peers.announce` of 10 paths with 1,000 attached peers holding 10 paths each",
        target: ScenarioTarget::MillisBelow(2.0),
    },
    Scenario {
        id: ScenarioId::BoardList,
        name: "scenario/board/list-1000x10",
        title: "`peers.list` (checkouts: this) with 1,000 attached peers holding 10 paths each",
        target: ScenarioTarget::MillisBelow(2.0),
    },
    Scenario {
        id: ScenarioId::BoardListRest,
        name: "scenario/board/list-1000x10-rest",
        title: "`GET /api/v1/peers?checkouts=this` of that board from a kept-alive HTTP client",
        target: ScenarioTarget::MillisBelow(3.0),
    },
    Scenario {
        id: ScenarioId::BoardAnnounceWide,
        name: "scenario/board/announce-256-paths",
        title: "`peers.announce` of a full 256-path scope, each path meeting a peer's claim, with 1,000 attached peers holding 10 paths each",
        target: ScenarioTarget::MillisBelow(2.0),
    },
    Scenario {
        id: ScenarioId::BoardListAfterWide,
        name: "scenario/board/list-1000x10-after-256",
        title: "`peers.list` (checkouts: this) of that board once the 256-path claim is on it",
        target: ScenarioTarget::MillisBelow(2.0),
    },
    Scenario {
        id: ScenarioId::Memory,
        name: "scenario/memory/2000-idle-http-sessions",
        title: "resident memory (VmRSS) of `majordomus serve` per idle MCP Streamable HTTP session, with 2,000 of them open",
        target: ScenarioTarget::KilobytesPerSessionAtMost(48.0),
    },
    Scenario {
        id: ScenarioId::ThroughputAnnounce8,
        name: "scenario/throughput/announce-mcp-http-8",
        title: "8 MCP Streamable HTTP sessions calling `peers.announce` as fast as answered, on kept-alive connections, against `majordomus serve`",
        target: ScenarioTarget::Throughput {
            per_second: 5_000.0,
            p99_ms: 10.0,
        },
    },
    Scenario {
        id: ScenarioId::ThroughputAnnounce32,
        name: "scenario/throughput/announce-mcp-http-32",
        title: "32 MCP Streamable HTTP sessions calling `peers.announce` as fast as answered, on kept-alive connections, against `majordomus serve`",
        target: ScenarioTarget::Throughput {
            per_second: 5_000.0,
            p99_ms: 10.0,
        },
    },
    Scenario {
        id: ScenarioId::ThroughputList8,
        name: "scenario/throughput/list-rest-8",
        title: "8 REST clients calling `GET /api/v1/peers?checkouts=this` as fast as answered, on kept-alive connections, against `majordomus serve`",
        target: ScenarioTarget::Throughput {
            per_second: 20_000.0,
            p99_ms: 10.0,
        },
    },
    Scenario {
        id: ScenarioId::ThroughputList32,
        name: "scenario/throughput/list-rest-32",
        title: "32 REST clients calling `GET /api/v1/peers?checkouts=this` as fast as answered, on kept-alive connections, against `majordomus serve`",
        target: ScenarioTarget::Throughput {
            per_second: 20_000.0,
            p99_ms: 10.0,
        },
    },
    Scenario {
        id: ScenarioId::LeaseContended8,
        name: "scenario/leases/contended-8",
        title: "8 MCP Streamable HTTP sessions taking turns at one lease (`majordomus_lease` waiting until granted, then `majordomus_release`) as fast as granted, against `majordomus serve`: grants a second",
        target: ScenarioTarget::None,
    },
    Scenario {
        id: ScenarioId::LeaseContended32,
        name: "scenario/leases/contended-32",
        title: "32 MCP Streamable HTTP sessions taking turns at one lease (`majordomus_lease` waiting until granted, then `majordomus_release`) as fast as granted, against `majordomus serve`: grants a second",
        target: ScenarioTarget::None,
    },
    Scenario {
        id: ScenarioId::ToolsListSize,
        name: "scenario/tools-list/size",
        title: "the size of the `tools/list` result of `majordomus serve` over MCP Streamable HTTP, and of what a client forwards of it to its model",
        target: ScenarioTarget::KilobytesAtMost(12.0),
    },
    Scenario {
        id: ScenarioId::HttpKeepAlive,
        name: "scenario/http/keep-alive-client",
        title: "a tool call over MCP Streamable HTTP from a client that keeps its connection alive",
        target: ScenarioTarget::MillisBelow(0.5),
    },
    Scenario {
        id: ScenarioId::ExitSigint,
        name: "scenario/exit/sigint",
        title: "SIGINT to a `majordomus mcp` that serves only its own client, to its exit (Claude Code sends SIGTERM 100 ms after SIGINT)",
        target: ScenarioTarget::MillisBelow(100.0),
    },
    Scenario {
        id: ScenarioId::EventsAnnounceTo50,
        name: "scenario/events/announce-to-50",
        title: "a `peers.announce` over MCP Streamable HTTP until its event has reached all of 50 `/api/v1/events` subscribers",
        target: ScenarioTarget::MillisBelow(5.0),
    },
    Scenario {
        id: ScenarioId::HookGuard,
        name: "scenario/hook/guard",
        title: "`majordomus hook claude-code PreToolUse` spawned to its answer, with the checkout's server running and the edited file claimed by another session",
        target: ScenarioTarget::MillisBelow(10.0),
    },
    Scenario {
        id: ScenarioId::HookFailOpen,
        name: "scenario/hook/fail-open",
        title: "`majordomus hook claude-code PreToolUse` spawned to its silent exit, in a checkout with no server",
        target: ScenarioTarget::MillisBelow(5.0),
    },
    Scenario {
        id: ScenarioId::Guard(GuardCase::Nothing, Pace::BackToBack),
        name: "scenario/guard/in-process/none",
        title: "`hooks.guard` in-process, warm: a file nobody claims, changes or conflicts on",
        target: ScenarioTarget::MillisBelow(5.0),
    },
    Scenario {
        id: ScenarioId::Guard(GuardCase::LiveClaim, Pace::BackToBack),
        name: "scenario/guard/in-process/live-claim",
        title: "`hooks.guard` in-process, warm: a file a live session in another worktree claims",
        target: ScenarioTarget::MillisBelow(5.0),
    },
    Scenario {
        id: ScenarioId::Guard(GuardCase::OtherWorktreeChange, Pace::BackToBack),
        name: "scenario/guard/in-process/other-worktree-change",
        title: "`hooks.guard` in-process, warm: a file another worktree changed without committing, first attempt",
        target: ScenarioTarget::MillisBelow(5.0),
    },
    Scenario {
        id: ScenarioId::Guard(GuardCase::PredictedConflict, Pace::BackToBack),
        name: "scenario/guard/in-process/predicted-conflict",
        title: "`hooks.guard` in-process, warm: a file a merge with another worktree is predicted to conflict on, first attempt, the other side's hunk quoted",
        target: ScenarioTarget::MillisBelow(5.0),
    },
    Scenario {
        id: ScenarioId::Guard(GuardCase::DepartedClaim, Pace::BackToBack),
        name: "scenario/guard/in-process/departed-claim",
        title: "`hooks.guard` in-process, warm: a file a departed session in another worktree still claims",
        target: ScenarioTarget::MillisBelow(5.0),
    },
    Scenario {
        id: ScenarioId::Guard(GuardCase::BumpRepeat, Pace::BackToBack),
        name: "scenario/guard/in-process/bump-repeat",
        title: "`hooks.guard` in-process, warm: another worktree's changed file edited again after the speed bump stopped it once",
        target: ScenarioTarget::MillisBelow(5.0),
    },
    Scenario {
        id: ScenarioId::GuardHook(HookClient::ClaudeCode, GuardCase::Nothing, Pace::BackToBack),
        name: "scenario/guard/hook-claude-code/none",
        title: "`majordomus hook claude-code PreToolUse` spawned to its exit, both checkouts served: a file nobody claims, changes or conflicts on",
        target: ScenarioTarget::MillisBelow(10.0),
    },
    Scenario {
        id: ScenarioId::GuardHook(
            HookClient::ClaudeCode,
            GuardCase::LiveClaim,
            Pace::BackToBack,
        ),
        name: "scenario/guard/hook-claude-code/live-claim",
        title: "`majordomus hook claude-code PreToolUse` spawned to its exit, both checkouts served: a file a live session in another worktree claims",
        target: ScenarioTarget::MillisBelow(10.0),
    },
    Scenario {
        id: ScenarioId::GuardHook(
            HookClient::ClaudeCode,
            GuardCase::DepartedClaim,
            Pace::BackToBack,
        ),
        name: "scenario/guard/hook-claude-code/departed-claim",
        title: "`majordomus hook claude-code PreToolUse` spawned to its exit, both checkouts served: a file a departed session in another worktree still claims",
        target: ScenarioTarget::MillisBelow(10.0),
    },
    Scenario {
        id: ScenarioId::GuardHook(
            HookClient::ClaudeCode,
            GuardCase::BumpRepeat,
            Pace::BackToBack,
        ),
        name: "scenario/guard/hook-claude-code/bump-repeat",
        title: "`majordomus hook claude-code PreToolUse` spawned to its exit, both checkouts served: another worktree's changed file edited again after the speed bump stopped it once",
        target: ScenarioTarget::MillisBelow(10.0),
    },
    Scenario {
        id: ScenarioId::GuardHook(HookClient::Codex, GuardCase::Nothing, Pace::BackToBack),
        name: "scenario/guard/hook-codex/none",
        title: "`majordomus hook codex PreToolUse` spawned to its exit, both checkouts served: a file nobody claims, changes or conflicts on",
        target: ScenarioTarget::MillisBelow(10.0),
    },
    Scenario {
        id: ScenarioId::GuardHook(HookClient::Codex, GuardCase::LiveClaim, Pace::BackToBack),
        name: "scenario/guard/hook-codex/live-claim",
        title: "`majordomus hook codex PreToolUse` spawned to its exit, both checkouts served: a file a live session in another worktree claims",
        target: ScenarioTarget::MillisBelow(10.0),
    },
    Scenario {
        id: ScenarioId::GuardHook(
            HookClient::Codex,
            GuardCase::OtherWorktreeChange,
            Pace::BackToBack,
        ),
        name: "scenario/guard/hook-codex/other-worktree-change",
        title: "`majordomus hook codex PreToolUse` spawned to its exit, both checkouts served: a file another worktree changed without committing, first attempt",
        target: ScenarioTarget::MillisBelow(10.0),
    },
    Scenario {
        id: ScenarioId::GuardHook(
            HookClient::Codex,
            GuardCase::PredictedConflict,
            Pace::BackToBack,
        ),
        name: "scenario/guard/hook-codex/predicted-conflict",
        title: "`majordomus hook codex PreToolUse` spawned to its exit, both checkouts served: a file a merge with another worktree is predicted to conflict on, first attempt, the other side's hunk quoted",
        target: ScenarioTarget::MillisBelow(10.0),
    },
    Scenario {
        id: ScenarioId::Guard(GuardCase::LiveClaim, Pace::AfterPause),
        name: "scenario/guard/in-process/live-claim-after-pause",
        title: "`hooks.guard` in-process: a file a live session in another worktree claims, each call after a pause of over a second (the repository's reading due)",
        target: ScenarioTarget::MillisBelow(5.0),
    },
    Scenario {
        id: ScenarioId::GuardHook(
            HookClient::ClaudeCode,
            GuardCase::LiveClaim,
            Pace::AfterPause,
        ),
        name: "scenario/guard/hook-claude-code/live-claim-after-pause",
        title: "`majordomus hook claude-code PreToolUse` spawned to its exit: a file a live session in another worktree claims, each run after a pause of over a second (the repository's reading due)",
        target: ScenarioTarget::MillisBelow(10.0),
    },
    Scenario {
        id: ScenarioId::FederationVisible,
        name: "scenario/federation/announce-to-remote-view",
        title: "an announce on one machine until the claim is in another machine's view, through nats-server (JetStream key-value)",
        target: ScenarioTarget::MillisBelow(20.0),
    },
    Scenario {
        id: ScenarioId::FederationEverywhere,
        name: "scenario/federation/everywhere-10x10",
        title: "`peers.list` (checkouts: everywhere) joining 10 other machines' boards of 10 peers each",
        target: ScenarioTarget::MillisBelow(5.0),
    },
    Scenario {
        id: ScenarioId::ConflictsCold,
        name: "scenario/conflicts/predict-8-cold",
        title: "`conflicts.predict` over 8 worktrees with changes, every worktree's uncommitted work rewritten before each call (new snapshots, every pair merged again)",
        target: ScenarioTarget::None,
    },
    Scenario {
        id: ScenarioId::ConflictsWarm,
        name: "scenario/conflicts/predict-8-warm",
        title: "`conflicts.predict` over the same 8 worktrees, unchanged since the last call",
        target: ScenarioTarget::MillisBelow(5.0),
    },
    Scenario {
        id: ScenarioId::AnnounceWithSibling,
        name: "scenario/announce/with-live-sibling",
        title: "`peers.announce` in-process, with a live `majordomus serve` in a sibling worktree whose board is read for overlaps",
        target: ScenarioTarget::MillisBelow(1.0),
    },
    Scenario {
        id: ScenarioId::ListWithChanges,
        name: "scenario/list/repository-8-changed",
        title: "`peers.list` (checkouts: repository) in-process, over 8 worktrees with changes and nobody serving them",
        target: ScenarioTarget::None,
    },
];

/// Which scenario a [`Scenario`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ScenarioId {
    ColdStartBridge,
    ColdStartServing,
    Gather,
    BoardAnnounce,
    BoardList,
    BoardListRest,
    BoardAnnounceWide,
    BoardListAfterWide,
    Memory,
    ThroughputAnnounce8,
    ThroughputAnnounce32,
    ThroughputList8,
    ThroughputList32,
    LeaseContended8,
    LeaseContended32,
    ToolsListSize,
    HttpKeepAlive,
    ExitSigint,
    EventsAnnounceTo50,
    HookGuard,
    HookFailOpen,
    /// `hooks.guard` in-process for one kind of finding, at one pace.
    Guard(GuardCase, Pace),
    /// `majordomus hook <client> PreToolUse` for one kind of finding, at one pace.
    GuardHook(HookClient, GuardCase, Pace),
    FederationVisible,
    FederationEverywhere,
    ConflictsCold,
    ConflictsWarm,
    AnnounceWithSibling,
    ListWithChanges,
}

/// A measured situation beyond the capability matrix.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Scenario {
    #[serde(skip)]
    pub id: ScenarioId,
    pub name: &'static str,
    pub title: &'static str,
    pub target: ScenarioTarget,
}

/// The goal of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum ScenarioTarget {
    None,
    MillisBelow(f64),
    /// Resident memory per session, in KB (1,024 bytes).
    KilobytesPerSessionAtMost(f64),
    /// A size in KB (1,024 bytes).
    KilobytesAtMost(f64),
    /// At least this many calls a second, all clients together, with the 99th percentile of
    /// one call at most this long.
    Throughput {
        per_second: f64,
        p99_ms: f64,
    },
}

impl ScenarioTarget {
    pub fn describe(self) -> String {
        match self {
            ScenarioTarget::None => "—".into(),
            ScenarioTarget::MillisBelow(ms) => format!("p50 < {ms} ms"),
            ScenarioTarget::KilobytesPerSessionAtMost(kb) => format!("≤ {kb} KB per session"),
            ScenarioTarget::KilobytesAtMost(kb) => format!("≤ {kb} KB"),
            ScenarioTarget::Throughput { per_second, p99_ms } => {
                format!("≥ {per_second} calls/s, p99 ≤ {p99_ms} ms")
            }
        }
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
        let registry = majordomus::capabilities::registry();
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
        let rows = planned_rows(majordomus::capabilities::registry());
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
            planned_rows(majordomus::capabilities::registry()),
            Some("peers.list/mcp-bridge/"),
        );
        assert_eq!(
            floors_for(&rows, Some("peers.list/mcp-bridge/")),
            [BenchTransport::McpStdio]
        );
        assert_eq!(floors_for(&[], Some("floor/rest")), [BenchTransport::Rest]);
        assert!(floors_for(&[], Some("scenario/")).is_empty());
        assert_eq!(
            floors_for(&planned_rows(majordomus::capabilities::registry()), None),
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
