//! Our own client (`conduit_mcp::Client`) drives `examples/server.rs` in both
//! eras: list tools, echo, add, sleep with progress, cancel a sleep, roots,
//! a resource and a prompt.

#![cfg(unix)]

use std::path::PathBuf;
use std::time::Duration;

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
    config = config.capabilities(serde_json::from_value(json!({ "roots": {} })).unwrap());
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
    token.cancel();
    // Cancelled, not answered after its minute.
    let res = tokio::time::timeout(PATIENCE, call).await.unwrap().unwrap();
    assert!(res.is_err(), "{res:?}");

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
