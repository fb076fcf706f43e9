//! A host of the real third-party servers CI installs (server-everything
//! on Node, a Python `mcp` server, mcp-server-time), the example server and
//! the fixture, started from a real `.mcp.json`: one namespace, a tool
//! called on each, a crash of one while the others keep serving, a real
//! `resources/list_changed`, and no process left.
//!
//! The peers come from `.ci/install-client-peers.sh`.
//!
//! The tests are `#[ignore]`d, so `cargo test` counts them as ignored
//! where the peers are not installed; `.ci/run` installs them and runs
//! these with `-- --ignored`, where a missing peer fails the test.

use crate::common;
use crate::example_bin;
use crate::host_support;
use crate::peers;

use conduit_mcp::config_file::ServersFile;
use conduit_mcp::host::{Host, HostError, HostEvent};
use conduit_mcp::LifecycleEvent;
use host_support::{assert_all_gone, listed, until};
use peers::{everything_js, peers, py_server_script, time_server, venv_python};
use serde_json::{json, Value};

/// A `.mcp.json` as Claude Code keeps it, with `${PEERS}` for the peers'
/// folder (expanded from the environment given to the parser).
fn mcp_json() -> String {
    let demo = example_bin::example_bin("server").expect("the server example builds");
    format!(
        r#"{{
  // Five servers, one namespace.
  "mcpServers": {{
    "fixture": {{
      "command": "{fixture}",
      "conduit": {{ "stderr": "discard", "stdin_grace_ms": 500, "term_grace_ms": 500 }}
    }},
    "demo": {{
      "command": "{demo}",
      "env": {{ "RUST_LOG": "warn" }},
      "conduit": {{ "stderr": "discard" }}
    }},
    "everything": {{
      "command": "node",
      "args": ["${{PEERS}}/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"],
      "conduit": {{ "stderr": "discard" }}
    }},
    "py": {{
      "type": "stdio",
      "command": "${{PEERS}}/venv/bin/python",
      "args": ["{script}"],
      "conduit": {{ "stderr": "discard", "backoff": {{ "initial_ms": 50 }} }}
    }},
    "time": {{
      "command": "${{PEERS}}/venv/bin/mcp-server-time",
      "args": ["--local-timezone", "${{TZ_FOR_TEST:-UTC}}"],
      "conduit": {{ "stderr": "discard" }}
    }},
    "remote": {{ "type": "sse", "url": "https://example.invalid/sse" }},
  }},
}}"#,
        fixture = common::fixture(),
        demo = demo.display(),
        script = py_server_script().display(),
    )
}

fn text(r: &conduit_mcp::protocol::CallToolResult) -> String {
    r.joined_text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the interop peers (bash .ci/install-peers.sh, bash .ci/install-client-peers.sh); CI runs it with --ignored"]
async fn a_host_of_the_real_servers_serves_one_namespace_and_survives_a_crash() {
    need!(
        everything_js(),
        "server-everything (or node) at target/peers/node"
    );
    need!(venv_python(), "the Python mcp package at target/peers/venv");
    need!(time_server(), "mcp-server-time at target/peers/venv");
    common::trace();
    let dir = common::tempdir("host-interop");
    let path = dir.join(".mcp.json");
    std::fs::write(&path, mcp_json()).unwrap();
    let peers_dir = peers().display().to_string();
    let env = move |k: &str| (k == "PEERS").then(|| peers_dir.clone());
    let file = ServersFile::parse(&std::fs::read_to_string(&path).unwrap(), &path, &env).unwrap();
    assert_eq!(file.unsupported.len(), 1);
    assert_eq!(file.unsupported[0].name, "remote");
    assert_eq!(file.servers.len(), 5);

    let (opts, mut events) = conduit_mcp::host::HostOptions::new().subscribe();
    let config = conduit_mcp::host::HostConfig::from_file(&file).unwrap();
    let host = Host::start_with(config, opts).await.unwrap();
    for s in host.servers() {
        assert!(s.is_ready(), "{s:?}");
        eprintln!(
            "{}: {:?} {} tools, ready after {:?}",
            s.name,
            s.session().unwrap().era,
            s.tools,
            s.ready_after.unwrap()
        );
    }
    let names: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    for want in [
        "fixture__add",
        "demo__echo",
        "everything__get-sum",
        "py__add",
        "time__get_current_time",
    ] {
        assert!(
            names.contains(&want.to_owned()),
            "{want} missing: {names:?}"
        );
    }
    assert!(host.collisions().is_empty(), "{:?}", host.collisions());

    // A tool on each.
    let calls: [(&str, Value, &str); 5] = [
        ("fixture__add", json!({"a": 2, "b": 3}), "5"),
        ("demo__echo", json!({"text": "via demo"}), "via demo"),
        ("everything__get-sum", json!({"a": 2, "b": 3}), "5"),
        ("py__add", json!({"a": 2, "b": 3}), "5"),
        ("time__get_current_time", json!({"timezone": "UTC"}), "UTC"),
    ];
    for (tool, args, want) in &calls {
        let r = host.call_tool(tool, args.clone()).await.unwrap();
        assert!(!r.is_error(), "{tool}: {r:?}");
        assert!(text(&r).contains(want), "{tool}: {}", text(&r));
    }

    // A real list_changed: server-everything registers a session resource
    // (and says so) when it gzips something.
    let before = host.server("everything").unwrap().resources;
    host.call_tool(
        "everything__gzip-file-as-resource",
        json!({"name": "hello.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}),
    )
    .await
    .unwrap();
    until(&mut events, |e| {
        matches!(e, HostEvent::Listed { server, resources, .. } if server == "everything" && *resources == before + 1)
    })
    .await;
    let gz = host
        .resources()
        .into_iter()
        .find(|r| r.uri.ends_with("hello.gz"))
        .expect("the new resource is listed");
    let read = host.read_resource(&gz.uri).await.unwrap();
    let read = serde_json::to_value(&read).unwrap();
    assert!(read["contents"][0]["blob"].is_string(), "{read}");

    // The Python server crashes: it is unavailable while it restarts, and
    // every other server keeps serving.
    let py_pid = host.client("py").unwrap().pid().unwrap();
    common::kill9(py_pid);
    until(&mut events, |e| {
        matches!(e, HostEvent::Lifecycle { server, event: LifecycleEvent::Closed { .. } } if server == "py")
    })
    .await;
    match host.call_tool("py__add", json!({"a": 1, "b": 1})).await {
        Err(HostError::Unavailable { server, state }) => {
            assert_eq!(server, "py");
            assert!(state.contains("restarting"), "{state}");
        }
        other => panic!("py__add while py restarts: {other:?}"),
    }
    for (tool, args, want) in calls.iter().filter(|(t, ..)| !t.starts_with("py__")) {
        let r = host.call_tool(tool, args.clone()).await.unwrap();
        assert!(
            text(&r).contains(want),
            "{tool} during py's restart: {}",
            text(&r)
        );
    }
    listed(&mut events, "py").await;
    let r = host
        .call_tool("py__add", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    assert_eq!(text(&r), "42");
    assert!(!common::alive(py_pid));

    let pids: Vec<u32> = host
        .servers()
        .iter()
        .filter_map(|s| s.session().and_then(|s| s.pid))
        .collect();
    assert_eq!(pids.len(), 5);
    assert_all_gone(&crate::common::shutdown(host.stop().wait()).await);
    for pid in pids {
        assert!(!common::alive(pid), "{pid} survived the host");
    }
    let _ = std::fs::remove_dir_all(dir);
}
