//! [`HostConfig`]: the servers of a host and how their names are joined
//! into one namespace; [`HostOptions`]: what is not configuration (a parent
//! actor, a handler).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use ractor::ActorCell;
use serde::{Deserialize, Serialize};

use super::events::{subscription, HostEvents, Subscriber};
use super::naming::{Naming, DEFAULT_MAX_NAME_LEN, DEFAULT_SEPARATOR};
use crate::client::ClientConfig;
use crate::client::ClientHandler;
use crate::error::ConfigError;

/// The shortest `max_name_len` accepted: room for a shortened name's hash.
const MIN_NAME_LEN: usize = 16;
/// The default of [`HostConfig::max_queued_event_bytes`].
pub const DEFAULT_MAX_QUEUED_EVENT_BYTES: usize = 4 * 1024 * 1024;
/// The default of [`HostConfig::revive_after`]: 60 s.
pub const DEFAULT_REVIVE_AFTER: Duration = Duration::from_secs(60);

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
    /// names, and tags their events. A name that could make a namespaced
    /// name mean two servers is refused (see [`validate`](Self::validate)).
    pub servers: BTreeMap<String, ClientConfig>,
    /// The servers (of [`servers`](Self::servers)) started on their first
    /// use instead of with the host (see
    /// [`Host::add_lazy`](super::Host::add_lazy)).
    pub lazy: BTreeSet<String>,
    separator: String,
    /// The longest namespaced name (default 64). A longer one is cut and
    /// ends with a hash of the whole name, so it stays unique.
    pub max_name_len: usize,
    when_unavailable: WhenUnavailable,
    /// How long [`Host::start`](super::Host::start) waits for every server
    /// to be ready and listed (default 60 s). Servers not ready by then go
    /// on starting in the background.
    #[serde(rename = "ready_timeout_ms", with = "crate::serde_support::millis")]
    ready_timeout: Duration,
    max_queued_event_bytes: usize,
    /// How long a server that gave up (its client spent its restarts) or
    /// could not start waits before the host starts it again, as a new
    /// client with its restart budget whole (default 60 s; zero: never,
    /// it stays given up). A server that gives up again waits again.
    /// [`server_revive_after`](Self::server_revive_after) overrides it per
    /// server.
    #[serde(rename = "revive_after_ms", with = "crate::serde_support::millis")]
    revive_after: Duration,
    /// Per server: its own [`revive_after`](Self::revive_after). A config
    /// file sets it with the server's `conduit.revive_after_ms`.
    #[serde(skip)]
    server_revive_after: BTreeMap<String, Duration>,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            servers: BTreeMap::new(),
            lazy: BTreeSet::new(),
            separator: DEFAULT_SEPARATOR.to_owned(),
            max_name_len: DEFAULT_MAX_NAME_LEN,
            when_unavailable: WhenUnavailable::default(),
            ready_timeout: Duration::from_secs(60),
            max_queued_event_bytes: DEFAULT_MAX_QUEUED_EVENT_BYTES,
            revive_after: DEFAULT_REVIVE_AFTER,
            server_revive_after: BTreeMap::new(),
        }
    }
}

/// What the setters set: a getter for each field another module or a
/// user reads.
impl HostConfig {
    config_fields! {
        /// Sets what calls do while their server is restarting (default
        /// [`WhenUnavailable::FailFast`]).
        set when_unavailable: WhenUnavailable, get_when_unavailable -> WhenUnavailable, copy;
        /// Sets how long [`Host::start`](super::Host::start) waits for the
        /// servers (default 60 s).
        set ready_timeout: Duration, get_ready_timeout -> Duration, copy;
        /// The most bytes of events one [`HostEvents`] subscriber may leave
        /// unread (default 4 MiB; each event counts its strings and its own
        /// size). Past it, that subscriber's events are dropped and counted
        /// ([`HostEvents::dropped`]).
        set max_queued_event_bytes: usize, get_max_queued_event_bytes -> usize, copy;
        /// Sets [`revive_after`](Self::revive_after) for every server (default
        /// 60 s; zero: a server that gave up is never started again).
        ///
        /// # Examples
        ///
        /// ```
        /// use std::time::Duration;
        /// use conduit_mcp::host::HostConfig;
        /// use conduit_mcp::ClientConfig;
        ///
        /// let config = HostConfig::new()
        ///     .server("time", ClientConfig::new("uvx").arg("mcp-server-time"))
        ///     .server("fetch", ClientConfig::new("uvx").arg("mcp-server-fetch"))
        ///     .revive_after(Duration::from_secs(300))
        ///     .server_revive_after("fetch", Duration::ZERO); // fetch: never again
        /// assert_eq!(config.revive_after_of("time"), Duration::from_secs(300));
        /// assert_eq!(config.revive_after_of("fetch"), Duration::ZERO);
        /// ```
        set revive_after: Duration, get_revive_after -> Duration, copy;
        get separator, get_separator -> &str, ref;
        get server_revive_after, get_server_revive_after -> &BTreeMap<String, Duration>, ref;
    }
}

impl HostConfig {
    /// No servers, default options.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use conduit_mcp::host::HostConfig;
    ///
    /// let config = HostConfig::new();
    /// assert!(config.servers.is_empty());
    /// assert_eq!(config.get_separator(), "__");
    /// assert_eq!(config.get_ready_timeout(), Duration::from_secs(60));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the server `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::HostConfig;
    /// use conduit_mcp::ClientConfig;
    ///
    /// let config = HostConfig::new()
    ///     .server("time", ClientConfig::new("uvx").arg("mcp-server-time"))
    ///     .server("time", ClientConfig::new("uvx").arg("mcp-server-time==0.6")); // replaces
    /// assert_eq!(config.servers.len(), 1);
    /// assert!(config.validate().is_ok());
    /// ```
    pub fn server(mut self, name: impl Into<String>, config: ClientConfig) -> Self {
        self.servers.insert(name.into(), config);
        self
    }

    /// Adds (or replaces) the server `name`, started on its first use
    /// instead of with the host.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::HostConfig;
    /// use conduit_mcp::ClientConfig;
    ///
    /// let config = HostConfig::new()
    ///     .server("time", ClientConfig::new("uvx").arg("mcp-server-time"))
    ///     .lazy_server("fetch", ClientConfig::new("uvx").arg("mcp-server-fetch"));
    /// assert!(config.lazy.contains("fetch") && !config.lazy.contains("time"));
    /// assert_eq!(config.servers.len(), 2);
    /// ```
    pub fn lazy_server(mut self, name: impl Into<String>, config: ClientConfig) -> Self {
        let name = name.into();
        self.lazy.insert(name.clone());
        self.servers.insert(name, config);
        self
    }

    /// Between a server's name and a tool's: `server__tool` by default.
    pub fn separator(mut self, separator: impl Into<String>) -> Self {
        self.separator = separator.into();
        self
    }

    /// Sets the server `name`'s own [`revive_after`](Self::revive_after).
    pub fn server_revive_after(mut self, name: impl Into<String>, pause: Duration) -> Self {
        self.server_revive_after.insert(name.into(), pause);
        self
    }

    /// How long the server `name` waits after it gave up before it is
    /// started again: its own pause, else the host's (zero: never).
    pub fn revive_after_of(&self, name: &str) -> Duration {
        self.server_revive_after
            .get(name)
            .copied()
            .unwrap_or(self.revive_after)
    }

    /// How this configuration joins names.
    pub(crate) fn naming(&self) -> Naming {
        Naming::new(self.separator.clone(), self.max_name_len)
    }

    /// Checks the host's own options and the servers' names (each
    /// server's own options are checked when it starts); the error names
    /// the key.
    ///
    /// A server name is refused when a namespaced name could then mean two
    /// servers: its sanitised form holds the separator or runs into it
    /// (`a__b`, `a_` with `__`), equals another server's (`my.fx` and
    /// `my_fx`), or, with the separator, is longer than `max_name_len`
    /// less 9 (a cut name must keep it whole).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::HostConfig;
    /// use conduit_mcp::ClientConfig;
    ///
    /// let ok = HostConfig::new().server("time", ClientConfig::new("uvx"));
    /// assert!(ok.validate().is_ok());
    /// // `a__b`'s tools would look like server `a`'s.
    /// let bad = HostConfig::new().server("a__b", ClientConfig::new("uvx"));
    /// assert_eq!(bad.validate().unwrap_err().key, "servers");
    /// ```
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
        if self.max_queued_event_bytes == 0 {
            return Err(ConfigError::new(
                "max_queued_event_bytes",
                "must be positive",
            ));
        }
        if let Some(name) = self.lazy.iter().find(|n| !self.servers.contains_key(*n)) {
            return Err(ConfigError::new(
                "lazy",
                format!("`{name}` is not one of the servers"),
            ));
        }
        if let Some(name) = self
            .server_revive_after
            .keys()
            .find(|n| !self.servers.contains_key(*n))
        {
            return Err(ConfigError::new(
                "server_revive_after",
                format!("`{name}` is not one of the servers"),
            ));
        }
        let naming = self.naming();
        for name in self.servers.keys() {
            naming.check_server(name, self.servers.keys().map(String::as_str))?;
        }
        Ok(())
    }
}

/// Makes the handler of one server from its name.
pub(crate) type HandlerFactory = Arc<dyn Fn(&str) -> Arc<dyn ClientHandler> + Send + Sync>;

/// Options of [`Host::start_with`](super::Host::start_with) beyond the
/// config.
#[derive(Default)]
#[non_exhaustive]
pub struct HostOptions {
    /// Spawn the host's supervisor linked under this actor: the whole host
    /// (every client's tree) is then a subtree of the user's.
    pub supervisor: Option<ActorCell>,
    /// Answers every server's requests to the client (roots, sampling,
    /// elicitation) and 2026-07-28 input requests.
    pub handler: Option<Arc<dyn ClientHandler>>,
    /// A handler per server, made from its name when it starts (wins over
    /// [`handler`](Self::handler)); see [`handler_per_server`](Self::handler_per_server).
    handler_for: Option<HandlerFactory>,
    /// Subscribers from the first spawn on ([`subscribe`](Self::subscribe)).
    early: Vec<Subscriber>,
}

impl HostOptions {
    /// Takes the factory of per-server handlers.
    pub(crate) fn take_handler_for(&mut self) -> Option<HandlerFactory> {
        self.handler_for.take()
    }

    /// Takes the subscribers to the host's first events.
    pub(crate) fn take_early(&mut self) -> Vec<Subscriber> {
        std::mem::take(&mut self.early)
    }

    /// No parent, no handler, no early subscriber.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use conduit_mcp::host::HostOptions;
    /// use conduit_mcp::ClientResponder;
    ///
    /// let opts = HostOptions::new().handler(Arc::new(ClientResponder::new()));
    /// assert!(opts.handler.is_some() && opts.supervisor.is_none());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Spawns the host under `parent` (default none: unlinked).
    pub fn supervisor(mut self, parent: ActorCell) -> Self {
        self.supervisor = Some(parent);
        self
    }

    /// Sets the handler of the servers' requests (default none: `ping` is
    /// answered, every other server request refused).
    pub fn handler(mut self, handler: Arc<dyn ClientHandler>) -> Self {
        self.handler = Some(handler);
        self
    }

    /// Answers each server's requests with the handler `make(name)` returns
    /// when the server starts (or restarts after [`Host::add`](super::Host::add)):
    /// for a handler that must know which server asks (a gateway relaying
    /// each request to the client whose call it belongs to). Replaces
    /// [`handler`](Self::handler).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use conduit_mcp::client::{ClientHandler, InboundRequest};
    /// use conduit_mcp::host::HostOptions;
    /// use conduit_mcp::ErrorObject;
    /// use serde_json::Value;
    ///
    /// let opts = HostOptions::new().handler_per_server(|server| {
    ///     let server = server.to_owned();
    ///     let handler = move |req: InboundRequest| {
    ///         println!("{server} asks for {}", req.method);
    ///         async { Err::<Value, _>(ErrorObject::new(-32601, "not supported here")) }
    ///     };
    ///     Arc::new(handler) as Arc<dyn ClientHandler>
    /// });
    /// # let _ = opts;
    /// ```
    pub fn handler_per_server(
        mut self,
        make: impl Fn(&str) -> Arc<dyn ClientHandler> + Send + Sync + 'static,
    ) -> Self {
        self.handler_for = Some(Arc::new(make));
        self
    }

    /// Subscribes to the host's events from the first spawn on (bounded
    /// like [`Host::events`](super::Host::events)).
    ///
    /// ```no_run
    /// # async fn demo(config: conduit_mcp::host::HostConfig) -> Result<(), conduit_mcp::host::HostError> {
    /// use conduit_mcp::host::{Host, HostOptions};
    /// let (opts, mut events) = HostOptions::new().subscribe();
    /// let host = Host::start_with(config, opts).await?;
    /// while let Ok(event) = events.try_recv() {
    ///     println!("{} {event:?}", event.server());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn subscribe(mut self) -> (Self, HostEvents) {
        let (sub, events) = subscription();
        self.early.push(sub);
        (self, events)
    }
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOptions")
            .field("supervisor", &self.supervisor.as_ref().map(|s| s.get_id()))
            .field("handler", &self.handler.is_some())
            .field("handler_per_server", &self.handler_for.is_some())
            .field("early_subscribers", &self.early.len())
            .finish()
    }
}
