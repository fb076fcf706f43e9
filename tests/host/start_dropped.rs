//! `Host::start` and `Host::add` dropped at any await point (after their
//! k-th pending poll, k = 1, 2, ...) leave no server process,
//! alive or zombie, and no task (the host's and the clients' actors are
//! tokio tasks) running once the rest is stopped. The servers ignore stdin
//! EOF, so only a stop ends them; each appends its pid to one log
//! (`--pid-log`), so no process is missed, restarts included.

use crate::common;
use crate::host_support;

use std::path::Path;
use std::time::Duration;

use common::PollLimit;
use conduit_mcp::host::{Host, HostConfig};
use host_support::finish;

fn server(log: &Path) -> conduit_mcp::ClientConfig {
    common::config(&["--ignore-eof", "--pid-log", log.to_str().unwrap()])
}

/// Waits for every logged process to be gone; kills and reaps the ones
/// left, and returns them.
async fn left_over(log: &Path) -> Vec<u32> {
    let gone = |p: &u32| !common::alive(*p) && !common::zombie(*p);
    common::eventually(Duration::from_secs(10), || {
        common::read_pids(log).iter().all(gone)
    })
    .await;
    let left: Vec<u32> = common::read_pids(log)
        .into_iter()
        .filter(|p| !gone(p))
        .collect();
    for p in &left {
        common::kill9(*p);
        common::reap_within(*p, Duration::from_secs(5)).await;
    }
    left
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_start_or_add_dropped_at_any_point_leaves_no_process_and_no_task() {
    let dir = common::tempdir("host-dropped");
    let log = dir.join("pids");
    let three = || {
        HostConfig::new()
            .server("one", server(&log))
            .server("two", server(&log))
            .server("three", server(&log))
    };
    let warm = Host::start(three()).await.unwrap();
    finish(warm).await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let baseline = metrics.num_alive_tasks();
    // Dropped after the k-th pending poll (common::PollLimit): every await
    // point in turn, however fast the machine; done once two rounds in a
    // row finish (past the last await point).
    let mut rounds = (0u32, 0u32);
    let mut dropped = (0, 0);
    let mut finished = 0;
    for k in 1..=400usize {
        rounds.0 += 1;
        match PollLimit::new(Host::start(three()), k).await {
            Some(host) => {
                finish(host.unwrap()).await;
                finished += 1;
                if finished >= 2 {
                    break;
                }
            }
            None => {
                dropped.0 += 1;
                finished = 0;
            }
        }
    }
    let host = Host::start(HostConfig::new()).await.unwrap();
    finished = 0;
    for k in 1..=400usize {
        rounds.1 += 1;
        match PollLimit::new(host.add("x", server(&log)), k).await {
            Some(added) => {
                added.unwrap();
                host.remove("x").unwrap().wait().await;
                finished += 1;
            }
            None => {
                dropped.1 += 1;
                finished = 0;
            }
        }
        // A dropped add leaves no server of that name, at once or soon.
        common::eventually(Duration::from_secs(10), || host.server("x").is_none()).await;
        if let Ok(r) = host.remove("x") {
            r.wait().await;
        }
        if finished >= 2 {
            break;
        }
    }
    finish(host).await;
    // The tasks first: once they have ended, no server of a dropped start
    // can still come up and log its pid after the look at the log.
    let settled = common::eventually(Duration::from_secs(10), || {
        metrics.num_alive_tasks() <= baseline
    })
    .await;
    let left = left_over(&log).await;
    eprintln!(
        "{} starts ({} dropped) and {} adds ({} dropped), each after its k-th pending poll: \
         {} servers started, left {left:?}; tasks {} (baseline {baseline})",
        rounds.0,
        dropped.0,
        rounds.1,
        dropped.1,
        common::read_pids(&log).len(),
        metrics.num_alive_tasks()
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(dropped.0 > 0 && dropped.1 > 0, "nothing was dropped");
    assert!(left.is_empty(), "servers left: {left:?}");
    assert!(
        settled.is_some(),
        "tasks still alive: {} (baseline {baseline})",
        metrics.num_alive_tasks()
    );
}
