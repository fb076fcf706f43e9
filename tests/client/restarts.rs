//! How often the client restarts a server that keeps dying, and when it
//! gives up: restart intensity (at most `max_reconnects` restarts within
//! `restart_period`), whatever phase the server died in, with a backoff that
//! keeps growing while it does.
//!
//! Item 12 of issue 20. Each test prints the figure it measures
//! (`--nocapture`).

use crate::common;

use std::time::{Duration, Instant};

use conduit_mcp::{Client, ClientConfig, Error, LifecycleEvent, Status};
use serde_json::json;

use common::figure;

/// What a client did with a server that keeps dying.
#[derive(Debug)]
struct Run {
    /// Servers spawned.
    spawned: usize,
    /// `(attempt, delay)` of every Restarting event, in order.
    restarts: Vec<(u32, Duration)>,
    /// The final status, if one was reached within the limit.
    end: Option<Status>,
    took: Duration,
}

/// Runs `cfg` until the client ends (at most `limit`), with `drive` (if
/// any) calling it in a loop meanwhile; then stops it, waits until every
/// server it started is gone, and reports.
async fn run(cfg: ClientConfig, limit: Duration, drive: Option<fn(Client) -> Drive>) -> Run {
    let (client, mut events) = common::start_recording(cfg).await;
    let t = Instant::now();
    let driver = drive.map(|d| tokio::spawn(d(client.clone())));
    let end = tokio::time::timeout(limit, async {
        let mut rx = client.watch_status();
        loop {
            let s = rx.borrow_and_update().clone();
            if s.is_final() {
                return s;
            }
            if rx.changed().await.is_err() {
                return s;
            }
        }
    })
    .await
    .ok();
    let took = t.elapsed();
    let reports = crate::common::shutdown(client.stop().wait()).await;
    if let Some(d) = driver {
        d.await.unwrap();
    }
    for r in &reports {
        assert!(
            !common::alive(r.pid),
            "server {} outlived the client",
            r.pid
        );
    }
    let evs = common::drain(&mut events);
    Run {
        spawned: evs
            .iter()
            .filter(|e| matches!(e, LifecycleEvent::Spawned { .. }))
            .count(),
        restarts: evs
            .iter()
            .filter_map(|e| match e {
                LifecycleEvent::Restarting { attempt, delay, .. } => Some((*attempt, *delay)),
                _ => None,
            })
            .collect(),
        end,
        took,
    }
}

type Drive = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Asks for an answer over `max_message_bytes` (1 KiB below) again and
/// again, as a host re-listing tools on every ready would: each answer
/// closes the link.
fn oversize_answers(client: Client) -> Drive {
    Box::pin(async move {
        loop {
            let r = client
                .request("fixture/big", Some(json!({ "bytes": 4096 })))
                .await;
            if matches!(r, Err(Error::Stopped | Error::GaveUp { .. })) {
                return;
            }
        }
    })
}

fn describe(r: &Run) -> String {
    let attempts: Vec<u32> = r.restarts.iter().map(|(a, _)| *a).collect();
    let shown = if attempts.len() > 8 {
        format!("{:?} ... ({} restarts)", &attempts[..8], attempts.len())
    } else {
        format!("{attempts:?}")
    };
    format!(
        "{} servers spawned in {:.2?}, restart attempts {shown}, end: {:?}",
        r.spawned, r.took, r.end
    )
}

/// The restarts of `r` as a client that gives up after `max` restarts must
/// show them: numbered 1..=max, each delay longer than the one before, then
/// the give-up after `max + 1` servers.
fn assert_gave_up_after(r: &Run, max: u32) {
    let attempts: Vec<u32> = r.restarts.iter().map(|(a, _)| *a).collect();
    assert_eq!(
        attempts,
        (1..=max).collect::<Vec<_>>(),
        "restart numbers: {}",
        describe(r)
    );
    assert!(
        r.restarts.windows(2).all(|w| w[0].1 < w[1].1),
        "the backoff must grow while the server keeps dying: {:?}",
        r.restarts
    );
    assert_eq!(r.spawned, max as usize + 1, "{}", describe(r));
    match &r.end {
        Some(Status::GaveUp(why)) => assert!(
            why.contains(&format!("after {} ", max + 1)),
            "the give-up counts every attempt: {why}"
        ),
        other => panic!("expected a give-up, got {other:?}: {}", describe(r)),
    }
}

/// A server that exits 3 right after answering the handshake
/// (`initialize` in the legacy era, `server/discover` in the modern), with
/// `max_reconnects(3)`: the client must give up after 3 restarts. Before
/// the fix reaching Ready reset the count: 85 spawns in 10 s in the
/// issue's run, every one "Restarting #1", and no give-up ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_right_after_its_handshake_is_given_up_after_max_reconnects() {
    // The legacy server also answers the discovery probe (with an error):
    // its handshake is the second answer.
    for (era, answers) in [("legacy", "2"), ("dual", "1")] {
        let cfg = common::config(&["--era", era, "--exit-after", answers, "--exit-code", "3"]);
        let r = run(cfg, Duration::from_secs(5), None).await;
        figure(
            &format!("server exiting 3 right after its handshake ({era}), max_reconnects 3"),
            describe(&r),
        );
        assert_gave_up_after(&r, 3);
    }
}

/// A ready server whose answers are over `max_message_bytes`, asked again
/// and again: each answer closes the link after the server was ready. The
/// client must give up after `max_reconnects` restarts as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_server_whose_answers_are_too_large_is_given_up_after_max_reconnects() {
    let cfg = common::config(&[]).max_message_bytes(1024);
    let r = run(cfg, Duration::from_secs(5), Some(oversize_answers)).await;
    figure(
        "ready server answering over max_message_bytes, asked in a loop, max_reconnects 3",
        describe(&r),
    );
    assert_gave_up_after(&r, 3);
}

/// A server that stays up (ready) for the restart period before it dies is
/// restarted as restart number 1 each time, with the shortest backoff, and
/// never given up, whatever `max_reconnects` is: only deaths within the
/// period count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stays_up_for_the_restart_period_is_restarted_from_one() {
    const PERIOD: Duration = Duration::from_millis(300);
    let cfg = common::config(&[]).max_reconnects(1).restart_period(PERIOD);
    let (client, mut events) = common::start_recording(cfg).await;
    let mut pids = Vec::new();
    for _ in 0..3 {
        let pid = common::ready_pid(&client).await;
        pids.push(pid);
        // The uptime under test, not a synchronisation.
        tokio::time::sleep(PERIOD + Duration::from_millis(100)).await;
        let _ = client
            .request("fixture/exit", Some(json!({ "code": 5 })))
            .await;
        // Its close seen: the next ready server is another.
        common::wait_status(
            &client,
            Duration::from_secs(10),
            |s| !matches!(s, Status::Ready(r) if r.pid == Some(pid)),
        )
        .await;
    }
    let last = common::ready_pid(&client).await;
    let status = client.status();
    crate::common::shutdown(client.stop().wait()).await;
    let restarts: Vec<(u32, Duration)> = common::drain(&mut events)
        .into_iter()
        .filter_map(|e| match e {
            LifecycleEvent::Restarting { attempt, delay, .. } => Some((attempt, delay)),
            _ => None,
        })
        .collect();
    figure(
        "server up 400 ms then exiting, 3 times, restart_period 300 ms, max_reconnects 1",
        format!(
            "restarts (attempt, delay): {restarts:?}; then ready: {}",
            matches!(status, Status::Ready(_))
        ),
    );
    assert!(!pids.contains(&last), "a fourth server serves");
    assert!(matches!(status, Status::Ready(_)), "{status:?}");
    assert_eq!(
        restarts,
        vec![(1, Duration::from_millis(20)); 3],
        "each restart is number 1, with the initial backoff"
    );
}
