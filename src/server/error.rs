//! Error types of the server transport.
//!
//! - [`ServerError`]: why [`serve`](super::StdioServer::serve) failed.
//! - [`HandlerError`]: what a request handler returns instead of a result;
//!   it becomes a JSON-RPC error response and serving goes on.
//! - [`SendError`]: a notification or server-to-client request could not be
//!   sent (or, for a request, was not answered).
//! - [`AskError`]: [`RequestContext::ask`](super::RequestContext::ask) could
//!   not obtain the client's input; converts into [`HandlerError`] with `?`.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::jsonrpc::{codes, ErrorObject};
use crate::protocol::Era;

/// Why serving ended with an error. A clean end is
/// [`ServeEnd`](super::ServeEnd) instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A configuration field is invalid.
    #[error("invalid server configuration: {key}: {reason}")]
    InvalidConfig {
        /// The offending field of [`ServerConfig`](super::ServerConfig).
        key: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading the input stream failed.
    #[error("reading the input stream failed: {0}")]
    Read(#[source] std::io::Error),
    /// Writing the output stream failed (for example the client closed it).
    #[error("writing the output stream failed: {0}")]
    Write(#[source] std::io::Error),
    /// A response could not be serialised.
    #[error("serialising a response to request {id} failed: {source}")]
    Serialize {
        /// The request answered.
        id: crate::jsonrpc::RequestId,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The notification handler failed.
    #[error("notification handler failed on {method}: {source}")]
    NotificationHandler {
        /// The notification's method.
        method: String,
        /// The handler's error.
        #[source]
        source: HandlerError,
    },
    /// The stdout guard could not redirect fd 1.
    #[error("stdout guard failed: {0}")]
    StdoutGuard(#[source] std::io::Error),
    /// [`ServerConfig::stdout_guard`](super::ServerConfig::stdout_guard) was
    /// asked for while another server's stdout guard is live in this
    /// process (fd 1 is process-wide; two guards would restore it wrongly).
    /// Typically a restart before the previous server finished ending: wait
    /// for its `serve` to return, then retry.
    #[error("stdout guard already in use: another server in this process is guarding fd 1")]
    StdoutGuardInUse,
}

/// A request handler's failure. Becomes a JSON-RPC error response (see
/// [`to_error_object`](Self::to_error_object)); serving continues.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerError {
    /// Sent to the client exactly as given.
    #[error("{0}")]
    Rpc(ErrorObject),
    /// -32601.
    #[error("method not found: {0}")]
    MethodNotFound(String),
    /// -32602 with this message.
    #[error("invalid params: {0}")]
    InvalidParams(String),
    /// -32603 with this message.
    #[error("internal error: {0}")]
    Internal(String),
    /// 2026-07-28 era: the handler needs client input first. Returned (usually
    /// through `?` on [`RequestContext::ask`](super::RequestContext::ask)),
    /// it makes the server answer with an `input_required` result built from
    /// the context's recorded input requests and request state.
    #[error("input required from the client")]
    InputRequired,
}

impl HandlerError {
    /// The JSON-RPC error object sent for this error.
    ///
    /// [`InputRequired`](Self::InputRequired) never reaches the wire as an
    /// error in the 2026-07-28 era; in the 2025-11-25 era (where it cannot happen
    /// through `ask`) it is -32603.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::HandlerError;
    ///
    /// let error = HandlerError::InvalidParams("`city` is required".into()).to_error_object();
    /// assert_eq!(error.code, -32602);
    /// assert_eq!(error.message, "`city` is required");
    /// ```
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            HandlerError::Rpc(e) => e.clone(),
            HandlerError::MethodNotFound(m) => {
                ErrorObject::new(codes::METHOD_NOT_FOUND, format!("method not found: {m}"))
            }
            HandlerError::InvalidParams(m) => ErrorObject::new(codes::INVALID_PARAMS, m.clone()),
            HandlerError::Internal(m) => ErrorObject::new(codes::INTERNAL_ERROR, m.clone()),
            HandlerError::InputRequired => ErrorObject::new(
                codes::INTERNAL_ERROR,
                "handler asked for input outside a modern multi round-trip request",
            ),
        }
    }
}

impl From<ErrorObject> for HandlerError {
    fn from(e: ErrorObject) -> Self {
        HandlerError::Rpc(e)
    }
}

/// A notification or server-to-client request failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The transport is gone: serving ended, or the server was dropped. The
    /// lifetime token of handles and contexts has expired.
    #[error("the server transport is gone")]
    TransportGone,
    /// The outbound queue is over `max_outbound_bytes` (the client is not
    /// reading); the message was dropped.
    #[error("outbound queue full ({limit} bytes unwritten)")]
    QueueFull {
        /// The configured limit.
        limit: usize,
    },
    /// Server-to-client requests need a 2025-11-25 session (after `initialize`);
    /// the 2026-07-28 era uses input-required results instead.
    #[error("server-to-client requests need an initialized legacy session")]
    NoStatefulSession,
    /// The client did not declare the capability this request needs.
    #[error("client did not declare the {0:?} capability")]
    MissingCapability(&'static str),
    /// No such session (stdio has exactly one, [`STDIO_SESSION`](super::STDIO_SESSION)).
    #[error("unknown session {0:?}")]
    UnknownSession(String),
    /// The client did not answer within the timeout (a
    /// `notifications/cancelled` was sent for it).
    #[error("no answer from the client within {0:?}")]
    Timeout(Duration),
    /// The client answered with an error.
    #[error("client answered with an error: {0}")]
    Client(ErrorObject),
    /// The client's result is not valid JSON.
    #[error("client's result is not valid JSON: {0}")]
    BadResult(String),
    /// Serialising the message failed.
    #[error("serialising the message failed: {0}")]
    Serialize(String),
}

/// [`RequestContext::answer_raw`](super::RequestContext::answer_raw) was
/// given text that is not one JSON value on one line; the text is given
/// back.
#[derive(Debug, thiserror::Error)]
#[error("a raw result is refused: {problem}")]
pub struct RawAnswerError {
    pub(super) raw: crate::jsonrpc::RawJson,
    pub(super) problem: String,
}

impl RawAnswerError {
    /// The text that was refused.
    pub fn into_raw(self) -> crate::jsonrpc::RawJson {
        self.raw
    }
}

/// [`RequestContext::ask`](super::RequestContext::ask) could not obtain the
/// client's input.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// 2026-07-28 era: the input is not in this request's `inputResponses`; it
    /// was recorded and the handler should return (use `?`), so the client
    /// is sent an `input_required` result and retries.
    #[error("input {key:?} required from the client")]
    InputRequired {
        /// The key the input was recorded under.
        key: String,
    },
    /// The client did not declare the capability the input needs.
    #[error("client did not declare the {capability:?} capability")]
    MissingCapability {
        /// `roots`, `sampling` or `elicitation`.
        capability: &'static str,
        /// The era of the request.
        era: Era,
    },
    /// 2026-07-28 era: input requests are allowed only in `tools/call`,
    /// `prompts/get` and `resources/read`.
    #[error("{0} cannot ask the client for input")]
    NotAllowed(String),
    /// 2025-11-25 era: the server-to-client request failed.
    #[error(transparent)]
    Send(#[from] SendError),
    /// 2026-07-28 era, a [held call](super::HeldCall): the client did not come
    /// back with the input within
    /// [`held_input_timeout`](super::ServerConfig::held_input_timeout), or
    /// the server stopped.
    #[error("the client did not answer: its call ended or its input timed out")]
    NotAnswered,
    /// 2026-07-28 era, a [held call](super::HeldCall): the server holds
    /// [`max_held_calls`](super::ServerConfig::max_held_calls) calls
    /// waiting for input already, or this client a quarter of them.
    #[error("too many calls wait for their clients' input (max_held_calls = {max}, a quarter of them per client); try again later")]
    TooManyHeld {
        /// [`max_held_calls`](super::ServerConfig::max_held_calls).
        max: usize,
    },
}

impl From<AskError> for HandlerError {
    fn from(e: AskError) -> Self {
        match e {
            AskError::InputRequired { .. } => HandlerError::InputRequired,
            AskError::MissingCapability {
                capability,
                era: Era::Stateless,
            } => HandlerError::Rpc(
                ErrorObject::new(
                    codes::MISSING_CLIENT_CAPABILITY,
                    format!("missing required client capability: {capability}"),
                )
                .with_data(json!({ "requiredCapabilities": { capability: {} } })),
            ),
            AskError::MissingCapability { capability, .. } => HandlerError::Internal(format!(
                "this operation needs the client capability {capability:?}"
            )),
            AskError::NotAllowed(m) => HandlerError::Internal(format!(
                "{m} cannot ask the client for input in the 2026-07-28 era"
            )),
            AskError::Send(SendError::Client(e)) => HandlerError::Rpc(e),
            e @ (AskError::Send(_) | AskError::NotAnswered | AskError::TooManyHeld { .. }) => {
                HandlerError::Internal(e.to_string())
            }
        }
    }
}

/// `args` decoded as `A`, or what is wrong with them.
pub(super) fn decode<A: DeserializeOwned>(args: Value) -> Result<A, String> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // `.` is the whole value: nothing to name.
        if path == "." {
            inner.to_string()
        } else {
            format!("`{path}`: {inner}")
        }
    })
}

/// A request's `params` decoded as `P`, absent params read as `{}`; what is
/// wrong with them is an invalid-params error naming the member at fault.
pub(super) fn parse_params<P: DeserializeOwned>(params: Value) -> Result<P, HandlerError> {
    let params = if params.is_null() { json!({}) } else { params };
    decode(params).map_err(HandlerError::InvalidParams)
}
