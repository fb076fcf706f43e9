//! Remote servers from config files: `url` entries become HTTP clients
//! (headers as secrets), `type: "sse"` stays unsupported with a reason,
//! and a host serves a local and a remote server in one namespace.

use crate::common;
use crate::server_http_support as support;

use std::path::Path;

use conduit_mcp::config_file::ServersFile;
use conduit_mcp::host::{Host, HostConfig};
use serde_json::json;

fn parse(text: &str) -> ServersFile {
    let env = |name: &str| (name == "TOKEN").then(|| "t0k".to_owned());
    ServersFile::parse(text, Path::new("/tmp/project/.mcp.json"), &env).expect("parsed")
}

#[test]
fn url_entries_become_http_clients_with_secret_headers_and_sse_stays_unsupported() {
    let file = parse(
        r#"{ "mcpServers": {
            "remote": { "type": "http", "url": "https://mcp.example.com/mcp",
                        "headers": { "Authorization": "Bearer ${TOKEN}", "X-Team": "core" } },
            "bare": { "url": "http://127.0.0.1:9/mcp" },
            "streamable": { "type": "streamable-http", "url": "http://127.0.0.1:9/mcp",
                            "conduit": { "max_reconnects": 2 } },
            "old": { "type": "sse", "url": "http://127.0.0.1:9/sse" },
            "local": { "command": "echo" }
        } }"#,
    );
    let names: Vec<&str> = file.servers.keys().map(String::as_str).collect();
    assert_eq!(names, ["bare", "local", "remote", "streamable"]);
    let remote = file.servers["remote"]
        .transport
        .as_http()
        .expect("an HTTP server");
    assert_eq!(remote.url, "https://mcp.example.com/mcp");
    let auth = remote
        .headers
        .iter()
        .find(|(k, _)| k == "Authorization")
        .unwrap();
    assert_eq!(auth.1.expose(), "Bearer t0k");
    assert!(file.servers["remote"].validate().is_ok());
    assert_eq!(file.servers["streamable"].get_max_reconnects(), 2);
    assert!(file.servers["local"].transport.as_http().is_none());
    // No header value shows anywhere.
    assert!(!format!("{file:?}").contains("t0k"));
    assert!(!format!("{file:?}").contains("core"));
    assert_eq!(file.unsupported.len(), 1);
    assert_eq!(file.unsupported[0].name, "old");
    assert!(
        file.unsupported[0].reason.contains("deprecated HTTP+SSE"),
        "{}",
        file.unsupported[0]
    );
}

#[test]
fn vs_code_http_entries_are_read_too() {
    let file = parse(
        r#"{ "servers": { "gh": { "type": "http", "url": "https://api.example.com/mcp/",
             "headers": { "Authorization": "Bearer ${env:TOKEN}" } } } }"#,
    );
    let gh = file.servers["gh"].transport.as_http().unwrap();
    assert_eq!(gh.headers[0].1.expose(), "Bearer t0k");
    // A header whose variable is unset names the key and the variable.
    let err = ServersFile::parse(
        r#"{ "servers": { "gh": { "type": "http", "url": "https://x/", "headers": { "A": "${NOPE}" } } } }"#,
        Path::new("/tmp/p/.vscode/mcp.json"),
        &|_| None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("servers.gh.headers.A") && err.contains("NOPE"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_serves_a_local_and_a_remote_server_in_one_namespace() {
    let server = support::start(support::config()).await;
    let text = json!({ "mcpServers": {
        "remote": { "type": "http", "url": server.url },
        "local": { "command": common::fixture() }
    } })
    .to_string();
    let env = |_: &str| None;
    let path = std::env::temp_dir().join(".mcp.json");
    let file = ServersFile::parse(&text, &path, &env).unwrap();
    let host = Host::start(HostConfig::from_file(&file).unwrap())
        .await
        .unwrap();
    let ready = host.ready(support::PATIENCE).await;
    assert_eq!(
        ready.iter().filter(|s| s.is_ready()).count(),
        2,
        "{ready:?}"
    );
    let names: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    assert!(names.iter().any(|n| n == "remote__echo"), "{names:?}");
    assert!(names.iter().any(|n| n == "local__echo"), "{names:?}");
    let r = host
        .call_tool("remote__echo", json!({ "text": "over http" }))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "over http");
    let r = host
        .call_tool("local__echo", json!({ "text": "over stdio" }))
        .await
        .unwrap();
    assert!(r.joined_text().contains("over stdio"), "{r:?}");
    let shutdowns = crate::common::shutdown(host.stop().wait()).await;
    // The local server's process is reaped; the remote one has none.
    for s in shutdowns {
        for r in &s.reports {
            assert!(!common::alive(r.pid), "{}: {} survived", s.name, r.pid);
        }
    }
}
