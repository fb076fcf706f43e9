//! `conformance/server.rs` over `--stdio`, driven by this crate's
//! own `Client` in both eras, checked fixture by fixture against what the
//! official conformance suite checks over HTTP (its scenarios under
//! `src/scenarios/server/`): names, content types and texts,
//! notifications, input from the client, subscriptions and list changes.
//! The wire-level rules of the modern era (input-required keys, request
//! state, error codes) are in `conformance_rounds.rs`.
//!
//! The example is built on demand (see `interop/example_bin.rs`).

#![cfg(unix)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conduit_mcp::protocol::{
    CompleteParams, LoggingLevel, Reference, ServerNotification, SubscriptionFilter,
};
use conduit_mcp::{
    Client, ClientConfig, Era, EraPreference, ErrorObject, InboundRequest, RequestOptions,
    StartOptions, StderrMode,
};
use serde_json::{json, Value};
use tokio::sync::mpsc;

const PATIENCE: Duration = Duration::from_secs(20);
const ERAS: [(EraPreference, Era); 2] = [
    (EraPreference::Stateful, Era::Stateful),
    (EraPreference::Stateless, Era::Stateless),
];

use crate::example_bin;

fn example_binary() -> PathBuf {
    example_bin::example_bin("conformance_server")
        .expect("the conformance_server example could not be built")
}

/// The capabilities the suite's clients declare.
fn suite_capabilities() -> Value {
    json!({ "sampling": {}, "elicitation": {}, "roots": { "listChanged": true } })
}

/// What the suite's mock client answers to an elicitation, by field name
/// (the values its scenarios send).
fn elicited(field: &str, schema: &Value) -> Value {
    let has = |k: &str| schema["properties"].get(k).is_some();
    match field {
        "username" => json!("testuser"),
        "email" => json!("test@example.com"),
        "name" if has("age") => json!("Jane Smith"),
        "name" => json!("Alice"),
        "age" => json!(25),
        "score" => json!(88.0),
        "status" => json!("inactive"),
        "verified" => json!(false),
        "untitledSingle" => json!("option1"),
        "titledSingle" => json!("value1"),
        "legacyEnum" => json!("opt1"),
        "untitledMulti" => json!(["option1", "option2"]),
        "titledMulti" => json!(["value1", "value2"]),
        "color" => json!("blue"),
        "ok" => json!(true),
        "context" => json!("test context"),
        _ => json!("anything"),
    }
}

/// Answers server-to-client requests (legacy) and input requests (modern)
/// as the suite's mock client does, recording each.
fn suite_answer(req: &InboundRequest) -> Result<Value, ErrorObject> {
    let params = req.params.clone().unwrap_or(Value::Null);
    match req.method.as_str() {
        "sampling/createMessage" => Ok(json!({
            "role": "assistant",
            "content": { "type": "text", "text": "This is a test response from the client" },
            "model": "test-model",
            "stopReason": "endTurn",
        })),
        "elicitation/create" => {
            let schema = &params["requestedSchema"];
            let content: serde_json::Map<String, Value> = schema["properties"]
                .as_object()
                .map(|p| p.keys().map(|k| (k.clone(), elicited(k, schema))).collect())
                .unwrap_or_default();
            Ok(json!({ "action": "accept", "content": content }))
        }
        "roots/list" => {
            Ok(json!({ "roots": [{ "uri": "file:///test/root", "name": "Test Root" }] }))
        }
        "ping" => Ok(json!({})),
        m => Err(ErrorObject::new(-32601, format!("unsupported: {m}"))),
    }
}

/// A client of the example in one era, with what the server asked it.
struct Suite {
    client: Client,
    asked: Arc<Mutex<Vec<InboundRequest>>>,
}

impl Suite {
    async fn start(era: EraPreference, capabilities: Value, log: Option<LoggingLevel>) -> Suite {
        let mut config = ClientConfig::new(example_binary().to_string_lossy())
            .args(["--stdio"])
            .era(era)
            .env("RUST_LOG", "warn")
            .stderr(StderrMode::Discard)
            .request_timeout(PATIENCE);
        config = config.capabilities(serde_json::from_value(capabilities).unwrap());
        if let Some(level) = log {
            config = config.log_level(level);
        }
        let asked = Arc::new(Mutex::new(Vec::new()));
        let record = asked.clone();
        let handler = move |req: InboundRequest| {
            let answer = suite_answer(&req);
            record.lock().unwrap().push(req);
            async move { answer }
        };
        let opts = StartOptions::new().handler(handler);
        let client = Client::start_with(config, opts)
            .await
            .expect("client start");
        client.ready(PATIENCE).await.expect("ready");
        Suite { client, asked }
    }

    async fn both(era: EraPreference) -> Suite {
        Suite::start(era, suite_capabilities(), None).await
    }

    /// `tools/call` with `arguments`, as JSON.
    async fn call(&self, tool: &str, arguments: Value) -> Value {
        let r = self
            .client
            .call_tool(tool, arguments, RequestOptions::new())
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        serde_json::to_value(r).unwrap()
    }

    /// The requests the server sent to the client, by method, with params.
    fn asked(&self) -> Vec<(String, Value)> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .map(|r| (r.method.clone(), r.params.clone().unwrap_or(Value::Null)))
            .collect()
    }

    async fn stop(self) {
        tokio::time::timeout(PATIENCE, self.client.stop().wait())
            .await
            .expect("client stop");
    }
}

/// The content items of `result` of `kind`.
fn items<'a>(result: &'a Value, kind: &str) -> Vec<&'a Value> {
    result["content"]
        .as_array()
        .map(|a| a.iter().filter(|c| c["type"] == kind).collect())
        .unwrap_or_default()
}

fn text_of(result: &Value) -> String {
    items(result, "text")
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn the_listed_fixtures_are_the_ones_the_suite_calls_in_both_eras() {
    let tools = [
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_tool_with_logging",
        "test_tool_with_progress",
        "test_error_handling",
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "test_dynamic_tool",
        "test_missing_capability",
        "test_streaming_elicitation",
        "test_logging_tool",
        "test_trigger_tool_change",
        "test_trigger_prompt_change",
        "test_input_required_result_elicitation",
        "test_input_required_result_sampling",
        "test_input_required_result_list_roots",
        "test_input_required_result_request_state",
        "test_input_required_result_multiple_inputs",
        "test_input_required_result_multi_round",
        "test_input_required_result_tampered_state",
        "test_input_required_result_capabilities",
        "json_schema_2020_12_tool",
    ];
    let prompts = [
        "test_simple_prompt",
        "test_prompt_with_arguments",
        "test_prompt_with_embedded_resource",
        "test_prompt_with_image",
        "test_input_required_result_prompt",
    ];
    for (pref, era) in ERAS {
        let s = Suite::both(pref).await;
        let session = s.client.session().expect("session");
        assert_eq!(session.era, era);
        let listed = s.client.list_tools().await.unwrap();
        let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
        for t in tools {
            assert!(names.contains(&t), "{era}: tool {t} not listed: {names:?}");
        }
        for t in &listed {
            // tools-list: a description and an object inputSchema; the
            // a12 name rule (SHOULD): 1-128 chars of [A-Za-z0-9_.-].
            assert!(
                !t.description.clone().unwrap_or_default().is_empty(),
                "{}",
                t.name
            );
            assert_eq!(t.input_schema["type"], "object", "{}", t.name);
            assert!(
                !t.name.is_empty()
                    && t.name.len() <= 128
                    && t.name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)),
                "{}",
                t.name
            );
        }
        // tools-list-deterministic-order: the same order twice.
        let again: Vec<String> = s
            .client
            .list_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, again.iter().map(String::as_str).collect::<Vec<_>>());
        // The raw 2020-12 schema is listed as written.
        let raw = listed
            .iter()
            .find(|t| t.name == "json_schema_2020_12_tool")
            .unwrap();
        assert_eq!(
            raw.input_schema["$defs"]["address"]["$anchor"],
            "addressDef"
        );
        assert_eq!(raw.input_schema["additionalProperties"], false);

        let listed = s.client.list_prompts().await.unwrap();
        let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
        for p in prompts {
            assert!(
                names.contains(&p),
                "{era}: prompt {p} not listed: {names:?}"
            );
        }
        assert!(listed
            .iter()
            .all(|p| !p.description.clone().unwrap_or_default().is_empty()));

        let uris: Vec<String> = s
            .client
            .list_resources()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.uri)
            .collect();
        for u in [
            "test://static-text",
            "test://static-binary",
            "test://watched-resource",
        ] {
            assert!(
                uris.iter().any(|x| x == u),
                "{era}: resource {u} not listed: {uris:?}"
            );
        }
        let templates = s.client.list_resource_templates().await.unwrap();
        assert_eq!(templates[0].uri_template, "test://template/{id}/data");
        s.stop().await;
    }
}

#[tokio::test]
async fn content_tools_answer_with_the_content_the_suite_checks_in_both_eras() {
    for (pref, era) in ERAS {
        let s = Suite::both(pref).await;
        let r = s.call("test_simple_text", json!({})).await;
        assert_eq!(
            text_of(&r),
            "This is a simple text response for testing.",
            "{era}"
        );

        let r = s.call("test_image_content", json!({})).await;
        let image = items(&r, "image")[0];
        assert_eq!(image["mimeType"], "image/png");
        assert!(image["data"].as_str().is_some_and(|d| !d.is_empty()));

        let r = s.call("test_audio_content", json!({})).await;
        let audio = items(&r, "audio")[0];
        assert_eq!(audio["mimeType"], "audio/wav", "{era}");
        assert!(audio["data"].as_str().is_some_and(|d| !d.is_empty()));

        let r = s.call("test_embedded_resource", json!({})).await;
        let res = &items(&r, "resource")[0]["resource"];
        assert_eq!(res["uri"], "test://embedded-resource");
        assert_eq!(res["mimeType"], "text/plain");
        assert_eq!(res["text"], "This is an embedded resource content.");

        let r = s.call("test_multiple_content_types", json!({})).await;
        let kinds: Vec<&str> = r["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert_eq!(kinds, ["text", "image", "resource"], "{era}");
        let res = &items(&r, "resource")[0]["resource"];
        assert_eq!(res["mimeType"], "application/json");
        let data: Value = serde_json::from_str(res["text"].as_str().unwrap()).unwrap();
        assert_eq!(data, json!({ "test": "data", "value": 123 }));

        // tools-call-error: a result with isError, not a JSON-RPC error.
        let r = s.call("test_error_handling", json!({})).await;
        assert_eq!(r["isError"], true, "{era}");
        assert_eq!(
            r["content"][0]["text"],
            "This tool intentionally returns an error for testing"
        );
        s.stop().await;
    }
}

#[tokio::test]
async fn the_progress_tool_reports_three_increasing_steps_of_100_in_both_eras() {
    for (pref, era) in ERAS {
        let s = Suite::both(pref).await;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let r = s
            .client
            .call_tool(
                "test_tool_with_progress",
                json!({}),
                RequestOptions::new().progress(tx),
            )
            .await
            .unwrap();
        assert!(!r.joined_text().is_empty());
        let mut steps = Vec::new();
        while let Ok(p) = rx.try_recv() {
            steps.push((p.progress, p.total));
        }
        assert_eq!(
            steps,
            [
                (0.0, Some(100.0)),
                (50.0, Some(100.0)),
                (100.0, Some(100.0))
            ],
            "{era}"
        );
        s.stop().await;
    }
}

/// The `notifications/message` entries received so far.
fn logs(notes: &mut conduit_mcp::Notifications) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(n) = notes.try_recv() {
        if n.method == "notifications/message" {
            out.push(n.params.unwrap_or(Value::Null));
        }
    }
    out
}

#[tokio::test]
async fn the_logging_tool_logs_three_info_messages_when_the_client_wants_them() {
    let steps = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    // Legacy: logging/setLevel debug, as tools-call-with-logging does.
    let s = Suite::both(EraPreference::Stateful).await;
    let mut notes = s.client.notifications();
    s.client.set_log_level(LoggingLevel::Debug).await.unwrap();
    s.call("test_tool_with_logging", json!({})).await;
    let got = logs(&mut notes);
    let data: Vec<&Value> = got.iter().map(|p| &p["data"]).collect();
    assert_eq!(data, steps.map(|t| json!(t)).iter().collect::<Vec<_>>());
    assert!(got.iter().all(|p| p["level"] == "info"), "{got:?}");
    s.stop().await;

    // Modern: nothing without _meta logLevel, the three with it.
    let s = Suite::both(EraPreference::Stateless).await;
    let mut notes = s.client.notifications();
    s.call("test_tool_with_logging", json!({})).await;
    assert_eq!(logs(&mut notes), Vec::<Value>::new());
    s.client.set_log_level(LoggingLevel::Debug).await.unwrap();
    s.call("test_tool_with_logging", json!({})).await;
    assert_eq!(logs(&mut notes).len(), 3);
    s.stop().await;
}

#[tokio::test]
async fn sampling_and_elicitation_tools_ask_the_client_in_both_eras() {
    for (pref, era) in ERAS {
        let s = Suite::both(pref).await;
        let r = s
            .call(
                "test_sampling",
                json!({ "prompt": "Test prompt for sampling" }),
            )
            .await;
        assert_eq!(
            text_of(&r),
            "LLM response: This is a test response from the client",
            "{era}"
        );
        let r = s
            .call(
                "test_elicitation",
                json!({ "message": "Please provide your information" }),
            )
            .await;
        assert!(
            text_of(&r).starts_with("User response: action=accept"),
            "{era}: {r}"
        );
        assert!(text_of(&r).contains("testuser"), "{era}: {r}");

        let asked = s.asked();
        let (m, p) = &asked[0];
        assert_eq!(m, "sampling/createMessage");
        assert_eq!(p["messages"][0]["role"], "user");
        assert_eq!(
            p["messages"][0]["content"]["text"],
            "Test prompt for sampling"
        );
        assert_eq!(p["maxTokens"], 100);
        let (m, p) = &asked[1];
        assert_eq!(m, "elicitation/create");
        assert_eq!(p["message"], "Please provide your information");
        assert_eq!(
            p["requestedSchema"]["required"],
            json!(["username", "email"])
        );
        s.stop().await;
    }
}

#[tokio::test]
async fn elicitation_schemas_carry_the_sep1034_defaults_and_sep1330_enum_shapes() {
    for (pref, era) in ERAS {
        let s = Suite::both(pref).await;
        let r = s.call("test_elicitation_sep1034_defaults", json!({})).await;
        assert!(
            text_of(&r).starts_with("Elicitation completed: action=accept"),
            "{era}: {r}"
        );
        let r = s.call("test_elicitation_sep1330_enums", json!({})).await;
        assert!(
            text_of(&r).starts_with("Elicitation completed: action=accept"),
            "{era}: {r}"
        );

        let asked = s.asked();
        let defaults = &asked[0].1["requestedSchema"]["properties"];
        let expect = [
            ("name", "string", json!("John Doe")),
            ("age", "integer", json!(30)),
            ("score", "number", json!(95.5)),
            ("status", "string", json!("active")),
            ("verified", "boolean", json!(true)),
        ];
        for (field, kind, default) in expect {
            assert_eq!(defaults[field]["type"], kind, "{era}: {field}");
            assert_eq!(defaults[field]["default"], default, "{era}: {field}");
        }
        assert!(defaults["status"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("active")));

        let enums = &asked[1].1["requestedSchema"]["properties"];
        let single = &enums["untitledSingle"];
        assert_eq!(single["type"], "string");
        assert!(
            single["enum"].is_array()
                && single.get("oneOf").is_none()
                && single.get("enumNames").is_none()
        );
        let titled = &enums["titledSingle"];
        assert_eq!(titled["type"], "string");
        assert!(titled.get("enum").is_none());
        assert!(titled["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["const"].is_string() && o["title"].is_string()));
        let legacy = &enums["legacyEnum"];
        assert_eq!(
            legacy["enum"].as_array().unwrap().len(),
            legacy["enumNames"].as_array().unwrap().len()
        );
        let multi = &enums["untitledMulti"];
        assert_eq!(multi["type"], "array");
        assert_eq!(multi["items"]["type"], "string");
        assert!(multi["items"]["enum"].is_array() && multi["items"].get("anyOf").is_none());
        let titled_multi = &enums["titledMulti"];
        assert_eq!(titled_multi["type"], "array");
        assert!(titled_multi["items"].get("enum").is_none());
        assert!(titled_multi["items"]["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["const"].is_string() && o["title"].is_string()));
        s.stop().await;
    }
}

#[tokio::test]
async fn the_input_required_fixtures_complete_through_the_client_in_both_eras() {
    let expected = [
        ("test_input_required_result_elicitation", "Hello, Alice!"),
        (
            "test_input_required_result_sampling",
            "Sampling result: This is a test response from the client",
        ),
        ("test_input_required_result_list_roots", "Found 1 root(s)"),
        (
            "test_input_required_result_multiple_inputs",
            "Name: Alice; Greeting: This is a test response from the client; Roots: 1",
        ),
        (
            "test_input_required_result_multi_round",
            "Multi-round complete for Alice who likes blue",
        ),
        (
            "test_input_required_result_capabilities",
            "capabilities-ok: received elicit_input,sample_input",
        ),
    ];
    for (pref, era) in ERAS {
        let s = Suite::both(pref).await;
        for (tool, text) in expected {
            let r = s.call(tool, json!({})).await;
            assert_eq!(text_of(&r), text, "{era}: {tool}");
        }
        // The state round trip exists in the modern era only.
        let r = s
            .call("test_input_required_result_request_state", json!({}))
            .await;
        let want = match era {
            Era::Stateless => "state-ok: requestState validated",
            Era::Stateful => "confirmed (no requestState in this era)",
        };
        assert_eq!(text_of(&r), want);
        let r = s
            .call("test_input_required_result_tampered_state", json!({}))
            .await;
        assert!(text_of(&r).starts_with("integrity-ok"), "{era}: {r}");
        let p = s
            .client
            .get_prompt("test_input_required_result_prompt", json!({}))
            .await
            .unwrap();
        assert_eq!(
            p.messages[0].content.as_text(),
            Some("Prompt with context: test context")
        );
        s.stop().await;
    }
}

#[tokio::test]
async fn resources_read_as_the_suite_expects_in_both_eras() {
    for (pref, era) in ERAS {
        let s = Suite::both(pref).await;
        let read = |uri: &'static str| {
            let c = s.client.clone();
            async move { serde_json::to_value(c.read_resource(uri).await.unwrap()).unwrap() }
        };
        let r = read("test://static-text").await;
        assert_eq!(r["contents"][0]["uri"], "test://static-text");
        assert_eq!(r["contents"][0]["mimeType"], "text/plain");
        assert_eq!(
            r["contents"][0]["text"],
            "This is the content of the static text resource."
        );
        let r = read("test://static-binary").await;
        assert_eq!(r["contents"][0]["mimeType"], "image/png");
        assert!(
            r["contents"][0]["blob"]
                .as_str()
                .is_some_and(|b| !b.is_empty()),
            "{era}"
        );
        let r = read("test://template/123/data").await;
        assert_eq!(r["contents"][0]["uri"], "test://template/123/data");
        let body: Value = serde_json::from_str(r["contents"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            body,
            json!({ "id": "123", "templateTest": true, "data": "Data for ID: 123" })
        );
        let r = read("test://watched-resource").await;
        assert_eq!(r["contents"][0]["text"], "Watched resource content");

        // sep-2164: an error naming the uri, never empty contents; in the
        // modern era with -32602 (-32002 was the legacy code).
        let uri = "test://nonexistent-resource-for-conformance-testing";
        let code = if era == Era::Stateful { -32002 } else { -32602 };
        match s.client.read_resource(uri).await {
            Err(conduit_mcp::Error::Server(e)) => {
                assert_eq!(e.data, Some(json!({ "uri": uri })), "{era}");
                assert_eq!(e.code, code, "{era}");
            }
            other => panic!("{era}: expected a JSON-RPC error, got {other:?}"),
        }
        s.stop().await;
    }
}

#[tokio::test]
async fn prompts_return_the_messages_the_suite_checks_in_both_eras() {
    for (pref, era) in ERAS {
        let s = Suite::both(pref).await;
        let get = |name: &'static str, args: Value| {
            let c = s.client.clone();
            async move { serde_json::to_value(c.get_prompt(name, args).await.unwrap()).unwrap() }
        };
        let p = get("test_simple_prompt", json!({})).await;
        assert_eq!(p["messages"][0]["role"], "user");
        assert_eq!(
            p["messages"][0]["content"]["text"],
            "This is a simple prompt for testing."
        );
        let p = get(
            "test_prompt_with_arguments",
            json!({ "arg1": "testValue1", "arg2": "testValue2" }),
        )
        .await;
        assert_eq!(
            p["messages"][0]["content"]["text"],
            "Prompt with arguments: arg1='testValue1', arg2='testValue2'",
            "{era}"
        );
        let p = get(
            "test_prompt_with_embedded_resource",
            json!({ "resourceUri": "test://example-resource" }),
        )
        .await;
        assert_eq!(p["messages"][0]["content"]["type"], "resource");
        assert_eq!(
            p["messages"][0]["content"]["resource"]["uri"],
            "test://example-resource"
        );
        let p = get("test_prompt_with_image", json!({})).await;
        assert_eq!(p["messages"][0]["content"]["type"], "image");
        assert_eq!(p["messages"][0]["content"]["mimeType"], "image/png");
        assert!(p["messages"][0]["content"]["data"].is_string());
        s.stop().await;
    }
}

#[tokio::test]
async fn completion_answers_with_a_values_array_in_both_eras() {
    for (pref, era) in ERAS {
        let s = Suite::both(pref).await;
        let reference = || Reference::prompt("test_prompt_with_arguments");
        let r = s
            .client
            .complete(CompleteParams::new(reference(), "arg1", "test"))
            .await
            .unwrap();
        assert_eq!(r.completion.values, Vec::<String>::new(), "{era}");
        let r = s
            .client
            .complete(CompleteParams::new(reference(), "arg1", "par"))
            .await
            .unwrap();
        assert_eq!(r.completion.values, ["paris", "park", "party"], "{era}");
        let template = Reference::resource_template("test://template/{id}/data");
        let r = s
            .client
            .complete(CompleteParams::new(template, "id", "12"))
            .await
            .unwrap();
        assert_eq!(r.completion.values, ["123"], "{era}");
        s.stop().await;
    }
}

/// The methods of the notifications received so far.
fn methods(notes: &mut conduit_mcp::Notifications) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(n) = notes.try_recv() {
        out.push(n.method);
    }
    out
}

#[tokio::test]
async fn legacy_subscribers_hear_of_updates_and_list_changes_until_they_unsubscribe() {
    let s = Suite::both(EraPreference::Stateful).await;
    let mut notes = s.client.notifications();
    s.client
        .subscribe_resource("test://watched-resource")
        .await
        .unwrap();
    // The notification is written before the tool's answer, on one stream.
    s.call("test_trigger_resource_update", json!({})).await;
    assert_eq!(methods(&mut notes), ["notifications/resources/updated"]);
    let r = s
        .client
        .read_resource("test://watched-resource")
        .await
        .unwrap();
    assert_eq!(
        r.contents[0].as_text(),
        Some("Watched resource content (update 1)")
    );
    s.client
        .unsubscribe_resource("test://watched-resource")
        .await
        .unwrap();
    s.call("test_trigger_resource_update", json!({})).await;
    assert_eq!(methods(&mut notes), Vec::<String>::new());

    s.call("test_trigger_tool_change", json!({})).await;
    assert_eq!(methods(&mut notes), ["notifications/tools/list_changed"]);
    let names: Vec<String> = s
        .client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(
        !names.iter().any(|n| n == "test_dynamic_tool"),
        "removed by the first trigger"
    );
    s.call("test_trigger_prompt_change", json!({})).await;
    assert_eq!(methods(&mut notes), ["notifications/prompts/list_changed"]);
    s.stop().await;
}

/// The next notification of a listen stream, in time.
async fn next_on(sub: &mut conduit_mcp::Subscription) -> ServerNotification {
    tokio::time::timeout(PATIENCE, sub.next())
        .await
        .expect("no notification in time")
        .expect("the stream ended")
}

#[tokio::test]
async fn modern_listen_streams_get_only_the_list_changes_they_asked_for() {
    let s = Suite::both(EraPreference::Stateless).await;
    let tools_only = SubscriptionFilter {
        tools_list_changed: Some(true),
        ..Default::default()
    };
    let prompts_only = SubscriptionFilter {
        prompts_list_changed: Some(true),
        ..Default::default()
    };
    let mut prompts = s.client.listen(prompts_only).await.unwrap();
    let mut tools = s.client.listen(tools_only).await.unwrap();
    for sub in [&mut prompts, &mut tools] {
        assert!(matches!(
            next_on(sub).await,
            ServerNotification::SubscriptionsAcknowledged(_)
        ));
    }
    s.call("test_trigger_tool_change", json!({})).await;
    assert!(matches!(
        next_on(&mut tools).await,
        ServerNotification::ToolsListChanged(_)
    ));
    s.call("test_trigger_prompt_change", json!({})).await;
    assert!(matches!(
        next_on(&mut prompts).await,
        ServerNotification::PromptsListChanged(_)
    ));
    // Had the tools stream been sent the prompt change, it would come
    // before this second tool change (one ordered stream).
    s.call("test_trigger_tool_change", json!({})).await;
    assert!(matches!(
        next_on(&mut tools).await,
        ServerNotification::ToolsListChanged(_)
    ));
    drop((tools, prompts));
    s.stop().await;
}

#[tokio::test]
async fn the_stdio_server_exits_0_on_sigterm() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let mut child = tokio::process::Command::new(example_binary())
        .arg("--stdio")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the example");
    // Answered initialize: it is serving (and has its signal handler).
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } });
    stdin
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    let mut line = String::new();
    tokio::time::timeout(PATIENCE, stdout.read_line(&mut line))
        .await
        .unwrap()
        .unwrap();
    assert!(line.contains("\"protocolVersion\""), "{line}");
    let pid = Pid::from_raw(child.id().unwrap() as i32);
    kill(pid, Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    drop(stdin);
}
