//! The three drivers: the floor (blocking pipes, no JSON), conduit's
//! `Client`, and rmcp's client over `TokioChildProcess`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use conduit_mcp::protocol::Era;
use conduit_mcp::{Client, ClientConfig, EraPreference, RequestOptions, StderrMode};
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

/// Arguments that run this binary as the floor child (both eras).
pub fn floor_args(stamp: &Path) -> Vec<String> {
    vec![
        "--child".into(),
        "floor".into(),
        "--stamp".into(),
        stamp.display().to_string(),
    ]
}

/// The child server a conduit client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildKind {
    /// The floor child, serving both eras (every peer's child).
    Floor,
    /// The floor child refusing `server/discover` (a legacy-only server).
    FloorLegacyOnly,
    /// `conduit-server` or `rmcp-server` (the server rows).
    Server(&'static str),
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

    /// `total` pings with `window` in flight (refilled as in
    /// [`throughput`](Self::throughput)).
    pub fn window_count(&mut self, window: usize, total: usize) -> std::io::Result<()> {
        let first = window.min(total);
        for _ in 0..first {
            self.push_request("ping");
        }
        self.flush_requests()?;
        let mut sent = first;
        let mut in_flight = first;
        let mut owed = 0usize;
        while in_flight > 0 {
            self.read_line()?;
            in_flight -= 1;
            owed += 1;
            if self.out.buffer().is_empty() {
                let more = owed.min(total - sent);
                for _ in 0..more {
                    self.push_request("ping");
                }
                if more > 0 {
                    self.flush_requests()?;
                }
                sent += more;
                in_flight += more;
                owed = 0;
            }
        }
        Ok(())
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

/// A client config for this binary with `args`, the era pinned to `era`.
pub fn conduit_config(exe: &Path, args: Vec<String>, era: EraPreference) -> ClientConfig {
    let mut cfg = ClientConfig::new(exe.to_string_lossy())
        .name("bench")
        .args(args)
        .stderr(StderrMode::Inherit);
    // An 8 MiB text plus its envelope is just over the default limit.
    cfg = cfg.max_message_bytes(16 * 1024 * 1024);
    cfg = cfg.era(era);
    if std::env::var_os("BENCH_DIAG_NO_PDEATHSIG").is_some() {
        cfg = cfg.die_with_parent(false);
    }
    if std::env::var_os("BENCH_DIAG_NO_PGROUP").is_some() {
        cfg = cfg.kill_process_group(false);
    }
    cfg
}

/// The era a client settled on.
fn era_of(client: &Client) -> Option<Era> {
    client.session().map(|s| s.era)
}

impl Conduit {
    /// Starts a client with the era pinned to `era` against `child`, and
    /// waits for ready.
    pub async fn start(
        exe: &Path,
        era: EraPreference,
        child: ChildKind,
    ) -> Result<Conduit, String> {
        let (args, stamp) = match child {
            ChildKind::Floor | ChildKind::FloorLegacyOnly => {
                let s = stamp_path("conduit");
                let mut args = floor_args(&s);
                if child == ChildKind::FloorLegacyOnly {
                    args.push("--legacy-only".into());
                }
                (args, Some(s))
            }
            ChildKind::Server(mode) => (vec!["--child".into(), mode.into()], None),
        };
        Self::start_cfg(conduit_config(exe, args, era), stamp).await
    }

    /// Starts a client with `cfg` (its exit stamp at `stamp`) and waits for
    /// ready. A client pinned to an era checks that it got it.
    pub async fn start_cfg(cfg: ClientConfig, stamp: Option<PathBuf>) -> Result<Conduit, String> {
        let want = match cfg.get_era() {
            EraPreference::Stateful => Some(Era::Stateful),
            EraPreference::Stateless => Some(Era::Stateless),
            EraPreference::Auto => None,
        };
        let client = Client::start(cfg).await.map_err(|e| e.to_string())?;
        let c = Conduit { client, stamp };
        if let Err(e) = c.client.ready(Duration::from_secs(10)).await {
            c.close().await;
            return Err(e.to_string());
        }
        let got = era_of(&c.client);
        if want.is_some() && got != want {
            c.close().await;
            return Err(format!("era {got:?}, expected {want:?}"));
        }
        Ok(c)
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
        self.call_fn("ping", None)
    }

    /// A closure sending `method` with `params`, sharing this client.
    pub fn call_fn(&self, method: &'static str, params: Option<serde_json::Value>) -> PingFn {
        let c = self.client.clone();
        Box::new(move || {
            let c = c.clone();
            let params = params.clone();
            Box::pin(async move { c.request(method, params).await.is_ok() })
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
