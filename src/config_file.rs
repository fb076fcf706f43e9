//! Config files: the `mcpServers` files people already keep for their
//! desktop hosts, read into `ClientConfig`s.
//!
#![doc = include_str!("../docs/config-files.md")]

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::client::ClientConfig;
use crate::secret::Secret;

mod entry;
mod env_file;
mod interpolate;
mod read;

use self::entry::Outcome;
use self::interpolate::Variables;

/// The key that holds this library's options, per server and for the host.
pub const OPTIONS_KEY: &str = "conduit";

/// The largest config file read, in bytes: 4 MiB. A longer one is refused
/// with [`ConfigFileError::TooLarge`].
pub const MAX_CONFIG_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The largest `envFile` read, in bytes: 1 MiB. A longer one is refused
/// with [`ConfigFileError::TooLarge`].
pub const MAX_ENV_FILE_BYTES: u64 = 1024 * 1024;

/// A fingerprint of an entry: equal for equal entries within this
/// process, keyed at random so that it says nothing of a secret inside.
fn fingerprint(entry: &Value) -> u64 {
    use std::hash::BuildHasher;
    static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    KEYS.get_or_init(Default::default)
        .hash_one(entry.to_string())
}

/// Where the servers of each format live, as key paths from the top.
const SECTIONS: &[&[&str]] = &[&["mcpServers"], &["servers"], &["mcp", "servers"]];

/// A config file, read: the servers to start and what was left out.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServersFile {
    /// The file, as an absolute path.
    pub path: PathBuf,
    /// The servers to start: every enabled stdio or Streamable HTTP entry,
    /// by name.
    pub servers: BTreeMap<String, ClientConfig>,
    /// The host's options as written under the top-level `conduit` key: an
    /// object without `servers`, empty if the key is absent.
    pub host_options: Map<String, Value>,
    /// The gateway's options of each server in [`servers`](Self::servers),
    /// by name: `conduit.tools` and `conduit.lazy`. A server that sets none
    /// has the default.
    pub serve: BTreeMap<String, ServeOptions>,
    /// A fingerprint of each server's entry as written in the file, before
    /// expansion, by name: a server whose entry changed is restarted by
    /// `mcp serve --watch`. Not the entry itself: it may hold a literal
    /// secret, and this type's `Debug` must not show one.
    entries: BTreeMap<String, u64>,
    /// Entries with `"disabled": true`.
    pub disabled: Vec<String>,
    /// Entries this library cannot run, such as the deprecated HTTP+SSE
    /// transport or unknown types, with the reason.
    pub unsupported: Vec<Unsupported>,
}

/// What a host, and the gateway of feature `gateway` behind `mcp serve`,
/// `gateway::HttpGateway`, reads from a server's `conduit` options beyond its client's:
/// which of its tools are served, whether it starts on first use, the roots
/// it is given when it asks outside any client's call, and how long it
/// waits after it gave up before it is started again.
///
/// ```json
/// "conduit": { "tools": { "allow": ["get_*"], "deny": ["*_delete"] }, "lazy": true,
///              "roots": [{ "uri": "file:///srv/docs", "name": "docs" }], "revive_after_ms": 300000 }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ServeOptions {
    /// `tools.allow`: glob patterns, where `*` is any run of characters and
    /// `?` one. When not empty, only the tools matching one are listed and callable.
    pub tools_allow: Vec<String>,
    /// `tools.deny`: glob patterns; a tool matching one is neither listed
    /// nor callable: deny wins over allow.
    pub tools_deny: Vec<String>,
    /// `lazy`: the server starts on its first use, not with the others.
    pub lazy: bool,
    /// `roots`: what the gateway answers the server's `roots/list` made
    /// outside any client's call, at its start say; each a `uri` and an
    /// optional `name`.
    ///
    /// The default is empty.
    pub roots: Vec<crate::protocol::Root>,
    /// `revive_after_ms`: how long the server waits after it gave up before
    /// it is started again, over the host's
    /// [`HostConfig::revive_after`](crate::host::HostConfig::revive_after).
    /// Zero means never. `None` when the entry does not set it.
    pub revive_after: Option<std::time::Duration>,
}

/// How a config file is read beyond its text and the environment: the
/// values of its `${input:ID}` variables. These are VS Code's `inputs`,
/// which the editor asks its user for. A server that uses an input without
/// a value here is left out, in [`ServersFile::unsupported`] naming the
/// input; the others are read.
///
/// ```
/// use std::path::Path;
/// use conduit_mcp::config_file::{ReadOptions, ServersFile};
///
/// let text = r#"{
///     "inputs": [{ "type": "promptString", "id": "api-key", "password": true }],
///     "servers": {
///         "search": { "command": "search-mcp", "env": { "KEY": "${input:api-key}" } },
///         "wiki": { "command": "wiki-mcp", "env": { "KEY": "${input:wiki-key}" } },
///         "time": { "command": "uvx", "args": ["mcp-server-time"] }
///     }
/// }"#;
/// let options = ReadOptions::new().input("api-key", "k-123");
/// let file = ServersFile::parse_with(text, Path::new("/p/.vscode/mcp.json"), &|_| None, &options)?;
/// let key = &file.server("search").unwrap().transport.as_stdio().unwrap().env[0].1;
/// assert!(key.is_secret() && key == "k-123");
/// assert!(file.server("time").is_some());
/// assert_eq!(file.unsupported[0].name, "wiki"); // its input has no value
/// assert!(file.unsupported[0].reason.contains("wiki-key"));
/// # Ok::<(), conduit_mcp::config_file::ConfigFileError>(())
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReadOptions {
    inputs: BTreeMap<String, Secret>,
}

impl ReadOptions {
    /// No input values.
    pub fn new() -> Self {
        Self::default()
    }

    /// Supplies the value of `${input:id}`, held as a [`Secret`], as every
    /// value it makes.
    pub fn input(mut self, id: impl Into<String>, value: impl Into<String>) -> Self {
        self.inputs.insert(id.into(), Secret::new(value));
        self
    }
}

// The roots read from a file have a `uri` and a `name` only: strings,
// which compare as an equivalence.
impl Eq for ServeOptions {}

/// An entry that was not read as a server, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// The server's name in the file.
    pub name: String,
    /// Why it is left out.
    pub reason: String,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.reason)
    }
}

/// Why a config file could not be read. Every variant names the file, and
/// where it applies the key, such as `mcpServers.github.env.TOKEN`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", file.display())]
    Read {
        /// The config file.
        file: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not JSON with comments.
    #[error("{}: not valid JSON: {problem}", file.display())]
    Syntax {
        /// The config file.
        file: PathBuf,
        /// What is wrong, with its line and column.
        problem: String,
    },
    /// No `mcpServers`, `servers` or `mcp.servers` object.
    #[error("{}: no `mcpServers`, `servers` or `mcp.servers` object", file.display())]
    NoServers {
        /// The config file.
        file: PathBuf,
    },
    /// A value of the wrong type or refused.
    #[error("{}: `{key}`: {problem}", file.display())]
    Invalid {
        /// The config file.
        file: PathBuf,
        /// The key.
        key: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A string uses an environment variable that is not set.
    #[error("{}: `{key}` uses the variable {variable}, which is not set", file.display())]
    UnsetVariable {
        /// The config file.
        file: PathBuf,
        /// The key whose value uses it.
        key: String,
        /// The variable's name.
        variable: String,
    },
    /// A string uses a variable this library cannot resolve.
    #[error("{}: `{key}`: cannot resolve {variable} (supported: ${{VAR}}, ${{VAR:-default}}, ${{env:VAR}}, ${{userHome}}, ${{workspaceFolder}}, ${{workspaceFolderBasename}}, ${{pathSeparator}}, ${{/}})", file.display())]
    UnsupportedVariable {
        /// The config file.
        file: PathBuf,
        /// The key whose value uses it.
        key: String,
        /// The variable, as written.
        variable: String,
    },
    /// An `envFile` could not be read.
    #[error("{}: `{key}`: cannot read env file {}: {source}", file.display(), env_file.display())]
    EnvFile {
        /// The config file.
        file: PathBuf,
        /// The `envFile` key.
        key: String,
        /// The env file.
        env_file: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A line of an `envFile` could not be read.
    #[error("{}: `{key}`: env file {}, line {line}: {problem}", file.display(), env_file.display())]
    EnvFileSyntax {
        /// The config file.
        file: PathBuf,
        /// The `envFile` key.
        key: String,
        /// The env file.
        env_file: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// The config file, or an `envFile`, is longer than its limit:
    /// [`MAX_CONFIG_FILE_BYTES`] or [`MAX_ENV_FILE_BYTES`]. Nothing past the
    /// limit was read.
    #[error("{}{} is {bytes} bytes, over the limit of {limit} bytes", place(.file, .key), path.display())]
    TooLarge {
        /// The config file.
        file: PathBuf,
        /// The `envFile` key, for an env file; `None` for the config file.
        key: Option<String>,
        /// The file refused: the config file itself, or the env file.
        path: PathBuf,
        /// Its length. For a file that grew while it was read, it is at least
        /// this.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The config file, or an `envFile`, is not a regular file: a FIFO, a
    /// device such as `/dev/zero`, a directory or a socket. It was not read;
    /// a FIFO is opened without waiting for a writer.
    #[error("{}{} is a {kind}, not a regular file", place(.file, .key), path.display())]
    NotAFile {
        /// The config file.
        file: PathBuf,
        /// The `envFile` key, for an env file; `None` for the config file.
        key: Option<String>,
        /// The path refused.
        path: PathBuf,
        /// What it is: `"FIFO"`, `"character device"`, `"block device"`,
        /// `"socket"`, `"directory"` or `"special file"`.
        kind: &'static str,
    },
    /// Two entries have the same name, in `mcpServers` and `servers`.
    #[error("{}: server `{name}` is defined twice", file.display())]
    Duplicate {
        /// The config file.
        file: PathBuf,
        /// The name.
        name: String,
    },
}

/// Where a file error happened: the config file, and the key for a file
/// it names, as in `/p/.mcp.json: `mcpServers.s.envFile`: env file `.
fn place(file: &Path, key: &Option<String>) -> String {
    match key {
        Some(key) => format!("{}: `{key}`: env file ", file.display()),
        None => String::new(),
    }
}

impl ConfigFileError {
    /// The error of a file that could not be read: the config file itself,
    /// when `key` is `None`, or the env file at `key`.
    fn unreadable(file: &Path, key: Option<&str>, path: &Path, problem: read::Problem) -> Self {
        let (file, path) = (file.to_owned(), path.to_owned());
        let key = key.map(str::to_owned);
        match (problem, key) {
            (read::Problem::Io(source), None) => ConfigFileError::Read { file, source },
            (read::Problem::Io(source), Some(key)) => ConfigFileError::EnvFile {
                file,
                key,
                env_file: path,
                source,
            },
            (read::Problem::NotAFile(kind), key) => ConfigFileError::NotAFile {
                file,
                key,
                path,
                kind,
            },
            (read::Problem::TooLarge(bytes), key) => ConfigFileError::TooLarge {
                limit: if key.is_some() {
                    MAX_ENV_FILE_BYTES
                } else {
                    MAX_CONFIG_FILE_BYTES
                },
                file,
                key,
                path,
                bytes,
            },
        }
    }
}

impl ServersFile {
    /// Reads the file at `path`, expanding variables from this process's
    /// environment.
    ///
    /// The file, and every `envFile` it names, must be a regular file of at
    /// most [`MAX_CONFIG_FILE_BYTES`], or [`MAX_ENV_FILE_BYTES`] for env
    /// files. Anything else is refused without being read, with
    /// [`ConfigFileError::NotAFile`] or [`ConfigFileError::TooLarge`]. Files
    /// are opened non-blocking, so a FIFO or a device never makes this wait:
    /// it only reads regular files, and is safe to call from async code.
    ///
    /// Loading a file is deciding to run every command in it: see
    /// [the security model](self#security-model).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::config_file::ServersFile;
    ///
    /// let path = std::env::temp_dir().join(format!("conduit-doc-load-{}.json", std::process::id()));
    /// let text = r#"{ "mcpServers": { "time": { "command": "uvx", "args": ["mcp-server-time"] } } }"#;
    /// std::fs::write(&path, text).unwrap();
    /// let file = ServersFile::load(&path)?;
    /// let time = file.server("time").unwrap();
    /// assert_eq!(time.transport.as_stdio().unwrap().args, ["mcp-server-time"]);
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), conduit_mcp::config_file::ConfigFileError>(())
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ConfigFileError> {
        Self::load_with(path, &ReadOptions::default())
    }

    /// [`load`](Self::load), with the values of the file's `${input:ID}`s
    /// given by [`ReadOptions`].
    ///
    /// ```no_run
    /// use conduit_mcp::config_file::{ReadOptions, ServersFile};
    ///
    /// let key = std::env::var("SEARCH_API_KEY")?;
    /// let file = ServersFile::load_with(".vscode/mcp.json", &ReadOptions::new().input("api-key", key))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load_with(
        path: impl AsRef<Path>,
        options: &ReadOptions,
    ) -> Result<Self, ConfigFileError> {
        let path = path.as_ref();
        let text = Self::read_text(path)?;
        Self::parse_with(&text, path, &|name| std::env::var(name).ok(), options)
    }

    /// The text [`load`](Self::load) reads, with its checks: a regular
    /// file of at most [`MAX_CONFIG_FILE_BYTES`], opened without waiting.
    pub(crate) fn read_text(path: &Path) -> Result<String, ConfigFileError> {
        read::read_text(path, MAX_CONFIG_FILE_BYTES)
            .map_err(|p| ConfigFileError::unreadable(path, None, path, p))
    }

    /// Reads `text` as the file at `path`, expanding variables with `env`.
    /// Relative paths in it are taken from `path`'s directory.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::path::Path;
    /// use conduit_mcp::config_file::ServersFile;
    ///
    /// let text = r#"{
    ///     // Comments and trailing commas are allowed.
    ///     "mcpServers": {
    ///         "github": { "command": "github-mcp", "env": { "TOKEN": "${GITHUB_TOKEN}" } },
    ///         "old": { "command": "old-mcp", "disabled": true },
    ///     }
    /// }"#;
    /// let env = |name: &str| (name == "GITHUB_TOKEN").then(|| "ghp_example".to_string());
    /// let file = ServersFile::parse(text, Path::new("/srv/app/mcp.json"), &env)?;
    /// assert_eq!(file.disabled, ["old"]);
    /// let token = &file.server("github").unwrap().transport.as_stdio().unwrap().env[0].1;
    /// assert!(token.is_secret() && token == "ghp_example");
    /// # Ok::<(), conduit_mcp::config_file::ConfigFileError>(())
    /// ```
    pub fn parse(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigFileError> {
        Self::parse_with(text, path, env, &ReadOptions::default())
    }

    /// [`parse`](Self::parse), with the values of the file's `${input:ID}`s
    /// given by [`ReadOptions`].
    pub fn parse_with(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
        options: &ReadOptions,
    ) -> Result<Self, ConfigFileError> {
        let file = std::path::absolute(path).map_err(|source| ConfigFileError::Read {
            file: path.to_owned(),
            source,
        })?;
        let dir = file.parent().unwrap_or(Path::new("/")).to_owned();
        let workspace = match dir.file_name() {
            Some(n) if n == ".vscode" => dir.parent().unwrap_or(&dir).to_owned(),
            _ => dir.clone(),
        };
        let ctx = entry::Context {
            file: &file,
            dir: &dir,
            vars: Variables::new(env, &workspace, &options.inputs),
        };
        let top = parse_jsonc(text).map_err(|problem| ConfigFileError::Syntax {
            file: file.clone(),
            problem,
        })?;
        let Value::Object(top) = top else {
            return Err(ctx.invalid("(top level)", "must be a JSON object"));
        };
        let host_options = host_options(&ctx, &top)?;
        let mut servers = BTreeMap::new();
        let mut serve = BTreeMap::new();
        let mut raw_entries = BTreeMap::new();
        let mut disabled = Vec::new();
        let mut unsupported = Vec::new();
        let mut found = false;
        for path in SECTIONS {
            let Some(section) = lookup(&top, path) else {
                continue;
            };
            found = true;
            let section_key = path.join(".");
            let Value::Object(entries) = section else {
                return Err(ctx.invalid(&section_key, "must be an object of servers"));
            };
            for (name, value) in entries {
                let key = format!("{section_key}.{name}");
                if name.trim().is_empty() {
                    return Err(ctx.invalid(&key, "a server name must not be empty"));
                }
                let known = servers.contains_key(name)
                    || disabled.contains(name)
                    || unsupported.iter().any(|u: &Unsupported| u.name == *name);
                if known {
                    return Err(ConfigFileError::Duplicate {
                        file: file.clone(),
                        name: name.clone(),
                    });
                }
                if let Some((at, input)) = entry::unsupplied_input(&ctx, &key, value) {
                    unsupported.push(Unsupported {
                        name: name.clone(),
                        reason: format!(
                            "`${{input:{input}}}` (in `{at}`) has no value: supply the input `{input}`"
                        ),
                    });
                    continue;
                }
                match entry::read(&ctx, &key, name, value)? {
                    Outcome::Server(config, options) => {
                        servers.insert(name.clone(), *config);
                        serve.insert(name.clone(), options);
                        raw_entries.insert(name.clone(), fingerprint(value));
                    }
                    Outcome::Disabled => disabled.push(name.clone()),
                    Outcome::Unsupported(reason) => unsupported.push(Unsupported {
                        name: name.clone(),
                        reason,
                    }),
                }
            }
        }
        if !found {
            return Err(ConfigFileError::NoServers { file });
        }
        Ok(ServersFile {
            path: file,
            servers,
            serve,
            entries: raw_entries,
            host_options,
            disabled,
            unsupported,
        })
    }

    /// The configuration of the server `name`, if the file starts one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::path::Path;
    /// use conduit_mcp::config_file::ServersFile;
    ///
    /// let text = r#"{ "servers": { "time": { "command": "uvx", "args": ["mcp-server-time"] } } }"#;
    /// let file = ServersFile::parse(text, Path::new("/srv/app/.vscode/mcp.json"), &|_| None)?;
    /// assert_eq!(file.server("time").unwrap().display_name(), "time");
    /// assert!(file.server("fetch").is_none());
    /// # Ok::<(), conduit_mcp::config_file::ConfigFileError>(())
    /// ```
    pub fn server(&self, name: &str) -> Option<&ClientConfig> {
        self.servers.get(name)
    }

    /// A fingerprint of the entry `name` as written in the file, before
    /// variables are expanded: two readings of the file give equal
    /// fingerprints for an entry that did not change, so a reload restarts
    /// only the servers whose entries changed. `None` for a name the file
    /// does not start.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::path::Path;
    /// use conduit_mcp::config_file::ServersFile;
    ///
    /// let read = |text: &str| ServersFile::parse(text, Path::new("/srv/mcp.json"), &|_| None);
    /// let before = read(r#"{ "mcpServers": { "a": { "command": "a" }, "b": { "command": "b" } } }"#)?;
    /// let after = read(r#"{ "mcpServers": { "a": { "command": "a" }, "b": { "command": "b2" } } }"#)?;
    /// assert_eq!(before.fingerprint("a"), after.fingerprint("a")); // unchanged: keep it running
    /// assert_ne!(before.fingerprint("b"), after.fingerprint("b")); // changed: restart it
    /// assert_eq!(before.fingerprint("c"), None);
    /// # Ok::<(), conduit_mcp::config_file::ConfigFileError>(())
    /// ```
    pub fn fingerprint(&self, name: &str) -> Option<u64> {
        self.entries.get(name).copied()
    }

    /// Keeps only the servers whose names `keep` accepts, with their
    /// options and fingerprints.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::path::Path;
    /// use conduit_mcp::config_file::ServersFile;
    ///
    /// let text = r#"{ "mcpServers": { "time": { "command": "uvx" }, "fetch": { "command": "uvx" } } }"#;
    /// let mut file = ServersFile::parse(text, Path::new("/srv/mcp.json"), &|_| None)?;
    /// file.retain_servers(|name| name == "time"); // as `mcp serve time` does
    /// assert_eq!(file.servers.keys().collect::<Vec<_>>(), ["time"]);
    /// assert_eq!(file.fingerprint("fetch"), None);
    /// # Ok::<(), conduit_mcp::config_file::ConfigFileError>(())
    /// ```
    pub fn retain_servers(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.servers.retain(|n, _| keep(n));
        self.serve.retain(|n, _| keep(n));
        self.entries.retain(|n, _| keep(n));
    }
}

/// The JSON with comments of the regular file at `path`, read within the
/// bounds of a config file: a regular file of at most
/// [`MAX_CONFIG_FILE_BYTES`], opened without blocking on a FIFO. It is for
/// other files a program reads beside its config file, a tokens file say.
///
/// # Examples
///
/// ```
/// use conduit_mcp::config_file::read_jsonc;
///
/// let path = std::env::temp_dir().join(format!("conduit-doc-jsonc-{}.json", std::process::id()));
/// std::fs::write(&path, "{ \"theme\": \"dark\", // a comment\n }").unwrap();
/// let value = read_jsonc(&path)?;
/// assert_eq!(value["theme"], "dark");
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), conduit_mcp::config_file::ConfigFileError>(())
/// ```
pub fn read_jsonc(path: &Path) -> Result<Value, ConfigFileError> {
    let text = read::read_text(path, MAX_CONFIG_FILE_BYTES)
        .map_err(|p| ConfigFileError::unreadable(path, None, path, p))?;
    parse_jsonc(&text).map_err(|problem| ConfigFileError::Syntax {
        file: path.to_owned(),
        problem,
    })
}

/// JSON with comments and trailing commas, VS Code's JSONC, nothing looser.
fn parse_jsonc(text: &str) -> Result<Value, String> {
    let opts = jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    jsonc_parser::parse_to_serde_value(text, &opts).map_err(|e| e.to_string())
}

fn lookup<'a>(top: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(top.get(*first)?, |v, k| v.as_object()?.get(*k))
}

/// The top-level options key: an object without servers, whose fields are
/// the host's to read.
fn host_options(
    ctx: &entry::Context<'_>,
    top: &Map<String, Value>,
) -> Result<Map<String, Value>, ConfigFileError> {
    let Some(options) = top.get(OPTIONS_KEY) else {
        return Ok(Map::new());
    };
    let Value::Object(map) = options else {
        return Err(ctx.invalid(OPTIONS_KEY, "must be an object"));
    };
    if map.contains_key("servers") {
        return Err(ctx.invalid(
            &format!("{OPTIONS_KEY}.servers"),
            "servers go under `mcpServers` or `servers`, not here",
        ));
    }
    Ok(map.clone())
}
