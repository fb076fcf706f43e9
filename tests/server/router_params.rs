//! The Router against bad input from outside: malformed params are a
//! -32602 that names the field at fault, a handler that panics (even
//! before its future exists) is an error answer and serving goes on, and a
//! name registered twice is listed once.

use crate::server_support;

use conduit_mcp::protocol::{
    CallToolResult, GetPromptResult, ReadResourceResult, ResourceContents, ResourceTemplate,
};
use conduit_mcp::server::{RequestContext, Router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use server_support::{config, start, Client};

#[derive(Deserialize, JsonSchema)]
struct Count {
    n: i64,
}

fn router() -> Router {
    Router::new()
        .tool("count", "Counts.", |a: Count, _ctx: RequestContext| {
            // Checked before the future exists: a panic in `f` itself.
            assert!(a.n != 13, "unlucky number");
            async move { Ok(CallToolResult::text(a.n.to_string())) }
        })
        .tool(
            "count",
            "Counts again.",
            |a: Count, _ctx: RequestContext| async move {
                Ok(CallToolResult::text(format!("again {}", a.n)))
            },
        )
        .prompt(
            "greet",
            "Greets.",
            |a: Count, _ctx: RequestContext| async move {
                assert!(a.n != 13, "unlucky prompt");
                Ok(GetPromptResult::default())
            },
        )
}

async fn call(c: &mut Client, id: i64, method: &str, params: Value) -> Value {
    c.request(json!(id), method, params).await;
    loop {
        let m = c.recv().await;
        if m["id"] == json!(id) {
            return m;
        }
    }
}

/// Calls the tool `count` with `n`.
async fn count(c: &mut Client, id: i64, n: i64) -> Value {
    call(
        c,
        id,
        "tools/call",
        json!({ "name": "count", "arguments": { "n": n } }),
    )
    .await
}

/// Whether `r` is an error with code -32602 and a message that names
/// `field`.
fn invalid_params_naming(r: &Value, field: &str) -> bool {
    let message = r["error"]["message"].as_str().unwrap_or_default();
    r["error"]["code"] == json!(-32602)
        && (message.contains(&format!("`{field}`")) || message.contains(&format!("{field}:")))
}

#[tokio::test]
async fn malformed_params_are_invalid_params_naming_the_field() {
    let mut c = start(config(), router());
    c.initialize(json!({})).await;
    let cases = [
        ("tools/call", json!({ "name": 5 }), "name"),
        (
            "tools/call",
            json!({ "name": "count", "arguments": "7" }),
            "arguments",
        ),
        ("prompts/get", json!({ "name": ["greet"] }), "name"),
        (
            "prompts/get",
            json!({ "name": "greet", "arguments": { "n": "seven" } }),
            "n",
        ),
        ("resources/read", json!({ "uri": {} }), "uri"),
        ("logging/setLevel", json!({ "level": 3 }), "level"),
    ];
    let total = cases.len();
    let mut unnamed = Vec::new();
    for (id, (method, params, field)) in cases.into_iter().enumerate() {
        let r = call(&mut c, id as i64 + 1, method, params.clone()).await;
        if !invalid_params_naming(&r, field) {
            unnamed.push(format!("{method} {params}: {r}"));
        }
    }
    assert!(
        unnamed.is_empty(),
        "{} of {} answers are not a -32602 naming the field:\n{}",
        unnamed.len(),
        total,
        unnamed.join("\n")
    );
    // Still serving.
    let r = count(&mut c, 100, 2).await;
    assert_eq!(r["result"]["content"][0]["text"], "again 2", "{r}");
    c.close_input();
    c.end().await.unwrap();
}

#[tokio::test]
async fn a_name_registered_twice_is_listed_once_and_the_later_one_serves() {
    let router = router().tool("count", "Counts once more.", |a: Count, _ctx| async move {
        if a.n == 13 {
            panic!("unlucky number");
        }
        Ok(CallToolResult::text(format!("once more {}", a.n)))
    });
    let mut c = start(config(), router);
    c.initialize(json!({})).await;
    let list = call(&mut c, 1, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{list}");
    assert_eq!(tools[0]["description"], "Counts once more.", "{list}");
    // A panic inside the future: a tool error, serving goes on.
    let r = count(&mut c, 2, 13).await;
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    c.close_input();
    c.end().await.unwrap();
}

/// A resource template that reads as `who`.
fn template(router: Router, who: &'static str) -> Router {
    router.resource_template(
        ResourceTemplate {
            uri_template: "users://{id}".into(),
            name: who.into(),
            ..Default::default()
        },
        move |uri, _vars, _ctx| async move {
            Ok(ReadResourceResult {
                contents: vec![ResourceContents::text(uri, who)],
                ..Default::default()
            })
        },
    )
}

#[tokio::test]
async fn a_resource_template_registered_twice_is_listed_once_and_the_later_one_serves() {
    let router = template(template(Router::new(), "first"), "second");
    let mut c = start(config(), router);
    c.initialize(json!({})).await;
    let list = call(&mut c, 1, "resources/templates/list", json!({})).await;
    let templates = list["result"]["resourceTemplates"].as_array().unwrap();
    let read = call(&mut c, 2, "resources/read", json!({ "uri": "users://7" })).await;
    c.close_input();
    c.end().await.unwrap();
    assert_eq!(
        (templates.len(), &read["result"]["contents"][0]["text"]),
        (1, &json!("second")),
        "as a tool or a prompt of the same name, the later registration replaces the earlier: {list} {read}"
    );
}

#[tokio::test]
async fn a_tool_function_that_panics_before_its_future_exists_is_a_tool_error() {
    let router = Router::new().tool("count", "Counts.", |a: Count, _ctx: RequestContext| {
        assert!(a.n != 13, "unlucky number");
        async move { Ok(CallToolResult::text(a.n.to_string())) }
    });
    let mut c = start(config(), router);
    c.initialize(json!({})).await;
    let r = count(&mut c, 1, 13).await;
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("unlucky number"), "{r}");
    // A prompt that panics: an error answer, never a dead session.
    let r = call(
        &mut c,
        2,
        "prompts/get",
        json!({ "name": "nope", "arguments": {} }),
    )
    .await;
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    let r = count(&mut c, 3, 3).await;
    assert_eq!(r["result"]["content"][0]["text"], "3", "{r}");
    c.close_input();
    c.end().await.unwrap();
}

#[tokio::test]
async fn a_prompt_that_panics_is_an_internal_error_and_serving_goes_on() {
    let mut c = start(config(), router());
    c.initialize(json!({})).await;
    let r = call(
        &mut c,
        1,
        "prompts/get",
        json!({ "name": "greet", "arguments": { "n": 13 } }),
    )
    .await;
    assert_eq!(r["error"]["code"], json!(-32603), "{r}");
    let r = call(
        &mut c,
        2,
        "prompts/get",
        json!({ "name": "greet", "arguments": { "n": 1 } }),
    )
    .await;
    assert!(r.get("result").is_some(), "{r}");
    c.close_input();
    c.end().await.unwrap();
}
