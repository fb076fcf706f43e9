//! Every refusal of the HTTP server, and the one place each becomes a
//! response: its status, its JSON-RPC code, its wording and
//! its extra headers (`WWW-Authenticate`, `Allow`, `Retry-After`).

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use axum::response::IntoResponse;

use crate::jsonrpc::{codes, encode, ErrorObject, ParseError, RequestId};
use crate::protocol::{STATEFUL_VERSIONS, STATELESS_VERSIONS};

/// The JSON-RPC code of a refusal that is no JSON-RPC error of its own
/// (admission, sessions, the server's state).
const SERVER_ERROR: i64 = codes::SERVER_ERROR;
/// The code of an unknown or ended session (2025-11-25 era).
const SESSION_NOT_FOUND: i64 = -32001;

/// Why the HTTP server refused a request before any handler saw it.
///
/// A gateway wraps it in its own refusal, `gateway::Refusal`, with the
/// conditions only a gateway has.
///
/// Each variant is one condition with one HTTP status, one JSON-RPC error
/// code and one wording ([`status`](Self::status), [`code`](Self::code),
/// its `Display`); [`IntoResponse`] turns it into the response the client
/// gets: a JSON-RPC error object as the body, with the request's id when
/// it is known, and the headers the condition calls for.
///
/// ```
/// use conduit_mcp::server::http::Rejection;
/// use conduit_mcp::server::http::axum::response::IntoResponse;
///
/// let r = Rejection::BodyTooLarge { limit: 1024 };
/// assert_eq!(r.status().as_u16(), 413);
/// assert_eq!(r.code(), -32600);
/// assert_eq!(r.to_string(), "the body exceeds max_message_bytes (1024 bytes)");
/// let response = r.into_response();
/// assert_eq!(response.status().as_u16(), 413);
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    /// The `Host` header names none of the allowed hosts (DNS rebinding
    /// protection): 403, -32000.
    #[error("Forbidden: Host not allowed")]
    HostNotAllowed,
    /// The `Origin` header names none of the allowed origins: 403, -32000.
    #[error("Forbidden: Origin not allowed")]
    OriginNotAllowed,
    /// No valid credentials (a missing or wrong bearer token, or the
    /// authorization hook said no): 401, -32000, with
    /// `WWW-Authenticate: Bearer`.
    #[error("Unauthorized")]
    Unauthorized,
    /// The server is stopping: 503, -32000.
    #[error("the server is stopping")]
    Stopping,
    /// The HTTP method is not served here (or not in this protocol
    /// revision): 405, -32600, with `Allow`.
    #[error("Method Not Allowed")]
    MethodNotAllowed {
        /// The methods that are (the `Allow` header).
        allow: &'static str,
    },
    /// The `Accept` header allows none of the media types the answer can
    /// have: 406, -32600.
    #[error("Not Acceptable: accept {expected}")]
    NotAcceptable {
        /// The media types the request must accept.
        expected: &'static str,
    },
    /// A body whose `Content-Type` is not `application/json`: 415, -32600.
    #[error("Unsupported Media Type: Content-Type {content_type:?}, expected application/json")]
    UnsupportedMediaType {
        /// The `Content-Type` given.
        content_type: String,
    },
    /// The body is larger than `max_message_bytes` (declared or read):
    /// 413, -32600.
    #[error("the body exceeds max_message_bytes ({limit} bytes)")]
    BodyTooLarge {
        /// `max_message_bytes`.
        limit: usize,
    },
    /// The body did not arrive whole within `body_timeout`: 408, -32600.
    #[error("the body did not arrive within body_timeout ({timeout:?})")]
    BodyTimeout {
        /// `body_timeout`.
        timeout: Duration,
    },
    /// Reading the body failed (the connection broke, a malformed chunk):
    /// 400, -32700.
    #[error("reading the body failed: {reason}")]
    BodyUnreadable {
        /// What failed.
        reason: String,
    },
    /// The parsed input the clients hold is at what they may hold of
    /// `max_inbound_bytes` (7/8 of it; the rest is for a newcomer's first
    /// small message): 503, -32000, with `Retry-After: 1`.
    #[error("server busy: max_inbound_bytes in use")]
    Busy,
    /// The message would hold more, once parsed, than one client may hold
    /// of `max_inbound_bytes` (a quarter of it): 413, -32600.
    #[error("the message would hold {bytes} bytes once parsed, more than one client's share of max_inbound_bytes ({share} bytes)")]
    InboundTooLarge {
        /// The message's estimate, in bytes.
        bytes: usize,
        /// One client's share, in bytes.
        share: usize,
    },
    /// The caller's requests hold its share of `max_inbound_bytes`: 503,
    /// -32000, with `Retry-After: 1`.
    #[error("this client's requests hold its share of max_inbound_bytes ({share} bytes): retry when one has ended")]
    InboundShareInUse {
        /// One client's share, in bytes.
        share: usize,
    },
    /// The body is not JSON: 400, -32700.
    #[error("Parse error: the body is not JSON")]
    NotJson,
    /// The body is a JSON-RPC batch (an array), which MCP does not use:
    /// 400, -32600.
    #[error("JSON-RPC batch arrays are not supported")]
    Batch,
    /// JSON, but no JSON-RPC 2.0 message: 400, -32600.
    #[error("Invalid Request: {reason}")]
    InvalidMessage {
        /// The request's id, when one could be read.
        id: Option<RequestId>,
        /// What is wrong.
        reason: &'static str,
    },
    /// A response sent by a client of the 2026-07-28 revision, whose
    /// clients send none: 400, -32600.
    #[error("clients send no responses in the 2026-07-28 era")]
    UnexpectedResponse {
        /// The response's id.
        id: Option<RequestId>,
    },
    /// 2026-07-28: an MCP header (`MCP-Protocol-Version`, `Mcp-Method`,
    /// `Mcp-Name`, `Mcp-Param-*`) is missing, invalid, or disagrees with
    /// the body: 400, -32020.
    #[error("Header mismatch: {detail}")]
    HeaderMismatch {
        /// The request's id.
        id: Option<RequestId>,
        /// Which header, and how.
        detail: String,
    },
    /// `MCP-Protocol-Version` names no version this server speaks, on a
    /// request outside a session: 400, -32022, the supported versions in
    /// the error's data.
    #[error("Unsupported protocol version: MCP-Protocol-Version {requested:?}")]
    UnsupportedVersion {
        /// The request's id.
        id: Option<RequestId>,
        /// The version asked for.
        requested: String,
    },
    /// 2026-07-28: the request's `_meta` lacks the protocol version or
    /// the client's capabilities: 400, -32602.
    #[error(
        "Invalid params: _meta must carry {} (a string) and {} (an object)",
        crate::protocol::meta::PROTOCOL_VERSION,
        crate::protocol::meta::CLIENT_CAPABILITIES
    )]
    MetaMissing {
        /// The request's id.
        id: Option<RequestId>,
    },
    /// 2026-07-28: a method of the 2025-11-25 revision that this one
    /// removed (`initialize`, `ping`, ...): 404, -32601.
    #[error("Method not found: {method} (not part of {revision})")]
    MethodRemoved {
        /// The request's id.
        id: Option<RequestId>,
        /// The method asked for.
        method: String,
        /// The revision the request names.
        revision: String,
    },
    /// 2025-11-25: a request other than `initialize` without
    /// `MCP-Session-Id`: 400, -32000.
    #[error("Bad Request: the Mcp-Session-Id header is required (send initialize first)")]
    SessionRequired {
        /// The request's id.
        id: Option<RequestId>,
    },
    /// 2025-11-25: `MCP-Session-Id` names no live session of this caller
    /// (unknown, expired, ended, or another principal's): 404, -32001.
    #[error("Session not found")]
    SessionNotFound {
        /// The request's id.
        id: Option<RequestId>,
    },
    /// 2025-11-25: within a session, `MCP-Protocol-Version` names no
    /// version of that revision: 400, -32000.
    #[error(
        "Bad Request: unsupported MCP-Protocol-Version {requested:?} (supported: {})",
        STATEFUL_VERSIONS.join(", ")
    )]
    SessionVersion {
        /// The version asked for.
        requested: String,
    },
    /// `initialize` found the caller's quota or the session table full,
    /// none of its sessions expired: 503, -32000, with `Retry-After: 1`.
    #[error("{}", sessions_full(*per_principal, *max))]
    SessionsFull {
        /// The `initialize` request's id.
        id: Option<RequestId>,
        /// Whether the caller's own share is full
        /// (`max_sessions_per_principal`), else the server's
        /// (`max_sessions`).
        per_principal: bool,
        /// That bound.
        max: usize,
    },
    /// A `Last-Event-ID` that names no event of this server: 400, -32600.
    #[error("Bad Request: malformed Last-Event-ID")]
    MalformedLastEventId,
    /// A request whose id is that of a request of the same session still
    /// in flight: 400, -32600.
    #[error("{}", crate::server::engine::duplicate_message(id))]
    DuplicateId {
        /// The id.
        id: RequestId,
    },
    /// The server failed on its side before a handler ran (no randomness
    /// for a session id, an answer it could not encode): 500, -32603.
    #[error("{reason}")]
    Internal {
        /// The request's id.
        id: Option<RequestId>,
        /// What failed.
        reason: String,
    },
}

/// The wording of [`Rejection::SessionsFull`].
pub(crate) fn sessions_full(per_principal: bool, max: usize) -> String {
    if per_principal {
        format!(
            "too many sessions of this client (max_sessions_per_principal = {max}), none of them expired (session_idle_timeout)"
        )
    } else {
        format!(
            "too many sessions (max_sessions = {max}, the last eighth kept for clients holding none), none of them expired (session_idle_timeout)"
        )
    }
}

/// Matches the variants that may carry the request's id (`id:
/// Option<RequestId>`), listed once for reading and for setting it.
macro_rules! with_optional_id {
    ($value:expr, $id:ident => $then:expr, _ => $else:expr) => {
        match $value {
            Rejection::InvalidMessage { id: $id, .. }
            | Rejection::UnexpectedResponse { id: $id }
            | Rejection::HeaderMismatch { id: $id, .. }
            | Rejection::UnsupportedVersion { id: $id, .. }
            | Rejection::MetaMissing { id: $id }
            | Rejection::MethodRemoved { id: $id, .. }
            | Rejection::SessionRequired { id: $id }
            | Rejection::SessionNotFound { id: $id }
            | Rejection::SessionsFull { id: $id, .. }
            | Rejection::Internal { id: $id, .. } => $then,
            _ => $else,
        }
    };
}

impl Rejection {
    /// The HTTP status of the response.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::http::Rejection;
    ///
    /// assert_eq!(Rejection::Unauthorized.status(), 401);
    /// assert_eq!(Rejection::Stopping.status(), 503);
    /// ```
    pub fn status(&self) -> StatusCode {
        use Rejection::*;
        match self {
            HostNotAllowed | OriginNotAllowed => StatusCode::FORBIDDEN,
            Unauthorized => StatusCode::UNAUTHORIZED,
            Stopping | Busy | InboundShareInUse { .. } | SessionsFull { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            NotAcceptable { .. } => StatusCode::NOT_ACCEPTABLE,
            UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            BodyTooLarge { .. } | InboundTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            BodyUnreadable { .. }
            | NotJson
            | Batch
            | InvalidMessage { .. }
            | UnexpectedResponse { .. }
            | HeaderMismatch { .. }
            | UnsupportedVersion { .. }
            | MetaMissing { .. }
            | SessionRequired { .. }
            | SessionVersion { .. }
            | MalformedLastEventId
            | DuplicateId { .. } => StatusCode::BAD_REQUEST,
            MethodRemoved { .. } | SessionNotFound { .. } => StatusCode::NOT_FOUND,
            Internal { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The JSON-RPC error code of the response's body.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::http::Rejection;
    ///
    /// assert_eq!(Rejection::NotJson.code(), -32700);
    /// assert_eq!(Rejection::HostNotAllowed.code(), -32000);
    /// ```
    pub fn code(&self) -> i64 {
        use Rejection::*;
        match self {
            HostNotAllowed
            | OriginNotAllowed
            | Unauthorized
            | Stopping
            | Busy
            | InboundShareInUse { .. }
            | SessionRequired { .. }
            | SessionVersion { .. }
            | SessionsFull { .. } => SERVER_ERROR,
            MethodNotAllowed { .. }
            | NotAcceptable { .. }
            | UnsupportedMediaType { .. }
            | BodyTooLarge { .. }
            | InboundTooLarge { .. }
            | BodyTimeout { .. }
            | Batch
            | InvalidMessage { .. }
            | UnexpectedResponse { .. }
            | MalformedLastEventId
            | DuplicateId { .. } => codes::INVALID_REQUEST,
            BodyUnreadable { .. } | NotJson => codes::PARSE_ERROR,
            HeaderMismatch { .. } => codes::HEADER_MISMATCH,
            UnsupportedVersion { .. } => codes::UNSUPPORTED_PROTOCOL_VERSION,
            MetaMissing { .. } => codes::INVALID_PARAMS,
            MethodRemoved { .. } => codes::METHOD_NOT_FOUND,
            SessionNotFound { .. } => SESSION_NOT_FOUND,
            Internal { .. } => codes::INTERNAL_ERROR,
        }
    }

    /// The id of the request refused, when it is known.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::jsonrpc::RequestId;
    /// use conduit_mcp::server::http::Rejection;
    ///
    /// let refused = Rejection::SessionNotFound { id: Some(RequestId::from(7)) };
    /// assert_eq!(refused.id(), Some(&RequestId::from(7)));
    /// assert_eq!(Rejection::Unauthorized.id(), None);
    /// ```
    pub fn id(&self) -> Option<&RequestId> {
        if let Rejection::DuplicateId { id } = self {
            return Some(id);
        }
        with_optional_id!(self, id => id.as_ref(), _ => None)
    }

    /// The same refusal, naming the request's id (for a condition found
    /// before the body was parsed). Variants that carry no id are kept as
    /// they are.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::jsonrpc::RequestId;
    /// use conduit_mcp::server::http::Rejection;
    ///
    /// let refused = Rejection::SessionRequired { id: None }.with_id(Some(RequestId::from("call-1")));
    /// assert_eq!(refused.id(), Some(&RequestId::from("call-1")));
    /// ```
    pub fn with_id(mut self, request: Option<RequestId>) -> Self {
        with_optional_id!(&mut self, id => *id = request, _ => {});
        self
    }

    /// The JSON-RPC error object of the response's body.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::http::Rejection;
    ///
    /// let error = Rejection::Unauthorized.to_error_object();
    /// assert_eq!(error.code, -32000);
    /// assert_eq!(error.message, "Unauthorized");
    /// ```
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            Rejection::UnsupportedVersion { requested, .. } => {
                let supported: Vec<&str> = STATELESS_VERSIONS
                    .iter()
                    .chain(STATEFUL_VERSIONS)
                    .copied()
                    .collect();
                ErrorObject::new(self.code(), self.to_string()).with_data(
                    serde_json::json!({ "supported": supported, "requested": requested }),
                )
            }
            _ => ErrorObject::new(self.code(), self.to_string()),
        }
    }

    /// The refusal of a body the JSON-RPC parser refused.
    pub(crate) fn of_parse(e: ParseError) -> Self {
        match e {
            ParseError::NotJson(_) => Rejection::NotJson,
            ParseError::Batch => Rejection::Batch,
            ParseError::Invalid { reason, id } => Rejection::InvalidMessage { id, reason },
        }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response<Body> {
        let body = encode::error(&self.id().cloned(), &self.to_error_object());
        let mut r = super::response::json(self.status(), body);
        let h = r.headers_mut();
        match &self {
            Rejection::Unauthorized => {
                h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Rejection::MethodNotAllowed { allow } => {
                h.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            Rejection::Busy
            | Rejection::InboundShareInUse { .. }
            | Rejection::SessionsFull { .. } => {
                h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_condition_has_its_status_code_and_headers() {
        let r = Rejection::Unauthorized.into_response();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(r.headers()[header::WWW_AUTHENTICATE], "Bearer");
        let r = Rejection::MethodNotAllowed { allow: "POST" }.into_response();
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.headers()[header::ALLOW], "POST");
        let r = Rejection::SessionsFull {
            id: Some(RequestId::Number(3)),
            per_principal: false,
            max: 2,
        };
        assert_eq!(r.id(), Some(&RequestId::Number(3)));
        assert!(r.to_string().contains("max_sessions = 2"));
        assert_eq!(r.into_response().headers()[header::RETRY_AFTER], "1");
        let r = Rejection::SessionNotFound { id: None }.with_id(Some(RequestId::Number(7)));
        assert_eq!((r.status().as_u16(), r.code()), (404, -32001));
        assert_eq!(r.id(), Some(&RequestId::Number(7)));
        let e = Rejection::UnsupportedVersion {
            id: None,
            requested: "1999".into(),
        }
        .to_error_object();
        assert_eq!(e.code, codes::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.data.unwrap()["requested"], "1999");
    }
}
