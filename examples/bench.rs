//! Side-by-side benchmark: the pipe floor, conduit-mcp and rmcp, against the
//! same minimal child server, interleaved in one run (issue #6).
//!
//! Run: `cargo run --release --example bench` (about a minute), or
//! `-- --quick` for a smoke run of a few seconds; `-- --json` prints one JSON
//! object per line (`{"peer", "metric", "value", "unit"}`, plus ratio and
//! target lines) on stdout and the table on stderr.
//!
//! - **floor**: a blocking child (this binary, `--child floor`) that answers
//!   each request line with fixed bytes after a byte scan for the id, driven
//!   by blocking pipe reads and writes in this process: no JSON work at all.
//! - **conduit**: `conduit_mcp::Client` against that same child.
//! - **rmcp**: rmcp's client (`TokioChildProcess`) against that same child.
//!
//! Each round runs every metric for every peer, the order rotating per
//! round; the table shows medians over rounds. The server side (our
//! `StdioServer` against an rmcp stdio server, both with an `echo` tool)
//! is driven by our client. Idle-connection memory and 100-client
//! throughput run in fresh subprocesses (`--probe`) so one peer's freed
//! memory cannot flatter the next.

#[path = "bench/child.rs"]
mod child;
#[path = "bench/diag.rs"]
mod diag;
#[path = "bench/peers.rs"]
mod peers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use peers::{CloseTimes, Conduit, Floor, PingFn, Rmcp};

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
        }
    }
    fn quick() -> Self {
        Plan {
            rounds: 3,
            pings: 500,
            warmup: 100,
            window: 64,
            tput: Duration::from_millis(150),
            bigs: 2,
            clients: 100,
            probe_rounds: 1,
            agg: Duration::from_millis(200),
        }
    }
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
    fn median(&self, peer: &str, metric: &'static str) -> Option<f64> {
        let mut v = self.samples.get(&(peer.to_owned(), metric))?.clone();
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

async fn run_conduit(exe: &Path, plan: &Plan, r: &mut Results) -> Result<(), String> {
    // Diagnostic: the same spawn with die_with_parent off (no
    // PR_SET_PDEATHSIG setup in the child).
    let stamp = peers::stamp_path("conduit-nodeath");
    let mut cfg = peers::conduit_config(exe, peers::floor_args(&stamp));
    cfg.die_with_parent = false;
    let t = Instant::now();
    let c = Conduit::start_cfg(cfg, Some(stamp)).await?;
    r.add("conduit", "spawn_ready_nodeath", us(t.elapsed()));
    c.close().await;
    let t = Instant::now();
    let c = Conduit::start(exe, None).await?;
    r.add("conduit", "spawn_ready", us(t.elapsed()));
    // Sequential pings from a task on the runtime (how async code calls a
    // client), then from outside it (the caller is the block_on thread, so
    // every answer must wake a thread that is not a runtime worker).
    let lat = ping_series(c.ping_fn(), plan.warmup, plan.pings).await?;
    add_pings(r, "conduit", lat);
    let mut lat = Vec::with_capacity(plan.pings);
    for _ in 0..plan.pings {
        let t = Instant::now();
        c.ping().await?;
        lat.push(us(t.elapsed()));
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    r.add("conduit", "ping_p50_outside", percentile(&lat, 0.5));
    let (n, el) = c.throughput(plan.window, plan.tput, "ping", None).await;
    r.add("conduit", "rps_64", n as f64 / el.as_secs_f64());
    c.big().await?;
    let t = Instant::now();
    let mut bytes = 0;
    for _ in 0..plan.bigs {
        bytes += c.big().await?;
    }
    r.add(
        "conduit",
        "big_mbs",
        bytes as f64 / MIB / t.elapsed().as_secs_f64(),
    );
    add_close(r, "conduit", c.close().await);
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

/// Our client driving one of the two servers (`conduit-server`,
/// `rmcp-server`) with `window` echo calls in flight.
async fn run_server(exe: &Path, mode: &str, plan: &Plan, r: &mut Results) -> Result<(), String> {
    let peer = if mode == "conduit-server" {
        "conduit"
    } else {
        "rmcp"
    };
    let c = Conduit::start(exe, Some(mode)).await?;
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
        .throughput(plan.window, plan.tput, "tools/call", Some(params))
        .await;
    if n == 0 {
        return Err(format!("{mode}: no echo call succeeded"));
    }
    r.add(peer, "server_rps_64", n as f64 / el.as_secs_f64());
    let _ = c.close().await;
    Ok(())
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
/// sequentially for `agg` and the aggregate rate is reported.
fn probe(exe: &Path, peer: &str, clients: usize, agg: Duration) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let out = rt.block_on(async move {
        match peer {
            "conduit" => {
                let warm = Conduit::start(exe, None).await.expect("warm-up client");
                warm.ping().await.expect("ping");
                let before = vm_rss_kib();
                let mut set = tokio::task::JoinSet::new();
                for _ in 0..clients {
                    let exe = exe.to_owned();
                    set.spawn(async move { Conduit::start(&exe, None).await });
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

fn run_probe(exe: &Path, peer: &str, plan: &Plan, r: &mut Results) -> Result<(), String> {
    let out = std::process::Command::new(exe)
        .args([
            "--probe",
            peer,
            "--clients",
            &plan.clients.to_string(),
            "--agg-ms",
            &plan.agg.as_millis().to_string(),
        ])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| e.to_string())?;
    let line = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value =
        serde_json::from_str(line.trim()).map_err(|e| format!("probe {peer}: {e}: {line:?}"))?;
    let f = |k: &str| v.get(k).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
    let added_kib = f("rss_after_kib") - f("rss_before_kib");
    r.add(peer, "rss_100_idle", added_kib / 1024.0);
    r.add(peer, "rss_per_conn", added_kib / plan.clients as f64);
    r.add(peer, "agg_rps_100", f("requests") / f("secs"));
    r.add(peer, "close_call_100", f("close_call_p50_us"));
    Ok(())
}

/// One metric's row: name, unit, and whether higher is better.
struct Row {
    metric: &'static str,
    label: &'static str,
    unit: &'static str,
}

const ROWS: &[Row] = &[
    Row {
        metric: "ping_p50",
        label: "ping p50 (sequential, in a task)",
        unit: "us",
    },
    Row {
        metric: "ping_p50_outside",
        label: "ping p50, caller outside runtime",
        unit: "us",
    },
    Row {
        metric: "ping_p99",
        label: "ping p99 (sequential, in a task)",
        unit: "us",
    },
    Row {
        metric: "rps_64",
        label: "requests/s, 64 in flight",
        unit: "req/s",
    },
    Row {
        metric: "big_mbs",
        label: "8 MiB tool result",
        unit: "MiB/s",
    },
    Row {
        metric: "spawn_ready",
        label: "spawn to ready",
        unit: "us",
    },
    Row {
        metric: "spawn_ready_nodeath",
        label: "spawn to ready, die_with_parent off",
        unit: "us",
    },
    Row {
        metric: "close_call",
        label: "close call returns",
        unit: "us",
    },
    Row {
        metric: "close_call_100",
        label: "close call, p50 of 100 clients",
        unit: "us",
    },
    Row {
        metric: "close_to_exit",
        label: "close to child exit",
        unit: "us",
    },
    Row {
        metric: "reap_after_exit",
        label: "child exit to reaped",
        unit: "us",
    },
    Row {
        metric: "agg_rps_100",
        label: "100 clients, aggregate",
        unit: "req/s",
    },
    Row {
        metric: "rss_100_idle",
        label: "RSS of 100 idle clients",
        unit: "MiB",
    },
    Row {
        metric: "rss_per_conn",
        label: "RSS per idle client",
        unit: "KiB",
    },
    Row {
        metric: "server_rps_64",
        label: "server: echo calls, 64 in flight",
        unit: "req/s",
    },
];

const PEERS: &[&str] = &["floor", "conduit", "rmcp"];

fn fmt_num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if !v.is_finite() => "-".into(),
        Some(v) if v.abs() >= 10_000.0 => format!("{:.0}", v),
        Some(v) if v.abs() >= 100.0 => format!("{:.0}", v),
        Some(v) if v.abs() >= 10.0 => format!("{:.1}", v),
        Some(v) => format!("{:.2}", v),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 && a.is_finite() && b.is_finite() => Some(a / b),
        _ => None,
    }
}

/// One target of the issue, checked on this run's medians.
struct Target {
    name: String,
    value: Option<f64>,
    unit: &'static str,
    met: bool,
}

fn targets(r: &Results) -> Vec<Target> {
    let m = |p: &str, k: &'static str| r.median(p, k);
    let cr = |k| ratio(m("conduit", k), m("rmcp", k));
    let cf = |k| ratio(m("conduit", k), m("floor", k));
    let le = |v: Option<f64>, t: f64| v.is_some_and(|v| v <= t);
    let ge = |v: Option<f64>, t: f64| v.is_some_and(|v| v >= t);
    let lt = |v: Option<f64>, t: f64| v.is_some_and(|v| v < t);
    vec![
        Target {
            name: "ping p50 <= 0.75 x rmcp".into(),
            value: cr("ping_p50"),
            unit: "ratio",
            met: le(cr("ping_p50"), 0.75),
        },
        Target {
            name: "ping p50 <= 1.3 x floor".into(),
            value: cf("ping_p50"),
            unit: "ratio",
            met: le(cf("ping_p50"), 1.3),
        },
        Target {
            name: "requests/s (64 in flight) >= 3 x rmcp".into(),
            value: cr("rps_64"),
            unit: "ratio",
            met: ge(cr("rps_64"), 3.0),
        },
        Target {
            name: "8 MiB MB/s >= 1.2 x rmcp".into(),
            value: cr("big_mbs"),
            unit: "ratio",
            met: ge(cr("big_mbs"), 1.2),
        },
        Target {
            name: "8 MiB MB/s >= 0.8 x floor".into(),
            value: cf("big_mbs"),
            unit: "ratio",
            met: ge(cf("big_mbs"), 0.8),
        },
        Target {
            name: "spawn-to-ready <= 1.2 x rmcp".into(),
            value: cr("spawn_ready"),
            unit: "ratio",
            met: le(cr("spawn_ready"), 1.2),
        },
        Target {
            name: "close call returns in < 100 us".into(),
            value: m("conduit", "close_call"),
            unit: "us",
            met: lt(m("conduit", "close_call"), 100.0),
        },
        Target {
            name: "child reaped < 1 ms after exit".into(),
            value: m("conduit", "reap_after_exit"),
            unit: "us",
            met: lt(m("conduit", "reap_after_exit"), 1000.0),
        },
        Target {
            name: "100 idle clients < 10 MiB RSS".into(),
            value: m("conduit", "rss_100_idle"),
            unit: "MiB",
            met: lt(m("conduit", "rss_100_idle"), 10.0),
        },
    ]
}

fn table(r: &Results, plan: &Plan, elapsed: Duration) -> String {
    let mut s = String::new();
    s += &format!(
        "conduit-mcp bench: {} rounds, medians; {} pings/round, {} in flight for {} ms, {} x 8 MiB, {} clients ({} probe rounds)\n\n",
        plan.rounds, plan.pings, plan.window, plan.tput.as_millis(), plan.bigs, plan.clients, plan.probe_rounds
    );
    s += &format!(
        "| {:<34} | {:>6} | {:>10} | {:>10} | {:>10} | {:>8} | {:>8} |\n",
        "metric", "unit", "floor", "conduit", "rmcp", "c/floor", "c/rmcp"
    );
    s += &format!(
        "|{:-<36}|{:-<8}|{:-<12}|{:-<12}|{:-<12}|{:-<10}|{:-<10}|\n",
        "", "", "", "", "", "", ""
    );
    for row in ROWS {
        let v: Vec<Option<f64>> = PEERS.iter().map(|p| r.median(p, row.metric)).collect();
        s += &format!(
            "| {:<34} | {:>6} | {:>10} | {:>10} | {:>10} | {:>8} | {:>8} |\n",
            row.label,
            row.unit,
            fmt_num(v[0]),
            fmt_num(v[1]),
            fmt_num(v[2]),
            fmt_num(ratio(v[1], v[0])),
            fmt_num(ratio(v[1], v[2])),
        );
    }
    s += "\nserver row: our client drives our StdioServer (conduit column) and an rmcp stdio server (rmcp column), same echo tool.\n";
    s += "\ntargets:\n";
    for t in targets(r) {
        s += &format!(
            "  [{}] {:<40} {} {}\n",
            if t.met { "met" } else { "MISSED" },
            t.name,
            fmt_num(t.value),
            t.unit
        );
    }
    s += &format!(
        "\ntotal time {:.1} s; bench process VmRSS at the end {} MiB\n",
        elapsed.as_secs_f64(),
        vm_rss_kib() / 1024
    );
    s
}

fn json_lines(r: &Results) -> String {
    let mut s = String::new();
    for row in ROWS {
        for p in PEERS {
            if let Some(v) = r.median(p, row.metric) {
                s += &serde_json::json!({"peer": p, "metric": row.metric, "value": v, "unit": row.unit}).to_string();
                s.push('\n');
            }
        }
        for (name, base) in [("conduit/floor", "floor"), ("conduit/rmcp", "rmcp")] {
            if let Some(v) = ratio(r.median("conduit", row.metric), r.median(base, row.metric)) {
                s += &serde_json::json!({"peer": name, "metric": row.metric, "value": v, "unit": "ratio"}).to_string();
                s.push('\n');
            }
        }
    }
    for t in targets(r) {
        s += &serde_json::json!({"peer": "target", "metric": t.name, "value": t.value, "unit": t.unit, "met": t.met}).to_string();
        s.push('\n');
    }
    s
}

fn arg_value(args: &[String], key: &str) -> Option<String> {
    args.iter()
        .position(|a| a == key)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(mode) = arg_value(&args, "--child") {
        match mode.as_str() {
            "floor" => child::floor(arg_value(&args, "--stamp")),
            "conduit-server" => child::conduit_server::run(),
            "rmcp-server" => child::rmcp_server::run(),
            other => eprintln!("unknown child mode {other}"),
        }
        return;
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
        println!("usage: bench [--quick] [--json] [--rounds N] [--pings N] [--tput-ms N] [--bigs N] [--only floor,conduit,rmcp,server,probe] [--samples]\n       bench --diag-spawn N       spawn-to-ready variants, N interleaved rounds\n       bench --diag-ping N [--no-pin]  ping p50 of floor, conduit (multi-thread and current-thread runtimes) and rmcp, pinned to one CPU unless --no-pin");
        return;
    }
    if let Some(n) = arg_value(&args, "--diag-spawn").and_then(|v| v.parse().ok()) {
        diag::spawn(&exe, n);
        return;
    }
    if let Some(n) = arg_value(&args, "--diag-ping").and_then(|v| v.parse().ok()) {
        diag::ping(&exe, n, !args.iter().any(|a| a == "--no-pin"));
        return;
    }
    let json = args.iter().any(|a| a == "--json");
    let mut plan = if args.iter().any(|a| a == "--quick") {
        Plan::quick()
    } else {
        Plan::full()
    };
    let num = |k: &str| arg_value(&args, k).and_then(|v| v.parse::<usize>().ok());
    if let Some(n) = num("--rounds") {
        plan.rounds = n;
    }
    if let Some(n) = num("--pings") {
        plan.pings = n;
        plan.warmup = plan.warmup.min(n);
    }
    if let Some(n) = num("--tput-ms") {
        plan.tput = Duration::from_millis(n as u64);
    }
    if let Some(n) = num("--bigs") {
        plan.bigs = n;
    }
    let only: Option<String> = arg_value(&args, "--only");
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut r = Results::default();
    let wants = |what: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|x| x == what))
    };
    for round in 0..plan.rounds {
        for k in 0..3 {
            let which = (round + k) % 3;
            let res = match which {
                0 if wants("floor") => run_floor(&exe, &plan, &mut r).map_err(|e| e.to_string()),
                1 if wants("conduit") => rt.block_on(run_conduit(&exe, &plan, &mut r)),
                2 if wants("rmcp") => rt.block_on(run_rmcp(&exe, &plan, &mut r)),
                _ => Ok(()),
            };
            if let Err(e) = res {
                eprintln!("round {round}: {} failed: {e}", PEERS[which]);
            }
        }
        if wants("server") {
            let modes = ["conduit-server", "rmcp-server"];
            for k in 0..2 {
                let mode = modes[(round + k) % 2];
                if let Err(e) = rt.block_on(run_server(&exe, mode, &plan, &mut r)) {
                    eprintln!("round {round}: {mode} failed: {e}");
                }
            }
        }
        if !json {
            eprint!(".");
        }
    }
    if wants("probe") {
        for round in 0..plan.probe_rounds {
            for k in 0..2 {
                let peer = ["conduit", "rmcp"][(round + k) % 2];
                if let Err(e) = run_probe(&exe, peer, &plan, &mut r) {
                    eprintln!("probe {peer}: {e}");
                }
            }
            match floor_aggregate(&exe, plan.clients, plan.agg) {
                Ok((n, el)) => r.add("floor", "agg_rps_100", n as f64 / el.as_secs_f64()),
                Err(e) => eprintln!("floor aggregate: {e}"),
            }
        }
    }
    drop(rt);
    if args.iter().any(|a| a == "--samples") {
        for ((peer, metric), v) in &r.samples {
            let v: Vec<String> = v.iter().map(|x| format!("{x:.1}")).collect();
            eprintln!("{peer:>8} {metric:<16} {}", v.join(" "));
        }
    }
    let t = table(&r, &plan, started.elapsed());
    if json {
        print!("{}", json_lines(&r));
        eprint!("{t}");
    } else {
        eprintln!();
        print!("{t}");
    }
}
