//! Shared test support for the server tests: a test handler and a fake
//! client speaking over `tokio::io::duplex`.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conduit_mcp::jsonrpc::{Notification, Request};
use conduit_mcp::protocol::{Implementation, InputRequest};
use conduit_mcp::server::{
    Handler, HandlerError, RequestContext, ServeEnd, ServerConfig, ServerError, ServerHandle,
    StdioServer,
};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;

/// Upper bound for anything a test waits for; only a guard against hangs.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub const MODERN_META_KEY_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Events the test handler reports.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Started(Value),
    Dropped(Value),
    Notification(String),
}

/// Sends `Dropped(id)` when the handler future is dropped before finishing.
struct DropGuard {
    id: Value,
    events: mpsc::UnboundedSender<Event>,
    armed: bool,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.events.send(Event::Dropped(self.id.clone()));
        }
    }
}

/// A handler whose methods exercise the transport.
#[derive(Clone)]
pub struct TestHandler {
    pub events: mpsc::UnboundedSender<Event>,
    /// Named gates that `wait` requests block on.
    pub gates: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
    /// Contexts kept by `keep_ctx`.
    pub kept: Arc<Mutex<Vec<RequestContext>>>,
}

impl TestHandler {
    pub fn new() -> (Self, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Self {
                events: tx,
                gates: Default::default(),
                kept: Default::default(),
            },
            rx,
        )
    }

    pub fn gate(&self, name: &str) -> Arc<Notify> {
        self.gates
            .lock()
            .unwrap()
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(Notify::new()))
            .clone()
    }
}

impl Handler for TestHandler {
    async fn handle_request(
        &self,
        req: Request,
        ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        let params = req.params.clone().unwrap_or(json!({}));
        let id = serde_json::to_value(&req.id).unwrap();
        match req.method.as_str() {
            "echo" => Ok(params),
            "fail" => Err(HandlerError::InvalidParams("bad input".into())),
            "panic" => panic!("handler panicked on purpose"),
            // Blocks until its gate is opened (or it is cancelled).
            "wait" => {
                let mut guard = DropGuard {
                    id: id.clone(),
                    events: self.events.clone(),
                    armed: true,
                };
                let gate = self.gate(params["gate"].as_str().unwrap_or("default"));
                let opened = gate.notified();
                let _ = self.events.send(Event::Started(id.clone()));
                opened.await;
                guard.armed = false;
                Ok(json!({ "opened": params["gate"] }))
            }
            // Blocks until the context reports cancellation, then answers.
            "until_cancelled" => {
                let _ = self.events.send(Event::Started(id.clone()));
                ctx.cancelled().await;
                Ok(json!({ "saw": "cancellation" }))
            }
            "progress" => {
                for i in 1..=3 {
                    ctx.progress(i as f64, Some(3.0), Some("step")).unwrap();
                }
                Ok(json!({ "done": true }))
            }
            "keep_ctx" => {
                self.kept.lock().unwrap().push(ctx);
                Ok(json!({}))
            }
            "tools/call" => {
                let roots = ctx.ask("roots", InputRequest::list_roots()).await?;
                Ok(json!({ "content": [], "structuredContent": roots }))
            }
            "log" => {
                let sent = ctx
                    .log(params["level"].as_str().unwrap_or("info"), json!("entry"))
                    .unwrap();
                Ok(json!({ "sent": sent }))
            }
            "prompts/get" => {
                // Two inputs in one round, plus request state.
                if ctx.request_state().is_none() {
                    ctx.set_request_state("round-1");
                }
                let got = ctx
                    .ask_all(vec![
                        ("roots".into(), InputRequest::list_roots()),
                        (
                            "name".into(),
                            InputRequest::elicit(json!({ "mode": "form", "message": "Name?",
                                "requestedSchema": { "type": "object", "properties": {} } })),
                        ),
                    ])
                    .await?;
                Ok(json!({ "messages": [], "got": got, "state": ctx.request_state() }))
            }
            "whoami" => Ok(json!({ "era": ctx.era().as_str(), "caps": ctx.client_capabilities() })),
            m => Err(HandlerError::MethodNotFound(m.to_owned())),
        }
    }

    async fn handle_notification(
        &self,
        n: Notification,
        _handle: ServerHandle,
    ) -> Result<(), HandlerError> {
        let _ = self.events.send(Event::Notification(n.method.clone()));
        if n.method == "block_forever" {
            std::future::pending::<()>().await;
        }
        if n.method == "fail_me" {
            return Err(HandlerError::Internal("notification refused".into()));
        }
        Ok(())
    }
}

/// A string param of `n` bytes: a request's estimate is about its size.
pub fn pad(n: usize) -> String {
    "x".repeat(n)
}

pub fn config() -> ServerConfig {
    ServerConfig::new(Implementation::new("test-server", "0.0.1"))
        .capabilities(json!({ "tools": {} }))
}

/// The client's side of a server running over duplex streams.
pub struct Client {
    pub tx: Option<DuplexStream>,
    pub rx: Lines<BufReader<DuplexStream>>,
    pub handle: ServerHandle,
    pub serve: JoinHandle<Result<ServeEnd, ServerError>>,
}

pub fn start<H: Handler>(config: ServerConfig, handler: H) -> Client {
    start_with_buffer(config, handler, 64 * 1024)
}

pub fn start_with_buffer<H: Handler>(config: ServerConfig, handler: H, buffer: usize) -> Client {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let (client_tx, server_rx) = tokio::io::duplex(buffer);
    let (server_tx, client_rx) = tokio::io::duplex(buffer);
    let server = StdioServer::over(server_rx, server_tx, config);
    let handle = server.handle();
    let serve = tokio::spawn(server.serve(handler));
    Client {
        tx: Some(client_tx),
        rx: BufReader::new(client_rx).lines(),
        handle,
        serve,
    }
}

impl Client {
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let tx = self.tx.as_mut().expect("input open");
        tx.write_all(bytes).await.unwrap();
    }

    pub async fn send(&mut self, v: Value) {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        self.send_raw(&line).await;
    }

    pub async fn request(&mut self, id: Value, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
    }

    pub async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.rx.next_line())
            .await
            .expect("timed out waiting for the server")
            .expect("read")
            .expect("server output ended");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"))
    }

    /// Sends a ping with a unique id and collects everything received before
    /// its answer (the server answers inline messages in order).
    pub async fn until_ping(&mut self, tag: &str) -> Vec<Value> {
        let id = format!("ping-{tag}");
        self.request(json!(id), "ping", json!({})).await;
        let mut before = Vec::new();
        loop {
            let m = self.recv().await;
            if m["id"] == json!(id) {
                assert_eq!(m["result"], json!({}), "{m}");
                return before;
            }
            before.push(m);
        }
    }

    /// Sends `notifications/cancelled` for `id`.
    pub async fn cancel(&mut self, id: Value) {
        self.send(
            json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": { "requestId": id } }),
        )
        .await;
    }

    /// Sends `wait` requests 1, 2 and 3 (gates `g1`..`g3`) of 0.4 MiB
    /// each: under a budget of `MIN_INBOUND_BYTES` (1 MiB) the first two
    /// fit and start, the third waits for room.
    pub async fn three_requests_over_a_1_mib_budget(&mut self) {
        for (id, g) in [(1, "g1"), (2, "g2"), (3, "g3")] {
            self.request(
                json!(id),
                "wait",
                json!({ "gate": g, "pad": pad(400 * 1024) }),
            )
            .await;
        }
    }

    pub async fn initialize(&mut self, caps: Value) -> Value {
        self.request(
            json!("init"),
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": caps,
                    "clientInfo": { "name": "test-client", "version": "1" } }),
        )
        .await;
        let r = self.recv().await;
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        r
    }

    pub fn close_input(&mut self) {
        self.tx = None;
    }

    pub async fn end_ref(&mut self) -> Result<ServeEnd, ServerError> {
        tokio::time::timeout(PATIENCE, &mut self.serve)
            .await
            .expect("serve did not end")
            .expect("serve task panicked")
    }

    pub async fn end(self) -> Result<ServeEnd, ServerError> {
        tokio::time::timeout(PATIENCE, self.serve)
            .await
            .expect("serve did not end")
            .expect("serve task panicked")
    }
}

pub fn modern_meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": { "name": "modern-test", "version": "1" },
    })
}

/// The next handler event, skipping the `notifications/initialized` that
/// every `initialize` helper call produces.
pub async fn next_event(rx: &mut mpsc::UnboundedReceiver<Event>) -> Event {
    loop {
        let e = tokio::time::timeout(PATIENCE, rx.recv())
            .await
            .expect("timed out waiting for a handler event")
            .expect("events closed");
        if e != Event::Notification("notifications/initialized".into()) {
            return e;
        }
    }
}

/// Feeds `lines` (a newline is added to each) to a server over duplex
/// streams, then end of input; returns every output line and how serving
/// ended. Panics if `serve` panicked or failed.
pub async fn serve_lines<H: Handler>(
    config: ServerConfig,
    handler: H,
    lines: Vec<Vec<u8>>,
) -> (Vec<String>, ServeEnd) {
    let (mut client_tx, server_rx) = tokio::io::duplex(1 << 16);
    let (server_tx, client_rx) = tokio::io::duplex(1 << 16);
    let serve = tokio::spawn(StdioServer::over(server_rx, server_tx, config).serve(handler));
    let reader = tokio::spawn(async move {
        let mut out = Vec::new();
        let mut lines = BufReader::new(client_rx).lines();
        while let Some(l) = lines.next_line().await.expect("read output") {
            out.push(l);
        }
        out
    });
    for mut l in lines {
        l.push(b'\n');
        client_tx.write_all(&l).await.expect("write input");
    }
    drop(client_tx);
    let end = serve.await.expect("serve panicked").expect("serve failed");
    (reader.await.expect("reader"), end)
}
