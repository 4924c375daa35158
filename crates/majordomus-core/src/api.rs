//! What every surface shares about refusals: the four ways a capability can refuse, mapped
//! the same way on MCP, HTTP and the command line; the HTTP router's own refusals, made
//! before any capability runs, in one JSON error body; how a secret is compared; and the
//! limit on a request body.
//!
//! The router and the OpenAPI document both read these from here, so the document never
//! promises a status or a `kind` the router does not answer; the port and the registry name
//! the capability error from here, below both of them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// The largest request body accepted, on every route. Nothing majordomus is sent comes near it.
pub const BODY_LIMIT_BYTES: usize = 1024 * 1024;

/// What kind of refusal an error is; decides the HTTP status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum ErrorKind {
    /// The input is malformed: fix it and call again.
    InvalidInput,
    /// The thing named does not exist here.
    NotFound,
    /// Well-formed, but not possible from where the call came from.
    Refused,
    /// Something failed on this side.
    Internal,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 4] = [
        ErrorKind::InvalidInput,
        ErrorKind::NotFound,
        ErrorKind::Refused,
        ErrorKind::Internal,
    ];

    /// The word an HTTP error body names it by.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::InvalidInput => 400,
            ErrorKind::NotFound => 404,
            ErrorKind::Refused => 422,
            ErrorKind::Internal => 500,
        }
    }
}

/// A refusal with a message that says what was wrong and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapabilityError {
    pub kind: ErrorKind,
    pub message: String,
}

/// A board's refusal of an announcement, as every surface says it: bad input, or a peer
/// not on the board.
impl From<majordomus_domain::board::AnnounceError> for CapabilityError {
    fn from(error: majordomus_domain::board::AnnounceError) -> Self {
        use majordomus_domain::board::AnnounceError;
        match error {
            AnnounceError::InvalidInput(error) => CapabilityError::invalid_input(error.to_string()),
            AnnounceError::NotFound(error) => CapabilityError::not_found(error.to_string()),
        }
    }
}

impl CapabilityError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        CapabilityError {
            kind,
            message: message.into(),
        }
    }
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    pub fn refused(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Refused, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
}

impl std::fmt::Display for CapabilityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CapabilityError {}

/// The router's own refusals, made before any capability runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Rejection {
    /// No token, or the wrong one.
    Unauthorized,
    /// A Host or Origin that is not loopback.
    Forbidden,
    /// A new session at a server that lost its lease.
    Conflict,
    /// A body over [`BODY_LIMIT_BYTES`].
    PayloadTooLarge,
    /// A new MCP session beyond the session limit.
    Unavailable,
}

impl Rejection {
    pub const ALL: [Rejection; 5] = [
        Rejection::Unauthorized,
        Rejection::Forbidden,
        Rejection::Conflict,
        Rejection::PayloadTooLarge,
        Rejection::Unavailable,
    ];

    /// The word an HTTP error body names it by.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn status(self) -> StatusCode {
        match self {
            Rejection::Unauthorized => StatusCode::UNAUTHORIZED,
            Rejection::Forbidden => StatusCode::FORBIDDEN,
            Rejection::Conflict => StatusCode::CONFLICT,
            Rejection::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Rejection::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
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
    let body = serde_json::json!({ "error": { "kind": kind, "message": message.into() } });
    (status, axum::Json(body)).into_response()
}

/// Whether a secret given (a token, a ticket) is the one expected, compared in time
/// independent of where they differ.
pub fn same_secret(given: &str, expected: &str) -> bool {
    given.as_bytes().ct_eq(expected.as_bytes()).into()
}

/// For `#[serde(deserialize_with = "crate::api::never_null")]` on an optional input field:
/// the field may be left out (with `#[serde(default)]`) but not sent as `null`, as the input
/// schemas say (they take `null` out of optional fields), so what a schema refuses every
/// surface refuses.
pub fn never_null<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// For `#[serde(deserialize_with = "crate::api::whole_number")]` on an integer input field:
/// a whole number, which JSON may also write `7.0` (an `integer` schema takes both), so
/// what a schema takes every surface takes.
pub fn whole_number<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let number = <serde_json::Number as serde::Deserialize>::deserialize(deserializer)?;
    number
        .as_u64()
        .or_else(|| {
            number
                .as_f64()
                .filter(|float| float.fract() == 0.0 && *float >= 0.0 && *float < u64::MAX as f64)
                .map(|float| float as u64)
        })
        .ok_or_else(|| serde::de::Error::custom(format!("a whole number, not {number}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abd", "abc"));
        assert!(!same_secret("ab", "abc"));
    }

    #[test]
    fn error_bodies_name_their_kinds_in_snake_case() {
        let kinds: Vec<_> = error_kinds().collect();
        assert_eq!(
            kinds,
            [
                "invalid_input",
                "not_found",
                "refused",
                "internal",
                "unauthorized",
                "forbidden",
                "conflict",
                "payload_too_large",
                "unavailable",
            ]
        );
    }
}
