//! Side-by-side benchmark: the pipe floor, conduit-mcp (legacy and modern
//! era) and rmcp, against the same minimal child server, interleaved in one
//! run, each round both unpinned and pinned to one CPU.
//!
//! Run: `cargo bench --bench bench` (a few minutes), or
//! `-- --quick` for a smoke run; `-- --json` prints one JSON object per line
//! (`{"peer", "metric", "value", "unit", "pinned"}`, plus ratio and target
//! lines) on stdout and the tables on stderr; `-- --svg DIR` also writes
//! the figures as bar charts (`DIR/stdio-client.svg`, `stdio-server.svg`,
//! `http-server.svg`, `http-client.svg`, those the run has figures for).
//!
//! - **floor**: a blocking child (this binary, `--child floor`) that answers
//!   each request line with fixed bytes after a byte scan for the id, driven
//!   by blocking pipe reads and writes in this process: no JSON work at all.
//! - **conduit**: `conduit_mcp::Client` against that same child, era pinned
//!   to legacy (`initialize`, the handshake the other peers do).
//! - **modern**: the same client with the era pinned to modern
//!   (`server/discover`, `_meta` on every request), same child.
//! - **rmcp**: rmcp's client (`TokioChildProcess`) against that same child.
//!
//! Each round runs every metric for every peer, the order rotating per
//! round; the tables show medians over rounds. Every round runs twice: in
//! this process (unpinned), and in a fresh copy of this binary pinned to one
//! CPU before it starts anything (`--one-round N --pin`), so the client, its
//! runtime's threads, the spawning thread and every child share that CPU.
//! The server rows (our `StdioServer` against an rmcp stdio server, both
//! with an `echo` tool) are driven by our client in each era. Idle-client
//! memory and 100-client throughput run in fresh subprocesses (`--probe`)
//! so one peer's freed memory cannot flatter the next.
//!
//! The HTTP rows (`--only http` runs them alone): our
//! `HttpServer` against rmcp's Streamable HTTP server, both with the `echo`
//! tool, each in a child process of its own, driven by one HTTP client in
//! this process (see `bench/http.rs`): sequential latency, 50 clients'
//! rate, and the server's memory per idle session; the floor column is
//! axum answering fixed bytes.
//!
//! The HTTP client rows (`--only httpc`): our `Client` over HTTP
//! against rmcp's reqwest-based client, both calling `echo` on the same
//! `HttpServer` child, in both eras (see `bench/http_client.rs`):
//! sequential latency and 64 calls in flight from one client; the floor
//! column is the hand-written hyper load generator of the HTTP rows.
//!
//! The host row (`--only host`): echo calls through a `Host` over the same
//! calls straight to the server's client, in turn, beside a server that
//! asks to be listed again after every listing (see `bench/host.rs`).

#[path = "bench/child.rs"]
mod child;
#[path = "bench/diag.rs"]
mod diag;
#[path = "bench/host.rs"]
mod host;
#[path = "bench/http.rs"]
mod http;
// The tests' reader of SSE bodies, not the crate's own.
#[path = "bench/http_client.rs"]
mod http_client;
#[path = "bench/peers.rs"]
mod peers;
#[path = "bench/report.rs"]
mod report;
#[path = "../tests/server_http_support/sse.rs"]
#[allow(dead_code)]
mod sse;
#[path = "bench/svg.rs"]
mod svg;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use conduit_mcp::EraPreference;
use peers::{ChildKind, CloseTimes, Conduit, Floor, PingFn, Rmcp};

/// Sizes of one run.
#[derive(Debug, Clone, Copy)]
struct Plan {
    rounds: usize,
    pings: usize,
    warmup: usize,
    window: usize,
    tput: Duration,
    bigs: usize,
    clients: usize,
    probe_rounds: usize,
    agg: Duration,
    /// Sequential HTTP echo calls per round (after `http_warmup`).
    http_calls: usize,
    http_warmup: usize,
    /// HTTP clients at once (each its own connection and session), and
    /// how long they run.
    http_clients: usize,
    http_tput: Duration,
    /// Idle sessions opened for the memory row.
    http_sessions: usize,
    /// The HTTP client rows also against rmcp's server (not in `--quick`:
    /// the debug smoke run stays short).
    httpc_rmcp_server: bool,
    /// Rounds that run the HTTP client rows (the first ones; `--quick`
    /// runs them in one).
    httpc_rounds: usize,
}

impl Plan {
    fn full() -> Self {
        Plan {
            rounds: 11,
            pings: 3000,
            warmup: 300,
            window: 64,
            tput: Duration::from_millis(600),
            bigs: 6,
            clients: 100,
            probe_rounds: 3,
            agg: Duration::from_millis(600),
            http_calls: 2000,
            http_warmup: 200,
            http_clients: 50,
            http_tput: Duration::from_millis(600),
            http_sessions: 1000,
            httpc_rmcp_server: true,
            httpc_rounds: usize::MAX,
        }
    }
    fn quick() -> Self {
        Plan {
            rounds: 2,
            pings: 400,
            warmup: 100,
            window: 64,
            tput: Duration::from_millis(100),
            bigs: 2,
            clients: 100,
            probe_rounds: 1,
            agg: Duration::from_millis(150),
            http_calls: 50,
            http_warmup: 10,
            http_clients: 50,
            http_tput: Duration::from_millis(50),
            http_sessions: 50,
            httpc_rmcp_server: false,
            httpc_rounds: 1,
        }
    }

    /// The plan the arguments ask for (`--quick`, then size overrides).
    fn from_args(args: &[String]) -> Self {
        let mut plan = if args.iter().any(|a| a == "--quick") {
            Plan::quick()
        } else {
            Plan::full()
        };
        let num = |k: &str| arg_value(args, k).and_then(|v| v.parse::<usize>().ok());
        if let Some(n) = num("--rounds") {
            plan.rounds = n;
        }
        if let Some(n) = num("--pings") {
            plan.pings = n;
            plan.warmup = plan.warmup.min(n);
        }
        if let Some(n) = num("--tput-ms") {
            plan.tput = Duration::from_millis(n as u64);
            plan.http_tput = plan.tput;
        }
        if let Some(n) = num("--bigs") {
            plan.bigs = n;
        }
        if let Some(n) = num("--probe-rounds") {
            plan.probe_rounds = n;
        }
        if let Some(n) = num("--http-calls") {
            plan.http_calls = n;
            plan.http_warmup = plan.http_warmup.min(n);
        }
        if let Some(n) = num("--sessions") {
            plan.http_sessions = n;
        }
        plan
    }
}

/// The arguments a subprocess needs to build the same plan and filter.
fn plan_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if args.iter().any(|a| a == "--quick") {
        out.push("--quick".to_owned());
    }
    for k in [
        "--rounds",
        "--pings",
        "--tput-ms",
        "--bigs",
        "--probe-rounds",
        "--http-calls",
        "--sessions",
        "--only",
    ] {
        if let Some(v) = arg_value(args, k) {
            out.push(k.to_owned());
            out.push(v);
        }
    }
    out
}

/// Samples per (peer, metric), one per round.
#[derive(Default)]
struct Results {
    samples: BTreeMap<(String, &'static str), Vec<f64>>,
}

impl Results {
    fn add(&mut self, peer: &str, metric: &'static str, v: f64) {
        self.samples
            .entry((peer.to_owned(), metric))
            .or_default()
            .push(v);
    }
    fn median(&self, peer: &str, metric: &str) -> Option<f64> {
        let mut v = self
            .samples
            .iter()
            .find(|((p, m), _)| p == peer && *m == metric)
            .map(|(_, v)| v.clone())?;
        v.retain(|x| x.is_finite());
        if v.is_empty() {
            return None;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        Some(if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        })
    }

    /// One JSON line per sample (what a pinned round reports to the parent).
    fn sample_lines(&self) -> String {
        let mut s = String::new();
        for ((peer, metric), v) in &self.samples {
            for x in v {
                s += &serde_json::json!({"peer": peer, "metric": metric, "value": x}).to_string();
                s.push('\n');
            }
        }
        s
    }

    /// Adds the samples of [`sample_lines`](Self::sample_lines) output.
    fn add_lines(&mut self, text: &str) -> Result<(), String> {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| format!("{e}: {line:?}"))?;
            let peer = v["peer"].as_str().ok_or("no peer")?;
            let metric = v["metric"].as_str().ok_or("no metric")?;
            let metric = report::metric_name(metric).ok_or(format!("unknown metric {metric}"))?;
            let value = v["value"].as_f64().unwrap_or(f64::NAN);
            self.add(peer, metric, value);
        }
        Ok(())
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Records ping latencies (us) as p50/p99 of this round.
fn add_pings(r: &mut Results, peer: &str, mut lat: Vec<f64>) {
    lat.sort_by(|a, b| a.total_cmp(b));
    r.add(peer, "ping_p50", percentile(&lat, 0.50));
    r.add(peer, "ping_p99", percentile(&lat, 0.99));
}

fn add_close(r: &mut Results, peer: &str, c: CloseTimes) {
    r.add(peer, "close_call", us(c.call));
    r.add(peer, "close_to_exit", us(c.to_exit));
    r.add(peer, "reap_after_exit", us(c.reaped_after_exit));
}

const MIB: f64 = 1024.0 * 1024.0;

fn run_floor(exe: &Path, plan: &Plan, r: &mut Results) -> std::io::Result<()> {
    let t = Instant::now();
    let mut f = Floor::start(exe)?;
    r.add("floor", "spawn_ready", us(t.elapsed()));
    let lat = floor_ping_series(&mut f, plan.warmup, plan.pings)?;
    add_pings(r, "floor", lat);
    let (n, el) = f.throughput(plan.window, plan.tput)?;
    r.add("floor", "rps_64", n as f64 / el.as_secs_f64());
    f.big()?;
    let t = Instant::now();
    let mut bytes = 0;
    for _ in 0..plan.bigs {
        bytes += f.big()?;
    }
    r.add(
        "floor",
        "big_mbs",
        bytes as f64 / MIB / t.elapsed().as_secs_f64(),
    );
    add_close(r, "floor", f.close());
    Ok(())
}

/// `warmup` then `n` sequential floor pings; latencies in us.
fn floor_ping_series(f: &mut Floor, warmup: usize, n: usize) -> std::io::Result<Vec<f64>> {
    for _ in 0..warmup {
        f.ping()?;
    }
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f.ping()?;
        lat.push(us(t.elapsed()));
    }
    Ok(lat)
}

/// `warmup` then `n` sequential pings in a spawned task; latencies in us.
async fn ping_series(ping: PingFn, warmup: usize, n: usize) -> Result<Vec<f64>, String> {
    tokio::spawn(async move {
        for _ in 0..warmup {
            if !ping().await {
                return Err("ping failed".to_string());
            }
        }
        let mut lat = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            if !ping().await {
                return Err("ping failed".to_string());
            }
            lat.push(us(t.elapsed()));
        }
        Ok(lat)
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Time from `Client::start` to ready, then the close (not measured).
async fn spawn_once(exe: &Path, era: EraPreference, child: ChildKind) -> Result<f64, String> {
    let t = Instant::now();
    let c = Conduit::start(exe, era, child).await?;
    let el = us(t.elapsed());
    c.close().await;
    Ok(el)
}

/// Our client against the floor child in one era: `peer` is `conduit`
/// (legacy) or `modern`.
async fn run_conduit(exe: &Path, plan: &Plan, peer: &str, r: &mut Results) -> Result<(), String> {
    let era = if peer == "modern" {
        EraPreference::Stateless
    } else {
        EraPreference::Stateful
    };
    // The default config (era auto): against a legacy-only server (the
    // probe is refused, then `initialize`) for the legacy column, against
    // the dual-era child (the probe is answered) for the modern one.
    let auto_child = if peer == "modern" {
        ChildKind::Floor
    } else {
        ChildKind::FloorLegacyOnly
    };
    r.add(
        peer,
        "spawn_ready_auto",
        spawn_once(exe, EraPreference::Auto, auto_child).await?,
    );
    if peer == "conduit" {
        // Diagnostic: the same spawn with die_with_parent off (no
        // PR_SET_PDEATHSIG setup in the child).
        let stamp = peers::stamp_path("conduit-nodeath");
        let mut cfg = peers::conduit_config(exe, peers::floor_args(&stamp), era);
        cfg = cfg.die_with_parent(false);
        let t = Instant::now();
        let c = Conduit::start_cfg(cfg, Some(stamp)).await?;
        r.add(peer, "spawn_ready_nodeath", us(t.elapsed()));
        c.close().await;
    }
    let t = Instant::now();
    let c = Conduit::start(exe, era, ChildKind::Floor).await?;
    r.add(peer, "spawn_ready", us(t.elapsed()));
    // Sequential pings from a task on the runtime (how async code calls a
    // client), then from outside it (the caller is the block_on thread, so
    // every answer must wake a thread that is not a runtime worker).
    let lat = match ping_series(c.ping_fn(), plan.warmup, plan.pings).await {
        Ok(lat) => lat,
        Err(e) => {
            c.close().await;
            return Err(e);
        }
    };
    add_pings(r, peer, lat);
    let mut lat = Vec::with_capacity(plan.pings);
    for _ in 0..plan.pings {
        let t = Instant::now();
        c.ping().await?;
        lat.push(us(t.elapsed()));
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    r.add(peer, "ping_p50_outside", percentile(&lat, 0.5));
    let (n, el) = c.throughput(plan.window, plan.tput, "ping", None).await;
    r.add(peer, "rps_64", n as f64 / el.as_secs_f64());
    c.big().await?;
    let t = Instant::now();
    let mut bytes = 0;
    for _ in 0..plan.bigs {
        bytes += c.big().await?;
    }
    r.add(
        peer,
        "big_mbs",
        bytes as f64 / MIB / t.elapsed().as_secs_f64(),
    );
    add_close(r, peer, c.close().await);
    Ok(())
}

async fn run_rmcp(exe: &Path, plan: &Plan, r: &mut Results) -> Result<(), String> {
    let t = Instant::now();
    let c = Rmcp::start(exe).await?;
    r.add("rmcp", "spawn_ready", us(t.elapsed()));
    // Sequential pings from a task on the runtime (how async code calls a
    // client), then from outside it (the caller is the block_on thread, so
    // every answer must wake a thread that is not a runtime worker).
    let lat = ping_series(c.ping_fn(), plan.warmup, plan.pings).await?;
    add_pings(r, "rmcp", lat);
    let mut lat = Vec::with_capacity(plan.pings);
    for _ in 0..plan.pings {
        let t = Instant::now();
        c.ping().await?;
        lat.push(us(t.elapsed()));
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    r.add("rmcp", "ping_p50_outside", percentile(&lat, 0.5));
    let (n, el) = c.throughput(plan.window, plan.tput).await;
    r.add("rmcp", "rps_64", n as f64 / el.as_secs_f64());
    c.big().await?;
    let t = Instant::now();
    let mut bytes = 0;
    for _ in 0..plan.bigs {
        bytes += c.big().await?;
    }
    r.add(
        "rmcp",
        "big_mbs",
        bytes as f64 / MIB / t.elapsed().as_secs_f64(),
    );
    add_close(r, "rmcp", c.close().await);
    Ok(())
}

/// Our client, era pinned to `era`, driving one of the two servers
/// (`conduit-server`, `rmcp-server`): `window` echo calls in flight, then
/// sequential echo calls (latency through the server).
async fn run_server(
    exe: &Path,
    mode: &'static str,
    era: EraPreference,
    plan: &Plan,
    r: &mut Results,
) -> Result<(), String> {
    let peer = if mode == "conduit-server" {
        "conduit"
    } else {
        "rmcp"
    };
    let (rps, p50) = if era == EraPreference::Stateless {
        ("server_rps_64_modern", "server_p50_modern")
    } else {
        ("server_rps_64", "server_p50")
    };
    let c = Conduit::start(exe, era, ChildKind::Server(mode)).await?;
    let params = serde_json::json!({ "name": "echo", "arguments": { "text": "hello" } });
    let (_, _) = c
        .throughput(
            plan.window,
            Duration::from_millis(50),
            "tools/call",
            Some(params.clone()),
        )
        .await;
    let (n, el) = c
        .throughput(plan.window, plan.tput, "tools/call", Some(params.clone()))
        .await;
    let lat = ping_series(
        c.call_fn("tools/call", Some(params)),
        plan.warmup,
        plan.pings,
    )
    .await;
    let _ = c.close().await;
    if n == 0 {
        return Err(format!("{mode}: no echo call succeeded"));
    }
    r.add(peer, rps, n as f64 / el.as_secs_f64());
    let mut lat = lat.map_err(|e| format!("{mode}: sequential echo: {e}"))?;
    lat.sort_by(|a, b| a.total_cmp(b));
    r.add(peer, p50, percentile(&lat, 0.5));
    Ok(())
}

/// One HTTP server (`conduit-http`, `rmcp-http` or `http-floor`) in one
/// flow, in a child of its own: sequential echo latency, then the rate of
/// `http_clients` clients, each with one call in flight.
fn run_http(
    exe: &Path,
    mode: &'static str,
    flow: http::Flow,
    plan: &Plan,
    rt: &tokio::runtime::Runtime,
    r: &mut Results,
) -> Result<(), String> {
    let peer = match mode {
        "conduit-http" => "conduit",
        "rmcp-http" => "rmcp",
        _ => "floor",
    };
    let (p50, p99, rps) = match flow {
        http::Flow::Legacy => ("http_p50", "http_p99", "http_rps_50"),
        http::Flow::Modern => ("http_p50_modern", "http_p99_modern", "http_rps_50_modern"),
    };
    let child = http::HttpChild::start(exe, mode)?;
    let addr = child.addr;
    let mut lat = rt.block_on(http::sequential(
        addr,
        flow,
        plan.http_warmup,
        plan.http_calls,
    ))?;
    lat.sort_by(|a, b| a.total_cmp(b));
    r.add(peer, p50, percentile(&lat, 0.5));
    r.add(peer, p99, percentile(&lat, 0.99));
    let (n, el) = rt.block_on(http::concurrent(
        addr,
        flow,
        plan.http_clients,
        plan.http_tput,
    ))?;
    r.add(peer, rps, n as f64 / el.as_secs_f64());
    drop(child);
    Ok(())
}

/// The memory per idle 2025-11-25 session of one HTTP server, in a fresh
/// child.
fn run_http_memory(
    exe: &Path,
    mode: &'static str,
    plan: &Plan,
    rt: &tokio::runtime::Runtime,
    r: &mut Results,
) -> Result<(), String> {
    let peer = if mode == "conduit-http" {
        "conduit"
    } else {
        "rmcp"
    };
    let child = http::HttpChild::start(exe, mode)?;
    let kib = rt.block_on(http::session_memory(
        &child,
        plan.http_sessions,
        plan.http_warmup,
    ))?;
    r.add(peer, "http_session_kib", kib);
    Ok(())
}

/// The HTTP client rows of one round against one server child (`mode`:
/// `conduit-http`, our `HttpServer`, or `rmcp-http`), shared by every
/// client peer (the floor generator, our client, rmcp's) in each era, the
/// order rotating per round.
fn run_http_clients(
    exe: &Path,
    mode: &str,
    plan: &Plan,
    round: usize,
    rt: &tokio::runtime::Runtime,
    r: &mut Results,
) -> Result<(), String> {
    let child = http::HttpChild::start(exe, mode)?;
    let url = format!("http://{}/mcp", child.addr);
    let runs = [
        ("floor", http::Flow::Legacy),
        ("conduit", http::Flow::Legacy),
        ("rmcp", http::Flow::Legacy),
        ("floor", http::Flow::Modern),
        ("conduit", http::Flow::Modern),
        ("rmcp", http::Flow::Modern),
    ];
    // For profilers: `BENCH_HTTPC_PEERS=conduit` runs our client alone.
    let only = std::env::var("BENCH_HTTPC_PEERS").ok();
    for k in 0..runs.len() {
        let (peer, flow) = runs[(round + k) % runs.len()];
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|p| p == peer))
        {
            continue;
        }
        let (p50, rps) = match (mode, flow) {
            ("conduit-http", http::Flow::Legacy) => ("httpc_p50", "httpc_rps_64"),
            ("conduit-http", http::Flow::Modern) => ("httpc_p50_modern", "httpc_rps_64_modern"),
            (_, http::Flow::Legacy) => ("httpc_p50_rs", "httpc_rps_64_rs"),
            (_, http::Flow::Modern) => ("httpc_p50_modern_rs", "httpc_rps_64_modern_rs"),
        };
        let res = rt.block_on(async {
            let (mut lat, (n, el)) = if peer == "floor" {
                let lat =
                    http::sequential(child.addr, flow, plan.http_warmup, plan.http_calls).await?;
                let tput = http::concurrent(child.addr, flow, plan.window, plan.http_tput).await?;
                (lat, tput)
            } else {
                let c = if peer == "conduit" {
                    http_client::Peer::conduit(&url, flow).await?
                } else {
                    http_client::Peer::rmcp(&url, flow).await?
                };
                let lat = http_client::sequential(&c, plan.http_warmup, plan.http_calls).await;
                let tput = match lat {
                    Ok(_) => http_client::in_flight(&c, plan.window, plan.http_tput).await,
                    Err(ref e) => Err(e.clone()),
                };
                c.close().await;
                (lat?, tput?)
            };
            lat.sort_by(|a, b| a.total_cmp(b));
            r.add(peer, p50, percentile(&lat, 0.5));
            r.add(peer, rps, n as f64 / el.as_secs_f64());
            Ok::<_, String>(())
        });
        if let Err(e) = res {
            eprintln!("round {round}: http client {peer} ({flow:?}, {mode}) failed: {e}");
        }
    }
    Ok(())
}

/// One round: every client peer in rotating order, then the four server
/// runs (two servers x two eras), also rotating, then the HTTP runs.
fn run_round(
    exe: &Path,
    plan: &Plan,
    round: usize,
    wants: &dyn Fn(&str) -> bool,
    rt: &tokio::runtime::Runtime,
    r: &mut Results,
) {
    let n = report::PEERS.len();
    for k in 0..n {
        let peer = report::PEERS[(round + k) % n];
        if !wants(peer) {
            continue;
        }
        let res = match peer {
            "floor" => run_floor(exe, plan, r).map_err(|e| e.to_string()),
            "conduit" | "modern" => rt.block_on(run_conduit(exe, plan, peer, r)),
            _ => rt.block_on(run_rmcp(exe, plan, r)),
        };
        if let Err(e) = res {
            eprintln!("round {round}: {peer} failed: {e}");
        }
    }
    if wants("server") {
        let runs = [
            ("conduit-server", EraPreference::Stateful),
            ("rmcp-server", EraPreference::Stateful),
            ("conduit-server", EraPreference::Stateless),
            ("rmcp-server", EraPreference::Stateless),
        ];
        for k in 0..runs.len() {
            let (mode, era) = runs[(round + k) % runs.len()];
            if let Err(e) = rt.block_on(run_server(exe, mode, era, plan, r)) {
                eprintln!("round {round}: {mode} ({era:?}) failed: {e}");
            }
        }
    }
    if wants("http") {
        let runs = [
            ("conduit-http", http::Flow::Legacy),
            ("rmcp-http", http::Flow::Legacy),
            ("http-floor", http::Flow::Legacy),
            ("conduit-http", http::Flow::Modern),
            ("rmcp-http", http::Flow::Modern),
            ("http-floor", http::Flow::Modern),
        ];
        for k in 0..runs.len() {
            let (mode, flow) = runs[(round + k) % runs.len()];
            if let Err(e) = run_http(exe, mode, flow, plan, rt, r) {
                eprintln!("round {round}: {mode} ({flow:?}) failed: {e}");
            }
        }
        let modes = ["conduit-http", "rmcp-http"];
        for k in 0..modes.len() {
            let mode = modes[(round + k) % modes.len()];
            if let Err(e) = run_http_memory(exe, mode, plan, rt, r) {
                eprintln!("round {round}: {mode} idle sessions failed: {e}");
            }
        }
    }
    if wants("host") {
        if let Err(e) = rt.block_on(host::run(plan, r)) {
            eprintln!("round {round}: host failed: {e}");
        }
    }
    if wants("httpc") && round < plan.httpc_rounds {
        let mut servers = vec!["conduit-http"];
        if plan.httpc_rmcp_server {
            servers.push("rmcp-http");
        }
        for k in 0..servers.len() {
            let mode = servers[(round + k) % servers.len()];
            if let Err(e) = run_http_clients(exe, mode, plan, round, rt, r) {
                eprintln!("round {round}: http clients against {mode} failed: {e}");
            }
        }
    }
}

fn vm_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// `--probe PEER`: in a fresh process, start one warm-up client, then
/// `clients` more; report the RSS they added once idle, then each pings
/// sequentially for `agg` and the aggregate rate is reported. `floor`:
/// `clients` floor connections, one blocking thread each (rate only).
fn probe(exe: &Path, peer: &str, clients: usize, agg: Duration) {
    if peer == "floor" {
        let (n, el) = floor_aggregate(exe, clients, agg).expect("floor aggregate");
        println!(
            "{}",
            serde_json::json!({ "requests": n, "secs": el.as_secs_f64() })
        );
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let out = rt.block_on(async move {
        match peer {
            "conduit" | "modern" => {
                let era = if peer == "modern" {
                    EraPreference::Stateless
                } else {
                    EraPreference::Stateful
                };
                let warm = Conduit::start(exe, era, ChildKind::Floor)
                    .await
                    .expect("warm-up client");
                warm.ping().await.expect("ping");
                let before = vm_rss_kib();
                let mut set = tokio::task::JoinSet::new();
                for _ in 0..clients {
                    let exe = exe.to_owned();
                    set.spawn(async move { Conduit::start(&exe, era, ChildKind::Floor).await });
                }
                let mut all = Vec::new();
                while let Some(c) = set.join_next().await {
                    all.push(c.expect("join").expect("client"));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                let after = vm_rss_kib();
                let (n, el) = aggregate(all.iter().map(Conduit::ping_fn), agg).await;
                // stop() every client first (timing each call), then wait.
                let mut calls = Vec::new();
                let mut waits = Vec::new();
                for c in all {
                    let (call, wait, stamp) = c.stop_timed();
                    calls.push(us(call));
                    waits.push((wait, stamp));
                }
                for (w, stamp) in waits {
                    let _ = w.wait().await;
                    if let Some(p) = stamp {
                        let _ = std::fs::remove_file(p);
                    }
                }
                let _ = warm.close().await;
                (before, after, n, el, calls)
            }
            _ => {
                let warm = Rmcp::start(exe).await.expect("warm-up client");
                warm.ping().await.expect("ping");
                let before = vm_rss_kib();
                let mut set = tokio::task::JoinSet::new();
                for _ in 0..clients {
                    let exe = exe.to_owned();
                    set.spawn(async move { Rmcp::start(&exe).await });
                }
                let mut all = Vec::new();
                while let Some(c) = set.join_next().await {
                    all.push(c.expect("join").expect("client"));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                let after = vm_rss_kib();
                let (n, el) = aggregate(all.iter().map(Rmcp::ping_fn), agg).await;
                let mut calls = Vec::new();
                for c in all {
                    calls.push(us(c.close().await.call));
                }
                let _ = warm.close().await;
                (before, after, n, el, calls)
            }
        }
    });
    let (before, after, n, el, mut calls) = out;
    calls.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{}",
        serde_json::json!({
            "rss_before_kib": before,
            "rss_after_kib": after,
            "requests": n,
            "secs": el.as_secs_f64(),
            "close_call_p50_us": percentile(&calls, 0.5),
        })
    );
}

/// Every connection pings sequentially from its own task until `dur`.
async fn aggregate(pings: impl Iterator<Item = PingFn>, dur: Duration) -> (u64, Duration) {
    let start = Instant::now();
    let deadline = start + dur;
    let mut set = tokio::task::JoinSet::new();
    for ping in pings {
        set.spawn(async move {
            let mut n = 0u64;
            while Instant::now() < deadline {
                if !ping().await {
                    break;
                }
                n += 1;
            }
            n
        });
    }
    let mut total = 0;
    while let Some(n) = set.join_next().await {
        total += n.unwrap_or(0);
    }
    (total, start.elapsed())
}

/// Floor with `clients` connections, one blocking thread each.
fn floor_aggregate(exe: &Path, clients: usize, dur: Duration) -> std::io::Result<(u64, Duration)> {
    let mut conns = Vec::new();
    for _ in 0..clients {
        conns.push(Floor::start(exe)?);
    }
    let start = Instant::now();
    let deadline = start + dur;
    let handles: Vec<_> = conns
        .into_iter()
        .map(|mut f| {
            std::thread::spawn(move || {
                let mut n = 0u64;
                while Instant::now() < deadline {
                    if f.ping().is_err() {
                        break;
                    }
                    n += 1;
                }
                let _ = f.close();
                n
            })
        })
        .collect();
    let total = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    Ok((total, start.elapsed()))
}

/// Runs this binary with `args` and returns its stdout; kills it (and fails)
/// after `limit`. Its stderr is ours.
fn run_sub(exe: &Path, args: &[String], limit: Duration) -> Result<String, String> {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("{args:?}: killed after {limit:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => break Err(e.to_string()),
        }
    };
    let out = reader.join().unwrap_or_default();
    match status? {
        s if s.success() => Ok(out),
        s => Err(format!("{args:?}: {s}")),
    }
}

/// Longest a pinned round or a probe may take before it is killed.
const SUB_LIMIT: Duration = Duration::from_secs(180);

/// One round in a fresh copy of this binary pinned to one CPU.
fn run_pinned_round(
    exe: &Path,
    args: &[String],
    round: usize,
    r: &mut Results,
) -> Result<(), String> {
    let mut a = plan_args(args);
    a.extend([
        "--one-round".to_owned(),
        round.to_string(),
        "--pin".to_owned(),
    ]);
    let out = run_sub(exe, &a, SUB_LIMIT)?;
    r.add_lines(&out)
}

fn run_probe(
    exe: &Path,
    peer: &str,
    plan: &Plan,
    pin: bool,
    r: &mut Results,
) -> Result<(), String> {
    let mut a = vec![
        "--probe".to_owned(),
        peer.to_owned(),
        "--clients".to_owned(),
        plan.clients.to_string(),
        "--agg-ms".to_owned(),
        plan.agg.as_millis().to_string(),
    ];
    if pin {
        a.push("--pin".to_owned());
    }
    let line = run_sub(exe, &a, SUB_LIMIT)?;
    let v: serde_json::Value =
        serde_json::from_str(line.trim()).map_err(|e| format!("probe {peer}: {e}: {line:?}"))?;
    let f = |k: &str| v.get(k).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
    r.add(peer, "agg_rps_100", f("requests") / f("secs"));
    if peer != "floor" {
        let added_kib = f("rss_after_kib") - f("rss_before_kib");
        r.add(peer, "rss_100_idle", added_kib / 1024.0);
        r.add(peer, "rss_per_conn", added_kib / plan.clients as f64);
        r.add(peer, "close_call_100", f("close_call_p50_us"));
    }
    Ok(())
}

fn arg_value(args: &[String], key: &str) -> Option<String> {
    args.iter()
        .position(|a| a == key)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The CPU pinned runs use (`BENCH_PIN_CPU`, default 0).
fn pin_cpu() -> usize {
    std::env::var("BENCH_PIN_CPU")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

const USAGE: &str = "\
usage: bench [--quick] [--json] [--samples] [--pinning both|on|off] [--rounds N] [--pings N]
             [--tput-ms N] [--bigs N] [--probe-rounds N] [--http-calls N] [--sessions N]
             [--only floor,conduit,modern,rmcp,server,probe,http,httpc,host]
       bench --diag-spawn N       spawn-to-ready variants, N interleaved rounds
       bench --diag-ping N [--no-pin]  ping p50 of floor, conduit (multi-thread and
                                  current-thread runtimes, both eras) and rmcp, pinned to
                                  one CPU unless --no-pin
       bench --one-round N [--pin] [plan options]  one round; samples as JSON lines
       bench --diag-op PEER OP N [--pin]  N operations of one kind, for profilers
                                  (see benches/bench/diag.rs)
Pinned runs use CPU 0 (BENCH_PIN_CPU=N for another).";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(mode) = arg_value(&args, "--child") {
        match mode.as_str() {
            "floor" => child::floor(
                arg_value(&args, "--stamp"),
                args.iter().any(|a| a == "--legacy-only"),
            ),
            "conduit-server" => child::conduit_server::run(),
            "rmcp-server" => child::rmcp_server::run(),
            "conduit-http" => http::conduit_server(),
            "rmcp-http" => http::rmcp_server(),
            "http-floor" => http::floor_server(),
            other => eprintln!("unknown child mode {other}"),
        }
        return;
    }
    // Pinned before any thread or child exists: everything inherits it.
    if args.iter().any(|a| a == "--pin") {
        diag::pin_to_cpu(pin_cpu());
    }
    let exe: PathBuf = std::env::current_exe().expect("current exe");
    if let Some(peer) = arg_value(&args, "--probe") {
        let clients = arg_value(&args, "--clients")
            .and_then(|v| v.parse().ok())
            .unwrap_or(100);
        let agg = arg_value(&args, "--agg-ms")
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_millis(500));
        probe(&exe, &peer, clients, agg);
        return;
    }
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return;
    }
    if let Some(n) = arg_value(&args, "--diag-spawn").and_then(|v| v.parse().ok()) {
        diag::spawn(&exe, n);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--diag-op") {
        match (args.get(i + 1), args.get(i + 2), args.get(i + 3)) {
            (Some(peer), Some(op), Some(n)) => {
                diag::op(&exe, peer, op, n.parse().expect("--diag-op PEER OP N"))
            }
            _ => eprintln!("usage: --diag-op PEER OP N"),
        }
        return;
    }
    if let Some(n) = arg_value(&args, "--diag-ping").and_then(|v| v.parse().ok()) {
        diag::ping(&exe, n, !args.iter().any(|a| a == "--no-pin"));
        return;
    }
    let plan = Plan::from_args(&args);
    let only: Option<String> = arg_value(&args, "--only");
    let wants = |what: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|x| x == what))
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if let Some(round) = arg_value(&args, "--one-round").and_then(|v| v.parse().ok()) {
        // Warm-up, not measured: the first spawn also starts the spawning
        // thread, which the unpinned rounds pay once for the whole run.
        if let Err(e) = rt.block_on(spawn_once(&exe, EraPreference::Stateful, ChildKind::Floor)) {
            eprintln!("warm-up client: {e}");
        }
        let mut r = Results::default();
        run_round(&exe, &plan, round, &wants, &rt, &mut r);
        drop(rt);
        print!("{}", r.sample_lines());
        return;
    }
    let json = args.iter().any(|a| a == "--json");
    let pin_mode = arg_value(&args, "--pinning").unwrap_or_else(|| "both".to_owned());
    let (unpinned, pinned) = match pin_mode.as_str() {
        "on" => (false, true),
        "off" => (true, false),
        _ => (true, true),
    };
    let started = Instant::now();
    let mut free = Results::default();
    let mut fixed = Results::default();
    for round in 0..plan.rounds {
        // Alternate which of the two runs first.
        for k in 0..2 {
            if (round + k) % 2 == 0 {
                if unpinned {
                    run_round(&exe, &plan, round, &wants, &rt, &mut free);
                }
            } else if pinned {
                if let Err(e) = run_pinned_round(&exe, &args, round, &mut fixed) {
                    eprintln!("pinned round {round} failed: {e}");
                }
            }
        }
        if !json {
            eprint!(".");
        }
    }
    if wants("probe") {
        let peers = ["conduit", "modern", "rmcp", "floor"];
        for round in 0..plan.probe_rounds {
            for k in 0..peers.len() {
                let peer = peers[(round + k) % peers.len()];
                for (pin, r) in [(false, &mut free), (true, &mut fixed)] {
                    if (pin && !pinned) || (!pin && !unpinned) {
                        continue;
                    }
                    if let Err(e) = run_probe(&exe, peer, &plan, pin, r) {
                        eprintln!("probe {peer}{}: {e}", if pin { " (pinned)" } else { "" });
                    }
                }
            }
        }
    }
    drop(rt);
    if args.iter().any(|a| a == "--samples") {
        for (title, r) in [("unpinned", &free), ("pinned", &fixed)] {
            for ((peer, metric), v) in &r.samples {
                let v: Vec<String> = v.iter().map(|x| format!("{x:.1}")).collect();
                eprintln!("{title:>8} {peer:>8} {metric:<22} {}", v.join(" "));
            }
        }
    }
    let t = report::text(&free, &fixed, &plan, started.elapsed(), pin_cpu());
    if let Some(dir) = arg_value(&args, "--svg") {
        write_charts(
            std::path::Path::new(&dir),
            report::charts(&free, &fixed, pin_cpu()),
        );
    }
    if json {
        print!("{}", report::json_lines(&free, &fixed));
        eprint!("{t}");
    } else {
        eprintln!();
        print!("{t}");
    }
}

/// Writes each chart as `DIR/NAME`, saying which.
fn write_charts(dir: &std::path::Path, charts: Vec<(&'static str, String)>) {
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("--svg {}: {e}", dir.display());
        return;
    }
    for (name, svg) in charts {
        let path = dir.join(name);
        match std::fs::write(&path, svg) {
            Ok(()) => eprintln!("wrote {}", path.display()),
            Err(e) => eprintln!("{}: {e}", path.display()),
        }
    }
}
