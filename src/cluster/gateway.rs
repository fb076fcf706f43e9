//! The gateway, on node A: exposes local clients to other nodes.
//!
//! One actor per gateway. It joins the process group
//! `conduit-mcp/server/<name>` for every server it exposes, so other nodes
//! find it by the server's name. Before a node may call, its sink asks for
//! a ticket with [`GatewayMsg::Hello`]. The gateway casts one to the sink's
//! stand-in on each node that has it, so a ticket is bound to the node it
//! went to, as [`peers`](super::peers) records. A call is admitted in the
//! actor by its ticket, grants, caps and an id not in flight. It then runs
//! in a task of its own with the caller's timeout lowered to the gateway's
//! maximum, and is answered with the server's result bytes as they came,
//! in the format of [`wire`]. Progress and notifications go to the sink the
//! ticket names, with its secret, within the node's forwarding window.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::pg::GroupChangeMessage;
use ractor::{
    Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::grants::Grants;
use super::peers::{Limits, NodeKey, Peers, Route};
use super::server_group;
use super::wire::{
    self, Ack, Call, CallKey, GatewayMsg, Hello, NotificationEnvelope, Op, ProgressEnvelope,
    RemoteError, SinkMsg, Subscription, Ticket,
};
use crate::client::Client;
use crate::error::Error;
use crate::sync::lock;
use crate::{CancelToken, RequestOptions};

/// Largest answer sent by default: ractor_cluster's frame limit, less room
/// for the frame's own envelope.
pub const DEFAULT_MAX_ANSWER_BYTES: u64 =
    ractor_cluster::DEFAULT_MAX_INBOUND_FRAME_SIZE - 64 * 1024;
/// Longest a call may run on the gateway by default, whatever timeout the
/// caller sent.
pub const DEFAULT_MAX_TIMEOUT: Duration = Duration::from_secs(300);
/// Calls in flight from one node, by default.
pub const DEFAULT_MAX_CALLS_PER_NODE: usize = 128;
/// Calls in flight through one gateway, from all nodes, by default.
pub const DEFAULT_MAX_CALLS: usize = 1024;
/// Bytes of progress and notifications sent to one node and not yet
/// acknowledged by its sinks, by default.
pub const DEFAULT_MAX_FORWARD_BYTES: u64 = 4 * 1024 * 1024;
/// Tickets one node may use at a gateway: one per caller's sink.
const MAX_TICKETS_PER_NODE: usize = 64;
/// Tickets issued and not used yet, from all nodes; the oldest is dropped
/// first.
const MAX_UNUSED_TICKETS: usize = 256;

/// One exposed server.
#[derive(Clone)]
struct Exposed {
    client: Client,
    grants: Grants,
}

/// What a [`Gateway`] exposes, and how.
///
/// Nothing is granted unless named in [`Grants`]; calls in flight are
/// capped per node and per gateway; a call's timeout is lowered to
/// [`max_timeout`](Self::max_timeout). Progress and notifications sent to
/// a node and not yet handled there are bounded in bytes by
/// [`max_forward_bytes`](Self::max_forward_bytes).
///
/// ```no_run
/// # async fn f(files: conduit_mcp::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use conduit_mcp::cluster::{Gateway, GatewayConfig, Grants};
/// let gateway = Gateway::start(
///     GatewayConfig::new()
///         .expose("files", files, Grants::methods(["tools/list", "tools/call"]).notifications()),
///     None,
/// )
/// .await?;
/// # let _ = gateway; Ok(()) }
/// ```
#[derive(Clone)]
pub struct GatewayConfig {
    servers: HashMap<String, Exposed>,
    max_answer_bytes: u64,
    max_timeout: Duration,
    max_calls_per_node: usize,
    max_calls: usize,
    max_forward_bytes: u64,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            servers: HashMap::new(),
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            max_timeout: DEFAULT_MAX_TIMEOUT,
            max_calls_per_node: DEFAULT_MAX_CALLS_PER_NODE,
            max_calls: DEFAULT_MAX_CALLS,
            max_forward_bytes: DEFAULT_MAX_FORWARD_BYTES,
        }
    }
}

impl std::fmt::Debug for GatewayConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let grants: HashMap<&String, &Grants> =
            self.servers.iter().map(|(n, e)| (n, &e.grants)).collect();
        f.debug_struct("GatewayConfig")
            .field("servers", &grants)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("max_timeout", &self.max_timeout)
            .field("max_calls_per_node", &self.max_calls_per_node)
            .field("max_calls", &self.max_calls)
            .field("max_forward_bytes", &self.max_forward_bytes)
            .finish()
    }
}

impl GatewayConfig {
    /// Exposes nothing yet.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::{GatewayConfig, Grants};
    /// use conduit_mcp::Client;
    ///
    /// fn exposing(files: Client) -> GatewayConfig {
    ///     GatewayConfig::new().expose("files", files, Grants::methods(["tools/list", "tools/call"]))
    /// }
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Exposes `client` under `name`, with `grants`: what other nodes may
    /// do with it.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::{GatewayConfig, Grants};
    /// use conduit_mcp::Client;
    ///
    /// fn exposing(files: Client, search: Client) -> GatewayConfig {
    ///     GatewayConfig::new()
    ///         .expose("files", files, Grants::methods(["tools/call"]).notifications())
    ///         .expose("search", search, Grants::all()) // every node is trusted with it
    /// }
    /// ```
    pub fn expose(mut self, name: impl Into<String>, client: Client, grants: Grants) -> Self {
        self.servers.insert(name.into(), Exposed { client, grants });
        self
    }

    /// Exposes `client` under `name`; other nodes may call only `methods`,
    /// where `tools/list` also covers the list of tools. No notifications,
    /// no session: [`Grants::methods`].
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::GatewayConfig;
    /// use conduit_mcp::Client;
    ///
    /// fn exposing(files: Client) -> GatewayConfig {
    ///     GatewayConfig::new().server_allowing("files", files, ["tools/list", "tools/call"])
    /// }
    /// ```
    pub fn server_allowing<I, S>(self, name: impl Into<String>, client: Client, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.expose(name, client, Grants::methods(methods))
    }

    /// Largest answer sent. Larger ones are refused with
    /// [`RemoteError::TooLarge`] here, on node A, instead of breaking the
    /// connection between the nodes.
    ///
    /// The default is [`DEFAULT_MAX_ANSWER_BYTES`].
    pub fn max_answer_bytes(mut self, bytes: u64) -> Self {
        self.max_answer_bytes = bytes;
        self
    }

    /// Longest a call may run here. A caller's longer timeout is lowered to
    /// it, and the call ends with [`RemoteError::Timeout`] naming it.
    ///
    /// The default is [`DEFAULT_MAX_TIMEOUT`].
    pub fn max_timeout(mut self, timeout: Duration) -> Self {
        self.max_timeout = timeout;
        self
    }

    /// Calls in flight from one node. More are refused at once with
    /// [`RemoteError::TooManyCalls`].
    ///
    /// The default is [`DEFAULT_MAX_CALLS_PER_NODE`].
    pub fn max_calls_per_node(mut self, calls: usize) -> Self {
        self.max_calls_per_node = calls;
        self
    }

    /// Calls in flight through this gateway from all nodes. More are
    /// refused at once with [`RemoteError::TooManyCalls`].
    ///
    /// The default is [`DEFAULT_MAX_CALLS`].
    pub fn max_calls(mut self, calls: usize) -> Self {
        self.max_calls = calls;
        self
    }

    /// Bytes of progress and notifications sent to one node's sinks and
    /// not yet handled there. Past it, progress and notifications for that
    /// node are dropped and logged until its sinks catch up: a node that
    /// stops reading cannot make this one queue without end.
    ///
    /// The default is [`DEFAULT_MAX_FORWARD_BYTES`].
    pub fn max_forward_bytes(mut self, bytes: u64) -> Self {
        self.max_forward_bytes = bytes;
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
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::{Gateway, GatewayConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let gateway = Gateway::start(GatewayConfig::new(), None).await?; // exposes nothing yet
    /// gateway.stop();
    /// # Ok(()) }
    /// ```
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

    /// Stops the gateway. The exposed clients keep running: they are yours.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::{Gateway, GatewayConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let gateway = Gateway::start(GatewayConfig::new(), None).await?;
    /// gateway.stop(); // the exposed clients keep running
    /// # Ok(()) }
    /// ```
    pub fn stop(&self) {
        self.actor.stop(None);
    }
}

struct GatewayActor;

/// What the actor and its tasks share.
struct Shared {
    servers: HashMap<String, Exposed>,
    peers: Mutex<Peers>,
    max_answer_bytes: u64,
    max_timeout: Duration,
}

struct GatewayState {
    shared: Arc<Shared>,
    /// Sink groups watched, with the sinks given tickets in each. A member
    /// that leaves ends its tickets.
    watched: HashMap<String, HashSet<ActorId>>,
    /// The notification forwarders, one per server that grants them.
    forwarders: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for GatewayState {
    fn drop(&mut self) {
        for f in &self.forwarders {
            f.abort();
        }
        // Calls in flight end with the gateway: their callers see the node
        // (or the gateway) go.
        lock(&self.shared.peers).cancel_all();
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
        let limits = Limits::new(
            config.max_calls_per_node,
            config.max_calls,
            MAX_TICKETS_PER_NODE,
            MAX_UNUSED_TICKETS,
            config.max_forward_bytes,
        );
        let shared = Arc::new(Shared {
            servers: config.servers,
            peers: Mutex::new(Peers::new(limits)),
            max_answer_bytes: config.max_answer_bytes,
            max_timeout: config.max_timeout,
        });
        let mut forwarders = Vec::new();
        for (name, exposed) in &shared.servers {
            ractor::pg::join(server_group(name), vec![myself.get_cell()]);
            // A server whose notifications are not granted has no
            // forwarder at all.
            if exposed.grants.allows_notifications() {
                forwarders.push(tokio::spawn(forward_notifications(
                    name.clone(),
                    exposed.client.clone(),
                    shared.clone(),
                )));
            }
            info!(server = %name, grants = ?exposed.grants, "exposed to other nodes");
        }
        Ok(GatewayState {
            shared,
            watched: HashMap::new(),
            forwarders,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<GatewayMsg>,
        msg: GatewayMsg,
        st: &mut GatewayState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            GatewayMsg::Hello(bytes, reply) => {
                let outcome = wire::decode::<Hello>(&bytes, "hello")
                    .and_then(|hello| st.hello(&myself, hello));
                let _ = reply.send(wire::answer(outcome.as_ref().map(|()| &b"{}"[..])));
            }
            GatewayMsg::Call(bytes, reply) => match st.admit(&bytes) {
                Ok(admitted) => {
                    tokio::spawn(admitted.run(reply));
                }
                Err(e) => {
                    let _ = reply.send(wire::answer(Err(&e)));
                }
            },
            GatewayMsg::Cancel(bytes) => {
                if let Ok(key) = wire::decode::<CallKey>(&bytes, "cancel") {
                    if lock(&st.shared.peers).cancel(key.ticket(), key.id()) {
                        debug!(call = key.id(), "cancelled by the caller's node");
                    }
                }
            }
            GatewayMsg::Subscribe(bytes, reply) => {
                let outcome = wire::decode::<Subscription>(&bytes, "subscription")
                    .and_then(|s| st.subscribe(&s));
                let _ = reply.send(wire::answer(outcome.as_ref().map(|()| &b"{}"[..])));
            }
            GatewayMsg::Unsubscribe(bytes) => {
                if let Ok(s) = wire::decode::<Subscription>(&bytes, "subscription") {
                    lock(&st.shared.peers).unsubscribe(s.ticket(), s.server());
                }
            }
            GatewayMsg::Ack(bytes) => {
                if let Ok(ack) = wire::decode::<Ack>(&bytes, "ack") {
                    lock(&st.shared.peers).ack(ack.ticket(), ack.bytes());
                }
            }
            GatewayMsg::Servers(reply) => {
                let mut names: Vec<&String> = st.shared.servers.keys().collect();
                names.sort();
                let _ = reply.send(wire::encode(&names));
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<GatewayMsg>,
        event: SupervisionEvent,
        st: &mut GatewayState,
    ) -> Result<(), ActorProcessingErr> {
        // A sink's stand-in leaves its group when it stops, which it does
        // when its node's connection ends: its tickets end with it.
        if let SupervisionEvent::ProcessGroupChanged(GroupChangeMessage::Leave(_, group, cells)) =
            event
        {
            let mut ended = 0;
            {
                let mut peers = lock(&st.shared.peers);
                for cell in &cells {
                    ended += peers.forget(cell.get_id());
                }
            }
            if ended > 0 {
                debug!(group = %group, tickets = ended, "a caller's sink went away: its tickets ended");
            }
            if let Some(sinks) = st.watched.get_mut(&group) {
                for cell in &cells {
                    sinks.remove(&cell.get_id());
                }
                if sinks.is_empty() {
                    st.watched.remove(&group);
                    ractor::pg::demonitor(group, myself.get_id());
                }
            }
        }
        Ok(())
    }
}

impl GatewayState {
    /// Casts a ticket to the sink that asked: the one member of its group
    /// with its pid. The hello's sender is not known, since ractor_cluster
    /// does not say, and group members and pids are whatever each node
    /// declares, so when two other nodes show a member with that pid in
    /// that group, no ticket is sent at all: the nonce would reach both.
    fn hello(&mut self, myself: &ActorRef<GatewayMsg>, hello: Hello) -> Result<(), RemoteError> {
        let (group, pid, nonce) = hello.into_parts();
        let members: Vec<ActorCell> = ractor::pg::get_members(&group)
            .into_iter()
            .filter(|c| c.get_id().pid() == pid)
            .collect();
        // A member on this node keeps the nonce in this process: it goes
        // first (a copy elsewhere cannot learn anything from it).
        let local = members.iter().find(|c| c.get_id().is_local());
        let sink = match (local, members.as_slice()) {
            (Some(here), _) => here.clone(),
            (None, [one]) => one.clone(),
            (None, []) => {
                return Err(RemoteError::NotAdmitted {
                    reason: format!("no sink with pid {pid} in `{group}` here"),
                })
            }
            (None, many) => {
                let nodes: Vec<String> = many
                    .iter()
                    .map(|c| NodeKey::of(c.get_id()).to_string())
                    .collect();
                warn!(group = %group, nodes = ?nodes, "two nodes show the same sink: no ticket sent");
                return Err(RemoteError::NotAdmitted {
                    reason: format!(
                        "{} nodes show a sink with pid {} in `{}` ({}): another node copies this caller, so no ticket was sent",
                        many.len(),
                        pid,
                        group,
                        nodes.join(", ")
                    ),
                });
            }
        };
        let (ticket, secret, window) = lock(&self.shared.peers).issue(sink.clone())?;
        let sink_id = sink.get_id();
        let node = NodeKey::of(sink_id);
        let msg = Ticket {
            nonce,
            ticket,
            secret,
            window,
        };
        let _ = ActorRef::<SinkMsg>::from(sink).cast(SinkMsg::Ticket(wire::encode(&msg)));
        debug!(%node, "ticket sent");
        let sinks = self.watched.entry(group.clone()).or_default();
        if sinks.is_empty() {
            ractor::pg::monitor(group, myself.get_cell());
        }
        sinks.insert(sink_id);
        Ok(())
    }

    /// Checks a call against the ticket, the grants and the caps.
    fn admit(&self, bytes: &[u8]) -> Result<Admitted, RemoteError> {
        let call: Call = wire::decode(bytes, "call")?;
        let Some(exposed) = self.shared.servers.get(&call.server) else {
            return Err(RemoteError::NotFound {
                server: call.server,
            });
        };
        let granted = match (call.op, &call.method) {
            (Op::Request, Some(m)) => exposed.grants.allows_method(m).then_some(m.as_str()),
            (Op::Request, None) => {
                return Err(RemoteError::Codec("a request without a method".into()))
            }
            (Op::ListTools, _) => exposed
                .grants
                .allows_method("tools/list")
                .then_some("tools/list"),
            (Op::Session, _) => exposed.grants.allows_session().then_some("session"),
        };
        if granted.is_none() {
            let method = match call.op {
                Op::Request => call.method.clone().unwrap_or_default(),
                Op::ListTools => "tools/list".into(),
                Op::Session => "session".into(),
            };
            warn!(server = %call.server, method, "call from another node refused: not granted");
            return Err(RemoteError::Refused {
                server: call.server,
                method,
            });
        }
        let (route, token) = lock(&self.shared.peers).admit(&call.ticket, call.id)?;
        let timeout = Duration::from_millis(call.timeout_ms).min(self.shared.max_timeout);
        Ok(Admitted {
            shared: self.shared.clone(),
            client: exposed.client.clone(),
            call,
            route,
            token,
            timeout,
        })
    }

    /// Subscribes a ticket's sink to a server's notifications, if granted.
    fn subscribe(&self, s: &Subscription) -> Result<(), RemoteError> {
        let Some(exposed) = self.shared.servers.get(s.server()) else {
            return Err(RemoteError::NotFound {
                server: s.server().to_owned(),
            });
        };
        if !exposed.grants.allows_notifications() {
            warn!(server = %s.server(), "subscription from another node refused: not granted");
            return Err(RemoteError::Refused {
                server: s.server().to_owned(),
                method: "notifications".into(),
            });
        }
        lock(&self.shared.peers).subscribe(s.ticket(), s.server())
    }
}

/// One admitted call, about to run.
struct Admitted {
    shared: Arc<Shared>,
    client: Client,
    call: Call,
    route: Route,
    token: CancelToken,
    timeout: Duration,
}

/// Ends a call's record however its task ends: answered, or aborted with
/// the runtime.
struct EndGuard {
    shared: Arc<Shared>,
    ticket: String,
    id: u64,
    node: NodeKey,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        lock(&self.shared.peers).end(&self.ticket, self.id, self.node);
    }
}

impl Admitted {
    async fn run(self, reply: RpcReplyPort<Vec<u8>>) {
        let _end = EndGuard {
            shared: self.shared.clone(),
            ticket: self.call.ticket.clone(),
            id: self.call.id,
            node: self.route.node(),
        };
        let max = self.shared.max_answer_bytes;
        let bytes = match self.serve().await {
            Ok(raw) if raw.len() as u64 > max => wire::answer(Err(&RemoteError::TooLarge {
                bytes: raw.len() as u64,
                limit: max,
            })),
            Ok(raw) => wire::answer(Ok(&raw)),
            Err(e) => wire::answer(Err(&e)),
        };
        // The caller may have gone (its node too): nothing to do then.
        let _ = reply.send(bytes);
    }

    async fn serve(&self) -> Result<Vec<u8>, RemoteError> {
        let after_ms = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
        let failed = |e: Error| remote_error(e, after_ms);
        let cancelled = self.token.cancelled();
        match self.call.op {
            Op::Session => {
                let session = tokio::select! {
                    r = self.client.ready(self.timeout) => r.map_err(failed)?,
                    () = cancelled => return Err(RemoteError::Cancelled),
                };
                Ok(wire::encode(&session.to_json()))
            }
            Op::ListTools => {
                let tools = tokio::select! {
                    r = tokio::time::timeout(self.timeout, self.client.list_tools()) => r
                        .map_err(|_| RemoteError::Timeout { after_ms })?
                        .map_err(failed)?,
                    () = cancelled => return Err(RemoteError::Cancelled),
                };
                serde_json::to_vec(&tools).map_err(|e| RemoteError::Codec(e.to_string()))
            }
            Op::Request => {
                let method = self.call.method.as_deref().unwrap_or_default();
                let params = match &self.call.params {
                    Some(raw) => {
                        let mut params: Value = serde_json::from_str(raw.get())
                            .map_err(|e| RemoteError::Codec(e.to_string()))?;
                        let dropped = drop_local_meta(&mut params);
                        if dropped > 0 {
                            debug!(call = self.call.id, dropped, "members of the caller's _meta dropped: they are this node's to set");
                        }
                        Some(params)
                    }
                    None => None,
                };
                let mut opts = RequestOptions::new()
                    .timeout(self.timeout)
                    .cancel_token(self.token.clone());
                let forwarder = self.call.progress.then(|| {
                    let (tx, rx) = mpsc::unbounded_channel();
                    opts = opts.clone().progress(tx);
                    tokio::spawn(forward_progress(self.call.id, self.route.clone(), rx))
                });
                let result = self.client.request_raw(method, params, opts).await;
                // Progress sent before the answer goes out first.
                if let Some(f) = forwarder {
                    let _ = f.await;
                }
                result.map(|raw| raw.as_bytes().to_vec()).map_err(failed)
            }
        }
    }
}

/// Removes from a remote caller's `params._meta` what names something of
/// this node's session with the server rather than the caller's call.
/// That is `progressToken`, by which node A's client routes progress to
/// whichever of its calls has that id, and every member under a prefix the
/// protocol reserves, with the second label `modelcontextprotocol` or
/// `mcp`: the session's version, capabilities and client info, log level,
/// subscription and task ids. The progress token is then the gateway's
/// own: the call's request id, when the caller asked for progress. Returns
/// how many were removed.
fn drop_local_meta(params: &mut Value) -> usize {
    let Some(Value::Object(meta)) = params.get_mut("_meta") else {
        return 0;
    };
    let before = meta.len();
    meta.retain(|key, _| key != "progressToken" && !reserved_meta_key(key));
    before - meta.len()
}

/// Whether a `_meta` key's prefix is one the protocol reserves: its second
/// label is `modelcontextprotocol` or `mcp`, as in
/// `io.modelcontextprotocol/` and `dev.mcp/`.
fn reserved_meta_key(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    prefix.split('.').nth(1).is_some_and(|label| {
        label.eq_ignore_ascii_case("modelcontextprotocol") || label.eq_ignore_ascii_case("mcp")
    })
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

/// Casts `bytes` as `msg` to a route's sink if its node's window has
/// room; else drops them, noting the first drop and every 1000th.
fn send_within_window(route: &Route, bytes: Vec<u8>, msg: fn(Vec<u8>) -> SinkMsg, what: &str) {
    if route.window().try_take(bytes.len() as u64) {
        let _ = ActorRef::<SinkMsg>::from(route.sink().clone()).cast(msg(bytes));
        return;
    }
    let dropped = route.window().dropped();
    if dropped == 1 || dropped % 1000 == 0 {
        warn!(node = %route.node(), dropped, window = route.window().limit(),
            "{what} dropped: the node has not handled what was sent to it");
    }
}

/// Casts each progress of call `id` to the caller's sink, until the call
/// ends. Never waits on the sink: what does not fit the window is dropped.
async fn forward_progress(id: u64, route: Route, mut rx: mpsc::UnboundedReceiver<crate::Progress>) {
    while let Some(p) = rx.recv().await {
        let env = ProgressEnvelope::new(route.secret().to_owned(), id, p.raw);
        send_within_window(&route, wire::encode(&env), SinkMsg::Progress, "progress");
    }
}

/// Casts each notification of `server` to the sinks subscribed to it,
/// until the client ends.
async fn forward_notifications(server: String, client: Client, shared: Arc<Shared>) {
    let mut notes = client.notifications();
    while let Some(n) = notes.recv().await {
        let routes = lock(&shared.peers).subscribers(&server);
        for route in routes {
            let env = NotificationEnvelope::new(
                route.secret().to_owned(),
                server.clone(),
                n.method.clone(),
                n.params.clone(),
            );
            let bytes = wire::encode(&env);
            send_within_window(&route, bytes, SinkMsg::Notification, "notification");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_remote_callers_meta_keeps_only_what_names_its_own_call() {
        let mut p = json!({ "name": "sleep", "_meta": {
            "progressToken": 7,
            "io.modelcontextprotocol/protocolVersion": "2020-01-01",
            "io.modelcontextprotocol/related-task": { "taskId": "t" },
            "dev.mcp/x": 1,
            "IO.ModelContextProtocol/logLevel": "debug",
            "com.example.mcp/trace": "kept",
            "trace": "kept",
        } });
        assert_eq!(drop_local_meta(&mut p), 5);
        assert_eq!(
            p,
            json!({ "name": "sleep", "_meta": { "com.example.mcp/trace": "kept", "trace": "kept" } })
        );
        for mut other in [json!({ "name": "x" }), json!({ "_meta": 3 }), json!([1])] {
            let before = other.clone();
            assert_eq!(drop_local_meta(&mut other), 0);
            assert_eq!(other, before);
        }
    }
}
