//! A server that floods the host with list_changed notifications costs
//! the host bounded work, and does not slow the other servers' calls.

use crate::common;
use crate::host_support;

use std::time::Duration;

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

/// Generous: a call, or the whole run, that takes longer has hung.
const PATIENCE: Duration = Duration::from_secs(60);

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
    let counts = async || {
        let counts = flood.request("fixture/counts", None).await.unwrap();
        let n = |k: &str| counts[k].as_u64().unwrap();
        (n("list_changed_sent"), n("tools_list"))
    };
    // The unrelated server's calls go on through the flood: 20 of them,
    // then more until the flood has sent 1,000 notifications.
    let (calls, sent, lists) = common::within(PATIENCE, "20 calls during the flood", async {
        let mut calls = 0u64;
        loop {
            let r = host
                .call_tool("quiet__echo", json!({"text": "x"}))
                .await
                .unwrap();
            assert_eq!(r.joined_text(), "x");
            calls += 1;
            if calls >= 20 {
                let (sent, lists) = counts().await;
                if sent > 1000 {
                    return (calls, sent, lists);
                }
            }
        }
    })
    .await;
    eprintln!(
        "{calls} calls to quiet; flood sent {sent} list_changed, received {lists} tools/list pages"
    );
    // Coalesced: one listing in flight and one pending per server,
    // whatever the number of notifications (each listing is 2 pages).
    assert!(lists * 20 < sent, "{lists} pages for {sent} notifications");
    finish(host).await;
}

/// How much the host adds to a call beside such a server is a benchmark
/// row (`host_over_direct` in benches/bench.rs), not a bound here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_asks_to_be_listed_after_every_listing_does_not_stop_the_others() {
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
    // Calls through the host and straight to the same server, in turn,
    // until `loop` was listed again twice.
    let (calls, listings) = common::within(PATIENCE, "calls while `loop` re-lists", async {
        let mut calls = 0u64;
        loop {
            host.call_tool("quiet__echo", json!({"text": "x"}))
                .await
                .unwrap();
            quiet
                .call_tool("echo", json!({"text": "x"}), Default::default())
                .await
                .unwrap();
            calls += 1;
            let listings = (pages().await - first) / 2;
            if calls >= 20 && listings >= 2 {
                return (calls, listings);
            }
        }
    })
    .await;
    eprintln!("{calls} calls each way to quiet; `loop` listed {listings} times");
    finish(host).await;
}
