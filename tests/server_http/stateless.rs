//! Streamable HTTP, 2026-07-28 era: POST only, per-request `_meta`, headers
//! checked against the body, input-required rounds, `subscriptions/listen`
//! streams, cancellation by closing the response, cache hints.

use crate::server_http_support as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

#[tokio::test]
async fn get_and_delete_are_not_allowed() {
    let s = start(config()).await;
    for method in ["GET", "DELETE"] {
        let r = send(
            s.addr,
            request(method, s.addr, &[("mcp-protocol-version", MODERN)], None),
        )
        .await;
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow").as_deref(), Some("POST"));
    }
    s.handle.stop();
}

#[tokio::test]
async fn discover_and_a_tool_call_stand_alone_with_their_meta() {
    let s = start(config()).await;
    let r = modern(s.addr, json!(1), "server/discover", json!({})).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("mcp-session-id"), None, "no session in this era");
    let v = r.json().await;
    assert_eq!(v["result"]["supportedVersions"], json!([MODERN]));
    assert_eq!(
        v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "http-test"
    );
    let r = modern(
        s.addr,
        json!(2),
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "x" } }),
    )
    .await;
    let v = r.json().await;
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["content"][0]["text"], "x");
    // Cache hints on cacheable results.
    let v = modern(s.addr, json!(3), "tools/list", json!({}))
        .await
        .json()
        .await;
    assert_eq!(v["result"]["ttlMs"], 0);
    assert_eq!(v["result"]["cacheScope"], "private");
    s.handle.stop();
}

#[tokio::test]
async fn an_answer_alone_comes_as_json_and_a_quiet_one_past_keep_alive_as_a_stream() {
    let s = start(config().keep_alive(std::time::Duration::from_millis(50))).await;
    let r = modern(
        s.addr,
        json!(1),
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "x" } }),
    )
    .await;
    assert!(!r.is_sse(), "{:?}", r.headers);
    let r = modern(
        s.addr,
        json!(2),
        "tools/call",
        json!({ "name": "quiet", "arguments": { "ms": 400 } }),
    )
    .await;
    assert!(r.is_sse(), "answered as JSON: {:?}", r.headers);
    let v = r.json().await;
    assert_eq!(v["result"]["content"][0]["text"], "waited 400 ms");
    s.handle.stop();
}

/// A modern request with the given headers (on top of the defaults).
async fn with_headers(
    s: &Running,
    method: &str,
    params: Value,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut params = params;
    params["_meta"] = meta();
    let r = post(
        s.addr,
        headers,
        json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }),
    )
    .await;
    let status = r.status;
    (status, r.json().await)
}

#[tokio::test]
async fn headers_that_disagree_with_the_body_get_400_header_mismatch() {
    let s = start(config()).await;
    let base = [
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
    ];
    let call = json!({ "name": "echo", "arguments": { "text": "x" } });
    type Case<'a> = (Vec<(&'a str, &'a str)>, u16, i64);
    let cases: Vec<Case> = vec![
        (vec![base[0], base[1]], 400, -32020), // no Mcp-Name
        (vec![base[0], base[1], ("mcp-name", "other")], 400, -32020), // wrong name
        (
            vec![base[0], ("mcp-method", "tools/list"), ("mcp-name", "echo")],
            400,
            -32020,
        ),
        (
            vec![("mcp-method", "tools/call"), ("mcp-name", "echo")],
            400,
            -32020,
        ), // no version header
        (
            vec![
                ("mcp-protocol-version", "2026-01-01"),
                base[1],
                ("mcp-name", "echo"),
            ],
            400,
            -32020,
        ),
        (
            vec![base[0], base[1], ("mcp-name", "=?base64?ZWNobw==?=")],
            200,
            0,
        ), // "echo", encoded
    ];
    for (headers, status, code) in cases {
        let (got, v) = with_headers(&s, "tools/call", call.clone(), &headers).await;
        assert_eq!(got, status, "{headers:?}: {v}");
        if code != 0 {
            assert_eq!(v["error"]["code"], code, "{headers:?}: {v}");
            assert_eq!(v["id"], 1);
        }
    }
    s.handle.stop();
}

#[tokio::test]
async fn an_unsupported_version_gets_400_and_an_unknown_method_404() {
    let s = start(config()).await;
    let mut params = json!({ "_meta": meta() });
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999");
    let r = post(
        s.addr,
        &[
            ("mcp-protocol-version", "v999"),
            ("mcp-method", "server/discover"),
        ],
        json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": params }),
    )
    .await;
    assert_eq!(r.status, 400);
    let v = r.json().await;
    assert_eq!(v["error"]["code"], -32022);
    assert_eq!(v["error"]["data"]["requested"], "v999");
    for method in ["no/such/method", "initialize", "ping", "logging/setLevel"] {
        let r = modern(s.addr, json!(2), method, json!({})).await;
        assert_eq!(r.status, 404, "{method}");
        assert_eq!(r.json().await["error"]["code"], -32601);
    }
    s.handle.stop();
}

#[tokio::test]
async fn mcp_param_headers_are_checked_against_the_tools_x_mcp_header() {
    let s = start(config()).await;
    let base = [
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "region"),
    ];
    let call =
        |region: &str| json!({ "name": "region", "arguments": { "region": region, "query": "q" } });
    let h = |extra: (&'static str, &'static str)| {
        let mut v = base.to_vec();
        v.push(extra);
        v
    };
    let (st, v) = with_headers(
        &s,
        "tools/call",
        call("us-west1"),
        &h(("mcp-param-region", "us-west1")),
    )
    .await;
    assert_eq!(
        (st, v["result"]["content"][0]["text"].clone()),
        (200, json!("us-west1"))
    );
    let (st, v) = with_headers(
        &s,
        "tools/call",
        call("us-west1"),
        &h(("mcp-param-region", "eu-west1")),
    )
    .await;
    assert_eq!((st, v["error"]["code"].clone()), (400, json!(-32020)));
    let (st, v) = with_headers(&s, "tools/call", call("us-west1"), &base).await;
    assert_eq!(
        (st, v["error"]["code"].clone()),
        (400, json!(-32020)),
        "missing header"
    );
    let (st, _) = with_headers(
        &s,
        "tools/call",
        call("Hello, 世界"),
        &h(("mcp-param-region", "=?base64?SGVsbG8sIOS4lueVjA==?=")),
    )
    .await;
    assert_eq!(st, 200, "sentinel form decoded before comparing");
    s.handle.stop();
}

#[tokio::test]
async fn asking_the_client_becomes_an_input_required_round() {
    let s = start(config()).await;
    let v = modern(
        s.addr,
        json!(1),
        "tools/call",
        json!({ "name": "roots", "arguments": {} }),
    )
    .await
    .json()
    .await;
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    assert_eq!(
        v["result"]["inputRequests"]["roots"]["method"],
        "roots/list"
    );
    let v = modern(
        s.addr,
        json!(2),
        "tools/call",
        json!({ "name": "roots", "arguments": {}, "inputResponses": { "roots": { "roots": [{ "uri": "file:///m" }] } } }),
    )
    .await
    .json()
    .await;
    assert_eq!(v["result"]["resultType"], "complete");
    assert!(v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("file:///m"));
    s.handle.stop();
}

#[tokio::test]
async fn a_listen_stream_stays_open_with_keep_alives_and_carries_list_changes() {
    let s = start(config().keep_alive(Duration::from_millis(50))).await;
    let r = modern(
        s.addr,
        json!("sub"),
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    )
    .await;
    assert!(r.is_sse());
    let mut ev = r.sse();
    let ack = ev.next().await.unwrap();
    assert!(ack.id.is_none(), "no event ids in this era");
    let ack: Value = serde_json::from_str(&ack.data).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub"
    );
    // Quiet: keep-alive comments flow.
    ev.comment().await;
    let v = modern(
        s.addr,
        json!(2),
        "tools/call",
        json!({ "name": "add_tool", "arguments": {} }),
    )
    .await
    .json()
    .await;
    assert_eq!(v["result"]["content"][0]["text"], "ok");
    let m = ev.next_message().await.unwrap();
    assert_eq!(m["method"], "notifications/tools/list_changed");
    assert!(ev.comments >= 1, "keep-alive comments: {}", ev.comments);
    s.handle.stop();
}

#[tokio::test]
async fn closing_the_response_stream_cancels_the_request() {
    let s = start(config()).await;
    // A response still waiting (no event yet, so not yet an SSE stream):
    // the client gives up and closes the connection.
    let waiting = modern(
        s.addr,
        json!(1),
        "tools/call",
        json!({ "name": "sleep", "arguments": { "ms": 60000 } }),
    );
    assert!(tokio::time::timeout(Duration::from_millis(300), waiting)
        .await
        .is_err());
    let mut params = json!({ "name": "sleep", "arguments": { "ms": 60000 } });
    params["_meta"] = meta();
    params["_meta"]["progressToken"] = json!(1);
    let r = post(
        s.addr,
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "sleep"),
        ],
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params }),
    )
    .await;
    assert!(r.is_sse());
    let mut ev = r.sse();
    assert_eq!(
        ev.next_message().await.unwrap()["method"],
        "notifications/progress"
    );
    drop(ev);
    // Both requests were cancelled: the first when its JSON wait was dropped.
    assert!(
        eventually(|| s.counts.dropped.load(Ordering::SeqCst) == 2).await,
        "dropped: {}",
        s.counts.dropped.load(Ordering::SeqCst)
    );
    assert_eq!(s.counts.finished.load(Ordering::SeqCst), 0);
    s.handle.stop();
}

#[tokio::test]
async fn a_request_without_modern_meta_or_session_is_legacy_and_refused() {
    let s = start(config()).await;
    // No header, no _meta, no session: a legacy request without a session.
    let r = post(
        s.addr,
        &[],
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
    )
    .await;
    assert_eq!(r.status, 400);
    // The modern header without _meta: -32602.
    let r = post(
        s.addr,
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/list"),
        ],
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json().await["error"]["code"], -32602);
    s.handle.stop();
}

#[tokio::test]
async fn requests_beyond_max_in_flight_wait_for_a_slot() {
    // Requests as they reach the server, before they go to the engine.
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let mut c = config();
    c.server = c.server.max_in_flight(2);
    let check = move |parts: &axum::extract::Request| {
        if parts
            .headers()
            .get("mcp-method")
            .is_some_and(|m| m == "tools/call")
        {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        true
    };
    let s = start_with(c, |s| checked(s, check)).await;
    let a = modern_sleeping(s.addr, 1, 60_000).await;
    let _b = modern_sleeping(s.addr, 2, 60_000).await;
    let addr = s.addr;
    let third = tokio::spawn(async move { modern_sleeping(addr, 3, 60_000).await });
    let counts = s.counts.clone();
    assert!(eventually(|| counts.started.load(Ordering::SeqCst) == 2).await);
    assert!(
        eventually(|| calls.load(Ordering::SeqCst) == 3).await,
        "the third request never reached the server"
    );
    // A listen stream takes no slot. Sent once the third reached the
    // server (its body sent whole before), it is answered after a round
    // trip of its own, in which a free slot would have started the third:
    // the third waits.
    let listen = modern(
        s.addr,
        json!("l"),
        "subscriptions/listen",
        json!({ "notifications": {} }),
    )
    .await;
    assert!(listen.is_sse());
    assert_eq!(s.counts.started.load(Ordering::SeqCst), 2);
    drop(a); // cancels the first: its slot goes to the third
    assert!(eventually(|| counts.started.load(Ordering::SeqCst) == 3).await);
    let mut third = third.await.unwrap();
    assert_eq!(
        third.next_message().await.unwrap()["method"],
        "notifications/progress"
    );
    s.handle.stop();
}
