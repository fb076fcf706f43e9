//! What every request of one HTTP server shares: the configuration, the
//! handler, the sessions, the bounds, the table of running requests, and
//! the stop sequence.
//!
//! A request runs in a task of its own, as on stdio, with the same
//! [`RequestContext`]; its messages and its answer go to its
//! [`Stream`](super::stream::Stream), which the HTTP response reads. The
//! task, not the response, owns the work: a 2025-11-25 era client may
//! disconnect and resume the stream later; a 2026-07-28 era response that
//! goes away cancels the task (see `post`).

use std::collections::HashMap;
use std::future::Future;
use std::hash::BuildHasherDefault;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;

use crate::deadline::After;
use crate::jsonrpc::{codes, encode, ErrorObject, Notification, Request, RequestId};
use crate::server::budget::{Charge, InboundBudget};
use crate::server::context::{RequestContext, RequestShared};
use crate::server::dispatch::Dispatch;
use crate::server::error::{HandlerError, SendError};
use crate::server::handle::{Outlet, ServerHandle, SessionShared, Sessions};
use crate::server::request_handler::Handler;
use crate::server::serve_loop::{finish, Shape, TaskIdHasher, TaskOut, CACHEABLE};
use crate::throttle::Throttle;

use super::config::HttpConfig;
use super::principal::Owner;
use super::room::BodyRoom;
use super::session::{self, Session, SessionTable};
use super::stream::{Counter, RequestOutlet, Stream};

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
}

/// A running request, as the stop sequence sees it.
pub(crate) struct Running {
    abort: AbortHandle,
    shared: Arc<RequestShared>,
}

/// A request's id was already running in its session.
pub(crate) struct Duplicate;

/// Sends a message to every session's GET stream (the server-wide
/// handle's `notify`).
struct Broadcast(Weak<SessionTable>);

impl Outlet for Broadcast {
    fn send_line(&self, line: Vec<u8>) -> Result<(), SendError> {
        let Some(table) = self.0.upgrade() else {
            return Err(SendError::TransportGone);
        };
        for s in table.all() {
            if let Err(e) = s.standalone.push(line.clone(), false) {
                tracing::debug!(session = %s.id, error = %e, "broadcast not queued for a session");
            }
        }
        Ok(())
    }
}

pub(crate) struct Core {
    pub(crate) config: HttpConfig,
    /// The server-wide state: the handle's stop, lifetime and readiness,
    /// and the state 2026-07-28 era requests are routed against.
    pub(crate) root: Arc<SessionShared>,
    pub(crate) sessions: Arc<SessionTable>,
    pub(crate) handler: Arc<dyn DynHandler>,
    /// Bytes queued in all streams.
    pub(crate) global: Arc<Counter>,
    /// Parsed input held (`max_inbound_bytes`), shared by all sessions.
    pub(crate) inbound: Arc<InboundBudget>,
    /// Bytes of request bodies being read (`max_inbound_bytes`).
    pub(crate) body_room: Arc<BodyRoom>,
    /// 2026-07-28 era requests (but `subscriptions/listen` streams) running
    /// at once, for the whole server (`max_in_flight`); more wait.
    pub(crate) modern_slots: Arc<Semaphore>,
    /// By key: handed out here, never chosen by a client, so SipHash's
    /// defence against chosen keys buys nothing.
    running: Mutex<HashMap<u64, Running, BuildHasherDefault<TaskIdHasher>>>,
    next_key: AtomicU64,
    /// Woken when a request ends.
    ended: Notify,
    pub(crate) stopping: AtomicBool,
    /// The rate of the log lines a client can trigger at will.
    pub(crate) warned: Warned,
}

/// The rate of each log line a client can trigger at will.
#[derive(Default)]
pub(crate) struct Warned {
    pub(crate) host: Throttle,
    pub(crate) origin: Throttle,
    pub(crate) sessions_full: Throttle,
}

impl Core {
    /// The core around `root`, the server-wide state made before serving
    /// (its handles exist already).
    pub(crate) fn new<H: Handler>(
        config: HttpConfig,
        handler: H,
        root: Arc<SessionShared>,
    ) -> Arc<Self> {
        let inbound = root.inbound.clone();
        let sessions = SessionTable::new(&config);
        let weak: Weak<dyn Sessions> = Arc::downgrade(&(sessions.clone() as Arc<dyn Sessions>));
        let _ = root.sessions.set(weak);
        let _ = root
            .outlet
            .set(Arc::new(Broadcast(Arc::downgrade(&sessions))));
        let mut capabilities = config.server.capabilities.clone();
        crate::protocol::add_missing(&mut capabilities, &handler.capabilities());
        let _ = root.declared.set(capabilities);
        let body_room = BodyRoom::new(
            config.server.max_inbound_bytes,
            config.server.max_message_bytes,
        );
        let config_in_flight = config.server.max_in_flight;
        let core = Arc::new(Core {
            global: Counter::new(config.max_buffered_bytes),
            config,
            root,
            sessions,
            handler: Arc::new(handler),
            inbound,
            body_room,
            modern_slots: Arc::new(Semaphore::new(config_in_flight)),
            running: Mutex::new(HashMap::default()),
            next_key: AtomicU64::new(1),
            ended: Notify::new(),
            stopping: AtomicBool::new(false),
            warned: Warned::default(),
        });
        core.handler.serving(ServerHandle::new(&core.root));
        core
    }

    /// The server's name, for logs.
    pub(crate) fn name(&self) -> &str {
        &self.config.server.server_info.name
    }

    /// A new session's state (its capabilities are the server's).
    pub(crate) fn new_session(&self, id: String, owner: Owner) -> Arc<Session> {
        let s = Session::new(id, owner, &self.config, &self.global, &self.inbound);
        let _ = s.shared.declared.set(self.root.capabilities().clone());
        let _ = s.shared.sessions.set(
            self.root
                .sessions
                .get()
                .cloned()
                .unwrap_or_else(|| Weak::<SessionTable>::new() as Weak<dyn Sessions>),
        );
        s.shared
            .phase
            .send_replace(crate::server::handle::ServePhase::Ready);
        self.handler.serving(ServerHandle::new(&s.shared));
        s
    }

    /// A stream for a 2026-07-28 era request: its own bounds, no replay.
    pub(crate) fn modern_stream(&self) -> Arc<Stream> {
        Stream::new(
            0,
            false,
            0,
            Counter::new(self.config.session_queue_bytes),
            self.global.clone(),
        )
    }

    /// Starts `req` in a task of its own; its messages and answer go to
    /// `stream`. Refused if its id is running in the same session.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        self: &Arc<Self>,
        req: Request,
        d: Dispatch,
        shared: &Arc<SessionShared>,
        session: Option<&Arc<Session>>,
        stream: Arc<Stream>,
        charge: Charge,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Result<u64, Duplicate> {
        let id = req.id.clone();
        // The entries are made under the locks the task's guard takes to
        // remove them, so a task that ends at once cannot remove them first.
        let mut in_flight = session.map(|s| crate::sync::lock(&s.in_flight));
        if in_flight.as_ref().is_some_and(|m| m.contains_key(&id)) {
            return Err(Duplicate);
        }
        let rs = Arc::new(RequestShared::default());
        let outlet = Arc::new(RequestOutlet {
            stream: stream.clone(),
            fallback: session.map(|s| Arc::downgrade(&s.shared)),
        });
        let handle = ServerHandle::with_outlet(shared, outlet);
        let c = &self.config.server;
        let shape = Shape {
            era: d.era,
            cacheable: CACHEABLE.contains(&req.method.as_str()),
            ttl_ms: c.cache_ttl_ms,
            scope: c.cache_scope.as_str(),
        };
        tracing::debug!(server = %self.name(), %id, method = %req.method, era = %shape.era, "request started");
        let ctx = RequestContext::new(&req, d, handle, rs.clone());
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let guard = RunGuard {
            core: Arc::downgrade(self),
            key,
            stream,
            session: session.map(Arc::downgrade),
            id: id.clone(),
        };
        let handler = self.handler.clone();
        let task_rs = rs.clone();
        let task = async move {
            let guard = guard;
            let _charge = charge;
            let _permit = permit;
            let id = req.id.clone();
            let out = TellSlow {
                inner: CatchUnwind(handler.request(req, ctx)),
                stream: &guard.stream,
                told: false,
            }
            .await;
            let line = match out {
                Ok(result) => match finish(&id, shape, result, &task_rs.recorded) {
                    TaskOut::Line(line) => line,
                    TaskOut::SerializeFailed(e) => {
                        tracing::warn!(%id, error = %e, "result not serialisable: answering -32603");
                        encode::error(
                            &Some(id.clone()),
                            &ErrorObject::new(
                                codes::INTERNAL_ERROR,
                                format!("the result could not be serialised: {e}"),
                            ),
                        )
                    }
                },
                Err(()) => {
                    tracing::warn!(%id, "request handler panicked: answering -32603");
                    encode::error(
                        &Some(id.clone()),
                        &ErrorObject::new(
                            codes::INTERNAL_ERROR,
                            "internal error: the request handler panicked",
                        ),
                    )
                }
            };
            tracing::debug!(%id, "request completed");
            let _ = guard.stream.push(line, true);
        };
        let mut running = crate::sync::lock(&self.running);
        let task = tokio::spawn(task);
        running.insert(
            key,
            Running {
                abort: task.abort_handle(),
                shared: rs.clone(),
            },
        );
        if let Some(m) = &mut in_flight {
            m.insert(id, key);
        }
        Ok(key)
    }

    /// Cancels a running request (a 2025-11-25 era
    /// `notifications/cancelled`, or a 2026-07-28 era response closed by
    /// the client): its task is aborted and it gets no answer.
    pub(crate) fn cancel(&self, key: u64) {
        if let Some(r) = crate::sync::lock(&self.running).get(&key) {
            r.shared.cancel();
            r.abort.abort();
        }
    }

    /// Ends a session: its running requests are cancelled, its handles
    /// become inert, its streams close.
    pub(crate) fn end_session(&self, s: &Session) {
        let keys: Vec<u64> = crate::sync::lock(&s.in_flight).values().copied().collect();
        for key in keys {
            self.cancel(key);
        }
        s.end();
    }

    /// Requests running now.
    pub(crate) fn running(&self) -> usize {
        crate::sync::lock(&self.running).len()
    }

    /// Waits until no request runs, or `deadline`.
    async fn quiesce(&self, deadline: tokio::time::Instant) -> bool {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.running() == 0 {
                return true;
            }
            tokio::select! {
                _ = ended => {}
                _ = tokio::time::sleep_until(deadline) => return self.running() == 0,
            }
        }
    }

    /// The stop sequence: refuse new requests; end long-lived ones as on
    /// end of input; let in-flight requests finish within `stop_drain`
    /// (their contexts see cancellation); abort the rest, each answered
    /// with an error saying the server is stopping; end every session (its
    /// streams end once their queued events are read).
    pub(crate) async fn shutdown(&self) {
        if self.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        let sessions = self.sessions.all();
        tracing::info!(
            server = %self.name(),
            running = self.running(),
            sessions = sessions.len(),
            "http server stopping"
        );
        self.root.input_closed.send_replace(true);
        for s in &sessions {
            s.shared.input_closed.send_replace(true);
        }
        for r in crate::sync::lock(&self.running).values() {
            r.shared.cancel();
        }
        let now = tokio::time::Instant::now();
        if !self.quiesce(now.after(self.config.server.stop_drain)).await {
            let aborted = {
                let running = crate::sync::lock(&self.running);
                for r in running.values() {
                    r.abort.abort();
                }
                running.len()
            };
            tracing::info!(aborted, "in-flight requests aborted after the stop grace");
            // Aborted tasks end at their next poll.
            self.quiesce(tokio::time::Instant::now().after(Duration::from_secs(1)))
                .await;
        }
        for s in sessions {
            self.sessions.remove(&s.id);
            self.end_session(&s);
        }
    }

    /// Ends sessions idle for `session_idle_timeout`, until the server is
    /// gone or stopping.
    pub(crate) async fn sweep(core: Weak<Core>) {
        let Some(timeout) = core.upgrade().map(|c| c.config.session_idle_timeout) else {
            return;
        };
        let every = (timeout / 2).clamp(Duration::from_millis(10), Duration::from_secs(30));
        loop {
            tokio::time::sleep(every).await;
            let Some(core) = core.upgrade() else { return };
            if core.stopping.load(Ordering::Acquire) {
                return;
            }
            let Some(before) = tokio::time::Instant::now().checked_sub(timeout) else {
                continue;
            };
            for s in core.sessions.take_idle(before) {
                tracing::info!(server = %core.name(), session = %s.id, "session expired (idle)");
                core.end_session(&s);
            }
        }
    }
}

/// Ends a request's entries however its task ends; a request that ends
/// without an answer (cancelled, aborted) closes its stream, or, when the
/// server is stopping, is answered with an error saying so.
struct RunGuard {
    core: Weak<Core>,
    key: u64,
    stream: Arc<Stream>,
    session: Option<Weak<Session>>,
    id: RequestId,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        let core = self.core.upgrade();
        if let Some(core) = &core {
            crate::sync::lock(&core.running).remove(&self.key);
            core.ended.notify_waiters();
        }
        if let Some(s) = &self.session {
            session::forget(s, &self.id, self.key);
        }
        self.end_stream(core.as_deref());
        // Nobody reads the stream (the client left, or has not come back):
        // it leaves the live ones, kept a while for a late resumption.
        if let Some(s) = self.session.as_ref().and_then(Weak::upgrade) {
            if !self.stream.attached() {
                s.retire(self.stream.number, true);
            }
        }
    }
}

impl RunGuard {
    /// A request that ends without an answer (cancelled, aborted) closes
    /// its stream, or, when the server is stopping, is answered with an
    /// error saying so.
    fn end_stream(&self, core: Option<&Core>) {
        if !self.stream.answered() {
            if core.is_some_and(|c| c.stopping.load(Ordering::Acquire)) {
                let e = ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    "request cancelled: the server is stopping",
                );
                let _ = self
                    .stream
                    .push(encode::error(&Some(self.id.clone()), &e), true);
            } else {
                self.stream.close();
            }
        }
    }
}

/// Tells the request's stream, once, that the handler did not answer at its
/// first poll (the response then arms its keep-alive timer).
struct TellSlow<'a, F> {
    inner: F,
    stream: &'a Stream,
    told: bool,
}

impl<F: Future + Unpin> Future for TellSlow<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let me = &mut *self;
        match Pin::new(&mut me.inner).poll(cx) {
            Poll::Pending => {
                if !me.told {
                    me.told = true;
                    me.stream.slow();
                }
                Poll::Pending
            }
            ready => ready,
        }
    }
}

/// A future whose panic becomes `Err(())`.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(Err(())),
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
        let app = service.router();
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
        let core = &service.core;
        let session = core.sessions.get(&sid).expect("the session");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while core.running() > 0 || session.in_flight.lock().map(|m| m.len()).unwrap_or(0) > 0 {
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
