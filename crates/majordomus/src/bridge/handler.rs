//! The handler rmcp serves on stdio: the client's requests, handed to the bridge.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use majordomus_server::mcp::{client_session_of, metas, negotiate};

use super::{Bridge, Upstream};

/// The handler rmcp serves on stdio: a shared handle on the bridge.
pub(super) struct SharedBridge(pub(super) Arc<Bridge>);

impl ServerHandler for SharedBridge {
    fn get_info(&self) -> ServerConfig {
        majordomus_server::mcp::server_config()
    }

    /// What the front let through as a custom request is a method nobody serves; its name
    /// goes back cut to a bounded length.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(majordomus_core::stdio_front::custom_request_error(
            context.id,
            &request.method,
            request.params.as_ref(),
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let negotiated = negotiate(self, &request, &context)?;
        // A client that names its conversation in `initialize` is taken at its word, as one
        // naming it on a tool call is.
        if let Some(id) = client_session_of(&metas(&context, request.meta.as_ref())) {
            self.0.note_client_session(id);
        }
        let _ = self.0.client.set(request);
        self.0
            .current()
            .await
            .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        Ok(negotiated)
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.0.introduce(&context);
        if let Some(Upstream::Local(session)) =
            self.0.connection.lock().await.as_ref().map(|c| &c.upstream)
        {
            session.heard()?;
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
        if let Some(id) = client_session_of(&metas(&context, request.meta.as_ref())) {
            self.0.note_client_session(id);
        }
        self.0.call_tool(request).await.map(CallToolResponse::from)
    }
}
