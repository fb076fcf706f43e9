//! [`HttpGateway`] as a library: mounted in the user's own axum app, its host
//! under the user's own supervisor actor, stopped by the user.

use crate::gateway_support;

use std::time::Duration;

use conduit_mcp::gateway::{HttpGateway, HttpGatewayConfig, ToolFilter};
use conduit_mcp::host::{HostConfig, HostOptions};
use gateway_support::common::{self, tempdir};
use gateway_support::http::send;
use gateway_support::{all_gone, request, tool_names};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use serde_json::{json, Value};

/// The user's own actor, parent of the host.
struct Parent;

impl Actor for Parent {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

fn modern(
    addr: std::net::SocketAddr,
    path: &str,
    id: u64,
    method: &str,
    params: Value,
) -> axum::http::Request<http_body_util::Full<bytes::Bytes>> {
    let mut params = params;
    params["_meta"] = gateway_support::http::meta();
    let mut headers = vec![
        ("mcp-protocol-version", gateway_support::MODERN),
        ("mcp-method", method),
    ];
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(n) = &name {
        headers.push(("mcp-name", n.as_str()));
    }
    request(
        "POST",
        addr,
        path,
        &headers,
        Some(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })),
    )
}

#[tokio::test]
async fn an_http_front_mounts_in_the_users_app_under_the_users_supervisor() {
    let dir = tempdir("gw-library");
    let pids = dir.join("a.pids");
    let host =
        HostConfig::new().server("a", common::config(&["--pid-file", pids.to_str().unwrap()]));
    let (parent, parent_task) = Actor::spawn(None, Parent, ()).await.unwrap();
    let front = HttpGateway::start_with(
        host,
        HostOptions::new().supervisor(parent.get_cell()),
        HttpGatewayConfig::new().tools("a", ToolFilter::all().deny(["fail", "sleep"])),
    )
    .await
    .unwrap();

    // The user's app: its own route beside the front's.
    let app = axum::Router::new()
        .route("/version", axum::routing::get(|| async { "1.2.3" }))
        .merge(front.axum_router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = tokio::spawn(async move { axum::serve(listener, app).await });

    let v = send(addr, request("GET", addr, "/version", &[], None)).await;
    assert_eq!(&v.bytes().await[..], b"1.2.3");
    let list = send(addr, modern(addr, "/mcp", 1, "tools/list", json!({})))
        .await
        .json()
        .await;
    let names = tool_names(&list);
    assert!(names.contains(&"a__echo".to_owned()), "{names:?}");
    assert!(
        !names.contains(&"a__fail".to_owned()) && !names.contains(&"a__sleep".to_owned()),
        "filtered tools are not listed: {names:?}"
    );
    let denied = send(
        addr,
        modern(
            addr,
            "/servers/a/mcp",
            2,
            "tools/call",
            json!({ "name": "fail", "arguments": {} }),
        ),
    )
    .await
    .json()
    .await;
    assert_eq!(
        denied["error"]["code"], -32602,
        "filtered tools are not callable: {denied}"
    );
    let ok = send(
        addr,
        modern(
            addr,
            "/mcp",
            3,
            "tools/call",
            json!({ "name": "a__echo", "arguments": { "text": "lib" } }),
        ),
    )
    .await
    .json()
    .await;
    assert_eq!(ok["result"]["content"][0]["text"], "lib", "{ok}");

    // The user's supervisor goes: the host's servers go with it.
    let server_pids = common::read_pids(&pids);
    assert_eq!(server_pids.len(), 1);
    parent.stop(None);
    parent_task.await.unwrap();
    let gone = common::eventually(Duration::from_secs(10), || all_gone(&server_pids)).await;
    assert!(
        gone.is_some(),
        "the server outlived its supervisor: {server_pids:?}"
    );
    front.shutdown().await;
    served.abort();
}

/// The front's routes served on a loopback listener of their own.
async fn mounted(front: &HttpGateway) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = front.axum_router();
    let served = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, served)
}

#[tokio::test]
async fn a_front_whose_host_was_killed_says_so_on_health_and_on_calls() {
    let dir = tempdir("gw-library-host-killed");
    let pids = dir.join("a.pids");
    let host =
        HostConfig::new().server("a", common::config(&["--pid-file", pids.to_str().unwrap()]));
    let (parent, parent_task) = Actor::spawn(None, Parent, ()).await.unwrap();
    let front = HttpGateway::start_with(
        host,
        HostOptions::new().supervisor(parent.get_cell()),
        HttpGatewayConfig::new(),
    )
    .await
    .unwrap();
    let (addr, served) = mounted(&front).await;
    let (status, _) = health(addr).await;
    assert_eq!(status, 200);

    // Inside the user's tree, the host's actor is killed; its servers are
    // reaped as documented.
    let server_pids = common::read_pids(&pids);
    front.host().supervisor().kill();
    let gone = common::eventually(Duration::from_secs(10), || all_gone(&server_pids)).await;
    assert!(
        gone.is_some(),
        "the server outlived its host: {server_pids:?}"
    );

    let (status, body) = health(addr).await;
    common::figure("health of a front whose host was killed", &body);
    let call = send(
        addr,
        modern(
            addr,
            "/mcp",
            1,
            "tools/call",
            json!({ "name": "a__echo", "arguments": { "text": "x" } }),
        ),
    )
    .await;
    let http = call.status;
    let call = call.json().await;
    common::figure("a call to a front whose host was killed", &call);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "host_stopped", "{body}");
    assert_eq!(http, 503, "{call}");
    let message = call["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("host") && !message.to_lowercase().contains("unknown tool"),
        "{call}"
    );
    parent.stop(None);
    parent_task.await.unwrap();
    front.shutdown().await;
    served.abort();
}

#[tokio::test]
async fn a_launched_front_answers_health_at_once_and_holds_requests_until_its_start_is_over() {
    let dir = tempdir("gw-library-launch");
    let pids = dir.join("slow.pids");
    // `slow` answers its first request after 3 s.
    let host = HostConfig::new().server(
        "slow",
        common::config(&[
            "--pid-file",
            pids.to_str().unwrap(),
            "--start-delay-ms",
            "3000",
        ]),
    );
    let asked = std::time::Instant::now();
    let front = HttpGateway::launch(host, HttpGatewayConfig::new())
        .await
        .unwrap();
    let (addr, served) = mounted(&front).await;
    let (status, body) = health(addr).await;
    common::figure(
        "first /health of a launched front",
        format!("{status} {body} after {:?}", asked.elapsed()),
    );
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "starting", "{body}");
    assert_eq!(body["servers"]["slow"]["status"], "starting", "{body}");

    // Sent now, answered by the front once the start is over.
    let list = tokio::time::timeout(
        gateway_support::PATIENCE,
        send(addr, modern(addr, "/mcp", 1, "tools/list", json!({}))),
    )
    .await
    .expect("the early request was not answered after the start")
    .json()
    .await;
    let names = tool_names(&list);
    assert!(names.contains(&"slow__echo".to_owned()), "{names:?}");
    let (status, body) = health(addr).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ok", "{body}");
    let summaries = front.started().await;
    assert!(summaries.iter().all(|s| s.is_ready()), "{summaries:?}");

    let server_pids = common::read_pids(&pids);
    front.shutdown().await;
    assert!(all_gone(&server_pids), "{server_pids:?}");
    served.abort();
}

#[tokio::test]
async fn a_front_stopped_while_it_starts_stops_its_servers_and_answers_held_requests() {
    let dir = tempdir("gw-library-launch-stop");
    let pids = dir.join("slow.pids");
    let host = HostConfig::new().server(
        "slow",
        common::config(&[
            "--pid-file",
            pids.to_str().unwrap(),
            "--start-delay-ms",
            "20000",
        ]),
    );
    let front = HttpGateway::launch(host, HttpGatewayConfig::new())
        .await
        .unwrap();
    let (addr, served) = mounted(&front).await;
    let running = common::eventually(gateway_support::PATIENCE, || pids.exists()).await;
    assert!(running.is_some(), "slow did not start");
    let held = tokio::spawn(async move {
        send(addr, modern(addr, "/mcp", 1, "tools/list", json!({})))
            .await
            .status
    });
    let server_pids = common::read_pids(&pids);
    tokio::time::timeout(gateway_support::PATIENCE, front.shutdown())
        .await
        .expect("the stop waited for the start");
    assert!(all_gone(&server_pids), "{server_pids:?}");
    let status = tokio::time::timeout(gateway_support::PATIENCE, held)
        .await
        .expect("a request held for the start was never answered")
        .unwrap();
    assert_eq!(status, 503);
    served.abort();
}

/// `GET /health`: its status and body.
async fn health(addr: std::net::SocketAddr) -> (u16, Value) {
    let r = send(addr, request("GET", addr, "/health", &[], None)).await;
    let status = r.status;
    (status, r.json().await)
}
