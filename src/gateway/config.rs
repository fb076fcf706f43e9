//! [`HttpGatewayConfig`]: how an [`HttpGateway`](super::HttpGateway) serves its host:
//! who may call it ([`Auth`]), from which browser origins, which tools of
//! each server are served ([`ToolFilter`]), which servers start on first
//! use, the stop grace, and the HTTP limits of each endpoint.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::client::ClientConfig;
use crate::config_file::{ServeOptions, ServersFile};
use crate::protocol::{Implementation, Root};
use crate::secret::Secret;
use crate::server::http::{Allow, HttpConfig};
use crate::server::ServerConfig;

use super::auth::Auth;
use super::glob::{self, Glob};

/// Default [`HttpGatewayConfig::grace`]: 10 s.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);
/// Default [`HttpGatewayConfig::input_timeout`]: 5 minutes.
pub const DEFAULT_INPUT_TIMEOUT: Duration = Duration::from_secs(300);
/// Default [`HttpGatewayConfig::max_held_calls`].
pub const DEFAULT_MAX_HELD_CALLS: usize = 256;

/// Which tools of one server are served: listed and callable alike.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    allow: Vec<Glob>,
    deny: Vec<Glob>,
}

impl ToolFilter {
    /// Every tool.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::ToolFilter;
    ///
    /// assert!(ToolFilter::all().allows("delete_everything"));
    /// ```
    pub fn all() -> Self {
        Self::default()
    }

    /// Only tools matching one of `patterns` (`*`, `?`), unless denied.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::ToolFilter;
    ///
    /// let filter = ToolFilter::all().allow(["get_*", "list_*"]);
    /// assert!(filter.allows("get_weather"));
    /// assert!(!filter.allows("set_weather"));
    /// ```
    pub fn allow<I: IntoIterator<Item = S>, S: AsRef<str>>(mut self, patterns: I) -> Self {
        self.allow
            .extend(patterns.into_iter().map(|p| Glob::new(p.as_ref())));
        self
    }

    /// No tool matching one of `patterns` (deny wins over allow).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::ToolFilter;
    ///
    /// let filter = ToolFilter::all().allow(["*_file"]).deny(["delete_*"]);
    /// assert!(filter.allows("read_file"));
    /// assert!(!filter.allows("delete_file")); // deny wins
    /// ```
    pub fn deny<I: IntoIterator<Item = S>, S: AsRef<str>>(mut self, patterns: I) -> Self {
        self.deny
            .extend(patterns.into_iter().map(|p| Glob::new(p.as_ref())));
        self
    }

    /// Whether the tool `name` (the server's own name) is served.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::ToolFilter;
    ///
    /// let filter = ToolFilter::all().deny(["drop_?"]);
    /// assert!(filter.allows("drop_table"));
    /// assert!(!filter.allows("drop_x"));
    /// ```
    pub fn allows(&self, name: &str) -> bool {
        (self.allow.is_empty() || glob::any(&self.allow, name)) && !glob::any(&self.deny, name)
    }

    /// The filter a config file's `conduit.tools` sets.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::config_file::ServeOptions;
    /// use conduit_mcp::gateway::ToolFilter;
    ///
    /// let mut options = ServeOptions::default();
    /// options.tools_deny = vec!["*_delete".to_owned()];
    /// let filter = ToolFilter::from_options(&options);
    /// assert!(!filter.allows("file_delete"));
    /// ```
    pub fn from_options(options: &ServeOptions) -> Self {
        Self::all()
            .allow(&options.tools_allow)
            .deny(&options.tools_deny)
    }
}

/// How an [`HttpGateway`](super::HttpGateway) serves its host.
///
/// The defaults are the safe ones: no token (so bind loopback), loopback
/// `Host` and `Origin` only, every tool served, a 10 s stop grace.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpGatewayConfig {
    /// Who may call (default [`Auth::None`]). `/health` needs no token.
    pub auth: Auth,
    /// A token of its own for `/metrics` (no client's token then reads
    /// it, unless the client is an operator: [`ClientGrant::operator`](super::auth::ClientGrant::operator)).
    /// Without it and without operators, `/metrics` takes the one
    /// [`Auth::Bearer`] token, and with no token at all answers loopback
    /// peers only. It reaches no server.
    pub metrics_token: Option<Secret>,
    /// Browser origins allowed besides loopback ones (`Origin` headers; a
    /// request without one is not from a browser and passes). Others get
    /// 403. `"*"` allows any.
    pub allowed_origins: Vec<String>,
    /// Accepted `Host` headers (DNS rebinding): [`Allow::Loopback`] by
    /// default; a gateway reached under other names lists them, or uses
    /// [`Allow::Any`] behind a token.
    pub allowed_hosts: Allow,
    /// Per server: which of its tools are served.
    pub tools: BTreeMap<String, ToolFilter>,
    /// Servers started on their first use (a call, a listing of
    /// `/servers/NAME/mcp`, or `/mcp`'s lists), not with the host.
    pub lazy: BTreeMap<String, ClientConfig>,
    /// Per server: the roots the gateway answers its `roots/list` with when
    /// no client's call is in flight on it (at its start, say); none by
    /// default. During a call the call's client is asked.
    pub roots: BTreeMap<String, Vec<Root>>,
    /// On [`HttpGateway::shutdown`](super::HttpGateway::shutdown): how long
    /// calls in flight get to finish before they are answered with an
    /// error and every server stops.
    pub grace: Duration,
    /// A 2026-07-28 client whose call is waiting for its input (a 2025-11-25
    /// server asked for sampling, elicitation or roots) has this long to
    /// send it; then the server's request fails and the call is cancelled.
    /// The endpoints' [`ServerConfig::held_input_timeout`](crate::server::ServerConfig::held_input_timeout).
    pub input_timeout: Duration,
    /// The most calls kept waiting for their client's input at once, per
    /// endpoint (each holds a server's call open), a quarter of them per
    /// client; past it, a server's request for input is refused. The
    /// endpoints' [`ServerConfig::max_held_calls`](crate::server::ServerConfig::max_held_calls).
    pub max_held_calls: usize,
    /// One JSON line per call to this file (time, client, server, method,
    /// tool, duration, outcome), bounded in bytes: a name over 256 bytes is
    /// cut there and marked `…(cut)`, arguments whose JSON text is over
    /// 4 KiB are logged as that text cut and marked; when more than 4 MiB
    /// of lines wait for the disk, lines are dropped, counted
    /// (`mcp_gateway_call_log_dropped_lines_total`) and said in the log by
    /// a `{"time", "dropped": N}` line before the next one.
    pub call_log: Option<PathBuf>,
    /// With [`call_log`](Self::call_log): each call's arguments too.
    pub log_arguments: bool,
    /// The HTTP limits of every endpoint (sessions, bytes, connections,
    /// keep-alive; see [`HttpConfig`]). Its identity, path, hosts, origins
    /// and authorization are the gateway's.
    pub http: HttpConfig,
}

impl Default for HttpGatewayConfig {
    fn default() -> Self {
        HttpGatewayConfig {
            auth: Auth::None,
            metrics_token: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Allow::Loopback,
            tools: BTreeMap::new(),
            lazy: BTreeMap::new(),
            roots: BTreeMap::new(),
            grace: DEFAULT_GRACE,
            input_timeout: DEFAULT_INPUT_TIMEOUT,
            max_held_calls: DEFAULT_MAX_HELD_CALLS,
            call_log: None,
            log_arguments: false,
            http: HttpConfig::new(ServerConfig::new(Implementation::new(
                "conduit-mcp-gateway",
                env!("CARGO_PKG_VERSION"),
            ))),
        }
    }
}

impl HttpGatewayConfig {
    /// How long connections get after the stop begins (the grace, and 2 s
    /// more for a client reading its last events) before they are cut.
    pub(crate) fn flush(&self) -> Duration {
        self.grace.saturating_add(Duration::from_secs(2))
    }

    /// The defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::{Auth, HttpGatewayConfig, DEFAULT_GRACE};
    ///
    /// let config = HttpGatewayConfig::new();
    /// assert!(matches!(config.auth, Auth::None));
    /// assert_eq!(config.grace, DEFAULT_GRACE);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The tool filters and roots of a config file's servers
    /// (`conduit.tools`, `conduit.roots`). Its lazy servers are split out
    /// by [`split_lazy`](Self::split_lazy).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::config_file::ServersFile;
    /// use conduit_mcp::gateway::HttpGatewayConfig;
    /// use std::path::Path;
    ///
    /// let text = r#"{ "mcpServers": { "files": {
    ///     "command": "mcp-files",
    ///     "conduit": { "tools": { "deny": ["*_delete"] } }
    /// } } }"#;
    /// let file = ServersFile::parse(text, Path::new("/etc/mcp/servers.json"), &|_| None)?;
    /// let config = HttpGatewayConfig::from_file(&file);
    /// assert!(!config.tools["files"].allows("file_delete"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_file(file: &ServersFile) -> Self {
        let mut c = Self::default();
        for (name, options) in &file.serve {
            let filter = ToolFilter::from_options(options);
            if filter != ToolFilter::all() {
                c.tools.insert(name.clone(), filter);
            }
            if !options.roots.is_empty() {
                c.roots.insert(name.clone(), options.roots.clone());
            }
        }
        c
    }

    /// Moves the servers a config file marks `conduit.lazy` out of
    /// `servers` (the host's) into [`lazy`](Self::lazy).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::config_file::ServersFile;
    /// use conduit_mcp::gateway::HttpGatewayConfig;
    /// use std::path::Path;
    ///
    /// let text = r#"{ "mcpServers": {
    ///     "time": { "command": "mcp-time" },
    ///     "search": { "command": "mcp-search", "conduit": { "lazy": true } }
    /// } }"#;
    /// let file = ServersFile::parse(text, Path::new("/etc/mcp/servers.json"), &|_| None)?;
    /// let mut servers = file.servers.clone();
    /// let mut config = HttpGatewayConfig::from_file(&file);
    /// config.split_lazy(&file, &mut servers);
    /// assert!(servers.contains_key("time") && !servers.contains_key("search"));
    /// assert!(config.lazy.contains_key("search"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn split_lazy(&mut self, file: &ServersFile, servers: &mut BTreeMap<String, ClientConfig>) {
        for (name, options) in &file.serve {
            if options.lazy {
                if let Some(c) = servers.remove(name) {
                    self.lazy.insert(name.clone(), c);
                }
            }
        }
    }

    /// Sets [`auth`](Self::auth) (default [`Auth::None`]).
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// Sets [`metrics_token`](Self::metrics_token) (default none).
    pub fn metrics_token(mut self, token: Secret) -> Self {
        self.metrics_token = Some(token);
        self
    }

    /// Allows one more browser origin.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::HttpGatewayConfig;
    ///
    /// let config = HttpGatewayConfig::new().allow_origin("https://app.example.com");
    /// assert_eq!(config.allowed_origins, ["https://app.example.com"]);
    /// ```
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Sets [`allowed_hosts`](Self::allowed_hosts) (default [`Allow::Loopback`]).
    pub fn allowed_hosts(mut self, allow: Allow) -> Self {
        self.allowed_hosts = allow;
        self
    }

    /// Sets the tool filter of `server`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::{HttpGatewayConfig, ToolFilter};
    ///
    /// let config = HttpGatewayConfig::new().tools("files", ToolFilter::all().allow(["read_*"]));
    /// assert!(!config.tools["files"].allows("write_file"));
    /// ```
    pub fn tools(mut self, server: impl Into<String>, filter: ToolFilter) -> Self {
        self.tools.insert(server.into(), filter);
        self
    }

    /// Sets the roots `server` gets when it asks outside any client's call.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::HttpGatewayConfig;
    /// use conduit_mcp::protocol::Root;
    ///
    /// let config = HttpGatewayConfig::new().roots("files", [Root::new("file:///srv/docs", "docs")]);
    /// assert_eq!(config.roots["files"][0].uri, "file:///srv/docs");
    /// ```
    pub fn roots(
        mut self,
        server: impl Into<String>,
        roots: impl IntoIterator<Item = Root>,
    ) -> Self {
        self.roots
            .insert(server.into(), roots.into_iter().collect());
        self
    }

    /// Adds a server started on first use.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::client::ClientConfig;
    /// use conduit_mcp::gateway::HttpGatewayConfig;
    ///
    /// let config = HttpGatewayConfig::new().lazy("search", ClientConfig::new("mcp-search"));
    /// assert!(config.lazy.contains_key("search")); // started by its first call
    /// ```
    pub fn lazy(mut self, name: impl Into<String>, config: ClientConfig) -> Self {
        self.lazy.insert(name.into(), config);
        self
    }

    /// Sets [`grace`](Self::grace) (default [`DEFAULT_GRACE`], 10 s).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Sets [`input_timeout`](Self::input_timeout) (default
    /// [`DEFAULT_INPUT_TIMEOUT`], 5 minutes).
    pub fn input_timeout(mut self, timeout: Duration) -> Self {
        self.input_timeout = timeout;
        self
    }

    /// Logs every call to the file at `path` (sets
    /// [`call_log`](Self::call_log); none by default), as `mcp serve
    /// --log-calls FILE` does.
    ///
    /// ```
    /// use conduit_mcp::gateway::HttpGatewayConfig;
    ///
    /// let config = HttpGatewayConfig::new().log_calls("/var/log/mcp-calls.jsonl").log_arguments(true);
    /// assert!(config.log_arguments);
    /// ```
    pub fn log_calls(mut self, path: impl Into<PathBuf>) -> Self {
        self.call_log = Some(path.into());
        self
    }

    /// Sets [`log_arguments`](Self::log_arguments): the call log carries
    /// each call's arguments too (off by default).
    pub fn log_arguments(mut self, arguments: bool) -> Self {
        self.log_arguments = arguments;
        self
    }

    /// Sets [`allowed_origins`](Self::allowed_origins): browser origins
    /// allowed besides loopback ones (none by default; `"*"` allows any).
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Sets [`max_held_calls`](Self::max_held_calls) (default 256).
    pub fn max_held_calls(mut self, max: usize) -> Self {
        self.max_held_calls = max;
        self
    }

    /// Sets the HTTP limits of every endpoint (default: those of
    /// [`HttpConfig::new`]).
    pub fn http(mut self, http: HttpConfig) -> Self {
        self.http = http;
        self
    }
}
