//! Framing, junk, limits, exits, restarts, stderr, environment and
//! arguments, against the fixture server.

use crate::common;

use std::time::{Duration, Instant};

use conduit_mcp::{
    ChildExit, Client, ClientConfig, CloseReason, Error, Secret, SpawnError, StartError, Status,
    StderrMode,
};
use serde_json::{json, Value};

use common::wait_status;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_under_the_limit_is_dropped_and_never_answered() {
    let dir = common::tempdir("junk");
    let log = dir.join("in.log");
    let client = Client::start(common::config(&[
        "--junk-before",
        "10",
        "--junk-each",
        "3",
        "--log-file",
        log.to_str().unwrap(),
    ]))
    .await
    .unwrap();
    for i in 0..20 {
        let r = client
            .request("echo", Some(json!({ "i": i })))
            .await
            .unwrap();
        assert_eq!(r["i"], i);
    }
    let s = client.session().unwrap();
    crate::common::shutdown(client.stop().wait()).await;
    // The same server served everything: junk never restarted it.
    assert!(s.pid.is_some());
    // Everything the client wrote was a request or notification of its own.
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v.get("method").is_some(), "client answered junk: {line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_over_the_limit_closes_and_restarts() {
    // The fixture's junk cycle starts with four junk lines (banner, `{}`, a
    // batch, partial JSON) before a BOM-prefixed valid line, so a limit of
    // 3 is crossed on every start.
    let mut cfg = common::config(&["--junk-before", "40"]);
    cfg = cfg.max_junk_lines(3);
    let client = Client::start(cfg).await.unwrap();
    let s = wait_status(&client, Duration::from_secs(10), |s| {
        matches!(s, Status::Restarting { .. } | Status::GaveUp(_))
    })
    .await;
    let text = format!("{s:?}");
    assert!(text.contains("not JSON-RPC"), "{text}");
    // Every attempt meets the same junk: the client gives up.
    let s = wait_status(&client, Duration::from_secs(10), |s| s.is_final()).await;
    assert!(matches!(s, Status::GaveUp(_)), "{s:?}");
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_at_the_limit_passes_and_one_over_closes() {
    let limit = 64 * 1024;
    let mut cfg = common::config(&["--line-bytes", &limit.to_string()]);
    cfg = cfg.max_message_bytes(limit);
    let client = Client::start(cfg).await.unwrap();
    assert_eq!(
        client
            .request("echo", Some(json!({"ok": 1})))
            .await
            .unwrap()["ok"],
        1
    );
    crate::common::shutdown(client.stop().wait()).await;

    let mut cfg = common::config(&["--line-bytes", &(limit + 1).to_string()]);
    cfg = cfg.max_message_bytes(limit);
    cfg = cfg.max_reconnects(0);
    let client = Client::start(cfg).await.unwrap();
    let s = wait_status(&client, Duration::from_secs(10), |s| s.is_final()).await;
    assert!(
        format!("{s:?}").contains("over the 65536-byte limit"),
        "{s:?}"
    );
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_that_never_reads_is_closed_once_callers_wait_for_room() {
    common::trace();
    // Reads the handshake (initialize, initialized), then never again.
    let mut cfg = common::config(&["--stop-reading-after", "2", "--ignore-term"]);
    cfg = cfg.max_write_queue_bytes(1024 * 1024);
    cfg = cfg.write_stall_timeout(Duration::from_millis(500));
    cfg = cfg.era(conduit_mcp::EraPreference::Stateful);
    let client = Client::start(cfg).await.unwrap();
    client.ready(Duration::from_secs(10)).await.unwrap();
    let mut events = client.events();
    let big = "x".repeat(64 * 1024);
    let t = Instant::now();
    let mut calls = Vec::new();
    for _ in 0..40 {
        let c = client.clone();
        let p = json!({ "pad": big });
        calls.push(tokio::spawn(async move {
            c.request_with(
                "echo",
                Some(p),
                conduit_mcp::RequestOptions::new().timeout(Duration::from_secs(10)),
            )
            .await
        }));
    }
    // The pipe fills, then the 1 MiB queue; later callers wait for room.
    // No byte is accepted for the stall time while they wait: the server is
    // closed as not reading, and restarted (it had been ready).
    let s = wait_status(&client, Duration::from_secs(10), |s| {
        matches!(s, Status::Restarting { .. })
    })
    .await;
    assert!(format!("{s:?}").contains("stopped reading"), "{s:?}");
    let closed_after = t.elapsed();
    // After the stall time (the 10 s wait above bounds it from above).
    assert!(
        closed_after >= Duration::from_millis(500),
        "{closed_after:?}"
    );
    // The status leaves Ready just before the calls in flight are failed
    // with the reason, and the Closed event follows them: stop only after
    // it (a stop in between would fail them with `Stopped` instead).
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(e) = events.recv().await {
            if matches!(e, conduit_mcp::LifecycleEvent::Closed { .. }) {
                return;
            }
        }
    })
    .await
    .expect("the Closed event");
    crate::common::shutdown(client.stop().wait()).await;
    let (mut stalled, mut stopped) = (0, 0);
    for c in calls {
        let outcome = common::within(Duration::from_secs(20), "a call's end", c).await;
        match outcome.unwrap() {
            Err(Error::Closed(CloseReason::WriteStalled { stalled_for, .. })) => {
                assert!(stalled_for >= Duration::from_millis(500));
                stalled += 1;
            }
            Err(Error::Stopped) => stopped += 1,
            other => panic!("unexpected outcome: {other:?}"),
        }
    }
    // Sent (in the pipe or the queue): failed with the reason; still
    // waiting for room when the client stopped: failed with that. None hung.
    assert!(stalled > 0, "stalled {stalled}, stopped {stopped}");
    assert_eq!(stalled + stopped, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_exit_fails_in_flight_calls_at_once_then_restarts() {
    let dir = common::tempdir("exit");
    let log = dir.join("in.log");
    let client = Client::start(common::config(&["--log-file", log.to_str().unwrap()]))
        .await
        .unwrap();
    let first = client.ready(Duration::from_secs(10)).await.unwrap().pid;
    let calls: Vec<_> = (0..50)
        .map(|_| {
            let c = client.clone();
            tokio::spawn(async move { c.request("sleep", Some(json!({"ms": 30_000}))).await })
        })
        .collect();
    let count = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("\"sleep\"")
            .count()
    };
    common::eventually(Duration::from_secs(10), || count() == 50)
        .await
        .expect("calls in flight");
    let t = Instant::now();
    let c = client.clone();
    tokio::spawn(async move { c.request("fixture/exit", Some(json!({"code": 7}))).await });
    // With the exit, not after their 30 s sleep (nor the 20 s request
    // timeout: that would be another error).
    for call in calls {
        match common::within(Duration::from_secs(20), "a call's failure", call)
            .await
            .unwrap()
        {
            Err(Error::Closed(CloseReason::Exited(ChildExit::Code(7)))) => {}
            other => panic!("unexpected: {other:?}"),
        }
    }
    println!(
        "50 in-flight calls failed {:?} after the exit request",
        t.elapsed()
    );
    // The restarted server serves the next call.
    let r = client
        .request("echo", Some(json!({"again": true})))
        .await
        .unwrap();
    assert_eq!(r["again"], true);
    assert_ne!(client.pid(), first);
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_loop_respects_backoff_and_gives_up() {
    let cfg = common::config(&["--exit-immediately", "3"]);
    let backoff = cfg.get_backoff();
    let max = cfg.get_max_reconnects();
    let t = Instant::now();
    let client = Client::start(cfg).await.unwrap();
    let s = wait_status(&client, Duration::from_secs(20), |s| s.is_final()).await;
    let took = t.elapsed();
    let min: Duration = (1..=max).map(|a| backoff.delay(a)).sum();
    assert!(took >= min, "gave up after {took:?}, backoff needs {min:?}");
    match &s {
        Status::GaveUp(why) => assert!(why.contains("exit status 3"), "{why}"),
        other => panic!("{other:?}"),
    }
    let e = client.request("echo", None).await.unwrap_err();
    assert!(matches!(e, Error::GaveUp { .. }), "{e}");
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_flood_never_blocks_in_any_mode() {
    let dir = common::tempdir("stderr");
    let file = dir.join("server.log");
    for mode in [
        StderrMode::Discard,
        StderrMode::File(file.clone()),
        StderrMode::File(file.clone()),
    ] {
        let client = Client::start(common::config(&["--stderr-mib", "10"]).stderr(mode))
            .await
            .unwrap();
        let r = client.request("echo", Some(json!({"x": 1}))).await.unwrap();
        assert_eq!(r["x"], 1);
        crate::common::shutdown(client.stop().wait()).await;
    }
    // Appended, not truncated: two runs of 10 MiB.
    let len = std::fs::metadata(&file).unwrap().len();
    assert!(len >= 20 * 1024 * 1024, "{len}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_inherit_does_not_block() {
    // Inherit goes to the test harness's stderr; 1 MiB keeps the log small.
    let client = Client::start(common::config(&["--stderr-mib", "1"]).stderr(StderrMode::Inherit))
        .await
        .unwrap();
    assert_eq!(
        client.request("echo", Some(json!({"x": 2}))).await.unwrap()["x"],
        2
    );
    crate::common::shutdown(client.stop().wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_is_allowlist_plus_configured_and_args_are_literal() {
    let evil = ["; rm -rf ~", "$(id)", "`id`", "a b", "'\"", "*"];
    let mut args = vec!["--"];
    args.extend(evil);
    let cfg = common::config(&args)
        .env("PLAIN", "visible")
        .env("TOKEN", Secret::new("hunter2-secret"))
        .cd("/");
    let client = Client::start(cfg).await.unwrap();
    let info = client.request("fixture/info", None).await.unwrap();
    crate::common::shutdown(client.stop().wait()).await;
    let got_args: Vec<&str> = info["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(got_args[0], "--");
    assert_eq!(&got_args[1..], evil);
    assert_eq!(info["cwd"], "/");
    let env = info["env"].as_object().unwrap();
    let allow = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];
    for (k, v) in env {
        assert!(
            allow.contains(&k.as_str()) || k == "PLAIN" || k == "TOKEN",
            "unexpected variable {k}"
        );
        let parent = std::env::var(k).ok();
        if allow.contains(&k.as_str()) {
            assert_eq!(Some(v.as_str().unwrap()), parent.as_deref());
        }
    }
    assert_eq!(env["PLAIN"], "visible");
    assert_eq!(env["TOKEN"], "hunter2-secret");
    if std::env::var("PATH").is_ok() {
        assert!(env.contains_key("PATH"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_configuration_is_a_clear_error() {
    let e = Client::start(ClientConfig::new("no-such-server-binary-xyz"))
        .await
        .unwrap_err();
    match &e {
        StartError::Spawn(SpawnError::NotFound { command, .. }) => {
            assert_eq!(command, "no-such-server-binary-xyz")
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("no-such-server-binary-xyz"));
    let e = Client::start(ClientConfig::new("npx -y server"))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, StartError::Config(c) if c.key == "command"),
        "{e}"
    );
    let e = Client::start(common::config(&[]).cd("/no/such/dir"))
        .await
        .unwrap_err();
    assert!(matches!(&e, StartError::Config(c) if c.key == "cd"), "{e}");
}
