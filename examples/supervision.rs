//! An application-style supervision tree with two MCP servers, as a user
//! porting an OTP design would write it.
//!
//! ```text
//! App (user's root actor)
//!  ├─ ClientSupervisor "steady"  -> Connection -> PortOwner -> this program --serve
//!  └─ ClientSupervisor "crashy"  -> Connection -> PortOwner -> this program --serve --crash-every-ms 400
//! ```
//!
//! The App receives every lifecycle event as an ordinary message and prints
//! it; "crashy" exits every 400 ms and is restarted with backoff. After
//! about two seconds the App is stopped; its `post_stop` stops both clients
//! and awaits their shutdowns, and the program checks that no server
//! process is left.
//!
//! Run: `cargo run --example supervision`

use std::time::Duration;

use conduit_mcp::jsonrpc::Request;
use conduit_mcp::protocol::Implementation;
use conduit_mcp::server::{Handler, HandlerError, RequestContext, ServerConfig, StdioServer};
use conduit_mcp::{forward_events, LifecycleEvent};
use conduit_mcp::{Backoff, Client, ClientConfig, StartOptions};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use serde_json::{json, Value};

#[derive(Debug)]
enum AppMsg {
    /// A lifecycle event of one of our MCP clients.
    Mcp(LifecycleEvent),
    /// Periodic work: call both servers.
    Tick,
}

// An application built with ractor's `cluster` feature (conduit-mcp's
// `cluster` feature) implements `Message` for its local messages itself.
#[cfg(feature = "cluster")]
impl ractor::Message for AppMsg {}

struct App;

struct AppState {
    clients: Vec<Client>,
    pids: Vec<u32>,
}

impl Actor for App {
    type Msg = AppMsg;
    type State = AppState;
    type Arguments = ();

    async fn pre_start(
        &self,
        myself: ActorRef<AppMsg>,
        _: (),
    ) -> Result<AppState, ActorProcessingErr> {
        let me = std::env::current_exe()?.to_string_lossy().into_owned();
        let mut clients = Vec::new();
        for (name, extra) in [("steady", None), ("crashy", Some("--crash-every-ms=400"))] {
            let mut config = ClientConfig::new(&me)
                .name(name)
                .arg("--serve")
                .backoff(
                    Backoff::new()
                        .initial(Duration::from_millis(50))
                        .max(Duration::from_millis(500)),
                )
                .max_reconnects(10);
            if let Some(a) = extra {
                config = config.arg(a);
            }
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            // Linked under this actor: stopping the App ends the servers.
            let client = Client::start_with(
                config,
                StartOptions::new().supervisor(myself.get_cell()).events(tx),
            )
            .await?;
            forward_events(rx, myself.clone(), AppMsg::Mcp);
            clients.push(client);
        }
        myself.send_interval(Duration::from_millis(150), || AppMsg::Tick);
        Ok(AppState {
            clients,
            pids: Vec::new(),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<AppMsg>,
        msg: AppMsg,
        st: &mut AppState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            AppMsg::Mcp(e) => match &e {
                LifecycleEvent::Spawned { name, pid } => {
                    st.pids.push(*pid);
                    println!("[{name}] spawned pid {pid}");
                }
                LifecycleEvent::Ready { name, session } => {
                    println!(
                        "[{name}] ready: {} {}",
                        session.era, session.protocol_version
                    )
                }
                LifecycleEvent::Closed { name, reason, .. } => {
                    println!("[{name}] closed: {reason}")
                }
                LifecycleEvent::Restarting {
                    name,
                    attempt,
                    delay,
                } => {
                    println!("[{name}] restarting in {delay:?} (attempt {attempt})")
                }
                LifecycleEvent::GaveUp { name, reason } => println!("[{name}] gave up: {reason}"),
                LifecycleEvent::Stopped { name } => println!("[{name}] stopped"),
                other => println!("{other:?}"),
            },
            AppMsg::Tick => {
                for c in &st.clients {
                    let c = c.clone();
                    // Calls run in tasks: the actor never waits on the network.
                    tokio::spawn(async move {
                        if let Err(e) = c.request("tools/list", None).await {
                            println!("[{}] call failed: {e}", c.name());
                        }
                    });
                }
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<AppMsg>,
        st: &mut AppState,
    ) -> Result<(), ActorProcessingErr> {
        // The graceful path: stop each client and await the whole escalation.
        for c in &st.clients {
            for r in c.stop().wait().await {
                println!("[{}] server pid {} ended: {:?}", c.name(), r.pid, r.exit);
            }
        }
        let left: Vec<_> = st.pids.iter().filter(|p| alive(**p)).collect();
        println!("server processes left: {left:?}");
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _m: ActorRef<AppMsg>,
        evt: SupervisionEvent,
        _st: &mut AppState,
    ) -> Result<(), ActorProcessingErr> {
        // A client tree ending is reported through its events; keep running.
        if let SupervisionEvent::ActorFailed(cell, e) = evt {
            println!("client supervisor {:?} failed: {e}", cell.get_id());
        }
        Ok(())
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--serve") {
        let crash = args
            .iter()
            .find_map(|a| a.strip_prefix("--crash-every-ms="))
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(ms) = crash {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                std::process::exit(3);
            });
        }
        let config = ServerConfig::new(Implementation::new("supervision-demo", "0.1.0"))
            .capabilities(json!({ "tools": {} }));
        StdioServer::new(config).serve(Echo).await?;
        return Ok(());
    }
    let (app, handle) = Actor::spawn(None, App, ()).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    app.stop(Some("demo over".into()));
    handle.await?;
    Ok(())
}

struct Echo;

impl Handler for Echo {
    async fn handle_request(
        &self,
        req: Request,
        _ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        match req.method.as_str() {
            "tools/list" => {
                Ok(json!({ "tools": [{ "name": "echo", "inputSchema": { "type": "object" } }] }))
            }
            m => Err(HandlerError::MethodNotFound(m.to_owned())),
        }
    }
}
