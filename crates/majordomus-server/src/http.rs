//! The one router of a serving process: the probe, MCP Streamable HTTP, the REST routes and
//! the OpenAPI document, behind the same security checks.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, any, get, post};
use http_body_util::LengthLimitError;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{
    SessionId, SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use serde_json::Value;

use super::ServerState;
use super::dashboard;
use super::gather::{GATHER_WINDOW, first_events_together};
use super::mcp::McpSession;
use majordomus_core::api::{
    BODY_LIMIT_BYTES, CapabilityError, ErrorKind, Rejection, error_response, same_secret,
};
use majordomus_core::context::Context;
use majordomus_core::registry::{Answer, Capability, HttpMethod};
use majordomus_core::stdio_front::{ErrorReply, Verdict, vet, without_byte_order_mark};
use majordomus_core::survey::Identity;
use majordomus_domain::peers::Transport;

/// How long a client refused a session for the session limit is told to wait before trying
/// again: sessions end when their clients leave or fall silent, so places free up over time.
const SESSIONS_RETRY_AFTER_SECS: u32 = 5;

/// Builds the router of a serving process.
pub fn router(state: Arc<ServerState>) -> Router {
    let mcp = Arc::new(McpEndpoint::new(&state));
    let mut router = Router::new()
        .route("/", get(identity))
        .route("/openapi.json", get(openapi))
        .route(
            "/api/v1/events",
            get(
                |State(state): State<Arc<ServerState>>, query, headers: HeaderMap| async move {
                    super::events::stream(&state.events, &state.shutdown, query, &headers)
                },
            ),
        )
        .route(dashboard::PAGE, get(dashboard::page))
        .route("/board/board.css", get(dashboard::stylesheet))
        .route("/board/board.js", get(dashboard::script))
        .route(dashboard::TICKETS, post(dashboard::mint))
        .route(STOP, post(stop))
        .route(
            "/mcp",
            any(move |request: Request| {
                let mcp = mcp.clone();
                async move { mcp.handle(request).await }
            }),
        );
    for capability in majordomus_capabilities::registry().iter() {
        if let Some((method, path)) = capability.declaration.exposure.http {
            router = router.route(path, rest_route(capability.id(), method));
        }
    }
    router
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(
            BODY_LIMIT_BYTES,
        ))
        .layer(middleware::map_response(explain_too_large))
        .with_state(state)
}

/// Where `serve stop` asks for an ordered stop.
pub const STOP: &str = "/api/v1/server/stop";

/// An ordered stop, asked by whoever holds the lease's token (a dashboard's cookie does not
/// do): every episode is closed as `shutdown` and the lease released, as a signal to
/// `majordomus serve` does on Unix. The answer comes before the stop begins.
async fn stop(State(state): State<Arc<ServerState>>, request: Request) -> Response {
    if !carries_token(&request, state.token()) {
        return refuse(
            Rejection::Unauthorized,
            "an ordered stop needs the token from the checkout's lease file: send `Authorization: Bearer <token>`",
        );
    }
    tracing::info!("an ordered stop was requested over HTTP");
    state.stops.ask();
    (
        StatusCode::ACCEPTED,
        axum::Json(serde_json::json!({"stopping": true})),
    )
        .into_response()
}

/// A body over the limit is refused before it is read, so the connection cannot be reused:
/// the refusal says so (`Connection: close`, or a keep-alive client's next request on it
/// fails), and says what was wrong in the same JSON shape as every other error.
async fn explain_too_large(response: Response) -> Response {
    if response.status() != StatusCode::PAYLOAD_TOO_LARGE {
        return response;
    }
    let mut refusal = refuse(
        Rejection::PayloadTooLarge,
        format!(
            "the request body is over the limit of {BODY_LIMIT_BYTES} bytes; send a smaller body"
        ),
    );
    refusal.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    refusal
}

const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// A refusal of the router's own, with the header its status calls for: a 401 names the
/// scheme it wants (`Bearer`), as HTTP requires, so a client knows to send the token rather
/// than guess.
fn refuse(rejection: Rejection, message: impl Into<String>) -> Response {
    let mut response = error_response(rejection.status(), rejection.as_str(), message);
    if rejection == Rejection::Unauthorized {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"majordomus\""),
        );
    }
    response
}

fn capability_error(error: CapabilityError) -> Response {
    let status =
        StatusCode::from_u16(error.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    error_response(status, error.kind.as_str(), error.message)
}

/// Host, Origin, token and lease checks, on every route: rmcp checks Host on `/mcp` only, and
/// Origin nowhere unless asked, so the router does both for everything it serves.
async fn guard(State(state): State<Arc<ServerState>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if let Some(host) = headers.get(header::HOST) {
        let host = host.to_str().unwrap_or("");
        if !is_loopback_authority(host) {
            return refuse(
                Rejection::Forbidden,
                format!(
                    "Host `{host}` is not a loopback name; majordomus answers only on 127.0.0.1, localhost or [::1]"
                ),
            );
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !is_loopback_origin(origin) {
            return refuse(
                Rejection::Forbidden,
                format!(
                    "Origin `{origin}` is not a loopback origin; a web page from elsewhere may not talk to this server"
                ),
            );
        }
    }
    let path = request.uri().path();
    if path == "/.well-known" || path.starts_with("/.well-known/") {
        // No OAuth here. A 401 would invite an MCP client to look for an authorization
        // server; a 404 tells it there is none before it asks for a token it cannot get.
        return no_route(request.method(), request.uri().path());
    }
    let is_probe = request.method() == Method::GET && request.uri().path() == "/";
    if !is_probe && !carries_token(&request, state.token()) && !dashboard::admits(&state, &request)
    {
        return refuse(
            Rejection::Unauthorized,
            "this route needs the token from the checkout's lease file: send `Authorization: Bearer <token>` or `?token=<token>`",
        );
    }
    if request.uri().path() == "/mcp"
        && request.method() == Method::POST
        && !request.headers().contains_key("mcp-session-id")
        && !state.recheck_lease().await
    {
        return refuse(
            Rejection::Conflict,
            "this server no longer holds the checkout's lease and takes no new sessions; read the lease again and connect to the server it names",
        );
    }
    next.run(request).await
}

fn carries_token(request: &Request, token: &str) -> bool {
    let from_header = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .is_some_and(|given| same_secret(given.trim(), token));
    from_header
        || request.uri().query().is_some_and(|query| {
            url_query_pairs(query).any(|(key, value)| key == "token" && same_secret(&value, token))
        })
}

fn url_query_pairs(query: &str) -> impl Iterator<Item = (String, String)> + '_ {
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .unwrap_or_default()
        .into_iter()
}

fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
}

/// Whether a `Host` header names this machine's loopback.
pub fn is_loopback_authority(authority: &str) -> bool {
    matches!(
        host_of(authority).to_ascii_lowercase().as_str(),
        "localhost" | "127.0.0.1" | "::1"
    )
}

/// Whether an `Origin` header is a page served from this machine's loopback.
pub fn is_loopback_origin(origin: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https") && is_loopback_authority(authority)
}

async fn identity(State(state): State<Arc<ServerState>>) -> Response {
    let identity = Identity {
        name: "majordomus".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        checkout_id: state.site.checkout.id.clone(),
        git_id: state.site.checkout.git_id.clone(),
        leaseholder: state.is_leaseholder(),
    };
    axum::Json(identity).into_response()
}

async fn openapi() -> Response {
    axum::Json(majordomus_capabilities::openapi::document()).into_response()
}

async fn not_found(method: Method, uri: axum::http::Uri) -> Response {
    no_route(&method, uri.path())
}

fn no_route(method: &Method, path: &str) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        ErrorKind::NotFound.as_str(),
        format!("there is no route {method} {path}; /openapi.json lists every route"),
    )
}

/// `/mcp`: rmcp's Streamable HTTP service, behind what it does not check or answers wrongly.
///
/// A POST body is read once (within [`BODY_LIMIT_BYTES`]) and judged by the same rule as a
/// stdio line ([`vet`]): malformed JSON and batches get 400 with a JSON-RPC error body (rmcp
/// says 415, which blames the Content-Type), a known method with misfit params gets invalid
/// params (rmcp says "method not found"), and only what rmcp parses reaches it. A new
/// session beyond the limit gets 503. DELETE answers 204 for a session it ended and 404 for
/// one it does not know (rmcp says 202 to both).
struct McpEndpoint {
    service: StreamableHttpService<McpSession, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    state: Arc<ServerState>,
    /// Held while a new session opens: the sessions are counted, and the new one opened or
    /// refused, before the next `initialize` is judged, so the count is never stale and the
    /// limit is exact. Opening a session takes well under a millisecond of the server's
    /// own work (the answer streams out after the lock is released).
    opening: tokio::sync::Mutex<()>,
    max_sessions: usize,
}

impl McpEndpoint {
    fn new(state: &Arc<ServerState>) -> McpEndpoint {
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(state.shutdown.child_token())
            .with_max_request_body_bytes(BODY_LIMIT_BYTES)
            .with_allowed_origins(LOOPBACK_ORIGINS)
            .with_sse_keep_alive(Some(std::time::Duration::from_secs(15)));
        // Parked sessions are where rmcp looks for a session it does not know.
        config.session_store = Some(state.parking.clone());
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(state.site.config.timings.idle_timeout());
        let sessions = Arc::new(sessions);
        park_idle_sessions(state, &sessions);
        let session_state = state.clone();
        McpEndpoint {
            service: StreamableHttpService::new(
                move || Ok(McpSession::new(session_state.clone(), Transport::Http)),
                sessions.clone(),
                config,
            ),
            sessions,
            state: state.clone(),
            opening: tokio::sync::Mutex::new(()),
            max_sessions: state.site.config.limits.mcp_sessions,
        }
    }

    async fn handle(&self, request: Request) -> Response {
        // A request of a known session keeps it from being parked until its answer, or the
        // stream it opened, has ended.
        let activity = match session_id(request.headers()) {
            Some(id) => self.state.parking.begin(&id).await,
            None => None,
        };
        let response = match *request.method() {
            Method::POST => self.post(request).await,
            Method::DELETE => self.delete(request).await,
            _ => self.forward(request).await,
        };
        match activity {
            Some(activity) => response.map(|body| {
                Body::from_stream(futures::StreamExt::map(
                    body.into_data_stream(),
                    move |chunk| {
                        let _open = &activity;
                        chunk
                    },
                ))
            }),
            None => response,
        }
    }

    async fn forward(&self, request: Request) -> Response {
        self.service.handle(request).await.map(Body::new)
    }

    async fn post(&self, request: Request) -> Response {
        if !declares_json(request.headers()) {
            // rmcp answers a body that does not say it is JSON with 415, rightly.
            return self.forward(request).await;
        }
        let (parts, body) = request.into_parts();
        let body = match axum::body::to_bytes(body, BODY_LIMIT_BYTES).await {
            Ok(body) => body,
            Err(error) => return unreadable_body(&error),
        };
        let message = body.slice(body.len() - without_byte_order_mark(&body).len()..);
        if session_id(&parts.headers).is_some() {
            return self.post_in_session(parts, message).await;
        }
        match vet(&message) {
            Verdict::Pass(parsed) if is_initialize(&parsed) => {
                let _opening = self.opening.lock().await;
                let live = self.sessions.sessions.read().await.len();
                if live + self.state.parking.parked_count() >= self.max_sessions {
                    return self.sessions_full();
                }
                self.forward_body(parts, message).await
            }
            Verdict::Pass(_) => self.forward_body(parts, message).await,
            Verdict::Ignore => StatusCode::ACCEPTED.into_response(),
            Verdict::Answer(reply) => jsonrpc_error(StatusCode::BAD_REQUEST, &reply),
        }
    }

    /// A message of a session, the calls that make up nearly all of the traffic: rmcp reads
    /// it, and only what rmcp cannot parse, which it refuses with 415 whatever the fault, is
    /// judged here to answer with the JSON-RPC error that names the fault. A request whose
    /// params do not fit its method reaches the session, which says so (`McpSession`'s
    /// custom requests), so the well-formed message is parsed once.
    async fn post_in_session(&self, parts: axum::http::request::Parts, message: Bytes) -> Response {
        let answered = self.forward_body(parts, message.clone()).await;
        if answered.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
            return answered;
        }
        match vet(&message) {
            Verdict::Pass(_) => answered,
            Verdict::Ignore => StatusCode::ACCEPTED.into_response(),
            Verdict::Answer(reply) => jsonrpc_error(StatusCode::BAD_REQUEST, &reply),
        }
    }

    /// Hands rmcp the request with the body already read (and judged), and sends the
    /// answer's head with its first events.
    async fn forward_body(&self, mut parts: axum::http::request::Parts, body: Bytes) -> Response {
        parts
            .headers
            .insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
        let answer = self
            .forward(Request::from_parts(parts, Body::from(body)))
            .await;
        first_events_together(answer, GATHER_WINDOW).await
    }

    async fn delete(&self, request: Request) -> Response {
        let Some(id) = session_id(request.headers()) else {
            // rmcp answers a DELETE without a session id with 400.
            return self.forward(request).await;
        };
        if !self.has_session(&id).await {
            if let Some(peer) = self.state.parking.end_parked(&id) {
                self.state.connection_closed(&peer);
                return StatusCode::NO_CONTENT.into_response();
            }
            return error_response(
                StatusCode::NOT_FOUND,
                ErrorKind::NotFound.as_str(),
                "there is no MCP session with that id: it has ended, or never began",
            );
        }
        let response = self.forward(request).await;
        if response.status() == StatusCode::ACCEPTED {
            return StatusCode::NO_CONTENT.into_response();
        }
        response
    }

    async fn has_session(&self, id: &SessionId) -> bool {
        self.sessions.has_session(id).await.unwrap_or(false)
    }

    fn sessions_full(&self) -> Response {
        let mut refusal = refuse(
            Rejection::Unavailable,
            format!(
                "this server already holds {} MCP sessions, its limit (`[limits] mcp_sessions` in majordomus.toml); end sessions that are no longer used, or try again later",
                self.max_sessions
            ),
        );
        refusal.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(SESSIONS_RETRY_AFTER_SECS),
        );
        refusal
    }
}

/// Parks the sessions idle for `[timings] session_park_secs` (unless it is zero), and ends
/// the parked ones whose client stayed away past the idle timeout, until the server stops.
fn park_idle_sessions(state: &Arc<ServerState>, sessions: &Arc<LocalSessionManager>) {
    let interval = state.parking.sweep_interval();
    let (state, sessions) = (state.clone(), sessions.clone());
    let tracker = state.tasks.clone();
    tracker.spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = state.shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            let now = std::time::Instant::now();
            let chosen = state.parking.choose(now);
            for session in &chosen {
                // A session already gone in rmcp is as good as closed.
                let _ = sessions
                    .close_session(&SessionId::from(session.as_str()))
                    .await;
            }
            state.parking.closed(&chosen);
            if !chosen.is_empty() {
                give_freed_memory_back();
            }
            for peer in state.parking.expire(now) {
                state.connection_closed(&peer);
            }
        }
    });
}

/// Hands the memory the parked sessions (or a closed connection) freed back to the system.
/// glibc's allocator keeps freed memory in its arenas for reuse, so without this the
/// server's resident size would stay where the busiest moment left it although the sessions
/// are gone.
pub(super) fn give_freed_memory_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator's arenas to the system;
    // it touches no allocation in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn session_id(headers: &HeaderMap) -> Option<SessionId> {
    headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(SessionId::from)
}

fn is_initialize(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, JsonRpcMessage::Request(request)
        if matches!(request.request, ClientRequest::InitializeRequest(_)))
}

/// Whether the Content-Type says JSON, as rmcp requires before it reads a body.
fn declares_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split(';').next().unwrap_or_default();
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// A body that could not be read: over the limit (413, worded by [`explain_too_large`]), or
/// cut off.
fn unreadable_body(error: &axum::Error) -> Response {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if cause.is::<LengthLimitError>() {
            return StatusCode::PAYLOAD_TOO_LARGE.into_response();
        }
        source = cause.source();
    }
    capability_error(CapabilityError::invalid_input(format!(
        "the request body could not be read ({error}); send the whole body"
    )))
}

fn jsonrpc_error(status: StatusCode, reply: &ErrorReply) -> Response {
    (status, axum::Json(reply.to_json())).into_response()
}

fn rest_route(id: &'static str, method: HttpMethod) -> MethodRouter<Arc<ServerState>> {
    match method {
        HttpMethod::Get => get(
            move |State(state): State<Arc<ServerState>>,
                  Query(query): Query<HashMap<String, String>>| async move {
                let input: serde_json::Map<String, Value> = query
                    .into_iter()
                    .filter(|(key, _)| key != "token")
                    .map(|(key, value)| (key, Value::String(value)))
                    .collect();
                run(&state, id, Value::Object(input)).await
            },
        ),
        HttpMethod::Post => post(
            move |State(state): State<Arc<ServerState>>, body: Bytes| async move {
                let input = if body.is_empty() {
                    Value::Object(Default::default())
                } else {
                    match serde_json::from_slice::<Value>(&body) {
                        Ok(value @ Value::Object(_)) => value,
                        Ok(_) => {
                            return capability_error(CapabilityError::invalid_input(
                                "the body must be a JSON object",
                            ));
                        }
                        Err(error) => {
                            return capability_error(CapabilityError::invalid_input(format!(
                                "the body is not JSON ({error}); send a JSON object as described in /openapi.json"
                            )));
                        }
                    }
                };
                run(&state, id, input).await
            },
        ),
    }
}

async fn run(state: &Arc<ServerState>, id: &str, input: Value) -> Response {
    let capability: &Capability = majordomus_capabilities::registry()
        .by_id(id)
        .expect("routes are built from the registry");
    let ctx = Context::served(state.site.clone(), state.clone(), None);
    // The answer is encoded as every surface writes it; it is the body as it is.
    match capability.answer(&ctx, input).await.map(Answer::into_bytes) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(error) => capability_error(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_and_origins() {
        for host in ["localhost", "127.0.0.1:8080", "[::1]:9", "LOCALHOST:1"] {
            assert!(is_loopback_authority(host), "{host}");
        }
        for host in [
            "evil.example",
            "127.0.0.1.evil.example:80",
            "10.0.0.1",
            "localhost.evil:80",
        ] {
            assert!(!is_loopback_authority(host), "{host}");
        }
        assert!(is_loopback_origin("http://localhost:3000"));
        assert!(is_loopback_origin("https://127.0.0.1"));
        assert!(!is_loopback_origin("http://evil.example"));
        assert!(!is_loopback_origin("null"));
        assert!(!is_loopback_origin("file://localhost"));
    }
}
