//! A server that floods the client with notifications. One test in this
//! file: it measures this process's memory (VmRSS / VmHWM), which another
//! test running beside it would disturb.
//!
//! Regression test for a defect found from outside (DESIGN.md section 6):
//! before the fix every notification was queued without limit (in the
//! Connection's mailbox with nobody subscribed, in the subscriber's channel
//! otherwise). Measured before the fix (2 vCPUs): a subscriber that did not
//! read grew RSS by 189 MiB in 3 s and 657 MiB in 10 s (debug build), by
//! 1 GiB in 3.5 s (release); with nobody subscribed, RSS grew by 42 MiB in
//! 3 s in a debug build (under this test's 64 MiB bound: the Connection
//! keeps up with a debug reader) but by 338 MiB in a release build, where
//! `stop().wait()` then took 1.7 s.

mod common;

use std::time::{Duration, Instant};

use conduit_mcp::{Client, RequestOptions};
use serde_json::json;

use common::figure;

const MIB: u64 = 1024 * 1024;

/// Peak RSS since the last reset, in MiB.
fn hwm_mib() -> f64 {
    common::status_kib("VmHWM") as f64 / 1024.0
}

/// Resets VmHWM to the current RSS (Linux: "5" to clear_refs).
fn reset_hwm() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM");
}

/// Calls `echo` back to back for `period`; every call must be answered.
/// Returns (calls answered, slowest).
async fn keep_calling(client: &Client, period: Duration) -> (u32, Duration) {
    let t = Instant::now();
    let (mut n, mut slowest) = (0u32, Duration::ZERO);
    while t.elapsed() < period {
        let t0 = Instant::now();
        let r = client
            .request_with(
                "echo",
                Some(json!({ "n": n })),
                RequestOptions::new().timeout(Duration::from_secs(5)),
            )
            .await
            .expect("answered during the flood");
        assert_eq!(r["n"], n);
        slowest = slowest.max(t0.elapsed());
        n += 1;
    }
    (n, slowest)
}

/// Stops `client`; returns how long `stop().wait()` took.
async fn stop_timed(client: Client) -> Duration {
    let t = Instant::now();
    // A stop the flood held up would not end: 60 s only catches that.
    let reports = tokio::time::timeout(Duration::from_secs(60), client.stop().wait())
        .await
        .expect("stop().wait() returned");
    for r in &reports {
        assert!(!common::alive(r.pid), "{r:?}");
    }
    t.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_flood_is_bounded_in_memory_and_does_not_delay_stop() {
    let flood = ["--flood-notifications", "200"];

    // 1. Nobody subscribed: the notifications are dropped as they come.
    reset_hwm();
    let base = common::rss_mib();
    let client = Client::start(common::config(&flood)).await.unwrap();
    client.ready(Duration::from_secs(10)).await.unwrap();
    let (answered, slowest) = keep_calling(&client, Duration::from_secs(3)).await;
    let growth = hwm_mib() - base;
    let stop_took = stop_timed(client).await;
    figure(
        "notification flood (200-byte data), nobody subscribed, 3 s",
        format!(
            "peak RSS growth {growth:.1} MiB; {answered} calls answered during the flood \
             (slowest {slowest:.1?}); stop().wait() took {stop_took:.2?}"
        ),
    );
    assert!(growth < 64.0, "RSS grew by {growth:.1} MiB");

    // 2. A subscriber that does not read for 3 s: its queue is bounded in
    // bytes, the rest is dropped and counted.
    let mut cfg = common::config(&flood);
    cfg = cfg.max_queued_notification_bytes(8 * MIB as usize);
    let limit_mib = (cfg.get_max_queued_notification_bytes() as u64 / MIB) as f64;
    let client = Client::start(cfg).await.unwrap();
    let mut sub = client.notifications();
    client.ready(Duration::from_secs(10)).await.unwrap();
    reset_hwm();
    let base = common::rss_mib();
    let (answered, slowest) = keep_calling(&client, Duration::from_secs(3)).await;
    let growth = hwm_mib() - base;
    let dropped = sub.dropped();
    // Reading again: what was queued, then the flood as it goes on.
    let first = tokio::time::timeout(Duration::from_secs(5), sub.recv()).await;
    let mut read = 0u64;
    while sub.try_recv().is_some() {
        read += 1;
    }
    let later = tokio::time::timeout(Duration::from_secs(5), sub.recv()).await;
    let stop_took = stop_timed(client).await;
    figure(
        "notification flood, a subscriber that does not read for 3 s (8 MiB queue)",
        format!(
            "peak RSS growth {growth:.1} MiB; {dropped} notifications dropped; then read {} queued \
             at once and the flood went on: {}; {answered} calls answered (slowest {slowest:.1?}); \
             stop().wait() took {stop_took:.2?}",
            read + 1,
            matches!(later, Ok(Some(_)))
        ),
    );
    assert!(
        growth < limit_mib + 64.0,
        "RSS grew by {growth:.1} MiB (queue limit {limit_mib} MiB)"
    );
    assert!(dropped > 0, "nothing was dropped");
    let first = first
        .expect("a notification to read")
        .expect("the stream is open");
    assert_eq!(first.method, "notifications/message");
    assert!(read > 0);
    assert!(matches!(later, Ok(Some(_))), "the flood is received again");
}
