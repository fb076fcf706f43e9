//! The host row: echo calls to one server through a `Host` and the same
//! calls straight to that server's client, in turn, beside a server that
//! asks to be listed again after every listing (the test fixture,
//! `--list-changed-on-list`, with 5,000 tools). The figure is their ratio
//! in one run: what the host's own work (its lock, its namespace, the
//! re-listing beside) adds to a call, whatever the machine's load.

use std::time::{Duration, Instant};

use conduit_mcp::host::{Host, HostConfig};
use conduit_mcp::{ClientConfig, RequestOptions, StderrMode};
use serde_json::json;

use super::{Plan, Results};

fn fixture(args: &[&str]) -> ClientConfig {
    ClientConfig::new(env!("CARGO_BIN_EXE_conduit-mcp-fixture"))
        .args(args.iter().copied())
        .stderr(StderrMode::Discard)
}

/// One round of the row, for `plan.tput` of calls each way.
pub async fn run(plan: &Plan, r: &mut Results) -> Result<(), String> {
    let config = HostConfig::new()
        .server(
            "loop",
            fixture(&["--tools", "5000", "--list-changed-on-list"]),
        )
        .server("quiet", fixture(&[]));
    let host = Host::start(config).await.map_err(|e| e.to_string())?;
    let _unread = host.events();
    let quiet = host.client("quiet").ok_or("no quiet server")?;
    let args = json!({ "text": "x" });
    let (mut via_host, mut direct) = (Duration::ZERO, Duration::ZERO);
    let start = Instant::now();
    while start.elapsed() < plan.tput {
        let t = Instant::now();
        host.call_tool("quiet__echo", args.clone())
            .await
            .map_err(|e| e.to_string())?;
        via_host += t.elapsed();
        let t = Instant::now();
        quiet
            .call_tool("echo", args.clone(), RequestOptions::new())
            .await
            .map_err(|e| e.to_string())?;
        direct += t.elapsed();
    }
    host.stop().wait().await;
    r.add(
        "conduit",
        "host_over_direct",
        via_host.as_secs_f64() / direct.as_secs_f64(),
    );
    Ok(())
}
