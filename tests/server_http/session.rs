//! Streamable HTTP, 2025-11-25 era: sessions, JSON or SSE answers, the GET
//! stream, server-to-client requests on the request's stream, resumption
//! by `Last-Event-ID`, cancellation.

use crate::server_http_support as support;

use std::sync::atomic::Ordering;

use serde_json::json;
use support::*;

#[tokio::test]
async fn initialize_mints_a_random_session_id_and_requests_without_one_get_400() {
    let s = start(config()).await;
    let a = open_session(s.addr, json!({})).await;
    let b = open_session(s.addr, json!({})).await;
    assert_ne!(a, b);
    assert!(
        a.len() >= 32 && a.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "{a}"
    );
    // No session id: 400, with the request's id.
    let r = post(
        s.addr,
        &[("mcp-protocol-version", LEGACY)],
        json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/list" }),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json().await["id"], 7);
    // With one: served.
    let r = legacy(s.addr, &a, json!(1), "tools/list", json!({})).await;
    assert_eq!(r.status, 200);
    let v = r.json().await;
    assert!(
        v["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{v}"
    );
    s.handle.stop();
}

#[tokio::test]
async fn unknown_and_deleted_sessions_get_404() {
    let s = start(config()).await;
    let r = legacy(s.addr, "no-such-session", json!(1), "tools/list", json!({})).await;
    assert_eq!(r.status, 404);
    let sid = open_session(s.addr, json!({})).await;
    let d = send(
        s.addr,
        request(
            "DELETE",
            s.addr,
            &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
            None,
        ),
    )
    .await;
    assert_eq!(d.status, 200);
    let r = legacy(s.addr, &sid, json!(2), "tools/list", json!({})).await;
    assert_eq!(r.status, 404);
    let g = get(s.addr, &sid, &[]).await;
    assert_eq!(g.status, 404);
    s.handle.stop();
}

#[tokio::test]
async fn an_unsupported_protocol_version_header_gets_400() {
    let s = start(config()).await;
    let sid = open_session(s.addr, json!({})).await;
    let r = post(
        s.addr,
        &[
            ("mcp-session-id", &sid),
            ("mcp-protocol-version", "1999-01-01"),
        ],
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
    )
    .await;
    assert_eq!(r.status, 400);
    // Absent: accepted (clients before 2025-06-18 send none).
    let r = post(
        s.addr,
        &[("mcp-session-id", &sid)],
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
    )
    .await;
    assert_eq!(r.status, 200);
    s.handle.stop();
}

#[tokio::test]
async fn an_answer_alone_comes_as_json_and_one_with_progress_as_an_sse_stream() {
    let s = start(config()).await;
    let sid = open_session(s.addr, json!({})).await;
    let r = legacy(
        s.addr,
        &sid,
        json!(1),
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "hi" } }),
    )
    .await;
    assert!(!r.is_sse());
    assert_eq!(r.json().await["result"]["content"][0]["text"], "hi");

    let r = legacy(
        s.addr,
        &sid,
        json!(2),
        "tools/call",
        json!({ "name": "sleep", "arguments": { "ms": 50 }, "_meta": { "progressToken": "p" } }),
    )
    .await;
    assert!(r.is_sse(), "{:?}", r.headers);
    assert_eq!(r.header("cache-control").as_deref(), Some("no-cache"));
    let mut ev = r.sse();
    // The priming event first: an id, a retry, no data.
    let first = ev.next().await.expect("priming event");
    assert!(first.id.is_some() && first.data.is_empty(), "{first:?}");
    assert_eq!(ev.retry(), Some(1000));
    let mut progress = 0;
    let answer = loop {
        let m = ev
            .next_message()
            .await
            .expect("stream ended before the answer");
        if m["method"] == "notifications/progress" {
            assert_eq!(m["params"]["progressToken"], "p");
            progress += 1;
        } else {
            break m;
        }
    };
    assert_eq!(progress, 10);
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["content"][0]["text"], "slept 50 ms");
    assert!(
        ev.next().await.is_none(),
        "the stream ends after the answer"
    );
    s.handle.stop();
}

#[tokio::test]
async fn a_quiet_request_that_outlasts_keep_alive_is_answered_as_an_sse_stream() {
    let s = start(config().keep_alive(std::time::Duration::from_millis(50))).await;
    let sid = open_session(s.addr, json!({})).await;
    let r = legacy(
        s.addr,
        &sid,
        json!(1),
        "tools/call",
        json!({ "name": "quiet", "arguments": { "ms": 400 } }),
    )
    .await;
    assert!(r.is_sse(), "answered as JSON: {:?}", r.headers);
    let answer = r.json().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["content"][0]["text"], "waited 400 ms");
    s.handle.stop();
}

#[tokio::test]
async fn a_server_to_client_request_travels_on_the_request_stream() {
    let s = start(config()).await;
    let sid = open_session(s.addr, json!({ "roots": {} })).await;
    let r = legacy(
        s.addr,
        &sid,
        json!("call"),
        "tools/call",
        json!({ "name": "roots", "arguments": {} }),
    )
    .await;
    assert!(r.is_sse());
    let mut ev = r.sse();
    let ask = ev.next_message().await.expect("the roots/list request");
    assert_eq!(ask["method"], "roots/list", "{ask}");
    // The client answers with a POST of its own.
    let a = post(
        s.addr,
        &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "roots": [{ "uri": "file:///r", "name": "r" }] } }),
    )
    .await;
    assert_eq!(a.status, 202);
    let answer = ev.next_message().await.expect("the answer");
    assert_eq!(answer["id"], "call");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("file:///r"),
        "{answer}"
    );
    s.handle.stop();
}

#[tokio::test]
async fn the_get_stream_carries_list_changes_and_server_wide_notifications() {
    let s = start(config()).await;
    let sid = open_session(s.addr, json!({})).await;
    let g = send(
        s.addr,
        request(
            "GET",
            s.addr,
            &[
                ("mcp-session-id", &sid),
                ("mcp-protocol-version", LEGACY),
                ("accept", "text/event-stream"),
            ],
            None,
        ),
    )
    .await;
    assert_eq!(g.status, 200);
    assert!(g.is_sse());
    let mut ev = g.sse();
    // A tool added at run time: the session is told on its GET stream.
    let r = legacy(
        s.addr,
        &sid,
        json!(1),
        "tools/call",
        json!({ "name": "add_tool", "arguments": {} }),
    )
    .await;
    assert_eq!(r.json().await["result"]["content"][0]["text"], "ok");
    let m = ev.next_message().await.expect("list_changed");
    assert_eq!(m["method"], "notifications/tools/list_changed");
    // The server-wide handle reaches every session; notify_session one.
    s.handle
        .notify(
            "notifications/message",
            Some(json!({ "level": "info", "data": "to all" })),
        )
        .unwrap();
    assert_eq!(ev.next_message().await.unwrap()["params"]["data"], "to all");
    s.handle
        .notify_session(
            &sid,
            "notifications/message",
            Some(json!({ "level": "info", "data": "to one" })),
        )
        .unwrap();
    assert_eq!(ev.next_message().await.unwrap()["params"]["data"], "to one");
    assert!(matches!(
        s.handle.notify_session("nope", "x", None),
        Err(conduit_mcp::server::SendError::UnknownSession(_))
    ));
    s.handle.stop();
}

#[tokio::test]
async fn a_stream_closed_by_the_server_is_resumed_after_its_last_event_id() {
    let s = start(config()).await;
    let sid = open_session(s.addr, json!({})).await;
    let r = legacy(
        s.addr,
        &sid,
        json!(9),
        "tools/call",
        json!({ "name": "poll", "arguments": {}, "_meta": { "progressToken": 1 } }),
    )
    .await;
    assert!(r.is_sse());
    let mut ev = r.sse();
    let primed = ev.next().await.expect("priming event");
    assert!(primed.data.is_empty());
    assert!(
        ev.next().await.is_none(),
        "the server closed the stream after priming it"
    );
    let last = ev.last_event_id().expect("an event id");
    let g = send(
        s.addr,
        request(
            "GET",
            s.addr,
            &[
                ("mcp-session-id", &sid),
                ("mcp-protocol-version", LEGACY),
                ("last-event-id", &last),
            ],
            None,
        ),
    )
    .await;
    assert_eq!(g.status, 200);
    let mut ev = g.sse();
    let progress = ev.next_message().await.unwrap();
    assert_eq!(progress["method"], "notifications/progress");
    let answer = ev.next_message().await.unwrap();
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["result"]["content"][0]["text"], "closed=true");
    s.handle.stop();
}

#[tokio::test]
async fn a_client_that_disconnects_mid_stream_resumes_where_it_stopped() {
    let s = start(config()).await;
    let sid = open_session(s.addr, json!({})).await;
    let r = legacy(
        s.addr,
        &sid,
        json!(3),
        "tools/call",
        json!({ "name": "sleep", "arguments": { "ms": 300 }, "_meta": { "progressToken": 1 } }),
    )
    .await;
    let mut ev = r.sse();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let m = ev.next_message().await.unwrap();
        seen.push(m["params"]["progress"].clone());
    }
    let last = ev.last_event_id().unwrap();
    drop(ev); // the connection goes; the request does not
    let g = send(
        s.addr,
        request(
            "GET",
            s.addr,
            &[
                ("mcp-session-id", &sid),
                ("mcp-protocol-version", LEGACY),
                ("last-event-id", &last),
            ],
            None,
        ),
    )
    .await;
    let mut ev = g.sse();
    loop {
        let m = ev.next_message().await.expect("the rest of the stream");
        if m.get("id").is_some() {
            assert_eq!(m["result"]["content"][0]["text"], "slept 300 ms");
            break;
        }
        seen.push(m["params"]["progress"].clone());
    }
    // Every progress exactly once, in order, across the two connections.
    let expected: Vec<_> = (0..10).map(|i| json!(i as f64)).collect();
    assert_eq!(seen, expected);
    assert_eq!(s.counts.dropped.load(Ordering::SeqCst), 0);
    s.handle.stop();
}

#[tokio::test]
async fn notifications_cancelled_aborts_the_request_and_ends_its_stream() {
    let s = start(config()).await;
    let sid = open_session(s.addr, json!({})).await;
    let mut ev = sleeping(s.addr, &sid, json!(5), 60000).await;
    let c = post(
        s.addr,
        &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 5 } }),
    )
    .await;
    assert_eq!(c.status, 202);
    // No answer: the stream just ends.
    assert_eq!(ev.next_message().await, None);
    assert!(eventually(|| s.counts.dropped.load(Ordering::SeqCst) == 1).await);
    assert_eq!(s.counts.finished.load(Ordering::SeqCst), 0);
    s.handle.stop();
}

#[tokio::test]
async fn a_duplicate_in_flight_id_is_refused() {
    let s = start(config()).await;
    let sid = open_session(s.addr, json!({})).await;
    let r = legacy(
        s.addr,
        &sid,
        json!(1),
        "tools/call",
        json!({ "name": "sleep", "arguments": { "ms": 60000 }, "_meta": { "progressToken": 1 } }),
    )
    .await;
    let mut ev = r.sse();
    ev.next_message().await.unwrap();
    let dup = legacy(s.addr, &sid, json!(1), "tools/list", json!({})).await;
    assert_eq!(dup.status, 400);
    let v = dup.json().await;
    assert_eq!(v["error"]["code"], -32600, "{v}");
    // Another session may use the same id.
    let other = open_session(s.addr, json!({})).await;
    assert_eq!(
        legacy(s.addr, &other, json!(1), "tools/list", json!({}))
            .await
            .status,
        200
    );
    s.handle.stop();
}

#[tokio::test]
async fn deleting_a_session_cancels_its_running_requests() {
    let s = start(config()).await;
    let sid = open_session(s.addr, json!({})).await;
    let mut ev = sleeping(s.addr, &sid, json!(1), 60000).await;
    let d = send(
        s.addr,
        request(
            "DELETE",
            s.addr,
            &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
            None,
        ),
    )
    .await;
    assert_eq!(d.status, 200);
    assert_eq!(
        ev.next_message().await,
        None,
        "the stream ends without an answer"
    );
    assert!(eventually(|| s.counts.dropped.load(Ordering::SeqCst) == 1).await);
    s.handle.stop();
}
