//! MCP, projected from the registry: one handler value per connection (stdio, or one
//! Streamable HTTP session), which is one peer on the board.

use std::sync::{Arc, OnceLock};

use majordomus_domain::peers::{ClientInfo, PeerId, Transport};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use super::ServerState;
use crate::context::Context;
use crate::registry::{Capability, Kind, Registry};

/// One MCP connection. Created cheaply and without side effects (rmcp also makes throw-away
/// instances); it joins the board only in `initialize`, and leaves it when dropped — which
/// covers stdio EOF, HTTP DELETE, the idle timeout and cancellation alike.
pub struct McpSession {
    state: Arc<ServerState>,
    transport: Transport,
    peer: OnceLock<PeerId>,
    /// The client session (the client's conversation id) this connection last named.
    client_session: std::sync::Mutex<Option<String>>,
}

impl McpSession {
    pub fn new(state: Arc<ServerState>, transport: Transport) -> Self {
        McpSession {
            state,
            transport,
            peer: OnceLock::new(),
            client_session: std::sync::Mutex::new(None),
        }
    }

    /// Joins the board as the client that introduced itself, once; `worker` is the stable
    /// identity a bridge gives itself, so a worker coming back retires its former slot.
    pub fn join(&self, client: &Implementation, worker: Option<&str>) -> &PeerId {
        self.peer.get_or_init(|| {
            self.state
                .attach(self.transport, client_info_of(client), worker)
        })
    }

    /// The connection carries the client session `session_id`: its peer speaks for the
    /// session from now on (once per id; a client that starts a new conversation on the same
    /// connection names the new one).
    pub async fn adopt_client_session(&self, session_id: &str) {
        let Some(peer) = self.peer.get() else {
            return;
        };
        {
            let mut known = self
                .client_session
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if known.as_deref() == Some(session_id) {
                return;
            }
            *known = Some(session_id.to_owned());
        }
        self.state.adopt_session(peer, session_id).await;
    }

    /// The instructions this connection's client is given in `initialize`.
    pub fn instructions(&self) -> Option<String> {
        self.peer.get().map(|peer| self.state.instructions(peer))
    }

    /// Serves one `tools/call` for this connection, as the MCP transport would.
    pub async fn call_tool_directly(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        self.touch();
        call(&self.context(), name, arguments).await
    }

    pub(crate) fn touch(&self) {
        if let Some(peer) = self.peer.get() {
            self.state.touch(peer);
        }
    }

    fn context(&self) -> Context {
        Context {
            site: self.state.site.clone(),
            server: Some(self.state.clone()),
            caller: self.peer.get().cloned(),
        }
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        if let Some(peer) = self.peer.get() {
            self.state.connection_lost(peer);
        }
    }
}

/// The `initialize` `_meta` key under which a bridge names the worker it carries, stable for
/// the bridge's lifetime across every session it opens.
pub const WORKER_META_KEY: &str = "majordomus/worker";

/// The `_meta` key under which a bridge names its client's session (the client's own
/// conversation id), in `initialize` and on every `tools/call` it forwards.
pub const CLIENT_SESSION_META_KEY: &str = "majordomus/client-session";

/// The `_meta` key under which Codex describes the turn of every `tools/call`, its
/// `session_id` included.
pub const CODEX_TURN_META_KEY: &str = "x-codex-turn-metadata";

/// The client session a request's `_meta` names: a bridge's own key, or the `session_id` of
/// Codex's turn metadata (an object, or the same as a JSON string). rmcp lifts a request's
/// `_meta` into its context; older paths leave it in the parameters, so both are read.
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

/// The tools every connection is shown, derived once from the registry.
pub fn tools() -> &'static [Tool] {
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(|| Registry::builtin().iter().filter_map(tool_of).collect())
}

fn tool_of(capability: &Capability) -> Option<Tool> {
    let declaration = &capability.declaration;
    let name = declaration.exposure.mcp_tool?;
    let read_only = declaration.kind == Kind::Query;
    let annotations = ToolAnnotations::from_raw(
        Some(declaration.title.to_string()),
        Some(read_only),
        Some(false),
        Some(declaration.idempotent),
        Some(false),
    );
    Some(
        Tool::new(
            name,
            declaration.description,
            schema_object(capability.input_schema()),
        )
        .with_title(declaration.title)
        .with_raw_output_schema(schema_object(capability.output_schema()))
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
    let Some(capability) = Registry::builtin().by_tool(name) else {
        return Err(McpError::invalid_params(
            format!(
                "there is no tool `{name}`; the tools are {}",
                Registry::builtin().tool_names().join(", ")
            ),
            None,
        ));
    };
    let input = Value::Object(arguments.unwrap_or_default());
    Ok(match capability.call(ctx, input).await {
        Ok(output) => CallToolResult::structured(output),
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.message)]),
    })
}

pub fn server_config() -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
        Implementation::new("majordomus", env!("CARGO_PKG_VERSION"))
            .with_title("majordomus — the board of the agents on this repository"),
    )
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
        server_config()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        // rmcp lifts a request's `_meta` into the context; older paths leave it in the params.
        let worker = context
            .meta
            .0
            .0
            .get(WORKER_META_KEY)
            .or_else(|| {
                request
                    .meta
                    .as_ref()
                    .and_then(|meta| meta.0.0.get(WORKER_META_KEY))
            })
            .and_then(|value| value.as_str());
        let session = client_session_of(&[
            Some(&context.meta.0.0),
            request.meta.as_ref().map(|meta| &meta.0.0),
        ]);
        let peer = self.join(&request.client_info, worker).clone();
        if let Some(session) = session {
            self.adopt_client_session(&session).await;
        }
        Ok(result.with_instructions(self.state.instructions(&peer)))
    }

    async fn ping(&self, _context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.touch();
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.touch();
        Ok(ListToolsResult::with_all_items(tools().to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.touch();
        let session = client_session_of(&[
            Some(&context.meta.0.0),
            request.meta.as_ref().map(|meta| &meta.0.0),
        ]);
        if let Some(session) = session {
            self.adopt_client_session(&session).await;
        }
        call(&self.context(), &request.name, request.arguments)
            .await
            .map(CallToolResponse::from)
    }
}
