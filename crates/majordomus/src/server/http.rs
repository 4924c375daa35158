//! The one router of a serving process: the probe, MCP Streamable HTTP, the REST routes and
//! the OpenAPI document, behind the same security checks.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

use super::ServerState;
use super::mcp::McpSession;
use crate::context::Context;
use crate::registry::{Capability, CapabilityError, ErrorKind, HttpMethod, Registry};
use crate::survey::Identity;
use majordomus_domain::peers::Transport;

/// The largest request body accepted, on every route. Nothing majordomus is sent comes near it.
pub const BODY_LIMIT_BYTES: usize = 1024 * 1024;

/// Builds the router of a serving process.
pub fn router(state: Arc<ServerState>) -> Router {
    let mcp_state = state.clone();
    let mcp_config = StreamableHttpServerConfig::default()
        .with_cancellation_token(state.shutdown.child_token())
        .with_max_request_body_bytes(BODY_LIMIT_BYTES)
        .with_allowed_origins(LOOPBACK_ORIGINS)
        .with_sse_keep_alive(Some(std::time::Duration::from_secs(15)));
    let mut session_manager = LocalSessionManager::default();
    session_manager.session_config.keep_alive = Some(std::time::Duration::from_secs(
        state.site.config.timings.idle_timeout_secs,
    ));
    let mcp = StreamableHttpService::new(
        move || Ok(McpSession::new(mcp_state.clone(), Transport::Http)),
        Arc::new(session_manager),
        mcp_config,
    );

    let mut router = Router::new()
        .route("/", get(identity))
        .route("/openapi.json", get(openapi))
        .route_service("/mcp", mcp);
    for capability in Registry::builtin().iter() {
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

/// A body over the limit is refused before it is read, so the connection cannot be reused:
/// the refusal says so (`Connection: close`, or a keep-alive client's next request on it
/// fails), and says what was wrong in the same JSON shape as every other error.
async fn explain_too_large(response: Response) -> Response {
    if response.status() != StatusCode::PAYLOAD_TOO_LARGE {
        return response;
    }
    let mut refusal = Rejection::PayloadTooLarge.respond(format!(
        "the request body is over the limit of {BODY_LIMIT_BYTES} bytes; send a smaller body"
    ));
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

/// The router's own refusals, made before any capability runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// No token, or the wrong one.
    Unauthorized,
    /// A Host or Origin that is not loopback.
    Forbidden,
    /// A new session at a server that lost its lease.
    Conflict,
    /// A body over [`BODY_LIMIT_BYTES`].
    PayloadTooLarge,
}

impl Rejection {
    pub const ALL: [Rejection; 4] = [
        Rejection::Unauthorized,
        Rejection::Forbidden,
        Rejection::Conflict,
        Rejection::PayloadTooLarge,
    ];

    /// The word an HTTP error body names it by.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::Unauthorized => "unauthorized",
            Rejection::Forbidden => "forbidden",
            Rejection::Conflict => "conflict",
            Rejection::PayloadTooLarge => "payload_too_large",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Rejection::Unauthorized => StatusCode::UNAUTHORIZED,
            Rejection::Forbidden => StatusCode::FORBIDDEN,
            Rejection::Conflict => StatusCode::CONFLICT,
            Rejection::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        }
    }

    fn respond(self, message: impl Into<String>) -> Response {
        error_response(self.status(), self.as_str(), message)
    }
}

/// Every word an HTTP error body's `kind` can be: the capability errors and the router's own.
pub fn error_kinds() -> impl Iterator<Item = &'static str> {
    ErrorKind::ALL
        .into_iter()
        .map(ErrorKind::as_str)
        .chain(Rejection::ALL.into_iter().map(Rejection::as_str))
}

/// A JSON error body, the same shape on every route.
pub fn error_response(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    let body = json!({ "error": { "kind": kind, "message": message.into() } });
    (status, axum::Json(body)).into_response()
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
            return Rejection::Forbidden.respond(format!(
                    "Host `{host}` is not a loopback name; majordomus answers only on 127.0.0.1, localhost or [::1]"
                ),
            );
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !is_loopback_origin(origin) {
            return Rejection::Forbidden.respond(format!(
                    "Origin `{origin}` is not a loopback origin; a web page from elsewhere may not talk to this server"
                ),
            );
        }
    }
    let is_probe = request.method() == Method::GET && request.uri().path() == "/";
    if !is_probe && !carries_token(&request, state.token()) {
        return Rejection::Unauthorized.respond("this route needs the token from the checkout's lease file: send `Authorization: Bearer <token>` or `?token=<token>`",
        );
    }
    if request.uri().path() == "/mcp"
        && request.method() == Method::POST
        && !request.headers().contains_key("mcp-session-id")
        && !state.recheck_lease()
    {
        return Rejection::Conflict.respond("this server no longer holds the checkout's lease and takes no new sessions; read the lease again and connect to the server it names",
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

/// Compares secrets in time independent of where they differ.
fn same_secret(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
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
    axum::Json(crate::openapi::document()).into_response()
}

async fn not_found(method: Method, uri: axum::http::Uri) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        ErrorKind::NotFound.as_str(),
        format!(
            "there is no route {method} {}; /openapi.json lists every route",
            uri.path()
        ),
    )
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
    let capability: &Capability = Registry::builtin()
        .by_id(id)
        .expect("routes are built from the registry");
    let ctx = Context {
        site: state.site.clone(),
        server: Some(state.clone()),
        caller: None,
    };
    match capability.call(&ctx, input).await {
        Ok(output) => axum::Json(output).into_response(),
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

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abd", "abc"));
        assert!(!same_secret("ab", "abc"));
    }
}
