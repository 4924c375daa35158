//! The bridge: what `majordomus mcp` becomes when another process already serves the checkout.
//!
//! It is an MCP server on its own stdio for its client, and forwards every request to the
//! checkout's server over `/mcp`, in a session opened with the client's own `clientInfo`, so
//! the board shows the real client rather than the bridge.

use std::sync::Arc;

use majordomus_checkout::lease::Lease;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientConfig, InitializeRequestParams, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData as McpError, RoleClient, RoleServer, ServerHandler, ServiceError, ServiceExt};
use tokio::sync::Mutex;

type Upstream = RunningService<RoleClient, ClientConfig>;

/// The bridge's MCP server side: one per bridge process.
pub struct Bridge {
    lease: Lease,
    upstream: Arc<Mutex<Option<Upstream>>>,
}

impl Bridge {
    pub fn new(lease: Lease) -> Self {
        Bridge {
            lease,
            upstream: Arc::new(Mutex::new(None)),
        }
    }

    /// Serves the client on stdio until it leaves, then closes the upstream session (DELETE) so
    /// the server learns at once that this peer is gone.
    pub async fn run(lease: Lease) -> std::io::Result<()> {
        let (input, output) = crate::stdio_front::front(tokio::io::stdin(), tokio::io::stdout());
        let bridge = Bridge::new(lease);
        let upstream = bridge.upstream.clone();
        match bridge.serve((input, output)).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(error) => tracing::warn!(%error, "the client did not complete initialize"),
        }
        if let Some(upstream) = upstream.lock().await.take() {
            let _ = upstream.cancel().await;
        }
        Ok(())
    }

    async fn connect(&self, client: InitializeRequestParams) -> Result<Upstream, McpError> {
        let url = self.lease.url.as_deref().unwrap_or_default();
        let config = StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp"))
            .auth_header(self.lease.token.clone());
        let transport = StreamableHttpClientTransport::from_config(config);
        client
            .serve(transport)
            .await
            .map_err(|error| McpError::internal_error(format!("could not open a session with the server at {url}: {error}"), None))
    }

    async fn with_upstream<T>(
        &self,
        call: impl AsyncFnOnce(&Peer<RoleClient>) -> Result<T, ServiceError>,
    ) -> Result<T, McpError> {
        let peer = self.upstream.lock().await.as_ref().map(|upstream| upstream.peer().clone());
        let Some(peer) = peer else {
            return Err(McpError::internal_error("the bridge has no session yet: send initialize first", None));
        };
        call(&peer).await.map_err(|error| upstream_error(&self.lease, error))
    }
}

fn upstream_error(lease: &Lease, error: ServiceError) -> McpError {
    match error {
        ServiceError::McpError(error) => error,
        other => McpError::internal_error(
            format!(
                "the checkout's server at {} did not answer ({other}); the outcome of this call is unknown",
                lease.url.as_deref().unwrap_or("(no address)")
            ),
            None,
        ),
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        crate::server::mcp::server_config()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let mut negotiated = self.negotiate_initialize(&request)?;
        let upstream = self.connect(request).await?;
        if let Some(info) = upstream.peer_info() {
            negotiated.instructions = info.instructions.clone();
            if let Some(server_info) = info.server_info.clone() {
                negotiated.server_info = server_info;
            }
        }
        *self.upstream.lock().await = Some(upstream);
        Ok(negotiated)
    }

    async fn ping(&self, _context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.with_upstream(async |upstream| upstream.send_request(rmcp::model::ClientRequest::PingRequest(Default::default())).await.map(|_| ())).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.with_upstream(async |upstream| upstream.list_tools(request).await).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.with_upstream(async |upstream| upstream.call_tool(request).await)
            .await
            .map(CallToolResponse::from)
    }
}
