//! The `mcp` command, with feature `cli`: talk to MCP servers from the
//! command line, or serve them over HTTP with `mcp serve`.
//!
#![doc = include_str!("../docs/cli.md")]
//!
//! [`main`] is the program; [`run`] takes the arguments, for a program of
//! your own that embeds it.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::error::ErrorKind;
use serde_json::Value;

use crate::client::{merge_env, plain_dir, ClientConfig};
use crate::client::{Client, RequestOptions};
use crate::config_file::ServersFile;
use crate::error::Error;
use crate::host::HostError;
use crate::secret::EnvValue;

mod args;
mod hosted;
mod login;
mod one_server;
mod progress;
mod said;
mod serve;
mod verbose;

use self::args::{Cli, Command, Options};
use self::progress::ProgressView;

/// The default bound of each request and of the wait for readiness.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The `mcp` program, with this process's arguments.
///
/// # Examples
///
/// A program of your own that is the `mcp` command:
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     conduit_mcp::cli::main()
/// }
/// ```
pub fn main() -> ExitCode {
    run(std::env::args_os())
}

/// The `mcp` program with `args`, the first being the program's name: parses
/// them, runs the command, prints its output, and returns the exit code.
///
/// # Examples
///
/// ```
/// use std::process::ExitCode;
///
/// fn main() -> ExitCode {
///     // As `mcp --version` from a shell: prints the version, exits with 0.
///     conduit_mcp::cli::run(["mcp", "--version"])
/// }
/// ```
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    // Everything after the first `--` is the server command, taken as it
    // is: the options never see it.
    let mut ours: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let server = match ours.iter().skip(1).position(|a| a == "--") {
        Some(i) => ours.split_off(i + 1).into_iter().skip(1).collect(),
        None => Vec::new(),
    };
    let cli = match Cli::parse_args(ours) {
        Ok(cli) => cli,
        Err(e) if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprintln!(
                "error: missing SUBCOMMAND (discover, tools, call, request, servers, serve or completions)\n\n{}\nFor more information, try '--help'.",
                Cli::definition().render_usage()
            );
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    if let Command::Completions { shell } = cli.subcommand() {
        clap_complete::generate(
            *shell,
            &mut Cli::definition(),
            "mcp",
            &mut std::io::stdout(),
        );
        return ExitCode::SUCCESS;
    }
    if cli.options().verbose() {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| "conduit_mcp=debug".into());
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    let serve = matches!(cli.subcommand(), Command::Serve(_));
    let mut builder = match runtime(serve, std::env::var("TOKIO_WORKER_THREADS").ok().as_deref()) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match builder.build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the tokio runtime: {e}");
            return ExitCode::from(3);
        }
    };
    let outcome = runtime.block_on(dispatch(cli, server));
    // Every server is stopped and reaped inside `dispatch`; a blocking
    // task still running (a resolver, a token store) must not hold the
    // exit, as dropping the runtime would.
    runtime.shutdown_timeout(RUNTIME_EXIT_WAIT);
    ExitCode::from(finish(outcome))
}

/// The runtime: `mcp serve` runs on its main thread alone unless
/// `TOKIO_WORKER_THREADS` is set; the other commands, and `mcp serve` with
/// the variable, on [`worker_threads`] workers.
///
/// A gateway's call goes through several tasks: the client's connection,
/// its handler, the pipe's writer and reader. On one thread each hop is a
/// push onto its run queue; among workers it often wakes a parked thread.
/// Measured on two CPUs: at one client a call's eight system calls became
/// six, with no futex wake-up, and the CPU time per call fell by about a
/// tenth at 50 clients.
fn runtime(serve: bool, env: Option<&str>) -> Result<tokio::runtime::Builder, String> {
    let mut builder = if serve && env.is_none_or(|v| v.trim().is_empty()) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(worker_threads(env)?);
        b
    };
    builder.enable_all();
    Ok(builder)
}

/// The runtime's worker threads: `TOKIO_WORKER_THREADS` when set and not
/// empty, else one per CPU, as tokio's default; an invalid value is an
/// error here rather than tokio's panic.
fn worker_threads(env: Option<&str>) -> Result<usize, String> {
    match env.filter(|v| !v.trim().is_empty()) {
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "TOKIO_WORKER_THREADS={v:?}: expected a number of threads, at least 1"
            )),
        },
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// How long the exit waits for the runtime's blocking tasks.
const RUNTIME_EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// How a command ends, short of success.
#[derive(Debug)]
pub(crate) enum Fail {
    /// Exit 2, with a message on stderr.
    Usage(String),
    /// Exit 1, with the server's error object on stdout.
    Server(Value),
    /// Exit 3, with a message on stderr.
    Transport(String),
}

/// What a command prints on success.
pub(crate) enum Output {
    /// One JSON document.
    Json(Value),
    /// Lines of text, and whether every server was ready, for exit 0 or 3.
    Lines { lines: Vec<String>, all_ready: bool },
}

impl From<Value> for Output {
    fn from(v: Value) -> Self {
        Output::Json(v)
    }
}

/// Runs the command; `server` is what followed `--`.
async fn dispatch(cli: Cli, server: Vec<OsString>) -> Result<Output, Fail> {
    let (mut options, command) = cli.into_parts();
    // Only serve takes several.
    match (options.servers(), &command) {
        (_, Command::Serve(_)) | ([], _) => {}
        ([one], _) => options.choose_server(one.clone()),
        (many, _) => {
            return Err(Fail::Usage(format!(
                "--server is given {} times; this subcommand uses one server",
                many.len()
            )))
        }
    }
    let given = [
        options.config().is_some(),
        options.url().is_some(),
        !server.is_empty(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(Fail::Usage(
            "give one of --config FILE, --url URL or a server command after `--`".into(),
        ));
    }
    if !options.header().is_empty() && options.url().is_none() {
        return Err(Fail::Usage("--header needs --url URL".into()));
    }
    // Ignored it would run another server than the one named.
    if let (Some(name), None) = (options.servers().first(), options.config()) {
        return Err(Fail::Usage(format!(
            "--server {name} needs --config FILE (it names a server of the file)"
        )));
    }
    match (options.config(), command) {
        (_, Command::Completions { .. }) => Err(Fail::Usage("completions is handled first".into())),
        (None, Command::Servers) => Err(Fail::Usage(
            "servers needs --config FILE (a file of mcpServers)".into(),
        )),
        (None, Command::Serve(_)) => Err(Fail::Usage(
            "serve needs --config FILE (a file of mcpServers)".into(),
        )),
        (Some(path), Command::Serve(args)) => serve::run(&options, path, args).await,
        (Some(path), command) => {
            let read = options.read_options().map_err(|e| Fail::Usage(e.into()))?;
            let file =
                ServersFile::load_with(path, &read).map_err(|e| Fail::Usage(e.to_string()))?;
            if options.verbose() {
                verbose::config_file(&file.path);
            }
            hosted::run(&options, file, command).await
        }
        (None, command) if options.url().is_some() => one_server::run_url(&options, command).await,
        (None, command) => one_server::run(&options, command, server).await,
    }
}

/// Prints the outcome; returns the exit code.
fn finish(outcome: Result<Output, Fail>) -> u8 {
    let mut out = std::io::stdout().lock();
    match outcome {
        Ok(Output::Json(v)) => print_json(&mut out, &v).map_or(3, |_| 0),
        Ok(Output::Lines { lines, all_ready }) => {
            let printed = lines.iter().try_for_each(|l| writeln!(out, "{l}"));
            match (printed.and_then(|_| out.flush()), all_ready) {
                (Ok(()), true) => 0,
                _ => 3,
            }
        }
        Err(Fail::Server(e)) => print_json(&mut out, &e).map_or(3, |_| 1),
        Err(Fail::Usage(msg)) => {
            eprintln!("error: {msg}");
            2
        }
        Err(Fail::Transport(msg)) => {
            eprintln!("error: {msg}");
            3
        }
    }
}

fn print_json(out: &mut impl Write, v: &Value) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(v).map_err(std::io::Error::other)?;
    writeln!(out, "{text}")?;
    out.flush()
}

/// Maps a client error to how we exit.
pub(crate) fn failure(e: Error) -> Fail {
    match e {
        Error::Server(obj) => Fail::Server(serde_json::to_value(obj).unwrap_or(Value::Null)),
        Error::Config(c) => Fail::Usage(c.to_string()),
        // `last` already says how many attempts failed and why.
        Error::GaveUp { last, .. } => Fail::Transport(format!("the server did not start: {last}")),
        e => Fail::Transport(e.to_string()),
    }
}

/// Maps a host error to how we exit.
pub(crate) fn host_failure(e: HostError) -> Fail {
    match e {
        HostError::Call { source, .. } if source.server_error().is_some() => failure(source),
        e @ (HostError::Config(_)
        | HostError::ConfigFile(_)
        | HostError::UnknownTool(_)
        | HostError::UnknownPrompt(_)
        | HostError::UnknownResource(_)
        | HostError::UnknownServer(_)) => Fail::Usage(e.to_string()),
        e @ HostError::Start { .. } => Fail::Usage(e.to_string()),
        e => Fail::Transport(e.to_string()),
    }
}

/// The command-line options applied over a server's configuration: what
/// was given wins; a server is never restarted, since this is one shot.
pub(crate) fn apply_options(options: &Options, config: &mut ClientConfig) {
    overlay_options(options, config);
    let probe = config.get_probe_timeout();
    let probe = options.timeout().map_or(probe, |t| probe.min(t));
    // One shot: a server that fails to start is reported, not restarted.
    *config = config.clone().probe_timeout(probe).max_reconnects(0);
}

/// The command-line options given over a server's configuration: timeout,
/// era, env, cwd, stderr. Its restart policy is untouched.
pub(crate) fn overlay_options(options: &Options, config: &mut ClientConfig) {
    if let Some(t) = options.timeout() {
        *config = config.clone().request_timeout(t).init_timeout(t);
    }
    if let Some(era) = options.era() {
        *config = config.clone().era(era);
    }
    // The child's options; an HTTP server has none.
    let Some(child) = config.transport.as_stdio_mut() else {
        return;
    };
    let env = options.env().iter();
    merge_env(
        &mut child.env,
        env.map(|(k, v)| (k.clone(), EnvValue::Plain(v.clone()))),
    );
    if let Some(cd) = options.cd() {
        child.cd = Some(plain_dir(cd.clone()));
    }
    if let Some(stderr) = options.stderr() {
        child.stderr = stderr.clone();
    }
}

/// Sends one request with the options' timeout, showing progress when
/// asked.
pub(crate) async fn send(
    options: &Options,
    client: &Client,
    method: &str,
    params: Option<Value>,
) -> Result<Value, Error> {
    with_options(options, |opts| client.request_with(method, params, opts)).await
}

/// Runs `call` with request options holding the options' timeout, showing
/// progress when asked. A list's pages share them.
pub(crate) async fn with_options<F, Fut, T>(options: &Options, call: F) -> T
where
    F: FnOnce(RequestOptions) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut opts = RequestOptions::new();
    if let Some(t) = options.timeout() {
        opts = opts.timeout(t);
    }
    if !options.progress() {
        return call(opts).await;
    }
    let (opts, view) = ProgressView::attach(opts);
    let r = call(opts).await;
    // The sender went with the options: every notification is shown.
    view.finish().await;
    r
}

/// Waits for Ctrl-C; the command then ends with exit code 3.
pub(crate) async fn interrupted() -> Fail {
    let _ = tokio::signal::ctrl_c().await;
    Fail::Transport("interrupted".into())
}

#[cfg(test)]
mod tests {
    use super::{runtime, worker_threads};
    use tokio::runtime::RuntimeFlavor;

    #[test]
    fn serve_runs_on_one_thread_unless_the_environment_says() {
        let flavor = |serve, env| {
            let rt = runtime(serve, env).unwrap().build().unwrap();
            rt.handle().runtime_flavor()
        };
        assert_eq!(flavor(true, None), RuntimeFlavor::CurrentThread);
        assert_eq!(flavor(true, Some(" ")), RuntimeFlavor::CurrentThread);
        assert_eq!(flavor(true, Some("2")), RuntimeFlavor::MultiThread);
        assert_eq!(flavor(false, None), RuntimeFlavor::MultiThread);
        assert!(runtime(true, Some("0")).is_err());
    }

    #[test]
    fn worker_threads_come_from_the_environment_or_the_cpus() {
        assert_eq!(worker_threads(Some("3")), Ok(3));
        assert_eq!(worker_threads(Some(" 1 ")), Ok(1));
        for bad in ["0", "-1", "two"] {
            let e = worker_threads(Some(bad)).unwrap_err();
            assert!(e.contains("TOKIO_WORKER_THREADS"), "{e}");
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(worker_threads(None), Ok(cpus));
        assert_eq!(worker_threads(Some(" ")), worker_threads(None));
    }
}
