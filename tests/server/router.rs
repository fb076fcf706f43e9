//! The Router, served in process over a pipe pair and driven with raw
//! JSON-RPC lines: declared capabilities, argument errors and panics as
//! tool errors, list changes at run time in both eras, listen streams that
//! end when the client closes its input.

use std::time::Duration;

use conduit_mcp::protocol::{
    CallToolResult, Implementation, ReadResourceResult, Resource, ResourceContents,
};
use conduit_mcp::server::{RequestContext, Router, ServeEnd, ServerConfig, StdioServer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

const PATIENCE: Duration = Duration::from_secs(10);

#[derive(Deserialize, JsonSchema)]
struct Div {
    a: i64,
    b: i64,
}

fn router() -> Router {
    Router::new()
        .tool(
            "div",
            "Divides a by b (panics on zero).",
            |args: Div, _ctx: RequestContext| async move {
                Ok(CallToolResult::text((args.a / args.b).to_string()))
            },
        )
        .resource_template(
            conduit_mcp::protocol::ResourceTemplate {
                uri_template: "users://{id}".into(),
                name: "user".into(),
                ..Default::default()
            },
            |uri, vars, _ctx| async move {
                Ok(ReadResourceResult {
                    contents: vec![ResourceContents::text(
                        uri,
                        format!("user {}", vars["id"].as_str().unwrap_or_default()),
                    )],
                    ..Default::default()
                })
            },
        )
}

struct Peer {
    to: Option<DuplexStream>,
    from: Lines<BufReader<DuplexStream>>,
}

impl Peer {
    async fn send(&mut self, v: Value) {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        self.to.as_mut().unwrap().write_all(&line).await.unwrap();
    }

    /// The next line, as the server wrote it.
    async fn recv_line(&mut self) -> String {
        tokio::time::timeout(PATIENCE, self.from.next_line())
            .await
            .expect("no message in time")
            .unwrap()
            .expect("output ended")
    }

    async fn recv(&mut self) -> Value {
        serde_json::from_str(&self.recv_line().await).unwrap()
    }

    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        loop {
            let m = self.recv().await;
            if m["id"] == json!(id) && m.get("method").is_none() {
                return m;
            }
        }
    }
}

fn serve(
    router: Router,
) -> (
    Peer,
    tokio::task::JoinHandle<Result<ServeEnd, conduit_mcp::server::ServerError>>,
) {
    let (client_to, server_from) = tokio::io::duplex(1 << 16);
    let (server_to, client_from) = tokio::io::duplex(1 << 16);
    let config = ServerConfig::new(Implementation::new("router-test", "1"));
    let server = StdioServer::over(server_from, server_to, config);
    let task = tokio::spawn(server.serve(router));
    (
        Peer {
            to: Some(client_to),
            from: BufReader::new(client_from).lines(),
        },
        task,
    )
}

fn modern(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    params
}

#[tokio::test]
async fn legacy_tools_errors_panics_and_a_list_change_at_run_time() {
    let router = router();
    let (mut p, task) = serve(router.clone());
    let init = p
        .call(0, "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }))
        .await;
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["tools"], json!({ "listChanged": true }), "{init}");
    assert_eq!(caps["resources"]["listChanged"], json!(true), "{init}");
    assert!(caps.get("prompts").is_none(), "{init}");

    let list = p.call(1, "tools/list", json!({})).await;
    let schema = &list["result"]["tools"][0]["inputSchema"];
    assert_eq!(schema["required"], json!(["a", "b"]), "{list}");

    let r = p
        .call(
            2,
            "tools/call",
            json!({ "name": "div", "arguments": { "a": 7, "b": 2 } }),
        )
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "3");
    // An argument error: a tool error naming the argument and the rule.
    let r = p
        .call(
            3,
            "tools/call",
            json!({ "name": "div", "arguments": { "a": 7 } }),
        )
        .await;
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("\"b\"") && text.contains("required"),
        "{text}"
    );
    // A panic: a tool error too, and the session goes on.
    let r = p
        .call(
            4,
            "tools/call",
            json!({ "name": "div", "arguments": { "a": 7, "b": 0 } }),
        )
        .await;
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("panicked"),
        "{r}"
    );
    let r = p
        .call(5, "tools/call", json!({ "name": "nope", "arguments": {} }))
        .await;
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    let r = p
        .call(6, "resources/read", json!({ "uri": "users://42" }))
        .await;
    assert_eq!(r["result"]["contents"][0]["text"], "user 42", "{r}");

    // A tool added at run time: the legacy client is told.
    router.add_tool(
        conduit_mcp::protocol::Tool {
            name: "later".into(),
            ..Default::default()
        },
        |_: Div, _ctx| async { Ok(CallToolResult::text("later")) },
    );
    let n = p.recv().await;
    assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    let list = p.call(7, "tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 2);
    assert!(router.remove_tool("later"));
    assert_eq!(p.recv().await["method"], "notifications/tools/list_changed");

    p.to = None;
    let end = tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
    assert_eq!(end.unwrap(), ServeEnd::Eof);
}

// On the paused clock: "at once" is no timer waited on.
#[tokio::test(start_paused = true)]
async fn modern_listen_streams_get_list_changes_and_end_at_eof() {
    let router = router();
    let (mut p, task) = serve(router.clone());
    p.send(json!({ "jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
        "params": modern(json!({ "notifications": { "toolsListChanged": true, "promptsListChanged": true } })) }))
        .await;
    let ack = p.recv().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    // No prompts registered: not agreed to.
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "toolsListChanged": true }),
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );

    router.add_resource(Resource::new("demo://x", "x"), |_ctx| async {
        Ok(ReadResourceResult::default())
    });
    router.add_tool(
        conduit_mcp::protocol::Tool {
            name: "later".into(),
            ..Default::default()
        },
        |_: Div, _ctx| async { Ok(CallToolResult::text("later")) },
    );
    // Only what the stream asked for, with its id (the resource change
    // was not asked for).
    let n = p.recv().await;
    assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );

    // The client closes its input: the stream ends with its result at
    // once, not after the 5 s drain.
    let t = tokio::time::Instant::now();
    p.to = None;
    let end = p.recv().await;
    assert_eq!(end["id"], "L", "{end}");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    let served = tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
    assert_eq!(served.unwrap(), ServeEnd::Eof);
    assert_eq!(t.elapsed(), Duration::ZERO, "the end waited on a timer");
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// A router whose `note` tool logs at info and says whether the log was sent.
fn noting_router() -> Router {
    Router::new()
        .tool(
            "note",
            "Logs at info.",
            |_: NoArgs, ctx: RequestContext| async move {
                let sent = ctx.log("info", json!("a note")).unwrap_or(false);
                Ok(CallToolResult::text(sent.to_string()))
            },
        )
        .resource(Resource::new("demo://a", "a"), |_ctx| async {
            Ok(ReadResourceResult::default())
        })
}

async fn legacy_init(p: &mut Peer) {
    let init = p
        .call(0, "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }))
        .await;
    assert!(init.get("result").is_some(), "{init}");
    p.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
}

/// Pings and returns everything the server sent before the answer.
async fn before_pong(p: &mut Peer, id: i64) -> Vec<Value> {
    p.send(json!({ "jsonrpc": "2.0", "id": id, "method": "ping" }))
        .await;
    let mut before = Vec::new();
    loop {
        let m = p.recv().await;
        if m["id"] == json!(id) && m.get("method").is_none() {
            return before;
        }
        before.push(m);
    }
}

#[tokio::test]
async fn subscriptions_and_log_levels_belong_to_the_session_that_set_them() {
    // One router, two sessions (as an HTTP server would serve them).
    let router = noting_router();
    let (mut a, task_a) = serve(router.clone());
    let (mut b, task_b) = serve(router.clone());
    legacy_init(&mut a).await;
    legacy_init(&mut b).await;

    let r = a
        .call(1, "resources/subscribe", json!({ "uri": "demo://a" }))
        .await;
    assert_eq!(r["result"], json!({}), "{r}");
    let r = a
        .call(2, "logging/setLevel", json!({ "level": "error" }))
        .await;
    assert_eq!(r["result"], json!({}), "{r}");

    router.resource_updated("demo://a");
    let told_a = before_pong(&mut a, 3).await;
    let told_b = before_pong(&mut b, 3).await;
    println!(
        "resources/updated for a URI only session A subscribed: A got {}, B got {}",
        told_a.len(),
        told_b.len()
    );
    assert_eq!(told_a.len(), 1, "{told_a:?}");
    assert_eq!(told_a[0]["method"], "notifications/resources/updated");
    assert!(told_b.is_empty(), "B never subscribed: {told_b:?}");

    // A asked for errors only; B set no level.
    let note = |r: &Value| {
        r["result"]["content"][0]["text"]
            .as_str()
            .map(str::to_owned)
    };
    let in_a = a
        .call(4, "tools/call", json!({ "name": "note", "arguments": {} }))
        .await;
    let in_b = b
        .call(4, "tools/call", json!({ "name": "note", "arguments": {} }))
        .await;
    println!(
        "an info log after A's setLevel(error): sent in A: {:?}, in B: {:?}",
        note(&in_a),
        note(&in_b)
    );
    assert_eq!(note(&in_a).as_deref(), Some("false"), "{in_a}");
    assert_eq!(note(&in_b).as_deref(), Some("true"), "{in_b}");

    for (p, task) in [(a, task_a), (b, task_b)] {
        drop(p); // closes its input
        let end = tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
        assert_eq!(end.unwrap(), ServeEnd::Eof);
    }
}

#[tokio::test]
async fn a_new_session_does_not_inherit_the_subscriptions_of_one_that_ended() {
    let router = noting_router();
    let (mut a, task_a) = serve(router.clone());
    legacy_init(&mut a).await;
    let r = a
        .call(1, "resources/subscribe", json!({ "uri": "demo://a" }))
        .await;
    assert_eq!(r["result"], json!({}), "{r}");
    drop(a);
    let end = tokio::time::timeout(PATIENCE, task_a)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(end.unwrap(), ServeEnd::Eof);

    let (mut b, task_b) = serve(router.clone());
    legacy_init(&mut b).await;
    router.resource_updated("demo://a");
    let told_b = before_pong(&mut b, 2).await;
    assert!(told_b.is_empty(), "B never subscribed: {told_b:?}");
    // Nor does a second initialize on one connection keep the first's.
    let r = b
        .call(3, "resources/subscribe", json!({ "uri": "demo://a" }))
        .await;
    assert_eq!(r["result"], json!({}), "{r}");
    legacy_init(&mut b).await;
    router.resource_updated("demo://a");
    let told_b = before_pong(&mut b, 4).await;
    assert!(told_b.is_empty(), "re-initialized: {told_b:?}");
    drop(b);
    let end = tokio::time::timeout(PATIENCE, task_b)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(end.unwrap(), ServeEnd::Eof);
}

#[tokio::test]
async fn subscriptions_and_set_level_are_legacy_methods() {
    // 2026-07-28 replaced them with subscriptions/listen and the _meta
    // level: a modern request for them is an unknown method.
    let (mut p, task) = serve(noting_router());
    for (id, method, params) in [
        (1, "resources/subscribe", json!({ "uri": "demo://a" })),
        (2, "logging/setLevel", json!({ "level": "error" })),
    ] {
        let r = p.call(id, method, modern(params)).await;
        assert_eq!(r["error"]["code"], json!(-32601), "{method}: {r}");
    }
    drop(p);
    let end = tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
    assert_eq!(end.unwrap(), ServeEnd::Eof);
}

/// Arguments whose schema says more than their Rust types.
#[derive(Deserialize, JsonSchema)]
struct Steps {
    /// How many steps, 1 to 20.
    #[schemars(range(min = 1, max = 20))]
    count: u32,
    /// A short label.
    #[schemars(length(max = 8))]
    label: Option<String>,
}

#[tokio::test]
async fn arguments_are_checked_against_the_tools_input_schema_before_it_runs() {
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let steps = ran.clone();
    let router = Router::new().tool(
        "steps",
        "Runs `count` steps.",
        move |args: Steps, _ctx: RequestContext| {
            let steps = steps.clone();
            async move {
                steps.fetch_add(args.count, std::sync::atomic::Ordering::SeqCst);
                let label = args.label.unwrap_or_default();
                Ok(CallToolResult::text(format!("ran {}{label}", args.count)))
            }
        },
    );
    let (mut p, task) = serve(router);
    legacy_init(&mut p).await;
    let text = |r: &Value| {
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let r = p
        .call(
            1,
            "tools/call",
            json!({ "name": "steps", "arguments": { "count": 3 } }),
        )
        .await;
    assert_eq!(text(&r), "ran 3", "{r}");

    let r = p
        .call(
            2,
            "tools/call",
            json!({ "name": "steps", "arguments": { "count": 99 } }),
        )
        .await;
    let steps_run = ran.load(std::sync::atomic::Ordering::SeqCst) - 3;
    println!("{{\"count\": 99}} with maximum 20: {steps_run} steps ran; answer: {r}");
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert_eq!(
        steps_run, 0,
        "the tool ran with arguments its schema refuses"
    );
    let t = text(&r);
    assert!(t.contains("count") && t.contains("maximum"), "{t}");

    // Every violation is named, with the argument and the rule.
    let r = p
        .call(
            3,
            "tools/call",
            json!({ "name": "steps", "arguments": { "count": 0, "label": "far too long" } }),
        )
        .await;
    let t = text(&r);
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert!(t.contains("count") && t.contains("minimum"), "{t}");
    assert!(t.contains("label") && t.contains("maxLength"), "{t}");
    let r = p
        .call(4, "tools/call", json!({ "name": "steps", "arguments": {} }))
        .await;
    let t = text(&r);
    assert!(t.contains("count") && t.contains("required"), "{t}");
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 3);

    drop(p);
    let end = tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
    assert_eq!(end.unwrap(), ServeEnd::Eof);
}

#[tokio::test]
async fn a_tool_with_a_hand_written_schema_is_checked_against_that_schema() {
    let router = Router::new();
    router.add_tool(
        conduit_mcp::protocol::Tool {
            name: "pick".into(),
            input_schema: json!({
                "type": "object",
                "properties": { "a": { "type": "integer", "enum": [1, 2, 3] } },
                "required": ["a"],
                "additionalProperties": false,
            }),
            ..Default::default()
        },
        |args: Value, _ctx: RequestContext| async move {
            Ok(CallToolResult::text(args["a"].to_string()))
        },
    );
    let (mut p, task) = serve(router);
    legacy_init(&mut p).await;
    let r = p
        .call(
            1,
            "tools/call",
            json!({ "name": "pick", "arguments": { "a": 2 } }),
        )
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "2", "{r}");
    for (id, args, rule) in [
        (2, json!({ "a": 7 }), "enum"),
        (3, json!({ "a": 1, "b": 0 }), "additionalProperties"),
    ] {
        let r = p
            .call(
                id,
                "tools/call",
                json!({ "name": "pick", "arguments": args }),
            )
            .await;
        assert_eq!(r["result"]["isError"], json!(true), "{r}");
        let t = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(t.contains(rule), "{rule}: {t}");
    }
    drop(p);
    let end = tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
    assert_eq!(end.unwrap(), ServeEnd::Eof);
}

/// A tool that answers with text it already has: `{"isError":false,...}`
/// as written (a `Value` would put `content` first), or, given text on two
/// lines, the refusal's message as its own result.
fn raw_router() -> Router {
    Router::new().tool(
        "raw",
        "Answers with JSON text.",
        |args: Value, ctx: RequestContext| async move {
            let text = if args["split"] == json!(true) {
                "{\"isError\":false,\n\"content\":[]}"
            } else {
                r#"{"isError":false,"content":[{"type":"text","text":"as written"}]}"#
            };
            let raw = conduit_mcp::jsonrpc::RawJson::from_vec(text.as_bytes().to_vec());
            match ctx.answer_raw(raw) {
                Ok(()) => Ok(CallToolResult::text("ignored")),
                Err(refused) => {
                    let message = refused.to_string();
                    assert_eq!(refused.into_raw().as_bytes(), text.as_bytes());
                    Ok(CallToolResult::text(message))
                }
            }
        },
    )
}

#[tokio::test]
async fn a_raw_answer_goes_out_as_written_and_text_on_two_lines_is_refused() {
    let (mut p, task) = serve(raw_router());
    p.send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}),
    )
    .await;
    let line = p.recv_line().await;
    assert!(line.contains("\"protocolVersion\""), "{line}");
    p.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    p.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "raw", "arguments": {}}}))
        .await;
    let line = p.recv_line().await;
    assert_eq!(
        line,
        r#"{"jsonrpc":"2.0","id":1,"result":{"isError":false,"content":[{"type":"text","text":"as written"}]}}"#
    );
    let split = p
        .call(
            2,
            "tools/call",
            json!({"name": "raw", "arguments": {"split": true}}),
        )
        .await;
    let text = split["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("more than one line"), "{split}");
    // 2026-07-28: the text is parsed, and gets the era's members.
    let modern_call = p
        .call(
            3,
            "tools/call",
            modern(json!({"name": "raw", "arguments": {}})),
        )
        .await;
    assert_eq!(modern_call["result"]["resultType"], json!("complete"));
    assert_eq!(
        modern_call["result"]["content"][0]["text"],
        json!("as written")
    );
    drop(p.to.take());
    let _ = tokio::time::timeout(PATIENCE, task).await;
}
