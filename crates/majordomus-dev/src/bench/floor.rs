//! The floors: the least a transport can cost. A minimal rmcp server whose tool does
//! nothing, served over stdio or behind rmcp's Streamable HTTP service on axum, and a plain
//! axum route answering a few bytes of JSON — `majordomus-dev floor-server`, a process of its
//! own as `majordomus` is. The rows' own clients call it over the same transports, so a row's
//! ratio to its transport's floor is what majordomus adds on top of rmcp, axum and the
//! machine, which no change to majordomus can remove.
//!
//! The floor also answers, on its `kept` tool and route, whatever a row's call answered
//! last, to the row's own request: a server doing nothing but taking a row's request and
//! carrying its answer, so a row can also be read against what moving its bytes costs (see
//! the runner's `measure_row`).

use std::io::Write as _;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use majordomus_domain::sync::LockExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};

/// The floor server's one tool.
pub const TOOL: &str = "noop";

/// The floor server's tool that keeps its `answer` argument, to answer it from [`KEPT_TOOL`].
pub const KEEP_TOOL: &str = "keep";

/// The floor server's tool that answers what [`KEEP_TOOL`] was last given.
pub const KEPT_TOOL: &str = "kept";

/// The floor server's REST route.
pub const ROUTE: &str = "/api/v1/floor";

/// The floor server's REST route that keeps a PUT's body and answers it to every GET and
/// POST; a POST's JSON body is parsed, as a route of majordomus parses it, and set aside.
pub const KEPT_ROUTE: &str = "/api/v1/floor/kept";

/// What the floor's clients send as a token: the floor asks for none, but the rows send
/// theirs, so the floor's calls carry one all the same.
pub const TOKEN: &str = "floor";

/// This executable, which serves the floor (`majordomus-dev floor-server`).
pub fn executable() -> Result<std::path::PathBuf, String> {
    std::env::current_exe()
        .map_err(|error| format!("cannot find this executable to serve the floor: {error}"))
}

/// What the tool and the route answer: structured, and about as small as a `this`-sized
/// answer of majordomus can be.
fn answer() -> Value {
    json!({"ok": true})
}

/// An MCP server that serves the do-nothing tool, and the pair that keeps an answer and
/// answers it. The sessions of one HTTP floor server share what was kept.
#[derive(Clone, Default)]
struct Floor {
    kept: Arc<Mutex<Value>>,
}

impl ServerHandler for Floor {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("majordomus-floor", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let schema = match json!({"type": "object"}) {
            Value::Object(object) => Arc::new(object),
            _ => unreachable!("the literal is an object"),
        };
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new(
                TOOL,
                "Does nothing; answers {\"ok\": true}.",
                schema.clone(),
            ),
            Tool::new(KEEP_TOOL, "Keeps its `answer` argument.", schema.clone()),
            Tool::new(
                KEPT_TOOL,
                "Answers what `keep` was last given, whatever its arguments.",
                schema,
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let answer = match request.name.as_ref() {
            KEEP_TOOL => {
                let given = request
                    .arguments
                    .and_then(|mut arguments| arguments.remove("answer"))
                    .unwrap_or(Value::Null);
                *self.kept.lock_or_recover() = given;
                answer()
            }
            KEPT_TOOL => self.kept.lock_or_recover().clone(),
            _ => answer(),
        };
        Ok(CallToolResult::structured(answer).into())
    }
}

/// Serves the floor over this process's stdin and stdout, through the same tokio streams
/// `majordomus mcp` reads and writes, until stdin closes.
pub async fn serve_stdio() -> Result<(), String> {
    let running = Floor::default()
        .serve(rmcp::transport::io::stdio())
        .await
        .map_err(|error| format!("the client did not complete initialize: {error}"))?;
    let _ = running.waiting().await;
    Ok(())
}

/// The body the kept route answers.
type Kept = Arc<Mutex<Bytes>>;

/// The kept body, answered as JSON.
fn kept_answer(kept: &Mutex<Bytes>) -> impl axum::response::IntoResponse + use<> {
    (
        [(CONTENT_TYPE, "application/json")],
        kept.lock_or_recover().clone(),
    )
}

/// Serves the floor's `/mcp` and its REST route on a loopback port, says the URL on stdout
/// (one line), and serves until stdin closes: the benchmark that started it holds the other
/// end, so the server cannot outlive it.
pub async fn serve_http() -> Result<(), String> {
    use axum::serve::ListenerExt as _;
    let floor = Floor::default();
    let mcp = StreamableHttpService::new(
        move || Ok(floor.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let kept: Kept = Arc::default();
    let router = Router::new()
        .route_service("/mcp", mcp)
        .route(ROUTE, get(|| async { axum::Json(answer()) }))
        .route(
            KEPT_ROUTE,
            get(|State(kept): State<Kept>| async move { kept_answer(&kept) })
                .post(
                    |State(kept): State<Kept>, _request: axum::Json<Value>| async move {
                        kept_answer(&kept)
                    },
                )
                .put(|State(kept): State<Kept>, body: Bytes| async move {
                    *kept.lock_or_recover() = body;
                    axum::Json(answer())
                }),
        )
        .with_state(kept);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|error| format!("cannot bind a loopback port: {error}"))?;
    let address = listener
        .local_addr()
        .map_err(|error| format!("the listener has no address: {error}"))?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "http://{address}")
            .and_then(|()| stdout.flush())
            .map_err(|error| format!("cannot say the URL: {error}"))?;
    }
    // As majordomus's own listener does: without TCP_NODELAY a kept-alive client's delayed
    // ACK would stall small answers, and the floor would not be one.
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    let stdin_closed = async {
        let mut sink = tokio::io::sink();
        let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut sink).await;
    };
    tokio::select! {
        served = axum::serve(listener, router) => {
            served.map_err(|error| format!("the floor server failed: {error}"))
        }
        () = stdin_closed => Ok(()),
    }
}
