//! The callers a row is measured through: the handler in this process, an rmcp client (over a
//! child's stdio or a Streamable HTTP session), and plain HTTP.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, Implementation,
    JsonObject, PingRequest,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::Value;

use majordomus_core::context::Context;
use majordomus_core::registry::{Capability, HttpMethod};

/// How one call ended, as the caller saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The capability answered.
    Answer,
    /// It refused (an MCP `isError` result, an HTTP 4xx/5xx with the error body): a
    /// well-formed answer of another kind.
    Refusal(String),
    /// The call did not complete at the protocol level.
    Failure(String),
}

impl Outcome {
    /// The word the report uses.
    pub(super) fn word(&self) -> &'static str {
        match self {
            Outcome::Answer => "answer",
            Outcome::Refusal(_) => "refusal",
            Outcome::Failure(_) => "failure",
        }
    }

    pub(super) fn detail(&self) -> Option<&str> {
        match self {
            Outcome::Answer => None,
            Outcome::Refusal(text) | Outcome::Failure(text) => Some(text),
        }
    }
}

/// What a call's transport carried back: what the floor is handed to answer in a row's
/// place, so that the row can be read against a server that does nothing but carry it.
pub(super) enum Carried {
    /// An MCP tool result's structured content (the floor answers it as majordomus does:
    /// as structured content and the same JSON as text).
    Structured(Value),
    /// A REST answer's body, as its bytes.
    Body(Vec<u8>),
}

/// A connected rmcp client.
pub(super) type McpService = RunningService<RoleClient, ClientConfig>;

/// Something a capability can be called through.
pub(super) enum Caller {
    /// `Capability::answer` with a server context of this process, as an MCP session of it
    /// would call it (the caller set).
    InProcess(Context),
    /// An MCP client: stdio, Streamable HTTP or through a bridge.
    Mcp(McpService),
    /// Plain JSON over HTTP with the lease's token, on kept-alive connections.
    Rest {
        http: reqwest::Client,
        base: String,
        token: String,
    },
}

impl Caller {
    /// Calls the capability with `input` once and says how it ended.
    pub(super) async fn call(&self, capability: &Capability, input: &Value) -> Outcome {
        match self {
            Caller::InProcess(ctx) => match capability.answer(ctx, input.clone()).await {
                Ok(_) => Outcome::Answer,
                Err(error) => {
                    Outcome::Refusal(format!("{}: {}", error.kind.as_str(), error.message))
                }
            },
            Caller::Mcp(service) => {
                let Some(tool) = capability.declaration.exposure.mcp_tool else {
                    return Outcome::Failure(format!("{} is not an MCP tool", capability.id()));
                };
                call_tool(service, tool, arguments(input)).await
            }
            Caller::Rest { http, base, token } => {
                match rest_request(http, base, capability, input) {
                    Ok(request) => rest_outcome(request.bearer_auth(token)).await,
                    Err(failure) => failure,
                }
            }
        }
    }

    /// Calls the capability with `input` once and answers what its transport carried back,
    /// when it answered: the tool result's structured content, or the route's body.
    pub(super) async fn carried(&self, capability: &Capability, input: &Value) -> Option<Carried> {
        match self {
            Caller::InProcess(_) => None,
            Caller::Mcp(_) => {
                let tool = capability.declaration.exposure.mcp_tool?;
                let answer = self.tool_answer(tool, input.clone()).await.ok()?;
                Some(Carried::Structured(answer))
            }
            Caller::Rest { http, base, token } => {
                let request = rest_request(http, base, capability, input).ok()?;
                let response = request.bearer_auth(token).send().await.ok()?;
                if !response.status().is_success() {
                    return None;
                }
                Some(Carried::Body(response.bytes().await.ok()?.to_vec()))
            }
        }
    }

    /// Hands the floor server behind this caller `carried`, for [`Caller::call_kept_floor`]
    /// to be answered with; says whether the floor took it.
    pub(super) async fn keep_on_floor(&self, carried: Carried) -> bool {
        match (self, carried) {
            (Caller::Mcp(_), Carried::Structured(answer)) => self
                .tool_answer(
                    super::floor::KEEP_TOOL,
                    serde_json::json!({ "answer": answer }),
                )
                .await
                .is_ok(),
            (Caller::Rest { http, base, token }, Carried::Body(body)) => http
                .put(format!("{base}{}", super::floor::KEPT_ROUTE))
                .bearer_auth(token)
                .body(body)
                .send()
                .await
                .is_ok_and(|response| response.status().is_success()),
            _ => false,
        }
    }

    /// Calls the floor once for the answer it was last handed ([`Caller::keep_on_floor`]),
    /// sending what a call of `capability` with `input` sends: the same tool arguments, or
    /// the same method with the same query or JSON body. The floor reads the request as any
    /// server must (rmcp parses the arguments, the route a POST's JSON) and sets it aside, so
    /// the row is read against a server that takes its request and carries its answer.
    pub(super) async fn call_kept_floor(&self, capability: &Capability, input: &Value) -> Outcome {
        match self {
            Caller::InProcess(_) => Outcome::Failure("the handler alone has no floor".into()),
            Caller::Mcp(service) => {
                call_tool(service, super::floor::KEPT_TOOL, arguments(input)).await
            }
            Caller::Rest { http, base, token } => {
                let Some((method, _)) = capability.declaration.exposure.http else {
                    return no_route(capability);
                };
                let url = format!("{base}{}", super::floor::KEPT_ROUTE);
                rest_outcome(request_to(http, method, &url, input).bearer_auth(token)).await
            }
        }
    }

    /// Calls the floor once over this caller's transport: the floor server's one tool, or
    /// its REST route, with what the rows send besides the input (the token, the same
    /// client and connection).
    pub(super) async fn call_floor(&self) -> Outcome {
        match self {
            Caller::InProcess(_) => Outcome::Failure("the handler alone has no floor".into()),
            Caller::Mcp(service) => call_tool(service, super::floor::TOOL, JsonObject::new()).await,
            Caller::Rest { http, base, token } => {
                let url = format!("{base}{}", super::floor::ROUTE);
                rest_outcome(http.get(url).bearer_auth(token)).await
            }
        }
    }

    /// Calls an MCP tool once and answers its structured content: what a caller needs when
    /// the answer decides its next call (a lease granted or still queued).
    pub(super) async fn tool_answer(&self, tool: &str, arguments: Value) -> Result<Value, Outcome> {
        let Caller::Mcp(service) = self else {
            return Err(Outcome::Failure(format!(
                "{tool} is called over MCP only here"
            )));
        };
        let arguments: JsonObject = match arguments {
            Value::Object(object) => object,
            _ => JsonObject::new(),
        };
        let request = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        match service.call_tool(request).await {
            Ok(result) if result.is_error == Some(true) => Err(Outcome::Refusal(
                result
                    .content
                    .iter()
                    .filter_map(|block| block.as_text().map(|t| t.text.clone()))
                    .collect::<Vec<_>>()
                    .join(" "),
            )),
            Ok(result) => Ok(result.structured_content.unwrap_or_default()),
            Err(error) => Err(Outcome::Failure(error.to_string())),
        }
    }

    /// Sends an MCP session's server a `ping`, which keeps the session from going idle and
    /// is no tool call, so nothing is delivered to it and nothing it holds changes.
    pub(super) async fn ping(&self) {
        if let Caller::Mcp(service) = self {
            let _ = service
                .send_request(ClientRequest::PingRequest(PingRequest::default()))
                .await;
        }
    }

    /// Ends the caller: closes an MCP session (stdin EOF for a child, DELETE for HTTP).
    pub(super) async fn close(self) {
        if let Caller::Mcp(service) = self {
            let _ = tokio::time::timeout(Duration::from_secs(10), service.cancel()).await;
        }
    }
}

/// One `tools/call`: an answer, a refusal (`isError`), or a failure of the protocol.
async fn call_tool(service: &McpService, tool: &str, arguments: JsonObject) -> Outcome {
    let request = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
    match service.call_tool(request).await {
        Ok(result) if result.is_error == Some(true) => {
            let text: Vec<String> = result
                .content
                .iter()
                .filter_map(|block| block.as_text().map(|t| t.text.clone()))
                .collect();
            Outcome::Refusal(format!("isError: {}", text.join(" ")))
        }
        Ok(_) => Outcome::Answer,
        Err(error) => Outcome::Failure(error.to_string()),
    }
}

/// The request a capability's route takes `input` as: a GET's query, or a POST's JSON body.
fn rest_request(
    http: &reqwest::Client,
    base: &str,
    capability: &Capability,
    input: &Value,
) -> Result<reqwest::RequestBuilder, Outcome> {
    let Some((method, path)) = capability.declaration.exposure.http else {
        return Err(no_route(capability));
    };
    Ok(request_to(http, method, &format!("{base}{path}"), input))
}

/// A request of `method` to `url` taking `input` as a route of majordomus takes it.
fn request_to(
    http: &reqwest::Client,
    method: HttpMethod,
    url: &str,
    input: &Value,
) -> reqwest::RequestBuilder {
    match method {
        HttpMethod::Get => {
            let query =
                serde_urlencoded::to_string(query_pairs(input)).expect("string pairs encode");
            if query.is_empty() {
                http.get(url)
            } else {
                http.get(format!("{url}?{query}"))
            }
        }
        HttpMethod::Post => http.post(url).json(input),
    }
}

/// What calling a capability over REST comes to when it has no route.
fn no_route(capability: &Capability) -> Outcome {
    Outcome::Failure(format!("{} has no HTTP route", capability.id()))
}

/// A tool call's arguments: the input's fields.
fn arguments(input: &Value) -> JsonObject {
    match input {
        Value::Object(object) => object.clone(),
        _ => JsonObject::new(),
    }
}

/// Sends a REST request and reads its answer: the body is read and parsed whole, as any
/// client of the route would.
async fn rest_outcome(request: reqwest::RequestBuilder) -> Outcome {
    let response = match request.send().await {
        Ok(response) => response,
        Err(error) => return Outcome::Failure(error.to_string()),
    };
    let status = response.status();
    let body: Value = match response.json().await {
        Ok(body) => body,
        Err(error) => {
            return Outcome::Failure(format!("HTTP {status}: no JSON body ({error})"));
        }
    };
    if status.is_success() {
        Outcome::Answer
    } else {
        Outcome::Refusal(format!(
            "HTTP {}: {}",
            status.as_u16(),
            body["error"]["message"].as_str().unwrap_or_default()
        ))
    }
}

/// A GET's query: the input's top-level fields, strings as they are, anything else as JSON.
fn query_pairs(input: &Value) -> Vec<(String, String)> {
    input
        .as_object()
        .map(|object| {
            object
                .iter()
                .map(|(key, value)| {
                    let text = match value {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    (key.clone(), text)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What the bench's clients say about themselves in `initialize`.
pub(super) fn client_config(name: &str) -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(name, env!("CARGO_PKG_VERSION")),
    )
}

/// A plain HTTP client that never goes through a proxy and keeps connections alive.
pub(super) fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_idle_timeout(Duration::from_secs(120))
        .build()
        .expect("an HTTP client builds without TLS")
}

/// Spawns `<exe> mcp --repo DIR` and initialises an rmcp session with it over its stdio.
/// Returns the session and the child's pid; the child's stderr goes to `log`.
pub(super) async fn spawn_mcp(
    exe: &Path,
    dir: &Path,
    name: &str,
    log: std::fs::File,
) -> Result<(McpService, u32), String> {
    let mut command = tokio::process::Command::new(exe);
    command.arg("mcp").arg("--repo").arg(dir);
    super::setup::clean_env(command.as_std_mut());
    serve_child(
        command,
        &format!("`majordomus mcp` in {}", dir.display()),
        name,
        log,
    )
    .await
}

/// Starts `command` as an MCP server over its stdio and initialises an rmcp session with it,
/// as the client `name`; `what` names the server in errors. Returns the session and the
/// child's pid; the child's stderr goes to `log`.
pub(super) async fn serve_child(
    mut command: tokio::process::Command,
    what: &str,
    name: &str,
    log: std::fs::File,
) -> Result<(McpService, u32), String> {
    command.stdin(Stdio::piped()).kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(log)
        .spawn()
        .map_err(|error| format!("could not start {what}: {error}"))?;
    let pid = transport.id().unwrap_or(0);
    let service = tokio::time::timeout(
        Duration::from_secs(30),
        client_config(name).serve(transport),
    )
    .await
    .map_err(|_| format!("{what} did not initialise within 30 s"))?
    .map_err(|error| format!("{what} did not initialise: {error}"))?;
    Ok((service, pid))
}

/// The capability the benchmark calls by `id`: every id it names is registered.
pub(super) fn registered(id: &str) -> &'static Capability {
    majordomus_capabilities::registry()
        .by_id(id)
        .unwrap_or_else(|| panic!("{id} is registered"))
}

/// How a Streamable HTTP session's client reuses connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum HttpPooling {
    /// rmcp's own default client, as the bridge uses it: idle connections are not kept, so
    /// every request opens a new TCP connection (rmcp does this to dodge delayed-ACK stalls).
    RmcpDefault,
    /// A kept-alive connection pool, as most HTTP clients have by default.
    KeepAlive,
}

/// Opens a Streamable HTTP session at `<url>/mcp` on a kept-alive pool of its own, as a
/// client that connects over HTTP itself does.
pub(super) async fn connect_kept_alive(
    url: &str,
    token: &str,
    name: &str,
) -> Result<McpService, String> {
    connect_http(&http_client(), HttpPooling::KeepAlive, url, token, name).await
}

/// Opens a Streamable HTTP session at `<url>/mcp` with the token.
pub(super) async fn connect_http(
    http: &reqwest::Client,
    pooling: HttpPooling,
    url: &str,
    token: &str,
    name: &str,
) -> Result<McpService, String> {
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp"))
        .auth_header(token.to_string());
    let transport = match pooling {
        HttpPooling::RmcpDefault => StreamableHttpClientTransport::from_config(config),
        HttpPooling::KeepAlive => StreamableHttpClientTransport::with_client(http.clone(), config),
    };
    tokio::time::timeout(
        Duration::from_secs(30),
        client_config(name).serve(transport),
    )
    .await
    .map_err(|_| format!("no MCP session at {url} within 30 s"))?
    .map_err(|error| format!("no MCP session at {url}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_get_takes_the_top_level_fields_as_query_parameters() {
        let pairs = query_pairs(&serde_json::json!({"checkouts": "this", "n": 3}));
        assert!(pairs.contains(&("checkouts".into(), "this".into())));
        assert!(pairs.contains(&("n".into(), "3".into())));
        assert!(query_pairs(&serde_json::json!({})).is_empty());
    }
}
