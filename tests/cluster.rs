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

use common::figure;

const ROLE: &str = "CONDUIT_TEST_ROLE_NODE_A";
const COOKIE: &str = "conduit-mcp-test-cookie";
const LOOPBACK: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

fn free_port() -> u16 {
    std::net::TcpListener::bind((LOOPBACK, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

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

/// A test certificate authority and a certificate for `localhost` signed
/// by it, made with the `openssl` command in `dir` (cert.pem, key.pem);
/// returns the authority's certificate (PEM).
fn make_certificates(dir: &std::path::Path) -> Option<Vec<u8>> {
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .ok()?;
    let made = openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=conduit test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]) && openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "key.pem",
        "-out",
        "leaf.csr",
    ]) && openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "leaf.ext",
        "-out",
        "cert.pem",
    ]);
    made.then(|| std::fs::read(dir.join("ca.pem")).ok())
        .flatten()
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
        let Some(ca) = make_certificates(&dir) else {
            eprintln!("skipped: the `openssl` command could not make test certificates");
            return;
        };
        spec = format!(
            "{spec} {} {}",
            dir.join("cert.pem").display(),
            dir.join("key.pem").display()
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
