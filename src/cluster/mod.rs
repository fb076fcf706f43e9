//! Past one machine, with feature `cluster`: MCP servers on one node, called
//! from another, over `ractor_cluster`.
//!
#![doc = include_str!("../../docs/cluster.md")]

mod gateway;
mod grants;
mod heard;
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
pub use node::{
    GuardedNodeServer, GuardedNodeServerState, NodeConfig, NodeConfigError, DEFAULT_SILENCE_LIMIT,
    MIN_SILENCE_LIMIT,
};
pub use notifications::RemoteNotifications;
pub use remote::{
    FindError, RemoteOptions, RemoteServer, RemoteServers, RemoteServersConfig, RemoteStartError,
    DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES,
};
pub use wire::{CallCap, GatewayMsg, RemoteError, SinkMsg};

/// The process group of the gateways exposing `server`.
fn server_group(server: &str) -> String {
    format!("conduit-mcp/server/{server}")
}
