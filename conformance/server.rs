//! The server the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) scores: the fixtures of the suite's
//! reference "everything server", built with this crate's [`Router`], in
//! both eras at once.
//!
//! - `PORT=N conformance_server`: Streamable HTTP on
//!   `http://127.0.0.1:N/mcp` (see [`serve_http`]); `.ci/conformance.sh`
//!   runs the suite against it.
//! - `conformance_server --stdio`: the same fixtures over stdio (the tests in
//!   `tests/protocol/conformance_fixtures.rs` drive it with this crate's client).
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
//!   `test_streaming_elicitation`, `test_logging_tool`), and
//!   `test_reconnection`, which closes its SSE stream mid-call (resumed by
//!   the client with `Last-Event-ID`);
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
//!
//! This file serves; the fixtures live in `conformance/server/`,
//! one module per kind (content, notifying, input, multi_round, diagnostic,
//! resources, prompts), with their arguments (`args`) and builders
//! (`helpers`).

use std::hash::BuildHasher;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use conduit_mcp::protocol::InputRequest;
use conduit_mcp::protocol::{
    CacheScope, CallToolResult, CompleteParams, CompleteResult, Completion, CreateMessageResult,
    ElicitAction, ElicitResult, GetPromptResult, Implementation, ListRootsResult,
    ReadResourceResult, Reference, Resource, ResourceTemplate, Tool,
};
use conduit_mcp::server::http::{HttpConfig, HttpServer};
use conduit_mcp::server::{HandlerError, RequestContext, Router, ServerConfig, StdioServer};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

#[path = "server/args.rs"]
mod args;
#[path = "server/content.rs"]
mod content;
#[path = "server/diagnostic.rs"]
mod diagnostic;
#[path = "server/helpers.rs"]
mod helpers;
#[path = "server/input.rs"]
mod input;
#[path = "server/multi_round.rs"]
mod multi_round;
#[path = "server/notifying.rs"]
mod notifying;
#[path = "server/prompts.rs"]
mod prompts;
#[path = "server/resources.rs"]
mod resources;

use args::*;
use content::*;
use diagnostic::*;
use helpers::*;
use input::*;
use multi_round::*;
use notifying::*;
use prompts::*;
use resources::*;

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
    .cache_ttl_ms(60_000)
    .cache_scope(CacheScope::Public)
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
