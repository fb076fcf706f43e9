//! MCP protocol facts shared by client and server: versions, eras, `_meta`
//! keys and method names.

use serde::{Deserialize, Serialize};

/// The modern protocol revision (no handshake, `server/discover`).
pub const MODERN_VERSION: &str = "2026-07-28";
/// Modern revisions this library speaks, newest first.
pub const MODERN_VERSIONS: &[&str] = &[MODERN_VERSION];
/// The newest legacy revision (`initialize` handshake).
pub const LATEST_LEGACY_VERSION: &str = "2025-11-25";
/// Legacy revisions this library speaks, newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// `_meta` keys of the modern era.
pub mod meta {
    /// The protocol version of this request (required).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities (required).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's name and version (should).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The log level the client wants (optional).
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's name and version, in a DiscoverResult's `_meta`.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
}

/// Method names.
pub mod methods {
    /// Modern: discovery.
    pub const DISCOVER: &str = "server/discover";
    /// Legacy: handshake request.
    pub const INITIALIZE: &str = "initialize";
    /// Legacy: handshake completion notification.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Liveness check (legacy era).
    pub const PING: &str = "ping";
    /// Cancellation of an in-flight request.
    pub const CANCELLED: &str = "notifications/cancelled";
    /// Progress of a request.
    pub const PROGRESS: &str = "notifications/progress";
    /// Server-to-client: list the client's roots.
    pub const ROOTS_LIST: &str = "roots/list";
    /// Server-to-client: ask the client's model.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Server-to-client: ask the user.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
}

/// A protocol era.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// 2024-11-05 .. 2025-11-25: `initialize` handshake.
    Legacy,
    /// 2026-07-28 and later: `server/discover`, `_meta` on every request.
    Modern,
}

impl Era {
    /// The era a protocol version belongs to, if this library knows it.
    pub fn of_version(version: &str) -> Option<Era> {
        if MODERN_VERSIONS.contains(&version) {
            Some(Era::Modern)
        } else if LEGACY_VERSIONS.contains(&version) {
            Some(Era::Legacy)
        } else {
            None
        }
    }

    /// `"legacy"` or `"modern"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name and version (`clientInfo`, `serverInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
}

impl Implementation {
    /// A name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
        }
    }
}
