//! Runs `examples/server.rs` as a child process over real pipes.
//!
//! The example binary is built by `cargo test` (all targets); a focused
//! `cargo test --test server_example` needs `cargo build --example server`
//! first (the test says so if the binary is missing).

#![cfg(unix)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;

const PATIENCE: Duration = Duration::from_secs(20);

use crate::example_bin;

/// `examples/server.rs`, built on demand (see `interop/example_bin.rs`).
fn example_binary() -> PathBuf {
    example_bin::example_bin("server").expect("the server example could not be built")
}

struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: JoinHandle<String>,
}

impl Peer {
    fn spawn(args: &[&str]) -> Peer {
        let mut child = Command::new(example_binary())
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn example server");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut err = child.stderr.take().unwrap();
        // Drain stderr so the child can never block on it.
        let stderr = tokio::spawn(async move {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s).await;
            s
        });
        Peer {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    async fn send(&mut self, v: Value) {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(&line).await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn request(&mut self, id: Value, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
    }

    /// Every stdout line must be JSON: a stray print would fail here.
    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .expect("timed out")
            .unwrap()
            .expect("stdout ended");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout not JSON: {line:?}: {e}"))
    }

    /// The next message with this id, collecting the notifications before it.
    async fn answer(&mut self, id: Value) -> (Value, Vec<Value>) {
        let mut notes = Vec::new();
        loop {
            let m = self.recv().await;
            if m.get("id") == Some(&id) && m.get("method").is_none() {
                return (m, notes);
            }
            notes.push(m);
        }
    }

    async fn call(
        &mut self,
        id: i64,
        tool: &str,
        args: Value,
        meta: Option<Value>,
    ) -> (Value, Vec<Value>) {
        let mut params = json!({ "name": tool, "arguments": args });
        if let Some(m) = meta {
            params["_meta"] = m;
        }
        self.request(json!(id), "tools/call", params).await;
        self.answer(json!(id)).await
    }

    /// Closes stdin and reaps the child; returns its stderr.
    async fn finish(mut self) -> (std::process::ExitStatus, String, Duration) {
        let t = Instant::now();
        self.stdin = None;
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("server did not exit on EOF")
            .unwrap();
        let took = t.elapsed();
        (status, self.stderr.await.unwrap(), took)
    }
}

fn modern_meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": { "name": "pipe-test", "version": "1" },
    })
}

fn text_of(result: &Value) -> &str {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test]
async fn legacy_session_over_real_pipes() {
    let mut p = Peer::spawn(&["--stray-print"]);
    p.request(
        json!(0),
        "initialize",
        json!({ "protocolVersion": "2025-06-18", "capabilities": { "roots": {} },
                "clientInfo": { "name": "pipe-test", "version": "1" } }),
    )
    .await;
    let (init, _) = p.answer(json!(0)).await;
    assert_eq!(init["result"]["protocolVersion"], json!("2025-06-18"));
    assert_eq!(
        init["result"]["serverInfo"]["name"],
        json!("conduit-mcp-example")
    );
    p.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;

    p.request(json!(1), "tools/list", json!({})).await;
    let (list, _) = p.answer(json!(1)).await;
    let names: Vec<_> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(
        names,
        vec![json!("echo"), json!("add"), json!("sleep"), json!("roots")]
    );

    // echo also println!s: the guard keeps it off the protocol stream.
    let (r, _) = p.call(2, "echo", json!({ "text": "héllo" }), None).await;
    assert_eq!(text_of(&r), "héllo");
    let (r, _) = p.call(3, "add", json!({ "a": 2, "b": 40.5 }), None).await;
    assert_eq!(r["result"]["structuredContent"]["sum"], json!(42.5));

    // sleep with progress.
    let (r, notes) = p
        .call(
            4,
            "sleep",
            json!({ "ms": 50 }),
            Some(json!({ "progressToken": "p4" })),
        )
        .await;
    assert_eq!(text_of(&r), "slept 50 ms");
    let progress: Vec<_> = notes
        .iter()
        .filter(|n| n["params"]["progressToken"] == json!("p4"))
        .collect();
    assert_eq!(progress.len(), 11, "{notes:?}");
    assert_eq!(progress[10]["params"]["progress"].as_f64(), Some(10.0));

    // Cancel a long sleep once it has started (its first progress).
    p.request(
        json!(5),
        "tools/call",
        json!({ "name": "sleep", "arguments": { "ms": 60000 },
                                               "_meta": { "progressToken": "p5" } }),
    )
    .await;
    loop {
        let m = p.recv().await;
        if m["params"]["progressToken"] == json!("p5") {
            break;
        }
    }
    p.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 5 } })).await;
    p.request(json!(6), "ping", json!({})).await;
    let (pong, before) = p.answer(json!(6)).await;
    assert_eq!(pong["result"], json!({}));
    assert!(
        before.iter().all(|m| m.get("id") != Some(&json!(5))),
        "{before:?}"
    );

    // roots: the server asks us with a roots/list request.
    p.request(
        json!(7),
        "tools/call",
        json!({ "name": "roots", "arguments": {} }),
    )
    .await;
    let ask = p.recv().await;
    assert_eq!(ask["method"], json!("roots/list"));
    p.send(json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "roots": [{ "uri": "file:///tmp/x", "name": "x" }] } })).await;
    let (r, _) = p.answer(json!(7)).await;
    assert_eq!(
        r["result"]["structuredContent"]["roots"][0]["uri"],
        json!("file:///tmp/x")
    );

    p.request(
        json!(8),
        "resources/read",
        json!({ "uri": "demo://readme" }),
    )
    .await;
    assert!(p.answer(json!(8)).await.0["result"]["contents"][0]["text"].is_string());
    p.request(
        json!(9),
        "prompts/get",
        json!({ "name": "greet", "arguments": { "name": "Ada" } }),
    )
    .await;
    assert_eq!(
        p.answer(json!(9)).await.0["result"]["messages"][0]["content"]["text"],
        json!("Say hello to Ada.")
    );

    let (status, stderr, took) = p.finish().await;
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(
        stderr.contains("stray print from the echo tool: héllo"),
        "{stderr}"
    );
    assert!(stderr.contains("ended: Eof"), "{stderr}");
    eprintln!("exit after EOF took {took:?}");
}

#[tokio::test]
async fn modern_session_over_real_pipes() {
    let mut p = Peer::spawn(&[]);
    p.request(
        json!("d"),
        "server/discover",
        json!({ "_meta": modern_meta(json!({})) }),
    )
    .await;
    let (d, _) = p.answer(json!("d")).await;
    assert_eq!(d["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(d["result"]["resultType"], json!("complete"));

    let meta = modern_meta(json!({ "roots": {} }));
    let (r, _) = p
        .call(1, "echo", json!({ "text": "m" }), Some(meta.clone()))
        .await;
    assert_eq!(text_of(&r), "m");
    assert_eq!(r["result"]["resultType"], json!("complete"));

    // roots: an input-required round, then the retry completes.
    let (r, _) = p.call(2, "roots", json!({}), Some(meta.clone())).await;
    assert_eq!(r["result"]["resultType"], json!("input_required"));
    assert_eq!(
        r["result"]["inputRequests"]["roots"]["method"],
        json!("roots/list")
    );
    p.request(
        json!(3),
        "tools/call",
        json!({
            "name": "roots", "arguments": {}, "_meta": meta,
            "inputResponses": { "roots": { "roots": [{ "uri": "file:///modern" }] } },
        }),
    )
    .await;
    let (r, _) = p.answer(json!(3)).await;
    assert_eq!(
        r["result"]["structuredContent"]["roots"][0]["uri"],
        json!("file:///modern")
    );

    // Missing _meta: -32602.
    p.request(json!(4), "tools/list", json!({})).await;
    assert_eq!(p.answer(json!(4)).await.0["error"]["code"], json!(-32602));
    let (status, stderr, _) = p.finish().await;
    assert!(status.success(), "{stderr}");
}

#[tokio::test]
async fn sigterm_stops_at_once_while_blocked_reading_idle_stdin() {
    let mut p = Peer::spawn(&[]);
    p.request(json!(1), "ping", json!({})).await;
    p.answer(json!(1)).await;
    // stdin stays open and idle: the server is blocked reading it.
    let pid = nix::unistd::Pid::from_raw(p.child.id().unwrap() as i32);
    let t = Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(PATIENCE, p.child.wait())
        .await
        .expect("no exit")
        .unwrap();
    let took = t.elapsed();
    let stderr = p.stderr.await.unwrap();
    eprintln!(
        "SIGTERM -> exit took {took:?}; server said: {}",
        stderr
            .lines()
            .filter(|l| l.contains("stopped"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(stderr.contains("stopped"), "{stderr}");
}

#[tokio::test]
async fn garbage_and_oversize_input_do_not_end_the_session() {
    let mut p = Peer::spawn(&[]);
    let stdin = p.stdin.as_mut().unwrap();
    stdin
        .write_all(b"\xef\xbb\xbfnot json\r\n{}\n[]\n")
        .await
        .unwrap();
    // 9 MiB line, over the 8 MiB default.
    let chunk = vec![b'a'; 1024 * 1024];
    for _ in 0..9 {
        stdin.write_all(&chunk).await.unwrap();
    }
    stdin.write_all(b"\n").await.unwrap();
    p.request(json!("last"), "ping", json!({})).await;
    let (pong, before) = p.answer(json!("last")).await;
    assert_eq!(pong["result"], json!({}));
    let codes: Vec<_> = before.iter().map(|m| m["error"]["code"].clone()).collect();
    assert_eq!(
        codes,
        vec![json!(-32700), json!(-32600), json!(-32600), json!(-32600)]
    );
    let (status, _, _) = p.finish().await;
    assert!(status.success());
}

/// Runs the example server with stdin and stdout on a socket or on pipes,
/// sends a handshake and an echo call, ends its input, and returns the
/// answers, whether it exited with status 0, and its debug log.
fn session_over(socket: bool) -> (Vec<Value>, bool, String) {
    use std::io::{BufRead, Write};
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;

    let mut cmd = std::process::Command::new(example_binary());
    cmd.env("RUST_LOG", "conduit_mcp=debug")
        .stderr(Stdio::piped());
    let mut ours = None;
    if socket {
        let (mine, theirs) = UnixStream::pair().unwrap();
        mine.set_read_timeout(Some(PATIENCE)).unwrap();
        cmd.stdin(Stdio::from(OwnedFd::from(theirs.try_clone().unwrap())))
            .stdout(Stdio::from(OwnedFd::from(theirs)));
        ours = Some(mine);
    } else {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    }
    let mut child = cmd.spawn().expect("spawn example server");
    let mut err = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let (mut input, mut output): (Box<dyn Write>, Box<dyn BufRead>) = match &ours {
        Some(sock) => (
            Box::new(sock.try_clone().unwrap()),
            Box::new(std::io::BufReader::new(sock.try_clone().unwrap())),
        ),
        None => (
            Box::new(child.stdin.take().unwrap()),
            Box::new(std::io::BufReader::new(child.stdout.take().unwrap())),
        ),
    };
    let init = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}\n";
    let call = b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}}\n";
    let mut answers = Vec::new();
    for request in [&init[..], &call[..]] {
        input.write_all(request).unwrap();
        input.flush().unwrap();
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    // End of input: the server finishes and exits.
    drop(input);
    if let Some(sock) = &ours {
        sock.shutdown(std::net::Shutdown::Write).unwrap();
    }
    let status = child.wait().unwrap();
    (answers, status.success(), log.join().unwrap())
}

/// Process stdio that is not a pipe (here a socket) is served by threads;
/// pipes (as every client spawns a server) by the reactor. Both alike.
#[test]
fn process_stdio_over_a_socket_uses_threads_and_over_pipes_the_reactor() {
    for socket in [true, false] {
        let (answers, ok, log) = session_over(socket);
        assert!(ok, "socket {socket}: exit status; log:\n{log}");
        assert_eq!(answers[0]["id"], 1, "{answers:?}");
        assert_eq!(
            answers[1]["result"]["content"][0]["text"], "hello",
            "{answers:?}"
        );
        assert_eq!(
            log.contains("non-blocking pipes on the reactor"),
            !socket,
            "socket {socket}: the wrong stdio path; log:\n{log}"
        );
    }
}
