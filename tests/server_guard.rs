//! The stdout guard, end to end in a child process: while serving process
//! stdio, a stray `println!` lands on stderr and the protocol stream stays
//! clean; when serving ends, fd 1 is the original stdout again.
//!
//! The test binary re-runs itself as the child (`guard_child`, active only
//! with `CONDUIT_GUARD_CHILD=1`), so the guard never touches the fd 1 of the
//! test harness that reports results.

#![cfg(unix)]

use std::process::Stdio;
use std::time::Duration;

use conduit_mcp::jsonrpc::Request;
use conduit_mcp::protocol::Implementation;
use conduit_mcp::server::{Handler, HandlerError, RequestContext, ServerConfig, StdioServer};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

const CHILD_ENV: &str = "CONDUIT_GUARD_CHILD";

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

/// The child's body: serves its stdio with the guard, then prints.
#[test]
fn guard_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return; // only meaningful as the child of the test below
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let end = rt.block_on(async {
        let config = ServerConfig::new(Implementation::new("guard", "0")).stdout_guard(true);
        StdioServer::new(config).serve(Printer).await
    });
    eprintln!("child: serve ended: {end:?}");
    println!("RESTORED STDOUT after serving");
}

#[tokio::test]
async fn stdout_guard_diverts_stray_prints_and_restores_fd1() {
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["guard_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
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
        // libtest's "test guard_child ... " may precede the first line.
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

/// The overlap child: a second guarded server starts while the first one's
/// guard is live (a supervisor restarting before the old server is gone),
/// then the first one ends before the second. Reports on stderr; prints on
/// stdout at the end to show where fd 1 points.
#[test]
fn guard_overlap_child() {
    if std::env::var(CHILD_ENV).as_deref() != Ok("overlap") {
        return; // only meaningful as the child of the test below
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
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
    });
    println!("STDOUT after every guard ended");
}

#[tokio::test]
async fn a_second_live_stdout_guard_is_refused_and_fd1_survives_the_overlap() {
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "guard_overlap_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "overlap")
        .stdin(Stdio::piped()) // kept open: the servers serve until stopped
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
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
