//! The child servers of the benchmark (this same binary, `--child MODE`).
//!
//! - `floor`: a blocking std program with no JSON parsing. It finds the
//!   method and the `"id":` value with byte scans and answers with fixed
//!   bytes. Every peer (the floor driver, conduit in both eras, rmcp) talks
//!   to it, so the server side costs the same for all of them. It serves
//!   both eras: `initialize` (legacy) and `server/discover` (modern, a
//!   DiscoverResult for 2026-07-28); every other request gets the same
//!   fixed answer in either era (the modern request's `_meta` is skipped
//!   like any other byte). With `--legacy-only` it refuses
//!   `server/discover` with -32601, as a legacy server does.
//! - `conduit-server`: `conduit_mcp::server::StdioServer` with an `echo` tool.
//! - `rmcp-server`: an rmcp stdio server with the same `echo` tool.
//! - `conduit-http`, `rmcp-http`: the same two handlers over Streamable
//!   HTTP (see `http.rs`).

use std::io::{BufRead, BufReader, Read, Write};

/// Size of the big result's text.
pub const BIG_BYTES: usize = 8 * 1024 * 1024;

/// Protocol versions the floor child accepts in `initialize`.
const STATEFUL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Nanoseconds of CLOCK_MONOTONIC, comparable between processes.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The bytes after `key` (skipping spaces), if `key` occurs in `line`.
fn after<'a>(line: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = memchr::memmem::find(line, key)?;
    let rest = &line[at + key.len()..];
    let skip = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
    Some(&rest[skip..])
}

/// The raw JSON value of the top-level `"id":` (a number or a string).
pub fn id_of(line: &[u8]) -> Option<&[u8]> {
    let rest = after(line, b"\"id\":")?;
    if rest.first() == Some(&b'"') {
        let end = memchr::memchr(b'"', &rest[1..])? + 2;
        return Some(&rest[..end]);
    }
    let end = rest
        .iter()
        .position(|b| matches!(b, b',' | b'}' | b' '))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The string value of `"key":"..."` (no escapes expected).
pub fn string_of<'a>(line: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let rest = after(line, key)?;
    let rest = rest.strip_prefix(b"\"")?;
    let end = memchr::memchr(b'"', rest)?;
    Some(&rest[..end])
}

fn respond(out: &mut impl Write, id: &[u8], result: &[u8]) -> std::io::Result<()> {
    out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
    out.write_all(id)?;
    out.write_all(b",\"result\":")?;
    out.write_all(result)?;
    out.write_all(b"}\n")
}

/// The DiscoverResult of the floor child (modern era).
const DISCOVER_RESULT: &[u8] = b"{\"resultType\":\"complete\",\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{\"tools\":{}},\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{\"name\":\"bench-floor\",\"version\":\"1.0.0\"}}}";

/// The floor child. `stamp` (a file path) receives the CLOCK_MONOTONIC time
/// at which stdin reached EOF, just before the process exits. With
/// `legacy_only`, `server/discover` is refused (-32601) instead of answered.
pub fn floor(stamp: Option<String>, legacy_only: bool) -> ! {
    let mut stamp_file = stamp.map(|p| std::fs::File::create(p).expect("stamp file"));
    let stdin = std::io::stdin();
    let mut input = BufReader::with_capacity(256 * 1024, stdin.lock());
    // Raw fd 1: std's stdout is line-buffered and would scan every big
    // write for its last newline (memrchr over 8 MiB).
    // SAFETY: fd 1 is open for the life of the process; ManuallyDrop keeps
    // it from being closed twice.
    let raw = std::mem::ManuallyDrop::new(unsafe {
        <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(1)
    });
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, &*raw);
    let mut big: Vec<u8> = Vec::new();
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let method = string_of(&line, b"\"method\":");
        let id = id_of(&line);
        let res = match (method, id) {
            (Some(m), _) if m.starts_with(b"notifications/") => Ok(()),
            (Some(b"initialize"), Some(id)) => {
                let asked = string_of(&line, b"\"protocolVersion\":").unwrap_or(b"");
                let version = STATEFUL_VERSIONS
                    .iter()
                    .find(|v| v.as_bytes() == asked)
                    .unwrap_or(&STATEFUL_VERSIONS[0]);
                let result = format!(
                    "{{\"protocolVersion\":\"{version}\",\"capabilities\":{{\"tools\":{{}}}},\"serverInfo\":{{\"name\":\"bench-floor\",\"version\":\"1.0.0\"}}}}"
                );
                respond(&mut out, id, result.as_bytes())
            }
            (Some(b"server/discover"), Some(id)) if !legacy_only => {
                respond(&mut out, id, DISCOVER_RESULT)
            }
            (Some(b"server/discover"), Some(id)) => out
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")
                .and_then(|_| out.write_all(id))
                .and_then(|_| {
                    out.write_all(
                        b",\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}\n",
                    )
                }),
            (Some(b"ping"), Some(id)) => respond(&mut out, id, b"{}"),
            (Some(b"tools/call"), Some(id))
                if string_of(&line, b"\"name\":") == Some(b"big".as_slice()) =>
            {
                if big.is_empty() {
                    big.extend_from_slice(b"{\"content\":[{\"type\":\"text\",\"text\":\"");
                    big.resize(big.len() + BIG_BYTES, b'x');
                    big.extend_from_slice(b"\"}]}");
                }
                respond(&mut out, id, &big)
            }
            (Some(_), Some(id)) => respond(
                &mut out,
                id,
                b"{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}",
            ),
            // A response or something without an id: nothing to answer.
            _ => Ok(()),
        };
        // Coalesce: flush only when no further request is already buffered.
        let res = res.and_then(|_| {
            if input.buffer().is_empty() {
                out.flush()
            } else {
                Ok(())
            }
        });
        if res.is_err() {
            break;
        }
    }
    let _ = out.flush();
    // Free what the child holds first (its exit would otherwise unmap it
    // after the stamp); the stamp marks the start of `_exit`.
    drop(out);
    drop(input);
    drop(big);
    drop(line);
    if let Some(f) = stamp_file.as_mut() {
        let now = mono_ns();
        let _ = f.write_all(now.to_string().as_bytes());
    }
    // SAFETY: ends the process at once (no destructors needed).
    unsafe { libc::_exit(0) }
}

/// Reads a stamp written by [`floor`].
pub fn read_stamp(path: &std::path::Path) -> Option<u64> {
    let mut s = String::new();
    std::fs::File::open(path)
        .ok()?
        .read_to_string(&mut s)
        .ok()?;
    s.trim().parse().ok()
}

/// `conduit-server`: our server transport with an `echo` tool.
pub mod conduit_server {
    use conduit_mcp::jsonrpc::Request;
    use conduit_mcp::protocol::Implementation;
    use conduit_mcp::server::{Handler, HandlerError, RequestContext, ServerConfig, StdioServer};
    use serde_json::{json, Value};

    /// The `echo` tool (also served over HTTP by `conduit-http`).
    pub struct Echo;

    impl Handler for Echo {
        async fn handle_request(
            &self,
            req: Request,
            _ctx: RequestContext,
        ) -> Result<Value, HandlerError> {
            match req.method.as_str() {
                "tools/list" => Ok(json!({ "tools": [super::echo_tool()] })),
                "tools/call" => {
                    let params = req.params.unwrap_or(Value::Null);
                    if params.get("name").and_then(Value::as_str) != Some("echo") {
                        return Err(HandlerError::InvalidParams("unknown tool".into()));
                    }
                    let text = params
                        .get("arguments")
                        .and_then(|a| a.get("text"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    Ok(json!({ "content": [{ "type": "text", "text": text }] }))
                }
                m => Err(HandlerError::MethodNotFound(m.to_owned())),
            }
        }
    }

    pub fn run() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let config = ServerConfig::new(Implementation::new("bench-conduit", "1.0.0"))
                .capabilities(json!({ "tools": {} }));
            if let Err(e) = StdioServer::new(config).serve(Echo).await {
                eprintln!("conduit server failed: {e}");
            }
        });
    }
}

/// The `echo` tool's definition (both servers list the same).
pub fn echo_tool() -> serde_json::Value {
    serde_json::json!({
        "name": "echo",
        "description": "Returns its text.",
        "inputSchema": { "type": "object", "properties": { "text": { "type": "string" } } }
    })
}

/// `rmcp-server`: an rmcp stdio server with the same `echo` tool.
pub mod rmcp_server {
    use std::sync::Arc;

    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    };
    use rmcp::service::RequestContext;
    use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

    /// The `echo` tool (also served over HTTP by `rmcp-http`).
    #[derive(Clone)]
    pub struct Echo {
        tool: Tool,
    }

    /// The handler, its tool listed with the same schema as ours.
    pub fn handler() -> Echo {
        let schema = match super::echo_tool()["inputSchema"].clone() {
            serde_json::Value::Object(m) => m,
            _ => Default::default(),
        };
        Echo {
            tool: Tool::new("echo", "Returns its text.", Arc::new(schema)),
        }
    }

    impl ServerHandler for Echo {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }

        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, ErrorData> {
            Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            if request.name != "echo" {
                return Err(ErrorData::invalid_params("unknown tool", None));
            }
            let text = request
                .arguments
                .as_ref()
                .and_then(|a| a.get("text"))
                .and_then(|t| t.as_str())
                .unwrap_or_default()
                .to_owned();
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
        }
    }

    pub fn run() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            match handler().serve(rmcp::transport::io::stdio_pipes()).await {
                Ok(service) => {
                    let _ = service.waiting().await;
                }
                Err(e) => eprintln!("rmcp server failed: {e}"),
            }
        });
    }
}
