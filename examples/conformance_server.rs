//! The server the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) scores: the fixtures of the suite's
//! reference "everything server", built with this crate's [`Router`], in
//! both eras at once.
//!
//! - `PORT=N conformance_server`: Streamable HTTP on
//!   `http://127.0.0.1:N/mcp` (see [`serve_http`]); `.ci/conformance.sh`
//!   runs the suite against it.
//! - `conformance_server --stdio`: the same fixtures over stdio (the tests in
//!   `tests/conformance_fixtures.rs` drive it with this crate's client).
//!
//! SIGTERM or SIGINT stops it; it then exits 0.
//!
//! Fixtures (names and contents are the suite's: its scenarios under
//! `src/scenarios/server/` and its reference server
//! `examples/servers/typescript/everything-server.ts`):
//! - tools: content of every type (`test_simple_text`, `test_image_content`,
//!   `test_audio_content`, `test_embedded_resource`,
//!   `test_multiple_content_types`), notifications (`test_tool_with_logging`,
//!   `test_tool_with_progress`), a tool error (`test_error_handling`), input
//!   from the client (`test_sampling`, `test_elicitation`, the SEP-1034 and
//!   SEP-1330 elicitation schemas, and the SEP-2322 `test_input_required_result_*`
//!   tools), run-time list changes (`test_dynamic_tool` toggled by
//!   `test_trigger_tool_change`, `test_dynamic_prompt` by
//!   `test_trigger_prompt_change`), and the diagnostic tools of the
//!   stateless scenario (`test_missing_capability`,
//!   `test_streaming_elicitation`, `test_logging_tool`);
//! - resources `test://static-text`, `test://static-binary`,
//!   `test://watched-resource` (subscribable; `test_trigger_resource_update`
//!   changes it) and the template `test://template/{id}/data`;
//! - prompts `test_simple_prompt`, `test_prompt_with_arguments`,
//!   `test_prompt_with_embedded_resource`, `test_prompt_with_image`,
//!   `test_input_required_result_prompt`; completions; logging.
//!
//! Input from the client goes through [`RequestContext::ask`]: a
//! server-to-client request in the legacy era, an `input_required` round in
//! the modern era, with the same handler code. Request state is sealed with
//! a keyed hash so that a tampered state is refused.

use std::hash::BuildHasher;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use conduit_mcp::protocol::{
    CacheScope, CallToolResult, CompleteParams, CompleteResult, Completion, CreateMessageResult,
    ElicitAction, ElicitResult, GetPromptResult, Implementation, ListRootsResult,
    ReadResourceResult, Reference, Resource, ResourceTemplate, Tool,
};
use conduit_mcp::server::http::{HttpConfig, HttpServer};
use conduit_mcp::server::{
    HandlerError, InputRequest, RequestContext, Router, ServerConfig, StdioServer,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

/// A 1x1 red PNG, base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file, base64.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
/// The subscribable resource.
const WATCHED: &str = "test://watched-resource";
/// The resource template.
const TEMPLATE: &str = "test://template/{id}/data";

// ------------------------------------------------------------------ main

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    if std::env::args().skip(1).any(|a| a == "--stdio") {
        return serve_stdio().await;
    }
    match std::env::var("PORT").map(|p| p.parse::<u16>()) {
        Ok(Ok(port)) if port != 0 => serve_http(port).await,
        _ => {
            eprintln!(
                "usage: PORT=N conformance_server   (Streamable HTTP on http://127.0.0.1:N/mcp)\n       conformance_server --stdio"
            );
            ExitCode::from(2)
        }
    }
}

/// The server's identity, capabilities beyond the router's, and cache hints.
fn server_config() -> ServerConfig {
    ServerConfig::new(Implementation::new(
        "conduit-mcp-conformance",
        env!("CARGO_PKG_VERSION"),
    ))
    // Tools, resources, prompts and completions are declared by the router.
    .capabilities(json!({ "logging": {} }))
    .instructions("The fixtures of the MCP conformance suite's everything server.")
    // Every cacheable result is the same for every client: public, 1 minute.
    .cache_hint(60_000, CacheScope::Public)
}

/// Serves the fixtures over this process's stdin/stdout until end of input
/// or SIGTERM/SIGINT (exit 0).
async fn serve_stdio() -> ExitCode {
    let server = StdioServer::new(server_config().stdout_guard(true));
    let handle = server.handle();
    tokio::spawn(async move {
        shutdown_signal().await;
        handle.stop();
    });
    match server.serve(router()).await {
        Ok(end) => {
            tracing::info!(?end, "conformance server: stdio serving ended");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("conformance_server: stdio serving failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Serves [`router`] with [`server_config`] over Streamable HTTP on
/// `http://127.0.0.1:{port}/mcp`, both eras at once, until SIGTERM/SIGINT,
/// then returns `ExitCode::SUCCESS`.
///
/// One router serves every session and request, so a trigger tool called
/// on one request reaches the streams of the others. The HTTP defaults
/// (loopback `Host`/`Origin` on any port, 1024 sessions with idle expiry)
/// are what a run of the suite needs.
async fn serve_http(port: u16) -> ExitCode {
    let config = HttpConfig::new(server_config());
    let server = match HttpServer::bind(("127.0.0.1", port), config).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("conformance_server: cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let handle = server.handle();
    tokio::spawn(async move {
        shutdown_signal().await;
        handle.stop();
    });
    if let Ok(url) = server.url() {
        eprintln!("conformance_server: serving {url}");
    }
    match server.serve(router()).await {
        Ok(end) => {
            tracing::info!(?end, "conformance server: HTTP serving ended");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("conformance_server: HTTP serving failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

// ------------------------------------------------------------- arguments

/// Tools without arguments.
#[derive(Deserialize, JsonSchema)]
struct NoArguments {}

/// `test_sampling`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the LLM.
    prompt: String,
}

/// `test_elicitation`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

/// `json_schema_2020_12_tool`'s arguments (its listed schema is the raw
/// 2020-12 one, [`json_schema_2020_12`]).
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // decoded to check the arguments, not read
struct ContactArgs {
    name: Option<String>,
    address: Option<Value>,
    #[serde(rename = "contactMethod")]
    contact_method: Option<String>,
    phone: Option<String>,
    email: Option<String>,
}

/// `test_prompt_with_arguments`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct PromptArgs {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

/// `test_prompt_with_embedded_resource`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct EmbedArgs {
    /// URI of the resource to embed.
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

// --------------------------------------------------------------- helpers

/// A fixture value built from JSON. The values are constants of this file,
/// so a failure is a bug here (and fails the tests at once).
fn typed<T: DeserializeOwned>(v: Value) -> T {
    match serde_json::from_value(v) {
        Ok(t) => t,
        Err(e) => panic!("conformance fixture does not match its type: {e}"),
    }
}

/// A tool result with these content blocks.
fn content(blocks: Value) -> CallToolResult {
    typed(json!({ "content": blocks }))
}

/// A prompt result with these messages.
fn messages(messages: Value) -> GetPromptResult {
    typed(json!({ "messages": messages }))
}

/// One text resource's contents.
fn text_contents(uri: &str, mime: &str, text: &str) -> ReadResourceResult {
    typed(json!({ "contents": [{ "uri": uri, "mimeType": mime, "text": text }] }))
}

/// The client's answer to an input request, decoded as `T`; an answer of
/// the wrong shape is the client's error (-32602 naming the key).
fn answer<T: DeserializeOwned>(key: &str, v: Value) -> Result<T, HandlerError> {
    serde_json::from_value(v).map_err(|e| {
        HandlerError::InvalidParams(format!("inputResponses.{key} is not a valid answer: {e}"))
    })
}

/// An elicitation answer as text: `action=..., content={...}`.
fn elicit_text(r: &ElicitResult) -> String {
    let content = r.content.clone().map(Value::Object).unwrap_or(json!({}));
    format!("action={}, content={content}", r.action)
}

/// The text of a sampling answer.
fn sampled_text(r: &CreateMessageResult) -> String {
    serde_json::to_value(&r.content)
        .ok()
        .and_then(|c| c.get("text").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "No response".into())
}

/// A string field of an accepted elicitation's content.
fn field(r: &ElicitResult, name: &str) -> Option<String> {
    r.content
        .as_ref()?
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// An elicitation request: `message` and a flat object schema.
fn elicit(message: &str, properties: Value, required: &[&str]) -> InputRequest {
    InputRequest::elicit(json!({
        "message": message,
        "requestedSchema": { "type": "object", "properties": properties, "required": required },
    }))
}

/// A one-message sampling request.
fn sample(text: &str, max_tokens: u64) -> InputRequest {
    InputRequest::create_message(json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
        "maxTokens": max_tokens,
    }))
}

/// Seals request state with a keyed hash (SipHash with a random key per
/// process), so that a client cannot forge or alter it. `requestState` is
/// attacker-controlled; a real server would use HMAC-SHA-256 with a key
/// that survives restarts.
struct Seal {
    key: std::collections::hash_map::RandomState,
}

impl Seal {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            key: Default::default(),
        })
    }

    fn tag(&self, body: &str) -> String {
        format!("{:016x}", self.key.hash_one(body.as_bytes()))
    }

    /// `value` sealed for `tool`.
    fn seal(&self, tool: &str, value: Value) -> String {
        let body = json!({ "tool": tool, "state": value }).to_string();
        let tag = self.tag(&body);
        format!("{body}.{tag}")
    }

    /// The request's state for `tool`: `None` without one, an error (-32602)
    /// if it was not sealed here for this tool.
    fn open(&self, tool: &str, ctx: &RequestContext) -> Result<Option<Value>, HandlerError> {
        let Some(state) = ctx.request_state() else {
            return Ok(None);
        };
        let bad = || HandlerError::InvalidParams("requestState integrity check failed".into());
        let (body, tag) = state.rsplit_once('.').ok_or_else(bad)?;
        if tag != self.tag(body) {
            return Err(bad());
        }
        let v: Value = serde_json::from_str(body).map_err(|_| bad())?;
        if v["tool"] != tool {
            return Err(bad());
        }
        Ok(Some(v["state"].clone()))
    }
}

// ---------------------------------------------------------------- router

/// Every fixture, registered on one router.
fn router() -> Router {
    let router = Router::new();
    content_tools(&router);
    notification_tools(&router);
    input_tools(&router);
    input_required_tools(&router, Seal::new());
    diagnostic_tools(&router);
    resources(&router);
    prompts(&router);
    router.clone().completion(complete)
}

/// Tools that return one kind of content each, and the tool error.
fn content_tools(router: &Router) {
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
fn json_schema_2020_12() -> Value {
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

/// Tools that send log and progress notifications while they run.
fn notification_tools(router: &Router) {
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

/// Tools that ask the client for sampling or elicitation (legacy scenarios;
/// in the modern era the same code answers with `input_required`).
fn input_tools(router: &Router) {
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

/// The SEP-2322 (multi round-trip) tools of the `input-required-result-*`
/// scenarios. Each asks through [`RequestContext::ask`], so in the legacy
/// era they send real requests and complete in one call.
fn input_required_tools(router: &Router, seal: Arc<Seal>) {
    const ELICIT: &str = "test_input_required_result_elicitation";
    const STATE: &str = "test_input_required_result_request_state";
    const MULTIPLE: &str = "test_input_required_result_multiple_inputs";
    const ROUNDS: &str = "test_input_required_result_multi_round";
    const TAMPER: &str = "test_input_required_result_tampered_state";
    const CAPS: &str = "test_input_required_result_capabilities";
    let name = || json!({ "name": { "type": "string" } });
    let (s1, s2, s3, s4, s5) = (seal.clone(), seal.clone(), seal.clone(), seal.clone(), seal);
    router
        .clone()
        .tool(
            ELICIT,
            "MRTR: returns InputRequiredResult with elicitation request",
            move |_: NoArguments, ctx: RequestContext| async move {
                let v = ctx
                    .ask("user_name", elicit("What is your name?", name(), &["name"]))
                    .await?;
                let r: ElicitResult = answer("user_name", v)?;
                let who = field(&r, "name").unwrap_or_else(|| "unknown".into());
                Ok(CallToolResult::text(format!("Hello, {who}!")))
            },
        )
        .tool(
            "test_input_required_result_sampling",
            "MRTR: returns InputRequiredResult with sampling request",
            |_: NoArguments, ctx: RequestContext| async move {
                let v = ctx
                    .ask(
                        "capital_question",
                        sample("What is the capital of France?", 100),
                    )
                    .await?;
                let r: CreateMessageResult = answer("capital_question", v)?;
                Ok(CallToolResult::text(format!(
                    "Sampling result: {}",
                    sampled_text(&r)
                )))
            },
        )
        .tool(
            "test_input_required_result_list_roots",
            "MRTR: returns InputRequiredResult with roots/list request",
            |_: NoArguments, ctx: RequestContext| async move {
                let v = ctx.ask("client_roots", InputRequest::list_roots()).await?;
                let r: ListRootsResult = answer("client_roots", v)?;
                Ok(CallToolResult::text(format!(
                    "Found {} root(s)",
                    r.roots.len()
                )))
            },
        )
        .tool(
            STATE,
            "MRTR: returns InputRequiredResult with requestState",
            move |_: NoArguments, ctx: RequestContext| {
                let seal = s1.clone();
                async move {
                    let state = seal.open(STATE, &ctx)?;
                    ctx.set_request_state(seal.seal(STATE, json!({ "step": "confirm" })));
                    let confirm = elicit(
                        "Please confirm",
                        json!({ "ok": { "type": "boolean" } }),
                        &["ok"],
                    );
                    let v = ctx.ask("confirm", confirm).await?;
                    let r: ElicitResult = answer("confirm", v)?;
                    let ok = r.action == ElicitAction::Accept
                        && r.content.as_ref().and_then(|c| c.get("ok")) == Some(&json!(true));
                    // Legacy: no round trip, so no state to check.
                    let text = match (state, ok) {
                        (Some(_), true) => "state-ok: requestState validated",
                        (None, true) => "confirmed (no requestState in this era)",
                        (_, false) => "not confirmed",
                    };
                    Ok(CallToolResult::text(text))
                }
            },
        )
        .tool(
            MULTIPLE,
            "MRTR: returns InputRequiredResult with multiple input requests",
            move |_: NoArguments, ctx: RequestContext| {
                let seal = s2.clone();
                async move {
                    seal.open(MULTIPLE, &ctx)?;
                    ctx.set_request_state(seal.seal(MULTIPLE, json!({ "step": "inputs" })));
                    let got = ctx
                        .ask_all(vec![
                            (
                                "user_name".into(),
                                elicit("What is your name?", name(), &["name"]),
                            ),
                            ("greeting".into(), sample("Generate a greeting", 50)),
                            ("client_roots".into(), InputRequest::list_roots()),
                        ])
                        .await?;
                    let take = |k: &str| got.get(k).cloned().unwrap_or(Value::Null);
                    let user: ElicitResult = answer("user_name", take("user_name"))?;
                    let greeting: CreateMessageResult = answer("greeting", take("greeting"))?;
                    let roots: ListRootsResult = answer("client_roots", take("client_roots"))?;
                    Ok(CallToolResult::text(format!(
                        "Name: {}; Greeting: {}; Roots: {}",
                        field(&user, "name").unwrap_or_else(|| "unknown".into()),
                        sampled_text(&greeting),
                        roots.roots.len()
                    )))
                }
            },
        )
        .tool(
            ROUNDS,
            "MRTR: multi-round InputRequiredResult workflow",
            move |_: NoArguments, ctx: RequestContext| {
                let seal = s3.clone();
                async move {
                    // The state says how far the client got: round 2 carries
                    // the name, so step 1 is not asked again.
                    let state = seal.open(ROUNDS, &ctx)?.unwrap_or(Value::Null);
                    let name_from_state = (state["round"] == 2)
                        .then(|| state["name"].as_str().map(str::to_owned))
                        .flatten();
                    let who = match name_from_state {
                        Some(n) => n,
                        None => {
                            ctx.set_request_state(seal.seal(ROUNDS, json!({ "round": 1 })));
                            let q = elicit("Step 1: What is your name?", name(), &["name"]);
                            let r: ElicitResult = answer("step1", ctx.ask("step1", q).await?)?;
                            field(&r, "name").unwrap_or_else(|| "friend".into())
                        }
                    };
                    ctx.set_request_state(seal.seal(ROUNDS, json!({ "round": 2, "name": who })));
                    let q = elicit(
                        "Step 2: What is your favorite color?",
                        json!({ "color": { "type": "string" } }),
                        &["color"],
                    );
                    let r: ElicitResult = answer("step2", ctx.ask("step2", q).await?)?;
                    let color = field(&r, "color").unwrap_or_else(|| "no color".into());
                    Ok(CallToolResult::text(format!(
                        "Multi-round complete for {who} who likes {color}"
                    )))
                }
            },
        )
        .tool(
            TAMPER,
            "MRTR: integrity-protected requestState",
            move |_: NoArguments, ctx: RequestContext| {
                let seal = s4.clone();
                async move {
                    // A tampered state fails here, before anything else.
                    seal.open(TAMPER, &ctx)?;
                    ctx.set_request_state(seal.seal(TAMPER, json!({ "step": "confirm" })));
                    let confirm = elicit(
                        "Please confirm",
                        json!({ "ok": { "type": "boolean" } }),
                        &["ok"],
                    );
                    let r: ElicitResult = answer("confirm", ctx.ask("confirm", confirm).await?)?;
                    Ok(CallToolResult::text(format!(
                        "integrity-ok: state verified, {}",
                        elicit_text(&r)
                    )))
                }
            },
        )
        .tool(
            CAPS,
            "MRTR: asks only for what the client declared",
            move |_: NoArguments, ctx: RequestContext| {
                let seal = s5.clone();
                async move {
                    seal.open(CAPS, &ctx)?;
                    let mut wanted = Vec::new();
                    if ctx.client_supports("elicitation") {
                        let q = elicit(
                            "Elicitation input",
                            json!({ "value": { "type": "string" } }),
                            &["value"],
                        );
                        wanted.push(("elicit_input".to_owned(), q));
                    }
                    if ctx.client_supports("sampling") {
                        wanted.push(("sample_input".to_owned(), sample("Sample request", 50)));
                    }
                    if wanted.is_empty() {
                        return Ok(CallToolResult::text("No supported capabilities declared"));
                    }
                    ctx.set_request_state(seal.seal(CAPS, json!({ "step": "capabilities" })));
                    let got = ctx.ask_all(wanted).await?;
                    let keys: Vec<&str> = got.keys().map(String::as_str).collect();
                    Ok(CallToolResult::text(format!(
                        "capabilities-ok: received {}",
                        keys.join(",")
                    )))
                }
            },
        );
}

/// The diagnostic tools of the modern `server-stateless` scenario, and the
/// triggers of run-time list changes and resource updates.
fn diagnostic_tools(router: &Router) {
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
fn add_dynamic_tool(router: &Router) {
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
fn add_dynamic_prompt(router: &Router, v: u64) {
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

/// The resources and the template, and the watched resource's updates.
fn resources(router: &Router) {
    let version = Arc::new(AtomicU64::new(0));
    let described = |uri: &str, name: &str, title: &str, description: &str, mime: &str| Resource {
        title: Some(title.into()),
        description: Some(description.into()),
        mime_type: Some(mime.into()),
        ..Resource::new(uri, name)
    };
    let watched = version.clone();
    let updater = router.clone();
    router
        .clone()
        .resource(
            described(
                "test://static-text",
                "static-text",
                "Static Text Resource",
                "A static text resource for testing",
                "text/plain",
            ),
            |_ctx| async {
                Ok(text_contents(
                    "test://static-text",
                    "text/plain",
                    "This is the content of the static text resource.",
                ))
            },
        )
        .resource(
            described(
                "test://static-binary",
                "static-binary",
                "Static Binary Resource",
                "A static binary resource (image) for testing",
                "image/png",
            ),
            |_ctx| async {
                Ok(typed(json!({ "contents": [{
                    "uri": "test://static-binary", "mimeType": "image/png", "blob": PNG,
                }] })))
            },
        )
        .resource(
            described(
                WATCHED,
                "watched-resource",
                "Watched Resource",
                "A resource that changes when test_trigger_resource_update is called",
                "text/plain",
            ),
            move |_ctx| {
                let v = watched.load(Ordering::Relaxed);
                async move {
                    let text = match v {
                        0 => "Watched resource content".to_owned(),
                        v => format!("Watched resource content (update {v})"),
                    };
                    Ok(text_contents(WATCHED, "text/plain", &text))
                }
            },
        )
        .resource_template(
            ResourceTemplate {
                uri_template: TEMPLATE.into(),
                name: "template".into(),
                title: Some("Resource Template".into()),
                description: Some("A resource template with parameter substitution".into()),
                mime_type: Some("application/json".into()),
                ..Default::default()
            },
            |uri, vars, _ctx| async move {
                let id = vars.get("id").and_then(Value::as_str).unwrap_or_default();
                let body =
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                Ok(text_contents(&uri, "application/json", &body.to_string()))
            },
        )
        .tool(
            "test_trigger_resource_update",
            "Changes test://watched-resource and notifies its subscribers",
            move |_: NoArguments, _ctx| {
                let (router, version) = (updater.clone(), version.clone());
                async move {
                    let v = version.fetch_add(1, Ordering::Relaxed) + 1;
                    router.resource_updated(WATCHED);
                    Ok(CallToolResult::text(format!("{WATCHED} update {v}")))
                }
            },
        );
}

/// The prompts.
fn prompts(router: &Router) {
    router
        .clone()
        .prompt(
            "test_simple_prompt",
            "A simple prompt without arguments",
            |_: NoArguments, _ctx| async {
                Ok(messages(json!([{ "role": "user", "content": {
                    "type": "text", "text": "This is a simple prompt for testing." } }])))
            },
        )
        .prompt(
            "test_prompt_with_arguments",
            "A prompt with required arguments",
            |a: PromptArgs, _ctx| async move {
                let text = format!("Prompt with arguments: arg1='{}', arg2='{}'", a.arg1, a.arg2);
                Ok(messages(json!([{ "role": "user", "content": { "type": "text", "text": text } }])))
            },
        )
        .prompt(
            "test_prompt_with_embedded_resource",
            "A prompt that includes an embedded resource",
            |a: EmbedArgs, _ctx| async move {
                Ok(messages(json!([
                    { "role": "user", "content": { "type": "resource", "resource": {
                        "uri": a.resource_uri,
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    } } },
                    { "role": "user", "content": {
                        "type": "text", "text": "Please process the embedded resource above." } },
                ])))
            },
        )
        .prompt(
            "test_prompt_with_image",
            "A prompt that includes image content",
            |_: NoArguments, _ctx| async {
                Ok(messages(json!([
                    { "role": "user", "content": { "type": "image", "data": PNG, "mimeType": "image/png" } },
                    { "role": "user", "content": { "type": "text", "text": "Please analyze the image above." } },
                ])))
            },
        )
        .prompt(
            "test_input_required_result_prompt",
            "MRTR: prompt that requires elicitation input",
            |_: NoArguments, ctx: RequestContext| async move {
                let q = elicit(
                    "What context should the prompt use?",
                    json!({ "context": { "type": "string" } }),
                    &["context"],
                );
                let r: ElicitResult = answer("user_context", ctx.ask("user_context", q).await?)?;
                let context = field(&r, "context").unwrap_or_else(|| "unknown".into());
                Ok(messages(json!([{ "role": "user", "content": {
                    "type": "text", "text": format!("Prompt with context: {context}") } }])))
            },
        );
}

/// `completion/complete`: the arguments of `test_prompt_with_arguments` and
/// the template's `id`, by prefix.
async fn complete(p: CompleteParams, _ctx: RequestContext) -> Result<CompleteResult, HandlerError> {
    let candidates: &[&str] = match (&p.reference, p.argument.name.as_str()) {
        (Reference::Prompt(r), "arg1" | "arg2") if r.name == "test_prompt_with_arguments" => {
            &["paris", "park", "party"]
        }
        (Reference::ResourceTemplate(r), "id") if r.uri == TEMPLATE => &["1", "2", "3", "123"],
        _ => &[],
    };
    let values: Vec<String> = candidates
        .iter()
        .filter(|c| c.starts_with(p.argument.value.as_str()))
        .map(|c| (*c).to_owned())
        .collect();
    Ok(CompleteResult {
        completion: Completion {
            total: Some(values.len() as u64),
            has_more: Some(false),
            values,
            ..Default::default()
        },
        ..Default::default()
    })
}
