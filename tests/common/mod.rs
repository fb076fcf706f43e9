//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use conduit_mcp::{Backoff, Client, ClientConfig, Status, StderrMode};

/// The fixture server built by cargo for the tests.
pub fn fixture() -> &'static str {
    env!("CARGO_BIN_EXE_conduit-mcp-fixture")
}

/// A config running the fixture with `args`, short graces and fast restarts.
pub fn config(args: &[&str]) -> ClientConfig {
    let mut c = ClientConfig::new(fixture())
        .args(args.iter().copied())
        .stderr(StderrMode::Discard)
        .stdin_grace(Duration::from_millis(500))
        .term_grace(Duration::from_millis(500))
        .backoff(
            Backoff::new()
                .initial(Duration::from_millis(20))
                .max(Duration::from_millis(200)),
        )
        .max_reconnects(3)
        .request_timeout(Duration::from_secs(20));
    c = c.probe_timeout(Duration::from_secs(3));
    c
}

/// Whether `pid` names a live (non-zombie) process.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            // State is the field after the parenthesised command name.
            let state = s
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

/// Whether `pid` is a zombie.
pub fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next())
                == Some("Z")
        })
        .unwrap_or(false)
}

/// The environment variable that names the role a test's child plays.
const ROLE: &str = "CONDUIT_TEST_ROLE";

/// The role this process plays when a test re-ran itself as its child
/// ([`spawn_role`]); `None` in the test itself.
pub fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

/// This test binary re-run as the child of `test` (only that test, with
/// `--nocapture`), playing `role`: its stdin and stdout piped, killed if
/// dropped.
pub fn spawn_role(test: &str, role: &str, stderr: std::process::Stdio) -> tokio::process::Child {
    tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// `fut`'s output, or a panic saying that `what` did not happen within
/// `limit`: an await on the code under test fails instead of hanging.
pub async fn within<F: std::future::Future>(limit: Duration, what: &str, fut: F) -> F::Output {
    tokio::time::timeout(limit, fut)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {limit:?}"))
}

/// The end of a shutdown (a client's or a host's `stop().wait()`), for at
/// most a minute, forty times the longest escalation of the tests'
/// configs: a shutdown that hangs fails the test, saying so.
pub async fn shutdown<F: std::future::Future>(stop: F) -> F::Output {
    within(Duration::from_secs(60), "the shutdown", stop).await
}

/// `fut`'s output if it has it on its first poll; `None` if it waits.
pub fn at_once<F: std::future::Future>(fut: std::pin::Pin<&mut F>) -> Option<F::Output> {
    use std::task::{Context, Poll, Waker};
    match fut.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

/// Polls `cond` until true or `limit` passes; returns the time it took.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cond().then(|| start.elapsed())
}

/// A fresh temporary directory for one test.
pub fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "conduit-mcp-test-{tag}-{}-{:?}",
        std::process::id(),
        Instant::now()
    ));
    let d = PathBuf::from(d.to_string_lossy().replace([' ', '{', '}', ':', ','], ""));
    std::fs::create_dir_all(&d).expect("tempdir");
    d
}

/// Reads the pids written by the fixture's `--pid-file`.
pub fn read_pids(path: &std::path::Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Installs a test tracing subscriber (once).
pub fn trace() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CONDUIT_TEST_LOG")
                .unwrap_or_else(|_| "off".into()),
        )
        .with_test_writer()
        .try_init();
}

/// Waits (up to `limit`) until the client's status satisfies `f`.
pub async fn wait_status(client: &Client, limit: Duration, f: impl Fn(&Status) -> bool) -> Status {
    let mut rx = client.watch_status();
    tokio::time::timeout(limit, async {
        loop {
            let s = rx.borrow_and_update().clone();
            if f(&s) {
                return s;
            }
            rx.changed().await.expect("status sender alive");
        }
    })
    .await
    .expect("status reached in time")
}

/// Waits for a final status (gave up or stopped).
pub async fn final_status(client: &Client, limit: Duration) -> Status {
    wait_status(client, limit, Status::is_final).await
}

/// Prints one measured figure (visible with `--nocapture`), in the format of
/// tests/reliability.rs: `FIGURE | scenario | value`.
pub fn figure(scenario: &str, value: impl std::fmt::Display) {
    println!("FIGURE | {scenario} | {value}");
}

/// The state letter of `pid` (R, S, D, Z, T, ...), `None` if it does not exist.
pub fn proc_state(pid: u32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit(')')
        .next()?
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// Fields of /proc/PID/stat after the command name: (state, ppid, pgrp).
pub fn proc_stat(pid: u32) -> Option<(char, u32, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut f = s.rsplit(')').next()?.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// Whether this process runs as root (tests that need it skip otherwise).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The calling thread's kernel id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Whether thread `tid` of this process still exists.
pub fn thread_exists(tid: i32) -> bool {
    std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
}

/// A field of /proc/self/status in KiB (`VmRSS`, `VmHWM`).
pub fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A field of /proc/PID/status in KiB (`VmRSS`, `VmHWM`) of process `pid`.
pub fn process_status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// This process's resident set size in MiB.
pub fn rss_mib() -> f64 {
    status_kib("VmRSS") as f64 / 1024.0
}

/// The last pid handed out in this pid namespace.
pub fn read_ns_last_pid() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Sets the last pid handed out in this pid namespace (root only), so the
/// next process created gets `last + 1` if that number is free.
pub fn set_ns_last_pid(last: u32) -> std::io::Result<()> {
    std::fs::write("/proc/sys/kernel/ns_last_pid", last.to_string())
}

/// Makes this process the reaper of its orphaned descendants
/// (PR_SET_CHILD_SUBREAPER), so grandchildren end as our zombies, to be
/// reaped with [`reap`], instead of lingering under an init that may not
/// reap them.
pub fn become_subreaper() {
    // SAFETY: prctl with integer arguments only.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(r, 0, "PR_SET_CHILD_SUBREAPER");
}

/// Reaps child `pid` if it has exited (never blocks); returns whether it
/// was reaped now, or is no child of ours (already reaped elsewhere).
pub fn reap(pid: u32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on one pid with WNOHANG.
    let r = unsafe { libc::waitpid(pid as i32, &mut status, libc::WNOHANG) };
    r == pid as i32 || r < 0
}

/// Waits (up to `limit`) until child `pid` is reaped; see [`reap`].
pub async fn reap_within(pid: u32, limit: Duration) -> bool {
    eventually(limit, || reap(pid)).await.is_some()
}

/// Sends SIGKILL to `pid` (ignoring errors).
pub fn kill9(pid: u32) {
    // SAFETY: kill with a valid signal number.
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
}

/// Lifecycle events as received by a test.
pub type Events = tokio::sync::mpsc::UnboundedReceiver<conduit_mcp::LifecycleEvent>;

/// Starts a client that records every lifecycle event from the first spawn.
pub async fn start_recording(cfg: ClientConfig) -> (Client, Events) {
    start_recording_with(cfg, None).await
}

/// [`start_recording`] with a handler for the server's requests.
pub async fn start_recording_with(
    cfg: ClientConfig,
    handler: Option<std::sync::Arc<dyn conduit_mcp::ClientHandler>>,
) -> (Client, Events) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut options = conduit_mcp::StartOptions::new().events(tx);
    options.handler = handler;
    let client = Client::start_with(cfg, options)
        .await
        .expect("client starts");
    (client, rx)
}

/// The events received so far.
pub fn drain(rx: &mut Events) -> Vec<conduit_mcp::LifecycleEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

/// Waits (up to 10 s) for the client's server to be ready; its pid.
pub async fn ready_pid(client: &Client) -> u32 {
    client
        .ready(Duration::from_secs(10))
        .await
        .expect("server ready")
        .pid
        .expect("a server process")
}

/// Makes a FIFO at `path`.
pub fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Runs the future `make` returns on a current-thread runtime on a thread
/// of its own; `None` if it has not finished within `limit` (the thread is
/// left behind: something blocked the runtime's only thread).
pub fn on_own_runtime<T, F, Fut>(limit: Duration, make: F) -> Option<T>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
    T: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = tx.send(rt.block_on(make()));
    });
    rx.recv_timeout(limit).ok()
}

/// A writer for a tracing subscriber that keeps what it is given, so that
/// a test can look for secrets in the logs.
#[derive(Clone, Default)]
pub struct Capture(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Capture {
    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Captures every tracing event of this thread, at every level, until the
/// guard is dropped (on a current-thread runtime: every task's).
pub fn capture_trace() -> (Capture, tracing::subscriber::DefaultGuard) {
    let cap = Capture::default();
    let writer = cap.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    (cap, tracing::subscriber::set_default(subscriber))
}

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `fut`, given up (`None`) at its `limit`-th pending poll: a future
/// dropped at each of its await points in turn, however fast the machine.
pub struct PollLimit<F> {
    fut: std::pin::Pin<Box<F>>,
    left: usize,
}

impl<F: std::future::Future> PollLimit<F> {
    pub fn new(fut: F, limit: usize) -> Self {
        PollLimit {
            fut: Box::pin(fut),
            left: limit,
        }
    }
}

impl<F: std::future::Future> std::future::Future for PollLimit<F> {
    type Output = Option<F::Output>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.fut.as_mut().poll(cx) {
            std::task::Poll::Ready(v) => std::task::Poll::Ready(Some(v)),
            std::task::Poll::Pending => {
                self.left -= 1;
                if self.left == 0 {
                    std::task::Poll::Ready(None)
                } else {
                    std::task::Poll::Pending
                }
            }
        }
    }
}
