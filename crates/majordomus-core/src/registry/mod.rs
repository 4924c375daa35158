//! The capability registry: every operation majordomus offers is declared here once, and every
//! surface (MCP tool, HTTP route, CLI command, OpenAPI operation, reference page, benchmark) is
//! derived from that one declaration.

mod schema;
pub mod sorted_json;
mod tool_list;

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use schema::{input_schema, output_schema};
pub use tool_list::{tool_input_schema, tool_output_schema};

use crate::api::CapabilityError;
use crate::context::Context;
pub use crate::context::Needs;

/// Whether a capability only reads (a query) or changes server state (a command).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum Kind {
    Query,
    Command,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// How settled a capability's contract is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum Stability {
    /// Its behaviour is proven end to end by the integration tests.
    BehaviorallyVerified,
    /// It works, but its contract may still move.
    Experimental,
}

impl Stability {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What a caller who does not reach as far as `declaration` needs is told, in the same words
/// on every surface: the registry says it before the capability runs, and a capability that
/// takes the serving process or the session out of its context says it too.
pub fn unreached(declaration: &Declaration) -> CapabilityError {
    match declaration.needs {
        Needs::Anyone => CapabilityError::internal(format!(
            "`{}` was refused a caller it runs for",
            declaration.id
        )),
        Needs::Server => CapabilityError::refused(format!(
            "`{}` is answered by the checkout's running server; start one with `majordomus \
             serve ensure`, or let a client's `majordomus mcp` start it",
            declaration.id
        )),
        Needs::Session => CapabilityError::refused(format!(
            "this call needs an MCP session to belong to: call the `{}` tool through \
             `majordomus mcp` (the bridge your MCP client runs) rather than over plain HTTP or \
             a session-less MCP request",
            declaration.exposure.mcp_tool.unwrap_or(declaration.id)
        )),
    }
}

/// The HTTP method of a route: a GET takes the input's fields as query parameters, a POST a
/// JSON body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "UPPERCASE")]
pub enum HttpMethod {
    Get,
    Post,
}

impl HttpMethod {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Where a capability can be reached. A surface left `None` does not carry it.
#[derive(Clone, Copy, Debug)]
pub struct Exposure {
    pub mcp_tool: Option<&'static str>,
    pub http: Option<(HttpMethod, &'static str)>,
    pub cli: Option<&'static [&'static str]>,
}

/// A user situation a capability exists for: shown on its reference page.
#[derive(Clone, Copy, Debug)]
pub struct Moment {
    pub headline: &'static str,
    pub detail: &'static str,
}

/// Everything about a capability except its code.
#[derive(Clone, Copy, Debug)]
pub struct Declaration {
    /// `module.name`, also the OpenAPI operationId.
    pub id: &'static str,
    pub kind: Kind,
    pub title: &'static str,
    pub description: &'static str,
    pub exposure: Exposure,
    pub tags: &'static [&'static str],
    pub stability: Stability,
    /// Whether calling it twice with the same input has the effect of calling it once; a bridge
    /// resends only such calls when it cannot know whether the first one ran.
    pub idempotent: bool,
    /// How far a caller must reach for it to run.
    pub needs: Needs,
    pub moments: &'static [Moment],
}

impl Declaration {
    pub fn module(&self) -> &'static str {
        self.id.split('.').next().unwrap_or(self.id)
    }
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A typed answer, or the same answer already made in the form the surface writes: a
/// capability whose answer is large and often the same (a crowded board's listing) makes it
/// once and hands it on, so no surface builds or walks it again.
pub enum Reply<T> {
    Typed(T),
    /// The JSON encoding of a `T`, exactly as [`sorted_json`] writes it.
    Encoded(Bytes),
    /// A `T` as a value, and the text that value writes ([`Form::Structured`]).
    Structured {
        text: String,
        value: Value,
    },
}

/// What a surface does with an answer, so that it is built once in the form the surface
/// writes rather than built in one form and read back into another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Its JSON, written as it is (a REST answer).
    Encoded,
    /// Its JSON as a value and as text (MCP's structured content and the text block beside
    /// it): built as a value and written from it, never encoded and decoded back.
    Structured,
}

/// A capability's answer as the surfaces receive it: its JSON, every object's keys sorted
/// ([`sorted_json`] for the encoded form, a [`Value`]'s sorted maps for the structured one;
/// the two write the same bytes).
#[derive(Clone, Debug)]
pub struct Answer(Built);

/// The one form an answer was built in ([`Form`]).
#[derive(Clone, Debug)]
enum Built {
    Encoded(Bytes),
    Structured { text: String, value: Value },
}

/// Bytes of an answer's JSON beyond which it is encoded (and decoded) on a blocking thread
/// rather than on the runtime's workers: a crowded repository's listing takes milliseconds
/// to encode, and a worker busy with it answers nothing else meanwhile — the identity probe
/// every other process asks `GET /` included.
pub const ENCODE_INLINE_BYTES: usize = 64 * 1024;

impl Answer {
    /// The answer's JSON as text and as a value; an encoded one over
    /// [`ENCODE_INLINE_BYTES`] decoded on a blocking thread.
    pub async fn into_text_and_value(self) -> Result<(String, Value), CapabilityError> {
        match self.0 {
            Built::Structured { text, value } => Ok((text, value)),
            Built::Encoded(bytes) => {
                inline_or_blocking(bytes.len(), "decoding the answer", move || decoded(bytes))
                    .await?
            }
        }
    }

    /// The answer as a JSON value.
    pub fn into_value(self) -> Result<Value, CapabilityError> {
        match self.0 {
            Built::Structured { value, .. } => Ok(value),
            Built::Encoded(bytes) => decoded(bytes).map(|(_, value)| value),
        }
    }

    /// The answer's JSON.
    pub fn into_bytes(self) -> Bytes {
        match self.0 {
            Built::Encoded(bytes) => bytes,
            Built::Structured { text, .. } => Bytes::from(text),
        }
    }
}

/// An encoded answer's text and value.
fn decoded(bytes: Bytes) -> Result<(String, Value), CapabilityError> {
    let value = serde_json::from_slice(&bytes).map_err(|error| {
        CapabilityError::internal(format!("could not decode the answer: {error}"))
    })?;
    let text = String::from_utf8(bytes.into())
        .map_err(|error| CapabilityError::internal(format!("the answer is not UTF-8: {error}")))?;
    Ok((text, value))
}

/// One operation, typed: the declaration, the input and output types and the handler.
pub trait Operation: Send + Sync + 'static {
    type Input: DeserializeOwned + Serialize + schemars::JsonSchema + Send;
    type Output: Serialize + DeserializeOwned + schemars::JsonSchema + Send + 'static;
    const DECLARATION: Declaration;

    /// How the CLI shows an answer to a person; `--json` shows the answer itself.
    fn render(output: &Self::Output) -> String {
        serde_json::to_string_pretty(output).expect("answers serialise")
    }

    fn run(
        ctx: &Context,
        input: Self::Input,
    ) -> impl Future<Output = Result<Self::Output, CapabilityError>> + Send;

    /// Named inputs a benchmark runs the operation with, declared with it so that every
    /// surface is measured with the same cases.
    fn bench_cases() -> Vec<(&'static str, Self::Input)>;

    /// Whether `input` names no one to act for but the caller's MCP session (a detach without
    /// the episode's id, a lease without a process): such a call is refused where there is no
    /// session (plain HTTP, the command line), though the capability itself reaches anyone.
    /// Declared beside the cases so that a benchmark row and a reference page expect what
    /// the handler does.
    fn input_needs_session(_input: &Self::Input) -> bool {
        false
    }

    /// About how many bytes `output` takes encoded, when it may be large: an answer over
    /// [`ENCODE_INLINE_BYTES`] is encoded on a blocking thread. Answers that are always
    /// small need not say (0).
    fn encoded_size_estimate(_output: &Self::Output) -> usize {
        0
    }

    /// What a surface that writes `form` is answered: [`Operation::run`]'s output, unless
    /// the capability has the same answer made already.
    fn reply(
        ctx: &Context,
        input: Self::Input,
        _form: Form,
    ) -> impl Future<Output = Result<Reply<Self::Output>, CapabilityError>> + Send {
        async move { Self::run(ctx, input).await.map(Reply::Typed) }
    }
}

type ErasedHandler =
    for<'a> fn(&'a Context, Value, Form) -> BoxFuture<'a, Result<Answer, CapabilityError>>;

/// A capability with its types erased, as the surfaces see it.
pub struct Capability {
    pub declaration: Declaration,
    input_schema: fn() -> Value,
    output_schema: fn() -> Value,
    bench_cases: fn() -> Vec<(&'static str, Value)>,
    input_needs_session: fn(&Value) -> bool,
    render: fn(&Value) -> String,
    handler: ErasedHandler,
}

impl Capability {
    pub fn of<O: Operation>() -> Self {
        Capability {
            declaration: O::DECLARATION,
            input_schema: input_schema::<O::Input>,
            output_schema: output_schema::<O::Output>,
            bench_cases: || {
                O::bench_cases()
                    .into_iter()
                    .map(|(name, input)| {
                        (name, serde_json::to_value(input).expect("inputs serialise"))
                    })
                    .collect()
            },
            input_needs_session: |input| {
                O::Input::deserialize(input).is_ok_and(|input| O::input_needs_session(&input))
            },
            render: |output| match serde_json::from_value::<O::Output>(output.clone()) {
                Ok(output) => O::render(&output),
                Err(_) => serde_json::to_string_pretty(output).expect("values serialise"),
            },
            handler: |ctx, input, form| Box::pin(run_erased::<O>(ctx, input, form)),
        }
    }

    pub fn id(&self) -> &'static str {
        self.declaration.id
    }

    pub fn input_schema(&self) -> Value {
        (self.input_schema)()
    }

    pub fn output_schema(&self) -> Value {
        (self.output_schema)()
    }

    pub fn bench_cases(&self) -> Vec<(&'static str, Value)> {
        (self.bench_cases)()
    }

    /// [`Operation::input_needs_session`] of a JSON input; an input that is not valid needs
    /// nothing, as it is refused for that first.
    pub fn input_needs_session(&self, input: &Value) -> bool {
        (self.input_needs_session)(input)
    }

    /// The answer as a person reads it in a terminal.
    pub fn render(&self, output: &Value) -> String {
        (self.render)(output)
    }

    /// Runs the capability on JSON input, as every surface does, and answers as it was
    /// answered: a surface that writes bytes writes an encoded answer as it is.
    pub async fn answer(&self, ctx: &Context, input: Value) -> Result<Answer, CapabilityError> {
        (self.handler)(ctx, input, Form::Encoded).await
    }

    /// Runs the capability on JSON input for a surface that sends its answer as a value and
    /// as text ([`Form::Structured`]).
    pub async fn answer_structured(
        &self,
        ctx: &Context,
        input: Value,
    ) -> Result<Answer, CapabilityError> {
        (self.handler)(ctx, input, Form::Structured).await
    }

    /// Runs the capability on JSON input and answers a JSON value, for the callers that
    /// read into the answer.
    pub async fn call(&self, ctx: &Context, input: Value) -> Result<Value, CapabilityError> {
        self.answer(ctx, input).await?.into_value()
    }
}

async fn run_erased<O: Operation>(
    ctx: &Context,
    input: Value,
    form: Form,
) -> Result<Answer, CapabilityError> {
    let input: O::Input = serde_json::from_value(input).map_err(|error| {
        let error = error.to_string();
        // serde says "missing field `x`"; say also that the field is required.
        let required = if error.starts_with("missing field") {
            " (it is required)"
        } else {
            ""
        };
        CapabilityError::invalid_input(format!(
            "the input of `{}` is not valid: {error}{required}; see its input schema",
            O::DECLARATION.id
        ))
    })?;
    if !ctx.reaches(O::DECLARATION.needs) {
        return Err(unreached(&O::DECLARATION));
    }
    let output = match O::reply(ctx, input, form).await? {
        Reply::Typed(output) => output,
        Reply::Encoded(bytes) => return Ok(Answer(Built::Encoded(bytes))),
        Reply::Structured { text, value } => return Ok(Answer(Built::Structured { text, value })),
    };
    let size = O::encoded_size_estimate(&output);
    let build = move || match form {
        Form::Encoded => encode::<O>(&output, size),
        Form::Structured => structure::<O>(&output),
    };
    inline_or_blocking(size, "encoding the answer", build).await?
}

/// Runs `work`, which handles an answer of about `size` bytes, on a blocking thread when
/// that is over [`ENCODE_INLINE_BYTES`] and on the calling worker otherwise. `what` names
/// the work in the error a failed thread gives.
pub async fn inline_or_blocking<T: Send + 'static>(
    size: usize,
    what: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, CapabilityError> {
    if size <= ENCODE_INLINE_BYTES {
        return Ok(work());
    }
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| CapabilityError::internal(format!("{what} failed: {error}")))
}

/// `output` as a value, and the text it writes: the same bytes [`encode`] gives, since a
/// [`Value`]'s maps keep their keys sorted.
fn structure<O: Operation>(output: &O::Output) -> Result<Answer, CapabilityError> {
    let value = serde_json::to_value(output).map_err(|error| {
        CapabilityError::internal(format!("could not encode the answer: {error}"))
    })?;
    let text = value.to_string();
    debug_assert_eq!(
        Some(text.as_bytes()),
        sorted_json::to_vec(output, text.len()).ok().as_deref(),
        "the answer of `{}` is not written from its value as it is encoded",
        O::DECLARATION.id
    );
    Ok(Answer(Built::Structured { text, value }))
}

/// `output` encoded as every surface writes it, in a buffer of about the `size` its
/// operation estimates. Debug builds check each answer against the encoding through a
/// `Value` that [`sorted_json`] stands in for, so every test that gets an answer checks the
/// two agree.
fn encode<O: Operation>(output: &O::Output, size: usize) -> Result<Answer, CapabilityError> {
    let encoded = sorted_json::to_vec(output, size).map_err(|error| {
        CapabilityError::internal(format!("could not encode the answer: {error}"))
    })?;
    debug_assert_eq!(
        Some(encoded.as_slice()),
        serde_json::to_value(output)
            .and_then(|value| serde_json::to_vec(&value))
            .ok()
            .as_deref(),
        "the answer of `{}` is not encoded as through a value",
        O::DECLARATION.id
    );
    Ok(Answer(Built::Encoded(Bytes::from(encoded))))
}

/// Every capability, in the order the reference index lists them.
pub struct Registry {
    capabilities: Vec<Capability>,
}

impl Registry {
    /// A registry of `capabilities`, in the order given. It knows nothing of which
    /// capabilities exist: the capabilities module lists them and builds the registry of the
    /// build (`capabilities::registry`). Refused when two of them claim one id, tool name,
    /// route or CLI path: on any surface that would silently make one of them unreachable;
    /// and when one that needs an MCP session has a route or a command, where it could never
    /// run.
    pub fn new(capabilities: Vec<Capability>) -> Result<Registry, String> {
        check_unique(&capabilities)?;
        check_reachable(&capabilities)?;
        Ok(Registry { capabilities })
    }

    pub fn iter(&self) -> impl Iterator<Item = &Capability> {
        self.capabilities.iter()
    }

    pub fn by_id(&self, id: &str) -> Option<&Capability> {
        self.iter().find(|c| c.id() == id)
    }

    pub fn by_tool(&self, tool: &str) -> Option<&Capability> {
        self.iter()
            .find(|c| c.declaration.exposure.mcp_tool == Some(tool))
    }

    pub fn tool_names(&self) -> Vec<&'static str> {
        self.iter()
            .filter_map(|c| c.declaration.exposure.mcp_tool)
            .collect()
    }
}

fn check_unique(capabilities: &[Capability]) -> Result<(), String> {
    let mut seen = std::collections::HashMap::new();
    for capability in capabilities {
        let exposure = capability.declaration.exposure;
        let keys = [
            Some(format!("id {}", capability.id())),
            exposure.mcp_tool.map(|tool| format!("MCP tool {tool}")),
            exposure
                .http
                .map(|(method, path)| format!("route {} {path}", method.as_str())),
            exposure
                .cli
                .map(|words| format!("command `{}`", words.join(" "))),
        ];
        for key in keys.into_iter().flatten() {
            if let Some(first) = seen.insert(key.clone(), capability.id()) {
                return Err(format!(
                    "{key} is declared by both {first} and {}",
                    capability.id()
                ));
            }
        }
    }
    Ok(())
}

fn check_reachable(capabilities: &[Capability]) -> Result<(), String> {
    let unreachable = capabilities.iter().find(|capability| {
        let declaration = &capability.declaration;
        declaration.needs == Needs::Session
            && (declaration.exposure.http.is_some() || declaration.exposure.cli.is_some())
    });
    match unreachable {
        Some(capability) => Err(format!(
            "{} needs an MCP session, so it has no route or command",
            capability.id()
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::VariantArray;

    #[test]
    fn declarations_are_written_in_the_words_as_str_gives() {
        for &kind in Kind::VARIANTS {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        for &stability in Stability::VARIANTS {
            assert_eq!(serde_json::to_value(stability).unwrap(), stability.as_str());
        }
        assert_eq!(
            [HttpMethod::Get, HttpMethod::Post].map(HttpMethod::as_str),
            ["GET", "POST"]
        );
    }

    /// A capability of the test's own, so the registry's rules are tested apart from the
    /// capabilities this build has.
    struct Echo;

    #[derive(Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Nothing {}

    impl Operation for Echo {
        type Input = Nothing;
        type Output = Nothing;
        const DECLARATION: Declaration = Declaration {
            id: "server.status",
            kind: Kind::Query,
            title: "Echo",
            description: "Answers what it was given.",
            exposure: Exposure {
                mcp_tool: Some("majordomus_server"),
                http: Some((HttpMethod::Get, "/api/v1/server")),
                cli: Some(&["serve", "status"]),
            },
            tags: &[],
            stability: Stability::Experimental,
            idempotent: true,
            needs: Needs::Anyone,
            moments: &[],
        };

        async fn run(_ctx: &Context, input: Nothing) -> Result<Nothing, CapabilityError> {
            Ok(input)
        }

        fn bench_cases() -> Vec<(&'static str, Nothing)> {
            vec![("nothing", Nothing {})]
        }
    }

    #[test]
    fn a_duplicate_tool_name_route_or_command_is_refused() {
        let twice = |edit: fn(&mut Declaration)| {
            let first = Capability::of::<Echo>();
            let mut second = Capability::of::<Echo>();
            second.declaration.id = "server.other";
            second.declaration.exposure = Exposure {
                mcp_tool: Some("other_tool"),
                http: Some((HttpMethod::Get, "/api/v1/other")),
                cli: Some(&["other"]),
            };
            edit(&mut second.declaration);
            Registry::new(vec![first, second]).map(drop)
        };
        assert!(twice(|_| {}).is_ok());
        let tool = twice(|d| d.exposure.mcp_tool = Some("majordomus_server")).unwrap_err();
        assert!(tool.contains("MCP tool majordomus_server"), "{tool}");
        let route = twice(|d| d.exposure.http = Some((HttpMethod::Get, "/api/v1/server")));
        assert!(route.unwrap_err().contains("route GET /api/v1/server"));
        let cli = twice(|d| d.exposure.cli = Some(&["serve", "status"]));
        assert!(cli.unwrap_err().contains("command `serve status`"));
        let id = twice(|d| d.id = "server.status");
        assert!(id.unwrap_err().contains("id server.status"));
    }

    #[test]
    fn a_capability_that_needs_a_session_has_neither_route_nor_command() {
        let needing = |exposure: Exposure| {
            let mut echo = Capability::of::<Echo>();
            echo.declaration.needs = Needs::Session;
            echo.declaration.exposure = exposure;
            Registry::new(vec![echo]).map(drop)
        };
        let tool_only = Exposure {
            mcp_tool: Some("majordomus_server"),
            http: None,
            cli: None,
        };
        assert!(needing(tool_only).is_ok());
        for exposure in [
            Exposure {
                http: Some((HttpMethod::Post, "/api/v1/server")),
                ..tool_only
            },
            Exposure {
                cli: Some(&["serve", "status"]),
                ..tool_only
            },
        ] {
            let refused = needing(exposure).unwrap_err();
            assert!(
                refused.contains("server.status needs an MCP session"),
                "{refused}"
            );
        }
    }
}
