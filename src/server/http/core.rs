//! What every request of one HTTP server shares: the configuration, the
//! request engine, the sessions, the bounds, and the stop sequence.
//!
//! A request runs on the [`Engine`] as on stdio, with the same
//! [`RequestContext`]; its messages and its
//! answer go to its [`Stream`] (its `StreamReply`),
//! which the HTTP response reads. The task, not the response, owns the
//! work: a 2025-11-25 client may disconnect and resume the stream later; a
//! 2026-07-28 response that goes away cancels the request (see `respond`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use crate::jsonrpc::{Notification, Request};
use crate::server::context::RequestContext;
use crate::server::engine::budget::{InboundBudget, Share};
use crate::server::engine::{Engine, Scope};
use crate::server::error::{HandlerError, SendError};
use crate::server::handle::{ServerHandle, SessionShared, SessionTransport};
use crate::server::request_handler::Handler;
use crate::server::Router;
use crate::throttle::Throttle;

use super::body::BodyReader;
use super::coarse::CoarseTimer;
use super::config::HttpConfig;
use super::principal::Owner;
use super::session::{Session, StreamReply};
use super::session_record::SessionStore;
use super::session_store::{LiveSessions, MemorySessions};
use super::stream::{Counter, Stream};

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`Handler`] behind a pointer: the HTTP routes are not generic.
pub(crate) trait DynHandler: Send + Sync + 'static {
    fn request(&self, req: Request, ctx: RequestContext)
        -> BoxFut<'_, Result<Value, HandlerError>>;
    fn notification(
        &self,
        n: Notification,
        h: ServerHandle,
    ) -> BoxFut<'_, Result<(), HandlerError>>;
    fn serving(&self, h: ServerHandle);
    fn tool_input_schema(&self, name: &str) -> Option<Value>;
    /// Runs `f` on tool `name`'s `inputSchema`: a [`Router`]'s borrowed
    /// where it is held, any other handler's on the copy it gives.
    fn with_tool_input_schema(&self, name: &str, f: &mut dyn FnMut(&Value));
}

impl<H: Handler> DynHandler for H {
    fn request(
        &self,
        req: Request,
        ctx: RequestContext,
    ) -> BoxFut<'_, Result<Value, HandlerError>> {
        Box::pin(self.handle_request(req, ctx))
    }

    fn notification(
        &self,
        n: Notification,
        h: ServerHandle,
    ) -> BoxFut<'_, Result<(), HandlerError>> {
        Box::pin(self.handle_notification(n, h))
    }

    fn serving(&self, h: ServerHandle) {
        Handler::serving(self, h)
    }

    fn tool_input_schema(&self, name: &str) -> Option<Value> {
        Handler::tool_input_schema(self, name)
    }

    fn with_tool_input_schema(&self, name: &str, f: &mut dyn FnMut(&Value)) {
        let any: &dyn std::any::Any = self;
        match any.downcast_ref::<Router>() {
            Some(router) => router.with_tool_input_schema(name, f),
            None => {
                if let Some(schema) = Handler::tool_input_schema(self, name) {
                    f(&schema);
                }
            }
        }
    }
}

/// The type-erased handler, as the engine runs it.
pub(crate) struct Erased(Box<dyn DynHandler>);

impl Erased {
    /// See [`DynHandler::with_tool_input_schema`].
    pub(crate) fn with_tool_input_schema(&self, name: &str, f: &mut dyn FnMut(&Value)) {
        self.0.with_tool_input_schema(name, f)
    }
}

impl Handler for Erased {
    fn handle_request(
        &self,
        request: Request,
        ctx: RequestContext,
    ) -> impl Future<Output = Result<Value, HandlerError>> + Send {
        self.0.request(request, ctx)
    }

    fn serving(&self, handle: ServerHandle) {
        self.0.serving(handle)
    }

    fn tool_input_schema(&self, name: &str) -> Option<Value> {
        self.0.tool_input_schema(name)
    }

    fn handle_notification(
        &self,
        notification: Notification,
        handle: ServerHandle,
    ) -> impl Future<Output = Result<(), HandlerError>> + Send {
        self.0.notification(notification, handle)
    }
}

/// The HTTP transport of a session, whose messages go to its GET stream,
/// or of the server-wide state, whose messages go to every session's.
#[derive(Default)]
pub(crate) struct Link {
    /// The server, once it serves.
    core: OnceLock<Weak<Core>>,
    /// The session's GET stream; `None` for the server-wide state.
    stream: Option<Arc<Stream>>,
}

impl Link {
    /// The transport of a session of `core` with the GET stream `stream`.
    pub(crate) fn session(core: Weak<Core>, stream: Arc<Stream>) -> Arc<Self> {
        Arc::new(Link {
            core: OnceLock::from(core),
            stream: Some(stream),
        })
    }

    fn core(&self) -> Option<Arc<Core>> {
        self.core.get()?.upgrade()
    }
}

impl SessionTransport for Link {
    fn send_line(&self, line: Vec<u8>) -> Result<(), SendError> {
        if let Some(stream) = &self.stream {
            return stream.send_line(line);
        }
        let core = self.core().ok_or(SendError::TransportGone)?;
        for s in core.sessions.all() {
            if let Err(e) = s.standalone().push(line.clone(), false) {
                tracing::debug!(session = %s.id(), error = %e, "broadcast not queued for a session");
            }
        }
        Ok(())
    }

    fn find(&self, id: &str) -> Option<Arc<SessionShared>> {
        Some(self.core()?.sessions.get(id)?.shared().clone())
    }

    fn on_stop(&self) {
        // A session's server has started: this does nothing for it.
        self.core().inspect(|core| core.stop_unstarted());
    }

    fn serve(&self, core: Weak<Core>) {
        let _ = self.core.set(core);
    }
}

pub(crate) struct Core {
    config: HttpConfig,
    /// The server-wide state: the handle's stop, lifetime and readiness,
    /// and the state 2026-07-28 era requests are routed against.
    root: Arc<SessionShared>,
    /// The 2025-11-25 era sessions.
    sessions: Arc<dyn LiveSessions>,
    engine: Arc<Engine<Erased>>,
    /// The 2026-07-28 requests of each principal: a scope each.
    stateless: Mutex<HashMap<Owner, Arc<Scope<StreamReply>>>>,
    /// Bytes queued in all streams.
    global: Arc<Counter>,
    /// Parsed input held (`max_inbound_bytes`), shared by all sessions.
    inbound: Arc<InboundBudget>,
    /// What each principal holds of `inbound`.
    inbound_shares: Mutex<HashMap<Owner, Arc<Share>>>,
    /// Bytes of request bodies being read (`max_inbound_bytes`).
    bodies: BodyReader,
    stopping: AtomicBool,
    /// The deadlines of slow answers (their switch to SSE).
    timer: CoarseTimer,
    /// The rate of the log lines a client can trigger at will.
    warned: Warned,
    /// Where the background tasks (idle-session expiry, the stop watcher)
    /// are: a [`Tasks`] as `u8`, decided by one compare-and-swap.
    tasks: AtomicU8,
    /// Turns true once the stop sequence has run.
    done: watch::Sender<bool>,
    /// Whether the end of the stop sequence also ends the server-wide
    /// lifetime (an [`HttpService`](super::HttpService); the
    /// [`HttpServer`](super::HttpServer) ends it once its listener closed).
    closes_root: bool,
}

/// Where the background tasks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Tasks {
    /// Nothing was served yet.
    NotStarted,
    Running,
    /// Stopped before anything was served: nothing runs, nothing will.
    StoppedUnstarted,
}

impl Tasks {
    /// Moves `at` from `NotStarted` to `to`; whether this call did.
    fn leave_unstarted(at: &AtomicU8, to: Tasks) -> bool {
        // A plain load first: every request asks, and it is nearly always
        // started already.
        at.load(Ordering::Acquire) == Tasks::NotStarted as u8
            && at
                .compare_exchange(
                    Tasks::NotStarted as u8,
                    to as u8,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
    }
}

/// The rate of each log line a client can trigger at will.
#[derive(Default)]
pub(crate) struct Warned {
    sessions_full: Throttle,
    inbound_refused: Throttle,
}

impl Core {
    /// The endpoint's configuration.
    #[inline]
    pub(crate) fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// The server-wide state made before serving (its handles exist).
    #[inline]
    pub(crate) fn root(&self) -> &Arc<SessionShared> {
        &self.root
    }

    /// The sessions of the 2025-11-25 revision.
    #[inline]
    pub(crate) fn sessions(&self) -> &Arc<dyn LiveSessions> {
        &self.sessions
    }

    /// Runs the requests.
    #[inline]
    pub(crate) fn engine(&self) -> &Arc<Engine<Erased>> {
        &self.engine
    }

    /// Bytes buffered for every stream, server-wide.
    #[inline]
    pub(crate) fn global(&self) -> &Arc<Counter> {
        &self.global
    }

    /// The budget for parsed input.
    #[inline]
    pub(crate) fn inbound(&self) -> &Arc<InboundBudget> {
        &self.inbound
    }

    /// Reads request bodies within the limits.
    #[inline]
    pub(crate) fn bodies(&self) -> &BodyReader {
        &self.bodies
    }

    /// The deadlines of slow answers (their switch to SSE).
    #[inline]
    pub(crate) fn timer(&self) -> &CoarseTimer {
        &self.timer
    }

    /// Whether the server is stopping.
    #[inline]
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Whether to log now that a session was refused for `max_sessions`
    /// (at most once per period); the refusals skipped since the last log.
    pub(crate) fn warn_sessions_full(&self) -> Option<u64> {
        self.warned.sessions_full.admit()
    }

    /// Whether to log now that a request was refused for
    /// `max_inbound_bytes`; the refusals skipped since the last log.
    pub(crate) fn warn_inbound_refused(&self) -> Option<u64> {
        self.warned.inbound_refused.admit()
    }

    /// What `owner` holds of the budget for parsed input.
    pub(crate) fn inbound_share(&self, owner: &Owner) -> Arc<Share> {
        crate::sync::lock(&self.inbound_shares)
            .entry(owner.clone())
            .or_default()
            .clone()
    }

    /// A receiver that wakes when the background tasks are done.
    pub(crate) fn watch_done(&self) -> watch::Receiver<bool> {
        self.done.subscribe()
    }

    /// The core around `root`, the server-wide state made before serving
    /// (its handles exist already), keeping its sessions' records in
    /// `records`.
    ///
    /// Spawns nothing: the background tasks start with
    /// [`start`](Self::start). `closes_root`: the end of the stop sequence
    /// ends `root`'s lifetime too.
    pub(crate) fn new<H: Handler>(
        config: HttpConfig,
        handler: H,
        root: Arc<SessionShared>,
        closes_root: bool,
        records: Arc<dyn SessionStore>,
    ) -> Arc<Self> {
        let inbound = root.inbound().clone();
        let mut capabilities = config.server.get_capabilities().clone();
        crate::protocol::add_missing(&mut capabilities, &handler.capabilities());
        root.declare_capabilities(capabilities);
        let bodies = BodyReader::of(&config);
        let engine = Engine::new(Arc::new(Erased(Box::new(handler))));
        let core = Arc::new_cyclic(|me| Core {
            sessions: MemorySessions::new(&config, records, me.clone()),
            global: Counter::new(config.get_max_buffered_bytes()),
            config,
            root,
            engine,
            stateless: Mutex::new(HashMap::new()),
            inbound,
            inbound_shares: Mutex::new(HashMap::new()),
            bodies,
            stopping: AtomicBool::new(false),
            timer: CoarseTimer::new(),
            warned: Warned::default(),
            tasks: AtomicU8::new(Tasks::NotStarted as u8),
            done: watch::channel(false).0,
            closes_root,
        });
        if let Some(t) = core.root.transport() {
            t.serve(Arc::downgrade(&core));
        }
        Handler::serving(core.handler(), ServerHandle::new(&core.root));
        core
    }

    /// Starts the background tasks once: idle-session expiry, and the
    /// stop sequence on [`ServerHandle::stop`]. Both hold the core weakly.
    /// Called by every request and by the listener's start; must be called
    /// within a tokio runtime.
    pub(crate) fn start(self: &Arc<Self>) {
        if !Tasks::leave_unstarted(&self.tasks, Tasks::Running) {
            return;
        }
        tokio::spawn(Core::sweep(Arc::downgrade(self)));
        let weak: Weak<Core> = Arc::downgrade(self);
        let mut stop = self.root.watch_stop();
        tokio::spawn(async move {
            if stop.wait_for(|v| *v).await.is_err() {
                return; // the server is gone
            }
            if let Some(core) = weak.upgrade() {
                core.shutdown().await;
                core.finish();
            }
        });
    }

    /// The stop of a server that never started its tasks (so never served
    /// a request): nothing to drain, no session to end.
    fn stop_unstarted(&self) {
        if !Tasks::leave_unstarted(&self.tasks, Tasks::StoppedUnstarted) {
            return; // the stop watcher runs the sequence
        }
        self.stopping.store(true, Ordering::Release);
        self.root.mark_input_closed();
        self.finish();
    }

    /// The end of the stop sequence.
    fn finish(&self) {
        self.done.send_replace(true);
        if self.closes_root {
            self.root.close();
        }
    }

    /// The handler.
    pub(crate) fn handler(&self) -> &Erased {
        self.engine.handler()
    }

    /// The server's name, for logs.
    pub(crate) fn name(&self) -> &str {
        &self.config.server.server_info.name
    }

    /// A new session's state (its capabilities are the server's).
    pub(crate) fn new_session(self: &Arc<Self>, id: String, owner: Owner) -> Arc<Session> {
        let (config, core) = (&self.config, Arc::downgrade(self));
        let s = Session::new(id, owner, config, &self.global, &self.inbound, core);
        s.shared()
            .declare_capabilities(self.root.capabilities().clone());
        s.shared().mark_ready();
        Handler::serving(self.handler(), ServerHandle::new(s.shared()));
        s
    }

    /// The scope of `owner`'s 2026-07-28 requests.
    pub(crate) fn stateless_scope(&self, owner: &Owner) -> Arc<Scope<StreamReply>> {
        crate::sync::lock(&self.stateless)
            .entry(owner.clone())
            .or_insert_with(|| Scope::new(self.root.clone(), false))
            .clone()
    }

    /// A stream for a 2026-07-28 era request: its own bounds, no replay.
    pub(crate) fn stateless_stream(&self) -> Arc<Stream> {
        Stream::new(
            0,
            false,
            0,
            Counter::new(self.config.get_session_queue_bytes()),
            self.global.clone(),
        )
    }

    /// Ends a session: its running requests are cancelled, its handles
    /// become inert, its streams close.
    pub(crate) fn end_session(&self, s: &Session) {
        self.engine.cancel_all(s.scope());
        s.end();
    }

    /// Requests running now.
    #[cfg(test)]
    pub(crate) fn running(&self) -> usize {
        self.engine.running()
    }

    /// The stop sequence: refuse new requests; end long-lived ones as on
    /// end of input; let in-flight requests finish within `stop_drain`
    /// (their contexts see cancellation); abort the rest, each answered
    /// with an error saying the server is stopping (as are those still
    /// waiting for a slot); end every session (its streams end once their
    /// queued events are read).
    pub(crate) async fn shutdown(&self) {
        if self.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        let sessions = self.sessions.all();
        tracing::info!(
            server = %self.name(),
            running = self.engine.running(),
            sessions = sessions.len(),
            "http server stopping"
        );
        self.root.mark_input_closed();
        for s in &sessions {
            s.shared().mark_input_closed();
        }
        let stateless: Vec<_> = crate::sync::lock(&self.stateless)
            .values()
            .cloned()
            .collect();
        let scopes = sessions.iter().map(|s| s.scope()).chain(&stateless);
        self.engine
            .stop(self.config.server.get_stop_drain(), scopes)
            .await;
        for s in sessions {
            self.sessions.remove(s.id());
            self.end_session(&s);
        }
    }

    /// Ends sessions idle for `session_idle_timeout` (and forgets the
    /// 2026-07-28 scopes and inbound shares of principals with nothing in
    /// flight), until the server is gone or stopping.
    pub(crate) async fn sweep(core: Weak<Core>) {
        let Some(timeout) = core.upgrade().map(|c| c.config.get_session_idle_timeout()) else {
            return;
        };
        let every = (timeout / 2).clamp(Duration::from_millis(10), Duration::from_secs(30));
        loop {
            tokio::time::sleep(every).await;
            let Some(core) = core.upgrade() else { return };
            if core.stopping.load(Ordering::Acquire) {
                return;
            }
            crate::sync::lock(&core.stateless)
                .retain(|_, scope| Arc::strong_count(scope) > 1 || !scope.is_empty());
            crate::sync::lock(&core.inbound_shares).retain(|_, share| Arc::strong_count(share) > 1);
            let Some(before) = tokio::time::Instant::now().checked_sub(timeout) else {
                continue;
            };
            for s in core.sessions.take_idle(before) {
                tracing::info!(server = %core.name(), session = %s.id(), "session expired (idle)");
                core.end_session(&s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Seen from inside: what the session tables hold after clients that
    //! misbehave.

    use std::time::Duration;

    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use crate::protocol::{CallToolResult, Implementation};
    use crate::server::http::{HttpConfig, HttpService};
    use crate::server::{RequestContext, Router, ServerConfig};

    async fn raw(
        addr: std::net::SocketAddr,
        sid: Option<&str>,
        body: &serde_json::Value,
    ) -> TcpStream {
        let body = body.to_string();
        let sid = sid
            .map(|s| format!("mcp-session-id: {s}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n{sid}content-length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(head.as_bytes()).await.unwrap();
        tcp
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Nothing {}

    #[tokio::test]
    async fn streams_of_requests_whose_clients_left_do_not_pile_up() {
        let router = Router::new().tool(
            "slow",
            "Answers after 20 ms.",
            |_: Nothing, _ctx: RequestContext| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(CallToolResult::text("late"))
            },
        );
        let config = HttpConfig::new(ServerConfig::new(Implementation::new("t", "0")));
        let service = HttpService::new(config, router).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = service.axum_router();
        let served = tokio::spawn(async move { axum::serve(listener, app).await });
        let mut init = raw(addr, None, &json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } }))
        .await;
        let mut buf = vec![0u8; 4096];
        let n = init.read(&mut buf).await.unwrap();
        let head = String::from_utf8_lossy(&buf[..n]).to_string();
        let sid = head
            .lines()
            .find_map(|l| l.strip_prefix("mcp-session-id: "))
            .expect("a session id")
            .trim()
            .to_owned();
        // 50 requests whose clients leave before the answer.
        for i in 0..50 {
            let tcp = raw(
                addr,
                Some(&sid),
                &json!({ "jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": { "name": "slow", "arguments": {} } }),
            )
            .await;
            drop(tcp);
        }
        let core = service.core();
        let session = core.sessions.get(&sid).expect("the session");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while core.running() > 0 || !session.scope().is_empty() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "requests never ended"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (live, ended) = session.held_streams();
        println!("after 50 abandoned requests: {live} live streams, {ended} kept after their end");
        assert_eq!(live, 0);
        assert!(ended <= 8, "{ended}");
        service.handle().stop();
        served.abort();
    }
}
