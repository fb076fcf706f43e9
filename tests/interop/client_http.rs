//! This client over Streamable HTTP against the official SDKs' servers:
//! the TypeScript reference server (`server-everything streamableHttp`,
//! 2025-11-25 era: no released TypeScript SDK speaks 2026-07-28) and a
//! Python `mcp` 2.x server (both eras), installed by
//! `.ci/install-client-peers.sh`.
//!
//! The tests are `#[ignore]`d, so `cargo test` counts them as ignored
//! where the peers are not installed; `.ci/run` installs them and runs
//! these with `-- --ignored`, where a missing peer fails the test.

use crate::peers;

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use conduit_mcp::{Client, ClientConfig, Era, EraPreference, RequestOptions};
use peers::{everything_js, py_server_script, venv_python};
use serde_json::json;
use tokio::process::{Child, Command};

const PATIENCE: Duration = Duration::from_secs(30);

/// A free loopback port (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A peer server process; killed and reaped when dropped.
struct Peer {
    child: Child,
    url: String,
}

impl Peer {
    /// Starts the peer on a free port and waits until it listens. The port
    /// is free when chosen, not when the peer binds it (another process,
    /// or an outgoing connection of a test running meanwhile, may take it
    /// first): a peer that exits before it listens is started again on
    /// another port, twice at most, then the test fails with its stderr.
    async fn start(mut cmd: Command) -> Peer {
        let mut said = String::new();
        for attempt in 1..=3 {
            let port = free_port();
            let log = std::env::temp_dir().join(format!(
                "conduit-interop-peer-{}-{port}.log",
                std::process::id()
            ));
            let stderr = std::fs::File::create(&log).expect("the peer's log file");
            cmd.env("PORT", port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::from(stderr))
                .kill_on_drop(true);
            let mut child = cmd.spawn().expect("the peer starts");
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            // Wait until it listens (a cold node or python start).
            let deadline = tokio::time::Instant::now() + PATIENCE;
            let exited = loop {
                if tokio::net::TcpStream::connect(addr).await.is_ok() {
                    break None;
                }
                if let Some(status) = child.try_wait().expect("the peer's status") {
                    break Some(status);
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the peer did not listen within {PATIENCE:?}: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = std::fs::remove_file(&log);
            match exited {
                None => {
                    return Peer {
                        child,
                        url: format!("http://{addr}/mcp"),
                    }
                }
                Some(status) => {
                    said = format!("attempt {attempt} on port {port}: {status}: {text}");
                    eprintln!("the peer exited before it listened: {said}");
                }
            }
        }
        panic!("the peer never listened: {said}");
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

async fn drive(
    url: &str,
    era: EraPreference,
    tool: &str,
    args: serde_json::Value,
) -> (Era, String) {
    let config = ClientConfig::http(url).era(era).request_timeout(PATIENCE);
    let client = Client::start(config).await.unwrap();
    let session = client.ready(PATIENCE).await.expect("ready");
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == tool), "{era:?}: {tools:?}");
    let (tx, mut progress) = tokio::sync::mpsc::unbounded_channel();
    let r = client
        .call_tool(tool, args, RequestOptions::new().progress(tx))
        .await
        .unwrap();
    while progress.try_recv().is_ok() {}
    crate::common::shutdown(client.stop().wait()).await;
    (session.era, r.joined_text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn the_typescript_reference_server_over_streamable_http() {
    let js = need!(
        everything_js(),
        "server-everything (or node) at target/peers/node"
    );
    let mut cmd = Command::new("node");
    cmd.arg(&js).arg("streamableHttp");
    let peer = Peer::start(cmd).await;
    // Auto: the probe is refused (400, read), then initialize.
    for era in [EraPreference::Auto, EraPreference::Stateful] {
        let (got, text) = drive(&peer.url, era, "get-sum", json!({ "a": 2, "b": 3 })).await;
        assert_eq!(got, Era::Stateful, "{era:?}");
        assert!(text.contains('5'), "{era:?}: {text}");
    }
    peer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn the_python_sdk_server_over_streamable_http_in_both_eras() {
    let py = need!(venv_python(), "the Python mcp package at target/peers/venv");
    let script = py_server_script().with_file_name("py_http_server.py");
    assert!(Path::new(&script).is_file());
    let mut cmd = Command::new(py);
    cmd.arg(&script);
    let peer = Peer::start(cmd).await;
    for (era, want) in [
        (EraPreference::Stateful, Era::Stateful),
        (EraPreference::Stateless, Era::Stateless),
        (EraPreference::Auto, Era::Stateless),
    ] {
        let (got, text) = drive(&peer.url, era, "add", json!({ "a": 40, "b": 2 })).await;
        assert_eq!(got, want, "{era:?}");
        assert_eq!(text, "42", "{era:?}");
    }
    peer.stop().await;
}
