//! The roles a child node plays: a node serving the fixture behind
//! gateways, an attacking node that takes commands on stdin, a subscriber
//! that never reads.

use std::io::BufRead;
use std::time::Duration;

use conduit_mcp::cluster::{Gateway, GatewayConfig, GatewayMsg, Grants, RemoteServers, SinkMsg};
use conduit_mcp::Client;
use ractor::rpc::CallResult;
use ractor::{Actor, ActorCell, ActorRef};
use serde_json::json;

use super::{node, seen_json, session_events, session_outcome, spy, Seen};

/// Runs the role in `args` (see [`super::role`]); never returns for roles
/// that wait to be killed.
pub async fn run(args: Vec<String>) {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["serve", profile, name, port, log] => {
            serve(profile, name, port.parse().unwrap(), log).await
        }
        ["attack", name, port, a] => attack(name, port.parse().unwrap(), a).await,
        ["subscribe", name, port, a] => subscribe(name, port.parse().unwrap(), a).await,
        ["claim", name, port, a, tries] => {
            claim(name, port.parse().unwrap(), a, tries.parse().unwrap()).await
        }
        ["reclaim", name, port, a, pause_ms, tries] => {
            let pause = Duration::from_millis(pause_ms.parse().unwrap());
            reclaim(
                name,
                port.parse().unwrap(),
                a,
                pause,
                tries.parse().unwrap(),
            )
            .await
        }
        other => panic!("unknown role {other:?}"),
    }
}

/// Node A (or an impostor): the fixture (logging what it reads to `log`)
/// behind gateways chosen by `profile`; prints `READY <fixture pid>`.
async fn serve(profile: &str, name: &str, port: u16, log: &str) {
    let _node = node(name, port).await;
    // Node A's own queue of the fixture's notifications (its gateway's
    // forwarder reads it) held small, so that node A's memory shows what
    // the gateway queues.
    let config = crate::common::config(&["--log-file", log]).max_queued_notification_bytes(1 << 20);
    let fixture = Client::start(config).await.expect("fixture");
    let pid = crate::common::ready_pid(&fixture).await;
    let mut gateways = Vec::new();
    match profile {
        "standard" => {
            // A server that is not ready for 10 minutes.
            let cold = Client::start(crate::common::config(&["--start-delay-ms", "600000"]))
                .await
                .expect("cold fixture");
            let config = GatewayConfig::new()
                .expose("fixture-ungranted", fixture.clone(), Grants::none())
                .expose("fixture", fixture.clone(), Grants::all())
                .server_allowing(
                    "fixture-limited",
                    fixture.clone(),
                    ["tools/list", "tools/call"],
                )
                .expose("cold", cold.clone(), Grants::all())
                .max_calls_per_node(64);
            gateways.push(Gateway::start(config, None).await.expect("gateway"));
            let clamped = GatewayConfig::new()
                .expose("fixture-clamped", fixture.clone(), Grants::all())
                .max_timeout(Duration::from_millis(500));
            gateways.push(Gateway::start(clamped, None).await.expect("gateway"));
            let tight = GatewayConfig::new()
                .expose("cold-tight", cold, Grants::all())
                .max_calls(8)
                .max_calls_per_node(100);
            gateways.push(Gateway::start(tight, None).await.expect("gateway"));
        }
        "impostor" => {
            let config = GatewayConfig::new().expose("fixture", fixture.clone(), Grants::all());
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
        .filter(|g| {
            ractor::pg::get_members(g)
                .iter()
                .any(|c| !c.get_id().is_local())
        })
        .collect()
}

/// Every remote member of the sinks' groups.
fn sink_members() -> Vec<ActorCell> {
    sink_groups()
        .iter()
        .flat_map(ractor::pg::get_members)
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

/// This node's own ticket at `gateway`, asked for by hand (a spy as the
/// sink): (ticket, secret, the spy's record).
async fn own_ticket(gateway: &ActorRef<GatewayMsg>) -> (String, String, Seen, ActorRef<SinkMsg>) {
    let group = format!("conduit-mcp/attacker/{}", std::process::id());
    let (spy, seen) = spy(&group).await;
    let hello = json!({ "group": group, "pid": spy.get_id().pid(), "nonce": "n" });
    let answer = gateway
        .call(
            |r| GatewayMsg::Hello(serde_json::to_vec(&hello).unwrap(), r),
            Some(Duration::from_secs(10)),
        )
        .await;
    assert!(
        matches!(answer, Ok(CallResult::Success(ref a)) if a.first() == Some(&0)),
        "hello refused"
    );
    let got = crate::common::eventually(Duration::from_secs(10), || {
        !seen_json(&seen, "ticket").is_empty()
    })
    .await;
    assert!(got.is_some(), "no ticket for the attacker's own sink");
    let t = seen_json(&seen, "ticket").remove(0);
    (
        t["ticket"].as_str().unwrap().to_owned(),
        t["secret"].as_str().unwrap().to_owned(),
        seen,
        spy,
    )
}

/// Node C, the attacker: connected to node A (and node B connects to it);
/// prints `READY`, then runs the commands it reads, each the best it can do
/// with what a connected node sees:
///
/// - `FORGE_CANCEL <server> <n>`: cancels ids 1..=n under its own ticket,
///   under a made-up one, and in the format of old (`<sink group>/<id>`);
///   prints `DONE <sent>`.
/// - `FORGE_SINKS <server> <n>`: casts into every sink it sees made-up
///   tickets, and progress (ids 1..=n) and a notification of `fixture`
///   with a made-up secret and with its own ticket's secret; prints `DONE
///   <sent>`.
/// - `REUSE <server> <n> <ms>`: calls `sleep ms` on `server` under ids
///   1..=n (the ids node B uses); prints `STARTED` once they run, then
///   `RESULT <how many were cancelled>`.
/// - `COPY_SINK <server>`: a copy of every sink it sees (same group, same
///   pid); prints `COPIED <n>`; then `TICKETS` prints `SEEN <tickets the
///   copies received>`.
/// - `PROBE <server>`: calls tool `sleep` (20 ms) on `server` with
///   progress, and prints `TOKEN <the progressToken its progress carried>`:
///   what node A's client numbers its requests with.
/// - `INJECT <server> <token> <n>`: calls tool `sleep` (500 ms) on
///   `server` `n` times at once, without asking for progress but with
///   `_meta.progressToken` set to `token + 1` ..= `token + n` (the requests
///   node A's client sent since the probe); prints `DONE <calls answered
///   with a result>`.
async fn attack(name: &str, port: u16, a: &str) {
    let node = node(name, port).await;
    ractor_cluster::client_connect(&node, a)
        .await
        .expect("C connects to A");
    let mut commands = commands();
    let mut copies: Vec<Seen> = Vec::new();
    println!("READY");
    while let Some(line) = commands.recv().await {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["FORGE_CANCEL", server, n] => {
                let gateway = remote_gateway(server);
                let n: u64 = n.parse().unwrap();
                let (own, _, _, _spy) = own_ticket(&gateway).await;
                let mut sent = 0;
                for id in 1..=n {
                    for ticket in [own.as_str(), "00000000000000000000000000000000"] {
                        let key = json!({ "ticket": ticket, "id": id });
                        let _ = gateway.cast(GatewayMsg::Cancel(serde_json::to_vec(&key).unwrap()));
                        sent += 1;
                    }
                    for group in sink_groups() {
                        let old = format!("{group}/{id}");
                        let _ = gateway.cast(GatewayMsg::Cancel(old.into_bytes()));
                        sent += 1;
                    }
                }
                barrier(&gateway).await;
                println!("DONE {sent}");
            }
            ["FORGE_SINKS", server, n] => {
                let gateway = remote_gateway(server);
                let n: u64 = n.parse().unwrap();
                let (_, own_secret, _, _spy) = own_ticket(&gateway).await;
                let mut sent = 0;
                for member in sink_members() {
                    let sink = ActorRef::<SinkMsg>::from(member);
                    let cast = |msg: SinkMsg| {
                        let _ = sink.cast(msg);
                    };
                    let ticket =
                        json!({ "nonce": "guess", "ticket": "t", "secret": "s", "window": 1 });
                    cast(SinkMsg::Ticket(serde_json::to_vec(&ticket).unwrap()));
                    sent += 1;
                    for secret in ["made-up", own_secret.as_str()] {
                        for id in 1..=n {
                            let p = json!({ "secret": secret, "id": id, "params": {
                                "progressToken": 0, "progress": 1e9, "message": "forged" } });
                            cast(SinkMsg::Progress(serde_json::to_vec(&p).unwrap()));
                            sent += 1;
                        }
                        let note = json!({ "secret": secret, "server": "fixture",
                            "method": "notifications/forged", "params": { "forged": true } });
                        cast(SinkMsg::Notification(serde_json::to_vec(&note).unwrap()));
                        sent += 1;
                    }
                }
                println!("DONE {sent}");
            }
            ["REUSE", server, n, ms] => {
                let gateway = remote_gateway(server);
                let (n, ms): (u64, u64) = (n.parse().unwrap(), ms.parse().unwrap());
                let (ticket, _, seen, _spy) = own_ticket(&gateway).await;
                let mut calls = Vec::new();
                for id in 1..=n {
                    let env = json!({ "ticket": ticket, "id": id, "server": server,
                        "op": "request", "method": "sleep", "params": { "ms": ms },
                        "timeout_ms": 60_000, "progress": true });
                    let bytes = serde_json::to_vec(&env).unwrap();
                    let gateway = gateway.clone();
                    calls.push(tokio::spawn(async move {
                        gateway
                            .call(
                                |r| GatewayMsg::Call(bytes, r),
                                Some(Duration::from_secs(60)),
                            )
                            .await
                    }));
                }
                // Running: each call has sent progress.
                let started = crate::common::eventually(Duration::from_secs(20), || {
                    let ids: std::collections::HashSet<u64> = seen_json(&seen, "progress")
                        .iter()
                        .filter_map(|v| v["id"].as_u64())
                        .collect();
                    ids.len() as u64 >= n
                })
                .await;
                assert!(started.is_some(), "C's calls did not start");
                println!("STARTED {}", calls.len());
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
            ["COPY_SINK", server] => {
                let gateway = remote_gateway(server);
                // Node B's sink joined its group on node B; under load the
                // join reaches this node later than the command does.
                let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
                while sink_groups().is_empty() && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                let mut copied = 0;
                for group in sink_groups() {
                    for member in ractor::pg::get_members(&group) {
                        let target = member.get_id().pid();
                        if member.get_id().is_local() {
                            continue;
                        }
                        // Actors take the next pid: spend them up to the
                        // sink's.
                        let mut fillers = Vec::new();
                        let copy = loop {
                            let seen = Seen::default();
                            let (actor, _) =
                                Actor::spawn(None, super::Spy, seen.clone()).await.unwrap();
                            let pid = actor.get_id().pid();
                            if pid == target {
                                break Some((actor, seen));
                            }
                            fillers.push(actor);
                            if pid > target {
                                break None;
                            }
                        };
                        for f in fillers {
                            f.stop(None);
                        }
                        if let Some((actor, seen)) = copy {
                            ractor::pg::join(group.clone(), vec![actor.get_cell()]);
                            copies.push(seen);
                            copied += 1;
                        }
                    }
                }
                // The joins reach node A before this call's answer.
                barrier(&gateway).await;
                println!("COPIED {copied}");
            }
            ["PROBE", server] => {
                let gateway = remote_gateway(server);
                let (ticket, _, seen, _spy) = own_ticket(&gateway).await;
                let env = json!({ "ticket": ticket, "id": 1, "server": server,
                    "op": "request", "method": "tools/call",
                    "params": { "name": "sleep", "arguments": { "ms": 20 } },
                    "timeout_ms": 10_000, "progress": true });
                let answer = gateway
                    .call(
                        |r| GatewayMsg::Call(serde_json::to_vec(&env).unwrap(), r),
                        Some(Duration::from_secs(10)),
                    )
                    .await;
                assert!(
                    matches!(answer, Ok(CallResult::Success(ref a)) if a.first() == Some(&0)),
                    "the probe failed"
                );
                // Progress is cast before the answer: it is there by now,
                // or (under load) shortly after.
                let got = crate::common::eventually(Duration::from_secs(10), || {
                    !seen_json(&seen, "progress").is_empty()
                })
                .await;
                assert!(got.is_some(), "the probe got no progress");
                let token = seen_json(&seen, "progress")[0]["params"]["progressToken"].clone();
                println!("TOKEN {}", token.as_u64().expect("a numeric token"));
            }
            ["INJECT", server, token, n] => {
                let gateway = remote_gateway(server);
                let (token, n): (u64, u64) = (token.parse().unwrap(), n.parse().unwrap());
                let (ticket, _, _, _spy) = own_ticket(&gateway).await;
                let calls: Vec<_> = (1..=n)
                    .map(|k| {
                        let env = json!({ "ticket": ticket, "id": k, "server": server,
                            "op": "request", "method": "tools/call",
                            "params": { "name": "sleep", "arguments": { "ms": 500 },
                                "_meta": { "progressToken": token + k } },
                            "timeout_ms": 30_000, "progress": false });
                        let bytes = serde_json::to_vec(&env).unwrap();
                        let gateway = gateway.clone();
                        tokio::spawn(async move {
                            gateway
                                .call(
                                    |r| GatewayMsg::Call(bytes, r),
                                    Some(Duration::from_secs(30)),
                                )
                                .await
                        })
                    })
                    .collect();
                let mut answered = 0;
                for c in calls {
                    if let Ok(Ok(CallResult::Success(a))) = c.await {
                        answered += usize::from(a.first() == Some(&0));
                    }
                }
                println!("DONE {answered}");
            }
            ["TICKETS"] => {
                let n: usize = copies.iter().map(|s| seen_json(s, "ticket").len()).sum();
                println!("SEEN {n}");
            }
            other => panic!("unknown command {other:?}"),
        }
    }
}

/// A node that subscribes to `fixture`'s notifications on node A and then
/// never reads them (the test stops it with SIGSTOP); prints `SUBSCRIBED`.
async fn subscribe(name: &str, port: u16, a: &str) {
    let node = node(name, port).await;
    ractor_cluster::client_connect(&node, a)
        .await
        .expect("connects to A");
    let servers = RemoteServers::start().await.unwrap();
    let fixture = servers
        .wait_for("fixture", Duration::from_secs(20))
        .await
        .expect("fixture found");
    let _notes = fixture
        .notifications(Duration::from_secs(20))
        .await
        .expect("subscribed");
    println!("SUBSCRIBED");
    std::future::pending::<()>().await;
}

/// A node that holds the cookie and declares `name` (another node's):
/// prints `READY`, waits for `GO`, then connects to node A up to `tries`
/// times, one connection at a time, until one authenticates; prints
/// `RESULT taken <try>` (a session under that name now is its own) or
/// `RESULT refused <tries>`.
async fn claim(name: &str, port: u16, a: &str, tries: u32) {
    let node = node(name, port).await;
    let mut events = session_events(&node);
    let mut commands = commands();
    println!("READY");
    assert_eq!(commands.recv().await.as_deref(), Some("GO"));
    for k in 1..=tries {
        ractor_cluster::client_connect(&node, a)
            .await
            .expect("connects to A");
        match session_outcome(&mut events, Duration::from_secs(20)).await {
            "authenticated" => {
                println!("RESULT taken {k}");
                std::future::pending::<()>().await;
            }
            "disconnected" => continue,
            other => panic!("try {k}: {other}"),
        }
    }
    println!("RESULT refused {tries}");
    std::future::pending::<()>().await;
}

/// A node under `name` (one restarted, say): connects to `a` until its
/// session is authenticated, waiting `pause` between tries as a node retrying its
/// connection does, at most `tries` times. Prints `RESULT taken K S` (the
/// try that got in, the seconds since the first) or `RESULT refused N S`.
async fn reclaim(name: &str, port: u16, a: &str, pause: Duration, tries: u32) {
    let node = node(name, port).await;
    let mut events = session_events(&node);
    let start = std::time::Instant::now();
    for k in 1..=tries {
        ractor_cluster::client_connect(&node, a)
            .await
            .expect("connects to A");
        match session_outcome(&mut events, Duration::from_secs(20)).await {
            "authenticated" => {
                println!("RESULT taken {k} {:.1}", start.elapsed().as_secs_f64());
                std::future::pending::<()>().await;
            }
            "disconnected" => tokio::time::sleep(pause).await,
            other => panic!("try {k}: {other}"),
        }
    }
    println!(
        "RESULT refused {tries} {:.1}",
        start.elapsed().as_secs_f64()
    );
    std::future::pending::<()>().await;
}
