//! A host of many servers: one supervised subtree, one namespace.
//!
#![doc = include_str!("../docs/host.md")]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorCell, ActorRef};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;
use tracing::{info, warn};

use crate::child::ShutdownReport;
use crate::client::LifecycleEvent;
use crate::client::{Client, ClientShutdown, RequestOptions};
use crate::client::{ServerSession, Status};
use crate::config_file::ServersFile;
use crate::protocol::CallToolResult;
use crate::protocol::{GetPromptResult, ReadResourceResult};
use crate::ClientConfig;

mod actor;
mod catalog;
mod config;
mod error;
mod events;
mod from_file;
mod items;
pub(crate) mod listing;
pub mod namespace;
mod naming;
mod reload;
mod revive;
mod start;
mod watcher;

use start::OnFailure;

pub use actor::HostMsg;
pub use config::{
    HostConfig, HostOptions, WhenUnavailable, DEFAULT_MAX_QUEUED_EVENT_BYTES, DEFAULT_REVIVE_AFTER,
};
#[cfg(feature = "cli")]
pub(crate) use error::pause_in_words;
pub use error::HostError;
pub use events::HostEvents;
pub use namespace::{Collision, HostPrompt, HostResource, HostTool, ItemKind, ItemRef, Listed};
pub use naming::{DEFAULT_MAX_NAME_LEN, DEFAULT_SEPARATOR};
pub use reload::Reload;

use self::actor::HostSupervisor;
use self::catalog::{HostShared, Route};

/// How the reason of a server that could not start begins (in
/// [`ServerSummary::status`] and [`HostEvent::Removed`]).
pub(crate) const COULD_NOT_START: &str = "could not start";

/// Something that happened in a host, tagged with the server's name.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HostEvent {
    /// A lifecycle event of one server's client (spawned, ready, closed,
    /// restarting, gave up, stopped, stderr lines).
    Lifecycle {
        /// The server's name in the host.
        server: String,
        /// The event.
        event: LifecycleEvent,
    },
    /// The server's lists were (re)fetched: after it became ready, or after
    /// a `list_changed` notification. The counts are the lists now held.
    Listed {
        /// The server's name.
        server: String,
        /// Tools listed.
        tools: usize,
        /// Prompts listed.
        prompts: usize,
        /// Resources listed.
        resources: usize,
    },
    /// A list could not be fetched (the others were); the old one is kept.
    ListFailed {
        /// The server's name.
        server: String,
        /// What failed.
        error: String,
    },
    /// The server left the namespace for good: it gave up or could not
    /// start, and has no revive ([`HostConfig::revive_after`] is zero for
    /// it), or it was removed.
    Removed {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server gave up or could not start: it left the namespace, and is
    /// started again in `next_try_in` ([`HostConfig::revive_after`]);
    /// [`Reviving`](Self::Reviving) says when.
    Down {
        /// The server's name.
        server: String,
        /// Why it is down.
        reason: String,
        /// Its pause before it is started again.
        next_try_in: Duration,
    },
    /// The server that was [`Down`](Self::Down) is started again (a new
    /// client, its restart budget whole); [`Listed`](Self::Listed) follows
    /// once it serves, or `Down` again.
    Reviving {
        /// The server's name.
        server: String,
    },
    /// Two items would have had the same name; one is left out.
    Collision(Collision),
}

impl HostEvent {
    /// The server the event is about (for a collision, the one left out).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::HostEvent;
    ///
    /// let event = HostEvent::Removed { server: "time".into(), reason: "gave up".into() };
    /// assert_eq!(event.server(), "time");
    /// ```
    pub fn server(&self) -> &str {
        match self {
            HostEvent::Lifecycle { server, .. }
            | HostEvent::Listed { server, .. }
            | HostEvent::ListFailed { server, .. }
            | HostEvent::Removed { server, .. }
            | HostEvent::Down { server, .. }
            | HostEvent::Reviving { server } => server,
            HostEvent::Collision(c) => &c.dropped.server,
        }
    }
}

/// One server of a host, as [`Host::servers`] sees it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerSummary {
    /// Its name in the host.
    pub name: String,
    /// Its client's status; a server that could not start is
    /// [`Status::GaveUp`] with the reason.
    pub status: Status,
    /// Tools it lists.
    pub tools: usize,
    /// Prompts it lists.
    pub prompts: usize,
    /// Resources it lists.
    pub resources: usize,
    /// Whether its lists were fetched at least once.
    pub listed: bool,
    /// From its start to its first ready session.
    pub ready_after: Option<Duration>,
    /// The last listing's failure, if any.
    pub list_error: Option<String>,
    /// For a server that gave up (or could not start) and is started again
    /// after its pause ([`HostConfig::revive_after`]): how long until then.
    pub next_try_in: Option<Duration>,
}

impl ServerSummary {
    /// The session, when the server is ready.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(host: conduit_mcp::host::Host) {
    /// for summary in host.servers() {
    ///     match summary.session() {
    ///         Some(session) => println!("{}: {}", summary.name, session.protocol_version),
    ///         None => println!("{}: {:?}", summary.name, summary.status),
    ///     }
    /// }
    /// # }
    /// ```
    pub fn session(&self) -> Option<&Arc<ServerSession>> {
        match &self.status {
            Status::Ready(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the server is ready and its lists known.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::{Host, HostConfig};
    /// use conduit_mcp::ClientConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conduit_mcp::host::HostError> {
    /// let config = HostConfig::new().server("broken", ClientConfig::new("/nonexistent/mcp-server"));
    /// let host = Host::start(config).await?;
    /// let broken = host.server("broken").unwrap();
    /// assert!(!broken.is_ready() && broken.session().is_none());
    /// # host.stop().wait().await;
    /// # Ok(()) }
    /// ```
    pub fn is_ready(&self) -> bool {
        self.listed && self.session().is_some()
    }
}

/// A host of many servers. Clones share the same host.
///
/// Dropping the last handle stops it, like [`stop`](Self::stop) without
/// waiting.
#[derive(Clone)]
pub struct Host {
    shared: Arc<HostShared>,
    actor: ActorRef<HostMsg>,
    _last: Arc<StopOnLastDrop>,
}

/// Stops the host when the last [`Host`] handle goes.
struct StopOnLastDrop(Arc<HostShared>, ActorRef<HostMsg>);

impl Drop for StopOnLastDrop {
    fn drop(&mut self) {
        drop(self.0.stop_all());
        self.1.stop(Some("the last host handle was dropped".into()));
    }
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("servers", &self.servers())
            .finish()
    }
}

impl Host {
    /// Starts every server of `config` at once and returns when each is
    /// ready and listed, or has failed, or its [`ready_timeout`](HostConfig::ready_timeout) has
    /// passed (the late ones go on starting). A server that cannot start
    /// is kept with its reason ([`servers`](Self::servers)) and does not
    /// fail the others; only an invalid host option, or an actor that
    /// cannot be spawned, fails the start.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::host::{Host, HostConfig};
    /// use conduit_mcp::ClientConfig;
    ///
    /// # async fn example() -> Result<(), conduit_mcp::host::HostError> {
    /// let config = HostConfig::new()
    ///     .server("time", ClientConfig::new("uvx").arg("mcp-server-time"))
    ///     .server("fetch", ClientConfig::new("uvx").arg("mcp-server-fetch"));
    /// let host = Host::start(config).await?;
    /// for tool in host.tools() {
    ///     println!("{} (from {})", tool.name, tool.server);
    /// }
    /// host.stop().wait().await;
    /// # Ok(()) }
    /// ```
    pub async fn start(config: HostConfig) -> Result<Host, HostError> {
        Self::start_with(config, HostOptions::default()).await
    }

    /// [`start`](Self::start) under a parent actor, with a handler or an
    /// early event subscriber.
    ///
    /// Cancel safety: dropping the future stops every server it started
    /// (see [Cancellation](self#cancellation)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use conduit_mcp::host::{Host, HostConfig, HostOptions};
    /// use conduit_mcp::protocol::Root;
    /// use conduit_mcp::ClientResponder;
    ///
    /// # async fn example(config: HostConfig) -> Result<(), conduit_mcp::host::HostError> {
    /// let roots = ClientResponder::new()
    ///     .roots(|| async { Ok(vec![Root::new("file:///srv/project", "project")]) });
    /// let host = Host::start_with(config, HostOptions::new().handler(Arc::new(roots))).await?;
    /// println!("{} servers", host.servers().len());
    /// # Ok(()) }
    /// ```
    pub async fn start_with(config: HostConfig, opts: HostOptions) -> Result<Host, HostError> {
        let (host, starting) = Self::launch(config, opts).await?;
        starting.finish().await;
        Ok(host)
    }

    /// The host of [`start_with`](Self::start_with), returned as soon as
    /// its actor runs and its servers' starts have begun (each server is
    /// in [`servers`](Self::servers), starting): serve at once, and await
    /// the [`Starting`] for what `start_with` waits for.
    ///
    /// ```no_run
    /// # async fn demo(config: conduit_mcp::host::HostConfig) -> Result<(), conduit_mcp::host::HostError> {
    /// use conduit_mcp::host::{Host, HostOptions};
    /// let (host, mut starting) = Host::launch(config, HostOptions::default()).await?;
    /// // `host` answers now; its servers say `Starting` until they are ready.
    /// starting.returned().await;
    /// starting.settled().await;
    /// println!("{} servers", host.servers().len());
    /// # Ok(()) }
    /// ```
    pub async fn launch(
        config: HostConfig,
        mut opts: HostOptions,
    ) -> Result<(Host, Starting), HostError> {
        config.validate()?;
        let (handler_for, early) = (opts.take_handler_for(), opts.take_early());
        let shared = Arc::new(HostShared::new(&config, opts.handler, handler_for, early));
        let spawned = match opts.supervisor {
            Some(parent) => Actor::spawn_linked(None, HostSupervisor, shared.clone(), parent).await,
            None => Actor::spawn(None, HostSupervisor, shared.clone()).await,
        };
        let (actor, _) = spawned.map_err(|e| HostError::Actor(e.to_string()))?;
        let host = Host {
            _last: Arc::new(StopOnLastDrop(shared.clone(), actor.clone())),
            shared,
            actor,
        };
        // The starts are the host's, not this future's: dropped, it drops
        // the last handle, the host stops, and each start stops its client
        // when it returns.
        let ready_timeout = config.get_ready_timeout();
        let mut starts = Vec::with_capacity(config.servers.len());
        for (name, client) in config.servers {
            if config.lazy.contains(&name) {
                host.shared.add_lazy(&name, client)?;
                continue;
            }
            let ticket = host.shared.reserve(&name, &client)?;
            starts.push(host.start_server(ticket, client, OnFailure::Keep));
        }
        // Ends with the host (its stop, the last handle's drop, its actor's end).
        drop(revive::spawn(host.shared.clone(), host.actor.get_cell()));
        let starting = Starting {
            starts,
            shared: host.shared.clone(),
            ready_timeout,
        };
        Ok((host, starting))
    }

    /// Reads a config file ([`ServersFile::load`]) and starts its servers.
    /// Entries that are disabled or not stdio servers are logged and left
    /// out; use [`ServersFile`] to see them.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::host::Host;
    ///
    /// # async fn example() -> Result<(), conduit_mcp::host::HostError> {
    /// // A Claude Desktop / VS Code style file: {"mcpServers": {"time": {"command": "uvx", ...}}}
    /// let host = Host::load("mcp.json").await?;
    /// for server in host.servers() {
    ///     println!("{}: {:?}", server.name, server.status);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn load(path: impl AsRef<Path>) -> Result<Host, HostError> {
        let file = ServersFile::load(path)?;
        let config = HostConfig::from_file(&file)?;
        for u in &file.unsupported {
            warn!(server = %u.name, reason = %u.reason, file = %file.path.display(), "host: entry not supported; not started");
        }
        for name in &file.disabled {
            info!(server = %name, file = %file.path.display(), "host: entry disabled; not started");
        }
        Self::start(config).await
    }

    /// Adds the server `name` and starts it; returns once its process is
    /// spawned (its tools join the namespace when it is ready: see
    /// [`ready`](Self::ready)). Fails, leaving the host as it was, if the
    /// name is taken or refused (see [`HostConfig::validate`]), or the
    /// server cannot start.
    ///
    /// Cancel safety: dropping the future takes the server out of the host
    /// again and stops it (see [Cancellation](self#cancellation)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use conduit_mcp::ClientConfig;
    /// use serde_json::json;
    ///
    /// # async fn example(host: conduit_mcp::host::Host) -> Result<(), conduit_mcp::host::HostError> {
    /// host.add("time", ClientConfig::new("uvx").arg("mcp-server-time")).await?;
    /// host.ready(Duration::from_secs(30)).await;
    /// let now = host.call_tool("time__get_current_time", json!({ "timezone": "UTC" })).await?;
    /// println!("{}", now.joined_text());
    /// # Ok(()) }
    /// ```
    pub async fn add(
        &self,
        name: impl Into<String>,
        config: ClientConfig,
    ) -> Result<(), HostError> {
        self.add_with(&name.into(), config, OnFailure::Forget).await
    }

    /// [`add`](Self::add), a server that cannot start kept with its reason
    /// (as one of the first start is).
    async fn add_kept(&self, name: &str, config: ClientConfig) -> Result<(), HostError> {
        self.add_with(name, config, OnFailure::Keep).await
    }

    async fn add_with(
        &self,
        name: &str,
        config: ClientConfig,
        on_failure: OnFailure,
    ) -> Result<(), HostError> {
        let ticket = self.shared.reserve(name, &config)?;
        let guard = start::CancelOnDrop::new(&self.shared, ticket.clone());
        let result = start::join(self.start_server(ticket, config, on_failure)).await;
        guard.disarm();
        result
    }

    /// Starts the server of `ticket` in a task of the host's.
    fn start_server(
        &self,
        ticket: catalog::Ticket,
        config: ClientConfig,
        on_failure: OnFailure,
    ) -> tokio::task::JoinHandle<Result<(), HostError>> {
        start::spawn(
            &self.shared,
            self.actor.get_cell(),
            ticket,
            config,
            on_failure,
        )
    }

    /// Stops the server `name` and takes it out of the host and the
    /// namespace (a lazy server not started yet is only forgotten). Await
    /// the result's [`wait`](HostShutdown::wait) for its process to be
    /// gone.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::{Host, HostConfig, HostError};
    /// use conduit_mcp::ClientConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), HostError> {
    /// let config = HostConfig::new().lazy_server("time", ClientConfig::new("uvx").arg("mcp-server-time"));
    /// let host = Host::start(config).await?;
    /// host.remove("time")?.wait().await;
    /// assert!(!host.is_lazy("time"));
    /// assert!(matches!(host.remove("time"), Err(HostError::UnknownServer(_))));
    /// # Ok(()) }
    /// ```
    pub fn remove(&self, name: &str) -> Result<HostShutdown, HostError> {
        self.shared.remove(name)
    }

    /// Adds the server `name` as a lazy one: nothing runs until its first
    /// use (a call of one of its tools or prompts through the host, or
    /// [`start_lazy`](Self::start_lazy)). Its name is checked now, with
    /// the others' (see [`HostConfig::validate`]); its own options when it
    /// starts. Until then it is in [`lazy_servers`](Self::lazy_servers),
    /// not in [`servers`](Self::servers), and its items are in no list.
    ///
    /// ```no_run
    /// # async fn demo(host: conduit_mcp::host::Host) -> Result<(), conduit_mcp::host::HostError> {
    /// use conduit_mcp::ClientConfig;
    /// host.add_lazy("time", ClientConfig::new("uvx").arg("mcp-server-time"))?;
    /// assert_eq!(host.lazy_servers(), ["time"]);
    /// // Starts it, waits until it is listed, then calls it.
    /// host.call_tool("time__get_current_time", serde_json::json!({})).await?;
    /// # Ok(()) }
    /// ```
    pub fn add_lazy(&self, name: impl Into<String>, config: ClientConfig) -> Result<(), HostError> {
        self.shared.add_lazy(&name.into(), config)
    }

    /// Starts the lazy server `name` if it is not started yet, and waits
    /// until it is ready and listed or will never be, up to
    /// [`HostConfig::ready_timeout`]; for a server that is not lazy, only
    /// waits the same way. Concurrent calls share one start. A start that fails
    /// leaves the server lazy, for the next use to try again, and is
    /// [`HostError::LazyStart`].
    ///
    /// Cancel safety: the start is the host's; dropping the future neither
    /// stops it nor makes another caller's start fail.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::ClientConfig;
    ///
    /// # async fn example(host: conduit_mcp::host::Host) -> Result<(), conduit_mcp::host::HostError> {
    /// host.add_lazy("time", ClientConfig::new("uvx").arg("mcp-server-time"))?;
    /// // Start it now (at the start of a session, say) rather than on its first call.
    /// host.start_lazy("time").await?;
    /// assert!(!host.is_lazy("time"));
    /// # Ok(()) }
    /// ```
    pub async fn start_lazy(&self, name: &str) -> Result<(), HostError> {
        let timeout = self.shared.ready_timeout();
        let Some(start) = self.shared.lazy_start(name) else {
            if self.shared.client(name).is_none() && self.server(name).is_none() {
                return Err(HostError::UnknownServer(name.to_owned()));
            }
            self.shared.wait_one_settled(name, timeout).await;
            return Ok(());
        };
        let result = start
            .get_or_init(|| async {
                let (ticket, config) = match self.shared.reserve_lazy(name) {
                    Ok(catalog::Reserved::Now(ticket, config)) => (ticket, config),
                    // A first use dropped while it started: that start goes on.
                    Ok(catalog::Reserved::Already) => {
                        self.shared.wait_one_settled(name, timeout).await;
                        return Ok(());
                    }
                    Err(e) => return Err(e.to_string()),
                };
                info!(server = %name, "host: starting a lazy server on its first use");
                let started = self.start_server(ticket, *config, OnFailure::StaysLazy);
                match start::join(started).await {
                    Ok(()) => {
                        self.shared.wait_one_settled(name, timeout).await;
                        Ok(())
                    }
                    Err(HostError::Start { source, .. }) => Err(source.to_string()),
                    Err(e) => Err(e.to_string()),
                }
            })
            .await
            .clone();
        if result.is_ok() {
            self.shared.started_lazy(name, &start);
        }
        result.map_err(|reason| HostError::LazyStart {
            server: name.to_owned(),
            reason,
        })
    }

    /// The lazy servers not started yet (or whose first start is not over),
    /// by name.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::{Host, HostConfig};
    /// use conduit_mcp::ClientConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conduit_mcp::host::HostError> {
    /// let config = HostConfig::new()
    ///     .lazy_server("time", ClientConfig::new("uvx").arg("mcp-server-time"))
    ///     .lazy_server("fetch", ClientConfig::new("uvx").arg("mcp-server-fetch"));
    /// let host = Host::start(config).await?; // nothing runs yet
    /// assert_eq!(host.lazy_servers(), ["fetch", "time"]);
    /// assert!(host.servers().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn lazy_servers(&self) -> Vec<String> {
        self.shared.lazy_names()
    }

    /// Whether `name` is a lazy server not started yet (or whose first
    /// start is not over).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::{Host, HostConfig};
    /// use conduit_mcp::ClientConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conduit_mcp::host::HostError> {
    /// let host = Host::start(HostConfig::new()).await?;
    /// host.add_lazy("time", ClientConfig::new("uvx").arg("mcp-server-time"))?;
    /// assert!(host.is_lazy("time") && !host.is_lazy("fetch"));
    /// # Ok(()) }
    /// ```
    pub fn is_lazy(&self, name: &str) -> bool {
        self.shared.is_lazy(name)
    }

    /// The lazy server not started yet whose items the namespaced `name`
    /// would be (by its prefix).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::{Host, HostConfig};
    /// use conduit_mcp::ClientConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conduit_mcp::host::HostError> {
    /// let config = HostConfig::new().lazy_server("time", ClientConfig::new("uvx").arg("mcp-server-time"));
    /// let host = Host::start(config).await?;
    /// assert_eq!(host.lazy_owner("time__get_current_time").as_deref(), Some("time"));
    /// assert_eq!(host.lazy_owner("fetch__fetch"), None);
    /// # Ok(()) }
    /// ```
    pub fn lazy_owner(&self, name: &str) -> Option<String> {
        self.shared.lazy_owner(name)
    }

    /// Where a call of the item `name` goes; a lazy server whose prefix
    /// `name` has is started first.
    async fn route(&self, kind: ItemKind, name: &str) -> Result<Route, HostError> {
        let routed = self.shared.route(kind, name).await;
        // Unavailable: its first start is under way, for another call.
        let missed = matches!(
            routed,
            Err(HostError::UnknownTool(_)
                | HostError::UnknownPrompt(_)
                | HostError::Unavailable { .. })
        );
        match self.lazy_owner(name).filter(|_| missed) {
            Some(server) => {
                self.start_lazy(&server).await?;
                self.shared.route(kind, name).await
            }
            None => routed,
        }
    }

    /// Waits until every server is ready and listed, or will never be
    /// (gave up, could not start), up to `timeout`; returns every server's
    /// summary then.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// # async fn example(host: conduit_mcp::host::Host) {
    /// for server in host.ready(Duration::from_secs(30)).await {
    ///     println!("{}: {} tools, ready: {}", server.name, server.tools, server.is_ready());
    /// }
    /// # }
    /// ```
    pub async fn ready(&self, timeout: Duration) -> Vec<ServerSummary> {
        self.shared.wait_settled(timeout).await;
        self.servers()
    }

    /// Every server, by name.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::{Host, HostConfig};
    /// use conduit_mcp::{ClientConfig, Status};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conduit_mcp::host::HostError> {
    /// let config = HostConfig::new().server("broken", ClientConfig::new("/nonexistent/mcp-server"));
    /// let host = Host::start(config).await?; // a server that cannot start is kept
    /// let servers = host.servers();
    /// assert_eq!(servers.len(), 1);
    /// let Status::GaveUp(reason) = &servers[0].status else { unreachable!() };
    /// assert!(reason.starts_with("could not start"));
    /// # Ok(()) }
    /// ```
    pub fn servers(&self) -> Vec<ServerSummary> {
        self.shared.summaries()
    }

    /// The server `name`'s summary.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn example(host: conduit_mcp::host::Host) {
    /// if let Some(time) = host.server("time") {
    ///     println!("{} tools, ready after {:?}", time.tools, time.ready_after);
    /// }
    /// # }
    /// ```
    pub fn server(&self, name: &str) -> Option<ServerSummary> {
        self.servers().into_iter().find(|s| s.name == name)
    }

    /// The server `name`'s client, for anything the host does not route
    /// (resource templates, completions, subscriptions, raw requests).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(host: conduit_mcp::host::Host) -> Result<(), conduit_mcp::Error> {
    /// if let Some(client) = host.client("files") {
    ///     for template in client.list_resource_templates().await? {
    ///         println!("{}", template.uri_template);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn client(&self, name: &str) -> Option<Client> {
        self.shared.client(name)
    }

    /// Every item of `kind` in the namespace, by namespaced name, as its
    /// server listed it (see [`Listed`]; [`tools`](Self::tools) and its
    /// kin parse them).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::host::ItemKind;
    ///
    /// # fn example(host: conduit_mcp::host::Host) {
    /// for (name, listed) in host.listed(ItemKind::Tool) {
    ///     let (server, own) = (listed.server(), listed.own_name());
    ///     println!("{name}: {server}'s `{own}`, {} bytes of JSON", listed.json().len());
    /// }
    /// # }
    /// ```
    pub fn listed(&self, kind: ItemKind) -> Vec<(String, Listed)> {
        self.shared.holders(kind)
    }

    /// The first item of `kind` that `matches`, with its namespaced name:
    /// one item copied out, where [`listed`](Self::listed) copies the list.
    ///
    /// ```no_run
    /// # fn demo(host: &conduit_mcp::host::Host) {
    /// use conduit_mcp::host::ItemKind;
    /// let echo = host.find_listed(ItemKind::Tool, |l| l.server() == "a" && l.own_name() == "echo");
    /// # }
    /// ```
    pub fn find_listed(
        &self,
        kind: ItemKind,
        matches: impl Fn(&Listed) -> bool,
    ) -> Option<(String, Listed)> {
        self.shared.holder_where(kind, matches)
    }

    /// Who serves the namespaced `name` of `kind` now, without waiting.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::host::ItemKind;
    ///
    /// # fn example(host: conduit_mcp::host::Host) {
    /// if let Some(item) = host.owner(ItemKind::Tool, "time__get_current_time") {
    ///     assert_eq!((item.server.as_str(), item.name.as_str()), ("time", "get_current_time"));
    /// }
    /// # }
    /// ```
    pub fn owner(&self, kind: ItemKind, name: &str) -> Option<ItemRef> {
        self.shared.owner_of(kind, name)
    }

    /// The error a call of the namespaced `name` of `kind` gets now, without
    /// waiting, or `None` when it would reach its server: its server gave up
    /// and is [`HostError::Down`] until its revive (or
    /// [`HostError::Removed`] for good), is restarting or not listed yet
    /// ([`HostError::Unavailable`]), or no server has it
    /// ([`HostError::UnknownTool`] and its kin). For a front of its own that
    /// routes with [`owner`](Self::owner) and tells its callers why not.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::{Host, HostConfig, HostError, ItemKind};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), HostError> {
    /// let host = Host::start(HostConfig::new()).await?;
    /// assert!(matches!(
    ///     host.route_error(ItemKind::Tool, "time__now"),
    ///     Some(HostError::UnknownTool(_))
    /// ));
    /// # Ok(()) }
    /// ```
    pub fn route_error(&self, kind: ItemKind, name: &str) -> Option<HostError> {
        self.shared.route_error(kind, name)
    }

    /// What every namespaced name of `server` starts with (its sanitised
    /// name and the separator), whether the server runs or not.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::{Host, HostConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conduit_mcp::host::HostError> {
    /// let host = Host::start(HostConfig::new()).await?;
    /// assert_eq!(host.prefix("time"), "time__");
    /// assert_eq!(host.prefix("my.fx"), "my_fx__");
    /// # Ok(()) }
    /// ```
    pub fn prefix(&self, server: &str) -> String {
        self.shared.naming().prefix(server)
    }

    /// A counter bumped whenever a server's status or lists may have
    /// changed: wait on it (`changed().await`) instead of polling
    /// [`servers`](Self::servers).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(host: conduit_mcp::host::Host) {
    /// let mut changes = host.changes();
    /// while changes.changed().await.is_ok() {
    ///     println!("{} tools now", host.tools().len());
    /// }
    /// # }
    /// ```
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.changes()
    }

    /// Whether the host has stopped: [`stop`](Self::stop), its last handle
    /// dropped, or its actor ended however it ended (killed in your tree
    /// included). A stopped host serves nothing and adds nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::{Host, HostConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conduit_mcp::host::HostError> {
    /// let host = Host::start(HostConfig::new()).await?;
    /// assert!(!host.is_stopped());
    /// let shutdown = host.stop();
    /// assert!(host.is_stopped());
    /// shutdown.wait().await;
    /// # Ok(()) }
    /// ```
    pub fn is_stopped(&self) -> bool {
        self.shared.is_stopped()
    }

    /// The host's supervisor actor (to link or monitor from your tree).
    pub fn supervisor(&self) -> ActorCell {
        self.actor.get_cell()
    }

    /// Subscribes to the host's events from now on. Bounded: a subscriber
    /// that leaves more than
    /// [`max_queued_event_bytes`](HostConfig::max_queued_event_bytes)
    /// unread loses the next events (counted in [`HostEvents::dropped`]);
    /// keep reading. Use [`HostOptions::subscribe`] to see the first
    /// spawns too.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::host::HostEvent;
    ///
    /// # async fn example(host: conduit_mcp::host::Host) {
    /// let mut events = host.events();
    /// while let Some(event) = events.recv().await {
    ///     match event {
    ///         HostEvent::Listed { server, tools, .. } => println!("{server}: {tools} tools"),
    ///         HostEvent::Collision(c) => println!("{c}"),
    ///         other => println!("{}: {other:?}", other.server()),
    ///     }
    /// }
    /// # }
    /// ```
    pub fn events(&self) -> HostEvents {
        self.shared.subscribe()
    }

    /// Every tool of the namespace, by namespaced name.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn example(host: conduit_mcp::host::Host) {
    /// for tool in host.tools() {
    ///     println!("{} = {}'s `{}`", tool.name, tool.server, tool.tool.name);
    /// }
    /// # }
    /// ```
    pub fn tools(&self) -> Vec<HostTool> {
        let holders = self.shared.holders(ItemKind::Tool);
        holders.iter().map(|(name, h)| h.tool(name)).collect()
    }

    /// Every prompt of the namespace, by namespaced name.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn example(host: conduit_mcp::host::Host) {
    /// for prompt in host.prompts() {
    ///     println!("{}: {}", prompt.name, prompt.prompt["description"]);
    /// }
    /// # }
    /// ```
    pub fn prompts(&self) -> Vec<HostPrompt> {
        let holders = self.shared.holders(ItemKind::Prompt);
        holders.iter().map(|(name, h)| h.prompt(name)).collect()
    }

    /// Every resource of every server, by URI.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn example(host: conduit_mcp::host::Host) {
    /// for resource in host.resources() {
    ///     println!("{} (from {}): {}", resource.uri, resource.server, resource.resource["name"]);
    /// }
    /// # }
    /// ```
    pub fn resources(&self) -> Vec<HostResource> {
        let holders = self.shared.holders(ItemKind::Resource);
        holders.iter().map(|(uri, h)| h.resource(uri)).collect()
    }

    /// The names that are contested now: who holds each, who is left out.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn example(host: conduit_mcp::host::Host) {
    /// for collision in host.collisions() {
    ///     eprintln!("{collision}"); // "Tool name `a__echo`: a's `echo` keeps it, ..."
    /// }
    /// # }
    /// ```
    pub fn collisions(&self) -> Vec<Collision> {
        self.shared.collisions()
    }

    /// Calls the tool `name` (namespaced, as in [`tools`](Self::tools))
    /// with the server's default timeout.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use serde_json::json;
    ///
    /// # async fn example(host: conduit_mcp::host::Host) -> Result<(), conduit_mcp::host::HostError> {
    /// let result = host.call_tool("time__get_current_time", json!({ "timezone": "UTC" })).await?;
    /// println!("{}", result.joined_text());
    /// # Ok(()) }
    /// ```
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, HostError> {
        self.call_tool_with(name, arguments, RequestOptions::new())
            .await
    }

    /// Calls the tool `name` with options (timeout, progress, cancellation).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use conduit_mcp::RequestOptions;
    /// use serde_json::json;
    ///
    /// # async fn example(host: conduit_mcp::host::Host) -> Result<(), conduit_mcp::host::HostError> {
    /// let opts = RequestOptions::new().timeout(Duration::from_secs(5));
    /// let args = json!({ "url": "https://example.com" });
    /// let result = host.call_tool_with("fetch__fetch", args, opts).await?;
    /// println!("{}", result.joined_text());
    /// # Ok(()) }
    /// ```
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        opts: RequestOptions,
    ) -> Result<CallToolResult, HostError> {
        let route = self.route(ItemKind::Tool, name).await?;
        route
            .client()
            .call_tool(route.own(), arguments, opts)
            .await
            .map_err(|source| route.failed(source))
    }

    /// Gets the prompt `name` (namespaced) with `arguments`, a JSON object
    /// of string values (see [`Client::get_prompt`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use serde_json::json;
    ///
    /// # async fn example(host: conduit_mcp::host::Host) -> Result<(), conduit_mcp::host::HostError> {
    /// let prompt = host.get_prompt("git__commit_message", json!({ "style": "short" })).await?;
    /// println!("{} messages", prompt.messages.len());
    /// # Ok(()) }
    /// ```
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<GetPromptResult, HostError> {
        let route = self.route(ItemKind::Prompt, name).await?;
        route
            .client()
            .get_prompt(route.own(), arguments)
            .await
            .map_err(|source| route.failed(source))
    }

    /// Reads the resource `uri` from the server that holds it (the first
    /// that listed it).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(host: conduit_mcp::host::Host) -> Result<(), conduit_mcp::host::HostError> {
    /// let read = host.read_resource("file:///srv/project/README.md").await?;
    /// if let Some(text) = read.contents.first().and_then(|c| c.as_text()) {
    ///     println!("{text}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, HostError> {
        let route = self.route(ItemKind::Resource, uri).await?;
        route
            .client()
            .read_resource(route.own())
            .await
            .map_err(|source| route.failed(source))
    }

    /// Stops every server and the host's actor, and returns at once. Calls
    /// in flight fail; no server is added or restarted after this. Await
    /// the result's [`wait`](HostShutdown::wait) for every process to be
    /// gone.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(host: conduit_mcp::host::Host) {
    /// for server in host.stop().wait().await {
    ///     println!("{}: {} processes shut down", server.name, server.reports.len());
    /// }
    /// # }
    /// ```
    pub fn stop(&self) -> HostShutdown {
        let shutdown = self.shared.stop_all();
        self.actor.stop(Some("host stopped".into()));
        shutdown
    }
}

/// The starts [`Host::launch`] began. It holds no host handle, so the
/// host stops when its last handle goes, whatever this is waiting for.
pub struct Starting {
    starts: Vec<tokio::task::JoinHandle<Result<(), HostError>>>,
    shared: Arc<HostShared>,
    ready_timeout: Duration,
}

impl std::fmt::Debug for Starting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Starting")
            .field("starts", &self.starts.len())
            .finish_non_exhaustive()
    }
}

impl Starting {
    /// Waits until every start returned, then until every server is ready
    /// and listed or will never be, up to the ready timeout. A panic in a
    /// start is the caller's.
    pub(crate) async fn finish(mut self) {
        for s in std::mem::take(&mut self.starts) {
            let _ = start::join(s).await;
        }
        self.settled().await;
    }

    /// Waits until every start returned: each server has its client, or
    /// failed (a start that panicked is logged). Cancel safe: starts that
    /// returned are not waited for again.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::host::{Host, HostOptions};
    ///
    /// # async fn example(config: conduit_mcp::host::HostConfig) -> Result<(), conduit_mcp::host::HostError> {
    /// let (host, mut starting) = Host::launch(config, HostOptions::new()).await?;
    /// starting.returned().await; // every server has its client now, or failed
    /// let clients = host.servers().iter().filter(|s| host.client(&s.name).is_some()).count();
    /// println!("{clients} clients");
    /// # Ok(()) }
    /// ```
    pub async fn returned(&mut self) {
        while let Some(start) = self.starts.first_mut() {
            let end = start.await;
            self.starts.remove(0);
            if let Err(e) = end {
                warn!(error = %e, "host: a server's start failed");
            }
        }
    }

    /// Waits until every server is ready and listed or will never be, up to
    /// [`HostConfig::ready_timeout`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::host::{Host, HostOptions};
    ///
    /// # async fn example(config: conduit_mcp::host::HostConfig) -> Result<(), conduit_mcp::host::HostError> {
    /// let (host, starting) = Host::launch(config, HostOptions::new()).await?;
    /// tokio::spawn(async move {
    ///     starting.settled().await;
    ///     println!("every server is ready, or never will be");
    /// });
    /// // Serve with `host` meanwhile.
    /// # let _ = host;
    /// # Ok(()) }
    /// ```
    pub async fn settled(self) {
        self.shared.wait_settled(self.ready_timeout).await;
    }
}

/// Returned by [`Host::stop`] and [`Host::remove`]: await the end of the
/// servers' shutdowns.
#[derive(Debug)]
#[must_use = "the stop has begun; await .wait() to know when the servers are gone"]
pub struct HostShutdown {
    servers: Vec<(String, ClientShutdown)>,
    /// Servers that were still starting: each start stops its client when
    /// it returns, and sends its shutdown here.
    starting: Vec<oneshot::Receiver<(String, ClientShutdown)>>,
}

/// One server's processes, shut down.
#[derive(Debug)]
#[non_exhaustive]
pub struct ServerShutdown {
    /// The server's name.
    pub name: String,
    /// One report per process its client started (see
    /// [`ClientShutdown::wait`]).
    pub reports: Vec<ShutdownReport>,
}

impl HostShutdown {
    pub(crate) fn empty() -> Self {
        HostShutdown {
            servers: Vec::new(),
            starting: Vec::new(),
        }
    }

    /// Waits until every server process is shut down and reaped (a server
    /// that was still starting: once its start returned and it was
    /// stopped). The shutdowns run at the same time; this takes as long as
    /// the slowest.
    ///
    /// Cancel safety: cancel safe; the shutdowns go on regardless.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(host: conduit_mcp::host::Host) -> Result<(), conduit_mcp::host::HostError> {
    /// for server in host.remove("time")?.wait().await {
    ///     for report in &server.reports {
    ///         println!("{} pid {}: SIGKILL sent: {}", server.name, report.pid, report.sent_kill);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn wait(self) -> Vec<ServerShutdown> {
        let mut out = Vec::with_capacity(self.servers.len());
        for (name, shutdown) in self.servers {
            out.push(ServerShutdown {
                name,
                reports: shutdown.wait().await,
            });
        }
        for starting in self.starting {
            // Gone without a client: the start failed, nothing ran.
            if let Ok((name, shutdown)) = starting.await {
                out.push(ServerShutdown {
                    name,
                    reports: shutdown.wait().await,
                });
            }
        }
        out
    }
}
