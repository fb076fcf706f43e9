//! Behaviour of the server transport, driven over `tokio::io::duplex`.

use crate::server_support;

use std::time::Duration;

use tokio::time::Instant;

use conduit_mcp::server::{SendError, ServeEnd, ServerError, StdioServer};
use serde_json::json;
use server_support::*;

#[tokio::test]
async fn legacy_handshake_ping_and_pre_initialize_rules() {
    let (h, _ev) = TestHandler::new();
    let mut c = start(config(), h);
    // Before initialize: ping is served, other requests are refused.
    assert!(c.until_ping("early").await.is_empty());
    c.request(json!(1), "echo", json!({})).await;
    let r = c.recv().await;
    assert_eq!(r["id"], json!(1));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");

    let r = c.initialize(json!({ "roots": {} })).await;
    assert_eq!(r["id"], json!("init"));
    assert_eq!(r["result"]["protocolVersion"], json!("2025-11-25"));
    assert_eq!(r["result"]["serverInfo"]["name"], json!("test-server"));
    assert_eq!(r["result"]["capabilities"], json!({ "tools": {} }));
    assert_eq!(c.handle.client_capabilities(), Some(json!({ "roots": {} })));
    assert_eq!(
        c.handle.client_capabilities_for_session("stdio"),
        Some(json!({ "roots": {} }))
    );
    assert_eq!(c.handle.client_capabilities_for_session("other"), None);
    assert_eq!(
        c.handle.client_info().unwrap()["name"],
        json!("test-client")
    );

    c.request(json!(2), "echo", json!({ "x": 1 })).await;
    let r = c.recv().await;
    assert_eq!(
        r,
        json!({ "jsonrpc": "2.0", "id": 2, "result": { "x": 1 } })
    );
    c.request(json!(3), "nope", json!({})).await;
    assert_eq!(c.recv().await["error"]["code"], json!(-32601));

    // An unknown version is answered with our newest legacy version.
    c.request(
        json!(4),
        "initialize",
        json!({ "protocolVersion": "1999-01-01", "capabilities": {} }),
    )
    .await;
    assert_eq!(
        c.recv().await["result"]["protocolVersion"],
        json!("2025-11-25")
    );
    // A missing version is invalid params.
    c.request(json!(5), "initialize", json!({ "capabilities": {} }))
        .await;
    assert_eq!(c.recv().await["error"]["code"], json!(-32602));
    c.close_input();
    assert_eq!(c.end().await.unwrap(), ServeEnd::Eof);
}

#[tokio::test]
async fn modern_discover_meta_validation_and_result_type() {
    let (h, _ev) = TestHandler::new();
    let mut c = start(config().instructions("hello"), h);
    c.request(
        json!("d"),
        "server/discover",
        json!({ "_meta": modern_meta(json!({})) }),
    )
    .await;
    let r = c.recv().await;
    assert_eq!(
        r["result"],
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": { "tools": {} },
            "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "test-server", "version": "0.0.1" } },
            "instructions": "hello",
            "ttlMs": 0,
            "cacheScope": "private",
        })
    );
    // Unsupported version: -32022 with supported and requested.
    let mut meta = modern_meta(json!({}));
    meta[MODERN_META_KEY_VERSION] = json!("1900-01-01");
    c.request(json!("d2"), "server/discover", json!({ "_meta": meta }))
        .await;
    let r = c.recv().await;
    assert_eq!(r["error"]["code"], json!(-32022));
    assert_eq!(
        r["error"]["data"],
        json!({ "supported": ["2026-07-28"], "requested": "1900-01-01" })
    );
    // Missing clientCapabilities / protocolVersion: -32602.
    c.request(
        json!(1),
        "echo",
        json!({ "_meta": { MODERN_META_KEY_VERSION: "2026-07-28" } }),
    )
    .await;
    assert_eq!(c.recv().await["error"]["code"], json!(-32602));
    c.request(
        json!(2),
        "echo",
        json!({ "_meta": { "io.modelcontextprotocol/clientCapabilities": {} } }),
    )
    .await;
    assert_eq!(c.recv().await["error"]["code"], json!(-32602));
    c.request(json!(21), "server/discover", json!({})).await;
    assert_eq!(c.recv().await["error"]["code"], json!(-32602));
    // A valid modern request reaches the handler; resultType is added.
    c.request(
        json!(3),
        "whoami",
        json!({ "_meta": modern_meta(json!({ "sampling": {} })) }),
    )
    .await;
    let r = c.recv().await;
    assert_eq!(
        r["result"],
        json!({ "era": "modern", "caps": { "sampling": {} }, "resultType": "complete" })
    );
    assert_eq!(
        c.handle.client_capabilities(),
        Some(json!({ "sampling": {} }))
    );
    // ping does not exist in the modern era.
    c.request(json!(4), "ping", json!({ "_meta": modern_meta(json!({})) }))
        .await;
    assert_eq!(c.recv().await["error"]["code"], json!(-32601));
    c.close_input();
    assert_eq!(c.end().await.unwrap(), ServeEnd::Eof);
}

#[tokio::test]
async fn requests_run_concurrently_and_answer_in_completion_order() {
    let (h, mut ev) = TestHandler::new();
    let gate = h.gate("a");
    let mut c = start(config(), h);
    c.initialize(json!({})).await;
    c.request(json!(1), "wait", json!({ "gate": "a" })).await;
    assert_eq!(next_event(&mut ev).await, Event::Started(json!(1)));
    // The reader is not blocked by the waiting handler.
    c.request(json!(2), "echo", json!({ "n": 2 })).await;
    assert_eq!(c.recv().await["id"], json!(2));
    gate.notify_one();
    let r = c.recv().await;
    assert_eq!(r["id"], json!(1));
    assert_eq!(r["result"], json!({ "opened": "a" }));
}

#[tokio::test]
async fn in_flight_bound_queues_then_runs_requests() {
    let (h, mut ev) = TestHandler::new();
    let gates: Vec<_> = (0..3).map(|i| h.gate(&format!("g{i}"))).collect();
    let mut c = start(config().max_in_flight(2), h);
    c.initialize(json!({})).await;
    for i in 0..3 {
        c.request(json!(i), "wait", json!({ "gate": format!("g{i}") }))
            .await;
    }
    // Two start; the third waits for a slot.
    let mut started = vec![next_event(&mut ev).await, next_event(&mut ev).await];
    started.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(
        started,
        vec![Event::Started(json!(0)), Event::Started(json!(1))]
    );
    // Cancelling the queued one removes it without an answer.
    c.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 2 } })).await;
    c.request(json!(3), "wait", json!({ "gate": "g2" })).await;
    gates[0].notify_one();
    assert_eq!(c.recv().await["id"], json!(0));
    assert_eq!(next_event(&mut ev).await, Event::Started(json!(3)));
    gates[2].notify_one();
    assert_eq!(c.recv().await["id"], json!(3));
    gates[1].notify_one();
    assert_eq!(c.recv().await["id"], json!(1));
    assert!(c.until_ping("end").await.is_empty());
}

#[tokio::test]
async fn cancellation_aborts_the_handler_and_suppresses_the_answer() {
    let (h, mut ev) = TestHandler::new();
    let mut c = start(config(), h);
    c.initialize(json!({})).await;
    c.request(json!("c1"), "wait", json!({ "gate": "never" }))
        .await;
    assert_eq!(next_event(&mut ev).await, Event::Started(json!("c1")));
    c.send(
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": { "requestId": "c1", "reason": "test" } }),
    )
    .await;
    assert_eq!(next_event(&mut ev).await, Event::Dropped(json!("c1")));
    // No answer for c1: the next message is the ping's.
    assert!(c.until_ping("after-cancel").await.is_empty());
    // The id is free again.
    c.request(json!("c1"), "echo", json!({ "again": true }))
        .await;
    assert_eq!(c.recv().await["result"], json!({ "again": true }));
}

#[tokio::test]
async fn duplicate_in_flight_id_is_refused_and_ids_keep_their_type() {
    let (h, mut ev) = TestHandler::new();
    let gate = h.gate("d");
    let mut c = start(config(), h);
    c.initialize(json!({})).await;
    c.request(json!(5), "wait", json!({ "gate": "d" })).await;
    assert_eq!(next_event(&mut ev).await, Event::Started(json!(5)));
    c.request(json!(5), "echo", json!({})).await;
    let r = c.recv().await;
    assert_eq!(r["id"], json!(5));
    assert_eq!(r["error"]["code"], json!(-32600), "{r}");
    // "5" is another id.
    c.request(json!("5"), "echo", json!({ "s": 1 })).await;
    let r = c.recv().await;
    assert_eq!(r["id"], json!("5"));
    assert_eq!(r["result"], json!({ "s": 1 }));
    // The first request is unaffected.
    gate.notify_one();
    let r = c.recv().await;
    assert_eq!(r["id"], json!(5));
    assert_eq!(r["result"], json!({ "opened": "d" }));
}

#[tokio::test]
async fn malformed_lines_get_one_reply_each_and_serving_continues() {
    let (h, _ev) = TestHandler::new();
    let mut c = start(config(), h);
    c.send_raw(b"this is not json\n").await;
    c.send_raw(b"{}\n").await;
    c.send_raw(b"[1,2]\n").await;
    c.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\",\"params\":3}\n")
        .await;
    c.send_raw(b"\n   \r\n").await; // blank lines: no reply
    c.send_raw(b"\xff\xfe\n").await;
    c.send_raw(b"{\"jsonrpc\":\"1.0\",\"id\":\"v\",\"method\":\"x\"}\r\n")
        .await;
    let replies = c.until_ping("junk").await;
    let got: Vec<_> = replies
        .iter()
        .map(|r| (r["id"].clone(), r["error"]["code"].clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (json!(null), json!(-32700)),
            (json!(null), json!(-32600)),
            (json!(null), json!(-32600)),
            (json!(9), json!(-32600)),
            (json!(null), json!(-32700)),
            (json!("v"), json!(-32600)),
        ]
    );
}

#[tokio::test]
async fn oversize_line_is_refused_without_buffering_and_the_next_line_is_served() {
    let (h, _ev) = TestHandler::new();
    let mut c = start(config().max_message_bytes(1024), h);
    c.initialize(json!({})).await;
    // 4 MiB without a newline, in pieces, then the end of the line.
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..64 {
        c.send_raw(&chunk).await;
    }
    c.send_raw(b"\n").await;
    // Exactly at the limit is accepted.
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":{{\"p\":\"{}\"}}}}",
        "y".repeat(1024 - 58)
    );
    assert_eq!(body.len(), 1024);
    c.send_raw(format!("{body}\n").as_bytes()).await;
    // Exactly one refusal for the oversize line, then the echo's answer.
    let refusal = c.recv().await;
    assert_eq!(refusal["id"], json!(null));
    assert_eq!(refusal["error"]["code"], json!(-32600));
    let echo = c.recv().await;
    assert_eq!(echo["id"], json!(1));
    assert!(echo["result"]["p"].is_string());
    assert!(c.until_ping("big").await.is_empty());
}

// On the paused clock: "at once" is no timer waited on.
#[tokio::test(start_paused = true)]
async fn stop_while_idle_takes_effect_at_once() {
    let (h, _ev) = TestHandler::new();
    let c = start(config(), h);
    c.handle.wait_until_ready().await.unwrap();
    // The client keeps its end open: the reader is blocked on an idle stream.
    let t = Instant::now();
    c.handle.stop();
    let handle = c.handle.clone();
    let _keep_open = c.tx;
    let end = tokio::time::timeout(PATIENCE, c.serve)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(end.unwrap(), ServeEnd::Stopped);
    assert_eq!(t.elapsed(), Duration::ZERO, "the stop waited on a timer");
    // The lifetime has ended.
    assert!(matches!(
        handle.notify("x", None),
        Err(SendError::TransportGone)
    ));
    assert!(handle.wait_until_ready().await.is_err());
    handle.stop(); // harmless
}

#[tokio::test]
async fn stop_aborts_in_flight_handlers_without_answering() {
    let (h, mut ev) = TestHandler::new();
    let mut c = start(config(), h);
    c.initialize(json!({})).await;
    c.request(json!(1), "wait", json!({ "gate": "never" }))
        .await;
    assert_eq!(next_event(&mut ev).await, Event::Started(json!(1)));
    c.handle.stop();
    assert_eq!(next_event(&mut ev).await, Event::Dropped(json!(1)));
    let Client { mut rx, serve, .. } = c;
    assert_eq!(serve.await.unwrap().unwrap(), ServeEnd::Stopped);
    // Output ends without an answer for request 1.
    assert_eq!(rx.next_line().await.unwrap(), None);
}

#[tokio::test]
async fn stop_with_drain_lets_handlers_finish() {
    let (h, mut ev) = TestHandler::new();
    let mut c = start(config().stop_drain(Duration::from_secs(5)), h);
    c.initialize(json!({})).await;
    c.request(json!(1), "until_cancelled", json!({})).await;
    assert_eq!(next_event(&mut ev).await, Event::Started(json!(1)));
    c.handle.stop();
    let r = c.recv().await;
    assert_eq!(r["id"], json!(1));
    assert_eq!(r["result"], json!({ "saw": "cancellation" }));
    assert_eq!(c.end().await.unwrap(), ServeEnd::Stopped);
}

#[tokio::test]
async fn stop_before_serve_returns_at_once() {
    let (h, _ev) = TestHandler::new();
    let (a, _b) = tokio::io::duplex(64);
    let (_c, d) = tokio::io::duplex(64);
    let server = StdioServer::over(d, a, config());
    assert_eq!(server.name(), "stdio");
    let handle = server.handle();
    assert_eq!(handle.name(), "stdio");
    handle.stop();
    assert_eq!(server.serve(h).await.unwrap(), ServeEnd::Stopped);
}

#[tokio::test]
async fn panicking_handler_answers_internal_error_and_serving_continues() {
    let (h, _ev) = TestHandler::new();
    let mut c = start(config(), h);
    c.initialize(json!({})).await;
    c.request(json!(1), "panic", json!({})).await;
    let r = c.recv().await;
    assert_eq!(r["id"], json!(1));
    assert_eq!(r["error"]["code"], json!(-32603));
    c.request(json!(2), "fail", json!({})).await;
    let r = c.recv().await;
    assert_eq!(
        r["error"],
        json!({ "code": -32602, "message": "bad input" })
    );
    c.request(json!(3), "echo", json!({ "ok": 1 })).await;
    assert_eq!(c.recv().await["result"], json!({ "ok": 1 }));
}

#[tokio::test]
async fn eof_ends_serving_after_in_flight_requests_answer() {
    let (h, mut ev) = TestHandler::new();
    let gate = h.gate("eof");
    let mut c = start(config(), h);
    c.initialize(json!({})).await;
    c.request(json!(1), "wait", json!({ "gate": "eof" })).await;
    assert_eq!(next_event(&mut ev).await, Event::Started(json!(1)));
    c.close_input();
    gate.notify_one();
    assert_eq!(c.recv().await["id"], json!(1));
    assert_eq!(c.end().await.unwrap(), ServeEnd::Eof);
}

#[tokio::test]
async fn eof_drain_is_bounded() {
    let (h, mut ev) = TestHandler::new();
    let mut c = start(config().eof_drain(Duration::from_millis(50)), h);
    c.initialize(json!({})).await;
    c.request(json!(1), "wait", json!({ "gate": "never" }))
        .await;
    assert_eq!(next_event(&mut ev).await, Event::Started(json!(1)));
    c.close_input();
    let Client { mut rx, serve, .. } = c;
    assert_eq!(serve.await.unwrap().unwrap(), ServeEnd::Eof);
    assert_eq!(next_event(&mut ev).await, Event::Dropped(json!(1)));
    assert_eq!(rx.next_line().await.unwrap(), None);
}

#[tokio::test]
async fn notifications_and_progress_while_serving() {
    let (h, mut ev) = TestHandler::new();
    let mut c = start(config(), h);
    c.initialize(json!({})).await;
    c.handle
        .notify("notifications/tools/list_changed", None)
        .unwrap();
    let r = c.recv().await;
    assert_eq!(
        r,
        json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" })
    );
    c.handle
        .notify_log("info", Some("t"), json!("hello"))
        .unwrap();
    assert_eq!(
        c.recv().await["params"],
        json!({ "level": "info", "logger": "t", "data": "hello" })
    );
    c.request(
        json!(1),
        "progress",
        json!({ "_meta": { "progressToken": "tok" } }),
    )
    .await;
    for i in 1..=3 {
        let p = c.recv().await;
        assert_eq!(p["method"], json!("notifications/progress"));
        assert_eq!(p["params"]["progressToken"], json!("tok"));
        assert_eq!(p["params"]["progress"].as_f64(), Some(i as f64));
    }
    assert_eq!(c.recv().await["result"], json!({ "done": true }));
    // Without a token, progress is a no-op.
    c.request(json!(2), "progress", json!({})).await;
    assert_eq!(c.recv().await["id"], json!(2));
    // Client notifications reach the notification handler in order.
    c.send(json!({ "jsonrpc": "2.0", "method": "notifications/roots/list_changed" }))
        .await;
    assert_eq!(
        next_event(&mut ev).await,
        Event::Notification("notifications/roots/list_changed".into())
    );
}

#[tokio::test]
async fn notification_handler_failure_ends_serving_with_an_error() {
    let (h, _ev) = TestHandler::new();
    let mut c = start(config(), h);
    c.send(json!({ "jsonrpc": "2.0", "method": "fail_me" }))
        .await;
    match c.end().await {
        Err(ServerError::NotificationHandler { method, .. }) => assert_eq!(method, "fail_me"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn invalid_configuration_is_an_error_naming_the_key() {
    let (h, _ev) = TestHandler::new();
    let mut c = start(config().max_in_flight(0), h);
    match c.end_ref().await {
        Err(ServerError::InvalidConfig { key, .. }) => assert_eq!(key, "max_in_flight"),
        other => panic!("{other:?}"),
    }
    let (h, _ev) = TestHandler::new();
    let c = start(config().stdout_guard(true), h);
    assert!(matches!(
        c.end().await,
        Err(ServerError::InvalidConfig {
            key: "stdout_guard",
            ..
        })
    ));
}

#[tokio::test]
async fn write_failure_is_an_error() {
    let (h, _ev) = TestHandler::new();
    let (client_tx, server_rx) = tokio::io::duplex(1024);
    let (server_tx, client_rx) = tokio::io::duplex(1024);
    drop(client_rx); // the client stops reading for good
    let server = StdioServer::over(server_rx, server_tx, config());
    let serve = tokio::spawn(server.serve(h));
    let mut client_tx = client_tx;
    use tokio::io::AsyncWriteExt;
    client_tx
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let end = tokio::time::timeout(PATIENCE, serve)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(end, Err(ServerError::Write(_))), "{end:?}");
}

#[tokio::test]
async fn lifetime_token_makes_kept_contexts_and_handles_inert() {
    let (h, _ev) = TestHandler::new();
    let kept = h.kept.clone();
    let mut c = start(config(), h);
    c.initialize(json!({})).await;
    c.request(
        json!(1),
        "keep_ctx",
        json!({ "_meta": { "progressToken": 1 } }),
    )
    .await;
    assert_eq!(c.recv().await["id"], json!(1));
    let ctx = kept.lock().unwrap().pop().unwrap();
    let token = ctx.lifetime_token();
    assert!(token.is_alive());
    // Still usable while the transport lives.
    ctx.notify(
        "notifications/message",
        Some(json!({ "level": "info", "data": 1 })),
    )
    .unwrap();
    assert_eq!(c.recv().await["method"], json!("notifications/message"));
    let handle = c.handle.clone();
    c.close_input();
    c.end().await.unwrap();
    assert!(!token.is_alive());
    assert!(matches!(
        ctx.notify("x", None),
        Err(SendError::TransportGone)
    ));
    assert!(matches!(
        ctx.progress(1.0, None, None),
        Err(SendError::TransportGone)
    ));
    assert!(matches!(
        handle.request("ping", None).await,
        Err(SendError::TransportGone)
    ));
    assert_eq!(handle.client_capabilities(), None);
}

#[tokio::test]
async fn legacy_server_to_client_requests_are_correlated_and_time_out() {
    let (h, _ev) = TestHandler::new();
    let mut c = start(
        config().client_request_timeout(Duration::from_millis(200)),
        h,
    );
    // Not before initialize.
    assert!(matches!(
        c.handle.request("ping", None).await,
        Err(SendError::NoStatefulSession)
    ));
    c.initialize(json!({ "roots": {} })).await;
    // A tool that asks for roots: the server sends roots/list.
    c.request(json!(10), "tools/call", json!({ "name": "roots" }))
        .await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], json!("roots/list"));
    let sid = ask["id"].clone();
    // Unrelated and unknown responses are ignored.
    c.send(json!({ "jsonrpc": "2.0", "id": 987654, "result": {} }))
        .await;
    c.send(json!({ "jsonrpc": "2.0", "id": sid, "result": { "roots": [{ "uri": "file:///r" }] } }))
        .await;
    let r = c.recv().await;
    assert_eq!(r["id"], json!(10));
    assert_eq!(
        r["result"]["structuredContent"],
        json!({ "roots": [{ "uri": "file:///r" }] })
    );
    // The handle's own request: answered with an error.
    let handle = c.handle.clone();
    let pending = tokio::spawn(async move { handle.request("ping", None).await });
    let ping = c.recv().await;
    assert_eq!(ping["method"], json!("ping"));
    c.send(json!({ "jsonrpc": "2.0", "id": ping["id"], "error": { "code": -1, "message": "no" } }))
        .await;
    assert!(matches!(pending.await.unwrap(), Err(SendError::Client(e)) if e.code == -1));
    // Unanswered: times out and a cancellation is sent.
    let handle = c.handle.clone();
    let pending = tokio::spawn(async move { handle.request("ping", None).await });
    let ping = c.recv().await;
    assert!(matches!(pending.await.unwrap(), Err(SendError::Timeout(_))));
    let cancel = c.recv().await;
    assert_eq!(cancel["method"], json!("notifications/cancelled"));
    assert_eq!(cancel["params"]["requestId"], ping["id"]);
    // Capabilities the client did not declare are never asked for.
    assert!(matches!(
        c.handle
            .request("sampling/createMessage", Some(json!({})))
            .await,
        Err(SendError::MissingCapability("sampling"))
    ));
    assert!(matches!(
        c.handle.request_session("nope", "ping", None).await,
        Err(SendError::UnknownSession(_))
    ));
}

#[tokio::test]
async fn modern_input_required_round_trip() {
    let (h, _ev) = TestHandler::new();
    let mut c = start(config(), h);
    // No roots capability: -32021, and nothing is asked.
    c.request(
        json!(1),
        "tools/call",
        json!({ "name": "roots", "_meta": modern_meta(json!({})) }),
    )
    .await;
    let r = c.recv().await;
    assert_eq!(r["error"]["code"], json!(-32021));
    assert_eq!(
        r["error"]["data"],
        json!({ "requiredCapabilities": { "roots": {} } })
    );
    // With the capability: an input-required result.
    let meta = modern_meta(json!({ "roots": {} }));
    c.request(
        json!(2),
        "tools/call",
        json!({ "name": "roots", "_meta": meta }),
    )
    .await;
    let r = c.recv().await;
    assert_eq!(
        r["result"],
        json!({ "resultType": "input_required", "inputRequests": { "roots": { "method": "roots/list" } } })
    );
    // The retry carries the input response and completes.
    c.request(
        json!(3),
        "tools/call",
        json!({ "name": "roots", "_meta": meta,
                "inputResponses": { "roots": { "roots": [{ "uri": "file:///m" }] } } }),
    )
    .await;
    let r = c.recv().await;
    assert_eq!(r["result"]["resultType"], json!("complete"));
    assert_eq!(
        r["result"]["structuredContent"],
        json!({ "roots": [{ "uri": "file:///m" }] })
    );
    // The server never sends requests in the modern era.
    assert!(matches!(
        c.handle.request("ping", None).await,
        Err(SendError::NoStatefulSession)
    ));
    assert!(c.until_ping("modern").await.is_empty());
}

// On the paused clock, so the flush timeout is measured exactly.
#[tokio::test(start_paused = true)]
async fn a_client_that_never_reads_cannot_grow_memory_or_block_stop() {
    let (h, _ev) = TestHandler::new();
    // Small pipes and a small outbound bound; the client never reads.
    let mut c = start_with_buffer(config().max_outbound_bytes(4096), h, 1024);
    c.initialize(json!({})).await;
    let handle = c.handle.clone();
    let big = "z".repeat(2000);
    let mut tx = c.tx.take().unwrap();
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"echo\",\"params\":{{\"b\":\"{big}\"}}}}\n"
        );
        let mut n = 0u64;
        for i in 0..10_000u64 {
            let l = line.replacen("\"id\":0", &format!("\"id\":{i}"), 1);
            if tx.write_all(l.as_bytes()).await.is_err() {
                break;
            }
            n += 1;
        }
        n
    });
    // Eventually the outbound queue is full and notifications are refused.
    let full = tokio::time::timeout(PATIENCE, async {
        loop {
            match handle.notify(
                "notifications/message",
                Some(json!({ "level": "debug", "data": 0 })),
            ) {
                Err(SendError::QueueFull { .. }) => break,
                _ => tokio::task::yield_now().await,
            }
        }
    })
    .await;
    assert!(full.is_ok(), "outbound queue never reported full");
    // The server stopped reading: the client's writer is stuck, not done.
    assert!(!writer.is_finished());
    let t = Instant::now();
    handle.stop();
    let serve = c.serve;
    let end = tokio::time::timeout(PATIENCE, serve)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(end.unwrap(), ServeEnd::Stopped);
    // Bounded by the flush timeout (1 s default) since output cannot drain.
    assert!(t.elapsed() <= Duration::from_secs(1), "{:?}", t.elapsed());
    writer.abort();
}

// On the paused clock: "not stop" is no timer waited on.
#[tokio::test(start_paused = true)]
async fn a_stuck_notification_handler_pauses_reading_but_not_stop() {
    let (h, mut ev) = TestHandler::new();
    let mut c = start(config(), h);
    for _ in 0..200 {
        c.send(json!({ "jsonrpc": "2.0", "method": "block_forever" }))
            .await;
    }
    // The handler got the first one and is stuck in it.
    assert_eq!(
        next_event(&mut ev).await,
        Event::Notification("block_forever".into())
    );
    let t = Instant::now();
    c.handle.stop();
    let end = c.end().await;
    assert_eq!(end.unwrap(), ServeEnd::Stopped);
    assert_eq!(t.elapsed(), Duration::ZERO, "the stop waited on a timer");
}

#[tokio::test]
async fn modern_log_messages_follow_the_requested_level() {
    let (h, _ev) = TestHandler::new();
    let mut c = start(config(), h);
    // No logLevel: nothing is sent.
    c.request(
        json!(1),
        "log",
        json!({ "level": "error", "_meta": modern_meta(json!({})) }),
    )
    .await;
    assert_eq!(c.recv().await["result"]["sent"], json!(false));
    let mut meta = modern_meta(json!({}));
    meta["io.modelcontextprotocol/logLevel"] = json!("warning");
    c.request(json!(2), "log", json!({ "level": "info", "_meta": meta }))
        .await;
    assert_eq!(c.recv().await["result"]["sent"], json!(false));
    c.request(json!(3), "log", json!({ "level": "error", "_meta": meta }))
        .await;
    let note = c.recv().await;
    assert_eq!(note["method"], json!("notifications/message"));
    assert_eq!(note["params"]["level"], json!("error"));
    assert_eq!(c.recv().await["result"]["sent"], json!(true));
}

#[tokio::test]
async fn modern_cacheable_results_get_cache_hints() {
    struct Lists;
    impl conduit_mcp::server::Handler for Lists {
        async fn handle_request(
            &self,
            req: conduit_mcp::jsonrpc::Request,
            _ctx: conduit_mcp::server::RequestContext,
        ) -> Result<serde_json::Value, conduit_mcp::server::HandlerError> {
            Ok(match req.method.as_str() {
                "tools/list" => json!({ "tools": [] }),
                "prompts/list" => json!({ "prompts": [], "ttlMs": 5 }),
                _ => json!({}),
            })
        }
    }
    let cfg = config()
        .cache_ttl_ms(60_000)
        .cache_scope(conduit_mcp::protocol::CacheScope::Public);
    let mut c = start(cfg, Lists);
    let meta = modern_meta(json!({}));
    c.request(json!(1), "tools/list", json!({ "_meta": meta }))
        .await;
    assert_eq!(
        c.recv().await["result"],
        json!({ "tools": [], "resultType": "complete", "ttlMs": 60000, "cacheScope": "public" })
    );
    // The handler's own hint wins.
    c.request(json!(2), "prompts/list", json!({ "_meta": meta }))
        .await;
    assert_eq!(c.recv().await["result"]["ttlMs"], json!(5));
    // Not cacheable: no hints.
    c.request(json!(3), "tools/call", json!({ "_meta": meta }))
        .await;
    assert_eq!(
        c.recv().await["result"],
        json!({ "resultType": "complete" })
    );
    // Legacy results are left alone.
    c.initialize(json!({})).await;
    c.request(json!(4), "tools/list", json!({})).await;
    assert_eq!(c.recv().await["result"], json!({ "tools": [] }));
}

#[tokio::test]
async fn read_failure_is_an_error() {
    struct Failing;
    impl tokio::io::AsyncRead for Failing {
        fn poll_read(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            _: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Err(std::io::Error::other("disk on fire")))
        }
    }
    let (h, _ev) = TestHandler::new();
    let server = StdioServer::over(Failing, tokio::io::sink(), config());
    match server.serve(h).await {
        Err(ServerError::Read(e)) => assert_eq!(e.to_string(), "disk on fire"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn dropping_the_serve_future_makes_handles_inert() {
    let (h, mut ev) = TestHandler::new();
    let (mut client_tx, server_rx) = tokio::io::duplex(4096);
    let (server_tx, _client_rx) = tokio::io::duplex(4096);
    let server = StdioServer::over(server_rx, server_tx, config());
    let handle = server.handle();
    let serve = tokio::spawn(server.serve(h));
    handle.wait_until_ready().await.unwrap();
    use tokio::io::AsyncWriteExt;
    client_tx
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"wait\",\"params\":{\"gate\":\"x\"}}\n")
        .await
        .unwrap();
    assert_eq!(next_event(&mut ev).await, Event::Started(json!(2)));
    serve.abort();
    let _ = serve.await;
    // The in-flight handler was dropped with the future, and the lifetime ended.
    assert_eq!(next_event(&mut ev).await, Event::Dropped(json!(2)));
    assert!(!handle.lifetime_token().is_alive());
    assert!(matches!(
        handle.notify("x", None),
        Err(SendError::TransportGone)
    ));
}

#[tokio::test]
async fn modern_ask_all_requests_every_missing_input_in_one_round() {
    let (h, _ev) = TestHandler::new();
    let mut c = start(config(), h);
    let meta = modern_meta(json!({ "roots": {}, "elicitation": {} }));
    c.request(
        json!(1),
        "prompts/get",
        json!({ "name": "p", "_meta": meta }),
    )
    .await;
    let r = c.recv().await["result"].clone();
    assert_eq!(r["resultType"], json!("input_required"));
    assert_eq!(r["requestState"], json!("round-1"));
    let keys: Vec<_> = r["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["name", "roots"]);
    assert_eq!(
        r["inputRequests"]["name"]["method"],
        json!("elicitation/create")
    );
    // A partial retry asks only for what is still missing.
    c.request(
        json!(2),
        "prompts/get",
        json!({ "name": "p", "_meta": meta, "requestState": "round-1",
        "inputResponses": { "roots": { "roots": [] } } }),
    )
    .await;
    let r = c.recv().await["result"].clone();
    let keys: Vec<_> = r["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["name"]);
    // The full retry completes, and the handler saw the echoed state.
    c.request(json!(3), "prompts/get", json!({ "name": "p", "_meta": meta, "requestState": "round-1",
        "inputResponses": { "roots": { "roots": [] }, "name": { "action": "accept", "content": {} } } })).await;
    let r = c.recv().await["result"].clone();
    assert_eq!(r["resultType"], json!("complete"));
    assert_eq!(r["state"], json!("round-1"));
    assert_eq!(r["got"]["name"]["action"], json!("accept"));
    // Without the elicitation capability nothing is asked: -32021.
    c.request(
        json!(4),
        "prompts/get",
        json!({ "name": "p", "_meta": modern_meta(json!({ "roots": {} })) }),
    )
    .await;
    let e = c.recv().await;
    assert_eq!(e["error"]["code"], json!(-32021));
    assert_eq!(
        e["error"]["data"]["requiredCapabilities"],
        json!({ "elicitation": {} })
    );
}
