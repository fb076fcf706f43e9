//! The command line: options, subcommands, and how each value is read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use serde_json::Value;

use crate::client::{EraPreference, StderrMode};
use crate::config_file::ReadOptions;
use crate::secret::Secret;

/// The largest timeout: deadlines are `Instant`s and must stay
/// representable.
const MAX_TIMEOUT: Duration = Duration::from_secs(366 * 24 * 3600);

const USAGE: &str = "mcp [OPTIONS] SUBCOMMAND [ARGS] -- COMMAND [ARGS...]
       mcp [OPTIONS] SUBCOMMAND [ARGS] --url URL [--header K=V]...
       mcp [OPTIONS] SUBCOMMAND [ARGS] --config FILE [--server NAME]
       mcp servers --config FILE
       mcp serve --config FILE [--listen ADDR] [--token-env VAR | --tokens FILE]
       mcp completions SHELL";

const AFTER_HELP: &str = "\
Everything after the first `--` is the server command and its arguments,
passed literally (no shell); they may start with `-`. COMMAND is a name
looked up in PATH or a path (a relative path is taken from the current
directory).

With --url URL instead, the server is a Streamable HTTP server at URL
(feature http; both protocol eras); --header K=V adds a header to every
request (repeatable; values are never printed or logged).

With --config FILE instead (a Claude Desktop / Cursor / Claude Code
`mcpServers` file, or VS Code's `servers`), the server is NAME from the
file (--server; not needed when the file has one server). `tools` without
--server lists every server's tools with namespaced names (server__tool),
`call server__tool` calls one; `prompts` and `prompt server__name` do the
same for prompts, `resources` lists every server's resources and `read URI`
reads one from the server that lists it; `servers` starts every server and
prints one line each. --input ID=VALUE gives the value of the file's
${input:ID} (VS Code's inputs); a server that uses one without a value is
left out, the others run.

A config file runs every command in it, as you would by typing it: there
is no workspace trust, so read a file (for example one from a cloned
repository) before you pass it. --verbose prints the file and each command
line, with its directory, before it runs (values taken from the
environment or an env file show as ***). A command given as a bare name is
looked up in PATH (a relative PATH entry is taken from the current
directory) and run by its absolute path.

Subcommands:
  discover                 print the session: era, protocolVersion,
                           serverInfo, capabilities, instructions, pid
  tools                    print every tool (all pages of tools/list)
  call TOOL [JSON_ARGS]    call a tool; JSON_ARGS is a JSON object
                           (default {}); prints the tool result
  request METHOD [JSON_PARAMS]
                           send any request; JSON_PARAMS is a JSON object
                           or array; prints the raw result
  resources                print every resource (all pages)
  read URI                 read a resource; prints its contents
  prompts                  print every prompt (all pages)
  prompt NAME [JSON_ARGS]  get a prompt; JSON_ARGS is a JSON object of
                           strings (default {}); prints its messages
  servers                  (--config) start every server; one line each:
                           name, era, protocol version, tools, ready time,
                           or the error
  serve                    (--config) serve every server over Streamable
                           HTTP (see mcp serve --help)
  completions SHELL        print a shell completion script

Output: the result is printed on stdout as one JSON document. Messages and
progress go to stderr (a progress bar on a terminal, one JSON line per
notification otherwise). Before exiting, mcp waits until every server
process (and its process group) is shut down: stdin closed, then SIGTERM,
then SIGKILL when needed.

Exit codes:
  0  success. A tool result with \"isError\": true is a successful answer
     (the tool ran and reported a failure): it is printed and mcp exits 0
  1  the server answered with a JSON-RPC error; the error object
     ({\"code\", \"message\", \"data\"?}) is printed on stdout
  2  usage or configuration error (bad option, bad JSON, missing
     executable, bad --cd, bad config file, unknown tool)
  3  transport failure or timeout (the server exited, closed its output,
     or did not answer in time), a server of --config that is not ready,
     or interrupted by Ctrl-C

Examples:
  mcp discover -- node server.js
  mcp --era 2025-11-25 tools -- uvx mcp-server-time
  mcp tools --url https://mcp.example.com/mcp --header \"Authorization=Bearer $TOKEN\"
  mcp call get_current_time '{\"timezone\":\"UTC\"}' -- mcp-server-time
  mcp --progress call slow-tool '{}' -- ./my-server --flag
  mcp servers --config ~/.cursor/mcp.json
  mcp call time__get_current_time '{\"timezone\":\"UTC\"}' --config .mcp.json
  mcp completions bash > ~/.local/share/bash-completion/completions/mcp
";

/// `mcp`: talk to MCP servers, local ones over stdio or remote ones over
/// Streamable HTTP.
#[derive(Debug, Parser)]
#[command(
    name = "mcp",
    version,
    about = "mcp: talk to MCP servers, local ones over stdio or remote ones over Streamable HTTP, or serve a config file's servers over HTTP (conduit-mcp)",
    override_usage = USAGE,
    after_help = AFTER_HELP,
    subcommand_value_name = "SUBCOMMAND",
    subcommand_help_heading = "Subcommands"
)]
pub(crate) struct Cli {
    #[command(flatten)]
    options: Options,
    #[command(flatten)]
    client: ClientArgs,
    #[command(subcommand)]
    command: Command,
}

/// The subcommands that talk to no one server as a client: the options of
/// [`ClientArgs`] are not theirs, and serve would refuse them.
const NOT_A_CLIENT: &[&str] = &["serve", "completions"];

impl Cli {
    /// The command line as `mcp` reads it: the options of [`Options`]
    /// before or after any subcommand, those of [`ClientArgs`] before a
    /// subcommand or after one that talks to a server as a client. They are
    /// not read after `serve`, whose help does not list them.
    pub(crate) fn definition() -> clap::Command {
        let client: Vec<clap::Arg> = ClientArgs::augment_args(clap::Command::new("client"))
            .get_arguments()
            .cloned()
            .collect();
        let mut cmd = <Cli as CommandFactory>::command();
        let clients: Vec<String> = cmd
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .filter(|n| !NOT_A_CLIENT.contains(&n.as_str()))
            .collect();
        for name in clients {
            cmd = cmd.mut_subcommand(name, |c| c.args(client.clone()));
        }
        cmd
    }

    /// Parses `args`, the first being the program's name, with
    /// [`definition`](Self::definition).
    pub(crate) fn parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let mut definition = Self::definition();
        let matches = definition.try_get_matches_from_mut(args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        // By name, not by asking `sub` for `progress`: a release build of
        // clap answers `Ok(None)` for an argument a subcommand lacks.
        if let Some((name, sub)) = matches.subcommand() {
            if !NOT_A_CLIENT.contains(&name) {
                let after = ClientArgs::from_arg_matches(sub)?;
                cli.client
                    .join(after)
                    .map_err(|e| definition.error(ErrorKind::ArgumentConflict, e))?;
            }
        }
        let client = std::mem::take(&mut cli.client);
        cli.options.progress = client.progress;
        cli.options.url = client.url;
        cli.options.header = client.header;
        Ok(cli)
    }

    /// The options every subcommand takes.
    #[inline]
    pub(crate) fn options(&self) -> &Options {
        &self.options
    }

    /// The subcommand.
    #[inline]
    pub(crate) fn subcommand(&self) -> &Command {
        &self.command
    }

    /// The options and the subcommand, taken apart.
    pub(crate) fn into_parts(self) -> (Options, Command) {
        (self.options, self.command)
    }
}

/// Options of every subcommand, before or after it.
#[derive(Debug, Clone, Args)]
pub(crate) struct Options {
    /// Bound each request, and the wait for the server to be ready, to N
    /// milliseconds (default 60000)
    #[arg(long = "timeout-ms", value_name = "N", global = true, value_parser = timeout)]
    timeout: Option<Duration>,
    /// Protocol era. The default is auto: probe with server/discover, fall
    /// back to initialize. 2025-11-25 includes the older revisions; modern
    /// and legacy are read too
    #[arg(long, value_name = "auto|2026-07-28|2025-11-25", global = true, value_parser = era())]
    era: Option<EraPreference>,
    /// Set a variable in the server's environment (repeatable). Only HOME
    /// LOGNAME PATH SHELL TERM USER are inherited from this process
    #[arg(long = "env", value_name = "K=V", global = true, value_parser = env_pair)]
    env: Vec<(String, String)>,
    /// Run the server in DIR
    #[arg(long, value_name = "DIR", global = true, value_parser = absolute)]
    cd: Option<PathBuf>,
    /// Where the server's stderr goes (default inherit; file:PATH appends to
    /// PATH)
    #[arg(long, value_name = "inherit|discard|file:PATH", global = true, value_parser = stderr_mode)]
    stderr: Option<StderrMode>,
    /// `--progress`, before or after the subcommand.
    #[arg(skip)]
    progress: bool,
    /// Say which config file and which commands are about to run, then log
    /// the client's activity to stderr (tracing; RUST_LOG overrides the
    /// filter)
    #[arg(long, global = true)]
    verbose: bool,
    /// Run servers from this config file (mcpServers, or VS Code's servers)
    /// instead of `-- COMMAND`. It runs every command in it: read it first
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// With --config: the value of the file's ${input:ID} (repeatable; held
    /// as a secret). A server that uses an input without a value is left
    /// out, the others run
    #[arg(long = "input", value_name = "ID=VALUE", global = true, value_parser = input_pair)]
    input: Vec<SecretPair>,
    /// With --config: the server to use (with serve: the servers to serve,
    /// repeatable; every one of the file by default)
    #[arg(long = "server", value_name = "NAME", global = true)]
    servers: Vec<String>,
    /// The one `--server` of a subcommand that uses one server, set from
    /// `servers` once it is checked to hold at most one.
    #[arg(skip)]
    server: Option<String>,
    /// `--url`, before or after the subcommand.
    #[arg(skip)]
    url: Option<String>,
    /// The `--header` pairs, before the subcommand then after it.
    #[arg(skip)]
    header: Vec<SecretPair>,
}

/// The options of a subcommand that talks to a server as a client, before
/// or after it: every subcommand but serve and completions.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ClientArgs {
    /// Ask for progress; show it on stderr (a bar on a terminal, else each
    /// progress notification as one JSON line)
    #[arg(long)]
    progress: bool,
    /// Talk to the Streamable HTTP server at URL instead of `-- COMMAND`
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// With --url: send header K: V with every request (repeatable; the
    /// value is held as a secret)
    #[arg(long = "header", value_name = "K=V", value_parser = header_pair)]
    header: Vec<SecretPair>,
}

impl ClientArgs {
    /// These, then `after`, given after the subcommand. A URL given on both
    /// sides is refused.
    fn join(&mut self, after: ClientArgs) -> Result<(), &'static str> {
        self.progress |= after.progress;
        match (&self.url, after.url) {
            (Some(_), Some(_)) => return Err("--url is given twice"),
            (None, url) => self.url = url,
            (Some(_), None) => {}
        }
        self.header.extend(after.header);
        Ok(())
    }
}

impl Options {
    /// `--timeout-ms`.
    #[inline]
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// `--era`.
    #[inline]
    pub(crate) fn era(&self) -> Option<EraPreference> {
        self.era
    }

    /// The `--env` pairs, in order.
    #[inline]
    pub(crate) fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// `--cd`.
    #[inline]
    pub(crate) fn cd(&self) -> Option<&PathBuf> {
        self.cd.as_ref()
    }

    /// `--stderr`.
    #[inline]
    pub(crate) fn stderr(&self) -> Option<&StderrMode> {
        self.stderr.as_ref()
    }

    /// `--progress`.
    #[inline]
    pub(crate) fn progress(&self) -> bool {
        self.progress
    }

    /// `--verbose`.
    #[inline]
    pub(crate) fn verbose(&self) -> bool {
        self.verbose
    }

    /// `--config`.
    #[inline]
    pub(crate) fn config(&self) -> Option<&PathBuf> {
        self.config.as_ref()
    }

    /// The `--server` names, in order.
    #[inline]
    pub(crate) fn servers(&self) -> &[String] {
        &self.servers
    }

    /// The one server a subcommand other than serve uses, as
    /// [`choose_server`](Self::choose_server) chose it.
    #[inline]
    pub(crate) fn server(&self) -> Option<&String> {
        self.server.as_ref()
    }

    /// Sets the one server a subcommand other than serve uses.
    pub(crate) fn choose_server(&mut self, name: String) {
        self.server = Some(name);
    }

    /// `--url`.
    #[inline]
    pub(crate) fn url(&self) -> Option<&String> {
        self.url.as_ref()
    }

    /// The `--header` pairs, in order.
    #[inline]
    pub(crate) fn header(&self) -> &[SecretPair] {
        &self.header
    }

    /// `--input`: the values of a config file's `${input:ID}`s; the first
    /// malformed one's message.
    pub(crate) fn read_options(&self) -> Result<ReadOptions, &'static str> {
        let mut options = ReadOptions::new();
        for i in &self.input {
            match i {
                SecretPair::Pair(id, value) => options = options.input(id.clone(), value.expose()),
                SecretPair::Bad(why) => return Err(why),
            }
        }
        Ok(options)
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Print the session: era, protocolVersion, serverInfo, capabilities,
    /// instructions, pid
    #[command(
        override_usage = "mcp discover [OPTIONS] -- COMMAND [ARGS...]\n       mcp discover [OPTIONS] --url URL [--header K=V]...\n       mcp discover [OPTIONS] --config FILE [--server NAME]"
    )]
    Discover,
    /// Print every tool (all pages of tools/list); with --config and no
    /// --server, every server's, with namespaced names
    #[command(
        override_usage = "mcp tools [OPTIONS] -- COMMAND [ARGS...]\n       mcp tools [OPTIONS] --url URL [--header K=V]...\n       mcp tools [OPTIONS] --config FILE [--server NAME]"
    )]
    Tools,
    /// `call TOOL [JSON_ARGS]`: call a tool and print its result
    #[command(
        override_usage = "mcp call [OPTIONS] TOOL [JSON_ARGS] -- COMMAND [ARGS...]\n       mcp call [OPTIONS] TOOL [JSON_ARGS] --url URL [--header K=V]...\n       mcp call [OPTIONS] TOOL [JSON_ARGS] --config FILE [--server NAME]"
    )]
    Call {
        /// The tool (with --config and no --server: its namespaced name)
        #[arg(value_name = "TOOL")]
        tool: String,
        /// The arguments, a JSON object (default {})
        #[arg(value_name = "JSON_ARGS", value_parser = json_object)]
        args: Option<Value>,
    },
    /// `request METHOD [JSON_PARAMS]`: send any request and print the raw
    /// result
    #[command(
        override_usage = "mcp request [OPTIONS] METHOD [JSON_PARAMS] -- COMMAND [ARGS...]\n       mcp request [OPTIONS] METHOD [JSON_PARAMS] --url URL [--header K=V]...\n       mcp request [OPTIONS] METHOD [JSON_PARAMS] --config FILE [--server NAME]"
    )]
    Request {
        /// The method
        #[arg(value_name = "METHOD")]
        method: String,
        /// The params, a JSON object or array
        #[arg(value_name = "JSON_PARAMS", value_parser = json_params)]
        params: Option<Value>,
    },
    /// Print every resource (all pages of resources/list); with --config and
    /// no --server, every server's, each with its server
    #[command(
        override_usage = "mcp resources [OPTIONS] -- COMMAND [ARGS...]\n       mcp resources [OPTIONS] --url URL [--header K=V]...\n       mcp resources [OPTIONS] --config FILE [--server NAME]"
    )]
    Resources,
    /// `read URI`: read a resource and print its contents
    #[command(
        override_usage = "mcp read [OPTIONS] URI -- COMMAND [ARGS...]\n       mcp read [OPTIONS] URI --url URL [--header K=V]...\n       mcp read [OPTIONS] URI --config FILE [--server NAME]"
    )]
    Read {
        /// The resource's URI
        #[arg(value_name = "URI")]
        uri: String,
    },
    /// Print every prompt (all pages of prompts/list); with --config and no
    /// --server, every server's, with namespaced names
    #[command(
        override_usage = "mcp prompts [OPTIONS] -- COMMAND [ARGS...]\n       mcp prompts [OPTIONS] --url URL [--header K=V]...\n       mcp prompts [OPTIONS] --config FILE [--server NAME]"
    )]
    Prompts,
    /// `prompt NAME [JSON_ARGS]`: get a prompt and print its messages
    #[command(
        override_usage = "mcp prompt [OPTIONS] NAME [JSON_ARGS] -- COMMAND [ARGS...]\n       mcp prompt [OPTIONS] NAME [JSON_ARGS] --url URL [--header K=V]...\n       mcp prompt [OPTIONS] NAME [JSON_ARGS] --config FILE [--server NAME]"
    )]
    Prompt {
        /// The prompt (with --config and no --server: its namespaced name)
        #[arg(value_name = "NAME")]
        name: String,
        /// The arguments, a JSON object of strings (default {})
        #[arg(value_name = "JSON_ARGS", value_parser = json_object)]
        args: Option<Value>,
    },
    /// Start every server of --config FILE and print one line each: name,
    /// era, protocol version, tools, ready time, or the error
    #[command(override_usage = "mcp servers [OPTIONS] --config FILE [--server NAME]")]
    Servers,
    /// Serve the servers of --config FILE over Streamable HTTP, supervised:
    /// POST /mcp for every server in one namespace, /servers/NAME/mcp for
    /// one server as it is, GET /health, GET /metrics. Stops on SIGTERM or
    /// SIGINT with exit 0, every server process gone
    #[command(
        override_usage = "mcp serve --config FILE [--listen ADDR] [--token-env VAR | --tokens FILE] [OPTIONS]"
    )]
    Serve(ServeArgs),
    /// Print a completion script for SHELL on stdout
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The options of `mcp serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Listen on ADDR (host:port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8808")]
    listen: String,
    /// Require `Authorization: Bearer TOKEN`, TOKEN read from the variable
    /// VAR (access to every server and tool)
    #[arg(long = "token-env", value_name = "VAR", conflicts_with = "tokens")]
    token_env: Option<String>,
    /// Per-client tokens, each with the servers and tools it may use: a
    /// JSON file {"clients": {NAME: {"token_env"|"token": ..., "servers":
    /// {SERVER|"*": [TOOL_GLOB...]}, "operator": BOOL}}} (an operator may
    /// read /metrics)
    #[arg(long, value_name = "FILE", value_parser = absolute)]
    tokens: Option<PathBuf>,
    /// Serve /metrics to `Authorization: Bearer TOKEN` alone, TOKEN read
    /// from the variable VAR, and to operator clients of --tokens; it
    /// reaches no server
    #[arg(long = "metrics-token-env", value_name = "VAR")]
    metrics_token_env: Option<String>,
    /// Allow listening on a non-loopback address without a token
    #[arg(long = "insecure-no-auth")]
    insecure_no_auth: bool,
    /// Allow browser requests from ORIGIN, repeatable; other origins get
    /// 403. Loopback origins are always allowed, and `*` allows any
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// Follow the config file: servers whose entry changed restart, added
    /// ones start, removed ones stop; the others are untouched
    #[arg(long)]
    watch: bool,
    /// Append one JSON line per call to FILE (time, client, server,
    /// method, tool, duration, outcome)
    #[arg(long = "log-calls", value_name = "FILE", value_parser = absolute)]
    log_calls: Option<PathBuf>,
    /// With --log-calls: each call's arguments too
    #[arg(long = "log-arguments", requires = "log_calls")]
    log_arguments: bool,
    /// On SIGTERM/SIGINT, give calls in flight N milliseconds to finish
    /// (default 10000)
    #[arg(long = "grace-ms", value_name = "N", value_parser = timeout)]
    grace: Option<Duration>,
}

impl ServeArgs {
    /// `--listen`.
    #[inline]
    pub(crate) fn listen(&self) -> &str {
        &self.listen
    }

    /// `--token-env`.
    #[inline]
    pub(crate) fn token_env(&self) -> Option<&str> {
        self.token_env.as_deref()
    }

    /// `--tokens`.
    #[inline]
    pub(crate) fn tokens(&self) -> Option<&PathBuf> {
        self.tokens.as_ref()
    }

    /// `--metrics-token-env`.
    #[inline]
    pub(crate) fn metrics_token_env(&self) -> Option<&str> {
        self.metrics_token_env.as_deref()
    }

    /// `--insecure-no-auth`.
    #[inline]
    pub(crate) fn insecure_no_auth(&self) -> bool {
        self.insecure_no_auth
    }

    /// The `--allow-origin` values, in order.
    #[inline]
    pub(crate) fn allow_origin(&self) -> &[String] {
        &self.allow_origin
    }

    /// `--watch`.
    #[inline]
    pub(crate) fn watch(&self) -> bool {
        self.watch
    }

    /// `--log-calls`.
    #[inline]
    pub(crate) fn log_calls(&self) -> Option<&PathBuf> {
        self.log_calls.as_ref()
    }

    /// `--log-arguments`.
    #[inline]
    pub(crate) fn log_arguments(&self) -> bool {
        self.log_arguments
    }

    /// `--grace-ms`.
    #[inline]
    pub(crate) fn grace(&self) -> Option<Duration> {
        self.grace
    }
}

/// `--era`: the revision dates, and the names `EraPreference` is
/// serialised with; serde reads them all.
fn era() -> impl TypedValueParser<Value = EraPreference> {
    use clap::builder::PossibleValue;
    clap::builder::PossibleValuesParser::new([
        PossibleValue::new("auto"),
        PossibleValue::new("2026-07-28").aliases(["modern", "stateless"]),
        PossibleValue::new("2025-11-25").aliases(["legacy", "stateful"]),
    ])
    // An alias arrives as typed: serde reads every name.
    .map(|v| serde_json::from_value(serde_json::Value::String(v)).unwrap_or_default())
}

fn timeout(v: &str) -> Result<Duration, String> {
    let ms: u64 = v
        .parse()
        .map_err(|_| format!("--timeout-ms expects a number, got {v:?}"))?;
    if ms == 0 {
        return Err("--timeout-ms must be positive, got 0".into());
    }
    Ok(Duration::from_millis(ms).min(MAX_TIMEOUT))
}

fn env_pair(v: &str) -> Result<(String, String), String> {
    match v.split_once('=') {
        Some((k, val)) if !k.is_empty() => Ok((k.to_owned(), val.to_owned())),
        _ => Err(format!("--env expects K=V, got {v:?}")),
    }
}

/// One `--header K=V` or `--input ID=VALUE`: the name and the secret
/// value, or why it is not one. Never refused by clap itself, which
/// would print the whole argument, token included; `mcp` says what is
/// wrong without it.
#[derive(Debug, Clone)]
pub(crate) enum SecretPair {
    /// A name and its value.
    Pair(String, Secret),
    /// Not `K=V` with a valid K: the message, without the value.
    Bad(&'static str),
}

/// The characters of a header name: RFC 9110's `token`.
fn is_header_name(k: &str) -> bool {
    !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn header_pair(v: &str) -> Result<SecretPair, String> {
    Ok(match v.split_once('=') {
        Some((k, val)) if is_header_name(k.trim()) => {
            SecretPair::Pair(k.trim().to_owned(), Secret::new(val.trim()))
        }
        _ => SecretPair::Bad(
            "--header expects K=V with K a header name (for example \
             Authorization=Bearer ...); the argument is not shown, as it may hold a token",
        ),
    })
}

/// `--input ID=VALUE`: the value as given, not trimmed, since it is the
/// user's.
fn input_pair(v: &str) -> Result<SecretPair, String> {
    Ok(match v.split_once('=') {
        Some((id, val)) if !id.is_empty() && !id.contains('}') => {
            SecretPair::Pair(id.to_owned(), Secret::new(val))
        }
        _ => SecretPair::Bad(
            "--input expects ID=VALUE with ID the name in the file's ${input:ID}; \
             the argument is not shown, as it may hold a secret",
        ),
    })
}

fn stderr_mode(v: &str) -> Result<StderrMode, String> {
    match v {
        "inherit" => Ok(StderrMode::Inherit),
        "discard" => Ok(StderrMode::Discard),
        f if f.starts_with("file:") && f.len() > 5 => Ok(StderrMode::File(absolute(&f[5..])?)),
        _ => Err(format!(
            "--stderr expects inherit, discard or file:PATH, got {v:?}"
        )),
    }
}

/// A path made absolute from the current directory.
pub(crate) fn absolute(p: &str) -> Result<PathBuf, String> {
    let p = Path::new(p);
    if p.is_absolute() {
        return Ok(p.to_owned());
    }
    std::env::current_dir()
        .map(|d| d.join(p))
        .map_err(|e| format!("cannot read the current directory: {e}"))
}

fn json(what: &str, text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON ({e}): {text}"))
}

fn json_object(text: &str) -> Result<Value, String> {
    let v = json("JSON_ARGS", text)?;
    if !v.is_object() {
        return Err(format!("JSON_ARGS must be a JSON object, got {v}"));
    }
    Ok(v)
}

fn json_params(text: &str) -> Result<Value, String> {
    let v = json("JSON_PARAMS", text)?;
    if !v.is_object() && !v.is_array() {
        return Err("JSON_PARAMS must be a JSON object or array".into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::definition().debug_assert();
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::parse_args(std::iter::once("mcp").chain(args.iter().copied()))
    }

    #[test]
    fn client_options_are_taken_before_or_after_a_client_subcommand() {
        let after = parse(&[
            "tools",
            "--url",
            "http://x/mcp",
            "--progress",
            "--header",
            "A=1",
        ])
        .unwrap();
        let before = parse(&[
            "--url",
            "http://x/mcp",
            "--progress",
            "--header",
            "A=1",
            "tools",
        ])
        .unwrap();
        for cli in [after, before] {
            let o = cli.options();
            assert_eq!(o.url().map(String::as_str), Some("http://x/mcp"));
            assert!(o.progress());
            assert!(
                matches!(&o.header()[0], SecretPair::Pair(k, v) if k == "A" && v.expose() == "1")
            );
        }
        let both = parse(&["--header", "A=1", "call", "t", "--header", "B=2"]).unwrap();
        assert_eq!(both.options().header().len(), 2);
        let twice = parse(&["--url", "http://a", "tools", "--url", "http://b"]).unwrap_err();
        assert!(twice.to_string().contains("--url"), "{twice}");
    }

    /// `parse_args` reads the client options after exactly the subcommands
    /// outside `NOT_A_CLIENT`: the same set that defines them. A release
    /// build once asked `serve` for `progress` and refused every `mcp serve`.
    #[test]
    fn the_subcommands_with_client_options_are_those_outside_not_a_client() {
        for sub in Cli::definition().get_subcommands() {
            let has = sub.get_arguments().any(|a| a.get_id() == "progress");
            let outside = !NOT_A_CLIENT.contains(&sub.get_name());
            assert_eq!(has, outside, "subcommand {}", sub.get_name());
        }
        let serve = parse(&["serve", "--config", "f.json", "--listen", "127.0.0.1:0"]).unwrap();
        assert!(!serve.options().progress());
        parse(&["completions", "bash"]).unwrap();
    }

    #[test]
    fn serve_takes_no_client_option_after_it_and_lists_none() {
        for flag in [
            &["--progress"][..],
            &["--url", "http://x"],
            &["--header", "A=1"],
        ] {
            let mut args = vec!["serve", "--config", "f.json"];
            args.extend_from_slice(flag);
            let e = parse(&args).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::UnknownArgument, "{flag:?}: {e}");
        }
        // `mcp serve --help` and `mcp call --help`, as printed.
        let help = |sub: &str| {
            let e = parse(&[sub, "--help"]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::DisplayHelp);
            e.to_string()
        };
        let serve = help("serve");
        for flag in ["--progress", "--url", "--header"] {
            assert!(!serve.contains(flag), "{flag} in serve's help:\n{serve}");
        }
        for flag in ["--listen", "--config", "--input", "--timeout-ms"] {
            assert!(serve.contains(flag), "{flag} not in serve's help:\n{serve}");
        }
        let call = help("call");
        for flag in ["--progress", "--url", "--header", "--config"] {
            assert!(call.contains(flag), "{flag} not in call's help:\n{call}");
        }
    }

    #[test]
    fn an_era_is_named_by_its_revision_or_as_before() {
        for (name, era) in [
            ("2025-11-25", EraPreference::Stateful),
            ("legacy", EraPreference::Stateful),
            ("2026-07-28", EraPreference::Stateless),
            ("modern", EraPreference::Stateless),
            ("auto", EraPreference::Auto),
        ] {
            let cli = parse(&["--era", name, "tools"]).unwrap();
            assert_eq!(cli.options().era(), Some(era), "{name}");
        }
    }

    #[test]
    fn an_input_is_an_id_and_a_secret_value_and_a_bad_one_is_not_shown() {
        let cli = parse(&["--input", "api-key=a=b", "tools", "--config", "f.json"]).unwrap();
        let options = cli.options().read_options().unwrap();
        assert!(format!("{options:?}").contains("api-key"));
        assert!(!format!("{options:?}").contains("a=b"));
        let bad = parse(&["--input", "no-equals-sign-s3cret", "tools"]).unwrap();
        let why = bad.options().read_options().unwrap_err();
        assert!(!why.contains("s3cret"), "{why}");
    }
}
