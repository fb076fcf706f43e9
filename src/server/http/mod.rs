//! Streamable HTTP (feature `http`): serve any [`Handler`](super::Handler)
//! or [`Router`](super::Router) over HTTP, both protocol eras on one
//! endpoint, exactly as [`StdioServer`](super::StdioServer) serves them over
//! stdio: the same handler code, the same [`RequestContext`](super::RequestContext)
//! abilities (progress, logging, notifications, `ask`, cancellation).
//!
//! ```no_run
//! use conduit_mcp::protocol::{CallToolResult, Implementation};
//! use conduit_mcp::server::http::{HttpConfig, HttpServer};
//! use conduit_mcp::server::{RequestContext, Router, ServerConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let router = Router::new().tool("hello", "Says hello.", |_: serde_json::Value, _ctx: RequestContext| async {
//!     Ok(CallToolResult::text("hello"))
//! });
//! let config = HttpConfig::new(ServerConfig::new(Implementation::new("hello", "1.0.0")));
//! let server = HttpServer::bind("127.0.0.1:8080", config).await?; // loopback: the safe default
//! let handle = server.handle(); // stop(), notify(), notify_session(), ...
//! server.serve(router).await?;  // until handle.stop()
//! # Ok(()) }
//! ```
//!
//! [`HttpService`] is the same endpoint as an axum router, to mount next to
//! an application's own routes.
//!
//! # The two eras
//!
//! - **2025-11-25 (sessions).** `initialize` mints a session: 128 random
//!   bits as `MCP-Session-Id`. Later requests without the header get 400,
//!   with an unknown or ended one 404; DELETE ends the session. A request
//!   is answered as JSON when its answer comes alone within
//!   [`HttpConfig::keep_alive`], else as an SSE stream carrying its
//!   notifications and server-to-client requests (`ask`: sampling,
//!   elicitation, roots), then its answer (a client that accepts only
//!   `application/json` gets those on its GET stream). GET opens the session's stream
//!   for messages not tied to a request (list changes, [`ServerHandle`]
//!   notifications). Every SSE event has an id; a client that lost a
//!   stream resumes it with GET and `Last-Event-ID` (each stream keeps
//!   [`HttpConfig::replay_bytes`] of delivered events), and each stream
//!   starts with `retry`. A `MCP-Protocol-Version` header that names no
//!   2025-era version gets 400. A disconnected client does not cancel its
//!   requests (it may resume); `notifications/cancelled` does.
//! - **2026-07-28 (stateless).** POST only (GET and DELETE get 405): every
//!   request carries its `_meta` and stands alone. The
//!   `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers must
//!   match the body (400 with -32020 otherwise; `=?base64?...?=` values are
//!   decoded first), as must the `Mcp-Param-*` headers a tool's
//!   `x-mcp-header` annotations ask for; an unsupported version is 400
//!   with -32022, an unknown (or removed) method 404 with -32601.
//!   Server-to-client needs become `input_required` results (`ask` does
//!   this by itself); `subscriptions/listen` is a POST whose SSE stream
//!   stays open; closing a response stream cancels its request; idle
//!   streams get keep-alive comments; cacheable results carry `ttlMs` and
//!   `cacheScope`.
//!
//! A request's era is its `MCP-Protocol-Version` header's; without one, a
//! body with the 2026-07-28 `_meta` is modern, anything else legacy. A
//! header naming no version of either era, on a request outside a session,
//! gets 400 with -32022. A POST whose `Content-Type` is not
//! `application/json` gets 415 (one without the header is read as JSON).
//!
//! # Safety
//!
//! - `Host` must be a loopback name and `Origin` (when a browser sends
//!   one) a loopback origin, by default: anything else gets 403 (DNS
//!   rebinding). A server reached under other names lists them
//!   ([`HttpConfig::allowed_hosts`], [`HttpConfig::allowed_origins`]).
//! - [`HttpServer::bind`] binds what it is given: bind `127.0.0.1` unless
//!   the server is meant to be reached from elsewhere.
//! - [`HttpConfig::bearer_token`] or [`HttpConfig::authorize`] check every
//!   request (401 otherwise); any tower layer on [`HttpService::router`]
//!   works too.
//! - Every bound is in bytes where memory is concerned, with a default
//!   (each [`HttpConfig`] field says its own): a body, its time, the room
//!   for bodies being read (a share per [`Principal`], else per peer
//!   address), each session's and each stream's queue, all queued events;
//!   sessions (in all and per principal), connections (in all and per
//!   peer address) and the time a connection may take to send a request
//!   head. A client that opens connections and sends nothing, opens
//!   streams and never reads them, sessions and never closes them, or
//!   stalls its bodies, holds no more than these, and of the shared ones
//!   only its share: what it holds idle gives way to other clients.
//!
//! # Stopping
//!
//! [`ServerHandle::stop`] (the same handle and lifetime token as stdio):
//! new requests get 503; long-lived requests (`subscriptions/listen`) end
//! as on end of input; in-flight requests see cancellation and get
//! [`ServerConfig::stop_drain`](super::ServerConfig::stop_drain) to answer,
//! then are aborted and answered with an error saying the server is
//! stopping; sessions end; open streams get
//! [`ServerConfig::flush_timeout`](super::ServerConfig::flush_timeout) to
//! be read; the listener closes and [`HttpServer::serve`] returns.
//!
//! # Handlers
//!
//! [`Handler::serving`](super::Handler::serving) is called once for the
//! server (with the server-wide handle) and once per 2025-era session
//! (with that session's handle): a [`Router`](super::Router) tells each
//! session when a list changes. [`ServerHandle::notify`] on the
//! server-wide handle reaches every session's GET stream;
//! [`ServerHandle::notify_session`] one.
//!
//! # Caveats
//!
//! - [`HttpService`] mounted on a listener of your own gets the bounds
//!   that concern requests and sessions, not those of connections (the
//!   listener's); without `ConnectInfo<SocketAddr>` in its requests (axum's
//!   `into_make_service_with_connect_info`) nor a [`Principal`], every
//!   request counts as one peer's.
//! - A 2025-era request answered as JSON cannot be resumed: when the client
//!   loses that response, the answer is lost.

mod admission;
mod bearer;
mod body;
mod config;
mod core;
mod endpoint;
pub(crate) mod gate;
mod listener;
mod modern;
mod principal;
mod rejection;
mod room;
mod server;
mod session;
mod session_store;
mod stream;

pub use admission::{AdmissionFuture, HostOrigin, HostOriginLayer};
pub use bearer::{Bearer, BearerLayer, BearerTokens};
pub use body::{BodyReader, ParsedBody};
pub use config::{
    Allow, Authorize, HttpConfig, DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT,
    DEFAULT_KEEP_ALIVE, DEFAULT_MAX_BUFFERED_BYTES, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_PEER, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
    DEFAULT_PATH, DEFAULT_REPLAY_BYTES, DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_SESSION_QUEUE_BYTES,
    DEFAULT_SSE_RETRY,
};
pub use listener::serve_router;
pub use principal::Principal;
pub use rejection::Rejection;
pub use server::{HttpServer, HttpService};

/// The axum this crate builds on (its [`HttpService::router`] is an
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
pub fn close_sse_stream(ctx: &super::RequestContext) -> bool {
    ctx.handle()
        .outlet
        .as_ref()
        .is_some_and(|o| o.close_for_polling())
}

#[cfg(doc)]
use super::ServerHandle;
