//! A dual-era MCP server over stdio, built on `conduit_mcp::server`.
//!
//! Tools: `echo {text}`, `add {a, b}`, `sleep {ms}` (progress when asked,
//! stops when cancelled) and `roots` (asks the client for its roots: a
//! `roots/list` request in the 2025-11-25 era, an input-required round in the
//! 2026-07-28 era). One resource (`demo://readme`) and one prompt (`greet`).
//!
//! Run: `cargo run --example server` and type JSON-RPC lines, e.g.
//! `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"me","version":"0"}}}`
//!
//! Flags: `--stray-print` makes `echo` also `println!` its text, to show the
//! stdout guard at work (the line lands on stderr, the protocol stays clean).
//! SIGTERM or SIGINT stops the server at once; end of stdin ends it too.
//!
//! In a crate of your own, this file as `src/main.rs` builds with these
//! dependencies (`.ci/examples-outside.sh` checks it):
//!
//! ```toml
//! [dependencies]
//! conduit-mcp = "0.1"
//! tokio = { version = "1", features = ["full"] }
//! serde = { version = "1", features = ["derive"] }
//! serde_json = "1"
//! tracing-subscriber = { version = "0.3", features = ["env-filter"] }
//! ```

use std::time::{Duration, Instant};

use conduit_mcp::protocol::InputRequest;
use conduit_mcp::protocol::{
    CallToolResult, GetPromptResult, Implementation, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, Role,
};
use conduit_mcp::server::{
    HandlerError, RequestContext, Router, ServeEnd, ServerConfig, StdioServer,
};
use conduit_mcp::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

/// `echo`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "conduit_mcp::schemars")]
struct Echo {
    /// The text to return.
    text: String,
}

/// `add`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "conduit_mcp::schemars")]
struct Add {
    /// The first term.
    a: f64,
    /// The second term.
    b: f64,
}

/// `sleep`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "conduit_mcp::schemars")]
struct Sleep {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

/// `roots` takes no arguments.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "conduit_mcp::schemars")]
struct NoArguments {}

/// `greet`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "conduit_mcp::schemars")]
struct Greet {
    /// Who to greet (default: the world).
    #[serde(default = "world")]
    name: String,
}

fn world() -> String {
    "world".into()
}

/// The demo's tools, resource and prompt.
fn router(stray_print: bool) -> Router {
    Router::new()
        .tool(
            "echo",
            "Returns its text.",
            move |args: Echo, _ctx| async move {
                if stray_print {
                    // Deliberately on stdout: the stdout guard diverts it to stderr.
                    println!("stray print from the echo tool: {}", args.text);
                }
                Ok(CallToolResult::text(args.text))
            },
        )
        .tool("add", "Adds two numbers.", |args: Add, _ctx| async move {
            let sum = args.a + args.b;
            Ok(CallToolResult {
                structured_content: Some(json!({ "sum": sum })),
                ..CallToolResult::text(sum.to_string())
            })
        })
        .tool(
            "sleep",
            "Sleeps for ms milliseconds, reporting progress when asked.",
            |args: Sleep, ctx: RequestContext| async move {
                let steps = 10u64;
                let _ = ctx.progress(0.0, Some(steps as f64), Some("started"));
                for i in 1..=steps {
                    // Cancellation drops this future at the await: the sleep ends.
                    tokio::time::sleep(Duration::from_millis(args.ms / steps)).await;
                    let _ =
                        ctx.progress(i as f64, Some(steps as f64), Some(&format!("{i}/{steps}")));
                }
                Ok(CallToolResult::text(format!("slept {} ms", args.ms)))
            },
        )
        .tool(
            "roots",
            "Asks the client for its roots and returns them.",
            |_: NoArguments, ctx: RequestContext| async move {
                // 2025-11-25: a roots/list request; 2026-07-28: an input-required round.
                let answer = ctx.ask("roots", InputRequest::list_roots()).await?;
                let roots = answer.get("roots").cloned().unwrap_or_else(|| json!([]));
                Ok(CallToolResult {
                    structured_content: Some(json!({ "roots": roots })),
                    ..CallToolResult::text(roots.to_string())
                })
            },
        )
        .resource(
            Resource {
                mime_type: Some("text/plain".into()),
                ..Resource::new("demo://readme", "readme")
            },
            |_ctx| async {
                let mut text = ResourceContents::text(
                    "demo://readme",
                    "conduit-mcp example server: tools echo, add, sleep, roots.",
                );
                if let ResourceContents::Text(t) = &mut text {
                    t.mime_type = Some("text/plain".into());
                }
                Ok(ReadResourceResult {
                    contents: vec![text],
                    ..Default::default()
                })
            },
        )
        .prompt("greet", "Greets someone.", |args: Greet, _ctx| async move {
            Ok(GetPromptResult {
                messages: vec![PromptMessage::text(
                    Role::User,
                    format!("Say hello to {}.", args.name),
                )],
                ..Default::default()
            })
        })
        // Anything else: the raw Handler's way (the escape hatch).
        .fallback(
            |req, _ctx| async move { Err::<Value, _>(HandlerError::MethodNotFound(req.method)) },
        )
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let stray_print = std::env::args().any(|a| a == "--stray-print");
    let config = ServerConfig::new(Implementation::new(
        "conduit-mcp-example",
        env!("CARGO_PKG_VERSION"),
    ))
    // Tools, resources and prompts are declared by the router.
    .capabilities(json!({ "logging": {} }))
    .instructions("Demo server: echo, add, sleep (with progress) and roots.")
    .stdout_guard(true);
    let server = StdioServer::new(config);
    let handle = server.handle();
    let stop_asked = std::sync::Arc::new(std::sync::OnceLock::<Instant>::new());
    {
        let stop_asked = stop_asked.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = stop_asked.set(Instant::now());
            handle.stop();
        });
    }
    let end = server.serve(router(stray_print)).await;
    match end {
        Ok(reason) => {
            if let (ServeEnd::Stopped, Some(t)) = (reason, stop_asked.get()) {
                eprintln!("example server: stopped {:?} after the signal", t.elapsed());
            } else {
                eprintln!("example server: ended: {reason:?}");
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("example server: failed: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C elsewhere).
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
