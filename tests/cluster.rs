//! Two nodes in two processes on loopback (feature `cluster`): node A (this
//! test binary run again, in a role chosen by an environment variable)
//! hosts the fixture and the example server behind a gateway; node B (the
//! test) lists and calls tools, gets progress and notifications, cancels a
//! slow call, sees an error result and a refusal, then SIGKILLs node A
//! with 20 calls in flight: all 20 fail at once with "node lost", and node
//! A's servers are gone (die-with-parent). The second test does the same
//! over TLS (a self-signed certificate made with the `openssl` command,
//! skipped if it is missing).
#![cfg(feature = "cluster")]

mod cluster_support;
mod common;
#[path = "interop/example_bin.rs"]
mod example_bin;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use conduit_mcp::cluster::{Gateway, GatewayConfig, RemoteError, RemoteOptions, RemoteServers};
use conduit_mcp::{CancelToken, Client, ClientConfig, StderrMode};
use ractor::Actor;
use ractor_cluster::NodeServer;
use serde_json::json;

use cluster_support::{free_port, node, Node, LOOPBACK};
use common::figure;

const ROLE: &str = "CONDUIT_TEST_ROLE_NODE_A";
const COOKIE: &str = "conduit-mcp-test-cookie";

/// Node A: a node server on `port`, the fixture (logging what it reads to
/// `log`) and the example server, exposed by a gateway; prints the
/// servers' pids, then waits to be killed.
async fn node_a(port: u16, log: String, tls: Option<(String, String)>) {
    let encryption = tls.map(|(cert, key)| {
        let (cert, key) = (std::fs::read(cert).unwrap(), std::fs::read(key).unwrap());
        conduit_mcp::cluster::tls::acceptor(&cert, &key).expect("TLS acceptor")
    });
    let server = NodeServer::new(
        port,
        COOKIE.into(),
        "node-a".into(),
        "localhost".into(),
        encryption,
        None,
    )
    .with_listen_addr(LOOPBACK);
    let (_node, _) = Actor::spawn(None, server, ())
        .await
        .expect("node A's server");
    let fixture = Client::start(common::config(&["--log-file", &log]))
        .await
        .expect("fixture");
    let fixture_pid = common::ready_pid(&fixture).await;
    let example = example_bin::example_bin("server").expect("the example server builds");
    let example =
        Client::start(ClientConfig::new(example.to_string_lossy()).stderr(StderrMode::Discard))
            .await
            .expect("example server");
    let example_pid = common::ready_pid(&example).await;
    let config = GatewayConfig::new()
        .server("fixture", fixture.clone())
        .server_allowing("example", example, ["tools/list", "tools/call"]);
    let _gateway = Gateway::start(config, None).await.expect("gateway");
    // The same fixture behind a gateway whose answers must fit in 4 KiB.
    let small = GatewayConfig::new()
        .server("fixture-small-frames", fixture)
        .max_answer_bytes(4096);
    let _small = Gateway::start(small, None).await.expect("gateway");
    println!("READY {fixture_pid} {example_pid}");
    std::future::pending::<()>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_b_calls_servers_on_node_a_and_learns_at_once_when_it_goes() {
    scenario(
        "node_b_calls_servers_on_node_a_and_learns_at_once_when_it_goes",
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_over_tls() {
    scenario("the_same_over_tls", true).await;
}

/// Node A's process, killed and reaped however the test ends.
struct NodeA(std::process::Child);

impl Drop for NodeA {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One scenario at a time: process groups are global to this process, so
/// two node B's would see each other's servers.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs node A's role if this process is node A; else the whole test as
/// node B, starting node A as `test` of this binary.
async fn scenario(test: &str, tls: bool) {
    if let Ok(spec) = std::env::var(ROLE) {
        let parts: Vec<&str> = spec.split(' ').collect();
        let tls = (parts.len() == 4).then(|| (parts[2].to_owned(), parts[3].to_owned()));
        return node_a(parts[0].parse().expect("port"), parts[1].to_owned(), tls).await;
    }
    let _serial = SERIAL.lock().await;
    let dir = common::tempdir("cluster");
    let log = dir.join("fixture-in.log");
    let mut spec = format!("{} {}", free_port(), log.display());
    let port_a: u16 = spec.split(' ').next().unwrap().parse().unwrap();
    let tls = if tls {
        let Some(ca) = cluster_support::make_certificates(&dir, &["node-a"]) else {
            eprintln!("skipped: the `openssl` command could not make test certificates");
            return;
        };
        spec = format!(
            "{spec} {} {}",
            dir.join("node-a.pem").display(),
            dir.join("node-a.key").display()
        );
        Some(ca)
    } else {
        None
    };
    let mut node_a = NodeA(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture"])
            .env(ROLE, spec)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(node_a.0.stdout.take().unwrap()).lines();
    let pids: Vec<u32> = loop {
        let line = lines
            .next()
            .expect("node A printed READY")
            .expect("node A's stdout");
        if let Some(rest) = line.strip_prefix("READY ") {
            break rest.split(' ').map(|p| p.parse().unwrap()).collect();
        }
    };

    // Node B.
    let server = NodeServer::new(
        free_port(),
        COOKIE.into(),
        "node-b".into(),
        "localhost".into(),
        None,
        None,
    )
    .with_listen_addr(LOOPBACK);
    let (node_b, _) = Actor::spawn(None, server, ()).await.unwrap();
    let address = format!("127.0.0.1:{port_a}");
    match &tls {
        None => ractor_cluster::client_connect(&node_b, address).await,
        Some(ca) => {
            let tls = conduit_mcp::cluster::tls::connector(ca).expect("TLS connector");
            let name = conduit_mcp::cluster::tls::server_name("localhost").unwrap();
            ractor_cluster::client_connect_enc(&node_b, address, tls, name).await
        }
    }
    .expect("node B connects to node A");
    let servers = RemoteServers::start().await.unwrap();
    let t = Instant::now();
    let fixture = servers
        .wait_for("fixture", Duration::from_secs(20))
        .await
        .expect("node A's fixture is found by name");
    let example = servers
        .wait_for("example", Duration::from_secs(20))
        .await
        .expect("node A's example server is found by name");
    println!("servers found {:?} after connecting", t.elapsed());
    let opts = || RemoteOptions::new().timeout(Duration::from_secs(20));

    // Session, tools, a call.
    let session = fixture.session(Duration::from_secs(10)).await.unwrap();
    assert_eq!(session["pid"], pids[0]);
    let tools = fixture.list_tools(Duration::from_secs(10)).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let echo = fixture
        .call_tool("echo", json!({ "text": "across nodes" }), opts())
        .await
        .unwrap();
    assert_eq!(echo.joined_text(), "across nodes");
    // The result crosses as the server's own bytes.
    let raw = fixture
        .request("echo", Some(json!({ "k": "é\u{1F600}" })), opts())
        .await
        .unwrap();
    assert_eq!(raw.parse::<serde_json::Value>().unwrap()["k"], "é\u{1F600}");

    // An error result, a server error, a refusal, an unknown server.
    let failed = fixture.call_tool("fail", json!({}), opts()).await.unwrap();
    assert!(failed.is_error(), "{failed:?}");
    let unknown = fixture.request("no/such", None, opts()).await.unwrap_err();
    assert!(
        matches!(unknown, RemoteError::Server { code: -32601, .. }),
        "{unknown}"
    );
    let refused = example.request("ping", None, opts()).await.unwrap_err();
    assert!(matches!(refused, RemoteError::Refused { .. }), "{refused}");
    let tools = example.list_tools(Duration::from_secs(10)).await.unwrap();
    assert!(!tools.is_empty());
    // An answer over the gateway's frame limit is refused on node A.
    let small = servers
        .wait_for("fixture-small-frames", Duration::from_secs(20))
        .await
        .unwrap();
    let big = small
        .request("fixture/big", Some(json!({ "bytes": 10_000 })), opts())
        .await
        .unwrap_err();
    assert!(
        matches!(big, RemoteError::TooLarge { limit: 4096, .. }),
        "{big}"
    );
    assert!(small.request("ping", None, opts()).await.is_ok());

    // Progress.
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let slept = fixture
        .request("sleep", Some(json!({ "ms": 100 })), opts().progress(ptx))
        .await
        .unwrap();
    assert_eq!(slept.parse::<serde_json::Value>().unwrap()["slept"], 100);
    let mut progress = 0;
    while prx.try_recv().is_ok() {
        progress += 1;
    }
    assert!(progress >= 5, "{progress} progress notifications");

    // Notifications.
    let mut notes = servers.notifications("fixture");
    fixture
        .request("fixture/notify", Some(json!({ "count": 3 })), opts())
        .await
        .unwrap();
    for _ in 0..3 {
        let n = tokio::time::timeout(Duration::from_secs(10), notes.recv())
            .await
            .expect("a notification from node A")
            .unwrap();
        assert_eq!(n.method, "notifications/message");
    }

    // Cancellation reaches the server on node A.
    let cancel = CancelToken::new();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let call = {
        let fixture = fixture.clone();
        let opts = opts().progress(ptx).cancel_token(cancel.clone());
        tokio::spawn(async move {
            fixture
                .request("sleep", Some(json!({ "ms": 30_000 })), opts)
                .await
        })
    };
    prx.recv().await.expect("the slow call is running");
    let t = Instant::now();
    cancel.cancel();
    let r = call.await.unwrap();
    assert!(matches!(r, Err(RemoteError::Cancelled)), "{r:?}");
    let seen = common::eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("notifications/cancelled"))
    })
    .await;
    assert!(
        seen.is_some(),
        "the server on node A got no notifications/cancelled"
    );
    figure(
        &format!(
            "cluster{}: cancel a call on node A from node B",
            if tls.is_some() { " (TLS)" } else { "" }
        ),
        format!("the caller returned at once; the server read notifications/cancelled {:?} after the cancel", t.elapsed()),
    );

    // 20 calls in flight, then node A is SIGKILLed.
    let count_sleeps = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("\"sleep\"")
            .count()
    };
    let before = count_sleeps();
    let calls: Vec<_> = (0..20)
        .map(|_| {
            let fixture = fixture.clone();
            tokio::spawn(async move {
                let r = fixture
                    .request(
                        "sleep",
                        Some(json!({ "ms": 60_000 })),
                        RemoteOptions::new().timeout(Duration::from_secs(120)),
                    )
                    .await;
                (r, Instant::now())
            })
        })
        .collect();
    common::eventually(Duration::from_secs(20), || count_sleeps() >= before + 20)
        .await
        .expect("the 20 calls reached the server on node A");
    let killed = Instant::now();
    node_a.0.kill().unwrap();
    node_a.0.wait().unwrap();
    let mut slowest = Duration::ZERO;
    for c in calls {
        let (r, at) = tokio::time::timeout(Duration::from_secs(30), c)
            .await
            .expect("a call hung after node A died")
            .unwrap();
        assert!(matches!(r, Err(RemoteError::NodeLost { .. })), "{r:?}");
        slowest = slowest.max(at.saturating_duration_since(killed));
    }
    let gone = common::eventually(Duration::from_secs(10), || {
        pids.iter().all(|p| !common::alive(*p))
    })
    .await;
    figure(
        &format!(
            "cluster{}: node A SIGKILLed with 20 calls in flight from node B",
            if tls.is_some() { " (TLS)" } else { "" }
        ),
        format!("20/20 failed with node-lost, the last {slowest:.2?} after the kill; node A's servers gone after {gone:?}"),
    );
    assert!(
        slowest < Duration::from_secs(5),
        "node loss took {slowest:?}"
    );
    assert!(gone.is_some(), "node A's servers outlived it: {pids:?}");
    // A node that is gone is not found any more.
    assert!(common::eventually(Duration::from_secs(10), || servers
        .find("fixture")
        .is_none())
    .await
    .is_some());
    servers.stop();
    node_b.stop(None);
}

// ---------------------------------------------------------------------------
// What a connected node may do (issue 20, items 1-4): each attack of the
// outside review, as a test. Node A serves (a child process), node B is this
// test, node C (another child) attacks where a third node is needed.


/// Starts node A (profile `profile`, named `name`) as a child running
/// `test`; returns it, its port, the fixture's log and the fixture's pid.
async fn start_a(test: &str, profile: &str, name: &str) -> (Node, u16, std::path::PathBuf, u32) {
    let dir = common::tempdir("cluster");
    let log = dir.join("fixture-in.log");
    let port = free_port();
    let mut a = Node::spawn(
        test,
        &format!("serve {profile} {name} {port} {}", log.display()),
    );
    let pid = a.expect("READY ", Duration::from_secs(30)).await.parse().unwrap();
    (a, port, log, pid)
}

/// Node B, connected to the nodes on `ports`.
async fn start_b(ports: &[u16]) -> ractor::ActorRef<ractor_cluster::NodeServerMessage> {
    let b = node("node-b", free_port()).await;
    for port in ports {
        ractor_cluster::client_connect(&b, format!("127.0.0.1:{port}"))
            .await
            .expect("node B connects");
    }
    b
}

/// How many requests for `method` the fixture logged.
fn logged(log: &std::path::Path, method: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .matches(&format!("\"method\":\"{method}\""))
        .count()
}

macro_rules! role_or_serial {
    () => {{
        if let Some(role) = cluster_support::role() {
            return cluster_support::roles::run(role).await;
        }
        SERIAL.lock().await
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_claims_a_served_name_gets_none_of_the_calls() {
    const TEST: &str = "a_node_that_claims_a_served_name_gets_none_of_the_calls";
    let _serial = role_or_serial!();
    let (_a, port_a, log_a, _) = start_a(TEST, "standard", "node-a").await;
    let (_c, port_c, log_c, _) = start_a(TEST, "impostor", "node-c").await;
    let b = start_b(&[port_c, port_a]).await;
    let servers = RemoteServers::start().await.unwrap();
    // Both claimants known here.
    let both = common::eventually(Duration::from_secs(20), || {
        ractor::pg::get_members(&"conduit-mcp/server/fixture".to_string()).len() == 2
    })
    .await;
    assert!(both.is_some(), "both gateways claiming `fixture` are seen");
    let (before_a, before_c) = (logged(&log_a, "echo"), logged(&log_c, "echo"));
    let mut found = 0;
    for _ in 0..10 {
        if let Some(fixture) = servers.find("fixture") {
            found += 1;
            for _ in 0..2 {
                let _ = fixture
                    .request("echo", Some(json!({})), RemoteOptions::new())
                    .await;
            }
        }
    }
    let to_a = logged(&log_a, "echo") - before_a;
    let to_c = logged(&log_c, "echo") - before_c;
    figure(
        "cluster: two nodes claim `fixture`, node B trusts only node-a",
        format!("find() picked a gateway {found}/10 times; calls: {to_a} reached node-a, {to_c} reached the impostor node-c"),
    );
    assert_eq!(to_c, 0, "the impostor got {to_c} calls");
    assert_eq!(found, 0, "find() must not pick one of two claimants silently");
    servers.stop();
    b.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_the_notifications_grant_receives_none_even_from_the_group() {
    const TEST: &str = "a_node_without_the_notifications_grant_receives_none_even_from_the_group";
    let _serial = role_or_serial!();
    let (_a, port_a, _, _) = start_a(TEST, "standard", "node-a").await;
    let b = start_b(&[port_a]).await;
    let servers = RemoteServers::start().await.unwrap();
    let fixture = servers.wait_for("fixture", Duration::from_secs(20)).await.unwrap();
    let _limited = servers
        .wait_for("fixture-limited", Duration::from_secs(20))
        .await
        .unwrap();
    // The attack: join the notification group of the limited server.
    let (_spy, seen) =
        cluster_support::spy("conduit-mcp/notifications/fixture-limited").await;
    #[allow(deprecated)]
    let mut granted = servers.notifications("fixture");
    tokio::time::sleep(Duration::from_millis(500)).await;
    fixture
        .request("fixture/notify", Some(json!({ "count": 3 })), RemoteOptions::new())
        .await
        .unwrap();
    for _ in 0..3 {
        tokio::time::timeout(Duration::from_secs(10), granted.recv())
            .await
            .expect("the granted subscription gets the notifications")
            .unwrap();
    }
    // The limited server's forwarder runs beside the granted one.
    let leaked = common::eventually(Duration::from_secs(2), || seen.lock().unwrap().len() >= 3).await;
    let n = seen.lock().unwrap().len();
    figure(
        "cluster: notifications of a server exposed without the notifications grant",
        format!("a node that joined the group received {n} of 3"),
    );
    assert!(leaked.is_none() && n == 0, "{n} notifications leaked");
    servers.stop();
    b.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_is_refused_without_its_grant() {
    const TEST: &str = "the_session_is_refused_without_its_grant";
    let _serial = role_or_serial!();
    let (_a, port_a, _, pid) = start_a(TEST, "standard", "node-a").await;
    let b = start_b(&[port_a]).await;
    let servers = RemoteServers::start().await.unwrap();
    let limited = servers
        .wait_for("fixture-limited", Duration::from_secs(20))
        .await
        .unwrap();
    let session = limited.session(Duration::from_secs(10)).await;
    figure(
        "cluster: session of a server exposed with tools/list and tools/call only",
        format!("{:?}", session.as_ref().map(|s| format!("pid {} (fixture pid {pid})", s["pid"]))),
    );
    assert!(
        matches!(&session, Err(RemoteError::Refused { method, .. }) if method == "session"),
        "{session:?}"
    );
    servers.stop();
    b.stop(None);
}

/// Node A, node C (the attacker, connected to A) and node B (this test,
/// connected to both); B's sink is known to C when this returns.
async fn three_nodes(
    test: &str,
) -> (Node, Node, std::path::PathBuf, ractor::ActorRef<ractor_cluster::NodeServerMessage>, RemoteServers) {
    let (a, port_a, log, _) = start_a(test, "standard", "node-a").await;
    let port_c = free_port();
    let mut c = Node::spawn(test, &format!("attack node-c {port_c} 127.0.0.1:{port_a}"));
    c.expect("READY", Duration::from_secs(30)).await;
    let b = start_b(&[port_a, port_c]).await;
    let servers = RemoteServers::start().await.unwrap();
    (a, c, log, b, servers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_cancel_from_another_node_does_not_cancel_a_call() {
    const TEST: &str = "a_forged_cancel_from_another_node_does_not_cancel_a_call";
    let _serial = role_or_serial!();
    let (_a, mut c, _, b, servers) = three_nodes(TEST).await;
    let fixture = servers.wait_for("fixture", Duration::from_secs(20)).await.unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let call = {
        let fixture = fixture.clone();
        let opts = RemoteOptions::new().timeout(Duration::from_secs(30)).progress(ptx);
        tokio::spawn(async move {
            fixture
                .request("sleep", Some(json!({ "ms": 3000 })), opts)
                .await
        })
    };
    prx.recv().await.expect("the call runs on node A");
    let running = Instant::now();
    c.send("FORGE_CANCEL fixture 16");
    let sent = c.expect("DONE ", Duration::from_secs(20)).await;
    // A sanity check, not a synchronisation: the forged cancels reached the
    // gateway (the attacker's barrier) while the 3 s call still ran.
    assert!(running.elapsed() < Duration::from_millis(2500), "the attack came too late");
    let r = call.await.unwrap();
    figure(
        "cluster: node C sends Cancel for ids 1..16 of every sink it sees",
        format!("{sent} forged cancels; the victim's call ended with {:?}", r.as_ref().map(|_| "its result")),
    );
    assert!(r.is_ok(), "{r:?}");
    servers.stop();
    b.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_call_id_from_another_node_does_not_take_the_call_over() {
    const TEST: &str = "a_reused_call_id_from_another_node_does_not_take_the_call_over";
    let _serial = role_or_serial!();
    let (_a, mut c, log, b, servers) = three_nodes(TEST).await;
    let fixture = servers.wait_for("fixture", Duration::from_secs(20)).await.unwrap();
    let cancel = CancelToken::new();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let call = {
        let fixture = fixture.clone();
        let opts = RemoteOptions::new()
            .timeout(Duration::from_secs(30))
            .progress(ptx)
            .cancel_token(cancel.clone());
        tokio::spawn(async move {
            fixture
                .request("sleep", Some(json!({ "ms": 20_000 })), opts)
                .await
        })
    };
    prx.recv().await.expect("the call runs on node A");
    let cancels_before = logged(&log, "notifications/cancelled");
    c.send("REUSE fixture 4 3000");
    c.expect("STARTED", Duration::from_secs(30)).await;
    cancel.cancel();
    assert!(matches!(call.await.unwrap(), Err(RemoteError::Cancelled)));
    let taken = c.expect("RESULT ", Duration::from_secs(30)).await;
    let cancels = logged(&log, "notifications/cancelled") - cancels_before;
    figure(
        "cluster: node C runs calls under the victim's caller and ids 1..4, the victim cancels its own",
        format!("{taken} of C's calls were cancelled by the victim's cancel; the server got {cancels} cancellations"),
    );
    assert_eq!(taken, "0", "the victim's cancel hit C's call");
    servers.stop();
    b.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_progress_and_notifications_into_a_sink_are_dropped() {
    const TEST: &str = "forged_progress_and_notifications_into_a_sink_are_dropped";
    let _serial = role_or_serial!();
    let (_a, mut c, _, b, servers) = three_nodes(TEST).await;
    let fixture = servers.wait_for("fixture", Duration::from_secs(20)).await.unwrap();
    #[allow(deprecated)]
    let mut notes = servers.notifications("fixture");
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let call = {
        let fixture = fixture.clone();
        let opts = RemoteOptions::new().timeout(Duration::from_secs(30)).progress(ptx);
        tokio::spawn(async move {
            fixture
                .request("sleep", Some(json!({ "ms": 3000 })), opts)
                .await
        })
    };
    prx.recv().await.expect("the call runs on node A");
    c.send("FORGE_SINKS 16");
    let sent = c.expect("DONE ", Duration::from_secs(20)).await;
    assert!(call.await.unwrap().is_ok());
    let mut forged = 0;
    while let Ok(p) = prx.try_recv() {
        forged += usize::from(p.message.as_deref() == Some("forged"));
    }
    while let Ok(n) = notes.try_recv() {
        forged += usize::from(n.method == "notifications/forged");
    }
    figure(
        "cluster: node C casts forged progress and notifications into node B's sink",
        format!("{sent} forged messages sent, {forged} delivered to node B's caller"),
    );
    assert_eq!(forged, 0);
    servers.stop();
    b.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_past_the_per_node_cap_are_refused_and_memory_stays_bounded() {
    const TEST: &str = "calls_past_the_per_node_cap_are_refused_and_memory_stays_bounded";
    let _serial = role_or_serial!();
    let (a, port_a, _, _) = start_a(TEST, "standard", "node-a").await;
    let b = start_b(&[port_a]).await;
    let servers = RemoteServers::start().await.unwrap();
    let cold = servers.wait_for("cold", Duration::from_secs(20)).await.unwrap();
    const N: usize = 50_000;
    let rss_before = cluster_support::rss_kib(a.pid());
    let t = Instant::now();
    let refused = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let calls: Vec<_> = (0..N)
        .map(|_| {
            let cold = cold.clone();
            let refused = refused.clone();
            tokio::spawn(async move {
                let r = cold
                    .request("echo", None, RemoteOptions::new().timeout(Duration::from_secs(3600)))
                    .await;
                if matches!(&r, Err(e) if e.to_string().contains("calls in flight")) {
                    refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            })
        })
        .collect();
    let all_refused = common::eventually(Duration::from_secs(20), || {
        refused.load(std::sync::atomic::Ordering::Relaxed) >= N - 64
    })
    .await;
    let rss_after =
        cluster_support::settled_rss_kib(a.pid(), Duration::from_millis(500), Duration::from_secs(10)).await;
    let n = refused.load(std::sync::atomic::Ordering::Relaxed);
    figure(
        "cluster: 50,000 calls from one node to a server that is not ready (timeout 1 h)",
        format!(
            "{n} refused past the cap after {:.1?}; node A's RSS {} -> {} MiB",
            t.elapsed(),
            rss_before / 1024,
            rss_after / 1024
        ),
    );
    for c in calls {
        c.abort();
    }
    assert!(all_refused.is_some(), "{n} of {N} refused");
    assert!(rss_after < rss_before + 64 * 1024, "node A grew to {} MiB", rss_after / 1024);
    servers.stop();
    b.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_is_clamped_on_the_node_that_serves() {
    const TEST: &str = "the_timeout_is_clamped_on_the_node_that_serves";
    let _serial = role_or_serial!();
    let (_a, port_a, _, _) = start_a(TEST, "standard", "node-a").await;
    let b = start_b(&[port_a]).await;
    let servers = RemoteServers::start().await.unwrap();
    let clamped = servers
        .wait_for("fixture-clamped", Duration::from_secs(20))
        .await
        .unwrap();
    let t = Instant::now();
    let r = clamped
        .request(
            "sleep",
            Some(json!({ "ms": 3000 })),
            RemoteOptions::new().timeout(Duration::from_secs(3600)),
        )
        .await;
    figure(
        "cluster: a call with a 1 h timeout to a gateway whose maximum is 500 ms",
        format!("{r:?} after {:.1?}", t.elapsed()),
    );
    assert!(matches!(r, Err(RemoteError::Timeout { after_ms: 500 })), "{r:?}");
    servers.stop();
    b.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_with_an_unbounded_timeout_returns() {
    let _serial = SERIAL.lock().await;
    let client = Client::start(common::config(&[])).await.unwrap();
    let gateway = Gateway::start(
        GatewayConfig::new().server("unbounded-wait", client.clone()),
        None,
    )
    .await
    .unwrap();
    let servers = RemoteServers::start().await.unwrap();
    let found = tokio::spawn(async move {
        servers.wait_for("unbounded-wait", Duration::MAX).await.is_some()
    })
    .await;
    assert!(matches!(found, Ok(true)), "{found:?}");
    gateway.stop();
    client.stop().wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_leaves_the_serving_node_bounded() {
    const TEST: &str = "a_subscriber_that_stops_reading_leaves_the_serving_node_bounded";
    let _serial = role_or_serial!();
    let (a, port_a, _, _) = start_a(TEST, "standard", "node-a").await;
    let mut s = Node::spawn(TEST, &format!("subscribe node-s {} 127.0.0.1:{port_a}", free_port()));
    s.expect("SUBSCRIBED", Duration::from_secs(30)).await;
    let b = start_b(&[port_a]).await;
    let servers = RemoteServers::start().await.unwrap();
    let fixture = servers.wait_for("fixture", Duration::from_secs(20)).await.unwrap();
    // The subscriber's node stops reading anything (its process stopped).
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(s.pid() as i32),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .unwrap();
    let rss_before = cluster_support::rss_kib(a.pid());
    const N: u64 = 300_000;
    // The call returns once node A's client has read every notification.
    fixture
        .request(
            "fixture/notify",
            Some(json!({ "count": N })),
            RemoteOptions::new().timeout(Duration::from_secs(120)),
        )
        .await
        .unwrap();
    let rss_after = cluster_support::settled_rss_kib(
        a.pid(),
        Duration::from_millis(1000),
        Duration::from_secs(30),
    )
    .await;
    figure(
        "cluster: 300,000 notifications for a subscribed node that stopped reading",
        format!("node A's RSS {} -> {} MiB", rss_before / 1024, rss_after / 1024),
    );
    assert!(
        rss_after < rss_before + 32 * 1024,
        "node A grew by {} MiB",
        (rss_after - rss_before) / 1024
    );
    servers.stop();
    b.stop(None);
}
