//! A fake model API for driving real coding clients headless, with no key and no network: an
//! HTTP server on a loopback port of its own speaking just enough of the three APIs the
//! clients use — Anthropic Messages (`POST /v1/messages`, Claude Code), OpenAI Responses
//! (`POST /v1/responses`, Codex through a `model_providers` entry) and Gemini
//! (`:streamGenerateContent?alt=sse`, `:generateContent`, `:countTokens`, Gemini CLI).
//!
//! It replays a script of [`Turn`]s, one per request of the client's main loop (a request
//! that offers tools and, for a call, offers the tool the turn calls), and answers every other
//! request — title generation, quota probes, token counts, a router's classifier — with a
//! short harmless text. It records every request, so a test reads what the model received:
//! the tools' results, the hooks' context, the system prompt.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// What the fake answers a request that is not the client's main loop, or that comes after
/// the script ends.
pub(crate) const HARMLESS: &str = "ok";

/// How many requests one fake records; a client in a loop meets an error beyond, and the test
/// sees its script unplayed rather than the memory of the test process filling up.
const MAX_RECORDED: usize = 500;

/// How large one request body may be (Claude Code's first request is about 50 kB).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// One answer of the scripted model.
#[derive(Clone, Debug)]
pub(crate) enum Turn {
    /// Call the offered tool named `tool`, or whose name ends in `_<tool>` (clients put their
    /// server's name before an MCP tool's), with these arguments. A tool the client declares
    /// as free-form text (Codex's `apply_patch`) is given `arguments` as that text.
    Call { tool: String, arguments: Value },
    /// Answer with this text and end the turn.
    Answer(String),
    /// The turn decided when the client asks for it, from the requests received so far (the
    /// asking one last): it may wait for another session's progress first.
    Later(Decide),
}

/// What decides a [`Turn::Later`] from the requests received so far.
type Decision = dyn Fn(&[Recorded]) -> Turn + Send + Sync;

/// How a [`Turn::Later`] is decided; run on a blocking thread.
#[derive(Clone)]
pub(crate) struct Decide(pub Arc<Decision>);

impl std::fmt::Debug for Decide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Decide")
    }
}

impl Turn {
    pub(crate) fn call(tool: &str, arguments: Value) -> Turn {
        Turn::Call {
            tool: tool.to_owned(),
            arguments,
        }
    }

    pub(crate) fn answer(text: &str) -> Turn {
        Turn::Answer(text.to_owned())
    }

    pub(crate) fn later(decide: impl Fn(&[Recorded]) -> Turn + Send + Sync + 'static) -> Turn {
        Turn::Later(Decide(Arc::new(decide)))
    }
}

/// One request the fake received.
#[derive(Clone, Debug)]
pub(crate) struct Recorded {
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// The body as JSON, or as a JSON string when it is not JSON.
    pub body: Value,
}

/// A tool call the fake made, as the client will name it in the result it sends back.
#[derive(Clone, Debug)]
pub(crate) struct MadeCall {
    /// The tool's name as the client offered it.
    pub name: String,
    /// The id the fake gave the call.
    pub id: String,
}

/// What a test looks at each time the client asks for a scripted turn, before the fake
/// answers: run on a blocking thread while the client waits for its model.
pub(crate) type Witness = Arc<dyn Fn() -> Value + Send + Sync>;

#[derive(Default)]
struct Script {
    turns: VecDeque<Turn>,
    witness: Option<Witness>,
    /// What the witness saw, one entry per scripted turn asked for, in order.
    witnessed: Vec<Value>,
    requests: Vec<Recorded>,
    calls: Vec<MadeCall>,
    /// The deferred tools the fake asked the client to load.
    loaded: Vec<String>,
    next_id: u64,
}

/// A running fake model API; stops when dropped.
pub(crate) struct FakeModel {
    url: String,
    script: Arc<Mutex<Script>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeModel {
    /// Starts a fake on `127.0.0.1:0` that will play `turns` in order.
    pub(crate) async fn start(turns: Vec<Turn>) -> FakeModel {
        FakeModel::serve(Script {
            turns: turns.into(),
            ..Script::default()
        })
        .await
    }

    /// Like [`FakeModel::start`], and runs `witness` each time a scripted turn is asked for,
    /// before answering; [`FakeModel::witnessed`] gives what it saw.
    pub(crate) async fn start_witnessed(turns: Vec<Turn>, witness: Witness) -> FakeModel {
        FakeModel::serve(Script {
            turns: turns.into(),
            witness: Some(witness),
            ..Script::default()
        })
        .await
    }

    async fn serve(script: Script) -> FakeModel {
        let script = Arc::new(Mutex::new(script));
        let app = axum::Router::new()
            .fallback(answer)
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the fake model API binds a loopback port");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeModel {
            url,
            script,
            server,
        }
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// What the witness saw, one entry per scripted turn asked for, in order.
    pub(crate) fn witnessed(&self) -> Vec<Value> {
        self.script.lock().unwrap().witnessed.clone()
    }

    /// Every request received so far, in order.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.script.lock().unwrap().requests.clone()
    }

    /// The tool calls made so far, in order.
    pub(crate) fn calls(&self) -> Vec<MadeCall> {
        self.script.lock().unwrap().calls.clone()
    }

    /// How many scripted turns have not been played.
    pub(crate) fn unplayed(&self) -> usize {
        self.script.lock().unwrap().turns.len()
    }

    /// The result the client sent back for the first call the fake made to `tool` (named as
    /// in [`Turn::Call`]), as text: from the first recorded request that carries it. `None`
    /// while none does.
    pub(crate) fn tool_result(&self, tool: &str) -> Option<String> {
        let script = self.script.lock().unwrap();
        let suffix = format!("_{tool}");
        let call = script
            .calls
            .iter()
            .find(|call| call.name == tool || call.name.ends_with(&suffix))?;
        script
            .requests
            .iter()
            .find_map(|request| result_in(&request.body, call))
    }

    /// The results the client sent back for every call the fake made to `tool`, in the
    /// order of the calls; a call whose result no request carried yet is left out.
    pub(crate) fn tool_results(&self, tool: &str) -> Vec<String> {
        let script = self.script.lock().unwrap();
        let suffix = format!("_{tool}");
        script
            .calls
            .iter()
            .filter(|call| call.name == tool || call.name.ends_with(&suffix))
            .filter_map(|call| {
                script
                    .requests
                    .iter()
                    .find_map(|request| result_in(&request.body, call))
            })
            .collect()
    }

    /// One line per request (method, path, the main loop's last message kinds), for failure
    /// messages.
    pub(crate) fn summary(&self) -> String {
        let script = self.script.lock().unwrap();
        let mut lines: Vec<String> = script
            .requests
            .iter()
            .map(|r| {
                let tools = offered_tools(&r.body).len();
                format!("{} {} ({tools} tools offered)", r.method, r.path)
            })
            .collect();
        lines.push(format!(
            "calls made: {:?}; turns unplayed: {}",
            script.calls.iter().map(|c| &c.name).collect::<Vec<_>>(),
            script.turns.len()
        ));
        lines.join("\n")
    }
}

/// Which API a request speaks, by its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    Anthropic,
    Responses,
    Gemini,
}

/// How a tool is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// With JSON arguments.
    Function,
    /// With text: Codex declares `apply_patch` as a free-form (`custom`) tool.
    FreeForm,
    /// The Responses API's own `tool_search`, which loads deferred tools.
    Search,
}

/// A tool as a request offers it.
struct Offered {
    name: String,
    kind: Kind,
    /// The namespace a Responses tool was loaded into (`mcp__<server>`), which its call
    /// must name.
    namespace: Option<String>,
}

/// What the fake decided to answer.
enum Reply {
    Text(String),
    Call {
        name: String,
        namespace: Option<String>,
        id: String,
        arguments: Value,
        kind: Kind,
    },
}

/// Records a request and answers it as its API would: token counts with a count, a
/// model request with the next scripted turn or the harmless text, anything else with 404.
async fn answer(
    State(shared): State<Arc<Mutex<Script>>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
    let body: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let witness = {
        let script = shared.lock().unwrap();
        script
            .witness
            .clone()
            .filter(|_| !script.turns.is_empty() && takes_a_turn(&body))
    };
    if let Some(witness) = witness {
        let seen = tokio::task::spawn_blocking(move || witness())
            .await
            .expect("the witness does not panic");
        shared.lock().unwrap().witnessed.push(seen);
    }
    let later = {
        let script = shared.lock().unwrap();
        match script.turns.front() {
            Some(Turn::Later(decide)) if takes_a_turn(&body) => {
                let mut seen = script.requests.clone();
                seen.push(Recorded {
                    method: method.to_string(),
                    path: path.clone(),
                    body: body.clone(),
                });
                Some((decide.clone(), seen))
            }
            _ => None,
        }
    };
    if let Some((decide, seen)) = later {
        let turn = tokio::task::spawn_blocking(move || (decide.0)(&seen))
            .await
            .expect("a later turn does not panic");
        let mut script = shared.lock().unwrap();
        if let Some(front @ Turn::Later(_)) = script.turns.front_mut() {
            *front = turn;
        }
    }
    let mut script = shared.lock().unwrap();
    if script.requests.len() >= MAX_RECORDED {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the fake model's record is full",
        );
    }
    script.requests.push(Recorded {
        method: method.to_string(),
        path: path.clone(),
        body: body.clone(),
    });
    let api = if path.starts_with("/v1/messages/count_tokens") {
        return axum::Json(json!({"input_tokens": 1})).into_response();
    } else if path.starts_with("/v1/messages") {
        Api::Anthropic
    } else if path.starts_with("/v1/responses") {
        Api::Responses
    } else if path.contains(":countTokens") {
        return axum::Json(json!({"totalTokens": 1})).into_response();
    } else if path.contains(":streamGenerateContent") || path.contains(":generateContent") {
        Api::Gemini
    } else {
        return error(
            StatusCode::NOT_FOUND,
            "the fake model API has no such route",
        );
    };
    let reply = choose(&mut script, &body);
    let streaming = match api {
        Api::Gemini => path.contains(":streamGenerateContent"),
        _ => body["stream"] == Value::Bool(true),
    };
    let id = script.next_id;
    script.next_id += 1;
    drop(script);
    let model = body["model"].as_str().unwrap_or("fake-model").to_owned();
    match api {
        Api::Anthropic => anthropic(&reply, &model, id, streaming),
        Api::Responses => responses(&reply, &model, id, streaming),
        Api::Gemini => gemini(&reply, streaming),
    }
}

/// The next scripted turn when this request is the main loop's and can take it, else the
/// harmless text (`{}` for a request that asks for JSON, as Gemini CLI's helpers do).
fn choose(script: &mut Script, body: &Value) -> Reply {
    let harmless = Reply::Text(if wants_json(body) { "{}" } else { HARMLESS }.to_owned());
    if !takes_a_turn(body) {
        return harmless;
    }
    let offered = offered_tools(body);
    let turn = match script.turns.front().cloned() {
        None | Some(Turn::Later(_)) => return harmless,
        Some(Turn::Answer(text)) => Reply::Text(text),
        Some(Turn::Call { tool, arguments }) => {
            let suffix = format!("_{tool}");
            let Some(found) = offered
                .iter()
                .find(|o| o.name == tool || o.name.ends_with(&suffix))
            else {
                return load_deferred(script, body, &offered, &tool).unwrap_or(harmless);
            };
            let id = format!("call_{}", script.calls.len() + 1);
            script.calls.push(MadeCall {
                name: found.name.clone(),
                id: id.clone(),
            });
            Reply::Call {
                name: found.name.clone(),
                namespace: found.namespace.clone(),
                id,
                arguments,
                kind: found.kind,
            }
        }
    };
    script.turns.pop_front();
    turn
}

/// Whether the request asks for JSON (Gemini CLI's helpers do), which no turn answers.
fn wants_json(body: &Value) -> bool {
    body["generationConfig"]["responseMimeType"] == "application/json"
}

/// Whether the request is the client's main loop, which takes the script's turns: it offers
/// tools and does not ask for JSON.
fn takes_a_turn(body: &Value) -> bool {
    !wants_json(body) && !offered_tools(body).is_empty()
}

/// Claude Code and Codex offer MCP tools "deferred", by name only: a model loads one with
/// a search before it can call it, and so does the fake, without taking the scripted turn —
/// Claude Code's `ToolSearch` with `select:<full name>` (the name as its system prompt lists
/// it), the Responses API's `tool_search` with the tool's name.
fn load_deferred(
    script: &mut Script,
    body: &Value,
    offered: &[Offered],
    tool: &str,
) -> Option<Reply> {
    const TOOL_SEARCH: &str = "ToolSearch";
    let suffix = format!("_{tool}");
    let (search, query) = if let Some(search) = offered.iter().find(|o| o.kind == Kind::Search) {
        (search, json!({"query": tool, "limit": 1}))
    } else {
        let search = offered.iter().find(|o| o.name == TOOL_SEARCH)?;
        let name = texts(body)
            .into_iter()
            .flat_map(|text| text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
            .find(|word| word.ends_with(&suffix))?;
        (search, json!({"query": format!("select:{name}")}))
    };
    if script.loaded.iter().any(|loaded| loaded == tool) {
        // Searched once and still not offered: the client will not offer it.
        return None;
    }
    script.loaded.push(tool.to_owned());
    let id = format!("call_{}", script.calls.len() + 1);
    script.calls.push(MadeCall {
        name: search.name.clone(),
        id: id.clone(),
    });
    Some(Reply::Call {
        name: search.name.clone(),
        namespace: None,
        id,
        arguments: query,
        kind: search.kind,
    })
}

/// Every string in a JSON value, walked without recursion.
fn texts(value: &Value) -> Vec<&str> {
    let mut found = Vec::new();
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => found.push(text.as_str()),
            Value::Array(items) => pending.extend(items),
            Value::Object(fields) => pending.extend(fields.values()),
            _ => {}
        }
    }
    found
}

/// The tools a request offers, in any of the three APIs: its `tools`, and for the
/// Responses API those a `tool_search` loaded into the conversation.
fn offered_tools(body: &Value) -> Vec<Offered> {
    let mut offered = Vec::new();
    let loaded = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "tool_search_output")
        .flat_map(|item| item["tools"].as_array().into_iter().flatten());
    for tool in body["tools"].as_array().into_iter().flatten().chain(loaded) {
        // Gemini: a list of declarations per tool entry.
        for declaration in tool["functionDeclarations"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(name) = declaration["name"].as_str() {
                offered.push(Offered {
                    name: name.to_owned(),
                    kind: Kind::Function,
                    namespace: None,
                });
            }
        }
        // Responses: a namespace of tools.
        if tool["type"] == "namespace" {
            for inner in tool["tools"].as_array().into_iter().flatten() {
                if let Some(name) = inner["name"].as_str() {
                    offered.push(Offered {
                        name: name.to_owned(),
                        kind: Kind::Function,
                        namespace: tool["name"].as_str().map(str::to_owned),
                    });
                }
            }
            continue;
        }
        // Anthropic and Responses: a name per entry; Responses' search has none.
        let kind = match tool["type"].as_str() {
            Some("custom") => Kind::FreeForm,
            Some("tool_search") => Kind::Search,
            _ => Kind::Function,
        };
        let name = tool["name"]
            .as_str()
            .or((kind == Kind::Search).then_some("tool_search"));
        if let Some(name) = name {
            offered.push(Offered {
                name: name.to_owned(),
                kind,
                namespace: None,
            });
        }
    }
    offered
}

/// The text of the result `call` got, when `body` carries it.
fn result_in(body: &Value, call: &MadeCall) -> Option<String> {
    // A string as it is; Anthropic's text blocks and Gemini's `{"output": …}` and
    // `{"error": …}` by their text; anything else as JSON.
    let text = |value: &Value| match value {
        Value::String(text) => text.clone(),
        Value::Array(blocks) if blocks.iter().all(|b| b["text"].is_string()) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(fields)
            if fields.len() == 1
                && let Some(Value::String(text)) = fields.get("output").or(fields.get("error")) =>
        {
            text.clone()
        }
        other => other.to_string(),
    };
    // Anthropic: a `tool_result` block in a user message.
    for message in body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" && block["tool_use_id"] == call.id.as_str() {
                return Some(text(&block["content"]));
            }
        }
    }
    // Responses: a `function_call_output` (or `custom_tool_call_output`) input item.
    for item in body["input"].as_array().into_iter().flatten() {
        let kind = item["type"].as_str().unwrap_or_default();
        if kind.ends_with("call_output") && item["call_id"] == call.id.as_str() {
            return Some(text(&item["output"]));
        }
    }
    // Gemini: a `functionResponse` part, by the call's id (or its name when the id is lost).
    for content in body["contents"].as_array().into_iter().flatten() {
        for part in content["parts"].as_array().into_iter().flatten() {
            let response = &part["functionResponse"];
            let same_id = response["id"] == call.id.as_str();
            let same_name = response["id"].is_null() && response["name"] == call.name.as_str();
            if same_id || same_name {
                return Some(text(&response["response"]));
            }
        }
    }
    None
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"type": "fake_model", "message": message}})),
    )
        .into_response()
}

/// Server-sent events: `event:` lines where the API names its events, one `data:` line each.
fn sse(events: &[(Option<&str>, Value)]) -> Response {
    let mut text = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            text.push_str(&format!("event: {name}\n"));
        }
        text.push_str(&format!("data: {data}\n\n"));
    }
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        text,
    )
        .into_response()
}

fn anthropic(reply: &Reply, model: &str, id: u64, streaming: bool) -> Response {
    let usage = json!({"input_tokens": 1, "output_tokens": 1});
    let (block, stop_reason) = match reply {
        Reply::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
        Reply::Call {
            name,
            id,
            arguments,
            ..
        } => (
            json!({"type": "tool_use", "id": id, "name": name, "input": arguments}),
            "tool_use",
        ),
    };
    let message = json!({
        "id": format!("msg_{id}"), "type": "message", "role": "assistant", "model": model,
        "content": [block], "stop_reason": stop_reason, "stop_sequence": null, "usage": usage,
    });
    if !streaming {
        return axum::Json(message).into_response();
    }
    let (start, delta) = match reply {
        Reply::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
        ),
        Reply::Call {
            name,
            id,
            arguments,
            ..
        } => (
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": arguments.to_string()}),
        ),
    };
    let mut started = message.clone();
    started["content"] = json!([]);
    started["stop_reason"] = Value::Null;
    sse(&[
        (
            Some("message_start"),
            json!({"type": "message_start", "message": started}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 1}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ])
}

fn responses(reply: &Reply, model: &str, id: u64, streaming: bool) -> Response {
    let item = match reply {
        Reply::Text(text) => json!({
            "type": "message", "id": format!("msg_{id}"), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
        Reply::Call {
            name,
            namespace,
            id: call_id,
            arguments,
            kind,
        } => match kind {
            Kind::FreeForm => json!({
                "type": "custom_tool_call", "id": format!("ctc_{id}"), "call_id": call_id,
                "name": name, "status": "completed",
                "input": arguments.as_str().map_or_else(|| arguments.to_string(), str::to_owned),
            }),
            Kind::Search => json!({
                "type": "tool_search_call", "id": format!("tsc_{id}"), "call_id": call_id,
                "execution": "client", "status": "completed", "arguments": arguments,
            }),
            Kind::Function => {
                let mut call = json!({
                    "type": "function_call", "id": format!("fc_{id}"), "call_id": call_id,
                    "name": name, "arguments": arguments.to_string(), "status": "completed",
                });
                if let Some(namespace) = namespace {
                    call["namespace"] = json!(namespace);
                }
                call
            }
        },
    };
    let usage = json!({
        "input_tokens": 1, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2,
    });
    let response = json!({
        "id": format!("resp_{id}"), "object": "response", "model": model, "status": "completed",
        "output": [item], "usage": usage,
    });
    if !streaming {
        return axum::Json(response).into_response();
    }
    let mut created = response.clone();
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    sse(&[
        (
            Some("response.created"),
            json!({"type": "response.created", "response": created}),
        ),
        (
            Some("response.output_item.done"),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            Some("response.completed"),
            json!({"type": "response.completed", "response": response}),
        ),
    ])
}

fn gemini(reply: &Reply, streaming: bool) -> Response {
    let part = match reply {
        Reply::Text(text) => json!({"text": text}),
        Reply::Call {
            name,
            id,
            arguments,
            ..
        } => json!({"functionCall": {"id": id, "name": name, "args": arguments}}),
    };
    let response = json!({
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "fake-model",
    });
    if streaming {
        sse(&[(None, response)])
    } else {
        axum::Json(response).into_response()
    }
}
