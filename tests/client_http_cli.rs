//! `mcp --url URL [--header K=V]`: every subcommand against a Streamable
//! HTTP server, with the output and exit codes of `-- COMMAND`.

#[path = "server_http_support/mod.rs"]
mod support;

use std::process::Stdio;

use conduit_mcp::Secret;
use serde_json::Value;
use support::{config, start, PATIENCE};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "not one JSON document ({e}): {}\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// `json` written as `.mcp.json` in a fresh directory named after `tag`;
/// returns the directory (to remove) and the file's path.
fn config_file(tag: &str, json: &Value) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("conduit-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(".mcp.json");
    std::fs::write(&path, json.to_string()).unwrap();
    let path = path.to_str().unwrap().to_owned();
    (dir, path)
}

/// The `name`s of the items under `key` of a printed list.
fn names(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn mcp(args: &[&str]) -> Out {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"));
    cmd.args(args).stdin(Stdio::null()).kill_on_drop(true);
    let out = tokio::time::timeout(PATIENCE * 3, cmd.output())
        .await
        .expect("mcp finished in time")
        .expect("mcp ran");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_subcommand_works_over_a_url_with_the_exit_codes_of_stdio() {
    let server = start(config()).await;
    let url = server.url.as_str();
    let out = mcp(&["discover", "--url", url]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["era"], "modern");
    let out = mcp(&["--era", "legacy", "tools", "--url", url]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let tools = out.json();
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "echo"),
        "{tools}"
    );
    let out = mcp(&["call", "echo", r#"{"text":"hi"}"#, "--url", url]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["content"][0]["text"], "hi");
    let out = mcp(&["request", "prompts/list", "--url", url]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["prompts"][0]["name"], "greet");
    // A JSON-RPC error from the server: 1, the error printed.
    let out = mcp(&["request", "no/such/method", "--url", url]).await;
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["code"], -32601);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_reach_the_server_and_never_show_and_failures_exit_3() {
    let server = start(config().bearer_token(Secret::new("s3cret-t0ken"))).await;
    let url = server.url.as_str();
    let out = mcp(&[
        "tools",
        "--url",
        url,
        "--header",
        "Authorization=Bearer s3cret-t0ken",
        "--verbose",
    ])
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("s3cret-t0ken"), "{}", out.stderr);
    // Without it the server refuses: not ready, 3; the token never shown.
    let out = mcp(&["tools", "--url", url]).await;
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("401"), "{}", out.stderr);
    // Nothing listens there: 3.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = mcp(&[
        "tools",
        "--url",
        &format!("http://{addr}/mcp"),
        "--timeout-ms",
        "5000",
    ])
    .await;
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    // Usage errors: 2.
    let out = mcp(&["tools", "--url", "ftp://x/"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    let out = mcp(&["tools", "--header", "A=b", "--", "true"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    let out = mcp(&["tools", "--url", url, "--", "true"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_with_a_config_file_serves_url_entries_and_says_what_it_skipped() {
    let server = start(config()).await;
    let (dir, file) = config_file(
        "http-cli",
        &serde_json::json!({ "mcpServers": {
            "remote": { "type": "http", "url": server.url },
            "old": { "type": "sse", "url": "http://127.0.0.1:9/sse" },
            "off": { "command": "x", "disabled": true }
        } }),
    );
    let file = file.as_str();
    let out = mcp(&["tools", "--config", file, "--verbose"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let names = names(&out.json(), "tools");
    assert!(names.iter().any(|n| n == "remote__echo"), "{names:?}");
    let said = format!("remote: Streamable HTTP at {}", server.url);
    assert!(out.stderr.contains(&said), "{}", out.stderr);
    assert!(
        out.stderr.contains("skipped old: type \"sse\""),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("skipped off: disabled"),
        "{}",
        out.stderr
    );
    let out = mcp(&[
        "call",
        "remote__echo",
        r#"{"text":"via file"}"#,
        "--config",
        file,
    ])
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["content"][0]["text"], "via file");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_read_prompts_and_prompt_over_a_url_and_namespaced_with_a_config_file() {
    let server = start(config()).await;
    let url = server.url.as_str();
    for era in ["modern", "legacy"] {
        let out = mcp(&["--era", era, "resources", "--url", url]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(out.json()["resources"][0]["uri"], "test://static", "{era}");
        let out = mcp(&["--era", era, "read", "test://static", "--url", url]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(out.json()["contents"][0]["text"], "static text", "{era}");
        let out = mcp(&["--era", era, "prompts", "--url", url]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(out.json()["prompts"][0]["name"], "greet", "{era}");
        let out = mcp(&[
            "--era",
            era,
            "prompt",
            "greet",
            r#"{"name":"Ann"}"#,
            "--url",
            url,
        ])
        .await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(
            out.json()["messages"][0]["content"]["text"],
            "Hello Ann",
            "{era}"
        );
        // A server error: 1, as for `call`.
        let out = mcp(&["--era", era, "prompt", "nope", "--url", url]).await;
        assert_eq!(out.code, 1, "{era}: {}\n{}", out.stdout, out.stderr);
    }
    // Through a config file: namespaced, with the server of each item.
    let (dir, file) = config_file(
        "http-cli-ns",
        &serde_json::json!({ "mcpServers": {
            "remote": { "type": "http", "url": server.url },
            "other": { "url": server.url }
        } }),
    );
    let file = file.as_str();
    let out = mcp(&["prompts", "--config", file]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let names = names(&out.json(), "prompts");
    assert!(
        names.iter().any(|n| n == "remote__greet") && names.iter().any(|n| n == "other__greet"),
        "{names:?}"
    );
    let out = mcp(&[
        "prompt",
        "other__greet",
        r#"{"name":"Bo"}"#,
        "--config",
        file,
    ])
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["messages"][0]["content"]["text"], "Hello Bo");
    let out = mcp(&["resources", "--config", file]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_eq!(v["resources"][0]["uri"], "test://static", "{v}");
    assert!(v["resources"][0]["server"].is_string(), "{v}");
    let out = mcp(&["read", "test://static", "--config", file]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["contents"][0]["text"], "static text");
    let out = mcp(&["prompt", "nobody__greet", "--config", file]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    let _ = std::fs::remove_dir_all(dir);
}
