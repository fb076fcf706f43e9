//! Shared support for the Streamable HTTP server tests: a router with tools
//! that exercise the transport, a server on 127.0.0.1:0, and a small
//! HTTP/1 client (one connection per request, bodies read as they come,
//! SSE read with a reader of its own, [`sse`]).
#![allow(dead_code, unreachable_pub)]

pub mod sse;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::IntoResponse;
use bytes::Bytes;
use conduit_mcp::protocol::{
    CallToolResult, GetPromptResult, Implementation, InputRequest, PromptMessage,
    ReadResourceResult, Resource, ResourceContents, Role, Tool,
};
use conduit_mcp::secret::Secret;
use conduit_mcp::server::http::{
    close_sse_stream, BearerLayer, BearerTokens, HttpConfig, HttpServer, Rejection,
};
use conduit_mcp::server::{
    HandlerError, RequestContext, Router, ServeEnd, ServerConfig, ServerError, ServerHandle,
};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// Only a guard against hangs.
pub const PATIENCE: Duration = Duration::from_secs(10);
pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";

#[derive(Deserialize, JsonSchema)]
pub struct Echo {
    pub text: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct Sleep {
    pub ms: u64,
}

#[derive(Deserialize, JsonSchema)]
pub struct Empty {}

#[derive(Deserialize, JsonSchema)]
pub struct Who {
    pub name: String,
}

/// Counts the tool calls that ran to their end, and those dropped.
#[derive(Default)]
pub struct Counts {
    pub started: AtomicUsize,
    pub finished: AtomicUsize,
    pub dropped: AtomicUsize,
    /// Notifications the `big` tool could not queue (bounds reached).
    pub refused: AtomicUsize,
}

struct CountDrop(Arc<Counts>, bool);

impl Drop for CountDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// The test router: `echo`, `sleep` (progress), `quiet` (sleeps without a
/// word), `log`, `roots` / `sample`
/// (ask the client), `poll` (closes its SSE stream, then answers),
/// `region` (an `x-mcp-header` argument), `add_tool` (a list change), a
/// resource and a prompt.
pub fn router(counts: Arc<Counts>) -> Router {
    let sleep_counts = counts.clone();
    let r = Router::new()
        .tool("echo", "Returns its text.", |a: Echo, _ctx| async move {
            Ok(CallToolResult::text(a.text))
        })
        .tool(
            "sleep",
            "Sleeps, with progress.",
            move |a: Sleep, ctx: RequestContext| {
                let counts = sleep_counts.clone();
                async move {
                    counts.started.fetch_add(1, Ordering::SeqCst);
                    let mut guard = CountDrop(counts.clone(), false);
                    for i in 0..10u64 {
                        let _ = ctx.progress(i as f64, Some(10.0), None);
                        tokio::time::sleep(Duration::from_millis(a.ms / 10)).await;
                    }
                    guard.1 = true;
                    counts.finished.fetch_add(1, Ordering::SeqCst);
                    Ok(CallToolResult::text(format!("slept {} ms", a.ms)))
                }
            },
        )
        .tool(
            "quiet",
            "Sleeps, sending nothing, then answers.",
            |a: Sleep, _ctx: RequestContext| async move {
                tokio::time::sleep(Duration::from_millis(a.ms)).await;
                Ok(CallToolResult::text(format!("waited {} ms", a.ms)))
            },
        )
        .tool(
            "log",
            "Logs then answers.",
            |_: Empty, ctx: RequestContext| async move {
                let _ = ctx.log("info", json!("a log line"));
                Ok(CallToolResult::text("logged"))
            },
        )
        .tool(
            "roots",
            "Asks for roots.",
            |_: Empty, ctx: RequestContext| async move {
                let v = ctx.ask("roots", InputRequest::list_roots()).await?;
                Ok(CallToolResult::text(v["roots"].to_string()))
            },
        )
        .tool(
            "poll",
            "Closes its stream, then answers.",
            |_: Empty, ctx: RequestContext| async move {
                let closed = close_sse_stream(&ctx);
                let _ = ctx.progress(1.0, None, Some("after the close"));
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok(CallToolResult::text(format!("closed={closed}")))
            },
        )
        .tool("big", "Sends ms notifications of 1 KiB.", {
            let counts = counts.clone();
            move |a: Sleep, ctx: RequestContext| {
                let counts = counts.clone();
                async move {
                    let mut refused = 0;
                    for _ in 0..a.ms {
                        let data = json!({ "level": "info", "data": "x".repeat(1024) });
                        if ctx.notify("notifications/message", Some(data)).is_err() {
                            refused += 1;
                        }
                    }
                    counts.refused.fetch_add(refused, Ordering::SeqCst);
                    counts.finished.fetch_add(1, Ordering::SeqCst);
                    Ok(CallToolResult::text(format!("refused={refused}")))
                }
            }
        })
        .prompt("greet", "Greets.", |a: Who, _ctx| async move {
            Ok(GetPromptResult {
                messages: vec![PromptMessage::text(Role::User, format!("Hello {}", a.name))],
                ..Default::default()
            })
        })
        .resource(Resource::new("test://static", "static"), |_ctx| async {
            Ok(ReadResourceResult {
                contents: vec![ResourceContents::text("test://static", "static text")],
                ..Default::default()
            })
        });
    let region = Tool {
        name: "region".into(),
        description: Some("Mirrors its region into a header.".into()),
        input_schema: json!({ "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "query": { "type": "string" } } }),
        ..Tool::default()
    };
    r.add_tool(region, |a: Value, _ctx: RequestContext| async move {
        Ok(CallToolResult::text(
            a["region"].as_str().unwrap_or("").to_owned(),
        ))
    });
    let adder = r.clone();
    r.add_tool(
        Tool {
            name: "add_tool".into(),
            description: Some("Adds a tool (a list change).".into()),
            ..Tool::default()
        },
        move |_: Empty, _ctx: RequestContext| {
            let adder = adder.clone();
            async move {
                adder.add_tool(
                    Tool {
                        name: "added".into(),
                        ..Tool::default()
                    },
                    |_: Empty, _ctx: RequestContext| async { Ok(CallToolResult::text("added")) },
                );
                Ok(CallToolResult::text("ok"))
            }
        },
    );
    let _ = HandlerError::Internal(String::new());
    r
}

pub fn config() -> HttpConfig {
    HttpConfig::new(
        ServerConfig::new(Implementation::new("http-test", "0"))
            .capabilities(json!({ "logging": {} })),
    )
}

/// A server on 127.0.0.1:0.
pub struct Running {
    pub addr: SocketAddr,
    pub url: String,
    pub handle: ServerHandle,
    pub task: JoinHandle<Result<ServeEnd, ServerError>>,
    pub counts: Arc<Counts>,
}

pub async fn start(config: HttpConfig) -> Running {
    start_with(config, |server| server).await
}

/// A server on 127.0.0.1:0, with what `layers` puts on it.
pub async fn start_with(
    config: HttpConfig,
    layers: impl FnOnce(HttpServer) -> HttpServer,
) -> Running {
    let counts = Arc::new(Counts::default());
    let server = layers(HttpServer::bind("127.0.0.1:0", config).await.expect("bind"));
    let addr = server.local_addr().unwrap();
    let url = server.url().unwrap();
    let handle = server.handle();
    let task = tokio::spawn(server.serve(router(counts.clone())));
    handle.wait_until_ready().await.expect("ready");
    Running {
        addr,
        url,
        handle,
        task,
        counts,
    }
}

/// `server` letting in only the requests that carry `token` as their
/// bearer token.
pub fn with_token(server: HttpServer, token: &str) -> HttpServer {
    let tokens = BearerTokens::new().token(Secret::new(token), ());
    server.layer(BearerLayer::new(tokens))
}

/// `server` letting in only the requests `check` passes: the others are
/// refused with 401, as by an authorization layer.
pub fn checked(
    server: HttpServer,
    check: impl Fn(&Request) -> bool + Clone + Send + Sync + 'static,
) -> HttpServer {
    server.layer(axum::middleware::from_fn(
        move |req: Request, next: axum::middleware::Next| {
            let pass = check(&req);
            async move {
                if pass {
                    next.run(req).await
                } else {
                    Rejection::Unauthorized.into_response()
                }
            }
        },
    ))
}

/// An HTTP response; the body not yet read.
pub struct Resp {
    pub status: u16,
    pub headers: axum::http::HeaderMap,
    pub body: Incoming,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    pub fn is_sse(&self) -> bool {
        self.header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
    }

    /// The whole body.
    pub async fn bytes(self) -> Bytes {
        tokio::time::timeout(PATIENCE, self.body.collect())
            .await
            .expect("body timed out")
            .expect("body")
            .to_bytes()
    }

    /// The body as JSON (or, for SSE, the last message).
    pub async fn json(self) -> Value {
        if self.is_sse() {
            let mut events = self.sse();
            let mut last = Value::Null;
            while let Some(m) = events.next_message().await {
                last = m;
            }
            return last;
        }
        let b = self.bytes().await;
        serde_json::from_slice(&b)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&b)))
    }

    pub fn sse(self) -> Events {
        Events {
            body: self.body,
            parser: sse::Parser::new(1 << 24),
            ready: Default::default(),
            comments: 0,
        }
    }
}

/// SSE events read as they come.
pub struct Events {
    body: Incoming,
    parser: sse::Parser,
    ready: std::collections::VecDeque<sse::Event>,
    pub comments: usize,
}

impl Events {
    /// The next event (priming events included); `None` at the end.
    pub async fn next(&mut self) -> Option<sse::Event> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Some(e);
            }
            if !self.read().await {
                return None;
            }
        }
    }

    /// Reads until the next comment (a keep-alive); the events read on the
    /// way are kept for [`next`](Self::next).
    pub async fn comment(&mut self) {
        let seen = self.comments;
        while self.comments == seen {
            assert!(self.read().await, "the SSE stream ended before a comment");
        }
    }

    /// Reads one frame; false at the end of the stream.
    async fn read(&mut self) -> bool {
        let frame = tokio::time::timeout(PATIENCE, self.body.frame())
            .await
            .expect("SSE stream timed out");
        let Some(Ok(frame)) = frame else {
            return false;
        };
        if let Ok(data) = frame.into_data() {
            if data.starts_with(b":") {
                self.comments += 1;
            }
            self.ready
                .extend(self.parser.feed(&data).expect("SSE framing"));
        }
        true
    }

    /// The next message (events with data), parsed.
    pub async fn next_message(&mut self) -> Option<Value> {
        loop {
            let e = self.next().await?;
            if !e.data.is_empty() {
                return Some(serde_json::from_str(&e.data).expect("event data is JSON"));
            }
        }
    }

    pub fn last_event_id(&self) -> Option<String> {
        self.parser.last_event_id().map(str::to_owned)
    }

    pub fn retry(&self) -> Option<u64> {
        self.parser.retry()
    }
}

/// A loopback address other than 127.0.0.1: another peer address for the
/// server (Linux routes all of 127.0.0.0/8 to the loopback interface), of
/// the same owner (every loopback address is one).
pub const OTHER_PEER: &str = "127.0.0.2";

/// A TCP connection to `addr` from the local address `local` (its peer
/// address for the server).
pub async fn connect_from(local: &str, addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(SocketAddr::new(local.parse().expect("an IPv4 address"), 0))
        .expect("bind");
    socket.connect(addr).await.expect("connect")
}

/// Sends one request on a new connection from the local address `local`.
pub async fn send_from(
    local: &str,
    addr: SocketAddr,
    req: axum::http::Request<Full<Bytes>>,
) -> Resp {
    send_on(connect_from(local, addr).await, req).await
}

/// Sends one request on a new connection.
pub async fn send(addr: SocketAddr, req: axum::http::Request<Full<Bytes>>) -> Resp {
    send_on(TcpStream::connect(addr).await.expect("connect"), req).await
}

/// Sends one request on `stream`.
pub async fn send_on(stream: TcpStream, req: axum::http::Request<Full<Bytes>>) -> Resp {
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(conn);
    let r = tokio::time::timeout(PATIENCE, sender.send_request(req))
        .await
        .expect("response timed out")
        .expect("response");
    let (parts, body) = r.into_parts();
    Resp {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body,
    }
}

/// A request builder with the usual headers.
pub fn request(
    method: &str,
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> axum::http::Request<Full<Bytes>> {
    let mut b = axum::http::Request::builder()
        .method(method)
        .uri(format!("http://{addr}/mcp"))
        .header("host", addr.to_string())
        .header("accept", "application/json, text/event-stream");
    if body.is_some() {
        b = b.header("content-type", "application/json");
    }
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let bytes = body
        .map(|v| serde_json::to_vec(v).unwrap())
        .unwrap_or_default();
    b.body(Full::new(Bytes::from(bytes))).unwrap()
}

pub async fn post(addr: SocketAddr, headers: &[(&str, &str)], body: Value) -> Resp {
    send(addr, request("POST", addr, headers, Some(&body))).await
}

/// The modern `_meta`.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": { "roots": {} },
        "io.modelcontextprotocol/clientInfo": { "name": "t", "version": "0" },
    })
}

/// The header form of a value (the 2026-07-28 transport's rule, written
/// here apart from the crate's): itself when it is visible ASCII, spaces
/// and tabs with no blank at either end and not shaped like the sentinel,
/// else `=?base64?{its UTF-8 in base64}?=`.
pub fn header_value(v: &str) -> String {
    use base64::Engine;
    let blank = |c: char| c == ' ' || c == '\t';
    let sentinel = v.starts_with("=?base64?") && v.ends_with("?=");
    let plain = !v.starts_with(blank)
        && !v.ends_with(blank)
        && !sentinel
        && v.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b));
    if plain {
        v.to_owned()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(v.as_bytes());
        format!("=?base64?{b64}?=")
    }
}

/// A modern request with conformant headers.
pub async fn modern(addr: SocketAddr, id: Value, method: &str, mut params: Value) -> Resp {
    params["_meta"] = meta();
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(header_value);
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    if let Some(n) = &name {
        if matches!(method, "tools/call" | "prompts/get" | "resources/read") {
            headers.push(("mcp-name", n.as_str()));
        }
    }
    post(
        addr,
        &headers,
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
    )
    .await
}

/// A legacy session: `initialize` then `notifications/initialized`.
pub async fn open_session(addr: SocketAddr, capabilities: Value) -> String {
    let r = post(
        addr,
        &[],
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": capabilities,
            "clientInfo": { "name": "t", "version": "0" } } }),
    )
    .await;
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").expect("a session id");
    let v = r.json().await;
    assert_eq!(v["result"]["protocolVersion"], LEGACY, "{v}");
    let n = post(
        addr,
        &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await;
    assert_eq!(n.status, 202);
    sid
}

/// A request in a legacy session.
pub async fn legacy(addr: SocketAddr, sid: &str, id: Value, method: &str, params: Value) -> Resp {
    post(
        addr,
        &[("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)],
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
    )
    .await
}

/// Waits for `cond`, for at most [`PATIENCE`].
pub async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !cond() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

/// A legacy `sleep` of `ms` with progress, its stream read up to the first
/// progress notification (the request is running).
pub async fn sleeping(addr: SocketAddr, sid: &str, id: Value, ms: u64) -> Events {
    let params =
        json!({ "name": "sleep", "arguments": { "ms": ms }, "_meta": { "progressToken": id } });
    let mut ev = legacy(addr, sid, id, "tools/call", params).await.sse();
    let first = ev.next_message().await.expect("a progress notification");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    ev
}

/// GET on a session (its stream, or a resumption with `last-event-id`).
pub async fn get(addr: SocketAddr, sid: &str, extra: &[(&str, &str)]) -> Resp {
    let mut headers = vec![("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)];
    headers.extend_from_slice(extra);
    send(addr, request("GET", addr, &headers, None)).await
}

/// A modern `sleep` of `ms` with progress, as an SSE stream.
pub async fn modern_sleeping(addr: SocketAddr, id: u64, ms: u64) -> Events {
    let mut params = json!({ "name": "sleep", "arguments": { "ms": ms } });
    params["_meta"] = meta();
    params["_meta"]["progressToken"] = json!(id);
    let headers = [
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "sleep"),
    ];
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
    post(addr, &headers, body).await.sse()
}
