//! [`HostConfig`]: the servers of a host and how their names are joined
//! into one namespace; [`HostOptions`]: what is not configuration (a parent
//! actor, a handler).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ractor::ActorCell;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::namespace::Naming;
use super::HostEvent;
use crate::client::ClientConfig;
use crate::client::ClientHandler;
use crate::error::ConfigError;

/// The default separator between a server's name and a tool's.
pub const DEFAULT_SEPARATOR: &str = "__";
/// The default longest namespaced name: the limit hosts impose on tool
/// names.
pub const DEFAULT_MAX_NAME_LEN: usize = 64;
/// The shortest `max_name_len` accepted: room for a shortened name's hash.
const MIN_NAME_LEN: usize = 16;

/// What a call does when its server is restarting (or not yet ready).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenUnavailable {
    /// Fail at once with [`HostError::Unavailable`](super::HostError::Unavailable),
    /// saying what the server is doing (the default).
    #[default]
    FailFast,
    /// Wait for the server to be ready again, within the call's timeout.
    Wait,
}

/// The configuration of a [`Host`](super::Host): its servers, by name, and
/// its namespace.
///
/// Serialised with these field names (`ready_timeout` as
/// `ready_timeout_ms`), every missing field at its default; an unknown
/// field is an error.
///
/// ```
/// use conduit_mcp::host::HostConfig;
/// use conduit_mcp::ClientConfig;
///
/// let config = HostConfig::new()
///     .server("time", ClientConfig::new("uvx").arg("mcp-server-time"))
///     .server("files", ClientConfig::new("npx").args(["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]))
///     .separator("__");
/// assert!(config.validate().is_ok());
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct HostConfig {
    /// The servers, by name. The name prefixes their tools' and prompts'
    /// names, and tags their events.
    pub servers: BTreeMap<String, ClientConfig>,
    /// Between a server's name and a tool's: `server__tool` by default.
    pub separator: String,
    /// The longest namespaced name (default 64). A longer one is cut and
    /// ends with a hash of the whole name, so it stays unique.
    pub max_name_len: usize,
    /// What a call does while its server is restarting.
    pub when_unavailable: WhenUnavailable,
    /// How long [`Host::start`](super::Host::start) waits for every server
    /// to be ready and listed (default 60 s). Servers not ready by then go
    /// on starting in the background.
    #[serde(rename = "ready_timeout_ms", with = "crate::serde_support::millis")]
    pub ready_timeout: Duration,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            servers: BTreeMap::new(),
            separator: DEFAULT_SEPARATOR.to_owned(),
            max_name_len: DEFAULT_MAX_NAME_LEN,
            when_unavailable: WhenUnavailable::default(),
            ready_timeout: Duration::from_secs(60),
        }
    }
}

impl HostConfig {
    /// No servers, default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the server `name`.
    pub fn server(mut self, name: impl Into<String>, config: ClientConfig) -> Self {
        self.servers.insert(name.into(), config);
        self
    }

    /// Sets the separator between server and tool names.
    pub fn separator(mut self, separator: impl Into<String>) -> Self {
        self.separator = separator.into();
        self
    }

    /// Sets what calls do while their server is restarting.
    pub fn when_unavailable(mut self, policy: WhenUnavailable) -> Self {
        self.when_unavailable = policy;
        self
    }

    /// Sets how long [`Host::start`](super::Host::start) waits for the
    /// servers.
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// How this configuration joins names.
    pub(crate) fn naming(&self) -> Naming {
        Naming {
            separator: self.separator.clone(),
            max_len: self.max_name_len,
        }
    }

    /// Checks the host's own options (each server's are checked when it
    /// starts); the error names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.separator.is_empty() {
            return Err(ConfigError::new("separator", "must not be empty"));
        }
        if self.max_name_len < MIN_NAME_LEN + self.separator.len() {
            return Err(ConfigError::new(
                "max_name_len",
                format!(
                    "{} leaves no room for names: at least {}",
                    self.max_name_len,
                    MIN_NAME_LEN + self.separator.len()
                ),
            ));
        }
        if self.ready_timeout.is_zero() {
            return Err(ConfigError::new("ready_timeout", "must be positive"));
        }
        if let Some(name) = self.servers.keys().find(|n| n.trim().is_empty()) {
            return Err(ConfigError::new(
                "servers",
                format!("server name {name:?} is empty"),
            ));
        }
        Ok(())
    }
}

/// Options of [`Host::start_with`](super::Host::start_with) beyond the
/// config.
#[derive(Default)]
#[non_exhaustive]
pub struct HostOptions {
    /// Spawn the host's supervisor linked under this actor: the whole host
    /// (every client's tree) is then a subtree of the user's.
    pub supervisor: Option<ActorCell>,
    /// Answers every server's requests to the client (roots, sampling,
    /// elicitation) and modern input requests.
    pub handler: Option<Arc<dyn ClientHandler>>,
    /// Receives every event from the first spawn on.
    pub events: Option<mpsc::UnboundedSender<HostEvent>>,
}

impl HostOptions {
    /// No parent, no handler, no early subscriber.
    pub fn new() -> Self {
        Self::default()
    }

    /// Spawns the host under `parent`.
    pub fn supervisor(mut self, parent: ActorCell) -> Self {
        self.supervisor = Some(parent);
        self
    }

    /// Sets the handler of the servers' requests.
    pub fn handler(mut self, handler: Arc<dyn ClientHandler>) -> Self {
        self.handler = Some(handler);
        self
    }

    /// Subscribes `events` from the first spawn on.
    pub fn events(mut self, events: mpsc::UnboundedSender<HostEvent>) -> Self {
        self.events = Some(events);
        self
    }
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOptions")
            .field("supervisor", &self.supervisor.as_ref().map(|s| s.get_id()))
            .field("handler", &self.handler.is_some())
            .field("events", &self.events.is_some())
            .finish()
    }
}
