//! Limits of the client: the write queue and server-to-client requests.
//! A limit must refuse the one thing that exceeds it, never tear down a
//! healthy connection.
//!
//! Regression tests for defects found from outside (DESIGN.md section 6).
//! Each prints the figure it measures (`--nocapture`).

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use conduit_mcp::LifecycleEvent;
use conduit_mcp::{Client, EraPreference, Error, InboundRequest, RequestOptions};
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

use common::figure;

const MIB: usize = 1024 * 1024;

/// Events that mean the link was torn down, or a server other than
/// `first` started.
fn teardowns(rx: &mut mpsc::UnboundedReceiver<LifecycleEvent>, first: u32) -> Vec<LifecycleEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        let teardown = match &e {
            LifecycleEvent::Closed { .. } | LifecycleEvent::Restarting { .. } => true,
            LifecycleEvent::Spawned { pid, .. } => *pid != first,
            _ => false,
        };
        if teardown {
            out.push(e);
        }
    }
    out
}

fn lines_containing(log: &std::path::Path, needle: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(needle))
        .count()
}

// ----------------------------- item 5: the write-queue limit
//
// Before the fix a request whose line alone exceeded max_write_queue_bytes
// closed the link (write queue full): all 21 calls in flight failed and the
// server was restarted. And because senders never waited, a burst of
// healthy calls larger than the limit did the same: measured before the
// fix, 1,987-3,968 of 4,000 calls of 8 KiB and 2,194-2,995 of 3,000 of
// 16 KiB failed.

/// (a) One request larger than the limit fails alone, with both sizes; the
/// 20 calls in flight beside it succeed on the same server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_over_the_write_queue_limit_fails_alone() {
    let dir = common::tempdir("too-large");
    let log = dir.join("in.log");
    let cfg = common::config(&["--log-file", log.to_str().unwrap()]);
    let limit = cfg.get_max_write_queue_bytes();
    assert_eq!(limit, 16 * MIB, "the default limit");
    let (client, mut events) = common::start_recording_with(cfg, None).await;
    let pid = common::ready_pid(&client).await;
    let calls: Vec<_> = (0..20)
        .map(|i| {
            let c = client.clone();
            tokio::spawn(async move {
                c.request("sleep", Some(json!({ "ms": 1500, "i": i })))
                    .await
            })
        })
        .collect();
    common::eventually(Duration::from_secs(10), || {
        lines_containing(&log, "\"sleep\"") == 20
    })
    .await
    .expect("20 calls in flight");
    let big = json!({ "pad": "x".repeat(17 * MIB) });
    let t = Instant::now();
    let refused = client.request("echo", Some(big)).await;
    let refused_in = t.elapsed();
    let mut ok = 0;
    let mut failed = Vec::new();
    for c in calls {
        match c.await.unwrap() {
            Ok(v) => {
                assert_eq!(v["slept"], 1500);
                ok += 1;
            }
            Err(e) => failed.push(e.to_string()),
        }
    }
    let after = client.request("echo", Some(json!({"after": 1}))).await;
    let torn = teardowns(&mut events, pid);
    let mut kinds = failed.clone();
    kinds.sort();
    kinds.dedup();
    figure(
        "one 17 MiB request while 20 calls are in flight (16 MiB limit)",
        format!(
            "the big one: {refused:?} in {refused_in:.1?}; {ok}/20 others succeeded, {} failed \
             {kinds:?}; link events {torn:?}",
            failed.len()
        ),
    );
    match refused {
        Err(Error::RequestTooLarge {
            method,
            bytes,
            limit: l,
        }) => {
            assert_eq!(method, "echo");
            assert!(bytes > 17 * MIB, "{bytes}");
            assert_eq!(l, limit);
        }
        other => panic!("expected RequestTooLarge, got {other:?}"),
    }
    assert_eq!(ok, 20, "{failed:?}");
    assert!(torn.is_empty(), "{torn:?}");
    assert_eq!(after.unwrap()["after"], 1);
    assert_eq!(client.pid(), Some(pid));
    crate::common::shutdown(client.stop().wait()).await;
}

/// Sends `n` concurrent `echo` calls of `bytes` each; returns (succeeded,
/// failure messages, time).
async fn burst(client: &Client, n: usize, bytes: usize) -> (usize, Vec<String>, Duration) {
    let pad = "b".repeat(bytes);
    let t = Instant::now();
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let c = client.clone();
            let p = json!({ "i": i, "pad": pad });
            tokio::spawn(async move { c.request("echo", Some(p)).await.map(|v| v["i"] == i) })
        })
        .collect();
    let mut ok = 0;
    let mut failed = Vec::new();
    for c in calls {
        match c.await.unwrap() {
            Ok(true) => ok += 1,
            Ok(false) => failed.push("wrong answer".to_owned()),
            Err(e) => failed.push(e.to_string()),
        }
    }
    (ok, failed, t.elapsed())
}

/// (b) Bursts of healthy calls larger than the limit all succeed: callers
/// wait for room instead of closing the link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursts_of_healthy_calls_beyond_the_write_queue_limit_all_succeed() {
    let (client, mut events) = common::start_recording(common::config(&[])).await;
    let pid = common::ready_pid(&client).await;
    let mut results = Vec::new();
    for (n, kib) in [(4_000, 8), (3_000, 16)] {
        let (ok, failed, took) = burst(&client, n, kib * 1024).await;
        let mut kinds: Vec<String> = failed.clone();
        kinds.sort();
        kinds.dedup();
        figure(
            &format!("{n} concurrent calls of {kib} KiB (16 MiB write queue)"),
            format!(
                "{ok}/{n} succeeded in {took:.2?}; {} failed {kinds:?}",
                failed.len()
            ),
        );
        results.push((n, ok, failed.len()));
    }
    let torn = teardowns(&mut events, pid);
    let now = client.pid();
    crate::common::shutdown(client.stop().wait()).await;
    for (n, ok, failed) in results {
        assert_eq!((ok, failed), (n, 0), "{n} calls");
    }
    assert!(torn.is_empty(), "the link was torn down: {torn:?}");
    assert_eq!(now, Some(pid));
}

// ------------------------ item 9: server-to-client requests
//
// Before the fix every server-to-client request got its own handler task,
// without bound (40 handler calls for 40 requests, none refused), and a
// request reusing the id of one still in flight was handled as well (2
// handler calls), its abort handle overwriting the first one's.

/// A handler that counts its calls and answers once `gate` opens.
fn gated_handler(
    calls: Arc<AtomicUsize>,
    gate: watch::Receiver<bool>,
) -> Arc<dyn conduit_mcp::ClientHandler> {
    Arc::new(move |req: InboundRequest| {
        let calls = calls.clone();
        let mut gate = gate.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            let _ = gate.wait_for(|open| *open).await;
            Ok(json!({ "roots": [], "method": req.method }))
        }
    })
}

fn answers(v: &Value) -> Vec<Value> {
    v["answers"].as_array().expect("answers").clone()
}

fn error_code(a: &Value) -> Option<i64> {
    a.get("error").and_then(|e| e["code"].as_i64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_requests_past_max_inbound_requests_are_refused_at_once() {
    let dir = common::tempdir("inbound-limit");
    let log = dir.join("in.log");
    let cfg = common::config(&["--log-file", log.to_str().unwrap()]).era(EraPreference::Stateful);
    let limit = cfg.get_max_inbound_requests();
    assert_eq!(limit, 16, "the default limit");
    let calls = Arc::new(AtomicUsize::new(0));
    let (gate, gate_rx) = watch::channel(false);
    let (client, _) =
        common::start_recording_with(cfg, Some(gated_handler(calls.clone(), gate_rx))).await;
    client.ready(Duration::from_secs(10)).await.unwrap();
    let c = client.clone();
    let ask = tokio::spawn(async move {
        c.request_with(
            "fixture/ask_many",
            Some(json!({ "count": 40, "method": "roots/list" })),
            RequestOptions::new().timeout(Duration::from_secs(30)),
        )
        .await
    });
    // The refusals reach the server while the admitted requests still wait
    // at the gate.
    let refused_at_once = common::eventually(Duration::from_secs(10), || {
        lines_containing(&log, "-32000") == 40 - limit && calls.load(Ordering::SeqCst) == limit
    })
    .await;
    let admitted = calls.load(Ordering::SeqCst);
    let refusals = lines_containing(&log, "-32000");
    gate.send(true).unwrap();
    let all = answers(&ask.await.unwrap().unwrap());
    let results = all.iter().filter(|a| a.get("result").is_some()).count();
    let busy = all.iter().filter(|a| error_code(a) == Some(-32000)).count();
    let timeouts = all.iter().filter(|a| a.get("timeout").is_some()).count();
    let handled = calls.load(Ordering::SeqCst);
    crate::common::shutdown(client.stop().wait()).await;
    figure(
        "40 server-to-client requests at once, handler gated",
        format!(
            "{admitted} reached the handler, {refusals} refused while the gate was closed; \
             after it opened: {results} results, {busy} x -32000, {timeouts} timeouts; \
             {handled} handler calls in all"
        ),
    );
    assert!(
        refused_at_once.is_some(),
        "expected {limit} admitted and {} refused at once; saw {admitted} and {refusals}",
        40 - limit
    );
    assert_eq!((results, busy, timeouts), (limit, 40 - limit, 0), "{all:?}");
    assert_eq!(handled, limit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_request_reusing_an_id_in_flight_is_refused_and_the_first_is_unaffected() {
    let dir = common::tempdir("inbound-dup");
    let log = dir.join("in.log");
    let cfg = common::config(&["--log-file", log.to_str().unwrap()]).era(EraPreference::Stateful);
    let calls = Arc::new(AtomicUsize::new(0));
    let (gate, gate_rx) = watch::channel(false);
    let (client, _) =
        common::start_recording_with(cfg, Some(gated_handler(calls.clone(), gate_rx))).await;
    client.ready(Duration::from_secs(10)).await.unwrap();
    let c = client.clone();
    let ask = tokio::spawn(async move {
        c.request_with(
            "fixture/ask_many",
            Some(json!({ "count": 2, "same_id": true, "method": "roots/list" })),
            RequestOptions::new().timeout(Duration::from_secs(30)),
        )
        .await
    });
    let refused_at_once = common::eventually(Duration::from_secs(10), || {
        lines_containing(&log, "-32600") == 1 && calls.load(Ordering::SeqCst) == 1
    })
    .await;
    let admitted = calls.load(Ordering::SeqCst);
    gate.send(true).unwrap();
    // The fixture matches answers to requests in arrival order: the
    // refusal, sent first, fills the first slot.
    let all = answers(&ask.await.unwrap().unwrap());
    let results = all.iter().filter(|a| a.get("result").is_some()).count();
    let dup = all.iter().filter(|a| error_code(a) == Some(-32600)).count();
    let handled = calls.load(Ordering::SeqCst);
    crate::common::shutdown(client.stop().wait()).await;
    figure(
        "two server-to-client requests with one id, handler gated",
        format!(
            "{admitted} reached the handler before the gate opened; answers {all:?}; \
             {handled} handler calls in all"
        ),
    );
    assert!(
        refused_at_once.is_some(),
        "the duplicate was not refused at once ({admitted} handler calls)"
    );
    assert_eq!((results, dup), (1, 1), "{all:?}");
    assert_eq!(handled, 1);
}
