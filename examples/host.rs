//! Three servers, one namespace: a [`Host`] started from a `.mcp.json`,
//! a tool called on each, one server crashed and restarted while the
//! others serve, then one stop that ends every process.
//!
//! No Node or Python needed: the servers are this program itself in
//! `--serve KIND` mode (a `conduit_mcp::server` each). With
//! `-- --config FILE`, it runs the servers of your own file instead and
//! lists their tools.
//!
//! Run: `cargo run --example host` (or `cargo run --example host --
//! --config ~/.cursor/mcp.json`). It exits with an error if any server
//! process outlives the stop.
//!
//! In a crate of your own, this file as `src/main.rs` builds with these
//! dependencies (`.ci/examples-outside.sh` checks it):
//!
//! ```toml
//! [dependencies]
//! conduit-mcp = "0.1"
//! tokio = { version = "1", features = ["full"] }
//! serde_json = "1"
//! tracing-subscriber = { version = "0.3", features = ["env-filter"] }
//! ```

use std::time::Duration;

use conduit_mcp::host::{Host, HostError, HostEvent};
use conduit_mcp::jsonrpc::Request;
use conduit_mcp::protocol::Implementation;
use conduit_mcp::server::{Handler, HandlerError, RequestContext, ServerConfig, StdioServer};
use conduit_mcp::LifecycleEvent;
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--serve") => {
            serve(args.get(2).cloned().unwrap_or_default()).await;
            Ok(())
        }
        Some("--config") => {
            let path = args.get(2).ok_or("--config expects a FILE")?;
            your_servers(path).await
        }
        _ => demo().await,
    }
}

/// The demonstration: this program's own servers, from a `.mcp.json`.
async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("conduit-host-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let me = std::env::current_exe()?;
    let file = dir.join(".mcp.json");
    let server = |kind: &str| json!({ "command": me, "args": ["--serve", kind] });
    let mut notes = server("notes");
    // Our options for one server: restart it 1 s after a crash.
    notes["conduit"] = json!({ "backoff": { "initial_ms": 1000 } });
    let config = json!({ "mcpServers": {
        "clock": server("clock"),
        "math": server("math"),
        "notes": notes,
    }});
    std::fs::write(&file, serde_json::to_string_pretty(&config)?)?;
    println!("servers from {}", file.display());

    // What a user writes: load, call by namespaced name, stop.
    let host = Host::load(&file).await?;
    for s in host.servers() {
        println!(
            "  {:6} ready in {:?}, {} tools",
            s.name,
            s.ready_after.unwrap_or_default(),
            s.tools
        );
    }
    let names: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    println!("one namespace: {}", names.join(", "));
    for (tool, args) in [
        ("clock__now", json!({})),
        ("math__add", json!({"a": 2, "b": 40})),
        ("notes__echo", json!({"text": "hello"})),
    ] {
        println!(
            "{tool} -> {}",
            host.call_tool(tool, args).await?.joined_text()
        );
    }

    // `notes` crashes; the others keep serving while it restarts.
    let mut events = host.events();
    let crash = host.call_tool("notes__crash", json!({})).await;
    println!(
        "notes__crash -> {}",
        crash
            .map(|r| r.joined_text())
            .unwrap_or_else(|e| e.to_string())
    );
    next(&mut events, |e| matches!(e, HostEvent::Lifecycle { server, event: LifecycleEvent::Restarting { .. } } if server == "notes")).await?;
    match host.call_tool("notes__echo", json!({"text": "?"})).await {
        Err(e @ HostError::Unavailable { .. }) => println!("while notes restarts: {e}"),
        other => println!("while notes restarts: {other:?}"),
    }
    println!(
        "math__add still serves: {}",
        host.call_tool("math__add", json!({"a": 1, "b": 1}))
            .await?
            .joined_text()
    );
    next(
        &mut events,
        |e| matches!(e, HostEvent::Listed { server, .. } if server == "notes"),
    )
    .await?;
    println!(
        "notes is back: {}",
        host.call_tool("notes__echo", json!({"text": "again"}))
            .await?
            .joined_text()
    );

    let gone = stop(host).await;
    std::fs::remove_dir_all(&dir)?;
    gone
}

/// Waits (up to 20 s) for an event that satisfies `pred`.
async fn next(
    events: &mut conduit_mcp::host::HostEvents,
    pred: impl Fn(&HostEvent) -> bool,
) -> Result<(), Box<dyn std::error::Error>> {
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(e) = events.recv().await {
            if pred(&e) {
                return Ok(());
            }
        }
        Err("the host ended".into())
    })
    .await?
}

/// `--config FILE`: the servers of your file, their tools.
async fn your_servers(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let host = Host::load(path).await?;
    for s in host.servers() {
        println!("{:20} {:?}", s.name, s.status);
    }
    for t in host.tools() {
        println!("{}", t.name);
    }
    stop(host).await
}

/// Stops every server, waits, and checks that no process is left.
async fn stop(host: Host) -> Result<(), Box<dyn std::error::Error>> {
    let mut processes = 0;
    for s in host.stop().wait().await {
        for r in &s.reports {
            processes += 1;
            if std::path::Path::new(&format!("/proc/{}", r.pid)).exists() || r.group_survivors {
                return Err(format!("{}: process {} outlived the stop", s.name, r.pid).into());
            }
        }
    }
    println!("stopped: {processes} server processes, none left");
    Ok(())
}

/// A server of the demonstration: `clock` (now), `math` (add) or `notes`
/// (echo, crash).
struct Demo(String);

fn tool(name: &str, properties: Value) -> Value {
    json!({ "name": name, "inputSchema": { "type": "object", "properties": properties } })
}

fn text(t: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": t.into() }] })
}

impl Handler for Demo {
    async fn handle_request(
        &self,
        req: Request,
        _ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        let params = req.params.unwrap_or_else(|| json!({}));
        let args = &params["arguments"];
        match (req.method.as_str(), self.0.as_str()) {
            ("tools/list", "clock") => Ok(json!({ "tools": [tool("now", json!({}))] })),
            ("tools/list", "math") => {
                Ok(json!({ "tools": [tool("add", json!({"a": {}, "b": {}}))] }))
            }
            ("tools/list", _) => Ok(
                json!({ "tools": [tool("echo", json!({"text": {}})), tool("crash", json!({}))] }),
            ),
            ("tools/call", _) => match params["name"].as_str().unwrap_or_default() {
                "now" => {
                    let secs = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs());
                    Ok(text(format!("{secs} s since 1970")))
                }
                "add" => Ok(text(
                    (args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0))
                        .to_string(),
                )),
                "echo" => Ok(text(args["text"].as_str().unwrap_or_default())),
                "crash" => std::process::exit(3),
                other => Err(HandlerError::InvalidParams(format!(
                    "unknown tool {other:?}"
                ))),
            },
            (m, _) => Err(HandlerError::MethodNotFound(m.to_owned())),
        }
    }
}

async fn serve(kind: String) {
    let config = ServerConfig::new(Implementation::new(format!("host-example-{kind}"), "1.0.0"))
        .capabilities(json!({ "tools": {} }));
    if let Err(e) = StdioServer::new(config).serve(Demo(kind)).await {
        eprintln!("server: {e}");
    }
}
