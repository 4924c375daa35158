//! The bridge: what `majordomus mcp` runs for its client, whichever process serves.
//!
//! It is an MCP server on its own stdio. Behind it is an *upstream*: this process's own server
//! when it won the election (the client is then peer `p1`, transport `stdio`), or the
//! checkout's server over `/mcp`, in a session opened with the client's own `clientInfo` so the
//! board shows the real client rather than the bridge.
//!
//! When the upstream is lost (its server died, forgot the session, or lost its lease) the bridge
//! elects again: it re-attaches to whoever serves now or becomes the server itself, and replays
//! the claims and the episode it remembers, so the worker never silently drops off the board
//! and its client never has to initialise again.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use majordomus_checkout::Lease;
use majordomus_domain::peers::Transport;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientConfig, ClientRequest,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::{
    ErrorData as McpError, RoleClient, RoleServer, ServerHandler, ServiceError, ServiceExt,
};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::context::Site;
use crate::registry::Registry;
use crate::server::mcp::{
    CLIENT_SESSION_META_KEY, McpSession, WORKER_META_KEY, client_session_of, tools,
};
use crate::server::run::{Lifetime, Outcome, Running, elect_and_start, stop_requested};

/// How often a bridge checks on a remote upstream while its client is quiet: it keeps the
/// session from expiring and notices a dead server before the client's next call does.
const KEEPALIVE: Duration = Duration::from_secs(5);

/// How many times one call is retried through a failover before the client is told.
const MAX_FAILOVERS_PER_CALL: usize = 3;

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

/// Why a forwarded call failed, as far as the bridge can tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The server provably did not run it: the connection was refused, the session was
    /// unknown (404) or the server lost its lease (409), or the upstream was already closed.
    NotExecuted(String),
    /// It was sent and no answer came: it may or may not have run.
    OutcomeUnknown(String),
    /// The server refused it with another client error; that is the answer, not a failover.
    Refused(String),
}

/// What the bridge does after a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// Elect again and send the call to whoever serves now.
    ResendAfterFailover,
    /// Elect again, but tell the client the outcome is unknown rather than risk running a
    /// write twice.
    FailoverAndReportUnknown,
    /// Hand the error to the client; nothing is wrong with the upstream.
    PassThrough,
}

/// The resend rule: a call is sent again only when that cannot do harm — it is idempotent,
/// or it provably never ran.
pub fn recovery(idempotent: bool, failure: &Failure) -> Recovery {
    match failure {
        Failure::Refused(_) => Recovery::PassThrough,
        Failure::NotExecuted(_) => Recovery::ResendAfterFailover,
        Failure::OutcomeUnknown(_) if idempotent => Recovery::ResendAfterFailover,
        Failure::OutcomeUnknown(_) => Recovery::FailoverAndReportUnknown,
    }
}

/// Sorts an rmcp client error into a protocol answer (passed through as it is) or a failure.
fn classify(error: ServiceError) -> Result<Failure, McpError> {
    match error {
        ServiceError::McpError(error) => Err(error),
        ServiceError::TransportClosed => Ok(Failure::NotExecuted(
            "the session was already closed".into(),
        )),
        ServiceError::TransportSend(error) => {
            let text = error.to_string();
            let Some(http) = error
                .error
                .downcast_ref::<StreamableHttpError<reqwest::Error>>()
            else {
                return Ok(Failure::OutcomeUnknown(text));
            };
            Ok(match http {
                StreamableHttpError::Client(error) if error.is_connect() => {
                    Failure::NotExecuted(format!("the server refused the connection ({error})"))
                }
                StreamableHttpError::SessionExpired => {
                    Failure::NotExecuted("the server no longer knows this session (404)".into())
                }
                StreamableHttpError::TransportChannelClosed => {
                    Failure::NotExecuted("the session was already closed".into())
                }
                StreamableHttpError::UnexpectedServerResponse(body) => match http_status(body) {
                    Some(404) | Some(409) => Failure::NotExecuted(body.to_string()),
                    Some(status) if (400..500).contains(&status) => {
                        Failure::Refused(body.to_string())
                    }
                    _ => Failure::OutcomeUnknown(body.to_string()),
                },
                _ => Failure::OutcomeUnknown(text),
            })
        }
        other => Ok(Failure::OutcomeUnknown(other.to_string())),
    }
}

/// The status of rmcp's `HTTP <status>: <body>` description of an unexpected response.
fn http_status(description: &str) -> Option<u16> {
    description
        .strip_prefix("HTTP ")?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
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
    client: std::sync::OnceLock<InitializeRequestParams>,
    connection: Mutex<Option<Connection>>,
    /// The server this process runs, once it won an election.
    serving: Mutex<Option<Running>>,
    memory: std::sync::Mutex<Memory>,
    generations: AtomicU64,
    /// The lease of the server found at start, when this process lost the first election.
    first_lease: std::sync::Mutex<Option<Lease>>,
    /// The client's conversation id, from the environment or from Codex's turn metadata;
    /// every upstream is told it, so the client's hooks and this connection are one peer.
    client_session: std::sync::Mutex<Option<String>>,
}

impl Bridge {
    /// Runs `majordomus mcp`: elects, serves the client on stdio until it leaves, then either
    /// closes its remote session or, when this process serves, keeps serving until the last
    /// bridged peer has gone.
    pub async fn run(site: Arc<Site>) -> Result<(), String> {
        let bridge = Arc::new(Bridge {
            worker: worker_identity(),
            site: site.clone(),
            client: std::sync::OnceLock::new(),
            connection: Mutex::new(None),
            serving: Mutex::new(None),
            memory: Default::default(),
            generations: AtomicU64::new(0),
            first_lease: std::sync::Mutex::new(None),
            client_session: std::sync::Mutex::new(client_session_from_environment()),
        });
        // Elect at once, so the checkout has its server before the client says anything.
        match elect_and_start(&site).await? {
            Outcome::Started(running) => *bridge.serving.lock().await = Some(running),
            Outcome::Found(lease) => {
                *bridge.first_lease.lock().unwrap_or_else(|p| p.into_inner()) = Some(*lease)
            }
        }
        let keepalive = tokio::spawn(keep_alive(Arc::downgrade(&bridge)));
        let (input, output) = crate::stdio_front::front(tokio::io::stdin(), tokio::io::stdout());
        let stop = stop_requested();
        tokio::select! {
            served = SharedBridge(bridge.clone()).serve((input, output)) => match served {
                Ok(running) => {
                    tokio::select! {
                        _ = running.waiting() => {}
                        _ = stop.cancelled() => {}
                    }
                }
                Err(error) => tracing::warn!(%error, "the client did not complete initialize"),
            },
            _ = stop.cancelled() => {}
        }
        keepalive.abort();
        bridge.finish().await;
        Ok(())
    }

    /// The client has gone: leave the board and, if this process serves, serve on until the
    /// last bridged peer has left too.
    async fn finish(&self) {
        if let Some(connection) = self.connection.lock().await.take()
            && let Some(service) = connection.service
        {
            let _ = service.cancel().await;
        }
        if let Some(running) = self.serving.lock().await.take() {
            running.run(Lifetime::IdleFor(Duration::ZERO)).await;
        }
    }

    /// Opens an upstream for the client: this process's own server, the server found at start,
    /// or — after a loss — whoever the next election says.
    async fn establish(&self) -> Result<Connection, String> {
        let client = self
            .client
            .get()
            .ok_or("the client has not initialised yet")?;
        let generation = self.generations.fetch_add(1, Ordering::SeqCst) + 1;
        for _ in 0..20 {
            if let Some(running) = self.serving.lock().await.as_ref() {
                let session = Arc::new(McpSession::new(running.state.clone(), Transport::Stdio));
                session.join(&client.client_info, Some(&self.worker));
                if let Some(id) = self.client_session() {
                    session.adopt_client_session(&id).await;
                }
                return Ok(Connection {
                    upstream: Upstream::Local(session),
                    generation,
                    service: None,
                });
            }
            let found = self
                .first_lease
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            let lease = match found {
                Some(lease) => lease,
                None => match elect_and_start(&self.site).await? {
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
        Err("no server could be reached or started for this checkout".into())
    }

    async fn connect(
        &self,
        client: &InitializeRequestParams,
        lease: &Lease,
    ) -> Result<(RunningService<RoleClient, ClientConfig>, String), String> {
        let url = lease.url.clone().ok_or("the lease names no address")?;
        let config = StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp"))
            .auth_header(lease.token.clone())
            .reinit_on_expired_session(false);
        let transport = StreamableHttpClientTransport::from_config(config);
        let mut introduction = client.clone();
        let mut meta = introduction.meta.take().unwrap_or_default();
        meta.0
            .0
            .insert(WORKER_META_KEY.into(), Value::String(self.worker.clone()));
        if let Some(id) = self.client_session() {
            meta.0
                .0
                .insert(CLIENT_SESSION_META_KEY.into(), Value::String(id));
        }
        introduction.meta = Some(meta);
        let service = introduction
            .serve(transport)
            .await
            .map_err(|error| format!("could not open a session with {url}: {error}"))?;
        Ok((service, url))
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
        self.client_session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Remembers the conversation a request of the client named, for every upstream to come.
    fn note_client_session(&self, id: String) {
        *self
            .client_session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(id);
    }

    /// The current upstream, establishing one when there is none.
    async fn current(&self) -> Result<(Upstream, u64), McpError> {
        let mut connection = self.connection.lock().await;
        if connection.is_none() {
            let fresh = self
                .establish()
                .await
                .map_err(|error| McpError::internal_error(error, None))?;
            *connection = Some(fresh);
            drop(connection);
            self.replay().await;
            connection = self.connection.lock().await;
        }
        let connection = connection.as_ref().expect("established above");
        Ok((connection.upstream.clone(), connection.generation))
    }

    /// Replaces a lost upstream — once, however many calls saw it go — and replays what the
    /// worker had said, so it is back on the board with its claims and its episode.
    async fn fail_over(&self, lost: u64) -> Result<(), McpError> {
        let mut connection = self.connection.lock().await;
        if connection
            .as_ref()
            .is_some_and(|current| current.generation != lost)
        {
            return Ok(());
        }
        if let Some(old) = connection.take()
            && let Some(service) = old.service
        {
            tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(1), service.cancel()).await;
            });
        }
        let fresh = self
            .establish()
            .await
            .map_err(|error| McpError::internal_error(error, None))?;
        tracing::info!(
            generation = fresh.generation,
            "re-attached after losing the upstream"
        );
        *connection = Some(fresh);
        drop(connection);
        self.replay().await;
        Ok(())
    }

    async fn replay(&self) {
        let (claims, episode) = {
            let memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
            (memory.claims.clone(), memory.episode.clone())
        };
        let Some(upstream) = self
            .connection
            .lock()
            .await
            .as_ref()
            .map(|connection| connection.upstream.clone())
        else {
            return;
        };
        // The episode first, so the claims replayed after it are recorded under it.
        let calls = episode
            .map(|arguments| ("majordomus_session_attach", arguments))
            .into_iter()
            .chain(
                claims
                    .into_iter()
                    .map(|(_, arguments)| ("majordomus_announce", arguments)),
            );
        let session = self.client_session();
        for (tool, arguments) in calls {
            match call_upstream(&upstream, tool, Some(arguments), session.as_deref()).await {
                Ok(result) if result.is_error != Some(true) => {}
                Ok(refusal) => {
                    tracing::warn!(tool, ?refusal.content, "a replayed call was refused")
                }
                Err(error) => tracing::warn!(tool, %error, "a replayed call failed"),
            }
        }
    }

    /// Remembers what an accepted call said, for replay.
    fn remember(&self, tool: &str, arguments: &Option<JsonObject>) {
        let arguments = arguments.clone().unwrap_or_default();
        let mut memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        match tool {
            "majordomus_announce" => {
                let name = arguments
                    .get("claim")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                match memory.claims.iter_mut().find(|(known, _)| *known == name) {
                    Some(slot) => slot.1 = arguments,
                    None => memory.claims.push((name, arguments)),
                }
            }
            "majordomus_session_attach" => memory.episode = Some(arguments),
            "majordomus_session_detach" => {
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

    /// Forwards a tool call, failing over as the resend rule allows.
    async fn call_tool(&self, request: CallToolRequestParams) -> Result<CallToolResult, McpError> {
        let idempotent = Registry::builtin()
            .by_tool(&request.name)
            .is_some_and(|capability| capability.declaration.idempotent);
        let session = self.client_session();
        for _ in 0..MAX_FAILOVERS_PER_CALL {
            let (upstream, generation) = self.current().await?;
            let call = call_upstream(
                &upstream,
                &request.name,
                request.arguments.clone(),
                session.as_deref(),
            );
            match call.await {
                Ok(result) => {
                    if result.is_error != Some(true) {
                        self.remember(&request.name, &request.arguments);
                    }
                    return Ok(result);
                }
                Err(error) => {
                    let failure = classify(error)?;
                    tracing::info!(?failure, tool = %request.name, "a forwarded call failed");
                    match recovery(idempotent, &failure) {
                        Recovery::PassThrough => {
                            return Err(McpError::invalid_request(describe(&failure), None));
                        }
                        Recovery::ResendAfterFailover => self.fail_over(generation).await?,
                        Recovery::FailoverAndReportUnknown => {
                            self.fail_over(generation).await?;
                            return Err(McpError::internal_error(
                                format!(
                                    "the checkout's server went away while running `{}` ({}); it may or may not have taken effect. The bridge has re-attached: check with majordomus_peers or majordomus_episodes before repeating it.",
                                    request.name,
                                    describe(&failure)
                                ),
                                None,
                            ));
                        }
                    }
                }
            }
        }
        Err(McpError::internal_error(
            format!(
                "`{}` could not be delivered: the checkout's server kept going away",
                request.name
            ),
            None,
        ))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListToolsResult, McpError> {
        for _ in 0..MAX_FAILOVERS_PER_CALL {
            let (upstream, generation) = self.current().await?;
            let outcome = match &upstream {
                Upstream::Local(session) => {
                    session.touch();
                    return Ok(ListToolsResult::with_all_items(tools().to_vec()));
                }
                Upstream::Remote { peer, .. } => peer.list_tools(request.clone()).await,
            };
            match outcome {
                Ok(result) => return Ok(result),
                Err(error) => match recovery(true, &classify(error)?) {
                    Recovery::PassThrough => {
                        return Ok(ListToolsResult::with_all_items(tools().to_vec()));
                    }
                    _ => self.fail_over(generation).await?,
                },
            }
        }
        Ok(ListToolsResult::with_all_items(tools().to_vec()))
    }

    /// Checks on a remote upstream: a ping keeps the session alive, and a failed one starts
    /// the failover before the client notices.
    async fn check(&self) {
        let current = self
            .connection
            .lock()
            .await
            .as_ref()
            .map(|c| (c.upstream.clone(), c.generation));
        let Some((Upstream::Remote { peer, url }, generation)) = current else {
            return;
        };
        let ping = peer.send_request(ClientRequest::PingRequest(Default::default()));
        let failure = match tokio::time::timeout(KEEPALIVE, ping).await {
            Ok(Ok(_)) => return,
            Ok(Err(error)) => match classify(error) {
                Ok(failure) => describe(&failure),
                Err(error) => error.message.to_string(),
            },
            Err(_) => format!("no answer within {} s", KEEPALIVE.as_secs()),
        };
        tracing::info!(%url, %failure, "the upstream did not answer a keep-alive; failing over");
        if let Err(error) = self.fail_over(generation).await {
            tracing::warn!(%error, "failover after a keep-alive failed");
        }
    }
}

async fn keep_alive(bridge: std::sync::Weak<Bridge>) {
    let mut tick = tokio::time::interval(KEEPALIVE);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(bridge) = bridge.upgrade() else {
            return;
        };
        bridge.check().await;
    }
}

/// Calls a tool upstream, naming the client's conversation when it is known.
async fn call_upstream(
    upstream: &Upstream,
    name: &str,
    arguments: Option<JsonObject>,
    client_session: Option<&str>,
) -> Result<CallToolResult, ServiceError> {
    match upstream {
        Upstream::Local(session) => {
            if let Some(id) = client_session {
                session.adopt_client_session(id).await;
            }
            session
                .call_tool_directly(name, arguments)
                .await
                .map_err(ServiceError::McpError)
        }
        Upstream::Remote { peer, .. } => {
            let mut request = CallToolRequestParams::new(name.to_string());
            request.arguments = arguments;
            if let Some(id) = client_session {
                let mut meta = rmcp::model::RequestMetaObject::new();
                meta.0
                    .0
                    .insert(CLIENT_SESSION_META_KEY.into(), Value::String(id.to_owned()));
                request.meta = Some(meta);
            }
            peer.call_tool(request).await
        }
    }
}

fn describe(failure: &Failure) -> String {
    match failure {
        Failure::NotExecuted(why) | Failure::OutcomeUnknown(why) | Failure::Refused(why) => {
            why.clone()
        }
    }
}

/// A random identity for this bridge's lifetime.
fn worker_identity() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The handler rmcp serves on stdio: a shared handle on the bridge.
struct SharedBridge(Arc<Bridge>);

impl ServerHandler for SharedBridge {
    fn get_info(&self) -> ServerConfig {
        crate::server::mcp::server_config()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let negotiated = self.negotiate_initialize(&request)?;
        let _ = self.0.client.set(request);
        let (upstream, _) = self.0.current().await?;
        let instructions = match upstream {
            Upstream::Local(session) => session.instructions(),
            Upstream::Remote { peer, .. } => {
                peer.peer_info().and_then(|info| info.instructions.clone())
            }
        };
        Ok(match instructions {
            Some(instructions) => negotiated.with_instructions(instructions),
            None => negotiated,
        })
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.0.introduce(&context);
        if let Ok((Upstream::Local(session), _)) = self.0.current().await {
            session.touch();
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.0.introduce(&context);
        self.0.list_tools(request).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.0.introduce(&context);
        // Codex names its conversation only here, in every call's turn metadata.
        if let Some(id) = client_session_of(&[
            Some(&context.meta.0.0),
            request.meta.as_ref().map(|meta| &meta.0.0),
        ]) {
            self.0.note_client_session(id);
        }
        self.0.call_tool(request).await.map(CallToolResponse::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resend_rule() {
        let not_executed = Failure::NotExecuted("connection refused".into());
        let unknown = Failure::OutcomeUnknown("stream ended".into());
        let refused = Failure::Refused("HTTP 400".into());
        assert_eq!(recovery(true, &not_executed), Recovery::ResendAfterFailover);
        assert_eq!(
            recovery(false, &not_executed),
            Recovery::ResendAfterFailover,
            "it never ran, so sending it is safe"
        );
        assert_eq!(
            recovery(true, &unknown),
            Recovery::ResendAfterFailover,
            "running it twice is the same as once"
        );
        assert_eq!(
            recovery(false, &unknown),
            Recovery::FailoverAndReportUnknown,
            "a write is never resent blindly"
        );
        assert_eq!(recovery(true, &refused), Recovery::PassThrough);
        assert_eq!(recovery(false, &refused), Recovery::PassThrough);
    }

    #[test]
    fn http_statuses_are_read_from_rmcps_description() {
        assert_eq!(http_status("HTTP 409 Conflict: {}"), Some(409));
        assert_eq!(http_status("HTTP 404: gone"), Some(404));
        assert_eq!(http_status("something else"), None);
    }

    #[test]
    fn statuses_sort_into_failures() {
        let failure = |body: &'static str| {
            let error =
                StreamableHttpError::<reqwest::Error>::UnexpectedServerResponse(body.into());
            let error = rmcp::transport::DynamicTransportError::from_parts(
                "http",
                std::any::TypeId::of::<()>(),
                Box::new(error),
            );
            classify(ServiceError::TransportSend(error)).unwrap()
        };
        assert!(matches!(
            failure("HTTP 409 Conflict: lost"),
            Failure::NotExecuted(_)
        ));
        assert!(matches!(
            failure("HTTP 404 Not Found: x"),
            Failure::NotExecuted(_)
        ));
        assert!(matches!(
            failure("HTTP 400 Bad Request: x"),
            Failure::Refused(_)
        ));
        assert!(matches!(
            failure("HTTP 502 Bad Gateway: x"),
            Failure::OutcomeUnknown(_)
        ));
        let protocol = classify(ServiceError::McpError(McpError::invalid_params(
            "bad", None,
        )));
        assert!(
            protocol.is_err(),
            "a JSON-RPC error is the server's answer, passed through"
        );
    }
}
