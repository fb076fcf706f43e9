//! What a run prints: the unpinned and pinned tables, the targets (of the
//! stdio client unpinned; of the stdio client and server, the HTTP server
//! and the HTTP client pinned), the same as JSON lines, and the charts.

use std::time::Duration;

use super::{vm_rss_kib, Plan, Results};

/// The client peers, in table order.
pub const PEERS: &[&str] = &["floor", "conduit", "modern", "rmcp"];

/// One metric's row.
pub struct Row {
    pub metric: &'static str,
    label: &'static str,
    unit: &'static str,
    /// Higher is better (rates); otherwise lower is better.
    higher: bool,
    /// Compared between the eras (modern / legacy) in the targets.
    era: bool,
}

const fn row(
    metric: &'static str,
    label: &'static str,
    unit: &'static str,
    higher: bool,
    era: bool,
) -> Row {
    Row {
        metric,
        label,
        unit,
        higher,
        era,
    }
}

pub const ROWS: &[Row] = &[
    row(
        "ping_p50",
        "ping p50 (sequential, in a task)",
        "us",
        false,
        true,
    ),
    row(
        "ping_p50_outside",
        "ping p50, caller outside runtime",
        "us",
        false,
        true,
    ),
    row(
        "ping_p99",
        "ping p99 (sequential, in a task)",
        "us",
        false,
        true,
    ),
    row("rps_64", "requests/s, 64 in flight", "req/s", true, true),
    row("big_mbs", "8 MiB tool result", "MiB/s", true, true),
    row(
        "spawn_ready",
        "spawn to ready (era pinned)",
        "us",
        false,
        true,
    ),
    row(
        "spawn_ready_auto",
        "spawn to ready, era auto (default)",
        "us",
        false,
        false,
    ),
    row(
        "spawn_ready_nodeath",
        "spawn to ready, die_with_parent off",
        "us",
        false,
        false,
    ),
    row("close_call", "close call returns", "us", false, true),
    row(
        "close_call_100",
        "close call, p50 of 100 clients",
        "us",
        false,
        true,
    ),
    row("close_to_exit", "close to child exit", "us", false, true),
    row("reap_after_exit", "child exit to reaped", "us", false, true),
    row("agg_rps_100", "100 clients, aggregate", "req/s", true, true),
    row(
        "rss_100_idle",
        "RSS of 100 idle clients",
        "MiB",
        false,
        false,
    ),
    row("rss_per_conn", "RSS per idle client", "KiB", false, true),
    row(
        "server_rps_64",
        "server: echo calls, 64 in flight",
        "req/s",
        true,
        false,
    ),
    row(
        "server_rps_64_modern",
        "server: echo, 64 in flight, modern",
        "req/s",
        true,
        false,
    ),
    row(
        "server_p50",
        "server: echo p50, sequential",
        "us",
        false,
        false,
    ),
    row(
        "server_p50_modern",
        "server: echo p50, seq., modern",
        "us",
        false,
        false,
    ),
    row(
        "host_over_direct",
        "host: echo via host / direct",
        "ratio",
        false,
        false,
    ),
    row("http_p50", "http: echo p50, sequential", "us", false, false),
    row("http_p99", "http: echo p99, sequential", "us", false, false),
    row(
        "http_rps_50",
        "http: echo, 50 clients",
        "req/s",
        true,
        false,
    ),
    row(
        "http_p50_modern",
        "http: echo p50, seq., modern",
        "us",
        false,
        false,
    ),
    row(
        "http_p99_modern",
        "http: echo p99, seq., modern",
        "us",
        false,
        false,
    ),
    row(
        "http_rps_50_modern",
        "http: echo, 50 clients, modern",
        "req/s",
        true,
        false,
    ),
    row(
        "http_session_kib",
        "http: server RSS per idle session",
        "KiB",
        false,
        false,
    ),
    row(
        "httpc_p50",
        "http client: echo p50, sequential",
        "us",
        false,
        false,
    ),
    row(
        "httpc_rps_64",
        "http client: echo, 64 in flight",
        "req/s",
        true,
        false,
    ),
    row(
        "httpc_p50_modern",
        "http client: echo p50, seq., modern",
        "us",
        false,
        false,
    ),
    row(
        "httpc_rps_64_modern",
        "http client: 64 in flight, modern",
        "req/s",
        true,
        false,
    ),
    row(
        "httpc_p50_rs",
        "http client, rmcp srv: echo p50",
        "us",
        false,
        false,
    ),
    row(
        "httpc_rps_64_rs",
        "http client, rmcp srv: 64 in flight",
        "req/s",
        true,
        false,
    ),
    row(
        "httpc_p50_modern_rs",
        "http client, rmcp srv: p50, modern",
        "us",
        false,
        false,
    ),
    row(
        "httpc_rps_64_modern_rs",
        "http client, rmcp srv: 64, modern",
        "req/s",
        true,
        false,
    ),
];

/// The static name of metric `m`, if it is a row of the table.
pub fn metric_name(m: &str) -> Option<&'static str> {
    ROWS.iter().find(|r| r.metric == m).map(|r| r.metric)
}

fn fmt_num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if !v.is_finite() => "-".into(),
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

/// One target, checked on this run's medians.
pub struct Target {
    name: String,
    value: Option<f64>,
    /// The same ratio on the unpinned figures (the pinned targets only).
    unpinned: Option<f64>,
    unit: &'static str,
    met: bool,
}

/// A ratio target: `value` compared with `limit` (at most, or at least).
fn ratio_target(
    name: String,
    value: Option<f64>,
    unpinned: Option<f64>,
    at_least: bool,
    limit: f64,
) -> Target {
    let met = value.is_some_and(|v| if at_least { v >= limit } else { v <= limit });
    Target {
        name,
        value,
        unpinned,
        unit: "ratio",
        met,
    }
}

/// Issue #6's targets, on the unpinned figures (as before).
fn targets_unpinned(r: &Results) -> Vec<Target> {
    let m = |p: &str, k: &str| r.median(p, k);
    let cr = |k| ratio(m("conduit", k), m("rmcp", k));
    let cf = |k| ratio(m("conduit", k), m("floor", k));
    let lt = |v: Option<f64>, t: f64| v.is_some_and(|v| v < t);
    let abs = |name: &str, v: Option<f64>, unit: &'static str, t: f64| Target {
        name: name.into(),
        value: v,
        unpinned: None,
        unit,
        met: lt(v, t),
    };
    vec![
        ratio_target(
            "ping p50 <= 0.75 x rmcp".into(),
            cr("ping_p50"),
            None,
            false,
            0.75,
        ),
        ratio_target(
            "ping p50 <= 1.3 x floor".into(),
            cf("ping_p50"),
            None,
            false,
            1.3,
        ),
        ratio_target(
            "requests/s (64 in flight) >= 3 x rmcp".into(),
            cr("rps_64"),
            None,
            true,
            3.0,
        ),
        ratio_target(
            "8 MiB MB/s >= 1.2 x rmcp".into(),
            cr("big_mbs"),
            None,
            true,
            1.2,
        ),
        ratio_target(
            "8 MiB MB/s >= 0.8 x floor".into(),
            cf("big_mbs"),
            None,
            true,
            0.8,
        ),
        ratio_target(
            "spawn-to-ready (era auto) <= 1.2 x rmcp".into(),
            ratio(m("conduit", "spawn_ready_auto"), m("rmcp", "spawn_ready")),
            None,
            false,
            1.2,
        ),
        abs(
            "close call returns in < 100 us",
            m("conduit", "close_call"),
            "us",
            100.0,
        ),
        abs(
            "child reaped < 1 ms after exit",
            m("conduit", "reap_after_exit"),
            "us",
            1000.0,
        ),
        abs(
            "100 idle clients < 10 MiB RSS",
            m("conduit", "rss_100_idle"),
            "MiB",
            10.0,
        ),
    ]
}

/// Issue #16's targets, on the pinned figures (`p`); the same ratios on the
/// unpinned ones (`u`) are shown beside them.
fn targets_pinned(p: &Results, u: &Results) -> Vec<Target> {
    let both = |a: &str, b: &str, k: &str| {
        (
            ratio(p.median(a, k), p.median(b, k)),
            ratio(u.median(a, k), u.median(b, k)),
        )
    };
    let mut out = Vec::new();
    let mut add = |name: &str, a: &str, b: &str, k: &str, at_least: bool, limit: f64| {
        let (v, uv) = both(a, b, k);
        out.push(ratio_target(name.into(), v, uv, at_least, limit));
    };
    add(
        "ping p50 <= 2 x floor",
        "conduit",
        "floor",
        "ping_p50",
        false,
        2.0,
    );
    add(
        "64 in flight >= 0.5 x floor",
        "conduit",
        "floor",
        "rps_64",
        true,
        0.5,
    );
    add(
        "8 MiB result >= 0.8 x floor",
        "conduit",
        "floor",
        "big_mbs",
        true,
        0.8,
    );
    add(
        "ping p50 <= 0.5 x rmcp",
        "conduit",
        "rmcp",
        "ping_p50",
        false,
        0.5,
    );
    add(
        "64 in flight >= 5 x rmcp",
        "conduit",
        "rmcp",
        "rps_64",
        true,
        5.0,
    );
    add(
        "8 MiB result >= 2 x rmcp",
        "conduit",
        "rmcp",
        "big_mbs",
        true,
        2.0,
    );
    add(
        "close to child exit <= 1.0 x rmcp",
        "conduit",
        "rmcp",
        "close_to_exit",
        false,
        1.0,
    );
    for row in ROWS.iter().filter(|r| r.era) {
        let (name, limit) = if row.higher {
            (format!("modern >= 0.9 x legacy: {}", row.label), 0.9)
        } else {
            (format!("modern <= 1.1 x legacy: {}", row.label), 1.1)
        };
        add(&name, "modern", "conduit", row.metric, row.higher, limit);
    }
    add(
        "server echo, 64 in flight >= 3 x rmcp's",
        "conduit",
        "rmcp",
        "server_rps_64",
        true,
        3.0,
    );
    add(
        "server echo, 64 in flight, modern >= 3 x rmcp's",
        "conduit",
        "rmcp",
        "server_rps_64_modern",
        true,
        3.0,
    );
    add(
        "server echo p50 <= 0.5 x rmcp's",
        "conduit",
        "rmcp",
        "server_p50",
        false,
        0.5,
    );
    add(
        "server echo p50, modern <= 0.5 x rmcp's",
        "conduit",
        "rmcp",
        "server_p50_modern",
        false,
        0.5,
    );
    add(
        "100 clients together >= 2 x rmcp",
        "conduit",
        "rmcp",
        "agg_rps_100",
        true,
        2.0,
    );
    add(
        "idle client's memory <= 1.0 x rmcp",
        "conduit",
        "rmcp",
        "rss_per_conn",
        false,
        1.0,
    );
    out
}

/// A target on the conduit/rmcp ratio per `(name, metric, at_least,
/// limit)`, on `p` (the pinned figures, when there are any); the same ratio
/// on `u` beside it. A metric the run did not measure at all (the rmcp
/// server rows of `--quick`) has no target line.
fn conduit_vs_rmcp(p: &Results, u: &Results, specs: &[(&str, &str, bool, f64)]) -> Vec<Target> {
    let ratio_in = |r: &Results, k: &str| ratio(r.median("conduit", k), r.median("rmcp", k));
    let measured = |k: &str| {
        [p, u]
            .iter()
            .any(|r| r.samples.keys().any(|(_, m)| *m == k))
    };
    specs
        .iter()
        .filter(|(_, k, ..)| measured(k))
        .map(|&(name, k, at_least, limit)| {
            ratio_target(name.into(), ratio_in(p, k), ratio_in(u, k), at_least, limit)
        })
        .collect()
}

/// Issue #21's targets (HTTP: ours against rmcp's server), on `p` (the
/// pinned figures, when there are any); the same ratios on `u` beside them.
fn targets_http(p: &Results, u: &Results) -> Vec<Target> {
    conduit_vs_rmcp(
        p,
        u,
        &[
            ("http echo p50 <= 0.5 x rmcp's", "http_p50", false, 0.5),
            (
                "http echo, 50 clients >= 2 x rmcp's",
                "http_rps_50",
                true,
                2.0,
            ),
            (
                "http echo p50, modern <= 0.5 x rmcp's",
                "http_p50_modern",
                false,
                0.5,
            ),
            (
                "http echo, 50 clients, modern >= 2 x rmcp's",
                "http_rps_50_modern",
                true,
                2.0,
            ),
        ],
    )
}

/// Issue #22's targets (HTTP client: ours against rmcp's, same server),
/// on `p` (the pinned figures, when there are any); the same ratios on `u`
/// beside them.
fn targets_httpc(p: &Results, u: &Results) -> Vec<Target> {
    conduit_vs_rmcp(
        p,
        u,
        &[
            (
                "http client echo p50 < rmcp's client",
                "httpc_p50",
                false,
                1.0,
            ),
            (
                "http client 64 in flight > rmcp's client",
                "httpc_rps_64",
                true,
                1.0,
            ),
            (
                "http client echo p50, modern < rmcp's client",
                "httpc_p50_modern",
                false,
                1.0,
            ),
            (
                "http client 64 in flight, modern > rmcp's client",
                "httpc_rps_64_modern",
                true,
                1.0,
            ),
            (
                "rmcp server: http client p50 < rmcp's client",
                "httpc_p50_rs",
                false,
                1.0,
            ),
            (
                "rmcp server: 64 in flight > rmcp's client",
                "httpc_rps_64_rs",
                true,
                1.0,
            ),
            (
                "rmcp server: p50, modern < rmcp's client",
                "httpc_p50_modern_rs",
                false,
                1.0,
            ),
            (
                "rmcp server: 64 in flight, modern > rmcp's client",
                "httpc_rps_64_modern_rs",
                true,
                1.0,
            ),
        ],
    )
}

fn has_http(r: &Results) -> bool {
    r.samples.keys().any(|(_, m)| m.starts_with("http_"))
}

fn has_httpc(r: &Results) -> bool {
    r.samples.keys().any(|(_, m)| m.starts_with("httpc_"))
}

/// Whether the run had rows other than the HTTP ones (`--only http` or
/// `--only httpc` has none: the stdio targets are not shown then).
fn has_stdio(r: &Results) -> bool {
    r.samples
        .keys()
        .any(|(_, m)| !m.starts_with("http_") && !m.starts_with("httpc_"))
}

fn table(r: &Results) -> String {
    let mut s = String::new();
    s += &format!(
        "| {:<36} | {:>6} | {:>8} | {:>8} | {:>8} | {:>8} | {:>7} | {:>7} | {:>7} |\n",
        "metric", "unit", "floor", "conduit", "modern", "rmcp", "c/floor", "c/rmcp", "m/c"
    );
    s += &format!(
        "|{:-<38}|{:-<8}|{:-<10}|{:-<10}|{:-<10}|{:-<10}|{:-<9}|{:-<9}|{:-<9}|\n",
        "", "", "", "", "", "", "", "", ""
    );
    for row in ROWS {
        let v: Vec<Option<f64>> = PEERS.iter().map(|p| r.median(p, row.metric)).collect();
        if v.iter().all(Option::is_none) {
            continue;
        }
        s += &format!(
            "| {:<36} | {:>6} | {:>8} | {:>8} | {:>8} | {:>8} | {:>7} | {:>7} | {:>7} |\n",
            row.label,
            row.unit,
            fmt_num(v[0]),
            fmt_num(v[1]),
            fmt_num(v[2]),
            fmt_num(v[3]),
            fmt_num(ratio(v[1], v[0])),
            fmt_num(ratio(v[1], v[3])),
            fmt_num(ratio(v[2], v[1])),
        );
    }
    s
}

fn target_lines(ts: &[Target], with_unpinned: bool) -> String {
    let mut s = String::new();
    for t in ts {
        s += &format!(
            "  [{}] {:<58} {:>6} {}",
            if t.met { "met" } else { "MISSED" },
            t.name,
            fmt_num(t.value),
            t.unit
        );
        if with_unpinned {
            s += &format!("   (unpinned {})", fmt_num(t.unpinned));
        }
        s.push('\n');
    }
    let met = ts.iter().filter(|t| t.met).count();
    s += &format!("  {met} of {} met\n", ts.len());
    s
}

/// The whole text report.
pub fn text(free: &Results, fixed: &Results, plan: &Plan, elapsed: Duration, cpu: usize) -> String {
    let mut s = String::new();
    s += &format!(
        "conduit-mcp bench: {} rounds x (unpinned, pinned), medians; {} pings/round, {} in flight for {} ms, {} x 8 MiB, {} clients ({} probe rounds)\n",
        plan.rounds, plan.pings, plan.window, plan.tput.as_millis(), plan.bigs, plan.clients, plan.probe_rounds
    );
    if has_http(free) || has_http(fixed) {
        s += &format!(
            "http: {} sequential calls/round, {} clients for {} ms, {} idle sessions\n",
            plan.http_calls,
            plan.http_clients,
            plan.http_tput.as_millis(),
            plan.http_sessions
        );
    }
    if has_httpc(free) || has_httpc(fixed) {
        s += &format!(
            "http client: {} sequential calls/round, {} in flight for {} ms\n",
            plan.http_calls,
            plan.window,
            plan.http_tput.as_millis()
        );
    }
    s += "columns: conduit = our client, era pinned to legacy; modern = our client, era pinned to modern;\n";
    s += "  server rows: our client (in the row's era) drives our StdioServer (conduit column) and an rmcp\n";
    s += "  stdio server (rmcp column), same echo tool. m/c = modern / conduit (legacy).\n";
    s += "  http rows: one HTTP/1 client in this process (keep-alive connections; 2025-11-25 sessions,\n";
    s += "  or 2026-07-28 stateless in the modern rows) drives our HttpServer (conduit column) and\n";
    s += "  rmcp's StreamableHttpService on axum (rmcp column), same echo tool, each in a child process;\n";
    s += "  memory: the server's RSS growth per idle session. Floor column: axum on hyper answering\n";
    s += "  fixed bytes after a byte scan (no JSON, no sessions): the client, loopback and HTTP alone.\n";
    s += "  http client rows: our Client over HTTP (conduit column, in the row's era) and rmcp's\n";
    s += "  reqwest-based client (rmcp column, same era) call echo on the same HttpServer child (the\n";
    s += "  'rmcp server' rows: on the same rmcp StreamableHttpService child); floor column: the http\n";
    s += "  rows' hyper generator (fixed bytes, one keep-alive connection per call in flight).\n";
    s += "  spawn to ready, era auto: legacy column against a legacy-only child (probe refused, then\n";
    s += "  initialize), modern column against the dual-era child (probe answered).\n";
    s += "  host row: echo through a Host / the same calls straight to the server's client, in turn,\n";
    s += "  beside a server that asks to be listed again after every listing (conduit column).\n";
    if !free.samples.is_empty() {
        s += "\nunpinned:\n\n";
        s += &table(free);
        if has_stdio(free) {
            s += "\ntargets of the stdio client (unpinned):\n";
            s += &target_lines(&targets_unpinned(free), false);
        }
    }
    if !fixed.samples.is_empty() {
        s += &format!(
            "\npinned to CPU {cpu} (the client process, its runtime threads, the spawning thread and every child):\n\n"
        );
        s += &table(fixed);
        if has_stdio(fixed) {
            s += "\ntargets of the stdio client and server (pinned; the same ratio unpinned in brackets):\n";
            s += &target_lines(&targets_pinned(fixed, free), true);
        }
    }
    if has_http(fixed) {
        s += "\ntargets of the HTTP server (pinned; the same ratio unpinned in brackets):\n";
        s += &target_lines(&targets_http(fixed, free), true);
    } else if has_http(free) {
        s += "\ntargets of the HTTP server (unpinned):\n";
        s += &target_lines(&targets_http(free, free), false);
    }
    if has_httpc(fixed) {
        s += "\ntargets of the HTTP client (pinned; the same ratio unpinned in brackets):\n";
        s += &target_lines(&targets_httpc(fixed, free), true);
    } else if has_httpc(free) {
        s += "\ntargets of the HTTP client (unpinned):\n";
        s += &target_lines(&targets_httpc(free, free), false);
    }
    s += &format!(
        "\ntotal time {:.1} s; bench process VmRSS at the end {} MiB\n",
        elapsed.as_secs_f64(),
        vm_rss_kib() / 1024
    );
    s
}

fn value_lines(r: &Results, pinned: bool) -> String {
    let mut s = String::new();
    let mut line = |v: serde_json::Value| {
        s += &v.to_string();
        s.push('\n');
    };
    for row in ROWS {
        for p in PEERS {
            if let Some(v) = r.median(p, row.metric) {
                line(
                    serde_json::json!({"peer": p, "metric": row.metric, "value": v, "unit": row.unit, "pinned": pinned}),
                );
            }
        }
        for (name, a, b) in [
            ("conduit/floor", "conduit", "floor"),
            ("conduit/rmcp", "conduit", "rmcp"),
            ("modern/conduit", "modern", "conduit"),
        ] {
            if let Some(v) = ratio(r.median(a, row.metric), r.median(b, row.metric)) {
                line(
                    serde_json::json!({"peer": name, "metric": row.metric, "value": v, "unit": "ratio", "pinned": pinned}),
                );
            }
        }
    }
    s
}

/// One JSON object per line: every median, every ratio, every target.
pub fn json_lines(free: &Results, fixed: &Results) -> String {
    let mut s = value_lines(free, false);
    s += &value_lines(fixed, true);
    let unpinned = if !has_stdio(free) {
        Vec::new()
    } else {
        targets_unpinned(free)
    };
    let pinned = if !has_stdio(fixed) {
        Vec::new()
    } else {
        targets_pinned(fixed, free)
    };
    for t in unpinned {
        s += &serde_json::json!({"peer": "target", "metric": t.name, "value": t.value, "unit": t.unit, "met": t.met, "pinned": false}).to_string();
        s.push('\n');
    }
    for t in pinned {
        s += &serde_json::json!({"peer": "target", "metric": t.name, "value": t.value, "unit": t.unit, "met": t.met, "pinned": true, "unpinned": t.unpinned}).to_string();
        s.push('\n');
    }
    let (mut http, pinned) = if has_http(fixed) {
        (targets_http(fixed, free), true)
    } else if has_http(free) {
        (targets_http(free, free), false)
    } else {
        (Vec::new(), false)
    };
    let (httpc, c_pinned) = if has_httpc(fixed) {
        (targets_httpc(fixed, free), true)
    } else if has_httpc(free) {
        (targets_httpc(free, free), false)
    } else {
        (Vec::new(), false)
    };
    // Both sets are pinned whenever the run had pinned rounds.
    let pinned = pinned || c_pinned;
    http.extend(httpc);
    for t in http {
        let mut v = serde_json::json!({"peer": "target", "metric": t.name, "value": t.value, "unit": t.unit, "met": t.met, "pinned": pinned});
        if pinned {
            v["unpinned"] = serde_json::json!(t.unpinned);
        }
        s += &v.to_string();
        s.push('\n');
    }
    s
}

/// The peers' names in the charts.
fn peer_label(peer: &str) -> &str {
    match peer {
        "floor" => "floor",
        "conduit" => "conduit-mcp",
        "modern" => "conduit-mcp, 2026-07-28",
        "rmcp" => "rmcp 3.11",
        other => other,
    }
}

/// The figures as SVG charts, one file each: (file name, title, metrics).
const CHARTS: &[(&str, &str, &[&str])] = &[
    (
        "stdio-client.svg",
        "The stdio client",
        &[
            "ping_p50",
            "rps_64",
            "big_mbs",
            "close_to_exit",
            "agg_rps_100",
            "rss_per_conn",
        ],
    ),
    (
        "stdio-server.svg",
        "The stdio server, driven by this crate's client",
        &[
            "server_rps_64",
            "server_rps_64_modern",
            "server_p50",
            "server_p50_modern",
        ],
    ),
    (
        "http-server.svg",
        "The Streamable HTTP server",
        &[
            "http_p50",
            "http_rps_50",
            "http_p50_modern",
            "http_rps_50_modern",
            "http_session_kib",
        ],
    ),
    (
        "http-client.svg",
        "The Streamable HTTP client",
        &[
            "httpc_p50",
            "httpc_rps_64",
            "httpc_p50_modern",
            "httpc_rps_64_modern",
        ],
    ),
];

/// The charts of a run: pinned figures where the run has them, else the
/// unpinned ones. Charts with no figure are left out.
pub fn charts(free: &Results, fixed: &Results, cpu: usize) -> Vec<(&'static str, String)> {
    let (r, how) = if fixed.samples.is_empty() {
        (free, "unpinned".to_owned())
    } else {
        (fixed, format!("pinned to CPU {cpu}"))
    };
    let note = format!("cargo bench --bench bench: medians, {how}");
    let mut out = Vec::new();
    for (file, title, metrics) in CHARTS {
        let panels: Vec<super::svg::Panel> = metrics
            .iter()
            .filter_map(|m| ROWS.iter().find(|row| row.metric == *m))
            .map(|row| super::svg::Panel {
                title: row.label.to_owned(),
                unit: row.unit.to_owned(),
                higher_is_better: row.higher,
                bars: PEERS
                    .iter()
                    .filter_map(|p| {
                        r.median(p, row.metric)
                            .map(|v| (peer_label(p).to_owned(), v))
                    })
                    .collect(),
            })
            .collect();
        if panels.iter().all(|p| p.bars.is_empty()) {
            continue;
        }
        out.push((*file, super::svg::chart(title, &note, &panels)));
    }
    out
}
