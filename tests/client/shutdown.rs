//! The shutdown escalation on every path, against real child processes.
//!
//! Graces are 500 ms each (see `common::config`). Times are checked only
//! from below (a step waited its grace); a hang fails after [`PATIENCE`].

use crate::common;

use std::time::{Duration, Instant};

use conduit_mcp::{ChildExit, Client, ShutdownReport};

const GRACE: Duration = Duration::from_millis(500);
/// Ten times the longest escalation (two graces), and some.
const PATIENCE: Duration = Duration::from_secs(20);

async fn start(args: &[&str]) -> (Client, u32) {
    let client = Client::start(common::config(args)).await.unwrap();
    let s = client.ready(Duration::from_secs(10)).await.unwrap();
    (client, s.pid.unwrap())
}

/// Stops the client and waits for the report of its one server.
async fn stop(client: &Client) -> ShutdownReport {
    let mut reports = common::within(PATIENCE, "the shutdown", client.stop().wait()).await;
    reports.pop().expect("one report")
}

/// Stops the client of a server that ignores EOF: `stop()` returns while
/// the shutdown is still under way (it waits a grace at least), then the
/// shutdown's report.
async fn stop_returning_at_once(client: &Client) -> ShutdownReport {
    let shutdown = client.stop();
    let mut wait = std::pin::pin!(shutdown.wait());
    assert!(
        common::at_once(wait.as_mut()).is_none(),
        "stop() returned once the shutdown had ended"
    );
    let mut reports = common::within(PATIENCE, "the shutdown", wait).await;
    reports.pop().expect("one report")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn well_behaved_server_exits_on_stdin_close() {
    let (client, pid) = start(&[]).await;
    let r = stop(&client).await;
    assert_eq!(r.pid, pid);
    assert_eq!(r.exit, Some(ChildExit::Code(0)));
    // Within the stdin grace: no signal was needed.
    assert!(!r.sent_term && !r.sent_kill, "{r:?}");
    assert!(!common::alive(pid) && !common::zombie(pid));
    println!("close-to-exit (EOF honoured): {:?}", r.elapsed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_ignoring_eof_gets_sigterm_after_stdin_grace() {
    let (client, pid) = start(&["--ignore-eof"]).await;
    let r = stop_returning_at_once(&client).await;
    // SIGTERM after the stdin grace, and it was enough: no SIGKILL.
    assert!(r.sent_term && !r.sent_kill, "{r:?}");
    assert_eq!(r.exit, Some(ChildExit::Signal(15)));
    assert!(r.elapsed >= GRACE, "{r:?}");
    assert!(!common::alive(pid) && !common::zombie(pid));
    println!("close-to-exit (SIGTERM): {:?}", r.elapsed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_ignoring_eof_and_sigterm_gets_sigkill() {
    let (client, pid) = start(&["--ignore-eof", "--ignore-term"]).await;
    let r = stop_returning_at_once(&client).await;
    // SIGKILL after both graces.
    assert!(r.sent_term && r.sent_kill, "{r:?}");
    assert_eq!(r.exit, Some(ChildExit::Signal(9)));
    assert!(r.elapsed >= GRACE * 2, "{r:?}");
    assert!(!common::alive(pid) && !common::zombie(pid));
    println!("close-to-exit (SIGKILL): {:?}", r.elapsed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grandchild_ignoring_eof_is_ended_with_the_group() {
    let dir = common::tempdir("grandchild");
    let pids = dir.join("pids");
    let (client, pid) = start(&["--grandchild", "--pid-file", pids.to_str().unwrap()]).await;
    common::eventually(Duration::from_secs(5), || {
        common::read_pids(&pids).len() == 2
    })
    .await
    .expect("grandchild pid written");
    let grandchild = common::read_pids(&pids)[1];
    assert!(common::alive(grandchild));
    let r = stop(&client).await;
    // The leader exits on EOF at once; the grandchild keeps the group alive
    // until SIGTERM after the stdin grace.
    assert_eq!(r.exit, Some(ChildExit::Code(0)), "{r:?}");
    assert!(r.sent_term && !r.sent_kill, "{r:?}");
    assert!(!r.group_survivors);
    assert!(!common::alive(pid) && !common::alive(grandchild));
    println!(
        "close-to-exit (grandchild, SIGTERM to group): {:?}",
        r.elapsed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grandchild_ignoring_everything_is_sigkilled() {
    let dir = common::tempdir("grandchild-kill");
    let pids = dir.join("pids");
    let (client, pid) = start(&[
        "--grandchild",
        "--ignore-eof",
        "--ignore-term",
        "--pid-file",
        pids.to_str().unwrap(),
    ])
    .await;
    common::eventually(Duration::from_secs(5), || {
        common::read_pids(&pids).len() == 2
    })
    .await
    .expect("grandchild pid written");
    let grandchild = common::read_pids(&pids)[1];
    let r = stop_returning_at_once(&client).await;
    assert!(r.sent_term && r.sent_kill, "{r:?}");
    assert!(!common::alive(pid) && !common::alive(grandchild));
    println!(
        "close-to-exit (grandchild, SIGKILL to group): {:?}",
        r.elapsed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launcher_that_exits_leaves_no_grandchild() {
    let dir = common::tempdir("launcher");
    let pids = dir.join("pids");
    // The launcher exits at once; its grandchild serves the protocol and
    // ignores EOF, like an npx-started server that outlives npx.
    let client = Client::start(common::config(&[
        "--launcher",
        "--launcher-serves",
        "--ignore-eof",
        "--pid-file",
        pids.to_str().unwrap(),
    ]))
    .await
    .unwrap();
    common::eventually(Duration::from_secs(5), || {
        common::read_pids(&pids).len() == 2
    })
    .await
    .expect("pids written");
    let all = common::read_pids(&pids);
    // The launcher's exit closes the transport (exit status 0); the restart
    // policy then starts another launcher. Stop everything.
    let reports = common::within(PATIENCE, "the shutdown", client.stop().wait()).await;
    assert!(!reports.is_empty());
    for p in all {
        assert!(!common::alive(p), "pid {p} survived");
    }
    for r in &reports {
        assert!(!common::alive(r.pid));
        assert!(!r.group_survivors, "{r:?}");
    }
}

/// Kills the actor at `path` (child indices from the supervisor) and checks
/// that the escalation still ends a server that ignores EOF and SIGTERM.
async fn kill_actor_and_check(depth: usize) {
    let (client, pid) = start(&["--ignore-eof", "--ignore-term"]).await;
    let mut cell = client.supervisor();
    for _ in 0..depth {
        let children = cell.get_children();
        assert_eq!(children.len(), 1);
        cell = children.into_iter().next().unwrap();
    }
    let t = Instant::now();
    cell.kill();
    let gone = common::eventually(GRACE * 8, || !common::alive(pid)).await;
    let took = gone.unwrap_or_else(|| panic!("server {pid} survived the kill of its owner"));
    assert!(
        t.elapsed() >= GRACE * 2,
        "escalation skipped a step: {took:?}"
    );
    println!("server gone {took:?} after killing actor at depth {depth}");
    let _ = crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_connection_still_ends_the_server() {
    kill_actor_and_check(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_port_owner_still_ends_the_server() {
    kill_actor_and_check(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_calls_fail_when_the_connection_is_killed() {
    let dir = common::tempdir("conn-kill");
    let log = dir.join("in.log");
    let (client, _pid) = start(&["--log-file", log.to_str().unwrap()]).await;
    let calls: Vec<_> = (0..20)
        .map(|_| {
            let c = client.clone();
            tokio::spawn(async move {
                c.request("sleep", Some(serde_json::json!({"ms": 10_000})))
                    .await
            })
        })
        .collect();
    // Wait until the server has received every call: all are in flight.
    let count = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"sleep\""))
            .count()
    };
    common::eventually(Duration::from_secs(10), || count() == 20)
        .await
        .expect("20 calls in flight");
    let conn = client.supervisor().get_children().pop().unwrap();
    conn.kill();
    // Each fails with the connection, not after its 10 s sleep: a sleep
    // that ran to its end would have answered.
    for c in calls {
        let e = common::within(PATIENCE, "a call's failure", c)
            .await
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(e, conduit_mcp::Error::ConnectionDown(_)),
            "unexpected error: {e}"
        );
    }
    let _ = crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_handle_stops_the_server() {
    let (client, pid) = start(&[]).await;
    let clone = client.clone();
    drop(client);
    assert!(common::alive(pid), "a clone still holds the client");
    let mut status = clone.watch_status();
    drop(clone);
    tokio::time::timeout(Duration::from_secs(5), async {
        while !status.borrow_and_update().is_final() {
            status.changed().await.unwrap();
        }
    })
    .await
    .unwrap();
    common::eventually(Duration::from_secs(5), || !common::alive(pid))
        .await
        .expect("server ended after the last handle was dropped");
}
