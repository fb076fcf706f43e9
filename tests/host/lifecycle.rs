//! A host of fixture servers: concurrent start, events tagged with the
//! server's name, add and remove at run time, one stop that ends every
//! process, a crash of one server while the others keep serving, and the
//! host as a subtree of the user's actor.

use crate::common;
use crate::host_support;

use std::time::Duration;

use conduit_mcp::host::{Host, HostConfig, HostError, HostEvent, HostOptions, WhenUnavailable};
use conduit_mcp::LifecycleEvent;
use conduit_mcp::{Backoff, ClientConfig, Status};
use host_support::{assert_all_gone, finish, listed, until, PATIENCE};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use serde_json::json;

/// A fixture server whose restarts wait `backoff` and stop after `max`.
fn restarting(backoff: Duration, max: u32) -> ClientConfig {
    common::config(&[])
        .backoff(Backoff::new().initial(backoff).max(backoff).factor(1.0))
        .max_reconnects(max)
}

fn pid_of(host: &Host, server: &str) -> u32 {
    host.client(server)
        .and_then(|c| c.pid())
        .unwrap_or_else(|| panic!("{server} has a ready server"))
}

fn text(result: &conduit_mcp::protocol::CallToolResult) -> String {
    result.joined_text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_starts_every_server_and_joins_their_tools_in_one_namespace() {
    common::trace();
    let (opts, mut events) = HostOptions::new().subscribe();
    let config = HostConfig::new()
        .server("one", common::config(&[]))
        .server("two", common::config(&["--era", "legacy"]))
        .server("three", common::config(&[]));
    let host = Host::start_with(config, opts).await.unwrap();
    let servers = host.servers();
    assert_eq!(servers.len(), 3);
    for s in &servers {
        assert!(s.is_ready(), "{s:?}");
        assert_eq!(s.tools, 5, "{s:?}");
        assert!(s.ready_after.is_some(), "{s:?}");
    }
    assert_eq!(
        host.server("two")
            .unwrap()
            .session()
            .unwrap()
            .protocol_version,
        "2025-11-25"
    );
    let names: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names.len(), 15, "{names:?}");
    for server in ["one", "two", "three"] {
        for tool in ["echo", "add", "sleep", "fail", "ask_roots"] {
            let want = format!("{server}__{tool}");
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
    }
    let tool = host
        .tools()
        .into_iter()
        .find(|t| t.name == "two__add")
        .unwrap();
    assert_eq!(
        (tool.server.as_str(), tool.tool.name.as_str()),
        ("two", "add")
    );
    assert!(host.collisions().is_empty());

    // Calls go to the server the name says.
    let sum = host
        .call_tool("two__add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(text(&sum), "42");
    let echo = host
        .call_tool("three__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "hi");
    let e = host.call_tool("four__echo", json!({})).await.unwrap_err();
    assert!(
        matches!(e, HostError::UnknownTool(ref n) if n == "four__echo"),
        "{e}"
    );
    // A server's error answer keeps its server's name and error object.
    let e = host
        .call_tool("one__add", json!({"a": 1}))
        .await
        .unwrap_err();
    assert!(
        matches!(e, HostError::Call { ref server, .. } if server == "one"),
        "{e}"
    );
    assert_eq!(e.server_error().unwrap().code, -32602);

    // Every lifecycle event arrives tagged with its server's name, from
    // the first spawn on, and each server's listing is announced.
    let mut seen: Vec<(String, &'static str)> = Vec::new();
    while let Ok(e) = events.try_recv() {
        match e {
            HostEvent::Lifecycle { server, event } => {
                let kind = match event {
                    LifecycleEvent::Spawned { name, .. } => {
                        assert_eq!(name, server);
                        "spawned"
                    }
                    LifecycleEvent::Ready { name, .. } => {
                        assert_eq!(name, server);
                        "ready"
                    }
                    _ => "other",
                };
                seen.push((server, kind));
            }
            HostEvent::Listed { server, tools, .. } => {
                assert_eq!(tools, 5);
                seen.push((server, "listed"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    for server in ["one", "two", "three"] {
        let order: Vec<&str> = seen
            .iter()
            .filter(|(s, _)| s == server)
            .map(|(_, k)| *k)
            .collect();
        assert_eq!(order, ["spawned", "ready", "listed"], "{server}: {seen:?}");
    }

    let pids: Vec<u32> = ["one", "two", "three"]
        .iter()
        .map(|s| pid_of(&host, s))
        .collect();
    let shutdowns = crate::common::shutdown(host.stop().wait()).await;
    assert_eq!(shutdowns.len(), 3);
    assert_all_gone(&shutdowns);
    for pid in pids {
        assert!(!common::alive(pid), "{pid} survived the stop");
    }
    assert!(host.servers().is_empty());
    assert!(matches!(
        host.call_tool("one__echo", json!({})).await,
        Err(HostError::Stopped)
    ));
    assert!(matches!(
        host.add("late", common::config(&[])).await,
        Err(HostError::Stopped)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_server_is_unavailable_while_the_others_keep_serving() {
    common::trace();
    let config = HostConfig::new()
        // Restarts after 1.5 s: long enough to call it while it restarts.
        .server("crashy", restarting(Duration::from_millis(1500), 3))
        .server("steady", common::config(&[]))
        .server("legacy", common::config(&["--era", "legacy"]));
    let host = Host::start(config).await.unwrap();
    let mut events = host.events();
    let old = pid_of(&host, "crashy");
    common::kill9(old);
    until(&mut events, |e| {
        matches!(e, HostEvent::Lifecycle { server, event: LifecycleEvent::Restarting { .. } } if server == "crashy")
    })
    .await;

    // Fail fast, saying what the server is doing.
    let e = host
        .call_tool("crashy__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    match &e {
        HostError::Unavailable { server, state } => {
            assert_eq!(server, "crashy");
            assert!(state.contains("restarting"), "{state}");
            assert!(state.contains("killed by signal 9"), "{state}");
        }
        other => panic!("expected Unavailable, got {other}"),
    }
    // Its tools stay in the namespace meanwhile, and the others serve.
    assert!(host.tools().iter().any(|t| t.name == "crashy__echo"));
    for (tool, args, want) in [
        ("steady__add", json!({"a": 1, "b": 2}), "3"),
        ("legacy__echo", json!({"text": "still here"}), "still here"),
    ] {
        let r = host.call_tool(tool, args).await.unwrap();
        assert_eq!(text(&r), want, "{tool}");
    }
    assert!(matches!(
        host.server("crashy").unwrap().status,
        Status::Restarting { .. }
    ));

    // Restarted: listed again, and serving.
    listed(&mut events, "crashy").await;
    let r = host
        .call_tool("crashy__echo", json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(text(&r), "back");
    assert_ne!(pid_of(&host, "crashy"), old);
    assert!(!common::alive(old));
    assert_all_gone(&crate::common::shutdown(host.stop().wait()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_gives_up_without_a_revive_leaves_the_namespace_with_its_reason() {
    common::trace();
    // A copy of the fixture that is deleted while it runs: the restart
    // after its crash cannot find it, and the client gives up.
    let dir = common::tempdir("host-gives-up");
    let exe = dir.join("fragile-server");
    std::fs::copy(common::fixture(), &exe).unwrap();
    let mut fragile = restarting(Duration::from_millis(20), 1);
    fragile.transport.as_stdio_mut().unwrap().command = exe.to_str().unwrap().into();
    let config = HostConfig::new()
        .server("fragile", fragile)
        .server("steady", common::config(&[]))
        .server_revive_after("fragile", Duration::ZERO);
    let host = Host::start(config).await.unwrap();
    let mut events = host.events();
    std::fs::remove_file(&exe).unwrap();
    common::kill9(pid_of(&host, "fragile"));
    let removed = until(&mut events, |e| matches!(e, HostEvent::Removed { .. })).await;
    let HostEvent::Removed { server, reason } = removed else {
        unreachable!()
    };
    assert_eq!(server, "fragile");
    assert!(reason.contains("fragile-server"), "{reason}");

    assert!(host.tools().iter().all(|t| t.server == "steady"));
    assert_eq!(host.tools().len(), 5);
    let s = host.server("fragile").unwrap();
    assert!(
        matches!(s.status, Status::GaveUp(ref r) if *r == reason),
        "{s:?}"
    );
    assert_eq!(s.tools, 0);
    let e = host
        .call_tool("fragile__echo", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(e, HostError::Removed { ref server, ref reason } if server == "fragile" && reason.contains("fragile-server")),
        "{e}"
    );
    let r = host
        .call_tool("steady__echo", json!({"text": "fine"}))
        .await
        .unwrap();
    assert_eq!(text(&r), "fine");
    assert_all_gone(&crate::common::shutdown(host.stop().wait()).await);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_gave_up_is_down_until_its_revive_then_serves_as_a_new_client() {
    // The pause the host is configured with: the time left to the next try
    // is never more.
    const PAUSE: Duration = Duration::from_millis(200);
    common::trace();
    let dir = common::tempdir("host-revive");
    let exe = dir.join("fragile-server");
    std::fs::copy(common::fixture(), &exe).unwrap();
    let mut fragile = restarting(Duration::from_millis(20), 0);
    fragile.transport.as_stdio_mut().unwrap().command = exe.to_str().unwrap().into();
    let config = HostConfig::new()
        .server("fragile", fragile)
        .server("steady", common::config(&[]))
        .revive_after(PAUSE);
    let host = Host::start(config).await.unwrap();
    let mut events = host.events();
    let first = host.client("fragile").unwrap();
    std::fs::remove_file(&exe).unwrap();
    common::kill9(pid_of(&host, "fragile"));

    // Down, not removed: it is tried again after its pause, cannot start
    // (its executable is gone) and is down again, with that reason.
    let down = until(&mut events, |e| matches!(e, HostEvent::Down { .. })).await;
    let HostEvent::Down { next_try_in, .. } = down else {
        unreachable!()
    };
    assert_eq!(next_try_in, PAUSE);
    until(
        &mut events,
        |e| matches!(e, HostEvent::Reviving { server } if server == "fragile"),
    )
    .await;
    let down = until(&mut events, |e| matches!(e, HostEvent::Down { .. })).await;
    let HostEvent::Down { reason, .. } = down else {
        unreachable!()
    };
    assert!(reason.contains("fragile-server"), "{reason}");
    // A call meanwhile names the server and why it is down, whether its
    // next revive has begun or not.
    let e = host
        .call_tool("fragile__echo", json!({}))
        .await
        .unwrap_err();
    match &e {
        HostError::Down {
            server,
            reason,
            next_try_in,
        } => {
            assert_eq!(server, "fragile");
            assert!(reason.contains("fragile-server"), "{e}");
            assert!(
                *next_try_in <= PAUSE,
                "the time left exceeds the pause: {e}"
            );
        }
        HostError::Unavailable { server, state } => {
            assert_eq!(server, "fragile");
            assert!(state.contains("fragile-server"), "{e}");
        }
        other => panic!("{other}"),
    }
    assert!(host.tools().iter().all(|t| t.server == "steady"));

    // Back, whole: its next revive is a new client that serves.
    let staged = dir.join("fragile-server.new");
    std::fs::copy(common::fixture(), &staged).unwrap();
    std::fs::rename(&staged, &exe).unwrap();
    listed(&mut events, "fragile").await;
    let r = host
        .call_tool("fragile__echo", json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(text(&r), "back");
    let s = host.server("fragile").unwrap();
    assert!(s.is_ready() && s.next_try_in.is_none(), "{s:?}");
    assert!(matches!(first.status(), Status::GaveUp(_)));
    assert_all_gone(&host.stop().wait().await);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(start_paused = true)]
async fn a_server_removed_while_down_is_not_started_again() {
    // Two servers that cannot start, each down until its revive; the clock
    // is tokio's, paused: it moves to the revive once all is idle.
    let dir = common::tempdir("host-revive-removed");
    let missing = dir.join("no-such-server");
    let config = HostConfig::new()
        .server("also", ClientConfig::new(missing.to_str().unwrap()))
        .server("gone", ClientConfig::new(missing.to_str().unwrap()))
        .revive_after(Duration::from_secs(5));
    let host = Host::start(config).await.unwrap();
    let mut events = host.events();
    for name in ["also", "gone"] {
        let s = host.server(name).unwrap();
        assert!(matches!(s.status, Status::GaveUp(_)), "{s:?}");
        assert_eq!(s.next_try_in, Some(Duration::from_secs(5)), "{s:?}");
    }
    host.remove("gone").unwrap().wait().await;
    // Both were due at once: the revives of one moment are told together.
    until(
        &mut events,
        |e| matches!(e, HostEvent::Reviving { server } if server == "also"),
    )
    .await;
    while let Ok(e) = events.try_recv() {
        assert!(!matches!(e, HostEvent::Reviving { .. }), "{e:?}");
    }
    assert!(host.server("gone").is_none());
    assert!(matches!(
        host.call_tool("gone__echo", json!({})).await,
        Err(HostError::UnknownTool(_))
    ));
    host.stop().wait().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_wait_a_call_waits_for_the_restarted_server() {
    let config = HostConfig::new()
        .server("crashy", restarting(Duration::from_millis(300), 3))
        .when_unavailable(WhenUnavailable::Wait);
    let host = Host::start(config).await.unwrap();
    let mut events = host.events();
    let old = pid_of(&host, "crashy");
    common::kill9(old);
    until(&mut events, |e| {
        matches!(
            e,
            HostEvent::Lifecycle {
                event: LifecycleEvent::Restarting { .. },
                ..
            }
        )
    })
    .await;
    let r = host
        .call_tool("crashy__echo", json!({"text": "waited"}))
        .await
        .unwrap();
    assert_eq!(text(&r), "waited");
    // Served by the new server (its status may turn ready just after).
    let new = host
        .client("crashy")
        .unwrap()
        .ready(PATIENCE)
        .await
        .unwrap();
    assert_ne!(new.pid, Some(old));
    assert_all_gone(&crate::common::shutdown(host.stop().wait()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_are_added_and_removed_at_run_time() {
    let host = Host::start(HostConfig::new().server("first", common::config(&[])))
        .await
        .unwrap();
    let mut events = host.events();
    host.add("late", common::config(&["--era", "legacy"]))
        .await
        .unwrap();
    listed(&mut events, "late").await;
    let summaries = host.ready(PATIENCE).await;
    assert!(summaries.iter().all(|s| s.is_ready()), "{summaries:?}");
    let r = host
        .call_tool("late__add", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    assert_eq!(text(&r), "42");

    // Names are unique; a server that cannot start is not added.
    assert!(matches!(
        host.add("late", common::config(&[])).await,
        Err(HostError::Duplicate(ref n)) if n == "late"
    ));
    let e = host
        .add("ghost", ClientConfig::new("conduit-mcp-no-such-server-exe"))
        .await
        .unwrap_err();
    assert!(
        matches!(e, HostError::Start { ref server, .. } if server == "ghost"),
        "{e}"
    );
    assert!(
        e.to_string().contains("conduit-mcp-no-such-server-exe"),
        "{e}"
    );
    assert!(host.server("ghost").is_none());

    let late_pid = pid_of(&host, "late");
    let removed = host.remove("late").unwrap().wait().await;
    assert_eq!(removed.len(), 1);
    assert_all_gone(&removed);
    assert!(!common::alive(late_pid));
    until(
        &mut events,
        |e| matches!(e, HostEvent::Removed { server, .. } if server == "late"),
    )
    .await;
    assert!(host.tools().iter().all(|t| t.server == "first"));
    assert!(matches!(
        host.call_tool("late__add", json!({})).await,
        Err(HostError::UnknownTool(_))
    ));
    assert!(matches!(
        host.remove("late"),
        Err(HostError::UnknownServer(_))
    ));
    assert_all_gone(&crate::common::shutdown(host.stop().wait()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_does_not_stop_the_others() {
    let config = HostConfig::new()
        .server("ghost", ClientConfig::new("conduit-mcp-no-such-server-exe"))
        .server("bad-cd", common::config(&[]).cd("/definitely/not/a/dir"))
        .server("fine", common::config(&[]));
    let host = Host::start(config).await.unwrap();
    let fine = host.server("fine").unwrap();
    assert!(fine.is_ready(), "{fine:?}");
    for (name, needle) in [
        ("ghost", "conduit-mcp-no-such-server-exe"),
        ("bad-cd", "cd"),
    ] {
        let s = host.server(name).unwrap();
        match &s.status {
            Status::GaveUp(reason) => assert!(reason.contains(needle), "{name}: {reason}"),
            other => panic!("{name}: {other:?}"),
        }
        assert!(!s.is_ready());
    }
    assert_eq!(host.tools().len(), 5);
    assert_all_gone(&crate::common::shutdown(host.stop().wait()).await);
}

/// A user's application root that holds a host under itself.
struct AppRoot;

impl Actor for AppRoot {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<()>,
        _evt: SupervisionEvent,
        _st: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_is_a_subtree_of_the_users_actor_and_dies_with_it() {
    let (root, handle) = Actor::spawn(None, AppRoot, ()).await.unwrap();
    let config = HostConfig::new()
        .server("a", common::config(&["--ignore-eof"]))
        .server("b", common::config(&[]));
    let host = Host::start_with(config, HostOptions::new().supervisor(root.get_cell()))
        .await
        .unwrap();
    // root -> HostSupervisor -> one ClientSupervisor per server.
    let children = root.get_children();
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].get_id(), host.supervisor().get_id());
    assert_eq!(host.supervisor().get_children().len(), 2);
    let pids = [pid_of(&host, "a"), pid_of(&host, "b")];

    root.kill();
    handle.await.unwrap();
    // The whole subtree went with the root: both servers (one ignores
    // stdin EOF: it gets SIGTERM) end.
    for pid in pids {
        assert!(
            common::eventually(Duration::from_secs(10), || !common::alive(pid))
                .await
                .is_some(),
            "server {pid} outlived the user's root"
        );
    }
    assert!(matches!(
        host.call_tool("a__echo", json!({})).await,
        Err(HostError::Stopped)
    ));
}

/// The fixture's arguments, from the server now running as `server`.
async fn args_of(host: &Host, server: &str) -> Vec<String> {
    let info = host
        .client(server)
        .unwrap()
        .request("fixture/info", None)
        .await
        .unwrap();
    serde_json::from_value(info["args"].clone()).unwrap()
}

/// The pid a `--pid-file` server wrote, if it got that far.
fn pid_in(file: &std::path::Path) -> Option<u32> {
    std::fs::read_to_string(file)
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_remove_add_of_one_name_runs_the_last_config() {
    let host = Host::start(HostConfig::new()).await.unwrap();
    let dir = common::tempdir("host-readd");
    let rounds = 20;
    let (mut wrong, mut b_failed, mut a_survived, mut raced) = (0, 0, 0, 0);
    for round in 0..rounds {
        let a_pid = dir.join(format!("a-{round}"));
        let a = common::config(&["--pid-file", a_pid.to_str().unwrap(), "--", "config-A"]);
        let b = common::config(&["--", "config-B"]);
        // `add(A)` is polled first: it reserves "x" and starts A; then "x"
        // is removed and added again with B while A starts.
        let (ra, (removed, rb)) = tokio::join!(host.add("x", a), async {
            let removed = host.remove("x");
            (removed, host.add("x", b).await)
        });
        let removed_while_starting = ra.is_err();
        raced += usize::from(removed_while_starting);
        if let Ok(r) = removed {
            r.wait().await;
        }
        if let Err(e) = &rb {
            eprintln!("round {round}: add(B): {e}");
            b_failed += 1;
        }
        if let Some(x) = host.client("x") {
            x.ready(PATIENCE).await.unwrap();
            if !args_of(&host, "x").await.contains(&"config-B".to_owned()) {
                wrong += 1;
            }
        }
        if let Ok(r) = host.remove("x") {
            r.wait().await;
        }
        // A ran under a name that was removed: its process ends.
        let gone = common::eventually(Duration::from_secs(10), || {
            pid_in(&a_pid).is_none_or(|p| !common::alive(p))
        })
        .await;
        a_survived += usize::from(gone.is_none());
    }
    eprintln!(
        "{rounds} rounds ({raced} removed A while it started): config A ran as x {wrong}, \
         add(B) failed {b_failed}, A outlived its removal {a_survived}"
    );
    assert_eq!((wrong, b_failed, a_survived), (0, 0, 0));
    assert!(host.servers().is_empty(), "{:?}", host.servers());
    assert_all_gone(&crate::common::shutdown(host.stop().wait()).await);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_start_does_not_remove_the_next_server_of_its_name() {
    let host = Host::start(HostConfig::new()).await.unwrap();
    let rounds = 10;
    let (mut lost, mut raced) = (0, 0);
    for round in 0..rounds {
        let bad = ClientConfig::new("conduit-mcp-no-such-server-exe");
        let good = common::config(&[]);
        let (_, (removed, rb)) = tokio::join!(host.add("y", bad), async {
            let removed = host.remove("y").is_ok();
            (removed, host.add("y", good).await)
        });
        raced += usize::from(removed);
        let kept = host.server("y").is_some();
        if rb.is_err() || !kept {
            eprintln!("round {round}: add(good) = {rb:?}, in the host: {kept}");
            lost += 1;
        }
        if let Ok(r) = host.remove("y") {
            assert_all_gone(&r.wait().await);
        }
    }
    eprintln!("{rounds} rounds ({raced} removed the failing one while it started): the good server was lost {lost}");
    assert_eq!(lost, 0);
    assert_all_gone(&crate::common::shutdown(host.stop().wait()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_waits_without_a_time_limit_does_not_overflow() {
    let slow = common::config(&["--start-delay-ms", "300"]).request_timeout(Duration::MAX);
    let config = HostConfig::new()
        .server("slow", slow)
        .when_unavailable(WhenUnavailable::Wait)
        .ready_timeout(Duration::from_millis(1));
    let host = Host::start(config).await.unwrap();
    assert!(!host.server("slow").unwrap().listed, "listed too soon");
    let r = host
        .call_tool("slow__echo", json!({"text": "late"}))
        .await
        .unwrap();
    assert_eq!(text(&r), "late");
    assert_all_gone(&crate::common::shutdown(host.stop().wait()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_server_runs_nothing_until_its_first_call_and_concurrent_first_calls_share_one_start(
) {
    let dir = common::tempdir("host-lazy");
    let pids = dir.join("pids");
    let idle = common::config(&["--pid-file", pids.to_str().unwrap()]);
    let config = HostConfig::new()
        .server("eager", common::config(&[]))
        .lazy_server("idle", idle);
    let host = Host::start(config).await.unwrap();
    let names: Vec<String> = host.servers().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["eager"]);
    assert_eq!(host.lazy_servers(), ["idle"]);
    assert!(host.is_lazy("idle"));
    assert_eq!(host.lazy_owner("idle__echo").as_deref(), Some("idle"));
    assert!(host.tools().iter().all(|t| t.server == "eager"));
    assert!(common::read_pids(&pids).is_empty(), "nothing ran yet");
    // Its name is taken: neither an eager nor a lazy one may have it.
    assert!(matches!(
        host.add("idle", common::config(&[])).await,
        Err(HostError::Duplicate(ref n)) if n == "idle"
    ));
    assert!(matches!(
        host.add_lazy("idle", common::config(&[])),
        Err(HostError::Duplicate(ref n)) if n == "idle"
    ));

    let mut calls = tokio::task::JoinSet::new();
    for i in 0..8 {
        let host = host.clone();
        calls.spawn(async move {
            let r = host
                .call_tool("idle__echo", json!({ "text": format!("hi {i}") }))
                .await;
            (i, r)
        });
    }
    while let Some(done) = calls.join_next().await {
        let (i, r) = done.unwrap();
        assert_eq!(text(&r.unwrap()), format!("hi {i}"));
    }
    assert_eq!(
        common::read_pids(&pids).len(),
        1,
        "one start for 8 first calls"
    );
    assert!(host.lazy_servers().is_empty());
    assert!(host.server("idle").is_some_and(|s| s.is_ready()));
    assert!(host.tools().iter().any(|t| t.name == "idle__echo"));
    // Started now: start_lazy only waits.
    host.start_lazy("idle").await.unwrap();
    assert!(matches!(
        host.start_lazy("nobody").await,
        Err(HostError::UnknownServer(ref n)) if n == "nobody"
    ));
    finish(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_server_that_cannot_start_stays_lazy_and_the_next_use_tries_again() {
    let dir = common::tempdir("host-lazy-retry");
    let exe = dir.join("srv");
    let _ = std::fs::remove_file(&exe);
    let mut config = common::config(&[]);
    config.transport.as_stdio_mut().unwrap().command = exe.to_str().unwrap().into();
    let host = Host::start(HostConfig::new()).await.unwrap();
    host.add_lazy("later", config).unwrap();
    let e = host
        .call_tool("later__echo", json!({ "text": "hi" }))
        .await
        .unwrap_err();
    assert!(
        matches!(e, HostError::LazyStart { ref server, .. } if server == "later"),
        "{e}"
    );
    assert!(e.to_string().contains("srv"), "{e}");
    assert_eq!(host.lazy_servers(), ["later"], "still lazy");
    assert!(host.server("later").is_none());

    std::os::unix::fs::symlink(common::fixture(), &exe).unwrap();
    let r = host
        .call_tool("later__echo", json!({ "text": "hi" }))
        .await
        .unwrap();
    assert_eq!(text(&r), "hi");
    assert!(host.lazy_servers().is_empty());

    // A lazy server removed before its first use is only forgotten.
    host.add_lazy("never", common::config(&[])).unwrap();
    assert!(host.remove("never").unwrap().wait().await.is_empty());
    assert!(host.lazy_servers().is_empty());
    assert!(matches!(
        host.call_tool("never__echo", json!({})).await,
        Err(HostError::UnknownTool(_))
    ));
    finish(host).await;
}

#[test]
fn a_lazy_name_that_is_no_server_is_refused() {
    let mut config = HostConfig::new().server("a", common::config(&[]));
    config.lazy.insert("b".into());
    let e = config.validate().unwrap_err();
    assert!(e.to_string().contains("lazy"), "{e}");
    assert!(e.to_string().contains("`b`"), "{e}");
}

/// A config file of fixture servers, each with `args` (and `lazy`).
fn servers_file(servers: &[(&str, &[&str], bool)]) -> conduit_mcp::config_file::ServersFile {
    let mut map = serde_json::Map::new();
    for (name, args, lazy) in servers {
        let mut entry = json!({ "command": common::fixture(), "args": args });
        if *lazy {
            entry["conduit"] = json!({ "lazy": true });
        }
        map.insert((*name).to_owned(), entry);
    }
    let text = json!({ "mcpServers": map }).to_string();
    let env = |_: &str| None;
    conduit_mcp::config_file::ServersFile::parse(
        &text,
        std::path::Path::new("/tmp/servers.json"),
        &env,
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_restarts_changed_servers_only_and_tries_again_one_that_never_started() {
    let dir = common::tempdir("host-reload");
    let missing = dir.join("no-such-server");
    let _ = std::fs::remove_file(&missing);
    let first = servers_file(&[
        ("same", &[], false),
        ("changed", &[], false),
        ("gone", &[], false),
    ]);
    let host = Host::start(HostConfig::from_file(&first).unwrap())
        .await
        .unwrap();
    let (same, changed, gone) = (
        pid_of(&host, "same"),
        pid_of(&host, "changed"),
        pid_of(&host, "gone"),
    );

    let mut next = servers_file(&[
        ("same", &[], false),
        ("changed", &["--era", "legacy"], false),
        ("new", &[], false),
        ("idle", &[], true),
        ("broken", &[], false),
    ]);
    next.servers
        .get_mut("broken")
        .unwrap()
        .transport
        .as_stdio_mut()
        .unwrap()
        .command = missing.to_str().unwrap().into();
    let done = host.reload(&first, &next).await;
    assert_eq!(done.restarted, ["changed"]);
    assert_eq!(done.added, ["idle", "new"], "{done:?}");
    assert_eq!(done.removed, ["gone"]);
    assert_eq!(done.failed.len(), 1, "{done:?}");
    assert_eq!(done.failed[0].0, "broken");
    assert!(!common::alive(gone), "a removed server's process is gone");
    assert!(
        !common::alive(changed),
        "a restarted server's old process is gone"
    );
    assert_eq!(
        pid_of(&host, "same"),
        same,
        "an unchanged server is untouched"
    );
    assert_eq!(host.lazy_servers(), ["idle"]);
    // The one that could not start is kept with its reason, as at a start.
    let broken = host.server("broken").expect("kept");
    assert!(
        matches!(&broken.status, Status::GaveUp(r) if r.contains("no-such-server")),
        "{broken:?}"
    );
    host.ready(PATIENCE).await;
    assert_ne!(pid_of(&host, "changed"), changed);

    // The same file again: only the one that never started is tried again.
    std::os::unix::fs::symlink(common::fixture(), &missing).unwrap();
    let again = host.reload(&next, &next).await;
    // (Added: it never ran.)
    assert_eq!(again.added, ["broken"], "{again:?}");
    assert!(again.restarted.is_empty() && again.removed.is_empty() && again.failed.is_empty());
    host.ready(PATIENCE).await;
    assert!(host.server("broken").is_some_and(|s| s.is_ready()));
    assert_eq!(pid_of(&host, "same"), same);
    finish(host).await;
}
