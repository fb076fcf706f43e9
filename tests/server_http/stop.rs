//! Streamable HTTP graceful stop: the same handle and lifetime token as
//! stdio; in-flight requests get their answers or an error within the
//! grace, streams end, then the listener closes. Also the mounted form.

use crate::server_http_support as support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use conduit_mcp::server::http::HttpService;
use conduit_mcp::server::ServeEnd;
use serde_json::{json, Value};
use support::*;
use tokio::io::AsyncWriteExt;

/// Reads a request stream to its answer.
async fn answer(mut ev: Events) -> Value {
    loop {
        let m = ev
            .next_message()
            .await
            .expect("stream ended without an answer");
        if m.get("id").is_some() {
            return m;
        }
    }
}

#[tokio::test]
async fn stop_answers_in_flight_requests_within_the_grace_then_closes_the_listener() {
    let mut c = config();
    c.server = c
        .server
        .stop_drain(Duration::from_millis(400))
        .flush_timeout(Duration::from_secs(1));
    let s = start(c).await;
    let sid = open_session(s.addr, json!({})).await;
    let call = |id: u64, ms: u64| {
        legacy(
            s.addr,
            &sid,
            json!(id),
            "tools/call",
            json!({ "name": "sleep", "arguments": { "ms": ms }, "_meta": { "progressToken": id } }),
        )
    };
    let mut short = call(1, 200).await.sse();
    let mut long = call(2, 60_000).await.sse();
    assert_eq!(
        short.next_message().await.unwrap()["method"],
        "notifications/progress"
    );
    assert_eq!(
        long.next_message().await.unwrap()["method"],
        "notifications/progress"
    );
    let get = get(s.addr, &sid, &[]).await;
    let mut get = get.sse();
    let listen = modern(
        s.addr,
        json!("l"),
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    )
    .await;
    let mut listen = listen.sse();
    assert_eq!(
        listen.next_message().await.unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );

    let token = s.handle.lifetime_token();
    let asked = Instant::now();
    s.handle.stop();
    let short = answer(short).await;
    assert_eq!(
        short["result"]["content"][0]["text"], "slept 200 ms",
        "{short}"
    );
    let long = answer(long).await;
    assert_eq!(long["error"]["code"], -32603, "{long}");
    assert!(
        long["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stopping"),
        "{long}"
    );
    // The listen stream ends with its result, the GET stream just ends.
    let end = answer(listen).await;
    assert_eq!(end["id"], "l");
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(get.next_message().await, None);
    let ended = tokio::time::timeout(PATIENCE, s.task)
        .await
        .expect("serve returned")
        .unwrap();
    let took = asked.elapsed();
    println!("stop: serve returned {took:?} after stop() (stop_drain 400 ms)");
    // Within PATIENCE: the minute's sleep did not hold the stop up.
    assert_eq!(ended.unwrap(), ServeEnd::Stopped);
    assert!(!token.is_alive());
    assert!(
        tokio::net::TcpStream::connect(s.addr).await.is_err(),
        "the listener is closed"
    );
    assert_eq!(
        s.counts.finished.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
}

#[tokio::test]
async fn a_client_that_never_reads_does_not_hold_up_the_stop() {
    // More than the kernel's socket buffers hold: the response cannot end.
    let mut c = config()
        .session_queue_bytes(16 * 1024 * 1024)
        .max_buffered_bytes(16 * 1024 * 1024);
    c.server = c.server.flush_timeout(Duration::from_millis(300));
    let s = start(c).await;
    let sid = open_session(s.addr, json!({})).await;
    let body = serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "big", "arguments": { "ms": 20000 } } }))
    .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\nmcp-session-id: {sid}\r\ncontent-length: {}\r\n\r\n",
        s.addr,
        body.len()
    );
    let mut silent = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    silent.write_all(head.as_bytes()).await.unwrap();
    silent.write_all(&body).await.unwrap();
    let counts = s.counts.clone();
    assert!(eventually(|| counts.finished.load(std::sync::atomic::Ordering::SeqCst) == 1).await);
    let asked = Instant::now();
    s.handle.stop();
    let ended = tokio::time::timeout(PATIENCE, s.task)
        .await
        .expect("serve returned")
        .unwrap();
    assert_eq!(ended.unwrap(), ServeEnd::Stopped);
    let took = asked.elapsed();
    println!("stop with a client that never reads: {took:?} (flush_timeout 300 ms)");
    assert!(
        took >= Duration::from_millis(300),
        "the response could end: {took:?}"
    );
    drop(silent);
}

#[tokio::test]
async fn the_mounted_service_serves_next_to_other_routes_and_refuses_after_stop() {
    let counts = Arc::new(Counts::default());
    let mcp = HttpService::new(config(), router(counts)).unwrap();
    let handle = mcp.handle();
    let app = conduit_mcp::server::http::axum::Router::new()
        .route(
            "/health",
            conduit_mcp::server::http::axum::routing::get(|| async { "ok" }),
        )
        .merge(mcp.axum_router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server =
        tokio::spawn(async move { conduit_mcp::server::http::axum::serve(listener, app).await });
    handle.wait_until_ready().await.unwrap();
    assert_eq!(handle.name(), "http");
    let health = {
        let mut r = request("GET", addr, &[], None);
        *r.uri_mut() = format!("http://{addr}/health").parse().unwrap();
        send(addr, r).await
    };
    assert_eq!(health.status, 200);
    let sid = open_session(addr, json!({})).await;
    assert_eq!(
        legacy(addr, &sid, json!(1), "tools/list", json!({}))
            .await
            .status,
        200
    );
    let token = handle.lifetime_token();
    handle.stop();
    assert!(
        eventually(|| !token.is_alive()).await,
        "the lifetime ends after the stop"
    );
    let r = post(
        addr,
        &[],
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {} }),
    )
    .await;
    assert_eq!(r.status, 503);
    server.abort();
}
