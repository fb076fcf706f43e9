//! The Streamable HTTP client rows: this crate's `Client` over
//! HTTP (`ClientConfig::http`) against rmcp's reqwest-based
//! `StreamableHttpClientTransport`, both calling the `echo` tool (typed
//! `call_tool` on each side) on the SAME server process: our `HttpServer`
//! child of the HTTP server rows (`--child conduit-http`), started once per
//! round and shared by every peer in rotating order. The floor column is
//! the hand-written hyper load generator of `http.rs` (no client library:
//! fixed request bytes, one keep-alive connection per call in flight).
//!
//! Each peer: sequential calls (p50), then 64 calls in flight from one
//! client (64 tasks sharing it) for a fixed time. Both eras: 2025-11-25
//! (sessions: `initialize`, then `MCP-Session-Id` on every POST) for the
//! like-for-like row, and 2026-07-28 (stateless: `server/discover`, then
//! `_meta` and the `Mcp-*` headers on every POST), which rmcp 3.11 speaks
//! too (`ClientLifecycleMode::Discover`). rmcp's client runs with its
//! defaults but for `max_concurrent_requests`, raised from 16 to 64 so the
//! 64 calls are in flight on its side too. Its default reqwest client keeps
//! no idle connection (`pool_max_idle_per_host(0)`, against delayed-ACK
//! stalls): every POST opens a connection. With `BENCH_RMCP_POOLED` set it
//! gets a plain `reqwest::Client` (keep-alive pool, as ours has) instead:
//! a diagnostic of what the pool is worth to it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use conduit_mcp::protocol::Era;
use conduit_mcp::{Client, ClientConfig, EraPreference, RequestOptions};
use serde_json::json;

use super::http::Flow;

/// One client under test, started against `url` in one era.
pub enum Peer {
    /// This crate's `Client`.
    Conduit(Client),
    /// rmcp's client over its reqwest-based transport.
    Rmcp(rmcp::service::RunningService<rmcp::RoleClient, ()>),
}

impl Peer {
    /// Our client, era pinned (checked once ready).
    pub async fn conduit(url: &str, flow: Flow) -> Result<Peer, String> {
        let (pref, want) = match flow {
            Flow::Legacy => (EraPreference::Stateful, Era::Stateful),
            Flow::Modern => (EraPreference::Stateless, Era::Stateless),
        };
        let cfg = ClientConfig::http(url).name("bench-http").era(pref);
        let client = Client::start(cfg).await.map_err(|e| e.to_string())?;
        let ready = client.ready(Duration::from_secs(10)).await;
        let got = client.session().map(|s| s.era);
        let peer = Peer::Conduit(client);
        match ready {
            Err(e) => Err(peer.close_with(e.to_string()).await),
            Ok(_) if got != Some(want) => Err(peer
                .close_with(format!("era {got:?}, expected {want:?}"))
                .await),
            Ok(_) => Ok(peer),
        }
    }

    /// rmcp's client: `initialize` (legacy) or `server/discover` pinned to
    /// 2026-07-28 (modern); 64 POSTs at once allowed.
    pub async fn rmcp(url: &str, flow: Flow) -> Result<Peer, String> {
        use rmcp::model::ProtocolVersion;
        use rmcp::service::{serve_client_with_lifecycle, ClientLifecycleMode};
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        use rmcp::transport::StreamableHttpClientTransport;
        let config = StreamableHttpClientTransportConfig::with_uri(url).max_concurrent_requests(64);
        let transport = if std::env::var_os("BENCH_RMCP_POOLED").is_some() {
            StreamableHttpClientTransport::with_client(reqwest::Client::new(), config)
        } else {
            StreamableHttpClientTransport::from_config(config)
        };
        let lifecycle = match flow {
            Flow::Legacy => ClientLifecycleMode::Initialize,
            Flow::Modern => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        };
        let service = serve_client_with_lifecycle((), transport, lifecycle)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Peer::Rmcp(service))
    }

    /// A handle that calls `echo` once, shareable across tasks.
    fn caller(&self) -> Caller {
        match self {
            Peer::Conduit(c) => Caller::Conduit(c.clone()),
            Peer::Rmcp(s) => Caller::Rmcp(s.peer().clone()),
        }
    }

    /// Stops the client (our `stop()` ends the session with `DELETE`;
    /// rmcp's `cancel()` does too) and returns `msg`.
    async fn close_with(self, msg: String) -> String {
        self.close().await;
        msg
    }

    /// Stops the client and waits for it.
    pub async fn close(self) {
        match self {
            Peer::Conduit(c) => {
                let _ = c.stop().wait().await;
            }
            Peer::Rmcp(s) => {
                let _ = s.cancel().await;
            }
        }
    }
}

/// A shared handle of either client.
#[derive(Clone)]
enum Caller {
    Conduit(Client),
    Rmcp(rmcp::service::Peer<rmcp::RoleClient>),
}

impl Caller {
    /// One typed `echo` call; its text checked.
    async fn echo(&self) -> Result<(), String> {
        let text = match self {
            Caller::Conduit(c) => {
                let r = c
                    .call_tool("echo", json!({ "text": "hello" }), RequestOptions::new())
                    .await
                    .map_err(|e| e.to_string())?;
                r.content
                    .first()
                    .and_then(conduit_mcp::protocol::ContentBlock::as_text)
                    .map(str::to_owned)
            }
            Caller::Rmcp(p) => {
                let mut args = serde_json::Map::new();
                args.insert("text".into(), json!("hello"));
                let r = p
                    .call_tool(rmcp::model::CallToolRequestParams::new("echo").with_arguments(args))
                    .await
                    .map_err(|e| e.to_string())?;
                r.content
                    .first()
                    .and_then(|c| c.as_text())
                    .map(|t| t.text.clone())
            }
        };
        match text.as_deref() {
            Some("hello") => Ok(()),
            other => Err(format!("echo answered {other:?}")),
        }
    }
}

/// `warmup` then `n` sequential `echo` calls from a task; latencies in us.
pub async fn sequential(peer: &Peer, warmup: usize, n: usize) -> Result<Vec<f64>, String> {
    let c = peer.caller();
    tokio::spawn(async move {
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

/// `window` tasks sharing one client, each calling `echo` in a loop until
/// `dur` passed: calls completed, time taken. A failed call fails the run.
pub async fn in_flight(
    peer: &Peer,
    window: usize,
    dur: Duration,
) -> Result<(u64, Duration), String> {
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + dur;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..window {
        let c = peer.caller();
        let done = done.clone();
        tasks.spawn(async move {
            while Instant::now() < deadline {
                c.echo().await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, String>(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.map_err(|e| e.to_string())??;
    }
    Ok((done.load(Ordering::Relaxed), start.elapsed()))
}
