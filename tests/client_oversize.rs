//! Memory stays bounded when a server writes a huge line (own test binary,
//! so the peak RSS measured is this test's alone).

mod common;

use std::time::Duration;

use conduit_mcp::{Client, Status};

fn vm_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_mib_line_without_newline_keeps_rss_near_the_limit() {
    // Warm up allocator and runtime with a normal session first.
    let warm = Client::start(common::config(&[])).await.unwrap();
    warm.request("echo", None).await.unwrap();
    crate::common::shutdown(warm.stop().wait()).await;
    let before = vm_kib("VmHWM:");

    let mut cfg = common::config(&["--big-line-mib", "200", "--no-newline"]);
    cfg = cfg.max_reconnects(0);
    let client = Client::start(cfg).await.unwrap();
    let status = common::final_status(&client, Duration::from_secs(30)).await;
    match &status {
        Status::GaveUp(why) => assert!(why.contains("over the 8388608-byte limit"), "{why}"),
        other => panic!("{other:?}"),
    }
    crate::common::shutdown(client.stop().wait()).await;
    let peak = vm_kib("VmHWM:");
    let growth_mib = (peak.saturating_sub(before)) as f64 / 1024.0;
    println!("peak RSS growth during a 200 MiB line: {growth_mib:.1} MiB (limit 8 MiB)");
    // The limit (8 MiB) plus one read chunk plus allocator slack.
    assert!(growth_mib < 24.0, "RSS grew by {growth_mib:.1} MiB");
}
