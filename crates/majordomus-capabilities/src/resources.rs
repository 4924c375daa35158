//! The MCP resources majordomus offers, declared in one place: the session handler lists,
//! reads and watches them from here, and the reference index lists them.

use rmcp::model::{Resource, ResourceContents, ServerCapabilities};
use serde_json::json;

use majordomus_core::context::Context;

/// The board of the checkout a session reached, as `peers.list` with `checkouts: this`
/// answers it.
pub const BOARD_URI: &str = "majordomus://board";

/// One resource: what `resources/list` says of it.
pub struct Declaration {
    pub uri: &'static str,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub mime_type: &'static str,
}

/// Every resource, in the order `resources/list` answers them.
pub const ALL: &[Declaration] = &[Declaration {
    uri: BOARD_URI,
    name: "board",
    title: "The board of this checkout",
    description: "Every peer attached to this checkout's server, what each claims, and the \
        overlaps among them: the answer of `peers.list` with `checkouts: this`, as JSON. \
        Subscribe to be sent `notifications/resources/updated` on every change of the board.",
    mime_type: "application/json",
}];

/// What a session's `initialize` answer declares: the tools, these resources (with
/// subscriptions), and logging, by which a peer is told of a new overlap with its claims.
// rmcp marks logging deprecated for the protocol's next revision; the revisions clients
// speak today have it, and it is how a client can be told of an overlap unasked.
#[allow(deprecated)]
pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities::builder()
        .enable_logging()
        .enable_resources()
        .enable_resources_subscribe()
        .enable_tools()
        .build()
}

/// `resources/list`.
pub fn listed() -> Vec<Resource> {
    ALL.iter()
        .map(|declaration| {
            Resource::new(declaration.uri, declaration.name)
                .with_title(declaration.title)
                .with_description(declaration.description)
                .with_mime_type(declaration.mime_type)
        })
        .collect()
}

/// Why a resource could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("there is no resource `{uri}`; the resources are {known}")]
    Unknown { uri: String, known: String },
    #[error("the board could not be read: {0}")]
    Failed(String),
}

/// Whether `uri` names one of [`ALL`]; the error names them when it does not.
pub fn check(uri: &str) -> Result<(), ReadError> {
    if ALL.iter().any(|declaration| declaration.uri == uri) {
        return Ok(());
    }
    Err(ReadError::Unknown {
        uri: majordomus_domain::text::sanitized(uri, 200),
        known: ALL
            .iter()
            .map(|declaration| format!("`{}`", declaration.uri))
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// `resources/read`: the resource's contents, as the caller's context sees them.
pub async fn read(ctx: &Context, uri: &str) -> Result<ResourceContents, ReadError> {
    check(uri)?;
    let listing = crate::registry()
        .by_id("peers.list")
        .expect("peers.list is a capability");
    let board = listing
        .call(ctx, json!({"checkouts": "this"}))
        .await
        .map_err(|error| ReadError::Failed(error.message))?;
    Ok(ResourceContents::text(board.to_string(), BOARD_URI).with_mime_type("application/json"))
}
