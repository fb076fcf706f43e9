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
        .graces(Duration::from_millis(500), Duration::from_millis(500))
        .restarts(
            Backoff {
                initial: Duration::from_millis(20),
                max: Duration::from_millis(200),
                factor: 2.0,
            },
            3,
        )
        .request_timeout(Duration::from_secs(20));
    c.probe_timeout = Duration::from_secs(3);
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
