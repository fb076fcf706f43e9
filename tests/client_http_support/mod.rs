//! Shared support for the HTTP client tests: the crate's own HTTP server
//! (from `tests/server_http_support`) with every request head recorded, a
//! TCP proxy that can be cut (a lost connection), and small fake servers
//! for what the real one never does (forget a session, refuse a probe).
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conduit_mcp::server::http::axum;
use conduit_mcp::server::http::HttpServer;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// One request head as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub headers: axum::http::HeaderMap,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Every request head a server got, in order, and a wake-up per request.
#[derive(Default)]
pub struct Recorder {
    seen: Mutex<Vec<Seen>>,
    arrived: Notify,
}

impl Recorder {
    /// A recorder with nothing seen yet.
    pub fn new() -> Arc<Recorder> {
        Arc::new(Recorder::default())
    }

    /// `server` recording every request that reaches its endpoint here.
    pub fn install(self: &Arc<Self>, server: HttpServer) -> HttpServer {
        let r = self.clone();
        server.layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                r.seen.lock().unwrap().push(Seen {
                    method: req.method().to_string(),
                    headers: req.headers().clone(),
                });
                r.arrived.notify_waiters();
                next.run(req)
            },
        ))
    }

    pub fn all(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits (at most `limit`) for a request matching `want`.
    pub async fn wait_for(&self, limit: Duration, want: impl Fn(&Seen) -> bool) -> Option<Seen> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if let Some(s) = self.seen.lock().unwrap().iter().find(|s| want(s)) {
                return Some(s.clone());
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return None;
            }
        }
    }
}

/// A TCP proxy on 127.0.0.1 in front of `target`: cutting it drops every
/// connection through it and stops listening (the server is lost); it can
/// be started again on the same port.
pub struct Proxy {
    pub addr: SocketAddr,
    /// Connections accepted so far.
    pub accepted: Arc<std::sync::atomic::AtomicUsize>,
    target: SocketAddr,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: Option<JoinHandle<()>>,
}

impl Proxy {
    pub async fn start(target: SocketAddr) -> Proxy {
        Self::start_on("127.0.0.1:0".parse().unwrap(), target).await
    }

    pub async fn start_on(addr: SocketAddr, target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind(addr).await.expect("proxy bind");
        let addr = listener.local_addr().unwrap();
        let tasks: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accepted: Arc<std::sync::atomic::AtomicUsize> = Arc::default();
        let (t, n) = (tasks.clone(), accepted.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                t.lock().unwrap().push(task);
            }
        });
        Proxy {
            addr,
            accepted,
            target,
            tasks,
            accept: Some(accept),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Drops every connection and the listener.
    pub async fn cut(&mut self) {
        if let Some(a) = self.accept.take() {
            a.abort();
            let _ = a.await;
        }
        let tasks: Vec<_> = self.tasks.lock().unwrap().drain(..).collect();
        for t in tasks {
            t.abort();
            let _ = t.await;
        }
    }

    /// Listens again on the same port.
    pub async fn restart(&mut self) {
        self.cut().await;
        *self = Proxy::start_on(self.addr, self.target).await;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(a) = self.accept.take() {
            a.abort();
        }
        for t in self.tasks.lock().unwrap().drain(..) {
            t.abort();
        }
    }
}

/// A fake server: `answer(method, session header, body)` gives the status,
/// extra headers and body of each POST; GET gets 405 (or what
/// [`Fake::start_with_get`]'s `get` says), DELETE 200.
pub struct Fake {
    pub url: String,
    task: JoinHandle<()>,
}

pub type Answer = (u16, Vec<(&'static str, String)>, String);

impl Fake {
    pub async fn start(
        answer: impl Fn(&serde_json::Value, Option<&str>) -> Answer + Send + Sync + 'static,
    ) -> Fake {
        Self::start_with_get(answer, || (405, vec![], String::new())).await
    }

    /// As [`start`](Self::start), each GET answered by `get` (a body it
    /// gives is sent whole, then the response ends).
    pub async fn start_with_get(
        answer: impl Fn(&serde_json::Value, Option<&str>) -> Answer + Send + Sync + 'static,
        get: impl Fn() -> Answer + Send + Sync + 'static,
    ) -> Fake {
        use axum::body::Bytes;
        use axum::http::{HeaderMap, Method, StatusCode};
        use axum::response::{IntoResponse, Response};
        let answer = Arc::new(answer);
        let get = Arc::new(get);
        let app = axum::Router::new().route(
            "/mcp",
            axum::routing::any(move |method: Method, headers: HeaderMap, body: Bytes| {
                let answer = answer.clone();
                let get = get.clone();
                async move {
                    if method == Method::DELETE {
                        return StatusCode::OK.into_response();
                    }
                    let (status, extra, text) = if method == Method::POST {
                        let v: serde_json::Value =
                            serde_json::from_slice(&body).unwrap_or_default();
                        let session = headers.get("mcp-session-id").and_then(|v| v.to_str().ok());
                        answer(&v, session)
                    } else {
                        get()
                    };
                    let mut r: Response =
                        (StatusCode::from_u16(status).unwrap(), text).into_response();
                    for (k, val) in extra {
                        r.headers_mut().insert(k, val.parse().unwrap());
                    }
                    if !r.headers().contains_key("content-type") {
                        r.headers_mut()
                            .insert("content-type", "application/json".parse().unwrap());
                    }
                    r
                }
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Fake { url, task }
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A JSON-RPC result for request `req`.
pub fn result(req: &serde_json::Value, result: serde_json::Value) -> String {
    serde_json::json!({ "jsonrpc": "2.0", "id": req["id"], "result": result }).to_string()
}

/// A raw HTTP/1.1 server for the 2026-07-28 era that answers
/// `server/discover` and `tools/list` at once and never answers
/// `tools/call` (it holds the connection: not even a response head).
pub struct Silent {
    pub url: String,
    task: JoinHandle<()>,
}

impl Silent {
    pub async fn start() -> Silent {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    loop {
                        // One request: the head, then Content-Length bytes.
                        let (head_end, len) = loop {
                            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                                let len = head
                                    .lines()
                                    .find_map(|l| l.strip_prefix("content-length:"))
                                    .and_then(|v| v.trim().parse::<usize>().ok())
                                    .unwrap_or(0);
                                break (i + 4, len);
                            }
                            let mut chunk = [0u8; 4096];
                            match conn.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        while buf.len() < head_end + len {
                            let mut chunk = [0u8; 4096];
                            match conn.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        let body: serde_json::Value =
                            serde_json::from_slice(&buf[head_end..head_end + len])
                                .unwrap_or_default();
                        buf.drain(..head_end + len);
                        let answer = match body["method"].as_str().unwrap_or_default() {
                            "server/discover" => serde_json::json!({ "resultType": "complete",
                                "supportedVersions": ["2026-07-28"], "capabilities": { "tools": {} } }),
                            "tools/list" => {
                                serde_json::json!({ "resultType": "complete", "tools": [] })
                            }
                            // Silence: hold the connection until the client drops it.
                            _ => {
                                let mut sink = [0u8; 1024];
                                while matches!(conn.read(&mut sink).await, Ok(n) if n > 0) {}
                                return;
                            }
                        };
                        let text = result(&body, answer);
                        let response = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                            text.len()
                        );
                        if conn.write_all(response.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Silent { url, task }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.task.abort();
    }
}
