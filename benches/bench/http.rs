//! The Streamable HTTP rows: the same `echo` tool served by our
//! `HttpServer` and by rmcp's `StreamableHttpService` on axum, each in a
//! child process of its own (this binary, `--child conduit-http` or
//! `--child rmcp-http`: it prints its port, serves 127.0.0.1 and exits at
//! the end of its stdin), driven by one load generator: a small HTTP/1
//! client on hyper, one keep-alive connection per client. The floor
//! (`--child http-floor`) is the same HTTP stack (axum on hyper) answering
//! with fixed bytes after a byte scan for the method and the id, as the
//! stdio floor does: what the client, the loopback and HTTP cost alone.
//!
//! The generator speaks the 2025-11-25 session flow (`initialize`,
//! `notifications/initialized`, then `tools/call` with `MCP-Session-Id`) or
//! the 2026-07-28 stateless one (`_meta` in every body, the
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers); both
//! servers get the same requests. An answer is read as JSON when the server
//! sends JSON (ours when the answer comes alone; rmcp's in the stateless
//! flow, with its `json_response` on), and parsed out of the SSE stream
//! when it does not (rmcp's sessions always answer with a stream). Either
//! way the call ends when the response body has (the connection is free
//! for the next request then), and the answer's text is checked.
//!
//! Both servers run with their defaults but for what makes them comparable:
//! TCP_NODELAY on every connection (ours sets it; axum's `serve` does not,
//! so rmcp's listener sets it through `tap_io`) and rmcp's `json_response`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request};
use serde_json::Value;

use crate::sse;

const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";

/// A call that takes longer failed (a server that never ends a stream).
const CALL_LIMIT: Duration = Duration::from_secs(10);

/// Which of the two protocol flows the generator speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// 2025-11-25: a session per client.
    Legacy,
    /// 2026-07-28: no session, `_meta` and headers on every request.
    Modern,
}

// ------------------------------------------------------------ the servers

/// Prints the port for the parent, and ends the process at the end of its
/// stdin (the parent closed it, or died).
fn announce(port: u16) {
    use std::io::{Read, Write};
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{port}");
    let _ = out.flush();
    std::thread::spawn(|| {
        let mut sink = [0u8; 64];
        while matches!(std::io::stdin().read(&mut sink), Ok(n) if n > 0) {}
        std::process::exit(0);
    });
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// `--child conduit-http`: our `HttpServer` (defaults, but for the session
/// limits) serving the `echo` handler of the stdio rows.
pub fn conduit_server() {
    use conduit_mcp::protocol::Implementation;
    use conduit_mcp::server::http::{HttpConfig, HttpServer};
    use conduit_mcp::server::ServerConfig;
    runtime().block_on(async {
        // The idle-session row opens `--sessions` sessions from loopback, one
        // owner, past the default share of one owner (a quarter of 1024).
        let config = HttpConfig::new(
            ServerConfig::new(Implementation::new("bench-conduit", "1.0.0"))
                .capabilities(serde_json::json!({ "tools": {} })),
        )
        .max_sessions(4096)
        .max_sessions_per_principal(4096);
        let server = HttpServer::bind("127.0.0.1:0", config).await.expect("bind");
        announce(server.local_addr().expect("address").port());
        if let Err(e) = server.serve(super::child::conduit_server::Echo).await {
            eprintln!("conduit http server failed: {e}");
        }
    });
}

/// `--child rmcp-http`: rmcp's `StreamableHttpService` (defaults: sessions
/// for 2025-era clients; `json_response` on, which its stateless path
/// uses) on axum, serving the `echo` handler of the stdio rows.
pub fn rmcp_server() {
    use std::sync::Arc;

    use conduit_mcp::server::http::axum;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    runtime().block_on(async {
        let handler = super::child::rmcp_server::handler();
        let config = StreamableHttpServerConfig::default().with_json_response(true);
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let app = axum::Router::new().route_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        announce(listener.local_addr().expect("address").port());
        use axum::serve::ListenerExt as _;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("rmcp http server failed: {e}");
        }
    });
}

/// `--child http-floor`: axum on hyper, one route, no JSON parsing, no
/// session table: the `initialize` answer carries a fixed session id, a
/// notification gets 202, any other request the echo tool's answer.
pub fn floor_server() {
    use conduit_mcp::server::http::axum;
    runtime().block_on(async {
        let app = axum::Router::new().route("/mcp", axum::routing::post(floor_answer));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        announce(listener.local_addr().expect("address").port());
        use axum::serve::ListenerExt as _;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("http floor failed: {e}");
        }
    });
}

async fn floor_answer(
    body: Bytes,
) -> conduit_mcp::server::http::axum::http::Response<conduit_mcp::server::http::axum::body::Body> {
    use super::child::{id_of, string_of};
    use conduit_mcp::server::http::axum::body::Body;
    use conduit_mcp::server::http::axum::http::{Response, StatusCode};
    let method = string_of(&body, b"\"method\":").unwrap_or_default();
    let id = id_of(&body).unwrap_or(b"null");
    let json = |result: &[u8]| {
        let mut out = Vec::with_capacity(64 + result.len());
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        out.extend_from_slice(id);
        out.extend_from_slice(b",\"result\":");
        out.extend_from_slice(result);
        out.extend_from_slice(b"}\n");
        Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(out))
    };
    let r = if method.starts_with(b"notifications/") {
        Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Body::empty())
    } else if method == b"initialize" {
        json(b"{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"bench-floor\",\"version\":\"1.0.0\"}}").map(|mut r| {
            r.headers_mut().insert("mcp-session-id", HeaderValue::from_static("floor"));
            r
        })
    } else {
        json(b"{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}")
    };
    r.unwrap_or_default()
}

/// A server child process; stopped (end of its stdin, then a kill after
/// a second) and reaped when dropped.
pub struct HttpChild {
    child: Child,
    pub addr: SocketAddr,
}

impl HttpChild {
    /// Runs this binary as `--child MODE` and waits for its port. With
    /// `BENCH_HTTP_WRAP` set (`strace -c -f -o FILE`, `perf record -g -o
    /// FILE --`), the server runs under that command: a profile of the
    /// server alone (it ends at the end of its stdin, so the wrapper writes
    /// its report).
    pub fn start(exe: &Path, mode: &str) -> Result<HttpChild, String> {
        let wrap = std::env::var("BENCH_HTTP_WRAP").unwrap_or_default();
        let mut words = wrap.split_whitespace();
        let mut cmd = match words.next() {
            Some(program) => {
                let mut c = Command::new(program);
                c.args(words).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        let mut child = cmd
            .args(["--child", mode])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{mode}: {e}"))?;
        let mut line = String::new();
        let read = child
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut line));
        let port = line.trim().parse::<u16>().unwrap_or(0);
        // Reaped by drop whatever happens next.
        let child = HttpChild {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        match read {
            Some(Ok(_)) if port != 0 => Ok(child),
            _ => Err(format!("{mode}: no port announced ({line:?})")),
        }
    }

    /// The child's resident memory.
    pub fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(0)
    }

    /// CPU time the child's threads have run (ns), from the scheduler's
    /// own accounting (`/proc/PID/task/*/schedstat`): what a request costs
    /// the server, whatever else the machine runs.
    pub fn cpu_ns(&self) -> u64 {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{}/task", self.child.id())) else {
            return 0;
        };
        dir.filter_map(Result::ok)
            .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
            .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .sum()
    }

    /// The child's pid (for profilers).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for HttpChild {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(1)),
                _ => return,
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ------------------------------------------------------- the load generator

/// One client: a keep-alive HTTP/1 connection, and its session (legacy).
pub struct Conn {
    tx: SendRequest<Full<Bytes>>,
    host: HeaderValue,
    flow: Flow,
    session: Option<HeaderValue>,
    next_id: u64,
}

impl Conn {
    /// A connection, without a session.
    pub async fn connect(addr: SocketAddr, flow: Flow) -> Result<Conn, String> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let (tx, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(conn);
        Ok(Conn {
            tx,
            host: HeaderValue::from_str(&addr.to_string()).map_err(|e| e.to_string())?,
            flow,
            session: None,
            next_id: 1,
        })
    }

    /// A connection, and in the legacy flow a session.
    pub async fn open(addr: SocketAddr, flow: Flow) -> Result<Conn, String> {
        let mut c = Conn::connect(addr, flow).await?;
        if flow == Flow::Legacy {
            c.new_session().await?;
        }
        Ok(c)
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// `initialize` and `notifications/initialized`: a new session, which
    /// later calls use (the previous one stays open, idle).
    pub async fn new_session(&mut self) -> Result<(), String> {
        self.session = None;
        let id = self.id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{LEGACY}","capabilities":{{}},"clientInfo":{{"name":"bench","version":"1.0.0"}}}}}}"#
        );
        let (headers, answer) = self.post(Bytes::from(body), Some(id)).await?;
        if answer["result"]["protocolVersion"] != LEGACY {
            return Err(format!("initialize: {answer}"));
        }
        let sid = headers
            .get("mcp-session-id")
            .ok_or("initialize: no MCP-Session-Id")?;
        self.session = Some(sid.clone());
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        self.post(Bytes::from_static(note.as_bytes()), None).await?;
        Ok(())
    }

    /// One `echo` call; its answer checked.
    pub async fn echo(&mut self) -> Result<(), String> {
        let id = self.id();
        let body = match self.flow {
            Flow::Legacy => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}}}}}}"#
            ),
            Flow::Modern => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN}","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"bench","version":"1.0.0"}}}}}}}}"#
            ),
        };
        let (_, answer) = self.post(Bytes::from(body), Some(id)).await?;
        if answer["result"]["content"][0]["text"] != "hello" {
            return Err(format!("echo: {answer}"));
        }
        Ok(())
    }

    /// POSTs one message; returns the response's headers and the answer
    /// to `id` (`Null` for a notification).
    async fn post(&mut self, body: Bytes, id: Option<u64>) -> Result<(HeaderMap, Value), String> {
        let mut b = Request::builder()
            .method(Method::POST)
            .uri("/mcp")
            .header(header::HOST, self.host.clone())
            .header(
                header::ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            )
            .header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        match self.flow {
            Flow::Legacy => {
                if let Some(sid) = &self.session {
                    b = b
                        .header("mcp-session-id", sid.clone())
                        .header("mcp-protocol-version", HeaderValue::from_static(LEGACY));
                }
            }
            Flow::Modern => {
                b = b
                    .header("mcp-protocol-version", HeaderValue::from_static(MODERN))
                    .header("mcp-method", HeaderValue::from_static("tools/call"))
                    .header("mcp-name", HeaderValue::from_static("echo"));
            }
        }
        let req = b.body(Full::new(body)).map_err(|e| e.to_string())?;
        let exchange = async {
            self.tx
                .ready()
                .await
                .map_err(|e| format!("connection: {e}"))?;
            let resp = self
                .tx
                .send_request(req)
                .await
                .map_err(|e| format!("request: {e}"))?;
            let (parts, body) = resp.into_parts();
            let sse = parts
                .headers
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
            if !parts.status.is_success() {
                let text = body
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                return Err(format!(
                    "HTTP {}: {}",
                    parts.status,
                    String::from_utf8_lossy(&text)
                ));
            }
            let answer = if sse {
                sse_answer(body, id).await?
            } else {
                let bytes = body
                    .collect()
                    .await
                    .map_err(|e| format!("body: {e}"))?
                    .to_bytes();
                if bytes.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&bytes).map_err(|e| format!("answer: {e}"))?
                }
            };
            if id.is_some_and(|id| answer["id"] != id) {
                return Err(format!("no answer to request {id:?}: {answer}"));
            }
            Ok((parts.headers, answer))
        };
        tokio::time::timeout(CALL_LIMIT, exchange)
            .await
            .map_err(|_| format!("no complete answer within {CALL_LIMIT:?}"))?
    }
}

/// Reads an SSE response to its end; returns the message answering `id`.
async fn sse_answer(mut body: Incoming, id: Option<u64>) -> Result<Value, String> {
    let mut parser = sse::Parser::new(1 << 20);
    let mut found = Value::Null;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("body: {e}"))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        for ev in parser.feed(&data).map_err(|e| e.to_string())? {
            if ev.data.is_empty() {
                continue; // a priming event
            }
            let v: Value = serde_json::from_str(&ev.data).map_err(|e| format!("event: {e}"))?;
            if id.is_some_and(|id| v["id"] == id) {
                found = v;
            }
        }
    }
    Ok(found)
}

// ------------------------------------------------------------ the metrics

/// `warmup` then `n` sequential echo calls on one client; latencies in us.
pub async fn sequential(
    addr: SocketAddr,
    flow: Flow,
    warmup: usize,
    n: usize,
) -> Result<Vec<f64>, String> {
    tokio::spawn(async move {
        let mut c = Conn::open(addr, flow).await?;
        for _ in 0..warmup {
            c.echo().await?;
        }
        let mut lat = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            c.echo().await?;
            lat.push(super::us(t.elapsed()));
        }
        Ok(lat)
    })
    .await
    .map_err(|e| e.to_string())?
}

/// `clients` clients (each its own connection and, legacy, session), each
/// one call in flight at a time, for `dur`: calls completed, time taken.
pub async fn concurrent(
    addr: SocketAddr,
    flow: Flow,
    clients: usize,
    dur: Duration,
) -> Result<(u64, Duration), String> {
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..clients {
        opening.spawn(async move {
            let mut c = Conn::open(addr, flow).await?;
            c.echo().await?;
            Ok::<_, String>(c)
        });
    }
    let mut conns = Vec::with_capacity(clients);
    while let Some(c) = opening.join_next().await {
        conns.push(c.map_err(|e| e.to_string())??);
    }
    let start = Instant::now();
    let deadline = start + dur;
    let mut set = tokio::task::JoinSet::new();
    for mut c in conns {
        set.spawn(async move {
            let mut n = 0u64;
            while Instant::now() < deadline {
                c.echo().await?;
                n += 1;
            }
            Ok::<_, String>(n)
        });
    }
    let mut total = 0;
    while let Some(n) = set.join_next().await {
        total += n.map_err(|e| e.to_string())??;
    }
    Ok((total, start.elapsed()))
}

/// The server's RSS growth per idle session: after one warm session and
/// `warmup` calls, `sessions` more are opened (each `initialize` and
/// `notifications/initialized`, one after the other on one connection, then
/// left alone); returns KiB per session.
pub async fn session_memory(
    child: &HttpChild,
    sessions: usize,
    warmup: usize,
) -> Result<f64, String> {
    let addr = child.addr;
    let mut c = Conn::open(addr, Flow::Legacy).await?;
    for _ in 0..warmup {
        c.echo().await?;
    }
    let before = child.rss_kib();
    for _ in 0..sessions {
        c.new_session().await?;
    }
    // Let the sessions' own tasks (rmcp runs a worker per session) settle.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let after = child.rss_kib();
    Ok((after as f64 - before as f64) / sessions.max(1) as f64)
}
