//! `mcp --url URL [--header K=V]`: every subcommand against a Streamable
//! HTTP server, with the output and exit codes of `-- COMMAND`; and when
//! things go wrong, as a user meets them (a server that never answers, one
//! that answers a web page or a redirect, nothing listening, `--header`
//! values that must never be echoed): each ends quickly, with the exit
//! code of `-- COMMAND` and a message that names the problem.

use crate::client_http_support as http_support;
use crate::server_http_support as support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use http_support::{Fake, Recorder};
use serde_json::Value;
use support::{config, start, start_with, with_token, PATIENCE};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
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

/// Runs `mcp ARGS...` (reaped: killed on drop, waited for otherwise).
async fn mcp(args: &[&str]) -> Out {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"));
    cmd.args(args)
        .stdin(Stdio::null())
        // Never the user's own token file.
        .env(
            "MCP_TOKEN_FILE",
            std::env::temp_dir().join(format!("conduit-cli-failures-{}.json", std::process::id())),
        )
        .kill_on_drop(true);
    let out = tokio::time::timeout(PATIENCE * 3, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("mcp {args:?} did not finish within {:?}", PATIENCE * 3))
        .expect("mcp ran");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
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
    let server = start_with(config(), |s| with_token(s, "s3cret-t0ken")).await;
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

/// A URL where connections are accepted and then nothing is ever said.
async fn mute_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            held.push(conn);
        }
    });
    (url, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_ends_with_exit_3_within_the_timeout() {
    let (url, task) = mute_server().await;
    let out = mcp(&["tools", "--url", &url, "--timeout-ms", "2000"]).await;
    task.abort();
    eprintln!(
        "figure: mute server: exit {} after {:?}",
        out.code, out.elapsed
    );
    // Ended by its timeout: `mcp` itself is given 30 s.
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("2000 ms") || out.stderr.contains("2s"),
        "the message says how long it waited: {}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_answers_a_web_page_fails_at_once_saying_it_is_not_json() {
    let page = |_: &Value, _: Option<&str>| -> http_support::Answer {
        (
            200,
            vec![("content-type", "text/html".to_owned())],
            "<html><body>Welcome</body></html>".to_owned(),
        )
    };
    let fake = Fake::start(page).await;
    // The default timeout (60 s) is not what ends it: `mcp` itself is
    // given 30 s.
    let out = mcp(&["tools", "--url", &fake.url]).await;
    eprintln!(
        "figure: web page: exit {} after {:?}",
        out.code, out.elapsed
    );
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("not JSON"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_listening_is_reported_as_unreachable_not_as_an_authorization_failure() {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{addr}/mcp");
    let out = mcp(&["tools", "--url", &url]).await;
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        !out.stderr.contains("authoriz"),
        "nothing asked for authorization: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&url) && out.stderr.contains("refused"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_rpc_error_is_printed_as_the_server_sent_it_in_both_eras() {
    let server = start(config()).await;
    let url = server.url.as_str();
    let mut printed = Vec::new();
    for era in ["legacy", "modern"] {
        let out = mcp(&["--era", era, "call", "no_such_tool", "--url", url]).await;
        assert_eq!(out.code, 1, "{era}: {}\n{}", out.stdout, out.stderr);
        printed.push(out.json());
    }
    // 2025-11-25 carries it in a 200, 2026-07-28 in a 400: the same error.
    assert_eq!(printed[0], printed[1]);
    let message = printed[1]["message"].as_str().unwrap_or_default();
    assert!(!message.starts_with("HTTP "), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_values_are_never_echoed_and_keep_their_equals_signs_and_spaces() {
    // curl's `K: V` form, with and without a `=` inside the token: refused
    // (exit 2) without the token in the message.
    for bad in [
        "Authorization: Bearer s3cret-t0ken",
        "Authorization: Bearer s3cret-t0ken==",
        "Authorization Bearer=s3cret-t0ken",
    ] {
        let out = mcp(&["tools", "--url", "http://127.0.0.1:9/mcp", "--header", bad]).await;
        assert_eq!(out.code, 2, "{bad}: {}", out.stderr);
        assert!(out.stderr.contains("--header"), "{}", out.stderr);
        assert!(!out.stderr.contains("s3cret"), "{bad}: {}", out.stderr);
    }
    // A value keeps everything after the first `=`.
    let seen = Recorder::new();
    let server = start_with(config(), |s| seen.install(s)).await;
    let out = mcp(&[
        "tools",
        "--url",
        &server.url,
        "--header",
        "X-Api-Key=a=b c==",
    ])
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let post = seen
        .wait_for(PATIENCE, |s| s.method == "POST")
        .await
        .expect("a POST");
    assert_eq!(post.header("x-api-key"), Some("a=b c=="));
    assert_eq!(
        out.json()["tools"].as_array().map(Vec::is_empty),
        Some(false)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_not_followed_and_the_message_says_where_it_points() {
    let moved = |_: &Value, _: Option<&str>| -> http_support::Answer {
        (
            308,
            vec![(
                "location",
                "https://new.example.com/v2/mcp?session=s3cret".to_owned(),
            )],
            String::new(),
        )
    };
    let fake = Fake::start(moved).await;
    let out = mcp(&["tools", "--url", &fake.url]).await;
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("redirect") && out.stderr.contains("https://new.example.com/v2/mcp"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("s3cret"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_with_a_config_file_warns_about_tools_only() {
    // Two entries for one server: their resources share URIs, their
    // (namespaced) tools do not collide.
    let server = start(config()).await;
    let (dir, file) = config_file(
        "http-cli-warn",
        &serde_json::json!({ "mcpServers": {
            "one": { "type": "http", "url": server.url },
            "two": { "url": server.url }
        } }),
    );
    let file = file.as_str();
    let out = mcp(&["tools", "--config", file]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("Resource"), "{}", out.stderr);
    // `resources` is where they are said.
    let out = mcp(&["resources", "--config", file]).await;
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("Resource name `test://static`"),
        "{}",
        out.stderr
    );
}
