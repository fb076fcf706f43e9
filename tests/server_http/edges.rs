//! Streamable HTTP: what a careless or hostile client sends at the edges
//! (a `Last-Event-ID` past the end, a body that is not JSON by its
//! `Content-Type`, a version header naming no version at all) gets a
//! clear refusal or a sane answer, never a dropped connection.

use crate::server_http_support as support;

use serde_json::json;
use support::*;

#[tokio::test]
async fn a_last_event_id_past_the_end_resumes_from_the_last_event_sent() {
    let s = start(config()).await;
    let sid = open_session(s.addr, json!({})).await;
    let g = get(s.addr, &sid, &[]).await;
    let mut ev = g.sse();
    let r = legacy(
        s.addr,
        &sid,
        json!(1),
        "tools/call",
        json!({ "name": "add_tool", "arguments": {} }),
    )
    .await;
    assert_eq!(r.json().await["result"]["content"][0]["text"], "ok");
    assert_eq!(
        ev.next_message().await.unwrap()["method"],
        "notifications/tools/list_changed"
    );
    let seen = ev.last_event_id().expect("an event id");
    drop(ev);
    // A sequence number far past anything sent (u64::MAX): no overflow,
    // and the stream goes on from the last event it had.
    let bogus = format!("0-{}", u64::MAX);
    let g = get(s.addr, &sid, &[("last-event-id", &bogus)]).await;
    assert_eq!(g.status, 200);
    let mut ev = g.sse();
    let priming = ev.next().await.expect("a priming event");
    assert_eq!(
        priming.id.as_deref(),
        Some(seen.as_str()),
        "the priming event names a position the server has, not the client's bogus one"
    );
    s.handle
        .notify_session(
            &sid,
            "notifications/message",
            Some(json!({ "level": "info", "data": "after" })),
        )
        .unwrap();
    assert_eq!(ev.next_message().await.unwrap()["params"]["data"], "after");
    s.handle.stop();
}

fn initialize_body() -> serde_json::Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": { "name": "t", "version": "0" } } })
}

#[tokio::test]
async fn a_body_sent_as_another_content_type_gets_415_and_mints_no_session() {
    let s = start(config()).await;
    for ct in ["text/plain", "application/x-www-form-urlencoded"] {
        let mut req = request("POST", s.addr, &[], Some(&initialize_body()));
        req.headers_mut()
            .insert("content-type", ct.parse().unwrap());
        let r = send(s.addr, req).await;
        assert_eq!(r.status, 415, "{ct}");
        assert!(r.header("mcp-session-id").is_none(), "{ct}");
        let v = r.json().await;
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains("Content-Type") && msg.contains("application/json"),
            "{v}"
        );
    }
    // application/json with parameters is JSON.
    let mut req = request("POST", s.addr, &[], Some(&initialize_body()));
    req.headers_mut().insert(
        "content-type",
        "Application/JSON; charset=utf-8".parse().unwrap(),
    );
    assert_eq!(send(s.addr, req).await.status, 200);
    s.handle.stop();
}

#[tokio::test]
async fn a_version_header_naming_no_version_gets_400_unsupported_version_naming_it() {
    let s = start(config()).await;
    let r = post(
        s.addr,
        &[("mcp-protocol-version", "garbage")],
        initialize_body(),
    )
    .await;
    assert_eq!(r.status, 400);
    let v = r.json().await;
    assert_eq!(v["error"]["code"], -32022, "{v}");
    assert_eq!(v["error"]["data"]["requested"], "garbage", "{v}");
    let supported = v["error"]["data"]["supported"].to_string();
    assert!(
        supported.contains(MODERN) && supported.contains(LEGACY),
        "{v}"
    );
    s.handle.stop();
}

#[tokio::test]
async fn the_service_nested_under_a_prefix_serves_a_session_there() {
    use conduit_mcp::server::http::{axum, HttpService};
    let mcp = HttpService::new(config(), router(Default::default())).unwrap();
    let handle = mcp.handle();
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .nest("/api", mcp.axum_router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    handle.wait_until_ready().await.unwrap();
    let at = |mut r: axum::http::Request<_>| {
        *r.uri_mut() = format!("http://{addr}/api/mcp").parse().unwrap();
        r
    };
    let r = send(
        addr,
        at(request("POST", addr, &[], Some(&initialize_body()))),
    )
    .await;
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").expect("a session id");
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let headers = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", LEGACY),
    ];
    let r = send(addr, at(request("POST", addr, &headers, Some(&list)))).await;
    assert_eq!(r.status, 200);
    let v = r.json().await;
    assert!(
        v["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{v}"
    );
    // The unprefixed path is not the endpoint.
    assert_eq!(post(addr, &[], initialize_body()).await.status, 404);
    handle.stop();
    server.abort();
}

#[tokio::test]
async fn a_host_or_origin_that_only_starts_with_a_loopback_literal_is_refused() {
    let s = start(config()).await;
    for (name, value) in [
        ("host", "[::1]evil.example.com"),
        ("host", "[::1]:80evil"),
        ("origin", "http://[::1]evil.example.com"),
    ] {
        let mut req = request("POST", s.addr, &[], Some(&initialize_body()));
        req.headers_mut().insert(name, value.parse().unwrap());
        let r = send(s.addr, req).await;
        assert_eq!(r.status, 403, "{name}: {value}");
    }
    s.handle.stop();
}

#[tokio::test]
async fn a_json_only_request_that_asks_the_client_asks_on_the_get_stream() {
    let s = start(config()).await;
    let sid = open_session(s.addr, json!({ "roots": {} })).await;
    let g = get(s.addr, &sid, &[]).await;
    let mut ev = g.sse();
    // The client accepts JSON only: the request's own stream cannot carry
    // the roots/list request.
    let call = json!({ "jsonrpc": "2.0", "id": "call", "method": "tools/call",
        "params": { "name": "roots", "arguments": {} } });
    let mut req = request(
        "POST",
        s.addr,
        &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
        Some(&call),
    );
    req.headers_mut()
        .insert("accept", "application/json".parse().unwrap());
    let addr = s.addr;
    let pending = tokio::spawn(async move { send(addr, req).await });
    let ask = ev.next_message().await.expect("the roots/list request");
    assert_eq!(ask["method"], "roots/list", "{ask}");
    let a = post(
        s.addr,
        &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "roots": [{ "uri": "file:///r", "name": "r" }] } }),
    )
    .await;
    assert_eq!(a.status, 202);
    let r = pending.await.unwrap();
    assert!(!r.is_sse());
    let answer = r.json().await;
    assert_eq!(answer["id"], "call");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("file:///r"), "{answer}");
    s.handle.stop();
}

#[tokio::test]
async fn a_resumption_older_than_the_replay_buffer_is_told_what_it_lost() {
    let s = start(config().replay_bytes(2048)).await;
    let sid = open_session(s.addr, json!({})).await;
    let mut ev = get(s.addr, &sid, &[]).await.sse();
    let mut first = None;
    for i in 0..50 {
        s.handle
            .notify_session(
                &sid,
                "notifications/message",
                Some(json!({ "level": "info", "data": format!("event {i} {}", "x".repeat(100)) })),
            )
            .unwrap();
        ev.next_message().await.expect("the event");
        first = first.or_else(|| ev.last_event_id());
    }
    drop(ev);
    // Resumes after the first event: the replay buffer (2 KiB) no longer
    // holds the ~45 events after it.
    let first = first.expect("an event id");
    let mut ev = get(s.addr, &sid, &[("last-event-id", &first)]).await.sse();
    let told = ev
        .next_message()
        .await
        .expect("a message on the resumed stream");
    println!("the first message of a resumption past the replay buffer: {told}");
    assert_eq!(told["method"], "notifications/message", "{told}");
    assert_eq!(told["params"]["level"], "warning", "{told}");
    let lost = told["params"]["data"]["lostEvents"].as_u64().unwrap_or(0);
    assert!((30..49).contains(&lost), "{told}");
    // Then what the buffer held, from the oldest it kept.
    let next = ev.next_message().await.expect("a replayed event");
    let text = next["params"]["data"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.starts_with("event "), "{next}");
    s.handle.stop();
}
