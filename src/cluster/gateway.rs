//! The gateway (node A): exposes local clients to other nodes.
//!
//! One actor per gateway. It joins the process group
//! `conduit-mcp/server/<name>` for every server it exposes, so other nodes
//! find it by the server's name. Each call runs in a task of its own (the
//! actor never waits on a server), is checked against the allowlist, runs
//! with the timeout the caller sent, and is answered with the server's
//! result bytes as they came (see [`wire`](super::wire)). Notifications of
//! each server are forwarded to the members of
//! `conduit-mcp/notifications/<name>`, and progress of a call to the
//! caller's sink group.

use crate::sync::lock;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::wire::{
    self, CallEnvelope, GatewayMsg, NotificationEnvelope, Operation, ProgressEnvelope, RemoteError,
    SinkMsg,
};
use super::{notifications_group, server_group};
use crate::client::Client;
use crate::error::Error;
use crate::{CancelToken, RequestOptions};

/// Largest answer sent by default: ractor_cluster's frame limit, less room
/// for the frame's own envelope.
pub const DEFAULT_MAX_ANSWER_BYTES: u64 =
    ractor_cluster::DEFAULT_MAX_INBOUND_FRAME_SIZE - 64 * 1024;

/// One exposed server.
#[derive(Clone)]
struct Exposed {
    client: Client,
    /// Methods other nodes may call; `None`: every method.
    allowed: Option<HashSet<String>>,
}

/// What a [`Gateway`] exposes, and how.
///
/// ```no_run
/// # async fn f(files: conduit_mcp::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use conduit_mcp::cluster::{Gateway, GatewayConfig};
/// let gateway = Gateway::start(
///     GatewayConfig::new().server_allowing("files", files, ["tools/list", "tools/call"]),
///     None,
/// )
/// .await?;
/// # let _ = gateway; Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct GatewayConfig {
    servers: HashMap<String, Exposed>,
    max_answer_bytes: Option<u64>,
}

impl std::fmt::Debug for GatewayConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayConfig")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .field("max_answer_bytes", &self.max_answer_bytes)
            .finish()
    }
}

impl GatewayConfig {
    /// Exposes nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Exposes `client` under `name`, every method allowed.
    pub fn server(mut self, name: impl Into<String>, client: Client) -> Self {
        self.servers.insert(
            name.into(),
            Exposed {
                client,
                allowed: None,
            },
        );
        self
    }

    /// Exposes `client` under `name`; other nodes may call only `methods`
    /// (`tools/list` also covers the list of tools; the session is always
    /// readable). Everything else is refused with
    /// [`RemoteError::Refused`].
    pub fn server_allowing<I, S>(
        mut self,
        name: impl Into<String>,
        client: Client,
        methods: I,
    ) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.servers.insert(
            name.into(),
            Exposed {
                client,
                allowed: Some(methods.into_iter().map(Into::into).collect()),
            },
        );
        self
    }

    /// Largest answer sent (default [`DEFAULT_MAX_ANSWER_BYTES`]); larger
    /// ones are refused with [`RemoteError::TooLarge`] here, on node A,
    /// instead of breaking the connection between the nodes.
    pub fn max_answer_bytes(mut self, bytes: u64) -> Self {
        self.max_answer_bytes = Some(bytes);
        self
    }
}

/// Why a gateway could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The gateway's actor could not be spawned.
    #[error("could not start the gateway actor: {0}")]
    Spawn(String),
}

/// A running gateway. Dropping the handle does not stop it: call
/// [`stop`](Self::stop), or stop its supervisor.
#[derive(Debug, Clone)]
pub struct Gateway {
    actor: ActorRef<GatewayMsg>,
}

impl Gateway {
    /// Starts a gateway for `config`, linked under `supervisor` if given.
    pub async fn start(
        config: GatewayConfig,
        supervisor: Option<ActorCell>,
    ) -> Result<Gateway, GatewayError> {
        let spawned = match supervisor {
            Some(s) => Actor::spawn_linked(None, GatewayActor, config, s).await,
            None => Actor::spawn(None, GatewayActor, config).await,
        };
        let (actor, _) = spawned.map_err(|e| GatewayError::Spawn(e.to_string()))?;
        Ok(Gateway { actor })
    }

    /// The gateway's actor.
    pub fn actor(&self) -> ActorRef<GatewayMsg> {
        self.actor.clone()
    }

    /// Stops the gateway (the exposed clients keep running: they are
    /// yours).
    pub fn stop(&self) {
        self.actor.stop(None);
    }
}

struct GatewayActor;

struct GatewayState {
    servers: Arc<HashMap<String, Exposed>>,
    max_answer_bytes: u64,
    /// Calls in flight, by `caller/id`, to cancel.
    inflight: Arc<Mutex<HashMap<String, CancelToken>>>,
    /// The notification forwarders, one per server.
    forwarders: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for GatewayState {
    fn drop(&mut self) {
        for f in &self.forwarders {
            f.abort();
        }
        // Calls in flight end with the gateway: their callers see the node
        // (or the gateway) go.
        for (_, token) in lock(&self.inflight).drain() {
            token.cancel();
        }
    }
}

impl Actor for GatewayActor {
    type Msg = GatewayMsg;
    type State = GatewayState;
    type Arguments = GatewayConfig;

    async fn pre_start(
        &self,
        myself: ActorRef<GatewayMsg>,
        config: GatewayConfig,
    ) -> Result<GatewayState, ActorProcessingErr> {
        let mut forwarders = Vec::new();
        for (name, exposed) in &config.servers {
            ractor::pg::join(server_group(name), vec![myself.get_cell()]);
            forwarders.push(tokio::spawn(forward_notifications(
                name.clone(),
                exposed.client.clone(),
            )));
            info!(server = %name, "exposed to other nodes");
        }
        Ok(GatewayState {
            servers: Arc::new(config.servers),
            max_answer_bytes: config.max_answer_bytes.unwrap_or(DEFAULT_MAX_ANSWER_BYTES),
            inflight: Arc::default(),
            forwarders,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<GatewayMsg>,
        msg: GatewayMsg,
        st: &mut GatewayState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            GatewayMsg::Call(bytes, reply) => {
                let call = Call {
                    servers: st.servers.clone(),
                    inflight: st.inflight.clone(),
                    max_answer_bytes: st.max_answer_bytes,
                };
                tokio::spawn(call.run(bytes, reply));
            }
            GatewayMsg::Cancel(key) => {
                if let Some(token) = lock(&st.inflight).remove(&key) {
                    debug!(call = %key, "cancelled by the caller's node");
                    token.cancel();
                }
            }
            GatewayMsg::Servers(reply) => {
                let mut names: Vec<&String> = st.servers.keys().collect();
                names.sort();
                let _ = reply.send(serde_json::to_vec(&names).unwrap_or_default());
            }
        }
        Ok(())
    }
}

/// One call being served.
struct Call {
    servers: Arc<HashMap<String, Exposed>>,
    inflight: Arc<Mutex<HashMap<String, CancelToken>>>,
    max_answer_bytes: u64,
}

impl Call {
    async fn run(self, bytes: Vec<u8>, reply: RpcReplyPort<Vec<u8>>) {
        let answer = match serde_json::from_slice::<CallEnvelope>(&bytes) {
            Ok(env) => self.serve(env).await,
            Err(e) => Err(RemoteError::Codec(format!(
                "a call that does not decode: {e}"
            ))),
        };
        let bytes = match &answer {
            Ok(raw) if raw.len() as u64 > self.max_answer_bytes => {
                wire::answer(Err(&RemoteError::TooLarge {
                    bytes: raw.len() as u64,
                    limit: self.max_answer_bytes,
                }))
            }
            Ok(raw) => wire::answer(Ok(raw)),
            Err(e) => wire::answer(Err(e)),
        };
        // The caller may have gone (its node too): nothing to do then.
        let _ = reply.send(bytes);
    }

    async fn serve(&self, env: CallEnvelope) -> Result<Vec<u8>, RemoteError> {
        let Some(exposed) = self.servers.get(&env.server) else {
            return Err(RemoteError::NotFound { server: env.server });
        };
        let method = match &env.op {
            Operation::Request { method, .. } => Some(method.as_str()),
            Operation::ListTools => Some("tools/list"),
            Operation::Session => None,
        };
        if let (Some(method), Some(allowed)) = (method, &exposed.allowed) {
            if !allowed.contains(method) {
                warn!(server = %env.server, method, "call from another node refused by the allowlist");
                return Err(RemoteError::Refused {
                    server: env.server,
                    method: method.to_owned(),
                });
            }
        }
        let client = &exposed.client;
        match env.op {
            Operation::Session => {
                let session = client
                    .ready(Duration::from_millis(env.timeout_ms))
                    .await
                    .map_err(|e| remote_error(e, env.timeout_ms))?;
                Ok(serde_json::to_vec(&session.to_json()).unwrap_or_default())
            }
            Operation::ListTools => {
                let tools = tokio::time::timeout(
                    Duration::from_millis(env.timeout_ms),
                    client.list_tools(),
                )
                .await
                .map_err(|_| RemoteError::Timeout {
                    after_ms: env.timeout_ms,
                })?
                .map_err(|e| remote_error(e, env.timeout_ms))?;
                serde_json::to_vec(&tools).map_err(|e| RemoteError::Codec(e.to_string()))
            }
            Operation::Request { method, params } => {
                let key = format!("{}/{}", env.caller, env.id);
                let token = CancelToken::new();
                lock(&self.inflight).insert(key.clone(), token.clone());
                let mut opts = RequestOptions::new()
                    .timeout(Duration::from_millis(env.timeout_ms))
                    .cancel_token(token);
                let forwarder = env.progress_group.clone().map(|group| {
                    let (tx, rx) = mpsc::unbounded_channel();
                    opts = opts.clone().progress(tx);
                    tokio::spawn(forward_progress(env.id, group, rx))
                });
                let result = client.request_raw(&method, params, opts).await;
                lock(&self.inflight).remove(&key);
                // Progress sent before the answer goes out first.
                if let Some(f) = forwarder {
                    let _ = f.await;
                }
                result
                    .map(|raw| raw.as_bytes().to_vec())
                    .map_err(|e| remote_error(e, env.timeout_ms))
            }
        }
    }
}

/// The data of a local call's failure.
fn remote_error(e: Error, timeout_ms: u64) -> RemoteError {
    match e {
        Error::Server(o) => RemoteError::Server {
            code: o.code,
            message: o.message,
            data: o.data.map(|d| d.to_string()),
        },
        Error::Timeout { .. } => RemoteError::Timeout {
            after_ms: timeout_ms,
        },
        Error::Cancelled { .. } => RemoteError::Cancelled,
        Error::Codec { problem, .. } => RemoteError::Codec(problem),
        other => RemoteError::Closed {
            reason: other.to_string(),
        },
    }
}

/// Casts each progress of call `id` to the members of `group` (the
/// caller's sink), until the call ends.
async fn forward_progress(
    id: u64,
    group: String,
    mut rx: mpsc::UnboundedReceiver<crate::Progress>,
) {
    while let Some(p) = rx.recv().await {
        let env = ProgressEnvelope { id, params: p.raw };
        let Ok(bytes) = serde_json::to_vec(&env) else {
            continue;
        };
        for member in ractor::pg::get_members(&group) {
            let _ = ActorRef::<SinkMsg>::from(member).cast(SinkMsg::Progress(bytes.clone()));
        }
    }
}

/// Casts each notification of `server` to the members of its
/// notifications group, until the client ends.
async fn forward_notifications(server: String, client: Client) {
    let group = notifications_group(&server);
    let mut notes = client.notifications();
    while let Some(n) = notes.recv().await {
        let members = ractor::pg::get_members(&group);
        if members.is_empty() {
            continue;
        }
        let env = NotificationEnvelope {
            server: server.clone(),
            method: n.method,
            params: n.params,
        };
        let Ok(bytes) = serde_json::to_vec(&env) else {
            continue;
        };
        for member in members {
            let _ = ActorRef::<SinkMsg>::from(member).cast(SinkMsg::Notification(bytes.clone()));
        }
    }
}
