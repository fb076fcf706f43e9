//! The diagnostic tools of the modern `server-stateless` scenario, and the run-time list changes.

use super::*;

/// The diagnostic tools of the modern `server-stateless` scenario, and the
/// triggers of run-time list changes and resource updates.
pub(super) fn diagnostic_tools(router: &Router) {
    let tools = router.clone();
    let prompts = router.clone();
    let prompt_version = Arc::new(AtomicU64::new(0));
    router
        .clone()
        .tool(
            "test_missing_capability",
            "Test tool requiring sampling",
            |_: NoArguments, ctx: RequestContext| async move {
                // Without the client's sampling capability this fails with
                // -32021 (modern) naming it.
                let v = ctx.ask("sampling", sample("Say something", 16)).await?;
                let r: CreateMessageResult = answer("sampling", v)?;
                Ok(CallToolResult::text(format!(
                    "Success: {}",
                    sampled_text(&r)
                )))
            },
        )
        .tool(
            "test_streaming_elicitation",
            "Diagnostic tool validating response progress streams",
            |_: NoArguments, ctx: RequestContext| async move {
                let _ = ctx.progress(50.0, Some(100.0), Some("asking"));
                let q = elicit(
                    "Streaming elicitation check",
                    json!({ "answer": { "type": "string" } }),
                    &["answer"],
                );
                let r: ElicitResult = answer("answer", ctx.ask("answer", q).await?)?;
                Ok(CallToolResult::text(format!(
                    "Streaming complete: {}",
                    elicit_text(&r)
                )))
            },
        )
        .tool(
            "test_reconnection",
            "Tests SSE stream disconnection and client reconnection (SEP-1699): the stream closes mid-call and the result comes after the client reconnects",
            |_: NoArguments, ctx: RequestContext| async move {
                // Over HTTP in the session era the client resumes with
                // Last-Event-ID after the `retry` delay; elsewhere this is
                // a plain call.
                conduit_mcp::server::http::close_sse_stream(&ctx);
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(CallToolResult::text(
                    "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
                ))
            },
        )
        .tool(
            "test_logging_tool",
            "Diagnostic logging validator tool",
            |_: NoArguments, ctx: RequestContext| async move {
                let sent = ctx
                    .log("info", json!("Diagnostic trace logging activated"))
                    .unwrap_or(false);
                Ok(CallToolResult::text(format!(
                    "Logging evaluated (log sent: {sent})"
                )))
            },
        )
        .tool(
            "test_trigger_tool_change",
            "Adds test_dynamic_tool, or removes it if present (tools list changed)",
            move |_: NoArguments, _ctx| {
                let tools = tools.clone();
                async move {
                    let added = !tools.remove_tool("test_dynamic_tool");
                    if added {
                        add_dynamic_tool(&tools);
                    }
                    let what = if added { "added" } else { "removed" };
                    Ok(CallToolResult::text(format!("test_dynamic_tool {what}")))
                }
            },
        )
        .tool(
            "test_trigger_prompt_change",
            "Registers test_dynamic_prompt again, changed (prompts list changed)",
            move |_: NoArguments, _ctx| {
                let (prompts, version) = (prompts.clone(), prompt_version.clone());
                async move {
                    let v = version.fetch_add(1, Ordering::Relaxed) + 1;
                    add_dynamic_prompt(&prompts, v);
                    Ok(CallToolResult::text(format!(
                        "test_dynamic_prompt version {v}"
                    )))
                }
            },
        );
    add_dynamic_tool(router);
    add_dynamic_prompt(router, 0);
}

/// `test_dynamic_tool`, added and removed at run time.
pub(super) fn add_dynamic_tool(router: &Router) {
    router.add_tool(
        Tool {
            name: "test_dynamic_tool".into(),
            description: Some("Dynamically added/removed tool".into()),
            ..Tool::default()
        },
        |_: NoArguments, _ctx| async { Ok(CallToolResult::text("Dynamic tool executed")) },
    );
}

/// `test_dynamic_prompt`, registered again at run time (version `v`).
pub(super) fn add_dynamic_prompt(router: &Router, v: u64) {
    let description = format!("Dynamically registered prompt (version {v})");
    let _ = router.clone().prompt(
        "test_dynamic_prompt",
        &description,
        move |_: NoArguments, _ctx| async move {
            Ok(messages(json!([{ "role": "user", "content": {
                "type": "text", "text": format!("Dynamic prompt version {v}") } }])))
        },
    );
}
