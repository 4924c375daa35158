//! The scenarios: each sets up its own temporary repository (whatever `--repo`
//! says), measures, and ends every process it started by pid.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use indicatif::ProgressBar;
use majordomus_checkout::allowances::{Allowances, Suggestion};
use majordomus_checkout::config::UserFiles;
use majordomus_domain::peers::{AnnounceInput, ClientInfo, PeerId, Transport};
use serde_json::{Value, json};

use super::clients::{Caller, HttpPooling, Outcome, connect_http, http_client, spawn_mcp};
use super::nats::BenchNats;
use super::report::{Memory, ScenarioRow, Throughput, ToolsListSize};
use super::setup::{
    InProcessServer, SETUP_BOUND, Scratch, ServeProcess, Serving, TempRepository, cpu_time, git,
    status_kib, wait_gone, wait_no_lease,
};
use super::stats::Summary;
use super::{Budget, Options, Scenario, ScenarioId};
use majordomus::context::Context;
use majordomus::federation::FederationState;
use majordomus::registry::Capability;
use majordomus::server::ServerState;

/// How many linked worktrees the gather reads, and how many of them have a live server.
pub const GATHER_WORKTREES: usize = 118;
pub const GATHER_LIVE: usize = 7;
/// How many peers the crowded board holds, and how many paths each claims.
pub const BOARD_PEERS: usize = 1000;
pub const BOARD_PATHS: usize = 10;
/// How many event streams the announce-to-subscribers scenario holds open.
pub const EVENT_SUBSCRIBERS: usize = 50;
/// How many idle Streamable HTTP sessions the memory scenario holds open.
pub const MEMORY_SESSIONS: usize = 2_000;
/// How many sessions the memory scenario opens at once.
const MEMORY_OPENING: usize = 16;
/// How long the memory scenario's sessions stay idle before they are parked: short, so the
/// scenario measures idle sessions without waiting out the default.
const MEMORY_PARK_SECS: u64 = 1;
/// How many other machines' boards the `everywhere` listing joins, and peers on each.
pub const FEDERATION_MACHINES: usize = 10;
pub const FEDERATION_PEERS: usize = 10;

pub async fn run(
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

/// Runs `once` until the budget says stop, after its warm-up; `once` returns the measured span.
pub(super) async fn sample<F, Fut>(budget: Budget, mut once: F) -> Result<Vec<Duration>, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Duration, String>>,
{
    for _ in 0..budget.warmup {
        once().await?;
    }
    let mut samples = Vec::with_capacity(budget.max);
    let clock = Instant::now();
    loop {
        samples.push(once().await?);
        let spent = clock.elapsed();
        if samples.len() >= budget.max
            || (samples.len() >= budget.min && spent >= budget.soft)
            || spent >= budget.hard
        {
            return Ok(samples);
        }
    }
}

/// Samples one capability called in-process, the handler alone: its answer as it gave it.
async fn sample_in_process(
    budget: Budget,
    capability: &Capability,
    ctx: &Context,
    input: &Value,
) -> Result<Vec<Duration>, String> {
    sample(budget, || async {
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
    let capability = majordomus::capabilities::registry()
        .by_id("peers.list")
        .expect("peers.list is registered");
    let input = json!({"checkouts": "this"});
    let budget = Budget::scenario(options, 20, 60, 8.0);
    let samples = sample(budget, || async {
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
        let capability = majordomus::capabilities::registry()
            .by_id("peers.list")
            .expect("peers.list is registered");
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
        },
    )?;
    let site = majordomus::context::Site::open(repository.root())?;
    let serving = Serving::start(site.clone()).await?;
    let state = serving.state.clone();
    let client = |name: String| ClientInfo {
        name,
        version: "1.0.0".into(),
        title: None,
    };
    for n in 0..BOARD_PEERS {
        let peer = state.attach(Transport::Http, client(format!("agent-{n}")), None);
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
    let caller: PeerId = state.attach(Transport::Stdio, client("majordomus-bench".into()), None);
    if case == BoardCase::ListAfterWide {
        let wide = AnnounceInput {
            intent: "touch every package".into(),
            scope: wide_scope(),
            claim: None,
        };
        announce_as_written(&state, &caller, wide)?;
    }
    let ctx = Context {
        site: site.clone(),
        server: Some(state.clone()),
        caller: Some(caller),
    };
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
    };
    let capability = majordomus::capabilities::registry()
        .by_id(id)
        .expect("the board's capabilities are registered");
    let first: Value = capability
        .call(&ctx, input.clone())
        .await
        .map_err(|error| format!("{id} was refused: {}", error.message))?;
    let size = serde_json::to_vec(&first).map_or(0, |bytes| bytes.len()) / 1024;
    let announced = input["scope"].as_array().map_or(0, Vec::len);
    let note = if announce {
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
    sample(budget, || async {
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
    state
        .announce_resolved(caller, input, paths, SystemTime::now())
        .map(drop)
        .map_err(|error| error.message)
}

/// `VmRSS` of a `majordomus serve` before and after [`MEMORY_SESSIONS`] MCP Streamable HTTP
/// sessions are opened and left idle, the server's session limit raised above that in the
/// repository's `majordomus.toml`. An idle session is parked after `session_park_secs`
/// (shortened here to [`MEMORY_PARK_SECS`]): the figure is the resident size once the server
/// says every session is parked, and the note also gives it just after they opened. Each session is opened as any client opens one
/// (`initialize`, then `notifications/initialized`), with plain requests on a few kept-alive
/// connections: thousands of rmcp clients would each keep a task and a stream open in the
/// benchmark, and what is measured is what the server holds per session, not the clients.
async fn memory(
    scenario: &Scenario,
    scratch: &Scratch,
    progress: &ProgressBar,
) -> Result<ScenarioRow, String> {
    use futures::StreamExt as _;
    let repository = TempRepository::new(scratch, "memory")?;
    let limit = MEMORY_SESSIONS + 100;
    write_file(
        &repository
            .root()
            .join(majordomus_checkout::config::CONFIG_FILE),
        &format!(
            "[limits]\nmcp_sessions = {limit}\n[timings]\nsession_park_secs = {MEMORY_PARK_SECS}\n"
        ),
    )?;
    let (server, lease) = ServeProcess::start(scratch, repository.root()).await?;
    let pid = server.pid;
    let url = lease.url.clone().ok_or("the ready lease names no URL")?;
    let http = http_client();
    let result = async {
        let capability = majordomus::capabilities::registry()
            .by_id("peers.list")
            .expect("peers.list is registered");
        let input = json!({"checkouts": "this"});
        // One call first, so the baseline is of a server that has answered something.
        let rest = Caller::Rest {
            http: http.clone(),
            base: url.clone(),
            token: lease.token.clone(),
        };
        rest.call(capability, &input).await;
        let before = status_kib(pid, "VmRSS").ok_or("cannot read the server's VmRSS")?;
        progress.set_message(format!(
            "{}: opening {MEMORY_SESSIONS} sessions",
            scenario.name
        ));
        let opened: Vec<Result<(), String>> = futures::stream::iter(0..MEMORY_SESSIONS)
            .map(|n| open_idle_session(&http, &url, &lease.token, n))
            .buffer_unordered(MEMORY_OPENING)
            .collect()
            .await;
        if let Some(Err(why)) = opened.into_iter().find(Result::is_err) {
            return Err(why);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let opened_rss = status_kib(pid, "VmRSS").ok_or("cannot read the server's VmRSS")?;
        progress.set_message(format!("{}: waiting for the sessions to idle", scenario.name));
        let deadline = std::time::Instant::now() + Duration::from_secs(4 * MEMORY_PARK_SECS + 10);
        let parked = loop {
            let status: Value = http
                .get(format!("{url}/api/v1/server?checkouts=this"))
                .bearer_auth(&lease.token)
                .send()
                .await
                .map_err(|error| error.to_string())?
                .json()
                .await
                .map_err(|error| error.to_string())?;
            let parked = status["mcp_sessions"]["parked"].as_u64().unwrap_or(0);
            if parked as usize >= MEMORY_SESSIONS || std::time::Instant::now() > deadline {
                break parked;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        let after = status_kib(pid, "VmRSS").ok_or("cannot read the server's VmRSS")?;
        let peak = status_kib(pid, "VmHWM").unwrap_or(after);
        let attached = http
            .get(format!("{url}/api/v1/peers?checkouts=this"))
            .bearer_auth(&lease.token)
            .send()
            .await
            .map_err(|error| error.to_string())?
            .json::<Value>()
            .await
            .map_err(|error| error.to_string())?["count"]
            .as_u64()
            .unwrap_or(0);
        let mb = |kib: u64| (kib as f64 / 1024.0 * 10.0).round() / 10.0;
        let per_session = after.saturating_sub(before) as f64 / MEMORY_SESSIONS as f64;
        let memory = Memory {
            sessions: MEMORY_SESSIONS,
            rss_before_mb: mb(before),
            rss_after_mb: mb(after),
            peak_mb: mb(peak),
            kb_per_session: (per_session * 10.0).round() / 10.0,
        };
        let note = format!(
            "VmRSS {:.1} MB before the first session; {:.1} MB just after {MEMORY_SESSIONS} sessions opened ({:.1} KB each); {:.1} MB once idle, {parked} of them parked after `session_park_secs = {MEMORY_PARK_SECS}` ({attached} peers attached): {:.1} KB per idle session; peak (VmHWM) {:.1} MB; `[limits] mcp_sessions = {limit}` in the repository's majordomus.toml; each session opened with `initialize` and `notifications/initialized` as plain POSTs, no GET stream",
            memory.rss_before_mb,
            mb(opened_rss),
            opened_rss.saturating_sub(before) as f64 / MEMORY_SESSIONS as f64,
            memory.rss_after_mb,
            memory.kb_per_session,
            memory.peak_mb
        );
        Ok::<_, String>(ScenarioRow::memory(scenario, memory, note))
    }
    .await;
    server.stop().await;
    result
}

/// Opens one MCP Streamable HTTP session and leaves it idle: `initialize` (its answer read
/// whole), then `notifications/initialized` in the session it named.
async fn open_idle_session(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    n: usize,
) -> Result<(), String> {
    const ACCEPT: &str = "application/json, text/event-stream";
    let initialize = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": format!("agent-{n}"), "version": "1.0.0"},
        },
    });
    let response = http
        .post(format!("{url}/mcp"))
        .bearer_auth(token)
        .header(reqwest::header::ACCEPT, ACCEPT)
        .json(&initialize)
        .send()
        .await
        .map_err(|error| format!("session {n}: initialize failed: {error}"))?;
    let status = response.status();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let body = response
        .text()
        .await
        .map_err(|error| format!("session {n}: the answer to initialize: {error}"))?;
    let Some(session) = session.filter(|_| status.is_success()) else {
        return Err(format!(
            "session {n}: initialize was answered HTTP {status} without a session: {}",
            body.chars().take(240).collect::<String>()
        ));
    };
    let version = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find_map(|message| {
            message["result"]["protocolVersion"]
                .as_str()
                .map(str::to_string)
        })
        .ok_or_else(|| format!("session {n}: initialize answered no protocol version"))?;
    let initialized = http
        .post(format!("{url}/mcp"))
        .bearer_auth(token)
        .header(reqwest::header::ACCEPT, ACCEPT)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", &version)
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .map_err(|error| format!("session {n}: notifications/initialized failed: {error}"))?;
    let status = initialized.status();
    let _ = initialized.bytes().await;
    if status.is_success() {
        Ok(())
    } else {
        Err(format!(
            "session {n}: notifications/initialized was answered HTTP {status}"
        ))
    }
}

/// What the clients of a throughput scenario call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hammer {
    /// `peers.announce` of one path of the client's own, each client its own MCP Streamable
    /// HTTP session on a kept-alive connection of its own.
    AnnounceMcpHttp,
    /// `GET /api/v1/peers?checkouts=this`, each client a kept-alive connection of its own.
    ListRest,
}

/// How many calls each client makes, untimed, before the clock starts.
const THROUGHPUT_WARMUP: usize = 20;

/// `clients` clients calling a `majordomus serve` as fast as it answers, for
/// `--throughput-seconds`: the calls a second of all together, each call's latency, and the
/// server's CPU time and resident memory over the run. The clients are tasks of this
/// process's multi-thread runtime; on a small machine they compete with the server for its
/// cores, which the CPU figure shows. Then the same clients call the floor server's
/// do-nothing tool or route for as long: what these clients reach on this machine when the
/// server does next to nothing, so the row reads as a ratio as the rows do.
async fn throughput(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    hammer: Hammer,
    clients: usize,
) -> Result<ScenarioRow, String> {
    let label = match hammer {
        Hammer::AnnounceMcpHttp => "throughput-announce",
        Hammer::ListRest => "throughput-list",
    };
    let seconds = Duration::from_secs_f64(options.throughput_seconds.max(0.1));
    let registry = majordomus::capabilities::registry();
    let capability = match hammer {
        Hammer::AnnounceMcpHttp => registry.by_id("peers.announce"),
        Hammer::ListRest => registry.by_id("peers.list"),
    }
    .expect("the hammered capabilities are registered");
    let calls = (0..clients)
        .map(|n| {
            Call::Capability(
                capability,
                match hammer {
                    Hammer::AnnounceMcpHttp => {
                        json!({"intent": format!("task {n}"), "scope": [format!("src/agent{n}")]})
                    }
                    Hammer::ListRest => json!({"checkouts": "this"}),
                },
            )
        })
        .collect();

    let repository = TempRepository::new(scratch, &format!("{label}-{clients}"))?;
    let (server, lease) = ServeProcess::start(scratch, repository.root()).await?;
    let pid = server.pid;
    let measured = async {
        let url = lease.url.clone().ok_or("the ready lease names no URL")?;
        let callers = connect_callers(hammer, clients, &url, &lease.token).await?;
        drive(callers, calls, seconds, pid).await
    }
    .await;
    server.stop().await;
    let measured = measured?;

    let floor_server = super::runner::FloorHttpServer::start(scratch).await?;
    let floor = async {
        let callers =
            connect_callers(hammer, clients, &floor_server.url, super::floor::TOKEN).await?;
        let calls = (0..clients).map(|_| Call::Floor).collect();
        drive(callers, calls, seconds, floor_server.pid()?).await
    }
    .await;
    floor_server.stop().await;
    let floor = floor?;

    let throughput = Throughput {
        clients,
        seconds: (measured.wall * 100.0).round() / 100.0,
        calls: measured.samples.len(),
        calls_per_second: measured.per_second().round(),
        server_cpu_percent: (measured.cpu_share() * 1000.0).round() / 10.0,
        server_rss_mb: (measured.rss_kib as f64 / 1024.0 * 10.0).round() / 10.0,
        floor_calls_per_second: floor.per_second().round(),
        floor_p99_ms: Summary::of(&floor.samples).p99_ms,
        floor_server_cpu_percent: (floor.cpu_share() * 1000.0).round() / 10.0,
    };
    let summary = Summary::of(&measured.samples);
    let what = match hammer {
        Hammer::AnnounceMcpHttp => {
            "`peers.announce` of one path of its own over an MCP Streamable HTTP session on a kept-alive connection"
        }
        Hammer::ListRest => "`GET /api/v1/peers?checkouts=this` on a kept-alive connection",
    };
    let note = format!(
        "{:.0} calls/s ({} calls in {:.2} s); server CPU {:.0}% of one core, VmRSS {:.1} MB; {clients} clients, each calling {what} as soon as the last call was answered, as tasks of the benchmark's runtime on the same machine. The same clients against the floor server: {:.0} calls/s ({:.2} of it), p99 {:.3} ms, its CPU {:.0}% of one core",
        throughput.calls_per_second,
        throughput.calls,
        throughput.seconds,
        throughput.server_cpu_percent,
        throughput.server_rss_mb,
        throughput.floor_calls_per_second,
        throughput.calls_per_second / throughput.floor_calls_per_second.max(1.0),
        throughput.floor_p99_ms,
        throughput.floor_server_cpu_percent,
    );
    Ok(ScenarioRow::throughput(scenario, summary, throughput, note))
}

/// What one client of a throughput run calls, again and again.
enum Call {
    /// A capability of majordomus with the client's input.
    Capability(&'static Capability, Value),
    /// The floor server's do-nothing tool or route.
    Floor,
}

impl Call {
    async fn once(&self, caller: &Caller) -> Outcome {
        let outcome = match self {
            Call::Capability(capability, input) => {
                tokio::time::timeout(SETUP_BOUND, caller.call(capability, input)).await
            }
            Call::Floor => tokio::time::timeout(SETUP_BOUND, caller.call_floor()).await,
        };
        outcome.unwrap_or_else(|_| Outcome::Failure("no answer within 30 s".into()))
    }

    fn name(&self) -> &'static str {
        match self {
            Call::Capability(capability, _) => capability.id(),
            Call::Floor => "the floor",
        }
    }
}

/// `clients` clients of `url`, each on a kept-alive connection of its own: an MCP Streamable
/// HTTP session each, or a REST client each.
async fn connect_callers(
    hammer: Hammer,
    clients: usize,
    url: &str,
    token: &str,
) -> Result<Vec<Caller>, String> {
    let mut callers = Vec::with_capacity(clients);
    for n in 0..clients {
        // A client of its own each, so each holds its own kept-alive connection.
        let http = http_client();
        callers.push(match hammer {
            Hammer::AnnounceMcpHttp => Caller::Mcp(
                connect_http(
                    &http,
                    HttpPooling::KeepAlive,
                    url,
                    token,
                    &format!("agent-{n}"),
                )
                .await?,
            ),
            Hammer::ListRest => Caller::Rest {
                http,
                base: url.to_string(),
                token: token.to_string(),
            },
        });
    }
    Ok(callers)
}

/// What one throughput run measured.
struct Driven {
    samples: Vec<Duration>,
    /// From the start of the clock to the end of the last call, in seconds.
    wall: f64,
    /// The server's user and system CPU time over the run.
    cpu: Duration,
    rss_kib: u64,
}

impl Driven {
    fn per_second(&self) -> f64 {
        self.samples.len() as f64 / self.wall
    }

    /// The server's CPU time over the run, in cores.
    fn cpu_share(&self) -> f64 {
        self.cpu.as_secs_f64() / self.wall
    }
}

/// Each caller makes its call ([`THROUGHPUT_WARMUP`] times untimed, then as fast as it is
/// answered for `seconds`, all starting at once), while the CPU time of the server `pid`
/// is read around the timed part.
async fn drive(
    callers: Vec<Caller>,
    calls: Vec<Call>,
    seconds: Duration,
    pid: u32,
) -> Result<Driven, String> {
    let ready = std::sync::Arc::new(tokio::sync::Barrier::new(callers.len() + 1));
    let tasks: Vec<_> = callers
        .into_iter()
        .zip(calls)
        .enumerate()
        .map(|(n, (caller, call))| {
            let ready = ready.clone();
            tokio::spawn(async move {
                let once = async || match call.once(&caller).await {
                    Outcome::Answer => Ok(()),
                    other => Err(format!(
                        "client {n}: {} was not answered: {}",
                        call.name(),
                        other.detail().unwrap_or("")
                    )),
                };
                let mut warm = Ok(());
                for _ in 0..THROUGHPUT_WARMUP {
                    warm = once().await;
                    if warm.is_err() {
                        break;
                    }
                }
                // Waited for even by a client that failed, so that no other waits forever.
                ready.wait().await;
                let end = Instant::now() + seconds;
                let run = async {
                    warm?;
                    let mut samples = Vec::new();
                    let mut last = Instant::now();
                    while last < end {
                        let call = Instant::now();
                        once().await?;
                        last = Instant::now();
                        samples.push(last - call);
                    }
                    Ok::<_, String>((samples, last))
                };
                let outcome = run.await;
                caller.close().await;
                outcome
            })
        })
        .collect();
    ready.wait().await;
    let clock = Instant::now();
    let cpu_at_start = cpu_time(pid).ok_or("cannot read the server's CPU time")?;
    let mut samples = Vec::new();
    let mut last = clock;
    let mut failure = None;
    for task in tasks {
        match task
            .await
            .map_err(|error| format!("a client task failed: {error}"))
        {
            Ok(Ok((client_samples, client_last))) => {
                samples.extend(client_samples);
                last = last.max(client_last);
            }
            Ok(Err(why)) | Err(why) => failure = failure.or(Some(why)),
        }
    }
    if let Some(why) = failure {
        return Err(why);
    }
    let cpu_after = cpu_time(pid).ok_or("cannot read the server's CPU time")?;
    let rss_kib = status_kib(pid, "VmRSS").ok_or("cannot read the server's VmRSS")?;
    Ok(Driven {
        samples,
        wall: (last - clock).as_secs_f64(),
        cpu: cpu_after - cpu_at_start,
        rss_kib,
    })
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
        let service = connect_http(
            &http_client(),
            HttpPooling::KeepAlive,
            &url,
            &lease.token,
            "majordomus-bench-tools",
        )
        .await?;
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
        let session = connect_http(
            &http_client(),
            HttpPooling::KeepAlive,
            &url,
            &lease.token,
            "majordomus-bench-keep-alive",
        )
        .await?;
        let caller = Caller::Mcp(session);
        let capability = majordomus::capabilities::registry()
            .by_id("server.status")
            .expect("server.status is registered");
        let input = json!({"checkouts": "this"});
        let budget = Budget::scenario(options, 50, 2000, 3.0);
        let samples = sample(budget, || async {
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
    let capability = majordomus::capabilities::registry()
        .by_id("peers.list")
        .expect("peers.list is registered");
    let input = json!({"checkouts": "this"});
    let budget = Budget::scenario(options, 20, 60, 8.0);
    let samples = sample(budget, || async {
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
            let mut events = majordomus::server::events::read_stream(response);
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
        let session = connect_http(
            &http_client(),
            HttpPooling::KeepAlive,
            &url,
            &lease.token,
            "majordomus-bench-events",
        )
        .await?;
        let caller = Caller::Mcp(session);
        let capability = majordomus::capabilities::registry()
            .by_id("peers.announce")
            .expect("peers.announce is registered");
        let budget = Budget::scenario(options, 50, 1000, 3.0);
        let mut round = 0u64;
        let samples = sample(budget, || {
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

/// A Claude Code `PreToolUse` event for an edit of `src/parser/lexer.rs` in `root`.
fn pre_edit_event(root: &std::path::Path) -> Vec<u8> {
    let file = root.join("src/parser/lexer.rs");
    json!({
        "session_id": "bench-hook-session",
        "cwd": root,
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": file, "old_string": "a", "new_string": "b", "replace_all": false},
        "tool_use_id": "toolu_bench",
    })
    .to_string()
    .into_bytes()
}

/// Runs one `majordomus hook claude-code PreToolUse` with `event` on its stdin: the time from
/// spawning it to its exit, and what it printed.
async fn run_hook(
    scratch: &Scratch,
    root: &std::path::Path,
    event: &[u8],
) -> Result<(Duration, String), String> {
    use tokio::io::AsyncWriteExt as _;
    let started = Instant::now();
    let mut command = tokio::process::Command::new(scratch.exe());
    command
        .args(["hook", "claude-code", "PreToolUse"])
        .current_dir(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    super::setup::clean_env(command.as_std_mut());
    let mut child = command
        .spawn()
        .map_err(|error| format!("could not start the hook: {error}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(event)
            .await
            .map_err(|error| format!("could not write the event: {error}"))?;
    }
    let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .map_err(|_| "the hook did not exit within 10 s".to_string())?
        .map_err(|error| format!("the hook could not be waited for: {error}"))?;
    let elapsed = started.elapsed();
    if !output.status.success() {
        return Err(format!("the hook exited {}", output.status));
    }
    Ok((
        elapsed,
        String::from_utf8_lossy(&output.stdout).into_owned(),
    ))
}

/// From spawning `majordomus hook` to its exit. With a server (`guarded`): another session
/// claims `src/parser` and the hook answers an edit of a file in it (under the default
/// policy, refuses it). Without one: the hook finds no server and exits at once with no
/// output.
async fn hook(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    guarded: bool,
) -> Result<ScenarioRow, String> {
    let repository = TempRepository::new(
        scratch,
        if guarded {
            "hook-guard"
        } else {
            "hook-fail-open"
        },
    )?;
    let root = repository.root().to_path_buf();
    let event = pre_edit_event(&root);
    let server = if guarded {
        let (server, lease) = ServeProcess::start(scratch, &root).await?;
        let url = lease.url.clone().ok_or("the ready lease names no URL")?;
        let session = connect_http(
            &http_client(),
            HttpPooling::KeepAlive,
            &url,
            &lease.token,
            "codex",
        )
        .await?;
        let claimant = Caller::Mcp(session);
        let announce = majordomus::capabilities::registry()
            .by_id("peers.announce")
            .expect("peers.announce is registered");
        if let Outcome::Failure(why) = claimant
            .call(
                announce,
                &json!({"intent": "port the parser", "scope": ["src/parser"]}),
            )
            .await
        {
            server.stop().await;
            return Err(format!("the other session could not claim: {why}"));
        }
        Some((server, claimant))
    } else {
        None
    };
    let budget = Budget::scenario(options, 50, 300, 4.0);
    let samples = sample(budget, || async {
        let (elapsed, printed) = run_hook(scratch, &root, &event).await?;
        match (guarded, printed.is_empty()) {
            (true, true) => Err("the guard said nothing about a claimed file".to_string()),
            (false, false) => Err(format!("with no server the hook printed {printed}")),
            _ => Ok(elapsed),
        }
    })
    .await;
    if let Some((server, claimant)) = server {
        claimant.close().await;
        server.stop().await;
    }
    let note = if guarded {
        "spawn → read the event → find the lease → POST /api/v1/hooks/guard (a repository-wide listing) → the answer printed → exit"
    } else {
        "spawn → read the event → find no server → exit 0, nothing printed"
    };
    Ok(ScenarioRow::latency(scenario, Summary::of(&samples?), note))
}

/// Writes a `[federation]` section into a checkout's `majordomus.toml` and allows it in an
/// allowance file of the bench's own, as a person would with `majordomus allow federation`;
/// answers the person's files a server started with them reads.
fn federate(
    scratch: &Scratch,
    dir: &std::path::Path,
    url: &str,
    machine: &str,
) -> Result<UserFiles, String> {
    std::fs::write(
        dir.join(majordomus_checkout::CONFIG_FILE),
        format!("[federation]\nurl = \"{url}\"\nmachine = \"{machine}\"\n"),
    )
    .map_err(|error| format!("could not configure {}: {error}", dir.display()))?;
    let allowances = scratch.base().join(format!("allowed-{machine}.toml"));
    let user_files = UserFiles {
        config: None,
        allowances: Some(allowances.clone()),
    };
    let suggested = majordomus_checkout::config::load_with(dir, &user_files)
        .map_err(|error| error.to_string())?
        .suggestions
        .federation
        .ok_or("the federation written is no suggestion")?;
    Allowances::allow(&allowances, Suggestion::Federation, &suggested.digest)
        .map_err(|error| error.to_string())?;
    Ok(user_files)
}

/// Waits (bounded) until a server follows the federation: connected, and every board the
/// bucket held read.
async fn until_following(server: &ServerState) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let status = server.federation.status();
        if status.state == FederationState::Connected && status.reason.is_none() {
            return Ok(());
        }
        if started.elapsed() > SETUP_BOUND {
            return Err(format!(
                "the federation did not connect: {}",
                status.summary
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether `server` holds a remote board with a claim of this intent.
fn holds_claim(server: &ServerState, intent: &str) -> bool {
    server.federation.remote_boards().iter().any(|held| {
        held.board
            .peers
            .iter()
            .any(|peer| peer.claims.iter().any(|claim| claim.intent == intent))
    })
}

/// An announce on one machine's server until the claim is in another machine's view: two
/// clones of one repository served inside this process, federated through a `nats-server`
/// on loopback.
async fn federation_visible(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
) -> Result<ScenarioRow, String> {
    let nats = BenchNats::start(scratch, "federation-visible").await?;
    let repository = TempRepository::new(scratch, "federation-visible")?;
    let base = repository
        .root()
        .parent()
        .ok_or("the repository has no parent directory")?;
    git(base, &["clone", "--quiet", "repo", "beta"])?;
    let beta = base.join("beta");
    let alpha_files = federate(scratch, repository.root(), &nats.url(), "alpha")?;
    let beta_files = federate(scratch, &beta, &nats.url(), "beta")?;
    let alpha = InProcessServer::start_as(repository.root(), alpha_files).await?;
    let watcher = InProcessServer::start_as(&beta, beta_files).await?;
    let result = async {
        let ctx = alpha.context();
        let seeing = watcher.state().clone();
        until_following(alpha.state()).await?;
        until_following(&seeing).await?;
        let announce = majordomus::capabilities::registry()
            .by_id("peers.announce")
            .expect("peers.announce is registered");
        let mut step = 0u64;
        let budget = Budget::scenario(options, 30, 300, 10.0);
        let samples = sample(budget, || {
            step += 1;
            let intent = format!("step {step}");
            let (ctx, seeing) = (ctx.clone(), seeing.clone());
            async move {
                // Untimed: a quiet moment, so the board is published at once.
                tokio::time::sleep(majordomus::federation::REPUBLISH_INTERVAL).await;
                let mut seen = seeing.federation.remote_changes();
                let started = Instant::now();
                announce
                    .call(&ctx, json!({"intent": intent, "scope": ["src/parser"]}))
                    .await
                    .map_err(|error| error.message)?;
                while !holds_claim(&seeing, &intent) {
                    if started.elapsed() > SETUP_BOUND {
                        return Err(format!("`{intent}` did not reach the other machine"));
                    }
                    seen = seeing.federation.remote_changed(seen, SETUP_BOUND).await;
                }
                Ok(started.elapsed())
            }
        })
        .await?;
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples),
            format!(
                "`peers.announce` on machine alpha's server until the claim is in machine beta's view: published to nats-server, delivered to beta's watch, checked and held; both servers inside this process, {} on loopback; each announce after a quiet {} ms, so it is published at once",
                nats.version(),
                majordomus::federation::REPUBLISH_INTERVAL.as_millis()
            ),
        ))
    }
    .await;
    alpha.stop().await;
    watcher.stop().await;
    drop(nats);
    result
}

/// `peers.list` with `checkouts: everywhere` from a server that holds 10 other machines'
/// boards of 10 peers each, published straight into the bucket.
async fn federation_everywhere(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
) -> Result<ScenarioRow, String> {
    let nats = BenchNats::start(scratch, "federation-everywhere").await?;
    let repository = TempRepository::new(scratch, "federation-everywhere")?;
    let user_files = federate(scratch, repository.root(), &nats.url(), "home")?;
    let server = InProcessServer::start_as(repository.root(), user_files).await?;
    let result = async {
        let ctx = server.context();
        let state = server.state().clone();
        until_following(&state).await?;
        let repository_id = state
            .site
            .checkout
            .root_commit()
            .map_err(|error| error.to_string())?
            .ok_or("the repository has no commit")?;
        let client = async_nats::connect(nats.url())
            .await
            .map_err(|error| format!("cannot connect to nats-server: {error}"))?;
        let bucket = async_nats::jetstream::new(client)
            .get_key_value(majordomus::federation::BUCKET)
            .await
            .map_err(|error| format!("no bucket: {error}"))?;
        let seen = state.federation.remote_changes();
        for (key, bytes) in remote_boards(&repository_id) {
            bucket
                .put(key, bytes.into())
                .await
                .map_err(|error| format!("cannot publish a board: {error}"))?;
        }
        let started = Instant::now();
        let mut seen = seen;
        while state.federation.remote_boards().len() < FEDERATION_MACHINES {
            if started.elapsed() > SETUP_BOUND {
                return Err("the remote boards did not all arrive".to_string());
            }
            seen = state.federation.remote_changed(seen, SETUP_BOUND).await;
        }
        let capability = majordomus::capabilities::registry()
            .by_id("peers.list")
            .expect("peers.list is registered");
        let input = json!({"checkouts": "everywhere"});
        let first = capability
            .call(&ctx, input.clone())
            .await
            .map_err(|error| format!("the listing was refused: {}", error.message))?;
        let size = serde_json::to_vec(&first).map_or(0, |bytes| bytes.len()) / 1024;
        let budget = Budget::scenario(options, 100, 2000, 5.0);
        let samples = sample_in_process(budget, capability, &ctx, &input).await?;
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples),
            format!(
                "{} peers listed ({FEDERATION_MACHINES} machines × {FEDERATION_PEERS} peers × 10 paths held in memory, and the caller), {} overlaps across machines, complete: {}, {size} KB of JSON; in-process call",
                first["peers"].as_array().map_or(0, Vec::len),
                first["overlaps"].as_array().map_or(0, Vec::len),
                first["complete"]
            ),
        ))
    }
    .await;
    server.stop().await;
    drop(nats);
    result
}

/// The boards of [`FEDERATION_MACHINES`] machines, [`FEDERATION_PEERS`] peers each claiming
/// 10 paths of their own; each machine's first peer also claims `shared`, so those meet
/// across machines. Keys and documents as a serving process publishes them.
fn remote_boards(repository: &str) -> Vec<(String, Vec<u8>)> {
    (0..FEDERATION_MACHINES)
        .map(|m| {
            let machine = format!("machine-{m}");
            let id = majordomus_domain::ids::identity_digest(&format!("/{machine}/repo"));
            let peers = (0..FEDERATION_PEERS)
                .map(|p| {
                    let mut scope: Vec<String> =
                        (0..9).map(|k| format!("m{m}/pkg{p}/mod{k}")).collect();
                    scope.push(if p == 0 {
                        "shared".into()
                    } else {
                        format!("m{m}/pkg{p}/docs")
                    });
                    let claim = majordomus_domain::peers::Announcement {
                        name: None,
                        intent: format!("task {p} on {machine}"),
                        scope,
                        at: "2026-11-30T02:26:47Z".into(),
                        resolved: Vec::new(),
                        compared: Default::default(),
                    };
                    majordomus_domain::peers::Peer {
                        id: PeerId::nth(p as u64 + 1),
                        client: ClientInfo {
                            name: "claude-code".into(),
                            version: "2.1.0".into(),
                            title: None,
                        },
                        transport: Transport::Http,
                        connected_at: "2026-11-30T02:26:47Z".into(),
                        last_seen_seconds_ago: 1,
                        attached: true,
                        left_seconds_ago: None,
                        announcement: Some(claim.clone()),
                        claims: vec![claim],
                        checkout: None,
                    }
                })
                .collect();
            let checkout = majordomus::federation::document::PublishedCheckout {
                id: id.clone(),
                worktree: "/home/dev/repo".into(),
                branch: Some("main".into()),
            };
            let (_, bytes) = majordomus::federation::document::BoardDocument::publish(
                &machine,
                checkout,
                majordomus_domain::checkouts::ServerStanding::Ready,
                60,
                SystemTime::now(),
                peers,
            );
            let key = majordomus::federation::document::BoardKey::new(repository, &machine, &id);
            (key.as_key(), bytes)
        })
        .collect()
}

/// How many worktrees the change and conflict scenarios give changes to.
pub const CHANGED_WORKTREES: usize = 8;

/// A repository with [`CHANGED_WORKTREES`] linked worktrees, each with a committed change to
/// a file of its own and uncommitted work in another; the first two change the same lines of
/// `src/lib.rs` (one committed, one not), so exactly one pair conflicts.
fn changed_worktrees(
    scratch: &Scratch,
    label: &str,
) -> Result<(TempRepository, Vec<PathBuf>), String> {
    let repository = TempRepository::new(scratch, label)?;
    let mut worktrees = Vec::with_capacity(CHANGED_WORKTREES);
    for n in 0..CHANGED_WORKTREES {
        let worktree = repository.add_worktree(&format!("changed{n}"))?;
        write_file(
            &worktree.join(format!("src/own{n}.rs")),
            "// committed on its branch\n",
        )?;
        if n == 0 {
            write_file(
                &worktree.join("src/lib.rs"),
                "// the first worktree's line\n",
            )?;
        }
        git(&worktree, &["add", "."])?;
        git(
            &worktree,
            &["commit", "--quiet", "-m", "a change of its own"],
        )?;
        if n == 1 {
            write_file(
                &worktree.join("src/lib.rs"),
                "// the second worktree's line\n",
            )?;
        }
        write_file(
            &worktree.join(format!("src/work{n}.rs")),
            "// uncommitted\n",
        )?;
        worktrees.push(worktree);
    }
    Ok((repository, worktrees))
}

fn write_file(path: &std::path::Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text)
        .map_err(|error| format!("could not write {}: {error}", path.display()))
}

/// `conflicts.predict` in-process from the primary's server over [`CHANGED_WORKTREES`]
/// worktrees with changes. Cold: before each call (untimed) every worktree's uncommitted
/// file is rewritten, so every snapshot is taken again and every pair merged again. Warm:
/// nothing moves, so snapshots and merges come from the predictor's caches.
async fn predict(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    cold: bool,
) -> Result<ScenarioRow, String> {
    let label = if cold { "predict-cold" } else { "predict-warm" };
    let (repository, worktrees) = changed_worktrees(scratch, label)?;
    let server = InProcessServer::start(repository.root()).await?;
    let result = async {
        let ctx = server.context();
        let capability = majordomus::capabilities::registry()
            .by_id("conflicts.predict")
            .expect("conflicts.predict is registered");
        let input = json!({});
        let first = capability
            .call(&ctx, input.clone())
            .await
            .map_err(|error| format!("the prediction was refused: {}", error.message))?;
        let pairs = first["pairs"].as_u64().unwrap_or(0);
        let conflicts = first["conflicts"].as_array().map_or(0, Vec::len);
        if conflicts != 1 {
            return Err(format!("expected one conflicting pair, the prediction says {first}"));
        }
        let budget = if cold {
            Budget::scenario(options, 10, 60, 10.0)
        } else {
            Budget::scenario(options, 30, 300, 10.0)
        };
        let mut round = 0u64;
        let samples = sample(budget, || {
            round += 1;
            let rewrite = cold.then(|| worktrees.clone());
            let (ctx, input) = (ctx.clone(), input.clone());
            async move {
                if let Some(worktrees) = rewrite {
                    for (n, worktree) in worktrees.iter().enumerate() {
                        write_file(
                            &worktree.join(format!("src/work{n}.rs")),
                            &format!("// uncommitted, round {round}\n"),
                        )?;
                    }
                }
                let started = Instant::now();
                capability
                    .call(&ctx, input)
                    .await
                    .map_err(|error| error.message)?;
                Ok(started.elapsed())
            }
        })
        .await?;
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples),
            format!(
                "{pairs} pairs of worktrees merged (git merge-tree between snapshots that include uncommitted work), 1 pair conflicting; in-process call from the primary's server{}",
                if cold { "; each call after every worktree's uncommitted file was rewritten" } else { "" }
            ),
        ))
    }
    .await;
    server.stop().await;
    result
}

/// `peers.announce` in-process from the primary's server while a `majordomus serve` runs in
/// a sibling worktree with a peer claiming part of what is announced: the announce reads that
/// board over HTTP (probe and listing) within the probe timeout and names its claim.
async fn announce_with_sibling(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
) -> Result<ScenarioRow, String> {
    let repository = TempRepository::new(scratch, "announce-sibling")?;
    let sibling = repository.add_worktree("sibling")?;
    let (sibling_server, lease) = ServeProcess::start(scratch, &sibling).await?;
    let result = async {
        let url = lease.url.clone().ok_or("the sibling's lease names no URL")?;
        let mcp = connect_http(
            &http_client(),
            HttpPooling::KeepAlive,
            &url,
            &lease.token,
            "majordomus-bench-sibling",
        )
        .await?;
        let claimant = Caller::Mcp(mcp);
        let announce = majordomus::capabilities::registry()
            .by_id("peers.announce")
            .expect("peers.announce is registered");
        let outcome = claimant
            .call(
                announce,
                &json!({"intent": "the sibling's work", "scope": ["src/parser"]}),
            )
            .await;
        if outcome != Outcome::Answer {
            claimant.close().await;
            return Err(format!(
                "the sibling's claim was not answered: {}",
                outcome.detail().unwrap_or("")
            ));
        }
        let server = InProcessServer::start(repository.root()).await?;
        let ctx = server.context();
        let input = json!({"intent": "bench", "scope": ["src/parser/lexer.rs", "docs"]});
        let first = announce
            .call(&ctx, input.clone())
            .await
            .map_err(|error| format!("the announce was refused: {}", error.message))?;
        let met = first["overlaps"]
            .as_array()
            .is_some_and(|overlaps| overlaps.iter().any(|o| o["checkout"]["this_checkout"] == false));
        let budget = Budget::scenario(options, 30, 300, 10.0);
        let samples = sample_in_process(budget, announce, &ctx, &input).await;
        server.stop().await;
        claimant.close().await;
        if !met {
            return Err(format!("the announce did not name the sibling's claim: {first}"));
        }
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples?),
            "an announce of 2 paths meeting the sibling's peer's claim: this board under its lock, the sibling's read over loopback HTTP (probe and `checkouts=this` listing); in-process call from the primary's server".to_string(),
        ))
    }
    .await;
    sibling_server.stop().await;
    result
}

/// `peers.list` (`checkouts: repository`) in-process from the primary's server over
/// [`CHANGED_WORKTREES`] worktrees with changes that nobody serves: their changes and the
/// conflict summary come from the background reading of the repository.
async fn list_with_changes(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
) -> Result<ScenarioRow, String> {
    let (repository, _worktrees) = changed_worktrees(scratch, "list-changes")?;
    let server = InProcessServer::start(repository.root()).await?;
    let result = async {
        let ctx = server.context();
        let capability = majordomus::capabilities::registry()
            .by_id("peers.list")
            .expect("peers.list is registered");
        let input = json!({"checkouts": "repository"});
        // The first listings wait for the background reading; measure once it is there.
        let started = Instant::now();
        let summary = loop {
            let listing = capability
                .call(&ctx, input.clone())
                .await
                .map_err(|error| format!("the listing was refused: {}", error.message))?;
            let with_changes = listing["boards"].as_array().map_or(0, |boards| {
                boards
                    .iter()
                    .filter(|b| b["changes"]["paths"].as_array().is_some_and(|p| !p.is_empty()))
                    .count()
            });
            if with_changes == CHANGED_WORKTREES && listing["conflicts"]["conflicts"].as_array().is_some_and(|c| c.len() == 1) {
                break listing["conflicts"].clone();
            }
            if started.elapsed() > SETUP_BOUND {
                return Err(format!("the listing never carried every worktree's changes: {listing}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let budget = Budget::scenario(options, 30, 300, 10.0);
        let samples = sample_in_process(budget, capability, &ctx, &input).await?;
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples),
            format!(
                "{} boards with changes, {} pairs merged in the background; in-process call from the primary's server",
                CHANGED_WORKTREES, summary["pairs"]
            ),
        ))
    }
    .await;
    server.stop().await;
    result
}
