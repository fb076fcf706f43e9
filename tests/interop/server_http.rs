//! Interop over Streamable HTTP: the real Python `mcp` client (both eras)
//! and the official TypeScript SDK client (2025-11-25 era: no released
//! TypeScript SDK speaks 2026-07-28 yet) drive an HTTP server serving the
//! same tools as `examples/server.rs`, with the scripts of the stdio drives
//! (`tests/interop/`), given a URL instead of a binary.
//!
//! Peers live under `target/peers/` (run `.ci/install-peers.sh`).
//!
//! The tests are `#[ignore]`d, so `cargo test` counts them as ignored
//! where the peers are not installed; `.ci/run` installs them and runs
//! these with `-- --ignored`, where a missing peer fails the test.

#![cfg(unix)]

use crate::peers;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use conduit_mcp::protocol::{
    CallToolResult, Era, GetPromptResult, Implementation, InputRequest, PromptMessage,
    ReadResourceResult, Resource, ResourceContents, Role,
};
use conduit_mcp::server::http::{HttpConfig, HttpServer};
use conduit_mcp::server::{RequestContext, Router, ServeEnd, ServerConfig};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::process::Command;

const LIMIT: Duration = Duration::from_secs(120);

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Add {
    a: f64,
    b: f64,
}

#[derive(Deserialize, JsonSchema)]
struct Sleep {
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct NoArguments {}

#[derive(Deserialize, JsonSchema)]
struct Greet {
    name: String,
}

/// What the server saw.
#[derive(Default)]
struct Seen {
    /// Sleeps dropped before their end (cancelled).
    cancelled: AtomicUsize,
    /// `ask`s in a 2025-11-25 session (a roots/list request was sent).
    legacy_asks: AtomicUsize,
    /// `ask`s in the 2026-07-28 era (input-required rounds).
    modern_asks: AtomicUsize,
}

struct OnDrop(Arc<Seen>, bool);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// `examples/server.rs`'s tools, resource and prompt.
fn router(seen: Arc<Seen>) -> Router {
    let asks = seen.clone();
    Router::new()
        .tool("echo", "Returns its text.", |a: Echo, _ctx| async move {
            Ok(CallToolResult::text(a.text))
        })
        .tool("add", "Adds two numbers.", |a: Add, _ctx| async move {
            Ok(CallToolResult::text((a.a + a.b).to_string()))
        })
        .tool(
            "sleep",
            "Sleeps, with progress.",
            move |a: Sleep, ctx: RequestContext| {
                let seen = seen.clone();
                async move {
                    let mut guard = OnDrop(seen, false);
                    let _ = ctx.progress(0.0, Some(10.0), Some("started"));
                    for i in 1..=10u64 {
                        tokio::time::sleep(Duration::from_millis(a.ms / 10)).await;
                        let _ = ctx.progress(i as f64, Some(10.0), None);
                    }
                    guard.1 = true;
                    Ok(CallToolResult::text(format!("slept {} ms", a.ms)))
                }
            },
        )
        .tool(
            "roots",
            "Asks the client for its roots.",
            move |_: NoArguments, ctx: RequestContext| {
                let asks = asks.clone();
                async move {
                    let counter = match ctx.era() {
                        Era::Stateful => &asks.legacy_asks,
                        Era::Stateless => &asks.modern_asks,
                    };
                    counter.fetch_add(1, Ordering::SeqCst);
                    let answer = ctx.ask("roots", InputRequest::list_roots()).await?;
                    let roots = answer.get("roots").cloned().unwrap_or_else(|| json!([]));
                    Ok(CallToolResult::text(roots.to_string()))
                }
            },
        )
        .resource(Resource::new("demo://readme", "readme"), |_ctx| async {
            Ok(ReadResourceResult {
                contents: vec![ResourceContents::text(
                    "demo://readme",
                    "conduit-mcp example server: tools echo, add, sleep, roots.",
                )],
                ..Default::default()
            })
        })
        .prompt("greet", "Greets someone.", |a: Greet, _ctx| async move {
            Ok(GetPromptResult {
                messages: vec![PromptMessage::text(
                    Role::User,
                    format!("Say hello to {}.", a.name),
                )],
                ..Default::default()
            })
        })
}

struct Served {
    url: String,
    seen: Arc<Seen>,
    handle: conduit_mcp::server::ServerHandle,
    task: tokio::task::JoinHandle<Result<ServeEnd, conduit_mcp::server::ServerError>>,
}

async fn serve() -> Served {
    let seen = Arc::new(Seen::default());
    let config = HttpConfig::new(ServerConfig::new(Implementation::new(
        "conduit-mcp-example",
        "0",
    )));
    let server = HttpServer::bind("127.0.0.1:0", config).await.unwrap();
    let url = server.url().unwrap();
    let handle = server.handle();
    let task = tokio::spawn(server.serve(router(seen.clone())));
    handle.wait_until_ready().await.unwrap();
    Served {
        url,
        seen,
        handle,
        task,
    }
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("interop")
        .join(name)
}

/// Runs a client script to completion (reaped; killed after `LIMIT`).
async fn run(mut cmd: Command) -> String {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().expect("spawn client script");
    let out = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .expect("client script timed out")
        .expect("wait for client script");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "client script failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for step in [
        "ok connected",
        "ok list_tools",
        "ok echo",
        "ok add",
        "ok sleep_with_progress",
        "ok cancel_sleep",
        "ok roots",
        "ok resource_and_prompt",
        "done",
    ] {
        assert!(stdout.contains(step), "missing {step:?}:\n{stdout}");
    }
    stdout
}

async fn finish(s: Served) {
    s.handle.stop();
    let end = tokio::time::timeout(Duration::from_secs(10), s.task).await;
    assert!(matches!(end, Ok(Ok(Ok(ServeEnd::Stopped)))), "{end:?}");
}

/// The peers' Python; a test without it fails, naming it.
fn python() -> PathBuf {
    peers::venv_python().unwrap_or_else(|| {
        panic!(
            "missing: Python mcp not installed at {} (run .ci/install-peers.sh)",
            peers::peers().join("venv").display()
        )
    })
}

#[tokio::test]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn python_mcp_client_over_http_in_a_2025_11_25_session() {
    let py = python();
    let s = serve().await;
    let mut cmd = Command::new(py);
    cmd.arg(script("python_client.py"))
        .arg(&s.url)
        .arg("legacy");
    let out = run(cmd).await;
    assert!(out.contains("protocol_version=2025-11-25"), "{out}");
    // The cancelled sleep stopped; roots came by a server-to-client request.
    assert!(s.seen.cancelled.load(Ordering::SeqCst) >= 1);
    assert_eq!(s.seen.legacy_asks.load(Ordering::SeqCst), 1);
    assert_eq!(s.seen.modern_asks.load(Ordering::SeqCst), 0);
    finish(s).await;
}

#[tokio::test]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn python_mcp_client_over_http_in_the_2026_07_28_era() {
    let py = python();
    let s = serve().await;
    let mut cmd = Command::new(py);
    cmd.arg(script("python_client.py")).arg(&s.url).arg("auto");
    let out = run(cmd).await;
    assert!(out.contains("protocol_version=2026-07-28"), "{out}");
    // Closing the response stream cancelled the sleep; roots came by an
    // input-required round (the handler ran once per round).
    assert!(s.seen.cancelled.load(Ordering::SeqCst) >= 1);
    assert_eq!(s.seen.legacy_asks.load(Ordering::SeqCst), 0);
    assert_eq!(s.seen.modern_asks.load(Ordering::SeqCst), 2);
    finish(s).await;
}

#[tokio::test]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn typescript_sdk_client_over_http_in_a_2025_11_25_session() {
    let modules = peers::peers().join("node").join("node_modules");
    if !modules.join("@modelcontextprotocol").join("sdk").exists() {
        panic!(
            "missing: @modelcontextprotocol/sdk not installed at {} (run .ci/install-peers.sh)",
            modules.display()
        );
    }
    assert!(peers::on_path("node"), "missing: node not found in PATH");
    let s = serve().await;
    let mut cmd = Command::new("node");
    cmd.env("NODE_PATH", &modules)
        .arg(script("node_client.cjs"))
        .arg(&s.url);
    run(cmd).await;
    assert!(s.seen.cancelled.load(Ordering::SeqCst) >= 1);
    assert_eq!(s.seen.legacy_asks.load(Ordering::SeqCst), 1);
    finish(s).await;
}
