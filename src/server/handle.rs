//! The cloneable [`ServerHandle`], its lifetime token, and the state the
//! session shares with it.

use crate::sync::lock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};

use crate::jsonrpc::pending::PendingTable;
use crate::jsonrpc::{encode, ErrorObject, RequestId};
use crate::protocol::{methods, Era, LoggingLevel};

use super::engine::budget::InboundBudget;
use super::error::SendError;
use super::held_table::HeldTable;
use super::server_config::ServerConfig;
use super::subscriptions::{Subscriptions, SubscriptionsFull};
use crate::line_io::{QueueError, WriteQueue};

/// A name the per-session variants of the handle's methods accept for the
/// one session of a stdio server, beside its [`SessionId`].
pub const STDIO_SESSION: &str = "stdio";

/// The id of a session: an HTTP client's `MCP-Session-Id`, or the id a
/// stdio server gives its one session. Cloning it is cheap.
///
/// # Examples
///
/// ```
/// use conduit_mcp::protocol::Implementation;
/// use conduit_mcp::server::{ServerConfig, StdioServer};
///
/// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
/// let server = StdioServer::over(tokio::io::empty(), tokio::io::sink(), config);
/// let id = server.handle().id().expect("the server exists");
/// assert!(id.as_str().starts_with("stdio-"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(Arc<str>);

impl SessionId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A fresh id, unique in this process, of the form `{kind}-{n}`.
    pub(crate) fn local(kind: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        SessionId(format!("{kind}-{}", NEXT.fetch_add(1, Ordering::Relaxed)).into())
    }
}

impl From<String> for SessionId {
    fn from(id: String) -> Self {
        SessionId(id.into())
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the client told us about itself.
#[derive(Debug, Default, Clone)]
pub(crate) struct SessionState {
    /// 2025-11-25: the negotiated version after `initialize`.
    stateful_version: Option<String>,
    /// 2025-11-25: capabilities from the latest `initialize` (shared with every
    /// request's context, not copied: they can be large).
    stateful_capabilities: Option<Arc<Value>>,
    /// The latest capabilities seen (initialize or a 2026-07-28 `_meta`).
    latest_capabilities: Option<Arc<Value>>,
    /// The latest client info seen.
    client_info: Option<Value>,
    /// The era of the latest request that declared one.
    era: Option<Era>,
    /// `notifications/initialized` was received.
    initialized: bool,
    /// 2025-11-25: the URIs of `resources/subscribe` (a [`Router`](super::Router)
    /// records them), bounded by `max_subscription_bytes`.
    subscriptions: Subscriptions,
    /// 2025-11-25: the level of the latest `logging/setLevel` (a
    /// [`Router`](super::Router) records it).
    log_level: Option<LoggingLevel>,
}

impl SessionState {
    /// Whether an `initialize` opened a 2025-11-25 session.
    #[inline]
    pub(crate) fn is_stateful(&self) -> bool {
        self.stateful_version.is_some()
    }

    /// The capabilities of the 2025-11-25 session's `initialize`.
    #[inline]
    pub(crate) fn stateful_capabilities(&self) -> Option<&Arc<Value>> {
        self.stateful_capabilities.as_ref()
    }

    /// Records what a 2026-07-28 request reveals; returns its capabilities,
    /// shared.
    ///
    /// A client sends the same capabilities and info with every request:
    /// comparing costs less than copying them again (several allocations
    /// per request), so an equal value keeps the copy already held.
    #[inline]
    pub(crate) fn record_stateless(&mut self, caps: &Value, info: Option<&Value>) -> Arc<Value> {
        let caps = match &self.latest_capabilities {
            Some(held) if **held == *caps => held.clone(),
            _ => Arc::new(caps.clone()),
        };
        self.latest_capabilities = Some(caps.clone());
        if let Some(info) = info {
            if self.client_info.as_ref() != Some(info) {
                self.client_info = Some(info.clone());
            }
        }
        self.era = Some(Era::Stateless);
        caps
    }

    /// Starts a new 2025-11-25 session (`initialize`): nothing of the
    /// previous one carries over.
    pub(crate) fn start_stateful(
        &mut self,
        version: &str,
        caps: Value,
        client_info: Option<Value>,
    ) {
        self.stateful_version = Some(version.to_owned());
        let caps = Arc::new(caps);
        self.stateful_capabilities = Some(caps.clone());
        self.latest_capabilities = Some(caps);
        self.client_info = client_info;
        self.era = Some(Era::Stateful);
        self.initialized = false;
        self.subscriptions = Subscriptions::default();
        self.log_level = None;
    }

    /// `notifications/initialized` was received.
    #[inline]
    pub(crate) fn mark_initialized(&mut self) {
        self.initialized = true;
    }

    /// Whether a 2025-11-25 session subscribed to `uri`.
    #[inline]
    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.era == Some(Era::Stateful) && self.subscriptions.contains(uri)
    }

    /// Records a `resources/subscribe`, within `limit` bytes.
    #[inline]
    pub(crate) fn subscribe(&mut self, uri: String, limit: usize) -> Result<(), SubscriptionsFull> {
        self.subscriptions.subscribe(uri, limit)
    }

    /// Records a `resources/unsubscribe`.
    #[inline]
    pub(crate) fn unsubscribe(&mut self, uri: &str) {
        self.subscriptions.unsubscribe(uri);
    }

    /// Records a `logging/setLevel`.
    #[inline]
    pub(crate) fn set_log_level(&mut self, level: LoggingLevel) {
        self.log_level = Some(level);
    }

    /// Writes what a session record keeps of this state into `r`.
    #[cfg(feature = "http")]
    pub(crate) fn save(&self, r: &mut crate::server::http::SessionRecord) {
        r.protocol_version = self.stateful_version.clone();
        r.client_capabilities = self.stateful_capabilities.as_deref().cloned();
        r.client_info = self.client_info.clone();
        (r.era, r.initialized) = (self.era, self.initialized);
        r.log_level = self.log_level.clone();
        r.subscriptions = self.subscriptions.uris().cloned().collect();
    }

    /// This state as record `r` keeps it (a session materialised).
    #[cfg(feature = "http")]
    pub(crate) fn restore(&mut self, r: &crate::server::http::SessionRecord) {
        self.stateful_version = r.protocol_version.clone();
        self.stateful_capabilities = r.client_capabilities.clone().map(Arc::new);
        self.latest_capabilities = self.stateful_capabilities.clone();
        self.client_info = r.client_info.clone();
        (self.era, self.initialized) = (r.era, r.initialized);
        self.log_level = r.log_level.clone();
        for uri in &r.subscriptions {
            let _ = self.subscriptions.subscribe(uri.clone(), usize::MAX);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServePhase {
    NotStarted,
    Ready,
    Ended,
}

type Reply = Result<crate::jsonrpc::RawJson, ErrorObject>;

/// The transport of a session whose messages do not go to one byte
/// stream (HTTP), given when the session is made. A request with a stream
/// of its own has one too. stdio has none: its session writes to its queue,
/// with no dynamic call per message.
pub(crate) trait SessionTransport: Send + Sync {
    /// Queues one serialised message (a line).
    fn send_line(&self, line: Vec<u8>) -> Result<(), SendError>;

    /// Closes the stream for the client to reconnect and resume it; false
    /// where streams are not resumable.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    fn close_for_polling(&self) -> bool {
        false
    }

    /// The live session with this id, for the per-session variants of
    /// [`ServerHandle`]'s methods.
    fn find(&self, _id: &str) -> Option<Arc<SessionShared>> {
        None
    }

    /// Runs after [`ServerHandle::stop`] signalled the stop.
    fn on_stop(&self) {}

    /// Binds the transport to the HTTP server that serves its session.
    #[cfg(feature = "http")]
    fn serve(&self, _core: Weak<crate::server::http::core::Core>) {}
}

/// State shared between the session and every handle and context.
pub(crate) struct SessionShared {
    id: SessionId,
    config: ServerConfig,
    /// The queue of output lines (stdio); `None` where `transport` takes
    /// them (HTTP).
    out: Option<WriteQueue>,
    stop: watch::Sender<bool>,
    phase: watch::Sender<ServePhase>,
    /// The client closed its input, or serving is ending.
    input_closed: watch::Sender<bool>,
    /// The capabilities declared: the configuration's and the handler's
    /// (set when serving starts).
    declared: std::sync::OnceLock<Value>,
    closed: AtomicBool,
    /// Bytes held for parsed input (`max_inbound_bytes`).
    inbound: Arc<InboundBudget>,
    session: Mutex<SessionState>,
    pending: PendingTable<oneshot::Sender<Reply>>,
    /// The transport, where it is not the queue `out` (HTTP).
    transport: Option<Arc<dyn SessionTransport>>,
    /// Calls waiting for their clients' next input round.
    held: Arc<HeldTable>,
    /// What the HTTP server's listener refused.
    #[cfg(feature = "http")]
    connections: crate::server::http::ConnectionStats,
    /// The principal that opened the session, where one was named.
    #[cfg(feature = "http")]
    principal: Option<crate::server::http::Principal>,
}

impl SessionShared {
    pub(crate) fn new(id: SessionId, config: ServerConfig, out: Option<WriteQueue>) -> Self {
        let inbound = InboundBudget::new(config.get_max_inbound_bytes());
        Self {
            id,
            config,
            out,
            stop: watch::channel(false).0,
            phase: watch::channel(ServePhase::NotStarted).0,
            input_closed: watch::channel(false).0,
            declared: std::sync::OnceLock::new(),
            closed: AtomicBool::new(false),
            inbound,
            session: Mutex::new(SessionState::default()),
            pending: PendingTable::default(),
            transport: None,
            held: Arc::default(),
            #[cfg(feature = "http")]
            connections: crate::server::http::ConnectionStats::new(),
            #[cfg(feature = "http")]
            principal: None,
        }
    }

    /// The transport, where it is not the queue of output lines.
    #[cfg(feature = "http")]
    pub(crate) fn transport(&self) -> Option<&Arc<dyn SessionTransport>> {
        self.transport.as_ref()
    }

    /// The session's id.
    #[inline]
    pub(crate) fn id(&self) -> &SessionId {
        &self.id
    }

    /// The capabilities declared to clients.
    /// A state for the HTTP transport (`"http"` in diagnostics), of a
    /// session `principal` opened.
    #[cfg(feature = "http")]
    pub(crate) fn over_http(
        mut self,
        transport: Arc<dyn SessionTransport>,
        principal: Option<crate::server::http::Principal>,
    ) -> Self {
        self.transport = Some(transport);
        self.principal = principal;
        self
    }

    /// What the HTTP server's listener refused (counted by the listener of
    /// the server whose root state this is).
    #[cfg(feature = "http")]
    pub(crate) fn connections(&self) -> &crate::server::http::ConnectionStats {
        &self.connections
    }

    /// Shares another state's budget for parsed input (an HTTP session
    /// counts against its server's).
    #[cfg(feature = "http")]
    pub(crate) fn with_inbound(mut self, inbound: Arc<InboundBudget>) -> Self {
        self.inbound = inbound;
        self
    }

    /// The server's configuration.
    #[inline]
    pub(crate) fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The budget for parsed input (`max_inbound_bytes`).
    #[inline]
    pub(crate) fn inbound(&self) -> &Arc<InboundBudget> {
        &self.inbound
    }

    /// The calls waiting for their clients' next input round.
    #[inline]
    pub(crate) fn held(&self) -> &Arc<HeldTable> {
        &self.held
    }

    /// Whether a stop was asked for.
    #[inline]
    pub(crate) fn stop_requested(&self) -> bool {
        *self.stop.borrow()
    }

    /// A receiver that wakes when a stop is asked for.
    pub(crate) fn watch_stop(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Serving has started.
    pub(crate) fn mark_ready(&self) {
        self.phase.send_replace(ServePhase::Ready);
    }

    /// The client closed its input, or serving is ending.
    pub(crate) fn mark_input_closed(&self) {
        self.input_closed.send_replace(true);
    }

    /// A receiver that wakes when the input closes (see
    /// [`mark_input_closed`](Self::mark_input_closed)).
    pub(crate) fn watch_input_closed(&self) -> watch::Receiver<bool> {
        self.input_closed.subscribe()
    }

    /// Sets the capabilities declared (the first call wins).
    pub(crate) fn declare_capabilities(&self, capabilities: Value) {
        let _ = self.declared.set(capabilities);
    }

    pub(crate) fn capabilities(&self) -> &Value {
        self.declared
            .get()
            .unwrap_or(self.config.get_capabilities())
    }

    pub(crate) fn session(&self) -> MutexGuard<'_, SessionState> {
        lock(&self.session)
    }

    /// Queues a notification or request line, refusing when closed or full.
    pub(crate) fn send_line(&self, line: Vec<u8>) -> Result<(), SendError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(SendError::TransportGone);
        }
        if let Some(t) = &self.transport {
            return t.send_line(line);
        }
        let Some(out) = &self.out else {
            return Err(SendError::TransportGone);
        };
        out.try_send(line).map_err(|e| match e {
            QueueError::Full { limit, .. } | QueueError::TooLarge { limit, .. } => {
                SendError::QueueFull { limit }
            }
            QueueError::Closed => SendError::TransportGone,
        })
    }

    /// Routes a client's response to the pending server-to-client request.
    /// Returns false if nothing was waiting for this id.
    pub(crate) fn resolve(&self, id: &RequestId, reply: Reply) -> bool {
        match self.pending.remove(id) {
            Some(tx) => {
                let _ = tx.send(reply);
                true
            }
            None => false,
        }
    }

    /// Routes a client's response (result or error) to the pending
    /// server-to-client request of its id; one nobody waits for is dropped.
    pub(crate) fn route_response(&self, r: crate::jsonrpc::Response) {
        let reply = match r.outcome {
            crate::jsonrpc::Outcome::Result(raw) => Ok(raw),
            crate::jsonrpc::Outcome::Error(e) => Err(e),
        };
        match r.id {
            Some(id) => {
                if !self.resolve(&id, reply) {
                    tracing::debug!(%id, "response to no pending request: dropped");
                }
            }
            None => tracing::debug!("response with null id: dropped"),
        }
    }

    /// Entries in the table of pending server-to-client requests.
    #[cfg(test)]
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Ends the lifetime: handles and contexts become inert, and pending
    /// server-to-client requests fail with [`SendError::TransportGone`].
    pub(crate) fn close(&self) {
        // The session's subscriptions go with it, even while a handle or a
        // context kept by user code keeps this value alive.
        self.session().subscriptions = Subscriptions::default();
        self.input_closed.send_replace(true);
        self.closed.store(true, Ordering::Release);
        drop(self.pending.take_all());
        self.held.clear();
        self.phase.send_replace(ServePhase::Ended);
    }
}

/// A weak reference that tells whether the transport still exists.
///
/// Held by [`ServerHandle`] and [`RequestContext`](super::RequestContext);
/// once serving has ended or the server was dropped, it has expired and
/// every operation through them fails with [`SendError::TransportGone`]
/// instead of panicking.
#[derive(Clone)]
pub struct LifetimeToken(pub(crate) Weak<SessionShared>);

impl LifetimeToken {
    /// Whether the transport still exists and is not closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::{ServerConfig, StdioServer};
    ///
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// let server = StdioServer::over(tokio::io::empty(), tokio::io::sink(), config);
    /// let token = server.handle().lifetime_token();
    /// assert!(token.is_alive());
    /// drop(server);
    /// assert!(!token.is_alive());
    /// ```
    pub fn is_alive(&self) -> bool {
        self.0
            .upgrade()
            .is_some_and(|s| !s.closed.load(Ordering::Acquire))
    }
}

impl std::fmt::Debug for LifetimeToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LifetimeToken")
            .field("alive", &self.is_alive())
            .finish()
    }
}

/// Which list changed, for [`ServerHandle::notify_list_changed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `notifications/tools/list_changed`.
    Tools,
    /// `notifications/resources/list_changed`.
    Resources,
    /// `notifications/prompts/list_changed`.
    Prompts,
}

impl ListKind {
    /// The notification's method.
    pub(crate) fn method(self) -> &'static str {
        match self {
            ListKind::Tools => methods::TOOLS_LIST_CHANGED,
            ListKind::Resources => methods::RESOURCES_LIST_CHANGED,
            ListKind::Prompts => methods::PROMPTS_LIST_CHANGED,
        }
    }
}

/// A cloneable handle to a running (or not yet running) server.
///
/// All methods are safe to call from any task while the loop runs. The
/// handle does not keep the transport alive: once serving has ended or the
/// [`StdioServer`](super::StdioServer) was dropped, sending fails with
/// [`SendError::TransportGone`] and [`stop`](Self::stop) does nothing.
#[derive(Clone)]
pub struct ServerHandle {
    token: LifetimeToken,
    /// The stream of the request whose context holds this handle, on
    /// transports that give each request one (HTTP); `None` otherwise.
    target: Option<Arc<dyn SessionTransport>>,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("token", &self.token)
            .field("request_stream", &self.target.is_some())
            .finish()
    }
}

impl ServerHandle {
    /// Closes the SSE stream of the request this handle sends through,
    /// for the client to reconnect (see [`close_sse_stream`]); false where
    /// there is none or it is not resumable.
    ///
    /// [`close_sse_stream`]: crate::server::http::close_sse_stream
    #[cfg(feature = "http")]
    pub(crate) fn close_stream_for_polling(&self) -> bool {
        self.target.as_ref().is_some_and(|o| o.close_for_polling())
    }

    pub(crate) fn new(shared: &Arc<SessionShared>) -> Self {
        Self::with_target(shared, None)
    }

    /// A handle whose messages go to `target`, one request's stream, if
    /// there is one.
    pub(crate) fn with_target(
        shared: &Arc<SessionShared>,
        target: Option<Arc<dyn SessionTransport>>,
    ) -> Self {
        let token = LifetimeToken(Arc::downgrade(shared));
        Self { token, target }
    }

    /// Queues a line on this handle's path: the request's stream if it has
    /// one, else the session's queue.
    fn send_line(&self, shared: &SessionShared, line: Vec<u8>) -> Result<(), SendError> {
        match &self.target {
            Some(o) if !shared.closed.load(Ordering::Acquire) => o.send_line(line),
            _ => shared.send_line(line),
        }
    }

    /// The handle of one session: this one on a single-session transport
    /// (stdio, whose session is [`STDIO_SESSION`]), else the session the
    /// transport finds by `session`.
    fn for_session(&self, session: &str) -> Result<ServerHandle, SendError> {
        let shared = self.shared()?;
        match &shared.transport {
            Some(t) => t
                .find(session)
                .map(|s| ServerHandle::new(&s))
                .ok_or_else(|| SendError::UnknownSession(session.to_owned())),
            None if session == STDIO_SESSION || session == shared.id.as_str() => Ok(self.clone()),
            None => Err(SendError::UnknownSession(session.to_owned())),
        }
    }

    pub(crate) fn shared(&self) -> Result<Arc<SessionShared>, SendError> {
        match self.token.0.upgrade() {
            Some(s) if !s.closed.load(Ordering::Acquire) => Ok(s),
            _ => Err(SendError::TransportGone),
        }
    }

    /// The transport's diagnostic name: `"stdio"` or `"http"` (`"stdio"`
    /// once the transport is gone).
    pub fn name(&self) -> &'static str {
        match self.token.0.upgrade() {
            Some(s) if s.transport.is_some() => "http",
            _ => "stdio",
        }
    }

    /// The lifetime token of the transport.
    pub fn lifetime_token(&self) -> LifetimeToken {
        self.token.clone()
    }

    /// The id of the session this handle speaks to; `None` once the
    /// transport is gone.
    ///
    /// On the handle of an HTTP server as a whole
    /// it is the server's own id, which names no session; a request's
    /// [`RequestContext::handle`](super::RequestContext::handle) has its
    /// session's.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::{RequestContext, SessionId};
    ///
    /// fn session_of(ctx: &RequestContext) -> Option<SessionId> {
    ///     ctx.handle().id()
    /// }
    /// ```
    pub fn id(&self) -> Option<SessionId> {
        self.token.0.upgrade().map(|s| s.id.clone())
    }

    /// The principal that opened the session, as an authentication layer
    /// named it; `None` for a session without one, on stdio, and once the
    /// transport is gone.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::RequestContext;
    ///
    /// fn who(ctx: &RequestContext) -> String {
    ///     ctx.handle().principal().map_or("anyone".into(), |p| p.name().to_owned())
    /// }
    /// ```
    #[cfg(feature = "http")]
    pub fn principal(&self) -> Option<crate::server::http::Principal> {
        self.token.0.upgrade().and_then(|s| s.principal.clone())
    }

    /// Waits until the session ends: its client closed its input, the
    /// session was deleted or expired, or serving is ending. Returns at
    /// once when the transport is gone.
    ///
    /// Cancel safety: cancel safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::ServerHandle;
    ///
    /// fn on_end(handle: ServerHandle) {
    ///     tokio::spawn(async move {
    ///         handle.closed().await;
    ///         tracing::info!("the session ended");
    ///     });
    /// }
    /// ```
    pub async fn closed(&self) {
        let Ok(shared) = self.shared() else {
            return;
        };
        let mut rx = shared.watch_input_closed();
        drop(shared);
        let _ = rx.wait_for(|c| *c).await;
    }

    /// Stops serving at once, even while the loop is blocked reading an idle
    /// stdin. In-flight handlers see cancellation and are aborted (after
    /// [`ServerConfig::stop_drain`], zero by default); their answers are not
    /// sent. Calling it before serving starts makes `serve` return
    /// immediately. Idempotent; does nothing once the transport is gone.
    ///
    /// # Examples
    ///
    /// ```
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::{Router, ServeEnd, ServerConfig, StdioServer};
    /// # use tokio::io::AsyncBufReadExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (client, server_end) = tokio::io::duplex(64 * 1024);
    /// # let (reader, writer) = tokio::io::split(server_end);
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// # let server = StdioServer::over(reader, writer, config);
    /// # let handle = server.handle();
    /// # let serving = tokio::spawn(server.serve(Router::new()));
    /// # let mut from_server = tokio::io::BufReader::new(client).lines();
    /// handle.wait_until_ready().await?;
    /// handle.stop();
    /// assert_eq!(serving.await??, ServeEnd::Stopped);
    /// # Ok(()) }
    /// ```
    pub fn stop(&self) {
        if let Some(s) = self.token.0.upgrade() {
            tracing::info!("server stop requested");
            s.stop.send_replace(true);
            if let Some(t) = &s.transport {
                t.on_stop();
            }
        }
    }

    /// Waits until the loop is reading its input. Fails if serving ended (or
    /// the server was dropped) first.
    ///
    /// Cancel safety: cancel safe.
    ///
    /// # Examples
    ///
    /// ```
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::{Router, ServeEnd, ServerConfig, StdioServer};
    /// # use tokio::io::AsyncBufReadExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (client, server_end) = tokio::io::duplex(64 * 1024);
    /// # let (reader, writer) = tokio::io::split(server_end);
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// # let server = StdioServer::over(reader, writer, config);
    /// # let handle = server.handle();
    /// # let serving = tokio::spawn(server.serve(Router::new()));
    /// # let mut from_server = tokio::io::BufReader::new(client).lines();
    /// handle.wait_until_ready().await?; // the server reads its input now
    /// handle.notify("notifications/acme/ready", None)?;
    /// # Ok(()) }
    /// ```
    pub async fn wait_until_ready(&self) -> Result<(), SendError> {
        let mut rx = self.shared()?.phase.subscribe();
        // The Arc is released above: waiting must not keep the server alive.
        let ready = matches!(
            rx.wait_for(|p| *p != ServePhase::NotStarted)
                .await
                .map(|p| *p),
            Ok(ServePhase::Ready)
        );
        if ready {
            Ok(())
        } else {
            Err(SendError::TransportGone)
        }
    }

    /// The client's capabilities: from the latest `initialize` (2025-11-25) or
    /// the latest 2026-07-28 request's `_meta`, whichever came last. `None`
    /// before either, or once the transport is gone.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::ServerHandle;
    ///
    /// fn can_sample(handle: &ServerHandle) -> bool {
    ///     handle.client_capabilities().is_some_and(|caps| caps.get("sampling").is_some())
    /// }
    /// ```
    pub fn client_capabilities(&self) -> Option<Value> {
        self.read(|st| st.latest_capabilities.as_deref().cloned())
    }

    /// Reads the session's state; `None` once the transport is gone.
    fn read<T>(&self, f: impl FnOnce(&SessionState) -> Option<T>) -> Option<T> {
        self.shared().ok().and_then(|s| f(&s.session()))
    }

    /// [`client_capabilities`](Self::client_capabilities) of one session
    /// (stdio has one: [`STDIO_SESSION`]; HTTP sessions are named by their
    /// `MCP-Session-Id`).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::ServerHandle;
    ///
    /// // `session` is an HTTP client's `MCP-Session-Id` (or STDIO_SESSION).
    /// fn has_roots(handle: &ServerHandle, session: &str) -> bool {
    ///     handle
    ///         .client_capabilities_for_session(session)
    ///         .is_some_and(|caps| caps.get("roots").is_some())
    /// }
    /// ```
    pub fn client_capabilities_for_session(&self, session: &str) -> Option<Value> {
        self.for_session(session)
            .ok()
            .and_then(|h| h.client_capabilities())
    }

    /// Connections the listener of an [`HttpServer`](crate::server::http::HttpServer)
    /// refused since it started, each answered 503 with `Retry-After` (or
    /// closed at once), because their owner held its
    /// `max_connections_per_peer` busy or the listener its
    /// `max_connections` (see
    /// [`ConnectionStats::refused`](crate::server::http::ConnectionStats::refused)).
    /// It is the server's count, read on [`HttpServer::handle`](crate::server::http::HttpServer::handle)'s
    /// handle and its clones while the server serves; 0 on other handles
    /// and transports, and once serving ended.
    ///
    /// ```
    /// use conduit_mcp::server::ServerHandle;
    ///
    /// fn report(handle: &ServerHandle) {
    ///     tracing::info!(refused = handle.refused_connections(), "connections refused");
    /// }
    /// ```
    #[cfg(feature = "http")]
    pub fn refused_connections(&self) -> u64 {
        self.token
            .0
            .upgrade()
            .map_or(0, |s| s.connections().refused())
    }

    /// Calls of [`RequestContext::run_held`](super::RequestContext::run_held)
    /// waiting for their clients' next input round now (over HTTP: of
    /// every client of the server; 0 once serving ended).
    ///
    /// ```
    /// use conduit_mcp::server::ServerHandle;
    ///
    /// fn report(handle: &ServerHandle) {
    ///     tracing::info!(held = handle.held_calls(), "calls waiting for their clients' input");
    /// }
    /// ```
    pub fn held_calls(&self) -> usize {
        self.shared().map_or(0, |s| s.held.len())
    }

    /// The client's `clientInfo` as last reported.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::ServerHandle;
    ///
    /// fn client_name(handle: &ServerHandle) -> String {
    ///     handle
    ///         .client_info()
    ///         .and_then(|info| info["name"].as_str().map(str::to_owned))
    ///         .unwrap_or_else(|| "an unknown client".to_owned())
    /// }
    /// ```
    pub fn client_info(&self) -> Option<Value> {
        self.read(|st| st.client_info.clone())
    }

    /// The era of the latest request that declared one (`initialize` or a
    /// 2026-07-28 `_meta`).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Era;
    /// use conduit_mcp::server::ServerHandle;
    ///
    /// fn can_send_requests(handle: &ServerHandle) -> bool {
    ///     handle.era() == Some(Era::Stateful) // the 2026-07-28 era asks through results instead
    /// }
    /// ```
    pub fn era(&self) -> Option<Era> {
        self.read(|st| st.era)
    }

    /// The level the client asked for with `logging/setLevel` in this
    /// session (2025-11-25 era), as recorded by a [`Router`](super::Router);
    /// `None` before one, for a 2026-07-28 client, or once the transport is
    /// gone. [`RequestContext::log`](super::RequestContext::log) honours it.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::LoggingLevel;
    /// use conduit_mcp::server::ServerHandle;
    ///
    /// fn wants_debug(handle: &ServerHandle) -> bool {
    ///     matches!(handle.log_level(), Some(LoggingLevel::Debug))
    /// }
    /// ```
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.read(|st| st.log_level.clone())
    }

    /// Sends a notification. Never waits: the line is queued for the writer.
    ///
    /// Fails with [`SendError::QueueFull`] when the client is not reading
    /// (over `max_outbound_bytes` unwritten), and
    /// [`SendError::TransportGone`] once serving has ended.
    ///
    /// # Examples
    ///
    /// ```
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::{Router, ServeEnd, ServerConfig, StdioServer};
    /// # use tokio::io::AsyncBufReadExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (client, server_end) = tokio::io::duplex(64 * 1024);
    /// # let (reader, writer) = tokio::io::split(server_end);
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// # let server = StdioServer::over(reader, writer, config);
    /// # let handle = server.handle();
    /// # let serving = tokio::spawn(server.serve(Router::new()));
    /// # let mut from_server = tokio::io::BufReader::new(client).lines();
    /// handle.wait_until_ready().await?;
    /// handle.notify("notifications/acme/hello", Some(serde_json::json!({ "n": 1 })))?;
    /// let line = from_server.next_line().await?.unwrap();
    /// assert!(line.contains("notifications/acme/hello"));
    /// # Ok(()) }
    /// ```
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), SendError> {
        let shared = self.shared()?;
        let line = encode::notification(method, params.as_ref())
            .map_err(|e| SendError::Serialize(e.to_string()))?;
        self.send_line(&shared, line)
    }

    /// [`notify`](Self::notify) addressed to one session.
    ///
    /// # Examples
    ///
    /// ```
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::{Router, ServeEnd, ServerConfig, StdioServer};
    /// # use tokio::io::AsyncBufReadExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (client, server_end) = tokio::io::duplex(64 * 1024);
    /// # let (reader, writer) = tokio::io::split(server_end);
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// # let server = StdioServer::over(reader, writer, config);
    /// # let handle = server.handle();
    /// # let serving = tokio::spawn(server.serve(Router::new()));
    /// # let mut from_server = tokio::io::BufReader::new(client).lines();
    /// use conduit_mcp::server::STDIO_SESSION;
    ///
    /// handle.wait_until_ready().await?;
    /// handle.notify_session(STDIO_SESSION, "notifications/acme/hello", None)?;
    /// assert!(handle.notify_session("no-such-session", "notifications/acme/hello", None).is_err());
    /// # Ok(()) }
    /// ```
    pub fn notify_session(
        &self,
        session: &str,
        method: &str,
        params: Option<Value>,
    ) -> Result<(), SendError> {
        self.for_session(session)?.notify(method, params)
    }

    /// Sends `notifications/progress` for `token`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::{Router, ServeEnd, ServerConfig, StdioServer};
    /// # use tokio::io::AsyncBufReadExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (client, server_end) = tokio::io::duplex(64 * 1024);
    /// # let (reader, writer) = tokio::io::split(server_end);
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// # let server = StdioServer::over(reader, writer, config);
    /// # let handle = server.handle();
    /// # let serving = tokio::spawn(server.serve(Router::new()));
    /// # let mut from_server = tokio::io::BufReader::new(client).lines();
    /// handle.wait_until_ready().await?;
    /// let token = serde_json::json!("import-1"); // the request's `_meta.progressToken`
    /// handle.notify_progress(&token, 5.0, Some(10.0), Some("half way"))?;
    /// let line = from_server.next_line().await?.unwrap();
    /// assert!(line.contains("notifications/progress"));
    /// # Ok(()) }
    /// ```
    pub fn notify_progress(
        &self,
        token: &Value,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), SendError> {
        let mut p = json!({ "progressToken": token, "progress": progress });
        if let Some(t) = total {
            p["total"] = json!(t);
        }
        if let Some(m) = message {
            p["message"] = json!(m);
        }
        self.notify(methods::PROGRESS, Some(p))
    }

    /// Sends `notifications/message` (a log message) at `level`
    /// (`"debug"`, `"info"`, ..., `"emergency"`).
    ///
    /// # Examples
    ///
    /// ```
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::{Router, ServeEnd, ServerConfig, StdioServer};
    /// # use tokio::io::AsyncBufReadExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (client, server_end) = tokio::io::duplex(64 * 1024);
    /// # let (reader, writer) = tokio::io::split(server_end);
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// # let server = StdioServer::over(reader, writer, config);
    /// # let handle = server.handle();
    /// # let serving = tokio::spawn(server.serve(Router::new()));
    /// # let mut from_server = tokio::io::BufReader::new(client).lines();
    /// handle.wait_until_ready().await?;
    /// handle.notify_log("warning", Some("cache"), serde_json::json!("cache is 90% full"))?;
    /// let line = from_server.next_line().await?.unwrap();
    /// assert!(line.contains("notifications/message"));
    /// # Ok(()) }
    /// ```
    pub fn notify_log(
        &self,
        level: &str,
        logger: Option<&str>,
        data: Value,
    ) -> Result<(), SendError> {
        let mut p = json!({ "level": level, "data": data });
        if let Some(l) = logger {
            p["logger"] = json!(l);
        }
        self.notify("notifications/message", Some(p))
    }

    /// Sends `notifications/{tools,resources,prompts}/list_changed`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::{Router, ServeEnd, ServerConfig, StdioServer};
    /// # use tokio::io::AsyncBufReadExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (client, server_end) = tokio::io::duplex(64 * 1024);
    /// # let (reader, writer) = tokio::io::split(server_end);
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// # let server = StdioServer::over(reader, writer, config);
    /// # let handle = server.handle();
    /// # let serving = tokio::spawn(server.serve(Router::new()));
    /// # let mut from_server = tokio::io::BufReader::new(client).lines();
    /// use conduit_mcp::server::ListKind;
    ///
    /// handle.wait_until_ready().await?;
    /// handle.notify_list_changed(ListKind::Tools)?;
    /// let line = from_server.next_line().await?.unwrap();
    /// assert!(line.contains("notifications/tools/list_changed"));
    /// # Ok(()) }
    /// ```
    pub fn notify_list_changed(&self, kind: ListKind) -> Result<(), SendError> {
        self.notify(kind.method(), None)
    }

    /// Sends a server-to-client request (2025-11-25 era: `roots/list`,
    /// `sampling/createMessage`, `elicitation/create`, `ping`) and waits for
    /// the answer for at most [`ServerConfig::client_request_timeout`].
    ///
    /// Requires an initialized 2025-11-25 session ([`SendError::NoStatefulSession`]
    /// otherwise: in the 2026-07-28 era use
    /// [`RequestContext::ask`](super::RequestContext::ask)), and the client
    /// capability the method needs ([`SendError::MissingCapability`]).
    /// On timeout a `notifications/cancelled` is sent for it.
    ///
    /// Cancel safety: dropping the future (or aborting the handler awaiting
    /// it, as `notifications/cancelled` does) removes the request from the
    /// pending table and sends the client a `notifications/cancelled` for it
    /// (best effort: not when the transport is gone or the outbound queue is
    /// full); a late answer is ignored.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::server::{SendError, ServerHandle};
    ///
    /// async fn roots(handle: &ServerHandle) -> Result<serde_json::Value, SendError> {
    ///     let answer = handle.request("roots/list", None).await?;
    ///     Ok(answer["roots"].clone())
    /// }
    /// ```
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, SendError> {
        let timeout = self.shared()?.config.get_client_request_timeout();
        self.request_with_timeout(method, params, timeout).await
    }

    /// [`request`](Self::request) addressed to one session.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::server::{SendError, ServerHandle};
    ///
    /// // `session` is an HTTP client's `MCP-Session-Id`.
    /// async fn ping(handle: &ServerHandle, session: &str) -> Result<(), SendError> {
    ///     handle.request_session(session, "ping", None).await?;
    ///     Ok(())
    /// }
    /// ```
    pub async fn request_session(
        &self,
        session: &str,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, SendError> {
        self.for_session(session)?.request(method, params).await
    }

    /// [`request`](Self::request) with an explicit timeout.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::server::{SendError, ServerHandle};
    /// use std::time::Duration;
    ///
    /// async fn quick_ping(handle: &ServerHandle) -> bool {
    ///     let answer = handle.request_with_timeout("ping", None, Duration::from_secs(2)).await;
    ///     !matches!(answer, Err(SendError::Timeout(_)))
    /// }
    /// ```
    pub async fn request_with_timeout(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Value, SendError> {
        let sent = {
            let shared = self.shared()?;
            let caps = {
                let st = shared.session();
                if st.stateful_version.is_none() {
                    return Err(SendError::NoStatefulSession);
                }
                st.stateful_capabilities.clone()
            };
            if let Some(cap) = capability_for(method) {
                if !has_capability(caps.as_deref(), cap) {
                    return Err(SendError::MissingCapability(cap));
                }
            }
            let id = shared.pending.next_id();
            let line = encode::request(&id, method, params.as_ref())
                .map_err(|e| SendError::Serialize(e.to_string()))?;
            let (tx, rx) = oneshot::channel();
            shared.pending.insert(id.clone(), tx);
            if let Err(e) = self.send_line(&shared, line) {
                shared.pending.remove(&id);
                return Err(e);
            }
            tracing::debug!(%id, method, "server-to-client request sent");
            // From here on, however this future ends (answer, timeout, drop,
            // abort of the handler awaiting it), the entry goes.
            let guard = Pending {
                handle: self.clone(),
                id,
                reason: "abandoned by the server",
            };
            (guard, rx)
            // The Arc is dropped here: awaiting must not extend the lifetime.
        };
        let (mut guard, rx) = sent;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(raw))) => raw.parse().map_err(|e| SendError::BadResult(e.to_string())),
            Ok(Ok(Err(e))) => Err(SendError::Client(e)),
            Ok(Err(_)) => Err(SendError::TransportGone),
            Err(_) => {
                guard.reason = "timed out";
                drop(guard);
                Err(SendError::Timeout(timeout))
            }
        }
    }
}

/// A sent server-to-client request's entry in the pending table. Dropping it
/// removes the entry; if the entry was still there (no answer came), the
/// request was abandoned and the client is told with
/// `notifications/cancelled`. Without it, a dropped future or an aborted
/// handler left its entry behind for good.
struct Pending {
    /// The handle the request went through, for its cancellation.
    handle: ServerHandle,
    id: RequestId,
    /// The `reason` sent with the cancellation.
    reason: &'static str,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(shared) = self.handle.token.0.upgrade() else {
            return; // the transport, and its table, are gone
        };
        if shared.pending.remove(&self.id).is_none() {
            return; // answered, or the transport closed the table
        }
        let id = &self.id;
        tracing::debug!(%id, reason = self.reason, "server-to-client request withdrawn");
        let sent = encode::notification(
            methods::CANCELLED,
            Some(&json!({ "requestId": id, "reason": self.reason })),
        )
        .map_err(|e| SendError::Serialize(e.to_string()))
        .and_then(|line| self.handle.send_line(&shared, line));
        if let Err(e) = sent {
            tracing::debug!(%id, error = %e, "cancellation of a withdrawn request not sent");
        }
    }
}

/// The client capability a server-to-client method needs.
pub(crate) fn capability_for(method: &str) -> Option<&'static str> {
    match method {
        methods::ROOTS_LIST => Some("roots"),
        methods::SAMPLING_CREATE_MESSAGE => Some("sampling"),
        methods::ELICITATION_CREATE => Some("elicitation"),
        _ => None,
    }
}

pub(crate) fn has_capability(caps: Option<&Value>, cap: &str) -> bool {
    caps.and_then(|c| c.get(cap)).is_some_and(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    //! The pending table of server-to-client requests, seen from inside:
    //! every way of abandoning a request must remove its entry.

    use std::time::Duration;

    use serde_json::{json, Value};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

    use crate::jsonrpc::Request;
    use crate::protocol::Implementation;
    use crate::protocol::InputRequest;
    use crate::server::{Handler, HandlerError, RequestContext, ServerConfig, StdioServer};

    /// Only a guard against hangs.
    const PATIENCE: Duration = Duration::from_secs(10);
    const ROUNDS: usize = 100;

    /// `tools/call` asks the client for its roots, and waits for them.
    struct Asker;

    impl Handler for Asker {
        async fn handle_request(
            &self,
            _req: Request,
            ctx: RequestContext,
        ) -> Result<Value, HandlerError> {
            let roots = ctx.ask("roots", InputRequest::list_roots()).await?;
            Ok(json!({ "content": [], "structuredContent": roots }))
        }
    }

    struct Peer {
        tx: DuplexStream,
        rx: Lines<BufReader<DuplexStream>>,
    }

    impl Peer {
        async fn send(&mut self, v: Value) {
            let mut line = serde_json::to_vec(&v).expect("serialise");
            line.push(b'\n');
            self.tx.write_all(&line).await.expect("write to the server");
        }

        async fn recv(&mut self) -> Value {
            let line = tokio::time::timeout(PATIENCE, self.rx.next_line())
                .await
                .expect("timed out waiting for the server")
                .expect("read")
                .expect("server output ended");
            serde_json::from_str(&line).expect("server line is JSON")
        }

        /// The next server-to-client request, counting the cancellations
        /// met on the way in `cancelled`.
        async fn next_request(&mut self, cancelled: &mut Vec<Value>) -> Value {
            loop {
                let m = self.recv().await;
                if m["method"] == "notifications/cancelled" {
                    cancelled.push(m["params"]["requestId"].clone());
                } else {
                    return m;
                }
            }
        }

        /// Pings and returns everything the server sent before the answer.
        async fn until_pong(&mut self, tag: &str) -> Vec<Value> {
            self.send(json!({ "jsonrpc": "2.0", "id": tag, "method": "ping" }))
                .await;
            let mut before = Vec::new();
            loop {
                let m = self.recv().await;
                if m["id"] == json!(tag) && m.get("result").is_some() {
                    return before;
                }
                before.push(m);
            }
        }
    }

    /// Polls `f` until it returns true, for at most [`PATIENCE`].
    async fn eventually(mut f: impl FnMut() -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !f() {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    #[tokio::test]
    async fn abandoned_server_to_client_requests_leave_no_pending_entry() {
        let (client_tx, server_rx) = tokio::io::duplex(1 << 16);
        let (server_tx, client_rx) = tokio::io::duplex(1 << 16);
        let config = ServerConfig::new(Implementation::new("pending", "0"));
        let server = StdioServer::over(server_rx, server_tx, config);
        let shared = server.shared.clone();
        let handle = server.handle();
        let serve = tokio::spawn(server.serve(Asker));
        let mut peer = Peer {
            tx: client_tx,
            rx: BufReader::new(client_rx).lines(),
        };
        peer.send(
            json!({ "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": { "roots": {} },
                        "clientInfo": { "name": "t", "version": "0" } } }),
        )
        .await;
        assert!(peer.recv().await.get("result").is_some());
        peer.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;

        // 1. ServerHandle::request futures dropped once their request is out.
        let mut dropped_ids = Vec::new();
        let mut cancelled = Vec::new();
        for _ in 0..ROUNDS {
            let fut = handle.request("roots/list", None);
            tokio::pin!(fut);
            // One poll sends the request; then the future is dropped.
            tokio::select! {
                biased;
                r = &mut fut => panic!("answered without a response: {r:?}"),
                () = std::future::ready(()) => {}
            }
            let sent = peer.next_request(&mut cancelled).await;
            assert_eq!(sent["method"], "roots/list", "{sent}");
            dropped_ids.push(sent["id"].clone());
        }
        let after_drops = shared.pending_len();

        // 2. Handlers inside `ctx.ask`, aborted by notifications/cancelled.
        for i in 0..ROUNDS {
            peer.send(json!({ "jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": { "name": "roots" } }))
                .await;
            let ask = peer.next_request(&mut cancelled).await;
            assert_eq!(ask["method"], "roots/list", "{ask}");
            dropped_ids.push(ask["id"].clone());
            peer.send(
                json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": { "requestId": i } }),
            )
            .await;
        }
        // Aborted tasks are dropped by the runtime shortly after the abort.
        let drained = eventually(|| shared.pending_len() <= after_drops).await;
        let after_cancels = shared.pending_len();
        println!(
            "pending entries: {after_drops} after {ROUNDS} dropped request futures, \
             {after_cancels} after {ROUNDS} more asks cancelled by the client"
        );
        assert_eq!(after_drops, 0, "dropped request futures left entries");
        assert!(drained && after_cancels == 0, "cancelled asks left entries");

        // Late answers to every abandoned id are ignored: no reply, no error,
        // and serving goes on.
        let before_pong = peer.until_pong("sync").await;
        for id in &dropped_ids {
            peer.send(json!({ "jsonrpc": "2.0", "id": id, "result": { "roots": [] } }))
                .await;
        }
        let late = peer.until_pong("after-late-answers").await;
        assert!(late.is_empty(), "replies to late answers: {late:?}");
        assert_eq!(shared.pending_len(), 0);
        // Every abandoned request was withdrawn with one cancellation, and
        // nothing else was sent.
        for m in &before_pong {
            assert_eq!(m["method"], "notifications/cancelled", "{m}");
            cancelled.push(m["params"]["requestId"].clone());
        }
        // (Compared as sets: aborted tasks are dropped in no promised order.)
        let sorted = |v: &[Value]| {
            let mut v: Vec<String> = v.iter().map(Value::to_string).collect();
            v.sort();
            v
        };
        assert_eq!(sorted(&cancelled), sorted(&dropped_ids));
        assert!(!serve.is_finished(), "serving ended: {:?}", serve.await);
        handle.stop();
        let end = tokio::time::timeout(PATIENCE, serve).await;
        assert!(matches!(end, Ok(Ok(Ok(_)))), "{end:?}");
    }
}
