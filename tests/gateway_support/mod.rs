//! Shared support for the gateway tests: `mcp serve` run as a child process
//! on 127.0.0.1:0 (its address read from its first line on stderr), with
//! config files of fixture servers that record their pids, requests sent
//! to any of its paths, and the end of it (SIGTERM, exit status, no server
//! process left).
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

// Declared once in the binary's root (`tests/*/main.rs`).
pub(crate) use crate::common;
pub(crate) use crate::server_http_support as http;

pub use http::{Resp, LEGACY, MODERN};

/// Only a guard against hangs.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A fixture server entry of a config file, recording its pid in `dir`.
pub fn fixture(dir: &Path, name: &str, extra: &[&str]) -> Value {
    let mut args: Vec<String> = vec![
        "--pid-file".into(),
        dir.join(format!("{name}.pids")).display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    json!({ "command": common::fixture(), "args": args })
}

/// A gateway's address, and requests to any of its paths.
pub struct At {
    pub addr: SocketAddr,
}

/// A running `mcp serve`.
pub struct Gateway {
    pub child: Child,
    pub at: At,
    pub addr: SocketAddr,
    pub dir: PathBuf,
    /// What it said on stderr before its start line.
    pub early: String,
    /// Its start line (`mcp serve: http://ADDR/mcp (...)`).
    pub start_line: String,
    /// Its stderr after the start line, collected by a task.
    pub stderr: tokio::task::JoinHandle<String>,
    /// The same lines, one by one, as they come (see [`Gateway::said`]).
    pub lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

/// Writes `servers` (an `mcpServers` object) to a config file in `dir` and
/// runs `mcp serve` on it with `args`; returns once it listens.
pub async fn serve(dir: &Path, servers: Value, args: &[&str], env: &[(&str, &str)]) -> Gateway {
    let config = dir.join("servers.json");
    std::fs::write(&config, json!({ "mcpServers": servers }).to_string()).unwrap();
    serve_file(dir, &config, args, env).await
}

/// Runs `mcp serve --config FILE --listen 127.0.0.1:0 ARGS...`.
pub async fn serve_file(dir: &Path, config: &Path, args: &[&str], env: &[(&str, &str)]) -> Gateway {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp"));
    cmd.arg("serve")
        .arg("--config")
        .arg(config)
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn mcp serve");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut early = String::new();
    let (first, start_line) = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.strip_prefix("mcp serve: http://") {
                return (rest.split('/').next().unwrap().to_owned(), line);
            }
            eprintln!("mcp serve: {line}");
            early.push_str(&line);
            early.push('\n');
        }
        panic!("mcp serve ended before it listened");
    })
    .await
    .expect("mcp serve did not listen in time");
    let addr: SocketAddr = first.parse().expect("an address");
    let (each, said) = tokio::sync::mpsc::unbounded_channel();
    let stderr = tokio::spawn(async move {
        let mut all = String::new();
        while let Ok(Some(l)) = lines.next_line().await {
            all.push_str(&l);
            all.push('\n');
            let _ = each.send(l);
        }
        all
    });
    Gateway {
        child,
        at: At { addr },
        addr,
        dir: dir.to_owned(),
        early,
        start_line,
        stderr,
        lines: said,
    }
}

impl std::ops::Deref for Gateway {
    type Target = At;

    fn deref(&self) -> &At {
        &self.at
    }
}

/// What `mcp serve` exited with, and what it said.
pub struct Ended {
    pub code: Option<i32>,
    pub stderr: String,
}

impl At {
    /// Sends `method` to `path` with `headers` and an optional JSON body.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Resp {
        http::send(self.addr, request(method, self.addr, path, headers, body)).await
    }

    /// A 2026-07-28 `tools/call` of `name` with `arguments` at `path`, its
    /// JSON answer.
    pub async fn call_modern(&self, path: &str, id: u64, name: &str, arguments: Value) -> Value {
        let params = serde_json::json!({ "name": name, "arguments": arguments });
        self.modern(path, &[], id, "tools/call", params)
            .await
            .json()
            .await
    }

    /// A 2026-07-28 request to `path` (`_meta` and headers as required).
    pub async fn modern(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        id: u64,
        method: &str,
        mut params: Value,
    ) -> Resp {
        let mut meta = http::meta();
        if let Some(extra) = params.get("_meta").and_then(Value::as_object) {
            for (k, v) in extra {
                meta[k] = v.clone();
            }
        }
        params["_meta"] = meta;
        let name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .map(http::header_value);
        let mut h = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
        if let Some(n) = &name {
            if matches!(method, "tools/call" | "prompts/get" | "resources/read") {
                h.push(("mcp-name", n.as_str()));
            }
        }
        h.extend_from_slice(headers);
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.send("POST", path, &h, Some(&body)).await
    }

    /// A legacy session at `path`: `initialize`, then `initialized`.
    pub async fn session(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        capabilities: Value,
    ) -> String {
        let r = self
            .send(
                "POST",
                path,
                headers,
                Some(
                    &json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": LEGACY, "capabilities": capabilities,
                    "clientInfo": { "name": "t", "version": "0" } } }),
                ),
            )
            .await;
        assert_eq!(r.status, 200, "initialize at {path}");
        let sid = r.header("mcp-session-id").expect("a session id");
        let _ = r.json().await;
        let mut h = vec![
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", LEGACY),
        ];
        h.extend_from_slice(headers);
        let n = self
            .send(
                "POST",
                path,
                &h,
                Some(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })),
            )
            .await;
        assert_eq!(n.status, 202);
        sid
    }

    /// A request in a legacy session at `path`.
    pub async fn legacy(
        &self,
        path: &str,
        sid: &str,
        headers: &[(&str, &str)],
        id: u64,
        method: &str,
        params: Value,
    ) -> Resp {
        let mut h = vec![("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)];
        h.extend_from_slice(headers);
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.send("POST", path, &h, Some(&body)).await
    }

    /// `GET /health`: status and body.
    pub async fn health(&self) -> (u16, Value) {
        let r = self.send("GET", "/health", &[], None).await;
        let status = r.status;
        (status, r.json().await)
    }
}

impl Gateway {
    /// Waits for the next line on its stderr that `wanted` accepts (lines
    /// before it are passed over); panics after [`PATIENCE`].
    pub async fn said(&mut self, wanted: impl Fn(&str) -> bool) -> String {
        let lines = &mut self.lines;
        let found = tokio::time::timeout(PATIENCE, async {
            while let Some(l) = lines.recv().await {
                eprintln!("mcp serve (after start): {l}");
                if wanted(&l) {
                    return Some(l);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(l)) => l,
            Ok(None) => panic!("mcp serve ended before it said the line waited for"),
            Err(_) => panic!("mcp serve did not say the line waited for in time"),
        }
    }

    /// The pids the fixture servers recorded.
    pub fn server_pids(&self) -> Vec<u32> {
        let mut pids = Vec::new();
        for e in std::fs::read_dir(&self.dir).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "pids") {
                pids.extend(common::read_pids(&e.path()));
            }
        }
        pids
    }

    /// SIGTERM; asserts exit 0 and that no server process it recorded
    /// outlived it.
    pub async fn terminate_clean(self) {
        let pids = self.server_pids();
        let end = self.terminate().await;
        assert_eq!(end.code, Some(0), "{}", end.stderr);
        assert!(all_gone(&pids), "{pids:?}");
    }

    /// SIGTERM, then waits for the exit.
    pub async fn terminate(mut self) -> Ended {
        let pid = self.child.id().expect("running") as i32;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("mcp serve did not exit after SIGTERM")
            .unwrap();
        let stderr = self.stderr.await.unwrap_or_default();
        Ended {
            code: status.code(),
            stderr,
        }
    }
}

/// A request to `path` with the usual headers (the HTTP tests' request,
/// at another path).
pub fn request(
    method: &str,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> axum::http::Request<Full<Bytes>> {
    let mut req = http::request(method, addr, headers, body);
    *req.uri_mut() = format!("http://{addr}{path}").parse().unwrap();
    req
}

/// The names of a `tools/list` result's tools.
pub fn tool_names(v: &Value) -> Vec<String> {
    v["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {v}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether none of `pids` is alive (zombies of others do not count).
pub fn all_gone(pids: &[u32]) -> bool {
    pids.iter().all(|p| !common::alive(*p))
}
