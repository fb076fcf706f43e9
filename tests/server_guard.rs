//! The stdout guard, end to end in a child process: while serving process
//! stdio, a stray `println!` lands on stderr and the protocol stream stays
//! clean; when serving ends, fd 1 is the original stdout again.
//!
//! Each test re-runs itself as the child, which plays the server's role
//! instead (`common::spawn_role`), so the guard never touches the
//! fd 1 of the test harness that reports results.

#![cfg(unix)]

mod common;

use std::process::Stdio;
use std::time::Duration;

use conduit_mcp::jsonrpc::Request;
use conduit_mcp::protocol::Implementation;
use conduit_mcp::server::{Handler, HandlerError, RequestContext, ServerConfig, StdioServer};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

struct Printer;

impl Handler for Printer {
    async fn handle_request(
        &self,
        req: Request,
        _ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        println!("STRAY PRINT from handler {}", req.id);
        Ok(json!({ "printed": true }))
    }
}

/// Plays this process's role when it is a test's child; false when it is
/// the test.
async fn play_role() -> bool {
    match common::role().as_deref() {
        Some("guard") => guard_server().await,
        Some("overlap") => overlap_servers().await,
        _ => return false,
    }
    true
}

/// The guard role: serves its stdio with the guard, then prints.
async fn guard_server() {
    let config = ServerConfig::new(Implementation::new("guard", "0")).stdout_guard(true);
    let end = StdioServer::new(config).serve(Printer).await;
    eprintln!("child: serve ended: {end:?}");
    println!("RESTORED STDOUT after serving");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_guard_diverts_stray_prints_and_restores_fd1() {
    if play_role().await {
        return;
    }
    let mut child = common::spawn_role(
        "stdout_guard_diverts_stray_prints_and_restores_fd1",
        "guard",
        Stdio::piped(),
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{}}\n")
        .await
        .unwrap();
    drop(stdin); // EOF: the child answers and ends serving
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("child timed out")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("STRAY PRINT from handler 2"), "{stderr}");
    assert!(!stdout.contains("STRAY"), "{stdout}");
    // Protocol lines are intact JSON, answered in full.
    let answers: Vec<Value> = stdout
        .lines()
        // libtest's "test stdout_guard_... " may precede the first line.
        .filter_map(|l| l.find("{\"jsonrpc\"").map(|at| &l[at..]))
        .map(|l| serde_json::from_str(l).expect("protocol line is JSON"))
        .collect();
    assert_eq!(answers.len(), 2, "{stdout}");
    assert_eq!(answers[1]["result"], json!({ "printed": true }));
    // After serving, fd 1 is the real stdout again.
    assert!(
        stdout.contains("RESTORED STDOUT after serving"),
        "{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("RESTORED STDOUT"), "{stderr}");
}

/// Serves process stdio with the guard until `wait_until_ready`, returning
/// the handle and the serving task.
fn serve_guarded(
    name: &str,
) -> (
    conduit_mcp::server::ServerHandle,
    tokio::task::JoinHandle<
        Result<conduit_mcp::server::ServeEnd, conduit_mcp::server::ServerError>,
    >,
) {
    let config = ServerConfig::new(Implementation::new(name, "0")).stdout_guard(true);
    let server = StdioServer::new(config);
    let handle = server.handle();
    (handle, tokio::spawn(server.serve(Printer)))
}

/// The overlap role: a second guarded server starts while the first one's
/// guard is live (a supervisor restarting before the old server is gone),
/// then the first one ends before the second. Reports on stderr; prints on
/// stdout at the end to show where fd 1 points.
async fn overlap_servers() {
    let (first, first_task) = serve_guarded("first");
    first.wait_until_ready().await.expect("first server ready");
    let (second, second_task) = serve_guarded("second");
    // Ready means a second guard was installed; an error means refused.
    let second_task = match second.wait_until_ready().await {
        Ok(()) => {
            eprintln!("OVERLAP: second guard installed while the first was live");
            Some(second_task)
        }
        Err(_) => {
            match second_task.await.expect("second serve task") {
                Err(conduit_mcp::server::ServerError::StdoutGuardInUse) => {
                    eprintln!("REFUSED: second guard refused with StdoutGuardInUse")
                }
                other => eprintln!("UNEXPECTED second serve result: {other:?}"),
            }
            None
        }
    };
    // The first (older) server ends first, as after a restart.
    first.stop();
    let end = first_task.await.expect("first serve task");
    eprintln!("first serve ended: {end:?}");
    // If the second one is serving (overlap allowed), it ends last.
    if let Some(task) = second_task {
        second.stop();
        let end = task.await.expect("second serve task");
        eprintln!("second serve ended: {end:?}");
    }
    // Once every guard is gone a new one may be installed.
    let (third, third_task) = serve_guarded("third");
    match third.wait_until_ready().await {
        Ok(()) => eprintln!("THIRD: guard installed after the first ended"),
        Err(_) => eprintln!("THIRD FAILED"),
    }
    third.stop();
    let end = third_task.await.expect("third serve task");
    eprintln!("third serve ended: {end:?}");
    println!("STDOUT after every guard ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_live_stdout_guard_is_refused_and_fd1_survives_the_overlap() {
    if play_role().await {
        return;
    }
    let mut child = common::spawn_role(
        "a_second_live_stdout_guard_is_refused_and_fd1_survives_the_overlap",
        "overlap",
        Stdio::piped(),
    );
    // Kept open: the servers serve until stopped.
    let stdin = child.stdin.take().unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("child timed out")
        .unwrap();
    drop(stdin);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!(
        "overlap child: second guard {}; final println on {}",
        if stderr.contains("REFUSED:") {
            "refused"
        } else if stderr.contains("OVERLAP:") {
            "installed"
        } else {
            "?"
        },
        if stdout.contains("STDOUT after every guard ended") {
            "stdout"
        } else if stderr.contains("STDOUT after every guard ended") {
            "stderr (fd 1 lost)"
        } else {
            "?"
        },
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("REFUSED: second guard refused with StdoutGuardInUse"),
        "{stderr}"
    );
    assert!(
        stderr.contains("THIRD: guard installed after the first ended"),
        "{stderr}"
    );
    assert!(
        stdout.contains("STDOUT after every guard ended"),
        "fd 1 was not restored: {stdout}\n{stderr}"
    );
}
