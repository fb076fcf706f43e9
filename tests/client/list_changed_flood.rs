//! A single `Client` with `refresh_tools_on_list_changed` against a server
//! that floods `notifications/tools/list_changed`: the re-listings are
//! coalesced (the notifications that came during one listing make one more
//! listing, not one each), and calls go on. Legacy era: the fixture's
//! flood is of plain notifications, which a modern session takes only on
//! a listen stream.

use crate::common;

use std::time::{Duration, Instant};

use conduit_mcp::Client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_flood_makes_a_bounded_number_of_re_listings() {
    let mut wrong = Vec::new();
    for era in ["legacy"] {
        let cfg = common::config(&["--era", era, "--list-changed-flood", "1000000000"])
            .refresh_tools_on_list_changed(true);
        let client = Client::start(cfg).await.unwrap();
        client.ready(Duration::from_secs(10)).await.unwrap();
        let window = Duration::from_secs(3);
        let start = Instant::now();
        let (mut calls, mut worst) = (0u64, Duration::ZERO);
        while start.elapsed() < window {
            let t = Instant::now();
            client
                .request("ping", None)
                .await
                .expect("pings through the flood");
            worst = worst.max(t.elapsed());
            calls += 1;
        }
        let counts = client.request("fixture/counts", None).await.unwrap();
        let pages = counts["tools_list"].as_u64().unwrap();
        let sent = counts["list_changed_sent"].as_u64().unwrap();
        crate::common::shutdown(client.stop().wait()).await;
        eprintln!(
            "{era}: in {window:?} the flood sent {sent} list_changed; the client fetched \
             {pages} tools/list pages; {calls} pings, worst {worst:?}"
        );
        // Each listing is 2 pages; coalesced, listings are far fewer than
        // notifications.
        if sent <= 1000 || pages * 20 >= sent || worst >= Duration::from_secs(2) {
            wrong.push(format!(
                "{era}: {sent} notifications, {pages} pages, worst ping {worst:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
