//! The client side of the official MCP conformance suite: a contract
//! checked from outside (`.ci/conformance-client.sh`).
//!
//! The suite starts this program with the server's URL as the last
//! argument and the environment variables `MCP_CONFORMANCE_SCENARIO`,
//! `MCP_CONFORMANCE_CONTEXT` (JSON) and `MCP_CONFORMANCE_PROTOCOL_VERSION`.
//! It connects with [`ClientConfig::http`] (the era pinned to the
//! version the suite runs at), does what the scenario asks, stops the
//! client (which ends the session) and exits 0; 1 when it could not
//! connect.
//!
//! What it does: lists the tools and calls each (with the arguments the
//! scenario's context gives, or arguments made from the tool's input
//! schema), then lists and reads the resources and lists and gets the
//! prompts the server declares. Some scenarios ask for less:
//! `json-schema-ref-no-deref` and `request-metadata` only list the tools;
//! `json-schema-2020-12-preservation` echoes one tool's input schema.
//! Server requests and input requests are answered: elicitation accepts
//! with every field's default (or a value of its type), sampling answers a
//! text, roots an empty list.
//!
//! Protected servers (the `auth/` scenarios) are authorized through
//! [`conduit_mcp::oauth`]: the authorizer follows the authorization
//! endpoint's redirect itself (the suite approves at once), and a
//! pre-registered client's id and secret come from the context, as the
//! suite's reference client takes them.
//!
//! ```text
//! cargo build --example conformance_client --features http
//! conformance client --command target/debug/examples/conformance_client --requirements 2026-07-28
//! ```

use std::time::Duration;

use conduit_mcp::oauth::{AuthorizationRequest, AuthorizationResponse, OAuth, OAuthConfig};
use conduit_mcp::protocol::STATEFUL_VERSIONS;
use conduit_mcp::{
    Client, ClientConfig, EraPreference, ErrorObject, InboundRequest, RequestOptions, Secret,
    StartOptions,
};
use serde_json::{json, Map, Value};

/// A guard against a hang, per call.
const PATIENCE: Duration = Duration::from_secs(20);

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client URL");
        std::process::exit(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    let era = if STATEFUL_VERSIONS.contains(&version.as_str()) {
        EraPreference::Stateful
    } else if version.is_empty() {
        EraPreference::Auto
    } else {
        EraPreference::Stateless
    };
    let mut config = ClientConfig::http(&url)
        .oauth(oauth(&context))
        .name(format!("conformance:{scenario}"))
        .era(era)
        .request_timeout(PATIENCE)
        .max_reconnects(1);
    let capabilities = json!({ "roots": {}, "sampling": {}, "elicitation": {} });
    config = config.capabilities(serde_json::from_value(capabilities).expect("capabilities"));
    let opts = StartOptions::new().handler(answer);
    let client = match Client::start_with(config, opts).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("could not start: {e}");
            std::process::exit(1);
        }
    };
    let session = match client.ready(PATIENCE).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("could not connect: {e}");
            client.stop().wait().await;
            std::process::exit(1);
        }
    };
    run(&client, &scenario, &context, &session.capabilities).await;
    client.stop().wait().await;
}

/// The redirect URI registered for this client (nothing listens there:
/// the authorizer reads the redirect from the authorization server's
/// answer, as a browser would follow it).
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// This client's metadata document URL (used as its client id where the
/// authorization server supports Client ID Metadata Documents).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Authorization as the suite's scenarios expect of a client: the
/// "user" approves at once (the authorization endpoint redirects
/// straight back), credentials of a pre-registered client come from the
/// context.
fn oauth(context: &Value) -> OAuth {
    let mut config = OAuthConfig::new(REDIRECT_URI, approve)
        .client_name("conduit-mcp-conformance")
        .client_metadata_url(CLIENT_METADATA_URL);
    if let Some(id) = context.get("client_id").and_then(Value::as_str) {
        let secret = context
            .get("client_secret")
            .and_then(Value::as_str)
            .map(Secret::new);
        config = config.client(id, secret);
    }
    OAuth::new(config)
}

/// Visits the authorization URL and returns where it redirects to.
async fn approve(req: AuthorizationRequest) -> Result<AuthorizationResponse, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let resp = http.get(&req.url).send().await.map_err(|e| e.to_string())?;
    let location = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            format!(
                "no redirect from the authorization endpoint (HTTP {})",
                resp.status()
            )
        })?;
    AuthorizationResponse::from_redirect(location).map_err(|e| e.to_string())
}

/// What the scenario asks for, after the handshake.
async fn run(client: &Client, scenario: &str, context: &Value, caps: &Value) {
    let tools = match client.list_tools().await {
        Ok(t) => t,
        Err(e) => return eprintln!("tools/list: {e}"),
    };
    if matches!(scenario, "json-schema-ref-no-deref" | "request-metadata") {
        return;
    }
    if scenario == "json-schema-2020-12-preservation" {
        // Echo the focal tool's input schema as this client holds it.
        if let Some(focal) = tools.iter().find(|t| t.name == "json_schema_2020_12_tool") {
            let args = json!({ "schema": focal.input_schema });
            report(
                "tools/call",
                "json_schema_echo",
                client
                    .call_tool("json_schema_echo", args, RequestOptions::default())
                    .await,
            );
        }
        return;
    }
    if let Some(calls) = context.get("toolCalls").and_then(Value::as_array) {
        for call in calls {
            let name = call["name"].as_str().unwrap_or_default();
            let args = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
            report(
                "tools/call",
                name,
                client
                    .call_tool(name, args, RequestOptions::default())
                    .await,
            );
        }
        return;
    }
    for tool in &tools {
        let args = arguments_for(&tool.input_schema);
        report(
            "tools/call",
            &tool.name,
            client
                .call_tool(&tool.name, args, RequestOptions::default())
                .await,
        );
    }
    if caps.get("resources").is_some() {
        if let Ok(resources) = client.list_resources().await {
            for r in resources {
                report("resources/read", &r.uri, client.read_resource(&r.uri).await);
            }
        }
    }
    if caps.get("prompts").is_some() {
        if let Ok(prompts) = client.list_prompts().await {
            for p in prompts {
                let args: Map<String, Value> = p
                    .arguments
                    .iter()
                    .flatten()
                    .map(|a| (a.name.clone(), json!("test")))
                    .collect();
                report(
                    "prompts/get",
                    &p.name,
                    client.get_prompt(&p.name, args).await,
                );
            }
        }
    }
}

fn report<T>(method: &str, name: &str, r: Result<T, conduit_mcp::Error>) {
    if let Err(e) = r {
        eprintln!("{method} {name}: {e}");
    }
}

/// Arguments for a tool: each required property (and each annotated one)
/// with a value of its type.
fn arguments_for(schema: &Value) -> Value {
    let mut args = Map::new();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = schema["properties"].as_object() {
        for (name, prop) in props {
            if required.contains(&name.as_str()) || prop.get("x-mcp-header").is_some() {
                args.insert(name.clone(), value_of(prop, 2));
            }
        }
    }
    Value::Object(args)
}

/// The property's default, or a value of its type.
fn value_of(prop: &Value, n: i64) -> Value {
    if let Some(d) = prop.get("default") {
        return d.clone();
    }
    if let Some(first) = prop["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    match prop["type"].as_str() {
        Some("number") | Some("integer") => json!(n),
        Some("boolean") => json!(true),
        Some("object") => json!({}),
        Some("array") => json!([]),
        _ => json!("test"),
    }
}

/// Answers the server's requests (legacy) and input requests (modern).
async fn answer(req: InboundRequest) -> Result<Value, ErrorObject> {
    let params = req.params.unwrap_or(Value::Null);
    match req.method.as_str() {
        "elicitation/create" => {
            let mut content = Map::new();
            if let Some(props) = params["requestedSchema"]["properties"].as_object() {
                for (name, prop) in props {
                    content.insert(name.clone(), value_of(prop, 1));
                }
            }
            Ok(json!({ "action": "accept", "content": content }))
        }
        "sampling/createMessage" => Ok(json!({
            "role": "assistant",
            "content": { "type": "text", "text": "a sampled answer" },
            "model": "conformance-model",
            "stopReason": "endTurn"
        })),
        "roots/list" => Ok(json!({ "roots": [] })),
        "ping" => Ok(json!({})),
        m => Err(ErrorObject::new(-32601, format!("not supported here: {m}"))),
    }
}
