//! Two nodes in two processes on loopback (feature `cluster`): node A (this
//! test binary run again, in a role chosen by an environment variable)
//! hosts the fixture and the example server behind a gateway; node B (the
//! test) lists and calls tools, gets progress and notifications, cancels a
//! slow call, sees an error result and a refusal, then SIGKILLs node A
//! with 20 calls in flight: all 20 fail at once with "node lost", and node
//! A's servers are gone (die-with-parent). The second test does the same
//! over TLS (a self-signed certificate made with the `openssl` command,
//! which the TLS tests need).
#![cfg(feature = "cluster")]

mod cluster_support;
mod common;
#[path = "interop/example_bin.rs"]
mod example_bin;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use conduit_mcp::cluster::{
    CallCap, FindError, Gateway, GatewayConfig, Grants, NodeConfig, NodeConfigError, RemoteError,
    RemoteOptions, RemoteServers, RemoteServersConfig,
};
use conduit_mcp::{CancelToken, Client, ClientConfig, StderrMode};
use ractor::Actor;
use serde_json::json;

use cluster_support::{free_port, node, Node, COOKIE};
use common::figure;

const ROLE: &str = "CONDUIT_TEST_ROLE_NODE_A";

/// Node A: a node server on `port`, the fixture (logging what it reads to
/// `log`) and the example server, exposed by a gateway; prints the
/// servers' pids, then waits to be killed.
async fn node_a(port: u16, log: String, tls: Option<(String, String)>) {
    let encryption = tls.map(|(cert, key)| {
        let (cert, key) = (std::fs::read(cert).unwrap(), std::fs::read(key).unwrap());
        conduit_mcp::cluster::tls::acceptor(&cert, &key).expect("TLS acceptor")
    });
    let mut server = NodeConfig::new("node-a", "localhost", COOKIE).port(port);
    if let Some(tls) = encryption {
        server = server.tls(tls);
    }
    let (_node, _) = Actor::spawn(None, server.build().unwrap(), ())
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
        .expose("fixture", fixture.clone(), Grants::all())
        .server_allowing("example", example, ["tools/list", "tools/call"]);
    let _gateway = Gateway::start(config, None).await.expect("gateway");
    // The same fixture behind a gateway whose answers must fit in 4 KiB.
    let small = GatewayConfig::new()
        .expose("fixture-small-frames", fixture, Grants::all())
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
        let ca = cluster_support::make_certificates(&dir, &["node-a"])
            .expect("the `openssl` command makes the test certificates");
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
    let node_b = node("node-b", free_port()).await;
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
    let mut notes = fixture
        .notifications(Duration::from_secs(10))
        .await
        .unwrap();
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
    assert!(gone.is_some(), "node A's servers outlived it: {pids:?}");
    // A node that is gone is not found any more.
    assert!(
        common::eventually(Duration::from_secs(10), || servers.find("fixture").is_err())
            .await
            .is_some()
    );
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
    let pid = a
        .expect("READY ", Duration::from_secs(30))
        .await
        .parse()
        .unwrap();
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

/// How many requests (or notifications) `method` the fixture logged.
fn logged(log: &std::path::Path, method: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .matches(&format!("\"method\":\"{method}\""))
        .count()
}

/// Plays the child's role if this process is a child node; else takes the
/// lock that keeps the tests of this binary one at a time (process groups
/// are global to a process).
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
    // The impostor first: before, it was the claimant found first.
    let b = start_b(&[port_c, port_a]).await;
    let trusting = RemoteServers::start_with(
        RemoteServersConfig::new()
            .node_server(b.clone())
            .trust("fixture", ["node-a@localhost"]),
    )
    .await
    .unwrap();
    let plain = RemoteServers::start_with(RemoteServersConfig::new().node_server(b.clone()))
        .await
        .unwrap();
    let both = common::eventually(Duration::from_secs(20), || {
        ractor::pg::get_members(&"conduit-mcp/server/fixture".to_string()).len() == 2
    })
    .await;
    assert!(both.is_some(), "both gateways claiming `fixture` are seen");

    // Without a trust list: an error naming both claimants, never a pick.
    let ambiguous = plain.wait_for("fixture", Duration::from_secs(10)).await;
    match &ambiguous {
        Err(FindError::Ambiguous { nodes, .. }) => {
            let mut nodes = nodes.clone();
            nodes.sort();
            assert_eq!(nodes, ["node-a@localhost", "node-c@localhost"]);
        }
        other => panic!("{other:?}"),
    }
    // With one: node-a's gateway, and every call reaches node-a.
    let fixture = trusting
        .wait_for("fixture", Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(fixture.node(), "node-a@localhost");
    let (before_a, before_c) = (logged(&log_a, "echo"), logged(&log_c, "echo"));
    for _ in 0..20 {
        fixture
            .request("echo", Some(json!({})), RemoteOptions::new())
            .await
            .unwrap();
    }
    let to_a = logged(&log_a, "echo") - before_a;
    let to_c = logged(&log_c, "echo") - before_c;
    figure(
        "cluster: two nodes claim `fixture`, node B trusts only node-a",
        format!("without a trust list: {}; with it: {to_a} calls reached node-a, {to_c} the impostor node-c", ambiguous.unwrap_err()),
    );
    assert_eq!((to_a, to_c), (20, 0));

    // A gateway on node B itself is preferred to both.
    let local = Client::start(common::config(&[])).await.unwrap();
    let gateway = Gateway::start(
        GatewayConfig::new().expose("fixture", local.clone(), Grants::all()),
        None,
    )
    .await
    .unwrap();
    let here = plain.find("fixture").unwrap();
    assert_eq!(here.node(), "this node");
    here.request("echo", None, RemoteOptions::new())
        .await
        .unwrap();
    gateway.stop();
    crate::common::shutdown(local.stop().wait()).await;
    trusting.stop();
    plain.stop();
    b.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_the_notifications_grant_receives_none_even_from_the_group() {
    const TEST: &str = "a_node_without_the_notifications_grant_receives_none_even_from_the_group";
    let _serial = role_or_serial!();
    let cl = Cluster::two_nodes(TEST).await;
    let fixture = cl.find("fixture").await;
    let limited = cl.find("fixture-limited").await;
    // The attack of old: join the notification group of the limited server.
    let (_spy, seen) = cluster_support::spy("conduit-mcp/notifications/fixture-limited").await;
    // And the front door.
    let refused = limited.notifications(Duration::from_secs(10)).await;
    assert!(
        matches!(&refused, Err(RemoteError::Refused { method, .. }) if method == "notifications"),
        "{refused:?}"
    );
    // The same server's notifications, where they are granted.
    let mut granted = fixture
        .notifications(Duration::from_secs(10))
        .await
        .unwrap();
    fixture
        .request(
            "fixture/notify",
            Some(json!({ "count": 3 })),
            RemoteOptions::new(),
        )
        .await
        .unwrap();
    for _ in 0..3 {
        tokio::time::timeout(Duration::from_secs(10), granted.recv())
            .await
            .expect("the granted subscription gets the notifications")
            .unwrap();
    }
    let n = seen.lock().unwrap().len();
    figure(
        "cluster: notifications of a server exposed without the notifications grant",
        format!(
            "a node that joined the group received {n} of 3; subscribing: {}",
            refused.unwrap_err()
        ),
    );
    assert_eq!(n, 0, "{n} notifications leaked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_is_refused_without_its_grant() {
    const TEST: &str = "the_session_is_refused_without_its_grant";
    let _serial = role_or_serial!();
    let cl = Cluster::two_nodes(TEST).await;
    let pid = cl.fixture_pid;
    let limited = cl.find("fixture-limited").await;
    let session = limited.session(Duration::from_secs(10)).await;
    figure(
        "cluster: session of a server exposed with tools/list and tools/call only",
        format!(
            "{:?}",
            session
                .as_ref()
                .map(|s| format!("pid {} (fixture pid {pid})", s["pid"]))
        ),
    );
    assert!(
        matches!(&session, Err(RemoteError::Refused { method, .. }) if method == "session"),
        "{session:?}"
    );
    // Granted methods still work.
    assert!(limited.list_tools(Duration::from_secs(10)).await.is_ok());
}

/// The nodes of one test: node A (a child), maybe node C (the attacker, a
/// child connected to A), and node B (this test, connected to both) with
/// its `RemoteServers`; node B's side is stopped when it is dropped.
struct Cluster {
    a: Node,
    port_a: u16,
    log: std::path::PathBuf,
    fixture_pid: u32,
    c: Option<Node>,
    b: ractor::ActorRef<ractor_cluster::NodeServerMessage>,
    servers: RemoteServers,
}

impl Cluster {
    /// Node A (profile `standard`) and node B.
    async fn two_nodes(test: &str) -> Cluster {
        let (a, port_a, log, fixture_pid) = start_a(test, "standard", "node-a").await;
        let b = start_b(&[port_a]).await;
        let servers = RemoteServers::start().await.unwrap();
        Cluster {
            a,
            port_a,
            log,
            fixture_pid,
            c: None,
            b,
            servers,
        }
    }

    /// Node A, node C and node B.
    async fn three_nodes(test: &str) -> Cluster {
        let (a, port_a, log, fixture_pid) = start_a(test, "standard", "node-a").await;
        let port_c = free_port();
        let mut c = Node::spawn(test, &format!("attack node-c {port_c} 127.0.0.1:{port_a}"));
        c.expect("READY", Duration::from_secs(30)).await;
        // Node B's sink gets a pid node C has not reached (see COPY_SINK).
        cluster_support::spend_pids(3000).await;
        let b = start_b(&[port_a, port_c]).await;
        let servers = RemoteServers::start().await.unwrap();
        Cluster {
            a,
            port_a,
            log,
            fixture_pid,
            c: Some(c),
            b,
            servers,
        }
    }

    /// Server `name`, once node B knows it.
    async fn find(&self, name: &str) -> conduit_mcp::cluster::RemoteServer {
        self.servers
            .wait_for(name, Duration::from_secs(20))
            .await
            .unwrap()
    }

    /// Node C.
    fn c(&mut self) -> &mut Node {
        self.c.as_mut().expect("node C")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.servers.stop();
        self.b.stop(None);
    }
}

/// Starts `sleep ms` on `fixture` with progress; returns once it runs on
/// node A.
async fn slow_call(
    fixture: &conduit_mcp::cluster::RemoteServer,
    ms: u64,
    cancel: Option<CancelToken>,
) -> (
    tokio::task::JoinHandle<Result<conduit_mcp::RawJson, RemoteError>>,
    tokio::sync::mpsc::UnboundedReceiver<conduit_mcp::Progress>,
) {
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let mut opts = RemoteOptions::new()
        .timeout(Duration::from_secs(30))
        .progress(ptx);
    if let Some(c) = cancel {
        opts = opts.cancel_token(c);
    }
    let fixture = fixture.clone();
    let call = tokio::spawn(async move {
        fixture
            .request("sleep", Some(json!({ "ms": ms })), opts)
            .await
    });
    prx.recv().await.expect("the call runs on node A");
    (call, prx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_cancel_from_another_node_does_not_cancel_a_call() {
    const TEST: &str = "a_forged_cancel_from_another_node_does_not_cancel_a_call";
    let _serial = role_or_serial!();
    let mut cl = Cluster::three_nodes(TEST).await;
    let fixture = cl.find("fixture").await;
    let (call, _progress) = slow_call(&fixture, 8000, None).await;
    cl.c().send("FORGE_CANCEL fixture 16");
    let sent = cl.c().expect("DONE ", Duration::from_secs(20)).await;
    // The forged cancels reached the gateway (the attacker's barrier) while
    // the call still ran; else the test proves nothing.
    assert!(!call.is_finished(), "the attack came after the call ended");
    let r = call.await.unwrap();
    figure(
        "cluster: node C sends Cancel for ids 1..16 (its own ticket, a made-up one, the old format)",
        format!("{sent} forged cancels; the victim's call ended with {:?}", r.as_ref().map(|_| "its result")),
    );
    assert!(r.is_ok(), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_call_id_from_another_node_does_not_take_the_call_over() {
    const TEST: &str = "a_reused_call_id_from_another_node_does_not_take_the_call_over";
    let _serial = role_or_serial!();
    let mut cl = Cluster::three_nodes(TEST).await;
    let log = cl.log.clone();
    let fixture = cl.find("fixture").await;
    let cancel = CancelToken::new();
    let (call, _progress) = slow_call(&fixture, 20_000, Some(cancel.clone())).await;
    let cancels_before = logged(&log, "notifications/cancelled");
    cl.c().send("REUSE fixture 4 3000");
    cl.c().expect("STARTED", Duration::from_secs(30)).await;
    cancel.cancel();
    assert!(matches!(call.await.unwrap(), Err(RemoteError::Cancelled)));
    // The victim's cancel reaches the server (for the victim's request).
    let reached = common::eventually(Duration::from_secs(10), || {
        logged(&log, "notifications/cancelled") > cancels_before
    })
    .await;
    let taken = cl.c().expect("RESULT ", Duration::from_secs(30)).await;
    let cancels = logged(&log, "notifications/cancelled") - cancels_before;
    figure(
        "cluster: node C runs calls under the ids node B uses, node B cancels its own",
        format!("{taken} of C's calls were cancelled by node B's cancel; the server got {cancels} cancellation(s)"),
    );
    assert_eq!(taken, "0", "node B's cancel hit C's call");
    assert!(
        reached.is_some() && cancels == 1,
        "{cancels} cancellations reached the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_progress_and_notifications_into_a_sink_are_dropped() {
    const TEST: &str = "forged_progress_and_notifications_into_a_sink_are_dropped";
    let _serial = role_or_serial!();
    let mut cl = Cluster::three_nodes(TEST).await;
    let fixture = cl.find("fixture").await;
    let mut notes = fixture
        .notifications(Duration::from_secs(10))
        .await
        .unwrap();
    let (call, mut prx) = slow_call(&fixture, 3000, None).await;
    cl.c().send("FORGE_SINKS fixture 16");
    let sent: u64 = cl
        .c()
        .expect("DONE ", Duration::from_secs(20))
        .await
        .parse()
        .unwrap();
    // Every forged message is handled (and rejected) by the sink.
    let handled =
        common::eventually(Duration::from_secs(20), || cl.servers.rejected() >= sent).await;
    assert!(call.await.unwrap().is_ok());
    let (mut forged, mut real) = (0, 0);
    while let Ok(p) = prx.try_recv() {
        if p.message.as_deref() == Some("forged") {
            forged += 1;
        } else {
            real += 1;
        }
    }
    while let Some(n) = notes.try_recv() {
        forged += usize::from(n.method == "notifications/forged");
    }
    figure(
        "cluster: node C casts forged tickets, progress and notifications into node B's sink",
        format!("{sent} forged messages sent, {} rejected by the sink, {forged} delivered to node B's caller", cl.servers.rejected()),
    );
    assert!(
        handled.is_some(),
        "{} of {sent} rejected",
        cl.servers.rejected()
    );
    assert_eq!(forged, 0);
    assert!(real > 0, "the call's own progress still arrives");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_progress_token_cannot_aim_progress_at_another_nodes_call() {
    const TEST: &str = "a_callers_progress_token_cannot_aim_progress_at_another_nodes_call";
    let _serial = role_or_serial!();
    let mut cl = Cluster::three_nodes(TEST).await;
    let fixture = cl.find("fixture").await;
    // Node C, granted only tools/list and tools/call, learns where node A's
    // client numbers its requests from its own call's progress.
    cl.c().send("PROBE fixture-limited");
    let token = cl.c().expect("TOKEN ", Duration::from_secs(20)).await;
    // Node B's call: 3 s, 300 steps of progress.
    let (call, mut prx) = slow_call(&fixture, 3000, None).await;
    // Node C's calls (500 ms, 50 steps each, no progress asked) name the
    // next 8 request ids as their progress token.
    cl.c().send(&format!("INJECT fixture-limited {token} 8"));
    let answered = cl.c().expect("DONE ", Duration::from_secs(30)).await;
    assert!(
        !call.is_finished(),
        "node B's call ended before node C's calls did: the test proves nothing"
    );
    assert!(call.await.unwrap().is_ok());
    let (mut own, mut foreign) = (0, 0);
    while let Ok(p) = prx.try_recv() {
        match p.total {
            Some(300.0) => own += 1,
            _ => foreign += 1,
        }
    }
    figure(
        "cluster: node C (tools/call only) sends 8 calls with _meta.progressToken set to the next request ids",
        format!("node B's call (total 300) got {foreign} foreign progress events and {own} of its own; {answered} of node C's 8 calls answered"),
    );
    assert_eq!(foreign, 0, "node C's progress reached node B's call");
    assert!(own > 0, "the call's own progress still arrives");
    assert_eq!(answered, "8", "node C's calls themselves still run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_declares_a_connected_nodes_name_cannot_end_its_calls() {
    const TEST: &str = "a_node_that_declares_a_connected_nodes_name_cannot_end_its_calls";
    let _serial = role_or_serial!();
    let cl = Cluster::two_nodes(TEST).await;
    let fixture = cl.find("fixture").await;
    // The impostor holds the cookie and declares node B's name.
    const TRIES: u32 = 20;
    let mut impostor = Node::spawn(
        TEST,
        &format!(
            "claim node-b {} 127.0.0.1:{} {TRIES}",
            free_port(),
            cl.port_a
        ),
    );
    impostor.expect("READY", Duration::from_secs(30)).await;
    let cancels_before = logged(&cl.log, "notifications/cancelled");
    let (call, _progress) = slow_call(&fixture, 5_000, None).await;
    let t = Instant::now();
    impostor.send("GO");
    let outcome = impostor.expect("RESULT ", Duration::from_secs(60)).await;
    let tried = t.elapsed();
    let running = !call.is_finished();
    let r = call.await.unwrap();
    if r.is_err() {
        // The call's end on node A follows its session's end there.
        common::eventually(Duration::from_secs(10), || {
            logged(&cl.log, "notifications/cancelled") > cancels_before
        })
        .await;
    }
    let cancels = logged(&cl.log, "notifications/cancelled") - cancels_before;
    figure(
        "cluster: a node with the cookie connects to node A as node-b (up to 20 times) during node B's 5 s call",
        format!(
            "impostor: {outcome} (in {tried:.1?}); node B's call: {:?}; the server got {cancels} cancellation(s)",
            r.as_ref().map(|_| "its result")
        ),
    );
    assert_eq!(outcome, format!("refused {TRIES}"));
    assert!(
        running,
        "node B's call ended before the impostor's tries did: the test proves nothing"
    );
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(cancels, 0);
    // Node B's session is still the one: another call goes through.
    fixture
        .request("echo", None, RemoteOptions::new())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_restarted_after_its_old_connection_went_silent_gets_its_name_back() {
    const TEST: &str = "a_node_restarted_after_its_old_connection_went_silent_gets_its_name_back";
    let _serial = role_or_serial!();
    let port_a = free_port();
    let a = node("node-a", port_a).await;
    // Node B connects, then hangs (SIGSTOP): its connection stays open
    // (its kernel still acknowledges), and it sends nothing more.
    let mut b = Node::spawn(
        TEST,
        &format!("reclaim node-b {} 127.0.0.1:{port_a} 0 1", free_port()),
    );
    b.expect("RESULT taken", Duration::from_secs(30)).await;
    let hung = nix::unistd::Pid::from_raw(b.pid() as i32);
    nix::sys::signal::kill(hung, nix::sys::signal::Signal::SIGSTOP).unwrap();
    // Node B restarted: a new process under its name, retrying every
    // second for up to a minute.
    let mut restarted = Node::spawn(
        TEST,
        &format!("reclaim node-b {} 127.0.0.1:{port_a} 1000 60", free_port()),
    );
    let outcome = restarted.expect("RESULT ", Duration::from_secs(120)).await;
    figure(
        "cluster: node B hangs (SIGSTOP) while connected to node A; a restarted node B connects every second",
        format!("restarted node B: {outcome} (try, seconds)"),
    );
    let _ = nix::sys::signal::kill(hung, nix::sys::signal::Signal::SIGCONT);
    assert!(outcome.starts_with("taken "), "{outcome}");
    a.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_copies_a_callers_sink_gets_no_ticket() {
    const TEST: &str = "a_node_that_copies_a_callers_sink_gets_no_ticket";
    let _serial = role_or_serial!();
    let mut cl = Cluster::three_nodes(TEST).await;
    let fixture = cl.find("fixture").await;
    // Node C copies node B's sink (same group, same pid) before node B
    // asks for its first ticket.
    cl.c().send("COPY_SINK fixture");
    let copied = cl.c().expect("COPIED ", Duration::from_secs(30)).await;
    assert_eq!(copied, "1", "node C could not copy the sink");
    let r = fixture.request("echo", None, RemoteOptions::new()).await;
    cl.c().send("TICKETS");
    let seen = cl.c().expect("SEEN ", Duration::from_secs(10)).await;
    figure(
        "cluster: node C copies node B's sink (group and pid) before node B's first call",
        format!("node B's call: {r:?}; tickets the copy received: {seen}"),
    );
    assert!(
        matches!(&r, Err(RemoteError::NotAdmitted { reason }) if reason.contains("copies")),
        "{r:?}"
    );
    assert_eq!(seen, "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_past_the_per_node_cap_are_refused_and_memory_stays_bounded() {
    const TEST: &str = "calls_past_the_per_node_cap_are_refused_and_memory_stays_bounded";
    let _serial = role_or_serial!();
    let cl = Cluster::two_nodes(TEST).await;
    let cold = cl.find("cold").await;
    // The per-gateway cap (8 here), with one node far under its own.
    let tight = cl.find("cold-tight").await;
    let tight_calls: Vec<_> = (0..9)
        .map(|_| {
            let tight = tight.clone();
            tokio::spawn(async move {
                tight
                    .request(
                        "echo",
                        None,
                        RemoteOptions::new().timeout(Duration::from_secs(3600)),
                    )
                    .await
            })
        })
        .collect();
    // Eight wait on the cold server; the ninth is refused at once.
    let one_done = common::eventually(Duration::from_secs(20), || {
        tight_calls.iter().any(|c| c.is_finished())
    })
    .await;
    assert!(
        one_done.is_some(),
        "no call past the gateway's cap was refused"
    );
    let mut past_gateway_cap = None;
    for c in tight_calls {
        if c.is_finished() {
            past_gateway_cap = c.await.unwrap().err();
        } else {
            c.abort();
        }
    }
    assert_eq!(
        past_gateway_cap,
        Some(RemoteError::TooManyCalls {
            scope: CallCap::PerGateway,
            limit: 8
        })
    );

    const N: usize = 50_000;
    const CAP: usize = 64;
    let rss_before = cluster_support::rss_kib(cl.a.pid());
    let t = Instant::now();
    let refused = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let calls: Vec<_> = (0..N)
        .map(|_| {
            let cold = cold.clone();
            let refused = refused.clone();
            tokio::spawn(async move {
                let r = cold
                    .request(
                        "echo",
                        None,
                        RemoteOptions::new().timeout(Duration::from_secs(3600)),
                    )
                    .await;
                match r {
                    Err(RemoteError::TooManyCalls {
                        scope: CallCap::PerNode,
                        limit: 64,
                    }) => {
                        refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    other => panic!("{other:?}"),
                }
            })
        })
        .collect();
    let all_refused = common::eventually(Duration::from_secs(60), || {
        refused.load(std::sync::atomic::Ordering::Relaxed) >= N - CAP
    })
    .await;
    let elapsed = t.elapsed();
    let rss_after = cluster_support::settled_rss_kib(
        cl.a.pid(),
        Duration::from_millis(500),
        Duration::from_secs(10),
    )
    .await;
    let n = refused.load(std::sync::atomic::Ordering::Relaxed);
    figure(
        "cluster: 50,000 calls from one node to a server that is not ready (timeout 1 h)",
        format!(
            "{n} refused past the per-node cap of {CAP} after {elapsed:.1?}; node A's RSS {} -> {} MiB",
            rss_before / 1024,
            rss_after / 1024
        ),
    );
    for c in calls {
        c.abort();
    }
    assert!(all_refused.is_some(), "{n} of {N} refused");
    assert_eq!(n, N - CAP);
    assert!(
        rss_after < rss_before + 32 * 1024,
        "node A grew to {} MiB",
        rss_after / 1024
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_is_clamped_on_the_node_that_serves() {
    const TEST: &str = "the_timeout_is_clamped_on_the_node_that_serves";
    let _serial = role_or_serial!();
    let cl = Cluster::two_nodes(TEST).await;
    let clamped = cl.find("fixture-clamped").await;
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
    assert!(
        matches!(r, Err(RemoteError::Timeout { after_ms: 500 })),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_with_an_unbounded_timeout_returns() {
    let _serial = SERIAL.lock().await;
    let client = Client::start(common::config(&[])).await.unwrap();
    let gateway = Gateway::start(
        GatewayConfig::new().expose("unbounded-wait", client.clone(), Grants::all()),
        None,
    )
    .await
    .unwrap();
    let servers = RemoteServers::start().await.unwrap();
    let found = tokio::spawn(async move {
        servers
            .wait_for("unbounded-wait", Duration::MAX)
            .await
            .is_ok()
    })
    .await;
    assert!(matches!(found, Ok(true)), "{found:?}");
    gateway.stop();
    crate::common::shutdown(client.stop().wait()).await;
}

#[test]
fn an_empty_cookie_is_refused() {
    let e = NodeConfig::new("node-x", "localhost", "")
        .build()
        .unwrap_err();
    assert_eq!(e, NodeConfigError::EmptyCookie);
    assert!(NodeConfig::new("node-x", "localhost", COOKIE)
        .build()
        .is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_mutual_tls_only_a_node_with_a_client_certificate_connects() {
    let _serial = SERIAL.lock().await;
    let dir = common::tempdir("cluster-mtls");
    let ca = cluster_support::make_certificates(&dir, &["node-a", "node-b"])
        .expect("the `openssl` command makes the test certificates");
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let (a_cert, a_key, b_cert, b_key) = (
        read("node-a.pem"),
        read("node-a.key"),
        read("node-b.pem"),
        read("node-b.key"),
    );
    use conduit_mcp::cluster::tls;
    let name = || tls::server_name("localhost").unwrap();
    // Node A with mutual TLS, and (to compare) node A' with plain TLS.
    let start = |port: u16, acceptor| async move {
        let server = NodeConfig::new(format!("node-a-{port}"), "localhost", COOKIE)
            .port(port)
            .tls(acceptor)
            .build()
            .unwrap();
        Actor::spawn(None, server, ()).await.unwrap().0
    };
    let (port_m, port_p) = (free_port(), free_port());
    let mutual = start(port_m, tls::mutual_acceptor(&a_cert, &a_key, &ca).unwrap()).await;
    let plain = start(port_p, tls::acceptor(&a_cert, &a_key).unwrap()).await;

    let mut outcomes = Vec::new();
    for (label, port, connector) in [
        (
            "plain TLS, no client certificate",
            port_p,
            tls::connector(&ca).unwrap(),
        ),
        (
            "mutual TLS, no client certificate",
            port_m,
            tls::connector(&ca).unwrap(),
        ),
        (
            "mutual TLS, node-b's certificate",
            port_m,
            tls::mutual_connector(&ca, &b_cert, &b_key).unwrap(),
        ),
    ] {
        let b = node(&format!("node-b-{port}-{}", outcomes.len()), free_port()).await;
        let mut events = cluster_support::session_events(&b);
        let outcome = match ractor_cluster::client_connect_enc(
            &b,
            format!("127.0.0.1:{port}"),
            connector,
            name(),
        )
        .await
        {
            Err(_) => "refused at connect",
            Ok(()) => cluster_support::session_outcome(&mut events, Duration::from_secs(20)).await,
        };
        outcomes.push(format!("{label}: {outcome}"));
        b.stop(None);
    }
    figure(
        "cluster: connecting to node A over TLS",
        outcomes.join("; "),
    );
    assert_eq!(
        outcomes,
        [
            "plain TLS, no client certificate: authenticated",
            "mutual TLS, no client certificate: disconnected",
            "mutual TLS, node-b's certificate: authenticated",
        ]
    );
    mutual.stop(None);
    plain.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_leaves_the_serving_node_bounded() {
    const TEST: &str = "a_subscriber_that_stops_reading_leaves_the_serving_node_bounded";
    let _serial = role_or_serial!();
    let cl = Cluster::two_nodes(TEST).await;
    let mut s = Node::spawn(
        TEST,
        &format!("subscribe node-s {} 127.0.0.1:{}", free_port(), cl.port_a),
    );
    s.expect("SUBSCRIBED", Duration::from_secs(30)).await;
    let fixture = cl.find("fixture").await;
    // The subscriber's node stops reading anything (its process stopped).
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(s.pid() as i32),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .unwrap();
    // Two floods: a queue without a bound grows with each; a bounded one
    // fills once (the window) and stays.
    const N: u64 = 300_000;
    let mut rss = vec![cluster_support::rss_kib(cl.a.pid())];
    for _ in 0..2 {
        // The call returns once node A's client has read every notification.
        fixture
            .request(
                "fixture/notify",
                Some(json!({ "count": N })),
                RemoteOptions::new().timeout(Duration::from_secs(120)),
            )
            .await
            .unwrap();
        rss.push(
            cluster_support::settled_rss_kib(
                cl.a.pid(),
                Duration::from_millis(1000),
                Duration::from_secs(30),
            )
            .await,
        );
    }
    let mib: Vec<u64> = rss.iter().map(|k| k / 1024).collect();
    figure(
        "cluster: 2 x 300,000 notifications for a subscribed node that stopped reading",
        format!("node A's RSS {} -> {} -> {} MiB", mib[0], mib[1], mib[2]),
    );
    // The window (4 MiB of messages) and what queues behind it; without
    // the window, each flood added 19-33 MiB.
    assert!(
        rss[2] < rss[0] + 16 * 1024,
        "two floods grew node A by {} MiB",
        (rss[2].saturating_sub(rss[0])) / 1024
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calls_of_a_node_that_goes_away_are_cancelled_on_the_serving_node() {
    const TEST: &str = "the_calls_of_a_node_that_goes_away_are_cancelled_on_the_serving_node";
    let _serial = role_or_serial!();
    let mut cl = Cluster::three_nodes(TEST).await;
    let before = logged(&cl.log, "notifications/cancelled");
    cl.c().send("REUSE fixture 4 30000");
    cl.c().expect("STARTED", Duration::from_secs(30)).await;
    // Node C dies with 4 calls in flight on node A.
    let killed = Instant::now();
    drop(cl.c.take());
    let cancelled = common::eventually(Duration::from_secs(20), || {
        logged(&cl.log, "notifications/cancelled") >= before + 4
    })
    .await;
    figure(
        "cluster: a calling node SIGKILLed with 4 calls in flight on node A",
        format!(
            "the server got {} cancellations, the last {:?} after the kill",
            logged(&cl.log, "notifications/cancelled") - before,
            cancelled.map(|_| killed.elapsed())
        ),
    );
    assert!(cancelled.is_some(), "the calls of the dead node ran on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_exposed_with_no_grants_is_refused_every_call() {
    const TEST: &str = "a_server_exposed_with_no_grants_is_refused_every_call";
    let _serial = role_or_serial!();
    let cl = Cluster::two_nodes(TEST).await;
    let ungranted = cl.find("fixture-ungranted").await;
    for (method, r) in [
        (
            "echo",
            ungranted
                .request("echo", None, RemoteOptions::new())
                .await
                .map(|_| ()),
        ),
        (
            "tools/list",
            ungranted
                .list_tools(Duration::from_secs(10))
                .await
                .map(|_| ()),
        ),
        (
            "session",
            ungranted.session(Duration::from_secs(10)).await.map(|_| ()),
        ),
    ] {
        assert!(
            matches!(&r, Err(RemoteError::Refused { method: m, .. }) if m == method),
            "{method}: {r:?}"
        );
    }
}
