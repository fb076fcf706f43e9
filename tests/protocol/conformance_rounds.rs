//! The modern-era (2026-07-28) wire rules the conformance suite checks on
//! `conformance/server.rs`, sent as raw JSON-RPC lines over
//! `--stdio` with the exact `_meta`, keys and retries of the suite's
//! `input-required-result-*`, `server-stateless` and `caching` scenarios
//! (the crate's `Client` fulfils input rounds by itself, so it cannot send a
//! wrong key or a tampered state; `conformance_fixtures.rs` drives the same
//! fixtures with it).
//!
//! The example is built on demand (see `interop/example_bin.rs`).

#![cfg(unix)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const PATIENCE: Duration = Duration::from_secs(20);

use crate::example_bin;

fn example_binary() -> PathBuf {
    example_bin::example_bin("conformance_server")
        .expect("the conformance_server example could not be built")
}

/// The suite's `_meta` (`withRequestMeta`), with these client capabilities.
fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "conformance-test-client", "version": "1.0.0" },
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

fn suite_caps() -> Value {
    json!({ "sampling": {}, "elicitation": {}, "roots": { "listChanged": true } })
}

/// The suite's mock answers (`input-required-result-helpers.ts`).
fn accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

fn sampled(text: &str) -> Value {
    json!({ "role": "assistant", "content": { "type": "text", "text": text },
            "model": "test-model", "stopReason": "endTurn" })
}

fn roots() -> Value {
    json!({ "roots": [{ "uri": "file:///test/root", "name": "Test Root" }] })
}

/// The example over pipes, spoken to in raw lines.
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: i64,
}

impl Peer {
    fn spawn() -> Peer {
        let mut child = Command::new(example_binary())
            .arg("--stdio")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the example");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Peer {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    /// Sends `method` with `params` (its `_meta` defaulting to the suite's,
    /// keys already there winning, as `withRequestMeta` does); returns the
    /// response and the notifications sent before it.
    async fn send(&mut self, method: &str, mut params: Value) -> (Value, Vec<Value>) {
        let mut m = meta(suite_caps());
        if let Some(given) = params.get("_meta").and_then(Value::as_object) {
            for (k, v) in given {
                m[k] = v.clone();
            }
        }
        params["_meta"] = m;
        self.raw(method, params).await
    }

    /// Sends `params` exactly as given.
    async fn raw(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
        let mut before = Vec::new();
        loop {
            let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
                .await
                .expect("no answer in time")
                .unwrap()
                .expect("the server closed its output");
            let m: Value = serde_json::from_str(&line).unwrap();
            if m.get("id") == Some(&json!(id)) && m.get("method").is_none() {
                return (m, before);
            }
            before.push(m);
        }
    }

    /// `tools/call name {}` plus `extra` params; the response.
    async fn call(&mut self, name: &str, extra: Value) -> Value {
        let mut params = json!({ "name": name, "arguments": {} });
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            params[k] = v;
        }
        self.send("tools/call", params).await.0
    }

    /// Closes stdin and waits for a clean exit.
    async fn finish(mut self) {
        self.stdin = None;
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("no exit on end of input")
            .unwrap();
        assert!(status.success(), "{status:?}");
    }
}

fn result(r: &Value) -> &Value {
    assert!(r.get("error").is_none(), "expected a result, got {r}");
    &r["result"]
}

fn input_required(r: &Value) -> &Value {
    let res = result(r);
    assert_eq!(res["resultType"], "input_required", "{r}");
    res
}

fn complete(r: &Value) -> &Value {
    let res = result(r);
    assert_eq!(res["resultType"], "complete", "{r}");
    res
}

fn first_key(res: &Value) -> String {
    res["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn basic_rounds_ask_under_the_suites_keys_and_complete_on_the_retry() {
    let mut p = Peer::spawn();
    // basic-elicitation: the key must be `user_name`.
    let tool = "test_input_required_result_elicitation";
    let r1 = p.call(tool, json!({})).await;
    let res = input_required(&r1);
    assert_eq!(
        res["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    assert_eq!(
        res["inputRequests"]["user_name"]["params"]["message"],
        "What is your name?"
    );
    let r2 = p
        .call(
            tool,
            json!({ "inputResponses": { "user_name": accept(json!({ "name": "Alice" })) } }),
        )
        .await;
    assert_eq!(complete(&r2)["content"][0]["text"], "Hello, Alice!");

    // basic-sampling and basic-list-roots: the first key's method.
    for (tool, method, answer, text) in [
        (
            "test_input_required_result_sampling",
            "sampling/createMessage",
            sampled("The capital of France is Paris."),
            "Sampling result: The capital of France is Paris.",
        ),
        (
            "test_input_required_result_list_roots",
            "roots/list",
            roots(),
            "Found 1 root(s)",
        ),
    ] {
        let r1 = p.call(tool, json!({})).await;
        let key = first_key(input_required(&r1));
        assert_eq!(input_required(&r1)["inputRequests"][&key]["method"], method);
        let r2 = p
            .call(tool, json!({ "inputResponses": { key: answer } }))
            .await;
        assert_eq!(complete(&r2)["content"][0]["text"], text);
    }

    // non-tool-request: prompts/get, then GetPromptResult messages.
    let (r1, _) = p
        .send(
            "prompts/get",
            json!({ "name": "test_input_required_result_prompt" }),
        )
        .await;
    let key = first_key(input_required(&r1));
    let (r2, _) = p
        .send(
            "prompts/get",
            json!({ "name": "test_input_required_result_prompt",
                    "inputResponses": { key: accept(json!({ "context": "test context" })) } }),
        )
        .await;
    assert_eq!(
        complete(&r2)["messages"][0]["content"]["text"],
        "Prompt with context: test context"
    );
    p.finish().await;
}

#[tokio::test]
async fn request_state_round_trips_and_changes_between_rounds() {
    let mut p = Peer::spawn();
    // request-state: inputRequests and a string requestState; state-ok after.
    let tool = "test_input_required_result_request_state";
    let r1 = p.call(tool, json!({})).await;
    let res = input_required(&r1).clone();
    let state = res["requestState"]
        .as_str()
        .expect("a string requestState")
        .to_owned();
    let key = first_key(&res);
    let r2 = p
        .call(tool, json!({ "inputResponses": { key: accept(json!({ "ok": true })) }, "requestState": state }))
        .await;
    assert_eq!(
        complete(&r2)["content"][0]["text"],
        "state-ok: requestState validated"
    );

    // multiple-input-requests: three keys, three methods, a state.
    let tool = "test_input_required_result_multiple_inputs";
    let r1 = p.call(tool, json!({})).await;
    let res = input_required(&r1).clone();
    assert!(res["requestState"].is_string());
    let reqs = res["inputRequests"].as_object().unwrap();
    let mut answers = serde_json::Map::new();
    let mut methods: Vec<&str> = Vec::new();
    for (k, req) in reqs {
        let m = req["method"].as_str().unwrap();
        methods.push(m);
        let a = match m {
            "elicitation/create" => accept(json!({ "name": "Alice" })),
            "sampling/createMessage" => sampled("Hello there!"),
            _ => roots(),
        };
        answers.insert(k.clone(), a);
    }
    methods.sort_unstable();
    assert_eq!(
        methods,
        ["elicitation/create", "roots/list", "sampling/createMessage"]
    );
    let r2 = p
        .call(
            tool,
            json!({ "inputResponses": answers, "requestState": res["requestState"] }),
        )
        .await;
    assert_eq!(
        complete(&r2)["content"][0]["text"],
        "Name: Alice; Greeting: Hello there!; Roots: 1"
    );

    // multi-round: a second input_required with a different state, then done.
    let tool = "test_input_required_result_multi_round";
    let r1 = p.call(tool, json!({})).await;
    let s1 = input_required(&r1)["requestState"].clone();
    let k1 = first_key(input_required(&r1));
    let r2 = p
        .call(tool, json!({ "inputResponses": { k1: accept(json!({ "name": "Alice" })) }, "requestState": s1 }))
        .await;
    let s2 = input_required(&r2)["requestState"].clone();
    assert!(s2.is_string() && s2 != s1, "{s1} -> {s2}");
    let k2 = first_key(input_required(&r2));
    let r3 = p
        .call(tool, json!({ "inputResponses": { k2: accept(json!({ "color": "blue" })) }, "requestState": s2 }))
        .await;
    assert_eq!(
        complete(&r3)["content"][0]["text"],
        "Multi-round complete for Alice who likes blue"
    );
    p.finish().await;
}

#[tokio::test]
async fn a_tampered_or_foreign_request_state_is_refused() {
    let mut p = Peer::spawn();
    let tool = "test_input_required_result_tampered_state";
    let r1 = p.call(tool, json!({})).await;
    let res = input_required(&r1).clone();
    let state = res["requestState"].as_str().unwrap().to_owned();
    let key = first_key(&res);
    let answer = json!({ key.clone(): accept(json!({ "ok": true })) });
    let r2 = p
        .call(
            tool,
            json!({ "inputResponses": answer, "requestState": format!("{state}-TAMPERED") }),
        )
        .await;
    assert_eq!(r2["error"]["code"], -32602, "{r2}");
    // A state sealed for another tool is refused too.
    let other = p
        .call("test_input_required_result_request_state", json!({}))
        .await;
    let foreign = input_required(&other)["requestState"].clone();
    let r3 = p
        .call(
            tool,
            json!({ "inputResponses": answer, "requestState": foreign }),
        )
        .await;
    assert_eq!(r3["error"]["code"], -32602, "{r3}");
    // The untouched state completes.
    let r4 = p
        .call(
            tool,
            json!({ "inputResponses": answer, "requestState": state }),
        )
        .await;
    assert!(complete(&r4)["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("integrity-ok"));
    p.finish().await;
}

#[tokio::test]
async fn wrong_extra_and_invalid_input_responses_are_handled_as_the_suite_expects() {
    let mut p = Peer::spawn();
    let tool = "test_input_required_result_elicitation";
    // missing-input-response: a wrong key is asked again, not an error.
    let r = p
        .call(
            tool,
            json!({ "inputResponses": { "wrong_key": accept(json!({ "data": "wrong" })) } }),
        )
        .await;
    assert!(input_required(&r)["inputRequests"]["user_name"].is_object());
    // ignore-extra-params: extra keys are ignored, no state needed.
    let r = p
        .call(
            tool,
            json!({ "inputResponses": {
                "user_name": accept(json!({ "name": "Alice" })),
                "unknown_extra_key": accept(json!({ "foo": "bar" })),
                "another_unexpected": accept(json!({ "baz": 123 })),
            } }),
        )
        .await;
    assert_eq!(complete(&r)["content"][0]["text"], "Hello, Alice!");
    // validate-input: a number is an invalid answer; null is no answer.
    let r = p
        .call(tool, json!({ "inputResponses": { "user_name": 12345 } }))
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = p.call(tool, json!({ "inputResponses": null })).await;
    input_required(&r);
    // result-type: explicit on the first round (checked by input_required).
    p.finish().await;
}

#[tokio::test]
async fn input_is_asked_only_of_declared_capabilities_and_only_where_allowed() {
    let mut p = Peer::spawn();
    // capability-check: sampling only -> no elicitation request.
    let r = p
        .call(
            "test_input_required_result_capabilities",
            json!({ "_meta": { "io.modelcontextprotocol/clientCapabilities": { "sampling": {} } } }),
        )
        .await;
    let reqs = input_required(&r)["inputRequests"]
        .as_object()
        .unwrap()
        .clone();
    assert!(
        reqs.values().all(|q| q["method"] != "elicitation/create"),
        "{reqs:?}"
    );
    assert!(reqs
        .values()
        .any(|q| q["method"] == "sampling/createMessage"));
    // unsupported-methods: lists never answer input_required.
    for method in ["tools/list", "prompts/list"] {
        let (r, _) = p.send(method, json!({})).await;
        assert_eq!(result(&r)["resultType"], "complete", "{method}");
    }
    // server-stateless: test_missing_capability without sampling: -32021
    // naming it as a ClientCapabilities object.
    let r = p
        .call(
            "test_missing_capability",
            json!({ "_meta": { "io.modelcontextprotocol/clientCapabilities": {} } }),
        )
        .await;
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({ "sampling": {} })
    );
    // test_streaming_elicitation: a result frame, never a request.
    let (r, before) = p
        .send(
            "tools/call",
            json!({ "name": "test_streaming_elicitation", "arguments": {},
                    "_meta": { "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } } }),
        )
        .await;
    input_required(&r);
    assert!(before.iter().all(|m| m.get("id").is_none()), "{before:?}");
    p.finish().await;
}

#[tokio::test]
async fn modern_notifications_follow_the_requests_meta() {
    let mut p = Peer::spawn();
    // server-stateless: no log without _meta logLevel.
    let (r, before) = p
        .send("tools/call", json!({ "name": "test_logging_tool", "arguments": {},
                                    "_meta": { "io.modelcontextprotocol/clientCapabilities": {} } }))
        .await;
    result(&r);
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "notifications/message"),
        "{before:?}"
    );
    let (_, before) = p
        .send(
            "tools/call",
            json!({ "name": "test_logging_tool", "arguments": {},
                                    "_meta": { "io.modelcontextprotocol/logLevel": "info" } }),
        )
        .await;
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["params"]["level"], "info");
    // tools-call-with-progress: the caller's token, echoed, before the result.
    let (r, before) = p
        .send(
            "tools/call",
            json!({ "name": "test_tool_with_progress", "arguments": {},
                                    "_meta": { "progressToken": "progress-test-1" } }),
        )
        .await;
    assert_eq!(complete(&r)["content"][0]["text"], "progress-test-1");
    let steps: Vec<(Value, Value)> = before
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            (
                m["params"]["progressToken"].clone(),
                m["params"]["progress"].clone(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [0.0, 50.0, 100.0]
            .map(|v| (json!("progress-test-1"), json!(v)))
            .to_vec()
    );
    p.finish().await;
}

#[tokio::test]
async fn modern_results_carry_result_type_and_cache_hints_where_the_schema_wants_them() {
    let mut p = Peer::spawn();
    let (d, _) = p.send("server/discover", json!({})).await;
    let d = result(&d);
    assert!(d["supportedVersions"]
        .as_array()
        .unwrap()
        .contains(&json!("2026-07-28")));
    assert!(d["capabilities"]["tools"].is_object() && d["capabilities"]["prompts"].is_object());
    assert!(d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());
    assert!(d["_meta"]["io.modelcontextprotocol/serverInfo"]["version"].is_string());
    for m in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ] {
        let (r, _) = p.send(m, json!({})).await;
        let r = complete(&r);
        assert!(r["ttlMs"].as_u64().is_some(), "{m}: {r}");
        assert!(
            ["public", "private"].contains(&r["cacheScope"].as_str().unwrap()),
            "{m}"
        );
    }
    // caching: resources/read of the first listed resource.
    let (list, _) = p.send("resources/list", json!({})).await;
    let first = result(&list)["resources"][0]["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    let (r, _) = p.send("resources/read", json!({ "uri": first })).await;
    let r = complete(&r);
    assert!(
        r["ttlMs"].as_u64().is_some() && r["cacheScope"].is_string(),
        "{r}"
    );
    // Every other result says complete.
    let (r, _) = p
        .send(
            "completion/complete",
            json!({ "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" },
                                              "argument": { "name": "arg1", "value": "test" } }),
        )
        .await;
    assert_eq!(complete(&r)["completion"]["values"], json!([]));
    let (r, _) = p
        .send("prompts/get", json!({ "name": "test_simple_prompt" }))
        .await;
    complete(&r);
    p.finish().await;
}
