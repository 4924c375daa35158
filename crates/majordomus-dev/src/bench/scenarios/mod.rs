//! The scenarios: each sets up its own temporary repository (whatever `--repo`
//! says), measures, and ends every process it started by pid.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use indicatif::ProgressBar;
use majordomus_checkout::allowances::{Allowances, Suggestion};
use majordomus_checkout::config::UserFiles;
use majordomus_domain::board::CheckedAnnouncement;
use majordomus_domain::peers::{AnnounceInput, ClientInfo, PeerId, Transport};
use serde_json::{Value, json};

use super::clients::{Caller, Outcome, connect_kept_alive, http_client, registered, spawn_mcp};
use super::nats::BenchNats;
use super::report::{Memory, ScenarioRow, Throughput, ToolsListSize};
use super::setup::{
    InProcessServer, SETUP_BOUND, Scratch, ServeProcess, Serving, TempRepository, cpu_time, git,
    status_kib, wait_gone, wait_no_lease,
};
use super::stats::Summary;
use super::{Budget, Options, Scenario, ScenarioId};
use majordomus_core::context::Context;
use majordomus_core::registry::Capability;
use majordomus_federation::FederationState;
use majordomus_server::ServerState;

mod changes;
mod federation;
mod hooks;
mod load;

use changes::{announce_with_sibling, list_with_changes, predict, write_file};
use federation::{federation_everywhere, federation_visible};
use hooks::hook;
use load::{Hammer, memory, throughput};

/// How many linked worktrees the gather reads, and how many of them have a live server.
pub(super) const GATHER_WORKTREES: usize = 118;
pub(super) const GATHER_LIVE: usize = 7;
/// How many peers the crowded board holds, and how many paths each claims.
pub(super) const BOARD_PEERS: usize = 1000;
pub(super) const BOARD_PATHS: usize = 10;
/// How many event streams the announce-to-subscribers scenario holds open.
pub(super) const EVENT_SUBSCRIBERS: usize = 50;
/// How many idle Streamable HTTP sessions the memory scenario holds open.
pub(super) const MEMORY_SESSIONS: usize = 2_000;
/// How many sessions the memory scenario opens at once.
const MEMORY_OPENING: usize = 16;
/// How long the memory scenario's sessions stay idle before they are parked: short, so the
/// scenario measures idle sessions without waiting out the default.
const MEMORY_PARK_SECS: u64 = 1;
/// How many other machines' boards the `everywhere` listing joins, and peers on each.
pub(super) const FEDERATION_MACHINES: usize = 10;
pub(super) const FEDERATION_PEERS: usize = 10;

pub(super) async fn run(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    progress: &ProgressBar,
) -> ScenarioRow {
    let outcome = match scenario.id {
        ScenarioId::ColdStartBridge => cold_start(scenario, scratch, options, true).await,
        ScenarioId::ColdStartServing => cold_start(scenario, scratch, options, false).await,
        ScenarioId::Gather => gather(scenario, scratch, options, progress).await,
        ScenarioId::BoardAnnounce => board(scenario, scratch, options, BoardCase::Announce).await,
        ScenarioId::BoardList => board(scenario, scratch, options, BoardCase::List).await,
        ScenarioId::BoardListRest => board(scenario, scratch, options, BoardCase::ListRest).await,
        ScenarioId::BoardAnnounceWide => {
            board(scenario, scratch, options, BoardCase::AnnounceWide).await
        }
        ScenarioId::BoardListAfterWide => {
            board(scenario, scratch, options, BoardCase::ListAfterWide).await
        }
        ScenarioId::BoardGuard => board(scenario, scratch, options, BoardCase::Guard).await,
        ScenarioId::BoardNews => board(scenario, scratch, options, BoardCase::News).await,
        ScenarioId::Memory => memory(scenario, scratch, progress).await,
        ScenarioId::ThroughputAnnounce8 => {
            throughput(scenario, scratch, options, Hammer::AnnounceMcpHttp, 8).await
        }
        ScenarioId::ThroughputAnnounce32 => {
            throughput(scenario, scratch, options, Hammer::AnnounceMcpHttp, 32).await
        }
        ScenarioId::ThroughputList8 => {
            throughput(scenario, scratch, options, Hammer::ListRest, 8).await
        }
        ScenarioId::ThroughputList32 => {
            throughput(scenario, scratch, options, Hammer::ListRest, 32).await
        }
        ScenarioId::LeaseContended8 => {
            throughput(scenario, scratch, options, Hammer::LeaseTurns, 8).await
        }
        ScenarioId::LeaseContended32 => {
            throughput(scenario, scratch, options, Hammer::LeaseTurns, 32).await
        }
        ScenarioId::ToolsListSize => tools_list_size(scenario, scratch).await,
        ScenarioId::HttpKeepAlive => keep_alive(scenario, scratch, options).await,
        ScenarioId::ExitSigint => exit_on_sigint(scenario, scratch, options).await,
        ScenarioId::EventsAnnounceTo50 => announce_to_subscribers(scenario, scratch, options).await,
        ScenarioId::HookGuard => hook(scenario, scratch, options, true).await,
        ScenarioId::HookFailOpen => hook(scenario, scratch, options, false).await,
        ScenarioId::Guard(case, pace) => {
            super::guard::in_process(scenario, scratch, options, case, pace).await
        }
        ScenarioId::GuardHook(client, case, pace) => {
            super::guard::hook_process(scenario, scratch, options, client, case, pace).await
        }
        ScenarioId::FederationVisible => federation_visible(scenario, scratch, options).await,
        ScenarioId::FederationEverywhere => federation_everywhere(scenario, scratch, options).await,
        ScenarioId::ConflictsCold => predict(scenario, scratch, options, true).await,
        ScenarioId::ConflictsWarm => predict(scenario, scratch, options, false).await,
        ScenarioId::AnnounceWithSibling => announce_with_sibling(scenario, scratch, options).await,
        ScenarioId::ListWithChanges => list_with_changes(scenario, scratch, options).await,
    };
    outcome.unwrap_or_else(|why| ScenarioRow::failed(scenario, why))
}

/// Samples one capability called in-process, the handler alone: its answer as it gave it.
async fn sample_in_process(
    budget: Budget,
    capability: &Capability,
    ctx: &Context,
    input: &Value,
) -> Result<Vec<Duration>, String> {
    budget
        .sample(|| async {
            let started = Instant::now();
            capability
                .answer(ctx, input.clone())
                .await
                .map_err(|error| error.message)?;
            Ok(started.elapsed())
        })
        .await
}

/// From spawning `majordomus mcp` to its first answered tool call: `initialize`, then
/// `majordomus_peers {checkouts: this}`. With a server already running the new process bridges
/// to it; without one it elects itself and serves (and stops again once its client leaves,
/// which is awaited, untimed, before the next start).
async fn cold_start(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    with_server: bool,
) -> Result<ScenarioRow, String> {
    let label = if with_server {
        "cold-bridge"
    } else {
        "cold-serving"
    };
    let repository = TempRepository::new(scratch, label)?;
    let dir = repository.root().to_path_buf();
    let server = if with_server {
        Some(ServeProcess::start(scratch, &dir).await?.0)
    } else {
        None
    };
    let capability = registered("peers.list");
    let input = json!({"checkouts": "this"});
    let budget = Budget::scenario(options, 20, 60, 8.0);
    let samples = budget
        .sample(|| async {
            if !with_server {
                wait_no_lease(&dir).await?;
            }
            let started = Instant::now();
            let (service, pid) = spawn_mcp(
                scratch.exe(),
                &dir,
                "majordomus-bench-cold",
                scratch.log(label),
            )
            .await?;
            let caller = Caller::Mcp(service);
            let outcome = caller.call(capability, &input).await;
            let elapsed = started.elapsed();
            caller.close().await;
            wait_gone(pid, Duration::from_secs(10)).await;
            match outcome {
                Outcome::Answer => Ok(elapsed),
                other => Err(format!(
                    "the first tool call was not answered: {}",
                    other.detail().unwrap_or("")
                )),
            }
        })
        .await;
    if let Some(server) = server {
        server.stop().await;
    }
    let samples = samples?;
    let note = if with_server {
        "spawn → initialize → first tool call answered, through a live `majordomus serve` of the checkout; includes the process start and the election that finds the server"
    } else {
        "spawn → election won → listener bound and lease published → initialize → first tool call answered, in a checkout with no server"
    };
    Ok(ScenarioRow::latency(scenario, Summary::of(&samples), note))
}

/// `peers.list` with `checkouts: repository` from a server in the primary checkout (inside
/// this process), over 118 linked worktrees of which 7 have a live `majordomus serve`.
async fn gather(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    progress: &ProgressBar,
) -> Result<ScenarioRow, String> {
    let repository = TempRepository::new(scratch, "gather")?;
    let mut worktrees = Vec::with_capacity(GATHER_WORKTREES);
    for n in 0..GATHER_WORKTREES {
        if n % 10 == 0 {
            progress.set_message(format!(
                "{}: adding worktree {}/{GATHER_WORKTREES}",
                scenario.name,
                n + 1
            ));
        }
        worktrees.push(repository.add_worktree(&format!("wt{n:03}"))?);
    }
    progress.set_message(format!("{}: starting {GATHER_LIVE} servers", scenario.name));
    let stride = GATHER_WORKTREES / GATHER_LIVE;
    let mut servers = Vec::new();
    for n in 0..GATHER_LIVE {
        servers.push(ServeProcess::spawn(scratch, &worktrees[n * stride])?);
    }
    let result = async {
        for server in &servers {
            super::setup::wait_ready(&server.dir).await?;
        }
        progress.set_message(scenario.name);
        let server = InProcessServer::start(repository.root()).await?;
        let ctx = server.context();
        let capability = registered("peers.list");
        let input = json!({"checkouts": "repository"});
        let first = capability
            .call(&ctx, input.clone())
            .await
            .map_err(|error| format!("the gather was refused: {}", error.message))?;
        let boards = first["boards"].as_array().map_or(0, Vec::len);
        let live = first["boards"]
            .as_array()
            .map_or(0, |boards| {
                boards
                    .iter()
                    .filter(|b| b["standing"] == "ready" && b["this_checkout"] == false)
                    .count()
            });
        let complete = first["complete"] == true;
        let budget = Budget::scenario(options, 30, 300, 10.0);
        let samples = sample_in_process(budget, capability, &ctx, &input).await;
        server.stop().await;
        let samples = samples?;
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples),
            format!(
                "{boards} boards covered (the primary's from memory, {live} live siblings read over HTTP, the rest absent), complete: {complete}; in-process call from the primary's server"
            ),
        ))
    }
    .await;
    for server in servers {
        server.stop().await;
    }
    result
}

/// A board of 1,000 attached peers with 10 claimed paths each (peer `n` claims
/// `pkg<n>/src/mod0..9`), and a caller announcing 10 paths of which one meets one peer's
/// claim — or listing the board. In-process: the board's cost, not a transport's.
/// What is measured on the crowded board.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BoardCase {
    /// An announce of 10 paths, one of them meeting a peer's claim.
    Announce,
    /// The listing of the board.
    List,
    /// The listing of the board over REST, the body read whole.
    ListRest,
    /// An announce of a full scope, every path meeting a peer's claim.
    AnnounceWide,
    /// The listing once the full scope is on the board.
    ListAfterWide,
    /// A hook's guard of one file that meets one peer's claim.
    Guard,
    /// A prompt's news for a session whose edit meets one peer's claim.
    News,
}

/// The full scope the wide cases announce: one path in each of 256 peers' packages.
fn wide_scope() -> Vec<String> {
    (0..majordomus_domain::limits::SCOPE_PATHS)
        .map(|n| format!("pkg{:04}/src", n * 3))
        .collect()
}

async fn board(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    case: BoardCase,
) -> Result<ScenarioRow, String> {
    let announce = matches!(case, BoardCase::Announce | BoardCase::AnnounceWide);
    let repository = TempRepository::new(
        scratch,
        match case {
            BoardCase::Announce => "board-announce",
            BoardCase::List => "board-list",
            BoardCase::ListRest => "board-list-rest",
            BoardCase::AnnounceWide => "board-announce-wide",
            BoardCase::ListAfterWide => "board-list-wide",
            BoardCase::Guard => "board-guard",
            BoardCase::News => "board-news",
        },
    )?;
    let site = majordomus_core::context::Site::open(repository.root())?;
    let serving = Serving::start(site.clone()).await?;
    let state = serving.state.clone();
    let client = |name: String| ClientInfo {
        name,
        version: "1.0.0".into(),
        title: None,
    };
    for n in 0..BOARD_PEERS {
        let peer = state.attach(Transport::Http, client(format!("agent-{n}")), None, None);
        let scope = (0..BOARD_PATHS)
            .map(|m| format!("pkg{n:04}/src/mod{m}"))
            .collect();
        announce_as_written(
            &state,
            &peer,
            AnnounceInput {
                intent: format!("task {n}"),
                scope,
                claim: None,
            },
        )?;
    }
    let caller: PeerId = state.attach(
        Transport::Stdio,
        client("majordomus-bench".into()),
        None,
        None,
    );
    if case == BoardCase::ListAfterWide {
        let wide = AnnounceInput {
            intent: "touch every package".into(),
            scope: wide_scope(),
            claim: None,
        };
        announce_as_written(&state, &caller, wide)?;
    }
    let ctx = Context::served(site.clone(), state.clone(), Some(caller));
    let (id, input) = match case {
        BoardCase::Announce => {
            let mut scope: Vec<String> = (0..BOARD_PATHS - 1)
                .map(|m| format!("bench/src/mod{m}"))
                .collect();
            scope.push("pkg0007/src".into());
            (
                "peers.announce",
                json!({"intent": "measure the crowded board", "scope": scope}),
            )
        }
        BoardCase::AnnounceWide => (
            "peers.announce",
            json!({"intent": "touch every package", "scope": wide_scope()}),
        ),
        BoardCase::List | BoardCase::ListRest | BoardCase::ListAfterWide => {
            ("peers.list", json!({"checkouts": "this"}))
        }
        BoardCase::Guard => (
            "hooks.guard",
            json!({
                "client": "claude-code",
                "session_id": "bench-crowded-guard",
                "paths": ["pkg0007/src/mod3/lexer.rs"],
            }),
        ),
        BoardCase::News => {
            let edit = json!({
                "client": "claude-code",
                "session_id": "bench-crowded-news",
                "paths": ["pkg0007/src/mod3/lexer.rs"],
            });
            majordomus_capabilities::registry()
                .by_id("hooks.edit")
                .expect("the hooks are registered")
                .call(&ctx, edit)
                .await
                .map_err(|error| format!("hooks.edit was refused: {}", error.message))?;
            (
                "hooks.news",
                json!({
                    "client": "claude-code",
                    "session_id": "bench-crowded-news",
                    "moment": "prompt",
                }),
            )
        }
    };
    let capability = majordomus_capabilities::registry()
        .by_id(id)
        .expect("the board's capabilities are registered");
    let first: Value = capability
        .call(&ctx, input.clone())
        .await
        .map_err(|error| format!("{id} was refused: {}", error.message))?;
    let size = serde_json::to_vec(&first).map_or(0, |bytes| bytes.len()) / 1024;
    let announced = input["scope"].as_array().map_or(0, Vec::len);
    let note = if case == BoardCase::Guard {
        format!(
            "{BOARD_PEERS} peers × {BOARD_PATHS} paths on the board; the guard found {} claim(s) in {size} KB of JSON; in-process",
            first["findings"].as_array().map_or(0, Vec::len)
        )
    } else if case == BoardCase::News {
        format!(
            "{BOARD_PEERS} peers × {BOARD_PATHS} paths on the board; the first prompt was told {} line(s), every later one none; in-process",
            first["lines"].as_array().map_or(0, Vec::len)
        )
    } else if announce {
        format!(
            "{BOARD_PEERS} peers × {BOARD_PATHS} paths on the board; the announce of {announced} paths answered {} overlap(s) in {size} KB of JSON; in-process",
            first["overlaps"].as_array().map_or(0, Vec::len)
        )
    } else {
        let how = if case == BoardCase::ListRest {
            "over REST on a kept-alive connection, the body read whole"
        } else {
            "in-process"
        };
        format!(
            "{} peers listed, {} attached, {size} KB of JSON; {how} (checkouts: this, so no sibling is read)",
            first["peers"].as_array().map_or(0, Vec::len),
            first["count"]
        )
    };
    let budget = Budget::scenario(options, 200, 2000, 3.0);
    let samples = if case == BoardCase::ListRest {
        sample_rest_listing(budget, repository.root()).await
    } else {
        sample_in_process(budget, capability, &ctx, &input).await
    };
    serving.stop().await;
    Ok(ScenarioRow::latency(scenario, Summary::of(&samples?), note))
}

/// Samples `GET /api/v1/peers?checkouts=this` of the server of `root` on one kept-alive
/// connection, the body read whole but not parsed: the server's and the transport's cost,
/// not a client's JSON parser.
async fn sample_rest_listing(
    budget: Budget,
    root: &std::path::Path,
) -> Result<Vec<Duration>, String> {
    let lease = super::setup::wait_ready(root).await?;
    let url = lease.url.clone().ok_or("the ready lease names no URL")?;
    let url = format!("{url}/api/v1/peers?checkouts=this");
    let http = http_client();
    budget
        .sample(|| async {
            let started = Instant::now();
            let response = http
                .get(&url)
                .bearer_auth(&lease.token)
                .send()
                .await
                .map_err(|error| error.to_string())?;
            let status = response.status();
            let body = response.bytes().await.map_err(|error| error.to_string())?;
            if !status.is_success() {
                return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)));
            }
            Ok(started.elapsed())
        })
        .await
}

/// Records a claim with its paths taken by their text alone, not resolved on disk: how the
/// crowded board's ten thousand claimed paths are made quickly, none of which exists.
fn announce_as_written(
    state: &ServerState,
    caller: &PeerId,
    input: AnnounceInput,
) -> Result<(), String> {
    let root = state.site.checkout.root.display().to_string();
    let paths = input
        .scope
        .iter()
        .map(|raw| majordomus_domain::paths::normalize(raw, &root))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| error.to_string())?;
    let announcement = CheckedAnnouncement::check(input).map_err(|error| error.to_string())?;
    state
        .announce_resolved(caller, announcement, paths, SystemTime::now())
        .map(drop)
        .map_err(|error| error.message)
}

/// The `tools/list` result of a `majordomus serve` over MCP Streamable HTTP, as an rmcp
/// client receives it, in bytes of compact JSON; and the part a client forwards to its model
/// with every request (each tool's name, description and input schema), which is what the
/// tools cost in the model's context. Tokens are estimated as bytes / 4.
async fn tools_list_size(scenario: &Scenario, scratch: &Scratch) -> Result<ScenarioRow, String> {
    let repository = TempRepository::new(scratch, "tools-list")?;
    let (server, lease) = ServeProcess::start(scratch, repository.root()).await?;
    let url = lease.url.clone().ok_or("the ready lease names no URL")?;
    let result = async {
        let service = connect_kept_alive(&url, &lease.token, "majordomus-bench-tools").await?;
        let listed = service
            .list_tools(None)
            .await
            .map_err(|error| format!("tools/list failed: {error}"));
        let _ = service.cancel().await;
        let listed = listed?;
        let result_bytes = serde_json::to_vec(&listed)
            .map_err(|error| error.to_string())?
            .len();
        let forwarded: Vec<Value> = listed
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "inputSchema": tool.input_schema,
                })
            })
            .collect();
        let forwarded_bytes = serde_json::to_vec(&forwarded)
            .map_err(|error| error.to_string())?
            .len();
        let size = ToolsListSize {
            tools: listed.tools.len(),
            result_bytes,
            forwarded_bytes,
            result_tokens_estimate: result_bytes / 4,
            forwarded_tokens_estimate: forwarded_bytes / 4,
        };
        let note = format!(
            "{} tools: the result is {} bytes of compact JSON (≈ {} tokens at 4 bytes a token); what a client forwards to its model (name, description and inputSchema of each tool) is {} bytes (≈ {} tokens)",
            size.tools,
            size.result_bytes,
            size.result_tokens_estimate,
            size.forwarded_bytes,
            size.forwarded_tokens_estimate
        );
        Ok::<_, String>(ScenarioRow::tools_list(scenario, size, note))
    }
    .await;
    server.stop().await;
    result
}

/// A tool call over MCP Streamable HTTP from a client that keeps its connection alive (most
/// HTTP clients do by default), against a `majordomus serve`. The `mcp-http` rows use rmcp's
/// default client, which opens a new connection per request instead.
async fn keep_alive(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
) -> Result<ScenarioRow, String> {
    let repository = TempRepository::new(scratch, "keep-alive")?;
    let (server, lease) = ServeProcess::start(scratch, repository.root()).await?;
    let url = lease.url.clone().ok_or("the ready lease names no URL")?;
    let result = async {
        let session = connect_kept_alive(&url, &lease.token, "majordomus-bench-keep-alive").await?;
        let caller = Caller::Mcp(session);
        let capability = registered("server.status");
        let input = json!({"checkouts": "this"});
        let budget = Budget::scenario(options, 50, 2000, 3.0);
        let samples = budget.sample(|| async {
            let started = Instant::now();
            match caller.call(capability, &input).await {
                Outcome::Answer => Ok(started.elapsed()),
                other => Err(format!(
                    "server.status was not answered: {}",
                    other.detail().unwrap_or("")
                )),
            }
        })
        .await;
        caller.close().await;
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples?),
            "`server.status` (checkouts: this) through an rmcp client on a reqwest client with a keep-alive pool, against `majordomus serve`",
        ))
    }
    .await;
    server.stop().await;
    result
}

/// How long the exit scenario waits for a signalled process before it counts as a failure.
const EXIT_BOUND: Duration = Duration::from_secs(10);

/// From SIGINT to the exit of a `majordomus mcp` that serves the checkout for its own client
/// only: the client ending it, as Claude Code does at the end of every session. Each sample
/// starts its own process, waits for its first answered tool call, then signals it.
async fn exit_on_sigint(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
) -> Result<ScenarioRow, String> {
    let repository = TempRepository::new(scratch, "exit-sigint")?;
    let dir = repository.root().to_path_buf();
    let capability = registered("peers.list");
    let input = json!({"checkouts": "this"});
    let budget = Budget::scenario(options, 20, 60, 8.0);
    let samples = budget
        .sample(|| async {
            wait_no_lease(&dir).await?;
            let (service, pid) = spawn_mcp(
                scratch.exe(),
                &dir,
                "majordomus-bench-exit",
                scratch.log("exit-sigint"),
            )
            .await?;
            let caller = Caller::Mcp(service);
            let outcome = caller.call(capability, &input).await;
            if outcome != Outcome::Answer {
                caller.close().await;
                return Err(format!(
                    "the tool call before the signal was not answered: {}",
                    outcome.detail().unwrap_or("")
                ));
            }
            let started = Instant::now();
            super::setup::signal(pid, libc::SIGINT);
            while super::setup::alive(pid) {
                if started.elapsed() > EXIT_BOUND {
                    caller.close().await;
                    wait_gone(pid, Duration::ZERO).await;
                    return Err(format!(
                        "`majordomus mcp` was still running {} s after SIGINT",
                        EXIT_BOUND.as_secs()
                    ));
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let elapsed = started.elapsed();
            caller.close().await;
            Ok(elapsed)
        })
        .await?;
    Ok(ScenarioRow::latency(
        scenario,
        Summary::of(&samples),
        "SIGINT → process gone (polled every 1 ms), after initialize and one answered tool call; the process held the lease and served only its own client",
    ))
}

/// From sending a `peers.announce` to the moment every one of [`EVENT_SUBSCRIBERS`]
/// `/api/v1/events` streams has received its `announced` event: each stream is read by its
/// own task, which reports the round of every announcement it sees.
async fn announce_to_subscribers(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
) -> Result<ScenarioRow, String> {
    use futures::StreamExt as _;
    let repository = TempRepository::new(scratch, "events")?;
    let (server, lease) = ServeProcess::start(scratch, repository.root()).await?;
    let url = lease.url.clone().ok_or("the ready lease names no URL")?;
    let result = async {
        let streams = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|error| error.to_string())?;
        let (seen, heard) = tokio::sync::mpsc::unbounded_channel::<u64>();
        let heard = tokio::sync::Mutex::new(heard);
        let mut readers = Vec::new();
        for _ in 0..EVENT_SUBSCRIBERS {
            let response = streams
                .get(format!("{url}/api/v1/events?checkouts=this"))
                .bearer_auth(&lease.token)
                .send()
                .await
                .map_err(|error| format!("an event stream did not open: {error}"))?;
            let mut events = majordomus_server::events::read_stream(response);
            let seen = seen.clone();
            readers.push(tokio::spawn(async move {
                while let Some(Ok(event)) = events.next().await {
                    let round = event.body["claim"]["intent"]
                        .as_str()
                        .and_then(|intent| intent.strip_prefix("bench round "))
                        .and_then(|round| round.parse().ok());
                    if let Some(round) = round
                        && seen.send(round).is_err()
                    {
                        break;
                    }
                }
            }));
        }
        let session = connect_kept_alive(&url, &lease.token, "majordomus-bench-events").await?;
        let caller = Caller::Mcp(session);
        let capability = registered("peers.announce");
        let budget = Budget::scenario(options, 50, 1000, 3.0);
        let mut round = 0u64;
        let samples = budget.sample(|| {
            round += 1;
            let this_round = round;
            let input = json!({"intent": format!("bench round {this_round}"), "scope": ["src/bench"]});
            let caller = &caller;
            let heard = &heard;
            async move {
                let started = Instant::now();
                match caller.call(capability, &input).await {
                    Outcome::Answer => {}
                    other => {
                        return Err(format!(
                            "peers.announce was not answered: {}",
                            other.detail().unwrap_or("")
                        ));
                    }
                }
                let mut heard = heard.lock().await;
                let mut delivered = 0;
                while delivered < EVENT_SUBSCRIBERS {
                    let round = tokio::time::timeout(Duration::from_secs(10), heard.recv())
                        .await
                        .map_err(|_| "an event did not reach every subscriber within 10 s".to_string())?
                        .ok_or("every event stream ended")?;
                    if round == this_round {
                        delivered += 1;
                    }
                }
                Ok(started.elapsed())
            }
        })
        .await;
        caller.close().await;
        for reader in readers {
            reader.abort();
        }
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples?),
            format!("from sending `peers.announce` (one path) through an rmcp client to the {EVENT_SUBSCRIBERS}th subscriber holding its event, against `majordomus serve`"),
        ))
    }
    .await;
    server.stop().await;
    result
}
