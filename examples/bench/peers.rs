//! The three drivers: the floor (blocking pipes, no JSON), conduit's
//! `Client`, and rmcp's client over `TokioChildProcess`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use conduit_mcp::{Client, ClientConfig, RequestOptions, StderrMode};
use serde_json::json;

use super::child::{mono_ns, read_stamp};

/// What the close of one connection measured.
#[derive(Debug, Clone, Copy)]
pub struct CloseTimes {
    /// Time for the close call to return.
    pub call: Duration,
    /// From the start of the close call to the child's exit (its stamp).
    pub to_exit: Duration,
    /// From the child's exit to the moment the client saw it reaped.
    pub reaped_after_exit: Duration,
}

fn since_ns(later: u64, earlier: u64) -> Duration {
    Duration::from_nanos(later.saturating_sub(earlier))
}

fn close_times(path: &Path, t0_ns: u64, call: Duration, reaped_ns: u64) -> CloseTimes {
    let exit_ns = read_stamp(path).unwrap_or(reaped_ns);
    let _ = std::fs::remove_file(path);
    CloseTimes {
        call,
        to_exit: since_ns(exit_ns, t0_ns),
        reaped_after_exit: since_ns(reaped_ns, exit_ns),
    }
}

/// Arguments that run this binary as the floor child.
pub fn floor_args(stamp: &Path) -> Vec<String> {
    vec![
        "--child".into(),
        "floor".into(),
        "--stamp".into(),
        stamp.display().to_string(),
    ]
}

/// A fresh path for an exit stamp.
pub fn stamp_path(tag: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "conduit-bench-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A ping that resolves to whether it succeeded.
pub type PingFn = Box<
    dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>> + Send + Sync,
>;

// ---------------------------------------------------------------- floor

/// The floor: blocking pipes, fixed request bytes, no JSON parsing.
pub struct Floor {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    next_id: u64,
    line: Vec<u8>,
    req: Vec<u8>,
    stamp: PathBuf,
}

impl Floor {
    /// Spawns the child and does the legacy handshake.
    pub fn start(exe: &Path) -> std::io::Result<Floor> {
        let stamp = stamp_path("floor");
        let mut child = Command::new(exe)
            .args(floor_args(&stamp))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take();
        let out = BufReader::with_capacity(256 * 1024, child.stdout.take().expect("stdout"));
        let mut f = Floor {
            child,
            stdin,
            out,
            next_id: 1,
            line: Vec::with_capacity(4096),
            req: Vec::with_capacity(64 * 128),
            stamp,
        };
        f.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"floor\",\"version\":\"0\"}}}\n")?;
        f.read_line()?;
        f.send_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
        Ok(f)
    }

    fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let w = self.stdin.as_mut().expect("open");
        w.write_all(bytes)
    }

    fn read_line(&mut self) -> std::io::Result<usize> {
        self.line.clear();
        let n = self.out.read_until(b'\n', &mut self.line)?;
        if n == 0 {
            return Err(std::io::Error::other("floor child closed its stdout"));
        }
        Ok(n)
    }

    fn push_request(&mut self, method: &str) {
        let id = self.next_id;
        self.next_id += 1;
        let _ = writeln!(
            self.req,
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\"}}"
        );
    }

    fn flush_requests(&mut self) -> std::io::Result<()> {
        let req = std::mem::take(&mut self.req);
        let r = self.send_raw(&req);
        self.req = req;
        self.req.clear();
        r
    }

    /// One ping round trip.
    pub fn ping(&mut self) -> std::io::Result<()> {
        self.push_request("ping");
        self.flush_requests()?;
        self.read_line().map(|_| ())
    }

    /// Pings with `window` in flight until `dur` has passed; returns the
    /// number of answers and the elapsed time.
    pub fn throughput(&mut self, window: usize, dur: Duration) -> std::io::Result<(u64, Duration)> {
        let start = Instant::now();
        let deadline = start + dur;
        for _ in 0..window {
            self.push_request("ping");
        }
        self.flush_requests()?;
        let mut in_flight = window as u64;
        let mut done = 0u64;
        let mut owed = 0usize;
        let mut sending = true;
        while in_flight > 0 {
            self.read_line()?;
            done += 1;
            in_flight -= 1;
            owed += 1;
            // Refill in one write once every buffered answer is consumed.
            if self.out.buffer().is_empty() {
                if sending && Instant::now() >= deadline {
                    sending = false;
                }
                if sending {
                    for _ in 0..owed {
                        self.push_request("ping");
                    }
                    self.flush_requests()?;
                    in_flight += owed as u64;
                }
                owed = 0;
            }
        }
        Ok((done, start.elapsed()))
    }

    /// One 8 MiB tool result; returns its size in bytes.
    pub fn big(&mut self) -> std::io::Result<usize> {
        let id = self.next_id;
        self.next_id += 1;
        let req = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"big\",\"arguments\":{{}}}}}}\n"
        );
        self.send_raw(req.as_bytes())?;
        self.read_line()
    }

    /// Closes stdin and waits for the child.
    pub fn close(mut self) -> CloseTimes {
        let t0_ns = mono_ns();
        let t0 = Instant::now();
        drop(self.stdin.take());
        let call = t0.elapsed();
        let _ = self.child.wait();
        let reaped = mono_ns();
        close_times(&self.stamp, t0_ns, call, reaped)
    }
}

// ---------------------------------------------------------------- conduit

/// Our client against a child started with `args`.
pub struct Conduit {
    client: Client,
    stamp: Option<PathBuf>,
}

/// A client config for this binary with `args`.
pub fn conduit_config(exe: &Path, args: Vec<String>) -> ClientConfig {
    let mut cfg = ClientConfig::new(exe.to_string_lossy())
        .name("bench")
        .args(args)
        .stderr(StderrMode::Inherit);
    // An 8 MiB text plus its envelope is just over the default limit.
    cfg.max_message_bytes = 16 * 1024 * 1024;
    if std::env::var_os("BENCH_DIAG_NO_PDEATHSIG").is_some() {
        cfg.die_with_parent = false;
    }
    if std::env::var_os("BENCH_DIAG_NO_PGROUP").is_some() {
        cfg.kill_process_group = false;
    }
    if std::env::var_os("BENCH_DIAG_LEGACY").is_some() {
        cfg.era = conduit_mcp::EraPreference::Legacy;
    }
    cfg
}

impl Conduit {
    /// Starts the client and waits for ready.
    pub async fn start(exe: &Path, server: Option<&str>) -> Result<Conduit, String> {
        let (args, stamp) = match server {
            None => {
                let s = stamp_path("conduit");
                (floor_args(&s), Some(s))
            }
            Some(mode) => (vec!["--child".into(), mode.into()], None),
        };
        Self::start_cfg(conduit_config(exe, args), stamp).await
    }

    /// Starts a client with `cfg` (its exit stamp at `stamp`) and waits for
    /// ready.
    pub async fn start_cfg(cfg: ClientConfig, stamp: Option<PathBuf>) -> Result<Conduit, String> {
        let client = Client::start(cfg).await.map_err(|e| e.to_string())?;
        client
            .ready(Duration::from_secs(10))
            .await
            .map_err(|e| e.to_string())?;
        Ok(Conduit { client, stamp })
    }

    /// One ping round trip.
    pub async fn ping(&self) -> Result<(), String> {
        self.client
            .request("ping", None)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// A ping closure sharing this client.
    pub fn ping_fn(&self) -> PingFn {
        let c = self.client.clone();
        Box::new(move || {
            let c = c.clone();
            Box::pin(async move { c.request("ping", None).await.is_ok() })
        })
    }

    /// `window` tasks, each sending `method` in a loop until `dur` passed.
    pub async fn throughput(
        &self,
        window: usize,
        dur: Duration,
        method: &'static str,
        params: Option<serde_json::Value>,
    ) -> (u64, Duration) {
        let done = Arc::new(AtomicU64::new(0));
        let start = Instant::now();
        let deadline = start + dur;
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..window {
            let c = self.client.clone();
            let done = done.clone();
            let params = params.clone();
            tasks.spawn(async move {
                while Instant::now() < deadline {
                    if c.request(method, params.clone()).await.is_err() {
                        break;
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        while tasks.join_next().await.is_some() {}
        (done.load(Ordering::Relaxed), start.elapsed())
    }

    /// One 8 MiB tool result (typed `call_tool`); returns its text size.
    pub async fn big(&self) -> Result<usize, String> {
        let r = self
            .client
            .call_tool("big", json!({}), RequestOptions::new())
            .await
            .map_err(|e| e.to_string())?;
        Ok(r.content
            .first()
            .and_then(conduit_mcp::protocol::ContentBlock::as_text)
            .map_or(0, str::len))
    }

    /// `stop()` alone: how long the call took, and the wait handle.
    pub fn stop_timed(self) -> (Duration, conduit_mcp::ClientShutdown, Option<PathBuf>) {
        let t0 = Instant::now();
        let shutdown = self.client.stop();
        (t0.elapsed(), shutdown, self.stamp)
    }

    /// `stop()`, then `wait()` for the reaped child.
    pub async fn close(self) -> CloseTimes {
        let t0_ns = mono_ns();
        let t0 = Instant::now();
        let shutdown = self.client.stop();
        let call = t0.elapsed();
        let _ = shutdown.wait().await;
        let reaped = mono_ns();
        match &self.stamp {
            Some(p) => close_times(p, t0_ns, call, reaped),
            None => CloseTimes {
                call,
                to_exit: since_ns(reaped, t0_ns),
                reaped_after_exit: Duration::ZERO,
            },
        }
    }
}

// ---------------------------------------------------------------- rmcp

/// rmcp's client over `TokioChildProcess`.
pub struct Rmcp {
    service: rmcp::service::RunningService<rmcp::RoleClient, ()>,
    stamp: PathBuf,
}

impl Rmcp {
    /// Spawns the floor child and runs rmcp's `initialize` handshake.
    pub async fn start(exe: &Path) -> Result<Rmcp, String> {
        use rmcp::ServiceExt;
        let stamp = stamp_path("rmcp");
        let mut cmd = tokio::process::Command::new(exe);
        cmd.args(floor_args(&stamp));
        let transport = rmcp::transport::TokioChildProcess::new(cmd).map_err(|e| e.to_string())?;
        let service = ().serve(transport).await.map_err(|e| e.to_string())?;
        Ok(Rmcp { service, stamp })
    }

    fn ping_request() -> rmcp::model::ClientRequest {
        rmcp::model::ClientRequest::PingRequest(rmcp::model::PingRequest {
            method: Default::default(),
            extensions: Default::default(),
        })
    }

    /// One ping round trip.
    pub async fn ping(&self) -> Result<(), String> {
        self.service
            .peer()
            .send_request(Self::ping_request())
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// A ping closure sharing this client's peer.
    pub fn ping_fn(&self) -> PingFn {
        let peer = self.service.peer().clone();
        Box::new(move || {
            let peer = peer.clone();
            Box::pin(async move { peer.send_request(Self::ping_request()).await.is_ok() })
        })
    }

    /// `window` tasks pinging until `dur` passed.
    pub async fn throughput(&self, window: usize, dur: Duration) -> (u64, Duration) {
        let done = Arc::new(AtomicU64::new(0));
        let start = Instant::now();
        let deadline = start + dur;
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..window {
            let peer = self.service.peer().clone();
            let done = done.clone();
            tasks.spawn(async move {
                while Instant::now() < deadline {
                    if peer.send_request(Self::ping_request()).await.is_err() {
                        break;
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        while tasks.join_next().await.is_some() {}
        (done.load(Ordering::Relaxed), start.elapsed())
    }

    /// One 8 MiB tool result; returns its text size.
    pub async fn big(&self) -> Result<usize, String> {
        let r = self
            .service
            .peer()
            .call_tool(rmcp::model::CallToolRequestParams::new("big"))
            .await
            .map_err(|e| e.to_string())?;
        Ok(r.content
            .first()
            .and_then(|c| c.as_text())
            .map_or(0, |t| t.text.len()))
    }

    /// `cancel()`: rmcp closes stdin and waits for the child to exit.
    pub async fn close(self) -> CloseTimes {
        let t0_ns = mono_ns();
        let t0 = Instant::now();
        let _ = self.service.cancel().await;
        let call = t0.elapsed();
        let reaped = mono_ns();
        close_times(&self.stamp, t0_ns, call, reaped)
    }
}
