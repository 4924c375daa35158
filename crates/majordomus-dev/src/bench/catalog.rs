//! The scenarios the benchmark measures beyond the capability matrix: each one's name (what
//! `--filter` matches and the reports carry), title and target.

use serde::Serialize;

use majordomus_capabilities::hooks::HookClient;

use super::{GuardCase, Pace};

/// The scenarios, by the name `--filter` matches and the JSON reports.
pub const SCENARIOS: [Scenario; 45] = [
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
        id: ScenarioId::BoardGuard,
        name: "scenario/board/guard-1000x10",
        title: "`hooks.guard` of one file, meeting one peer's claim, with 1,000 attached peers holding 10 paths each",
        target: ScenarioTarget::MillisBelow(2.0),
    },
    Scenario {
        id: ScenarioId::BoardNews,
        name: "scenario/board/news-1000x10",
        title: "`hooks.news` at a prompt of a session whose edit meets one peer's claim, with 1,000 attached peers holding 10 paths each",
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
    BoardGuard,
    BoardNews,
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
