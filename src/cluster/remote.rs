//! The caller's side (node B): finds servers exposed by gateways on other
//! nodes and calls them.
//!
//! [`RemoteServers`] owns a small local actor, the *sink*, in a process
//! group of its own: gateways send it the progress of its calls and the
//! notifications it subscribed to. A call is a ractor RPC to the gateway
//! with the timeout inside the message. When the node hosting the gateway
//! goes away, ractor_cluster stops the gateway's stand-in here, which drops
//! every reply port of the calls in flight: each fails at once with
//! [`RemoteError::NodeLost`], never with a timeout.

use crate::sync::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::rpc::CallResult;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::debug;

use super::wire::{
    self, CallEnvelope, GatewayMsg, NotificationEnvelope, Operation, ProgressEnvelope, RemoteError,
    SinkMsg,
};
use super::{notifications_group, server_group};
use crate::client::{CallToolResult, Tool};
use crate::jsonrpc::{Notification, RawJson};
use crate::{CancelToken, Progress};

/// How long a caller waits beyond the call's own timeout for the answer to
/// cross back (the gateway answers `Timeout` itself at the timeout).
const ANSWER_MARGIN: Duration = Duration::from_secs(5);

/// Options of one remote call.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    timeout: Duration,
    progress: Option<mpsc::UnboundedSender<Progress>>,
    cancel: Option<CancelToken>,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            progress: None,
            cancel: None,
        }
    }
}

impl RemoteOptions {
    /// Defaults: a 60 s timeout, no progress, no cancellation.
    pub fn new() -> Self {
        Self::default()
    }

    /// The call's timeout, applied on the node that hosts the server.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Asks for progress; each notification arrives on `tx`.
    pub fn progress(mut self, tx: mpsc::UnboundedSender<Progress>) -> Self {
        self.progress = Some(tx);
        self
    }

    /// Cancels the call (on the server too) when `token` is cancelled.
    pub fn cancel_token(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }
}

/// What the sink routes, shared with the handles.
#[derive(Default)]
struct Routes {
    progress: Mutex<HashMap<u64, mpsc::UnboundedSender<Progress>>>,
    notifications: Mutex<HashMap<String, Vec<mpsc::UnboundedSender<Notification>>>>,
}

/// Why [`RemoteServers::start`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteStartError {
    /// The sink actor could not be spawned.
    #[error("could not start the caller's sink actor: {0}")]
    Spawn(String),
}

/// Node B's view of the servers exposed by gateways on other nodes.
/// Cheap to clone; stopping it ([`stop`](Self::stop)) ends its sink.
#[derive(Clone)]
pub struct RemoteServers {
    sink: ActorRef<SinkMsg>,
    /// The sink's process group: the calls' `caller`.
    group: String,
    routes: Arc<Routes>,
    next_id: Arc<AtomicU64>,
}

impl std::fmt::Debug for RemoteServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteServers")
            .field("sink", &self.group)
            .finish()
    }
}

impl RemoteServers {
    /// Starts the sink. The node must be connected to the other nodes
    /// (ractor_cluster's `NodeServer` and `client_connect`).
    pub async fn start() -> Result<RemoteServers, RemoteStartError> {
        static SINKS: AtomicU64 = AtomicU64::new(0);
        let group = format!(
            "conduit-mcp/sink/{}/{}/{}",
            std::process::id(),
            SINKS.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let routes = Arc::new(Routes::default());
        let (sink, _) = Actor::spawn(None, Sink, (group.clone(), routes.clone()))
            .await
            .map_err(|e| RemoteStartError::Spawn(e.to_string()))?;
        Ok(RemoteServers {
            sink,
            group,
            routes,
            next_id: Arc::new(AtomicU64::new(1)),
        })
    }

    /// The server exposed under `name` by some gateway, if one is known
    /// now (process groups sync shortly after nodes connect: see
    /// [`wait_for`](Self::wait_for)).
    pub fn find(&self, name: &str) -> Option<RemoteServer> {
        let members = ractor::pg::get_members(&server_group(name));
        // Prefer a gateway on another node, the point of the exercise.
        let cell = members
            .iter()
            .find(|c| !c.get_id().is_local())
            .or_else(|| members.first())?
            .clone();
        Some(RemoteServer {
            name: name.to_owned(),
            gateway: ActorRef::from(cell),
            servers: self.clone(),
        })
    }

    /// Waits (up to `timeout`) for a gateway exposing `name` to be known.
    pub async fn wait_for(&self, name: &str, timeout: Duration) -> Option<RemoteServer> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(s) = self.find(name) {
                return Some(s);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            // Process groups have no change feed here: a short poll.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Notifications of server `name` (on whichever node exposes it) from
    /// now on. Unbounded: keep reading.
    pub fn notifications(&self, name: &str) -> mpsc::UnboundedReceiver<Notification> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.routes.notifications)
            .entry(name.to_owned())
            .or_default()
            .push(tx);
        ractor::pg::join(notifications_group(name), vec![self.sink.get_cell()]);
        rx
    }

    /// Stops the sink: progress and notifications stop arriving.
    pub fn stop(&self) {
        self.sink.stop(None);
    }
}

/// A server on another node, found by name.
#[derive(Debug, Clone)]
pub struct RemoteServer {
    name: String,
    gateway: ActorRef<GatewayMsg>,
    servers: RemoteServers,
}

impl RemoteServer {
    /// The name it is exposed under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends any request; the result comes back as the server's own bytes.
    ///
    /// Cancel safety: dropping the future cancels the call on node A.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RemoteOptions,
    ) -> Result<RawJson, RemoteError> {
        let op = Operation::Request {
            method: method.to_owned(),
            params,
        };
        self.call(op, opts).await.map(RawJson::from_vec)
    }

    /// Calls a tool. A tool that fails is an `Ok` with `is_error`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        opts: RemoteOptions,
    ) -> Result<CallToolResult, RemoteError> {
        let params = serde_json::json!({ "name": name, "arguments": arguments });
        let raw = self.request("tools/call", Some(params), opts).await?;
        raw.parse().map_err(|e| RemoteError::Codec(e.to_string()))
    }

    /// Every tool of the server.
    pub async fn list_tools(&self, timeout: Duration) -> Result<Vec<Tool>, RemoteError> {
        let bytes = self
            .call(Operation::ListTools, RemoteOptions::new().timeout(timeout))
            .await?;
        serde_json::from_slice(&bytes).map_err(|e| RemoteError::Codec(e.to_string()))
    }

    /// The server's session (era, protocol version, server info,
    /// capabilities, instructions, pid), as JSON.
    pub async fn session(&self, timeout: Duration) -> Result<Value, RemoteError> {
        let bytes = self
            .call(Operation::Session, RemoteOptions::new().timeout(timeout))
            .await?;
        serde_json::from_slice(&bytes).map_err(|e| RemoteError::Codec(e.to_string()))
    }

    async fn call(&self, op: Operation, opts: RemoteOptions) -> Result<Vec<u8>, RemoteError> {
        let s = &self.servers;
        let id = s.next_id.fetch_add(1, Ordering::Relaxed);
        let env = CallEnvelope {
            caller: s.group.clone(),
            id,
            server: self.name.clone(),
            op,
            timeout_ms: u64::try_from(opts.timeout.as_millis()).unwrap_or(u64::MAX),
            progress_group: opts.progress.as_ref().map(|_| s.group.clone()),
        };
        let bytes = serde_json::to_vec(&env).map_err(|e| RemoteError::Codec(e.to_string()))?;
        let mut guard = InFlight {
            gateway: &self.gateway,
            routes: &s.routes,
            key: format!("{}/{id}", s.group),
            id,
            done: false,
        };
        if let Some(tx) = opts.progress {
            lock(&s.routes.progress).insert(id, tx);
        }
        let wait = opts.timeout.saturating_add(ANSWER_MARGIN);
        let call = self
            .gateway
            .call(|reply| GatewayMsg::Call(bytes, reply), Some(wait));
        let cancelled = async {
            match &opts.cancel {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            r = call => r,
            _ = cancelled => return Err(RemoteError::Cancelled),
        };
        guard.done = true;
        match outcome {
            Ok(CallResult::Success(answer)) => wire::read_answer(answer),
            Ok(CallResult::Timeout) => Err(RemoteError::Timeout {
                after_ms: env.timeout_ms,
            }),
            // The reply port was dropped (the gateway's stand-in stopped
            // when the node went away), or the message could not be sent.
            Ok(CallResult::SenderError) | Err(_) => {
                debug!(server = %self.name, "call failed: the node is gone");
                Err(RemoteError::NodeLost {
                    server: self.name.clone(),
                })
            }
        }
    }
}

/// Unregisters a call's progress route; cancels the call on node A if it
/// is abandoned before its answer (timeout, cancel, or a dropped future).
struct InFlight<'a> {
    gateway: &'a ActorRef<GatewayMsg>,
    routes: &'a Routes,
    key: String,
    id: u64,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        lock(&self.routes.progress).remove(&self.id);
        if !self.done {
            let _ = self
                .gateway
                .cast(GatewayMsg::Cancel(std::mem::take(&mut self.key)));
        }
    }
}

/// The sink actor: routes what gateways send to this node's callers.
struct Sink;

impl Actor for Sink {
    type Msg = SinkMsg;
    type State = Arc<Routes>;
    type Arguments = (String, Arc<Routes>);

    async fn pre_start(
        &self,
        myself: ActorRef<SinkMsg>,
        (group, routes): (String, Arc<Routes>),
    ) -> Result<Arc<Routes>, ActorProcessingErr> {
        ractor::pg::join(group, vec![myself.get_cell()]);
        Ok(routes)
    }

    async fn handle(
        &self,
        _myself: ActorRef<SinkMsg>,
        msg: SinkMsg,
        routes: &mut Arc<Routes>,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SinkMsg::Progress(bytes) => {
                if let Ok(p) = serde_json::from_slice::<ProgressEnvelope>(&bytes) {
                    if let Some(tx) = lock(&routes.progress).get(&p.id) {
                        let _ = tx.send(Progress::from_params(p.params));
                    }
                }
            }
            SinkMsg::Notification(bytes) => {
                if let Ok(n) = serde_json::from_slice::<NotificationEnvelope>(&bytes) {
                    let mut subs = lock(&routes.notifications);
                    if let Some(list) = subs.get_mut(&n.server) {
                        let note = Notification {
                            method: n.method,
                            params: n.params,
                        };
                        list.retain(|tx| tx.send(note.clone()).is_ok());
                    }
                }
            }
        }
        Ok(())
    }
}
