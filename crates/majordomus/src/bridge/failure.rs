//! Why a forwarded call failed, and what the bridge does about it: sent again through a
//! failover only when that cannot do harm.

use rmcp::transport::streamable_http_client::StreamableHttpError;
use rmcp::{ErrorData as McpError, ServiceError};

use majordomus_server::mcp::is_let_go;
use majordomus_server::run::Silence;

/// Why a forwarded call failed, as far as the bridge can tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The server provably did not run it: it never left this process, the connection was
    /// refused, or the server refused the session before reading the call (an unknown
    /// session, or one it let go for its silence).
    NotExecuted(String),
    /// It was written to the server and no answer came: it may or may not have run.
    OutcomeUnknown(String),
    /// The server answered with an HTTP error instead of an MCP answer; that is the answer,
    /// not a failover.
    Refused(String),
}

impl Failure {
    pub(super) fn describe(&self) -> &str {
        match self {
            Failure::NotExecuted(why) | Failure::OutcomeUnknown(why) | Failure::Refused(why) => why,
        }
    }
}

/// What the bridge does after a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// Elect again and send the call to whoever serves now.
    ResendAfterFailover,
    /// Elect again, but tell the client the outcome is unknown rather than risk running a
    /// write twice.
    FailoverAndReportUnknown,
    /// Hand the error to the client; nothing is wrong with the upstream.
    PassThrough,
}

/// The resend rule: a call is sent again only when that cannot do harm — it is idempotent,
/// or it provably never ran.
pub fn recovery(idempotent: bool, failure: &Failure) -> Recovery {
    match failure {
        Failure::Refused(_) => Recovery::PassThrough,
        Failure::NotExecuted(_) => Recovery::ResendAfterFailover,
        Failure::OutcomeUnknown(_) if idempotent => Recovery::ResendAfterFailover,
        Failure::OutcomeUnknown(_) => Recovery::FailoverAndReportUnknown,
    }
}

/// How far a request got before it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    /// rmcp refused it before it entered the session: it never left this process.
    Refused,
    /// It was handed to the session, which writes it to the server.
    Handed,
}

/// Sorts an rmcp client error into a protocol answer (passed through as it is) or a failure,
/// by the error's type alone.
pub(super) fn classify(error: ServiceError, reach: Reach) -> Result<Failure, McpError> {
    match error {
        ServiceError::McpError(error) if is_let_go(&error) => {
            Ok(Failure::NotExecuted(error.message.into_owned()))
        }
        ServiceError::McpError(error) => Err(error),
        ServiceError::TransportClosed if reach == Reach::Refused => Ok(Failure::NotExecuted(
            "the session to the server had already ended".into(),
        )),
        ServiceError::TransportClosed => Ok(Failure::OutcomeUnknown(
            "the session to the server ended before the answer came".into(),
        )),
        ServiceError::TransportSend(error) => {
            let Some(http) = error
                .error
                .downcast_ref::<StreamableHttpError<reqwest::Error>>()
            else {
                return Ok(Failure::OutcomeUnknown(with_sources(&*error.error)));
            };
            let text = with_sources(http);
            Ok(match http {
                StreamableHttpError::Client(error) if error.is_connect() => {
                    Failure::NotExecuted(format!(
                        "the server refused the connection ({})",
                        with_sources(error)
                    ))
                }
                StreamableHttpError::Client(error) => Failure::OutcomeUnknown(format!(
                    "the connection broke after the call was sent ({})",
                    with_sources(error)
                )),
                StreamableHttpError::SessionExpired => {
                    Failure::NotExecuted("the server no longer knows this session (404)".into())
                }
                StreamableHttpError::HttpStatus(status) if status.status == 429 => {
                    Failure::NotExecuted(format!("the server turned it away ({status})"))
                }
                StreamableHttpError::HttpStatus(status) => {
                    Failure::OutcomeUnknown(format!("the server failed while answering ({status})"))
                }
                StreamableHttpError::UnexpectedServerResponse(answer) => {
                    Failure::Refused(answer.to_string())
                }
                StreamableHttpError::AuthRequired(_)
                | StreamableHttpError::InsufficientScope(_) => Failure::Refused(text),
                _ => Failure::OutcomeUnknown(text),
            })
        }
        other => Ok(Failure::OutcomeUnknown(other.to_string())),
    }
}

/// An error and every error beneath it, in words: rmcp's and reqwest's top-level messages
/// leave the cause ("connection closed before message completed") to their sources.
pub(super) fn with_sources(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A failure, with what the bridge learned of its server's silence on the way.
#[derive(Clone, Debug)]
pub(super) struct Loss {
    pub(super) failure: Failure,
    /// Set when the server stopped answering even its probe: the election that follows
    /// counts the busy grace from when the wait began.
    pub(super) silence: Option<Silence>,
}

impl From<Failure> for Loss {
    fn from(failure: Failure) -> Loss {
        Loss {
            failure,
            silence: None,
        }
    }
}

/// How a forwarded request ended, when it did not end in an answer.
pub(super) enum Unanswered {
    /// The server answered with a JSON-RPC error: that is its answer.
    Protocol(McpError),
    /// No answer came.
    Lost(Loss),
}

pub(super) fn unanswered(error: ServiceError, reach: Reach) -> Unanswered {
    match classify(error, reach) {
        Ok(failure) => Unanswered::Lost(failure.into()),
        Err(error) => Unanswered::Protocol(error),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use rmcp::transport::DynamicTransportError;
    use rmcp::transport::streamable_http_client::HttpStatusError;

    #[test]
    fn the_resend_rule() {
        let not_executed = Failure::NotExecuted("connection refused".into());
        let unknown = Failure::OutcomeUnknown("stream ended".into());
        let refused = Failure::Refused("HTTP 400".into());
        assert_eq!(recovery(true, &not_executed), Recovery::ResendAfterFailover);
        assert_eq!(
            recovery(false, &not_executed),
            Recovery::ResendAfterFailover,
            "it never ran, so sending it is safe"
        );
        assert_eq!(
            recovery(true, &unknown),
            Recovery::ResendAfterFailover,
            "running it twice is the same as once"
        );
        assert_eq!(
            recovery(false, &unknown),
            Recovery::FailoverAndReportUnknown,
            "a write is never resent blindly"
        );
        assert_eq!(recovery(true, &refused), Recovery::PassThrough);
        assert_eq!(recovery(false, &refused), Recovery::PassThrough);
    }

    fn http_failure(error: StreamableHttpError<reqwest::Error>) -> ServiceError {
        ServiceError::TransportSend(DynamicTransportError::from_parts(
            "http",
            std::any::TypeId::of::<()>(),
            Box::new(error),
        ))
    }

    #[test]
    fn a_closed_session_is_not_executed_only_before_the_request_entered_it() {
        assert!(matches!(
            classify(ServiceError::TransportClosed, Reach::Refused),
            Ok(Failure::NotExecuted(_))
        ));
        assert!(
            matches!(
                classify(ServiceError::TransportClosed, Reach::Handed),
                Ok(Failure::OutcomeUnknown(_))
            ),
            "rmcp says the transport closed also when a written request lost its answer"
        );
    }

    #[test]
    fn failures_are_sorted_by_their_type() {
        let sorted = |error| classify(http_failure(error), Reach::Handed).unwrap();
        assert!(matches!(
            sorted(StreamableHttpError::SessionExpired),
            Failure::NotExecuted(_)
        ));
        assert!(matches!(
            sorted(StreamableHttpError::HttpStatus(HttpStatusError::new(
                502, None
            ))),
            Failure::OutcomeUnknown(_)
        ));
        assert!(matches!(
            sorted(StreamableHttpError::HttpStatus(HttpStatusError::new(
                429, None
            ))),
            Failure::NotExecuted(_)
        ));
        assert!(matches!(
            sorted(StreamableHttpError::UnexpectedServerResponse(
                "HTTP 413 Payload Too Large: the body is over the limit".into()
            )),
            Failure::Refused(_)
        ));
        assert!(matches!(
            sorted(StreamableHttpError::TransportChannelClosed),
            Failure::OutcomeUnknown(_)
        ));
        assert!(matches!(
            sorted(StreamableHttpError::UnexpectedEndOfStream),
            Failure::OutcomeUnknown(_)
        ));
        assert!(matches!(
            classify(
                ServiceError::Timeout {
                    timeout: Duration::from_secs(1)
                },
                Reach::Handed
            ),
            Ok(Failure::OutcomeUnknown(_))
        ));
    }

    #[test]
    fn a_server_answer_passes_through_unless_it_lets_the_session_go() {
        let protocol = classify(
            ServiceError::McpError(McpError::invalid_params("bad", None)),
            Reach::Handed,
        );
        assert!(
            protocol.is_err(),
            "a JSON-RPC error is the server's answer, passed through"
        );
        let let_go = McpError::invalid_request(
            "let go",
            Some(serde_json::json!({ majordomus_server::mcp::LET_GO_DATA_KEY: true })),
        );
        assert!(matches!(
            classify(ServiceError::McpError(let_go), Reach::Handed),
            Ok(Failure::NotExecuted(_))
        ));
    }
}
