//! The four ways a capability can refuse, mapped the same way on every surface.

use serde::Serialize;

/// What kind of refusal an error is; decides the HTTP status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CapabilityError {
    pub kind: ErrorKind,
    pub message: String,
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
