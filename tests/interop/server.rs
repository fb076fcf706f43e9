//! Interop: real MCP clients drive `examples/server.rs` over stdio.
//!
//! - The Python `mcp` package (pinned by `.ci/install-peers.sh`), in the
//!   legacy era (`initialize`) and the modern era (`server/discover` probe).
//! - The official TypeScript SDK client (legacy era).
//!
//! Each script lists tools, calls echo and add, sleeps with progress,
//! cancels a sleep, and answers the roots tool's request for roots. Peers
//! live under `target/peers/` (run `.ci/install-peers.sh`).
//!
//! The tests are `#[ignore]`d, so `cargo test` counts them as ignored
//! where the peers are not installed; `.ci/run` installs them and runs
//! these with `-- --ignored`, where a missing peer fails the test.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

const LIMIT: Duration = Duration::from_secs(120);

fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join("peers")
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("interop")
        .join(name)
}

use crate::example_bin;

/// `examples/server.rs`, built on demand (see `interop/example_bin.rs`).
fn example_binary() -> PathBuf {
    example_bin::example_bin("server").expect("the server example could not be built")
}

struct Run {
    stdout: String,
    stderr: String,
}

/// Runs a client script to completion (reaped; killed after `LIMIT`).
async fn run(mut cmd: Command) -> Run {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().expect("spawn client script");
    let out = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .expect("client script timed out")
        .expect("wait for client script");
    let run = Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        out.status.success(),
        "client script failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        run.stdout,
        run.stderr
    );
    run
}

fn check(run: &Run, sends_requests: bool) {
    for step in [
        "ok connected",
        "ok list_tools",
        "ok echo",
        "ok add",
        "ok sleep_with_progress",
        "ok cancel_sleep",
        "ok roots",
        "ok resource_and_prompt",
        "done",
    ] {
        assert!(
            run.stdout.contains(step),
            "missing {step:?}:\n{}\n{}",
            run.stdout,
            run.stderr
        );
    }
    // The server saw the cancellation (its debug log reaches the script's stderr).
    assert!(
        run.stderr.contains("request cancelled by the client"),
        "server did not log the cancellation:\n{}",
        run.stderr
    );
    // Legacy: roots by a server-to-client request; modern: never a request.
    assert_eq!(
        run.stderr.contains("server-to-client request sent"),
        sends_requests,
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("ended: Eof"),
        "server did not end on EOF:\n{}",
        run.stderr
    );
}

/// The peers' Python; a test without it fails, naming it.
fn python() -> PathBuf {
    let py = peers().join("venv").join("bin").join("python");
    assert!(
        py.exists(),
        "missing: Python mcp not installed at {} (run .ci/install-peers.sh)",
        peers().join("venv").display()
    );
    py
}

async fn python_client(mode: &str) -> Run {
    let mut cmd = Command::new(python());
    cmd.arg(script("python_client.py"))
        .arg(example_binary())
        .arg(mode);
    run(cmd).await
}

#[tokio::test]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn python_mcp_client_legacy_era() {
    let run = python_client("legacy").await;
    assert!(
        run.stdout.contains("protocol_version=2025-11-25"),
        "{}",
        run.stdout
    );
    check(&run, true);
}

#[tokio::test]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn python_mcp_client_modern_era_via_discovery() {
    let run = python_client("auto").await;
    assert!(
        run.stdout.contains("protocol_version=2026-07-28"),
        "{}",
        run.stdout
    );
    check(&run, false);
}

#[tokio::test]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn typescript_sdk_client_legacy_era() {
    let modules = peers().join("node").join("node_modules");
    if !modules.join("@modelcontextprotocol").join("sdk").exists() {
        panic!(
            "missing: @modelcontextprotocol/sdk not installed at {} (run .ci/install-peers.sh)",
            modules.display()
        );
    }
    let node = which("node").expect("missing: node not found in PATH");
    let mut cmd = Command::new(node);
    cmd.env("NODE_PATH", &modules)
        .arg(script("node_client.cjs"))
        .arg(example_binary());
    let run = run(cmd).await;
    check(&run, true);
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}
