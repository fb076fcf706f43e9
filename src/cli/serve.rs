//! `mcp serve --config FILE`: the servers of a config file behind one
//! Streamable HTTP endpoint, supervised ([`HttpFront`]); a thin layer that
//! reads the options, refuses an open listener without a token, and stops
//! on SIGTERM/SIGINT (exit 0 once every server process is gone).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::TcpListener;

use super::args::{Options, ServeArgs};
use super::starting::Starting;
use super::{verbose, Fail, Output};
use crate::client::ClientConfig;
use crate::config_file::ServersFile;
use crate::host::front::{Auth, ClientGrant, FrontConfig, HttpFront};
use crate::host::HostConfig;
use crate::secret::Secret;
use crate::server::http::Allow;

/// How often `--watch` looks at the file.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// Runs the gateway until SIGTERM or SIGINT.
pub(super) async fn run(options: &Options, path: &Path, args: ServeArgs) -> Result<Output, Fail> {
    // Caught from the start: a signal while the servers start stops them
    // as one after (exit 0), rather than killing the gateway.
    let mut stop = StopSignal::new();
    // Taken before the file is read: `--watch` applies a change made while
    // the servers started.
    let loaded = stamp(path);
    let file = ServersFile::load(path).map_err(|e| Fail::Usage(e.to_string()))?;
    if options.verbose {
        verbose::config_file(&file.path);
    }
    let addr = resolve(&args.listen)?;
    let auth = auth(&args)?;
    if let (Auth::Clients(clients), Some(tokens)) = (&auth, &args.tokens) {
        warn_unknown_servers(clients, tokens, &file);
    }
    let loopback = addr.ip().is_loopback();
    if !loopback && !auth.required() && !args.insecure_no_auth {
        return Err(Fail::Usage(format!(
            "refusing to listen on {addr} (not a loopback address) without a token: give --token-env VAR or --tokens FILE (or --insecure-no-auth to accept anyone who can reach it)"
        )));
    }
    let mut host = HostConfig::from_file(&file).map_err(|e| Fail::Usage(e.to_string()))?;
    for config in host.servers.values_mut() {
        apply(options, config);
        if options.verbose {
            verbose::server(config);
        }
    }
    if let Some(t) = options.timeout {
        host.ready_timeout = t;
    }
    let mut front = FrontConfig::from_file(&file).auth(auth);
    front.metrics_token = metrics_token(&args)?;
    front.split_lazy(&file, &mut host.servers);
    front.allowed_origins = args
        .allow_origin
        .iter()
        .map(|o| origin(o))
        .collect::<Result<_, _>>()?;
    // Behind a token a rebinding page has nothing to send; without one the
    // listener is loopback (or the user said --insecure-no-auth).
    front.allowed_hosts = if loopback {
        Allow::Loopback
    } else {
        Allow::Any
    };
    if let Some(g) = args.grace {
        front.grace = g;
    }
    if let Some(log) = &args.log_calls {
        front = front.call_log(log, args.log_arguments);
    }
    // Bound first: a port in use is reported before any server starts.
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| Fail::Usage(format!("cannot listen on {addr}: {e}")))?;
    let local = listener.local_addr().unwrap_or(addr);
    // Served from now on: `/health` answers 503 while the servers start,
    // other requests wait for the gateway (starting.rs).
    let (switch, early) = Starting::new(
        host.servers.keys().cloned().collect(),
        front.lazy.keys().cloned().collect(),
    );
    let (done, done_rx) = tokio::sync::watch::channel(false);
    // As `HttpFront::serve` serves (its connection cap and stop).
    let serving = tokio::spawn(crate::server::http::serve_app(
        listener,
        early,
        crate::server::http::ConnLimits::of(&front.http),
        done_rx,
        front.flush(),
    ));
    eprintln!(
        "mcp serve: listening on {local}; starting {} servers (/health is 503 until they are ready)",
        host.servers.len()
    );
    let gateway = tokio::select! {
        started = HttpFront::start(host, front) => match started {
            Ok(g) => g,
            Err(e) => {
                switch.gone();
                done.send_replace(true);
                return Err(Fail::Usage(e.to_string()));
            }
        },
        signal = stop.recv() => {
            // Dropping the start stops every server it started; what is
            // left when this process exits dies with it (die_with_parent).
            eprintln!("mcp serve: {signal} while the servers were starting: stopping");
            switch.gone();
            done.send_replace(true);
            let _ = serving.await;
            return Ok(Output::Lines {
                lines: Vec::new(),
                all_ready: true,
            });
        }
    };
    switch.up(gateway.router());
    let servers = gateway.host().servers();
    eprintln!(
        "mcp serve: http://{local}/mcp ({} servers: {}; /servers/NAME/mcp, /health, /metrics)",
        servers.len(),
        servers
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let watching = args.watch.then(|| {
        let gateway = gateway.clone();
        let path = file.path.clone();
        tokio::spawn(watch(gateway, path, file, loaded, options.clone()))
    });
    let signal = stop.recv().await;
    eprintln!("mcp serve: {signal}: stopping");
    let stopping = std::time::Instant::now();
    if let Some(w) = watching {
        w.abort();
    }
    // As `HttpFront::serve` would: no new connection from now on.
    done.send_replace(true);
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

/// The listen address (a name is resolved; the first address is used).
fn resolve(listen: &str) -> Result<SocketAddr, Fail> {
    use std::net::ToSocketAddrs;
    let mut addrs = listen
        .to_socket_addrs()
        .map_err(|e| Fail::Usage(format!("--listen {listen}: {e}")))?;
    addrs
        .next()
        .ok_or_else(|| Fail::Usage(format!("--listen {listen}: no address")))
}

/// One `--allow-origin`, as browsers send it: `SCHEME://HOST[:PORT]` (a
/// trailing `/` dropped), `null` or `*`. A value no `Origin` header can
/// equal (with a path, or no scheme) is refused rather than never matched.
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
    if token.chars().count() < crate::host::front::MIN_TOKEN_LEN {
        eprintln!(
            "mcp serve: {flag} {var}: the token is short (under {} characters): use a long random one",
            crate::host::front::MIN_TOKEN_LEN
        );
    }
    Ok(Secret::new(token))
}

/// `--metrics-token-env`.
fn metrics_token(args: &ServeArgs) -> Result<Option<Secret>, Fail> {
    args.metrics_token_env
        .as_deref()
        .map(|var| token_from_env("--metrics-token-env", var))
        .transpose()
}

/// `--token-env` or `--tokens`.
fn auth(args: &ServeArgs) -> Result<Auth, Fail> {
    if let Some(var) = &args.token_env {
        return Ok(Auth::Bearer(token_from_env("--token-env", var)?));
    }
    if let Some(path) = &args.tokens {
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
/// file does not have (a typo grants nothing).
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
/// wins; its restart policy stays the file's (supervised, not one shot).
fn apply(options: &Options, config: &mut ClientConfig) {
    crate::cli::overlay_options(options, config);
}

/// SIGTERM and SIGINT, caught from the moment this is made (a signal
/// before [`recv`](Self::recv) is polled is kept, not lost).
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

/// What `--watch` compares: a hash of the file's bytes (its length and
/// modification time would say less: a rewrite of the same length within
/// one tick of the file system's clock changes neither).
type Stamp = u64;

fn stamp(path: &Path) -> Option<Stamp> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::fs::read(path).ok()?.hash(&mut h);
    Some(h.finish())
}

/// `--watch`: reads the file again whenever its stamp differs from `seen`
/// (the file's as `applied` was read), and applies it. A file that does not read leaves everything as it was (and
/// is said on stderr).
async fn watch(
    gateway: HttpFront,
    path: PathBuf,
    mut applied: ServersFile,
    mut seen: Option<Stamp>,
    options: Options,
) {
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        let now = stamp(&path);
        if now == seen {
            continue;
        }
        seen = now;
        let next = match ServersFile::load(&path) {
            Ok(mut f) => {
                // The command line's options, as at the start.
                for config in f.servers.values_mut() {
                    apply(&options, config);
                }
                f
            }
            Err(e) => {
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
