//! `max_reconnects` counted from outside: every server process the client
//! or the host starts appends its pid to a log (`--pid-log`), whatever phase
//! it dies in (before discovery is answered, during the handshake, right
//! after it, on its first request, by a signal). The number of processes
//! must be exactly `max_reconnects + 1`, and none may be left.

use crate::common;
use crate::host_support;

use std::path::Path;
use std::time::Duration;

use conduit_mcp::host::{Host, HostConfig};
use conduit_mcp::{Client, Status};
use serde_json::json;

const MAX: u32 = 3;

/// Waits until every process in the log is gone (neither alive nor a
/// zombie); the ones left.
async fn left_over(log: &Path) -> Vec<u32> {
    let gone = |p: &u32| !common::alive(*p) && !common::zombie(*p);
    common::eventually(Duration::from_secs(10), || {
        common::read_pids(log).iter().all(gone)
    })
    .await;
    common::read_pids(log)
        .into_iter()
        .filter(|p| !gone(p))
        .collect()
}

/// Starts a client of the fixture with `args`, asks `fixture/exit` of each
/// ready server if `exit_on_request`, and waits for the final status.
async fn client_run(log: &Path, args: &[&str], exit_on_request: bool) -> (usize, Status) {
    let mut all = vec!["--pid-log", log.to_str().unwrap()];
    all.extend_from_slice(args);
    let cfg = common::config(&all).max_reconnects(MAX);
    let client = Client::start(cfg).await.expect("client starts");
    let driver = exit_on_request.then(|| {
        let c = client.clone();
        tokio::spawn(async move {
            loop {
                let r = c.request("fixture/exit", Some(json!({ "code": 4 }))).await;
                if matches!(
                    r,
                    Err(conduit_mcp::Error::Stopped | conduit_mcp::Error::GaveUp { .. })
                ) {
                    return;
                }
            }
        })
    });
    let end = common::wait_status(&client, Duration::from_secs(20), Status::is_final).await;
    crate::common::shutdown(client.stop().wait()).await;
    if let Some(d) = driver {
        d.await.unwrap();
    }
    (common::read_pids(log).len(), end)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_reconnects_is_exact_whatever_phase_the_server_dies_in() {
    let cases: [(&str, &[&str], bool); 7] = [
        (
            "exits before discovery is answered",
            &["--exit-after", "0"],
            false,
        ),
        (
            "killed before discovery is answered",
            &["--exit-after", "0", "--crash-signal", "KILL"],
            false,
        ),
        (
            "exits during the legacy handshake",
            &["--era", "legacy", "--exit-after", "1"],
            false,
        ),
        (
            "killed right after the modern handshake",
            &[
                "--era",
                "modern",
                "--exit-after",
                "1",
                "--crash-signal",
                "KILL",
            ],
            false,
        ),
        (
            "exits right after the legacy handshake",
            &["--era", "legacy", "--exit-after", "2"],
            false,
        ),
        (
            "exits on its first request (modern)",
            &["--era", "modern"],
            true,
        ),
        (
            "exits on its first request (legacy)",
            &["--era", "legacy"],
            true,
        ),
    ];
    let mut wrong = Vec::new();
    for (what, args, exit_on_request) in cases {
        let dir = common::tempdir("restart-phases");
        let log = dir.join("pids");
        let (spawned, end) = client_run(&log, args, exit_on_request).await;
        let left = left_over(&log).await;
        eprintln!("{what}: {spawned} processes, end {end:?}, left {left:?}");
        if spawned != MAX as usize + 1 || !matches!(end, Status::GaveUp(_)) || !left.is_empty() {
            wrong.push(format!(
                "{what}: {spawned} processes, {end:?}, left {left:?}"
            ));
        }
        let _ = std::fs::remove_dir_all(dir);
    }
    assert!(
        wrong.is_empty(),
        "max_reconnects {MAX}: expected {} processes and a give-up:\n{}",
        MAX + 1,
        wrong.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_reconnects_zero_starts_exactly_one_process() {
    let dir = common::tempdir("restart-zero");
    let log = dir.join("pids");
    let cfg = common::config(&["--pid-log", log.to_str().unwrap(), "--exit-after", "0"])
        .max_reconnects(0);
    let client = Client::start(cfg).await.expect("client starts");
    let end = common::wait_status(&client, Duration::from_secs(20), Status::is_final).await;
    crate::common::shutdown(client.stop().wait()).await;
    let spawned = common::read_pids(&log).len();
    assert!(left_over(&log).await.is_empty());
    let _ = std::fs::remove_dir_all(dir);
    assert!(matches!(end, Status::GaveUp(_)), "{end:?}");
    assert_eq!(spawned, 1, "max_reconnects 0");
}

/// A host's server that dies on the host's own first request (its
/// listing), or right after its handshake: the host must not restart it
/// more often than its client's `max_reconnects` allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_server_that_dies_on_its_listing_is_given_up_after_max_reconnects() {
    for (what, args) in [
        // discover, then tools/list.
        (
            "modern, dies on tools/list",
            &["--era", "modern", "--exit-after", "2"][..],
        ),
        // probe, initialize, then tools/list.
        (
            "legacy, dies on tools/list",
            &["--era", "legacy", "--exit-after", "3"][..],
        ),
        (
            "killed right after its handshake",
            &["--exit-after", "1", "--crash-signal", "KILL"][..],
        ),
    ] {
        let dir = common::tempdir("host-restart-phases");
        let log = dir.join("pids");
        let mut all = vec!["--pid-log", log.to_str().unwrap()];
        all.extend_from_slice(args);
        let cfg = common::config(&all).max_reconnects(MAX);
        let host = Host::start(
            HostConfig::new()
                .server("dying", cfg)
                .server("fine", common::config(&[]))
                .ready_timeout(Duration::from_secs(10)),
        )
        .await
        .expect("the host starts");
        let client = host.client("dying").expect("dying is in the host");
        let end = common::wait_status(&client, Duration::from_secs(20), Status::is_final).await;
        host_support::finish(host).await;
        let spawned = common::read_pids(&log).len();
        let left = left_over(&log).await;
        eprintln!("host, {what}: {spawned} processes, end {end:?}, left {left:?}");
        let _ = std::fs::remove_dir_all(dir);
        assert!(matches!(end, Status::GaveUp(_)), "{what}: {end:?}");
        assert_eq!(spawned, MAX as usize + 1, "{what}");
        assert!(left.is_empty(), "{what}: {left:?}");
    }
}
