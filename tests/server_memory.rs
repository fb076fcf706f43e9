//! The server's memory is bounded in bytes, not messages: a hostile client
//! sending 8 MiB `[0,0,0,...]` requests (about 128 MiB each once parsed)
//! as fast as it can, to a method whose handler never returns, cannot make
//! the server hold more than the documented bound; 1 MiB ones (16 MiB
//! each) fill the 64 MiB budget and no more.
//!
//! The server is the test re-run as a child, which plays the server's role
//! instead (`common::spawn_role`): it serves its own stdio with
//! the default configuration, so its peak RSS (`VmHWM`) is its own. The run
//! ends when the child holds every request (the unbounded case) or logs
//! (debug level, on stderr) that the byte budget paused reading, with the
//! requests it can afford started: from then on it reads nothing more.
//!
//! The same way, a `Router` flooded with `resources/subscribe` of distinct
//! 1 KiB URIs keeps at most its per-session cap of them.

#![cfg(target_os = "linux")]

mod common;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use conduit_mcp::jsonrpc::Request;
use conduit_mcp::protocol::{Implementation, ReadResourceResult, Resource};
use conduit_mcp::server::{
    Handler, HandlerError, RequestContext, Router, ServerConfig, StdioServer,
    DEFAULT_MAX_INBOUND_BYTES,
};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Hostile requests sent (16 × 128 MiB parsed = 2 GiB if all were held).
const REQUESTS: usize = 16;
/// The longest line the default configuration accepts.
const LINE_BYTES: usize = 8 * 1024 * 1024;
/// What the server logs when the byte budget pauses reading.
const PAUSED: &str = "inbound byte budget full";
const MIB: u64 = 1024 * 1024;

/// `hold` never returns until cancelled; it announces that it started.
struct Hold;

impl Handler for Hold {
    async fn handle_request(
        &self,
        req: Request,
        ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        let _ = ctx.notify("test/started", Some(json!({ "id": req.id })));
        ctx.cancelled().await;
        Err(HandlerError::Internal("cancelled".into()))
    }
}

/// Plays this process's role when it is a test's child; false when it is
/// the test.
async fn play_role() -> bool {
    match common::role().as_deref() {
        Some("memory") => memory_server().await,
        Some("router") => router_server().await,
        _ => return false,
    }
    true
}

/// The memory role: serves its stdio with the default configuration.
async fn memory_server() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter("conduit_mcp::server=debug")
        .try_init();
    let config = ServerConfig::new(Implementation::new("memory", "0"));
    let end = StdioServer::new(config).serve(Hold).await;
    eprintln!("child: serve ended: {end:?}");
}

fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("child status");
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in the child's status"))
}

/// What the test waits for.
enum Seen {
    Started,
    Paused,
    Line(Value),
}

/// What one hostile run saw.
struct Run {
    started: usize,
    paused: bool,
    /// Peak RSS growth of the server process, bytes.
    growth: u64,
    /// Bytes one request's params parse to.
    parsed: u64,
    log: Vec<String>,
}

/// Runs a server child with the default configuration and floods it with
/// `requests` lines of `line_bytes` whose params are `[0,0,...,0]`, until
/// it either holds every request or says it paused reading with
/// `expect_held` requests started; then kills it and reports.
async fn flood(test: &str, requests: usize, line_bytes: usize, expect_held: usize) -> Run {
    let mut child = common::spawn_role(test, "memory", Stdio::piped());
    let pid = child.id().expect("child pid");
    let mut stdin = child.stdin.take().unwrap();
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let stdout = child.stdout.take().unwrap();
    let tx = seen_tx.clone();
    let out_task = tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            // libtest's "running 1 test" may precede the protocol lines.
            let Some(at) = l.find("{\"jsonrpc\"") else {
                continue;
            };
            let Ok(v) = serde_json::from_str::<Value>(&l[at..]) else {
                continue;
            };
            let started = v["method"] == "test/started";
            let _ = tx.send(if started {
                Seen::Started
            } else {
                Seen::Line(v)
            });
        }
    });
    let stderr = child.stderr.take().unwrap();
    let tx = seen_tx;
    let err_task = tokio::spawn(async move {
        let mut log = Vec::new();
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            if l.contains(PAUSED) {
                let _ = tx.send(Seen::Paused);
            }
            log.push(l);
        }
        log
    });

    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"hostile\",\"version\":\"0\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    loop {
        match tokio::time::timeout(Duration::from_secs(30), seen.recv()).await {
            Ok(Some(Seen::Line(v))) if v["id"] == "init" => break,
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => panic!("no answer to initialize"),
        }
    }
    let base_kib = status_kib(pid, "VmHWM:");

    // The flood, as fast as the pipe takes it, from one shared buffer.
    let head =
        |i: usize| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"hold\",\"params\":[");
    let body_len = line_bytes - head(requests).len() - 2;
    let mut body = "0,".repeat(body_len / 2).into_bytes();
    body.pop(); // "0,0,...,0"
    let elements = body.len().div_ceil(2);
    let body = Arc::new(body);
    let writer = tokio::spawn(async move {
        for i in 0..requests {
            stdin.write_all(head(i).as_bytes()).await?;
            stdin.write_all(&body).await?;
            stdin.write_all(b"]}\n").await?;
        }
        Ok::<_, std::io::Error>(stdin) // keep our end open
    });

    // Until the server holds every request, or says it stopped reading
    // with the requests it can afford started.
    let (mut started, mut paused) = (0, false);
    while !(started == requests || (paused && started >= expect_held)) {
        match tokio::time::timeout(Duration::from_secs(120), seen.recv()).await {
            Ok(Some(Seen::Started)) => started += 1,
            Ok(Some(Seen::Paused)) => paused = true,
            Ok(Some(Seen::Line(v))) => panic!("unexpected answer: {v}"),
            Ok(None) | Err(_) => {
                panic!("child ended or hung: {started} started, paused {paused}")
            }
        }
    }
    let peak_kib = status_kib(pid, "VmHWM:");
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    assert!(!status.success(), "the child was killed: {status}");
    let _ = writer.await; // fails with EPIPE once the child is gone
    let _ = out_task.await;
    let log = err_task.await.unwrap();
    Run {
        started,
        paused,
        growth: peak_kib.saturating_sub(base_kib) * 1024,
        // A Vec of 32-byte Values whose capacity is a power of two.
        parsed: (elements.next_power_of_two() * 32) as u64,
        log,
    }
}

/// The documented bound for messages of `parsed` bytes: the budget, or one
/// message alone when it is larger, plus the 1/8 reserve for control
/// messages; plus two lines held unparsed while reading is paused (the
/// request waiting for room and the line behind it), and an allowance for
/// the allocator and the runtime.
fn bound(parsed: u64, line_bytes: usize) -> u64 {
    let budget = DEFAULT_MAX_INBOUND_BYTES as u64;
    budget.max(parsed) + budget / 8 + 2 * line_bytes as u64 + ALLOWANCE
}

const ALLOWANCE: u64 = 24 * MIB;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_8_mib_array_requests_stay_within_the_byte_bound() {
    if play_role().await {
        return;
    }
    // Each parses to 128 MiB, more than the 64 MiB budget: one at a time.
    let run = flood(
        "hostile_8_mib_array_requests_stay_within_the_byte_bound",
        REQUESTS,
        LINE_BYTES,
        1,
    )
    .await;
    let bound = bound(run.parsed, LINE_BYTES);
    println!(
        "hostile client: {REQUESTS} requests of 8 MiB `[0,...]` ({} MiB each parsed): \
         {} handlers started, reading paused: {}; \
         server peak RSS growth {} MiB (bound {} MiB)",
        run.parsed / MIB,
        run.started,
        run.paused,
        run.growth / MIB,
        bound / MIB
    );
    assert!(
        run.growth <= bound,
        "peak RSS growth {} MiB over the bound {} MiB ({} started)\n{}",
        run.growth / MIB,
        bound / MIB,
        run.started,
        run.log.join("\n")
    );
    assert!(run.paused, "the server never paused reading");
    assert_eq!(run.started, 1, "only one such request is held at a time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_1_mib_array_requests_fill_the_budget_and_no_more() {
    if play_role().await {
        return;
    }
    // Each parses to 16 MiB: three fit in the 64 MiB budget, not four.
    const LINE: usize = 1024 * 1024;
    let run = flood(
        "hostile_1_mib_array_requests_fill_the_budget_and_no_more",
        REQUESTS,
        LINE,
        3,
    )
    .await;
    let bound = bound(run.parsed, LINE);
    println!(
        "hostile client: {REQUESTS} requests of 1 MiB `[0,...]` ({} MiB each parsed): \
         {} handlers started, reading paused: {}; \
         server peak RSS growth {} MiB (bound {} MiB)",
        run.parsed / MIB,
        run.started,
        run.paused,
        run.growth / MIB,
        bound / MIB
    );
    assert!(
        run.growth <= bound,
        "peak RSS growth {} MiB over the bound {} MiB ({} started)\n{}",
        run.growth / MIB,
        bound / MIB,
        run.started,
        run.log.join("\n")
    );
    assert!(run.paused, "the server never paused reading");
    assert_eq!(run.started, 3, "as many as fit in the budget");
}

// ------------------------------------------- legacy subscriptions (Router)

/// `resources/subscribe` requests sent, each for a distinct 1 KiB URI.
const SUBSCRIBES: usize = 100_000;
const URI_BYTES: usize = 1024;

/// The router role, for the subscription flood: a `Router` with one
/// resource, served on its stdio with a 4 MiB inbound budget.
async fn router_server() {
    let config = ServerConfig::new(Implementation::new("router", "0")).max_inbound_bytes(4 << 20);
    let router = Router::new().resource(Resource::new("demo://r", "r"), |_ctx| async {
        Ok(ReadResourceResult::default())
    });
    let end = StdioServer::new(config).serve(router).await;
    eprintln!("child: serve ended: {end:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_subscriptions_is_capped_per_session() {
    if play_role().await {
        return;
    }
    let mut child = common::spawn_role(
        "a_flood_of_subscriptions_is_capped_per_session",
        "router",
        Stdio::inherit(),
    );
    let pid = child.id().expect("child pid");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The next protocol line (libtest's "running 1 test" may come first).
    async fn next(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> Value {
        loop {
            let l = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
                .await
                .expect("the child hung")
                .expect("read")
                .expect("the child's output ended");
            if let Some(at) = l.find("{\"jsonrpc\"") {
                return serde_json::from_str(&l[at..]).expect("JSON");
            }
        }
    }
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"hostile\",\"version\":\"0\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    assert_eq!(next(&mut lines).await["id"], "init");
    let base_kib = status_kib(pid, "VmHWM:");

    let writer = tokio::spawn(async move {
        let pad = "x".repeat(URI_BYTES - 24);
        let mut batch = Vec::with_capacity(1 << 20);
        for i in 0..SUBSCRIBES {
            batch.extend_from_slice(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"resources/subscribe\",\"params\":{{\"uri\":\"demo://r/{i:010}/{pad}\"}}}}\n")
                    .as_bytes(),
            );
            if batch.len() >= 1 << 20 {
                stdin.write_all(&batch).await?;
                batch.clear();
            }
        }
        stdin.write_all(&batch).await?;
        Ok::<_, std::io::Error>(stdin) // keep our end open
    });
    let (mut accepted, mut refused, mut first_refusal) = (0usize, 0usize, None);
    for _ in 0..SUBSCRIBES {
        let m = next(&mut lines).await;
        if m.get("result").is_some() {
            accepted += 1;
        } else {
            refused += 1;
            first_refusal.get_or_insert(m);
        }
    }
    let peak_kib = status_kib(pid, "VmHWM:");
    let rss_kib = status_kib(pid, "VmRSS:");
    child.start_kill().unwrap();
    let _ = child.wait().await;
    let _ = writer.await;
    let growth = peak_kib.saturating_sub(base_kib) * 1024;
    println!(
        "{SUBSCRIBES} resources/subscribe of {URI_BYTES}-byte URIs, 4 MiB inbound budget: \
         {accepted} accepted, {refused} refused; server peak RSS growth {} MiB \
         (RSS at the end {} MiB); first refusal: {first_refusal:?}",
        growth / MIB,
        rss_kib / 1024
    );
    assert!(
        growth <= 32 * MIB,
        "the subscriptions grew the server by {} MiB",
        growth / MIB
    );
    let refusal = first_refusal.expect("some subscriptions refused");
    let message = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("max_subscription_bytes"), "{refusal}");
}
