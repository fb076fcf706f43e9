//! Server configuration: identity, capabilities and the limits that keep a
//! misbehaving client from exhausting memory or wedging the loop.

use std::time::Duration;

use serde_json::Value;

use crate::framing::DEFAULT_MAX_MESSAGE_BYTES;
use crate::protocol::Implementation;

use super::error::ServerError;

/// Default bound on concurrently running request handlers.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;
/// Default bound on unwritten outbound bytes: 16 MiB.
pub const DEFAULT_MAX_OUTBOUND_BYTES: usize = 16 * 1024 * 1024;
/// Default bound on parsed inbound input held by the server: 64 MiB.
pub const DEFAULT_MAX_INBOUND_BYTES: usize = 64 * 1024 * 1024;
/// Smallest accepted [`ServerConfig::max_inbound_bytes`]: 1 MiB.
pub const MIN_INBOUND_BYTES: usize = 1024 * 1024;
/// Default bound on one session's 2025-11-25 resource subscriptions: 1 MiB.
pub const DEFAULT_MAX_SUBSCRIPTION_BYTES: usize = 1024 * 1024;
/// Default [`ServerConfig::max_held_calls`].
pub(crate) const DEFAULT_MAX_HELD_CALLS: usize = 256;
/// Default [`ServerConfig::held_input_timeout`]: 5 minutes.
pub(crate) const DEFAULT_HELD_INPUT_TIMEOUT: Duration = Duration::from_secs(300);

use crate::protocol::CacheScope;

/// How a [`StdioServer`](super::StdioServer) behaves.
///
/// Every field has a sensible default ([`ServerConfig::new`]); the builder
/// methods change one at a time. [`validate`](Self::validate) runs when
/// serving starts and names the offending field. Built with
/// [`new`](Self::new) and the builder methods (`#[non_exhaustive]`: no struct
/// literal outside this crate); the fields stay readable and writable.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Name and version reported in `initialize` / `server/discover`.
    pub server_info: Implementation,
    capabilities: Value,
    instructions: Option<String>,
    max_message_bytes: usize,
    max_in_flight: usize,
    max_inbound_bytes: usize,
    max_outbound_bytes: usize,
    max_subscription_bytes: usize,
    stop_drain: Duration,
    eof_drain: Duration,
    flush_timeout: Duration,
    client_request_timeout: Duration,
    cache_ttl_ms: u64,
    cache_scope: CacheScope,
    stdout_guard: bool,
    max_held_calls: usize,
    held_input_timeout: Duration,
}

/// What the setters set: a getter for each field another module or a
/// user reads.
impl ServerConfig {
    /// What [`instructions`](Self::instructions) set.
    pub fn get_instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }
    config_fields! {
        /// 2026-07-28 era: the most calls of
        /// [`RequestContext::run_held`](super::RequestContext::run_held) kept
        /// waiting for their clients' next round at once, over all clients of
        /// the server (one client may hold a quarter of them). Past it, the
        /// call's [`HeldCall::ask`](super::HeldCall::ask) fails with
        /// [`AskError::TooManyHeld`](super::AskError::TooManyHeld). Default 256.
        set max_held_calls: usize, get_max_held_calls -> usize, copy;
        /// 2026-07-28 era: how long a held call waits for its client's next round;
        /// then its work is aborted (an ask waiting elsewhere fails with
        /// [`AskError::NotAnswered`](super::AskError::NotAnswered)) and the
        /// retry is refused. Default 5 minutes.
        set held_input_timeout: Duration, get_held_input_timeout -> Duration, copy;
        /// The server's capabilities object (`{"tools": {}, ...}`), sent as is.
        set capabilities: Value, get_capabilities -> &Value, ref;
        /// Largest inbound line in bytes (excluding the newline). Longer lines
        /// are refused with -32600 and discarded without being buffered whole.
        set max_message_bytes: usize, get_max_message_bytes -> usize, copy;
        /// Largest number of one client's request handlers running at once
        /// (default [`DEFAULT_MAX_IN_FLIGHT`]), on every transport alike. One
        /// client is a stdio session, a Streamable HTTP session (2025-11-25),
        /// or the session-less 2026-07-28 requests of one
        /// `server::http::Principal` (feature `http`; the peer's address group
        /// when no layer names one: all of loopback is one).
        /// `subscriptions/listen` streams count in a pool of their own of the
        /// same size, so open streams never hold back calls.
        ///
        /// Further requests wait, in arrival order, without a count limit:
        /// what bounds them is [`max_inbound_bytes`](Self::max_inbound_bytes),
        /// which their bytes are held against while they wait. When that is
        /// full, a stdio server stops reading (back-pressure on the client's
        /// writes) while cancellations, pings and responses still get in; an
        /// HTTP request is refused with 503 and `Retry-After`.
        set max_in_flight: usize, get_max_in_flight -> usize, copy;
        /// Bound on serialised-but-unwritten outbound bytes. Past it the server
        /// stops reading requests (their answers could not be written) and
        /// [`ServerHandle::notify`](super::ServerHandle::notify) fails with
        /// [`SendError::QueueFull`](super::SendError::QueueFull).
        set max_outbound_bytes: usize, get_max_outbound_bytes -> usize, copy;
        /// Bound on the 2025-11-25 `resources/subscribe` URIs one session holds
        /// (served by [`Router`](super::Router)), in bytes: each URI's length
        /// plus 64 for its entry (default [`DEFAULT_MAX_SUBSCRIPTION_BYTES`],
        /// about 900 subscriptions of 1 KiB URIs). A subscription past it is
        /// refused with -32602 naming this bound; unsubscribing frees room. The
        /// subscriptions go when the session ends.
        set max_subscription_bytes: usize, get_max_subscription_bytes -> usize, copy;
        /// Bound on the memory held for parsed input, in bytes (default
        /// [`DEFAULT_MAX_INBOUND_BYTES`], at least [`MIN_INBOUND_BYTES`]).
        ///
        /// Every inbound line is charged an estimate of what it costs once
        /// parsed (a `serde_json::Value` costs 32 bytes per node: the 8 MiB line
        /// `[0,0,...]` is about 128 MiB), computed before it is parsed, from the
        /// moment it is read until the server is done with it: its request's
        /// handler task ends (or is cancelled), or it is refused, answered by the
        /// transport, routed (responses) or handled (notifications). A message
        /// is admitted when the total stays within this bound, or when nothing
        /// else is held (so one message larger than the bound is still served,
        /// alone); responses, `notifications/cancelled` and `ping` have a
        /// reserve of their own, 1/8 of this bound, so they are read even when
        /// the budget is full. A request that does not fit waits, unparsed, for
        /// enough to be released, while control messages behind it are still
        /// read; the first other line stops reading until the request is in
        /// (back-pressure on the client's writes). The total therefore stays
        /// within 9/8 of this bound, or one message's estimate plus 1/8 of the
        /// bound when that is larger. What a handler allocates itself is not
        /// counted. A [`Router`](super::Router) tool or prompt whose request is
        /// charged more than 64 KiB is charged, once it has decoded its
        /// arguments, for the members its argument type keeps (all of them for
        /// a map or a `serde_json::Value`) and the `_meta` its context keeps.
        ///
        /// Over HTTP (feature `http`), many clients share it and nothing
        /// waits or passes it: a principal (`server::http::Principal`, else
        /// the peer's address) holds at most a quarter of it, and a message
        /// estimated larger is refused with 413; a principal at its quarter is
        /// refused with 503 and `Retry-After`. Principals together hold at
        /// most 7/8 of it: the last eighth is for a principal holding nothing,
        /// one message of at most 16 KiB each (an `initialize`, a first call).
        set max_inbound_bytes: usize, get_max_inbound_bytes -> usize, copy;
        /// After [`stop`](super::ServerHandle::stop): how long in-flight handlers
        /// may run to completion (their contexts see cancellation at once).
        /// Zero, the default, aborts them immediately.
        set stop_drain: Duration, get_stop_drain -> Duration, copy;
        /// After end of input: how long in-flight and queued requests may run to
        /// completion so their answers are written. Default 5 s.
        set eof_drain: Duration, get_eof_drain -> Duration, copy;
        /// When serving ends: how long queued output may take to be written
        /// before it is abandoned (a client that stopped reading). Default 1 s.
        set flush_timeout: Duration, get_flush_timeout -> Duration, copy;
        /// Default timeout of a server-to-client request. Default 30 s.
        set client_request_timeout: Duration, get_client_request_timeout -> Duration, copy;
        /// 2026-07-28 era: the `ttlMs` cache hint added to `server/discover` and to
        /// the results of cacheable methods (`tools/list`, `prompts/list`,
        /// `resources/list`, `resources/templates/list`, `resources/read`) when
        /// the handler's result has none (the 2026-07-28 schema requires it).
        /// Default 0: immediately stale.
        ///
        /// ```
        /// use conduit_mcp::protocol::Implementation;
        /// use conduit_mcp::protocol::CacheScope;
        /// use conduit_mcp::server::ServerConfig;
        ///
        /// let config = ServerConfig::new(Implementation::new("docs", "1.0"))
        ///     .cache_ttl_ms(60_000)
        ///     .cache_scope(CacheScope::Public);
        /// assert_eq!(config.get_cache_ttl_ms(), 60_000);
        /// ```
        set cache_ttl_ms: u64, get_cache_ttl_ms -> u64, copy;
        /// 2026-07-28 era: the `cacheScope` hint added alongside
        /// [`cache_ttl_ms`](Self::cache_ttl_ms). Default [`CacheScope::Private`].
        set cache_scope: CacheScope, get_cache_scope -> CacheScope, copy;
        /// Unix, process stdio only: while serving, point fd 1 at stderr and
        /// write the protocol to a private duplicate of the original stdout, so
        /// a stray `println!` cannot corrupt the stream. Default off.
        set stdout_guard: bool, get_stdout_guard -> bool, copy;
    }
}

impl ServerConfig {
    /// A configuration with the given identity, no capabilities and the
    /// default limits.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::{ServerConfig, DEFAULT_MAX_IN_FLIGHT};
    ///
    /// let config = ServerConfig::new(Implementation::new("weather", "1.0.0"));
    /// assert_eq!(config.get_max_in_flight(), DEFAULT_MAX_IN_FLIGHT);
    /// assert!(config.validate().is_ok());
    /// ```
    pub fn new(server_info: Implementation) -> Self {
        Self {
            server_info,
            capabilities: Value::Object(Default::default()),
            instructions: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_outbound_bytes: DEFAULT_MAX_OUTBOUND_BYTES,
            max_inbound_bytes: DEFAULT_MAX_INBOUND_BYTES,
            max_subscription_bytes: DEFAULT_MAX_SUBSCRIPTION_BYTES,
            stop_drain: Duration::ZERO,
            eof_drain: Duration::from_secs(5),
            flush_timeout: Duration::from_secs(1),
            client_request_timeout: Duration::from_secs(30),
            cache_ttl_ms: 0,
            cache_scope: CacheScope::Private,
            stdout_guard: false,
            max_held_calls: DEFAULT_MAX_HELD_CALLS,
            held_input_timeout: DEFAULT_HELD_INPUT_TIMEOUT,
        }
    }

    /// Optional instructions for the client's model.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Checks the configuration; the error names the offending field.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::{ServerConfig, ServerError};
    ///
    /// let config = ServerConfig::new(Implementation::new("weather", "1.0.0")).max_in_flight(0);
    /// let err = config.validate().unwrap_err();
    /// assert!(matches!(err, ServerError::InvalidConfig { key: "max_in_flight", .. }));
    /// ```
    pub fn validate(&self) -> Result<(), ServerError> {
        let bad = |key: &'static str, reason: &str| {
            Err(ServerError::InvalidConfig {
                key,
                reason: reason.to_owned(),
            })
        };
        if self.server_info.name.trim().is_empty() {
            return bad("server_info", "name must not be empty");
        }
        if !self.capabilities.is_object() {
            return bad("capabilities", "must be a JSON object");
        }
        if self.max_message_bytes == 0 {
            return bad("max_message_bytes", "must be at least 1");
        }
        if self.max_in_flight == 0 {
            return bad("max_in_flight", "must be at least 1");
        }
        if self.max_outbound_bytes < 1024 {
            return bad("max_outbound_bytes", "must be at least 1024");
        }
        if self.max_inbound_bytes < MIN_INBOUND_BYTES {
            return bad(
                "max_inbound_bytes",
                &format!(
                    "must be at least {MIN_INBOUND_BYTES} (1 MiB), got {}",
                    self.max_inbound_bytes
                ),
            );
        }
        if self.client_request_timeout.is_zero() {
            return bad("client_request_timeout", "must be positive");
        }
        Ok(())
    }
}
