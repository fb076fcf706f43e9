//! The typed models against the official schemas, copied into
//! `tests/spec/<version>/` (CI runs on a clone of this repository alone):
//!
//! - every example message of the 2026-07-28 revision decodes into its
//!   model and re-encodes to the same JSON;
//! - for each modelled schema definition of both revisions, an instance
//!   with every property the schema defines decodes with none of them left
//!   over as an unknown member (so every field name matches the schema) and
//!   re-encodes to the same JSON.

use std::path::{Path, PathBuf};

use conduit_mcp::jsonrpc::{ErrorObject, Notification};
use conduit_mcp::protocol::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

fn spec(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/spec")
        .join(version)
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Decodes `v` as `T`, re-encodes it, and checks nothing changed.
fn round_trip<T: DeserializeOwned + Serialize>(v: &Value, what: &str) -> T {
    let t: T = serde_json::from_value(v.clone())
        .unwrap_or_else(|e| panic!("{what}: does not decode: {e}\n{v:#}"));
    let back = serde_json::to_value(&t).unwrap();
    assert_eq!(&back, v, "{what}: re-encoded differently");
    t
}

/// The part of a JSON-RPC envelope that is modelled: `result`, `params`
/// or `error`; the value itself when it is not an envelope.
fn body(v: &Value) -> &Value {
    for key in ["result", "params", "error"] {
        if let Some(b) = v.get(key) {
            return b;
        }
    }
    v
}

/// Round-trips one example of schema definition `def`; `false` when `def`
/// is not a modelled type.
fn example(def: &str, v: &Value, what: &str) -> bool {
    let b = body(v);
    macro_rules! rt {
        ($t:ty) => {{
            round_trip::<$t>(b, what);
        }};
    }
    match def {
        "AudioContent" | "ImageContent" | "TextContent" | "EmbeddedResource" | "ResourceLink" => {
            let c: ContentBlock = round_trip(b, what);
            assert!(!matches!(c, ContentBlock::Unknown(_)), "{what}: {c:?}");
        }
        "ToolResultContent" | "ToolUseContent" => {
            let c: SamplingContent = round_trip(b, what);
            assert!(!matches!(c, SamplingContent::Unknown(_)), "{what}: {c:?}");
        }
        "BlobResourceContents" | "TextResourceContents" => {
            let c: ResourceContents = round_trip(b, what);
            assert!(!matches!(c, ResourceContents::Unknown(_)), "{what}");
        }
        "BooleanSchema"
        | "NumberSchema"
        | "StringSchema"
        | "TitledMultiSelectEnumSchema"
        | "TitledSingleSelectEnumSchema"
        | "UntitledMultiSelectEnumSchema"
        | "UntitledSingleSelectEnumSchema" => rt!(PrimitiveSchema),
        "CallToolRequest" | "CallToolRequestParams" => rt!(CallToolParams),
        "CallToolResult" | "CallToolResultResponse" => rt!(CallToolResult),
        "CancelledNotificationParams" => rt!(CancelledParams),
        "ClientCapabilities" => rt!(ClientCapabilities),
        "CompleteRequest" | "CompleteRequestParams" => rt!(CompleteParams),
        "CompleteResult" | "CompleteResultResponse" => rt!(CompleteResult),
        "CreateMessageRequest" | "ElicitRequest" => {
            let r: InputRequest = round_trip(v, what);
            assert!(!matches!(r, InputRequest::Unknown(_)), "{what}: {r:?}");
        }
        // With an `id`: kept whole (typed only as `{method, params}`).
        "ListRootsRequest" => rt!(InputRequest),
        "CreateMessageRequestParams" => rt!(CreateMessageParams),
        "CreateMessageResult" => rt!(CreateMessageResult),
        "DiscoverRequest" => rt!(MetaParams),
        "DiscoverResult" | "DiscoverResultResponse" => {
            let d: DiscoverResult = round_trip(b, what);
            assert!(d.server_info().is_some(), "{what}");
        }
        "ElicitRequestFormParams" | "ElicitRequestURLParams" => rt!(ElicitParams),
        "ElicitResult" => rt!(ElicitResult),
        "GetPromptRequest" | "GetPromptRequestParams" => rt!(GetPromptParams),
        "GetPromptResult" | "GetPromptResultResponse" => rt!(GetPromptResult),
        "HeaderMismatchError"
        | "MissingRequiredClientCapabilityError"
        | "UnsupportedProtocolVersionError"
        | "InternalError"
        | "InvalidParamsError"
        | "MethodNotFoundError"
        | "ParseError" => rt!(ErrorObject),
        "InputRequests" => {
            let r: InputRequests = round_trip(b, what);
            assert!(r.values().all(|r| !matches!(r, InputRequest::Unknown(_))));
        }
        "InputRequiredResult" => rt!(InputRequiredResult),
        "InputResponses" => {
            let r: InputResponses = round_trip(b, what);
            assert!(r.values().all(|r| !matches!(r, InputResponse::Unknown(_))));
        }
        "ListPromptsRequest"
        | "ListResourceTemplatesRequest"
        | "ListResourcesRequest"
        | "ListToolsRequest"
        | "PaginatedRequestParams" => rt!(PaginatedParams),
        "ListPromptsResult" | "ListPromptsResultResponse" => rt!(ListPromptsResult),
        "ListResourceTemplatesResult" | "ListResourceTemplatesResultResponse" => {
            rt!(ListResourceTemplatesResult)
        }
        "ListResourcesResult" | "ListResourcesResultResponse" => rt!(ListResourcesResult),
        "ListToolsResult" | "ListToolsResultResponse" => rt!(ListToolsResult),
        "ListRootsResult" => rt!(ListRootsResult),
        "LoggingMessageNotificationParams" => rt!(LoggingMessageParams),
        "ModelPreferences" => rt!(ModelPreferences),
        "ProgressNotificationParams" => rt!(ProgressParams),
        "ReadResourceRequest" => rt!(ReadResourceParams),
        "ReadResourceResult" | "ReadResourceResultResponse" => rt!(ReadResourceResult),
        "Resource" => rt!(Resource),
        "ResourceUpdatedNotificationParams" => rt!(ResourceParams),
        "Root" => rt!(Root),
        "SamplingMessage" => rt!(SamplingMessage),
        "ServerCapabilities" => rt!(ServerCapabilities),
        "SubscriptionsListenRequest" => rt!(ListenParams),
        "SubscriptionsListenResult" | "SubscriptionsListenResultResponse" => {
            let r: ListenResult = round_trip(b, what);
            assert!(r.subscription_id().is_some(), "{what}");
        }
        "Tool" => rt!(Tool),
        d if d.ends_with("Notification") => {
            // A whole notification: typed by method, its params round trip.
            let n = Notification {
                method: v["method"].as_str().unwrap_or_default().to_owned(),
                params: v.get("params").cloned(),
            };
            let typed = ServerNotification::from_raw(n);
            assert!(
                !matches!(typed, ServerNotification::Unknown(_)),
                "{what}: {typed:?}"
            );
        }
        _ => return false,
    }
    true
}

#[test]
fn every_2026_07_28_example_decodes_and_re_encodes_to_the_same_json() {
    let dir = spec("2026-07-28").join("examples");
    let mut defs: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/spec/2026-07-28/examples")
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    defs.sort_by_key(|e| e.file_name());
    let (mut files, mut unmodelled) = (0, Vec::new());
    for d in defs {
        let def = d.file_name().to_string_lossy().into_owned();
        for f in std::fs::read_dir(d.path()).unwrap().flatten() {
            let v = read(&f.path());
            let what = format!("{def}/{}", f.file_name().to_string_lossy());
            if example(&def, &v, &what) {
                files += 1;
            } else {
                unmodelled.push(what);
            }
        }
    }
    eprintln!("{files} example files round-tripped");
    assert!(
        unmodelled.is_empty(),
        "examples of unmodelled types: {unmodelled:?}"
    );
    assert!(files >= 120, "only {files} examples found");
}

/// A value for `schema` with every property the schema defines (refs
/// resolved, first alternative of a union, consts and enums honoured).
fn instance(defs: &Map<String, Value>, schema: &Value, depth: usize) -> Value {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or_default();
        return instance(defs, &defs[name], depth);
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        return e[0].clone();
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(alts) = schema.get(union).and_then(Value::as_array) {
            return instance(defs, &alts[0], depth);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::Array(t)) => t.iter().find(|t| *t != "null").cloned(),
        t => t.cloned(),
    };
    match ty.as_ref().and_then(Value::as_str) {
        Some("string") => json!("x"),
        Some("integer") => json!(1),
        Some("number") => json!(1.5),
        Some("boolean") => json!(true),
        Some("array") => match schema.get("items") {
            Some(items) if depth < 6 => json!([instance(defs, items, depth + 1)]),
            _ => json!([]),
        },
        _ => {
            let mut m = Map::new();
            if depth < 6 {
                if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                    for (k, p) in props {
                        m.insert(k.clone(), instance(defs, p, depth + 1));
                    }
                }
            }
            Value::Object(m)
        }
    }
}

/// Decodes `v` as `T` and returns the members left unknown (`extra`)
/// after checking the round trip.
fn leftover<T: DeserializeOwned + Serialize>(
    v: &Value,
    def: &str,
    extra: fn(&T) -> &Extra,
) -> Vec<String> {
    let t: T = round_trip(v, def);
    extra(&t).keys().cloned().collect()
}

/// The unknown members of `v` decoded as the model of `def`; `None` when
/// `def` is not modelled as a struct with `extra`.
fn unknown_members(def: &str, v: &Value) -> Option<Vec<String>> {
    macro_rules! of {
        ($t:ty) => {
            leftover::<$t>(v, def, |t| &t.extra)
        };
    }
    macro_rules! tagged {
        ($enum:ty, $variant:path) => {{
            let e: $enum = round_trip(v, def);
            match e {
                $variant(inner) => inner.extra.keys().cloned().collect(),
                other => panic!("{def}: {other:?}"),
            }
        }};
    }
    Some(match def {
        "Annotations" => of!(Annotations),
        "AudioContent" => tagged!(ContentBlock, ContentBlock::Audio),
        "ImageContent" => tagged!(ContentBlock, ContentBlock::Image),
        "TextContent" => tagged!(ContentBlock, ContentBlock::Text),
        "EmbeddedResource" => tagged!(ContentBlock, ContentBlock::Resource),
        "ResourceLink" => tagged!(ContentBlock, ContentBlock::ResourceLink),
        "ToolUseContent" => tagged!(SamplingContent, SamplingContent::ToolUse),
        "ToolResultContent" => tagged!(SamplingContent, SamplingContent::ToolResult),
        "PromptReference" => tagged!(Reference, Reference::Prompt),
        "ResourceTemplateReference" => tagged!(Reference, Reference::ResourceTemplate),
        "BlobResourceContents" => tagged!(ResourceContents, ResourceContents::Blob),
        "TextResourceContents" => tagged!(ResourceContents, ResourceContents::Text),
        "CallToolRequestParams" => of!(CallToolParams),
        "CallToolResult" => of!(CallToolResult),
        "CancelledNotificationParams" => of!(CancelledParams),
        "ClientCapabilities" => of!(ClientCapabilities),
        "CompleteRequestParams" => of!(CompleteParams),
        "CompleteResult" => of!(CompleteResult),
        "CreateMessageRequestParams" => of!(CreateMessageParams),
        "CreateMessageResult" => of!(CreateMessageResult),
        "CreateTaskResult" => of!(CreateTaskResult),
        "DiscoverResult" => of!(DiscoverResult),
        "ElicitRequestFormParams" | "ElicitRequestURLParams" => of!(ElicitParams),
        "ElicitResult" => of!(ElicitResult),
        "ElicitationCompleteNotification" => return None,
        "GetPromptRequestParams" => of!(GetPromptParams),
        "GetPromptResult" => of!(GetPromptResult),
        "Icon" => of!(Icon),
        "Implementation" => of!(Implementation),
        "InitializeRequestParams" => of!(InitializeParams),
        "InitializeResult" => of!(InitializeResult),
        "InputRequiredResult" => of!(InputRequiredResult),
        "ListPromptsResult" => of!(ListPromptsResult),
        "ListResourceTemplatesResult" => of!(ListResourceTemplatesResult),
        "ListResourcesResult" => of!(ListResourcesResult),
        "ListRootsResult" => of!(ListRootsResult),
        "ListTasksResult" => of!(ListTasksResult),
        "ListToolsResult" => of!(ListToolsResult),
        "LoggingMessageNotificationParams" => of!(LoggingMessageParams),
        "ModelHint" => of!(ModelHint),
        "ModelPreferences" => of!(ModelPreferences),
        "PaginatedRequestParams" => of!(PaginatedParams),
        "ProgressNotificationParams" => of!(ProgressParams),
        "Prompt" => of!(Prompt),
        "PromptArgument" => of!(PromptArgument),
        "PromptMessage" => of!(PromptMessage),
        "ReadResourceRequestParams" => of!(ReadResourceParams),
        "ReadResourceResult" => of!(ReadResourceResult),
        "Resource" => of!(Resource),
        "ResourceTemplate" => of!(ResourceTemplate),
        "ResourceUpdatedNotificationParams"
        | "SubscribeRequestParams"
        | "UnsubscribeRequestParams" => of!(ResourceParams),
        "Root" => of!(Root),
        "SamplingMessage" => of!(SamplingMessage),
        "ServerCapabilities" => of!(ServerCapabilities),
        "SetLevelRequestParams" => of!(SetLevelParams),
        "SubscriptionFilter" => of!(SubscriptionFilter),
        "SubscriptionsAcknowledgedNotificationParams" => of!(SubscriptionsAcknowledgedParams),
        "SubscriptionsListenRequestParams" => of!(ListenParams),
        "SubscriptionsListenResult" => of!(ListenResult),
        "TaskMetadata" => of!(TaskMetadata),
        "Tool" => of!(Tool),
        "ToolAnnotations" => of!(ToolAnnotations),
        "ToolChoice" => of!(ToolChoice),
        "ToolExecution" => of!(ToolExecution),
        "BooleanSchema" | "NumberSchema" | "StringSchema" => {
            // The kind's own members are meant to be in `extra`.
            let s: PrimitiveSchema = round_trip(v, def);
            let typed = ["type", "title", "description", "default"];
            return Some(
                s.extra
                    .keys()
                    .filter(|k| typed.contains(&k.as_str()))
                    .cloned()
                    .collect(),
            );
        }
        _ => return None,
    })
}

#[test]
fn field_names_match_both_schemas() {
    let mut checked = 0;
    for version in ["2025-11-25", "2026-07-28"] {
        let schema = read(&spec(version).join("schema.json"));
        let defs = schema["$defs"].as_object().expect("$defs");
        for (def, s) in defs {
            let v = instance(defs, s, 0);
            if let Some(unknown) = unknown_members(def, &v) {
                assert!(
                    unknown.is_empty(),
                    "{version} {def}: members not modelled: {unknown:?}"
                );
                checked += 1;
            }
        }
    }
    eprintln!("{checked} schema definitions checked");
    assert!(checked >= 120, "{checked}");
}

#[test]
fn unknown_members_kinds_and_values_survive() {
    let v = json!({
        "content": [
            { "type": "text", "text": "a", "x-new": 1 },
            { "type": "hologram", "frames": 3 }
        ],
        "isError": false,
        "future": { "nested": true }
    });
    let r: CallToolResult = round_trip(&v, "CallToolResult");
    assert_eq!(r.extra["future"], json!({ "nested": true }));
    assert!(matches!(&r.content[1], ContentBlock::Unknown(_)));
    assert_eq!(r.content[1].kind(), "hologram");
    let level: LoggingLevel = serde_json::from_value(json!("verbose")).unwrap();
    assert_eq!(level, LoggingLevel::Other("verbose".into()));
    assert_eq!(serde_json::to_value(&level).unwrap(), json!("verbose"));
    let n = ServerNotification::from_raw(Notification {
        method: "notifications/unheard_of".into(),
        params: Some(json!({ "a": 1 })),
    });
    assert!(
        matches!(n, ServerNotification::Unknown(ref raw) if raw.params == Some(json!({"a": 1})))
    );
    // A known method with params of the wrong shape stays raw too.
    let n = ServerNotification::from_raw(Notification {
        method: "notifications/progress".into(),
        params: Some(json!({ "progress": "lots" })),
    });
    assert!(matches!(n, ServerNotification::Unknown(_)), "{n:?}");
}

#[test]
fn implementation_keeps_its_title() {
    let v = json!({ "name": "srv", "version": "1", "title": "The Server", "websiteUrl": "https://example.com" });
    let i: Implementation = round_trip(&v, "Implementation");
    assert_eq!(i.title.as_deref(), Some("The Server"));
}

#[test]
fn result_helpers() {
    let r = CallToolResult::error("no such city");
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({ "content": [{ "type": "text", "text": "no such city" }], "isError": true })
    );
    let r = CallToolResult::structured(json!({ "t": 21.5 }));
    assert_eq!(r.structured_content, Some(json!({ "t": 21.5 })));
    assert_eq!(r.joined_text(), r#"{"t":21.5}"#);
    assert!(!r.is_error());
}
