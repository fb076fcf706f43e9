//! The supervised gateway (feature `gateway`): a `Host`'s servers behind
//! one Streamable HTTP endpoint (`mcp serve`).
//!
#![doc = include_str!("../docs/gateway.md")]

use std::io;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::client::ClientConfig;
use crate::config_file::ServersFile;
use crate::host::{Host, HostConfig, HostError, HostOptions, ServerShutdown};

mod auth;
mod calllog;
mod config;
mod endpoints;
mod forward;
mod glob;
mod http;
mod listen;
mod metrics;
mod namespace;
mod notes;
mod passthrough;
mod refusal;
mod server_requests;
mod state;
mod subscribe;
mod target;
mod watches;

pub use auth::{Auth, ClientGrant, MIN_TOKEN_LEN};
pub use config::{
    HttpGatewayConfig, ToolFilter, DEFAULT_GRACE, DEFAULT_INPUT_TIMEOUT, DEFAULT_MAX_HELD_CALLS,
};
pub use refusal::Refusal;

use self::server_requests::ServerRequests;
use self::state::{GatewayState, Phase};

/// Why a gateway could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpGatewayError {
    /// The host could not start, or a server name was refused.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The call log could not be opened.
    #[error("cannot open the call log {}: {source}", path.display())]
    CallLog {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// A [`Host`] served over Streamable HTTP (see the [module docs](self)).
/// Clones share the same gateway.
#[derive(Clone)]
pub struct HttpGateway {
    state: Arc<GatewayState>,
    app: axum::Router,
}

impl std::fmt::Debug for HttpGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpGateway")
            .field("host", &self.state.host())
            .field("config", &self.state.config())
            .finish_non_exhaustive()
    }
}

impl HttpGateway {
    /// Starts the host of `host` (every server but the lazy ones of
    /// `config`) and the gateway before it. Returns once the servers are
    /// ready or its [`ready_timeout`](HostConfig::ready_timeout) has passed (see [`Host::start`]); use
    /// [`launch`](Self::launch) to serve while they start.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::client::ClientConfig;
    /// use conduit_mcp::gateway::{HttpGateway, HttpGatewayConfig};
    /// use conduit_mcp::host::HostConfig;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let host = HostConfig::new().server("time", ClientConfig::new("uvx").arg("mcp-server-time"));
    /// let gateway = HttpGateway::start(host, HttpGatewayConfig::new()).await?;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8808").await?;
    /// gateway.serve(listener).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start(
        host: HostConfig,
        config: HttpGatewayConfig,
    ) -> Result<HttpGateway, HttpGatewayError> {
        Self::start_with(host, HostOptions::new(), config).await
    }

    /// [`start`](Self::start) under your supervisor or with an early event
    /// subscriber ([`HostOptions`]). The servers' requests (sampling,
    /// elicitation, roots) are the gateway's to answer: a handler set in
    /// `opts` is replaced.
    ///
    /// Cancel safety: dropping the future stops every server it started.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::client::ClientConfig;
    /// use conduit_mcp::gateway::{HttpGateway, HttpGatewayConfig};
    /// use conduit_mcp::host::{HostConfig, HostOptions};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let host = HostConfig::new().server("time", ClientConfig::new("uvx").arg("mcp-server-time"));
    /// let (opts, events) = HostOptions::new().subscribe(); // every event from the first
    /// let gateway = HttpGateway::start_with(host, opts, HttpGatewayConfig::new()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start_with(
        host: HostConfig,
        opts: HostOptions,
        config: HttpGatewayConfig,
    ) -> Result<HttpGateway, HttpGatewayError> {
        let gateway = Self::launch_with(host, opts, config).await?;
        gateway.started().await;
        Ok(gateway)
    }

    /// The gateway of [`start`](Self::start), returned as soon as its host
    /// runs, its servers still starting: its routes answer at once.
    /// Until the start is over (every server ready, or given up, or
    /// its ready timeout passed: what [`start`](Self::start) waits
    /// for), `GET /health` answers 503 with `"status": "starting"` and the
    /// other requests wait for it, then are answered as after the start.
    /// [`started`](Self::started) waits for it too. Fails as `start` does
    /// (an invalid option, a refused name, a call log that cannot open).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::client::ClientConfig;
    /// use conduit_mcp::gateway::{HttpGateway, HttpGatewayConfig};
    /// use conduit_mcp::host::HostConfig;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let host = HostConfig::new().server("time", ClientConfig::new("uvx").arg("mcp-server-time"));
    /// let gateway = HttpGateway::launch(host, HttpGatewayConfig::new()).await?; // servers still starting
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8808").await?;
    /// gateway.serve(listener).await?; // `/health` says "starting" meanwhile
    /// # Ok(()) }
    /// ```
    pub async fn launch(
        host: HostConfig,
        config: HttpGatewayConfig,
    ) -> Result<HttpGateway, HttpGatewayError> {
        Self::launch_with(host, HostOptions::new(), config).await
    }

    /// [`launch`](Self::launch) with [`HostOptions`], as
    /// [`start_with`](Self::start_with).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::client::ClientConfig;
    /// use conduit_mcp::gateway::{HttpGateway, HttpGatewayConfig};
    /// use conduit_mcp::host::{HostConfig, HostOptions};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let host = HostConfig::new().server("time", ClientConfig::new("uvx").arg("mcp-server-time"));
    /// let (opts, events) = HostOptions::new().subscribe(); // the starts' events too
    /// let gateway = HttpGateway::launch_with(host, opts, HttpGatewayConfig::new()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn launch_with(
        mut host: HostConfig,
        mut opts: HostOptions,
        config: HttpGatewayConfig,
    ) -> Result<HttpGateway, HttpGatewayError> {
        // Lazy servers are the host's: their names are checked with the
        // others now, not at their first use.
        for (name, c) in &config.lazy {
            host = host.lazy_server(name.clone(), c.clone());
        }
        host.validate().map_err(HostError::from)?;
        let call_log = match &config.call_log {
            Some(path) => Some(calllog::CallLog::open(path, config.log_arguments).map_err(
                |source| HttpGatewayError::CallLog {
                    path: path.clone(),
                    source,
                },
            )?),
            None => None,
        };
        let relay = Arc::new(ServerRequests::default());
        for (name, roots) in &config.roots {
            relay.set_roots(name, Some(roots));
        }
        let factory = relay.clone();
        opts.handler = None;
        opts = opts.handler_per_server(move |name| factory.handler_for(name));
        let (host, starting) = Host::launch(host, opts).await?;
        let state = GatewayState::new(host, starting, config, relay, call_log);
        let app = http::router(state.clone());
        // The start's end is the gateway's: the task holds no handle of it,
        // so a gateway dropped meanwhile stops its host at once.
        let over = StartOver(Arc::downgrade(&state));
        let starts = state.starts().clone();
        tokio::spawn(async move {
            let mut held = starts.lock().await;
            if let Some(s) = held.as_mut() {
                s.returned().await;
            }
            let starting = held.take();
            drop(held);
            if let Some(s) = starting {
                s.settled().await;
            }
            drop(over);
        });
        Ok(HttpGateway { state, app })
    }

    /// Waits until the gateway's start is over (see [`launch`](Self::launch);
    /// at once after [`start`](Self::start)), or it is stopped; returns the
    /// servers as they are then.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(gateway: conduit_mcp::gateway::HttpGateway) {
    /// for server in gateway.started().await {
    ///     println!("{}: {:?}, {} tools", server.name, server.status, server.tools);
    /// }
    /// # }
    /// ```
    pub async fn started(&self) -> Vec<crate::host::ServerSummary> {
        self.state.start_over().await;
        self.state.host().servers()
    }

    /// The host behind the gateway.
    pub fn host(&self) -> &Host {
        self.state.host()
    }

    /// The gateway's routes (`/mcp`, `/servers/{name}/mcp`, `/health`,
    /// `/metrics`), to mount in an application that owns its listener.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(gateway: conduit_mcp::gateway::HttpGateway) -> Result<(), Box<dyn std::error::Error>> {
    /// let app = axum::Router::new()
    ///     .route("/", axum::routing::get(|| async { "see /mcp" }))
    ///     .merge(gateway.axum_router());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8808").await?;
    /// axum::serve(listener, app).await?;
    /// # Ok(()) }
    /// ```
    pub fn axum_router(&self) -> axum::Router {
        self.app.clone()
    }

    /// Serves on `listener` (at most its [`max_connections`](crate::server::http::HttpConfig::max_connections))
    /// until [`shutdown`](Self::shutdown): then no connection is accepted,
    /// and those still open are cut once the grace (and 2 s more) has
    /// passed. Returns when every connection is closed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(gateway: conduit_mcp::gateway::HttpGateway) -> Result<(), Box<dyn std::error::Error>> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8808").await?;
    /// let serving = tokio::spawn({
    ///     let gateway = gateway.clone();
    ///     async move { gateway.serve(listener).await }
    /// });
    /// tokio::signal::ctrl_c().await?;
    /// gateway.shutdown().await;
    /// serving.await??; // every connection closed
    /// # Ok(()) }
    /// ```
    pub async fn serve(&self, listener: TcpListener) -> io::Result<()> {
        if let Ok(addr) = listener.local_addr() {
            tracing::info!(%addr, "gateway: listening");
        }
        // The listener's signal: the gateway is closing, or gone.
        let (closing, done) = tokio::sync::watch::channel(false);
        let mut phase = self.state.watch_phase();
        tokio::spawn(async move {
            let _ = phase.wait_for(|p| *p >= Phase::Closing).await;
            closing.send_replace(true);
        });
        crate::server::http::serve(
            listener,
            self.app.clone(),
            &self.state.config().http,
            done,
            self.state.config().flush(),
        )
        .await
    }

    /// Stops: no new connection and a 503 for new requests; calls in
    /// flight get [`HttpGatewayConfig::grace`]; every session ends; every server
    /// stops and its processes are reaped before this returns.
    ///
    /// Cancel safety: the stop goes on if the future is dropped.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(gateway: conduit_mcp::gateway::HttpGateway) {
    /// for stopped in gateway.shutdown().await {
    ///     println!("{}: {} process(es) reaped", stopped.name, stopped.reports.len());
    /// }
    /// # }
    /// ```
    pub async fn shutdown(&self) -> Vec<ServerShutdown> {
        let state = &self.state;
        state.enter(Phase::Closing);
        let made = state.made();
        tracing::info!(endpoints = made.len(), grace = ?state.config().grace, "gateway: stopping");
        for (_, m) in &made {
            m.service().handle().stop();
        }
        for (_, m) in made {
            m.service().stopped().await;
        }
        // A start still under way would end with the host's actor, its
        // process going without this stop waiting for it: the starts
        // return first (at once: a start returns once its process runs).
        let returned = async {
            if let Some(s) = state.starts().lock().await.as_mut() {
                s.returned().await;
            }
        };
        if tokio::time::timeout(SPAWN_WAIT, returned).await.is_err() {
            tracing::warn!(wait = ?SPAWN_WAIT, "gateway: a server's start did not return; stopping without it");
        }
        let reports = state.host().stop().wait().await;
        state.enter(Phase::Stopped);
        tracing::info!(
            servers = reports.len(),
            "gateway: stopped; every server process is gone"
        );
        reports
    }

    /// Adds server `name` (started now, or on first use when `lazy`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::client::ClientConfig;
    /// use conduit_mcp::gateway::ToolFilter;
    ///
    /// # async fn example(gateway: conduit_mcp::gateway::HttpGateway) -> Result<(), Box<dyn std::error::Error>> {
    /// let files = ClientConfig::new("mcp-files").arg("/srv/docs");
    /// gateway.add_server("files", files, Some(ToolFilter::all().allow(["read_*"])), false).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_server(
        &self,
        name: &str,
        config: ClientConfig,
        tools: Option<ToolFilter>,
        lazy: bool,
    ) -> Result<(), HostError> {
        let host = self.state.host();
        if host.is_lazy(name) || host.server(name).is_some() {
            return Err(HostError::Duplicate(name.to_owned()));
        }
        // Before the server lists: none of its tools is served unfiltered.
        self.state.set_filter(name, tools);
        let added = match lazy {
            true => host.add_lazy(name, config),
            false => host.add(name, config).await,
        };
        match &added {
            Ok(()) => self.state.watch_server(name),
            Err(HostError::Duplicate(_)) => {}
            Err(_) => self.state.set_filter(name, None),
        }
        added
    }

    /// Stops server `name` and takes it out (its `/servers/NAME/mcp`
    /// sessions end; `/mcp`'s sessions are told its items are gone).
    /// Returns once its processes are reaped.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(gateway: conduit_mcp::gateway::HttpGateway) -> Result<(), Box<dyn std::error::Error>> {
    /// gateway.remove_server("files").await?; // its processes are gone now
    /// assert!(gateway.host().server("files").is_none());
    /// # Ok(()) }
    /// ```
    pub async fn remove_server(&self, name: &str) -> Result<(), HostError> {
        self.state.drop_endpoints(name);
        let shutdown = self.state.host().remove(name)?;
        shutdown.wait().await;
        self.state.set_filter(name, None);
        Ok(())
    }

    /// Applies a config file read again (`mcp serve --watch`), as
    /// [`Host::reload`] does, and the file's tool filters with it: the
    /// sessions of `/servers/NAME/mcp` end for a server restarted or
    /// removed; the others and their sessions are untouched. `previous` is
    /// the file as last applied.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::config_file::ServersFile;
    ///
    /// # async fn example(gateway: conduit_mcp::gateway::HttpGateway) -> Result<(), Box<dyn std::error::Error>> {
    /// let previous = ServersFile::load(".mcp.json")?;
    /// // ... the file changes ...
    /// let next = ServersFile::load(".mcp.json")?;
    /// let done = gateway.reload(&previous, &next).await;
    /// println!("restarted {:?}, added {:?}, removed {:?}", done.restarted, done.added, done.removed);
    /// # Ok(()) }
    /// ```
    pub async fn reload(&self, previous: &ServersFile, next: &ServersFile) -> crate::host::Reload {
        let state = &self.state;
        // Before the servers start: each lists through its filter from
        // its first listing.
        for name in next.servers.keys() {
            let options = next.serve.get(name).cloned().unwrap_or_default();
            state.set_filter(name, Some(ToolFilter::from_options(&options)));
            state.relay().set_roots(name, Some(&options.roots));
        }
        let done = state.host().reload(previous, next).await;
        for name in done.removed.iter().chain(&done.restarted) {
            state.drop_endpoints(name);
        }
        for name in &done.removed {
            state.set_filter(name, None);
            state.relay().set_roots(name, None);
        }
        for name in done.added.iter().chain(&done.restarted) {
            state.watch_server(name);
        }
        done
    }
}

/// How long a stop waits for the servers' starts to return.
const SPAWN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Ends a gateway's start when dropped (its start returned, or panicked):
/// the servers are followed from then on and held requests go on.
struct StartOver(std::sync::Weak<GatewayState>);

impl Drop for StartOver {
    fn drop(&mut self) {
        let Some(state) = self.0.upgrade() else {
            return;
        };
        state.watch_all();
        state.enter(Phase::Serving);
        tracing::info!(
            servers = state.host().servers().len(),
            lazy = state.host().lazy_servers().len(),
            "gateway: started"
        );
    }
}
