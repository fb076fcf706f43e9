//! A `Client::start` dropped at any await point (after its k-th pending
//! poll, k = 1, 2, ...) leaves no server process, alive or zombie, and no
//! task of the client
//! (its actors are tokio tasks) running. The servers ignore stdin EOF, as
//! many real servers do, so only the client's shutdown ends them; each
//! appends its pid to a log (`--pid-log`).

use crate::common;

use std::time::Duration;

use common::PollLimit;

use conduit_mcp::Client;

// One thread: the tasks `start` waits for cannot finish between two of
// its polls. The child is launched on an OS thread, which can, so a start
// may still finish on its first poll; see the sweeps below.
#[tokio::test(flavor = "current_thread")]
async fn a_client_start_dropped_at_any_point_leaves_no_process_and_no_task() {
    let dir = common::tempdir("client-start-dropped");
    let log = dir.join("pids");
    let cfg = common::config(&["--ignore-eof", "--pid-log", log.to_str().unwrap()]);
    let warm = Client::start(cfg.clone()).await.unwrap();
    crate::common::shutdown(warm.stop().wait()).await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let baseline = metrics.num_alive_tasks();
    // Dropped after its k-th pending poll: every await point is reached in
    // turn, however fast the machine (a timeout's tick is 1 ms, longer
    // than a warm start here, so timeouts dropped none in one CI run).
    // A sweep runs k = 1, 2, ... until two starts finish. A start finishes
    // on its first poll when the test thread is preempted while the child
    // is launched on the spawner's thread, and then its sweep drops none:
    // the sweep is run again, at most 20 times, until one start was dropped.
    let (mut dropped, mut finished, mut rounds) = (0, 0, 0u32);
    for _sweep in 0..20 {
        let mut finished_in_sweep = 0;
        for k in 1..=200usize {
            rounds += 1;
            match PollLimit::new(Client::start(cfg.clone()), k).await {
                Some(client) => {
                    finished += 1;
                    finished_in_sweep += 1;
                    client.unwrap().stop().wait().await;
                    // Past its last await point: larger k finish too.
                    if finished_in_sweep >= 2 {
                        break;
                    }
                }
                None => dropped += 1,
            }
        }
        if dropped > 0 {
            break;
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
        "{rounds} rounds (dropped after k pending polls): {dropped} dropped, {finished} finished; \
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
