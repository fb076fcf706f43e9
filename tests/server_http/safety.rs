//! Streamable HTTP safety: `Host` and `Origin` checks (DNS rebinding), the
//! bearer-token hook, the body limit, and the bounds on sessions and on
//! what a session may have queued.

use crate::common;
use crate::server_http_support as support;

use std::time::Duration;

use conduit_mcp::secret::Secret;
use conduit_mcp::server::http::Allow;
use conduit_mcp::server::SendError;
use serde_json::json;
use support::*;

fn init() -> serde_json::Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } })
}

#[tokio::test]
async fn a_foreign_host_or_origin_is_refused_with_403_and_loopback_ones_pass() {
    let s = start(config()).await;
    let port = s.addr.port().to_string();
    let cases = [
        (format!("evil.example.com:{port}"), None, 403),
        (
            format!("127.0.0.1:{port}"),
            Some("http://evil.example.com".to_owned()),
            403,
        ),
        (format!("127.0.0.1:{port}"), Some("null".to_owned()), 403),
        (
            format!("localhost:{port}"),
            Some(format!("http://localhost:{port}")),
            200,
        ),
        (
            format!("127.0.0.1:{port}"),
            Some("http://127.0.0.1:5173".to_owned()),
            200,
        ),
        (format!("[::1]:{port}"), None, 200),
    ];
    for (host, origin, status) in cases {
        let mut req = request("POST", s.addr, &[], Some(&init()));
        req.headers_mut().insert("host", host.parse().unwrap());
        if let Some(o) = &origin {
            req.headers_mut().insert("origin", o.parse().unwrap());
        }
        let r = send(s.addr, req).await;
        assert_eq!(r.status, status, "host {host}, origin {origin:?}");
    }
    s.handle.stop();
}

#[tokio::test]
async fn listed_hosts_replace_the_loopback_default() {
    let s = start(config().allowed_hosts(Allow::List(vec!["mcp.example.com".into()]))).await;
    let mut req = request("POST", s.addr, &[], Some(&init()));
    req.headers_mut()
        .insert("host", "mcp.example.com".parse().unwrap());
    assert_eq!(send(s.addr, req).await.status, 200);
    let req = request("POST", s.addr, &[], Some(&init()));
    assert_eq!(
        send(s.addr, req).await.status,
        403,
        "127.0.0.1 is no longer listed"
    );
    s.handle.stop();
}

#[tokio::test]
async fn a_bearer_token_is_required_when_configured() {
    let s = start(config().bearer_token(Secret::new("s3cret"))).await;
    let r = post(s.addr, &[], init()).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate").as_deref(), Some("Bearer"));
    assert_eq!(
        post(s.addr, &[("authorization", "Bearer wrong")], init())
            .await
            .status,
        401
    );
    assert_eq!(
        post(s.addr, &[("authorization", "Bearer s3cret")], init())
            .await
            .status,
        200
    );
    s.handle.stop();
    // A closure hook sees the request's head.
    let s = start(config().authorize(|parts| parts.headers.contains_key("x-api-key"))).await;
    assert_eq!(post(s.addr, &[], init()).await.status, 401);
    assert_eq!(
        post(s.addr, &[("x-api-key", "k")], init()).await.status,
        200
    );
    s.handle.stop();
}

#[tokio::test]
async fn a_body_over_max_message_bytes_gets_413() {
    let mut c = config();
    c.server = c.server.max_message_bytes(4096);
    let s = start(c).await;
    let big = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "pad": "x".repeat(5000) } });
    assert_eq!(post(s.addr, &[], big.clone()).await.status, 413);
    // Without a Content-Length (chunked), the limit holds while reading.
    let body = serde_json::to_vec(&big).unwrap();
    let half = body.len() / 2;
    let chunked = TwoChunks(vec![
        bytes::Bytes::copy_from_slice(&body[..half]),
        bytes::Bytes::copy_from_slice(&body[half..]),
    ]);
    let req = axum::http::Request::builder()
        .method("POST")
        .uri(format!("http://{}/mcp", s.addr))
        .header("host", s.addr.to_string())
        .header("content-type", "application/json")
        .body(chunked)
        .unwrap();
    let tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let (mut tx, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let r = tx.send_request(req).await.unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(
        post(s.addr, &[], init()).await.status,
        200,
        "a small one still passes"
    );
    s.handle.stop();
}

/// A body sent in chunks, its length not announced.
struct TwoChunks(Vec<bytes::Bytes>);

impl http_body::Body for TwoChunks {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        let next = (!self.0.is_empty()).then(|| Ok(http_body::Frame::data(self.0.remove(0))));
        std::task::Poll::Ready(next)
    }
}

#[tokio::test]
async fn a_full_table_ends_the_oldest_idle_session_and_refuses_when_none_is_idle() {
    let s = start(config().max_sessions(3)).await;
    let mut ids = Vec::new();
    let mut streams = Vec::new();
    for _ in 0..3 {
        let sid = open_session(s.addr, json!({})).await;
        // An open GET stream: the session is not idle.
        streams.push(get(s.addr, &sid, &[]).await);
        ids.push(sid);
    }
    let r = post(s.addr, &[], init()).await;
    assert_eq!(r.status, 503, "no session is idle");
    assert!(r.header("retry-after").is_some());
    assert!(r.json().await["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("max_sessions")));
    // The second session's stream closes: it is idle, and it goes.
    drop(streams.remove(1));
    let mut opened = None;
    for _ in 0..200 {
        let r = post(s.addr, &[], init()).await;
        if r.status == 200 {
            opened = r.header("mcp-session-id");
            break;
        }
        // The server notices the closed stream when it next writes to it.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(opened.is_some(), "the idle session never made room");
    let status = |sid: String| {
        let addr = s.addr;
        async move {
            legacy(addr, &sid, json!(1), "tools/list", json!({}))
                .await
                .status
        }
    };
    assert_eq!(status(ids[1].clone()).await, 404, "the idle session ended");
    assert_eq!(status(ids[0].clone()).await, 200);
    assert_eq!(status(ids[2].clone()).await, 200);
    s.handle.stop();
}

#[tokio::test]
async fn idle_sessions_expire_after_session_idle_timeout() {
    let s = start(config().session_idle_timeout(Duration::from_millis(300))).await;
    let sid = open_session(s.addr, json!({})).await;
    let mut gone = false;
    for _ in 0..200 {
        let r = legacy(s.addr, &sid, json!(1), "tools/list", json!({})).await;
        if r.status == 404 {
            gone = true;
            break;
        }
        // Each request touches the session: wait past the timeout.
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    assert!(gone, "the session never expired");
    s.handle.stop();
}

#[tokio::test]
async fn a_session_with_an_open_stream_does_not_expire() {
    let s = start(config().session_idle_timeout(Duration::from_millis(100))).await;
    let sid = open_session(s.addr, json!({})).await;
    let g = get(s.addr, &sid, &[]).await;
    assert_eq!(g.status, 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        legacy(s.addr, &sid, json!(1), "tools/list", json!({}))
            .await
            .status,
        200
    );
    drop(g);
    s.handle.stop();
}

#[tokio::test]
async fn what_a_session_may_queue_is_bounded_in_bytes() {
    // Nobody reads the GET streams: messages wait, within the bounds.
    let s = start(
        config()
            .session_queue_bytes(64 * 1024)
            .max_buffered_bytes(256 * 1024),
    )
    .await;
    let mut sessions = Vec::new();
    for _ in 0..8 {
        sessions.push(open_session(s.addr, json!({})).await);
    }
    let data = "x".repeat(1000);
    let mut queued = Vec::new();
    for sid in &sessions {
        let mut n = 0usize;
        let mut full = None;
        for _ in 0..10_000 {
            match s.handle.notify_session(
                sid,
                "notifications/message",
                Some(json!({ "level": "info", "data": data })),
            ) {
                Ok(()) => n += 1,
                Err(SendError::QueueFull { limit }) => {
                    full = Some(limit);
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(full.is_some(), "10,000 KiB queued without reaching a bound");
        queued.push((n, full.unwrap_or(0)));
    }
    println!("messages of ~1 KiB queued per session before QueueFull (limit): {queued:?}");
    // The first sessions stop at their own 64 KiB, the later ones at what
    // the 256 KiB server-wide bound leaves.
    assert!(queued[0].0 <= 64 && queued[0].1 == 64 * 1024, "{queued:?}");
    let total: usize = queued.iter().map(|q| q.0).sum();
    assert!(
        total * 1000 <= 256 * 1024,
        "total {total} KiB over the server-wide bound"
    );
    assert!(queued.last().unwrap().1 == 256 * 1024, "{queued:?}");
    s.handle.stop();
}

#[tokio::test]
async fn clients_that_stall_their_bodies_do_not_stall_other_requests() {
    use tokio::io::AsyncWriteExt;
    let mut c = config();
    c.server = c
        .server
        .max_inbound_bytes(1024 * 1024)
        .max_message_bytes(1024 * 1024);
    let s = start(c).await;
    // Two clients announce 1 MiB bodies (all the room bodies may take),
    // send 10 bytes, and stall.
    let mut stalled = Vec::new();
    for _ in 0..2 {
        let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: 1048576\r\n\r\n{{\"jsonrpc\"",
            s.addr
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        stalled.push(tcp);
    }
    let started = std::time::Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(3), post(s.addr, &[], init())).await;
    let took = started.elapsed();
    println!(
        "an initialize behind two stalled 1 MiB bodies: {:?} after {took:?}",
        r.as_ref().map(|r| r.status)
    );
    assert_eq!(
        r.expect("the request waited behind the stalled bodies")
            .status,
        200
    );
    s.handle.stop();
    drop(stalled);
}

#[tokio::test]
async fn a_body_that_does_not_arrive_within_body_timeout_gets_408() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = start(config().body_timeout(Duration::from_millis(300))).await;
    let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{",
        s.addr
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(PATIENCE, tcp.read(&mut buf))
        .await
        .expect("an answer")
        .unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    s.handle.stop();
}

// One peer cannot lock the others out: connections, bodies and sessions
// each have a share per peer address, and slots held by a peer that sends
// nothing are given back.

#[tokio::test]
async fn connections_of_one_peer_that_send_nothing_do_not_lock_other_peers_out() {
    let s = start(config().max_connections(64)).await;
    let mut silent = Vec::new();
    for _ in 0..64 {
        silent.push(connect_from(OTHER_PEER, s.addr).await);
    }
    let started = std::time::Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(5), post(s.addr, &[], init())).await;
    let took = started.elapsed();
    println!(
        "an initialize behind 64 silent connections of another peer (max_connections 64): {:?} after {took:?}",
        r.as_ref().map(|r| r.status)
    );
    assert_eq!(
        r.expect("no answer within 5 s: the silent connections hold every slot")
            .status,
        200
    );
    drop(silent);
    s.handle.stop();
}

/// Reads until the peer closes (`Ok(0)` or a reset); how long it took, or
/// `None` after [`PATIENCE`].
async fn closed_within(tcp: &mut tokio::net::TcpStream) -> Option<Duration> {
    use tokio::io::AsyncReadExt;
    let started = std::time::Instant::now();
    let mut buf = vec![0u8; 4096];
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {} // an answer, read past
        }
    }
}

#[tokio::test]
async fn a_connection_without_a_request_head_within_header_read_timeout_is_closed() {
    use tokio::io::AsyncWriteExt;
    let s = start(config().header_read_timeout(Duration::from_millis(300))).await;
    // Sends nothing.
    let mut silent = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    // Sends half a head, then nothing.
    let mut slow = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    slow.write_all(format!("POST /mcp HTTP/1.1\r\nhost: {}\r\n", s.addr).as_bytes())
        .await
        .unwrap();
    // Is answered, then keeps the connection without a next request.
    let mut kept = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    kept.write_all(format!("GET /elsewhere HTTP/1.1\r\nhost: {}\r\n\r\n", s.addr).as_bytes())
        .await
        .unwrap();
    let silent = closed_within(&mut silent).await;
    let slow = closed_within(&mut slow).await;
    let kept = closed_within(&mut kept).await;
    println!("closed by the server after: silent {silent:?}, half a head {slow:?}, idle after an answer {kept:?}");
    assert!(
        silent.is_some(),
        "a connection that sent nothing stayed open"
    );
    assert!(
        slow.is_some(),
        "a connection that sent half a head stayed open"
    );
    assert!(kept.is_some(), "an idle keep-alive connection stayed open");
    // A request that completes its head in time is served as before.
    assert_eq!(post(s.addr, &[], init()).await.status, 200);
    s.handle.stop();
}

/// Waits (at most 3 s) for `writers` to have written their bodies (the
/// server has then taken in all it would); the write halves of those that
/// did, kept open.
async fn written(
    writers: &mut [tokio::task::JoinHandle<tokio::net::tcp::OwnedWriteHalf>],
) -> Vec<tokio::net::tcp::OwnedWriteHalf> {
    let mut done = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    for w in writers {
        if let Ok(Ok(half)) = tokio::time::timeout_at(deadline, w).await {
            done.push(half);
        }
    }
    done
}

#[tokio::test]
async fn bodies_a_peer_stalls_leave_room_for_other_requests() {
    use tokio::io::AsyncWriteExt;
    const MIB: usize = 1024 * 1024;
    // Another peer, then the same one (127.0.0.1, as the victim).
    for attacker in [OTHER_PEER, "127.0.0.1"] {
        // Defaults: bodies of 8 MiB at most, 64 MiB of them at once.
        let s = start(config()).await;
        let mut writers = Vec::new();
        let mut open = Vec::new();
        for _ in 0..8 {
            let mut tcp = connect_from(attacker, s.addr).await;
            let head = format!(
                "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                s.addr,
                8 * MIB
            );
            tcp.write_all(head.as_bytes()).await.unwrap();
            let (read, mut write) = tcp.into_split();
            open.push(read);
            writers.push(tokio::spawn(async move {
                // All but the last byte, then a stall (the half is kept).
                let _ = write.write_all(&vec![b' '; 8 * MIB - 1]).await;
                write
            }));
        }
        let sent = written(&mut writers).await;
        let started = std::time::Instant::now();
        let r = tokio::time::timeout(Duration::from_secs(5), post(s.addr, &[], init())).await;
        let took = started.elapsed();
        println!(
            "{attacker}: 8 stalled bodies of 8 MiB - 1 byte ({} written whole); an initialize from 127.0.0.1: {:?} after {took:?}",
            sent.len(),
            r.as_ref().map(|r| r.status)
        );
        assert_eq!(
            r.expect("the request waited behind the stalled bodies")
                .status,
            200,
            "{attacker}"
        );
        drop((open, sent));
        for w in writers {
            w.abort();
        }
        s.handle.stop();
    }
}

#[tokio::test]
async fn one_peer_opening_sessions_does_not_lock_other_peers_out() {
    // Defaults: 1024 sessions.
    let s = start(config()).await;
    let open_from = |local: &'static str| {
        let addr = s.addr;
        async move {
            let r = send_from(local, addr, request("POST", addr, &[], Some(&init()))).await;
            (r.status, r.header("mcp-session-id"))
        }
    };
    let mut first = None;
    let mut refused = 0;
    for _ in 0..1024 {
        let (status, sid) = open_from(OTHER_PEER).await;
        match status {
            200 => first = first.or(sid),
            _ => refused += 1,
        }
    }
    let (status, victim) = open_from("127.0.0.1").await;
    println!(
        "another peer opened 1024 sessions ({refused} refused); this peer's initialize: {status}"
    );
    assert_eq!(status, 200, "the other peer's sessions filled the table");
    let victim = victim.expect("a session id");
    // The other peer goes on: the sessions that make room are its own.
    for _ in 0..1024 {
        open_from(OTHER_PEER).await;
    }
    let still = legacy(s.addr, &victim, json!(1), "tools/list", json!({})).await;
    assert_eq!(still.status, 200, "this peer's session was taken");
    let first = first.expect("the other peer opened a session");
    let gone = send_from(
        OTHER_PEER,
        s.addr,
        request(
            "POST",
            s.addr,
            &[("mcp-session-id", &first), ("mcp-protocol-version", LEGACY)],
            Some(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })),
        ),
    )
    .await;
    assert_eq!(
        gone.status, 404,
        "the other peer's oldest idle session went first"
    );
    s.handle.stop();
}

#[tokio::test]
async fn refusals_a_client_repeats_are_logged_at_warn_a_few_times_not_each_time() {
    let (log, _guard) = common::capture_trace();
    let s = start(config().max_sessions(1)).await;
    // Holds the one session (its stream open: it is not idle).
    let sid = open_session(s.addr, json!({})).await;
    let _stream = get(s.addr, &sid, &[]).await;
    for _ in 0..500 {
        let mut req = request("POST", s.addr, &[], Some(&init()));
        req.headers_mut()
            .insert("host", "evil.example.com".parse().unwrap());
        assert_eq!(send(s.addr, req).await.status, 403);
        let r = post(s.addr, &[("origin", "http://evil.example.com")], init()).await;
        assert_eq!(r.status, 403);
        let r = post(s.addr, &[], init()).await;
        assert_eq!(r.status, 503);
    }
    let text = log.text();
    let count = |what: &str| {
        text.lines()
            .filter(|l| l.contains(" WARN ") && l.contains(what))
            .count()
    };
    let (host, origin, full) = (
        count("Host not allowed"),
        count("Origin not allowed"),
        count("initialize refused"),
    );
    println!("WARN lines for 500 refusals each: Host {host}, Origin {origin}, initialize {full}");
    for (what, n) in [("Host", host), ("Origin", origin), ("initialize", full)] {
        assert!(
            (1..=3).contains(&n),
            "{what}: {n} WARN lines for 500 refusals"
        );
    }
    s.handle.stop();
}
