//! Real clients through `mcp serve` to real stdio servers: the Python `mcp`
//! client (both eras) and the official TypeScript SDK client (2025-11-25)
//! at `/servers/example/mcp` (the scripts of the direct HTTP interop, given
//! the gateway's URL: the example server's own names and identity), and the
//! Python client at `/mcp` with the example server, mcp-server-time and
//! server-everything in one namespace (a legacy server's sampling answered
//! by the client across eras). Then SIGKILL of one server while the others
//! serve, and SIGTERM leaving no process.
//!
//! Peers live under `target/peers/` (`.ci/install-client-peers.sh`).
//!
//! The tests are `#[ignore]`d, so `cargo test` counts them as ignored
//! where the peers are not installed; `.ci/run` installs them and runs
//! these with `-- --ignored`, where a missing peer fails the test.

#![cfg(unix)]

use crate::gateway_support;

use crate::example_bin;
use crate::peers;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use gateway_support::common::{self, tempdir};
use gateway_support::{all_gone, serve, Gateway};
use serde_json::{json, Value};
use tokio::process::Command;

const LIMIT: Duration = Duration::from_secs(120);

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(name)
}

/// The gateway with the example server, mcp-server-time and
/// server-everything; fails the test naming a peer that is missing.
async fn gateway(tag: &str) -> Gateway {
    let example = example_bin::example_bin("server").expect("the server example builds");
    let Some(time) = peers::time_server() else {
        panic!(
            "missing: mcp-server-time not installed at target/peers ({})",
            peers::INSTALL
        );
    };
    let Some(everything) = peers::everything_js() else {
        panic!(
            "missing: server-everything or node missing ({})",
            peers::INSTALL
        );
    };
    let dir = tempdir(tag);
    let servers = json!({
        "example": { "command": example, "conduit": { "stderr": "discard" } },
        "time": { "command": time, "conduit": { "stderr": "discard" } },
        "everything": { "command": "node", "args": [everything, "stdio"], "conduit": { "stderr": "discard" } },
    });
    serve(&dir, servers, &[], &[]).await
}

/// Runs a client script to completion; its stdout, after checking `steps`.
async fn run(mut cmd: Command, steps: &[&str]) -> String {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().expect("spawn client script");
    let out = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .expect("client script timed out")
        .expect("wait for client script");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "client script failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for step in steps {
        assert!(stdout.contains(step), "missing {step:?}:\n{stdout}");
    }
    stdout
}

/// The example server's checks (tests/interop/python_client.py, node_client.cjs).
const EXAMPLE_STEPS: &[&str] = &[
    "ok connected",
    "ok list_tools",
    "ok echo",
    "ok add",
    "ok sleep_with_progress",
    "ok cancel_sleep",
    "ok roots",
    "ok resource_and_prompt",
    "done",
];

/// The servers' pids, from `/health`.
async fn pids(gw: &Gateway) -> Vec<(String, u32)> {
    let (_, h) = gw.health().await;
    h["servers"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(n, s)| Some((n.clone(), s["pid"].as_u64()? as u32)))
        .collect()
}

/// SIGTERM: exit 0 and every server process (and its group) gone.
async fn stop(gw: Gateway) {
    let before = pids(&gw).await;
    assert_eq!(before.len(), 3, "{before:?}");
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
    let pids: Vec<u32> = before.iter().map(|(_, p)| *p).collect();
    assert!(all_gone(&pids), "a server outlived mcp serve: {before:?}");
    for (_, p) in &before {
        // The group too (node and python launch nothing more here, but a
        // server that did would be caught).
        let group = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(*p as i32), None);
        assert!(group.is_err(), "process group {p} still has members");
    }
}

#[tokio::test]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn python_client_through_the_gateway_to_the_example_server_in_both_eras() {
    let Some(py) = peers::venv_python() else {
        panic!(
            "missing: Python mcp not installed at target/peers ({})",
            peers::INSTALL
        );
    };
    let gw = gateway("gw-py-single").await;
    let url = format!("http://{}/servers/example/mcp", gw.addr);
    for (mode, version) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let mut cmd = Command::new(&py);
        cmd.arg(script("python_client.py")).arg(&url).arg(mode);
        let out = run(cmd, EXAMPLE_STEPS).await;
        assert!(
            out.contains(&format!("protocol_version={version}")),
            "{out}"
        );
    }
    stop(gw).await;
}

#[tokio::test]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn typescript_sdk_client_through_the_gateway_to_the_example_server() {
    let modules = peers::peers().join("node/node_modules");
    if !modules.join("@modelcontextprotocol/sdk").exists() || !peers::on_path("node") {
        panic!(
            "missing: @modelcontextprotocol/sdk or node missing ({})",
            peers::INSTALL
        );
    }
    let gw = gateway("gw-ts-single").await;
    let mut cmd = Command::new("node");
    cmd.env("NODE_PATH", &modules)
        .arg(script("node_client.cjs"))
        .arg(format!("http://{}/servers/example/mcp", gw.addr));
    run(cmd, EXAMPLE_STEPS).await;
    stop(gw).await;
}

#[tokio::test]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn python_client_sees_three_real_servers_in_one_namespace_and_one_sigkill_spares_the_others()
{
    let Some(py) = peers::venv_python() else {
        panic!(
            "missing: Python mcp not installed at target/peers ({})",
            peers::INSTALL
        );
    };
    let gw = gateway("gw-py-joined").await;
    let url = format!("http://{}/mcp", gw.addr);
    let steps = [
        "ok list_tools",
        "ok example",
        "ok time",
        "ok everything",
        "ok sampling",
        "done",
    ];
    for mode in ["legacy", "auto"] {
        let mut cmd = Command::new(&py);
        cmd.arg(script("python_gateway_client.py"))
            .arg(&url)
            .arg(mode);
        run(cmd, &steps).await;
    }

    // SIGKILL the time server: the others serve while it restarts.
    let before = pids(&gw).await;
    let time = before.iter().find(|(n, _)| n == "time").unwrap().1;
    common::kill9(time);
    let r = gw
        .call_modern(
            "/mcp",
            1,
            "everything__echo",
            json!({ "message": "still here" }),
        )
        .await;
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("still here"),
        "{r}"
    );
    let mut back: Option<Value> = None;
    for _ in 0..400 {
        let (status, h) = gw.health().await;
        if status == 200
            && h["servers"]["time"]["pid"]
                .as_u64()
                .is_some_and(|p| p as u32 != time)
        {
            back = Some(h);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(back.is_some(), "mcp-server-time did not come back");
    let r = gw
        .call_modern(
            "/mcp",
            2,
            "time__get_current_time",
            json!({ "timezone": "UTC" }),
        )
        .await;
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("UTC"),
        "{r}"
    );
    assert!(all_gone(&[time]));
    stop(gw).await;
}
