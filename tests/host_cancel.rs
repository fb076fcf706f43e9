//! A host start or add that is dropped (by a timeout, a `select!`) leaves
//! no server process behind, alive or zombie.

mod common;
mod host_support;

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

/// Waits (up to 10 s) for the processes of `dir` to be gone; returns the
/// ones left, alive or zombie.
async fn left_over(dir: &Path) -> Vec<u32> {
    let gone = |p: &u32| !common::alive(*p) && !common::zombie(*p);
    common::eventually(Duration::from_secs(10), || pids_in(dir).iter().all(gone)).await;
    pids_in(dir).into_iter().filter(|p| !gone(p)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_start_dropped_by_a_timeout_leaves_no_process() {
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
        leaked.extend(left_over(&dir).await);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_add_dropped_by_a_timeout_leaves_no_server() {
    let host = Host::start(HostConfig::new()).await.unwrap();
    let rounds = 24;
    let (mut leaked, mut stuck, mut cancelled) = (Vec::new(), 0, 0);
    for round in 0..rounds {
        let dir = common::tempdir(&format!("host-add-dropped-{round}"));
        let limit = Duration::from_millis(round);
        match tokio::time::timeout(limit, host.add("x", server(&dir, "x"))).await {
            Ok(added) => {
                added.unwrap();
                host.remove("x").unwrap().wait().await;
            }
            Err(_) => {
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
        leaked.extend(left_over(&dir).await);
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
