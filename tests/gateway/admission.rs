//! `mcp serve` from the network's side: who gets in, and who cannot lock
//! the others out. A peer that opens connections and sends nothing, opens
//! sessions it never closes, or stalls its bodies costs its own share
//! only; `Host` is checked on every route; `/metrics` is an operator's; a
//! body the grant check cannot read the way the handler reads it is
//! refused by the check.

use crate::gateway_support;

use std::time::Duration;

use gateway_support::common::{self, tempdir};
use gateway_support::http::{connect_from, send_from, OTHER_PEER};
use gateway_support::{fixture, request, serve, PATIENCE};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

const TOKEN: &str = "a-bearer-token-0123456789";
const BEARER: &str = "Bearer a-bearer-token-0123456789";

fn initialize() -> Value {
    json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": gateway_support::LEGACY, "capabilities": {},
        "clientInfo": { "name": "t", "version": "0" } } })
}

#[tokio::test]
async fn connections_that_send_nothing_do_not_lock_token_holders_out() {
    let dir = tempdir("gw-silent-connections");
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]) }),
        &["--token-env", "GW_TOKEN"],
        &[("GW_TOKEN", TOKEN)],
    )
    .await;
    // As many as the gateway's connection cap (512), from another peer.
    let mut silent = Vec::new();
    for _ in 0..512 {
        silent.push(connect_from(OTHER_PEER, gw.addr).await);
    }
    let started = std::time::Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        gw.modern(
            "/mcp",
            &[("authorization", BEARER)],
            1,
            "tools/list",
            json!({}),
        ),
    )
    .await;
    common::figure(
        "gateway: a token holder behind 512 silent connections",
        format!(
            "{:?} after {:?}",
            r.as_ref().map(|r| r.status),
            started.elapsed()
        ),
    );
    assert_eq!(
        r.expect("no answer within 5 s behind 512 silent connections")
            .status,
        200
    );
    drop(silent);
    gw.terminate_clean().await;
}

#[tokio::test]
async fn sessions_another_address_opens_with_the_one_token_never_end_a_clients_session() {
    // Every loopback address is one owner, and the one token names no
    // client: the other address's initializes count against the quota the
    // victim's session is in, and are refused past it, never served by
    // ending the victim's session.
    let dir = tempdir("gw-session-flood");
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]) }),
        &["--token-env", "GW_TOKEN"],
        &[("GW_TOKEN", TOKEN)],
    )
    .await;
    let auth = [("authorization", BEARER)];
    let victim = gw.session("/mcp", &auth, json!({})).await;
    let (mut opened, mut refused) = (0, 0);
    for _ in 0..1024 {
        let req = request("POST", gw.addr, "/mcp", &auth, Some(&initialize()));
        match send_from(OTHER_PEER, gw.addr, req).await.status {
            200 => opened += 1,
            503 => refused += 1,
            other => panic!("an initialize past the quota got {other}, not 200 or 503"),
        }
    }
    let r = gw
        .legacy("/mcp", &victim, &auth, 1, "tools/list", json!({}))
        .await;
    common::figure(
        "gateway: a session after another address's 1,024 initializes (one token)",
        format!("{} ({opened} opened, {refused} refused)", r.status),
    );
    assert!(refused > 0, "the quota refused none of 1,024 initializes");
    assert_eq!(r.status, 200, "the victim's session was ended to make room");
    gw.terminate_clean().await;
}

#[tokio::test]
async fn stalled_bodies_of_one_client_do_not_hold_another_clients_grant_check() {
    let dir = tempdir("gw-stalled-peeks");
    std::fs::write(
        dir.join("tokens.json"),
        json!({ "clients": {
            "ci": { "token": "ci-token-0123456789abcdef", "servers": { "a": ["echo"] } },
            "other": { "token": "other-token-0123456789ab", "servers": { "a": ["add"] } }
        }})
        .to_string(),
    )
    .unwrap();
    let tokens = dir.join("tokens.json").display().to_string();
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]) }),
        &["--tokens", &tokens],
        &[],
    )
    .await;
    // 16 requests of `ci` announce 100 bytes and send one.
    let mut stalled = Vec::new();
    for _ in 0..16 {
        let mut tcp = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer ci-token-0123456789abcdef\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{",
            gw.addr
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        stalled.push(tcp);
    }
    let started = std::time::Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        gw.send(
            "POST",
            "/mcp",
            &[("authorization", "Bearer other-token-0123456789ab")],
            Some(&initialize()),
        ),
    )
    .await;
    common::figure(
        "gateway: another client's initialize behind 16 stalled bodies",
        format!(
            "{:?} after {:?}",
            r.as_ref().map(|r| r.status),
            started.elapsed()
        ),
    );
    assert_eq!(
        r.expect("the other client's initialize waited behind the stalled bodies")
            .status,
        200
    );
    drop(stalled);
    gw.terminate_clean().await;
}

#[tokio::test]
async fn a_foreign_host_is_refused_on_every_route() {
    let dir = tempdir("gw-host-every-route");
    let gw = serve(&dir, json!({ "a": fixture(&dir, "a", &[]) }), &[], &[]).await;
    let foreign = format!("attacker.example:{}", gw.addr.port());
    for path in ["/health", "/metrics", "/mcp", "/servers/a/mcp", "/nothing"] {
        let method = if path.ends_with("/mcp") {
            "POST"
        } else {
            "GET"
        };
        let body = (method == "POST").then(initialize);
        let mut req = request(method, gw.addr, path, &[], body.as_ref());
        req.headers_mut().insert("host", foreign.parse().unwrap());
        let r = gateway_support::http::send(gw.addr, req).await;
        let status = r.status;
        let text = String::from_utf8_lossy(&r.bytes().await).to_string();
        assert_eq!(status, 403, "{path}: {text}");
        assert!(!text.contains("\"a\""), "{path} named a server: {text}");
    }
    // The loopback name passes.
    let (status, _) = gw.health().await;
    assert_eq!(status, 200);
    gw.terminate_clean().await;
}

#[tokio::test]
async fn metrics_are_for_operators_not_for_every_valid_token() {
    let dir = tempdir("gw-metrics-operator");
    std::fs::write(
        dir.join("tokens.json"),
        json!({ "clients": {
            "ci": { "token": "ci-token-0123456789abcdef", "servers": { "a": ["*"] } },
            "ops": { "token": "ops-token-0123456789abcd", "servers": {}, "operator": true }
        }})
        .to_string(),
    )
    .unwrap();
    let tokens = dir.join("tokens.json").display().to_string();
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]), "b": fixture(&dir, "b", &[]) }),
        &["--tokens", &tokens],
        &[],
    )
    .await;
    let metrics = |token: Option<&'static str>| {
        let at = &gw.at;
        async move {
            let auth = token.map(|t| ("authorization", t));
            let h: Vec<(&str, &str)> = auth.into_iter().collect();
            let r = at.send("GET", "/metrics", &h, None).await;
            let status = r.status;
            (
                status,
                String::from_utf8_lossy(&r.bytes().await).to_string(),
            )
        }
    };
    let (status, text) = metrics(Some("Bearer ci-token-0123456789abcdef")).await;
    assert_eq!(status, 403, "a client's token read the metrics: {text}");
    assert!(!text.contains("server=\"b\""), "{text}");
    assert_eq!(metrics(None).await.0, 401);
    let (status, text) = metrics(Some("Bearer ops-token-0123456789abcd")).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("mcp_gateway_server_ready{server=\"b\"}"),
        "{text}"
    );
    // The operator's token reaches no server.
    let r = gw
        .modern(
            "/mcp",
            &[("authorization", "Bearer ops-token-0123456789abcd")],
            1,
            "tools/call",
            json!({ "name": "a__echo", "arguments": { "text": "x" } }),
        )
        .await;
    assert_eq!(r.status, 403);
    gw.terminate_clean().await;

    // A token of its own for the metrics.
    let dir = tempdir("gw-metrics-token");
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]) }),
        &[
            "--token-env",
            "GW_TOKEN",
            "--metrics-token-env",
            "GW_METRICS",
        ],
        &[
            ("GW_TOKEN", TOKEN),
            ("GW_METRICS", "metrics-token-0123456789"),
        ],
    )
    .await;
    let (status, _) = metrics_at(&gw.at, BEARER).await;
    assert_eq!(status, 403, "the clients' token read the metrics");
    let (status, text) = metrics_at(&gw.at, "Bearer metrics-token-0123456789").await;
    assert_eq!(status, 200, "{text}");
    // The metrics token is no client's token.
    let r = gw
        .modern(
            "/mcp",
            &[("authorization", "Bearer metrics-token-0123456789")],
            1,
            "tools/list",
            json!({}),
        )
        .await;
    assert_eq!(r.status, 401);
    gw.terminate_clean().await;
}

async fn metrics_at(at: &gateway_support::At, bearer: &str) -> (u16, String) {
    let r = at
        .send("GET", "/metrics", &[("authorization", bearer)], None)
        .await;
    let status = r.status;
    (
        status,
        String::from_utf8_lossy(&r.bytes().await).to_string(),
    )
}

/// Sends `body` as is (bytes the test chose, not a serialised value).
async fn post_raw(
    at: &gateway_support::At,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, Value) {
    let mut req = request("POST", at.addr, "/mcp", headers, None);
    *req.body_mut() = http_body_util::Full::new(bytes::Bytes::from(body));
    req.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    let r = gateway_support::http::send(at.addr, req).await;
    let status = r.status;
    let bytes = r.bytes().await;
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_body_the_grant_check_cannot_read_as_the_handler_does_is_refused_by_it() {
    let dir = tempdir("gw-peek-parse");
    std::fs::write(
        dir.join("tokens.json"),
        json!({ "clients": {
            "ci": { "token": "ci-token-0123456789abcdef", "servers": { "a": ["echo"] } }
        }})
        .to_string(),
    )
    .unwrap();
    let tokens = dir.join("tokens.json").display().to_string();
    let log = dir.join("calls.jsonl");
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]) }),
        &[
            "--tokens",
            &tokens,
            "--log-calls",
            &log.display().to_string(),
        ],
        &[],
    )
    .await;
    let meta = gateway_support::http::meta().to_string();
    let headers = [
        ("authorization", "Bearer ci-token-0123456789abcdef"),
        ("mcp-protocol-version", gateway_support::MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "a__add"),
    ];
    // `name` twice: the handler reads the last one.
    let twice = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"a__echo","name":"a__add","arguments":{{"a":1,"b":2}},"_meta":{meta}}}}}"#
    );
    // A byte-order mark before the body.
    let bom = format!(
        "\u{feff}{}",
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": { "name": "a__add", "arguments": { "a": 1, "b": 2 }, "_meta": serde_json::from_str::<Value>(&meta).unwrap() } })
    );
    for (what, body) in [("a duplicate name", twice), ("a byte-order mark", bom)] {
        let (status, v) = post_raw(&gw.at, &headers, body.into_bytes()).await;
        assert_eq!(status, 403, "{what}: {v}");
        assert!(v["result"].is_null(), "{what}: the call ran: {v}");
    }
    let mut forbidden = 0;
    common::eventually(PATIENCE, || {
        forbidden = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["outcome"] == "forbidden")
            .count();
        forbidden >= 2
    })
    .await;
    assert_eq!(
        forbidden, 2,
        "each refusal is a forbidden line of the call log"
    );
    gw.terminate_clean().await;
}
