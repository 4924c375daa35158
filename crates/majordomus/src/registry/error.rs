//! The four ways a capability can refuse, mapped the same way on every surface.

/// What kind of refusal an error is; decides the HTTP status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
        match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Refused => "refused",
            ErrorKind::Internal => "internal",
        }
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
