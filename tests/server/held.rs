//! `RequestContext::run_held`: work that runs once across its client's
//! input rounds, over stdio in both eras.

use crate::server_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use conduit_mcp::jsonrpc::Request;
use conduit_mcp::protocol::InputRequest;
use conduit_mcp::server::{Handler, HandlerError, RequestContext};
use serde_json::{json, Value};
use server_support::*;
use tokio::sync::mpsc;

/// What the held work reports.
#[derive(Debug, PartialEq)]
enum Seen {
    /// The work started (once per call, however many rounds).
    Started(String),
    /// An ask failed.
    AskFailed(String),
    /// The work was dropped before it finished (aborted).
    Dropped,
}

struct Guard(mpsc::UnboundedSender<Seen>, bool);

impl Drop for Guard {
    fn drop(&mut self) {
        if self.1 {
            let _ = self.0.send(Seen::Dropped);
        }
    }
}

#[derive(Clone)]
struct Held {
    seen: mpsc::UnboundedSender<Seen>,
    runs: Arc<AtomicUsize>,
}

fn confirm() -> InputRequest {
    InputRequest::elicit(json!({
        "mode": "form",
        "message": "Go?",
        "requestedSchema": { "type": "object", "properties": {} },
    }))
}

impl Handler for Held {
    async fn handle_request(
        &self,
        req: Request,
        ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        let name = req
            .params
            .as_ref()
            .and_then(|p| p["name"].as_str())
            .unwrap_or_default()
            .to_owned();
        let seen = self.seen.clone();
        let runs = self.runs.clone();
        match (req.method.as_str(), name.as_str()) {
            // Asks twice, one round each, then answers with both answers.
            ("tools/call", "two_rounds" | "other") => {
                ctx.run_held(move |call| async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    let _ = seen.send(Seen::Started(name));
                    let mut guard = Guard(seen.clone(), true);
                    let first = call.ask(confirm()).await.inspect_err(|e| {
                        let _ = seen.send(Seen::AskFailed(e.to_string()));
                    })?;
                    let roots = call.ask(InputRequest::list_roots()).await?;
                    guard.1 = false;
                    Ok(json!({ "content": [{ "type": "text",
                        "text": format!("{} {}", first["action"], roots["roots"]) }] }))
                })
                .await
            }
            // Asks twice at once: one round with both.
            ("tools/call", "both") => {
                ctx.run_held(move |call| async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    let (a, b) =
                        tokio::join!(call.ask(confirm()), call.ask(InputRequest::list_roots()));
                    Ok(json!({ "content": [{ "type": "text",
                        "text": format!("{} {}", a?["action"], b?["roots"]) }] }))
                })
                .await
            }
            _ => Err(HandlerError::MethodNotFound(req.method)),
        }
    }
}

fn held() -> (Held, mpsc::UnboundedReceiver<Seen>, Arc<AtomicUsize>) {
    let (seen, rx) = mpsc::unbounded_channel();
    let runs = Arc::new(AtomicUsize::new(0));
    (
        Held {
            seen,
            runs: runs.clone(),
        },
        rx,
        runs,
    )
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .expect("the work reported nothing")
        .expect("reports closed")
}

fn caps() -> Value {
    modern_meta(json!({ "elicitation": {}, "roots": {} }))
}

/// The one input request of an `input_required` result, and its state.
fn one_ask(r: &Value) -> (String, Value, String) {
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    let asks = result["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(asks.len(), 1, "{r}");
    let (key, ask) = asks.iter().next().unwrap();
    let state = result["requestState"].as_str().expect("a requestState");
    (key.clone(), ask.clone(), state.to_owned())
}

/// Sends `tools/call` of `two_rounds` (the client declares elicitation and
/// roots) with `extra` members, and returns the answer.
async fn two_rounds(c: &mut Client, id: i64, extra: Value) -> Value {
    let mut p = json!({ "name": "two_rounds", "_meta": caps() });
    for (k, v) in extra.as_object().expect("an object") {
        p[k] = v.clone();
    }
    c.request(json!(id), "tools/call", p).await;
    c.recv().await
}

#[tokio::test]
async fn a_held_call_runs_once_across_two_rounds_and_its_state_is_used_once() {
    let (h, mut rx, runs) = held();
    let mut c = start(config(), h);
    let r1 = two_rounds(&mut c, 1, json!({})).await;
    let (key, ask, state) = one_ask(&r1);
    assert_eq!(ask["method"], "elicitation/create", "{r1}");
    assert!(state.starts_with("conduit-held."), "{state}");
    assert_eq!(next(&mut rx).await, Seen::Started("two_rounds".into()));

    let r2 = two_rounds(
        &mut c,
        2,
        json!({ "requestState": state, "inputResponses": { key.clone(): { "action": "accept", "content": {} } } }),
    )
    .await;
    let (key2, ask2, state2) = one_ask(&r2);
    assert_eq!(ask2["method"], "roots/list", "{r2}");
    assert_ne!(key2, key, "each ask its own key");
    assert_ne!(state2, state, "each round its own state");

    let retry = json!({ "requestState": state2, "inputResponses": { key2: { "roots": [{ "uri": "file:///r" }] } } });
    let r3 = two_rounds(&mut c, 3, retry.clone()).await;
    assert_eq!(
        r3["result"]["content"][0]["text"], r#""accept" [{"uri":"file:///r"}]"#,
        "{r3}"
    );
    assert_eq!(r3["result"]["resultType"], "complete", "{r3}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the work ran once");

    // A state is used once.
    let r4 = two_rounds(&mut c, 4, retry).await;
    assert_eq!(r4["error"]["code"], -32602, "{r4}");
    assert!(
        r4["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already used"),
        "{r4}"
    );
}

#[tokio::test]
async fn asks_made_at_once_go_in_one_round_and_a_partial_retry_asks_for_the_rest() {
    let (h, _rx, runs) = held();
    let mut c = start(config(), h);
    let base = json!({ "name": "both", "_meta": caps() });
    c.request(json!(1), "tools/call", base.clone()).await;
    let r1 = c.recv().await;
    let asks = r1["result"]["inputRequests"]
        .as_object()
        .expect("asks")
        .clone();
    assert_eq!(asks.len(), 2, "{r1}");
    let roots_key = asks
        .iter()
        .find(|(_, a)| a["method"] == "roots/list")
        .map(|(k, _)| k.clone())
        .expect("the roots ask");
    let confirm_key = asks.keys().find(|k| **k != roots_key).unwrap().clone();

    let mut p = base.clone();
    p["requestState"] = r1["result"]["requestState"].clone();
    p["inputResponses"] = json!({ roots_key.clone(): { "roots": [] } });
    c.request(json!(2), "tools/call", p).await;
    let r2 = c.recv().await;
    let (key, ask, state) = one_ask(&r2);
    assert_eq!(key, confirm_key, "asked again for what was missing: {r2}");
    assert_eq!(ask["method"], "elicitation/create");

    let mut p = base;
    p["requestState"] = json!(state);
    p["inputResponses"] = json!({ key: { "action": "decline" } });
    c.request(json!(3), "tools/call", p).await;
    let r3 = c.recv().await;
    assert_eq!(
        r3["result"]["content"][0]["text"], r#""decline" []"#,
        "{r3}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_state_for_another_tool_is_refused_and_an_unknown_one_too() {
    let (h, _rx, _) = held();
    let mut c = start(config(), h);
    let r1 = two_rounds(&mut c, 1, json!({})).await;
    let (key, _, state) = one_ask(&r1);
    let answer = json!({ key: { "action": "accept", "content": {} } });
    c.request(
        json!(2),
        "tools/call",
        json!({ "name": "other", "_meta": caps(), "requestState": state, "inputResponses": answer }),
    )
    .await;
    let r = c.recv().await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another request"),
        "{r}"
    );
    let r = two_rounds(
        &mut c,
        3,
        json!({ "requestState": "conduit-held.00000000000000000000000000000000" }),
    )
    .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[tokio::test]
async fn a_client_that_never_comes_back_has_its_call_aborted_and_its_retry_refused() {
    let (h, mut rx, _) = held();
    let mut c = start(config().held_input_timeout(Duration::from_millis(200)), h);
    let r1 = two_rounds(&mut c, 1, json!({})).await;
    let (key, _, state) = one_ask(&r1);
    assert_eq!(next(&mut rx).await, Seen::Started("two_rounds".into()));
    // Expired: the work's task is aborted (its guard says so).
    assert_eq!(next(&mut rx).await, Seen::Dropped);
    let r = two_rounds(
        &mut c,
        2,
        json!({ "requestState": state, "inputResponses": { key: { "action": "accept", "content": {} } } }),
    )
    .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("expired"),
        "{r}"
    );
}

#[tokio::test]
async fn past_max_held_calls_an_ask_fails_naming_the_bound() {
    let (h, mut rx, _) = held();
    // 4 in all: one per client.
    let mut c = start(config().max_held_calls(4), h);
    let r1 = two_rounds(&mut c, 1, json!({})).await;
    one_ask(&r1);
    assert_eq!(next(&mut rx).await, Seen::Started("two_rounds".into()));
    let r = two_rounds(&mut c, 2, json!({})).await;
    assert_eq!(r["id"], 2);
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_held_calls = 4"), "{r}");
    assert_eq!(next(&mut rx).await, Seen::Started("two_rounds".into()));
    match next(&mut rx).await {
        Seen::AskFailed(e) => assert!(e.contains("max_held_calls"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_end_of_the_session_aborts_the_held_calls_waiting_in_it() {
    let (h, mut rx, _) = held();
    let mut c = start(config(), h);
    let r1 = two_rounds(&mut c, 1, json!({})).await;
    one_ask(&r1);
    assert_eq!(next(&mut rx).await, Seen::Started("two_rounds".into()));
    c.close_input();
    c.end_ref().await.expect("a clean end");
    assert_eq!(next(&mut rx).await, Seen::Dropped);
}

#[tokio::test]
async fn in_a_2025_session_the_same_work_asks_the_client_directly() {
    let (h, _rx, runs) = held();
    let mut c = start(config(), h);
    c.initialize(json!({ "elicitation": {}, "roots": {} }))
        .await;
    c.request(json!(1), "tools/call", json!({ "name": "two_rounds" }))
        .await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    c.send(json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": {} } }))
        .await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], "roots/list", "{ask}");
    c.send(json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "roots": [] } }))
        .await;
    let r = c.recv().await;
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["content"][0]["text"], r#""accept" []"#, "{r}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_capability_the_client_lacks_fails_the_ask_before_any_round() {
    let (h, mut rx, _) = held();
    let mut c = start(config(), h);
    c.request(
        json!(1),
        "tools/call",
        json!({ "name": "two_rounds", "_meta": modern_meta(json!({})) }),
    )
    .await;
    let r = c.recv().await;
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert_eq!(next(&mut rx).await, Seen::Started("two_rounds".into()));
    match next(&mut rx).await {
        Seen::AskFailed(e) => assert!(e.contains("elicitation"), "{e}"),
        other => panic!("{other:?}"),
    }
}
