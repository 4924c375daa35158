//! The run: set up, measure every selected row on its transport, run the scenarios, report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use super::clients::{
    Caller, HttpPooling, Outcome, connect_http, connect_kept_alive, http_client, registered,
    serve_child, spawn_mcp,
};
use super::report::{Report, Row, ScenarioRow};
use super::sampling::{CALL_BOUND, sample_calls};
use super::setup::{
    FloorHttpServer, InProcessServer, Scratch, ServeProcess, TempRepository, wait_gone, wait_ready,
};
use super::stats::Summary;
use super::{
    BenchTransport, Budget, FLOOR, Options, RowKey, SCENARIOS, Scenario, Target, expects_refusal,
    floor_key, floors_for, planned_rows, scenarios, select,
};
use majordomus_core::registry::Capability;
use majordomus_domain::sync::LockExt;

pub(super) async fn run(options: &Options) -> Result<Report, String> {
    let registry = majordomus_capabilities::registry();
    let rows = select(planned_rows(registry), options.filter.as_deref());
    let scenarios: Vec<Scenario> = if options.scenarios {
        SCENARIOS
            .iter()
            .filter(|s| {
                options
                    .filter
                    .as_deref()
                    .is_none_or(|text| s.name.contains(text))
            })
            .copied()
            .collect()
    } else {
        Vec::new()
    };
    let floors = floors_for(&rows, options.filter.as_deref());
    if rows.is_empty() && floors.is_empty() && scenarios.is_empty() {
        return Err(format!(
            "nothing to measure: no row{} matches the filter `{}`; rows are named capability/transport/case, such as `peers.list/mcp-http/this`",
            if options.scenarios {
                " or scenario"
            } else {
                ""
            },
            options.filter.as_deref().unwrap_or("")
        ));
    }
    // Before the clock and the progress bar: it may build the executable first.
    let explicit = options.majordomus.clone();
    let majordomus =
        tokio::task::spawn_blocking(move || super::executable::locate(explicit.as_deref()))
            .await
            .map_err(|error| format!("finding `majordomus` failed: {error}"))??;
    let started_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let clock = Instant::now();
    let progress = ProgressBar::new((floors.len() + rows.len() + scenarios.len()) as u64);
    progress.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    let scratch = Scratch::new(&majordomus)?;
    let plan = Plan {
        floors: &floors,
        rows: &rows,
        scenarios: &scenarios,
    };
    let outcome = measure_all(options, &scratch, plan, &progress).await;
    progress.finish_and_clear();
    let (mut measured, setup, scenario_rows) = match outcome {
        Ok(done) => done,
        Err(message) if scratch.has_logs() => {
            let kept = scratch.keep();
            return Err(format!(
                "{message}\n(the logs of the processes the benchmark started are in {})",
                kept.join("logs").display()
            ));
        }
        Err(message) => return Err(message),
    };
    super::report::judge(&mut measured);
    Ok(Report {
        schema: "majordomus-bench/v1",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        started_at,
        duration_seconds: (clock.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        machine: super::Machine::describe(),
        setup,
        rows: measured,
        scenarios: scenario_rows,
        baseline: None,
    })
}

type Measured = (Vec<Row>, String, Vec<ScenarioRow>);

/// What a run measures: the floors, the capability rows, the scenarios.
#[derive(Clone, Copy)]
struct Plan<'a> {
    floors: &'a [BenchTransport],
    rows: &'a [RowKey],
    scenarios: &'a [Scenario],
}

async fn measure_all(
    options: &Options,
    scratch: &Scratch,
    plan: Plan<'_>,
    progress: &ProgressBar,
) -> Result<Measured, String> {
    let Plan {
        floors,
        rows,
        scenarios,
    } = plan;
    let mut measured: BTreeMap<RowKey, Row> = BTreeMap::new();
    let mut setup = String::from("no capability row was selected");
    let budget = Budget::rows(options);
    let slow = Slowdowns(&options.slow_rows);
    let floor_servers = FloorServers::start(scratch, floors, progress).await?;
    let floor_rows = measure_floors(&floor_servers, budget, slow, progress).await;
    if !rows.is_empty() {
        let fixture = Fixture::prepare(scratch, options.repo.as_deref(), progress).await?;
        setup = fixture.description.clone();
        let pinged = Mutex::new(Instant::now());
        let run = RowRun {
            budget,
            slow,
            progress,
            recipient: fixture.recipient.as_ref().map(|caller| Recipient {
                caller,
                pinged: &pinged,
            }),
        };
        measure_in_process(&fixture.dir, rows, run, &mut measured).await?;
        measure_processes(
            scratch,
            &fixture.dir,
            rows,
            run,
            &floor_servers,
            &mut measured,
        )
        .await?;
        fixture.stop().await;
    }
    floor_servers.stop().await;
    let mut scenario_rows = Vec::new();
    for scenario in scenarios {
        progress.set_message(scenario.name);
        scenario_rows.push(scenarios::run(scenario, scratch, options, progress).await);
        progress.inc(1);
    }
    let order = planned_rows(majordomus_capabilities::registry());
    let rows = floor_rows
        .into_iter()
        .chain(order.into_iter().filter_map(|key| measured.remove(&key)))
        .collect();
    Ok((rows, setup, scenario_rows))
}

/// The `--slow-row` delays, by row key.
#[derive(Clone, Copy)]
struct Slowdowns<'a>(&'a [(String, Duration)]);

impl Slowdowns<'_> {
    fn of(&self, key: &str) -> Option<Duration> {
        self.0
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, delay)| *delay)
    }
}

/// How the capability rows are measured: their budget, the test's slowdowns, the progress,
/// and the fixture's recipient session, kept from going idle.
#[derive(Clone, Copy)]
struct RowRun<'a> {
    budget: Budget,
    slow: Slowdowns<'a>,
    progress: &'a ProgressBar,
    recipient: Option<Recipient<'a>>,
}

/// The fixture's recipient session, and when it last pinged its server.
#[derive(Clone, Copy)]
struct Recipient<'a> {
    caller: &'a Caller,
    pinged: &'a Mutex<Instant>,
}

/// How often the recipient pings its server: well within the server's idle timeout (90 s by
/// default), after which it would drop the session.
const RECIPIENT_PING_EVERY: Duration = Duration::from_secs(30);

/// How long the rows wait, untimed, after the recipient pinged. The ping brings a parked
/// session back, which changes the sibling's board, and until the measured server has read
/// that board again it reads it live: the first calls of the next row would be measured
/// reading it.
const AFTER_PING: Duration = Duration::from_millis(200);

impl RowRun<'_> {
    /// Before a row, untimed, the recipient pings its server when it last did
    /// [`RECIPIENT_PING_EVERY`] ago: a full run reaches the messages rows later than the
    /// server's idle timeout, which would then measure a refusal. A ping is no tool call, so
    /// the messages sent to the recipient stay queued and the mailbox is not rewritten.
    async fn keep_recipient(&self) {
        let Some(recipient) = self.recipient else {
            return;
        };
        if recipient.pinged.lock_or_recover().elapsed() < RECIPIENT_PING_EVERY {
            return;
        }
        recipient.caller.ping().await;
        *recipient.pinged.lock_or_recover() = Instant::now();
        tokio::time::sleep(AFTER_PING).await;
    }
}

/// The floor servers of a run and a client of each transport on them: started before the
/// floor rows and kept through the capability rows, whose calls alternate with calls of
/// their transport's floor (see [`sample_calls`]).
struct FloorServers {
    /// rmcp's child-process client on `majordomus-dev floor-server --stdio`, and its pid.
    stdio: Option<(Caller, u32)>,
    http: Option<FloorHttpServer>,
    /// By transport: rmcp's default Streamable HTTP client and the kept-alive reqwest client
    /// of REST, on the HTTP floor server.
    over_http: Vec<(BenchTransport, Caller)>,
}

impl FloorServers {
    /// Starts the floor servers `transports` need, each with the client the rows of that
    /// transport use.
    async fn start(
        scratch: &Scratch,
        transports: &[BenchTransport],
        progress: &ProgressBar,
    ) -> Result<FloorServers, String> {
        let mut floors = FloorServers {
            stdio: None,
            http: None,
            over_http: Vec::new(),
        };
        if transports.is_empty() {
            return Ok(floors);
        }
        if transports.contains(&BenchTransport::McpStdio) {
            progress.set_message("starting the stdio floor server");
            let mut command = tokio::process::Command::new(super::floor::executable()?);
            command.args(["floor-server", "--stdio"]);
            let (service, pid) = serve_child(
                command,
                "the stdio floor server",
                "majordomus-bench-floor",
                scratch.log("floor-stdio"),
            )
            .await?;
            floors.stdio = Some((Caller::Mcp(service), pid));
        }
        let over_http: Vec<BenchTransport> = transports
            .iter()
            .copied()
            .filter(|&t| t != BenchTransport::McpStdio)
            .collect();
        if over_http.is_empty() {
            return Ok(floors);
        }
        progress.set_message("starting the HTTP floor server");
        let server = FloorHttpServer::start(scratch).await?;
        let token = super::floor::TOKEN;
        let http = http_client();
        for transport in over_http {
            let caller = match transport {
                BenchTransport::McpHttp => Caller::Mcp(
                    connect_http(
                        &http,
                        HttpPooling::RmcpDefault,
                        &server.url,
                        token,
                        "majordomus-bench-floor",
                    )
                    .await?,
                ),
                _ => Caller::Rest {
                    http: http.clone(),
                    base: server.url.clone(),
                    token: token.into(),
                },
            };
            floors.over_http.push((transport, caller));
        }
        floors.http = Some(server);
        Ok(floors)
    }

    /// The client of `transport`'s floor (for a bridge row, stdio's: the transport its
    /// client speaks), if it was started.
    fn caller(&self, transport: BenchTransport) -> Option<&Caller> {
        match transport.floor()? {
            BenchTransport::McpStdio => self.stdio.as_ref().map(|(caller, _)| caller),
            floor => self
                .over_http
                .iter()
                .find(|(t, _)| *t == floor)
                .map(|(_, caller)| caller),
        }
    }

    /// Every floor transport started, in the order the floor rows are listed.
    fn transports(&self) -> Vec<BenchTransport> {
        self.stdio
            .iter()
            .map(|_| BenchTransport::McpStdio)
            .chain(self.over_http.iter().map(|(t, _)| *t))
            .collect()
    }

    async fn stop(self) {
        if let Some((caller, pid)) = self.stdio {
            caller.close().await;
            wait_gone(pid, Duration::from_secs(10)).await;
        }
        for (_, caller) in self.over_http {
            caller.close().await;
        }
        if let Some(server) = self.http {
            server.stop().await;
        }
    }
}

/// The floor rows: each transport's floor measured on its own, before the capability rows.
async fn measure_floors(
    floors: &FloorServers,
    budget: Budget,
    slow: Slowdowns<'_>,
    progress: &ProgressBar,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for transport in floors.transports() {
        if let Some(caller) = floors.caller(transport) {
            rows.push(measure_floor(transport, caller, budget, slow, progress).await);
        }
    }
    rows
}

/// Measures one floor: the floor server's do-nothing tool, or its route.
async fn measure_floor(
    transport: BenchTransport,
    caller: &Caller,
    budget: Budget,
    slow: Slowdowns<'_>,
    progress: &ProgressBar,
) -> Row {
    let key = floor_key(transport);
    progress.set_message(key.clone());
    let sampled = sample_calls(
        budget,
        slow.of(&key),
        None,
        None,
        async || {},
        async || caller.call_floor().await,
    )
    .await;
    progress.inc(1);
    sampled.row(Row {
        key,
        capability: FLOOR,
        transport,
        case: super::floor::TOOL,
        input: Value::Object(Default::default()),
        expected: "answer",
        outcome: "answer",
        outcomes: BTreeMap::new(),
        detail: None,
        summary: Summary::default(),
        target: Target::Reference,
        target_met: None,
        floor_ratio: None,
        floor_p50_ms: None,
        added_floor_ratio: None,
        answer_floor_p50_ms: None,
        answer_floor_ratio: None,
    })
}

/// The checkout the rows are measured in, and the siblings that make its `repository` case a
/// real gather.
struct Fixture {
    dir: PathBuf,
    description: String,
    sibling: Option<ServeProcess>,
    /// A session on the live sibling's board claiming [`RECIPIENT_CLAIM`], so that a message
    /// to a path in it is delivered to somebody and measured as a send, not a refusal.
    recipient: Option<Caller>,
}

/// What the fixture's recipient session claims: the place `messages.send`'s benchmark case
/// writes to and the hooks' file lies in (the one live claim they meet), and nothing a
/// measured row announces.
const RECIPIENT_CLAIM: &str = "docs";

impl Fixture {
    async fn prepare(
        scratch: &Scratch,
        repo: Option<&Path>,
        progress: &ProgressBar,
    ) -> Result<Fixture, String> {
        if let Some(dir) = repo {
            let site = majordomus_core::context::Site::open(dir)?;
            return Ok(Fixture {
                dir: site.checkout.root.clone(),
                description: format!(
                    "the checkout {} as it is (--repo); rows measured there",
                    site.checkout.root.display()
                ),
                sibling: None,
                recipient: None,
            });
        }
        progress.set_message("setting up a temporary repository");
        let repository = TempRepository::new(scratch, "rows")?;
        let live = repository.add_worktree("sibling-live")?;
        repository.add_worktree("sibling-idle")?;
        let (sibling, lease) = ServeProcess::start(scratch, &live).await?;
        let recipient = match Self::recipient(&lease).await {
            Ok(recipient) => recipient,
            Err(error) => {
                sibling.stop().await;
                return Err(error);
            }
        };
        Ok(Fixture {
            dir: repository.root().to_path_buf(),
            description: format!(
                "a temporary repository (one commit) with two linked worktrees, one served by its own `majordomus serve`, where one session claims `{RECIPIENT_CLAIM}`, and one with no server; every row measured in the primary checkout, so a `repository` case gathers three boards: its own from memory, the live sibling's over HTTP (probe + read) and the idle sibling's lease (absent)"
            ),
            sibling: Some(sibling),
            recipient: Some(recipient),
        })
    }

    /// Opens a session on the live sibling's server and claims [`RECIPIENT_CLAIM`] there.
    async fn recipient(lease: &majordomus_checkout::Lease) -> Result<Caller, String> {
        let url = lease
            .url
            .as_deref()
            .ok_or("the sibling's lease names no URL")?;
        let session = connect_kept_alive(url, &lease.token, "majordomus-bench-recipient").await?;
        let recipient = Caller::Mcp(session);
        let claim = serde_json::json!({
            "intent": "receive the benchmark's messages",
            "scope": [RECIPIENT_CLAIM],
        });
        match recipient.call(registered("peers.announce"), &claim).await {
            Outcome::Answer => Ok(recipient),
            outcome => {
                recipient.close().await;
                Err(format!(
                    "the sibling's session could not claim `{RECIPIENT_CLAIM}`: {}",
                    outcome.detail().unwrap_or("")
                ))
            }
        }
    }

    async fn stop(self) {
        if let Some(recipient) = self.recipient {
            recipient.close().await;
        }
        if let Some(sibling) = self.sibling {
            sibling.stop().await;
        }
    }
}

/// The handler alone: a server elected and started inside this process, called through
/// `Capability::call` with a caller attached to its board.
async fn measure_in_process(
    dir: &Path,
    rows: &[RowKey],
    run: RowRun<'_>,
    measured: &mut BTreeMap<RowKey, Row>,
) -> Result<(), String> {
    let progress = run.progress;
    let selected: Vec<&RowKey> = rows
        .iter()
        .filter(|row| row.transport == BenchTransport::InProcess)
        .collect();
    if selected.is_empty() {
        return Ok(());
    }
    progress.set_message("starting a server in this process");
    let server = InProcessServer::start(dir).await?;
    let caller = Caller::InProcess(server.context());
    for key in selected {
        progress.set_message(key.name());
        run.keep_recipient().await;
        let row = measure_row(key, &caller, None, run.budget, run.slow.of(&key.name())).await;
        measured.insert(key.clone(), row);
        progress.inc(1);
    }
    drop(caller);
    server.stop().await;
    super::setup::wait_no_lease(dir).await
}

/// The four transports that reach a server process: `majordomus mcp` over stdio as the first
/// process in the checkout (it serves), a Streamable HTTP session with it, a second
/// `majordomus mcp` (it bridges), and REST.
async fn measure_processes(
    scratch: &Scratch,
    dir: &Path,
    rows: &[RowKey],
    run: RowRun<'_>,
    floors: &FloorServers,
    measured: &mut BTreeMap<RowKey, Row>,
) -> Result<(), String> {
    let progress = run.progress;
    let wants = |transport: BenchTransport| rows.iter().any(|row| row.transport == transport);
    if !BenchTransport::ALL
        .iter()
        .any(|&t| t != BenchTransport::InProcess && wants(t))
    {
        return Ok(());
    }
    progress.set_message("starting `majordomus mcp` (it serves the checkout)");
    let (service, server_pid) = spawn_mcp(
        scratch.exe(),
        dir,
        "majordomus-bench-stdio",
        scratch.log("mcp-serving"),
    )
    .await?;
    let lease = wait_ready(dir).await?;
    if lease.pid != server_pid {
        let _ = service.cancel().await;
        return Err(format!(
            "the first `majordomus mcp` in {} did not become its server (process {} serves it)",
            dir.display(),
            lease.pid
        ));
    }
    let url = lease.url.clone().ok_or("the ready lease names no URL")?;
    let http = http_client();
    let mut callers: Vec<(BenchTransport, Caller, Option<u32>)> = vec![(
        BenchTransport::McpStdio,
        Caller::Mcp(service),
        Some(server_pid),
    )];
    if wants(BenchTransport::McpHttp) {
        let session = connect_http(
            &http,
            HttpPooling::RmcpDefault,
            &url,
            &lease.token,
            "majordomus-bench-http",
        )
        .await?;
        callers.push((BenchTransport::McpHttp, Caller::Mcp(session), None));
    }
    if wants(BenchTransport::McpBridge) {
        progress.set_message("starting a second `majordomus mcp` (it bridges)");
        let (bridge, pid) = spawn_mcp(
            scratch.exe(),
            dir,
            "majordomus-bench-bridge",
            scratch.log("mcp-bridge"),
        )
        .await?;
        callers.push((BenchTransport::McpBridge, Caller::Mcp(bridge), Some(pid)));
    }
    if wants(BenchTransport::Rest) {
        callers.push((
            BenchTransport::Rest,
            Caller::Rest {
                http: http.clone(),
                base: url.clone(),
                token: lease.token.clone(),
            },
            None,
        ));
    }
    // In planned order, capability by capability, so every transport of a row meets the board
    // in the same state (the announces of one capability do not precede the listings of
    // another on some transports only).
    for key in rows {
        let Some((_, caller, _)) = callers.iter().find(|(t, _, _)| *t == key.transport) else {
            continue;
        };
        progress.set_message(key.name());
        run.keep_recipient().await;
        let floor = floors.caller(key.transport);
        let row = measure_row(key, caller, floor, run.budget, run.slow.of(&key.name())).await;
        measured.insert(key.clone(), row);
        progress.inc(1);
    }
    // Close in reverse: the bridge and the HTTP session leave the board first, then the
    // serving process's own client, after which it has no peer left and stops.
    let mut pids = Vec::new();
    while let Some((_, caller, pid)) = callers.pop() {
        caller.close().await;
        pids.extend(pid);
    }
    for pid in pids {
        wait_gone(pid, Duration::from_secs(10)).await;
    }
    Ok(())
}

/// The call, if any, that must come before each measured one so that it measures its work and
/// not a refusal: detaching needs an episode attached first, a release a lease held; and a
/// lease asked for is a new grant, not its holder's renewal, once the last one is released.
/// Untimed.
fn preparation(capability: &Capability) -> Option<(&'static Capability, Value)> {
    let id = match capability.id() {
        "episodes.detach" => "episodes.attach",
        "leases.release" => "leases.acquire",
        "leases.acquire" => "leases.release",
        _ => return None,
    };
    let prepare = majordomus_capabilities::registry().by_id(id)?;
    let (_, input) = prepare.bench_cases().into_iter().next()?;
    Some((prepare, input))
}

/// The calls that must stand before a row's first, made once and untimed, and how many:
/// a listing of one's messages lists a full mailbox of the caller's own sends on every
/// transport. Without them what a caller found depended on which transport had sent last,
/// since the mailbox keeps only the latest messages: an MCP session listed none of its own,
/// and REST, asking as a person, listed all of them.
fn filling(capability: &Capability) -> Option<(&'static Capability, Value, usize)> {
    let (id, times) = match capability.id() {
        "messages.list" => ("messages.send", majordomus_domain::limits::MESSAGES_KEPT),
        _ => return None,
    };
    let fill = majordomus_capabilities::registry().by_id(id)?;
    let (_, input) = fill.bench_cases().into_iter().next()?;
    Some((fill, input, times))
}

/// Measures one row: warm-up, then iterations until the budget says stop; `slow` is added to
/// every measured call.
///
/// With a floor, the floor server is first handed what one call of the row answered, and
/// every other floor call sends it the row's own request and asks for that answer back: a
/// server that does nothing but take the row's request and carry its answer, so the row can
/// be read against what its bytes cost the transport and its client apart from what
/// majordomus does with them.
pub(crate) async fn measure_row(
    key: &RowKey,
    caller: &Caller,
    floor: Option<&Caller>,
    budget: Budget,
    slow: Option<Duration>,
) -> Row {
    let capability = majordomus_capabilities::registry()
        .by_id(key.capability)
        .expect("rows are planned from the registry");
    let input = capability
        .bench_cases()
        .into_iter()
        .find(|(case, _)| *case == key.case)
        .map(|(_, input)| input)
        .expect("rows are planned from the declared cases");
    if let Some((fill, fill_input, times)) = filling(capability) {
        for _ in 0..times {
            let _ = tokio::time::timeout(CALL_BOUND, caller.call(fill, &fill_input)).await;
        }
    }
    let prepare = preparation(capability);
    let prepared = async || {
        if let Some((prepare, input)) = &prepare {
            let _ = tokio::time::timeout(CALL_BOUND, caller.call(prepare, input)).await;
        }
    };
    let kept = match floor {
        Some(floor) => {
            prepared().await;
            let carried = tokio::time::timeout(CALL_BOUND, caller.carried(capability, &input));
            match carried.await {
                Ok(Some(carried)) => floor.keep_on_floor(carried).await,
                _ => false,
            }
        }
        None => false,
    };
    let kept = kept.then_some((capability, &input));
    let sampled = sample_calls(budget, slow, floor, kept, prepared, async || {
        caller.call(capability, &input).await
    })
    .await;
    let expected = if expects_refusal(capability, &input, key.transport) {
        "refusal"
    } else {
        "answer"
    };
    sampled.row(Row {
        key: key.name(),
        capability: key.capability,
        transport: key.transport,
        case: key.case,
        input,
        expected,
        outcome: expected,
        outcomes: BTreeMap::new(),
        detail: None,
        summary: Summary::default(),
        target: key.transport.target(),
        target_met: None,
        floor_ratio: None,
        floor_p50_ms: None,
        added_floor_ratio: None,
        answer_floor_p50_ms: None,
        answer_floor_ratio: None,
    })
}
