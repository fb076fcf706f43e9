//! A dual-era MCP server over stdio, built on `conduit_mcp::server`.
//!
//! Tools: `echo {text}`, `add {a, b}`, `sleep {ms}` (progress when asked,
//! stops when cancelled) and `roots` (asks the client for its roots: a
//! `roots/list` request in the legacy era, an input-required round in the
//! modern era). One resource (`demo://readme`) and one prompt (`greet`).
//!
//! Run: `cargo run --example server` and type JSON-RPC lines, e.g.
//! `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"me","version":"0"}}}`
//!
//! Flags: `--stray-print` makes `echo` also `println!` its text, to show the
//! stdout guard at work (the line lands on stderr, the protocol stays clean).
//! SIGTERM or SIGINT stops the server at once; end of stdin ends it too.

use std::time::{Duration, Instant};

use conduit_mcp::jsonrpc::Request;
use conduit_mcp::protocol::Implementation;
use conduit_mcp::server::{
    Handler, HandlerError, InputRequest, RequestContext, ServeEnd, ServerConfig, StdioServer,
};
use serde_json::{json, Value};

struct Demo {
    stray_print: bool,
}

fn text(t: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": t.into() }] })
}

fn tools() -> Value {
    json!({ "tools": [
        {
            "name": "echo",
            "description": "Returns its text.",
            "inputSchema": { "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] }
        },
        {
            "name": "add",
            "description": "Adds two numbers.",
            "inputSchema": { "type": "object", "properties": { "a": { "type": "number" }, "b": { "type": "number" } }, "required": ["a", "b"] }
        },
        {
            "name": "sleep",
            "description": "Sleeps for ms milliseconds, reporting progress when asked.",
            "inputSchema": { "type": "object", "properties": { "ms": { "type": "integer", "minimum": 0 } }, "required": ["ms"] }
        },
        {
            "name": "roots",
            "description": "Asks the client for its roots and returns them.",
            "inputSchema": { "type": "object", "properties": {} }
        }
    ]})
}

fn arg<'a>(args: &'a Value, name: &str) -> Result<&'a Value, HandlerError> {
    args.get(name)
        .ok_or_else(|| HandlerError::InvalidParams(format!("missing argument {name:?}")))
}

fn number(args: &Value, name: &str) -> Result<f64, HandlerError> {
    arg(args, name)?
        .as_f64()
        .ok_or_else(|| HandlerError::InvalidParams(format!("argument {name:?} must be a number")))
}

impl Demo {
    async fn call_tool(&self, params: &Value, ctx: &RequestContext) -> Result<Value, HandlerError> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let args = params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| json!({}));
        match name {
            "echo" => {
                let t = arg(&args, "text")?
                    .as_str()
                    .ok_or_else(|| HandlerError::InvalidParams("text must be a string".into()))?;
                if self.stray_print {
                    // Deliberately on stdout: the stdout guard diverts it to stderr.
                    println!("stray print from the echo tool: {t}");
                }
                Ok(text(t))
            }
            "add" => {
                let sum = number(&args, "a")? + number(&args, "b")?;
                let mut r = text(sum.to_string());
                r["structuredContent"] = json!({ "sum": sum });
                Ok(r)
            }
            "sleep" => {
                let ms = arg(&args, "ms")?.as_u64().ok_or_else(|| {
                    HandlerError::InvalidParams("ms must be a non-negative integer".into())
                })?;
                let steps = 10u64;
                let _ = ctx.progress(0.0, Some(steps as f64), Some("started"));
                for i in 1..=steps {
                    // Cancellation drops this future at the await: the sleep ends.
                    tokio::time::sleep(Duration::from_millis(ms / steps)).await;
                    let _ =
                        ctx.progress(i as f64, Some(steps as f64), Some(&format!("{i}/{steps}")));
                }
                Ok(text(format!("slept {ms} ms")))
            }
            "roots" => {
                // Legacy: a roots/list request; modern: an input-required round.
                let answer = ctx.ask("roots", InputRequest::list_roots()).await?;
                let roots = answer.get("roots").cloned().unwrap_or_else(|| json!([]));
                let mut r = text(roots.to_string());
                r["structuredContent"] = json!({ "roots": roots });
                Ok(r)
            }
            other => Err(HandlerError::InvalidParams(format!(
                "unknown tool {other:?}"
            ))),
        }
    }
}

impl Handler for Demo {
    async fn handle_request(
        &self,
        req: Request,
        ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        let params = req.params.clone().unwrap_or_else(|| json!({}));
        match req.method.as_str() {
            "tools/list" => Ok(tools()),
            "tools/call" => self.call_tool(&params, &ctx).await,
            "resources/list" => Ok(json!({ "resources": [{
                "uri": "demo://readme", "name": "readme", "mimeType": "text/plain"
            }]})),
            "resources/read" => match params.get("uri").and_then(Value::as_str) {
                Some("demo://readme") => Ok(json!({ "contents": [{
                    "uri": "demo://readme", "mimeType": "text/plain",
                    "text": "conduit-mcp example server: tools echo, add, sleep, roots."
                }]})),
                other => Err(HandlerError::InvalidParams(format!(
                    "unknown resource {other:?}"
                ))),
            },
            "prompts/list" => Ok(json!({ "prompts": [{
                "name": "greet", "description": "Greets someone.",
                "arguments": [{ "name": "name", "required": true }]
            }]})),
            "prompts/get" => {
                let who = params
                    .pointer("/arguments/name")
                    .and_then(Value::as_str)
                    .unwrap_or("world");
                Ok(json!({ "messages": [{
                    "role": "user", "content": { "type": "text", "text": format!("Say hello to {who}.") }
                }]}))
            }
            "resources/templates/list" => Ok(json!({ "resourceTemplates": [] })),
            // Legacy logging level: accepted (this demo logs to stderr only).
            "logging/setLevel" => Ok(json!({})),
            m => Err(HandlerError::MethodNotFound(m.to_owned())),
        }
    }
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
    .capabilities(json!({ "tools": {}, "resources": {}, "prompts": {}, "logging": {} }))
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
    let end = server.serve(Demo { stray_print }).await;
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
