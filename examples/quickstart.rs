//! A complete MCP conversation with no Node or Python needed: this program
//! starts *itself* in `--serve` mode as an MCP server (built on
//! `conduit_mcp::server::Router`), then drives it with `conduit_mcp::Client`:
//! discovery, the tool list, a call with progress, a cancel, and a shutdown
//! that is awaited to the end.
//!
//! Run: `cargo run --example quickstart` (add `-- --legacy` to force the
//! 2025-11-25 era, `initialize`; `RUST_LOG=conduit_mcp=debug` shows the
//! lifecycle events).
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

use conduit_mcp::protocol::{CallToolResult, Implementation};
use conduit_mcp::server::{RequestContext, Router, ServerConfig, StdioServer};
use conduit_mcp::{
    CancelToken, Client, ClientConfig, EraPreference, Error, JsonSchema, RequestOptions,
};
use serde::Deserialize;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    if std::env::args().any(|a| a == "--serve") {
        serve().await;
        return Ok(());
    }
    let legacy = std::env::args().any(|a| a == "--legacy");
    client(legacy).await
}

/// The client side: what a user of the library writes.
async fn client(legacy: bool) -> Result<(), Box<dyn std::error::Error>> {
    let me = std::env::current_exe()?;
    let config = ClientConfig::new(me.to_string_lossy())
        .name("quickstart-server")
        .arg("--serve")
        .era(if legacy {
            EraPreference::Stateful
        } else {
            EraPreference::Auto
        });
    println!("spawning {} --serve as an MCP server", me.display());

    let t = Instant::now();
    let client = Client::start(config).await?;
    let session = client.ready(Duration::from_secs(10)).await?;
    println!(
        "ready in {:.1} ms: era {}, protocol {}, server {} (pid {})",
        t.elapsed().as_secs_f64() * 1e3,
        session.era,
        session.protocol_version,
        session
            .server_info
            .as_ref()
            .map(|i| format!("{} {}", i.name, i.version))
            .unwrap_or_default(),
        session.pid.unwrap_or(0),
    );

    let tools = client.list_tools().await?;
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    println!("tools: {}", names.join(", "));

    let sum = client
        .call_tool("add", json!({"a": 2, "b": 40}), RequestOptions::new())
        .await?;
    println!("add(2, 40) = {}", sum.joined_text());

    // A call with progress: each notifications/progress reaches this channel.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<conduit_mcp::Progress>();
    let printer = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(p) = rx.recv().await {
            seen.push(format!("{}/{}", p.progress, p.total.unwrap_or(0.0)));
        }
        seen
    });
    let r = client
        .call_tool(
            "count",
            json!({"to": 5, "ms": 40}),
            RequestOptions::new().progress(tx),
        )
        .await?;
    println!(
        "count(5) with progress [{}] -> {}",
        printer.await?.join(" "),
        r.joined_text()
    );

    // A cancel: the server is told (notifications/cancelled) and stops.
    let token = CancelToken::new();
    let c = client.clone();
    let t2 = token.clone();
    let long = tokio::spawn(async move {
        c.call_tool(
            "count",
            json!({"to": 1000, "ms": 10}),
            RequestOptions::new().cancel_token(t2),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    token.cancel();
    match long.await? {
        Err(Error::Cancelled { method }) => println!("cancelled a long `{method}` after 100 ms"),
        other => println!("unexpected result of the cancelled call: {other:?}"),
    }
    let echo = client
        .call_tool(
            "echo",
            json!({"text": "still serving"}),
            RequestOptions::new(),
        )
        .await?;
    println!("echo after the cancel -> {}", echo.joined_text());

    // Shutdown: stop() returns at once; wait() follows the escalation to
    // the end (stdin closed, SIGTERM, SIGKILL only if needed, reaped).
    let t = Instant::now();
    let shutdown = client.stop();
    let returned = t.elapsed();
    for r in shutdown.wait().await {
        println!(
            "stop() returned in {:.3} ms; server pid {} ended ({}) {:.1} ms after its stdin closed{}",
            returned.as_secs_f64() * 1e3,
            r.pid,
            r.exit
                .map(|e| e.to_string())
                .unwrap_or_else(|| "unknown".into()),
            r.elapsed.as_secs_f64() * 1e3,
            if r.sent_kill {
                ", after SIGKILL"
            } else if r.sent_term {
                ", after SIGTERM"
            } else {
                ", no signal needed"
            }
        );
    }
    Ok(())
}

/// The server side: this same program in `--serve` mode, built on the
/// router (each tool: a name, a description, a typed argument struct whose
/// JSON Schema is generated, an async function).
async fn serve() {
    let config =
        ServerConfig::new(Implementation::new("quickstart-server", "0.1.0")).stdout_guard(true);
    if let Err(e) = StdioServer::new(config).serve(tools()).await {
        eprintln!("quickstart server failed: {e}");
    }
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "conduit_mcp::schemars")]
struct Echo {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "conduit_mcp::schemars")]
struct Add {
    a: f64,
    b: f64,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "conduit_mcp::schemars")]
struct Count {
    /// Count to this.
    to: u64,
    /// Milliseconds per step.
    ms: u64,
}

fn tools() -> Router {
    Router::new()
        .tool("echo", "Returns its text.", |args: Echo, _ctx| async move {
            Ok(CallToolResult::text(args.text))
        })
        .tool("add", "Adds two numbers.", |args: Add, _ctx| async move {
            Ok(CallToolResult::text((args.a + args.b).to_string()))
        })
        .tool(
            "count",
            "Counts to `to`, one step every `ms` ms, with progress.",
            |args: Count, ctx: RequestContext| async move {
                for i in 1..=args.to {
                    // A cancelled request's task is dropped at this await.
                    tokio::time::sleep(Duration::from_millis(args.ms)).await;
                    let _ = ctx.progress(i as f64, Some(args.to as f64), None);
                }
                Ok(CallToolResult::text(format!("counted to {}", args.to)))
            },
        )
}
