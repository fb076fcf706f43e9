//! A host start or add that is dropped (by a timeout, a `select!`) leaves
//! no server process behind, alive or zombie.

use crate::common;
use crate::host_support;

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use conduit_mcp::host::{Host, HostConfig};
use host_support::finish;

/// The pids the `--pid-file` servers under `dir` wrote.
fn pids_in(dir: &Path) -> Vec<u32> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|s| s.lines().next()?.trim().parse().ok())
        .collect()
}

/// A fixture server that writes its pid into `dir`.
fn server(dir: &Path, name: &str) -> conduit_mcp::ClientConfig {
    let file = dir.join(name);
    common::config(&["--pid-file", file.to_str().unwrap()])
}

/// Waits for the round's end, then (up to 10 s) for the processes of
/// `dir` to be gone; returns the ones left, alive or zombie.
///
/// The end is the runtime's tasks back to `baseline`: every start, actor
/// and shutdown the round began has ended, so no server of it can still
/// come up and write its pid. A dropped start's servers are spawned after
/// the drop: a look at `dir` before that end found no pid yet and passed,
/// or found a pid written between its two reads, of a server whose
/// shutdown was under way, and failed.
async fn left_over(dir: &Path, baseline: usize) -> Vec<u32> {
    let settled = common::eventually(Duration::from_secs(10), || tasks() <= baseline).await;
    assert!(
        settled.is_some(),
        "tasks still alive: {} (baseline {baseline})",
        tasks()
    );
    let gone = |p: &u32| !common::alive(*p) && !common::zombie(*p);
    common::eventually(Duration::from_secs(10), || pids_in(dir).iter().all(gone)).await;
    pids_in(dir).into_iter().filter(|p| !gone(p)).collect()
}

/// The tasks of this test's runtime alive now.
fn tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_start_dropped_by_a_timeout_leaves_no_process() {
    let baseline = tasks();
    let rounds = 24;
    let (mut leaked, mut cancelled) = (Vec::new(), 0);
    for round in 0..rounds {
        let dir = common::tempdir(&format!("host-start-dropped-{round}"));
        let config = HostConfig::new()
            .server("one", server(&dir, "one"))
            .server("two", server(&dir, "two"))
            .server("three", server(&dir, "three"));
        // From "before anything spawned" to "some servers ready".
        let limit = Duration::from_micros(500 * round);
        match tokio::time::timeout(limit, Host::start(config)).await {
            Ok(host) => finish(host.unwrap()).await,
            Err(_) => cancelled += 1,
        }
        leaked.extend(left_over(&dir, baseline).await);
        let _ = std::fs::remove_dir_all(dir);
    }
    eprintln!(
        "{rounds} rounds, {cancelled} starts dropped: {} processes left: {leaked:?}",
        leaked.len()
    );
    assert!(
        cancelled > 0,
        "no start was dropped: the test proves nothing"
    );
    assert!(leaked.is_empty(), "{leaked:?}");
}

/// `host.add("x", config)`, dropped if not done by round `round`'s drop
/// point: in the first 12 rounds after `round` polls (0 is the first: a
/// drop before the start runs), then after `round - 12` ms (a timer's
/// first tick may come after a warm spawn, so those may finish). `None`
/// when it was dropped.
async fn add_dropped_at(
    host: &Host,
    config: conduit_mcp::ClientConfig,
    round: u64,
) -> Option<Result<(), conduit_mcp::host::HostError>> {
    let mut add = std::pin::pin!(host.add("x", config));
    if round >= 12 {
        let limit = Duration::from_millis(round - 12);
        return tokio::time::timeout(limit, add).await.ok();
    }
    for _ in 0..=round {
        let polled = std::future::poll_fn(|cx| std::task::Poll::Ready(add.as_mut().poll(cx)));
        if let std::task::Poll::Ready(r) = polled.await {
            return Some(r);
        }
        tokio::task::yield_now().await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_add_dropped_by_a_timeout_leaves_no_server() {
    let host = Host::start(HostConfig::new()).await.unwrap();
    let baseline = tasks();
    let rounds = 24;
    let (mut leaked, mut stuck, mut cancelled) = (Vec::new(), 0, 0);
    for round in 0..rounds {
        let dir = common::tempdir(&format!("host-add-dropped-{round}"));
        match add_dropped_at(&host, server(&dir, "x"), round).await {
            Some(added) => {
                added.unwrap();
                host.remove("x").unwrap().wait().await;
            }
            None => {
                cancelled += 1;
                // The add was given up: no server of that name stays.
                let none =
                    common::eventually(Duration::from_secs(10), || host.server("x").is_none())
                        .await;
                if none.is_none() {
                    stuck += 1;
                    eprintln!("round {round}: {:?}", host.server("x"));
                    if let Ok(r) = host.remove("x") {
                        r.wait().await;
                    }
                }
            }
        }
        leaked.extend(left_over(&dir, baseline).await);
        let _ = std::fs::remove_dir_all(dir);
    }
    eprintln!(
        "{rounds} rounds, {cancelled} adds dropped: {stuck} names kept, {} processes left: {leaked:?}",
        leaked.len()
    );
    assert!(cancelled > 0, "no add was dropped: the test proves nothing");
    assert_eq!((stuck, leaked.len()), (0, 0), "{leaked:?}");
    finish(host).await;
}
