//! Streamable HTTP (feature `http`): serve any `Handler` or `Router` over
//! HTTP, both protocol eras on one endpoint.
//!
#![doc = include_str!("../../../docs/http-server.md")]

mod admission;
mod bearer;
mod body;
mod coarse;
mod config;
pub(crate) mod core;
mod endpoint;
mod listener;
mod principal;
mod rejection;
pub(crate) mod response;
mod room;
mod server;
mod session;
mod session_record;
mod session_store;
mod stateless;
mod stream;

pub use admission::{AdmissionFuture, HostOrigin, HostOriginLayer};
pub use bearer::{Bearer, BearerLayer, BearerTokens};
pub use body::{BodyReader, ParsedBody};
pub use config::{
    Allow, HttpConfig, DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_BUFFERED_BYTES, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_PEER,
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL, DEFAULT_PATH, DEFAULT_REPLAY_BYTES,
    DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_SESSION_QUEUE_BYTES, DEFAULT_SSE_RETRY,
};
pub use listener::{serve, serve_counted, ConnectionStats};
pub use principal::{Owner, PeerGroup, Principal};
pub use rejection::Rejection;
pub use server::{HttpServer, HttpService};
pub use session_record::{MemoryStore, RecordError, Seal, SealError, SessionRecord, SessionStore};

/// The axum this crate builds on (its [`HttpService::axum_router`] is an
/// `axum::Router` of this version).
pub use axum;

/// 2025-11-25 era: closes the SSE stream of `ctx`'s request now, for the
/// client to reconnect (GET with `Last-Event-ID`, after the `retry` delay)
/// and receive the rest, the answer included ("polling" a long request
/// instead of holding a connection). The request goes on meanwhile; what
/// it sends waits in its stream (within the session's bounds). Returns
/// false, doing nothing, for a request not served over HTTP or in the
/// 2026-07-28 era (whose streams are not resumable: closing one is a
/// cancellation).
///
/// # Examples
///
/// ```
/// use conduit_mcp::protocol::CallToolResult;
/// use conduit_mcp::server::http::close_sse_stream;
/// use conduit_mcp::server::{HandlerError, RequestContext};
///
/// async fn long_job(ctx: RequestContext) -> Result<CallToolResult, HandlerError> {
///     // Free the connection: the client comes back for the answer.
///     let polling = close_sse_stream(&ctx);
///     tokio::time::sleep(std::time::Duration::from_secs(60)).await;
///     Ok(CallToolResult::text(if polling { "done (polled)" } else { "done" }))
/// }
/// ```
pub fn close_sse_stream(ctx: &super::RequestContext) -> bool {
    ctx.handle().close_stream_for_polling()
}

#[cfg(doc)]
use super::ServerHandle;
