//! The scenarios under load: memory held by many sessions, and calls per second from many
//! callers at once.

use super::super::clients::{HttpPooling, connect_http};
use super::super::floor::TOKEN as FLOOR_TOKEN;
use super::*;

/// `VmRSS` of a `majordomus serve` before and after [`MEMORY_SESSIONS`] MCP Streamable HTTP
/// sessions are opened and left idle, the server's session limit raised above that in the
/// repository's `majordomus.toml`. An idle session is parked after `session_park_secs`
/// (shortened here to [`MEMORY_PARK_SECS`]): the figure is the resident size once the server
/// says every session is parked, and the note also gives it just after they opened. Each session is opened as any client opens one
/// (`initialize`, then `notifications/initialized`), with plain requests on a few kept-alive
/// connections: thousands of rmcp clients would each keep a task and a stream open in the
/// benchmark, and what is measured is what the server holds per session, not the clients.
pub(super) async fn memory(
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
        let capability = registered("peers.list");
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
pub(super) async fn open_idle_session(
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
pub(super) enum Hammer {
    /// `peers.announce` of one path of the client's own, each client its own MCP Streamable
    /// HTTP session on a kept-alive connection of its own.
    AnnounceMcpHttp,
    /// `GET /api/v1/peers?checkouts=this`, each client a kept-alive connection of its own.
    ListRest,
    /// `leases.acquire` of one lease all clients want, waiting in the call until granted,
    /// then `leases.release`: each client an MCP Streamable HTTP session of its own.
    LeaseTurns,
}

/// How many calls each client makes, untimed, before the clock starts.
pub(super) const THROUGHPUT_WARMUP: usize = 20;

/// `clients` clients calling a `majordomus serve` as fast as it answers, for
/// `--throughput-seconds`: the calls a second of all together, each call's latency, and the
/// server's CPU time and resident memory over the run. The clients are tasks of this
/// process's multi-thread runtime; on a small machine they compete with the server for its
/// cores, which the CPU figure shows. Then the same clients call the floor server's
/// do-nothing tool or route for as long: what these clients reach on this machine when the
/// server does next to nothing, so the row reads as a ratio as the rows do. Last they call
/// the floor answering what majordomus answered the first client, each sending its own
/// request, for as long: what they reach when the server does nothing but take the same
/// requests and carry the same answer.
pub(super) async fn throughput(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    hammer: Hammer,
    clients: usize,
) -> Result<ScenarioRow, String> {
    let label = match hammer {
        Hammer::AnnounceMcpHttp => "throughput-announce",
        Hammer::ListRest => "throughput-list",
        Hammer::LeaseTurns => "throughput-lease",
    };
    let seconds = Duration::from_secs_f64(options.throughput_seconds.max(0.1));
    let registry = majordomus_capabilities::registry();
    let capability = match hammer {
        Hammer::AnnounceMcpHttp => registry.by_id("peers.announce"),
        Hammer::ListRest => registry.by_id("peers.list"),
        Hammer::LeaseTurns => registry.by_id("leases.acquire"),
    }
    .expect("the hammered capabilities are registered");
    let calls: Vec<Call> = (0..clients)
        .map(|n| match hammer {
            Hammer::AnnounceMcpHttp => Call::Capability(
                capability,
                json!({"intent": format!("task {n}"), "scope": [format!("src/agent{n}")]}),
            ),
            Hammer::ListRest => Call::Capability(capability, json!({"checkouts": "this"})),
            Hammer::LeaseTurns => Call::LeaseTurn,
        })
        .collect();

    let kept_calls = kept_floor_calls(&calls);
    let repository = TempRepository::new(scratch, &format!("{label}-{clients}"))?;
    let (server, lease) = ServeProcess::start(scratch, repository.root()).await?;
    let pid = server.pid;
    let measured = async {
        let url = lease.url.clone().ok_or("the ready lease names no URL")?;
        let callers = connect_callers(hammer, clients, &url, &lease.token).await?;
        let carried = match (&calls[0], &callers[0]) {
            (Call::Capability(capability, input), caller) => {
                caller.carried(capability, input).await
            }
            _ => None,
        };
        Ok::<_, String>((drive(callers, calls, seconds, pid).await?, carried))
    }
    .await;
    server.stop().await;
    let (measured, carried) = measured?;

    let floor_server = super::super::setup::FloorHttpServer::start(scratch).await?;
    let floor = async {
        let floor_callers =
            async || connect_callers(hammer, clients, &floor_server.url, FLOOR_TOKEN).await;
        let calls = (0..clients).map(|_| Call::Floor).collect();
        let floor = drive(floor_callers().await?, calls, seconds, floor_server.pid()?).await?;
        // Then the floor answering what a client of majordomus was answered, for as long.
        let Some(carried) = carried else {
            return Ok((floor, None));
        };
        let callers = floor_callers().await?;
        if !callers[0].keep_on_floor(carried).await {
            return Err("the floor server did not keep the answer it was handed".to_string());
        }
        let kept = drive(callers, kept_calls, seconds, floor_server.pid()?).await?;
        Ok((floor, Some(kept)))
    }
    .await;
    floor_server.stop().await;
    let (floor, kept) = floor?;

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
        answer_floor_calls_per_second: kept.as_ref().map(|kept| kept.per_second().round()),
        answer_floor_p99_ms: kept.as_ref().map(|kept| Summary::of(&kept.samples).p99_ms),
    };
    let summary = Summary::of(&measured.samples);
    let what = match hammer {
        Hammer::AnnounceMcpHttp => {
            "`peers.announce` of one path of its own over an MCP Streamable HTTP session on a kept-alive connection"
        }
        Hammer::ListRest => "`GET /api/v1/peers?checkouts=this` on a kept-alive connection",
        Hammer::LeaseTurns => {
            "`majordomus_lease` of the one lease every client wants (`wait_secs` 30, asked again until granted), then `majordomus_release`, over an MCP Streamable HTTP session on a kept-alive connection (one call is one turn: calls/s is grants a second, a call's latency its wait in the queue),"
        }
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
    let note = match (
        throughput.answer_floor_calls_per_second,
        throughput.answer_floor_p99_ms,
    ) {
        (Some(per_second), Some(p99_ms)) => format!(
            "{note}. The floor server answering what majordomus answered the first client: {per_second:.0} calls/s ({:.2} of it), p99 {p99_ms:.3} ms",
            throughput.calls_per_second / per_second.max(1.0),
        ),
        _ => note,
    };
    Ok(ScenarioRow::throughput(scenario, summary, throughput, note))
}

/// What one client of a throughput run calls, again and again.
pub(super) enum Call {
    /// A capability of majordomus with the client's input.
    Capability(&'static Capability, Value),
    /// The floor server's do-nothing tool or route.
    Floor,
    /// The floor server's tool or route answering what it was handed, sent the request a
    /// client of majordomus sends.
    KeptFloor(&'static Capability, Value),
    /// One turn at a lease every client wants: asked for until granted, then released.
    LeaseTurn,
}

impl Call {
    async fn once(&self, caller: &Caller) -> Outcome {
        let outcome = match self {
            Call::Capability(capability, input) => {
                tokio::time::timeout(SETUP_BOUND, caller.call(capability, input)).await
            }
            Call::Floor => tokio::time::timeout(SETUP_BOUND, caller.call_floor()).await,
            Call::KeptFloor(capability, input) => {
                tokio::time::timeout(SETUP_BOUND, caller.call_kept_floor(capability, input)).await
            }
            Call::LeaseTurn => tokio::time::timeout(SETUP_BOUND, lease_turn(caller)).await,
        };
        outcome.unwrap_or_else(|_| Outcome::Failure("no answer within 30 s".into()))
    }

    fn name(&self) -> &'static str {
        match self {
            Call::Capability(capability, _) => capability.id(),
            Call::Floor => "the floor",
            Call::KeptFloor(..) => "the floor answering majordomus's answer",
            Call::LeaseTurn => "a turn at the lease",
        }
    }
}

/// The floor's calls answering what it was handed, one a client of majordomus, each sending
/// that client's own request.
fn kept_floor_calls(calls: &[Call]) -> Vec<Call> {
    calls
        .iter()
        .filter_map(|call| match call {
            Call::Capability(capability, input) => Some(Call::KeptFloor(capability, input.clone())),
            _ => None,
        })
        .collect()
}

/// The lease every client of a contended run wants.
const CONTENDED: &str = "bench-contended";

/// One turn at [`CONTENDED`]: asked for (waiting in the call) until granted, then released.
async fn lease_turn(caller: &Caller) -> Outcome {
    loop {
        match caller
            .tool_answer(
                "majordomus_lease",
                json!({"name": CONTENDED, "wait_secs": 30}),
            )
            .await
        {
            Ok(answer) if answer["state"] == "granted" => break,
            Ok(_) => {}
            Err(outcome) => return outcome,
        }
    }
    match caller
        .tool_answer("majordomus_release", json!({"name": CONTENDED}))
        .await
    {
        Ok(_) => Outcome::Answer,
        Err(outcome) => outcome,
    }
}

/// `clients` clients of `url`, each on a kept-alive connection of its own: an MCP Streamable
/// HTTP session each, or a REST client each.
pub(super) async fn connect_callers(
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
            Hammer::AnnounceMcpHttp | Hammer::LeaseTurns => Caller::Mcp(
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
pub(super) struct Driven {
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
pub(super) async fn drive(
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
