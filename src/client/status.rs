//! What discovery learned about the running server, and the client's status.

use std::sync::Arc;

use serde_json::Value;

use crate::protocol::{Era, Implementation};

/// The result of discovery (2026-07-28) or the handshake (2025-11-25), for the life
/// of one server process.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSession {
    /// The protocol era.
    pub era: Era,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The server's name and version, if it said.
    pub server_info: Option<Implementation>,
    /// The server's capabilities (a JSON object).
    pub capabilities: Value,
    /// Instructions for the model, if any.
    pub instructions: Option<String>,
    /// The server's process id.
    pub pid: Option<u32>,
}

impl ServerSession {
    /// The session as one JSON object (`era`, `protocolVersion`,
    /// `serverInfo`, `capabilities`, `instructions`, `pid`).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::client::ServerSession;
    /// use conduit_mcp::protocol::{Era, Implementation};
    /// use serde_json::json;
    ///
    /// let session = ServerSession {
    ///     era: Era::Stateful,
    ///     protocol_version: "2025-06-18".into(),
    ///     server_info: Some(Implementation::new("time", "1.0")),
    ///     capabilities: json!({ "tools": {} }),
    ///     instructions: None,
    ///     pid: Some(4242),
    /// };
    /// let v = session.to_json();
    /// assert_eq!(v["protocolVersion"], "2025-06-18");
    /// assert_eq!(v["serverInfo"]["name"], "time");
    /// ```
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "era": self.era,
            "protocolVersion": self.protocol_version,
            "serverInfo": self.server_info,
            "capabilities": self.capabilities,
            "instructions": self.instructions,
            "pid": self.pid,
        })
    }
}

/// Where the client is in its life.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Status {
    /// A server is being spawned or discovered.
    Starting,
    /// Ready to serve calls.
    Ready(Arc<ServerSession>),
    /// Waiting to restart after the server closed.
    Restarting {
        /// The restart's number among the deaths counted within
        /// [`restart_period`](crate::client::ClientConfig::restart_period): 1, 2, ...
        /// while the server keeps dying; 1 again once a server has stayed
        /// up that long.
        attempt: u32,
        /// Why the last server closed.
        reason: String,
    },
    /// Gave up restarting; final.
    GaveUp(String),
    /// Stopped by the user; final.
    Stopped,
}

impl Status {
    /// Whether the client will never serve calls again.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::Status;
    ///
    /// assert!(Status::Stopped.is_final());
    /// assert!(Status::GaveUp("exited 5 times".into()).is_final());
    /// assert!(!Status::Restarting { attempt: 1, reason: "exited".into() }.is_final());
    /// ```
    pub fn is_final(&self) -> bool {
        matches!(self, Status::GaveUp(_) | Status::Stopped)
    }
}
