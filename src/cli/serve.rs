//! `mcp serve --config FILE`: the servers of a config file behind one
//! Streamable HTTP endpoint, supervised by [`HttpGateway`]. It is a thin
//! layer that reads the options, refuses an open listener without a token,
//! and stops on SIGTERM/SIGINT with exit 0 once every server process is
//! gone.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio::net::TcpListener;

use super::args::{Options, ServeArgs};
use super::{said, verbose, Fail, Output};
use crate::client::{ClientConfig, Status};
use crate::config_file::{ConfigFileError, ReadOptions, ServersFile};
use crate::gateway::{Auth, ClientGrant, HttpGateway, HttpGatewayConfig};
use crate::host::{HostConfig, HostOptions};
use crate::secret::Secret;
use crate::server::http::Allow;

/// How long the start line waits for the events of servers that ended.
const LATE_EVENTS: Duration = Duration::from_secs(1);

/// How often `--watch` looks at the file.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// Runs the gateway until SIGTERM or SIGINT.
pub(super) async fn run(options: &Options, path: &Path, args: ServeArgs) -> Result<Output, Fail> {
    // Caught from the start: a signal while the servers start stops them
    // as one after (exit 0), rather than killing the gateway.
    let mut stop = StopSignal::new();
    refuse_unused(options)?;
    // The text is read once: `--watch` compares the file with what was
    // applied, so a change made while the servers start is applied too.
    let inputs = options.read_options().map_err(|e| Fail::Usage(e.into()))?;
    let (mut file, loaded) = read(path.to_owned(), inputs.clone())
        .await
        .map_err(|e| Fail::Usage(e.to_string()))?;
    let selected = selected(options, &file)?;
    select(&mut file, &selected);
    if options.verbose() {
        verbose::config_file(&file.path);
    }
    let addr = resolve(args.listen())?;
    let auth = auth(&args)?;
    if let (Auth::Clients(clients), Some(tokens)) = (&auth, args.tokens()) {
        warn_unknown_servers(clients, tokens, &file);
    }
    let loopback = addr.ip().is_loopback();
    if !loopback && !auth.required() && !args.insecure_no_auth() {
        return Err(Fail::Usage(format!(
            "refusing to listen on {addr} (not a loopback address) without a token: give --token-env VAR or --tokens FILE (or --insecure-no-auth to accept anyone who can reach it)"
        )));
    }
    let mut host = HostConfig::from_file(&file).map_err(|e| Fail::Usage(e.to_string()))?;
    for config in host.servers.values_mut() {
        apply(options, config);
        if options.verbose() {
            verbose::server(config);
        }
    }
    if let Some(t) = options.timeout() {
        host = host.ready_timeout(t);
    }
    let mut gateway = HttpGatewayConfig::from_file(&file).auth(auth);
    gateway.metrics_token = metrics_token(&args)?;
    gateway.split_lazy(&file, &mut host.servers);
    gateway.allowed_origins = args
        .allow_origin()
        .iter()
        .map(|o| origin(o))
        .collect::<Result<_, _>>()?;
    // Behind a token a rebinding page has nothing to send; without one the
    // listener is loopback (or the user said --insecure-no-auth).
    gateway.allowed_hosts = if loopback {
        Allow::Loopback
    } else {
        Allow::Any
    };
    if let Some(g) = args.grace() {
        gateway.grace = g;
    }
    if let Some(log) = args.log_calls() {
        gateway = gateway.log_calls(log).log_arguments(args.log_arguments());
    }
    // Bound first: a port in use is reported before any server starts.
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| Fail::Usage(format!("cannot listen on {addr}: {e}")))?;
    let local = listener.local_addr().unwrap_or(addr);
    let starting = host.servers.len();
    let lazy: Vec<String> = gateway.lazy.keys().cloned().collect();
    // Every server's lifecycle from its first spawn, said on stderr.
    let (opts, mut events) = HostOptions::new().subscribe();
    let gateway = HttpGateway::launch_with(host, opts, gateway)
        .await
        .map_err(|e| Fail::Usage(e.to_string()))?;
    let mut said = said::Said::default();
    // Served from now on: `/health` answers 503 while the servers start,
    // other requests wait for the start.
    let serving = tokio::spawn({
        let gateway = gateway.clone();
        async move { gateway.serve(listener).await }
    });
    eprintln!(
        "mcp serve: listening on {local}; starting {starting} servers (/health is 503 until they are ready)"
    );
    let servers = loop {
        tokio::select! {
            Some(event) = events.recv() => said.say(&event),
            servers = gateway.started() => break servers,
            signal = stop.recv() => {
                eprintln!("mcp serve: {signal} while the servers were starting: stopping");
                gateway.shutdown().await;
                let _ = serving.await;
                return Ok(Output::Lines {
                    lines: Vec::new(),
                    all_ready: true,
                });
            }
        }
    };
    // What happened during the start is said before the start line: a
    // server's final status can be seen before the host has passed on its
    // last events.
    let untold = |said: &said::Said| {
        servers
            .iter()
            .any(|s| matches!(s.status, Status::GaveUp(_)) && !said.told_end(&s.name))
    };
    let late = tokio::time::sleep(LATE_EVENTS);
    tokio::pin!(late);
    while untold(&said) {
        tokio::select! {
            Some(event) = events.recv() => said.say(&event),
            () = &mut late => break,
        }
    }
    while let Ok(event) = events.try_recv() {
        said.say(&event);
    }
    eprintln!(
        "mcp serve: http://{local}/mcp ({}; /servers/NAME/mcp, /health, /metrics)",
        said::servers(&servers, &lazy)
    );
    let saying = tokio::spawn(said.go_on(events));
    let watching = args.watch().then(|| {
        let gateway = gateway.clone();
        let path = file.path.clone();
        let watched = Watched {
            selected,
            options: options.clone(),
            inputs,
        };
        tokio::spawn(watch(gateway, path, file, loaded, watched))
    });
    let signal = stop.recv().await;
    eprintln!("mcp serve: {signal}: stopping");
    let stopping = std::time::Instant::now();
    if let Some(w) = watching {
        w.abort();
    }
    // A server stopped now is no news.
    saying.abort();
    gateway.shutdown().await;
    match serving.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("mcp serve: the listener failed: {e}"),
        Err(e) => eprintln!("mcp serve: the listener's task failed: {e}"),
    }
    eprintln!(
        "mcp serve: stopped in {} ms",
        stopping.elapsed().as_millis()
    );
    Ok(Output::Lines {
        lines: Vec::new(),
        all_ready: true,
    })
}

/// The options of every subcommand that mean nothing to `mcp serve`:
/// refused rather than ignored.
fn refuse_unused(options: &Options) -> Result<(), Fail> {
    if options.progress() {
        return Err(Fail::Usage(
            "--progress does nothing with serve (progress goes to each call's client): remove it"
                .into(),
        ));
    }
    Ok(())
}

/// The servers the repeatable `--server` names, each checked to be one the
/// file serves; every one of the file when none.
fn selected(options: &Options, file: &ServersFile) -> Result<Option<BTreeSet<String>>, Fail> {
    if options.servers().is_empty() {
        return Ok(None);
    }
    for name in options.servers() {
        if !file.servers.contains_key(name) {
            return Err(super::hosted::unknown(file, name));
        }
    }
    Ok(Some(options.servers().iter().cloned().collect()))
}

/// Keeps only the `selected` servers of `file`, all of them with `None`.
fn select(file: &mut ServersFile, selected: &Option<BTreeSet<String>>) {
    let Some(keep) = selected else {
        return;
    };
    file.retain_servers(|n| keep.contains(n));
}

/// The listen address. A name is resolved, and the first address is used.
fn resolve(listen: &str) -> Result<SocketAddr, Fail> {
    use std::net::ToSocketAddrs;
    let mut addrs = listen
        .to_socket_addrs()
        .map_err(|e| Fail::Usage(format!("--listen {listen}: {e}")))?;
    addrs
        .next()
        .ok_or_else(|| Fail::Usage(format!("--listen {listen}: no address")))
}

/// One `--allow-origin`, as browsers send it: `SCHEME://HOST[:PORT]` with a
/// trailing `/` dropped, `null` or `*`. A value no `Origin` header can
/// equal, with a path or no scheme, is refused rather than never matched.
fn origin(value: &str) -> Result<String, Fail> {
    let v = value.trim();
    if v == "*" || v == "null" {
        return Ok(v.to_owned());
    }
    let v = v.strip_suffix('/').unwrap_or(v);
    match v.split_once("://") {
        Some((scheme, authority))
            if !scheme.is_empty() && !authority.is_empty() && !authority.contains('/') =>
        {
            Ok(v.to_owned())
        }
        _ => Err(Fail::Usage(format!(
            "--allow-origin {value}: an origin is SCHEME://HOST[:PORT] (for example https://app.example.com), without a path"
        ))),
    }
}

/// The token in variable `var`, for option `flag`.
fn token_from_env(flag: &str, var: &str) -> Result<Secret, Fail> {
    let token = std::env::var(var)
        .map_err(|_| Fail::Usage(format!("{flag} {var}: the variable is not set")))?;
    // Without the whitespace around it (a secret file's newline): no
    // `Authorization` header could carry it.
    let token = token.trim().to_owned();
    if token.is_empty() {
        return Err(Fail::Usage(format!("{flag} {var}: the variable is empty")));
    }
    if token.chars().count() < crate::gateway::MIN_TOKEN_LEN {
        eprintln!(
            "mcp serve: {flag} {var}: the token is short (under {} characters): use a long random one",
            crate::gateway::MIN_TOKEN_LEN
        );
    }
    Ok(Secret::new(token))
}

/// `--metrics-token-env`.
fn metrics_token(args: &ServeArgs) -> Result<Option<Secret>, Fail> {
    args.metrics_token_env()
        .map(|var| token_from_env("--metrics-token-env", var))
        .transpose()
}

/// `--token-env` or `--tokens`.
fn auth(args: &ServeArgs) -> Result<Auth, Fail> {
    if let Some(var) = args.token_env() {
        return Ok(Auth::Bearer(token_from_env("--token-env", var)?));
    }
    if let Some(path) = args.tokens() {
        warn_if_readable_by_others(path);
        let clients = ClientGrant::load(path).map_err(|e| Fail::Usage(e.to_string()))?;
        if clients.is_empty() {
            return Err(Fail::Usage(format!(
                "--tokens {}: no clients in the file",
                path.display()
            )));
        }
        return Ok(Auth::Clients(clients));
    }
    Ok(Auth::None)
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = std::fs::metadata(path) {
        if m.permissions().mode() & 0o077 != 0 {
            eprintln!(
                "mcp serve: --tokens {}: the file is readable by others than its owner (chmod 600 it)",
                path.display()
            );
        }
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_: &Path) {}

/// Says on stderr which grants of the tokens file name a server the config
/// file does not have, since a typo grants nothing.
fn warn_unknown_servers(clients: &[ClientGrant], tokens: &Path, file: &ServersFile) {
    for c in clients {
        for server in c.named_servers() {
            if !file.servers.contains_key(server) && !file.disabled.iter().any(|d| d == server) {
                eprintln!(
                    "mcp serve: --tokens {}: `clients.{}.servers.{server}`: no server `{server}` in {} (this grant gives nothing)",
                    tokens.display(),
                    c.name,
                    file.path.display()
                );
            }
        }
    }
}

/// The command-line options that apply to a served server: what was given
/// wins; its restart policy stays the file's, supervised, not one shot.
fn apply(options: &Options, config: &mut ClientConfig) {
    crate::cli::overlay_options(options, config);
}

/// SIGTERM and SIGINT, caught from the moment this is made. A signal
/// before [`recv`](Self::recv) is polled is kept, not lost.
struct StopSignal {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl StopSignal {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            StopSignal {
                term: signal(SignalKind::terminate()).ok(),
                int: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        StopSignal {}
    }

    /// The next SIGTERM or SIGINT, named.
    async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            async fn on(s: &mut Option<tokio::signal::unix::Signal>) {
                if let Some(s) = s {
                    if s.recv().await.is_some() {
                        return;
                    }
                }
                // No stream, or one that ended: nothing more to deliver.
                std::future::pending().await
            }
            tokio::select! {
                _ = on(&mut self.term) => "SIGTERM",
                _ = on(&mut self.int) => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

/// What `--watch` knows of the file: its metadata when last looked at, and
/// a hash of the text last read, `None` when it did not read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Seen {
    meta: Option<Meta>,
    hash: Option<u64>,
}

/// What a `stat` of the path says. It never waits, whatever the path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Meta {
    file: bool,
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    inode: (u64, u64),
    #[cfg(unix)]
    changed: (i64, i64),
}

/// How long after its last change a file is read at each look whatever
/// its metadata: a rewrite of the same length within one tick of the file
/// system's clock changes neither its length nor its times.
const CHANGE_SETTLES: Duration = Duration::from_secs(2);

impl Meta {
    fn of(path: &Path) -> Option<Meta> {
        let m = std::fs::metadata(path).ok()?;
        Some(Meta {
            file: m.is_file(),
            len: m.len(),
            modified: m.modified().ok(),
            #[cfg(unix)]
            inode: {
                use std::os::unix::fs::MetadataExt;
                (m.dev(), m.ino())
            },
            #[cfg(unix)]
            changed: {
                use std::os::unix::fs::MetadataExt;
                (m.ctime(), m.ctime_nsec())
            },
        })
    }

    /// Whether the file changed within [`CHANGE_SETTLES`], or its clock is
    /// ahead of ours.
    fn recent(&self) -> bool {
        #[cfg(unix)]
        let last = match (u64::try_from(self.changed.0), u32::try_from(self.changed.1)) {
            (Ok(s), Ok(ns)) => Some(SystemTime::UNIX_EPOCH + Duration::new(s, ns)),
            _ => None,
        };
        #[cfg(not(unix))]
        let last = self.modified;
        last.is_none_or(|t| t.elapsed().map_or(true, |ago| ago < CHANGE_SETTLES))
    }
}

fn hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// Reads and parses the file at `path` as the loader does, on a blocking
/// thread: a regular file within its bound, never waiting on a FIFO.
/// Returns what was seen of it too.
async fn read(path: PathBuf, inputs: ReadOptions) -> Result<(ServersFile, Seen), ConfigFileError> {
    let shown = path.clone();
    let read = tokio::task::spawn_blocking(move || {
        let meta = Meta::of(&path);
        let text = ServersFile::read_text(&path)?;
        let seen = Seen {
            meta,
            hash: Some(hash(&text)),
        };
        let file =
            ServersFile::parse_with(&text, &path, &|name| std::env::var(name).ok(), &inputs)?;
        Ok((file, seen))
    });
    match read.await {
        Ok(r) => r,
        Err(e) => Err(ConfigFileError::Read {
            file: shown,
            source: std::io::Error::other(e.to_string()),
        }),
    }
}

/// One look of `--watch` at `path`, on a blocking thread: the file read
/// and parsed if it changed since `seen`, with what is seen now. The
/// metadata is looked at first: the text is read only when they changed or
/// the file changed lately.
async fn look(
    path: PathBuf,
    seen: Seen,
    inputs: ReadOptions,
) -> (Seen, Option<Result<ServersFile, ConfigFileError>>) {
    let looked = tokio::task::spawn_blocking(move || {
        let meta = Meta::of(&path);
        if meta == seen.meta && !meta.is_some_and(|m| m.recent()) {
            return (seen, None);
        }
        let text = match ServersFile::read_text(&path) {
            Ok(t) => t,
            Err(e) => {
                let now = Seen { meta, hash: None };
                // Said once for the same file.
                let said = now == seen;
                return (now, (!said).then_some(Err(e)));
            }
        };
        let now = Seen {
            meta,
            hash: Some(hash(&text)),
        };
        if now.hash == seen.hash {
            return (now, None);
        }
        let parsed =
            ServersFile::parse_with(&text, &path, &|name| std::env::var(name).ok(), &inputs);
        (now, Some(parsed))
    });
    looked.await.unwrap_or_default()
}

/// What `--watch` applies to each file read: the servers `--server`
/// selected, the command line's options, its `--input` values.
struct Watched {
    selected: Option<BTreeSet<String>>,
    options: Options,
    inputs: ReadOptions,
}

/// `--watch`: looks at the file every [`WATCH_EVERY`]; when it changed
/// from `seen`, what `applied` was read from, applies it. A file that does
/// not read leaves everything as it was, and is said on stderr.
async fn watch(
    gateway: HttpGateway,
    path: PathBuf,
    mut applied: ServersFile,
    mut seen: Seen,
    watched: Watched,
) {
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        let (now, read) = look(path.clone(), seen.clone(), watched.inputs.clone()).await;
        seen = now;
        let next = match read {
            None => continue,
            Some(Ok(mut f)) => {
                select(&mut f, &watched.selected);
                // The command line's options, as at the start.
                for config in f.servers.values_mut() {
                    apply(&watched.options, config);
                }
                f
            }
            Some(Err(e)) => {
                eprintln!("mcp serve: --watch: {e}; keeping the servers as they are");
                continue;
            }
        };
        if next.host_options != applied.host_options {
            eprintln!("mcp serve: --watch: the host's options (top-level `conduit`) changed; they apply at the next start");
        }
        let done = gateway.reload(&applied, &next).await;
        for (what, names) in [
            ("restarted", &done.restarted),
            ("added", &done.added),
            ("removed", &done.removed),
        ] {
            if !names.is_empty() {
                eprintln!("mcp serve: --watch: {what}: {}", names.join(", "));
            }
        }
        for (name, why) in &done.failed {
            eprintln!("mcp serve: --watch: {name}: {why}");
        }
        applied = next;
    }
}
