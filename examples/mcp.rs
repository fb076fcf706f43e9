//! `mcp`: talk to a local MCP server over stdio from the command line.
//!
//! ```text
//! cargo run --example mcp -- discover -- npx -y @modelcontextprotocol/server-everything
//! cargo run --example mcp -- call echo '{"message":"hi"}' -- mcp-server-time
//! ```
//!
//! Run with `--help` for the whole usage. Exit codes: 0 success, 1 the server
//! answered with an error, 2 usage or configuration error, 3 transport
//! failure or timeout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use conduit_mcp::{
    Client, ClientConfig, EraPreference, Error, Progress, RequestOptions, StartError, StderrMode,
};
use serde_json::{json, Value};
use tokio::sync::mpsc;

const USAGE: &str = "\
mcp: talk to a local MCP server over stdio (conduit-mcp example)

Usage:
  mcp [OPTIONS] SUBCOMMAND [ARGS] -- COMMAND [ARGS...]

Everything after the first `--` is the server command and its arguments,
passed literally (no shell); they may start with `-`. COMMAND is a name
looked up in PATH or a path (a relative path is taken from the current
directory).

Subcommands:
  discover                 print the session: era, protocolVersion,
                           serverInfo, capabilities, instructions, pid
  tools                    print every tool (all pages of tools/list)
  call TOOL [JSON_ARGS]    call a tool; JSON_ARGS is a JSON object
                           (default {}); prints the tool result
  request METHOD [JSON_PARAMS]
                           send any request; JSON_PARAMS is a JSON object
                           or array; prints the raw result

Options:
  --timeout-ms N           bound each request, and the wait for the server
                           to be ready, to N milliseconds (default 60000)
  --era auto|modern|legacy protocol era (default auto: probe with
                           server/discover, fall back to initialize)
  --env K=V                set a variable in the server's environment
                           (repeatable). Only HOME LOGNAME PATH SHELL TERM
                           USER are inherited from this process
  --cd DIR                 run the server in DIR
  --stderr inherit|discard|file:PATH
                           where the server's stderr goes (default inherit;
                           file:PATH appends to PATH)
  --progress               ask for progress; print each progress
                           notification as one JSON line on stderr
  --verbose                log the client's activity to stderr (tracing;
                           RUST_LOG overrides the filter)
  -h, --help               this text

Output: the result is printed on stdout as one JSON document. Messages and
progress go to stderr. Before exiting, mcp waits until the server process
(and its process group) is shut down: stdin closed, then SIGTERM, then
SIGKILL when needed.

Exit codes:
  0  success. A tool result with \"isError\": true is a successful answer
     (the tool ran and reported a failure): it is printed and mcp exits 0
  1  the server answered with a JSON-RPC error; the error object
     ({\"code\", \"message\", \"data\"?}) is printed on stdout
  2  usage or configuration error (bad option, bad JSON, missing
     executable, bad --cd)
  3  transport failure or timeout (the server exited, closed its output,
     or did not answer in time), or interrupted by Ctrl-C

Examples:
  mcp discover -- node server.js
  mcp --era legacy tools -- uvx mcp-server-time
  mcp call get_current_time '{\"timezone\":\"UTC\"}' -- mcp-server-time
  mcp --progress call slow-tool '{}' -- ./my-server --flag
";

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_TIMEOUT: Duration = Duration::from_secs(366 * 24 * 3600);

/// How the program ends, with its exit code.
enum Fail {
    /// Exit 2, with a message on stderr.
    Usage(String),
    /// Exit 1, with the server's error object on stdout.
    Server(Value),
    /// Exit 3, with a message on stderr.
    Transport(String),
}

enum Command {
    Discover,
    Tools,
    Call {
        tool: String,
        args: Value,
    },
    Request {
        method: String,
        params: Option<Value>,
    },
}

struct Cli {
    command: Command,
    timeout: Duration,
    era: EraPreference,
    env: Vec<(String, String)>,
    cd: Option<PathBuf>,
    stderr: StderrMode,
    progress: bool,
    verbose: bool,
    server: Vec<String>,
}

/// `Ok(None)` means `--help` was asked for.
fn parse(argv: Vec<String>) -> Result<Option<Cli>, String> {
    let (ours, server) = match argv.iter().position(|a| a == "--") {
        Some(i) => (argv[..i].to_vec(), argv[i + 1..].to_vec()),
        None => (argv, Vec::new()),
    };
    if ours.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(None);
    }
    let mut timeout = DEFAULT_TIMEOUT;
    let mut era = EraPreference::Auto;
    let mut env = Vec::new();
    let mut cd = None;
    let mut stderr = StderrMode::Inherit;
    let (mut progress, mut verbose) = (false, false);
    let mut positional = Vec::new();
    let mut it = ours.into_iter();
    while let Some(arg) = it.next() {
        if !arg.starts_with("--") || arg == "-" {
            if arg.starts_with('-') && arg.len() > 1 && positional.is_empty() {
                return Err(format!("unknown option {arg:?}"));
            }
            positional.push(arg);
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{name} expects {what}"))
        };
        match name.as_str() {
            "--timeout-ms" => {
                let v = value("a number of milliseconds")?;
                let ms: u64 = v
                    .parse()
                    .map_err(|_| format!("--timeout-ms expects a number, got {v:?}"))?;
                if ms == 0 {
                    return Err("--timeout-ms must be positive, got 0".into());
                }
                // Deadlines are Instants: keep them representable.
                timeout = Duration::from_millis(ms).min(MAX_TIMEOUT);
            }
            "--era" => {
                era = match value("auto, modern or legacy")?.as_str() {
                    "auto" => EraPreference::Auto,
                    "modern" => EraPreference::Modern,
                    "legacy" => EraPreference::Legacy,
                    v => return Err(format!("--era expects auto, modern or legacy, got {v:?}")),
                }
            }
            "--env" => {
                let v = value("K=V")?;
                match v.split_once('=') {
                    Some((k, val)) if !k.is_empty() => env.push((k.to_owned(), val.to_owned())),
                    _ => return Err(format!("--env expects K=V, got {v:?}")),
                }
            }
            "--cd" => cd = Some(absolute(Path::new(&value("a directory")?))?),
            "--stderr" => {
                let v = value("inherit, discard or file:PATH")?;
                stderr = match v.as_str() {
                    "inherit" => StderrMode::Inherit,
                    "discard" => StderrMode::Discard,
                    f if f.starts_with("file:") && f.len() > 5 => {
                        StderrMode::File(absolute(Path::new(&f[5..]))?)
                    }
                    _ => {
                        return Err(format!(
                            "--stderr expects inherit, discard or file:PATH, got {v:?}"
                        ))
                    }
                }
            }
            "--progress" | "--verbose" if inline.is_some() => {
                return Err(format!("{name} takes no value"))
            }
            "--progress" => progress = true,
            "--verbose" => verbose = true,
            _ => return Err(format!("unknown option {name:?}")),
        }
    }
    let mut pos = positional.into_iter();
    let sub = pos
        .next()
        .ok_or("missing SUBCOMMAND (discover, tools, call or request)")?;
    let command = match sub.as_str() {
        "discover" => Command::Discover,
        "tools" => Command::Tools,
        "call" => {
            let tool = pos.next().ok_or("call expects a TOOL name")?;
            let args = match pos.next() {
                Some(j) => json_arg("JSON_ARGS", &j)?,
                None => json!({}),
            };
            if !args.is_object() {
                return Err(format!("JSON_ARGS must be a JSON object, got {args}"));
            }
            Command::Call { tool, args }
        }
        "request" => {
            let method = pos.next().ok_or("request expects a METHOD")?;
            let params = pos
                .next()
                .map(|j| json_arg("JSON_PARAMS", &j))
                .transpose()?;
            if params
                .as_ref()
                .is_some_and(|p| !p.is_object() && !p.is_array())
            {
                return Err("JSON_PARAMS must be a JSON object or array".into());
            }
            Command::Request { method, params }
        }
        s => {
            return Err(format!(
                "unknown subcommand {s:?} (expected discover, tools, call or request)"
            ))
        }
    };
    if let Some(extra) = pos.next() {
        return Err(format!("unexpected argument {extra:?} after {sub}"));
    }
    if server.is_empty() {
        return Err("missing the server command: put it after `--`".into());
    }
    Ok(Some(Cli {
        command,
        timeout,
        era,
        env,
        cd,
        stderr,
        progress,
        verbose,
        server,
    }))
}

fn json_arg(what: &str, text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON ({e}): {text}"))
}

fn absolute(p: &Path) -> Result<PathBuf, String> {
    if p.is_absolute() {
        return Ok(p.to_owned());
    }
    std::env::current_dir()
        .map(|d| d.join(p))
        .map_err(|e| format!("cannot read the current directory: {e}"))
}

fn config(cli: &Cli) -> Result<ClientConfig, String> {
    let mut command = cli.server[0].clone();
    if command.contains('/') {
        command = absolute(Path::new(&command))?
            .to_string_lossy()
            .into_owned();
    }
    let mut c = ClientConfig::new(command)
        .args(cli.server[1..].iter().cloned())
        .envs(cli.env.iter().cloned())
        .stderr(cli.stderr.clone())
        .era(cli.era)
        .request_timeout(cli.timeout)
        // One shot: a server that fails to start is reported, not restarted.
        .restarts(Default::default(), 0);
    c.init_timeout = cli.timeout;
    c.probe_timeout = c.probe_timeout.min(cli.timeout);
    if let Some(cd) = &cli.cd {
        c = c.cd(cd);
    }
    Ok(c)
}

/// Maps a client error to how we exit.
fn failure(e: Error) -> Fail {
    match e {
        Error::Server(obj) => Fail::Server(serde_json::to_value(obj).unwrap_or(Value::Null)),
        Error::Config(c) => Fail::Usage(c.to_string()),
        // `last` already says how many attempts failed and why.
        Error::GaveUp { last, .. } => Fail::Transport(format!("the server did not start: {last}")),
        e => Fail::Transport(e.to_string()),
    }
}

async fn start(config: ClientConfig) -> Result<Client, Fail> {
    Client::start(config).await.map_err(|e| match e {
        StartError::Config(c) => Fail::Usage(c.to_string()),
        StartError::Spawn(s) => Fail::Usage(s.to_string()),
        e => Fail::Transport(e.to_string()),
    })
}

async fn run(cli: &Cli, client: &Client) -> Result<Value, Fail> {
    let session = client.ready(cli.timeout).await.map_err(failure)?;
    let send = |method: String, params: Option<Value>| async move {
        let mut opts = RequestOptions::new().timeout(cli.timeout);
        let mut printer = None;
        if cli.progress {
            let (tx, mut rx) = mpsc::unbounded_channel::<Progress>();
            opts = opts.progress(tx);
            printer = Some(tokio::spawn(async move {
                while let Some(p) = rx.recv().await {
                    let _ = writeln!(std::io::stderr().lock(), "{}", p.raw);
                }
            }));
        }
        let r = client.request_with(&method, params, opts).await;
        if let Some(p) = printer {
            // The sender went with the options: every line is out.
            let _ = p.await;
        }
        r.map_err(failure)
    };
    match &cli.command {
        Command::Discover => Ok(session.to_json()),
        Command::Tools => {
            let mut tools = Vec::new();
            let mut cursor: Option<String> = None;
            let mut seen = std::collections::HashSet::new();
            loop {
                let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
                let mut page = send("tools/list".into(), params).await?;
                if let Some(items) = page.get_mut("tools").and_then(Value::as_array_mut) {
                    tools.append(items);
                }
                match page.get("nextCursor").and_then(Value::as_str) {
                    Some(next) if !next.is_empty() && seen.insert(next.to_owned()) => {
                        cursor = Some(next.to_owned())
                    }
                    Some(next) if !next.is_empty() => {
                        return Err(Fail::Transport(format!(
                            "tools/list: the server repeated cursor {next:?}"
                        )))
                    }
                    _ => return Ok(json!({ "tools": tools })),
                }
            }
        }
        Command::Call { tool, args } => {
            let params = json!({ "name": tool, "arguments": args });
            send("tools/call".into(), Some(params)).await
        }
        Command::Request { method, params } => send(method.clone(), params.clone()).await,
    }
}

async fn main_async(cli: Cli) -> Result<Value, Fail> {
    let config = config(&cli).map_err(Fail::Usage)?;
    let client = start(config).await?;
    let outcome = tokio::select! {
        r = run(&cli, &client) => r,
        _ = tokio::signal::ctrl_c() => Err(Fail::Transport("interrupted".into())),
    };
    // Never leave a process behind: wait for the whole shutdown sequence.
    let reports = client.stop().wait().await;
    for r in &reports {
        tracing::debug!(?r, "server shut down");
        if r.group_survivors {
            eprintln!(
                "mcp: warning: processes of the server's group {} outlived the shutdown",
                r.pid
            );
        }
    }
    outcome
}

fn main() -> ExitCode {
    let cli = match parse(std::env::args().skip(1).collect()) {
        Ok(Some(cli)) => cli,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("error: {msg}\nRun `mcp --help` for usage.");
            return ExitCode::from(2);
        }
    };
    if cli.verbose {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| "conduit_mcp=debug,mcp=debug".into());
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the tokio runtime: {e}");
            return ExitCode::from(3);
        }
    };
    let outcome = runtime.block_on(main_async(cli));
    let mut out = std::io::stdout().lock();
    let code = match outcome {
        Ok(v) => print_json(&mut out, &v).map_or(3, |_| 0),
        Err(Fail::Server(e)) => print_json(&mut out, &e).map_or(3, |_| 1),
        Err(Fail::Usage(msg)) => {
            eprintln!("error: {msg}");
            2
        }
        Err(Fail::Transport(msg)) => {
            eprintln!("error: {msg}");
            3
        }
    };
    ExitCode::from(code)
}

fn print_json(out: &mut impl Write, v: &Value) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(v).map_err(std::io::Error::other)?;
    writeln!(out, "{text}")?;
    out.flush()
}
