//! [`ClientConfig`]: every option of the client, with the reference's names
//! and defaults, validated when the client starts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::ConfigError;
use crate::framing::DEFAULT_MAX_MESSAGE_BYTES;
use crate::protocol::{ClientCapabilities, Implementation, LoggingLevel};
use crate::secret::{Arg, EnvValue, MaybeSecret};
use crate::transport::http_options::HttpOptions;

use super::client_transport::{ClientTransport, StderrMode, StdioCommand};

/// Default write-queue limit: 16 MiB of unwritten messages.
pub const DEFAULT_MAX_WRITE_QUEUE_BYTES: usize = 16 * 1024 * 1024;

/// Which protocol era to speak. Serialised as `"auto"`, `"modern"`
/// (2026-07-28) or `"legacy"` (2025-11-25 and older); the revision dates,
/// `"stateless"` and `"stateful"` are read too (all are `mcp --era`
/// values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum EraPreference {
    /// Probe with `server/discover`, fall back to `initialize` (the default).
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// 2026-07-28 only ([`Era::Stateless`](crate::protocol::Era::Stateless)):
    /// `server/discover`, never `initialize`. Written `"modern"` (or
    /// `"2026-07-28"`, `"stateless"`).
    #[doc(alias = "2026-07-28", alias = "modern")]
    #[serde(rename = "modern", alias = "stateless", alias = "2026-07-28")]
    Stateless,
    /// 2025-11-25 and older only ([`Era::Stateful`](crate::protocol::Era::Stateful)):
    /// `initialize`, no probe. Written `"legacy"` (or `"2025-11-25"`,
    /// `"stateful"`).
    #[doc(alias = "2025-11-25", alias = "legacy")]
    #[serde(rename = "legacy", alias = "stateful", alias = "2025-11-25")]
    Stateful,
}

/// Restart policy: exponential backoff between attempts, and a limit.
/// Built with [`new`](Self::new) and its setters (the fields stay public).
///
/// Serialised as `{"initial_ms": 100, "max_ms": 30000, "factor": 2.0}`
/// (missing keys take their defaults).
///
/// ```
/// use std::time::Duration;
/// use conduit_mcp::{Backoff, ClientConfig};
///
/// let backoff = Backoff::new()
///     .initial(Duration::from_millis(50))
///     .max(Duration::from_secs(5));
/// assert_eq!(backoff.delay(1), Duration::from_millis(50));
/// assert_eq!(backoff.delay(3), Duration::from_millis(200));
/// assert_eq!(backoff.delay(30), Duration::from_secs(5));
/// let config = ClientConfig::new("my-server").backoff(backoff);
/// # let _ = config;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Backoff {
    /// Delay before the first restart.
    #[serde(rename = "initial_ms", with = "crate::serde_support::millis")]
    pub initial: Duration,
    /// Largest delay.
    #[serde(rename = "max_ms", with = "crate::serde_support::millis")]
    pub max: Duration,
    /// Growth factor per consecutive failure (at least 1.0).
    pub factor: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(30),
            factor: 2.0,
        }
    }
}

impl Backoff {
    /// The default policy: 100 ms, doubling, at most 30 s.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the delay before the first restart (default 100 ms).
    pub fn initial(mut self, delay: Duration) -> Self {
        self.initial = delay;
        self
    }

    /// Sets the largest delay (default 30 s).
    pub fn max(mut self, delay: Duration) -> Self {
        self.max = delay;
        self
    }

    /// Sets the growth factor per consecutive failure (default 2.0; below
    /// 1.0 is refused by [`ClientConfig::validate`]).
    pub fn factor(mut self, factor: f64) -> Self {
        self.factor = factor;
        self
    }

    /// The delay before restart number `attempt` (1-based).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use conduit_mcp::Backoff;
    ///
    /// let backoff = Backoff::default(); // 100 ms, doubling, at most 30 s
    /// assert_eq!(backoff.delay(1), Duration::from_millis(100));
    /// assert_eq!(backoff.delay(3), Duration::from_millis(400));
    /// assert_eq!(backoff.delay(20), Duration::from_secs(30));
    /// ```
    pub fn delay(&self, attempt: u32) -> Duration {
        let exp = self.factor.powi(attempt.saturating_sub(1).min(64) as i32);
        let secs = (self.initial.as_secs_f64() * exp).min(self.max.as_secs_f64());
        Duration::try_from_secs_f64(secs).unwrap_or(self.max)
    }
}

/// The configuration of a [`Client`](crate::client::Client).
///
/// Stdio configuration is operator configuration: whoever chooses `command`,
/// `args` and `env` runs code as this process's user. Never build them from
/// model output, server responses or end-user input.
///
/// ```
/// use std::time::Duration;
/// use conduit_mcp::{ClientConfig, Secret, StderrMode};
///
/// let config = ClientConfig::new("npx")
///     .args(["-y", "@modelcontextprotocol/server-everything"])
///     .env("NODE_OPTIONS", "--max-old-space-size=256")
///     .env("API_TOKEN", Secret::new("s3cr3t"))
///     .stderr(StderrMode::Discard)
///     .request_timeout(Duration::from_secs(30));
/// assert!(config.validate().is_ok());
/// ```
///
/// # Serialisation
///
/// `ClientConfig` is `Serialize` and `Deserialize` with the field names
/// below and those of its [`transport`](Self::transport) (`command`,
/// `args`, `env`, `cd`, `stderr`, `allow_batch_files`, or `http`: one
/// transport's keys, never both), durations in milliseconds under names
/// ending in `_ms` (`request_timeout_ms`, `stdin_grace_ms`, ...), `env` as
/// an object, and every missing field at its default; an unknown field is
/// an error. A
/// [`Secret`](crate::secret::Secret) in `command`, `args`, `env` or `cd` is written
/// as `{"redacted": true}` and never with its value (see
/// [`secret`](crate::secret)).
///
/// ```
/// use conduit_mcp::ClientConfig;
/// let config: ClientConfig = serde_json::from_str(
///     r#"{"command": "uvx", "args": ["mcp-server-time"], "request_timeout_ms": 5000}"#,
/// )?;
/// assert_eq!(config.get_request_timeout(), std::time::Duration::from_secs(5));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default = "crate::serde_support::client_defaults")]
#[non_exhaustive]
pub struct ClientConfig {
    /// Name used in logs and events (defaults to the command's file name).
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// The server: a child process (the default, with the command given
    /// to [`new`](Self::new)) or a Streamable HTTP server
    /// ([`http`](Self::http)). Serialised as its keys (see
    /// [`ClientTransport`]).
    #[serde(flatten)]
    pub transport: ClientTransport,
    max_message_bytes: usize,
    max_junk_lines: usize,
    /// Time the server gets to exit after stdin is closed (default 2 s).
    #[serde(rename = "stdin_grace_ms", with = "crate::serde_support::millis")]
    stdin_grace: Duration,
    /// Time the server gets after SIGTERM before SIGKILL (default 2 s).
    #[serde(rename = "term_grace_ms", with = "crate::serde_support::millis")]
    term_grace: Duration,
    /// How long the `server/discover` probe waits (default 3 s).
    #[serde(rename = "probe_timeout_ms", with = "crate::serde_support::millis")]
    probe_timeout: Duration,
    max_write_queue_bytes: usize,
    /// A server that accepts no byte of its stdin for this long while
    /// callers wait for room in the write queue is closed as not reading
    /// ([`CloseReason::WriteStalled`](crate::error::CloseReason::WriteStalled));
    /// default 10 s. A server that reads slowly, or that stops reading while
    /// nobody waits, is left alone.
    #[serde(
        rename = "write_stall_timeout_ms",
        with = "crate::serde_support::millis"
    )]
    write_stall_timeout: Duration,
    max_inbound_requests: usize,
    max_queued_notification_bytes: usize,
    backoff: Backoff,
    max_reconnects: u32,
    /// The period of [`max_reconnects`](Self::max_reconnects) (default
    /// 60 s), measured in time a server was ready, not on the wall clock:
    /// backoff waits and slow starts do not count, so a server that never
    /// gets ready is given up after `max_reconnects` restarts whatever the
    /// backoff. A death counts until servers have been ready for this long
    /// after it; once none counts any more (a server stayed up this long),
    /// restarts are numbered from 1 again and the backoff starts over.
    #[serde(rename = "restart_period_ms", with = "crate::serde_support::millis")]
    restart_period: Duration,
    kill_process_group: bool,
    die_with_parent: bool,
    group_watchdog: bool,
    era: EraPreference,
    /// Default timeout of a request (default 60 s).
    #[serde(rename = "request_timeout_ms", with = "crate::serde_support::millis")]
    request_timeout: Duration,
    /// Timeout of the 2025-11-25 `initialize` request (default 60 s), long
    /// enough for slow cold starts such as `npx -y`.
    #[serde(rename = "init_timeout_ms", with = "crate::serde_support::millis")]
    init_timeout: Duration,
    client_info: Implementation,
    capabilities: serde_json::Value,
    log_level: Option<LoggingLevel>,
    refresh_tools_on_list_changed: bool,
    max_list_pages: usize,
    max_list_items: usize,
    max_list_bytes: usize,
    /// Time one paginated list may take, all its pages together (default
    /// 5 minutes): each page's request gets at most the time left, and a
    /// list still unfinished when it runs out fails with
    /// [`Error::ListTimeout`](crate::error::Error::ListTimeout). Without it a
    /// server answering every page just inside
    /// [`request_timeout`](Self::request_timeout) could hold one list for
    /// `max_list_pages` times that timeout.
    #[serde(rename = "list_timeout_ms", with = "crate::serde_support::millis")]
    list_timeout: Duration,
    /// The key of a setter used against the other transport (a header
    /// on a command's config, an argument on an HTTP server's), reported
    /// by `validate`.
    #[serde(skip)]
    mixed: Option<&'static str>,
    /// Refuses the keys no field took (never read: reading it is the
    /// check).
    #[allow(dead_code)]
    #[serde(flatten, skip_serializing)]
    other_keys: NoOtherKeys,
}

/// What the setters set: a getter for each field another module or a
/// user reads.
impl ClientConfig {
    /// What [`name`](Self::name) set.
    pub fn get_name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    /// What [`log_level`](Self::log_level) set.
    pub fn get_log_level(&self) -> Option<&LoggingLevel> {
        self.log_level.as_ref()
    }
    config_fields! {
        /// Sets the default request timeout (default 60 s).
        set request_timeout: Duration, get_request_timeout -> Duration, copy;
        /// Protocol era.
        set era: EraPreference, get_era -> EraPreference, copy;
        /// Largest line the server may write, in bytes (default 8 MiB).
        set max_message_bytes: usize, get_max_message_bytes -> usize, copy;
        /// Consecutive non-JSON-RPC lines tolerated (default 10).
        set max_junk_lines: usize;
        /// Sets [`stdin_grace`](Self::stdin_grace) (default 2 s).
        set stdin_grace: Duration, get_stdin_grace -> Duration, copy;
        /// Sets [`term_grace`](Self::term_grace) (default 2 s).
        set term_grace: Duration, get_term_grace -> Duration, copy;
        /// Sets [`probe_timeout`](Self::probe_timeout) (default 3 s).
        set probe_timeout: Duration, get_probe_timeout -> Duration, copy;
        /// Bytes of requests queued for the server and not yet written
        /// (default 16 MiB, at most 4 GiB - 1). A caller whose request finds
        /// no room waits (within its timeout) until the server reads; a single
        /// request longer than this fails alone with
        /// [`Error::RequestTooLarge`](crate::error::Error::RequestTooLarge).
        set max_write_queue_bytes: usize, get_max_write_queue_bytes -> usize, copy;
        /// Sets [`write_stall_timeout`](Self::write_stall_timeout) (default
        /// 10 s).
        set write_stall_timeout: Duration;
        /// Server-to-client requests handled at once (default 16). Past it, the
        /// server's request is answered at once with error -32000; a request
        /// reusing the id of one still being handled gets -32600.
        set max_inbound_requests: usize, get_max_inbound_requests -> usize, copy;
        /// Bytes of notifications (as held in memory once parsed) that one
        /// [`Notifications`](crate::client::Notifications) subscriber may leave unread
        /// (default 16 MiB). Past it, notifications for that subscriber are
        /// dropped and counted ([`Notifications::dropped`](crate::client::Notifications::dropped)).
        set max_queued_notification_bytes: usize, get_max_queued_notification_bytes -> usize, copy;
        /// Restart backoff. The delay grows with the restart's number (see
        /// [`restart_period`](Self::restart_period)), so it keeps growing while
        /// the server keeps dying, and starts from `initial` again once a
        /// server has stayed up.
        set backoff: Backoff, get_backoff -> Backoff, copy;
        /// Restarts allowed within [`restart_period`](Self::restart_period)
        /// (default 5): when the server dies once more, the client gives up.
        /// Counted whatever phase the server died in (spawn, handshake, or after
        /// it was ready), as OTP's supervisors count restart intensity. 0: the
        /// first death is final.
        set max_reconnects: u32, get_max_reconnects -> u32, copy;
        /// Sets [`restart_period`](Self::restart_period) (default 60 s).
        set restart_period: Duration, get_restart_period -> Duration, copy;
        /// Put the child in its own process group and signal the whole group
        /// (default on), so a launcher's children (npx, uvx) are ended too. On
        /// Linux (x86_64, aarch64) the server then also runs under a small
        /// reaper process that adopts every descendant leaving the group (a
        /// daemon that calls `setsid` and double-forks), and the shutdown ends
        /// those too.
        set kill_process_group: bool, get_kill_process_group -> bool, copy;
        /// Linux: the child is SIGKILLed when this process dies, even by
        /// SIGKILL (default on; `PR_SET_PDEATHSIG`, set from a spawning thread
        /// that lives as long as the process). See the crate docs' caveats.
        set die_with_parent: bool, get_die_with_parent -> bool, copy;
        /// Linux, with `die_with_parent` and `kill_process_group`: also end the
        /// server's whole process group (a launcher's children) if this process
        /// is SIGKILLed (default off). A small watchdog process is forked per
        /// server; it is a copy-on-write image of this process, so pages this
        /// process writes afterwards are duplicated while the server runs: cheap
        /// for a small client, costly for a large one. See the crate docs.
        set group_watchdog: bool, get_group_watchdog -> bool, copy;
        /// Sets [`init_timeout`](Self::init_timeout) (default 60 s).
        set init_timeout: Duration, get_init_timeout -> Duration, copy;
        /// This client's name and version, sent to the server.
        set client_info: Implementation, get_client_info -> &Implementation, ref;
        /// Fetch the tool list kept by [`Client::tools`](crate::client::Client::tools)
        /// again whenever the server says it changed
        /// (`notifications/tools/list_changed`; 2026-07-28 servers send it on a
        /// `subscriptions/listen` stream the client opens for it). Default off.
        set refresh_tools_on_list_changed: bool, get_refresh_tools_on_list_changed -> bool, copy;
        /// Pages one paginated list (`tools/list`, `resources/list`, ...) may
        /// have (default 1,000): a server that sends another `nextCursor` past
        /// it makes the list fail with
        /// [`Error::ListTooLong`](crate::error::Error::ListTooLong). Real servers send
        /// one to a few dozen pages.
        set max_list_pages: usize, get_max_list_pages -> usize, copy;
        /// Items (tools, resources, ...) one paginated list may hold, all pages
        /// together (default 100,000; the largest real lists hold thousands).
        set max_list_items: usize, get_max_list_items -> usize, copy;
        /// Bytes the pages of one paginated list may hold in memory once parsed
        /// (default 256 MiB; estimated as every memory bound of the crate is,
        /// from the parsed JSON, on the high side). Parsed JSON holds many times
        /// its text (about 16 times for a list of small tools): the default
        /// admits any single page up to the default `max_message_bytes` (8 MiB
        /// of text, about 128 MiB parsed), so a list that one legal answer can
        /// carry is never refused; the item cap usually ends an endless list
        /// first.
        set max_list_bytes: usize, get_max_list_bytes -> usize, copy;
        /// Sets [`list_timeout`](Self::list_timeout) (default 5 minutes).
        set list_timeout: Duration, get_list_timeout -> Duration, copy;
        get capabilities, get_capabilities -> &serde_json::Value, ref;
    }
}

impl ClientConfig {
    /// A configuration running `command` with default options.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use conduit_mcp::ClientConfig;
    ///
    /// let config = ClientConfig::new("uvx").arg("mcp-server-time");
    /// assert_eq!(config.get_request_timeout(), Duration::from_secs(60));
    /// assert_eq!(config.display_name(), "uvx");
    /// assert!(config.validate().is_ok());
    /// ```
    pub fn new(command: impl Into<Arg>) -> Self {
        Self {
            name: None,
            transport: ClientTransport::Stdio(StdioCommand::new(command)),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_junk_lines: 10,
            stdin_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
            probe_timeout: Duration::from_secs(3),
            max_write_queue_bytes: DEFAULT_MAX_WRITE_QUEUE_BYTES,
            write_stall_timeout: Duration::from_secs(10),
            max_inbound_requests: 16,
            max_queued_notification_bytes: 16 * 1024 * 1024,
            backoff: Backoff::default(),
            max_reconnects: 5,
            restart_period: Duration::from_secs(60),
            kill_process_group: true,
            die_with_parent: true,
            group_watchdog: false,
            era: EraPreference::Auto,
            request_timeout: Duration::from_secs(60),
            init_timeout: Duration::from_secs(60),
            client_info: Implementation::new("conduit-mcp", env!("CARGO_PKG_VERSION")),
            capabilities: serde_json::json!({}),
            log_level: None,
            refresh_tools_on_list_changed: false,
            max_list_pages: 1_000,
            max_list_items: 100_000,
            max_list_bytes: 256 * 1024 * 1024,
            list_timeout: Duration::from_secs(300),
            mixed: None,
            other_keys: NoOtherKeys,
        }
    }

    /// A configuration for the Streamable HTTP server at `url` (feature
    /// `http`), with default options: the same [`Client`](crate::client::Client),
    /// typed API, events, timeouts, cancellation, progress and restart
    /// policy as over stdio.
    ///
    /// ```
    /// use conduit_mcp::ClientConfig;
    /// let config = ClientConfig::http("https://mcp.example.com/mcp")
    ///     .header("Authorization", "Bearer s3cr3t")
    ///     .max_reconnects(3);
    /// assert!(config.validate().is_ok() || !cfg!(feature = "http"));
    /// assert!(!format!("{config:?}").contains("s3cr3t"));
    /// ```
    pub fn http(url: impl Into<String>) -> Self {
        Self::new("").http_options(HttpOptions::new(url))
    }

    /// Authorizes with `oauth` when the HTTP server asks (feature `http`;
    /// see [`oauth`](crate::transport::http::oauth)). For a config made by
    /// [`http`](Self::http), as [`header`](Self::header) is. Default none.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::{AuthorizationRequest, AuthorizationResponse, OAuth, OAuthConfig};
    /// use conduit_mcp::ClientConfig;
    ///
    /// let authorizer = |req: AuthorizationRequest| async move {
    ///     println!("open {}", req.url);
    ///     AuthorizationResponse::from_redirect("/callback?code=c&state=s")
    ///         .map_err(|e| e.to_string())
    /// };
    /// let oauth = OAuth::new(OAuthConfig::new("http://127.0.0.1:8765/callback", authorizer));
    /// let config = ClientConfig::http("https://mcp.example.com/mcp").oauth(oauth);
    /// assert!(config.transport.as_http().unwrap().oauth.is_some());
    /// assert!(config.validate().is_ok());
    /// ```
    #[cfg(feature = "http")]
    pub fn oauth(mut self, oauth: crate::transport::http::oauth::OAuth) -> Self {
        if let Some(http) = self.http_mut("oauth") {
            http.oauth = Some(oauth);
        }
        self
    }

    /// Sets one header sent with every HTTP request (held as a
    /// [`Secret`](crate::secret::Secret)). For a config made by
    /// [`http`](Self::http): on a command's config,
    /// [`validate`](Self::validate) refuses it (key `header`), since a
    /// config has one transport.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::ClientConfig;
    ///
    /// let config = ClientConfig::http("https://mcp.example.com/mcp")
    ///     .header("Authorization", "Bearer old")
    ///     .header("authorization", "Bearer s3cr3t"); // replaces the first
    /// let headers = &config.transport.as_http().unwrap().headers;
    /// assert_eq!(headers.len(), 1);
    /// assert_eq!(headers[0].1.expose(), "Bearer s3cr3t");
    /// // On a command's config, `validate` names the mix.
    /// let mixed = ClientConfig::new("uvx").header("Authorization", "Bearer t");
    /// assert_eq!(mixed.validate().unwrap_err().key, "header");
    /// ```
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Some(http) = self.http_mut("header") {
            *http = std::mem::replace(http, HttpOptions::new("")).header(name, value);
        }
        self
    }

    /// Makes this the config of the HTTP server `options` describe (see
    /// [`HttpOptions`]). On a command's config (one that has a command or
    /// any other option of a child process), [`validate`](Self::validate)
    /// refuses it (key `http`), since a config has one transport.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use conduit_mcp::{ClientConfig, HttpOptions};
    ///
    /// let mut options = HttpOptions::new("https://mcp.example.com/mcp").header("X-Tenant", "acme");
    /// options.connect_timeout = Duration::from_secs(3);
    /// let config = ClientConfig::http("https://other.example.com/mcp").http_options(options);
    /// assert_eq!(config.transport.as_http().unwrap().url, "https://mcp.example.com/mcp");
    /// ```
    pub fn http_options(mut self, options: HttpOptions) -> Self {
        match &self.transport {
            ClientTransport::Stdio(child) if child.first_key_set().is_some() => {
                self.mixed.get_or_insert("http");
            }
            _ => self.transport = ClientTransport::Http(options),
        }
        self
    }

    /// The child process's options, for a setter named `key`; `None` (and
    /// the mix recorded for `validate`) on an HTTP server's config.
    fn stdio_mut(&mut self, key: &'static str) -> Option<&mut StdioCommand> {
        match &mut self.transport {
            ClientTransport::Stdio(child) => Some(child),
            ClientTransport::Http(_) => {
                self.mixed.get_or_insert(key);
                None
            }
        }
    }

    /// The HTTP options, for a setter named `key`; `None` (and the mix
    /// recorded for `validate`) on a command's config.
    fn http_mut(&mut self, key: &'static str) -> Option<&mut HttpOptions> {
        match &mut self.transport {
            ClientTransport::Http(http) => Some(http),
            ClientTransport::Stdio(_) => {
                self.mixed.get_or_insert(key);
                None
            }
        }
    }

    /// Sets the name used in logs and events (default none: the
    /// command's file name, or the HTTP endpoint; see
    /// [`display_name`](Self::display_name)).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the executable (see [`StdioCommand::command`]). For a
    /// command's config, as the setters below are: on an HTTP server's,
    /// [`validate`](Self::validate) refuses them (with the setter's name as
    /// the key), since a config has one transport. Default: the command
    /// given to [`new`](Self::new).
    pub fn command(mut self, command: impl Into<Arg>) -> Self {
        if let Some(child) = self.stdio_mut("command") {
            child.command = command.into();
        }
        self
    }

    /// Adds arguments after those already given, like
    /// [`std::process::Command::args`]: `.arg("-y").args(["a", "b"])` runs
    /// `command -y a b`. To replace them, assign
    /// [`StdioCommand::args`].
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::ClientConfig;
    ///
    /// let config = ClientConfig::new("npx")
    ///     .arg("-y")
    ///     .args(["@modelcontextprotocol/server-filesystem", "/srv"]);
    /// assert_eq!(
    ///     config.transport.as_stdio().unwrap().args,
    ///     ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]
    /// );
    /// ```
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Arg>,
    {
        if let Some(child) = self.stdio_mut("args") {
            child.args.extend(args.into_iter().map(Into::into));
        }
        self
    }

    /// Adds one argument (a [`Secret`](crate::secret::Secret) too:
    /// `.arg(Secret::new(token))`).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::{ClientConfig, Secret};
    ///
    /// let config = ClientConfig::new("github-mcp")
    ///     .arg("--token")
    ///     .arg(Secret::new("ghp_example"));
    /// let args = &config.transport.as_stdio().unwrap().args;
    /// assert_eq!(args, &["--token", "ghp_example"]);
    /// assert!(args[1].is_secret());
    /// ```
    pub fn arg(mut self, arg: impl Into<Arg>) -> Self {
        if let Some(child) = self.stdio_mut("args") {
            child.args.push(arg.into());
        }
        self
    }

    /// Sets one environment variable (replacing an earlier value).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::{ClientConfig, Secret};
    ///
    /// let config = ClientConfig::new("uvx")
    ///     .env("LOG_LEVEL", "debug")
    ///     .env("API_TOKEN", Secret::new("s3cr3t"))
    ///     .env("LOG_LEVEL", "info"); // replaces "debug"
    /// let env = &config.transport.as_stdio().unwrap().env;
    /// assert_eq!(env.len(), 2);
    /// assert_eq!(env[1], ("LOG_LEVEL".to_string(), "info".into()));
    /// ```
    pub fn env(mut self, key: impl Into<String>, value: impl Into<EnvValue>) -> Self {
        if let Some(child) = self.stdio_mut("env") {
            set_env(&mut child.env, key.into(), value.into());
        }
        self
    }

    /// Sets several environment variables (a map or a list of pairs).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use conduit_mcp::ClientConfig;
    ///
    /// let vars = BTreeMap::from([("LANG", "C.UTF-8"), ("TZ", "UTC")]);
    /// let config = ClientConfig::new("uvx").env("TZ", "Europe/Paris").envs(vars);
    /// let env = &config.transport.as_stdio().unwrap().env;
    /// assert_eq!(env.len(), 2);
    /// assert!(env.iter().any(|(k, v)| k == "TZ" && v == "UTC"));
    /// ```
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<EnvValue>,
    {
        if let Some(child) = self.stdio_mut("env") {
            merge_env(
                &mut child.env,
                vars.into_iter().map(|(k, v)| (k.into(), v.into())),
            );
        }
        self
    }

    /// Sets the working directory (to make it a secret, assign
    /// [`StdioCommand::cd`] a [`Secret`](crate::secret::Secret)). A path
    /// that is not valid Unicode is refused by [`validate`](Self::validate).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::ClientConfig;
    ///
    /// let config = ClientConfig::new("uvx").cd("/");
    /// assert_eq!(config.transport.as_stdio().unwrap().cd, Some("/".into()));
    /// assert!(config.validate().is_ok());
    /// // A relative directory is refused.
    /// assert_eq!(ClientConfig::new("uvx").cd("srv").validate().unwrap_err().key, "cd");
    /// ```
    pub fn cd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let Some(child) = self.stdio_mut("cd") {
            child.cd = Some(plain_dir(dir.into()));
        }
        self
    }

    /// Sets where stderr goes (default [`StderrMode::Inherit`]).
    pub fn stderr(mut self, mode: StderrMode) -> Self {
        if let Some(child) = self.stdio_mut("stderr") {
            child.stderr = mode;
        }
        self
    }

    /// Sets [`StdioCommand::allow_batch_files`] (default off).
    pub fn allow_batch_files(mut self, allow: bool) -> Self {
        if let Some(child) = self.stdio_mut("allow_batch_files") {
            child.allow_batch_files = allow;
        }
        self
    }

    /// Capabilities declared to the server (a JSON object). A
    /// [`ClientHandler`](crate::client::ClientHandler)'s own capabilities are added
    /// when the client starts.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::ClientCapabilities;
    /// use conduit_mcp::ClientConfig;
    ///
    /// let config = ClientConfig::new("uvx").capabilities(ClientCapabilities {
    ///     roots: Some(Default::default()),
    ///     ..Default::default()
    /// });
    /// assert_eq!(config.get_capabilities(), &serde_json::json!({ "roots": {} }));
    /// ```
    pub fn capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities =
            serde_json::to_value(capabilities).unwrap_or_else(|_| serde_json::json!({}));
        self
    }

    /// 2026-07-28 era: the least severe log level the server should send,
    /// carried in every request's `_meta`
    /// (`io.modelcontextprotocol/logLevel`); `None` (the default): no log
    /// messages. 2025-11-25 servers are sent `logging/setLevel` by
    /// [`Client::set_log_level`](crate::client::Client::set_log_level) instead.
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Adds every capability of `caps` that [`capabilities`](Self::capabilities)
    /// does not declare yet (what is declared wins).
    pub(crate) fn declare(&mut self, caps: &ClientCapabilities) {
        crate::protocol::add_missing(&mut self.capabilities, caps);
    }

    /// What the stdio transport needs: the child's spec and the limits.
    pub(crate) fn stdio_options(
        &self,
        child: &StdioCommand,
    ) -> crate::transport::stdio::StdioOptions {
        use crate::child::{Graces, Spec, Stderr};
        crate::transport::stdio::StdioOptions::new(
            Spec {
                name: self.display_name(),
                command: child.command.clone(),
                args: child.args.clone(),
                env: child.env.clone(),
                cwd: child.cd.clone(),
                stderr: match &child.stderr {
                    StderrMode::Inherit => Stderr::Inherit,
                    StderrMode::Discard => Stderr::Null,
                    StderrMode::Log => Stderr::Piped,
                    StderrMode::File(p) => Stderr::File(p.clone()),
                },
                allow_batch_files: child.allow_batch_files,
                process_group: cfg!(unix) && self.kill_process_group,
                die_with_parent: self.die_with_parent,
                group_watchdog: self.group_watchdog,
                graces: Graces::new(self.stdin_grace, self.term_grace),
            },
            self.max_message_bytes,
            self.max_junk_lines,
            self.max_write_queue_bytes,
            self.write_stall_timeout,
        )
    }

    /// The name used in logs: `name`, or the command's file name (`***`
    /// for a secret command; for HTTP, the endpoint without credentials or
    /// query).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::{ClientConfig, Secret};
    ///
    /// assert_eq!(ClientConfig::new("/usr/local/bin/time-server").display_name(), "time-server");
    /// assert_eq!(ClientConfig::new(Secret::new("/opt/x")).display_name(), "***");
    /// assert_eq!(ClientConfig::new("uvx").name("time").display_name(), "time");
    /// let http = ClientConfig::http("https://user:pw@mcp.example.com/mcp?key=k");
    /// assert_eq!(http.display_name(), "https://mcp.example.com/mcp");
    /// ```
    pub fn display_name(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        match &self.transport {
            ClientTransport::Http(http) => http.display_url(),
            ClientTransport::Stdio(child) => match &child.command {
                MaybeSecret::Plain(command) => Path::new(command)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| command.clone()),
                secret => secret.to_string(),
            },
        }
    }

    /// Checks every option; the error names the offending key.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use conduit_mcp::ClientConfig;
    ///
    /// assert!(ClientConfig::new("uvx").validate().is_ok());
    /// let err = ClientConfig::new("uvx")
    ///     .request_timeout(Duration::ZERO)
    ///     .validate()
    ///     .unwrap_err();
    /// assert_eq!(err.key, "request_timeout");
    /// assert_eq!(ClientConfig::new("npx -y server").validate().unwrap_err().key, "command");
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(key) = self.mixed {
            let (this, other) = match &self.transport {
                ClientTransport::Stdio(_) => ("runs a command", "an HTTP server's"),
                ClientTransport::Http(_) => ("reaches an HTTP server", "a command's"),
            };
            return Err(ConfigError::new(
                key,
                format!(
                    "this config {this} and `{key}` is an option of {other}: a config has one transport (an HTTP server's starts from ClientConfig::http(url))"
                ),
            ));
        }
        match &self.transport {
            ClientTransport::Http(http) => {
                if !cfg!(feature = "http") {
                    return Err(ConfigError::new(
                        "http",
                        "this build of conduit-mcp has no `http` feature",
                    ));
                }
                http.validate()?;
            }
            ClientTransport::Stdio(child) => child.validate()?,
        }
        self.validate_limits()
    }

    /// Sizes, timeouts, the backoff and the capabilities.
    fn validate_limits(&self) -> Result<(), ConfigError> {
        let max_queue = crate::line_io::queue::MAX_LIMIT;
        let positive = [
            ("max_message_bytes", self.max_message_bytes == 0),
            ("max_inbound_requests", self.max_inbound_requests == 0),
            ("write_stall_timeout", self.write_stall_timeout.is_zero()),
            ("request_timeout", self.request_timeout.is_zero()),
            ("restart_period", self.restart_period.is_zero()),
            ("max_list_pages", self.max_list_pages == 0),
            ("max_list_items", self.max_list_items == 0),
            ("max_list_bytes", self.max_list_bytes == 0),
            ("list_timeout", self.list_timeout.is_zero()),
        ];
        if let Some((key, _)) = positive.iter().find(|(_, zero)| *zero) {
            return Err(ConfigError::new(key, "must be positive"));
        }
        if self.max_write_queue_bytes == 0 || self.max_write_queue_bytes > max_queue {
            return Err(ConfigError::new(
                "max_write_queue_bytes",
                format!(
                    "{} must be between 1 and {max_queue}",
                    self.max_write_queue_bytes
                ),
            ));
        }
        if !(self.backoff.factor.is_finite() && self.backoff.factor >= 1.0) {
            return Err(ConfigError::new(
                "backoff",
                format!(
                    "factor {} must be a finite number >= 1",
                    self.backoff.factor
                ),
            ));
        }
        if self.backoff.initial > self.backoff.max {
            return Err(ConfigError::new("backoff", "initial delay exceeds max"));
        }
        if !self.capabilities.is_object() {
            return Err(ConfigError::new("capabilities", "must be a JSON object"));
        }
        Ok(())
    }
}

/// Every key a serialised `ClientConfig` may hold (a refusal lists them).
const KEYS: &[&str] = &[
    "name",
    "command",
    "args",
    "env",
    "cd",
    "cwd",
    "stderr",
    "allow_batch_files",
    "http",
    "max_message_bytes",
    "max_junk_lines",
    "stdin_grace_ms",
    "term_grace_ms",
    "probe_timeout_ms",
    "max_write_queue_bytes",
    "write_stall_timeout_ms",
    "max_inbound_requests",
    "max_queued_notification_bytes",
    "backoff",
    "max_reconnects",
    "restart_period_ms",
    "kill_process_group",
    "die_with_parent",
    "group_watchdog",
    "era",
    "request_timeout_ms",
    "init_timeout_ms",
    "client_info",
    "capabilities",
    "log_level",
    "refresh_tools_on_list_changed",
    "max_list_pages",
    "max_list_items",
    "max_list_bytes",
    "list_timeout_ms",
];

/// What a config's keys that no field took are: refused, as
/// `deny_unknown_fields` would (which a struct with a flattened field cannot
/// use).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct NoOtherKeys;

impl<'de> Deserialize<'de> for NoOtherKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Refuse;
        impl<'de> serde::de::Visitor<'de> for Refuse {
            type Value = NoOtherKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("no other keys")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<NoOtherKeys, A::Error> {
                match map.next_key::<String>()? {
                    None => Ok(NoOtherKeys),
                    Some(key) => Err(serde::de::Error::unknown_field(&key, KEYS)),
                }
            }
        }
        deserializer.deserialize_map(Refuse)
    }
}

/// A directory as plain text. One that is not valid Unicode gets a NUL
/// byte, so that [`ClientConfig::validate`] refuses it rather than run the
/// server in another directory with a similar name.
pub(crate) fn plain_dir(dir: PathBuf) -> MaybeSecret {
    MaybeSecret::Plain(match dir.into_os_string().into_string() {
        Ok(dir) => dir,
        Err(dir) => format!("{}\0", dir.to_string_lossy()),
    })
}

/// Sets `key` in `env`: a later value replaces an earlier one (the rule of
/// [`ClientConfig::env`], config files and the `mcp` command alike).
fn set_env(env: &mut Vec<(String, EnvValue)>, key: String, value: EnvValue) {
    merge_env(env, [(key, value)]);
}

/// Appends `more` to `env`, then keeps only the last value of each name, in
/// the order of those last values: what setting them one by one with
/// [`set_env`] gives, in time linear in the number of variables (an env
/// file of 200,000 lines, set one by one, took minutes).
pub(crate) fn merge_env<V>(
    env: &mut Vec<(String, V)>,
    more: impl IntoIterator<Item = (String, V)>,
) {
    env.extend(more);
    let mut seen = std::collections::HashSet::with_capacity(env.len());
    let keep: Vec<bool> = env
        .iter()
        .rev()
        .map(|(k, _)| seen.insert(k.as_str()))
        .collect();
    // `retain` visits the elements once each, in order.
    let mut last = keep.into_iter().rev();
    env.retain(|_| last.next().unwrap_or(true));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_absolute_command_may_hold_spaces() {
        let dir = std::env::temp_dir().join(format!(
            "conduit Application Support {}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("my server");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        assert!(ClientConfig::new(exe.to_string_lossy()).validate().is_ok());
        // Not a file there: the mistake whitespace usually is.
        let missing = dir.join("server -y");
        assert_eq!(
            ClientConfig::new(missing.to_string_lossy())
                .validate()
                .unwrap_err()
                .key,
            "command"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_config_has_one_transport() {
        let err = ClientConfig::new("npx")
            .header("Authorization", "Bearer t")
            .validate()
            .unwrap_err();
        assert_eq!(err.key, "header");
        assert!(err.to_string().contains("one transport"), "{err}");
        let both = ClientConfig::new("npx").http_options(HttpOptions::new("https://a.example/mcp"));
        assert_eq!(both.validate().unwrap_err().key, "http");
        assert!(both.transport.as_stdio().is_some(), "the command is kept");
        let args = ClientConfig::http("https://a.example/mcp").arg("-y");
        assert_eq!(args.validate().unwrap_err().key, "args");
        assert!(args.transport.as_http().is_some());
        // The first setter used against the transport is the one named.
        let two = ClientConfig::http("https://a.example/mcp")
            .cd("/")
            .command("npx");
        assert_eq!(two.validate().unwrap_err().key, "cd");
        if cfg!(feature = "http") {
            let ok =
                ClientConfig::http("https://a.example/mcp").header("Authorization", "Bearer t");
            assert!(ok.validate().is_ok());
            assert_eq!(ok.transport.as_http().unwrap().headers.len(), 1);
        }
    }

    #[test]
    fn the_listed_keys_are_the_serialised_ones() {
        let stdio = ClientConfig::new("x")
            .name("n")
            .cd("/")
            .log_level(LoggingLevel::Info);
        let http = ClientConfig::http("https://a.example/mcp");
        let mut written: Vec<String> = [stdio, http]
            .iter()
            .flat_map(|c| match serde_json::to_value(c).unwrap() {
                serde_json::Value::Object(m) => m.keys().cloned().collect::<Vec<_>>(),
                _ => unreachable!(),
            })
            .collect();
        written.push("cwd".into());
        written.sort();
        written.dedup();
        let mut listed: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
        listed.sort();
        assert_eq!(written, listed);
    }

    #[test]
    fn a_serialised_config_has_one_transport() {
        let read = |v: serde_json::Value| serde_json::from_value::<ClientConfig>(v);
        let stdio = read(serde_json::json!({"command": "uvx", "args": ["a"], "cwd": "/"})).unwrap();
        let child = stdio.transport.as_stdio().unwrap();
        assert_eq!((child.command.expose(), child.args.len()), ("uvx", 1));
        assert_eq!(child.cd, Some("/".into()));
        let http = read(
            serde_json::json!({"http": {"url": "https://a.example/mcp"}, "max_reconnects": 2}),
        )
        .unwrap();
        assert_eq!(
            http.transport.as_http().unwrap().url,
            "https://a.example/mcp"
        );
        assert_eq!(http.max_reconnects, 2);
        let v = serde_json::to_value(&http).unwrap();
        assert!(v.get("command").is_none() && v.get("args").is_none(), "{v}");
        assert_eq!(read(v).unwrap().transport, http.transport);
        let both =
            read(serde_json::json!({"command": "uvx", "http": {"url": "https://a.example/mcp"}}))
                .unwrap_err()
                .to_string();
        assert!(both.contains("`command` and `http`"), "{both}");
        let unknown = read(serde_json::json!({"command": "uvx", "comand": "x"}))
            .unwrap_err()
            .to_string();
        assert!(
            unknown.contains("unknown field `comand`, expected one of `name`, `command`"),
            "{unknown}"
        );
        let empty = read(serde_json::json!({})).unwrap();
        assert_eq!(empty.validate().unwrap_err().key, "command");
    }

    #[test]
    fn refuses_with_key_names() {
        let key = |c: ClientConfig| c.validate().unwrap_err().key;
        assert_eq!(key(ClientConfig::new("npx -y server")), "command");
        assert_eq!(key(ClientConfig::new("")), "command");
        assert_eq!(key(ClientConfig::new("./rel/server")), "command");
        assert_eq!(key(ClientConfig::new("x").cd("relative")), "cd");
        assert_eq!(key(ClientConfig::new("x").cd("/definitely/not/here")), "cd");
        assert_eq!(key(ClientConfig::new("x").env("A=B", "v")), "env");
        assert_eq!(
            key(ClientConfig::new("x").stderr(StderrMode::File("log.txt".into()))),
            "stderr"
        );
        assert_eq!(key(ClientConfig::new("run.bat")), "allow_batch_files");
        let mut c = ClientConfig::new("x");
        c.backoff.factor = 0.5;
        assert_eq!(key(c), "backoff");
        assert!(ClientConfig::new("/bin/cat").cd("/").validate().is_ok());
    }

    #[test]
    fn args_append_like_std_command() {
        let c = ClientConfig::new("x")
            .arg("-y")
            .args(["a", "b"])
            .args(["c"]);
        assert_eq!(c.transport.as_stdio().unwrap().args, ["-y", "a", "b", "c"]);
    }

    #[test]
    fn every_option_has_a_builder() {
        let d = Duration::from_millis(7);
        let b = Backoff {
            initial: d,
            max: d,
            factor: 1.5,
        };
        let c = ClientConfig::new("x")
            .command("/bin/y")
            .name("n")
            .args(["a"])
            .env("K", "V")
            .cd("/")
            .stderr(StderrMode::Discard)
            .allow_batch_files(true)
            .max_message_bytes(1)
            .max_junk_lines(2)
            .stdin_grace(d)
            .term_grace(d)
            .probe_timeout(d)
            .max_write_queue_bytes(3)
            .write_stall_timeout(d)
            .max_inbound_requests(4)
            .max_queued_notification_bytes(5)
            .backoff(b)
            .max_reconnects(6)
            .restart_period(d)
            .kill_process_group(false)
            .die_with_parent(false)
            .group_watchdog(true)
            .era(EraPreference::Stateful)
            .request_timeout(d)
            .init_timeout(d)
            .client_info(Implementation::new("me", "1").with_title("Me"))
            .capabilities(ClientCapabilities {
                roots: Some(Default::default()),
                ..Default::default()
            })
            .log_level(LoggingLevel::Warning)
            .refresh_tools_on_list_changed(true)
            .max_list_pages(7)
            .max_list_items(8)
            .max_list_bytes(9)
            .list_timeout(d);
        // Every field differs from its default (a new field without a
        // builder shows up here as a missing line).
        let ClientConfig {
            name,
            transport,
            mixed,
            other_keys: _,
            max_message_bytes,
            max_junk_lines,
            stdin_grace,
            term_grace,
            probe_timeout,
            max_write_queue_bytes,
            write_stall_timeout,
            max_inbound_requests,
            max_queued_notification_bytes,
            backoff,
            max_reconnects,
            restart_period,
            kill_process_group,
            die_with_parent,
            group_watchdog,
            era,
            request_timeout,
            init_timeout,
            client_info,
            capabilities,
            log_level,
            refresh_tools_on_list_changed,
            max_list_pages,
            max_list_items,
            max_list_bytes,
            list_timeout,
        } = c;
        let ClientTransport::Stdio(StdioCommand {
            command,
            args,
            env,
            cd,
            stderr,
            allow_batch_files,
        }) = transport
        else {
            panic!("a command's config")
        };
        assert_eq!(mixed, None);
        assert_eq!(name.as_deref(), Some("n"));
        assert_eq!((command.expose(), args.len(), env.len()), ("/bin/y", 1, 1));
        assert_eq!(cd, Some("/".into()));
        assert_eq!(stderr, StderrMode::Discard);
        assert!(allow_batch_files && group_watchdog && refresh_tools_on_list_changed);
        assert!(!kill_process_group && !die_with_parent);
        assert_eq!((max_message_bytes, max_junk_lines), (1, 2));
        assert_eq!((max_write_queue_bytes, max_inbound_requests), (3, 4));
        assert_eq!((max_queued_notification_bytes, max_reconnects), (5, 6));
        assert_eq!((max_list_pages, max_list_items, max_list_bytes), (7, 8, 9));
        for t in [
            stdin_grace,
            term_grace,
            probe_timeout,
            write_stall_timeout,
            restart_period,
            list_timeout,
        ] {
            assert_eq!(t, d);
        }
        assert_eq!((request_timeout, init_timeout), (d, d));
        assert_eq!(backoff, b);
        assert_eq!(era, EraPreference::Stateful);
        assert_eq!(client_info.title.as_deref(), Some("Me"));
        assert_eq!(capabilities, serde_json::json!({ "roots": {} }));
        assert_eq!(log_level, Some(LoggingLevel::Warning));
    }

    #[test]
    fn declared_capabilities_win_over_the_handler_s() {
        let mut c = ClientConfig::new("x");
        c.capabilities = serde_json::json!({ "roots": { "listChanged": true } });
        c.declare(&ClientCapabilities {
            roots: Some(Default::default()),
            sampling: Some(Default::default()),
            ..Default::default()
        });
        assert_eq!(
            c.capabilities,
            serde_json::json!({ "roots": { "listChanged": true }, "sampling": {} })
        );
    }

    #[test]
    fn backoff_grows_and_caps() {
        let b = Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_millis(350),
            factor: 2.0,
        };
        assert_eq!(b.delay(1), Duration::from_millis(100));
        assert_eq!(b.delay(2), Duration::from_millis(200));
        assert_eq!(b.delay(3), Duration::from_millis(350));
        assert_eq!(b.delay(1000), Duration::from_millis(350));
    }
}
