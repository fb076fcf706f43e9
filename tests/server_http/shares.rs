//! What one client can take from the others: the inbound byte budget
//! (`max_inbound_bytes`) is shared out per owner, with room kept for a
//! newcomer, and no client's `initialize` ends another's session.
//!
//! Several owners are principals here (the `x-client` header, put on the
//! request as an authentication layer would), or source addresses in
//! 127.0.0.0/8 where what is measured holds whoever the owner is.

use crate::server_http_support as support;

use std::sync::Arc;

use conduit_mcp::server::http::{axum, HttpService, Principal};
use serde_json::{json, Value};
use support::*;

fn init() -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } })
}

/// A 2026-07-28 `sleep` call of `ms` whose arguments also carry `pad`
/// zeros (`[0,0,...]`: 2 bytes each on the wire, about 32 once parsed),
/// from the client named `client` (no header: none).
fn padded_sleep(
    addr: std::net::SocketAddr,
    client: Option<&str>,
    id: u64,
    ms: u64,
    pad: usize,
) -> axum::http::Request<http_body_util::Full<bytes::Bytes>> {
    let mut params = json!({ "name": "sleep", "arguments": { "ms": ms, "pad": vec![0u8; pad] } });
    params["_meta"] = meta();
    params["_meta"]["progressToken"] = json!(id);
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
    let mut headers = vec![
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "sleep"),
    ];
    if let Some(c) = client {
        headers.push(("x-client", c));
    }
    request("POST", addr, &headers, Some(&body))
}

/// A padded call's outcome: its status, and its stream once the call runs
/// (read up to its first progress notification), kept open.
async fn running(r: Resp) -> (u16, Option<Events>, Value) {
    let status = r.status;
    if r.is_sse() {
        let mut ev = r.sse();
        let first = ev.next_message().await.expect("a progress notification");
        assert_eq!(first["method"], "notifications/progress", "{first}");
        return (status, Some(ev), Value::Null);
    }
    (status, None, r.json().await)
}

#[tokio::test]
async fn one_request_that_parses_large_does_not_lock_other_clients_out() {
    // Defaults: max_inbound_bytes 64 MiB. 2.2 MB of `[0,0,...]` parse to
    // about 64 MiB; the tool then waits a minute.
    let s = start(config()).await;
    let big = padded_sleep(s.addr, None, 1, 60_000, 1_100_000);
    let (status, _held, refusal) = running(send_from(OTHER_PEER, s.addr, big).await).await;
    println!("a 2.2 MB body of zeros to a tool that waits: {status} {refusal}");
    // Other clients, the one that sent it included, are served meanwhile.
    let victim = post(s.addr, &[], init()).await;
    let call = modern(
        s.addr,
        json!(2),
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "hi" } }),
    )
    .await;
    println!(
        "while it waits: another client's initialize {}, call {}",
        victim.status, call.status
    );
    assert_eq!(victim.status, 200, "the large request locked others out");
    assert_eq!(call.status, 200, "the large request locked others out");
    // It is more than one client may hold: refused at once, saying why.
    assert_eq!(status, 413, "{refusal}");
    assert!(
        refusal["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_inbound_bytes")),
        "{refusal}"
    );
    s.handle.stop();
}

/// A server on 127.0.0.1:0 whose owners are named by the `x-client`
/// header, as an authentication layer in front would name them.
async fn by_client(
    config: conduit_mcp::server::http::HttpConfig,
) -> (std::net::SocketAddr, HttpService) {
    let mcp = HttpService::new(config, router(Arc::default())).unwrap();
    let app = mcp.axum_router().layer(tower::util::MapRequestLayer::new(
        |mut req: axum::http::Request<axum::body::Body>| {
            let name = req
                .headers()
                .get("x-client")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let Some(name) = name {
                req.extensions_mut().insert(Principal::new(name));
            }
            req
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, mcp)
}

fn small_budget() -> conduit_mcp::server::http::HttpConfig {
    let mut c = config();
    c.server = c
        .server
        .max_inbound_bytes(conduit_mcp::server::MIN_INBOUND_BYTES);
    c
}

/// Zeros that parse to some 64 KiB to 128 KiB: several fit in one
/// client's share of a 1 MiB budget, not in the room kept for newcomers.
const PAD: usize = 2000;

#[tokio::test]
async fn a_client_at_its_share_of_inbound_bytes_leaves_the_rest_to_others() {
    let (addr, mcp) = by_client(small_budget()).await;
    // Mallory's calls wait, each holding its parsed size, until refused.
    let mut held = Vec::new();
    let mut refused = None;
    for id in 0..64 {
        let r = send(addr, padded_sleep(addr, Some("mallory"), id, 60_000, PAD)).await;
        let retry = r.header("retry-after");
        match running(r).await {
            (_, Some(ev), _) => held.push(ev),
            (status, None, v) => {
                refused = Some((status, retry, v));
                break;
            }
        }
    }
    // Alice's call of the same size is served.
    let (alice, _ev, v) =
        running(send(addr, padded_sleep(addr, Some("alice"), 1, 60_000, PAD)).await).await;
    println!(
        "mallory: {} calls held, then {:?}; alice's call of the same size: {alice} {v}",
        held.len(),
        refused.as_ref().map(|r| r.0)
    );
    assert_eq!(alice, 200, "mallory's calls took alice's room: {v}");
    let (status, retry, v) = refused.expect("mallory's calls were never refused");
    assert_eq!(status, 503, "{v}");
    assert!(retry.is_some(), "no Retry-After");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_inbound_bytes")),
        "{v}"
    );
    mcp.handle().stop();
}

#[tokio::test]
async fn clients_that_fill_what_they_can_leave_room_for_a_newcomer() {
    let (addr, mcp) = by_client(small_budget()).await;
    // Four clients hold all they can get: large calls, then smaller ones
    // down to calls without padding, until each size is refused.
    let mut held = Vec::new();
    for client in 0..4 {
        let name = format!("client-{client}");
        let mut id = 0;
        for pad in [PAD, 200, 0] {
            loop {
                id += 1;
                let r = send(addr, padded_sleep(addr, Some(&name), id, 60_000, pad)).await;
                match running(r).await {
                    (_, Some(ev), _) => held.push(ev),
                    (_, None, _) => break,
                }
            }
        }
    }
    // A newcomer's initialize, then a call of the smallest size.
    let opened = send(
        addr,
        request("POST", addr, &[("x-client", "newcomer")], Some(&init())),
    )
    .await;
    let (call, _ev, v) =
        running(send(addr, padded_sleep(addr, Some("newcomer"), 1, 60_000, 0)).await).await;
    println!(
        "4 clients hold {} calls in a 1 MiB budget; a newcomer's initialize: {}, its call: {call}",
        held.len(),
        opened.status
    );
    assert_eq!(
        opened.status, 200,
        "the clients left no room for a newcomer"
    );
    assert_eq!(call, 200, "the clients left no room for a newcomer: {v}");
    mcp.handle().stop();
}

#[tokio::test]
async fn what_a_tool_does_not_keep_of_its_arguments_is_not_held_while_it_runs() {
    let (addr, mcp) = by_client(small_budget()).await;
    // Calls that parse to some 140 KiB each, eight of them: more than the
    // whole budget. `sleep` keeps `ms` and drops `pad`.
    let mut held = Vec::new();
    for id in 0..8 {
        let r = send(addr, padded_sleep(addr, Some("alice"), id, 60_000, 4000)).await;
        let (status, ev, v) = running(r).await;
        println!("call {id} of a tool that waits, some 140 KiB parsed: {status}");
        assert_eq!(status, 200, "call {id}: {v}");
        held.push(ev);
    }
    mcp.handle().stop();
}

#[tokio::test]
async fn initializes_past_the_quota_never_end_a_live_session() {
    // Defaults: 256 sessions per owner. The victim's session is idle
    // (nothing running, no stream open) but not given up.
    let s = start(config()).await;
    let victim = open_session(s.addr, json!({})).await;
    let list = legacy(s.addr, &victim, json!(1), "tools/list", json!({})).await;
    assert_eq!(list.status, 200);
    let (mut opened, mut refused) = (0, Vec::new());
    for _ in 0..256 {
        let r = post(s.addr, &[], init()).await;
        match r.status {
            200 => opened += 1,
            status => refused.push((status, r.header("retry-after"), r.json().await)),
        }
    }
    let after = legacy(s.addr, &victim, json!(2), "tools/list", json!({})).await;
    println!(
        "256 initializes from the victim's address: {opened} opened, {} refused; the victim's next request: {}",
        refused.len(),
        after.status
    );
    assert_eq!(after.status, 200, "the victim's session was ended");
    let (status, retry, v) = refused.first().expect("none refused past the quota");
    assert_eq!(*status, 503, "{v}");
    assert!(retry.is_some(), "no Retry-After");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_sessions_per_principal")),
        "{v}"
    );
    s.handle.stop();
}

#[tokio::test]
async fn an_initialize_into_a_full_table_does_not_end_an_idle_session() {
    let s = start(config().max_sessions(8).max_sessions_per_principal(2)).await;
    let victim = open_session(s.addr, json!({})).await;
    // Four other addresses fill the table, each session with a call that
    // waits.
    let mut waiting = Vec::new();
    for peer in 2..=5 {
        let local = format!("127.0.0.{peer}");
        for _ in 0..2 {
            let r = send_from(&local, s.addr, request("POST", s.addr, &[], Some(&init()))).await;
            let Some(sid) = r.header("mcp-session-id") else {
                continue;
            };
            let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": { "name": "sleep", "arguments": { "ms": 60_000 }, "_meta": { "progressToken": 1 } } });
            let headers = [
                ("mcp-session-id", sid.as_str()),
                ("mcp-protocol-version", LEGACY),
            ];
            let r = send_from(
                &local,
                s.addr,
                request("POST", s.addr, &headers, Some(&call)),
            )
            .await;
            waiting.push(running(r).await.1.expect("the call runs"));
        }
    }
    // One more initialize, from a fifth address.
    let r = send_from(
        "127.0.0.6",
        s.addr,
        request("POST", s.addr, &[], Some(&init())),
    )
    .await;
    let after = legacy(s.addr, &victim, json!(2), "tools/list", json!({})).await;
    println!(
        "{} sessions with a waiting call from four addresses, then an initialize from a fifth: {}; the victim's next request: {}",
        waiting.len(),
        r.status,
        after.status
    );
    assert_eq!(after.status, 200, "the victim's idle session was ended");
    s.handle.stop();
}
