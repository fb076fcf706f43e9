//! Cancellations and pings do not queue behind the work they cancel: a
//! client that sends more requests than the server runs at once, then
//! cancels them, sees them cancelled (not run to completion) and its ping
//! answered at once, while memory stays within the byte budget.

use std::time::{Duration, Instant};

use conduit_mcp::jsonrpc::Request;
use conduit_mcp::server::{Handler, HandlerError, RequestContext, MIN_INBOUND_BYTES};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::server_support;
use server_support::{config, next_event, start, start_with_buffer, Event, TestHandler};

/// What a `sleep` handler did.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sleep {
    Started,
    Completed,
    Aborted,
}

/// Reports `Aborted` when a `sleep` future is dropped before it completes.
struct Abort(Option<mpsc::UnboundedSender<Sleep>>);

impl Drop for Abort {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(Sleep::Aborted);
        }
    }
}

/// `sleep {ms}`: sleeps, then answers.
struct Sleeper(mpsc::UnboundedSender<Sleep>);

impl Handler for Sleeper {
    async fn handle_request(&self, req: Request, _: RequestContext) -> Result<Value, HandlerError> {
        let ms = req
            .params
            .as_ref()
            .and_then(|p| p["ms"].as_u64())
            .unwrap_or(0);
        let _ = self.0.send(Sleep::Started);
        let mut abort = Abort(Some(self.0.clone()));
        tokio::time::sleep(Duration::from_millis(ms)).await;
        abort.0 = None;
        let _ = self.0.send(Sleep::Completed);
        Ok(json!({ "slept": ms }))
    }
}

const CALLS: usize = 300;
/// Long enough that a ping that waited for one sleep shows as such on a
/// loaded machine; no sleep runs to its end when the server is right.
const SLEEP_MS: u64 = 30_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellations_and_a_ping_overtake_a_full_backlog() {
    let (tx, mut events) = mpsc::unbounded_channel();
    // Room for every line we send: the client never waits on its writes.
    let mut c = start_with_buffer(config(), Sleeper(tx), 1 << 20);
    c.initialize(json!({})).await;
    for id in 0..CALLS {
        c.request(json!(id), "sleep", json!({ "ms": SLEEP_MS }))
            .await;
    }
    for id in 0..CALLS {
        c.send(
            json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": { "requestId": id, "reason": "changed my mind" } }),
        )
        .await;
    }
    let sent = Instant::now();
    c.request(json!("ping"), "ping", json!({})).await;
    // The ping's answer (everything else before it is an answer to a call
    // that was not cancelled in time); patience for the unfixed server.
    let mut answered_calls = 0;
    loop {
        let line = tokio::time::timeout(Duration::from_millis(2 * SLEEP_MS), c.rx.next_line())
            .await
            .expect("no ping answer within two sleeps")
            .unwrap()
            .expect("output ended");
        let m: Value = serde_json::from_str(&line).unwrap();
        if m["id"] == "ping" {
            break;
        }
        answered_calls += 1;
    }
    let ping_latency = sent.elapsed();
    // Then the end of input: the server lets what still runs finish
    // (`eof_drain`), and once it is gone so are the handler and every
    // request, so the events are complete when their channel closes.
    c.close_input();
    let end = c.end_ref().await;
    assert!(end.is_ok(), "{end:?}");
    let (mut started, mut completed, mut aborted) = (0, 0, 0);
    while let Some(e) = tokio::time::timeout(Duration::from_secs(60), events.recv())
        .await
        .expect("the handler outlived the server")
    {
        match e {
            Sleep::Started => started += 1,
            Sleep::Completed => completed += 1,
            Sleep::Aborted => aborted += 1,
        }
    }
    println!(
        "{CALLS} sleep({SLEEP_MS} ms) calls then a cancel for each: {completed} ran to \
         completion ({answered_calls} answered before the ping), {aborted} aborted, \
         {started} started; ping answered after {ping_latency:?}"
    );
    assert_eq!(completed, 0, "cancelled calls ran to completion");
    assert_eq!(answered_calls, 0, "cancelled calls were answered");
    assert!(
        ping_latency < Duration::from_millis(SLEEP_MS),
        "the ping waited for a sleep: {ping_latency:?}"
    );
    // A call that started was dropped when cancelled (its handler's future
    // with it), not left to run in the background.
    assert_eq!(aborted, started, "started calls that were not aborted");
}

#[tokio::test]
async fn a_cancellation_overtakes_a_request_the_full_budget_cannot_afford() {
    let (h, mut events) = TestHandler::new();
    let mut c = start(config().max_inbound_bytes(MIN_INBOUND_BYTES), h);
    c.initialize(json!({})).await;
    // Two requests of 0.4 MiB fill the 1 MiB budget; the third does not
    // fit and waits; the cancellation of the first comes behind it.
    c.three_requests_over_a_1_mib_budget().await;
    c.cancel(json!(1)).await;
    assert_eq!(next_event(&mut events).await, Event::Started(json!(1)));
    assert_eq!(next_event(&mut events).await, Event::Started(json!(2)));
    // Request 1 is cancelled at once, and its bytes let request 3 in.
    assert_eq!(next_event(&mut events).await, Event::Dropped(json!(1)));
    assert_eq!(next_event(&mut events).await, Event::Started(json!(3)));
    let before = c.until_ping("after").await;
    assert!(before.is_empty(), "{before:?}");
}

#[tokio::test]
async fn a_cancelled_request_the_budget_could_not_afford_never_runs() {
    let (h, mut events) = TestHandler::new();
    let gate = h.gate("g1");
    let mut c = start(config().max_inbound_bytes(MIN_INBOUND_BYTES), h);
    c.initialize(json!({})).await;
    c.three_requests_over_a_1_mib_budget().await;
    // Request 3 waits for room; the client cancels it before it gets any.
    c.cancel(json!(3)).await;
    assert_eq!(next_event(&mut events).await, Event::Started(json!(1)));
    assert_eq!(next_event(&mut events).await, Event::Started(json!(2)));
    // A ping goes by too, and then request 1 ends: request 3 never starts.
    let before = c.until_ping("while-full").await;
    assert!(before.is_empty(), "{before:?}");
    gate.notify_one();
    assert_eq!(c.recv().await["id"], json!(1));
    c.request(json!(4), "echo", json!({})).await;
    assert_eq!(c.recv().await["id"], json!(4));
    while let Ok(e) = events.try_recv() {
        assert_ne!(e, Event::Started(json!(3)), "request 3 ran");
    }
}

#[tokio::test]
async fn queued_requests_are_bounded_by_the_byte_budget_not_by_a_count() {
    // One handler at a time; the others wait in the backlog, read (so a
    // cancellation behind them is read too) as long as the budget allows.
    let (h, mut events) = TestHandler::new();
    let gate = h.gate("g");
    let mut c = start(config().max_in_flight(1), h);
    c.initialize(json!({})).await;
    for id in 0..100 {
        c.request(json!(id), "wait", json!({ "gate": "g" })).await;
    }
    c.cancel(json!(99)).await;
    assert_eq!(next_event(&mut events).await, Event::Started(json!(0)));
    // The answer to a ping says every line before it was read.
    let before = c.until_ping("read-all").await;
    assert!(before.is_empty(), "{before:?}");
    // 0..98 run in order, one at a time; 99 was cancelled while queued.
    for id in 0..99 {
        gate.notify_one();
        let m = c.recv().await;
        assert_eq!(m["id"], json!(id), "{m}");
        if id < 98 {
            assert_eq!(next_event(&mut events).await, Event::Started(json!(id + 1)));
        }
    }
    c.request(json!("last"), "echo", json!({})).await;
    assert_eq!(c.recv().await["id"], "last");
}
