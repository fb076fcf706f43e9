//! Clients as OTP children: a `one_for_all` group of two clients under the
//! application's root actor, found by registered names, as a port of this
//! Elixir tree would be:
//!
//! ```elixir
//! children = [
//!   {ConduitMcp.Client, name: :alpha, transport: {Stdio, command: me, args: ["--serve"]}},
//!   {ConduitMcp.Client, name: :beta,  transport: {Stdio, command: me, args: ["--serve"]}}
//! ]
//! Supervisor.start_link(children, strategy: :one_for_all, max_restarts: 5, max_seconds: 60)
//! ```
//!
//! ```text
//! App (root actor)                 sees the group's meltdown as ActorFailed
//!  └─ ClientGroup "tools"          one_for_all, at most 5 (the rounds) restarts within 60 s
//!      ├─ client "alpha"           max_reconnects 0: its restarts are the group's
//!      └─ client "beta"
//! ```
//!
//! The program kills alpha's server (`kill -9`) five times (`-- --rounds
//! N` for another count); each time the
//! group stops beta and starts both again, and the program prints the time
//! from the kill until both answer again on new servers, then the median.
//! One kill more is one restart too many: the group stops both clients and
//! fails, and the App gets its `ActorFailed` with the reason. Unix only
//! (it runs `kill`).
//!
//! Run: `cargo run --example client_group`

use std::time::{Duration, Instant};

use conduit_mcp::client::{
    ChildSpec, ClientGroup, ClientRegistry, ClientSpec, GroupError, GroupSpec, Strategy,
};
use conduit_mcp::jsonrpc::Request;
use conduit_mcp::protocol::Implementation;
use conduit_mcp::server::{Handler, HandlerError, RequestContext, ServerConfig, StdioServer};
use conduit_mcp::{ClientConfig, StderrMode};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use serde_json::{json, Value};
use tokio::sync::mpsc;

const NAMES: [&str; 2] = ["alpha", "beta"];

/// The application's root: starts the group under itself and reports how
/// the group ended.
struct App;

impl Actor for App {
    type Msg = ();
    type State = mpsc::UnboundedSender<String>;
    type Arguments = (GroupSpec, mpsc::UnboundedSender<String>);

    async fn pre_start(
        &self,
        myself: ActorRef<()>,
        (spec, ended): Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        ClientGroup::start(spec, Some(myself.get_cell())).await?;
        Ok(ended)
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<()>,
        evt: SupervisionEvent,
        ended: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // The parent's decision: here, report and stop (an OTP parent
        // would restart the group, or fail in turn).
        let why = match evt {
            SupervisionEvent::ActorFailed(_, e) => match e.downcast_ref::<GroupError>() {
                Some(GroupError::Meltdown { child, reason, .. }) => {
                    format!("meltdown: child `{child}` ended: {reason}")
                }
                _ => format!("failed: {e}"),
            },
            SupervisionEvent::ActorTerminated(_, _, why) => format!("stopped: {why:?}"),
            _ => return Ok(()),
        };
        let _ = ended.send(why);
        myself.stop(None);
        Ok(())
    }
}

/// The client registered as `name` once it answers from a server other
/// than `old`; returns that server's pid.
async fn answering(names: &ClientRegistry, name: &str, old: Option<u32>) -> u32 {
    loop {
        let Some(client) = names.wait_for(name, Duration::from_secs(30)).await else {
            panic!("`{name}` was not started again");
        };
        let fresh = client
            .ready(Duration::from_secs(30))
            .await
            .ok()
            .and_then(|s| s.pid)
            .filter(|pid| Some(*pid) != old);
        if let Some(pid) = fresh {
            if client.request("tools/list", None).await.is_ok() {
                return pid;
            }
        }
        // Still the client that is going: wait for its end.
        let _ = client.watch_status().wait_for(|s| s.is_final()).await;
    }
}

fn kill9(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    assert!(
        matches!(status, Ok(s) if s.success()),
        "kill {pid}: {status:?}"
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "--serve") {
        let config = ServerConfig::new(Implementation::new("client-group-demo", "0.1.0"))
            .capabilities(json!({ "tools": {} }));
        StdioServer::new(config).serve(Tools).await?;
        return Ok(());
    }
    let rounds: u32 = std::env::args()
        .skip_while(|a| a != "--rounds")
        .nth(1)
        .map_or(Ok(5), |n| n.parse())?;
    let me = std::env::current_exe()?.to_string_lossy().into_owned();
    let names = ClientRegistry::new();
    let mut group = GroupSpec::new("tools", Strategy::OneForAll)
        .max_restarts(rounds)
        .restart_period(Duration::from_secs(60));
    let mut specs = Vec::new();
    for name in NAMES {
        let config = ClientConfig::new(&me)
            .name(name)
            .arg("--serve")
            .stderr(StderrMode::Discard)
            .max_reconnects(0);
        let spec = ClientSpec::new(config).register(&names)?;
        // A clone is the same child: kept here to await its last server.
        specs.push(spec.clone());
        group = group.child(ChildSpec::client(spec));
    }
    let (tx, mut ended) = mpsc::unbounded_channel();
    let (_app, app_done) = Actor::spawn(None, App, (group, tx)).await?;

    let mut pids = Vec::new();
    for name in NAMES {
        pids.push(answering(&names, name, None).await);
    }
    let mut times = Vec::new();
    for round in 1..=rounds {
        let start = Instant::now();
        kill9(pids[0]);
        for (i, name) in NAMES.iter().enumerate() {
            pids[i] = answering(&names, name, Some(pids[i])).await;
        }
        let took = start.elapsed();
        println!("round {round}: both clients answer again after {took:?} (servers {pids:?})");
        times.push(took);
    }
    times.sort();
    println!(
        "one_for_all restart of two clients, kill to both answering: median {:?} of {rounds}",
        times[times.len() / 2]
    );

    // One restart too many within the period.
    kill9(pids[0]);
    println!("App: {}", ended.recv().await.unwrap_or_default());
    app_done.await?;
    for spec in &specs {
        assert!(names.whereis(&spec.name()).is_none(), "a client still runs");
        // Stopped by the group already; this awaits its server's end.
        if let Some(last) = spec.current() {
            for r in last.stop().wait().await {
                println!("[{}] server {} ended: {:?}", spec.name(), r.pid, r.exit);
            }
        }
    }
    Ok(())
}

/// The demo server's tools: one, `echo`.
struct Tools;

impl Handler for Tools {
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
