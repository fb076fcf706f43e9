//! Tools that send log and progress notifications while they run.

use super::*;

/// Tools that send log and progress notifications while they run.
pub(super) fn notification_tools(router: &Router) {
    router
        .clone()
        .tool(
            "test_tool_with_logging",
            "Tests tool that emits log messages during execution",
            |_: NoArguments, ctx: RequestContext| async move {
                let steps = [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ];
                for (i, step) in steps.iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    // Legacy: always sent; modern: only when the request's
                    // _meta asks for this level.
                    let _ = ctx.log("info", json!(step));
                }
                Ok(CallToolResult::text(
                    "Tool with logging executed successfully",
                ))
            },
        )
        .tool(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
            |_: NoArguments, ctx: RequestContext| async move {
                for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    let message = format!("Completed step {step} of 100");
                    let _ = ctx.progress(step, Some(100.0), Some(&message));
                }
                let token = match ctx.progress_token() {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => "no progress token".into(),
                };
                Ok(CallToolResult::text(token))
            },
        );
}
