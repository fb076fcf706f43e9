//! The gateway benchmark: `mcp serve` against `supergateway` and
//! `mcp-proxy` (npm, pinned by `.ci/install-gateway-peers.sh`), each in front
//! of the same stdio server (`examples/server.rs`), driven by one load
//! generator in one run: N concurrent Streamable HTTP clients (2025-11-25
//! era sessions, each on its own keep-alive connection) calling its `echo`
//! tool for a fixed time; `mcp serve` also with 2026-07-28 clients (each
//! call a POST of its own, no session). Reported per gateway: requests/s, p50 and p99
//! latency, and the peak memory (RSS) of its whole process tree (the proxy
//! and every server process it started). The baseline is this crate's own
//! client calling the same stdio server directly (one client shared by the
//! N callers, as the gateway shares one per server), and this crate's HTTP
//! server serving the same tool in a process of its own.
//! A second table gives the CPU time per call of each server process: the
//! HTTP server, the gateway's own process, the stdio server behind it, and
//! the stdio server called directly.
//!
//! Build and run (release):
//!
//! ```text
//! bash .ci/install-gateway-peers.sh
//! cargo build --release --features cli --bin mcp --example server
//! cargo bench --bench gateway_bench                 # 50 clients, 10 s each
//! cargo bench --bench gateway_bench -- --quick      # smoke run: 2 s each
//! ```
//!
//! `--clients N`, `--seconds S`, `--only NAME` (the gateways whose name
//! starts so: `mcp serve` (both rows), `mcp serve 2026-07-28`,
//! `supergateway`, `mcp-proxy`), `--json` (one JSON object per line on
//! stdout, the table on stderr), `--svg DIR` (the figures as a bar chart,
//! `DIR/gateway.svg`). A gateway whose program is missing is skipped, said
//! so.

#[path = "bench/svg.rs"]
mod svg;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use conduit_mcp::{Client, ClientConfig, EraPreference, RequestOptions, StderrMode};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// Before the measured window.
const WARMUP: Duration = Duration::from_secs(1);
/// For a gateway to accept connections.
const START: Duration = Duration::from_secs(60);

#[derive(Clone, Copy)]
struct Plan {
    clients: usize,
    window: Duration,
}

/// One measured run.
#[derive(Debug, Clone)]
struct Figures {
    calls: usize,
    seconds: f64,
    p50_ms: f64,
    p99_ms: f64,
    peak_rss_mib: f64,
    errors: usize,
    /// CPU time (user and system) per measured call: this process's (the
    /// load generator, and the HTTP floor, which runs in it), and the
    /// measured process tree's (a gateway and its servers; the HTTP server;
    /// the stdio server for the direct rows). NaN when not measured.
    cpu_us_here: f64,
    cpu_us_tree: f64,
    /// The measured tree's root process alone (a gateway without its
    /// servers; the HTTP server; the stdio server for the direct rows).
    cpu_us_root: f64,
}

impl Figures {
    fn rps(&self) -> f64 {
        self.calls as f64 / self.seconds
    }

    /// Sets the CPU figures from the window's totals (µs).
    fn per_call_cpu(&mut self, (here, tree, root): (f64, f64, f64)) {
        let calls = self.calls.max(1) as f64;
        self.cpu_us_here = here / calls;
        self.cpu_us_tree = tree / calls;
        self.cpu_us_root = root / calls;
    }
}

/// The profile's directory (`target/release`: this binary is in its
/// `deps`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the bench's own path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the profile directory")
        .to_owned()
}

fn server_bin() -> PathBuf {
    profile_dir().join("examples").join("server")
}

fn mcp_bin() -> PathBuf {
    profile_dir().join("mcp")
}

fn peers_bin(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/gateway-peers/node_modules/.bin")
        .join(name)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The RSS of `pid` and all its descendants, in KiB.
fn tree_rss_kib(root: u32) -> u64 {
    tree_stats(root).0
}

/// The CPU time (user and system) of process `pid` alone, in µs.
fn pid_cpu_us(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| stat_cpu_us(&s))
        .unwrap_or(f64::NAN)
}

/// The CPU time (user and system) this process has used, in µs.
fn own_cpu_us() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .map(|s| stat_cpu_us(&s))
        .unwrap_or(f64::NAN)
}

/// utime + stime of one `/proc/PID/stat` line, in µs.
fn stat_cpu_us(stat: &str) -> f64 {
    // SAFETY: sysconf reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .map(|r| r.split_whitespace().collect())
        .unwrap_or_default();
    // After the name: state is field 3, utime 14 and stime 15.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / hz * 1e6
}

/// The RSS (KiB) and CPU time (µs) of `pid` and all its live
/// descendants.
fn tree_stats(root: u32) -> (u64, f64) {
    let mut parents: BTreeMap<u32, u32> = BTreeMap::new();
    let mut rss: BTreeMap<u32, (u64, f64)> = BTreeMap::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        parents.insert(pid, ppid);
        let kib = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
            .unwrap_or(0);
        rss.insert(pid, (kib, stat_cpu_us(&stat)));
    }
    let in_tree = |mut p: u32| {
        for _ in 0..64 {
            if p == root {
                return true;
            }
            match parents.get(&p) {
                Some(&pp) if pp != 0 => p = pp,
                _ => return false,
            }
        }
        false
    };
    rss.iter()
        .filter(|(p, _)| in_tree(**p))
        .fold((0, 0.0), |(k, c), (_, (kib, cpu))| (k + kib, c + cpu))
}

/// CPU times sampled at once: this process's, a tree's and its root's.
type CpuSample = (f64, f64, f64);

/// Not measured.
const NO_CPU: CpuSample = (f64::NAN, f64::NAN, f64::NAN);

/// Samples this process's CPU time, `root`'s tree's and `root`'s own at
/// `from` and at `to` (the measured window); their differences.
fn cpu_window(root: Option<u32>, from: Instant, to: Instant) -> tokio::task::JoinHandle<CpuSample> {
    let sample = move || {
        let tree = root.map_or(f64::NAN, |p| tree_stats(p).1);
        let alone = root.map_or(f64::NAN, pid_cpu_us);
        (own_cpu_us(), tree, alone)
    };
    tokio::spawn(async move {
        tokio::time::sleep_until(from.into()).await;
        let a = tokio::task::spawn_blocking(sample).await.unwrap_or(NO_CPU);
        tokio::time::sleep_until(to.into()).await;
        let b = tokio::task::spawn_blocking(sample).await.unwrap_or(NO_CPU);
        (b.0 - a.0, b.1 - a.1, b.2 - a.2)
    })
}

/// One HTTP/1 keep-alive connection.
struct Conn {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    path: String,
    session: Option<String>,
    /// 2026-07-28 era: every request stands alone (no session), its
    /// version and client in `_meta`, its method and tool in headers.
    modern: bool,
}

impl Conn {
    async fn open(addr: SocketAddr, path: &str, modern: bool) -> Result<Conn, String> {
        let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        Ok(Conn {
            sender,
            addr,
            path: path.to_owned(),
            session: None,
            modern,
        })
    }

    /// Posts one message; the JSON answer with `id` (from JSON or SSE), or
    /// `Null` for a notification.
    async fn post(&mut self, body: &Value) -> Result<Value, String> {
        let mut b = axum::http::Request::builder()
            .method("POST")
            // Origin form (`/mcp`): what browsers and SDK clients send.
            .uri(self.path.as_str())
            .header("host", self.addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if self.modern {
            b = b.header("mcp-protocol-version", MODERN);
            if let Some(m) = body.get("method").and_then(Value::as_str) {
                b = b.header("mcp-method", m);
            }
            if let Some(n) = body.pointer("/params/name").and_then(Value::as_str) {
                b = b.header("mcp-name", n);
            }
        } else {
            b = b.header("mcp-protocol-version", "2025-06-18");
        }
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        let req = b
            .body(Full::new(Bytes::from(serde_json::to_vec(body).unwrap())))
            .unwrap();
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let resp = self
            .sender
            .send_request(req)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(s) = resp.headers().get("mcp-session-id") {
            self.session = s.to_str().ok().map(str::to_owned);
        }
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if body.get("id").is_none() {
            return Ok(Value::Null);
        }
        if !status.is_success() {
            return Err(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            return Ok(v);
        }
        // SSE: the data line holding the answer.
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id") == body.get("id"))
            .ok_or_else(|| format!("no answer in: {text}"))
    }

    /// `msg` as this connection's era sends it: a 2026-07-28 request
    /// carries its version and client in `_meta`.
    fn shaped(&self, mut msg: Value) -> Value {
        if self.modern {
            if let Some(p) = msg.get_mut("params").and_then(Value::as_object_mut) {
                p.insert("_meta".into(), modern_meta());
            }
        }
        msg
    }

    async fn initialize(&mut self) -> Result<(), String> {
        if self.modern {
            // Nothing to open: check that the endpoint answers this era.
            let list = json!({ "jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {} });
            let r = self.post(&self.shaped(list)).await?;
            if r.get("result").is_none() {
                return Err(format!("tools/list: {r}"));
            }
            return Ok(());
        }
        let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "gateway-bench", "version": "1" } } });
        let r = self.post(&init).await?;
        if r.get("result").is_none() {
            return Err(format!("initialize: {r}"));
        }
        self.post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        Ok(())
    }
}

/// The 2026-07-28 era's protocol version.
const MODERN: &str = "2026-07-28";

/// What a 2026-07-28 request says of its client.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "gateway-bench", "version": "1" },
    })
}

/// `clients` sessions (or, `modern`, 2026-07-28 clients) calling `echo`
/// through `addr`+`path` for the window.
async fn load(
    addr: SocketAddr,
    path: &str,
    modern: bool,
    plan: Plan,
    root: Option<u32>,
) -> Result<Figures, String> {
    let mut conns = Vec::with_capacity(plan.clients);
    for _ in 0..plan.clients {
        let mut c = Conn::open(addr, path, modern).await?;
        c.initialize().await?;
        conns.push(c);
    }
    let start = Instant::now();
    let measure_from = start + WARMUP;
    let end = measure_from + plan.window;
    let cpu = cpu_window(root, measure_from, end);
    let peak = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sampler = root.map(|pid| {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                let kib = tokio::task::spawn_blocking(move || tree_rss_kib(pid))
                    .await
                    .unwrap_or(0);
                peak.fetch_max(kib, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    });
    let mut tasks = Vec::new();
    for (i, mut c) in conns.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0usize;
            let mut id = 1u64;
            while Instant::now() < end {
                id += 1;
                let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": { "name": "echo", "arguments": { "text": format!("client {i} call {id}") } } });
                let call = c.shaped(call);
                let t = Instant::now();
                let r = c.post(&call).await;
                let took = t.elapsed();
                match r {
                    Ok(v) if v.get("result").is_some() => {
                        if t >= measure_from && t < end {
                            lat.push(took.as_secs_f64() * 1000.0);
                        }
                    }
                    _ => errors += 1,
                }
            }
            (lat, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (lat, e) = t.await.map_err(|e| e.to_string())?;
        all.extend(lat);
        errors += e;
    }
    if let Some(s) = sampler {
        s.abort();
    }
    let mut f = summarize(
        all,
        plan.window,
        errors,
        peak.load(std::sync::atomic::Ordering::Relaxed),
    );
    f.per_call_cpu(cpu.await.unwrap_or(NO_CPU));
    Ok(f)
}

fn summarize(mut lat: Vec<f64>, window: Duration, errors: usize, peak_kib: u64) -> Figures {
    lat.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        if lat.is_empty() {
            return f64::NAN;
        }
        lat[((lat.len() - 1) as f64 * p).round() as usize]
    };
    Figures {
        calls: lat.len(),
        seconds: window.as_secs_f64(),
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        peak_rss_mib: peak_kib as f64 / 1024.0,
        errors,
        cpu_us_here: f64::NAN,
        cpu_us_tree: f64::NAN,
        cpu_us_root: f64::NAN,
    }
}

/// The direct baseline: this crate's client, `callers` tasks sharing it.
async fn direct(plan: Plan) -> Result<Figures, String> {
    let config = ClientConfig::new(server_bin().display().to_string())
        .stderr(StderrMode::Discard)
        .era(EraPreference::Stateful);
    let client = Client::start(config).await.map_err(|e| e.to_string())?;
    client.ready(START).await.map_err(|e| e.to_string())?;
    let start = Instant::now();
    let measure_from = start + WARMUP;
    let end = measure_from + plan.window;
    let cpu = cpu_window(client.pid(), measure_from, end);
    let mut tasks = Vec::new();
    for i in 0..plan.clients {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0;
            let mut n = 0u64;
            while Instant::now() < end {
                n += 1;
                let t = Instant::now();
                let r = client
                    .request_raw(
                        "tools/call",
                        Some(json!({ "name": "echo", "arguments": { "text": format!("client {i} call {n}") } })),
                        RequestOptions::new(),
                    )
                    .await;
                let took = t.elapsed();
                match r {
                    Ok(_) if t >= measure_from && t < end => lat.push(took.as_secs_f64() * 1000.0),
                    Ok(_) => {}
                    Err(_) => errors += 1,
                }
            }
            (lat, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.map_err(|e| e.to_string())?;
        all.extend(l);
        errors += e;
    }
    let pid = client.pid();
    let mut f = summarize(all, plan.window, errors, 0);
    f.per_call_cpu(cpu.await.unwrap_or(NO_CPU));
    // The server's process only: the client lives in this process.
    f.peak_rss_mib = pid.map_or(0.0, |p| tree_rss_kib(p) as f64 / 1024.0);
    client.stop().wait().await;
    Ok(f)
}

/// The HTTP floor: an axum server in this process answering every POST at
/// once (`initialize` with a session id, any other request with an empty
/// result), no MCP and no server behind it: what one HTTP round trip costs
/// the load generator on this machine.
async fn floor() -> SocketAddr {
    async fn answer(body: Bytes) -> axum::response::Response {
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let mut resp = match v.get("id") {
            Some(id) => axum::response::IntoResponse::into_response((
                [("content-type", "application/json")],
                json!({ "jsonrpc": "2.0", "id": id, "result": {} }).to_string(),
            )),
            None => axum::response::IntoResponse::into_response(axum::http::StatusCode::ACCEPTED),
        };
        if v.get("method").and_then(Value::as_str) == Some("initialize") {
            resp.headers_mut().insert(
                "mcp-session-id",
                axum::http::HeaderValue::from_static("floor"),
            );
        }
        resp
    }
    let app = axum::Router::new().route("/mcp", axum::routing::post(answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// This crate's HTTP server serving an `echo` tool as `examples/server.rs`
/// does (its arguments checked against their schema): the server
/// `mcp serve` is measured against, with no stdio leg. It runs in a process
/// of its own (this binary, `--serve-http`), on the multi-thread runtime a
/// `#[tokio::main]` program has, so its CPU time is read as the gateway's is.
/// Prints its port, then serves until its stdin ends.
async fn serve_http() {
    use conduit_mcp::protocol::{CallToolResult, Implementation};
    use conduit_mcp::server::http::{HttpConfig, HttpServer};
    use conduit_mcp::server::{Router, ServerConfig};
    use tokio::io::AsyncReadExt;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Echo {
        /// The text to return.
        text: String,
    }
    let router = Router::new().tool("echo", "Returns its text.", |a: Echo, _ctx| async move {
        Ok(CallToolResult::text(a.text))
    });
    let config = HttpConfig::new(ServerConfig::new(Implementation::new("bench-http", "0")));
    let server = HttpServer::bind("127.0.0.1:0", config)
        .await
        .expect("a port on loopback");
    let addr = server.local_addr().expect("a bound listener");
    println!("{}", addr.port());
    tokio::spawn(server.serve(router));
    let mut sink = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut sink).await;
}

/// [`serve_http`] in a child process: its address and the child, which
/// ends when dropped (its stdin closes, and it is killed).
async fn http_server() -> Result<(SocketAddr, Child), String> {
    use tokio::io::AsyncBufReadExt;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .arg("--serve-http")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("the HTTP server's process: {e}"))?;
    let out = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    tokio::time::timeout(START, tokio::io::BufReader::new(out).read_line(&mut line))
        .await
        .map_err(|_| "the HTTP server printed no port".to_owned())?
        .map_err(|e| e.to_string())?;
    let port: u16 = line
        .trim()
        .parse()
        .map_err(|_| format!("the HTTP server printed {line:?}, not a port"))?;
    Ok((SocketAddr::from(([127, 0, 0, 1], port)), child))
}

/// The HTTP server's rows, driven by either era's clients.
const HTTP_SERVER: &str = "HTTP server (conduit)";
const HTTP_SERVER_MODERN: &str = "HTTP server 2026-07-28";

/// A gateway under test: how to start it, and the path of its endpoint.
struct Gateway {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    path: String,
    /// Driven by 2026-07-28 clients instead of 2025-11-25 sessions.
    modern: bool,
}

fn gateways(port: u16, config: &Path) -> Vec<Gateway> {
    let server = server_bin().display().to_string();
    // The same `mcp serve`, driven by either era's clients.
    let serve = |name, modern| Gateway {
        name,
        program: mcp_bin(),
        args: vec![
            "serve".into(),
            "--config".into(),
            config.display().to_string(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
        ],
        path: "/servers/example/mcp".into(),
        modern,
    };
    vec![
        serve("mcp serve", false),
        serve("mcp serve 2026-07-28", true),
        Gateway {
            name: "supergateway",
            program: peers_bin("supergateway"),
            args: vec![
                "--stdio".into(),
                server.clone(),
                "--outputTransport".into(),
                "streamableHttp".into(),
                "--stateful".into(),
                "--port".into(),
                port.to_string(),
                "--logLevel".into(),
                "none".into(),
            ],
            path: "/mcp".into(),
            modern: false,
        },
        Gateway {
            name: "mcp-proxy",
            program: peers_bin("mcp-proxy"),
            args: vec![
                "--port".into(),
                port.to_string(),
                "--server".into(),
                "stream".into(),
                "--".into(),
                server,
            ],
            path: "/mcp".into(),
            modern: false,
        },
    ]
}

async fn start(g: &Gateway, port: u16) -> Result<Child, String> {
    let child = Command::new(&g.program)
        .args(&g.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", g.program.display()))?;
    let deadline = Instant::now() + START;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut last = String::new();
    while Instant::now() < deadline {
        match Conn::open(addr, &g.path, g.modern).await {
            Ok(mut c) => match c.initialize().await {
                Ok(()) => return Ok(child),
                Err(e) => last = e,
            },
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!(
        "{} did not answer within {START:?}: {last}",
        g.name
    ))
}

/// SIGTERM, then SIGKILL after 5 s; reaped.
async fn stop(mut child: Child) {
    if let Some(pid) = child.id() {
        // Its whole group, in case it left servers behind.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    if tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
}

fn arg(args: &[String], key: &str) -> Option<String> {
    args.iter()
        .position(|a| a == key)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--serve-http") {
        return serve_http().await;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let json_out = args.iter().any(|a| a == "--json");
    let plan = Plan {
        clients: arg(&args, "--clients")
            .and_then(|v| v.parse().ok())
            .unwrap_or(50),
        window: Duration::from_secs(
            arg(&args, "--seconds")
                .and_then(|v| v.parse().ok())
                .unwrap_or(if quick { 2 } else { 10 }),
        ),
    };
    for p in [server_bin(), mcp_bin()] {
        if !p.is_file() {
            eprintln!(
                "missing {}: cargo build --release --features cli --bin mcp --example server",
                p.display()
            );
            std::process::exit(2);
        }
    }
    let dir = std::env::temp_dir().join(format!("gateway-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        json!({ "mcpServers": { "example": { "command": server_bin(), "conduit": { "stderr": "discard" } } } })
            .to_string(),
    )
    .unwrap();

    let mut rows: Vec<(String, usize, Figures)> = Vec::new();
    for clients in [1, plan.clients] {
        let p = Plan { clients, ..plan };
        match direct(p).await {
            Ok(f) => rows.push(("direct (conduit client, stdio)".into(), clients, f)),
            Err(e) => eprintln!("direct: {e}"),
        }
        match load(floor().await, "/mcp", false, p, None).await {
            Ok(f) => rows.push((
                "HTTP floor (axum, no MCP)".into(),
                clients,
                Figures {
                    cpu_us_root: f64::NAN,
                    ..f
                },
            )),
            Err(e) => eprintln!("floor: {e}"),
        }
        for (name, modern) in [(HTTP_SERVER, false), (HTTP_SERVER_MODERN, true)] {
            let r = match http_server().await {
                Ok((addr, child)) => {
                    let r = load(addr, "/mcp", modern, p, child.id()).await;
                    stop(child).await;
                    r
                }
                Err(e) => Err(e),
            };
            match r {
                Ok(f) => rows.push((name.into(), clients, f)),
                Err(e) => eprintln!("{name}: {e}"),
            }
        }
        let only = arg(&args, "--only");
        for g in gateways(0, &config) {
            if only.as_deref().is_some_and(|o| !g.name.starts_with(o)) {
                continue;
            }
            if !g.program.is_file() {
                eprintln!(
                    "skipped {}: {} not installed (bash .ci/install-gateway-peers.sh)",
                    g.name,
                    g.program.display()
                );
                continue;
            }
            let port = free_port();
            let g = gateways(port, &config)
                .into_iter()
                .find(|x| x.name == g.name)
                .unwrap();
            let child = match start(&g, port).await {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("{}: {e}", g.name);
                    continue;
                }
            };
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let r = load(addr, &g.path, g.modern, p, child.id()).await;
            stop(child).await;
            match r {
                Ok(f) => rows.push((g.name.into(), clients, f)),
                Err(e) => eprintln!("{}: {e}", g.name),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    eprintln!(
        "\n{:<32} {:>7} {:>10} {:>9} {:>9} {:>12} {:>7} {:>10} {:>10}",
        "gateway",
        "clients",
        "req/s",
        "p50 ms",
        "p99 ms",
        "tree RSS MiB",
        "errors",
        "CPU us/call here",
        "tree"
    );
    for (name, clients, f) in &rows {
        eprintln!(
            "{:<32} {:>7} {:>10.0} {:>9.3} {:>9.3} {:>12.1} {:>7} {:>16.1} {:>10.1}",
            name,
            clients,
            f.rps(),
            f.p50_ms,
            f.p99_ms,
            f.peak_rss_mib,
            f.errors,
            f.cpu_us_here,
            f.cpu_us_tree
        );
        if json_out {
            println!(
                "{}",
                json!({ "gateway": name, "clients": clients, "rps": f.rps(), "p50_ms": f.p50_ms,
                        "p99_ms": f.p99_ms, "peak_rss_mib": f.peak_rss_mib, "errors": f.errors,
                        "calls": f.calls, "seconds": f.seconds,
                        "cpu_us_per_call_here": finite(f.cpu_us_here),
                        "cpu_us_per_call_tree": finite(f.cpu_us_tree),
                        "cpu_us_per_call_root": finite(f.cpu_us_root) })
            );
        }
    }
    cpu_table(&rows, json_out);
    if let Some(dir) = arg(&args, "--svg") {
        let path = std::path::Path::new(&dir).join("gateway.svg");
        let svg = chart(&rows, plan);
        match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, svg)) {
            Ok(()) => eprintln!("wrote {}", path.display()),
            Err(e) => eprintln!("{}: {e}", path.display()),
        }
    }
    let find = |name: &str, clients: usize| {
        rows.iter()
            .find(|(n, c, _)| n.starts_with(name) && *c == clients)
            .map(|(_, _, f)| f.clone())
    };
    if let Some(ours) = find("mcp serve", plan.clients) {
        let best = ["supergateway", "mcp-proxy"]
            .iter()
            .filter_map(|n| find(n, plan.clients))
            .map(|f| f.rps())
            .fold(0.0f64, f64::max);
        if best > 0.0 {
            eprintln!(
                "mcp serve / best proxy, requests/s at {} clients: {:.1}x (target >= 5x)",
                plan.clients,
                ours.rps() / best
            );
        }
        for clients in [1, plan.clients] {
            if let (Some(g), Some(d)) = (find("mcp serve", clients), find("direct", clients)) {
                eprintln!(
                    "mcp serve / direct, p50 latency at {clients} clients: {:.2}x (target <= 1.5x)",
                    g.p50_ms / d.p50_ms
                );
            }
        }
        if let Some(h) = find("HTTP server", plan.clients) {
            eprintln!(
                "mcp serve / HTTP server, requests/s at {} clients: {:.2}x (target >= 0.8x)",
                plan.clients,
                ours.rps() / h.rps()
            );
            // Where the CPU goes: the load generator is this process in the
            // gateway's row; the HTTP server is its own process; the stdio
            // server is the direct row's tree.
            let load = ours.cpu_us_here;
            let http = h.cpu_us_root;
            let stdio = find("direct", plan.clients).map_or(f64::NAN, |d| d.cpu_us_tree);
            eprintln!(
                "CPU per call at {} clients: load generator {load:.1} us, HTTP server {http:.1} us; mcp serve's tree {:.1} us (the stdio server {stdio:.1} us, the gateway {:.1} us); at 0.8x the gateway's tree may use {:.1} us",
                plan.clients,
                ours.cpu_us_tree,
                ours.cpu_us_tree - stdio,
                (load + http) / 0.8 - load
            );
        }
        if let (Some(g), Some(h), Some(d)) = (
            find("mcp serve", 1),
            find("HTTP server", 1),
            find("direct", 1),
        ) {
            eprintln!(
                "mcp serve p50 at 1 client, beyond the HTTP server's plus a direct call's: {:+.0} us, {:.2}x their sum (target <= 1.2x)",
                (g.p50_ms - h.p50_ms - d.p50_ms) * 1000.0,
                g.p50_ms / (h.p50_ms + d.p50_ms)
            );
        }
    }
}

/// CPU time per call of each server process, a row each: the HTTP server,
/// the gateway's own process, the stdio server behind it, and the stdio
/// server called directly, each read from its own process. The gateway's
/// ratio is to the HTTP server of its clients' era.
fn cpu_table(rows: &[(String, usize, Figures)], json_out: bool) {
    let find = |name: &str, clients: usize| {
        rows.iter()
            .find(|(n, c, _)| n == name && *c == clients)
            .map(|(_, _, f)| f)
    };
    let mut counts: Vec<usize> = rows.iter().map(|(_, c, _)| *c).collect();
    counts.dedup();
    eprintln!(
        "\n{:<40} {:>7} {:>12} {:>16}",
        "CPU per call", "clients", "us/call", "/ HTTP server"
    );
    for clients in counts {
        let eras = [
            (HTTP_SERVER, "mcp serve"),
            (HTTP_SERVER_MODERN, "mcp serve 2026-07-28"),
        ];
        let mut out: Vec<(String, f64, f64)> = Vec::new();
        for (http, gateway) in eras {
            let g = find(gateway, clients);
            let h = find(http, clients).map_or(f64::NAN, |h| h.cpu_us_root);
            out.push((format!("{http}: server"), h, f64::NAN));
            if let Some(g) = g {
                out.push((
                    format!("{gateway}: gateway process"),
                    g.cpu_us_root,
                    g.cpu_us_root / h,
                ));
                out.push((
                    format!("{gateway}: its stdio server"),
                    g.cpu_us_tree - g.cpu_us_root,
                    f64::NAN,
                ));
            }
        }
        if let Some(d) = find("direct (conduit client, stdio)", clients) {
            out.push(("direct: stdio server".into(), d.cpu_us_tree, f64::NAN));
        }
        for (name, us, ratio) in out {
            let ratio_text = if ratio.is_finite() {
                format!("{ratio:.2}x")
            } else {
                String::new()
            };
            eprintln!("{name:<40} {clients:>7} {us:>12.1} {ratio_text:>16}");
            if json_out {
                println!(
                    "{}",
                    json!({ "cpu_per_call": name, "clients": clients, "us": finite(us),
                            "ratio_to_http_server": finite(ratio) })
                );
            }
        }
    }
}

/// A JSON number, or null for a figure not measured.
fn finite(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

/// The rows as one chart: requests/s and p50 at 1 and at N clients, and the
/// memory of each gateway's process tree at N.
fn chart(rows: &[(String, usize, Figures)], plan: Plan) -> String {
    let panel = |title: String,
                 unit: &str,
                 higher: bool,
                 value: &dyn Fn(&Figures) -> Option<f64>,
                 clients: usize| svg::Panel {
        title,
        unit: unit.to_owned(),
        higher_is_better: higher,
        bars: rows
            .iter()
            .filter(|(_, c, _)| *c == clients)
            .filter_map(|(name, _, f)| value(f).map(|v| (name.clone(), v)))
            .collect(),
    };
    let n = plan.clients;
    let panels = [
        panel(
            format!("requests/s, {n} clients"),
            "req/s",
            true,
            &|f| Some(f.rps()),
            n,
        ),
        panel(
            format!("p50 latency, {n} clients"),
            "us",
            false,
            &|f| Some(f.p50_ms * 1000.0),
            n,
        ),
        panel(
            "requests/s, 1 client".into(),
            "req/s",
            true,
            &|f| Some(f.rps()),
            1,
        ),
        panel(
            "p50 latency, 1 client".into(),
            "us",
            false,
            &|f| Some(f.p50_ms * 1000.0),
            1,
        ),
        panel(
            format!("memory of the process tree, {n} clients"),
            "MiB",
            false,
            &|f| (f.peak_rss_mib > 0.0).then_some(f.peak_rss_mib),
            n,
        ),
    ];
    let note = format!(
        "cargo bench --bench gateway_bench: {} s per row, one load generator, the same stdio server behind each",
        plan.window.as_secs()
    );
    svg::chart("Gateways in front of one stdio server", &note, &panels)
}
