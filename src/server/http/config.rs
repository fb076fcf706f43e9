//! [`HttpConfig`]: the HTTP side of a server (the endpoint, who may call
//! it, and every bound, in bytes where memory is concerned), around the
//! [`ServerConfig`] it shares with stdio.

use std::time::Duration;

use crate::server::{ServerConfig, ServerError};

/// Default [`HttpConfig::path`].
pub const DEFAULT_PATH: &str = "/mcp";
/// Default [`HttpConfig::max_sessions`].
pub const DEFAULT_MAX_SESSIONS: usize = 1024;
/// Default [`HttpConfig::session_queue_bytes`]: 4 MiB.
pub const DEFAULT_SESSION_QUEUE_BYTES: usize = 4 * 1024 * 1024;
/// Default [`HttpConfig::replay_bytes`]: 256 KiB.
pub const DEFAULT_REPLAY_BYTES: usize = 256 * 1024;
/// Default [`HttpConfig::max_buffered_bytes`]: 64 MiB.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 64 * 1024 * 1024;
/// Default [`HttpConfig::session_idle_timeout`]: 10 minutes.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// Default [`HttpConfig::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default [`HttpConfig::max_connections_per_peer`] (per owner: all of
/// loopback, an IPv4 address, an IPv6 /64): half of
/// [`DEFAULT_MAX_CONNECTIONS`].
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = DEFAULT_MAX_CONNECTIONS / 2;
/// Default [`HttpConfig::max_sessions_per_principal`]: a quarter of
/// [`DEFAULT_MAX_SESSIONS`].
pub const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL: usize = DEFAULT_MAX_SESSIONS / 4;
/// Default [`HttpConfig::header_read_timeout`]: 10 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`HttpConfig::keep_alive`]: 15 s.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Default [`HttpConfig::sse_retry`]: 1 s.
pub const DEFAULT_SSE_RETRY: Duration = Duration::from_secs(1);
/// Default [`HttpConfig::body_timeout`]: 30 s.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Which values of a header are accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allow {
    /// Loopback names only: `localhost`, `127.0.0.1`, `[::1]`, any port
    /// (the default: right for a server bound to 127.0.0.1).
    Loopback,
    /// These values (case-insensitive): for hosts, host names with or
    /// without a port (`example.com`, `example.com:8443`); for origins,
    /// whole origins (`https://app.example.com`).
    List(Vec<String>),
    /// Any value. Only behind something that checks it for you.
    Any,
}

/// How an [`HttpServer`](super::HttpServer) (or [`HttpService`](super::HttpService))
/// behaves: the [`ServerConfig`] it shares with stdio, and the HTTP side.
///
/// The safe choices are the defaults: loopback hosts and origins only, no
/// request without a valid `Host`, every buffer bounded in bytes. The
/// limits are per request, per stream, per session and for the whole
/// server, so a client that opens streams and never reads them, or opens
/// sessions and never closes them, holds at most
/// [`max_buffered_bytes`](Self::max_buffered_bytes) of queued messages
/// and [`max_sessions`](Self::max_sessions) sessions.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Identity, capabilities and the limits shared with stdio. Its
    /// `max_message_bytes` (default 8 MiB) bounds a request body; its
    /// `max_inbound_bytes` (default 64 MiB) bounds the bodies being read
    /// and the parsed messages held, across all requests, each principal
    /// holding a share of it (see that field); its
    /// [`max_in_flight`](ServerConfig::max_in_flight) bounds one client's
    /// running requests as on stdio; its `stop_drain` is the grace given to
    /// in-flight requests on [`stop`](crate::server::ServerHandle::stop).
    pub server: ServerConfig,
    path: String,
    allowed_hosts: Allow,
    allowed_origins: Allow,
    max_sessions: usize,
    max_sessions_per_principal: usize,
    session_queue_bytes: usize,
    replay_bytes: usize,
    max_buffered_bytes: usize,
    session_idle_timeout: Duration,
    max_connections: usize,
    max_connections_per_peer: usize,
    header_read_timeout: Duration,
    keep_alive: Duration,
    sse_retry: Duration,
    body_timeout: Duration,
}

/// What the setters set: a getter for each field another module or a
/// user reads.
impl HttpConfig {
    config_fields! {
        /// Accepted `Host` headers (against DNS rebinding): a request with
        /// another host is refused with 403. Default [`Allow::Loopback`]; a
        /// server reachable under other names must list them.
        set allowed_hosts: Allow, get_allowed_hosts -> &Allow, ref;
        /// Accepted `Origin` headers (sent by browsers): a request with another
        /// origin is refused with 403; a request without one (not from a
        /// browser) is accepted. Default [`Allow::Loopback`].
        set allowed_origins: Allow, get_allowed_origins -> &Allow, ref;
        /// 2025-11-25 era: the most sessions at once. Principals that hold a
        /// session fill at most 7/8 of it: the last eighth is for principals
        /// that hold none, one session each. An `initialize` with no room
        /// takes the place of an expired session (idle for
        /// [`session_idle_timeout`](Self::session_idle_timeout)) if there is
        /// one, else it is refused with 503 and `Retry-After`. A session ends
        /// only by DELETE, its idle expiry or the server's stop, never to make
        /// room. Default [`DEFAULT_MAX_SESSIONS`].
        set max_sessions: usize, get_max_sessions -> usize, copy;
        /// 2025-11-25 era: the most sessions of one principal (the
        /// [`Principal`](super::Principal) an authentication layer set on the
        /// request, else the peer's address group: all of loopback, one IPv4
        /// address, or one IPv6 /64). Its `initialize` beyond it takes the
        /// place of its own expired session, or is refused with 503 when none
        /// has expired. So one client opening sessions it never closes cannot
        /// fill the table for the others; without an authentication layer,
        /// all clients of one address group share this quota. Capped at 7/8
        /// of `max_sessions`. Default
        /// [`DEFAULT_MAX_SESSIONS_PER_PRINCIPAL`].
        set max_sessions_per_principal: usize, get_max_sessions_per_principal -> usize, copy;
        /// 2025-11-25 era: bytes of messages one session may have queued and
        /// not yet delivered, over all its streams (the GET stream and each
        /// request's). Past it, notifications are refused
        /// ([`SendError::QueueFull`](crate::server::SendError::QueueFull));
        /// a request's final answer is always queued. In the 2026-07-28 era
        /// the same bound applies to each request's stream. Default
        /// [`DEFAULT_SESSION_QUEUE_BYTES`] (4 MiB).
        set session_queue_bytes: usize, get_session_queue_bytes -> usize, copy;
        /// 2025-11-25 era: bytes of already delivered events each SSE stream
        /// keeps for resumption (`Last-Event-ID`); older ones are dropped.
        /// Default [`DEFAULT_REPLAY_BYTES`] (256 KiB).
        set replay_bytes: usize, get_replay_bytes -> usize, copy;
        /// Bytes of queued and replayable events over all streams of all
        /// sessions. Past it, notifications are refused and replay buffers
        /// are trimmed. Default [`DEFAULT_MAX_BUFFERED_BYTES`] (64 MiB).
        set max_buffered_bytes: usize, get_max_buffered_bytes -> usize, copy;
        /// 2025-11-25 era: a session with no request and no open stream for
        /// this long ends (its id then gets 404): it has expired, and is the
        /// only kind of session a new one may take the place of. Default
        /// [`DEFAULT_SESSION_IDLE_TIMEOUT`] (10 minutes).
        set session_idle_timeout: Duration, get_session_idle_timeout -> Duration, copy;
        /// [`HttpServer`](super::HttpServer) only: the most TCP connections at
        /// once. A new connection beyond it takes the place of the oldest idle
        /// connection of the owner that holds the most (idle: waiting for its
        /// next request, its previous answer written whole); when none is
        /// idle, it is answered 503 with `Retry-After` and closed, and counted
        /// ([`ServerHandle::refused_connections`](crate::server::ServerHandle::refused_connections)).
        /// The last eighth of it is kept for owners that hold fewer than 4
        /// connections, so owners holding theirs busy never lock a newcomer
        /// out. Default [`DEFAULT_MAX_CONNECTIONS`].
        set max_connections: usize, get_max_connections -> usize, copy;
        /// [`HttpServer`](super::HttpServer) only: the most TCP connections of
        /// one owner, busy or idle: the peer's address group, which is all of
        /// loopback (every local process), one IPv4 address, or one IPv6 /64.
        /// A new one beyond it takes the place of that owner's oldest idle
        /// connection, or is answered 503 with `Retry-After` when all of them
        /// are busy (running a request, holding a stream open, or still
        /// writing an answer). Capped at `max_connections`; behind a reverse
        /// proxy (every client one address) set it to `max_connections`, which
        /// also gives up the room kept for newcomers. Default
        /// [`DEFAULT_MAX_CONNECTIONS_PER_PEER`].
        set max_connections_per_peer: usize, get_max_connections_per_peer -> usize, copy;
        /// [`HttpServer`](super::HttpServer) only: how long a connection may
        /// take to send a request's head (its request line and headers),
        /// counted from its start or from the end of its previous response;
        /// past it, the connection is closed. So it is also how long an idle
        /// keep-alive connection stays open. Default
        /// [`DEFAULT_HEADER_READ_TIMEOUT`] (10 s).
        set header_read_timeout: Duration, get_header_read_timeout -> Duration, copy;
        /// An SSE comment is sent on a stream idle for this long, so proxies
        /// and clients keep it open; a request whose answer takes longer than
        /// this is answered as an SSE stream. Default [`DEFAULT_KEEP_ALIVE`].
        set keep_alive: Duration, get_keep_alive -> Duration, copy;
        /// 2025-11-25 era: the `retry` sent at the start of each SSE stream
        /// (how long a client waits before reconnecting). Default
        /// [`DEFAULT_SSE_RETRY`].
        set sse_retry: Duration, get_sse_retry -> Duration, copy;
        /// How long a request body may take to arrive: a body still incomplete
        /// then is refused with 408 (what it had sent is released). Default
        /// [`DEFAULT_BODY_TIMEOUT`] (30 s).
        set body_timeout: Duration, get_body_timeout -> Duration, copy;
        get path, get_path -> &str, ref;
    }
}

impl HttpConfig {
    /// The defaults around `server`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::http::{Allow, HttpConfig};
    /// use conduit_mcp::server::ServerConfig;
    ///
    /// let config = HttpConfig::new(ServerConfig::new(Implementation::new("tools", "1.0.0")));
    /// assert_eq!(config.get_path(), "/mcp");
    /// assert_eq!(config.get_allowed_hosts(), &Allow::Loopback);
    /// ```
    pub fn new(server: ServerConfig) -> Self {
        HttpConfig {
            server,
            path: DEFAULT_PATH.to_owned(),
            allowed_hosts: Allow::Loopback,
            allowed_origins: Allow::Loopback,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_principal: DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
            session_queue_bytes: DEFAULT_SESSION_QUEUE_BYTES,
            replay_bytes: DEFAULT_REPLAY_BYTES,
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            keep_alive: DEFAULT_KEEP_ALIVE,
            sse_retry: DEFAULT_SSE_RETRY,
            body_timeout: DEFAULT_BODY_TIMEOUT,
        }
    }

    /// The MCP endpoint's path. Default [`DEFAULT_PATH`] (`/mcp`).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Checks the configuration; the error names the offending field.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::http::HttpConfig;
    /// use conduit_mcp::server::{ServerConfig, ServerError};
    ///
    /// let config = HttpConfig::new(ServerConfig::new(Implementation::new("tools", "1.0.0"))).path("mcp");
    /// let err = config.validate().unwrap_err();
    /// assert!(matches!(err, ServerError::InvalidConfig { key: "path", .. }));
    /// ```
    pub fn validate(&self) -> Result<(), ServerError> {
        self.server.validate()?;
        let bad = |key: &'static str, reason: &str| {
            Err(ServerError::InvalidConfig {
                key,
                reason: reason.to_owned(),
            })
        };
        if !self.path.starts_with('/') {
            return bad("path", "must start with '/'");
        }
        if self.max_sessions == 0 {
            return bad("max_sessions", "must be at least 1");
        }
        if self.max_sessions_per_principal == 0 {
            return bad("max_sessions_per_principal", "must be at least 1");
        }
        if self.max_connections == 0 {
            return bad("max_connections", "must be at least 1");
        }
        if self.max_connections_per_peer == 0 {
            return bad("max_connections_per_peer", "must be at least 1");
        }
        if self.header_read_timeout.is_zero() {
            return bad("header_read_timeout", "must be positive");
        }
        if self.session_queue_bytes < 1024 {
            return bad("session_queue_bytes", "must be at least 1024");
        }
        if self.max_buffered_bytes < self.session_queue_bytes {
            return bad("max_buffered_bytes", "must be at least session_queue_bytes");
        }
        if self.keep_alive.is_zero() {
            return bad("keep_alive", "must be positive");
        }
        if self.body_timeout.is_zero() {
            return bad("body_timeout", "must be positive");
        }
        if self.session_idle_timeout.is_zero() {
            return bad("session_idle_timeout", "must be positive");
        }
        Ok(())
    }
}
