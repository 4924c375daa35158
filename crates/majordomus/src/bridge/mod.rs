//! The bridge: what `majordomus mcp` runs for its client, whichever process serves.
//!
//! It is an MCP server on its own stdio. Behind it is an *upstream*: this process's own server
//! when it won the election (the client is then a peer of that server's board directly), or
//! the checkout's server over `/mcp`, in a session opened with the client's own `clientInfo`
//! so the board shows the real client rather than the bridge.
//!
//! Either upstream can be lost: a remote server dies, forgets the session, goes silent, or
//! loses its lease; this process's own server loses its lease to a process that took over
//! while this one was frozen. The bridge then elects again, re-attaches to whoever serves now
//! or becomes the server itself, and replays the claims and the episode it remembers, so the
//! worker never silently drops off the board and its client never has to initialise again.
//! A server that stepped down keeps running here only until its last connection has moved.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use majordomus_checkout::ancestry::{self, ProcessStamp};
use majordomus_checkout::{Lease, ProbeAnswer};
use majordomus_domain::peers::Transport;
use majordomus_domain::sync::LockExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientConfig, ClientRequest,
    ContentBlock, InitializeRequestParams, JsonObject, ListToolsRequest, ListToolsResult,
    PaginatedRequestParams, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData as McpError, RoleClient, RoleServer, ServiceExt};
use serde_json::Value;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use majordomus_capabilities::episodes::{EpisodesAttach, EpisodesDetach};
use majordomus_capabilities::peers::PeersAnnounce;
use majordomus_core::context::Site;
use majordomus_core::registry::Operation;
use majordomus_core::survey;
use majordomus_server::Worker;
use majordomus_server::mcp::{
    BRIDGED_META_KEY, CLIENT_PROCESS_META_KEY, CLIENT_SESSION_META_KEY, McpSession,
    WORKER_META_KEY, tool_list,
};
use majordomus_server::run::{
    Lifetime, Outcome, Running, Silence, StartError, elect_and_start, elect_and_start_after,
};
use majordomus_server::stops::StopRequests;

mod failure;
mod handler;

pub use failure::{Failure, Recovery, recovery};
use failure::{Loss, Reach, Unanswered, unanswered};
use handler::SharedBridge;

/// How many times one call is retried through a failover before the client is told.
const MAX_FAILOVERS_PER_CALL: usize = 3;

/// How many elections establishing an upstream may take before the client is told.
const ESTABLISH_ATTEMPTS: usize = 20;

/// The longest a call waits on a server that keeps answering its probe but not the call.
/// No capability runs anywhere near this long; it only bounds a wedged server.
const CALL_LIMIT: Duration = Duration::from_secs(60);

/// How long a leaving bridge gives its server to hear that the session ended: long enough
/// for a local round trip, short enough that the client waiting for the process to exit
/// does not have to signal it twice.
const GOODBYE_PATIENCE: Duration = Duration::from_millis(40);

/// The environment variables in which a client tells the MCP server it starts which
/// conversation it runs for (Claude Code; Gemini CLI gives its hooks the same name).
const CLIENT_SESSION_VARIABLES: [&str; 2] = ["CLAUDE_CODE_SESSION_ID", "GEMINI_SESSION_ID"];

/// The conversation this process's client runs for, when its environment says.
fn client_session_from_environment() -> Option<String> {
    CLIENT_SESSION_VARIABLES
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|id| !id.trim().is_empty())
}

/// Where calls go.
#[derive(Clone)]
enum Upstream {
    /// This process serves the checkout; the client is a peer on its own board.
    Local(Arc<McpSession>),
    /// Another process serves it, reached over `/mcp`.
    Remote { peer: Peer<RoleClient>, url: String },
}

/// The current upstream, with a generation so a failover happens once however many calls
/// notice the same loss.
struct Connection {
    upstream: Upstream,
    generation: u64,
    /// The remote session, kept to close it (DELETE) when the bridge is done with it.
    service: Option<RunningService<RoleClient, ClientConfig>>,
}

impl Connection {
    /// Lets the old session go without keeping anyone waiting: its server is probably gone,
    /// and if not, the DELETE tells it to let the peer go at once.
    fn close_in_background(self) {
        if let Some(service) = self.service {
            tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(1), service.cancel()).await;
            });
        }
    }
}

/// What the bridge replays after a failover: the last accepted announcement per claim name,
/// in the order the names were first used, and the episode it attached.
#[derive(Default)]
struct Memory {
    claims: Vec<(Option<String>, JsonObject)>,
    episode: Option<JsonObject>,
}

/// The bridge: one per `majordomus mcp` process.
pub struct Bridge {
    site: Arc<Site>,
    /// This bridge's identity for its whole life, sent in every `initialize` it makes.
    worker: String,
    client: OnceLock<InitializeRequestParams>,
    connection: Mutex<Option<Connection>>,
    /// The server this process runs while it holds the lease.
    serving: Mutex<Option<Running>>,
    /// Servers of this process that lost their lease, finishing until their last connection
    /// has moved.
    retiring: std::sync::Mutex<Vec<JoinHandle<()>>>,
    memory: std::sync::Mutex<Memory>,
    generations: AtomicU64,
    /// The lease of the server found at start, when this process lost the first election.
    first_lease: std::sync::Mutex<Option<Lease>>,
    stops: StopRequests,
    /// The client's conversation id, from the environment or from Codex's turn metadata;
    /// every upstream is told it, so the client's hooks and this connection are one peer.
    client_session: std::sync::Mutex<Option<String>>,
    /// This process's parent, which is its client: every upstream is told it, so the
    /// client's hooks (which run under the same process) join this connection's peer.
    client_process: Option<ProcessStamp>,
}

/// Why the bridge has no upstream for its client.
#[derive(Debug, thiserror::Error)]
enum Unestablished {
    #[error("the client has not initialised yet")]
    NotInitialised,
    #[error("this `majordomus mcp` is stopping")]
    Stopping,
    #[error("no server could be reached or started for this checkout")]
    NoServer,
    #[error(transparent)]
    Start(#[from] StartError),
}

/// Why a session with the server a lease names could not be opened.
#[derive(Debug, thiserror::Error)]
enum Unconnected {
    #[error("the lease names no address")]
    NoAddress,
    #[error("could not open a session with {url}: {detail}")]
    Refused { url: String, detail: String },
    #[error("{url} did not open a session within {} ms", patience.as_millis())]
    Silent { url: String, patience: Duration },
}

impl Bridge {
    /// Runs `majordomus mcp`: elects, serves the client on stdio until it leaves or the
    /// process is asked to go, then either closes its remote session or, when this process
    /// serves, keeps serving until the last bridged peer has gone or a stop request hands
    /// them over.
    pub async fn run(site: Arc<Site>, stops: StopRequests) -> Result<(), StartError> {
        let bridge = Arc::new(Bridge {
            worker: worker_identity(),
            site: site.clone(),
            client: OnceLock::new(),
            connection: Mutex::new(None),
            serving: Mutex::new(None),
            retiring: std::sync::Mutex::new(Vec::new()),
            memory: Default::default(),
            generations: AtomicU64::new(0),
            first_lease: std::sync::Mutex::new(None),
            stops: stops.clone(),
            client_session: std::sync::Mutex::new(client_session_from_environment()),
            client_process: ancestry::parent(),
        });
        // Elect at once, so the checkout has its server before the client says anything.
        match elect_and_start(&site, &stops).await? {
            Outcome::Started(running) => *bridge.serving.lock().await = Some(running),
            Outcome::Found(lease) => *bridge.first_lease.lock_or_recover() = Some(*lease),
        }
        let keepalive = tokio::spawn(keep_alive(bridge.clone()));
        let (input, output) = majordomus_core::stdio_front::process_stdio();
        let transport = majordomus_core::stdio_front::front(input, output);
        let client_served = async {
            match SharedBridge(bridge.clone()).serve(transport).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(error) => tracing::info!(%error, "the client did not complete initialize"),
            }
        };
        tokio::select! {
            _ = client_served => {}
            _ = stops.requested() => {}
        }
        keepalive.abort();
        bridge.finish().await;
        Ok(())
    }

    /// The client has gone, or the process was asked to go. A client that left leaves the
    /// board at once, and this process, if it serves, serves on until the last bridged peer
    /// has left too (or a stop request hands them over). On a stop request the client's own
    /// peer stays until its server has stopped, so its episode ends the way that stop says
    /// rather than by a detach first.
    async fn finish(&self) {
        let mut connection = self.connection.lock().await.take();
        if let Some(service) = connection.as_mut().and_then(|c| c.service.take()) {
            let _ = tokio::time::timeout(GOODBYE_PATIENCE, service.cancel()).await;
        }
        if !self.stops.is_requested() {
            drop(connection.take());
        }
        let serving = self.serving.lock().await.take();
        let retiring: Vec<JoinHandle<()>> = std::mem::take(&mut *self.retiring.lock_or_recover());
        let own = async {
            if let Some(running) = serving {
                running.run(Lifetime::WhileConnected, &self.stops).await;
            }
        };
        tokio::join!(own, futures::future::join_all(retiring));
        drop(connection);
    }

    /// This process's own server while it still holds the lease. One that lost it is
    /// retired: it finishes in the background once its last connection has moved.
    async fn own_server(&self) -> Option<Arc<majordomus_server::ServerState>> {
        let mut serving = self.serving.lock().await;
        let state = serving.as_ref()?.state.clone();
        if state.recheck_lease().await {
            return Some(state);
        }
        let retired = serving.take().expect("checked above");
        tracing::info!("this process's server lost its lease; its client moves to the new one");
        let stops = self.stops.clone();
        let finishing =
            tokio::spawn(async move { retired.run(Lifetime::WhileConnected, &stops).await });
        let mut retiring = self.retiring.lock_or_recover();
        retiring.retain(|finishing| !finishing.is_finished());
        retiring.push(finishing);
        None
    }

    /// Opens an upstream for the client: this process's own server, the server found at start,
    /// or — after a loss — whoever the next election says.
    async fn establish(&self, mut silence: Option<Silence>) -> Result<Connection, Unestablished> {
        let client = self.client.get().ok_or(Unestablished::NotInitialised)?;
        let generation = self.generations.fetch_add(1, Ordering::SeqCst) + 1;
        for _ in 0..ESTABLISH_ATTEMPTS {
            // A process on its way out starts no server it would leave behind.
            if self.stops.is_requested() {
                return Err(Unestablished::Stopping);
            }
            if let Some(state) = self.own_server().await {
                let session = Arc::new(McpSession::new(state, Transport::Stdio));
                session.join(
                    &client.client_info,
                    Some(Worker {
                        identity: &self.worker,
                        bridged: false,
                    }),
                    self.client_process,
                );
                session
                    .name_client(self.client_session().as_deref(), self.client_process)
                    .await;
                return Ok(Connection {
                    upstream: Upstream::Local(session),
                    generation,
                    service: None,
                });
            }
            let found = self.first_lease.lock_or_recover().take();
            let lease = match found {
                Some(lease) => lease,
                None => match elect_and_start_after(&self.site, silence.take(), &self.stops).await?
                {
                    Outcome::Started(running) => {
                        tracing::info!("this bridge now serves the checkout");
                        *self.serving.lock().await = Some(running);
                        continue;
                    }
                    Outcome::Found(lease) => *lease,
                },
            };
            match self.connect(client, &lease).await {
                Ok((service, url)) => {
                    return Ok(Connection {
                        upstream: Upstream::Remote {
                            peer: service.peer().clone(),
                            url,
                        },
                        generation,
                        service: Some(service),
                    });
                }
                Err(error) => {
                    tracing::info!(%error, "the server found is not answering; electing again");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        Err(Unestablished::NoServer)
    }

    /// Opens a session with the server `lease` names, as the client, naming this worker and
    /// saying that it is bridged.
    async fn connect(
        &self,
        client: &InitializeRequestParams,
        lease: &Lease,
    ) -> Result<(RunningService<RoleClient, ClientConfig>, String), Unconnected> {
        let url = lease.url.clone().ok_or(Unconnected::NoAddress)?;
        let config = StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp"))
            .auth_header(lease.token.clone())
            .reinit_on_expired_session(false);
        let transport = StreamableHttpClientTransport::from_config(config);
        let mut introduction = client.clone();
        let mut meta = introduction.meta.take().unwrap_or_default();
        meta.0
            .0
            .insert(WORKER_META_KEY.into(), Value::String(self.worker.clone()));
        meta.0.0.insert(BRIDGED_META_KEY.into(), Value::Bool(true));
        if let Some(id) = self.client_session() {
            meta.0
                .0
                .insert(CLIENT_SESSION_META_KEY.into(), Value::String(id));
        }
        if let Some(stamp) = self.client_process {
            meta.0.0.insert(
                CLIENT_PROCESS_META_KEY.into(),
                serde_json::json!({ "pid": stamp.pid, "start": stamp.start }),
            );
        }
        introduction.meta = Some(meta);
        let patience = self.site.config.timings.busy_grace() + self.site.probe_timeout();
        match tokio::time::timeout(patience, introduction.serve(transport)).await {
            Ok(Ok(service)) => Ok((service, url)),
            Ok(Err(error)) => Err(Unconnected::Refused {
                url,
                detail: error.to_string(),
            }),
            Err(_) => Err(Unconnected::Silent { url, patience }),
        }
    }

    /// A client that speaks the session-less revision of the protocol never sends `initialize`:
    /// it says who it is in every request's `_meta`, which then stands in for it.
    fn introduce(&self, context: &RequestContext<RoleServer>) {
        if self.client.get().is_some() {
            return;
        }
        if let Some(client_info) = context.client_info() {
            let capabilities = context.client_capabilities().unwrap_or_default();
            let _ = self
                .client
                .set(InitializeRequestParams::new(capabilities, client_info));
        }
    }

    /// The client's conversation id, once known.
    fn client_session(&self) -> Option<String> {
        self.client_session.lock_or_recover().clone()
    }

    /// Remembers the conversation a request of the client named, for every upstream to come.
    fn note_client_session(&self, id: String) {
        *self.client_session.lock_or_recover() = Some(id);
    }

    /// The current upstream, establishing one when there is none.
    async fn current(&self) -> Result<(Upstream, u64), Unestablished> {
        let mut connection = self.connection.lock().await;
        if connection.is_none() {
            let fresh = self.establish(None).await?;
            self.replay(&fresh.upstream).await;
            *connection = Some(fresh);
        }
        let connection = connection.as_ref().expect("established above");
        Ok((connection.upstream.clone(), connection.generation))
    }

    /// Replaces a lost upstream — once, however many calls saw it go — and replays what the
    /// worker had said, so it is back on the board with its claims and its episode. The
    /// replay runs before any other call reaches the new upstream, so it never overwrites
    /// what the client says next.
    async fn fail_over(&self, lost: u64, silence: Option<Silence>) -> Result<(), Unestablished> {
        let mut connection = self.connection.lock().await;
        if connection
            .as_ref()
            .is_some_and(|current| current.generation != lost)
        {
            return Ok(());
        }
        if let Some(old) = connection.take() {
            old.close_in_background();
        }
        let fresh = self.establish(silence).await?;
        tracing::info!(
            generation = fresh.generation,
            "re-attached after losing the upstream"
        );
        self.replay(&fresh.upstream).await;
        *connection = Some(fresh);
        Ok(())
    }

    async fn replay(&self, upstream: &Upstream) {
        let (claims, episode) = {
            let memory = self.memory.lock_or_recover();
            (memory.claims.clone(), memory.episode.clone())
        };
        // The episode first, so the claims replayed after it are recorded under it.
        let calls = episode
            .map(|arguments| (tool_name::<EpisodesAttach>(), arguments))
            .into_iter()
            .chain(
                claims
                    .into_iter()
                    .map(|(_, arguments)| (tool_name::<PeersAnnounce>(), arguments)),
            );
        let session = self.client_session();
        for (tool, arguments) in calls {
            match self
                .forward(upstream, tool, Some(arguments), session.as_deref())
                .await
            {
                Ok(result) if result.is_error != Some(true) => {}
                Ok(refusal) => {
                    tracing::info!(tool, ?refusal.content, "a replayed call was refused")
                }
                Err(Unanswered::Protocol(error)) => {
                    tracing::info!(tool, %error, "a replayed call was refused")
                }
                Err(Unanswered::Lost(loss)) => {
                    tracing::info!(tool, failure = ?loss.failure, "a replayed call failed")
                }
            }
        }
    }

    /// Remembers what an accepted call said, for replay. A call whose outcome is unknown is
    /// remembered too: replaying is itself a write, so the bridge assumes it took effect
    /// rather than undo it (a detach that ran is never followed by a replayed attach).
    fn remember(&self, tool: &str, arguments: &Option<JsonObject>) {
        let remembered = [
            tool_name::<PeersAnnounce>(),
            tool_name::<EpisodesAttach>(),
            tool_name::<EpisodesDetach>(),
        ];
        if !remembered.contains(&tool) {
            return;
        }
        let arguments = arguments.clone().unwrap_or_default();
        let mut memory = self.memory.lock_or_recover();
        match tool {
            announce if announce == tool_name::<PeersAnnounce>() => {
                let name = arguments
                    .get("claim")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                match memory.claims.iter_mut().find(|(known, _)| *known == name) {
                    Some(slot) => slot.1 = arguments,
                    None => memory.claims.push((name, arguments)),
                }
            }
            attach if attach == tool_name::<EpisodesAttach>() => memory.episode = Some(arguments),
            detach if detach == tool_name::<EpisodesDetach>() => {
                let named = arguments.get("external_id").and_then(Value::as_str);
                let held = memory
                    .episode
                    .as_ref()
                    .and_then(|e| e.get("external_id"))
                    .and_then(Value::as_str);
                if named.is_none() || named == held {
                    memory.episode = None;
                }
            }
            _ => {}
        }
    }

    /// Forwards a tool call, failing over as the resend rule allows. Whatever goes wrong on
    /// the way is told to the client as a tool error it can read, never as silence.
    async fn call_tool(&self, request: CallToolRequestParams) -> Result<CallToolResult, McpError> {
        let idempotent = majordomus_capabilities::registry()
            .by_tool(&request.name)
            .is_some_and(|capability| capability.declaration.idempotent);
        let session = self.client_session();
        for _ in 0..MAX_FAILOVERS_PER_CALL {
            let (upstream, generation) = match self.current().await {
                Ok(current) => current,
                Err(error) => return Ok(tool_error(unreachable_server(&request.name, &error))),
            };
            let loss = match self
                .forward(
                    &upstream,
                    &request.name,
                    request.arguments.clone(),
                    session.as_deref(),
                )
                .await
            {
                Ok(result) => {
                    if result.is_error != Some(true) {
                        self.remember(&request.name, &request.arguments);
                    }
                    return Ok(result);
                }
                Err(Unanswered::Protocol(error)) => return Err(error),
                Err(Unanswered::Lost(loss)) => loss,
            };
            tracing::info!(failure = ?loss.failure, tool = %request.name, "a forwarded call failed");
            match recovery(idempotent, &loss.failure) {
                Recovery::PassThrough => {
                    return Ok(tool_error(format!(
                        "the checkout's server refused `{}`: {}",
                        request.name,
                        loss.failure.describe()
                    )));
                }
                Recovery::ResendAfterFailover => {
                    if let Err(error) = self.fail_over(generation, loss.silence).await {
                        return Ok(tool_error(unreachable_server(&request.name, &error)));
                    }
                }
                Recovery::FailoverAndReportUnknown => {
                    self.remember(&request.name, &request.arguments);
                    let after = match self.fail_over(generation, loss.silence).await {
                        Ok(()) => "The bridge has re-attached".to_string(),
                        Err(error) => format!("The bridge could not re-attach yet ({error})"),
                    };
                    return Ok(tool_error(format!(
                        "outcome unknown: `{}` reached the checkout's server but its answer was lost ({}); it may or may not have taken effect, and it was not sent again. {after}: check with majordomus_peers or majordomus_episodes before repeating it.",
                        request.name,
                        loss.failure.describe()
                    )));
                }
            }
        }
        Ok(tool_error(format!(
            "`{}` could not be delivered: the checkout's server kept going away",
            request.name
        )))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListToolsResult, McpError> {
        let own = tool_list;
        for _ in 0..MAX_FAILOVERS_PER_CALL {
            let Ok((upstream, generation)) = self.current().await else {
                return Ok(own());
            };
            let (peer, url) = match &upstream {
                Upstream::Local(session) => {
                    session.heard()?;
                    return Ok(own());
                }
                Upstream::Remote { peer, url } => (peer, url),
            };
            let listing = ClientRequest::ListToolsRequest(ListToolsRequest {
                method: Default::default(),
                params: request.clone(),
                extensions: Default::default(),
            });
            match self.request(peer, url, listing).await {
                Ok(ServerResult::ListToolsResult(result)) => return Ok(result),
                Ok(_) => return Ok(own()),
                Err(Unanswered::Protocol(error)) => return Err(error),
                Err(Unanswered::Lost(loss)) => match loss.failure {
                    Failure::Refused(_) => return Ok(own()),
                    _ => {
                        if self.fail_over(generation, loss.silence).await.is_err() {
                            return Ok(own());
                        }
                    }
                },
            }
        }
        Ok(own())
    }

    /// Sends one tool call to `upstream` and waits for its answer.
    async fn forward(
        &self,
        upstream: &Upstream,
        name: &str,
        arguments: Option<JsonObject>,
        client_session: Option<&str>,
    ) -> Result<CallToolResult, Unanswered> {
        match upstream {
            Upstream::Local(session) => {
                if let Some(id) = client_session {
                    session.adopt_client_session(id).await;
                }
                session
                    .call_tool_directly(name, arguments)
                    .await
                    .map_err(Unanswered::Protocol)
            }
            Upstream::Remote { peer, url } => {
                let mut params = CallToolRequestParams::new(name.to_string());
                params.arguments = arguments;
                if let Some(id) = client_session {
                    let mut meta = rmcp::model::RequestMetaObject::new();
                    meta.0
                        .0
                        .insert(CLIENT_SESSION_META_KEY.into(), Value::String(id.to_owned()));
                    params.meta = Some(meta);
                }
                let call = ClientRequest::CallToolRequest(CallToolRequest::new(params));
                match self.request(peer, url, call).await? {
                    ServerResult::CallToolResult(result) => Ok(result),
                    other => Err(Unanswered::Lost(
                        Failure::OutcomeUnknown(format!(
                            "the server answered a tool call with something else ({other:?})"
                        ))
                        .into(),
                    )),
                }
            }
        }
    }

    /// Sends a request over the remote session and waits for its answer, knowing whether it
    /// left this process and, while no answer comes, whether its server still lives.
    async fn request(
        &self,
        peer: &Peer<RoleClient>,
        url: &str,
        request: ClientRequest,
    ) -> Result<ServerResult, Unanswered> {
        let sent = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await;
        let handle = match sent {
            Ok(handle) => handle,
            Err(error) => return Err(unanswered(error, Reach::Refused)),
        };
        match self.await_answer(url, handle.await_response()).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => Err(unanswered(error, Reach::Handed)),
            Err(loss) => Err(Unanswered::Lost(loss)),
        }
    }

    /// Waits for an answer from the server at `url`. When none has come within the busy
    /// grace, the server's probe is asked: one that answers it is busy and is waited for
    /// (up to [`CALL_LIMIT`]); one that does not has gone silent, and the wait ends — so a
    /// frozen server costs a client about the busy grace, and the failover that follows
    /// counts its grace from when this wait began.
    async fn await_answer<T>(&self, url: &str, answer: impl Future<Output = T>) -> Result<T, Loss> {
        let since = Instant::now();
        let patience = self.site.config.timings.busy_grace();
        tokio::pin!(answer);
        loop {
            tokio::select! {
                answered = &mut answer => return Ok(answered),
                _ = tokio::time::sleep(patience) => {}
            }
            if since.elapsed() >= CALL_LIMIT {
                return Err(Failure::OutcomeUnknown(format!(
                    "no answer within {} s although the server answers its probe",
                    CALL_LIMIT.as_secs()
                ))
                .into());
            }
            let probe = tokio::select! {
                answered = &mut answer => return Ok(answered),
                probe = survey::probe(&self.site, url, &self.site.checkout.id) => probe,
            };
            if !matches!(probe, ProbeAnswer::Ours { .. }) {
                return Err(Loss {
                    failure: Failure::OutcomeUnknown(format!(
                        "the server stopped answering, even its probe, for {} ms",
                        since.elapsed().as_millis()
                    )),
                    silence: Some(Silence {
                        url: url.to_string(),
                        since,
                    }),
                });
            }
        }
    }

    /// Checks on the upstream while the client is quiet: this process's own server must
    /// still hold the lease; a remote one must still hold it, and answer a ping (which also
    /// keeps its session from being let go). Any trouble starts the failover before the
    /// client notices.
    async fn check(&self) {
        let current = self
            .connection
            .lock()
            .await
            .as_ref()
            .map(|c| (c.upstream.clone(), c.generation));
        let Some((upstream, generation)) = current else {
            return;
        };
        let trouble: Option<Loss> = match &upstream {
            Upstream::Local(session) => (!session.server().recheck_lease().await).then(|| {
                Failure::NotExecuted("this process's server lost its lease".into()).into()
            }),
            Upstream::Remote { peer, url } => {
                let probe = survey::probe(&self.site, url, &self.site.checkout.id).await;
                if let ProbeAnswer::Ours {
                    leaseholder: false, ..
                } = probe
                {
                    Some(Failure::NotExecuted("the server lost its lease".into()).into())
                } else {
                    let ping = ClientRequest::PingRequest(Default::default());
                    match self.request(peer, url, ping).await {
                        Ok(_) | Err(Unanswered::Protocol(_)) => None,
                        Err(Unanswered::Lost(loss)) => Some(loss),
                    }
                }
            }
        };
        let Some(loss) = trouble else {
            return;
        };
        tracing::info!(failure = ?loss.failure, "the upstream failed a check; failing over");
        if let Err(error) = self.fail_over(generation, loss.silence).await {
            tracing::warn!(%error, "no server could be reached for this checkout");
        }
    }

    /// Cancelled when this process's own server, serving the client now, loses its lease.
    async fn own_server_stepped_down(&self) -> CancellationToken {
        match self.connection.lock().await.as_ref().map(|c| &c.upstream) {
            Some(Upstream::Local(session)) => session.server().stepped_down.clone(),
            _ => CancellationToken::new(),
        }
    }
}

/// The keep-alive: checks on the upstream a third of the bridge silence apart (so the server
/// never takes this bridge for dead), and at once when this process's own server steps down.
async fn keep_alive(bridge: Arc<Bridge>) {
    let mut tick = tokio::time::interval(bridge.site.config.timings.bridge_ping_interval());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        let stepped_down = bridge.own_server_stepped_down().await;
        tokio::select! {
            _ = tick.tick() => {}
            _ = stepped_down.cancelled() => {}
        }
        bridge.check().await;
    }
}

fn tool_error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

fn unreachable_server(tool: &str, why: &Unestablished) -> String {
    format!("`{tool}` was not sent: {why}. Nothing ran; call it again in a moment.")
}

/// The MCP tool of capability `O`, as its declaration names it: the calls the bridge
/// remembers and replays are recognised by the same name the tool list shows.
fn tool_name<O: Operation>() -> &'static str {
    O::DECLARATION
        .exposure
        .mcp_tool
        .expect("the capabilities a bridge replays are MCP tools")
}

/// A random identity for this bridge's lifetime.
fn worker_identity() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
