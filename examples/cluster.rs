//! MCP servers on node A, called from node B, over `ractor_cluster`
//! (feature `cluster`). No Node or Python needed: the MCP server is this
//! program itself in `--serve` mode.
//!
//! ```text
//! cargo run --features cluster --example cluster                 # both nodes: A as a child process, B here
//! cargo run --features cluster --example cluster -- --node a 4697   # node A alone (loopback, port 4697)
//! cargo run --features cluster --example cluster -- --node b 127.0.0.1:4697
//! ```
//!
//! With both nodes, node B measures a call's latency and throughput
//! through node A against the same server run locally, then SIGKILLs node
//! A with 20 calls in flight: they fail at once with "node lost", and node
//! A's server dies with it.
//!
//! In a crate of your own, this file as `src/main.rs` builds with these
//! dependencies (`.ci/examples-outside.sh` checks it):
//!
//! ```toml
//! [dependencies]
//! conduit-mcp = { version = "0.1", features = ["cluster"] }
//! ractor = "0.16"
//! ractor_cluster = "0.16"
//! tokio = { version = "1", features = ["full"] }
//! serde_json = "1"
//! ```

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use conduit_mcp::cluster::{
    Gateway, GatewayConfig, NodeConfig, RemoteError, RemoteOptions, RemoteServers,
    RemoteServersConfig,
};
use conduit_mcp::jsonrpc::Request;
use conduit_mcp::protocol::Implementation;
use conduit_mcp::server::{Handler, HandlerError, RequestContext, ServerConfig, StdioServer};
use conduit_mcp::{Client, ClientConfig, RequestOptions};
use ractor::Actor;
use serde_json::{json, Value};

/// The cluster's shared secret. A real one is long and random (see the
/// cluster module's "Security model"), and never in the source.
const COOKIE: &str = "conduit-mcp-example-cookie";
const LOOPBACK: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["--serve"] => serve().await,
        ["--node", "a", port] => node_a(port.parse()?).await,
        ["--node", "b", addr] => node_b(addr).await.map(|_| ()),
        [] => both().await,
        _ => Err("usage: cluster [--node a PORT | --node b HOST:PORT]".into()),
    }
}

/// The MCP server: `echo`, `sleep {ms}`, and an `echo` tool.
async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    struct Echo;
    impl Handler for Echo {
        async fn handle_request(
            &self,
            req: Request,
            _: RequestContext,
        ) -> Result<Value, HandlerError> {
            match req.method.as_str() {
                "echo" => Ok(req.params.unwrap_or(Value::Null)),
                "sleep" => {
                    let ms = req
                        .params
                        .as_ref()
                        .and_then(|p| p["ms"].as_u64())
                        .unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(json!({ "slept": ms }))
                }
                "tools/list" => Ok(json!({ "tools": [{
                    "name": "echo", "inputSchema": { "type": "object" }
                }] })),
                "tools/call" => Ok(json!({ "content": [{
                    "type": "text", "text": req.params.unwrap_or_default()["arguments"].to_string()
                }] })),
                m => Err(HandlerError::MethodNotFound(m.to_owned())),
            }
        }
    }
    let config = ServerConfig::new(Implementation::new("cluster-example", "1.0.0"))
        .capabilities(json!({ "tools": {} }));
    StdioServer::new(config).serve(Echo).await?;
    Ok(())
}

/// A client of this program in `--serve` mode.
async fn local_server() -> Result<Client, Box<dyn std::error::Error>> {
    let me = std::env::current_exe()?;
    let client = Client::start(ClientConfig::new(me.to_string_lossy()).arg("--serve")).await?;
    client.ready(Duration::from_secs(10)).await?;
    Ok(client)
}

/// Node A: a node server on loopback, the server, a gateway exposing it
/// with the methods other nodes may call.
async fn node_a(port: u16) -> Result<(), Box<dyn std::error::Error>> {
    let node = NodeConfig::new("node-a", "localhost", COOKIE)
        .port(port)
        .build()?;
    let (_node, _) = Actor::spawn(None, node, ()).await?;
    let server = local_server().await?;
    let pid = server.pid().unwrap_or(0);
    let _gateway = Gateway::start(
        GatewayConfig::new().server_allowing(
            "echo",
            server,
            ["echo", "sleep", "tools/list", "tools/call"],
        ),
        None,
    )
    .await?;
    println!("READY {pid}");
    std::future::pending::<()>().await;
    Ok(())
}

/// Node B: connects to `addr`, finds the server (on node-a only), calls
/// it.
async fn node_b(addr: &str) -> Result<RemoteServers, Box<dyn std::error::Error>> {
    let node = NodeConfig::new("node-b", "localhost", COOKIE).build()?;
    let (node, _) = Actor::spawn(None, node, ()).await?;
    ractor_cluster::client_connect(&node, addr).await?;
    let servers = RemoteServers::start_with(
        RemoteServersConfig::new()
            .node_server(node)
            .trust("echo", ["node-a@localhost"]),
    )
    .await?;
    let echo = servers.wait_for("echo", Duration::from_secs(20)).await?;
    let tools = echo.list_tools(Duration::from_secs(10)).await?;
    println!(
        "node B sees `echo` on node A, tools: {:?}",
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    let r = echo
        .call_tool("echo", json!({ "from": "node B" }), RemoteOptions::new())
        .await?;
    println!("tools/call through node A: {}", r.joined_text());
    Ok(servers)
}

/// Both nodes: node A as a child process, node B here.
async fn both() -> Result<(), Box<dyn std::error::Error>> {
    let port = std::net::TcpListener::bind((LOOPBACK, 0))?
        .local_addr()?
        .port();
    let mut a = Command::new(std::env::current_exe()?)
        .args(["--node", "a", &port.to_string()])
        .stdout(Stdio::piped())
        .spawn()?;
    let mut out =
        std::io::BufRead::lines(std::io::BufReader::new(a.stdout.take().ok_or("stdout")?));
    let a_server: u32 = loop {
        match out.next() {
            Some(Ok(line)) if line.starts_with("READY ") => break line[6..].trim().parse()?,
            Some(_) => continue,
            None => return Err("node A ended before it was ready".into()),
        }
    };
    let servers = node_b(&format!("127.0.0.1:{port}")).await?;
    let remote = servers.find("echo")?;
    let local = local_server().await?;

    // The same call, the same server program: through node A, and local.
    const N: usize = 2000;
    let params = || Some(json!({ "text": "hello" }));
    let mut lat_remote = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        remote
            .request("echo", params(), RemoteOptions::new())
            .await?;
        lat_remote.push(t.elapsed());
    }
    let mut lat_local = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        local.request("echo", params()).await?;
        lat_local.push(t.elapsed());
    }
    let p50 = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e6
    };
    let window = Duration::from_secs(1);
    let r0 = remote.clone();
    let rps_remote = throughput(window, move || {
        let r = r0.clone();
        async move {
            r.request("echo", params(), RemoteOptions::new())
                .await
                .is_ok()
        }
    })
    .await;
    let l0 = local.clone();
    let rps_local = throughput(window, move || {
        let l = l0.clone();
        async move {
            l.request_with("echo", params(), RequestOptions::new())
                .await
                .is_ok()
        }
    })
    .await;
    let (a50, l50) = (p50(&mut lat_remote), p50(&mut lat_local));
    println!();
    println!("| call `echo`, same server program | latency p50 (us) | req/s, 64 in flight |");
    println!("|---|---|---|");
    println!("| local (`Client`)                 | {l50:.1} | {rps_local:.0} |");
    println!("| node B -> node A -> server       | {a50:.1} | {rps_remote:.0} |");
    println!(
        "| ratio                            | {:.2} x | {:.2} x |",
        a50 / l50,
        rps_remote / rps_local
    );
    println!();

    // Node A goes away with 20 calls in flight.
    let calls: Vec<_> = (0..20)
        .map(|_| {
            let r = remote.clone();
            let opts = RemoteOptions::new().timeout(Duration::from_secs(120));
            tokio::spawn(async move {
                r.request("sleep", Some(json!({ "ms": 60_000 })), opts)
                    .await
            })
        })
        .collect();
    // Let the calls reach node A (a demonstration; the tests wait on the
    // server's own log instead).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed = Instant::now();
    a.kill()?;
    a.wait()?;
    let mut lost = 0;
    for c in calls {
        if let Err(RemoteError::NodeLost { .. }) = c.await? {
            lost += 1;
        }
    }
    println!(
        "node A SIGKILLed: {lost}/20 calls in flight failed with node-lost, the last {:.1} ms after the kill",
        killed.elapsed().as_secs_f64() * 1e3
    );
    let t = Instant::now();
    while std::path::Path::new(&format!("/proc/{a_server}")).exists()
        && t.elapsed() < Duration::from_secs(5)
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!(
        "node A's server (pid {a_server}) gone with node A: {}",
        !std::path::Path::new(&format!("/proc/{a_server}")).exists()
    );
    servers.stop();
    local.stop().wait().await;
    Ok(())
}

/// Calls completed per second with 64 callers for `window`.
async fn throughput<F, Fut>(window: Duration, call: F) -> f64
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send + 'static,
{
    let start = Instant::now();
    let end = start + window;
    let workers: Vec<_> = (0..64)
        .map(|_| {
            let call = call.clone();
            tokio::spawn(async move {
                let mut done = 0u64;
                while Instant::now() < end {
                    if call().await {
                        done += 1;
                    }
                }
                done
            })
        })
        .collect();
    let mut total = 0;
    for w in workers {
        total += w.await.unwrap_or(0);
    }
    total as f64 / start.elapsed().as_secs_f64()
}
