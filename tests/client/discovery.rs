//! Era discovery edge cases: late answers, cold starts, version checks, and
//! calls made before the server is ready.

use crate::common;

use std::time::{Duration, Instant};

use conduit_mcp::{Client, Era, EraPreference, Error, RequestOptions, Status};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_discover_result_is_ignored_and_legacy_stands() {
    let dir = common::tempdir("late");
    let log = dir.join("in.log");
    let mut cfg = common::config(&[
        "--discover-delay-ms",
        "400",
        "--log-file",
        log.to_str().unwrap(),
    ]);
    cfg = cfg.probe_timeout(Duration::from_millis(100));
    let client = Client::start(cfg).await.unwrap();
    let s = client.ready(Duration::from_secs(10)).await.unwrap();
    assert_eq!(s.era, Era::Stateful);
    // Outlive the late answer; every call still gets its own response.
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(600) {
        let r = client.request("echo", Some(json!({"n": 1}))).await.unwrap();
        assert_eq!(r["n"], 1);
    }
    assert_eq!(client.session().unwrap().era, Era::Stateful);
    assert_eq!(client.session().unwrap().pid, s.pid, "no restart");
    crate::common::shutdown(client.stop().wait()).await;
    let sent = std::fs::read_to_string(&log).unwrap();
    assert!(
        sent.contains("notifications/cancelled"),
        "probe not cancelled: {sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_cold_start_does_not_become_a_restart_loop() {
    let mut cfg = common::config(&["--start-delay-ms", "700"]);
    cfg = cfg.probe_timeout(Duration::from_millis(100));
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let t = Instant::now();
    let client = Client::start_with(cfg, conduit_mcp::StartOptions::new().events(tx))
        .await
        .unwrap();
    // Called at once: waits for readiness instead of failing.
    let r = client
        .request("echo", Some(json!({"early": true})))
        .await
        .unwrap();
    assert_eq!(r["early"], true);
    assert!(t.elapsed() >= Duration::from_millis(700));
    crate::common::shutdown(client.stop().wait()).await;
    let mut spawns = 0;
    while let Ok(e) = events.try_recv() {
        if matches!(e, conduit_mcp::LifecycleEvent::Spawned { .. }) {
            spawns += 1;
        }
    }
    assert_eq!(spawns, 1, "the slow start caused a restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_eras_and_a_legacy_only_server() {
    // Legacy-only server, auto: falls back on its -32601 at once, not
    // after the probe timeout (a minute, past the wait for readiness).
    let mut cfg = common::config(&["--era", "legacy"]);
    cfg = cfg.probe_timeout(Duration::from_secs(60));
    let client = Client::start(cfg).await.unwrap();
    let s = client
        .ready(Duration::from_secs(10))
        .await
        .expect("ready before the probe timeout");
    assert_eq!(s.era, Era::Stateful);
    crate::common::shutdown(client.stop().wait()).await;
    // A server that never answers discover: legacy after probe_timeout.
    let mut cfg = common::config(&["--discover-silent"]);
    cfg = cfg.probe_timeout(Duration::from_millis(150));
    let client = Client::start(cfg).await.unwrap();
    assert_eq!(
        client.ready(Duration::from_secs(10)).await.unwrap().era,
        Era::Stateful
    );
    crate::common::shutdown(client.stop().wait()).await;
    // Pinned modern against a legacy-only server: a clear final error.
    let client = Client::start(common::config(&["--era", "legacy"]).era(EraPreference::Stateless))
        .await
        .unwrap();
    let e = client.ready(Duration::from_secs(10)).await.unwrap_err();
    assert!(e.to_string().contains("pinned to modern"), "{e}");
    crate::common::shutdown(client.stop().wait()).await;
    // Modern session: every request carries the _meta keys.
    let dir = common::tempdir("meta");
    let log = dir.join("in.log");
    let client = Client::start(common::config(&["--log-file", log.to_str().unwrap()]))
        .await
        .unwrap();
    client.request("echo", Some(json!({"x": 1}))).await.unwrap();
    crate::common::shutdown(client.stop().wait()).await;
    let echo = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .find(|l| l.contains("\"echo\""))
        .unwrap()
        .to_owned();
    let v: serde_json::Value = serde_json::from_str(&echo).unwrap();
    let meta = &v["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "conduit-mcp"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_legacy_version_is_a_clear_final_error() {
    let client = Client::start(common::config(&[
        "--era",
        "legacy",
        "--legacy-version",
        "1999-01-01",
    ]))
    .await
    .unwrap();
    let e = client.request("echo", None).await.unwrap_err();
    assert!(matches!(e, Error::GaveUp { .. }), "{e}");
    assert!(e.to_string().contains("1999-01-01"), "{e}");
    assert!(matches!(client.status(), Status::GaveUp(_)));
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_can_extend_a_timeout_up_to_a_maximum() {
    let client = Client::start(common::config(&[])).await.unwrap();
    // 600 ms of work, 150 ms timeout, progress every ~10 ms: succeeds.
    let r = client
        .request_with(
            "sleep",
            Some(json!({"ms": 600})),
            RequestOptions::new()
                .timeout(Duration::from_millis(150))
                .reset_timeout_on_progress(Duration::from_secs(10)),
        )
        .await
        .unwrap();
    assert_eq!(r["slept"], 600);
    // Same, but the maximum total is 300 ms: a minute's sleep, with its
    // progress, times out.
    let e = common::within(
        Duration::from_secs(20),
        "the timeout at the maximum",
        client.request_with(
            "sleep",
            Some(json!({"ms": 60_000})),
            RequestOptions::new()
                .timeout(Duration::from_millis(150))
                .reset_timeout_on_progress(Duration::from_millis(300)),
        ),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_modern_only_server_is_found_modern_after_the_probe_timeout() {
    // The probe times out while the server starts; the server then answers
    // the queued server/discover (before refusing initialize): modern wins.
    let mut cfg = common::config(&["--era", "modern", "--start-delay-ms", "500"]);
    cfg = cfg.probe_timeout(Duration::from_millis(100));
    let client = Client::start(cfg).await.unwrap();
    let s = client.ready(Duration::from_secs(10)).await.unwrap();
    assert_eq!(s.era, Era::Stateless);
    let r = client.request("echo", Some(json!({"m": 1}))).await.unwrap();
    assert_eq!(r["m"], 1);
    assert_eq!(client.session().unwrap().pid, s.pid, "no restart");
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_sent_just_before_the_answer_is_delivered() {
    let client = Client::start(common::config(&[])).await.unwrap();
    for _ in 0..10 {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let r = client
            .request_with(
                "sleep",
                Some(json!({"ms": 50})),
                RequestOptions::new().progress(tx),
            )
            .await
            .unwrap();
        let mut last = None;
        while let Ok(p) = rx.try_recv() {
            last = Some((p.progress, p.total));
        }
        let (progress, total) = last.expect("progress seen");
        assert_eq!(Some(progress), total, "last step missing; result {r}");
    }
    crate::common::shutdown(client.stop().wait()).await;
}
