//! [`ClientTransport`]: how a client reaches its server, a child process
//! ([`StdioCommand`]) or a Streamable HTTP server
//! ([`HttpOptions`]), one of the two.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ConfigError;
use crate::secret::{Arg, EnvValue, MaybeSecret};
use crate::transport::http_options::HttpOptions;

/// How a [`ClientConfig`](crate::client::ClientConfig) reaches its server.
///
/// A config has exactly one: [`ClientConfig::new`](crate::client::ClientConfig::new)
/// makes a [`Stdio`](Self::Stdio) one, [`ClientConfig::http`](crate::client::ClientConfig::http)
/// an [`Http`](Self::Http) one.
///
/// ```
/// use conduit_mcp::client::{ClientConfig, ClientTransport};
///
/// let config = ClientConfig::new("uvx").arg("mcp-server-time");
/// match &config.transport {
///     ClientTransport::Stdio(child) => assert_eq!(child.command, "uvx"),
///     ClientTransport::Http(http) => unreachable!("{}", http.url),
///     _ => unreachable!(),
/// }
/// ```
///
/// # Serialisation
///
/// Inside a `ClientConfig`, a `Stdio` transport is the keys `command`,
/// `args`, `env`, `cd`, `stderr` and `allow_batch_files`, an `Http` one the
/// key `http`; a config that has both is refused with an error naming
/// them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientTransport {
    /// A child process, spoken to over its stdin and stdout.
    Stdio(StdioCommand),
    /// A Streamable HTTP server (feature `http`).
    Http(HttpOptions),
}

impl ClientTransport {
    /// The child process, for a stdio transport.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::ClientConfig;
    ///
    /// let config = ClientConfig::new("uvx").arg("mcp-server-time");
    /// assert_eq!(config.transport.as_stdio().unwrap().command, "uvx");
    /// assert!(ClientConfig::http("https://mcp.example.com/mcp").transport.as_stdio().is_none());
    /// ```
    pub fn as_stdio(&self) -> Option<&StdioCommand> {
        match self {
            ClientTransport::Stdio(child) => Some(child),
            ClientTransport::Http(_) => None,
        }
    }

    /// The child process to change, for a stdio transport.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::ClientConfig;
    ///
    /// let mut config = ClientConfig::new("uvx").args(["mcp-server-time", "--local-timezone=UTC"]);
    /// if let Some(child) = config.transport.as_stdio_mut() {
    ///     child.args.truncate(1); // replaces the arguments, which `args` appends to
    /// }
    /// assert_eq!(config.transport.as_stdio().unwrap().args, ["mcp-server-time"]);
    /// ```
    pub fn as_stdio_mut(&mut self) -> Option<&mut StdioCommand> {
        match self {
            ClientTransport::Stdio(child) => Some(child),
            ClientTransport::Http(_) => None,
        }
    }

    /// The server's options, for an HTTP transport.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::ClientConfig;
    ///
    /// let config = ClientConfig::http("https://mcp.example.com/mcp");
    /// assert_eq!(config.transport.as_http().unwrap().url, "https://mcp.example.com/mcp");
    /// assert!(ClientConfig::new("uvx").transport.as_http().is_none());
    /// ```
    pub fn as_http(&self) -> Option<&HttpOptions> {
        match self {
            ClientTransport::Http(http) => Some(http),
            ClientTransport::Stdio(_) => None,
        }
    }

    /// The server's options to change, for an HTTP transport.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::ClientConfig;
    ///
    /// let mut config = ClientConfig::http("https://mcp.example.com/mcp");
    /// if let Some(http) = config.transport.as_http_mut() {
    ///     http.proxy_from_env = false;
    /// }
    /// assert!(!config.transport.as_http().unwrap().proxy_from_env);
    /// ```
    pub fn as_http_mut(&mut self) -> Option<&mut HttpOptions> {
        match self {
            ClientTransport::Http(http) => Some(http),
            ClientTransport::Stdio(_) => None,
        }
    }
}

/// The child process a stdio client runs, and how: operator
/// configuration (see [`ClientConfig`](crate::client::ClientConfig)). Set
/// through [`ClientConfig`](crate::client::ClientConfig)'s
/// [`command`](crate::client::ClientConfig::command),
/// [`args`](crate::client::ClientConfig::args),
/// [`env`](crate::client::ClientConfig::env) and the other builder methods.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct StdioCommand {
    /// The executable: a name looked up in PATH at every connection attempt,
    /// or an absolute path. Must not contain whitespace. A
    /// [`Secret`](crate::secret::Secret) is revealed only at spawn (errors and logs
    /// show `***`).
    pub command: Arg,
    /// Arguments, passed literally (no shell), empty by default. Each may
    /// be a [`Secret`](crate::secret::Secret), revealed only at spawn.
    pub args: Vec<Arg>,
    /// Variables set in the child's environment, after the allowlist (none
    /// by default).
    #[serde(with = "crate::serde_support::env_map")]
    pub env: Vec<(String, EnvValue)>,
    /// Working directory (absolute, existing, valid Unicode); `None`, the
    /// default, is this process's. It may be a
    /// [`Secret`](crate::secret::Secret) (a config file's `cwd` taken from
    /// the environment is one).
    #[serde(alias = "cwd", skip_serializing_if = "Option::is_none")]
    pub cd: Option<MaybeSecret>,
    /// Where stderr goes (default [`StderrMode::Inherit`]).
    pub stderr: StderrMode,
    /// Allow `.bat`/`.cmd` executables (Windows; default off). `cmd.exe`
    /// runs them with re-parsed arguments, so they are refused unless this
    /// is set, and even then no argument may contain `"`, `%`, `^`, `&`,
    /// `|`, `<` or `>`.
    pub allow_batch_files: bool,
}

impl StdioCommand {
    /// Runs `command` with no arguments and the defaults above.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::client::{ClientConfig, ClientTransport, StdioCommand, StderrMode};
    ///
    /// let mut child = StdioCommand::new("uvx");
    /// child.args = vec!["mcp-server-time".into()];
    /// child.stderr = StderrMode::Discard;
    /// let mut config = ClientConfig::new("unused");
    /// config.transport = ClientTransport::Stdio(child);
    /// assert_eq!(config.display_name(), "uvx");
    /// ```
    pub fn new(command: impl Into<Arg>) -> Self {
        StdioCommand {
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            cd: None,
            stderr: StderrMode::Inherit,
            allow_batch_files: false,
        }
    }
}

impl Default for StdioCommand {
    /// An empty command, which [`ClientConfig::validate`](crate::client::ClientConfig::validate)
    /// refuses: what a serialised config without `command` reads as.
    fn default() -> Self {
        StdioCommand::new("")
    }
}

/// Where the server's stderr goes. It is never merged into stdout.
///
/// Serialised as `"inherit"`, `"discard"`, `"log"` or `{"file": "/path"}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StderrMode {
    /// This process's stderr (the default).
    #[default]
    Inherit,
    /// `/dev/null`.
    Discard,
    /// Appended to a file (absolute path), opened by this process: no shell.
    File(PathBuf),
    /// Captured line by line: each line becomes a tracing event (target
    /// `conduit_mcp::stderr`, level INFO, with the server's name and pid)
    /// and a [`LifecycleEvent::Stderr`](crate::client::LifecycleEvent::Stderr).
    /// A task drains the pipe continuously, so the server never blocks on it.
    Log,
}

/// The keys of both transports, as a serialised config holds them (a
/// struct without a flattened field, so that a config's other keys are
/// left for it to check).
#[derive(Deserialize)]
struct Keys {
    command: Option<Arg>,
    args: Option<Vec<Arg>>,
    #[serde(default, with = "crate::serde_support::env_map")]
    env: Vec<(String, EnvValue)>,
    #[serde(alias = "cwd")]
    cd: Option<MaybeSecret>,
    stderr: Option<StderrMode>,
    allow_batch_files: Option<bool>,
    http: Option<HttpOptions>,
}

/// An `Http` transport's one key.
#[derive(Serialize)]
struct HttpKey<'a> {
    http: &'a HttpOptions,
}

impl Serialize for ClientTransport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ClientTransport::Stdio(child) => child.serialize(serializer),
            ClientTransport::Http(http) => HttpKey { http }.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ClientTransport {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let keys = Keys::deserialize(deserializer)?;
        let given = [
            ("command", keys.command.is_some()),
            ("args", keys.args.is_some()),
            ("env", !keys.env.is_empty()),
            ("cd", keys.cd.is_some()),
            ("stderr", keys.stderr.is_some()),
            ("allow_batch_files", keys.allow_batch_files.is_some()),
        ]
        .into_iter()
        .find_map(|(key, set)| set.then_some(key));
        match (keys.http, given) {
            (Some(http), None) => Ok(ClientTransport::Http(http)),
            (Some(_), Some(key)) => Err(serde::de::Error::custom(format!(
                "`{key}` and `http` given: a config has one transport, a command or an HTTP server"
            ))),
            (None, _) => Ok(ClientTransport::Stdio(StdioCommand {
                command: keys
                    .command
                    .unwrap_or_else(|| MaybeSecret::Plain(String::new())),
                args: keys.args.unwrap_or_default(),
                env: keys.env,
                cd: keys.cd,
                stderr: keys.stderr.unwrap_or_default(),
                allow_batch_files: keys.allow_batch_files.unwrap_or_default(),
            })),
        }
    }
}

impl StdioCommand {
    /// Checks the command, its arguments, environment and paths; the error
    /// names the offending key.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        self.validate_command()?;
        self.validate_args_and_env()?;
        self.validate_paths()
    }

    /// `command`: a bare name without whitespace, or an absolute path (which
    /// may hold spaces, as macOS's "Application Support" does, if it
    /// exists); and the Windows batch-file rule. A secret command is named
    /// `Secret(***)` in the errors.
    fn validate_command(&self) -> Result<(), ConfigError> {
        let shown = &self.command;
        let cmd = self.command.expose();
        let path = Path::new(cmd);
        if cmd.is_empty() {
            return Err(ConfigError::new("command", "must not be empty"));
        }
        if cmd.contains('\0') {
            return Err(ConfigError::new("command", "contains a NUL byte"));
        }
        if cmd.chars().any(char::is_whitespace) && !(path.is_absolute() && path.is_file()) {
            return Err(ConfigError::new(
                "command",
                format!("{shown:?} contains whitespace; put arguments in `args`"),
            ));
        }
        if path.components().count() > 1 && !path.is_absolute() {
            return Err(ConfigError::new(
                "command",
                format!("{shown:?} must be a bare name looked up in PATH or an absolute path"),
            ));
        }
        crate::child::command::check_batch_file(&self.command, &self.args, self.allow_batch_files)
    }

    /// `args` and `env`: nothing a C string cannot hold, valid names.
    fn validate_args_and_env(&self) -> Result<(), ConfigError> {
        if let Some(i) = self.args.iter().position(|a| a.expose().contains('\0')) {
            return Err(ConfigError::new(
                "args",
                format!("argument {i} contains a NUL byte"),
            ));
        }
        for (k, v) in &self.env {
            if k.is_empty() || k.contains('=') || k.contains('\0') {
                return Err(ConfigError::new(
                    "env",
                    format!("variable name {k:?} is empty or contains '=' or NUL"),
                ));
            }
            if v.expose().contains('\0') {
                return Err(ConfigError::new(
                    "env",
                    format!("value of {k:?} contains a NUL byte"),
                ));
            }
        }
        Ok(())
    }

    /// `cd` and a stderr file: absolute (and the directory existing). A
    /// secret `cd` is named `***` in the errors.
    fn validate_paths(&self) -> Result<(), ConfigError> {
        if let Some(shown) = &self.cd {
            let cd = Path::new(shown.expose());
            if shown.expose().contains('\0') {
                return Err(ConfigError::new(
                    "cd",
                    "contains a NUL byte, or is not valid Unicode",
                ));
            }
            if !cd.is_absolute() {
                return Err(ConfigError::new(
                    "cd",
                    format!("{shown} is not an absolute path"),
                ));
            }
            if !cd.is_dir() {
                return Err(ConfigError::new(
                    "cd",
                    format!("{shown} is not an existing directory"),
                ));
            }
        }
        if let StderrMode::File(p) = &self.stderr {
            if !p.is_absolute() {
                return Err(ConfigError::new(
                    "stderr",
                    format!("file {} is not an absolute path", p.display()),
                ));
            }
        }
        Ok(())
    }

    /// The first key that differs from its default, if any.
    pub(super) fn first_key_set(&self) -> Option<&'static str> {
        let unset = StdioCommand::default();
        [
            ("command", self.command != unset.command),
            ("args", !self.args.is_empty()),
            ("env", !self.env.is_empty()),
            ("cd", self.cd.is_some()),
            ("stderr", self.stderr != unset.stderr),
            ("allow_batch_files", self.allow_batch_files),
        ]
        .into_iter()
        .find_map(|(key, set)| set.then_some(key))
    }
}
