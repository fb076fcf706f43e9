//! A fuzz-style loop: 100,000 generated lines (random bytes, mutated and
//! truncated messages, duplicate ids, cancels for unknown ids, responses to
//! requests never sent, valid requests) fed to one server session. No
//! panic, no hang, at most one reply per request id, at most one
//! id-less error per line, and bounded memory.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use conduit_mcp::jsonrpc::Request;
use conduit_mcp::protocol::Implementation;
use conduit_mcp::server::{Handler, HandlerError, RequestContext, ServeEnd, ServerConfig};
use serde_json::Value;

mod server_support;

const LINES: usize = 100_000;

struct Echo;

impl Handler for Echo {
    async fn handle_request(
        &self,
        req: Request,
        _ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        Ok(req.params.unwrap_or(Value::Null))
    }
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// One generated line; `i` makes request ids unique unless a duplicate is
/// wanted.
fn line(rng: &mut Rng, i: usize) -> Vec<u8> {
    let templates: [&str; 10] = [
        r#"{"jsonrpc":"2.0","id":ID,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":ID,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":ID,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":ID}}"#,
        r#"{"jsonrpc":"2.0","id":ID,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":ID,"error":{"code":-1,"message":"never asked"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"[{"jsonrpc":"2.0","id":ID,"method":"ping"}]"#,
        r#"{"jsonrpc":"1.0","id":ID,"method":"ping"}"#,
    ];
    match rng.below(5) {
        0 => (0..rng.below(120))
            .map(|_| rng.below(256) as u8)
            .filter(|b| *b != b'\n')
            .collect(),
        _ => {
            let t = templates[rng.below(templates.len() as u64) as usize];
            let id = match rng.below(10) {
                0 => format!("\"{}\"", i), // string id
                1 => "7".to_owned(),       // frequent duplicate
                2 => "null".to_owned(),
                _ => i.to_string(),
            };
            let mut b = t.replace("ID", &id).into_bytes();
            match rng.below(6) {
                0 => b.truncate(rng.below(b.len() as u64) as usize), // partial JSON
                1 => {
                    let k = rng.below(b.len() as u64) as usize; // one flipped byte
                    b[k] = (rng.below(255) + 1) as u8;
                    if b[k] == b'\n' {
                        b[k] = b' ';
                    }
                }
                _ => {}
            }
            b
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_hundred_thousand_generated_lines() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let input: Vec<Vec<u8>> = (0..LINES).map(|i| line(&mut rng, i)).collect();
    let hwm_before = vm_hwm_kib();
    let t = Instant::now();
    let config = ServerConfig::new(Implementation::new("fuzz", "0")).max_message_bytes(4096);
    let (replies, end) = tokio::time::timeout(
        Duration::from_secs(120),
        server_support::serve_lines(config, Echo, input),
    )
    .await
    .expect("no hang");
    assert_eq!(end, ServeEnd::Eof);
    let took = t.elapsed();
    assert!(
        replies.len() <= LINES,
        "{} replies to {LINES} lines",
        replies.len()
    );
    let mut per_id: HashMap<String, usize> = HashMap::new();
    let mut null_ids = 0;
    for r in &replies {
        let v: Value = serde_json::from_str(r).expect("every reply is JSON");
        assert_eq!(v["jsonrpc"], "2.0");
        assert!(v.get("result").is_some() != v.get("error").is_some(), "{r}");
        match &v["id"] {
            Value::Null => null_ids += 1,
            id => *per_id.entry(id.to_string()).or_default() += 1,
        }
    }
    // Ids are unique per line except the deliberate duplicate `7` (and
    // "i"/i pairs, which are different ids): no id is answered twice, bar
    // the duplicate, whose refusals are one per line that carried it.
    for (id, n) in &per_id {
        if id != "7" {
            assert_eq!(*n, 1, "id {id} answered {n} times");
        }
    }
    let grew = vm_hwm_kib().saturating_sub(hwm_before) / 1024;
    println!(
        "FUZZ | {LINES} lines in {took:.2?}: {} replies ({} with id null), peak RSS growth {grew} MiB",
        replies.len(),
        null_ids
    );
    assert!(grew < 64, "memory grew by {grew} MiB");
}
