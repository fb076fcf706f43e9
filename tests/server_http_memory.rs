//! Streamable HTTP memory bounds, measured: clients that open streams and
//! never read them, and clients that open sessions and never close them,
//! grow the server (this process) by no more than its byte and session
//! bounds. One test at a time in this binary, so RSS is this test's.

#[path = "common/mod.rs"]
mod common;
#[path = "server_http_support/mod.rs"]
mod support;

use std::sync::atomic::Ordering;

use serde_json::json;
use support::*;
use tokio::io::AsyncWriteExt;

const STREAMS: usize = 30;
/// Notifications of ~1.1 KiB each `big` call sends: ~4.4 MiB per stream.
const PER_STREAM: u64 = 4000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_never_read_and_sessions_never_closed_stay_within_the_bounds() {
    let s = start(
        config()
            .session_queue_bytes(256 * 1024)
            .max_buffered_bytes(4 * 1024 * 1024)
            .max_sessions(200),
    )
    .await;
    // Warm up the allocator and the runtime with one of each.
    let sid = open_session(s.addr, json!({})).await;
    let r = legacy(
        s.addr,
        &sid,
        json!(1),
        "tools/call",
        json!({ "name": "big", "arguments": { "ms": 10 } }),
    )
    .await;
    r.bytes().await;
    let base = common::rss_mib();

    // 1. Streams nobody reads: each request sends ~4.4 MiB of notifications
    // to a client that sent its POST and reads nothing.
    let mut sessions = Vec::new();
    for _ in 0..STREAMS {
        sessions.push(open_session(s.addr, json!({})).await);
    }
    let mut silent = Vec::new();
    for (i, sid) in sessions.iter().enumerate() {
        let body = serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": { "name": "big", "arguments": { "ms": PER_STREAM } } }))
        .unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-session-id: {sid}\r\nmcp-protocol-version: {LEGACY}\r\ncontent-length: {}\r\n\r\n",
            s.addr,
            body.len()
        );
        let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
        tcp.write_all(head.as_bytes()).await.unwrap();
        tcp.write_all(&body).await.unwrap();
        silent.push(tcp); // never read
    }
    let finished = 1 + STREAMS;
    let done = eventually(|| s.counts.finished.load(Ordering::SeqCst) == finished).await;
    assert!(
        done,
        "finished {} of {finished}",
        s.counts.finished.load(Ordering::SeqCst)
    );
    let streams = common::rss_mib() - base;
    let refused = s.counts.refused.load(Ordering::SeqCst);
    let sent_mib = (STREAMS as f64) * (PER_STREAM as f64) * 1.1 / 1024.0;
    common::figure(
        "http: streams never read",
        format!(
            "{STREAMS} streams sent {sent_mib:.0} MiB in all: server RSS +{streams:.1} MiB, {refused} notifications refused (QueueFull)"
        ),
    );
    assert!(refused > 0, "the bounds were never reached");
    // 4 MiB of queues, plus what hyper buffers per connection (up to
    // ~400 KiB each), plus allocator slack.
    assert!(
        streams < 32.0,
        "RSS grew {streams:.1} MiB for {sent_mib:.0} MiB sent"
    );
    drop(silent);

    // 2. Sessions nobody closes: 2,000 initializes against max_sessions 200.
    let sid = sessions[0].clone();
    let before = common::rss_mib();
    let mut opened = 0;
    let mut refused = 0;
    for _ in 0..2000 {
        let r = post(s.addr, &[], json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } }))
        .await;
        match r.status {
            200 => opened += 1,
            503 => refused += 1,
            other => panic!("initialize got {other}"),
        }
    }
    let grown = common::rss_mib() - before;
    common::figure(
        "http: sessions never closed",
        format!("2000 initializes: {opened} sessions opened, {refused} refused with 503; RSS +{grown:.1} MiB"),
    );
    // Past this client's quota (175: 7/8 of the table) each one is
    // refused; none ends a session that was not given up.
    assert_eq!(opened + 1 + STREAMS, 175, "{opened} opened");
    assert_eq!(opened + refused, 2000);
    assert_eq!(
        legacy(s.addr, &sid, json!(2), "tools/list", json!({}))
            .await
            .status,
        200
    );
    assert!(grown < 16.0, "RSS grew {grown:.1} MiB");
    s.handle.stop();
}
