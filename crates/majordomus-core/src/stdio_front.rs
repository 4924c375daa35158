//! The guard in front of a stdio MCP connection, and the message check it shares with `/mcp`.
//!
//! rmcp's stdio transport drops in silence every line it cannot parse: not JSON, not UTF-8,
//! too long, a lone surrogate in a `\u` escape, values nested deeper than serde_json's 128
//! levels. A line that is JSON but no MCP message (a batch, a request without `"jsonrpc":
//! "2.0"`) gets an error without an `id` member, and a known method whose params do not fit
//! (`tools/call` with a numeric `name`) is taken for an unknown one. A client that sent any of
//! these waits forever, or cannot tell which of its requests failed or why.
//!
//! The front reads stdin itself and judges every line with [`vet`], which parses it exactly as
//! rmcp will: what rmcp would drop or answer badly gets a JSON-RPC error carrying the
//! request's id when it can be read (`id: null` otherwise), and only what rmcp parses goes on
//! to it, handed over parsed: rmcp serves on the front's stream of messages and sink of
//! answers rather than on bytes, so a message is parsed once. rmcp's answers and the front's
//! errors reach stdout whole-line by whole-line, so the two never interleave inside a frame.

// Logging and resource subscriptions are deprecated in the newest protocol revision, but rmcp
// still parses their requests, so their params are judged like any other's.
use futures::{Sink, Stream};
use rmcp::model::{
    CallToolRequest, CancelTaskRequest, ClientJsonRpcMessage, ClientRequest, CompleteRequest,
    ConstString, DiscoverRequest, ErrorCode, GetPromptRequest, GetSkillRequest, GetTaskRequest,
    InitializeRequest, JsonRpcMessage, ListPromptsRequest, ListResourceTemplatesRequest,
    ListResourcesRequest, ListSkillsRequest, ListToolsRequest, NumberOrString, PingRequest,
    ReadResourceDirectoryRequest, ReadResourceRequest, Request, RequestId, RequestNoParam,
    RequestOptionalParam, ServerJsonRpcMessage, SubscriptionsListenRequest, UpdateTaskRequest,
};
#[allow(deprecated)]
use rmcp::model::{SetLevelRequest, SubscribeRequest, UnsubscribeRequest};
use serde::Deserializer as _;
use serde::de::{DeserializeOwned, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::error::Category;
use std::pin::Pin;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest line accepted from a client; longer ones are refused, not buffered whole.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// The most of a parser's complaint an error message repeats: the complaint may quote the
/// offending value, which the client wrote and which may be megabytes long.
const MAX_DETAIL_CHARS: usize = 300;

/// The client's messages as the front passed them, for rmcp to serve.
pub type Passed = Pin<Box<dyn Stream<Item = ClientJsonRpcMessage> + Send>>;

/// Where rmcp's messages go: written to the client whole, one line each.
pub type Answers = Pin<Box<dyn Sink<ServerJsonRpcMessage, Error = std::io::Error> + Send>>;

/// Starts the front on the given streams and returns what rmcp serves on: the messages that
/// passed, already parsed (rmcp would parse them exactly so), and the sink its answers go
/// to. The client is read as rmcp asks for its next message, in rmcp's own task, so nothing
/// waits in between and a client that sends faster than rmcp takes is held back as a pipe
/// would hold it. rmcp's answers and the front's errors are each written whole, under one
/// lock, so the two never interleave inside a frame.
pub fn front<R, W>(input: R, output: W) -> (Answers, Passed)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let output = Arc::new(tokio::sync::Mutex::new(output));
    let reading = Reading {
        reader: BufReader::new(input),
        errors: output.clone(),
    };
    let messages = futures::stream::unfold(reading, |mut reading| async move {
        loop {
            let answer = match read_bounded_line(&mut reading.reader).await {
                Ok(None) => return None,
                Ok(Some(Incoming::TooLong(length))) => ErrorReply::parse_error(
                    None,
                    format!(
                        "the message was {length} bytes or more; the limit is {MAX_LINE_BYTES} bytes per line"
                    ),
                ),
                Ok(Some(Incoming::Line(line))) => {
                    let message = without_byte_order_mark(line.trim_ascii());
                    if message.is_empty() {
                        continue;
                    }
                    match vet(message) {
                        Verdict::Pass(parsed) => return Some((*parsed, reading)),
                        Verdict::Ignore => {
                            tracing::debug!("dropped a notification rmcp cannot read");
                            continue;
                        }
                        Verdict::Answer(reply) => reply,
                    }
                }
                Err(error) => {
                    tracing::debug!(%error, "stdin closed");
                    return None;
                }
            };
            if write_line(&reading.errors, answer.to_line()).await.is_err() {
                return None;
            }
        }
    });
    let answers =
        futures::sink::unfold(output, |output, message: ServerJsonRpcMessage| async move {
            let mut line = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
            line.push(b'\n');
            write_line(&output, line).await?;
            Ok(output)
        });
    (Box::pin(answers), Box::pin(messages))
}

/// What the front reads from.
pub type Input = Box<dyn AsyncRead + Unpin + Send>;

/// What the front writes to.
pub type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// This process's stdin and stdout, for the front.
///
/// Clients start their servers on a pipe (most) or a socket pair (Node's child processes),
/// and those are read and written by the runtime as they become ready. tokio's own stdin and
/// stdout would hand every read, write and flush to a blocking thread and wait for it to come
/// back: three hand-offs per call, which cost more than answering most calls. Anything else
/// (a terminal, a file) keeps tokio's, which works on everything. Being made non-blocking
/// affects only the client's connection, which this process alone reads and writes. On
/// Windows, tokio's own are used.
pub fn process_stdio() -> (Input, Output) {
    #[cfg(unix)]
    {
        ready::process_stdio()
    }
    #[cfg(not(unix))]
    {
        (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
    }
}

/// Pipes and sockets the runtime waits on, on Unix.
#[cfg(unix)]
mod ready {
    use std::fs::FileType;
    use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt as _;

    use super::{Input, Output};

    pub(super) fn process_stdio() -> (Input, Output) {
        let input = ready_for_runtime(std::io::stdin().as_fd(), |fd, kind| {
            if kind.is_fifo() {
                Some(Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(fd).ok()?) as Input)
            } else {
                Some(Box::new(socket(fd)?) as Input)
            }
        })
        .unwrap_or_else(|| Box::new(tokio::io::stdin()));
        let output = ready_for_runtime(std::io::stdout().as_fd(), |fd, kind| {
            if kind.is_fifo() {
                Some(Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(fd).ok()?) as Output)
            } else {
                Some(Box::new(socket(fd)?) as Output)
            }
        })
        .unwrap_or_else(|| Box::new(tokio::io::stdout()));
        (input, output)
    }

    /// `wrap`'s stream over a copy of `fd` when `fd` is a pipe or a socket, which the runtime can
    /// wait on; `None` for anything else, or when the copy cannot be made or registered. `wrap`
    /// makes the connection non-blocking; when it then fails, the connection is made blocking
    /// again, as tokio's stdio, which takes over, expects it.
    fn ready_for_runtime<T>(
        fd: BorrowedFd<'_>,
        wrap: impl FnOnce(OwnedFd, FileType) -> Option<T>,
    ) -> Option<T> {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        (kind.is_fifo() || kind.is_socket()).then_some(())?;
        let wrapped = wrap(file.into(), kind);
        if wrapped.is_none() {
            make_blocking(fd);
        }
        wrapped
    }

    /// Clears `O_NONBLOCK` on `fd`'s open file.
    fn make_blocking(fd: BorrowedFd<'_>) {
        use std::os::fd::AsRawFd as _;
        // SAFETY: fcntl reads and sets the status flags of a descriptor this process holds open
        // (borrowed for the call); it touches no memory.
        unsafe {
            let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
            if flags >= 0 && flags & libc::O_NONBLOCK != 0 {
                libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }

    /// A stream socket given as stdin or stdout. Reading and writing a socket is the same calls
    /// whatever its family, so a Unix stream serves any of them.
    fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
        let socket = std::os::unix::net::UnixStream::from(fd);
        socket.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(socket).ok()
    }
}

/// The client's side of the front: what it reads from, and where its refusals go.
struct Reading<R, W> {
    reader: BufReader<R>,
    errors: Arc<tokio::sync::Mutex<W>>,
}

/// Writes one whole line to the client and flushes it.
async fn write_line<W: AsyncWrite + Unpin>(
    output: &tokio::sync::Mutex<W>,
    line: Vec<u8>,
) -> std::io::Result<()> {
    let mut output = output.lock().await;
    output.write_all(&line).await?;
    output.flush().await
}

enum Incoming {
    Line(Vec<u8>),
    TooLong(usize),
}

/// Reads one line without ever holding more than the limit; the rest of an oversized line is
/// skipped as it streams past.
async fn read_bounded_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> std::io::Result<Option<Incoming>> {
    let mut line = Vec::new();
    let mut skipped = 0usize;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match (line.is_empty(), skipped) {
                (true, 0) => None,
                (_, 0) => Some(Incoming::Line(line)),
                (_, n) => Some(Incoming::TooLong(n)),
            });
        }
        let (chunk, found_end) = match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => (&buffer[..end], true),
            None => (buffer, false),
        };
        let consumed = chunk.len() + usize::from(found_end);
        if skipped > 0 || line.len() + chunk.len() > MAX_LINE_BYTES {
            skipped += line.len() + chunk.len();
            line = Vec::new();
        } else {
            line.extend_from_slice(chunk);
        }
        reader.consume(consumed);
        if found_end {
            return Ok(Some(if skipped > 0 {
                Incoming::TooLong(skipped)
            } else {
                Incoming::Line(line)
            }));
        }
    }
}

/// A message without the UTF-8 byte order mark a client may put first; rmcp's stdio codec
/// skips it too, and the message handed on is the one judged.
pub fn without_byte_order_mark(message: &[u8]) -> &[u8] {
    message.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(message)
}

/// What becomes of one incoming JSON-RPC message.
#[derive(Debug)]
pub enum Verdict {
    /// rmcp parses it as this message: hand it on.
    Pass(Box<ClientJsonRpcMessage>),
    /// A notification rmcp cannot read. JSON-RPC never answers a notification, and rmcp
    /// would drop it too, so it goes no further.
    Ignore,
    /// rmcp would drop it or answer it badly: answer with this error instead.
    Answer(ErrorReply),
}

/// A JSON-RPC error answer, made before rmcp sees the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReply {
    /// The request's id; `None` when it cannot be read, which JSON-RPC writes as `id: null`.
    pub id: Option<RequestId>,
    pub code: ErrorCode,
    pub message: String,
}

impl ErrorReply {
    fn parse_error(id: Option<RequestId>, detail: impl std::fmt::Display) -> ErrorReply {
        ErrorReply {
            id,
            code: ErrorCode::PARSE_ERROR,
            message: format!("Parse error: {detail}"),
        }
    }

    fn invalid_request(id: Option<RequestId>, detail: impl std::fmt::Display) -> ErrorReply {
        ErrorReply {
            id,
            code: ErrorCode::INVALID_REQUEST,
            message: format!("Invalid request: {detail}"),
        }
    }

    pub fn invalid_params(id: RequestId, detail: impl std::fmt::Display) -> ErrorReply {
        ErrorReply {
            id: Some(id),
            code: ErrorCode::INVALID_PARAMS,
            message: format!("Invalid params: {detail}"),
        }
    }

    /// The same error as rmcp's, for a handler to return: rmcp adds the request's id.
    pub fn into_mcp_error(self) -> rmcp::ErrorData {
        rmcp::ErrorData::new(self.code, self.message, None)
    }

    /// The JSON-RPC error object, `id` always present.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": self.id.clone().map_or(Value::Null, NumberOrString::into_json_value),
            "error": {"code": self.code.0, "message": self.message},
        })
    }

    fn to_line(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(&self.to_json()).expect("frames serialise");
        bytes.push(b'\n');
        bytes
    }
}

/// Judges one JSON-RPC message by rmcp's own parse, so that whatever passes, rmcp reads.
pub fn vet(message: &[u8]) -> Verdict {
    let Ok(text) = std::str::from_utf8(message) else {
        return Verdict::Answer(ErrorReply::parse_error(
            None,
            "the message is not UTF-8; send one JSON-RPC message per line, as UTF-8 JSON",
        ));
    };
    match serde_json::from_str::<ClientJsonRpcMessage>(text) {
        Ok(parsed) => match misfit_params(&parsed) {
            Some(reply) => Verdict::Answer(reply),
            None => Verdict::Pass(Box::new(parsed)),
        },
        Err(error) => refusal(text, &error),
    }
}

/// What to do with a message rmcp cannot parse, judged from its outline.
fn refusal(text: &str, error: &serde_json::Error) -> Verdict {
    let detail = bounded(&error.to_string());
    let Ok(outline) = Outline::read(text) else {
        return Verdict::Answer(ErrorReply::parse_error(
            None,
            format!("the message is not JSON ({detail}); send one JSON-RPC message per line"),
        ));
    };
    if matches!(error.classify(), Category::Syntax | Category::Eof) {
        // JSON in its shape, but not readable whole: a lone surrogate in a `\u` escape, a
        // number too large for a double, nesting deeper than 128 levels.
        let id = match outline {
            Outline::Object { id, .. } => id,
            Outline::Batch | Outline::Other => None,
        };
        return Verdict::Answer(ErrorReply::parse_error(
            id,
            format!(
                "the message cannot be read ({detail}); strings must be valid Unicode, numbers must fit a double, and values may nest at most 128 levels deep"
            ),
        ));
    }
    match outline {
        Outline::Batch => Verdict::Answer(ErrorReply::invalid_request(
            None,
            "JSON-RPC batches are not accepted; send each message on its own",
        )),
        Outline::Other => Verdict::Answer(ErrorReply::invalid_request(
            None,
            "a JSON-RPC message is a JSON object",
        )),
        Outline::Object {
            has_id: false,
            says_2_0: true,
            has_method: true,
            ..
        } => Verdict::Ignore,
        Outline::Object {
            id,
            says_2_0: false,
            ..
        } => Verdict::Answer(ErrorReply::invalid_request(
            id,
            "the message must say \"jsonrpc\": \"2.0\"",
        )),
        Outline::Object { id, .. } => Verdict::Answer(ErrorReply::invalid_request(
            id,
            format!("this is not an MCP message ({detail})"),
        )),
    }
}

/// A parser's complaint, cut to [`MAX_DETAIL_CHARS`].
fn bounded(detail: &str) -> String {
    match detail.char_indices().nth(MAX_DETAIL_CHARS) {
        Some((end, _)) => format!("{}…", &detail[..end]),
        None => detail.to_string(),
    }
}

/// A message as seen from outside, read without the checks that can make the full parse
/// fail: serde_json skips an ignored value without recursing and without decoding its
/// escapes, so only the top level and the members read here must be well-formed.
#[derive(Debug, PartialEq, Eq)]
enum Outline {
    Object {
        /// The `id`, when it is a string or an integer.
        id: Option<RequestId>,
        has_id: bool,
        says_2_0: bool,
        has_method: bool,
    },
    Batch,
    Other,
}

impl Outline {
    fn read(text: &str) -> Result<Outline, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let outline = deserializer.deserialize_any(OutlineVisitor)?;
        deserializer.end()?;
        Ok(outline)
    }
}

struct OutlineVisitor;

impl<'de> Visitor<'de> for OutlineVisitor {
    type Value = Outline;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Outline, A::Error> {
        let (mut id, mut has_id, mut says_2_0, mut has_method) = (None, false, false, false);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" => {
                    has_id = true;
                    id = map.next_value::<LenientId>()?.0;
                }
                "jsonrpc" => {
                    says_2_0 = map.next_value::<LenientText>()?.0.as_deref() == Some("2.0")
                }
                "method" => has_method = map.next_value::<LenientText>()?.0.is_some(),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Outline::Object {
            id,
            has_id,
            says_2_0,
            has_method,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Outline, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Outline::Batch)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Outline, E> {
        Ok(Outline::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Outline, E> {
        Ok(Outline::Other)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Outline, E> {
        Ok(Outline::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Outline, E> {
        Ok(Outline::Other)
    }

    fn visit_str<E>(self, _: &str) -> Result<Outline, E> {
        Ok(Outline::Other)
    }

    fn visit_unit<E>(self) -> Result<Outline, E> {
        Ok(Outline::Other)
    }
}

/// A value read as a string when it is one and skipped otherwise.
struct LenientText(Option<String>);

impl<'de> serde::Deserialize<'de> for LenientText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(LenientVisitor(text_of))
            .map(LenientText)
    }
}

fn text_of(value: Scalar) -> Option<String> {
    match value {
        Scalar::Text(text) => Some(text.to_string()),
        Scalar::Number(_) => None,
    }
}

/// A value read as a JSON-RPC id (a string or an integer, by rmcp's rules) when it is one,
/// and skipped otherwise.
struct LenientId(Option<RequestId>);

impl<'de> serde::Deserialize<'de> for LenientId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(LenientVisitor(id_of))
            .map(LenientId)
    }
}

fn id_of(value: Scalar) -> Option<RequestId> {
    let value = match value {
        Scalar::Text(text) => Value::String(text.to_string()),
        Scalar::Number(number) => Value::Number(number),
    };
    serde_json::from_value::<RequestId>(value).ok()
}

/// A scalar a lenient read may keep.
enum Scalar<'a> {
    Text(&'a str),
    Number(serde_json::Number),
}

/// Reads a scalar through `keep`, and skips anything else without recursing into it.
struct LenientVisitor<F>(F);

impl<'de, T, F: FnOnce(Scalar) -> Option<T>> Visitor<'de> for LenientVisitor<F> {
    type Value = Option<T>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_str<E>(self, text: &str) -> Result<Option<T>, E> {
        Ok((self.0)(Scalar::Text(text)))
    }

    fn visit_i64<E>(self, number: i64) -> Result<Option<T>, E> {
        Ok((self.0)(Scalar::Number(number.into())))
    }

    fn visit_u64<E>(self, number: u64) -> Result<Option<T>, E> {
        Ok((self.0)(Scalar::Number(number.into())))
    }

    fn visit_f64<E>(self, number: f64) -> Result<Option<T>, E> {
        Ok(
            serde_json::Number::from_f64(number)
                .and_then(|number| (self.0)(Scalar::Number(number))),
        )
    }

    fn visit_bool<E>(self, _: bool) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<T>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// A request for a method rmcp knows whose params do not fit it: rmcp takes it for a custom
/// request and answers "method not found", which sends the client looking for the wrong
/// mistake. Invalid params, saying what did not fit, is the right answer.
fn misfit_params(message: &ClientJsonRpcMessage) -> Option<ErrorReply> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CustomRequest(custom) = &request.request else {
        return None;
    };
    let detail = misfit(&custom.method, custom.params.as_ref())?;
    Some(ErrorReply::invalid_params(request.id.clone(), detail))
}

/// The answer to a request rmcp took for a custom one: invalid params naming what did not fit
/// when the method is one rmcp knows, otherwise "method not found" with the method's name cut
/// to a bounded length (the client may have sent a name of megabytes).
pub fn custom_request_error(
    id: RequestId,
    method: &str,
    params: Option<&Value>,
) -> rmcp::ErrorData {
    match misfit(method, params) {
        Some(detail) => ErrorReply::invalid_params(id, detail).into_mcp_error(),
        None => rmcp::ErrorData::new(ErrorCode::METHOD_NOT_FOUND, bounded(method), None),
    }
}

/// What does not fit in the params of a request rmcp took for a custom one, when its
/// `method` is one rmcp knows, worded for the client; `None` for a method rmcp does not know.
pub fn misfit(method: &str, params: Option<&Value>) -> Option<String> {
    let complaint = KNOWN_REQUESTS
        .iter()
        .find_map(|complaint| complaint(method, params))?;
    Some(format!(
        "the params do not fit `{}` ({}); see the method's params in the MCP schema",
        bounded(method),
        bounded(&complaint)
    ))
}

/// A request type of rmcp's, by its method name.
trait KnownRequest: DeserializeOwned {
    const METHOD: &'static str;
}

impl<M: ConstString, P: DeserializeOwned> KnownRequest for Request<M, P>
where
    Request<M, P>: DeserializeOwned,
{
    const METHOD: &'static str = M::VALUE;
}

impl<M: ConstString, P> KnownRequest for RequestOptionalParam<M, P>
where
    RequestOptionalParam<M, P>: DeserializeOwned,
{
    const METHOD: &'static str = M::VALUE;
}

impl<M: ConstString> KnownRequest for RequestNoParam<M>
where
    RequestNoParam<M>: DeserializeOwned,
{
    const METHOD: &'static str = M::VALUE;
}

/// Given a method and its params: what is wrong with them, if the method is the check's own.
type ParamsCheck = fn(&str, Option<&Value>) -> Option<String>;

/// What is wrong with `params` when `method` is `R`'s and they do not make an `R`.
fn complaint<R: KnownRequest>(method: &str, params: Option<&Value>) -> Option<String> {
    if method != R::METHOD {
        return None;
    }
    let mut request = serde_json::Map::new();
    request.insert("method".into(), Value::String(method.to_string()));
    if let Some(params) = params {
        request.insert("params".into(), params.clone());
    }
    serde_json::from_value::<R>(Value::Object(request))
        .err()
        .map(|error| error.to_string())
}

/// Every request type of rmcp's `ClientRequest` but its catch-all `CustomRequest`.
#[allow(deprecated)]
const KNOWN_REQUESTS: &[ParamsCheck] = &[
    complaint::<PingRequest>,
    complaint::<InitializeRequest>,
    complaint::<DiscoverRequest>,
    complaint::<CompleteRequest>,
    complaint::<SetLevelRequest>,
    complaint::<GetPromptRequest>,
    complaint::<ListPromptsRequest>,
    complaint::<ListResourcesRequest>,
    complaint::<ListResourceTemplatesRequest>,
    complaint::<ReadResourceRequest>,
    complaint::<SubscriptionsListenRequest>,
    complaint::<SubscribeRequest>,
    complaint::<UnsubscribeRequest>,
    complaint::<CallToolRequest>,
    complaint::<ListToolsRequest>,
    complaint::<GetTaskRequest>,
    complaint::<UpdateTaskRequest>,
    complaint::<CancelTaskRequest>,
    complaint::<ListSkillsRequest>,
    complaint::<GetSkillRequest>,
    complaint::<ReadResourceDirectoryRequest>,
];

#[cfg(test)]
mod tests {
    use super::*;
    use futures::SinkExt;
    use serde_json::json;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn answers_and_refusals_reach_the_client_each_on_a_line_of_its_own() {
        let (mut client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_out) = tokio::io::duplex(1 << 16);
        let (mut answers, passed) = front(server_in, server_out);
        let answer: ServerJsonRpcMessage =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 7, "result": {}})).unwrap();
        answers.send(answer).await.unwrap();
        client_in.write_all(b"[1]\n").await.unwrap();
        drop(client_in);
        assert_eq!(futures::StreamExt::count(passed).await, 0);
        drop(answers);
        let lines = lines_written(client_out).await;
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0], json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
        assert_eq!(lines[1]["error"]["code"], -32600);
    }

    /// Every line the front wrote to the client, as JSON, once the front has let go of it.
    async fn lines_written(mut client_out: tokio::io::DuplexStream) -> Vec<Value> {
        let mut written = String::new();
        client_out.read_to_string(&mut written).await.unwrap();
        written
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn answer(message: &str) -> ErrorReply {
        match vet(message.as_bytes()) {
            Verdict::Answer(reply) => reply,
            other => panic!("{message} was not answered: {other:?}"),
        }
    }

    fn deep(levels: usize) -> String {
        format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn a_custom_request_is_answered_with_its_misfit_or_a_bounded_method_name() {
        let id = RequestId::Number(7);
        let long = "x".repeat(10_000);
        let unknown = custom_request_error(id.clone(), &long, None);
        assert_eq!(unknown.code, ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(unknown.message.chars().count(), MAX_DETAIL_CHARS + 1);
        let misfit = custom_request_error(id, "tools/call", Some(&json!({"name": 5})));
        assert_eq!(misfit.code, ErrorCode::INVALID_PARAMS);
        assert!(misfit.message.contains("tools/call"), "{}", misfit.message);
    }

    #[test]
    fn what_rmcp_parses_passes() {
        for message in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"vendor/own","params":{"any":1}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        ] {
            assert!(
                matches!(vet(message.as_bytes()), Verdict::Pass(_)),
                "{message}"
            );
        }
        let nested = format!(
            r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}}}}}}}"#,
            deep(100)
        );
        assert!(matches!(vet(nested.as_bytes()), Verdict::Pass(_)));
    }

    #[test]
    fn what_rmcp_would_drop_is_answered_with_the_request_id() {
        let surrogate = answer(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"s":"\ud800"}}}"#,
        );
        assert_eq!(surrogate.code, ErrorCode::PARSE_ERROR);
        assert_eq!(surrogate.id, Some(NumberOrString::Number(7)));
        assert!(surrogate.message.contains("escape"), "{surrogate:?}");

        let nested = answer(&format!(
            r#"{{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{{"name":"x","arguments":{{"a":{}}}}}}}"#,
            deep(200)
        ));
        assert_eq!(nested.code, ErrorCode::PARSE_ERROR);
        assert_eq!(nested.id, Some(NumberOrString::String("deep".into())));
        assert!(nested.message.contains("128"), "{nested:?}");

        let unreadable_id = answer(r#"{"jsonrpc":"2.0","id":"\ud800","method":"ping"}"#);
        assert_eq!(unreadable_id.id, None);
        let odd_id = answer(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"x","params":{}}}"#,
            deep(300),
            deep(300)
        ));
        assert_eq!((odd_id.code, odd_id.id), (ErrorCode::PARSE_ERROR, None));
    }

    #[test]
    fn malformed_messages_are_parse_errors_with_id_null() {
        for message in [
            "not json",
            r#"{"jsonrpc": "2.0", "id": 2,"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"} trailing"#,
        ] {
            let reply = answer(message);
            assert_eq!(
                (reply.code, reply.id),
                (ErrorCode::PARSE_ERROR, None),
                "{message}"
            );
        }
        let reply = match vet(b"\xff\xfe") {
            Verdict::Answer(reply) => reply,
            other => panic!("{other:?}"),
        };
        assert!(reply.message.contains("UTF-8"), "{reply:?}");
    }

    #[test]
    fn batches_and_messages_without_jsonrpc_are_invalid_requests() {
        let batch = answer(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
        assert_eq!(
            (batch.code, batch.id.clone()),
            (ErrorCode::INVALID_REQUEST, None)
        );
        assert!(batch.message.contains("batch"), "{batch:?}");

        let unversioned = answer(r#"{"id":9,"method":"ping"}"#);
        assert_eq!(
            (unversioned.code, unversioned.id.clone()),
            (ErrorCode::INVALID_REQUEST, Some(NumberOrString::Number(9)))
        );
        assert!(
            unversioned.message.contains("\"jsonrpc\""),
            "{unversioned:?}"
        );

        let anonymous = answer(r#"{"method":"ping"}"#);
        assert_eq!(
            (anonymous.code, anonymous.id),
            (ErrorCode::INVALID_REQUEST, None)
        );

        let scalar = answer("5");
        assert_eq!(
            (scalar.code, scalar.id.clone()),
            (ErrorCode::INVALID_REQUEST, None)
        );
        assert_eq!(scalar.to_json()["id"], Value::Null);
        assert!(scalar.to_json().as_object().unwrap().contains_key("id"));
    }

    #[test]
    fn a_notification_rmcp_cannot_read_is_not_answered() {
        assert!(matches!(
            vet(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#),
            Verdict::Ignore
        ));
    }

    #[test]
    fn a_known_method_with_misfit_params_is_invalid_params() {
        let reply = answer(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":5}}"#);
        assert_eq!(
            (reply.code, reply.id.clone()),
            (ErrorCode::INVALID_PARAMS, Some(NumberOrString::Number(5)))
        );
        assert!(reply.message.contains("tools/call"), "{reply:?}");
        let reply = answer(r#"{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{}}"#);
        assert_eq!(reply.code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn complaints_are_bounded() {
        let huge = "x".repeat(100_000);
        let reply = answer(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":["{huge}"]}}}}"#
        ));
        assert!(
            reply.message.len() < 2 * MAX_DETAIL_CHARS + 200,
            "{}",
            reply.message.len()
        );
    }

    #[tokio::test]
    async fn bad_lines_are_answered_and_good_lines_pass() {
        let (mut client_in, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_out) = tokio::io::duplex(1 << 20);
        let (answers, passed) = front(server_in, server_out);
        client_in
            .write_all(
                b"not json\n\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\xff\xfe\n[1]\n{\"id\":3,\"method\":\"ping\"}\n",
            )
            .await
            .unwrap();
        drop(client_in);
        let passed: Vec<Value> = futures::StreamExt::collect::<Vec<_>>(passed)
            .await
            .iter()
            .map(|message| serde_json::to_value(message).unwrap())
            .collect();
        assert_eq!(passed.len(), 1, "{passed:?}");
        assert_eq!(passed[0]["method"], "x");
        drop(answers);
        let errors = lines_written(client_out).await;
        let codes: Vec<(i64, Value)> = errors
            .iter()
            .map(|e| (e["error"]["code"].as_i64().unwrap(), e["id"].clone()))
            .collect();
        assert_eq!(
            codes,
            [
                (-32700, Value::Null),
                (-32700, Value::Null),
                (-32600, Value::Null),
                (-32600, Value::from(3)),
            ]
        );
        assert!(
            errors[1]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("UTF-8")
        );
    }

    #[tokio::test]
    async fn an_oversized_line_is_refused_without_being_buffered() {
        let (mut client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, mut client_out) = tokio::io::duplex(1 << 16);
        let (answers, passed) = front(server_in, server_out);
        tokio::spawn(futures::StreamExt::count(passed));
        tokio::spawn(async move {
            let big = vec![b'x'; MAX_LINE_BYTES + 10];
            client_in.write_all(&big).await.unwrap();
            client_in.write_all(b"\n").await.unwrap();
        });
        let mut reader = BufReader::new(&mut client_out);
        let mut line = String::new();
        reader.read_line(&mut line).await.unwrap();
        assert!(line.contains("-32700") && line.contains("limit"), "{line}");
        drop(answers);
    }
}
