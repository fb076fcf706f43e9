//! Shares per owner, where one owner can be many addresses: any local
//! process can use all of 127.0.0.0/8, so connections from several
//! loopback addresses are one owner's. What an owner holds busy (open
//! streams, answers still being written) is bounded per owner; a
//! connection past a bound is answered 503 at once; a connection still
//! writing its answer is never taken for an idle one; small bodies are
//! not held up by bodies other addresses stall.

use crate::common;
use crate::server_http_support as support;

use std::time::Duration;

use conduit_mcp::protocol::{CallToolResult, Implementation};
use conduit_mcp::server::http::{HttpConfig, HttpServer};
use conduit_mcp::server::{RequestContext, Router, ServerConfig};
use serde_json::{json, Value};
use support::*;
use tokio::io::AsyncWriteExt;

fn init() -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } })
}

/// Loopback addresses other than 127.0.0.1 (each its own peer address).
const ATTACKERS: [&str; 3] = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];

/// A session opened from `from`, and its GET stream from there: the
/// stream's response (200) or the refusal of either request.
async fn stream_from(from: &str, addr: std::net::SocketAddr) -> Resp {
    let r = send_from(from, addr, request("POST", addr, &[], Some(&init()))).await;
    if r.status != 200 {
        return r;
    }
    let sid = r.header("mcp-session-id").expect("a session id");
    r.bytes().await;
    let headers = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", LEGACY),
    ];
    send_from(from, addr, request("GET", addr, &headers, None)).await
}

#[tokio::test]
async fn streams_from_many_loopback_addresses_are_one_owners_and_the_listener_answers_503_past_its_share(
) {
    let (log, _guard) = common::capture_trace();
    // 32 connections, 16 per owner.
    let s = start(config().max_connections(32).max_connections_per_peer(16)).await;
    let mut streams = Vec::new();
    let mut refused = 0u64;
    for i in 0..48 {
        let r = stream_from(ATTACKERS[i % ATTACKERS.len()], s.addr).await;
        match r.status {
            200 => streams.push(r),
            503 => {
                assert!(
                    r.header("retry-after").is_some(),
                    "a 503 without Retry-After"
                );
                refused += 1;
            }
            other => panic!("stream {i}: {other}"),
        }
    }
    // Another local client: the same owner, answered at once.
    let started = std::time::Instant::now();
    let r = tokio::time::timeout(PATIENCE, post(s.addr, &[], init())).await;
    common::figure(
        "HTTP server: an initialize while three loopback addresses try to hold 48 streams (32 connections, 16 per owner)",
        format!(
            "{:?} after {:?}; {} streams held, {refused} refused",
            r.as_ref().map(|r| r.status),
            started.elapsed(),
            streams.len()
        ),
    );
    let r =
        r.expect("no answer: the streams hold every connection and the listener accepts nobody");
    assert!(
        streams.len() <= 16,
        "{} streams held from loopback addresses, past the owner's share of 16",
        streams.len()
    );
    assert!(refused > 0);
    assert_eq!(
        r.status, 503,
        "the owner holds its share: refused, with a status"
    );
    assert!(r.header("retry-after").is_some());
    assert_eq!(
        s.handle.refused_connections(),
        refused + 1,
        "each refusal counted"
    );
    let warned = log
        .text()
        .lines()
        .filter(|l| l.contains(" WARN ") && l.contains("connection refused"))
        .count();
    assert_eq!(warned, 1, "refusals logged at WARN once per period");
    drop(streams);
    s.handle.stop();
}

/// A server whose `blob` tool answers as many bytes of text as its `ms`
/// argument says.
async fn start_blob(
    config: HttpConfig,
) -> (std::net::SocketAddr, conduit_mcp::server::ServerHandle) {
    let router = Router::new().tool(
        "blob",
        "Answers n bytes of text.",
        |a: Sleep, _ctx: RequestContext| async move {
            Ok(CallToolResult::text("x".repeat(a.ms as usize)))
        },
    );
    let server = HttpServer::bind("127.0.0.1:0", config).await.expect("bind");
    let addr = server.local_addr().unwrap();
    let handle = server.handle();
    tokio::spawn(server.serve(router));
    handle.wait_until_ready().await.expect("ready");
    (addr, handle)
}

#[tokio::test]
async fn an_answer_still_being_written_is_not_cut_to_make_room_for_new_connections() {
    const ANSWER: u64 = 8_000_000;
    let config = HttpConfig::new(ServerConfig::new(Implementation::new("blob", "0")))
        .max_connections(4)
        .max_connections_per_peer(4);
    let (addr, handle) = start_blob(config).await;
    // A reader with a small receive window: the answer waits in the
    // server, most of it in hyper's write buffer, while it is not read.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(64 * 1024).unwrap();
    let tcp = socket.connect(addr).await.unwrap();
    let mut params = json!({ "name": "blob", "arguments": { "ms": ANSWER } });
    params["_meta"] = meta();
    let headers = [
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "blob"),
    ];
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let slow = send_on(tcp, request("POST", addr, &headers, Some(&body))).await;
    assert_eq!(slow.status, 200, "{:?}", slow.headers);
    assert_eq!(
        slow.header("content-type").as_deref(),
        Some("application/json")
    );
    // Another local process opens connections that send nothing, past the
    // share: each takes the place of an idle one.
    let mut silent = Vec::new();
    for _ in 0..8 {
        silent.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    // Served after every silent connection was admitted (in order).
    let r = modern(addr, json!(2), "tools/list", json!({})).await;
    assert_eq!(r.status, 200);
    // Read as it comes, counted, until the end or a cut.
    let mut body = slow.body;
    let mut got = Vec::new();
    let cut = loop {
        match tokio::time::timeout(PATIENCE, http_body_util::BodyExt::frame(&mut body))
            .await
            .expect("the answer timed out")
        {
            None => break None,
            Some(Ok(frame)) => got.extend_from_slice(&frame.into_data().unwrap_or_default()),
            Some(Err(e)) => break Some(e),
        }
    };
    common::figure(
        "HTTP server: an 8 MB answer read after 8 more connections (4 per owner)",
        format!("{} bytes delivered, cut: {cut:?}", got.len()),
    );
    assert!(
        cut.is_none(),
        "the answer was cut after {} bytes: {cut:?}",
        got.len()
    );
    let v: Value = serde_json::from_slice(&got).expect("the whole answer");
    assert_eq!(
        v["result"]["content"][0]["text"].as_str().map(str::len),
        Some(ANSWER as usize)
    );
    drop(silent);
    handle.stop();
}

#[tokio::test]
async fn bodies_stalled_from_many_addresses_do_not_hold_up_a_small_request() {
    const KIB: usize = 1024;
    let mut c = config().body_timeout(Duration::from_secs(60));
    // Room for 1 MiB of bodies: a reserve of 128 KiB for small ones, and
    // 896 KiB shared, 256 KiB (one body) per owner.
    c.server = c
        .server
        .max_inbound_bytes(1024 * KIB)
        .max_message_bytes(256 * KIB);
    let s = start(c).await;
    let stall = |from: &'static str, len: usize| {
        let addr = s.addr;
        async move {
            let mut tcp = connect_from(from, addr).await;
            let head = format!(
                "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n"
            );
            tcp.write_all(head.as_bytes()).await.unwrap();
            // All but the last byte, then a stall.
            tcp.write_all(&vec![b' '; len - 1]).await.unwrap();
            tcp
        }
    };
    let mut stalled = Vec::new();
    // Four addresses stall a body of 256 KiB each: the shared room.
    for from in ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"] {
        stalled.push(stall(from, 256 * KIB).await);
    }
    // A fifth stalls small bodies: the reserve, to its last bytes.
    for len in [64 * KIB; 4].into_iter().chain([100; 8]) {
        stalled.push(stall("127.0.0.6", len).await);
    }
    // Again and again: the stalled bodies take their room as the server
    // reads them, meanwhile.
    let mut slowest = Duration::ZERO;
    for i in 0..50 {
        let started = std::time::Instant::now();
        let r = tokio::time::timeout(PATIENCE, post(s.addr, &[], init())).await;
        slowest = slowest.max(started.elapsed());
        let Ok(r) = r else {
            common::figure(
                "HTTP server: initializes while five addresses stall bodies (1 MiB of room)",
                format!("no answer within {PATIENCE:?} (initialize {i})"),
            );
            panic!("initialize {i} waited for room the stalled bodies hold");
        };
        assert_eq!(r.status, 200, "initialize {i}");
    }
    common::figure(
        "HTTP server: initializes while five addresses stall bodies (1 MiB of room)",
        format!("50 answered, the slowest after {slowest:?}"),
    );
    drop(stalled);
    s.handle.stop();
}
