//! A node server built with the checks ractor_cluster leaves to you: a
//! cookie that is not empty, a listener on loopback unless told otherwise,
//! no transitive connections, and a peer name that stays with the session
//! that holds it while its peer shows it is alive: [`GuardedNodeServer`].

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use ractor_cluster::node::{NodeConnectionMode, NodeServerState, SessionCheckReply};
use ractor_cluster::{IncomingEncryptionMode, NodeServer, NodeServerMessage};
use tracing::{debug, warn};

use super::heard::Hearing;

/// Default [`NodeConfig::silence_limit`]: 15 s.
pub const DEFAULT_SILENCE_LIMIT: Duration = Duration::from_secs(15);

/// The shortest [`NodeConfig::silence_limit`]: twice the longest time
/// between two of ractor_cluster's pings, 5 s, so that a node that is
/// alive is never taken for silent.
pub const MIN_SILENCE_LIMIT: Duration = Duration::from_secs(10);

/// Why a [`NodeConfig`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NodeConfigError {
    /// The cookie is empty: every node with an empty cookie would pass the
    /// handshake.
    #[error("the cookie is empty: use a long random secret shared by the cluster's nodes")]
    EmptyCookie,
    /// [`NodeConfig::silence_limit`] is shorter than [`MIN_SILENCE_LIMIT`]:
    /// a node that is alive could be taken for silent between two pings.
    #[error("the silence limit ({limit:?}) is shorter than {min:?}: a node that is alive could lose its name between two pings")]
    SilenceLimitTooShort {
        /// The limit asked for.
        limit: Duration,
        /// The shortest allowed.
        min: Duration,
    },
}

/// How to build this node's server: ractor_cluster's listener and session
/// manager, as a [`GuardedNodeServer`].
///
/// Unlike `NodeServer::new`, it refuses an empty cookie, and listens on
/// loopback unless [`listen_addr`](Self::listen_addr) says otherwise; the
/// `NodeServer` default is every interface. It never connects to the peers
/// of a peer: it uses `NodeConnectionMode::Isolated`, since with
/// `Transitive` a node connects to every node its peers know, so one peer
/// decides whom this node talks to. As a [`GuardedNodeServer`], it never
/// lets a second connection take over a peer name whose connection is
/// alive. The cookie never appears in `Debug`.
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
    silence_limit: Duration,
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
            .field("silence_limit", &self.silence_limit)
            .finish()
    }
}

impl NodeConfig {
    /// A node named `name@hostname`, the name it declares to its peers,
    /// with the cluster's `cookie`. It listens on loopback, on a port the
    /// system picks, without TLS.
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
            silence_limit: DEFAULT_SILENCE_LIMIT,
        }
    }

    /// The port to listen on.
    ///
    /// The default is 0: the system picks one.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The address to listen on.
    ///
    /// The default is 127.0.0.1.
    pub fn listen_addr(mut self, addr: IpAddr) -> Self {
        self.listen = addr;
        self
    }

    /// Accepts connections over TLS, with
    /// [`tls::acceptor`](super::tls::acceptor), or with
    /// [`tls::mutual_acceptor`](super::tls::mutual_acceptor) to require
    /// client certificates.
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

    /// The largest inbound cluster frame.
    ///
    /// The default is ractor_cluster's, 16 MiB.
    pub fn max_inbound_frame_size(mut self, bytes: u64) -> Self {
        self.max_inbound_frame_size = Some(bytes);
        self
    }

    /// How long a connected node may send nothing before a new connection
    /// under its name takes the name over. ractor_cluster's pings and their
    /// answers arrive every 1 to 5 s from a node that is alive, so a silent
    /// one hangs or is cut off. A node restarted after a hang or a silent
    /// network loss gets its name back on its first try after this long.
    ///
    /// The default is 15 s; the least is [`MIN_SILENCE_LIMIT`].
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::{NodeConfig, NodeConfigError};
    /// use std::time::Duration;
    ///
    /// let config = NodeConfig::new("node-a", "host-a", "a-long-random-cookie");
    /// assert!(config.silence_limit(Duration::from_secs(30)).build().is_ok());
    /// let config = NodeConfig::new("node-a", "host-a", "a-long-random-cookie");
    /// let refused = config.silence_limit(Duration::from_secs(2)).build().unwrap_err();
    /// assert!(matches!(refused, NodeConfigError::SilenceLimitTooShort { .. }));
    /// ```
    pub fn silence_limit(mut self, limit: Duration) -> Self {
        self.silence_limit = limit;
        self
    }

    /// The node server, to spawn with `ractor::Actor::spawn(None, server,
    /// ())`. Its actor takes ractor_cluster's `NodeServerMessage`, as a
    /// `NodeServer`'s does.
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
        if self.silence_limit < MIN_SILENCE_LIMIT {
            return Err(NodeConfigError::SilenceLimitTooShort {
                limit: self.silence_limit,
                min: MIN_SILENCE_LIMIT,
            });
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
        let server = match self.max_inbound_frame_size {
            Some(bytes) => server.with_max_inbound_frame_size(bytes),
            None => server,
        };
        Ok(GuardedNodeServer {
            inner: server,
            silence_limit: self.silence_limit,
        })
    }
}

/// ractor_cluster's `NodeServer`, with a peer name kept by the session
/// that holds it. While a session under a name is alive, and its peer
/// shows it is by sending something within the
/// [silence limit](NodeConfig::silence_limit), another connection
/// declaring that name is refused, whatever cookie or certificate it has.
/// See the [`Security model`](super#security-model).
///
/// ractor_cluster keeps one session per peer name: when a second
/// connection under a connected name authenticates, its election keeps
/// the one with the lower connection id, which the connecting node picks,
/// so any node holding the cookie could end another node's session, and
/// every call in flight over it, by declaring its name. This actor runs
/// the `NodeServer` as it is, but its listener and sessions report to this
/// actor first. It reads their reports of a peer's name, `UpdateSession`,
/// their checks of a name, `CheckSession`, and their authentication,
/// `ConnectionAuthenticated`. A name has one holder, the first session
/// authenticated under it, until that session ends. A later session under
/// the name is told `NotOk` before its challenge. When it cannot be told
/// apart from the holder there, because it sent the holder's connection
/// id, it is stopped once it authenticates, before ractor_cluster's
/// election sees it.
///
/// ractor_cluster sends pings but never requires an answer, and a node
/// that hangs, or whose network goes silent, leaves its connection open
/// here until TCP gives up. That takes about 15 minutes with no
/// acknowledgement at all, and never happens while its kernel still
/// acknowledges. So the holder must
/// show it is alive: every connection's reads are timed, and a holder that
/// has sent nothing for the silence limit is stopped when another
/// connection claims its name; the newcomer's check and authentication go
/// on once the old session has ended.
///
/// Spawn it as you would a `NodeServer`, with `ractor::Actor::spawn(None,
/// server, ())`. Its actor takes `NodeServerMessage`, so
/// `client_connect`, `NodeServerMessage::GetSessions` and event
/// subscriptions work on it unchanged. [`NodeConfig::build`] returns one;
/// [`new`](Self::new) wraps a `NodeServer` you built yourself.
///
/// What it costs: a node restarted after its old connection went silent
/// is refused under its name until that connection has been silent for
/// the silence limit; a node holding the cookie can take the name of a
/// node that has been silent that long; connections are read through one
/// more indirection that times their reads, and ractor_cluster's own logs
/// name them by their address only in `GetSessions`; and two nodes that
/// dial each other at the same moment keep, on each side, the connection
/// that authenticated first there, which may not be the same one: connect
/// each pair of nodes from one side.
#[derive(Debug)]
pub struct GuardedNodeServer {
    inner: NodeServer,
    silence_limit: Duration,
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
        Self {
            inner: server,
            silence_limit: DEFAULT_SILENCE_LIMIT,
        }
    }
}

/// The state of a [`GuardedNodeServer`]'s actor: ractor_cluster's, and who
/// holds each peer name.
pub struct GuardedNodeServerState {
    inner: NodeServerState,
    names: Names,
    /// When each session's peer last sent something.
    heard: Hearing,
    /// Holders stopped for their silence, until they end: the messages
    /// about their name held back until then.
    ending: HashMap<ActorId, Vec<NodeServerMessage>>,
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
        let mut inner = self.inner.pre_start(myself.clone(), args).await?;
        let heard = Hearing::default();
        let subscribe = NodeServerMessage::SubscribeToEvents {
            id: "conduit-mcp/name-guard".into(),
            subscription: heard.subscription(),
        };
        self.inner.handle(myself, subscribe, &mut inner).await?;
        Ok(GuardedNodeServerState {
            inner,
            names: Names::default(),
            heard,
            ending: HashMap::new(),
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
            NodeServerMessage::ConnectionOpened { stream, is_server } => {
                let stream = st.heard.timed(*stream);
                NodeServerMessage::ConnectionOpenedExternal { stream, is_server }
            }
            NodeServerMessage::ConnectionOpenedExternal { stream, is_server } => {
                let stream = st.heard.timed_external(stream);
                NodeServerMessage::ConnectionOpenedExternal { stream, is_server }
            }
            NodeServerMessage::UpdateSession { actor_id, name } => {
                st.names.declared(actor_id, &name.name, name.connection_id);
                NodeServerMessage::UpdateSession { actor_id, name }
            }
            NodeServerMessage::CheckSession { peer_name, reply } => {
                let alive = alive_within(&st.heard, self.silence_limit);
                match st
                    .names
                    .check(&peer_name.name, peer_name.connection_id, alive)
                {
                    Check::Refused => {
                        debug!(peer = %peer_name.name, "a connection declaring a connected node's name refused");
                        let _ = reply.send(SessionCheckReply::OtherConnectionContinues);
                        return Ok(());
                    }
                    Check::Silent(holder) => st.stop_silent(holder, &peer_name.name),
                    Check::Free => {}
                }
                let msg = NodeServerMessage::CheckSession { peer_name, reply };
                match st.ending_for(&msg) {
                    Some(ending) => return st.hold_back(ending, msg),
                    None => msg,
                }
            }
            NodeServerMessage::ConnectionAuthenticated(actor_id) => {
                let alive = alive_within(&st.heard, self.silence_limit);
                let name = st.names.name_of(actor_id).map(str::to_owned);
                let name = name.unwrap_or_default();
                match st.names.authenticated(actor_id, alive) {
                    Check::Refused => {
                        // The cookie is proven, so this is worth a warning;
                        // not shown to ractor_cluster, whose election could
                        // drop the holder.
                        warn!(peer = %name, "a second session under a connected node's name authenticated: stopped");
                        if let Some(session) = ractor::registry::where_is_pid(actor_id) {
                            session.stop(Some("name_in_use".into()));
                        }
                        return Ok(());
                    }
                    Check::Silent(holder) => st.stop_silent(holder, &name),
                    Check::Free => {}
                }
                let msg = NodeServerMessage::ConnectionAuthenticated(actor_id);
                match st.ending_for(&msg) {
                    Some(ending) => return st.hold_back(ending, msg),
                    None => msg,
                }
            }
            other => other,
        };
        let opened = matches!(msg, NodeServerMessage::ConnectionOpenedExternal { .. });
        let r = self.inner.handle(myself, msg, &mut st.inner).await;
        if opened {
            st.heard.opened();
        }
        r
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<NodeServerMessage>,
        event: SupervisionEvent,
        st: &mut GuardedNodeServerState,
    ) -> Result<(), ActorProcessingErr> {
        let ended = match &event {
            SupervisionEvent::ActorTerminated(cell, ..)
            | SupervisionEvent::ActorFailed(cell, ..) => Some(cell.get_id()),
            _ => None,
        };
        if let Some(id) = ended {
            st.names.ended(id);
            st.heard.ended(id);
        }
        self.inner
            .handle_supervisor_evt(myself.clone(), event, &mut st.inner)
            .await?;
        // A silent holder is gone: what waited for it goes on.
        for msg in ended
            .and_then(|id| st.ending.remove(&id))
            .into_iter()
            .flatten()
        {
            self.inner
                .handle(myself.clone(), msg, &mut st.inner)
                .await?;
        }
        Ok(())
    }
}

/// The most messages held back for one silent holder's end: a check and
/// an authentication per newcomer. Past it, a check is refused.
const MAX_HELD_BACK: usize = 8;

/// Whether a session's peer has sent something within `limit`. A session
/// whose reads are not timed counts as alive.
fn alive_within(heard: &Hearing, limit: Duration) -> impl Fn(ActorId) -> bool + '_ {
    move |session| heard.silent_for(session).is_none_or(|d| d < limit)
}

impl GuardedNodeServerState {
    /// Stops `holder`, silent too long, so that the newcomer under `name`
    /// can have it; what concerns the name waits for its end.
    fn stop_silent(&mut self, holder: ActorId, name: &str) {
        let silent = self.heard.silent_for(holder);
        warn!(peer = %name, silent_for = ?silent, "a connected node has sent nothing for longer than the silence limit: a new connection under its name takes it over, the old session is stopped");
        self.names.release(holder);
        if let Some(session) = ractor::registry::where_is_pid(holder) {
            session.stop(Some("silent".into()));
        }
        self.ending.entry(holder).or_default();
    }

    /// The silent holder, still ending, of the name `msg` is about.
    fn ending_for(&self, msg: &NodeServerMessage) -> Option<ActorId> {
        let name = match msg {
            NodeServerMessage::CheckSession { peer_name, .. } => peer_name.name.as_str(),
            NodeServerMessage::ConnectionAuthenticated(actor) => self.names.name_of(*actor)?,
            _ => return None,
        };
        self.ending
            .keys()
            .copied()
            .find(|holder| self.names.name_of(*holder) == Some(name))
    }

    /// Keeps `msg` until `ending` has ended. A check past
    /// [`MAX_HELD_BACK`] is refused.
    fn hold_back(
        &mut self,
        ending: ActorId,
        msg: NodeServerMessage,
    ) -> Result<(), ActorProcessingErr> {
        let held = self.ending.entry(ending).or_default();
        if held.len() < MAX_HELD_BACK {
            held.push(msg);
        } else if let NodeServerMessage::CheckSession { reply, .. } = msg {
            let _ = reply.send(SessionCheckReply::OtherConnectionContinues);
        }
        Ok(())
    }
}

/// What a check of a name finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Nobody else holds it.
    Free,
    /// Another session holds it and shows it is alive.
    Refused,
    /// Another session holds it but has been silent too long.
    Silent(ActorId),
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
    /// Session `actor` declared `name` with `connection_id`, or learnt it,
    /// for a connection of this node's.
    fn declared(&mut self, actor: ActorId, name: &str, connection_id: u64) {
        self.declared
            .insert(actor, (name.to_owned(), connection_id));
    }

    /// The check of `name` by a connection under `connection_id`: free,
    /// or held by another session, which is refused while `alive` says the
    /// holder is. It cannot be the holder's own check.
    fn check(&self, name: &str, connection_id: u64, alive: impl Fn(ActorId) -> bool) -> Check {
        let Some(holder) = self.holders.get(name) else {
            return Check::Free;
        };
        match self.declared.get(holder) {
            Some((_, held)) if *held != connection_id => match alive(*holder) {
                true => Check::Refused,
                false => Check::Silent(*holder),
            },
            _ => Check::Free,
        }
    }

    /// Session `actor` authenticated: it holds its name if nobody else
    /// does, or if the holder is not `alive`, which makes it
    /// [`Check::Silent`]. Else it is refused.
    fn authenticated(&mut self, actor: ActorId, alive: impl Fn(ActorId) -> bool) -> Check {
        let Some((name, _)) = self.declared.get(&actor) else {
            return Check::Free;
        };
        let check = match self.holders.get(name) {
            Some(holder) if *holder != actor => match alive(*holder) {
                true => return Check::Refused,
                false => Check::Silent(*holder),
            },
            _ => Check::Free,
        };
        self.holders.insert(name.clone(), actor);
        check
    }

    /// The name session `actor` declared.
    fn name_of(&self, actor: ActorId) -> Option<&str> {
        self.declared.get(&actor).map(|(name, _)| name.as_str())
    }

    /// `holder` no longer holds its name: it is being stopped.
    fn release(&mut self, holder: ActorId) {
        if let Some((name, _)) = self.declared.get(&holder) {
            if self.holders.get(name) == Some(&holder) {
                self.holders.remove(name);
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

    const ALIVE: fn(ActorId) -> bool = |_| true;

    #[test]
    fn a_name_stays_with_the_first_session_authenticated_under_it() {
        let mut n = Names::default();
        // Two connections declare the same name; neither holds it yet.
        n.declared(id(1), "v@h", 10);
        n.declared(id(2), "v@h", 5);
        assert_eq!(n.check("v@h", 5, ALIVE), Check::Free);
        assert_eq!(n.check("v@h", 10, ALIVE), Check::Free);
        assert_eq!(n.authenticated(id(1), ALIVE), Check::Free);
        // The holder's own check passes; any other connection id is refused.
        assert_eq!(n.check("v@h", 10, ALIVE), Check::Free);
        assert_eq!(n.check("v@h", 5, ALIVE), Check::Refused);
        assert_eq!(n.check("v@h", 1, ALIVE), Check::Refused);
        assert_eq!(n.check("other@h", 1, ALIVE), Check::Free);
        // One that got past the check (it authenticated anyway) is refused.
        assert_eq!(n.authenticated(id(2), ALIVE), Check::Refused);
        assert_eq!(n.authenticated(id(1), ALIVE), Check::Free);
        // The newcomer's end frees nothing; the holder's end frees the name.
        n.ended(id(2));
        assert_eq!(n.check("v@h", 5, ALIVE), Check::Refused);
        n.ended(id(1));
        assert_eq!(n.check("v@h", 5, ALIVE), Check::Free);
        n.declared(id(3), "v@h", 5);
        assert_eq!(n.authenticated(id(3), ALIVE), Check::Free);
        // A session that never declared a name is not judged here.
        assert_eq!(n.authenticated(id(4), ALIVE), Check::Free);
    }

    #[test]
    fn a_holder_that_is_not_alive_loses_its_name_to_a_newcomer() {
        let mut n = Names::default();
        n.declared(id(1), "v@h", 10);
        assert_eq!(n.authenticated(id(1), ALIVE), Check::Free);
        let silent = |a: ActorId| a != id(1);
        // A check under the name finds the holder silent.
        assert_eq!(n.check("v@h", 5, silent), Check::Silent(id(1)));
        n.release(id(1));
        assert_eq!(n.check("v@h", 5, silent), Check::Free);
        // Or the newcomer authenticates first: it takes the name over.
        n.declared(id(1), "w@h", 10);
        assert_eq!(n.authenticated(id(1), ALIVE), Check::Free);
        n.declared(id(2), "w@h", 5);
        assert_eq!(n.authenticated(id(2), silent), Check::Silent(id(1)));
        assert_eq!(n.check("w@h", 7, ALIVE), Check::Refused);
        // The old holder's end leaves the newcomer holding the name.
        n.ended(id(1));
        assert_eq!(n.check("w@h", 5, ALIVE), Check::Free);
        assert_eq!(n.check("w@h", 7, ALIVE), Check::Refused);
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
