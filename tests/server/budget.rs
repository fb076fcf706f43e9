//! The inbound byte budget (`ServerConfig::max_inbound_bytes`) as a client
//! sees it: reading pauses when the parsed input held reaches the budget
//! and resumes when a handler ends; cancellations, pings and responses to
//! the server's own requests still get through when the budget is full
//! (`server_backlog.rs` has more on cancellations).
//!
//! The peak-memory figure under a hostile client is in `server_memory.rs`.

use conduit_mcp::server::{ServerError, MIN_INBOUND_BYTES};
use serde_json::json;

use crate::server_support;
use server_support::{config, next_event, pad, start, Event, TestHandler};

#[tokio::test]
async fn reading_pauses_at_the_byte_budget_and_resumes_when_a_handler_ends() {
    let (h, mut events) = TestHandler::new();
    let gate = h.gate("g1");
    let mut c = start(config().max_inbound_bytes(MIN_INBOUND_BYTES), h);
    c.initialize(json!({})).await;
    // Two requests of 0.4 MiB fit in 1 MiB; the third does not.
    c.three_requests_over_a_1_mib_budget().await;
    assert_eq!(next_event(&mut events).await, Event::Started(json!(1)));
    assert_eq!(next_event(&mut events).await, Event::Started(json!(2)));
    // Request 3 waits for room (a ping goes past it: answered at once),
    // and starts when request 1 ends and releases its bytes.
    let before = c.until_ping("while-full").await;
    assert!(before.is_empty(), "{before:?}");
    gate.notify_one();
    let first = c.recv().await;
    assert_eq!(first["id"], json!(1), "{first}");
    assert_eq!(first["result"]["opened"], "g1");
    assert_eq!(next_event(&mut events).await, Event::Started(json!(3)));
}

#[tokio::test]
async fn a_cancellation_is_read_while_one_oversized_request_holds_the_budget() {
    let (h, mut events) = TestHandler::new();
    let mut c = start(config().max_inbound_bytes(MIN_INBOUND_BYTES), h);
    c.initialize(json!({})).await;
    // 2 MiB: over the budget, so admitted only alone; it fills it.
    c.request(
        json!(1),
        "wait",
        json!({ "gate": "never", "pad": pad(2 << 20) }),
    )
    .await;
    assert_eq!(next_event(&mut events).await, Event::Started(json!(1)));
    c.cancel(json!(1)).await;
    assert_eq!(next_event(&mut events).await, Event::Dropped(json!(1)));
    // Its bytes were released: a new request is read and answered.
    let before = c.until_ping("after-cancel").await;
    assert!(
        before.is_empty(),
        "no answer for a cancelled request: {before:?}"
    );
    c.request(json!(2), "echo", json!({ "pad": pad(1024) }))
        .await;
    assert_eq!(c.recv().await["id"], json!(2));
}

#[tokio::test]
async fn a_response_to_an_ask_is_read_while_the_budget_is_full() {
    let (h, _events) = TestHandler::new();
    let mut c = start(config().max_inbound_bytes(MIN_INBOUND_BYTES), h);
    c.initialize(json!({ "roots": {} })).await;
    // tools/call asks for the roots and waits; its 2 MiB fill the budget.
    c.request(
        json!(1),
        "tools/call",
        json!({ "name": "roots", "pad": pad(2 << 20) }),
    )
    .await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], "roots/list", "{ask}");
    c.send(json!({ "jsonrpc": "2.0", "id": ask["id"],
                   "result": { "roots": [{ "uri": "file:///r" }] } }))
        .await;
    let done = c.recv().await;
    assert_eq!(done["id"], json!(1), "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["roots"][0]["uri"],
        "file:///r"
    );
}

#[tokio::test]
async fn a_budget_below_the_minimum_is_invalid_configuration() {
    let (h, _events) = TestHandler::new();
    let c = start(config().max_inbound_bytes(MIN_INBOUND_BYTES - 1), h);
    match c.end().await {
        Err(ServerError::InvalidConfig { key, reason }) => {
            assert_eq!(key, "max_inbound_bytes");
            assert!(reason.contains(&MIN_INBOUND_BYTES.to_string()), "{reason}");
        }
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}
