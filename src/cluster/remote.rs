//! The caller's side, on node B: finds servers exposed by gateways on
//! other nodes and calls them.
//!
//! [`RemoteServers`] owns a small local actor, the *sink* of
//! [`sink`](super::sink), in a process group of its own. Before the first
//! call to a gateway it asks that gateway for a ticket; calls,
//! cancellations and subscriptions carry it. A call is a ractor RPC to the
//! gateway with the timeout inside the message. When the node hosting the
//! gateway goes away, ractor_cluster stops the gateway's stand-in here,
//! which drops every reply port of the calls in flight: each fails at once
//! with [`RemoteError::NodeLost`], never with a timeout.
//!
//! Finding a server by name checks who claims it: a gateway on this node
//! first; else the claimants on other nodes, kept to the nodes trusted for
//! that name by [`RemoteServersConfig::trust`]. More than one claimant left
//! is an error that names them, [`FindError::Ambiguous`], never a pick.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::rpc::CallResult;
use ractor::{Actor, ActorCell, ActorId, ActorRef};
use ractor_cluster::NodeServerMessage;
use serde_json::Value;
use tokio::sync::{mpsc, OnceCell};
use tracing::debug;

use super::names::NodeNames;
use super::notifications::RemoteNotifications;
use super::server_group;
use super::sink::{Admission, Routes, Sink};
use super::token;
use super::wire::{self, Call, CallKey, GatewayMsg, Hello, Op, RemoteError, SinkMsg, Subscription};
use crate::deadline::After;
use crate::jsonrpc::RawJson;
use crate::protocol::{CallToolResult, Tool};
use crate::sync::lock;
use crate::{CancelToken, Progress};

/// How long a caller waits beyond the call's own timeout for the answer to
/// cross back. The gateway answers `Timeout` itself at the timeout.
const ANSWER_MARGIN: Duration = Duration::from_secs(5);

/// Unread notifications one subscriber may hold by default, in bytes.
pub const DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES: usize = 16 * 1024 * 1024;

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
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::cluster::RemoteOptions;
    ///
    /// # async fn example(files: conduit_mcp::cluster::RemoteServer) -> Result<(), Box<dyn std::error::Error>> {
    /// let opts = RemoteOptions::new(); // 60 s, no progress, no cancellation
    /// let result = files.call_tool("read_file", serde_json::json!({ "path": "a.txt" }), opts).await?;
    /// # Ok(()) }
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The call's timeout, applied on the node that hosts the server, which
    /// may lower it to its own maximum.
    ///
    /// The default is 60 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Asks for progress; each notification arrives on `tx`. The channel is
    /// unbounded and yours to read, as with a local request's progress.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::cluster::RemoteOptions;
    /// use conduit_mcp::Progress;
    ///
    /// # async fn example(files: conduit_mcp::cluster::RemoteServer) -> Result<(), Box<dyn std::error::Error>> {
    /// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    /// tokio::spawn(async move {
    ///     while let Some(p) = rx.recv().await {
    ///         println!("{} of {:?}", p.progress, p.total);
    ///     }
    /// });
    /// let opts = RemoteOptions::new().progress(tx);
    /// files.call_tool("index", serde_json::json!({}), opts).await?;
    /// # Ok(()) }
    /// ```
    pub fn progress(mut self, tx: mpsc::UnboundedSender<Progress>) -> Self {
        self.progress = Some(tx);
        self
    }

    /// Cancels the call, on the server too, when `token` is cancelled.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::cluster::RemoteOptions;
    /// use conduit_mcp::CancelToken;
    ///
    /// # async fn example(files: conduit_mcp::cluster::RemoteServer) -> Result<(), Box<dyn std::error::Error>> {
    /// let cancel = CancelToken::new();
    /// let opts = RemoteOptions::new().cancel_token(cancel.clone());
    /// let call = files.call_tool("index", serde_json::json!({}), opts);
    /// // Elsewhere: `cancel.cancel()` ends the call here and on node A.
    /// let result = call.await;
    /// # Ok(()) }
    /// ```
    pub fn cancel_token(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }
}

/// Why [`RemoteServers::start_with`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteStartError {
    /// The sink actor could not be spawned.
    #[error("could not start the caller's sink actor: {0}")]
    Spawn(String),
    /// Nodes are trusted for a server by name, and names are known only
    /// through the node server.
    #[error(
        "trusting nodes for `{server}` needs the node server (RemoteServersConfig::node_server)"
    )]
    TrustNeedsNodeServer {
        /// The server with a trust list.
        server: String,
    },
    /// The node server could not be followed.
    #[error("could not follow the node server's sessions: {0}")]
    NodeServer(String),
}

/// Why [`RemoteServers::find`] found no server to call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FindError {
    /// No gateway known here exposes the name.
    #[error("no gateway exposes `{server}`")]
    NotFound {
        /// The name asked for.
        server: String,
    },
    /// More than one node, or more than one local gateway, claims the
    /// name, and nothing says which one to call.
    #[error("more than one gateway claims `{server}`: {}", nodes.join(", "))]
    Ambiguous {
        /// The name asked for.
        server: String,
        /// The claimants: node names, `node #<id>` where the name is not
        /// known, `this node` for local gateways.
        nodes: Vec<String>,
    },
    /// Only nodes not trusted for the name claim it.
    #[error("`{server}` is claimed only by nodes not trusted for it: {}", nodes.join(", "))]
    Untrusted {
        /// The name asked for.
        server: String,
        /// The claimants.
        nodes: Vec<String>,
    },
}

/// How a [`RemoteServers`] finds servers: which nodes may serve which
/// names. Built with [`new`](Self::new) and its setters, started with
/// [`RemoteServers::start_with`].
///
/// ```no_run
/// # async fn f(node: ractor::ActorRef<ractor_cluster::NodeServerMessage>) -> Result<(), Box<dyn std::error::Error>> {
/// use conduit_mcp::cluster::{RemoteServers, RemoteServersConfig};
/// let config = RemoteServersConfig::new()
///     .node_server(node)
///     // `files` is called only on node-a (as node-a declared itself).
///     .trust("files", ["node-a@host-a"]);
/// let servers = RemoteServers::start_with(config).await?;
/// let files = servers.wait_for("files", std::time::Duration::from_secs(10)).await?;
/// # let _ = files; Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct RemoteServersConfig {
    node_server: Option<ActorRef<NodeServerMessage>>,
    trust: HashMap<String, HashSet<String>>,
    max_queued_notification_bytes: Option<usize>,
}

impl RemoteServersConfig {
    /// No node server, no trust list, the default notification bound: a
    /// local gateway, else a single remote claimant, is called.
    pub fn new() -> Self {
        Self::default()
    }

    /// This node's `NodeServer`: names the nodes that claim a server, as
    /// [`trust`](Self::trust) needs. Without it, a remote claimant is
    /// `node #<id>`.
    ///
    /// The default is none.
    pub fn node_server(mut self, server: ActorRef<NodeServerMessage>) -> Self {
        self.node_server = Some(server);
        self
    }

    /// `server` is called only on `nodes`, or on a gateway of this node.
    /// Node names are as the nodes declare them: `name@hostname`. Without a
    /// trust list for a name, any single claimant is called.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::cluster::{RemoteServers, RemoteServersConfig};
    ///
    /// # async fn example(node: ractor::ActorRef<ractor_cluster::NodeServerMessage>) -> Result<(), Box<dyn std::error::Error>> {
    /// let config = RemoteServersConfig::new()
    ///     .node_server(node)
    ///     .trust("files", ["node-a@host-a", "node-c@host-c"]);
    /// let servers = RemoteServers::start_with(config).await?;
    /// # let _ = servers; Ok(()) }
    /// ```
    pub fn trust<I, S>(mut self, server: impl Into<String>, nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.trust
            .entry(server.into())
            .or_default()
            .extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Unread notifications one subscriber may hold. Past it, new ones are
    /// dropped and counted by [`RemoteNotifications::dropped`].
    ///
    /// The default is [`DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES`].
    pub fn max_queued_notification_bytes(mut self, bytes: usize) -> Self {
        self.max_queued_notification_bytes = Some(bytes);
        self
    }
}

impl RemoteServers {
    /// Starts the sink as `config` says. The node must be connected to the
    /// other nodes with ractor_cluster's `NodeServer` and `client_connect`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::{RemoteServers, RemoteServersConfig, RemoteStartError};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// // A trust list names nodes: it needs the node server.
    /// let config = RemoteServersConfig::new().trust("files", ["node-a@host-a"]);
    /// let refused = RemoteServers::start_with(config).await;
    /// assert!(matches!(refused, Err(RemoteStartError::TrustNeedsNodeServer { .. })));
    /// # }
    /// ```
    pub async fn start_with(
        config: RemoteServersConfig,
    ) -> Result<RemoteServers, RemoteStartError> {
        if config.node_server.is_none() {
            if let Some(server) = config.trust.keys().next() {
                return Err(RemoteStartError::TrustNeedsNodeServer {
                    server: server.clone(),
                });
            }
        }
        static SINKS: AtomicU64 = AtomicU64::new(0);
        let group = format!(
            "conduit-mcp/sink/{}/{}",
            std::process::id(),
            SINKS.fetch_add(1, Ordering::Relaxed)
        );
        let names = match config.node_server {
            Some(server) => Some(
                NodeNames::follow(server, group.clone())
                    .await
                    .map_err(RemoteStartError::NodeServer)?,
            ),
            None => None,
        };
        let routes = Arc::new(Routes::default());
        let spawned = Actor::spawn(None, Sink, (group.clone(), routes.clone())).await;
        let sink = match spawned {
            Ok((sink, _)) => sink,
            Err(e) => {
                if let Some(n) = &names {
                    n.stop();
                }
                return Err(RemoteStartError::Spawn(e.to_string()));
            }
        };
        Ok(RemoteServers {
            inner: Arc::new(Inner {
                sink,
                group,
                routes,
                next_id: AtomicU64::new(1),
                names,
                trust: config.trust,
                max_queued_notification_bytes: config
                    .max_queued_notification_bytes
                    .unwrap_or(DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES),
                admissions: Mutex::default(),
            }),
        })
    }
}

/// A ticket at one gateway, fetched once.
type Admitted = Arc<OnceCell<Admission>>;

struct Inner {
    sink: ActorRef<SinkMsg>,
    /// The sink's process group.
    group: String,
    routes: Arc<Routes>,
    next_id: AtomicU64,
    names: Option<NodeNames>,
    trust: HashMap<String, HashSet<String>>,
    max_queued_notification_bytes: usize,
    /// Tickets, by gateway.
    admissions: Mutex<HashMap<ActorId, (ActorCell, Admitted)>>,
}

/// Node B's view of the servers exposed by gateways on other nodes.
/// Cheap to clone; [`stop`](Self::stop) ends its sink.
#[derive(Clone)]
pub struct RemoteServers {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RemoteServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteServers")
            .field("sink", &self.inner.group)
            .field("trust", &self.inner.trust)
            .finish()
    }
}

/// A claimant of a name: its gateway and the label of its node.
struct Claimant {
    cell: ActorCell,
    node: String,
    /// The node's declared name, if known.
    name: Option<String>,
}

impl RemoteServers {
    /// Starts the sink with no node server and no trust list: a local
    /// gateway, else a single remote claimant, is called. Use
    /// [`start_with`](Self::start_with) for more.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::{FindError, RemoteServers};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let servers = RemoteServers::start().await?;
    /// assert!(matches!(servers.find("files"), Err(FindError::NotFound { .. }))); // no gateway yet
    /// servers.stop();
    /// # Ok(()) }
    /// ```
    pub async fn start() -> Result<RemoteServers, RemoteStartError> {
        Self::start_with(RemoteServersConfig::new()).await
    }

    /// The server exposed under `name`, if exactly one gateway may serve
    /// it now: a gateway on this node if there is one, else the one
    /// claimant on another node that is trusted for `name`. Process groups
    /// sync shortly after nodes connect: see [`wait_for`](Self::wait_for).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::cluster::FindError;
    ///
    /// # fn example(servers: conduit_mcp::cluster::RemoteServers) {
    /// match servers.find("files") {
    ///     Ok(files) => println!("`files` is served by {}", files.node()),
    ///     Err(FindError::Ambiguous { nodes, .. }) => eprintln!("claimed by {nodes:?}: trust one"),
    ///     Err(e) => eprintln!("{e}"),
    /// }
    /// # }
    /// ```
    pub fn find(&self, name: &str) -> Result<RemoteServer, FindError> {
        let members = ractor::pg::get_members(&server_group(name));
        let (local, remote): (Vec<ActorCell>, Vec<ActorCell>) =
            members.into_iter().partition(|c| c.get_id().is_local());
        let claimants: Vec<Claimant> = if local.is_empty() {
            remote.into_iter().map(|c| self.claimant(c)).collect()
        } else {
            local
                .into_iter()
                .map(|cell| Claimant {
                    cell,
                    node: "this node".into(),
                    name: None,
                })
                .collect()
        };
        let is_local = claimants
            .first()
            .is_some_and(|c| c.cell.get_id().is_local());
        let (trusted, untrusted): (Vec<Claimant>, Vec<Claimant>) =
            match (self.inner.trust.get(name), is_local) {
                (Some(nodes), false) => claimants
                    .into_iter()
                    .partition(|c| c.name.as_ref().is_some_and(|n| nodes.contains(n))),
                _ => (claimants, Vec::new()),
            };
        let labels = |cs: &[Claimant]| cs.iter().map(|c| c.node.clone()).collect();
        match trusted.as_slice() {
            [one] => Ok(RemoteServer {
                name: name.to_owned(),
                node: one.node.clone(),
                gateway: ActorRef::from(one.cell.clone()),
                servers: self.clone(),
            }),
            [] if untrusted.is_empty() => Err(FindError::NotFound {
                server: name.to_owned(),
            }),
            [] => Err(FindError::Untrusted {
                server: name.to_owned(),
                nodes: labels(&untrusted),
            }),
            many => Err(FindError::Ambiguous {
                server: name.to_owned(),
                nodes: labels(many),
            }),
        }
    }

    fn claimant(&self, cell: ActorCell) -> Claimant {
        let node_id = match cell.get_id() {
            ActorId::Remote { node_id, .. } => node_id,
            ActorId::Local(_) => 0,
        };
        let name = self.inner.names.as_ref().and_then(|n| n.name(node_id));
        let node = name.clone().unwrap_or_else(|| format!("node #{node_id}"));
        Claimant { cell, node, name }
    }

    /// Waits up to `timeout`, which may be [`Duration::MAX`], for
    /// [`find`](Self::find) to succeed. An ambiguous name fails at once. A
    /// name claimed only by untrusted nodes, or by none, is waited for,
    /// since a trusted gateway may still appear.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// # async fn example(servers: conduit_mcp::cluster::RemoteServers) -> Result<(), Box<dyn std::error::Error>> {
    /// // Process groups sync shortly after the nodes connect.
    /// let files = servers.wait_for("files", Duration::from_secs(10)).await?;
    /// let tools = files.list_tools(Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait_for(&self, name: &str, timeout: Duration) -> Result<RemoteServer, FindError> {
        let deadline = tokio::time::Instant::now().after(timeout);
        loop {
            let mut found = self.find(name);
            if let (Err(FindError::Ambiguous { .. }), Some(names)) = (&found, &self.inner.names) {
                // Name the claimants whose names were not known yet.
                names.refresh().await;
                found = self.find(name);
            }
            match &found {
                Ok(_) | Err(FindError::Ambiguous { .. }) => return found,
                Err(_) if tokio::time::Instant::now() >= deadline => return found,
                // A claimant's name may not be known yet.
                Err(FindError::Untrusted { .. }) => {
                    if let Some(names) = &self.inner.names {
                        names.refresh().await;
                    }
                }
                Err(_) => {}
            }
            // Process groups have no change feed here: a short poll.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Messages the sink dropped because they did not come from a gateway
    /// this node holds a ticket from: forged ones, progress for a call that
    /// went to another gateway, and tickets for a hello that had already
    /// given up.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::RemoteServers;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let servers = RemoteServers::start().await?;
    /// assert_eq!(servers.rejected(), 0); // nothing forged has arrived
    /// # servers.stop();
    /// # Ok(()) }
    /// ```
    pub fn rejected(&self) -> u64 {
        self.inner.routes.rejected()
    }

    /// Stops the sink: progress and notifications stop arriving, and the
    /// tickets end.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::RemoteServers;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let servers = RemoteServers::start().await?;
    /// servers.stop(); // no more progress or notifications; the tickets end
    /// # Ok(()) }
    /// ```
    pub fn stop(&self) {
        if let Some(names) = &self.inner.names {
            names.stop();
        }
        self.inner.sink.stop(None);
    }

    /// This node's ticket at `gateway`, asked for if there is none yet.
    async fn admission(
        &self,
        gateway: &ActorRef<GatewayMsg>,
        deadline: tokio::time::Instant,
    ) -> Result<Admission, RemoteError> {
        let cell = {
            let mut all = lock(&self.inner.admissions);
            // Gateways that stopped hold no ticket of ours any more.
            all.retain(|_, (g, _)| g.get_status() < ractor::ActorStatus::Stopping);
            all.entry(gateway.get_id())
                .or_insert_with(|| (gateway.get_cell(), Admitted::default()))
                .1
                .clone()
        };
        cell.get_or_try_init(|| async {
            // A hello is idempotent (a fresh nonce each time): its reply
            // dropped in transit, as seen once in CI under load while the
            // nodes exchanged group changes, is asked once more before the
            // node counts as lost.
            match self.hello(gateway, deadline).await {
                Err(RemoteError::NodeLost { .. }) => {
                    debug!(gateway = ?gateway.get_id(), "hello: no reply; asking once more");
                    self.hello(gateway, deadline).await
                }
                other => other,
            }
        })
        .await
        .cloned()
    }

    /// Forgets the ticket at `gateway`, which does not know it.
    fn drop_admission(&self, gateway: &ActorRef<GatewayMsg>) {
        lock(&self.inner.admissions).remove(&gateway.get_id());
    }

    /// Asks `gateway` for a ticket; it arrives at the sink.
    async fn hello(
        &self,
        gateway: &ActorRef<GatewayMsg>,
        deadline: tokio::time::Instant,
    ) -> Result<Admission, RemoteError> {
        let routes = &self.inner.routes;
        let nonce = token::fresh()?;
        let ticket = routes.expect_ticket(&nonce, gateway);
        struct Forget<'a>(&'a Routes, &'a str);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                self.0.forget_nonce(self.1);
            }
        }
        let _forget = Forget(routes, &nonce);
        let hello = Hello::new(
            self.inner.group.clone(),
            self.inner.sink.get_id().pid(),
            nonce.clone(),
        );
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let answer = gateway
            .call(|r| GatewayMsg::Hello(wire::encode(&hello), r), Some(left))
            .await;
        match answer {
            Ok(CallResult::Success(bytes)) => {
                wire::read_answer(bytes)?;
            }
            Ok(CallResult::Timeout) => {
                return Err(RemoteError::Timeout {
                    after_ms: millis(left),
                })
            }
            Ok(CallResult::SenderError) | Err(_) => {
                return Err(RemoteError::NodeLost {
                    server: "the gateway".into(),
                })
            }
        }
        match tokio::time::timeout_at(deadline, ticket).await {
            Ok(Ok(admission)) => Ok(admission),
            _ => Err(RemoteError::NotAdmitted {
                reason: "the gateway's ticket did not arrive in time".into(),
            }),
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A server on another node, found by name.
#[derive(Debug, Clone)]
pub struct RemoteServer {
    name: String,
    node: String,
    gateway: ActorRef<GatewayMsg>,
    servers: RemoteServers,
}

impl RemoteServer {
    /// The name it is exposed under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The node serving it: its declared name, `node #<id>` if the name is
    /// not known, or `this node`.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Sends any request; the result comes back as the server's own bytes.
    ///
    /// Node A drops `progressToken` and the members under prefixes the
    /// protocol reserves from `params._meta`, since they are its session's
    /// to set, as the [`Security model`](super#security-model) says. Ask
    /// for progress with [`RemoteOptions::progress`].
    ///
    /// Cancel safety: dropping the future cancels the call on node A.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::cluster::RemoteOptions;
    ///
    /// # async fn example(files: conduit_mcp::cluster::RemoteServer) -> Result<(), Box<dyn std::error::Error>> {
    /// let raw = files.request("prompts/list", None, RemoteOptions::new()).await?;
    /// let prompts: serde_json::Value = raw.parse()?;
    /// # Ok(()) }
    /// ```
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RemoteOptions,
    ) -> Result<RawJson, RemoteError> {
        self.call(Op::Request, Some(method), params, opts)
            .await
            .map(RawJson::from_vec)
    }

    /// Calls a tool. A tool that fails is an `Ok` with `is_error`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::cluster::RemoteOptions;
    /// use std::time::Duration;
    ///
    /// # async fn example(files: conduit_mcp::cluster::RemoteServer) -> Result<(), Box<dyn std::error::Error>> {
    /// let opts = RemoteOptions::new().timeout(Duration::from_secs(10));
    /// let result = files.call_tool("read_file", serde_json::json!({ "path": "a.txt" }), opts).await?;
    /// if !result.is_error() {
    ///     println!("{}", result.joined_text());
    /// }
    /// # Ok(()) }
    /// ```
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

    /// Every tool of the server. It needs the `tools/list` grant.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(files: conduit_mcp::cluster::RemoteServer) -> Result<(), Box<dyn std::error::Error>> {
    /// for tool in files.list_tools(std::time::Duration::from_secs(5)).await? {
    ///     println!("{}", tool.name);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_tools(&self, timeout: Duration) -> Result<Vec<Tool>, RemoteError> {
        let opts = RemoteOptions::new().timeout(timeout);
        let bytes = self.call(Op::ListTools, None, None, opts).await?;
        serde_json::from_slice(&bytes).map_err(|e| RemoteError::Codec(e.to_string()))
    }

    /// The server's session as JSON: era, protocol version, server info,
    /// capabilities, instructions, pid. It needs the `session` grant.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(files: conduit_mcp::cluster::RemoteServer) -> Result<(), Box<dyn std::error::Error>> {
    /// let session = files.session(std::time::Duration::from_secs(5)).await?;
    /// println!("{} on {}", session["serverInfo"]["name"], files.node());
    /// # Ok(()) }
    /// ```
    pub async fn session(&self, timeout: Duration) -> Result<Value, RemoteError> {
        let opts = RemoteOptions::new().timeout(timeout);
        let bytes = self.call(Op::Session, None, None, opts).await?;
        serde_json::from_slice(&bytes).map_err(|e| RemoteError::Codec(e.to_string()))
    }

    /// Subscribes to the server's notifications from now on. It needs the
    /// `notifications` grant, else it fails with [`RemoteError::Refused`].
    /// Returns once the gateway has taken the subscription.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(files: conduit_mcp::cluster::RemoteServer) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut notifications = files.notifications(std::time::Duration::from_secs(5)).await?;
    /// if let Some(n) = notifications.recv().await {
    ///     println!("{}", n.method);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn notifications(
        &self,
        timeout: Duration,
    ) -> Result<RemoteNotifications, RemoteError> {
        let s = &self.servers;
        let deadline = tokio::time::Instant::now().after(timeout);
        let admission = s.admission(&self.gateway, deadline).await?;
        // Registered before asking: the first notification may come before
        // the answer.
        let rx = s.inner.routes.subscribe(
            admission.secret(),
            &self.name,
            s.inner.max_queued_notification_bytes,
        );
        let sub = Subscription::new(admission.ticket().to_owned(), self.name.clone());
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let answer = self
            .gateway
            .call(|r| GatewayMsg::Subscribe(wire::encode(&sub), r), Some(left))
            .await;
        let outcome = match answer {
            Ok(CallResult::Success(bytes)) => wire::read_answer(bytes).map(|_| ()),
            Ok(CallResult::Timeout) => Err(RemoteError::Timeout {
                after_ms: millis(left),
            }),
            Ok(CallResult::SenderError) | Err(_) => Err(RemoteError::NodeLost {
                server: self.name.clone(),
            }),
        };
        match outcome {
            Ok(()) => Ok(rx),
            Err(e) => {
                drop(rx);
                s.inner.routes.prune(admission.secret(), &self.name);
                if matches!(e, RemoteError::NotAdmitted { .. }) {
                    s.drop_admission(&self.gateway);
                }
                Err(e)
            }
        }
    }

    async fn call(
        &self,
        op: Op,
        method: Option<&str>,
        params: Option<Value>,
        opts: RemoteOptions,
    ) -> Result<Vec<u8>, RemoteError> {
        let params = params
            .map(|p| serde_json::value::to_raw_value(&p))
            .transpose()
            .map_err(|e| RemoteError::Codec(e.to_string()))?;
        let work = async {
            let deadline =
                tokio::time::Instant::now().after(opts.timeout.saturating_add(ANSWER_MARGIN));
            let mut retried = false;
            loop {
                let r = self
                    .call_once(op, method, params.clone(), &opts, deadline)
                    .await;
                // A ticket the gateway no longer knows (it dropped it, or
                // restarted): ask for a new one, once.
                match r {
                    Err(RemoteError::NotAdmitted { .. }) if !retried => {
                        self.servers.drop_admission(&self.gateway);
                        retried = true;
                    }
                    other => return other,
                }
            }
        };
        let cancelled = async {
            match &opts.cancel {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = work => r,
            _ = cancelled => Err(RemoteError::Cancelled),
        }
    }

    async fn call_once(
        &self,
        op: Op,
        method: Option<&str>,
        params: Option<Box<serde_json::value::RawValue>>,
        opts: &RemoteOptions,
        deadline: tokio::time::Instant,
    ) -> Result<Vec<u8>, RemoteError> {
        let s = &self.servers;
        let admission = s.admission(&self.gateway, deadline).await?;
        let id = s.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let env = Call {
            ticket: admission.ticket().to_owned(),
            id,
            server: self.name.clone(),
            op,
            method: method.map(str::to_owned),
            params,
            timeout_ms: millis(opts.timeout),
            progress: opts.progress.is_some(),
        };
        let mut guard = InFlight {
            gateway: &self.gateway,
            routes: &s.inner.routes,
            key: Some(CallKey::new(admission.ticket().to_owned(), id)),
        };
        if let Some(tx) = opts.progress.clone() {
            s.inner.routes.route_progress(id, admission.secret(), tx);
        }
        let wait = deadline.saturating_duration_since(tokio::time::Instant::now());
        let outcome = self
            .gateway
            .call(
                |reply| GatewayMsg::Call(wire::encode(&env), reply),
                Some(wait),
            )
            .await;
        guard.key = None;
        s.inner.routes.unroute_progress(id);
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
/// is abandoned before its answer by a timeout, a cancel or a dropped
/// future.
struct InFlight<'a> {
    gateway: &'a ActorRef<GatewayMsg>,
    routes: &'a Routes,
    /// Still in flight.
    key: Option<CallKey>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.routes.unroute_progress(key.id());
            let _ = self.gateway.cast(GatewayMsg::Cancel(wire::encode(&key)));
        }
    }
}
