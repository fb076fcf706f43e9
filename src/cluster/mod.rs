//! Past one machine (feature `cluster`): MCP servers on one node, called
//! from another, over ractor's own distributed engine (`ractor_cluster`).
//!
//! ```text
//! node B (caller)                         node A (servers)
//!  RemoteServers ── sink actor ◄─ progress, notifications ─┐
//!   └ RemoteServer("files")                                 │
//!        │ RPC Call(envelope) ──── ractor_cluster ────► Gateway actor
//!        ▼                         (cookie, optional TLS)   └ Client("files") ─ stdio ─ server
//!   result bytes / RemoteError ◄────────────────────────────┘
//! ```
//!
//! - **What runs where.** Node A runs the servers (as ordinary
//!   [`Client`](crate::Client)s, with all their supervision and shutdown
//!   guarantees) and a [`Gateway`] that exposes chosen ones by name. Node B
//!   runs [`RemoteServers`]: it finds a server by name through ractor's
//!   process groups (`conduit-mcp/server/<name>`), and calls it with
//!   [`RemoteServer::request`], [`call_tool`](RemoteServer::call_tool),
//!   [`list_tools`](RemoteServer::list_tools) or
//!   [`session`](RemoteServer::session).
//! - **The wire.** Messages derive ractor_cluster's
//!   `RactorClusterMessage`; the timeout travels in each call and is
//!   applied on node A; a result crosses as the server's own JSON bytes (no
//!   re-encoding on node A); errors are data ([`RemoteError`]).
//! - **Node loss.** Node B learns that node A went away from
//!   ractor_cluster's session (its connection closes): the gateway's
//!   stand-in on node B stops, and every call in flight to it fails at once
//!   with [`RemoteError::NodeLost`], never a timeout. Node A's servers die
//!   with node A (`die_with_parent`).
//! - **Cancellation and progress.** Cancelling a call (a [`CancelToken`](crate::CancelToken)
//!   in [`RemoteOptions`], a timeout, or dropping the future) cancels it on
//!   node A, which sends `notifications/cancelled` to the server. Progress
//!   is sent to node B's sink; server notifications to the sinks that asked
//!   ([`RemoteServers::notifications`]).
//!
//! # Security model
//!
//! Nodes authenticate each other with ractor_cluster's shared cookie
//! (`NodeServer::new(port, cookie, ...)`), and can encrypt with TLS
//! (ractor_cluster's `IncomingEncryptionMode::Tls` and `client_connect_enc`;
//! [`tls`] builds both from PEM files).
//! A connected node is trusted to send messages; what it may do is bounded
//! by the gateway's allowlist ([`GatewayConfig::server_allowing`]): servers
//! not exposed are not found, methods not allowed are refused
//! ([`RemoteError::Refused`]). Bind node servers to the interfaces you mean
//! (`with_listen_addr`): ractor_cluster listens on every interface by
//! default.
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
//!   node, never retried.

mod gateway;
mod remote;
pub mod tls;
mod wire;

pub use gateway::{Gateway, GatewayConfig, GatewayError, DEFAULT_MAX_ANSWER_BYTES};
pub use remote::{RemoteOptions, RemoteServer, RemoteServers, RemoteStartError};
pub use wire::{GatewayMsg, RemoteError, SinkMsg};

/// The process group of the gateways exposing `server`.
fn server_group(server: &str) -> String {
    format!("conduit-mcp/server/{server}")
}

/// The process group of the sinks that want `server`'s notifications.
fn notifications_group(server: &str) -> String {
    format!("conduit-mcp/notifications/{server}")
}
