//! Past one machine (feature `cluster`): MCP servers on one node, called
//! from another, over ractor's own distributed engine (`ractor_cluster`).
//!
//! ```text
//! node B (caller)                          node A (servers)
//!  RemoteServers ── sink actor ◄─ ticket, progress, notifications ─┐
//!   └ RemoteServer("files")                                         │
//!        │ RPC Hello / Call(ticket, …) ── ractor_cluster ──► Gateway actor
//!        ▼                          (cookie, optional TLS/mTLS)  └ Client("files") ─ stdio ─ server
//!   result bytes / RemoteError ◄────────────────────────────────────┘
//! ```
//!
//! - **What runs where.** Node A runs the servers (as ordinary
//!   [`Client`](crate::Client)s, with all their supervision and shutdown
//!   guarantees) and a [`Gateway`] that exposes chosen ones by name, each
//!   with its [`Grants`]. Node B runs [`RemoteServers`]: it finds a server
//!   by name through ractor's process groups (`conduit-mcp/server/<name>`),
//!   checked against the nodes it trusts for that name, and calls it with
//!   [`RemoteServer::request`], [`call_tool`](RemoteServer::call_tool),
//!   [`list_tools`](RemoteServer::list_tools) or
//!   [`session`](RemoteServer::session).
//! - **The wire.** Messages derive ractor_cluster's
//!   `RactorClusterMessage`; the timeout travels in each call and is
//!   applied on node A (lowered to the gateway's maximum); a result crosses
//!   as the server's own JSON bytes (no re-encoding on node A); errors are
//!   data ([`RemoteError`]).
//! - **Node loss.** Node B learns that node A went away from
//!   ractor_cluster's session (its connection closes): the gateway's
//!   stand-in on node B stops, and every call in flight to it fails at once
//!   with [`RemoteError::NodeLost`], never a timeout. Node A's servers die
//!   with node A (`die_with_parent`). Node A learns that node B went away
//!   the same way: node B's tickets end and its calls are cancelled.
//! - **Cancellation and progress.** Cancelling a call (a [`CancelToken`](crate::CancelToken)
//!   in [`RemoteOptions`], a timeout, or dropping the future) cancels it on
//!   node A, which sends `notifications/cancelled` to the server. Progress
//!   is sent to node B's sink; server notifications to the sinks that
//!   subscribed ([`RemoteServer::notifications`]).
//!
//! # Security model
//!
//! **Who is trusted.** Every node that completes ractor_cluster's handshake
//! (it holds the cookie, and with mutual TLS a certificate from your
//! authority) may send messages to every remotable actor of this node:
//! ractor_cluster shows every such actor, and every process group with its
//! members, to every connected node, and delivers a message without saying
//! who sent it. So nothing here trusts what a message says about its
//! sender. What a connected node may do is what the gateway grants, and
//! what it can be sure of is bounded as follows.
//!
//! - **Grants.** A gateway grants nothing unless named ([`Grants`]):
//!   methods by name, the server's notifications and its session each on
//!   their own. Anything else is refused ([`RemoteError::Refused`]). A
//!   server whose notifications are not granted has no forwarder: joining
//!   a process group gets a node nothing.
//! - **Who is calling.** Before a node calls, its sink gets a *ticket*: the
//!   gateway casts it to the one member of the sink's process group that
//!   has the sink's pid; a cast to another node's actor travels only over
//!   that node's connection, so the ticket reaches that node only, and
//!   calls, cancellations and subscriptions that carry it are that node's
//!   (or a node it gave the ticket to). Calls are keyed by (ticket, id): a
//!   node cannot cancel, or take over, another node's call, and an id in
//!   flight twice is refused ([`RemoteError::DuplicateCall`]). When another
//!   node copies the sink (same group, same pid), no ticket is sent and the
//!   caller gets [`RemoteError::NotAdmitted`] naming the nodes: a copy can
//!   deny service, not take it over. Tickets end with the node's
//!   connection (the sink's stand-in stops).
//! - **What a call's `_meta` may name.** A caller's `params._meta` keeps
//!   only what is the caller's own: node A drops its `progressToken` (node
//!   A's client routes progress by it, to whichever of its calls has that
//!   id) and every member under a prefix the protocol reserves
//!   (`io.modelcontextprotocol/…`, `dev.mcp/…`: the session's version,
//!   capabilities, client info, log level, subscription and task ids, all
//!   node A's session's to set). The progress token the server sees is
//!   node A's own for that call, sent only when the caller asked for
//!   progress, so a node cannot aim progress at another node's call.
//! - **What the sink takes.** Progress and notifications carry the secret
//!   of the ticket of the gateway the call (or the subscription) went to;
//!   the sink drops anything else and counts it
//!   ([`RemoteServers::rejected`]).
//! - **Who serves a name.** A name is claimed by joining a process group,
//!   which any node can do. [`RemoteServers::find`] prefers a gateway on
//!   its own node, keeps only the nodes trusted for the name
//!   ([`RemoteServersBuilder::trust`]), and fails with
//!   [`FindError::Ambiguous`] (naming the nodes) when more than one
//!   claimant is left, never picking one. Node names are the names nodes
//!   *declare* in ractor_cluster's handshake (`name@hostname`), so a trust
//!   list guards against a careless or misconfigured node, not against one
//!   that holds the cookie and lies. Certificates do not bind names either
//!   (below).
//! - **Who holds a node's name.** ractor_cluster keeps one session per
//!   peer name and, when a second connection under a name authenticates,
//!   keeps the one with the lower connection id, which the connecting node
//!   picks. A [`GuardedNodeServer`] (what [`NodeConfig::build`] returns)
//!   keeps a name with the first session authenticated under it until that
//!   session ends, and refuses every later connection under it. So a node
//!   holding the cookie can no longer end another node's session, nor the
//!   calls in flight over it, by declaring its name. What it can still do:
//!   declare any name *not connected* to this node at the moment (before
//!   the real node connects, or while it is away), and then hold it here
//!   until its own session ends: the real node's connections are refused
//!   meanwhile, and callers here that trust that name take the impostor's
//!   gateways for it. A plain `NodeServer` keeps ractor_cluster's rule: a
//!   newcomer under a connected name wins within a few tries.
//! - **Bounds.** Calls in flight are capped per node and per gateway
//!   ([`RemoteError::TooManyCalls`]); a call's timeout is lowered to the
//!   gateway's maximum; progress and notifications sent to a node and not
//!   yet handled by its sinks are bounded in bytes per node (past that they
//!   are dropped), and so is what a subscriber leaves unread
//!   ([`RemoteNotifications`]). What stays unbounded is ractor_cluster's
//!   own: its mailboxes and socket writers, and answers in flight (at most
//!   the per-node cap times [`GatewayConfig::max_answer_bytes`]).
//!
//! **The cookie.** ractor_cluster authenticates both ends with a challenge
//! and SHA-256 of (challenge ‖ cookie), compared with `==`. Without TLS,
//! one handshake seen on the wire (or one connection from a node to a
//! listener an attacker runs) is enough to guess the cookie offline at
//! hash speed: use a long random cookie (32 random bytes or more), never a
//! word. [`NodeConfig`] refuses an empty one. Without TLS, anyone on the
//! path also reads every message, tickets and secrets included, and can
//! inject into the connection: the ticket scheme assumes the connections
//! themselves are not tampered with.
//!
//! **TLS** ([`tls::acceptor`], [`tls::connector`]) encrypts the
//! connection and authenticates the listening node to the connecting one;
//! the cookie exchange and the tickets then cross encrypted.
//! **Mutual TLS** ([`tls::mutual_acceptor`], [`tls::mutual_connector`])
//! also requires a certificate from the connecting node, signed by your
//! authority: a node without one cannot connect, whatever cookie it has.
//! Neither binds the node's declared name to its certificate: a node with
//! a valid certificate and the cookie can still declare any name that is
//! not connected.
//!
//! **Connections.** Bind node servers to the interfaces you mean
//! ([`NodeConfig`] listens on loopback unless told otherwise;
//! `NodeServer::new` listens on every interface). `NodeConnectionMode`'s
//! default value is `Transitive` (a node connects to every node its peers
//! know), although `NodeServer::new` with `None` picks `Isolated`;
//! [`NodeConfig`] always builds `Isolated`, so only the nodes you connect
//! to are peers. ractor_cluster's TLS listener performs each handshake
//! inline, without a time limit: a connection that never finishes its TLS
//! handshake holds up the listener (bind it where only your nodes reach).
//!
//! # Limits
//!
//! - One answer must fit in one ractor_cluster frame (16 MiB by default):
//!   a larger result is refused on node A with [`RemoteError::TooLarge`]
//!   (the limit is [`GatewayConfig::max_answer_bytes`]), never sent to
//!   break the connection.
//! - Process groups sync shortly after nodes connect:
//!   [`RemoteServers::wait_for`] waits for a name to appear.
//! - Progress and notifications are best effort (casts): lost with the
//!   node, or dropped past the window, never retried.

mod gateway;
mod grants;
mod names;
mod node;
mod notifications;
mod peers;
mod remote;
mod sink;
pub mod tls;
mod token;
mod wire;

pub use gateway::{
    Gateway, GatewayConfig, GatewayError, DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_CALLS,
    DEFAULT_MAX_CALLS_PER_NODE, DEFAULT_MAX_FORWARD_BYTES, DEFAULT_MAX_TIMEOUT,
};
pub use grants::Grants;
pub use node::{GuardedNodeServer, GuardedNodeServerState, NodeConfig, NodeConfigError};
pub use notifications::RemoteNotifications;
pub use remote::{
    FindError, RemoteOptions, RemoteServer, RemoteServers, RemoteServersBuilder, RemoteStartError,
    DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES,
};
pub use wire::{CallCap, GatewayMsg, RemoteError, SinkMsg};

/// The process group of the gateways exposing `server`.
fn server_group(server: &str) -> String {
    format!("conduit-mcp/server/{server}")
}
