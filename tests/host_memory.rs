//! What the host keeps of a large tool list: a small multiple of its
//! bytes, not a JSON tree per tool.

mod common;
mod host_support;

use conduit_mcp::host::{Host, HostConfig};
use host_support::finish;

/// This process's resident set, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib * 1024
}

/// The resident set once the allocator has returned its free pages: what
/// is kept, not what a parse used for a moment.
fn kept() -> u64 {
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe { libc::malloc_trim(0) };
    rss()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_of_70000_tools_costs_the_host_a_few_times_its_bytes() {
    // The runtime, the actors and the fixture's pages warmed up first.
    let warm = Host::start(HostConfig::new().server("warm", common::config(&["--tools", "100"])))
        .await
        .unwrap();
    finish(warm).await;
    let (rss_before, kept_before) = (rss(), kept());
    let host = Host::start(HostConfig::new().server("big", common::config(&["--tools", "70000"])))
        .await
        .unwrap();
    let big = host.server("big").unwrap();
    assert!(big.is_ready(), "{big:?}");
    assert_eq!(big.tools, 70_005);
    let (rss_after, kept_after) = (rss(), kept());
    let tools = host.tools();
    let list_bytes: usize = tools
        .iter()
        .map(|t| serde_json::to_string(&t.tool).unwrap().len() + 1)
        .sum();
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    let grew = kept_after.saturating_sub(kept_before);
    eprintln!(
        "list {:.1} MiB; resident +{:.1} MiB ({:.1} -> {:.1}), kept +{:.1} MiB ({:.1}x the list)",
        mib(list_bytes as u64),
        mib(rss_after.saturating_sub(rss_before)),
        mib(rss_before),
        mib(rss_after),
        mib(grew),
        grew as f64 / list_bytes as f64
    );
    assert!(
        grew < 8 * list_bytes as u64,
        "the host keeps {:.1} MiB for a {:.1} MiB list",
        mib(grew),
        mib(list_bytes as u64)
    );
    drop(tools);
    finish(host).await;
}
