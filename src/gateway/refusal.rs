//! Why the gateway refused a request before a server saw it: the HTTP
//! server's own refusals, wrapped, and those only a gateway has.

use axum::body::Body;
use axum::http::{Response, StatusCode};
use axum::response::IntoResponse;

use crate::jsonrpc::{codes, ErrorObject, RequestId};
use crate::server::http::{response, Rejection};

/// Why the gateway refused a request before any server saw it.
///
/// Each variant is one condition with one HTTP status, one JSON-RPC error
/// code and one wording: [`status`](Self::status), [`code`](Self::code)
/// and its `Display`. A refusal of the HTTP layer is [`Refusal::Http`] and
/// answers as that [`Rejection`] does; [`IntoResponse`] turns the others
/// into a JSON-RPC error object with the request's id when it is known.
///
/// ```
/// use conduit_mcp::gateway::Refusal;
/// use conduit_mcp::server::http::Rejection;
///
/// let r = Refusal::UnknownServer { name: "files".into() };
/// assert_eq!((r.status().as_u16(), r.code()), (404, -32000));
/// assert_eq!(Refusal::from(Rejection::Unauthorized).status().as_u16(), 401);
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// A refusal of the HTTP server the gateway is built on.
    #[error(transparent)]
    Http(#[from] Rejection),
    /// The gateway's host has stopped, so no server behind it can be
    /// reached: 503, -32000.
    #[error("the gateway's host has stopped: no server can be reached")]
    HostStopped,
    /// No server of this name is behind the gateway: 404, -32000.
    #[error("no server named `{name}` in the gateway")]
    UnknownServer {
        /// The name in the path.
        name: String,
    },
    /// The caller's grant leaves out the server, or the tool, it asks for:
    /// 403, -32000.
    #[error("Forbidden: {what} is outside this client's grant")]
    OutsideGrant {
        /// The request's id.
        id: Option<RequestId>,
        /// What was refused, as ``server `x` `` or ``tool `x__y` ``.
        what: String,
    },
    /// `/metrics` with a valid token that is no operator's: 403, -32000.
    #[error("Forbidden: /metrics needs an operator's token (--metrics-token-env, or \"operator\": true in the tokens file)")]
    MetricsNeedOperator,
    /// `/metrics` without any token configured, from a peer that is not
    /// loopback: 403, -32000.
    #[error("Forbidden: without a token, /metrics answers loopback peers only")]
    MetricsLoopbackOnly,
    /// The server behind an endpoint could not be reached because it could
    /// not start or is not ready: 503, with the failure's own code and
    /// message.
    #[error("{}", error.message)]
    ServerUnavailable {
        /// The failure, as a JSON-RPC error.
        error: ErrorObject,
    },
}

impl Refusal {
    /// The HTTP status of the response.
    pub fn status(&self) -> StatusCode {
        match self {
            Refusal::Http(r) => r.status(),
            Refusal::HostStopped | Refusal::ServerUnavailable { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Refusal::UnknownServer { .. } => StatusCode::NOT_FOUND,
            _ => StatusCode::FORBIDDEN,
        }
    }

    /// The JSON-RPC error code of the response's body.
    pub fn code(&self) -> i64 {
        match self {
            Refusal::Http(r) => r.code(),
            Refusal::ServerUnavailable { error } => error.code,
            _ => codes::SERVER_ERROR,
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response<Body> {
        let id = match self {
            Refusal::Http(r) => return r.into_response(),
            Refusal::OutsideGrant { ref id, .. } => id.clone(),
            _ => None,
        };
        let error = match &self {
            Refusal::ServerUnavailable { error } => error.clone(),
            _ => ErrorObject::new(self.code(), self.to_string()),
        };
        response::error_object(self.status(), id, &error)
    }
}
