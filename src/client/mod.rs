//! The client: run a local MCP server as a child process and talk to it.
//!
//! ```text
//! ClientSupervisor        respawns a dead Connection; what the handle stops
//!  └─ Connection          ids, pending calls, discovery, dispatch, server restarts
//!      └─ PortOwner       one child process: writer, reader and reaper tasks
//! ```
//!
//! [`Client`] is the user's handle: cheap to clone, usable from any task.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorCell, ActorRef};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::deadline::After;

mod calls;
pub mod command;
pub mod config;
mod connection;
mod discovery;
pub mod events;
pub mod handler;
mod pending;
mod requests;
pub mod session;
mod shared;
mod supervisor;

pub use calls::{CallToolResult, Tool};
pub use requests::{CancelToken, Progress, RequestOptions};
pub use supervisor::SupervisorMsg;

use self::config::ClientConfig;
use self::connection::{Call, ConnectionMsg, Direct};
use self::handler::{ClientHandler, InboundRequest};
use self::pending::ReplySlot;
use self::session::{ServerSession, Status};
use self::shared::Shared;
use self::supervisor::{ClientSupervisor, SupervisorArgs};
use crate::error::{ConfigError, Error, SpawnError};
use crate::jsonrpc::{Notification, RawJson, RequestId};
use crate::transport::{ShutdownReport, StdioTransport, Transport};

/// Why [`Client::start`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// An option was refused; the error names it.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The first server process could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// An actor of the tree could not be spawned.
    #[error("could not start the client's actors: {0}")]
    Actor(String),
}

/// Options of [`Client::start_with`] beyond the config.
#[derive(Default)]
pub struct StartOptions {
    /// Answers server-to-client requests and modern input requests.
    pub handler: Option<Arc<dyn ClientHandler>>,
    /// Spawn the ClientSupervisor linked under this actor (embedding in a
    /// user's supervision tree).
    pub supervisor: Option<ActorCell>,
    /// Receives every lifecycle event from the first spawn on.
    pub events: Option<mpsc::UnboundedSender<events::LifecycleEvent>>,
}

impl std::fmt::Debug for StartOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartOptions")
            .field("handler", &self.handler.is_some())
            .field("supervisor", &self.supervisor.as_ref().map(|s| s.get_id()))
            .finish()
    }
}

/// A handle to a running client. Clones share the same client.
///
/// Dropping the last handle stops the client, like [`stop`](Self::stop)
/// without waiting: the server is shut down in the background, never leaked.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    supervisor: ActorRef<SupervisorMsg>,
    _last: Arc<StopOnLastDrop>,
}

/// Stops the tree when the last [`Client`] handle goes.
struct StopOnLastDrop(ActorRef<SupervisorMsg>);

impl Drop for StopOnLastDrop {
    fn drop(&mut self) {
        let _ = self.0.cast(SupervisorMsg::Stop);
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("name", &self.shared.name)
            .field("status", &*self.shared.status().borrow())
            .finish()
    }
}

/// Methods whose modern-era result may be `input_required`.
const MULTI_ROUND_METHODS: &[&str] = &["tools/call", "prompts/get", "resources/read"];
/// Input rounds allowed for one call before it fails.
const MAX_INPUT_ROUNDS: usize = 8;

impl Client {
    /// Validates `config`, spawns the actor tree and the first server
    /// process, and returns at once (discovery continues in the background;
    /// calls wait for it). A missing executable or a bad option is reported
    /// here, without retries.
    pub async fn start(config: ClientConfig) -> Result<Client, StartError> {
        Self::start_with(config, StartOptions::default()).await
    }

    /// [`start`](Self::start) with a handler and/or a parent supervisor.
    pub async fn start_with(
        config: ClientConfig,
        opts: StartOptions,
    ) -> Result<Client, StartError> {
        config.validate()?;
        let config = Arc::new(config);
        let transport: Arc<dyn Transport> = Arc::new(StdioTransport::new(config.clone()));
        let shared = Arc::new(Shared::new(config, opts.handler));
        if let Some(tx) = opts.events {
            shared.add_event_subscriber(tx);
        }
        let (tx, rx) = oneshot::channel();
        let args = SupervisorArgs {
            shared: shared.clone(),
            transport,
            first: Some(tx),
        };
        let spawned = match opts.supervisor {
            Some(parent) => Actor::spawn_linked(None, ClientSupervisor, args, parent).await,
            None => Actor::spawn(None, ClientSupervisor, args).await,
        };
        match spawned {
            Ok((supervisor, _)) => Ok(Client {
                shared,
                _last: Arc::new(StopOnLastDrop(supervisor.clone())),
                supervisor,
            }),
            Err(e) => match rx.await {
                Ok(Err(spawn)) => Err(StartError::Spawn(spawn)),
                _ => Err(StartError::Actor(e.to_string())),
            },
        }
    }

    /// The name used in logs.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The client's supervisor actor (to link or monitor from a user's tree).
    pub fn supervisor(&self) -> ActorCell {
        self.supervisor.get_cell()
    }

    /// The current status.
    pub fn status(&self) -> Status {
        self.shared.status_now()
    }

    /// A receiver that sees every status change.
    pub fn watch_status(&self) -> watch::Receiver<Status> {
        self.shared.status()
    }

    /// The discovered session, when a server is ready.
    pub fn session(&self) -> Option<Arc<ServerSession>> {
        match self.shared.status_now() {
            Status::Ready(s) => Some(s.clone()),
            _ => None,
        }
    }

    /// Waits until a server is ready (discovery done), up to `timeout`.
    pub async fn ready(&self, timeout: Duration) -> Result<Arc<ServerSession>, Error> {
        let mut rx = self.shared.status();
        let wait = async {
            loop {
                if let Status::Ready(s) = &*rx.borrow_and_update() {
                    return Ok(s.clone());
                }
                if let Some(e) = self.shared.final_error() {
                    return Err(e);
                }
                if rx.changed().await.is_err() {
                    return Err(Error::Stopped);
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .unwrap_or_else(|_| {
                Err(Error::Timeout {
                    method: "(waiting for the server to be ready)".into(),
                    after: timeout,
                })
            })
    }

    /// Subscribes to lifecycle events from now on (spawned, ready, closed,
    /// restarting, gave up, stopped, stderr lines). Unbounded: nothing is
    /// dropped under bursts. Use [`StartOptions::events`] to see the first
    /// spawn as well.
    pub fn events(&self) -> mpsc::UnboundedReceiver<events::LifecycleEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.shared.add_event_subscriber(tx);
        rx
    }

    /// Subscribes to the server's notifications (logging messages, list
    /// changes, resource updates, progress without a waiting caller). The
    /// queue is unbounded: a burst is never dropped, so keep reading.
    pub fn notifications(&self) -> mpsc::UnboundedReceiver<Notification> {
        self.shared.subscribe()
    }

    /// Sends a request with the default timeout and returns its result.
    ///
    /// Cancel safety: dropping the future cancels the request (the server is
    /// sent `notifications/cancelled`, and a late answer is ignored).
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, Error> {
        self.request_with(method, params, RequestOptions::default())
            .await
    }

    /// Sends a request and decodes its result into `T`.
    pub async fn request_as<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RequestOptions,
    ) -> Result<T, Error> {
        let raw = self.request_raw(method, params, opts).await?;
        raw.parse().map_err(|e| Error::Codec {
            method: method.to_owned(),
            problem: format!("could not decode the result: {e}"),
        })
    }

    /// Sends a request with options (timeout, progress, cancellation).
    pub async fn request_with(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RequestOptions,
    ) -> Result<Value, Error> {
        self.request_as(method, params, opts).await
    }

    /// Sends a request and returns its result as the bytes the server sent,
    /// not yet decoded (see [`RawJson`]: [`RawJson::parse`] decodes and
    /// validates them). In the modern era an `input_required` result is
    /// fulfilled by the handler and the request retried (new id,
    /// `inputResponses`, `requestState` echoed).
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RequestOptions,
    ) -> Result<RawJson, Error> {
        let start = Instant::now();
        let mut params = params;
        for _ in 0..MAX_INPUT_ROUNDS {
            let raw = self.round(method, params.clone(), &opts, start).await?;
            // Only modern servers answer `input_required`: skip the scan of
            // (possibly large) legacy results.
            if !MULTI_ROUND_METHODS.contains(&method)
                || self.shared.era() != Some(crate::protocol::Era::Modern)
                || memchr::memmem::find(raw.as_bytes(), b"input_required").is_none()
            {
                return Ok(raw);
            }
            let v: Value = raw.parse().map_err(|e| Error::Codec {
                method: method.into(),
                problem: e.to_string(),
            })?;
            if v.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return Ok(raw);
            }
            params = Some(self.fulfil(method, params, &v).await?);
        }
        Err(Error::Codec {
            method: method.into(),
            problem: format!("server asked for input more than {MAX_INPUT_ROUNDS} times"),
        })
    }

    /// Builds the retry's params: the original params plus `inputResponses`
    /// from the handler and the echoed `requestState`.
    async fn fulfil(&self, method: &str, params: Option<Value>, v: &Value) -> Result<Value, Error> {
        let mut responses = serde_json::Map::new();
        if let Some(reqs) = v.get("inputRequests").and_then(Value::as_object) {
            let Some(handler) = &self.shared.handler else {
                return Err(Error::Codec {
                    method: method.into(),
                    problem: "the server needs input from the client, but no handler is set".into(),
                });
            };
            for (key, req) in reqs {
                let inbound = InboundRequest {
                    method: req
                        .get("method")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    params: req.get("params").cloned(),
                };
                let answer = handler.handle(inbound).await.map_err(Error::Server)?;
                responses.insert(key.clone(), answer);
            }
        }
        let mut p = match params {
            Some(Value::Object(m)) => m,
            None => serde_json::Map::new(),
            Some(_) => {
                return Err(Error::Codec {
                    method: method.into(),
                    problem: "params must be an object to carry inputResponses".into(),
                })
            }
        };
        p.insert("inputResponses".into(), Value::Object(responses));
        match v.get("requestState") {
            Some(s) => p.insert("requestState".into(), s.clone()),
            None => p.remove("requestState"),
        };
        Ok(Value::Object(p))
    }

    /// One request/response round.
    async fn round(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &RequestOptions,
        start: Instant,
    ) -> Result<RawJson, Error> {
        let timeout = opts.timeout.unwrap_or(self.shared.config.request_timeout);
        let hard_deadline = opts.max_total.map(|m| start.after(m));
        // The timeout runs from `from`, never past the hard deadline.
        let deadline_from = |from: Instant| {
            let d = from.after(timeout);
            hard_deadline.map_or(d, |h| d.min(h))
        };
        let mut deadline = deadline_from(start);
        if self.shared.is_final() {
            return Err(self.down_error());
        }
        let conn = self.connection(deadline).await.map_err(|e| match e {
            Error::Timeout { .. } => Error::Timeout {
                method: method.into(),
                after: timeout,
            },
            e => e,
        })?;
        let id = self.shared.next_id();
        let (reply, mut rx) = ReplySlot::new(self.shared.down.clone());
        let wants_progress = opts.progress.is_some() || opts.reset_timeout_on_progress;
        let (ptx, mut prx) = if wants_progress {
            let (t, r) = mpsc::unbounded_channel();
            (Some(t), Some(r))
        } else {
            (None, None)
        };
        let call = Call {
            id: id.clone(),
            method: method.to_owned(),
            params,
            reply,
            progress: ptx,
        };
        // While a server is ready the call skips the Connection's mailbox.
        let mut sent_direct = None;
        let call = match self.shared.direct() {
            Some(direct) => match direct.send(call) {
                Ok(()) => {
                    sent_direct = Some(direct);
                    None
                }
                Err(call) => Some(call),
            },
            None => Some(call),
        };
        if let Some(call) = call {
            conn.cast(ConnectionMsg::Call(call))
                .map_err(|_| self.down_error())?;
        }
        let mut guard = CancelOnDrop {
            conn: Some(conn),
            direct: sent_direct,
            id,
            reason: "the caller dropped the request",
        };
        loop {
            tokio::select! {
                biased;
                r = &mut rx => {
                    guard.conn = None;
                    // Progress sent just before the answer is still queued:
                    // deliver it before returning.
                    if let (Some(prx), Some(tx)) = (prx.as_mut(), &opts.progress) {
                        while let Ok(p) = prx.try_recv() {
                            let _ = tx.send(Progress::from_params(p));
                        }
                    }
                    return r.unwrap_or_else(|_| Err(self.down_error()));
                }
                p = async { match prx.as_mut() { Some(r) => r.recv().await, None => std::future::pending().await } } => {
                    let Some(p) = p else { continue };
                    if opts.reset_timeout_on_progress {
                        deadline = deadline_from(Instant::now());
                    }
                    if let Some(tx) = &opts.progress {
                        let _ = tx.send(Progress::from_params(p));
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    guard.reason = "timeout";
                    return Err(Error::Timeout { method: method.into(), after: deadline.saturating_duration_since(start) });
                }
                _ = async { match &opts.cancel { Some(c) => c.cancelled().await, None => std::future::pending().await } } => {
                    guard.reason = "cancelled by the caller";
                    return Err(Error::Cancelled { method: method.into() });
                }
            }
        }
    }

    /// The error for a call that found no running Connection.
    fn down_error(&self) -> Error {
        self.shared
            .final_error()
            .unwrap_or_else(|| Error::ConnectionDown("the connection actor is not running".into()))
    }

    /// The current Connection, waiting (until `deadline`) while the
    /// supervisor respawns it.
    async fn connection(&self, deadline: Instant) -> Result<ActorRef<ConnectionMsg>, Error> {
        // Fast path: a Connection is running (no watch subscriptions).
        if let Some(c) = self.shared.connection.borrow().clone() {
            return Ok(c);
        }
        let mut rx = self.shared.connection.subscribe();
        let mut status = self.shared.status();
        loop {
            if let Some(c) = rx.borrow_and_update().clone() {
                return Ok(c);
            }
            status.borrow_and_update();
            if let Some(e) = self.shared.final_error() {
                return Err(e);
            }
            tokio::select! {
                _ = rx.changed() => {}
                _ = status.changed() => {}
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(Error::Timeout { method: String::new(), after: Duration::ZERO })
                }
            }
        }
    }

    /// Sends a notification to the server (dropped if no server is ready).
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        let conn = self
            .shared
            .connection
            .borrow()
            .clone()
            .ok_or_else(|| Error::ConnectionDown(self.down_error().to_string()))?;
        conn.cast(ConnectionMsg::Notify {
            method: method.to_owned(),
            params,
        })
        .map_err(|_| Error::ConnectionDown(self.down_error().to_string()))
    }

    /// Stops the client and returns at once. The server's shutdown (stdin
    /// close, SIGTERM, SIGKILL, reap) runs detached; await the returned
    /// handle to wait for its end (for example before the program exits).
    pub fn stop(&self) -> ClientShutdown {
        let _ = self.supervisor.cast(SupervisorMsg::Stop);
        ClientShutdown {
            shared: self.shared.clone(),
        }
    }

    /// The pid of the current server process, if one is ready.
    pub fn pid(&self) -> Option<u32> {
        self.session().and_then(|s| s.pid)
    }
}

/// Sends `notifications/cancelled` if a request is abandoned.
///
/// A request sent directly is cancelled directly too, so the cancellation
/// is queued before any request the caller makes next (as when both went
/// through the Connection).
struct CancelOnDrop {
    conn: Option<ActorRef<ConnectionMsg>>,
    direct: Option<Arc<Direct>>,
    id: RequestId,
    reason: &'static str,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if let Some(direct) = self.direct.take() {
                if direct.cancel(&self.id, self.reason) {
                    return;
                }
            }
            let _ = conn.cast(ConnectionMsg::Cancel {
                id: self.id.clone(),
                reason: self.reason.to_owned(),
            });
        }
    }
}

/// Returned by [`Client::stop`]: await the end of every server shutdown.
#[derive(Debug)]
#[must_use = "stop() has begun; await .wait() to know when the server is gone"]
pub struct ClientShutdown {
    shared: Arc<Shared>,
}

impl ClientShutdown {
    /// Waits until every server process this client started is shut down
    /// and reaped. Returns their reports, oldest first (the last one is the
    /// server that was running when the client stopped).
    ///
    /// Cancel safety: cancel safe; the shutdown goes on regardless.
    pub async fn wait(self) -> Vec<ShutdownReport> {
        // The Connection reports Stopped after closing its last link, so by
        // then every link it opened has registered its shutdown handle.
        let mut status = self.shared.status();
        while !status.borrow_and_update().is_final() {
            if status.changed().await.is_err() {
                break;
            }
        }
        let mut out: Vec<ShutdownReport> = Vec::new();
        for h in self.shared.shutdowns() {
            if let Some(r) = h.wait().await {
                if !out.iter().any(|o| o.pid == r.pid) {
                    out.push(r);
                }
            }
        }
        out
    }
}
