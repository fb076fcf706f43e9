//! A `Client::start` dropped at any await point (a timeout of 0 to N ms)
//! leaves no server process, alive or zombie, and no task of the client
//! (its actors are tokio tasks) running. The servers ignore stdin EOF, as
//! many real servers do, so only the client's shutdown ends them; each
//! appends its pid to a log (`--pid-log`).

mod common;

use std::time::{Duration, Instant};

use conduit_mcp::Client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_start_dropped_at_any_point_leaves_no_process_and_no_task() {
    let dir = common::tempdir("client-start-dropped");
    let log = dir.join("pids");
    let cfg = common::config(&["--ignore-eof", "--pid-log", log.to_str().unwrap()]);
    // How long a whole start takes here: the drops are spread over it.
    let t = Instant::now();
    let warm = Client::start(cfg.clone()).await.unwrap();
    let start_time = t.elapsed();
    warm.stop().wait().await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let baseline = metrics.num_alive_tasks();
    let rounds = 40u32;
    let (mut dropped, mut finished) = (0, 0);
    for round in 0..rounds {
        let limit = start_time * round / 30;
        match tokio::time::timeout(limit, Client::start(cfg.clone())).await {
            Ok(client) => {
                finished += 1;
                client.unwrap().stop().wait().await;
            }
            Err(_) => dropped += 1,
        }
    }
    let pids = common::read_pids(&log);
    let gone = |p: &u32| !common::alive(*p) && !common::zombie(*p);
    common::eventually(Duration::from_secs(10), || {
        common::read_pids(&log).iter().all(gone)
    })
    .await;
    let tasks_settled = common::eventually(Duration::from_secs(10), || {
        metrics.num_alive_tasks() <= baseline
    })
    .await;
    let pids_after = common::read_pids(&log);
    let left: Vec<u32> = pids_after.iter().copied().filter(|p| !gone(p)).collect();
    eprintln!(
        "{rounds} rounds (a start takes {start_time:?}): {dropped} dropped, {finished} finished; \
         {} servers started ({} when the rounds ended), left {left:?}; tasks {} (baseline {baseline})",
        pids_after.len(),
        pids.len(),
        metrics.num_alive_tasks()
    );
    for p in &left {
        common::kill9(*p);
        common::reap_within(*p, Duration::from_secs(5)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(dropped > 0, "no start was dropped: the test proves nothing");
    assert!(left.is_empty(), "servers left: {left:?}");
    assert!(
        tasks_settled.is_some(),
        "tasks still alive: {} (baseline {baseline})",
        metrics.num_alive_tasks()
    );
}
