//! Tools that ask the client for sampling or elicitation (legacy scenarios; `input_required` rounds in the modern era).

use super::*;

/// Tools that ask the client for sampling or elicitation (legacy scenarios;
/// in the modern era the same code answers with `input_required`).
pub(super) fn input_tools(router: &Router) {
    router
        .clone()
        .tool(
            "test_sampling",
            "Tests server-initiated sampling (LLM completion request)",
            |args: SamplingArgs, ctx: RequestContext| async move {
                let v = ctx.ask("sampling", sample(&args.prompt, 100)).await?;
                let r: CreateMessageResult = answer("sampling", v)?;
                Ok(CallToolResult::text(format!(
                    "LLM response: {}",
                    sampled_text(&r)
                )))
            },
        )
        .tool(
            "test_elicitation",
            "Tests server-initiated elicitation (user input request)",
            |args: ElicitationArgs, ctx: RequestContext| async move {
                let request = elicit(
                    &args.message,
                    json!({
                        "username": { "type": "string", "description": "User's response" },
                        "email": { "type": "string", "description": "User's email address" },
                    }),
                    &["username", "email"],
                );
                let v = ctx.ask("elicitation", request).await?;
                let r: ElicitResult = answer("elicitation", v)?;
                Ok(CallToolResult::text(format!(
                    "User response: {}",
                    elicit_text(&r)
                )))
            },
        )
        .tool(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values per SEP-1034",
            |_: NoArguments, ctx: RequestContext| async move {
                let request = InputRequest::elicit(json!({
                    "message": "Please review and update the form fields with defaults",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "name": { "type": "string", "description": "User name", "default": "John Doe" },
                            "age": { "type": "integer", "description": "User age", "default": 30 },
                            "score": { "type": "number", "description": "User score", "default": 95.5 },
                            "status": {
                                "type": "string",
                                "description": "User status",
                                "enum": ["active", "inactive", "pending"],
                                "default": "active",
                            },
                            "verified": { "type": "boolean", "description": "Verification status", "default": true },
                        },
                        "required": [],
                    },
                }));
                let v = ctx.ask("defaults", request).await?;
                let r: ElicitResult = answer("defaults", v)?;
                Ok(CallToolResult::text(format!(
                    "Elicitation completed: {}",
                    elicit_text(&r)
                )))
            },
        )
        .tool(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements per SEP-1330",
            |_: NoArguments, ctx: RequestContext| async move {
                let titled = |labels: [&str; 3]| -> Value {
                    labels
                        .iter()
                        .enumerate()
                        .map(|(i, t)| json!({ "const": format!("value{}", i + 1), "title": t }))
                        .collect()
                };
                let request = InputRequest::elicit(json!({
                    "message": "Please select options from the enum fields",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "untitledSingle": {
                                "type": "string",
                                "description": "Select one option",
                                "enum": ["option1", "option2", "option3"],
                            },
                            "titledSingle": {
                                "type": "string",
                                "description": "Select one option with titles",
                                "oneOf": titled(["First Option", "Second Option", "Third Option"]),
                            },
                            "legacyEnum": {
                                "type": "string",
                                "description": "Select one option (legacy)",
                                "enum": ["opt1", "opt2", "opt3"],
                                "enumNames": ["Option One", "Option Two", "Option Three"],
                            },
                            "untitledMulti": {
                                "type": "array",
                                "description": "Select multiple options",
                                "minItems": 1,
                                "maxItems": 3,
                                "items": { "type": "string", "enum": ["option1", "option2", "option3"] },
                            },
                            "titledMulti": {
                                "type": "array",
                                "description": "Select multiple options with titles",
                                "minItems": 1,
                                "maxItems": 3,
                                "items": { "anyOf": titled(["First Choice", "Second Choice", "Third Choice"]) },
                            },
                        },
                        "required": [],
                    },
                }));
                let v = ctx.ask("enums", request).await?;
                let r: ElicitResult = answer("enums", v)?;
                Ok(CallToolResult::text(format!(
                    "Elicitation completed: {}",
                    elicit_text(&r)
                )))
            },
        );
}
