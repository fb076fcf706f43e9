//! The roles a child node plays: a node serving the fixture behind
//! gateways, an attacking node that takes commands on stdin, a subscriber
//! that never reads.

use std::io::BufRead;
use std::time::Duration;

use conduit_mcp::cluster::{Gateway, GatewayConfig, GatewayMsg, RemoteServers, SinkMsg};
use conduit_mcp::Client;
use ractor::rpc::CallResult;
use ractor::{ActorCell, ActorRef};
use serde_json::json;

use super::{node, spy};

/// Runs the role in `args` (see [`super::role`]); never returns for roles
/// that wait to be killed.
pub async fn run(args: Vec<String>) {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["serve", profile, name, port, log] => serve(profile, name, port.parse().unwrap(), log).await,
        ["attack", name, port, a] => attack(name, port.parse().unwrap(), a).await,
        ["subscribe", name, port, a] => subscribe(name, port.parse().unwrap(), a).await,
        other => panic!("unknown role {other:?}"),
    }
}

/// Node A (or an impostor): the fixture (logging what it reads to `log`)
/// behind gateways chosen by `profile`; prints `READY <fixture pid>`.
async fn serve(profile: &str, name: &str, port: u16, log: &str) {
    let _node = node(name, port).await;
    let fixture = Client::start(crate::common::config(&["--log-file", log]))
        .await
        .expect("fixture");
    let pid = crate::common::ready_pid(&fixture).await;
    let mut gateways = Vec::new();
    match profile {
        "standard" => {
            let cold = Client::start(crate::common::config(&["--start-delay-ms", "600000"]))
                .await
                .expect("cold fixture");
            let config = GatewayConfig::new()
                .server("fixture", fixture.clone())
                .server_allowing("fixture-limited", fixture.clone(), ["tools/list", "tools/call"])
                .server("cold", cold.clone());
            gateways.push(Gateway::start(config, None).await.expect("gateway"));
            let clamped = GatewayConfig::new().server("fixture-clamped", fixture.clone());
            gateways.push(Gateway::start(clamped, None).await.expect("gateway"));
            let tight = GatewayConfig::new().server("cold-tight", cold);
            gateways.push(Gateway::start(tight, None).await.expect("gateway"));
        }
        "impostor" => {
            let config = GatewayConfig::new().server("fixture", fixture.clone());
            gateways.push(Gateway::start(config, None).await.expect("gateway"));
        }
        other => panic!("unknown profile {other}"),
    }
    println!("READY {pid}");
    std::future::pending::<()>().await;
}

/// Lines from stdin, as they come.
fn commands() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The first gateway on another node exposing `server`.
fn remote_gateway(server: &str) -> ActorRef<GatewayMsg> {
    let members = ractor::pg::get_members(&format!("conduit-mcp/server/{server}"));
    let cell = members
        .into_iter()
        .find(|c| !c.get_id().is_local())
        .expect("a remote gateway");
    ActorRef::from(cell)
}

/// The sinks of other nodes this node can see (their process groups).
fn sink_groups() -> Vec<String> {
    ractor::pg::which_groups()
        .into_iter()
        .filter(|g| g.starts_with("conduit-mcp/sink/"))
        .filter(|g| ractor::pg::get_members(g).iter().any(|c| !c.get_id().is_local()))
        .collect()
}

/// Every remote member of the sinks' groups.
fn sink_members() -> Vec<ActorCell> {
    sink_groups()
        .iter()
        .flat_map(|g| ractor::pg::get_members(g))
        .filter(|c| !c.get_id().is_local())
        .collect()
}

/// A call through `gateway` that also orders: when it returns, every
/// message this node sent the gateway before it has been handled.
async fn barrier(gateway: &ActorRef<GatewayMsg>) {
    let r = gateway
        .call(GatewayMsg::Servers, Some(Duration::from_secs(10)))
        .await;
    assert!(matches!(r, Ok(CallResult::Success(_))), "barrier failed");
}

/// Node C, the attacker: connected to node A (and node B connects to it);
/// prints `READY`, then runs the commands it reads:
///
/// - `FORGE_CANCEL <server> <n>`: cancels ids 1..=n of every sink it sees
///   on the gateway of `server`; prints `DONE <sent>`.
/// - `FORGE_SINKS <n>`: sends forged progress (ids 1..=n) and a forged
///   notification of `fixture` to every sink it sees; prints `DONE <sent>`.
/// - `REUSE <server> <n> <ms>`: calls `sleep ms` on `server` under ids
///   1..=n of every sink it sees; prints `STARTED` once they run, then
///   `RESULT <how many were cancelled>`.
async fn attack(name: &str, port: u16, a: &str) {
    let node = node(name, port).await;
    ractor_cluster::client_connect(&node, a).await.expect("C connects to A");
    let mut commands = commands();
    println!("READY");
    while let Some(line) = commands.recv().await {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["FORGE_CANCEL", server, n] => {
                let gateway = remote_gateway(server);
                let n: u64 = n.parse().unwrap();
                let mut sent = 0;
                for group in sink_groups() {
                    for id in 1..=n {
                        let _ = gateway.cast(GatewayMsg::Cancel(format!("{group}/{id}")));
                        sent += 1;
                    }
                }
                barrier(&gateway).await;
                println!("DONE {sent}");
            }
            ["FORGE_SINKS", n] => {
                let n: u64 = n.parse().unwrap();
                let mut sent = 0;
                for member in sink_members() {
                    let sink = ActorRef::<SinkMsg>::from(member);
                    for id in 1..=n {
                        let p = json!({ "id": id, "params": {
                            "progressToken": 0, "progress": 1e9, "message": "forged" } });
                        let _ = sink.cast(SinkMsg::Progress(serde_json::to_vec(&p).unwrap()));
                        sent += 1;
                    }
                    let note = json!({ "server": "fixture", "method": "notifications/forged",
                        "params": { "forged": true } });
                    let _ = sink.cast(SinkMsg::Notification(serde_json::to_vec(&note).unwrap()));
                    sent += 1;
                }
                println!("DONE {sent}");
            }
            ["REUSE", server, n, ms] => {
                let gateway = remote_gateway(server);
                let (n, ms): (u64, u64) = (n.parse().unwrap(), ms.parse().unwrap());
                let own = format!("conduit-mcp/spy/{}", std::process::id());
                let (_spy, seen) = spy(&own).await;
                let mut calls = Vec::new();
                for group in sink_groups() {
                    for id in 1..=n {
                        let env = json!({ "caller": group, "id": id, "server": server,
                            "op": "request", "method": "sleep", "params": { "ms": ms },
                            "timeout_ms": 60_000, "progress_group": own });
                        let bytes = serde_json::to_vec(&env).unwrap();
                        let gateway = gateway.clone();
                        calls.push(tokio::spawn(async move {
                            gateway
                                .call(|r| GatewayMsg::Call(bytes, r), Some(Duration::from_secs(60)))
                                .await
                        }));
                    }
                }
                let total = calls.len();
                // Running: each call has sent progress.
                let started = crate::common::eventually(Duration::from_secs(20), || {
                    let seen = seen.lock().unwrap();
                    let ids: std::collections::HashSet<u64> = seen
                        .iter()
                        .filter_map(|(_, b)| serde_json::from_slice::<serde_json::Value>(b).ok())
                        .filter_map(|v| v["id"].as_u64())
                        .collect();
                    ids.len() as u64 >= n
                })
                .await;
                assert!(started.is_some(), "C's calls did not start");
                println!("STARTED {total}");
                let mut cancelled = 0;
                for c in calls {
                    if let Ok(Ok(CallResult::Success(answer))) = c.await {
                        // Tag byte 1: an error; the error's kind follows.
                        if answer.first() == Some(&1)
                            && String::from_utf8_lossy(&answer[1..]).contains("cancelled")
                        {
                            cancelled += 1;
                        }
                    }
                }
                println!("RESULT {cancelled}");
            }
            other => panic!("unknown command {other:?}"),
        }
    }
}

/// A node that subscribes to `fixture`'s notifications on node A and then
/// never reads them (the test stops it with SIGSTOP); prints `SUBSCRIBED`.
#[allow(deprecated)]
async fn subscribe(name: &str, port: u16, a: &str) {
    let node = node(name, port).await;
    ractor_cluster::client_connect(&node, a).await.expect("connects to A");
    let servers = RemoteServers::start().await.unwrap();
    let _fixture = servers
        .wait_for("fixture", Duration::from_secs(20))
        .await
        .expect("fixture found");
    let _notes = servers.notifications("fixture");
    // The gateway sees the subscription once the group has synced there.
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!("SUBSCRIBED");
    std::future::pending::<()>().await;
}
