//! MCP, projected from the registry: one handler value per connection (stdio, or one
//! Streamable HTTP session), which is one peer on the board.

use std::sync::{Arc, OnceLock};

use majordomus_checkout::ancestry::ProcessStamp;
use majordomus_domain::peers::{ClientInfo, PeerId, Transport};
use majordomus_domain::sync::LockExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, Implementation, InitializeRequestParams, InitializeResult, JsonObject,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, RequestMetaObject, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, Tool, ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::SessionRestoreMarker;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use super::events::SessionFeed;
use super::{ServerState, Worker};
use majordomus_core::api::CapabilityError;
use majordomus_core::context::Context;
use majordomus_core::registry::{Answer, Capability, Kind, tool_input_schema, tool_output_schema};
use majordomus_core::stdio_front::custom_request_error;

/// One MCP connection. Created cheaply and without side effects (rmcp also makes throw-away
/// instances); it joins the board only in `initialize`, and leaves it when dropped — which
/// covers stdio EOF, HTTP DELETE, the idle timeout and cancellation alike — or when its
/// server lets a silent bridge go.
pub struct McpSession {
    state: Arc<ServerState>,
    /// How the session reaches this server; a bridge's session says its client's instead.
    transport: Transport,
    peer: OnceLock<PeerId>,
    /// What the session is sent unasked: board updates and overlap notices.
    feed: SessionFeed,
    /// The client session (the client's conversation id) this connection last named.
    client_session: std::sync::Mutex<Option<String>>,
    /// This connection among all of the process's: a parked session brought back is a new
    /// connection holding the same peer.
    connection: u64,
}

/// Numbers the connections of the process.
static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl McpSession {
    pub fn new(state: Arc<ServerState>, transport: Transport) -> Self {
        McpSession {
            state,
            transport,
            peer: OnceLock::new(),
            feed: SessionFeed::default(),
            client_session: std::sync::Mutex::new(None),
            connection: CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Joins the board as the client that introduced itself, once; `worker` is the stable
    /// identity a `majordomus mcp` process gives itself, so a worker coming back retires its
    /// former slot; `process` is the client process it runs for, held as the peer appears.
    /// A bridged client reached majordomus over its bridge's stdio, and is listed so.
    pub fn join(
        &self,
        client: &Implementation,
        worker: Option<Worker<'_>>,
        process: Option<ProcessStamp>,
    ) -> &PeerId {
        self.peer.get_or_init(|| {
            let transport = match worker {
                Some(Worker { bridged: true, .. }) => Transport::Stdio,
                _ => self.transport,
            };
            self.state
                .attach(transport, client_info_of(client), worker, process)
        })
    }

    /// The server this connection belongs to.
    pub fn server(&self) -> &Arc<ServerState> {
        &self.state
    }

    /// The connection carries the client session `session_id`: its peer speaks for the
    /// session from now on (once per id; a client that starts a new conversation on the same
    /// connection names the new one).
    pub async fn adopt_client_session(&self, session_id: &str) {
        let Some(peer) = self.peer.get() else {
            return;
        };
        {
            let mut known = self.client_session.lock_or_recover();
            if known.as_deref() == Some(session_id) {
                return;
            }
            *known = Some(session_id.to_owned());
        }
        self.state.adopt_session(peer, session_id).await;
    }

    /// What the joined connection knows of its client: the session it carries, and the
    /// client process it runs for (a `majordomus mcp` process's parent), whose hooks join
    /// its peer and whose end ends the peer. The process is held first, before anything
    /// that waits, so a hook of the client arriving meanwhile finds this connection; then
    /// the session is adopted, then the session whose hooks already ran under the process.
    pub async fn name_client(&self, session: Option<&str>, process: Option<ProcessStamp>) {
        let Some(peer) = self.peer.get() else {
            return;
        };
        let process = process.filter(|&stamp| self.state.hold_client_process(peer, stamp));
        if let Some(session) = session {
            self.adopt_client_session(session).await;
        }
        if let Some(stamp) = process {
            self.state.adopt_waiting_session(peer, stamp).await;
        }
    }

    /// Serves one `tools/call` for this connection, as the MCP transport would.
    pub async fn call_tool_directly(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        self.heard()?;
        call(&self.context(), name, arguments).await
    }

    /// A message arrived: the peer and its episode are alive — unless the server already let
    /// this connection go for its silence, which its bridge is told so it opens a new session.
    pub fn heard(&self) -> Result<(), McpError> {
        let Some(peer) = self.peer.get() else {
            return Ok(());
        };
        if self.state.was_silenced(peer) {
            return Err(session_let_go(peer));
        }
        self.state.touch(peer);
        Ok(())
    }

    fn context(&self) -> Context {
        Context::served(
            self.state.site.clone(),
            self.state.clone(),
            self.peer.get().cloned(),
        )
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        let Some(peer) = self.peer.get() else {
            return;
        };
        // A parked session's connection goes, its peer stays.
        if self.state.parking.keeps(peer, self.connection) {
            return;
        }
        self.state.parking.forget(peer);
        self.state.connection_closed(peer);
    }
}

/// The MCP session a request or notification came in, as its HTTP request named it.
fn http_session(extensions: &rmcp::model::Extensions) -> Option<&str> {
    extensions
        .get::<axum::http::request::Parts>()?
        .headers
        .get("mcp-session-id")?
        .to_str()
        .ok()
}

/// The `initialize` `_meta` key under which a bridge names the worker it carries, stable for
/// the bridge's lifetime across every session it opens.
pub const WORKER_META_KEY: &str = "majordomus/worker";

/// The longest worker identity a session may name; a bridge's is 32 hex digits.
const MAX_WORKER_IDENTITY: usize = 64;

/// Whether a session's claimed worker identity is one a bridge could have made: short, and
/// letters, digits, `-` and `_` only. Anything else is ignored, so what a client sends is
/// never kept at any size it likes.
pub(super) fn is_worker_identity(identity: &str) -> bool {
    (1..=MAX_WORKER_IDENTITY).contains(&identity.len())
        && identity
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// The `initialize` `_meta` key by which a bridge says it carries a client of its own stdio:
/// the peer is listed with that client's transport, and is let go when its pings stop.
pub const BRIDGED_META_KEY: &str = "majordomus/bridged";

/// The key in an error's `data` that marks a session its server let go for its silence.
pub const LET_GO_DATA_KEY: &str = "majordomus/let_go";

/// The answer to every request of a session let go for its silence.
fn session_let_go(peer: &PeerId) -> McpError {
    McpError::invalid_request(
        format!(
            "this session (peer {peer}) went silent for longer than the bridge silence and was let go; open a new session"
        ),
        Some(serde_json::json!({ LET_GO_DATA_KEY: true })),
    )
}

/// Whether an error says the session was let go for its silence.
pub fn is_let_go(error: &McpError) -> bool {
    error
        .data
        .as_ref()
        .and_then(|data| data.get(LET_GO_DATA_KEY))
        .is_some_and(|flag| flag == true)
}

/// The `_meta` key under which a bridge names its client's session (the client's own
/// conversation id), in `initialize` and on every `tools/call` it forwards.
pub const CLIENT_SESSION_META_KEY: &str = "majordomus/client-session";

/// The `initialize` `_meta` key under which a bridge names its client process: its own
/// parent, `{"pid": …, "start": …}`.
pub const CLIENT_PROCESS_META_KEY: &str = "majordomus/client-process";

/// The client process an `initialize` `_meta` names, when it names one well.
pub fn client_process_of(metas: &[Option<&JsonObject>]) -> Option<ProcessStamp> {
    metas
        .iter()
        .flatten()
        .find_map(|meta| meta.get(CLIENT_PROCESS_META_KEY))
        .and_then(|value| serde_json::from_value(value.clone()).ok())
}

/// The `_meta` key under which Codex describes the turn of every `tools/call`, its
/// `session_id` included.
pub const CODEX_TURN_META_KEY: &str = "x-codex-turn-metadata";

/// Where a request's `_meta` may be: rmcp lifts it into the request's context, older paths
/// leave it in the parameters, so both are read, the context's first.
pub fn metas<'a>(
    context: &'a RequestContext<RoleServer>,
    params: Option<&'a RequestMetaObject>,
) -> [Option<&'a JsonObject>; 2] {
    [Some(&context.meta.0.0), params.map(|meta| &meta.0.0)]
}

/// The client session a request's `_meta` ([`metas`]) names: a bridge's own key, or the
/// `session_id` of Codex's turn metadata (an object, or the same as a JSON string).
pub fn client_session_of(metas: &[Option<&JsonObject>]) -> Option<String> {
    metas.iter().flatten().find_map(|meta| {
        if let Some(Value::String(id)) = meta.get(CLIENT_SESSION_META_KEY) {
            return Some(id.clone());
        }
        let turn = match meta.get(CODEX_TURN_META_KEY)? {
            Value::Object(turn) => turn.get("session_id").cloned(),
            Value::String(text) => serde_json::from_str::<Value>(text)
                .ok()
                .and_then(|turn| turn.get("session_id").cloned()),
            _ => None,
        };
        match turn {
            Some(Value::String(id)) => Some(id),
            _ => None,
        }
    })
}

/// The answer to `tools/list` from this build: every tool, on one page.
pub fn tool_list() -> ListToolsResult {
    ListToolsResult::with_all_items(tools().to_vec())
}

/// The tools every connection is shown, derived once from the registry.
pub fn tools() -> &'static [Tool] {
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        majordomus_capabilities::registry()
            .iter()
            .filter_map(tool_of)
            .collect()
    })
}

fn tool_of(capability: &Capability) -> Option<Tool> {
    let declaration = &capability.declaration;
    let name = declaration.exposure.mcp_tool?;
    let read_only = declaration.kind == Kind::Query;
    // The title is the tool's own; the annotations do not say it twice.
    let annotations = ToolAnnotations::from_raw(
        None,
        Some(read_only),
        Some(false),
        Some(declaration.idempotent),
        Some(false),
    );
    Some(
        Tool::new(
            name,
            declaration.description,
            schema_object(tool_input_schema(capability.input_schema())),
        )
        .with_title(declaration.title)
        .with_raw_output_schema(schema_object(tool_output_schema(
            &capability.output_schema(),
        )))
        .with_annotations(annotations),
    )
}

fn schema_object(schema: Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("capability schemas are objects"),
    }
}

/// Runs a tool on behalf of a connection and turns the outcome into a tool result: an answer
/// as `structuredContent` plus the same JSON as text, a refusal as `isError` with its message.
pub async fn call(
    ctx: &Context,
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<CallToolResult, McpError> {
    let Some(capability) = majordomus_capabilities::registry().by_tool(name) else {
        return Err(McpError::invalid_params(
            format!(
                "there is no tool `{name}`; the tools are {}",
                majordomus_capabilities::registry().tool_names().join(", ")
            ),
            None,
        ));
    };
    let input = Value::Object(arguments.unwrap_or_default());
    let result = match capability.answer_structured(ctx, input).await {
        Ok(answer) => tool_result(answer).await,
        Err(error) => Err(error),
    };
    let mut result = match result {
        Ok(result) => result,
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.message)]),
    };
    // Messages waiting for a session ride on its next tool answer, once: the answer is read
    // by its model, and a client without hooks has no other way to hear them.
    if let Some(inbox) = majordomus_capabilities::messages::inbox(ctx, name).await {
        match result.structured_content.as_mut() {
            Some(Value::Object(structured)) => {
                if let Ok(value) = serde_json::to_value(&inbox) {
                    structured.insert("inbox".to_owned(), value);
                }
                // The text is the structured answer as JSON, the inbox now in it.
                let text = Value::Object(structured.clone()).to_string();
                match result.content.first_mut() {
                    Some(first) => *first = ContentBlock::text(text),
                    None => result.content.push(ContentBlock::text(text)),
                }
            }
            _ => result.content.push(ContentBlock::text(inbox.text)),
        }
    }
    Ok(result)
}

/// An answer as a tool result: its JSON as text, and as the value of `structuredContent`,
/// which rmcp holds as a value (built as one, or decoded off the runtime's workers when the
/// capability handed on a large answer already encoded).
async fn tool_result(answer: Answer) -> Result<CallToolResult, CapabilityError> {
    let (text, value) = answer.into_text_and_value().await?;
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(value);
    Ok(result)
}

/// What answering `initialize` does whichever handler answers it, a session served here or
/// a bridge: the client's introduction is kept on its connection, and the protocol version
/// is agreed between the client's and the ones `handler` declares, with `handler`'s
/// capabilities and server info.
pub fn negotiate(
    handler: &impl ServerHandler,
    request: &InitializeRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<InitializeResult, McpError> {
    context.peer.set_peer_info(request.clone());
    handler.negotiate_initialize(request)
}

/// What every handler declares, the instructions included: the same for every session in
/// `initialize` and in `server/discover`.
pub fn server_config() -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        .with_server_info(
            Implementation::new("majordomus", env!("CARGO_PKG_VERSION"))
                .with_title("majordomus — the board of the agents on this repository"),
        )
        .with_instructions(majordomus_domain::briefing::INSTRUCTIONS)
}

/// What a session served here declares: [`server_config`] with the resources and logging.
pub fn session_config() -> ServerConfig {
    let mut config = server_config();
    config.capabilities = majordomus_capabilities::resources::capabilities();
    config
}

pub(crate) fn client_info_of(implementation: &Implementation) -> ClientInfo {
    ClientInfo {
        name: if implementation.name.trim().is_empty() {
            ClientInfo::uninitialized().name
        } else {
            implementation.name.clone()
        },
        version: implementation.version.clone(),
        title: implementation.title.clone(),
    }
}

impl ServerHandler for McpSession {
    fn get_info(&self) -> ServerConfig {
        session_config()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let result = negotiate(self, &request, &context)?;
        let sent = metas(&context, request.meta.as_ref());
        let meta = |key: &str| sent.iter().flatten().find_map(|meta| meta.get(key));
        let worker = meta(WORKER_META_KEY)
            .and_then(|value| value.as_str())
            .filter(|identity| is_worker_identity(identity))
            .map(|identity| Worker {
                identity,
                bridged: meta(BRIDGED_META_KEY).is_some_and(|flag| flag == true),
            });
        let process = client_process_of(&sent);
        // A parked session brought back by rmcp takes its own peer again.
        let restored = context
            .extensions
            .get::<SessionRestoreMarker>()
            .and_then(|marker| self.state.parking.unpark(&marker.id, self.connection));
        let peer = match restored {
            Some(peer) => {
                let peer = self.peer.get_or_init(|| peer);
                self.state.touch(peer);
                peer
            }
            None => self.join(&request.client_info, worker, process),
        };
        self.feed
            .start_notices(&self.state.events, peer, context.peer.clone());
        self.name_client(client_session_of(&sent).as_deref(), process)
            .await;
        Ok(result)
    }

    /// Over HTTP, the session is known by its id from now on: it can be parked when idle.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if let (Some(session), Some(peer)) = (http_session(&context.extensions), self.peer.get()) {
            self.state.parking.register(session, peer, self.connection);
        }
    }

    /// rmcp takes a request for a method it knows whose params do not fit that method for a
    /// custom request; it gets invalid params naming what did not fit, not "method not
    /// found". (Over stdio the front answers it before rmcp sees it.)
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(custom_request_error(
            context.id,
            &request.method,
            request.params.as_ref(),
        ))
    }

    async fn ping(&self, _context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.heard()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.heard()?;
        Ok(tool_list())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.heard()?;
        let session = client_session_of(&metas(&context, request.meta.as_ref()));
        if let Some(session) = session {
            self.adopt_client_session(&session).await;
        }
        call(&self.context(), &request.name, request.arguments)
            .await
            .map(CallToolResponse::from)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.heard()?;
        Ok(ListResourcesResult::with_all_items(
            majordomus_capabilities::resources::listed(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.heard()?;
        match majordomus_capabilities::resources::read(&self.context(), &request.uri).await {
            Ok(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
            Err(error @ majordomus_capabilities::resources::ReadError::Unknown { .. }) => {
                Err(McpError::resource_not_found(error.to_string(), None))
            }
            Err(error) => Err(McpError::internal_error(error.to_string(), None)),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.heard()?;
        majordomus_capabilities::resources::check(&request.uri)
            .map_err(|error| McpError::resource_not_found(error.to_string(), None))?;
        self.feed
            .subscribe_board(&self.state.events, context.peer.clone());
        if let Some(session) = http_session(&context.extensions) {
            self.state.parking.pin(session);
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.heard()?;
        majordomus_capabilities::resources::check(&request.uri)
            .map_err(|error| McpError::resource_not_found(error.to_string(), None))?;
        self.feed.unsubscribe_board();
        Ok(())
    }

    #[allow(deprecated)] // logging: see `SessionFeed`
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.heard()?;
        self.feed.set_level(request.level);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_plain_worker_identities_are_kept() {
        assert!(is_worker_identity("0123456789abcdef0123456789abcdef"));
        assert!(is_worker_identity("worker-7"));
        assert!(!is_worker_identity(""));
        assert!(!is_worker_identity(&"a".repeat(MAX_WORKER_IDENTITY + 1)));
        assert!(!is_worker_identity("worker 7"));
        assert!(!is_worker_identity("wörker"));
    }

    /// What `tools/list` may weigh: clients fetch it at every start.
    const TOOL_LIST_BUDGET_BYTES: usize = 13_500;

    /// What a client forwards of `tools/list` to its model with every request (each tool's
    /// name, description and input schema): 2,500 tokens at four bytes a token.
    const FORWARDED_BUDGET_BYTES: usize = 10_000;

    /// Every client downloads `tools/list` at every start and a model reads most of it on
    /// every turn; both stay within their budgets, and each tool's schemas are the compact
    /// ones (the full ones are in the OpenAPI document).
    #[test]
    fn the_tool_list_stays_small() {
        let size = serde_json::to_string(&tool_list()).unwrap().len();
        assert!(size <= TOOL_LIST_BUDGET_BYTES, "tools/list is {size} bytes");
        let forwarded: Vec<Value> = tools()
            .iter()
            .map(|tool| {
                serde_json::json!({
                    "name": tool.name,
                    "description": tool.description,
                    "inputSchema": tool.input_schema,
                })
            })
            .collect();
        let forwarded = serde_json::to_string(&forwarded).unwrap().len();
        assert!(
            forwarded <= FORWARDED_BUDGET_BYTES,
            "a model is forwarded {forwarded} bytes of tools/list"
        );
        for tool in tools() {
            let output = Value::Object(tool.output_schema.as_deref().cloned().unwrap());
            assert!(output.get("$defs").is_none(), "{}: {output}", tool.name);
            assert!(!tool.input_schema.contains_key("title"), "{}", tool.name);
        }
    }
}
