//! A server that floods the host with list_changed notifications costs
//! the host bounded work, and does not slow the other servers' calls.

use crate::common;
use crate::host_support;

use std::time::{Duration, Instant};

use conduit_mcp::host::{Host, HostConfig};
use host_support::finish;
use serde_json::json;

/// Tools of each big server.
const TOOLS: &str = "5000";

/// `name` (a fixture with 5,000 tools and `flags`), `quiet` (the plain
/// fixture) and four fixtures of 5,000 tools each.
fn crowd(name: &str, flags: &[&str]) -> HostConfig {
    let loud = common::config(&[&["--tools", TOOLS], flags].concat());
    (0..4).fold(
        HostConfig::new()
            .server(name, loud)
            .server("quiet", common::config(&[])),
        |c, k| c.server(format!("big{k}"), common::config(&["--tools", TOOLS])),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_flood_is_coalesced_and_other_servers_keep_serving() {
    let config = crowd("flood", &["--list-changed-flood", "1000000000"]);
    let host = Host::start(config).await.unwrap();
    assert!(
        host.servers().iter().all(|s| s.is_ready()),
        "{:?}",
        host.servers()
    );
    let _unread = host.events();
    let flood = host.client("flood").unwrap();
    let window = Duration::from_secs(5);
    let start = Instant::now();
    let (mut calls, mut worst) = (0u64, Duration::ZERO);
    while start.elapsed() < window {
        let t = Instant::now();
        let r = host
            .call_tool("quiet__echo", json!({"text": "x"}))
            .await
            .unwrap();
        worst = worst.max(t.elapsed());
        assert_eq!(r.joined_text(), "x");
        calls += 1;
    }
    let counts = flood.request("fixture/counts", None).await.unwrap();
    let lists = counts["tools_list"].as_u64().unwrap();
    let sent = counts["list_changed_sent"].as_u64().unwrap();
    eprintln!(
        "in {window:?}: {calls} calls to quiet, worst {worst:?}; flood sent {sent} \
         list_changed, received {lists} tools/list pages"
    );
    // Coalesced: one listing in flight and one pending per server,
    // whatever the number of notifications (each listing is 2 pages).
    assert!(sent > 1000, "the flood ran: {sent}");
    assert!(lists * 20 < sent, "{lists} pages for {sent} notifications");
    // Generous: the unrelated server's calls go on through the flood.
    assert!(calls >= 20, "{calls} calls in {window:?}");
    assert!(worst < Duration::from_secs(2), "worst call {worst:?}");
    finish(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_asks_to_be_listed_after_every_listing_does_not_slow_the_others() {
    let host = Host::start(crowd("loop", &["--list-changed-on-list"]))
        .await
        .unwrap();
    let _unread = host.events();
    let looping = host.client("loop").unwrap();
    let quiet = host.client("quiet").unwrap();
    let pages = async || {
        let counts = looping.request("fixture/counts", None).await.unwrap();
        counts["tools_list"].as_u64().unwrap()
    };
    let first = pages().await;
    // Calls through the host and straight to the same server, in turn:
    // whatever the machine's load, both see it; only the host's own work
    // (its lock, its namespace) tells them apart.
    let window = Duration::from_secs(5);
    let start = Instant::now();
    let (mut calls, mut worst) = (0u64, Duration::ZERO);
    let (mut via_host, mut direct) = (Duration::ZERO, Duration::ZERO);
    while start.elapsed() < window {
        let t = Instant::now();
        host.call_tool("quiet__echo", json!({"text": "x"}))
            .await
            .unwrap();
        let took = t.elapsed();
        via_host += took;
        worst = worst.max(took);
        let t = Instant::now();
        quiet
            .call_tool("echo", json!({"text": "x"}), Default::default())
            .await
            .unwrap();
        direct += t.elapsed();
        calls += 1;
    }
    let listings = (pages().await - first) / 2;
    eprintln!(
        "in {window:?}: {calls} calls each way to quiet: through the host {via_host:?} \
         (worst {worst:?}), straight {direct:?}; `loop` listed {listings} times"
    );
    assert!(listings >= 2, "re-listed on list_changed: {listings}");
    assert!(calls >= 20, "{calls} calls in {window:?}");
    assert!(
        via_host < direct * 2 + Duration::from_millis(500),
        "through the host {via_host:?}, straight {direct:?}"
    );
    assert!(worst < Duration::from_secs(2), "worst call {worst:?}");
    finish(host).await;
}
