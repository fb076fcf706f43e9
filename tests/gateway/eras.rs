//! Across eras through the gateway: a 2026-07-28 client and a 2025-11-25
//! session, each in front of a legacy and a 2026-07-28 server (the
//! conformance example over stdio, its era forced). Sampling crosses as
//! `input_required` rounds or SSE requests; progress, logs and
//! cancellation pass through; what cannot be translated is a clear error.

use crate::gateway_support;

use crate::example_bin;

use std::time::Duration;

use conduit_mcp::gateway::{Auth, ClientGrant, HttpGateway, HttpGatewayConfig};
use conduit_mcp::host::HostConfig;
use conduit_mcp::{ClientConfig, EraPreference, Secret, StderrMode};
use gateway_support::common::{self, tempdir};
use gateway_support::{At, LEGACY};
use serde_json::{json, Value};

const SINGLE: &str = "/servers/conf/mcp";

/// The conformance example over stdio, in `era`.
fn conformance(era: EraPreference) -> ClientConfig {
    let exe = example_bin::example_bin("conformance_server").expect("the conformance example");
    let mut c = ClientConfig::new(exe.display().to_string())
        .arg("--stdio")
        .stderr(StderrMode::Discard);
    c = c.era(era);
    c
}

/// A front on 127.0.0.1:0 for `host`.
async fn front(host: HostConfig, config: HttpGatewayConfig) -> (HttpGateway, At) {
    let f = HttpGateway::start(host, config)
        .await
        .expect("the front starts");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = f.clone();
    tokio::spawn(async move { serving.serve(listener).await });
    (f, At { addr })
}

async fn conf(era: EraPreference, config: HttpGatewayConfig) -> (HttpGateway, At) {
    front(HostConfig::new().server("conf", conformance(era)), config).await
}

fn sampling_caps() -> Value {
    json!({ "io.modelcontextprotocol/clientCapabilities": { "sampling": {} } })
}

fn sampled(text: &str) -> Value {
    json!({ "role": "assistant", "content": { "type": "text", "text": text }, "model": "test-model" })
}

/// The one input request of an `input_required` result: its key and body.
fn only_input(v: &Value) -> (String, Value) {
    let r = &v["result"];
    assert_eq!(r["resultType"], "input_required", "{v}");
    let reqs = r["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(reqs.len(), 1, "{v}");
    let (k, req) = reqs.iter().next().unwrap();
    (k.clone(), req.clone())
}

#[tokio::test]
async fn a_2026_client_gets_input_required_for_a_legacy_servers_sampling_and_its_answer_reaches_the_server(
) {
    let (f, at) = conf(EraPreference::Stateful, HttpGatewayConfig::new()).await;
    for (path, tool) in [(SINGLE, "test_sampling"), ("/mcp", "conf__test_sampling")] {
        let mut params = json!({ "name": tool, "arguments": { "prompt": "Say hi" } });
        params["_meta"] = sampling_caps();
        let r1 = at
            .modern(path, &[], 1, "tools/call", params.clone())
            .await
            .json()
            .await;
        let (key, req) = only_input(&r1);
        assert_eq!(req["method"], "sampling/createMessage", "{r1}");
        assert_eq!(
            req["params"]["messages"][0]["content"]["text"], "Say hi",
            "{r1}"
        );
        let state = r1["result"]["requestState"]
            .as_str()
            .expect("a request state")
            .to_owned();
        assert!(state.starts_with("conduit-held."), "{state}");

        let mut retry = params.clone();
        retry["inputResponses"] = json!({ key.clone(): sampled("Hello from the model") });
        retry["requestState"] = json!(state);
        let r2 = at
            .modern(path, &[], 2, "tools/call", retry.clone())
            .await
            .json()
            .await;
        assert_eq!(
            r2["result"]["content"][0]["text"], "LLM response: Hello from the model",
            "{r2}"
        );

        // A state is used once.
        let again = at
            .modern(path, &[], 3, "tools/call", retry)
            .await
            .json()
            .await;
        assert_eq!(again["error"]["code"], -32602, "{again}");
    }
    f.shutdown().await;
}

#[tokio::test]
async fn a_2025_session_gets_a_servers_sampling_request_on_its_sse_stream_in_front_of_either_era() {
    for era in [EraPreference::Stateful, EraPreference::Stateless] {
        let (f, at) = conf(era, HttpGatewayConfig::new()).await;
        let sid = at.session(SINGLE, &[], json!({ "sampling": {} })).await;
        let call = at
            .legacy(
                SINGLE,
                &sid,
                &[],
                7,
                "tools/call",
                json!({ "name": "test_sampling", "arguments": { "prompt": "Say hi" } }),
            )
            .await;
        assert!(
            call.is_sse(),
            "{era:?}: the call's answer waits for the client"
        );
        let mut events = call.sse();
        let ask = events.next_message().await.expect("the server's request");
        assert_eq!(ask["method"], "sampling/createMessage", "{era:?}: {ask}");
        assert_eq!(
            ask["params"]["messages"][0]["content"]["text"], "Say hi",
            "{ask}"
        );
        let answer = json!({ "jsonrpc": "2.0", "id": ask["id"], "result": sampled("Hi there") });
        let posted = at
            .send(
                "POST",
                SINGLE,
                &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
                Some(&answer),
            )
            .await;
        assert_eq!(posted.status, 202);
        let done = events.next_message().await.expect("the call's answer");
        assert_eq!(done["id"], 7, "{done}");
        assert_eq!(
            done["result"]["content"][0]["text"], "LLM response: Hi there",
            "{era:?}: {done}"
        );
        f.shutdown().await;
    }
}

#[tokio::test]
async fn a_capability_the_2026_client_did_not_declare_is_a_32021_error_not_a_request() {
    let (f, at) = conf(EraPreference::Stateful, HttpGatewayConfig::new()).await;
    let r = at
        .modern(
            SINGLE,
            &[],
            1,
            "tools/call",
            json!({ "name": "test_sampling", "arguments": { "prompt": "x" } }),
        )
        .await;
    assert_eq!(r.status, 400);
    let v = r.json().await;
    assert_eq!(v["error"]["code"], -32021, "{v}");
    assert!(
        v["error"]["data"]["requiredCapabilities"]["sampling"].is_object(),
        "{v}"
    );
    f.shutdown().await;
}

/// Reads `/metrics` for the held calls gauge.
async fn held(at: &At) -> i64 {
    let m = at.send("GET", "/metrics", &[], None).await;
    let text = String::from_utf8(m.bytes().await.to_vec()).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("mcp_gateway_held_calls "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(-1)
}

#[tokio::test]
async fn a_held_call_whose_client_never_comes_back_expires_and_its_state_is_refused() {
    let config = HttpGatewayConfig::new().input_timeout(Duration::from_millis(300));
    let (f, at) = conf(EraPreference::Stateful, config).await;
    let mut params = json!({ "name": "test_sampling", "arguments": { "prompt": "x" } });
    params["_meta"] = sampling_caps();
    let r1 = at
        .modern(SINGLE, &[], 1, "tools/call", params.clone())
        .await
        .json()
        .await;
    let (key, _) = only_input(&r1);
    assert_eq!(held(&at).await, 1);
    let mut gone = false;
    for _ in 0..200 {
        if held(&at).await == 0 {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gone, "the held call never expired");
    params["inputResponses"] = json!({ key: sampled("late") });
    params["requestState"] = r1["result"]["requestState"].clone();
    let late = at
        .modern(SINGLE, &[], 2, "tools/call", params)
        .await
        .json()
        .await;
    assert_eq!(late["error"]["code"], -32602, "{late}");
    assert!(
        late["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{late}"
    );
    // The server was not left waiting: it still answers.
    let ok = at
        .call_modern(SINGLE, 3, "test_simple_text", json!({}))
        .await;
    assert!(ok["result"]["content"].is_array(), "{ok}");
    f.shutdown().await;
}

#[tokio::test]
async fn a_request_state_is_its_clients_only() {
    let auth = Auth::Clients(vec![
        ClientGrant::new("alice", Secret::new("alice-token-0123456789")).server("*", ["*"]),
        ClientGrant::new("bob", Secret::new("bob-token-0123456789ab")).server("*", ["*"]),
    ]);
    let (f, at) = conf(EraPreference::Stateful, HttpGatewayConfig::new().auth(auth)).await;
    let alice = [("authorization", "Bearer alice-token-0123456789")];
    let bob = [("authorization", "Bearer bob-token-0123456789ab")];
    let mut params = json!({ "name": "test_sampling", "arguments": { "prompt": "x" } });
    params["_meta"] = sampling_caps();
    let r1 = at
        .modern(SINGLE, &alice, 1, "tools/call", params.clone())
        .await
        .json()
        .await;
    let (key, _) = only_input(&r1);
    params["inputResponses"] = json!({ key: sampled("stolen") });
    params["requestState"] = r1["result"]["requestState"].clone();
    let stolen = at
        .modern(SINGLE, &bob, 2, "tools/call", params.clone())
        .await
        .json()
        .await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    let tampered = {
        let mut p = params.clone();
        p["requestState"] = json!("conduit-held.00000000000000000000000000000000");
        at.modern(SINGLE, &alice, 3, "tools/call", p)
            .await
            .json()
            .await
    };
    assert_eq!(tampered["error"]["code"], -32602, "{tampered}");
    // Bob's attempt did not consume it: Alice's retry completes.
    let ok = at
        .modern(SINGLE, &alice, 4, "tools/call", params)
        .await
        .json()
        .await;
    assert_eq!(
        ok["result"]["content"][0]["text"], "LLM response: stolen",
        "{ok}"
    );
    f.shutdown().await;
}

/// The notifications of a call's SSE stream, and its answer.
async fn stream(r: gateway_support::Resp) -> (Vec<Value>, Value) {
    assert!(r.is_sse(), "an SSE answer");
    let mut events = r.sse();
    let mut notes = Vec::new();
    while let Some(m) = events.next_message().await {
        if m.get("id").is_some() && m.get("method").is_none() {
            return (notes, m);
        }
        notes.push(m);
    }
    panic!("the stream ended without an answer");
}

#[tokio::test]
async fn progress_and_log_messages_pass_through_in_every_pair_of_eras() {
    for era in [EraPreference::Stateful, EraPreference::Stateless] {
        let (f, at) = conf(era, HttpGatewayConfig::new()).await;
        // 2026-07-28 client.
        let mut p = json!({ "name": "test_tool_with_progress", "arguments": {} });
        p["_meta"] = json!({ "progressToken": "tok-m" });
        let (notes, answer) = stream(at.modern(SINGLE, &[], 1, "tools/call", p).await).await;
        let progress: Vec<&Value> = notes
            .iter()
            .filter(|n| n["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), 3, "{era:?}: {notes:?}");
        assert!(
            progress
                .iter()
                .all(|n| n["params"]["progressToken"] == "tok-m"),
            "{notes:?}"
        );
        assert_eq!(progress[2]["params"]["progress"], 100.0, "{notes:?}");
        assert!(answer["result"].is_object(), "{answer}");
        let mut p = json!({ "name": "test_tool_with_logging", "arguments": {} });
        p["_meta"] = json!({ "io.modelcontextprotocol/logLevel": "debug" });
        let (notes, _) = stream(at.modern(SINGLE, &[], 2, "tools/call", p).await).await;
        let logs = notes
            .iter()
            .filter(|n| n["method"] == "notifications/message")
            .count();
        assert!(logs >= 3, "{era:?}: modern client: {notes:?}");

        // 2025-11-25 session.
        let sid = at.session(SINGLE, &[], json!({})).await;
        let p = json!({ "name": "test_tool_with_progress", "arguments": {}, "_meta": { "progressToken": 9 } });
        let (notes, _) = stream(at.legacy(SINGLE, &sid, &[], 3, "tools/call", p).await).await;
        let progress: Vec<&Value> = notes
            .iter()
            .filter(|n| n["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), 3, "{era:?}: {notes:?}");
        assert!(
            progress.iter().all(|n| n["params"]["progressToken"] == 9),
            "{notes:?}"
        );
        let (notes, _) = stream(
            at.legacy(
                SINGLE,
                &sid,
                &[],
                4,
                "tools/call",
                json!({ "name": "test_tool_with_logging", "arguments": {} }),
            )
            .await,
        )
        .await;
        let logs = notes
            .iter()
            .filter(|n| n["method"] == "notifications/message")
            .count();
        assert!(logs >= 3, "{era:?}: legacy session: {notes:?}");
        f.shutdown().await;
    }
}

#[tokio::test]
async fn a_front_cancellation_reaches_the_server_in_both_eras() {
    let dir = tempdir("gw-cancel");
    let mut host = HostConfig::new();
    for era in ["legacy", "modern"] {
        let log = dir.join(format!("{era}.log"));
        host = host.server(
            era,
            common::config(&["--era", era, "--log-file", log.to_str().unwrap()]),
        );
    }
    let (f, at) = front(host, HttpGatewayConfig::new()).await;
    let cancelled = |era: &str| {
        std::fs::read_to_string(dir.join(format!("{era}.log")))
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains("notifications/cancelled"))
    };
    let started = |era: &str| {
        std::fs::read_to_string(dir.join(format!("{era}.log")))
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains("\"sleep\""))
    };
    for era in ["legacy", "modern"] {
        let path = format!("/servers/{era}/mcp");
        // A 2025-11-25 session cancels with a notification.
        let sid = at.session(&path, &[], json!({})).await;
        let addr = at.addr;
        let (p, s) = (path.clone(), sid.clone());
        let call = tokio::spawn(async move {
            At { addr }
                .legacy(
                    &p,
                    &s,
                    &[],
                    1,
                    "tools/call",
                    json!({ "name": "sleep", "arguments": { "ms": 30000 } }),
                )
                .await
        });
        assert!(common::eventually(Duration::from_secs(10), || started(era))
            .await
            .is_some());
        let n = at
            .send(
                "POST",
                &path,
                &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
                Some(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } })),
            )
            .await;
        assert_eq!(n.status, 202);
        assert!(
            common::eventually(Duration::from_secs(10), || cancelled(era))
                .await
                .is_some(),
            "{era}: the server never saw the cancellation"
        );
        call.abort();
    }
    // A 2026-07-28 client cancels by closing its stream.
    let _ = std::fs::write(dir.join("modern.log"), "");
    let addr = at.addr;
    let call = tokio::spawn(async move {
        At { addr }
            .modern(
                "/servers/modern/mcp",
                &[],
                5,
                "tools/call",
                json!({ "name": "sleep", "arguments": { "ms": 30000 } }),
            )
            .await
    });
    assert!(
        common::eventually(Duration::from_secs(10), || started("modern"))
            .await
            .is_some()
    );
    call.abort();
    assert!(
        common::eventually(Duration::from_secs(10), || cancelled("modern"))
            .await
            .is_some(),
        "the server never saw the closed stream as a cancellation"
    );
    f.shutdown().await;
}

#[tokio::test]
async fn a_legacy_servers_request_during_calls_of_two_clients_is_refused_not_misrouted() {
    let host = HostConfig::new().server("old", common::config(&["--era", "legacy"]));
    let (f, at) = front(host, HttpGatewayConfig::new()).await;
    let path = "/servers/old/mcp";
    let a = at.session(path, &[], json!({ "roots": {} })).await;
    let b = at.session(path, &[], json!({ "roots": {} })).await;

    // B alone: its server's roots/list comes to B.
    let r = at
        .legacy(
            path,
            &b,
            &[],
            1,
            "tools/call",
            json!({ "name": "ask_roots", "arguments": {} }),
        )
        .await;
    let mut events = r.sse();
    let ask = events.next_message().await.expect("roots/list for B");
    assert_eq!(ask["method"], "roots/list", "{ask}");
    let answer = json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "roots": [{ "uri": "file:///b", "name": "b" }] } });
    let posted = at
        .send(
            "POST",
            path,
            &[("mcp-session-id", &b), ("mcp-protocol-version", LEGACY)],
            Some(&answer),
        )
        .await;
    assert_eq!(posted.status, 202);
    let done = events.next_message().await.unwrap();
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("file:///b"),
        "{done}"
    );

    // A has a call in flight: B's next request from the server names no
    // call, so it is refused rather than shown to A.
    let addr = at.addr;
    let a2 = a.clone();
    let long = tokio::spawn(async move {
        At { addr }
            .legacy(
                path,
                &a2,
                &[],
                2,
                "tools/call",
                json!({ "name": "sleep", "arguments": { "ms": 3000 } }),
            )
            .await
            .json()
            .await
    });
    let mut in_flight = false;
    for _ in 0..200 {
        let m = at.send("GET", "/metrics", &[], None).await;
        let text = String::from_utf8(m.bytes().await.to_vec()).unwrap();
        if text.contains(r#"mcp_gateway_requests_in_flight{server="old"} 1"#) {
            in_flight = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(in_flight);
    let r = at
        .legacy(
            path,
            &b,
            &[],
            3,
            "tools/call",
            json!({ "name": "ask_roots", "arguments": {} }),
        )
        .await
        .json()
        .await;
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.contains("cannot tell which"), "{r}");
    let a_done = long.await.unwrap();
    assert!(
        a_done["result"].is_object(),
        "A's call is unaffected: {a_done}"
    );
    f.shutdown().await;
}

#[tokio::test]
async fn a_2026_servers_list_change_reaches_2025_sessions_of_both_endpoints() {
    let (f, at) = conf(EraPreference::Stateless, HttpGatewayConfig::new()).await;
    let mut streams = Vec::new();
    for path in ["/mcp", SINGLE] {
        let sid = at.session(path, &[], json!({})).await;
        let get = at
            .send(
                "GET",
                path,
                &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
                None,
            )
            .await;
        assert_eq!(get.status, 200);
        streams.push((path, get.sse()));
    }
    let before = gateway_support::tool_names(
        &at.modern("/mcp", &[], 1, "tools/list", json!({}))
            .await
            .json()
            .await,
    );
    let toggled = at
        .call_modern("/mcp", 2, "conf__test_trigger_tool_change", json!({}))
        .await;
    assert!(toggled["result"].is_object(), "{toggled}");
    for (path, events) in &mut streams {
        let n = events.next_message().await.expect("a notification");
        assert_eq!(
            n["method"], "notifications/tools/list_changed",
            "{path}: {n}"
        );
    }
    let after = gateway_support::tool_names(
        &at.modern("/mcp", &[], 3, "tools/list", json!({}))
            .await
            .json()
            .await,
    );
    assert_ne!(
        before, after,
        "the namespace did not follow the server's change"
    );
    f.shutdown().await;
}

#[tokio::test]
async fn a_2025_sessions_resource_subscription_gets_a_2026_servers_updates() {
    let (f, at) = conf(EraPreference::Stateless, HttpGatewayConfig::new()).await;
    let mut streams = Vec::new();
    for (path, tool) in [
        (SINGLE, "test_trigger_resource_update"),
        ("/mcp", "conf__test_trigger_resource_update"),
    ] {
        let sid = at.session(path, &[], json!({})).await;
        let sub = at
            .legacy(
                path,
                &sid,
                &[],
                1,
                "resources/subscribe",
                json!({ "uri": "test://watched-resource" }),
            )
            .await
            .json()
            .await;
        assert!(sub["result"].is_object(), "{path}: {sub}");
        let get = at
            .send(
                "GET",
                path,
                &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
                None,
            )
            .await;
        streams.push((path, tool, sid, get.sse()));
    }
    for (path, tool, sid, events) in &mut streams {
        let r = at
            .legacy(
                path,
                sid,
                &[],
                2,
                "tools/call",
                json!({ "name": tool, "arguments": {} }),
            )
            .await
            .json()
            .await;
        assert!(r["result"].is_object(), "{r}");
        let n = events.next_message().await.expect("an update");
        assert_eq!(
            n["method"], "notifications/resources/updated",
            "{path}: {n}"
        );
        assert_eq!(n["params"]["uri"], "test://watched-resource", "{n}");
    }
    f.shutdown().await;
}

/// The log messages of `notes`, their text.
fn log_texts(notes: &[Value]) -> Vec<String> {
    notes
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .map(|n| n["params"]["data"].to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_log_message_a_server_sends_before_its_answer_reaches_the_front_before_the_answer() {
    // The server's last log line comes right before its answer: both must
    // reach the front client, in that order, every time.
    const CALLS: u64 = 12;
    for era in [EraPreference::Stateful, EraPreference::Stateless] {
        let (f, at) = conf(era, HttpGatewayConfig::new()).await;
        let sid = at.session(SINGLE, &[], json!({})).await;
        for i in 0..CALLS {
            let mut p = json!({ "name": "test_tool_with_logging", "arguments": {} });
            p["_meta"] = json!({ "io.modelcontextprotocol/logLevel": "debug" });
            let (notes, _) = stream(at.modern(SINGLE, &[], 100 + i, "tools/call", p).await).await;
            let logs = log_texts(&notes);
            assert_eq!(logs.len(), 3, "{era:?}: modern client, call {i}: {notes:?}");
            assert!(logs[2].contains("completed"), "{era:?}: {logs:?}");

            let p = json!({ "name": "test_tool_with_logging", "arguments": {} });
            let (notes, _) =
                stream(at.legacy(SINGLE, &sid, &[], 200 + i, "tools/call", p).await).await;
            let logs = log_texts(&notes);
            assert_eq!(
                logs.len(),
                3,
                "{era:?}: legacy session, call {i}: {notes:?}"
            );
            assert!(logs[2].contains("completed"), "{era:?}: {logs:?}");
        }
        f.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_sent_right_after_a_2025_subscription_to_a_2026_server_is_never_lost() {
    // Each round opens the front's stream on the server anew (the last
    // subscriber left), then triggers an update at once: the subscription's
    // answer must mean the server already has the stream.
    const ROUNDS: u64 = 100;
    let (f, at) = conf(EraPreference::Stateless, HttpGatewayConfig::new()).await;
    let sid = at.session(SINGLE, &[], json!({})).await;
    let get = at
        .send(
            "GET",
            SINGLE,
            &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
            None,
        )
        .await;
    let mut events = get.sse();
    let mut missed = Vec::new();
    for round in 0..ROUNDS {
        let id = 10 * round;
        let uri = json!({ "uri": "test://watched-resource" });
        let sub = at
            .legacy(
                SINGLE,
                &sid,
                &[],
                id + 1,
                "resources/subscribe",
                uri.clone(),
            )
            .await
            .json()
            .await;
        assert!(sub["result"].is_object(), "round {round}: {sub}");
        let r = at
            .legacy(
                SINGLE,
                &sid,
                &[],
                id + 2,
                "tools/call",
                json!({ "name": "test_trigger_resource_update", "arguments": {} }),
            )
            .await
            .json()
            .await;
        assert!(r["result"].is_object(), "round {round}: {r}");
        let unsub = at
            .legacy(SINGLE, &sid, &[], id + 3, "resources/unsubscribe", uri)
            .await
            .json()
            .await;
        assert!(unsub["result"].is_object(), "round {round}: {unsub}");
        // The update of this round, if any, is on the stream by now (it
        // came before the trigger's answer); a ping marks the round's end.
        let _ = at
            .legacy(SINGLE, &sid, &[], id + 4, "ping", json!({}))
            .await
            .json()
            .await;
        let mut got = false;
        while let Ok(Some(n)) =
            tokio::time::timeout(Duration::from_secs(5), events.next_message()).await
        {
            if n["method"] == "notifications/resources/updated" {
                got = true;
                break;
            }
        }
        if !got {
            missed.push(round);
        }
    }
    assert!(
        missed.is_empty(),
        "updates lost in rounds {missed:?} of {ROUNDS}"
    );
    f.shutdown().await;
}

// ------------------------------------------- subscriptions belong to sessions

const WATCHED: &str = "test://watched-resource";
const ALICE: [(&str, &str); 1] = [("authorization", "Bearer alice-token-0123456789")];
const BOB: [(&str, &str); 1] = [("authorization", "Bearer bob-token-0123456789ab")];

/// Alice and Bob, each with a token of their own and every server.
fn alice_and_bob() -> Auth {
    Auth::Clients(vec![
        ClientGrant::new("alice", Secret::new("alice-token-0123456789")).server("*", ["*"]),
        ClientGrant::new("bob", Secret::new("bob-token-0123456789ab")).server("*", ["*"]),
    ])
}

/// The trigger of `WATCHED`'s update under `path`'s names.
fn trigger_tool(path: &str) -> &'static str {
    if path == SINGLE {
        "test_trigger_resource_update"
    } else {
        "conf__test_trigger_resource_update"
    }
}

/// Whether an update of `uri` comes on `events` within `within` (other
/// messages are skipped).
async fn updated(events: &mut gateway_support::http::Events, uri: &str, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, events.next_message()).await {
            Ok(Some(n))
                if n["method"] == "notifications/resources/updated"
                    && n["params"]["uri"] == uri =>
            {
                return true
            }
            Ok(Some(_)) => {}
            _ => return false,
        }
    }
}

/// A 2025-11-25 request in session `sid` at `path`: its answer, and how
/// long it took.
async fn timed(
    at: &At,
    path: &str,
    sid: &str,
    who: &[(&str, &str)],
    id: u64,
    method: &str,
    params: Value,
) -> (Value, Duration) {
    let t = std::time::Instant::now();
    let v = at
        .legacy(path, sid, who, id, method, params)
        .await
        .json()
        .await;
    (v, t.elapsed())
}

/// The session's GET stream.
async fn get_stream(
    at: &At,
    path: &str,
    sid: &str,
    who: &[(&str, &str)],
) -> gateway_support::http::Events {
    let mut h = vec![("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)];
    h.extend_from_slice(who);
    let get = at.send("GET", path, &h, None).await;
    assert_eq!(get.status, 200, "GET {path}");
    get.sse()
}

/// Ends session `sid` with DELETE.
async fn delete(at: &At, path: &str, sid: &str, who: &[(&str, &str)]) {
    let mut h = vec![("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)];
    h.extend_from_slice(who);
    let r = at.send("DELETE", path, &h, None).await;
    assert!(r.status < 300, "DELETE {path}: {}", r.status);
}

#[tokio::test]
async fn a_session_unsubscribes_only_what_it_subscribed() {
    // Alice subscribes (twice: one subscription); Bob, another client,
    // unsubscribes what he never subscribed, then subscribes and
    // unsubscribes once more, then ends his session: Alice still gets
    // her updates.
    let mut lost = Vec::new();
    for era in [EraPreference::Stateless, EraPreference::Stateful] {
        let (f, at) = conf(era, HttpGatewayConfig::new().auth(alice_and_bob())).await;
        for path in [SINGLE, "/mcp"] {
            let alice = at.session(path, &ALICE, json!({})).await;
            for id in [1, 2] {
                let (sub, _) = timed(
                    &at,
                    path,
                    &alice,
                    &ALICE,
                    id,
                    "resources/subscribe",
                    json!({ "uri": WATCHED }),
                )
                .await;
                assert!(sub["result"].is_object(), "{era:?} {path}: {sub}");
            }
            let mut events = get_stream(&at, path, &alice, &ALICE).await;
            let call = json!({ "name": trigger_tool(path), "arguments": {} });
            let r = at
                .legacy(path, &alice, &ALICE, 3, "tools/call", call.clone())
                .await
                .json()
                .await;
            assert!(r["result"].is_object(), "{r}");
            let before = updated(&mut events, WATCHED, Duration::from_secs(5)).await;
            assert!(before, "{era:?} {path}: no update before Bob's unsubscribe");
            let bob = at.session(path, &BOB, json!({})).await;
            for (id, m) in [
                (11, "resources/unsubscribe"),
                (12, "resources/subscribe"),
                (13, "resources/unsubscribe"),
                (14, "resources/unsubscribe"),
            ] {
                let (r, _) = timed(&at, path, &bob, &BOB, id, m, json!({ "uri": WATCHED })).await;
                assert!(r["result"].is_object(), "{era:?} {path} {m}: {r}");
            }
            delete(&at, path, &bob, &BOB).await;
            let r = at
                .legacy(path, &alice, &ALICE, 4, "tools/call", call)
                .await
                .json()
                .await;
            assert!(r["result"].is_object(), "{r}");
            if !updated(&mut events, WATCHED, Duration::from_secs(5)).await {
                lost.push(format!("{era:?} server, {path}"));
            }
        }
        f.shutdown().await;
    }
    assert!(
        lost.is_empty(),
        "Alice got 1 update before Bob's unsubscribe and 0 after, in: {lost:?}"
    );
}

/// A session fills the server's watches with junk and ends (DELETE, then
/// idle expiry): the next client's subscription opens and gets updates.
async fn watches_go_with_their_session(era: EraPreference) {
    let mut config = HttpGatewayConfig::new().auth(alice_and_bob());
    config.http = config.http.session_idle_timeout(Duration::from_secs(1));
    let (f, at) = conf(era, config).await;
    let alice = at.session(SINGLE, &ALICE, json!({})).await;
    // Her GET stream keeps her session from expiring.
    let mut events = get_stream(&at, SINGLE, &alice, &ALICE).await;
    let fill = |first: u64| {
        let at = &at;
        async move {
            let bob = at.session(SINGLE, &BOB, json!({})).await;
            let mut held = 0;
            for i in 0..1000 {
                let uri = format!("test://junk/{first}/{i}");
                let (r, took) = timed(
                    at,
                    SINGLE,
                    &bob,
                    &BOB,
                    100 + i,
                    "resources/subscribe",
                    json!({ "uri": uri }),
                )
                .await;
                // Generous: only a subscription that hangs fails.
                assert!(
                    took < gateway_support::PATIENCE,
                    "{era:?}: Bob's subscription #{} answered after {:.1} s: {r}",
                    i + 1,
                    took.as_secs_f64()
                );
                if r.get("error").is_some() {
                    let text = r["error"]["message"].as_str().unwrap_or_default();
                    assert!(text.contains("watches"), "{era:?}: {r}");
                    break;
                }
                held += 1;
            }
            assert!(
                held < 1000,
                "{era:?}: {held} watches of one session, no bound"
            );
            (bob, held)
        }
    };
    let (bob, held) = fill(0).await;
    eprintln!("{era:?}: one session held {held} watches, then was refused");
    // While Bob holds every watch, the server still answers others.
    let t = std::time::Instant::now();
    let call = json!({ "name": "test_simple_text", "arguments": {} });
    let r = at
        .legacy(SINGLE, &alice, &ALICE, 1, "tools/call", call)
        .await
        .json()
        .await;
    assert!(r["result"].is_object(), "{era:?}: {r}");
    assert!(
        t.elapsed() < gateway_support::PATIENCE,
        "{era:?}: a call waited {:?} behind Bob's {held} watches",
        t.elapsed()
    );
    delete(&at, SINGLE, &bob, &BOB).await;
    let (sub, took) = timed(
        &at,
        SINGLE,
        &alice,
        &ALICE,
        2,
        "resources/subscribe",
        json!({ "uri": WATCHED }),
    )
    .await;
    assert!(
        sub["result"].is_object() && took < gateway_support::PATIENCE,
        "{era:?}: after Bob's DELETE Alice's subscription answered {sub} after {:.1} s",
        took.as_secs_f64()
    );
    let call = json!({ "name": "test_trigger_resource_update", "arguments": {} });
    let r = at
        .legacy(SINGLE, &alice, &ALICE, 3, "tools/call", call)
        .await
        .json()
        .await;
    assert!(r["result"].is_object(), "{r}");
    assert!(
        updated(&mut events, WATCHED, Duration::from_secs(5)).await,
        "{era:?}: 0 updates after Bob's session was deleted"
    );
    // Bob again, his session then left idle until it expires.
    let (_idle, _) = fill(1).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut id = 10;
    loop {
        id += 1;
        let uri = json!({ "uri": format!("test://after-expiry/{id}") });
        let (r, _) = timed(&at, SINGLE, &alice, &ALICE, id, "resources/subscribe", uri).await;
        if r["result"].is_object() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{era:?}: Bob's expired session still holds the watches: {r}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    f.shutdown().await;
}

#[tokio::test]
async fn a_sessions_watches_of_a_2026_server_go_with_the_session() {
    watches_go_with_their_session(EraPreference::Stateless).await;
}

#[tokio::test]
async fn a_sessions_subscriptions_on_a_legacy_server_go_with_the_session() {
    watches_go_with_their_session(EraPreference::Stateful).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_the_server_does_not_acknowledge_is_an_error_not_an_empty_result() {
    let (f, at) = conf(EraPreference::Stateless, HttpGatewayConfig::new()).await;
    // 2026-07-28 streams, each passed on to the server, until the server
    // has no slot left for another (one is not acknowledged).
    let listen = json!({ "notifications": { "toolsListChanged": true } });
    let mut held = Vec::new();
    loop {
        assert!(
            held.len() < 500,
            "the server never ran out of request slots"
        );
        let id = 1000 + held.len() as u64;
        let open = at.modern(SINGLE, &[], id, "subscriptions/listen", listen.clone());
        // The answer starts with the acknowledgement.
        let Ok(r) = tokio::time::timeout(Duration::from_secs(3), open).await else {
            break;
        };
        let mut events = r.sse();
        let ack = events.next_message().await.expect("an acknowledgement");
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        held.push(events);
    }
    let sid = at.session(SINGLE, &[], json!({})).await;
    let (sub, took) = timed(
        &at,
        SINGLE,
        &sid,
        &[],
        1,
        "resources/subscribe",
        json!({ "uri": WATCHED }),
    )
    .await;
    let message = sub["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("conf") && message.contains("acknowledge"),
        "with {} of the server's request slots taken, the subscription answered {sub} after {:.1} s",
        held.len(),
        took.as_secs_f64()
    );
    eprintln!(
        "{} slots taken: the subscription answered {sub} after {:.1} s",
        held.len(),
        took.as_secs_f64()
    );
    // Nothing of the failed one stays: once the slots are free, the
    // subscription opens and its updates come.
    drop(held);
    let mut events = get_stream(&at, SINGLE, &sid, &[]).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut id = 1;
    loop {
        id += 1;
        let (sub, _) = timed(
            &at,
            SINGLE,
            &sid,
            &[],
            id,
            "resources/subscribe",
            json!({ "uri": WATCHED }),
        )
        .await;
        if sub["result"].is_object() {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{sub}");
    }
    let call = json!({ "name": "test_trigger_resource_update", "arguments": {} });
    let r = at
        .legacy(SINGLE, &sid, &[], 100, "tools/call", call)
        .await
        .json()
        .await;
    assert!(r["result"].is_object(), "{r}");
    assert!(updated(&mut events, WATCHED, Duration::from_secs(5)).await);
    f.shutdown().await;
}

#[tokio::test]
async fn a_2026_clients_resource_subscription_is_its_own() {
    // Alice's 2026-07-28 stream names the resource; Bob, a 2025-11-25
    // session, subscribes and unsubscribes it and leaves: Alice's stream
    // still gets its updates, whatever the server's era.
    let mut lost = Vec::new();
    for era in [EraPreference::Stateless, EraPreference::Stateful] {
        let (f, at) = conf(era, HttpGatewayConfig::new().auth(alice_and_bob())).await;
        for path in ["/mcp", SINGLE] {
            let listen = json!({ "notifications": { "resourceSubscriptions": [WATCHED] } });
            let mut events = at
                .modern(path, &ALICE, 1, "subscriptions/listen", listen)
                .await
                .sse();
            let ack = events.next_message().await.expect("an acknowledgement");
            assert_eq!(
                ack["method"], "notifications/subscriptions/acknowledged",
                "{ack}"
            );
            assert_eq!(
                ack["params"]["notifications"]["resourceSubscriptions"],
                json!([WATCHED]),
                "{era:?} {path}: {ack}"
            );
            let bob = at.session(path, &BOB, json!({})).await;
            for (id, m) in [(1, "resources/subscribe"), (2, "resources/unsubscribe")] {
                let (r, _) = timed(&at, path, &bob, &BOB, id, m, json!({ "uri": WATCHED })).await;
                assert!(r["result"].is_object(), "{era:?} {path} {m}: {r}");
            }
            delete(&at, path, &bob, &BOB).await;
            let r = at
                .modern(
                    path,
                    &ALICE,
                    2,
                    "tools/call",
                    json!({ "name": trigger_tool(path), "arguments": {} }),
                )
                .await
                .json()
                .await;
            assert!(r["result"].is_object(), "{r}");
            if !updated(&mut events, WATCHED, Duration::from_secs(5)).await {
                lost.push(format!("{era:?} server, {path}"));
            }
        }
        f.shutdown().await;
    }
    assert!(
        lost.is_empty(),
        "Alice's 2026-07-28 stream got 0 updates in: {lost:?}"
    );
}

#[tokio::test]
async fn a_subscription_outlives_a_restart_of_its_server() {
    let mut lost = Vec::new();
    for era in [EraPreference::Stateless, EraPreference::Stateful] {
        let (f, at) = conf(era, HttpGatewayConfig::new()).await;
        let sid = at.session(SINGLE, &[], json!({})).await;
        let (sub, _) = timed(
            &at,
            SINGLE,
            &sid,
            &[],
            1,
            "resources/subscribe",
            json!({ "uri": WATCHED }),
        )
        .await;
        assert!(sub["result"].is_object(), "{sub}");
        let mut events = get_stream(&at, SINGLE, &sid, &[]).await;
        let client = f.host().client("conf").expect("the server's client");
        let pid = client.session().and_then(|s| s.pid).expect("a pid");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while client
            .session()
            .and_then(|s| s.pid)
            .is_none_or(|p| p == pid)
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{era:?}: the server did not restart"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The front sees the new process ready, then calls it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut got = false;
        let mut id = 10;
        while !got && tokio::time::Instant::now() < deadline {
            id += 1;
            let call = json!({ "name": "test_trigger_resource_update", "arguments": {} });
            let r = at
                .legacy(SINGLE, &sid, &[], id, "tools/call", call)
                .await
                .json()
                .await;
            if r["result"].is_object() {
                got = updated(&mut events, WATCHED, Duration::from_secs(2)).await;
            }
        }
        if !got {
            lost.push(format!("{era:?}"));
        }
        f.shutdown().await;
    }
    assert!(
        lost.is_empty(),
        "0 updates after the server's restart, servers: {lost:?}"
    );
}

// ------------------------------------------- each era's members, and only those

/// The official JSON Schema of MCP `version` (tests/spec).
fn spec(version: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/spec")
        .join(version)
        .join("schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// How `v` breaks the definition `def` of `schema`.
fn violations(schema: &Value, def: &str, v: &Value) -> Vec<String> {
    let mut root = schema.clone();
    root["$ref"] = json!(format!("#/$defs/{def}"));
    let validator = jsonschema::validator_for(&root).expect("the schema compiles");
    validator
        .iter_errors(v)
        .map(|e| format!("{def}: {e} at {}", e.instance_path()))
        .collect()
}

/// The members the definition `def` of `schema` names.
fn members(schema: &Value, def: &str) -> std::collections::BTreeSet<String> {
    schema["$defs"][def]["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The `io.modelcontextprotocol/` keys `schema` names.
fn namespace_keys(schema: &Value) -> std::collections::BTreeSet<String> {
    let text = schema.to_string();
    text.split("io.modelcontextprotocol/")
        .skip(1)
        .map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            format!("io.modelcontextprotocol/{name}")
        })
        .collect()
}

/// What an answer `v` (a `def` result) in front of `own` carries that
/// only `other` defines: top-level members, its tools' members, and
/// `_meta` keys of the namespace that `own` does not name.
fn foreign(own: &Value, other: &Value, def: &str, v: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let only = |d: &str| &members(other, d) - &members(own, d);
    let result = &v["result"];
    for m in only(def) {
        if result.get(&m).is_some() {
            found.push(m);
        }
    }
    let tool_only = only("Tool");
    for t in result["tools"].as_array().into_iter().flatten() {
        for m in &tool_only {
            if t.get(m).is_some() {
                found.push(format!("tools[].{m}"));
            }
        }
    }
    let known = namespace_keys(own);
    for k in result["_meta"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
    {
        if k.starts_with("io.modelcontextprotocol/") && !known.contains(k) {
            found.push(format!("_meta.{k}"));
        }
    }
    found
}

#[tokio::test]
async fn every_answer_has_its_front_eras_members_and_no_others() {
    let legacy_schema = spec("2025-11-25");
    let modern_schema = spec("2026-07-28");
    let mut problems = Vec::new();
    let (mut answers, mut with_result_type) = (0, 0);
    for server in [EraPreference::Stateful, EraPreference::Stateless] {
        let (f, at) = conf(server, HttpGatewayConfig::new()).await;
        for path in [SINGLE, "/mcp"] {
            let name = |n: &str| {
                if path == SINGLE {
                    n.to_owned()
                } else {
                    format!("conf__{n}")
                }
            };
            let calls = [
                ("tools/list", json!({}), "ListToolsResult"),
                (
                    "tools/call",
                    json!({ "name": name("test_simple_text"), "arguments": {} }),
                    "CallToolResult",
                ),
                ("prompts/list", json!({}), "ListPromptsResult"),
                (
                    "prompts/get",
                    json!({ "name": name("test_simple_prompt") }),
                    "GetPromptResult",
                ),
                ("resources/list", json!({}), "ListResourcesResult"),
                (
                    "resources/templates/list",
                    json!({}),
                    "ListResourceTemplatesResult",
                ),
                (
                    "resources/read",
                    json!({ "uri": "test://static-text" }),
                    "ReadResourceResult",
                ),
                (
                    "completion/complete",
                    json!({ "ref": { "type": "ref/prompt", "name": name("test_prompt_with_arguments") },
                            "argument": { "name": "arg1", "value": "pa" } }),
                    "CompleteResult",
                ),
            ];
            let sid = at.session(path, &[], json!({})).await;
            for (i, (method, params, def)) in calls.into_iter().enumerate() {
                let id = 10 + i as u64;
                for front in [LEGACY, gateway_support::MODERN] {
                    let v = if front == LEGACY {
                        at.legacy(path, &sid, &[], id, method, params.clone())
                            .await
                            .json()
                            .await
                    } else {
                        at.modern(path, &[], id, method, params.clone())
                            .await
                            .json()
                            .await
                    };
                    let (own, other) = if front == LEGACY {
                        (&legacy_schema, &modern_schema)
                    } else {
                        (&modern_schema, &legacy_schema)
                    };
                    let at_what = format!("{server:?} server, {path}, {front} {method}");
                    if v.get("result").is_none() {
                        problems.push(format!("{at_what}: {v}"));
                        continue;
                    }
                    answers += 1;
                    if front == LEGACY && v["result"].get("resultType").is_some() {
                        with_result_type += 1;
                    }
                    let mut wrong = violations(own, "JSONRPCResultResponse", &v);
                    wrong.extend(violations(own, def, &v["result"]));
                    wrong.extend(
                        foreign(own, other, def, &v)
                            .into_iter()
                            .map(|m| format!("{m}, which only the other era defines")),
                    );
                    for w in wrong {
                        problems.push(format!("{at_what}: {w}"));
                    }
                }
            }
        }
        f.shutdown().await;
    }
    assert!(
        problems.is_empty(),
        "{with_result_type} 2025-11-25 answers of {} carried resultType; {} problems:\n{}",
        answers / 2,
        problems.len(),
        problems.join("\n")
    );
    assert_eq!(
        answers, 64,
        "an answer per method, path, server and front era"
    );
}

// ------------------------------------------ one endpoint serves every client

/// Whether session `sid` still answers `who` at `path`.
async fn answers(at: &At, path: &str, sid: &str, who: &[(&str, &str)]) -> bool {
    at.legacy(path, sid, who, 90, "ping", json!({}))
        .await
        .status
        == 200
}

#[tokio::test]
async fn the_session_table_bounds_every_client_together_not_each_token_alone() {
    let mut config = HttpGatewayConfig::new().auth(alice_and_bob());
    config.http = config.http.max_sessions(2);
    let (f, at) = conf(EraPreference::Stateless, config).await;
    for path in [SINGLE, "/mcp"] {
        let a1 = at.session(path, &ALICE, json!({})).await;
        let a2 = at.session(path, &ALICE, json!({})).await;
        // The table is full: Bob's initialize is refused, and no session of
        // Alice's ends for it.
        let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": { "name": "t", "version": "0" } } });
        let bob = at.send("POST", path, &BOB, Some(&init)).await.status;
        let live = [
            answers(&at, path, &a1, &ALICE).await,
            answers(&at, path, &a2, &ALICE).await,
        ];
        common::figure(
            &format!("gateway {path}: Bob's initialize after Alice's 2 sessions, max_sessions 2"),
            format!("{bob}, Alice's sessions live: {live:?}"),
        );
        assert_eq!((bob, live), (503, [true, true]), "{path}");
        // One service for both: Alice's session is still not Bob's.
        assert!(!answers(&at, path, &a2, &BOB).await, "{path}");
        for sid in [&a1, &a2] {
            delete(&at, path, sid, &ALICE).await;
        }
    }
    f.shutdown().await;
}

#[tokio::test]
async fn two_clients_built_with_one_name_do_not_share_sessions() {
    let auth = Auth::Clients(vec![
        ClientGrant::new("alice", Secret::new("alice-token-0123456789")).server("*", ["*"]),
        ClientGrant::new("alice", Secret::new("bob-token-0123456789ab")).server("*", ["*"]),
    ]);
    let (f, at) = conf(
        EraPreference::Stateless,
        HttpGatewayConfig::new().auth(auth),
    )
    .await;
    for path in [SINGLE, "/mcp"] {
        let first = at.session(path, &ALICE, json!({})).await;
        assert!(answers(&at, path, &first, &ALICE).await, "{path}");
        assert!(
            !answers(&at, path, &first, &BOB).await,
            "{path}: the second `alice` used the first one's session"
        );
    }
    f.shutdown().await;
}
