//! Our own client (`conduit_mcp::Client`) drives `examples/server.rs` in both
//! eras: list tools, echo, add, sleep with progress, cancel a sleep, roots,
//! a resource and a prompt.

#![cfg(unix)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use conduit_mcp::{
    CancelToken, Client, ClientConfig, EraPreference, ErrorObject, InboundRequest, RequestOptions,
    StartOptions, StderrMode,
};
use serde_json::json;
use tokio::sync::mpsc;

const PATIENCE: Duration = Duration::from_secs(20);

use crate::example_bin;

/// `examples/server.rs`, built on demand (see `interop/example_bin.rs`).
fn example_binary() -> PathBuf {
    example_bin::example_bin("server").expect("the server example could not be built")
}

async fn start(era: EraPreference) -> Client {
    let mut config = ClientConfig::new(example_binary().to_string_lossy())
        .era(era)
        .env("RUST_LOG", "warn")
        .stderr(StderrMode::Discard);
    config.capabilities = json!({ "roots": {} });
    let handler = |req: InboundRequest| async move {
        match req.method.as_str() {
            "roots/list" => {
                Ok(json!({ "roots": [{ "uri": "file:///own/client", "name": "own" }] }))
            }
            "ping" => Ok(json!({})),
            m => Err(ErrorObject::new(-32601, format!("unsupported: {m}"))),
        }
    };
    let opts = StartOptions::new().handler(handler);
    Client::start_with(config, opts)
        .await
        .expect("client start")
}

async fn drive(era: EraPreference, expect: conduit_mcp::Era) {
    let client = start(era).await;
    let session = client.ready(PATIENCE).await.expect("ready");
    assert_eq!(session.era, expect);
    assert_eq!(
        session.server_info.as_ref().unwrap().name,
        "conduit-mcp-example"
    );

    let tools = client.list_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "add", "sleep", "roots"]);

    let r = client
        .call_tool("echo", json!({ "text": "own" }), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "own");
    let r = client
        .call_tool("add", json!({ "a": 1, "b": 2 }), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({ "sum": 3.0 })));

    let (tx, mut rx) = mpsc::unbounded_channel();
    let r = client
        .call_tool(
            "sleep",
            json!({ "ms": 50 }),
            RequestOptions::new().progress(tx),
        )
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "slept 50 ms");
    let mut seen = Vec::new();
    while let Ok(p) = rx.try_recv() {
        seen.push(p.progress);
    }
    assert!(seen.len() >= 10, "{seen:?}");

    // Cancel a long sleep once its first progress arrived.
    let token = CancelToken::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let call = {
        let client = client.clone();
        let opts = RequestOptions::new()
            .progress(tx)
            .cancel_token(token.clone());
        tokio::spawn(async move {
            client
                .call_tool("sleep", json!({ "ms": 60000 }), opts)
                .await
        })
    };
    tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .unwrap()
        .unwrap();
    let t = Instant::now();
    token.cancel();
    let res = tokio::time::timeout(PATIENCE, call).await.unwrap().unwrap();
    assert!(res.is_err(), "{res:?}");
    assert!(t.elapsed() < Duration::from_secs(5));

    // roots: a roots/list request (legacy) or an input-required round (modern).
    let r = client
        .call_tool("roots", json!({}), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(
        r.structured_content.unwrap()["roots"][0]["uri"],
        json!("file:///own/client")
    );

    let res = client.read_resource("demo://readme").await.unwrap();
    assert!(res.contents[0].as_text().is_some(), "{res:?}");
    let p = client
        .get_prompt("greet", json!({ "name": "Own" }))
        .await
        .unwrap();
    assert_eq!(p.messages[0].content.as_text(), Some("Say hello to Own."));

    let reports = tokio::time::timeout(PATIENCE, client.stop().wait())
        .await
        .unwrap();
    eprintln!("{expect} shutdown: {reports:?}");
}

#[tokio::test]
async fn own_client_legacy_era() {
    drive(EraPreference::Stateful, conduit_mcp::Era::Stateful).await;
}

#[tokio::test]
async fn own_client_modern_era() {
    drive(EraPreference::Stateless, conduit_mcp::Era::Stateless).await;
}

#[tokio::test]
async fn own_client_auto_discovers_the_modern_era() {
    let client = start(EraPreference::Auto).await;
    let session = client.ready(PATIENCE).await.expect("ready");
    assert_eq!(session.era, conduit_mcp::Era::Stateless);
    assert_eq!(session.protocol_version, "2026-07-28");
    tokio::time::timeout(PATIENCE, client.stop().wait())
        .await
        .unwrap();
}

/// Requests per second the example server completes under our own client:
/// `N` echo calls, 64 in flight. Informative (ignored by default):
/// `cargo test --release --test server_own_client -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn own_client_throughput() {
    const N: usize = 20_000;
    const IN_FLIGHT: usize = 64;
    for era in [EraPreference::Stateful, EraPreference::Stateless] {
        let client = start(era).await;
        client.ready(PATIENCE).await.unwrap();
        let permits = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
        let mut set = tokio::task::JoinSet::new();
        let t = Instant::now();
        for i in 0..N {
            let permit = permits.clone().acquire_owned().await.unwrap();
            let client = client.clone();
            set.spawn(async move {
                let r = client
                    .call_tool(
                        "echo",
                        json!({ "text": format!("r{i}") }),
                        RequestOptions::new(),
                    )
                    .await;
                drop(permit);
                r.map(|r| r.joined_text())
            });
        }
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            if r.unwrap().is_ok() {
                ok += 1;
            }
        }
        let took = t.elapsed();
        assert_eq!(ok, N);
        eprintln!(
            "{era:?}: {N} echo calls, {IN_FLIGHT} in flight, own client: {took:?} = {:.0} requests/s",
            N as f64 / took.as_secs_f64()
        );
        client.stop().wait().await;
    }
}
