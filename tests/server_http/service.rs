//! Streamable HTTP: `HttpService` as a `tower::Service`, driven without a
//! listener (`ServiceExt::oneshot`): it serves MCP, refuses methods it
//! does not serve with 405 and `Allow`, spawns nothing when made, and its
//! `stopped()` resolves once a stop has run, even with no request served.

use conduit_mcp::protocol::{CallToolResult, Implementation};
use conduit_mcp::server::http::{HttpConfig, HttpService, ParsedBody, Principal};
use conduit_mcp::server::{RequestContext, Router, ServerConfig};
use serde_json::{json, Value};
use tower::ServiceExt;

use axum::body::Body;
use axum::http::{Request, Response};

fn service() -> HttpService {
    let router = Router::new().tool(
        "hello",
        "Says hello.",
        |_: Value, _ctx: RequestContext| async { Ok(CallToolResult::text("hello")) },
    );
    let config = HttpConfig::new(ServerConfig::new(Implementation::new("t", "0")));
    HttpService::new(config, router).expect("a valid config")
}

fn post(session: Option<&str>, body: Value) -> Request<Body> {
    let mut b = Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(s) = session {
        b = b.header("mcp-session-id", s);
    }
    b.body(Body::from(body.to_string())).unwrap()
}

async fn json_of(r: Response<Body>) -> Value {
    let bytes = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn a_session_is_served_through_oneshot_without_a_listener() {
    let mcp = service();
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "t", "version": "0" } } });
    let r = mcp.clone().oneshot(post(None, init)).await.unwrap();
    assert_eq!(r.status(), 200);
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(json_of(r).await["result"]["serverInfo"]["name"], "t");
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "hello", "arguments": {} } });
    let r = mcp.clone().oneshot(post(Some(&sid), call)).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(json_of(r).await["result"]["content"][0]["text"], "hello");
    // A stranger's Host is refused before MCP sees the request.
    let mut req = post(
        Some(&sid),
        json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" }),
    );
    req.headers_mut()
        .insert("host", "evil.example.com".parse().unwrap());
    let r = mcp.clone().oneshot(req).await.unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(
        json_of(r).await["error"]["message"],
        "Forbidden: Host not allowed"
    );
    mcp.handle().stop();
    mcp.stopped().await;
    assert!(!mcp.handle().lifetime_token().is_alive());
    // Stopped: new requests get 503.
    let r = mcp
        .clone()
        .oneshot(post(
            Some(&sid),
            json!({ "jsonrpc": "2.0", "id": 4, "method": "ping" }),
        ))
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
}

#[tokio::test]
async fn methods_other_than_post_get_and_delete_get_405_with_allow() {
    let mcp = service();
    for method in ["PUT", "PATCH", "OPTIONS", "HEAD"] {
        let req = Request::builder()
            .method(method)
            .uri("/mcp")
            .header("host", "localhost")
            .body(Body::empty())
            .unwrap();
        let r = mcp.clone().oneshot(req).await.unwrap();
        assert_eq!(r.status(), 405, "{method}");
        assert_eq!(r.headers()["allow"], "GET, POST, DELETE", "{method}");
        if method != "HEAD" {
            let body = json_of(r).await;
            assert_eq!(body["error"]["code"], -32600, "{method}");
            assert_eq!(body["error"]["message"], "Method Not Allowed", "{method}");
        }
    }
    // Another path is not the endpoint's.
    let req = Request::get("/other")
        .header("host", "localhost")
        .body(Body::empty())
        .unwrap();
    assert_eq!(mcp.oneshot(req).await.unwrap().status(), 404);
}

#[test]
fn new_spawns_nothing_and_a_stop_before_any_request_still_runs() {
    // No runtime here: `new` would panic if it spawned.
    let mcp = service();
    let token = mcp.handle().lifetime_token();
    mcp.handle().stop();
    assert!(!token.is_alive(), "the stop ended the lifetime at once");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        mcp.stopped().await;
        let r = mcp
            .clone()
            .oneshot(post(
                None,
                json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
            ))
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
    });
}

/// A tool that says what its request's HTTP head carried: the `x-tenant`
/// header and the principal a layer inserted.
fn what_it_sees() -> Router {
    Router::new().tool(
        "whoami",
        "Says the tenant and principal of its HTTP request.",
        |_: Value, ctx: RequestContext| async move {
            let head = ctx.http_request();
            let tenant = head
                .and_then(|p| p.headers.get("x-tenant"))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-");
            let principal = head
                .and_then(|p| p.extensions.get::<Principal>())
                .map_or("-", Principal::name);
            let over = if head.is_some() { "http" } else { "no http" };
            Ok(CallToolResult::text(format!("{over} {tenant} {principal}")))
        },
    )
}

fn as_alice(mut req: Request<Body>, tenant: &str) -> Request<Body> {
    req.headers_mut()
        .insert("x-tenant", tenant.parse().unwrap());
    // What an authentication layer in front of the service inserts.
    req.extensions_mut().insert(Principal::new("alice"));
    req
}

#[tokio::test]
async fn a_handler_reads_each_requests_own_http_head_in_both_eras() {
    let config = HttpConfig::new(ServerConfig::new(Implementation::new("t", "0")));
    let mcp = HttpService::new(config, what_it_sees()).expect("a valid config");
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "t", "version": "0" } } });
    let r = mcp
        .clone()
        .oneshot(as_alice(post(None, init), "acme"))
        .await
        .unwrap();
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let call = |id: u64| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "whoami", "arguments": {} } })
    };
    let mut seen = Vec::new();
    // Two calls of one session, each with its own header.
    for (id, tenant) in [(2, "acme"), (3, "globex")] {
        let req = as_alice(post(Some(&sid), call(id)), tenant);
        let r = mcp.clone().oneshot(req).await.unwrap();
        seen.push(json_of(r).await["result"]["content"][0]["text"].clone());
    }
    let mut modern = call(4);
    modern["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {} });
    let mut req = as_alice(post(None, modern), "initech");
    req.headers_mut()
        .insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
    req.headers_mut()
        .insert("mcp-method", "tools/call".parse().unwrap());
    req.headers_mut()
        .insert("mcp-name", "whoami".parse().unwrap());
    let r = mcp.clone().oneshot(req).await.unwrap();
    seen.push(json_of(r).await["result"]["content"][0]["text"].clone());
    assert_eq!(
        seen,
        ["http acme alice", "http globex alice", "http initech alice"]
    );
    mcp.handle().stop();
    mcp.stopped().await;

    // Over stdio there is no HTTP request.
    let (client, server_rx) = tokio::io::duplex(1 << 16);
    let (server_tx, reply) = tokio::io::duplex(1 << 16);
    let server = conduit_mcp::server::StdioServer::over(
        server_rx,
        server_tx,
        ServerConfig::new(Implementation::new("t", "0")),
    );
    let serving = tokio::spawn(server.serve(what_it_sees()));
    let mut modern = call(5);
    modern["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {} });
    let mut client = client;
    let mut line = modern.to_string();
    line.push('\n');
    tokio::io::AsyncWriteExt::write_all(&mut client, line.as_bytes())
        .await
        .unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(reply));
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(
        answer["result"]["content"][0]["text"], "no http - -",
        "{answer}"
    );
    drop(client);
    serving
        .await
        .unwrap()
        .expect("the stdio server ends when its input does");
}

#[tokio::test]
async fn a_body_a_layer_parsed_is_served_as_parsed_not_read_again() {
    let mcp = service();
    let call = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": { "name": "hello", "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {} } } });
    let parsed = ParsedBody::parse(call.to_string().as_bytes()).expect("a message");
    // The body itself is not JSON: only the parsed message can be served.
    let mut req = post(None, json!(null));
    *req.body_mut() = Body::from("not json");
    for (k, v) in [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "hello"),
    ] {
        req.headers_mut().insert(k, v.parse().unwrap());
    }
    let unparsed = mcp.clone().oneshot(clone_of(&req)).await.unwrap();
    assert_eq!(unparsed.status(), 400, "the body alone is refused");
    req.extensions_mut().insert(parsed);
    let r = mcp.clone().oneshot(req).await.unwrap();
    assert_eq!(r.status(), 200);
    let v = json_of(r).await;
    assert_eq!(v["id"], 7, "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "hello", "{v}");
    // What the endpoint refuses, `parse` refuses alike.
    let refused = ParsedBody::parse(b"[]").unwrap_err();
    assert_eq!(refused.status(), 400);
    mcp.handle().stop();
    mcp.stopped().await;
}

/// `req`'s method, URI, headers and body (`not json`).
fn clone_of(req: &Request<Body>) -> Request<Body> {
    let mut b = Request::builder().method(req.method()).uri(req.uri());
    for (k, v) in req.headers() {
        b = b.header(k, v);
    }
    b.body(Body::from("not json")).unwrap()
}
