//! A node server built with the checks ractor_cluster leaves to you: a
//! cookie that is not empty, a listener on loopback unless told otherwise,
//! no transitive connections, and a peer name that stays with the session
//! that holds it ([`GuardedNodeServer`]).

use std::collections::HashMap;
use std::net::IpAddr;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use ractor_cluster::node::{NodeConnectionMode, NodeServerState, SessionCheckReply};
use ractor_cluster::{IncomingEncryptionMode, NodeServer, NodeServerMessage};
use tracing::{debug, warn};

/// Why a [`NodeConfig`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NodeConfigError {
    /// The cookie is empty: every node with an empty cookie would pass the
    /// handshake.
    #[error("the cookie is empty: use a long random secret shared by the cluster's nodes")]
    EmptyCookie,
}

/// How to build this node's server (ractor_cluster's listener and session
/// manager, as a [`GuardedNodeServer`]).
///
/// Unlike `NodeServer::new`, it refuses an empty cookie, listens on
/// loopback unless [`listen_addr`](Self::listen_addr) says otherwise (the
/// `NodeServer` default is every interface), never connects to the peers
/// of a peer (`NodeConnectionMode::Isolated`: with `Transitive`, a node
/// connects to every node its peers know, so one peer decides whom this
/// node talks to), and never lets a second connection take over a peer
/// name that is connected ([`GuardedNodeServer`]). The cookie never
/// appears in `Debug`.
///
/// ```no_run
/// # async fn f(cookie: String) -> Result<(), Box<dyn std::error::Error>> {
/// use conduit_mcp::cluster::NodeConfig;
/// let server = NodeConfig::new("node-a", "host-a", cookie).port(4697).build()?;
/// let (node, _) = ractor::Actor::spawn(None, server, ()).await?;
/// # let _ = node; Ok(()) }
/// ```
pub struct NodeConfig {
    name: String,
    hostname: String,
    cookie: String,
    port: u16,
    listen: IpAddr,
    encryption: Option<IncomingEncryptionMode>,
    max_inbound_frame_size: Option<u64>,
}

impl std::fmt::Debug for NodeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeConfig")
            .field("name", &self.name)
            .field("hostname", &self.hostname)
            .field("cookie", &"<redacted>")
            .field("port", &self.port)
            .field("listen", &self.listen)
            .field("tls", &self.encryption.is_some())
            .field("max_inbound_frame_size", &self.max_inbound_frame_size)
            .finish()
    }
}

impl NodeConfig {
    /// A node named `name@hostname` (what it declares to its peers), with
    /// the cluster's `cookie`. Port 0 (the system picks one), loopback, no
    /// TLS.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::NodeConfig;
    ///
    /// let config = NodeConfig::new("node-a", "host-a", "a-long-random-cookie");
    /// assert!(config.build().is_ok()); // loopback, a port the system picks, no TLS
    /// ```
    pub fn new(
        name: impl Into<String>,
        hostname: impl Into<String>,
        cookie: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            hostname: hostname.into(),
            cookie: cookie.into(),
            port: 0,
            listen: IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            encryption: None,
            max_inbound_frame_size: None,
        }
    }

    /// The port to listen on (default 0: the system picks one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The address to listen on (default: 127.0.0.1).
    pub fn listen_addr(mut self, addr: IpAddr) -> Self {
        self.listen = addr;
        self
    }

    /// Accepts connections over TLS ([`tls::acceptor`](super::tls::acceptor),
    /// or [`tls::mutual_acceptor`](super::tls::mutual_acceptor) to require
    /// client certificates).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::cluster::{tls, NodeConfig};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (cert, key) = (std::fs::read("node-a.pem")?, std::fs::read("node-a.key")?);
    /// let server = NodeConfig::new("node-a", "node-a.example", "a-long-random-cookie")
    ///     .tls(tls::acceptor(&cert, &key)?)
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn tls(mut self, acceptor: IncomingEncryptionMode) -> Self {
        self.encryption = Some(acceptor);
        self
    }

    /// The largest inbound cluster frame (default: ractor_cluster's
    /// 16 MiB).
    pub fn max_inbound_frame_size(mut self, bytes: u64) -> Self {
        self.max_inbound_frame_size = Some(bytes);
        self
    }

    /// The node server, to spawn (`ractor::Actor::spawn(None, server, ())`:
    /// its actor takes ractor_cluster's `NodeServerMessage`, as a
    /// `NodeServer`'s does).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::{NodeConfig, NodeConfigError};
    ///
    /// let refused = NodeConfig::new("node-a", "host-a", "").build().unwrap_err();
    /// assert_eq!(refused, NodeConfigError::EmptyCookie);
    /// let server = NodeConfig::new("node-a", "host-a", "a-long-random-cookie").port(4697).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<GuardedNodeServer, NodeConfigError> {
        if self.cookie.is_empty() {
            return Err(NodeConfigError::EmptyCookie);
        }
        let server = NodeServer::new(
            self.port,
            self.cookie,
            self.name,
            self.hostname,
            self.encryption,
            Some(NodeConnectionMode::Isolated),
        )
        .with_listen_addr(self.listen);
        Ok(GuardedNodeServer::new(match self.max_inbound_frame_size {
            Some(bytes) => server.with_max_inbound_frame_size(bytes),
            None => server,
        }))
    }
}

/// ractor_cluster's `NodeServer`, with a peer name kept by the session
/// that holds it: while a session under a name is alive, another
/// connection declaring that name is refused, whatever cookie or
/// certificate it has (see the [`Security model`](super#security-model)).
///
/// ractor_cluster keeps one session per peer name: when a second
/// connection under a connected name authenticates, its election keeps
/// the one with the lower connection id, which the connecting node picks,
/// so any node holding the cookie could end another node's session (and
/// every call in flight over it) by declaring its name. This actor runs
/// the `NodeServer` as it is, but its listener and sessions report to this
/// actor, which reads their reports of a peer's name (`UpdateSession`),
/// their checks of a name (`CheckSession`) and their authentication
/// (`ConnectionAuthenticated`) first. A name has one holder, the first
/// session authenticated under it, until that session ends; a later
/// session under the name is told `NotOk` before its challenge, or, when
/// it cannot be told apart from the holder there (it sent the holder's
/// connection id), stopped once it authenticates, before ractor_cluster's
/// election sees it.
///
/// Spawn it as you would a `NodeServer` (`ractor::Actor::spawn(None,
/// server, ())`); its actor takes `NodeServerMessage`, so
/// `client_connect`, `NodeServerMessage::GetSessions` and event
/// subscriptions work on it unchanged. [`NodeConfig::build`] returns one;
/// [`new`](Self::new) wraps a `NodeServer` you built yourself.
///
/// What it costs: a node whose old connection has not ended on this side
/// (it vanished without closing it, and TCP has not given up on it yet) is
/// refused under its name until it does; and two nodes that dial each
/// other at the same moment keep, on each side, the connection that
/// authenticated first there, which may not be the same one: connect each
/// pair of nodes from one side.
#[derive(Debug)]
pub struct GuardedNodeServer {
    inner: NodeServer,
}

impl GuardedNodeServer {
    /// Guards `server`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::GuardedNodeServer;
    /// use ractor_cluster::node::NodeConnectionMode;
    /// use ractor_cluster::NodeServer;
    ///
    /// let server = NodeServer::new(
    ///     4697,
    ///     "a-long-random-cookie".into(),
    ///     "node-a".into(),
    ///     "host-a".into(),
    ///     None,
    ///     Some(NodeConnectionMode::Isolated),
    /// );
    /// let guarded = GuardedNodeServer::new(server); // spawn it as the NodeServer
    /// ```
    pub fn new(server: NodeServer) -> Self {
        Self { inner: server }
    }
}

/// The state of a [`GuardedNodeServer`]'s actor: ractor_cluster's, and who
/// holds each peer name.
pub struct GuardedNodeServerState {
    inner: NodeServerState,
    names: Names,
}

impl std::fmt::Debug for GuardedNodeServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedNodeServerState")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl Actor for GuardedNodeServer {
    type Msg = NodeServerMessage;
    type State = GuardedNodeServerState;
    type Arguments = ();

    async fn pre_start(
        &self,
        myself: ActorRef<NodeServerMessage>,
        args: (),
    ) -> Result<GuardedNodeServerState, ActorProcessingErr> {
        // The listener and every session get `myself`: what they report
        // comes here first.
        let inner = self.inner.pre_start(myself, args).await?;
        Ok(GuardedNodeServerState {
            inner,
            names: Names::default(),
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<NodeServerMessage>,
        st: &mut GuardedNodeServerState,
    ) -> Result<(), ActorProcessingErr> {
        self.inner.post_start(myself, &mut st.inner).await
    }

    async fn post_stop(
        &self,
        myself: ActorRef<NodeServerMessage>,
        st: &mut GuardedNodeServerState,
    ) -> Result<(), ActorProcessingErr> {
        self.inner.post_stop(myself, &mut st.inner).await
    }

    async fn handle(
        &self,
        myself: ActorRef<NodeServerMessage>,
        msg: NodeServerMessage,
        st: &mut GuardedNodeServerState,
    ) -> Result<(), ActorProcessingErr> {
        let msg = match msg {
            NodeServerMessage::UpdateSession { actor_id, name } => {
                st.names.declared(actor_id, &name.name, name.connection_id);
                NodeServerMessage::UpdateSession { actor_id, name }
            }
            NodeServerMessage::CheckSession { peer_name, reply } => {
                if st.names.refuses(&peer_name.name, peer_name.connection_id) {
                    debug!(peer = %peer_name.name, "a connection declaring a connected node's name refused");
                    let _ = reply.send(SessionCheckReply::OtherConnectionContinues);
                    return Ok(());
                }
                NodeServerMessage::CheckSession { peer_name, reply }
            }
            NodeServerMessage::ConnectionAuthenticated(actor_id) => {
                if let Some(name) = st.names.authenticated(actor_id) {
                    // The cookie is proven, so this is worth a warning; not
                    // shown to ractor_cluster, whose election could drop the
                    // holder.
                    warn!(peer = %name, "a second session under a connected node's name authenticated: stopped");
                    if let Some(session) = ractor::registry::where_is_pid(actor_id) {
                        session.stop(Some("name_in_use".into()));
                    }
                    return Ok(());
                }
                NodeServerMessage::ConnectionAuthenticated(actor_id)
            }
            other => other,
        };
        self.inner.handle(myself, msg, &mut st.inner).await
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<NodeServerMessage>,
        event: SupervisionEvent,
        st: &mut GuardedNodeServerState,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorTerminated(cell, ..)
        | SupervisionEvent::ActorFailed(cell, ..) = &event
        {
            st.names.ended(cell.get_id());
        }
        self.inner
            .handle_supervisor_evt(myself, event, &mut st.inner)
            .await
    }
}

/// Who declared which peer name, and who holds each.
#[derive(Debug, Default)]
struct Names {
    /// Each session's declared peer name and connection id.
    declared: HashMap<ActorId, (String, u64)>,
    /// Each name's holder: the first session authenticated under it, while
    /// it lives.
    holders: HashMap<String, ActorId>,
}

impl Names {
    /// Session `actor` declared `name` (or learnt it, for a connection of
    /// this node's), with `connection_id`.
    fn declared(&mut self, actor: ActorId, name: &str, connection_id: u64) {
        self.declared
            .insert(actor, (name.to_owned(), connection_id));
    }

    /// Whether a check for `name` under `connection_id` is refused: the
    /// name has a holder, and the check cannot be the holder's own.
    fn refuses(&self, name: &str, connection_id: u64) -> bool {
        self.holders
            .get(name)
            .and_then(|holder| self.declared.get(holder))
            .is_some_and(|(_, held)| *held != connection_id)
    }

    /// Session `actor` authenticated: it holds its name if nobody else
    /// does; else the name, held by another.
    fn authenticated(&mut self, actor: ActorId) -> Option<String> {
        let (name, _) = self.declared.get(&actor)?;
        match self.holders.get(name) {
            Some(holder) if *holder != actor => Some(name.clone()),
            _ => {
                self.holders.insert(name.clone(), actor);
                None
            }
        }
    }

    /// Actor `actor` ended: a name it held is free.
    fn ended(&mut self, actor: ActorId) {
        if let Some((name, _)) = self.declared.remove(&actor) {
            if self.holders.get(&name) == Some(&actor) {
                self.holders.remove(&name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(pid: u64) -> ActorId {
        ActorId::Local(pid)
    }

    #[test]
    fn a_name_stays_with_the_first_session_authenticated_under_it() {
        let mut n = Names::default();
        // Two connections declare the same name; neither holds it yet.
        n.declared(id(1), "v@h", 10);
        n.declared(id(2), "v@h", 5);
        assert!(!n.refuses("v@h", 5) && !n.refuses("v@h", 10));
        assert_eq!(n.authenticated(id(1)), None);
        // The holder's own check passes; any other connection id is refused.
        assert!(!n.refuses("v@h", 10));
        assert!(n.refuses("v@h", 5) && n.refuses("v@h", 1));
        assert!(!n.refuses("other@h", 1));
        // One that got past the check (it authenticated anyway) is refused.
        assert_eq!(n.authenticated(id(2)).as_deref(), Some("v@h"));
        assert_eq!(n.authenticated(id(1)), None);
        // The newcomer's end frees nothing; the holder's end frees the name.
        n.ended(id(2));
        assert!(n.refuses("v@h", 5));
        n.ended(id(1));
        assert!(!n.refuses("v@h", 5));
        n.declared(id(3), "v@h", 5);
        assert_eq!(n.authenticated(id(3)), None);
        // A session that never declared a name is not judged here.
        assert_eq!(n.authenticated(id(4)), None);
    }

    #[test]
    fn an_empty_cookie_is_refused_and_a_cookie_never_shows() {
        let e = NodeConfig::new("a", "h", "").build().unwrap_err();
        assert_eq!(e, NodeConfigError::EmptyCookie);
        let c = NodeConfig::new("a", "h", "s3cr3t-cookie");
        assert!(!format!("{c:?}").contains("s3cr3t"));
        assert!(c.build().is_ok());
    }
}
