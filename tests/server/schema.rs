//! What the example server sends, checked against the official JSON Schemas
//! of MCP 2025-11-25 (legacy) and 2026-07-28 (modern).
//!
//! The schemas are the repository's copy (`tests/spec/`; set
//! `CONDUIT_MCP_SPEC` to another directory). The validator below covers exactly the
//! keywords those schemas use (`$ref`, `type`, `properties`, `required`,
//! `items`, `anyOf`, `allOf`, `enum`, `const`, `minimum`, `maximum`,
//! `maxItems`, `additionalProperties`).

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn spec_dir() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(d) = std::env::var_os("CONDUIT_MCP_SPEC") {
        candidates.push(PathBuf::from(d));
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    candidates.push(repo.join("tests").join("spec"));
    candidates
        .into_iter()
        .find(|d| d.join("2026-07-28").join("schema.json").exists())
}

fn load(dir: &Path, version: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(version).join("schema.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Appends a description of every violation of `schema` by `v` to `errors`.
fn check(root: &Value, schema: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        match root["$defs"].get(name) {
            Some(def) => check(root, def, v, path, errors),
            None => errors.push(format!("{path}: unknown $ref {r}")),
        }
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            _ => true,
        });
        if !ok {
            errors.push(format!("{path}: expected {types:?}, got {v}"));
            return;
        }
    }
    if let Some(c) = schema.get("const") {
        if c != v {
            errors.push(format!("{path}: expected const {c}, got {v}"));
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errors.push(format!("{path}: {v} not in {e:?}"));
        }
    }
    if let (Some(min), Some(n)) = (schema.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if n < min {
            errors.push(format!("{path}: {n} < minimum {min}"));
        }
    }
    if let (Some(max), Some(n)) = (schema.get("maximum").and_then(Value::as_f64), v.as_f64()) {
        if n > max {
            errors.push(format!("{path}: {n} > maximum {max}"));
        }
    }
    if let Some(obj) = v.as_object() {
        if let Some(req) = schema.get("required").and_then(Value::as_array) {
            for k in req.iter().filter_map(Value::as_str) {
                if !obj.contains_key(k) {
                    errors.push(format!("{path}: missing required {k:?}"));
                }
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, val) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => check(root, s, val, &format!("{path}.{k}"), errors),
                None => {
                    if let Some(extra) = schema.get("additionalProperties") {
                        if extra == &Value::Bool(false) {
                            errors.push(format!("{path}: unexpected property {k:?}"));
                        } else if extra.is_object() {
                            check(root, extra, val, &format!("{path}.{k}"), errors);
                        }
                    }
                }
            }
        }
    }
    if let Some(items) = v.as_array() {
        if let Some(s) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                check(root, s, item, &format!("{path}[{i}]"), errors);
            }
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
            if items.len() as u64 > max {
                errors.push(format!("{path}: more than {max} items"));
            }
        }
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for s in all {
            check(root, s, v, path, errors);
        }
    }
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array) {
        let fits = any.iter().any(|s| {
            let mut e = Vec::new();
            check(root, s, v, path, &mut e);
            e.is_empty()
        });
        if !fits {
            errors.push(format!("{path}: matches none of anyOf"));
        }
    }
}

fn conforms(root: &Value, def: &str, v: &Value) {
    let schema = json!({ "$ref": format!("#/$defs/{def}") });
    let mut errors = Vec::new();
    check(root, &schema, v, def, &mut errors);
    assert!(
        errors.is_empty(),
        "{v}\ndoes not conform to {def}:\n{}",
        errors.join("\n")
    );
}

fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join("server"))
        .expect("target layout");
    assert!(
        path.exists(),
        "{} not found: run `cargo build --example server`",
        path.display()
    );
    path
}

/// Sends `requests` (answering any server-to-client request with `answer`)
/// and returns every message received, in order, once all are answered.
async fn converse(requests: Vec<Value>, answer: Value) -> Vec<Value> {
    let mut child = tokio::process::Command::new(example_binary())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut got = Vec::new();
    for req in requests {
        let id = req.get("id").cloned();
        let mut line = serde_json::to_vec(&req).unwrap();
        line.push(b'\n');
        stdin.write_all(&line).await.unwrap();
        let Some(id) = id else { continue };
        loop {
            let l = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
                .await
                .expect("timed out")
                .unwrap()
                .expect("server ended");
            let m: Value = serde_json::from_str(&l).unwrap();
            let done = m.get("id") == Some(&id) && m.get("method").is_none();
            if m.get("method").is_some() && m.get("id").is_some() {
                let mut reply = serde_json::to_vec(
                    &json!({ "jsonrpc": "2.0", "id": m["id"], "result": answer }),
                )
                .unwrap();
                reply.push(b'\n');
                stdin.write_all(&reply).await.unwrap();
            }
            got.push(m);
            if done {
                break;
            }
        }
    }
    drop(stdin);
    child.wait().await.unwrap();
    got
}

fn req(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn by_id(msgs: &[Value], id: i64) -> &Value {
    msgs.iter()
        .find(|m| m.get("id") == Some(&json!(id)) && m.get("method").is_none())
        .unwrap_or_else(|| panic!("no answer {id}"))
}

#[tokio::test]
async fn legacy_messages_conform_to_2025_11_25() {
    let dir = spec_dir().expect("the MCP JSON schemas at tests/spec (or CONDUIT_MCP_SPEC)");
    let schema = load(&dir, "2025-11-25");
    let msgs = converse(
        vec![
            req(1, "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": { "roots": {} },
                                         "clientInfo": { "name": "schema", "version": "1" } })),
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            req(2, "ping", json!({})),
            req(3, "tools/list", json!({})),
            req(4, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" } })),
            req(5, "tools/call", json!({ "name": "sleep", "arguments": { "ms": 10 }, "_meta": { "progressToken": 5 } })),
            req(6, "tools/call", json!({ "name": "roots", "arguments": {} })),
            req(7, "resources/list", json!({})),
            req(8, "resources/read", json!({ "uri": "demo://readme" })),
            req(9, "prompts/list", json!({})),
            req(10, "prompts/get", json!({ "name": "greet", "arguments": { "name": "S" } })),
            req(11, "nope", json!({})),
        ],
        json!({ "roots": [{ "uri": "file:///schema", "name": "s" }] }),
    )
    .await;
    for (id, def) in [
        (1, "InitializeResult"),
        (2, "EmptyResult"),
        (3, "ListToolsResult"),
        (4, "CallToolResult"),
        (5, "CallToolResult"),
        (6, "CallToolResult"),
        (7, "ListResourcesResult"),
        (8, "ReadResourceResult"),
        (9, "ListPromptsResult"),
        (10, "GetPromptResult"),
    ] {
        let m = by_id(&msgs, id);
        conforms(&schema, "JSONRPCResultResponse", m);
        conforms(&schema, def, &m["result"]);
    }
    conforms(&schema, "JSONRPCErrorResponse", by_id(&msgs, 11));
    let progress: Vec<_> = msgs
        .iter()
        .filter(|m| m["method"] == json!("notifications/progress"))
        .collect();
    assert_eq!(progress.len(), 11);
    for p in progress {
        conforms(&schema, "ProgressNotification", p);
    }
    let ask = msgs
        .iter()
        .find(|m| m["method"] == json!("roots/list"))
        .expect("roots/list sent");
    conforms(&schema, "ListRootsRequest", ask);
    conforms(&schema, "JSONRPCRequest", ask);
}

#[tokio::test]
async fn modern_messages_conform_to_2026_07_28() {
    let dir = spec_dir().expect("the MCP JSON schemas at tests/spec (or CONDUIT_MCP_SPEC)");
    let schema = load(&dir, "2026-07-28");
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "roots": {} },
        "io.modelcontextprotocol/clientInfo": { "name": "schema", "version": "1" },
    });
    let with = |extra: Value| {
        let mut p = extra;
        p["_meta"] = meta.clone();
        p
    };
    let mut bad_version = meta.clone();
    bad_version["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let msgs = converse(
        vec![
            req(1, "server/discover", with(json!({}))),
            req(2, "tools/list", with(json!({}))),
            req(
                3,
                "tools/call",
                with(json!({ "name": "add", "arguments": { "a": 1, "b": 2 } })),
            ),
            req(
                4,
                "tools/call",
                with(json!({ "name": "roots", "arguments": {} })),
            ),
            req(
                5,
                "tools/call",
                with(json!({ "name": "roots", "arguments": {},
                "inputResponses": { "roots": { "roots": [{ "uri": "file:///m" }] } } })),
            ),
            req(6, "resources/list", with(json!({}))),
            req(7, "resources/read", with(json!({ "uri": "demo://readme" }))),
            req(8, "prompts/list", with(json!({}))),
            req(9, "prompts/get", with(json!({ "name": "greet" }))),
            req(10, "server/discover", json!({ "_meta": bad_version })),
            req(11, "tools/list", json!({})),
            req(12, "nope", with(json!({}))),
        ],
        json!({}),
    )
    .await;
    for (id, def) in [
        (1, "DiscoverResultResponse"),
        (2, "ListToolsResultResponse"),
        (3, "CallToolResultResponse"),
        (6, "ListResourcesResultResponse"),
        (7, "ReadResourceResultResponse"),
        (8, "ListPromptsResultResponse"),
        (9, "GetPromptResultResponse"),
    ] {
        conforms(&schema, def, by_id(&msgs, id));
    }
    let m = by_id(&msgs, 4);
    conforms(&schema, "JSONRPCResultResponse", m);
    conforms(&schema, "InputRequiredResult", &m["result"]);
    for (_, r) in m["result"]["inputRequests"].as_object().unwrap() {
        conforms(&schema, "InputRequest", r);
    }
    conforms(&schema, "CallToolResultResponse", by_id(&msgs, 5));
    conforms(&schema, "UnsupportedProtocolVersionError", by_id(&msgs, 10));
    for (id, def) in [(11, "InvalidParamsError"), (12, "MethodNotFoundError")] {
        conforms(&schema, "JSONRPCErrorResponse", by_id(&msgs, id));
        conforms(&schema, def, &by_id(&msgs, id)["error"]);
    }
    // The modern server never sends requests.
    assert!(msgs
        .iter()
        .all(|m| m.get("method").is_none() || m.get("id").is_none()));
}

#[test]
fn the_validator_catches_violations() {
    let dir = spec_dir().expect("the MCP JSON schemas at tests/spec (or CONDUIT_MCP_SPEC)");
    let schema = load(&dir, "2026-07-28");
    let errors_of = |def: &str, v: Value| {
        let mut e = Vec::new();
        check(
            &schema,
            &json!({ "$ref": format!("#/$defs/{def}") }),
            &v,
            def,
            &mut e,
        );
        e
    };
    // Missing cache hints, a wrong type, a wrong const.
    assert!(!errors_of(
        "DiscoverResult",
        json!({ "resultType": "complete", "supportedVersions": [], "capabilities": {} })
    )
    .is_empty());
    assert!(!errors_of("ProgressNotification", json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": 1, "progress": "x" } })).is_empty());
    assert!(!errors_of(
        "JSONRPCResultResponse",
        json!({ "jsonrpc": "1.0", "id": 1, "result": {} })
    )
    .is_empty());
    assert!(errors_of(
        "JSONRPCResultResponse",
        json!({ "jsonrpc": "2.0", "id": 1, "result": { "resultType": "complete" } })
    )
    .is_empty());
}
