//! Tools that return one kind of content each, the tool error, and the JSON Schema 2020-12 tool.

use super::*;

/// Tools that return one kind of content each, and the tool error.
pub(super) fn content_tools(router: &Router) {
    router
        .clone()
        .tool(
            "test_simple_text",
            "Tests simple text content response",
            |_: NoArguments, _ctx| async {
                Ok(CallToolResult::text(
                    "This is a simple text response for testing.",
                ))
            },
        )
        .tool(
            "test_image_content",
            "Tests image content response",
            |_: NoArguments, _ctx| async {
                Ok(content(
                    json!([{ "type": "image", "data": PNG, "mimeType": "image/png" }]),
                ))
            },
        )
        .tool(
            "test_audio_content",
            "Tests audio content response",
            |_: NoArguments, _ctx| async {
                Ok(content(
                    json!([{ "type": "audio", "data": WAV, "mimeType": "audio/wav" }]),
                ))
            },
        )
        .tool(
            "test_embedded_resource",
            "Tests embedded resource content response",
            |_: NoArguments, _ctx| async {
                Ok(content(json!([{ "type": "resource", "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content.",
                } }])))
            },
        )
        .tool(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
            |_: NoArguments, _ctx| async {
                Ok(content(json!([
                    { "type": "text", "text": "Multiple content types test:" },
                    { "type": "image", "data": PNG, "mimeType": "image/png" },
                    { "type": "resource", "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": json!({ "test": "data", "value": 123 }).to_string(),
                    } },
                ])))
            },
        )
        .tool(
            "test_error_handling",
            "Tests error response handling",
            |_: NoArguments, _ctx| async {
                Ok(CallToolResult::error(
                    "This tool intentionally returns an error for testing",
                ))
            },
        );
    // SEP-1613/SEP-2106: a raw JSON Schema 2020-12 input schema, listed as is.
    router.add_tool(
        Tool {
            name: "json_schema_2020_12_tool".into(),
            description: Some(
                "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)".into(),
            ),
            input_schema: json_schema_2020_12(),
            ..Tool::default()
        },
        |args: ContactArgs, _ctx| async move {
            let name = args.name.unwrap_or_default();
            Ok(CallToolResult::text(format!(
                "JSON Schema 2020-12 tool called with name {name:?}"
            )))
        },
    );
}

/// The input schema of `json_schema_2020_12_tool`, as the suite expects it.
pub(super) fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } },
            },
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" },
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false,
    })
}
