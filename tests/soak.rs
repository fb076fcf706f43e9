//! Soak: thousands of start/stop and crash/restart cycles in one process;
//! file descriptors, threads and RSS must not grow, and no zombie or orphan
//! may remain. `CONDUIT_SOAK_SCALE=10 cargo test --release --test soak --
//! --nocapture` runs a ten times longer soak.

mod common;

use std::time::{Duration, Instant};

use conduit_mcp::LifecycleEvent;
use conduit_mcp::{Backoff, Client, StartOptions};
use serde_json::json;

fn scale() -> f64 {
    std::env::var("CONDUIT_SOAK_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Our direct children that are zombies.
fn zombie_children() -> Vec<u32> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    let f: Vec<&str> = s
                        .rsplit(')')
                        .next()
                        .unwrap_or("")
                        .split_whitespace()
                        .collect();
                    f.first() == Some(&"Z") && f.get(1) == Some(&me.as_str())
                })
                .unwrap_or(false)
        })
        .collect()
}

#[derive(Debug)]
struct Snapshot {
    fds: usize,
    threads: u64,
    rss_kib: u64,
}

fn snapshot() -> Snapshot {
    Snapshot {
        fds: fds(),
        threads: status_kib("Threads:"),
        rss_kib: status_kib("VmRSS:"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_stop_and_crash_restart_cycles_leak_nothing() {
    let start_stop = (2000.0 * scale()) as usize;
    let crashes = (500.0 * scale()) as usize;
    let mut pids = Vec::new();

    // Warm up: allocator, runtime, first spawn.
    for _ in 0..20 {
        let c = Client::start(common::config(&[])).await.unwrap();
        c.ready(Duration::from_secs(10)).await.unwrap();
        crate::common::shutdown(c.stop().wait()).await;
    }
    let before = snapshot();

    let t = Instant::now();
    for _ in 0..start_stop {
        let c = Client::start(common::config(&[])).await.unwrap();
        let s = c.ready(Duration::from_secs(10)).await.unwrap();
        pids.push(s.pid.unwrap());
        let reports = crate::common::shutdown(c.stop().wait()).await;
        assert_eq!(reports.len(), 1);
    }
    let start_stop_took = t.elapsed();
    let mid = snapshot();

    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let mut cfg = common::config(&[]).backoff(
        Backoff::new()
            .initial(Duration::from_millis(1))
            .max(Duration::from_millis(5)),
    );
    // Hundreds of crashes within restart_period: a crash loop the client
    // would give up on; this test restarts it for ever.
    cfg = cfg.max_reconnects(u32::MAX);
    let client = Client::start_with(cfg, StartOptions::new().events(tx))
        .await
        .unwrap();
    let t = Instant::now();
    for i in 0..crashes {
        client.ready(Duration::from_secs(10)).await.unwrap();
        let _ = client
            .request("fixture/exit", Some(json!({"code": 1})))
            .await;
        // The next call waits for the restarted server.
        let r = client
            .request("echo", Some(json!({ "i": i })))
            .await
            .unwrap();
        assert_eq!(r["i"], i);
        while let Ok(e) = events.try_recv() {
            if let LifecycleEvent::Spawned { pid, .. } = e {
                pids.push(pid);
            }
        }
    }
    let crash_took = t.elapsed();
    crate::common::shutdown(client.stop().wait()).await;
    while let Ok(e) = events.try_recv() {
        if let LifecycleEvent::Spawned { pid, .. } = e {
            pids.push(pid);
        }
    }
    let after = snapshot();

    let survivors: Vec<_> = pids.iter().filter(|p| common::alive(**p)).collect();
    let zombies = zombie_children();
    println!(
        "SOAK | {start_stop} start/stop cycles in {start_stop_took:.2?}, {crashes} crash/restart cycles in {crash_took:.2?} | fds {} -> {}, threads {} -> {}, RSS {} -> {} (after start/stop) -> {} KiB | survivors {}, zombies {}",
        before.fds, after.fds, before.threads, after.threads, before.rss_kib, mid.rss_kib, after.rss_kib,
        survivors.len(), zombies.len()
    );
    assert!(survivors.is_empty(), "orphans: {survivors:?}");
    assert!(zombies.is_empty(), "zombies: {zombies:?}");
    assert!(after.fds <= before.fds + 4, "{before:?} -> {after:?}");
    assert!(
        after.threads <= before.threads + 4,
        "{before:?} -> {after:?}"
    );
    assert!(
        after.rss_kib <= before.rss_kib + 4 * 1024,
        "RSS grew: {before:?} -> {after:?}"
    );
}
