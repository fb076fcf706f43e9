//! Not a test: a server for trying the official conformance suite by hand
//! before `conformance/server.rs` exists. Ignored; run it with
//! `PORT=3001 cargo test --test server_http_suite -- --ignored --nocapture`
//! and point the suite at `http://127.0.0.1:3001/mcp`. It serves the test
//! router plus the few diagnostic tools the transport-level scenarios use.

use crate::server_http_support as support;

use std::sync::Arc;

use conduit_mcp::protocol::{CallToolResult, InputRequest, Tool};
use conduit_mcp::server::http::HttpServer;
use conduit_mcp::server::RequestContext;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "a server for the conformance suite, run by hand"]
async fn serve_for_the_conformance_suite() {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(3001);
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            std::env::var("RUST_LOG").unwrap_or_else(|_| "conduit_mcp=info".into()),
        ))
        .with_writer(std::io::stderr)
        .try_init();
    let router = support::router(Arc::new(support::Counts::default()));
    let tool = |name: &str| Tool {
        name: name.into(),
        description: Some(name.into()),
        ..Tool::default()
    };
    router.add_tool(
        tool("test_missing_capability"),
        |_: support::Empty, ctx: RequestContext| async move {
            let v = ctx
            .ask(
                "sample",
                InputRequest::CreateMessage(serde_json::from_value(json!({
                    "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }],
                    "maxTokens": 10
                }))
                .unwrap()),
            )
            .await?;
            Ok(CallToolResult::text(v.to_string()))
        },
    );
    router.add_tool(
        tool("test_streaming_elicitation"),
        |_: support::Empty, ctx: RequestContext| async move {
            let _ = ctx.progress(0.0, None, Some("asking"));
            let v = ctx
            .ask(
                "elicit",
                InputRequest::Elicit(serde_json::from_value(json!({
                    "message": "name?", "requestedSchema": { "type": "object", "properties": {} }
                }))
                .unwrap()),
            )
            .await?;
            Ok(CallToolResult::text(v.to_string()))
        },
    );
    router.add_tool(
        tool("test_logging_tool"),
        |_: support::Empty, ctx: RequestContext| async move {
            let _ = ctx.log("info", json!("a log line"));
            Ok(CallToolResult::text("logged"))
        },
    );
    let r2 = router.clone();
    router.add_tool(
        tool("test_trigger_tool_change"),
        move |_: support::Empty, _ctx: RequestContext| {
            let r2 = r2.clone();
            async move {
                r2.add_tool(
                    tool_named("dynamic"),
                    |_: support::Empty, _ctx: RequestContext| async {
                        Ok(CallToolResult::text("dynamic"))
                    },
                );
                Ok(CallToolResult::text("changed"))
            }
        },
    );
    let r3 = router.clone();
    router.add_tool(
        tool("test_trigger_prompt_change"),
        move |_: support::Empty, _ctx: RequestContext| {
            let r3 = r3.clone();
            async move {
                let _ =
                    r3.clone()
                        .prompt("dynamic_prompt", "added", |_: support::Empty, _ctx| async {
                            Ok(Default::default())
                        });
                Ok(CallToolResult::text("changed"))
            }
        },
    );
    router.add_tool(
        tool("test_reconnection"),
        |_: support::Empty, ctx: RequestContext| async move {
            conduit_mcp::server::http::close_sse_stream(&ctx);
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            Ok(CallToolResult::text("reconnected"))
        },
    );
    let server = HttpServer::bind(("127.0.0.1", port), support::config())
        .await
        .unwrap();
    eprintln!("serving {}", server.url().unwrap());
    server.serve(router).await.unwrap();
}

fn tool_named(name: &str) -> Tool {
    Tool {
        name: name.into(),
        ..Tool::default()
    }
}
