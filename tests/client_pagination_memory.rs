//! A server whose list never ends. One test in this file: it measures this
//! process's memory (VmHWM), which another test running beside it would
//! disturb.
//!
//! Item 10 of issue 20: pagination had no limit. A server whose
//! `tools/list` returns 100 tools and a fresh `nextCursor` for ever grew a
//! `Host` to 3.5 GiB in 8 s; `mcp tools` died of allocation failure.

mod common;

use std::time::{Duration, Instant};

use conduit_mcp::{ClientConfig, Error};

use common::figure;

/// Peak RSS since the last reset, in MiB.
fn hwm_mib() -> f64 {
    common::status_kib("VmHWM") as f64 / 1024.0
}

/// Resets VmHWM to the current RSS (Linux: "5" to clear_refs).
fn reset_hwm() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM");
}

/// How long the list may run, and how much it may grow this process, before
/// the test stops it (the unfixed client never ends it by itself).
const TIME_LIMIT: Duration = Duration::from_secs(10);
const GROWTH_LIMIT_MIB: f64 = 1024.0;

/// `list_tools` against a server that lists 100 tools per page for ever,
/// with the default caps: it must fail with a typed error naming the cap it
/// reached (the page and item caps, first for these pages), within the time
/// limit, with the peak memory bounded. Before the fix the list
/// never ended: stopped by the test's guard after 10 s, the process grown
/// by 394 MiB (debug build) and growing. After: the page cap after 1,000
/// pages (100,000 tools), in 1.9 s, peak growth 107 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_list_fails_with_its_cap_within_bounded_memory() {
    let cfg: ClientConfig = common::config(&["--endless-tools", "100"]);
    let client = conduit_mcp::Client::start(cfg).await.unwrap();
    client.ready(Duration::from_secs(10)).await.unwrap();
    reset_hwm();
    let base = hwm_mib();
    let t = Instant::now();
    // The guard: gives up on the list past the time or growth limit.
    let guard = async {
        loop {
            if t.elapsed() > TIME_LIMIT || hwm_mib() - base > GROWTH_LIMIT_MIB {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let outcome = tokio::select! {
        r = client.list_tools() => Some(r),
        () = guard => None,
    };
    let took = t.elapsed();
    let growth = hwm_mib() - base;
    crate::common::shutdown(client.stop().wait()).await;
    let described = match &outcome {
        None => "no end: stopped by the test's guard".to_owned(),
        Some(Ok(tools)) => format!("Ok with {} tools", tools.len()),
        Some(Err(e)) => format!("Err: {e}"),
    };
    figure(
        "list_tools against an endless list (100 tools a page), default caps",
        format!("{described}; after {took:.2?}, peak RSS growth {growth:.0} MiB"),
    );
    // With the default caps the page and item caps (1,000 pages, 100,000
    // items) end this list together: 1,000 pages of 100 small tools hold
    // about 150 MiB by the estimate, under the 256 MiB byte cap.
    match outcome {
        Some(Err(Error::ListTooLong {
            pages,
            items,
            limit,
            ..
        })) => {
            assert!(
                pages <= 1_001 && items <= 100_100,
                "{pages} {items} {limit}"
            );
        }
        other => panic!("expected a list cap, got {other:?}"),
    }
    // The process holds the typed tools kept so far and one parsed page.
    assert!(growth < 256.0, "peak RSS grew by {growth:.0} MiB");
}
