//! Hostile servers (DESIGN.md section 6), each with a printed figure:
//! `RELIABILITY | scenario | figure`. Run with `--nocapture` to see them.

mod common;

use std::time::{Duration, Instant};

use conduit_mcp::LifecycleEvent;
use conduit_mcp::{
    ChildExit, Client, CloseReason, EraPreference, Error, RequestOptions, StartOptions, Status,
    StderrMode,
};
use serde_json::json;

fn figure(scenario: &str, value: String) {
    println!("RELIABILITY | {scenario} | {value}");
}

use common::final_status;

/// CPU time (user + system) of this process so far.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let f: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 1000 / 100)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_flood_of_64_mib_while_answering() {
    let dir = common::tempdir("flood");
    for (label, mode) in [
        ("discard", StderrMode::Discard),
        ("file", StderrMode::File(dir.join("err.log"))),
        ("log", StderrMode::Log),
    ] {
        let client = Client::start(common::config(&["--stderr-flood-mib", "64"]).stderr(mode))
            .await
            .unwrap();
        let mut events = client.events();
        let t = Instant::now();
        for i in 0..200 {
            let r = client
                .request("echo", Some(json!({ "i": i })))
                .await
                .unwrap();
            assert_eq!(r["i"], i);
        }
        let took = t.elapsed();
        crate::common::shutdown(client.stop().wait()).await;
        drop(events.try_recv());
        figure(
            &format!("64 MiB stderr flood, stderr={label}"),
            format!("200/200 requests answered in {took:.2?} during the flood"),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_of_8_mib_minus_one_exact_and_plus_one() {
    let limit = conduit_mcp::ClientConfig::new("x").get_max_message_bytes();
    for (delta, ok) in [(-1i64, true), (0, true), (1, false)] {
        let n = (limit as i64 + delta) as usize;
        let mut cfg = common::config(&["--line-bytes", &n.to_string()]);
        cfg = cfg.max_reconnects(0);
        let client = Client::start(cfg).await.unwrap();
        if ok {
            let r = client
                .request("echo", Some(json!({"ok": 1})))
                .await
                .unwrap();
            assert_eq!(r["ok"], 1);
        } else {
            let s = final_status(&client, Duration::from_secs(20)).await;
            assert!(
                format!("{s:?}").contains("over the 8388608-byte limit"),
                "{s:?}"
            );
        }
        crate::common::shutdown(client.stop().wait()).await;
        figure(
            &format!("line of 8 MiB {delta:+} bytes"),
            if ok {
                "accepted".into()
            } else {
                "closed: message too large".into()
            },
        );
    }
}

/// A server that stops reading: callers wait for room in the write queue
/// (the issuer never blocks), and only a server that accepts no byte for
/// `write_stall_timeout` while callers wait is closed (`WriteStalled`).
/// No call hangs: each resolves within its own timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_that_stops_reading_while_10000_requests_are_sent() {
    const TIMEOUT: Duration = Duration::from_secs(30);
    let mut cfg = common::config(&["--stop-reading-after", "2"]);
    cfg = cfg.era(EraPreference::Stateful);
    cfg = cfg.write_stall_timeout(Duration::from_secs(1));
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let client = Client::start_with(cfg, StartOptions::new().events(tx))
        .await
        .unwrap();
    client.ready(Duration::from_secs(10)).await.unwrap();
    let pad = "p".repeat(2048);
    let t = Instant::now();
    let calls: Vec<_> = (0..10_000)
        .map(|i| {
            let c = client.clone();
            let p = json!({ "i": i, "pad": pad });
            tokio::spawn(async move {
                let t = Instant::now();
                let r = c
                    .request_with("echo", Some(p), RequestOptions::new().timeout(TIMEOUT))
                    .await;
                (r, t.elapsed())
            })
        })
        .collect();
    let issued = t.elapsed();
    let (stalled_for, queued) = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(e) = events.recv().await {
            if let LifecycleEvent::Closed {
                reason:
                    CloseReason::WriteStalled {
                        stalled_for,
                        queued,
                    },
                ..
            } = e
            {
                return (stalled_for, queued);
            }
        }
        panic!("the events ended without a write-stalled close");
    })
    .await
    .expect("closed as write-stalled");
    let closed_after = t.elapsed();
    crate::common::shutdown(client.stop().wait()).await;
    let (mut stalled, mut stopped, mut other, mut slowest) = (0, 0, Vec::new(), Duration::ZERO);
    for c in calls {
        let (r, took) = tokio::time::timeout(TIMEOUT * 2, c)
            .await
            .expect("a call hung")
            .unwrap();
        slowest = slowest.max(took);
        match r {
            Err(Error::Closed(CloseReason::WriteStalled { .. })) => stalled += 1,
            Err(Error::Stopped) => stopped += 1,
            Err(e) => other.push(e.to_string()),
            Ok(_) => panic!("a request to a server that stopped reading succeeded"),
        }
    }
    let others = other.len();
    other.sort();
    other.dedup();
    figure(
        "server stops reading, 10,000 requests of 2 KiB",
        format!(
            "all 10,000 calls issued in {issued:.2?} without blocking; closed as write-stalled after \
             {closed_after:.2?} (stalled for {stalled_for:.2?}, {queued} bytes queued); {stalled} failed \
             with write-stalled, {stopped} with client-stopped, {} otherwise {other:?}; slowest call \
             resolved in {slowest:.2?}; 0 hung",
            others
        ),
    );
    assert!(stalled > 0);
    assert!(slowest <= TIMEOUT + Duration::from_secs(1), "{slowest:?}");
    assert!(stalled_for >= Duration::from_secs(1), "{stalled_for:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_that_reads_very_slowly() {
    let client = Client::start(common::config(&["--slow-read-ms", "5"]))
        .await
        .unwrap();
    let t = Instant::now();
    let calls: Vec<_> = (0..100)
        .map(|i| {
            let c = client.clone();
            tokio::spawn(async move { c.request("echo", Some(json!({ "i": i }))).await })
        })
        .collect();
    for (i, c) in calls.into_iter().enumerate() {
        assert_eq!(c.await.unwrap().unwrap()["i"], i);
    }
    let took = t.elapsed();
    crate::common::shutdown(client.stop().wait()).await;
    figure(
        "server reading one line per 5 ms",
        format!("100/100 answered in {took:.2?}"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_with_1000_requests_in_flight() {
    let dir = common::tempdir("crash1000");
    let log = dir.join("in.log");
    let client = Client::start(common::config(&["--log-file", log.to_str().unwrap()]))
        .await
        .unwrap();
    client.ready(Duration::from_secs(10)).await.unwrap();
    let calls: Vec<_> = (0..1000)
        .map(|_| {
            let c = client.clone();
            tokio::spawn(async move { c.request("sleep", Some(json!({"ms": 60_000}))).await })
        })
        .collect();
    common::eventually(Duration::from_secs(20), || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("\"sleep\"")
            .count()
            == 1000
    })
    .await
    .expect("1000 calls in flight");
    let t = Instant::now();
    let _ = client
        .request_with(
            "fixture/exit",
            Some(json!({"code": 42})),
            RequestOptions::new().timeout(Duration::from_secs(5)),
        )
        .await;
    // They fail with the exit, not after their minute's sleep.
    let with_exit = common::within(Duration::from_secs(30), "the calls' failure", async {
        let mut with_exit = 0;
        for c in calls {
            if let Err(Error::Closed(CloseReason::Exited(ChildExit::Code(42)))) = c.await.unwrap() {
                with_exit += 1;
            }
        }
        with_exit
    })
    .await;
    let took = t.elapsed();
    assert_eq!(with_exit, 1000);
    let r = client
        .request("echo", Some(json!({"after": 1})))
        .await
        .unwrap();
    assert_eq!(r["after"], 1);
    crate::common::shutdown(client.stop().wait()).await;
    figure(
        "crash with 1,000 requests in flight",
        format!("1000/1000 failed with `exit status 42` within {took:.2?}; 0 hung; restarted server answered"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_loop_and_vanished_executable_respect_backoff_with_low_cpu() {
    // A server that exits at once on every start.
    let cfg = common::config(&["--exit-immediately", "1"]);
    let (backoff, max) = (cfg.get_backoff(), cfg.get_max_reconnects());
    let cpu0 = cpu_time();
    let t = Instant::now();
    let client = Client::start(cfg).await.unwrap();
    let s = final_status(&client, Duration::from_secs(30)).await;
    let took = t.elapsed();
    let cpu = cpu_time() - cpu0;
    crate::common::shutdown(client.stop().wait()).await;
    assert!(matches!(s, Status::GaveUp(_)), "{s:?}");
    let min: Duration = (1..=max).map(|a| backoff.delay(a)).sum();
    assert!(took >= min);
    figure(
        "server exits at once on every start",
        format!("gave up after {} attempts in {took:.2?} (backoff floor {min:.2?}), client CPU {cpu:.2?}", max + 1),
    );

    // The executable disappears while the client runs.
    let dir = common::tempdir("vanish");
    let exe = dir.join("server-copy");
    // A link, not a copy: a copy's write descriptor can be inherited by a
    // child another test is spawning at that instant, and exec of a file
    // open for writing fails with ETXTBSY.
    #[cfg(unix)]
    std::os::unix::fs::symlink(common::fixture(), &exe).unwrap();
    #[cfg(not(unix))]
    std::fs::copy(common::fixture(), &exe).unwrap();
    let mut cfg = common::config(&[]);
    cfg.transport.as_stdio_mut().unwrap().command = exe.to_string_lossy().into();
    let client = Client::start(cfg).await.unwrap();
    client.ready(Duration::from_secs(10)).await.unwrap();
    std::fs::remove_file(&exe).unwrap();
    let cpu0 = cpu_time();
    let t = Instant::now();
    let _ = client
        .request("fixture/exit", Some(json!({"code": 1})))
        .await;
    let s = final_status(&client, Duration::from_secs(30)).await;
    let took = t.elapsed();
    let cpu = cpu_time() - cpu0;
    match &s {
        Status::GaveUp(why) => assert!(why.contains("not found"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(took >= min, "{took:?}");
    crate::common::shutdown(client.stop().wait()).await;
    figure(
        "executable missing at restart",
        format!("gave up ({s:?}) after {took:.2?}, client CPU {cpu:.2?}"),
    );
}

const INHERIT_ROLE: &str = "CONDUIT_TEST_ROLE_INHERIT_FLOOD";

/// stderr=inherit: the flood goes to this process's stderr, so the test
/// re-runs itself with stderr pointed at /dev/null (keeping CI logs small).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_flood_of_64_mib_inherited() {
    if std::env::var(INHERIT_ROLE).is_ok() {
        let client = Client::start(
            common::config(&["--stderr-flood-mib", "64"]).stderr(StderrMode::Inherit),
        )
        .await
        .unwrap();
        let t = Instant::now();
        for i in 0..200 {
            assert_eq!(
                client
                    .request("echo", Some(json!({ "i": i })))
                    .await
                    .unwrap()["i"],
                i
            );
        }
        println!("INHERIT-OK {:.2?}", t.elapsed());
        crate::common::shutdown(client.stop().wait()).await;
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "stderr_flood_of_64_mib_inherited", "--nocapture"])
        .env(INHERIT_ROLE, "1")
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let took = text
        .lines()
        .find_map(|l| l.strip_prefix("INHERIT-OK "))
        .expect("child reported");
    figure(
        "64 MiB stderr flood, stderr=inherit",
        format!("200/200 requests answered in {took} during the flood"),
    );
}

/// Calls race the server's exits: it dies after every 40 answers while 8
/// tasks keep calling. A call sent straight to a link that is closing must
/// still resolve (answered, or failed with the exit), never wait for its
/// timeout, and calls made while no server runs wait for the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_racing_repeated_server_exits_all_resolve() {
    // A server dying every 40 answers is a crash loop the client would give
    // up on (max_reconnects within restart_period): here it restarts it
    // for ever, with a constant backoff, as this test is about the calls.
    let steady = conduit_mcp::Backoff::new()
        .initial(Duration::from_millis(20))
        .max(Duration::from_millis(20))
        .factor(1.0);
    let cfg = common::config(&["--exit-after", "40", "--exit-code", "7"])
        .backoff(steady)
        .max_reconnects(u32::MAX);
    let client = Client::start(cfg).await.unwrap();
    client.ready(Duration::from_secs(10)).await.unwrap();
    let t = Instant::now();
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let c = client.clone();
            tokio::spawn(async move {
                let (mut ok, mut exited) = (0u32, 0u32);
                for i in 0..150 {
                    let r = c
                        .request_with(
                            "echo",
                            Some(json!({ "task": task, "i": i })),
                            RequestOptions::new().timeout(Duration::from_secs(15)),
                        )
                        .await;
                    match r {
                        Ok(v) => {
                            assert_eq!(
                                (v["task"].as_i64(), v["i"].as_i64()),
                                (Some(task), Some(i))
                            );
                            ok += 1;
                        }
                        Err(Error::Closed(CloseReason::Exited(ChildExit::Code(7)))) => exited += 1,
                        Err(e) => panic!("call {task}/{i} ended with {e}"),
                    }
                }
                (ok, exited)
            })
        })
        .collect();
    let (mut ok, mut exited) = (0, 0);
    for t in tasks {
        let (o, e) = t.await.unwrap();
        ok += o;
        exited += e;
    }
    let took = t.elapsed();
    assert_eq!(ok + exited, 1200);
    // Each server answers 40 (fewer calls, counting the handshake) and the
    // calls in flight at its exit fail: most calls are still answered.
    assert!(ok >= 600 && exited > 0, "{ok} answered, {exited} failed");
    assert!(took < Duration::from_secs(60), "{took:?}");
    crate::common::shutdown(client.stop().wait()).await;
    figure(
        "calls racing repeated server exits",
        format!("1200/1200 resolved in {took:.2?}: {ok} answered, {exited} failed with exit status 7, 0 timed out"),
    );
}
