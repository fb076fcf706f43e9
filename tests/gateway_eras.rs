//! Across eras through the gateway: a 2026-07-28 client and a 2025-11-25
//! session, each in front of a legacy and a 2026-07-28 server (the
//! conformance example over stdio, its era forced). Sampling crosses as
//! `input_required` rounds or SSE requests; progress, logs and
//! cancellation pass through; what cannot be translated is a clear error.

mod gateway_support;

#[path = "interop/example_bin.rs"]
mod example_bin;

use std::time::Duration;

use conduit_mcp::host::front::{Auth, ClientGrant, FrontConfig, HttpFront};
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
    c.era = era;
    c
}

/// A front on 127.0.0.1:0 for `host`.
async fn front(host: HostConfig, config: FrontConfig) -> (HttpFront, At) {
    let f = HttpFront::start(host, config)
        .await
        .expect("the front starts");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = f.clone();
    tokio::spawn(async move { serving.serve(listener).await });
    (f, At { addr })
}

async fn conf(era: EraPreference, config: FrontConfig) -> (HttpFront, At) {
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
    let (f, at) = conf(EraPreference::Legacy, FrontConfig::new()).await;
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
        assert!(state.starts_with("conduit-gw."), "{state}");

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
    for era in [EraPreference::Legacy, EraPreference::Modern] {
        let (f, at) = conf(era, FrontConfig::new()).await;
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
    let (f, at) = conf(EraPreference::Legacy, FrontConfig::new()).await;
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
    let config = FrontConfig::new().input_timeout(Duration::from_millis(300));
    let (f, at) = conf(EraPreference::Legacy, config).await;
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
    let (f, at) = conf(EraPreference::Legacy, FrontConfig::new().auth(auth)).await;
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
        p["requestState"] = json!("conduit-gw.00000000000000000000000000000000");
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
    for era in [EraPreference::Legacy, EraPreference::Modern] {
        let (f, at) = conf(era, FrontConfig::new()).await;
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
    let (f, at) = front(host, FrontConfig::new()).await;
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
    let (f, at) = front(host, FrontConfig::new()).await;
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
    let (f, at) = conf(EraPreference::Modern, FrontConfig::new()).await;
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
    let (f, at) = conf(EraPreference::Modern, FrontConfig::new()).await;
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
    for era in [EraPreference::Legacy, EraPreference::Modern] {
        let (f, at) = conf(era, FrontConfig::new()).await;
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
    let (f, at) = conf(EraPreference::Modern, FrontConfig::new()).await;
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
