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
    let s = start_with(config(), |s| with_token(s, "s3cret")).await;
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
    let s = start_with(config(), |s| {
        checked(s, |parts| parts.headers().contains_key("x-api-key"))
    })
    .await;
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
async fn a_full_table_refuses_an_initialize_until_a_session_ends() {
    let s = start(config().max_sessions(3)).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(open_session(s.addr, json!({})).await);
    }
    // Idle (nothing running, no stream open), but not given up.
    let r = post(s.addr, &[], init()).await;
    assert_eq!(r.status, 503, "a session was ended to make room");
    assert!(r.header("retry-after").is_some());
    assert!(r.json().await["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("max_sessions")));
    // Its client ends the second one.
    let headers = [
        ("mcp-session-id", ids[1].as_str()),
        ("mcp-protocol-version", LEGACY),
    ];
    assert_eq!(
        send(s.addr, request("DELETE", s.addr, &headers, None))
            .await
            .status,
        200
    );
    let r = post(s.addr, &[], init()).await;
    assert_eq!(r.status, 200, "no room after a DELETE");
    let status = |sid: String| {
        let addr = s.addr;
        async move {
            legacy(addr, &sid, json!(1), "tools/list", json!({}))
                .await
                .status
        }
    };
    assert_eq!(status(ids[0].clone()).await, 200);
    assert_eq!(status(ids[2].clone()).await, 200);
    s.handle.stop();
}

/// Waits for the server's log to say that session `sid` expired.
async fn expired(log: &common::Capture, sid: &str) -> bool {
    eventually(|| {
        log.text()
            .lines()
            .any(|l| l.contains("session expired (idle)") && l.contains(sid))
    })
    .await
}

#[tokio::test]
async fn idle_sessions_expire_after_session_idle_timeout() {
    // On this current-thread runtime the server's sweep logs here; a
    // request would touch the session, so the test waits for the log.
    let (log, _guard) = common::capture_trace();
    let s = start(config().session_idle_timeout(Duration::from_millis(300))).await;
    let sid = open_session(s.addr, json!({})).await;
    assert!(expired(&log, &sid).await, "the session never expired");
    let r = legacy(s.addr, &sid, json!(1), "tools/list", json!({})).await;
    assert_eq!(r.status, 404, "an expired session still answers");
    s.handle.stop();
}

#[tokio::test]
async fn a_session_with_an_open_stream_does_not_expire() {
    // On this current-thread runtime the server's sweep logs here.
    let (log, _guard) = common::capture_trace();
    let s = start(config().session_idle_timeout(Duration::from_millis(300))).await;
    let sid = open_session(s.addr, json!({})).await;
    let g = get(s.addr, &sid, &[]).await;
    assert_eq!(g.status, 200);
    // A session without a stream, opened after it, expires: the sweep that
    // would have ended the first has run.
    let idle = open_session(s.addr, json!({})).await;
    assert!(
        expired(&log, &idle).await,
        "the session without a stream never expired"
    );
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

// One owner cannot lock the others out: connections, bodies and sessions
// each have a share per owner (every loopback address is one owner), and
// slots held by a peer that sends nothing are given back.

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

/// The endpoint of `config` behind bearer tokens that name two principals,
/// `mallory` and `victim` (whose headers these are), on 127.0.0.1: two
/// owners, whatever their addresses.
async fn start_two_principals(
    config: conduit_mcp::server::http::HttpConfig,
) -> (
    std::net::SocketAddr,
    conduit_mcp::server::ServerHandle,
    [[(&'static str, &'static str); 1]; 2],
) {
    use conduit_mcp::server::http::{self, BearerLayer, BearerTokens, HttpService, Principal};
    let tokens = BearerTokens::new()
        .token(
            Secret::new("mallory-token-0123456789"),
            Principal::new("mallory"),
        )
        .token(
            Secret::new("victim-token-0123456789"),
            Principal::new("victim"),
        );
    let mcp = HttpService::new(config.clone(), router(Default::default())).unwrap();
    let app = mcp.axum_router().layer(BearerLayer::new(tokens));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let handle = mcp.handle();
    tokio::spawn(async move {
        mcp.stopped().await;
        stop.send_replace(true);
    });
    tokio::spawn(async move {
        http::serve(listener, app, &config, stopped, Duration::from_secs(1)).await
    });
    let mallory = [("authorization", "Bearer mallory-token-0123456789")];
    let victim = [("authorization", "Bearer victim-token-0123456789")];
    (addr, handle, [mallory, victim])
}

#[tokio::test]
async fn one_owner_opening_sessions_does_not_lock_other_owners_out() {
    // Defaults: 1024 sessions. Every loopback address is one owner: the
    // two owners here are principals.
    let (addr, handle, [mallory, victim]) = start_two_principals(config()).await;
    let open_as = |who: [(&'static str, &'static str); 1]| async move {
        let r = send(addr, request("POST", addr, &who, Some(&init()))).await;
        (r.status, r.header("mcp-session-id"))
    };
    let mut first = None;
    let mut refused = 0;
    for _ in 0..1024 {
        let (status, sid) = open_as(mallory).await;
        match status {
            200 => first = first.or(sid),
            _ => refused += 1,
        }
    }
    let (status, session) = open_as(victim).await;
    println!(
        "another owner opened 1024 sessions ({refused} refused); this owner's initialize: {status}"
    );
    assert_eq!(status, 200, "the other owner's sessions filled the table");
    let session = session.expect("a session id");
    // The other owner goes on: refused, no session ended for it.
    for _ in 0..1024 {
        open_as(mallory).await;
    }
    let in_session = |who: [(&'static str, &'static str); 1], sid: String| async move {
        let headers = [
            who[0],
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", LEGACY),
        ];
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
        send(addr, request("POST", addr, &headers, Some(&body)))
            .await
            .status
    };
    assert_eq!(
        in_session(victim, session).await,
        200,
        "this owner's session was taken"
    );
    let first = first.expect("the other owner opened a session");
    assert_eq!(
        in_session(mallory, first).await,
        200,
        "the other owner's own session was ended to make room"
    );
    handle.stop();
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

/// A body of exactly `max_message_bytes` is read whole, declared or not;
/// one byte more is refused, before reading when its length is declared.
#[tokio::test]
async fn a_body_of_max_message_bytes_is_read_and_one_byte_more_is_refused() {
    use conduit_mcp::server::http::{BodyReader, HttpConfig, Rejection};
    const LIMIT: usize = 64;
    let server = conduit_mcp::server::ServerConfig::new(
        conduit_mcp::protocol::Implementation::new("body", "0"),
    )
    .max_message_bytes(LIMIT);
    let reader = BodyReader::of(&HttpConfig::new(server));
    let debug = format!("{reader:?}");
    assert!(debug.contains("limit: 64"), "{debug}");
    for declared in [false, true] {
        let request = |n: usize| {
            let mut r = axum::http::Request::post("/mcp");
            if declared {
                r = r.header("content-length", n.to_string());
            }
            r.body(axum::body::Body::from(vec![b'x'; n]))
                .unwrap()
                .into_parts()
        };
        let (parts, body) = request(LIMIT);
        let read = common::within(PATIENCE, "the body's read", reader.read(&parts, body)).await;
        assert!(
            matches!(read.as_ref().map(|b| b.len()), Ok(LIMIT)),
            "declared: {declared}: {read:?}"
        );
        let (parts, body) = request(LIMIT + 1);
        let read = common::within(PATIENCE, "the body's refusal", reader.read(&parts, body)).await;
        assert!(
            matches!(read, Err(Rejection::BodyTooLarge { limit: LIMIT })),
            "declared: {declared}: {read:?}"
        );
    }
    // Declared too long, the body is not read: one that never ends is
    // refused all the same.
    let (parts, _) = axum::http::Request::post("/mcp")
        .header("content-length", (LIMIT + 1).to_string())
        .body(())
        .unwrap()
        .into_parts();
    let endless = axum::body::Body::new(Endless);
    let read = common::within(PATIENCE, "the refusal", reader.read(&parts, endless)).await;
    assert!(
        matches!(read, Err(Rejection::BodyTooLarge { .. })),
        "{read:?}"
    );
}

/// A body whose bytes never come.
struct Endless;

impl http_body::Body for Endless {
    type Data = bytes::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, std::io::Error>>> {
        std::task::Poll::Pending
    }
}

/// The tokens' debug form shows how many there are, never one of them; a
/// token followed by NUL bytes is another token, whatever the lengths.
#[test]
fn bearer_tokens_show_no_token_and_compare_every_byte() {
    use conduit_mcp::server::http::BearerTokens;
    let tokens = BearerTokens::new()
        .token(Secret::new("t0ke"), 1)
        .token(Secret::new("s3cret-0123456789"), 2);
    assert_eq!(format!("{tokens:?}"), "BearerTokens { tokens: 2 }");
    assert!(!tokens.is_empty() && BearerTokens::<u8>::new().is_empty());
    assert_eq!(tokens.find_token("t0ke"), Some(&1));
    assert_eq!(tokens.find_token("t0ke\0\0\0\0"), None);
    assert_eq!(tokens.find_token("s3cret-0123456789"), Some(&2));
    assert_eq!(tokens.find_token("s3cret"), None);
}

/// The bearer service is ready when the service it guards is, not before.
#[test]
fn the_bearer_service_waits_for_the_service_it_guards() {
    use conduit_mcp::server::http::{BearerLayer, BearerTokens};
    use std::task::{Context, Waker};
    use tower::{Layer, Service};
    let layer = BearerLayer::new(BearerTokens::new().token(Secret::new("t0ken"), ()));
    let mut bearer = layer.clone().layer(Busy);
    let ready = Service::<axum::http::Request<axum::body::Body>>::poll_ready(
        &mut bearer,
        &mut Context::from_waker(Waker::noop()),
    );
    assert!(ready.is_pending(), "ready before the service it guards");
}

/// The `Host` check's answer for `host`, through a loopback-only layer of
/// its own (its own throttle for the log line).
async fn host_status(host: &str) -> u16 {
    use conduit_mcp::server::http::HostOriginLayer;
    use tower::{Layer, ServiceExt};
    let inner = tower::service_fn(|_: axum::http::Request<axum::body::Body>| async {
        Ok::<_, std::convert::Infallible>(axum::http::Response::new(axum::body::Body::empty()))
    });
    let request = axum::http::Request::get("/mcp")
        .header("host", host)
        .body(axum::body::Body::empty())
        .unwrap();
    let layer = HostOriginLayer::new(Allow::Loopback, Allow::Loopback);
    let response = layer.layer(inner).oneshot(request).await.unwrap();
    response.status().as_u16()
}

/// Only digits after the last colon are a port: a loopback name followed
/// by anything else is another host.
#[tokio::test]
async fn a_loopback_name_with_a_port_that_is_no_number_is_refused() {
    for (host, status) in [
        ("localhost:8080", 200),
        ("[::1]:8080", 200),
        ("localhost:evil.example", 403),
        ("127.0.0.1:80x", 403),
        ("[::1]:evil", 403),
    ] {
        assert_eq!(host_status(host).await, status, "{host}");
    }
}

/// A refused `Host` is logged at most 128 bytes of it, with its length when
/// cut; one of 128 bytes whole.
#[tokio::test]
async fn a_refused_host_is_logged_cut_to_128_bytes() {
    let (log, _guard) = common::capture_trace();
    let long = format!("{}.example", "h".repeat(192));
    assert_eq!(host_status(&long).await, 403);
    let text = log.text();
    assert!(
        text.contains(&format!("{}... (200 bytes)", &long[..128])),
        "{text}"
    );
    assert!(!text.contains(&long), "{text}");
    let (log, _guard) = common::capture_trace();
    let exact = format!("{}.example", "e".repeat(120));
    assert_eq!(exact.len(), 128);
    assert_eq!(host_status(&exact).await, 403);
    let text = log.text();
    assert!(text.contains(&exact) && !text.contains("bytes)"), "{text}");
}

/// The `Host` and `Origin` service is ready when the service it guards is,
/// not before.
#[test]
fn the_host_and_origin_service_waits_for_the_service_it_guards() {
    use conduit_mcp::server::http::HostOriginLayer;
    use std::task::{Context, Waker};
    use tower::{Layer, Service};
    let mut guarded = HostOriginLayer::new(Allow::Loopback, Allow::Loopback).layer(Busy);
    let ready = Service::<axum::http::Request<axum::body::Body>>::poll_ready(
        &mut guarded,
        &mut Context::from_waker(Waker::noop()),
    );
    assert!(ready.is_pending(), "ready before the service it guards");
}

/// A service never ready.
struct Busy;

impl tower::Service<axum::http::Request<axum::body::Body>> for Busy {
    type Response = axum::http::Response<axum::body::Body>;
    type Error = std::convert::Infallible;
    type Future = std::future::Pending<Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Pending
    }

    fn call(&mut self, _: axum::http::Request<axum::body::Body>) -> Self::Future {
        std::future::pending()
    }
}
