//! [`HostError`]: why a host could not start, add a server or route a call.

use crate::client::StartError;
use crate::config_file::ConfigFileError;
use crate::error::{ConfigError, Error};

/// The error of a [`Host`](super::Host) operation. Each variant carries the
/// server's name where one is involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// A host option was refused; the error names it.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The config file could not be read.
    #[error(transparent)]
    ConfigFile(#[from] ConfigFileError),
    /// A server could not be started (a bad option, a missing executable).
    #[error("server `{server}` could not start: {source}")]
    Start {
        /// The server's name.
        server: String,
        /// Why.
        #[source]
        source: StartError,
    },
    /// A server of this name is already in the host.
    #[error("a server named `{0}` is already in the host")]
    Duplicate(String),
    /// No server of this name is in the host.
    #[error("no server named `{0}` in the host")]
    UnknownServer(String),
    /// No tool of this name is in the namespace.
    #[error("no tool named `{0}` in the host's namespace")]
    UnknownTool(String),
    /// No prompt of this name is in the namespace.
    #[error("no prompt named `{0}` in the host's namespace")]
    UnknownPrompt(String),
    /// No server listed a resource with this URI.
    #[error("no server lists the resource `{0}`")]
    UnknownResource(String),
    /// The server is starting or restarting, and the host is set to fail
    /// fast ([`WhenUnavailable::FailFast`](super::WhenUnavailable::FailFast)).
    #[error("server `{server}` is unavailable: {state}")]
    Unavailable {
        /// The server's name.
        server: String,
        /// What it is doing (starting, or restarting and why).
        state: String,
    },
    /// The server gave up (or never started) and was removed from the
    /// namespace for good (it has no revive).
    #[error("server `{server}` was removed from the namespace: {reason}")]
    Removed {
        /// The server's name.
        server: String,
        /// Why it gave up.
        reason: String,
    },
    /// The server gave up (or could not start) and was taken out of the
    /// namespace until its revive, due in `next_try_in`
    /// ([`HostConfig::revive_after`](super::HostConfig::revive_after)).
    #[error("server `{server}` is down ({reason}); it is started again in {}", pause_in_words(*next_try_in))]
    Down {
        /// The server's name.
        server: String,
        /// Why it gave up.
        reason: String,
        /// How long until it is started again.
        next_try_in: std::time::Duration,
    },
    /// The server's call failed (an error answer, a timeout, a crash).
    #[error("server `{server}`: {source}")]
    Call {
        /// The server's name.
        server: String,
        /// The client's error.
        #[source]
        source: Error,
    },
    /// A lazy server could not start on its first use; it stays lazy, and
    /// the next use tries again.
    #[error("server `{server}` could not start on its first use: {reason}")]
    LazyStart {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// The host was stopped.
    #[error("the host was stopped")]
    Stopped,
    /// The host's supervisor actor could not be spawned.
    #[error("could not start the host's actor: {0}")]
    Actor(String),
}

impl HostError {
    /// The server's JSON-RPC error, when the server answered with one.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use serde_json::json;
    ///
    /// # async fn example(host: conduit_mcp::host::Host) {
    /// if let Err(e) = host.call_tool("time__get_current_time", json!({ "timezone": 7 })).await {
    ///     match e.server_error() {
    ///         Some(obj) => println!("the server answered {}: {}", obj.code, obj.message),
    ///         None => println!("{e}"),
    ///     }
    /// }
    /// # }
    /// ```
    pub fn server_error(&self) -> Option<&crate::jsonrpc::ErrorObject> {
        match self {
            HostError::Call { source, .. } => source.server_error(),
            _ => None,
        }
    }
}

/// A pause as a person reads it: whole milliseconds under 10 s, else whole
/// seconds (rounded up).
pub(crate) fn pause_in_words(pause: std::time::Duration) -> String {
    let ms = pause.as_nanos().div_ceil(1_000_000);
    if ms < 10_000 {
        format!("{ms} ms")
    } else {
        format!("{} s", ms.div_ceil(1000))
    }
}
