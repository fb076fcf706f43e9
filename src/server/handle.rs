//! The cloneable [`ServerHandle`], its lifetime token, and the state the
//! session shares with it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};

use crate::jsonrpc::{encode, ErrorObject, RequestId};
use crate::protocol::{methods, Era};

use super::config::ServerConfig;
use super::error::SendError;
use super::writer::OutQueue;

/// The id of the one session of a stdio server (for the per-session
/// variants of the handle's methods).
pub const STDIO_SESSION: &str = "stdio";

/// What the client told us about itself.
#[derive(Debug, Default, Clone)]
pub(crate) struct SessionState {
    /// Legacy: the negotiated version after `initialize`.
    pub(crate) legacy_version: Option<String>,
    /// Legacy: capabilities from the latest `initialize`.
    pub(crate) legacy_capabilities: Option<Value>,
    /// The latest capabilities seen (initialize or a modern `_meta`).
    pub(crate) latest_capabilities: Option<Value>,
    /// The latest client info seen.
    pub(crate) client_info: Option<Value>,
    /// The era of the latest request that declared one.
    pub(crate) era: Option<Era>,
    /// `notifications/initialized` was received.
    pub(crate) initialized: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    NotStarted,
    Ready,
    Ended,
}

type Reply = Result<crate::jsonrpc::RawJson, ErrorObject>;

/// State shared between the session and every handle and context.
pub(crate) struct Shared {
    pub(crate) config: ServerConfig,
    pub(crate) out: OutQueue,
    pub(crate) stop: watch::Sender<bool>,
    pub(crate) phase: watch::Sender<Phase>,
    pub(crate) closed: AtomicBool,
    session: Mutex<SessionState>,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Reply>>>,
    next_id: AtomicI64,
}

/// Locks a mutex, ignoring poisoning: every critical section here leaves
/// the data consistent, so a panic elsewhere cannot corrupt it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    pub(crate) fn new(config: ServerConfig, out: OutQueue) -> Self {
        Self {
            config,
            out,
            stop: watch::channel(false).0,
            phase: watch::channel(Phase::NotStarted).0,
            closed: AtomicBool::new(false),
            session: Mutex::new(SessionState::default()),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
        }
    }

    pub(crate) fn session(&self) -> MutexGuard<'_, SessionState> {
        lock(&self.session)
    }

    /// Queues a notification or request line, refusing when closed or full.
    pub(crate) fn send_line(&self, line: Vec<u8>) -> Result<(), SendError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(SendError::TransportGone);
        }
        self.out.try_push(line)
    }

    /// Routes a client's response to the pending server-to-client request.
    /// Returns false if nothing was waiting for this id.
    pub(crate) fn resolve(&self, id: &RequestId, reply: Reply) -> bool {
        match lock(&self.pending).remove(id) {
            Some(tx) => {
                let _ = tx.send(reply);
                true
            }
            None => false,
        }
    }

    /// Ends the lifetime: handles and contexts become inert, and pending
    /// server-to-client requests fail with [`SendError::TransportGone`].
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        lock(&self.pending).clear();
        self.phase.send_replace(Phase::Ended);
    }
}

/// A weak reference that tells whether the transport still exists.
///
/// Held by [`ServerHandle`] and [`RequestContext`](super::RequestContext);
/// once serving has ended or the server was dropped, it has expired and
/// every operation through them fails with [`SendError::TransportGone`]
/// instead of panicking.
#[derive(Clone)]
pub struct LifetimeToken(pub(crate) Weak<Shared>);

impl LifetimeToken {
    /// Whether the transport still exists and is not closed.
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

/// A cloneable handle to a running (or not yet running) server.
///
/// All methods are safe to call from any task while the loop runs. The
/// handle does not keep the transport alive: once serving has ended or the
/// [`StdioServer`](super::StdioServer) was dropped, sending fails with
/// [`SendError::TransportGone`] and [`stop`](Self::stop) does nothing.
#[derive(Clone, Debug)]
pub struct ServerHandle {
    pub(crate) token: LifetimeToken,
}

impl ServerHandle {
    pub(crate) fn new(shared: &Arc<Shared>) -> Self {
        Self {
            token: LifetimeToken(Arc::downgrade(shared)),
        }
    }

    fn shared(&self) -> Result<Arc<Shared>, SendError> {
        match self.token.0.upgrade() {
            Some(s) if !s.closed.load(Ordering::Acquire) => Ok(s),
            _ => Err(SendError::TransportGone),
        }
    }

    /// The transport's diagnostic name: `"stdio"`.
    pub fn name(&self) -> &'static str {
        "stdio"
    }

    /// The lifetime token of the transport.
    pub fn lifetime_token(&self) -> LifetimeToken {
        self.token.clone()
    }

    /// Stops serving at once, even while the loop is blocked reading an idle
    /// stdin. In-flight handlers see cancellation and are aborted (after
    /// [`ServerConfig::stop_drain`], zero by default); their answers are not
    /// sent. Calling it before serving starts makes `serve` return
    /// immediately. Idempotent; does nothing once the transport is gone.
    pub fn stop(&self) {
        if let Some(s) = self.token.0.upgrade() {
            tracing::info!("server stop requested");
            s.stop.send_replace(true);
        }
    }

    /// Waits until the loop is reading its input. Fails if serving ended (or
    /// the server was dropped) first.
    ///
    /// Cancel safety: cancel safe.
    pub async fn wait_until_ready(&self) -> Result<(), SendError> {
        let mut rx = self.shared()?.phase.subscribe();
        // The Arc is released above: waiting must not keep the server alive.
        let ready = matches!(
            rx.wait_for(|p| *p != Phase::NotStarted).await.map(|p| *p),
            Ok(Phase::Ready)
        );
        if ready {
            Ok(())
        } else {
            Err(SendError::TransportGone)
        }
    }

    /// The client's capabilities: from the latest `initialize` (legacy) or
    /// the latest modern request's `_meta`, whichever came last. `None`
    /// before either, or once the transport is gone.
    pub fn client_capabilities(&self) -> Option<Value> {
        self.shared()
            .ok()
            .and_then(|s| s.session().latest_capabilities.clone())
    }

    /// [`client_capabilities`](Self::client_capabilities) of one session
    /// (stdio has one: [`STDIO_SESSION`]).
    pub fn client_capabilities_for_session(&self, session: &str) -> Option<Value> {
        (session == STDIO_SESSION)
            .then(|| self.client_capabilities())
            .flatten()
    }

    /// The client's `clientInfo` as last reported.
    pub fn client_info(&self) -> Option<Value> {
        self.shared()
            .ok()
            .and_then(|s| s.session().client_info.clone())
    }

    /// The era of the latest request that declared one (`initialize` or a
    /// modern `_meta`).
    pub fn era(&self) -> Option<Era> {
        self.shared().ok().and_then(|s| s.session().era)
    }

    /// Sends a notification. Never waits: the line is queued for the writer.
    ///
    /// Fails with [`SendError::QueueFull`] when the client is not reading
    /// (over `max_outbound_bytes` unwritten), and
    /// [`SendError::TransportGone`] once serving has ended.
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), SendError> {
        let shared = self.shared()?;
        let line = encode::notification(method, params.as_ref())
            .map_err(|e| SendError::Serialize(e.to_string()))?;
        shared.send_line(line)
    }

    /// [`notify`](Self::notify) addressed to one session.
    pub fn notify_session(
        &self,
        session: &str,
        method: &str,
        params: Option<Value>,
    ) -> Result<(), SendError> {
        check_session(session)?;
        self.notify(method, params)
    }

    /// Sends `notifications/progress` for `token`.
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
    pub fn notify_list_changed(&self, kind: ListKind) -> Result<(), SendError> {
        let method = match kind {
            ListKind::Tools => "notifications/tools/list_changed",
            ListKind::Resources => "notifications/resources/list_changed",
            ListKind::Prompts => "notifications/prompts/list_changed",
        };
        self.notify(method, None)
    }

    /// Sends a server-to-client request (legacy era: `roots/list`,
    /// `sampling/createMessage`, `elicitation/create`, `ping`) and waits for
    /// the answer for at most [`ServerConfig::client_request_timeout`].
    ///
    /// Requires an initialized legacy session ([`SendError::NoLegacySession`]
    /// otherwise: in the modern era use
    /// [`RequestContext::ask`](super::RequestContext::ask)), and the client
    /// capability the method needs ([`SendError::MissingCapability`]).
    /// On timeout a `notifications/cancelled` is sent for it.
    ///
    /// Cancel safety: dropping the future forgets the request (a late answer
    /// is ignored) but sends no cancellation.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, SendError> {
        let timeout = self.shared()?.config.client_request_timeout;
        self.request_with_timeout(method, params, timeout).await
    }

    /// [`request`](Self::request) addressed to one session.
    pub async fn request_session(
        &self,
        session: &str,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, SendError> {
        check_session(session)?;
        self.request(method, params).await
    }

    /// [`request`](Self::request) with an explicit timeout.
    pub async fn request_with_timeout(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Value, SendError> {
        let (id, rx) = {
            let shared = self.shared()?;
            let caps = {
                let st = shared.session();
                if st.legacy_version.is_none() {
                    return Err(SendError::NoLegacySession);
                }
                st.legacy_capabilities.clone()
            };
            if let Some(cap) = capability_for(method) {
                if !has_capability(caps.as_ref(), cap) {
                    return Err(SendError::MissingCapability(cap));
                }
            }
            let id = RequestId::Number(shared.next_id.fetch_add(1, Ordering::Relaxed));
            let line = encode::request(&id, method, params.as_ref())
                .map_err(|e| SendError::Serialize(e.to_string()))?;
            let (tx, rx) = oneshot::channel();
            lock(&shared.pending).insert(id.clone(), tx);
            if let Err(e) = shared.send_line(line) {
                lock(&shared.pending).remove(&id);
                return Err(e);
            }
            tracing::debug!(%id, method, "server-to-client request sent");
            (id, rx)
            // The Arc is dropped here: awaiting must not extend the lifetime.
        };
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(raw))) => raw.parse().map_err(|e| SendError::BadResult(e.to_string())),
            Ok(Ok(Err(e))) => Err(SendError::Client(e)),
            Ok(Err(_)) => Err(SendError::TransportGone),
            Err(_) => {
                if let Ok(shared) = self.shared() {
                    lock(&shared.pending).remove(&id);
                    let _ = self.notify(
                        methods::CANCELLED,
                        Some(json!({ "requestId": id, "reason": "timed out" })),
                    );
                }
                Err(SendError::Timeout(timeout))
            }
        }
    }
}

fn check_session(session: &str) -> Result<(), SendError> {
    if session == STDIO_SESSION {
        Ok(())
    } else {
        Err(SendError::UnknownSession(session.to_owned()))
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
