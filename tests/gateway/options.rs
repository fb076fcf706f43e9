//! `mcp serve`'s options: tool filters from the config file, `--log-calls`,
//! lazy servers, `--watch`, and `/metrics` across a server's SIGKILL.

use crate::gateway_support;

use std::time::Duration;

use gateway_support::common::{self, tempdir};
use gateway_support::{all_gone, fixture, serve, serve_file, tool_names};
use serde_json::{json, Value};

#[tokio::test]
async fn tool_filters_from_the_config_file_apply_to_listing_and_calling_on_both_endpoints() {
    let dir = tempdir("gw-filters");
    let mut a = fixture(&dir, "a", &[]);
    a["conduit"] =
        json!({ "tools": { "allow": ["e*", "a*", "sleep"], "deny": ["ask_*", "sleep"] } });
    let gw = serve(&dir, json!({ "a": a }), &[], &[]).await;
    let mut joined = tool_names(
        &gw.modern("/mcp", &[], 1, "tools/list", json!({}))
            .await
            .json()
            .await,
    );
    joined.sort();
    assert_eq!(joined, vec!["a__add".to_owned(), "a__echo".to_owned()]);
    let mut single = tool_names(
        &gw.modern("/servers/a/mcp", &[], 2, "tools/list", json!({}))
            .await
            .json()
            .await,
    );
    single.sort();
    assert_eq!(single, vec!["add".to_owned(), "echo".to_owned()]);
    for (path, name) in [
        ("/mcp", "a__sleep"),
        ("/servers/a/mcp", "sleep"),
        ("/servers/a/mcp", "ask_roots"),
    ] {
        let r = gw.call_modern(path, 3, name, json!({ "ms": 1 })).await;
        assert_eq!(r["error"]["code"], -32602, "{path} {name}: {r}");
    }
    let ok = gw
        .call_modern("/servers/a/mcp", 4, "add", json!({ "a": 1, "b": 1 }))
        .await;
    assert_eq!(ok["result"]["content"][0]["text"], "2", "{ok}");
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
}

/// The file's JSON lines, once there are `n`.
async fn lines(path: &std::path::Path, n: usize) -> Vec<Value> {
    let mut got = Vec::new();
    common::eventually(Duration::from_secs(10), || {
        got = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        got.len() >= n
    })
    .await;
    got
}

#[tokio::test]
async fn log_calls_writes_one_json_line_per_call_with_arguments_only_when_asked() {
    for with_arguments in [false, true] {
        let dir = tempdir("gw-calllog");
        let log = dir.join("calls.jsonl");
        let log_arg = log.display().to_string();
        let mut args = vec!["--log-calls", log_arg.as_str()];
        if with_arguments {
            args.push("--log-arguments");
        }
        let gw = serve(&dir, json!({ "a": fixture(&dir, "a", &[]) }), &args, &[]).await;
        gw.call_modern("/mcp", 1, "a__echo", json!({ "text": "secret-ish" }))
            .await;
        let sid = gw.session("/servers/a/mcp", &[], json!({})).await;
        gw.legacy(
            "/servers/a/mcp",
            &sid,
            &[],
            2,
            "tools/call",
            json!({ "name": "nope", "arguments": {} }),
        )
        .await
        .json()
        .await;
        let got = lines(&log, 2).await;
        assert_eq!(got.len(), 2, "{got:?}");
        let first = &got[0];
        assert_eq!(first["client"], "anonymous", "{first}");
        assert_eq!(first["server"], "a", "{first}");
        assert_eq!(first["method"], "tools/call", "{first}");
        assert_eq!(first["tool"], "echo", "{first}");
        assert_eq!(first["outcome"], "ok", "{first}");
        assert!(first["duration_ms"].as_f64().is_some(), "{first}");
        let time = first["time"].as_str().unwrap();
        assert!(
            time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
            "{time}"
        );
        assert_eq!(got[1]["outcome"], "error", "{}", got[1]);
        assert_eq!(got[1]["error"], -32602, "{}", got[1]);
        match with_arguments {
            false => assert!(first.get("arguments").is_none(), "{first}"),
            true => assert_eq!(first["arguments"]["text"], "secret-ish", "{first}"),
        }
        let end = gw.terminate().await;
        assert_eq!(end.code, Some(0), "{}", end.stderr);
    }
}

#[tokio::test]
async fn the_call_log_bounds_each_field_and_its_queue_in_bytes() {
    let dir = tempdir("gw-calllog-bound");
    let log = dir.join("calls.jsonl");
    let log_arg = log.display().to_string();
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &["--resources"]) }),
        &["--log-calls", log_arg.as_str()],
        &[],
    )
    .await;
    let pid = gw.child.id().expect("mcp serve runs");
    let rss_before = common::process_status_kib(pid, "VmRSS");
    let sid = gw.session("/servers/a/mcp", &[], json!({})).await;
    // 27 prompts/get, each with a prompt name of almost 8 MiB.
    let name = "p".repeat(8 * 1024 * 1024 - 256 * 1024);
    let calls = 27;
    let mut answered = 0;
    for id in 0..calls {
        let r = gw
            .legacy(
                "/servers/a/mcp",
                &sid,
                &[],
                id + 1,
                "prompts/get",
                json!({ "name": name, "arguments": {} }),
            )
            .await;
        answered += usize::from(r.status == 200);
        let _ = r.bytes().await;
    }
    // Every call answered is in the log.
    let count = |text: &[u8]| text.iter().filter(|b| **b == b'\n').count();
    let logged = common::eventually(Duration::from_secs(30), || {
        count(&std::fs::read(&log).unwrap_or_default()) >= answered
    })
    .await;
    let rss_after = common::process_status_kib(pid, "VmRSS");
    let bytes = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    common::figure(
        "27 prompts/get with an 8 MiB name, --log-calls",
        format!(
            "{answered} answered; log {:.1} KiB; mcp serve VmRSS {:.1} -> {:.1} MiB",
            bytes as f64 / 1024.0,
            rss_before as f64 / 1024.0,
            rss_after as f64 / 1024.0
        ),
    );
    assert_eq!(answered, calls as usize);
    assert!(logged.is_some(), "not every call was logged");
    assert!(
        bytes < 64 * 1024,
        "the log holds {bytes} bytes for {calls} calls"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        let tool = v["tool"].as_str().expect("the prompt's name, cut");
        assert!(
            tool.starts_with("ppp") && tool.ends_with("…(cut)"),
            "{tool}"
        );
        assert!(tool.len() <= 256 + "…(cut)".len(), "{}", tool.len());
    }
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
}

#[tokio::test]
async fn a_lazy_server_starts_on_its_first_use_only() {
    let dir = tempdir("gw-lazy");
    let mut z = fixture(&dir, "z", &[]);
    z["conduit"] = json!({ "lazy": true });
    let mut y = fixture(&dir, "y", &[]);
    y["conduit"] = json!({ "lazy": true });
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]), "y": y, "z": z }),
        &[],
        &[],
    )
    .await;
    let (status, health) = gw.health().await;
    assert_eq!(
        status, 200,
        "a lazy server not started is not a failure: {health}"
    );
    assert_eq!(health["servers"]["z"]["status"], "lazy", "{health}");
    assert!(
        !dir.join("z.pids").exists() && !dir.join("y.pids").exists(),
        "started too early"
    );

    // First use of z: its own endpoint.
    let list = tool_names(
        &gw.modern("/servers/z/mcp", &[], 1, "tools/list", json!({}))
            .await
            .json()
            .await,
    );
    assert!(list.contains(&"echo".to_owned()), "{list:?}");
    assert_eq!(common::read_pids(&dir.join("z.pids")).len(), 1);
    assert!(!dir.join("y.pids").exists(), "y is not used yet");
    let (_, health) = gw.health().await;
    assert_eq!(health["servers"]["z"]["status"], "ready", "{health}");

    // First use of y: a call through the namespace.
    let r = gw
        .call_modern("/mcp", 2, "y__echo", json!({ "text": "woke" }))
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "woke", "{r}");
    assert_eq!(common::read_pids(&dir.join("y.pids")).len(), 1);

    let pids = gw.server_pids();
    assert_eq!(pids.len(), 3, "{pids:?}");
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
    assert!(all_gone(&pids), "{pids:?}");
}

/// The pids a server recorded so far.
fn pids_of(dir: &std::path::Path, name: &str) -> Vec<u32> {
    common::read_pids(&dir.join(format!("{name}.pids")))
}

#[tokio::test]
async fn watch_restarts_changed_servers_starts_added_ones_stops_removed_ones_and_leaves_the_rest() {
    let dir = tempdir("gw-watch");
    let file = dir.join("servers.json");
    let write = |servers: Value| {
        std::fs::write(&file, json!({ "mcpServers": servers }).to_string()).unwrap()
    };
    write(json!({
        "a": fixture(&dir, "a", &[]),
        "b": fixture(&dir, "b", &[]),
        "c": fixture(&dir, "c", &[]),
    }));
    let gw = serve_file(&dir, &file, &["--watch"], &[]).await;
    let sid = gw.session("/servers/a/mcp", &[], json!({})).await;
    let joined = gw.session("/mcp", &[], json!({})).await;
    let (a0, b0, c0) = (pids_of(&dir, "a"), pids_of(&dir, "b"), pids_of(&dir, "c"));
    assert_eq!((a0.len(), b0.len(), c0.len()), (1, 1, 1));

    write(json!({
        "a": fixture(&dir, "a", &[]),
        "b": fixture(&dir, "b", &["--tools", "2"]),
        "d": fixture(&dir, "d", &[]),
    }));
    let mut applied = Value::Null;
    for _ in 0..400 {
        let (_, h) = gw.health().await;
        let servers = &h["servers"];
        if servers.get("c").is_none()
            && servers["d"]["status"] == "ready"
            && servers["b"]["status"] == "ready"
            && pids_of(&dir, "b") != b0
        {
            applied = h;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(!applied.is_null(), "the change was not applied");
    assert_eq!(pids_of(&dir, "a"), a0, "a was untouched");
    assert!(all_gone(&c0), "c was stopped");
    assert!(!all_gone(&pids_of(&dir, "d")), "d runs");
    assert!(
        all_gone(&b0) && !all_gone(&pids_of(&dir, "b")),
        "b was restarted"
    );
    // a's session, and the namespace's, go on.
    let r = gw
        .legacy(
            "/servers/a/mcp",
            &sid,
            &[],
            1,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "still" } }),
        )
        .await
        .json()
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "still", "{r}");
    let r = gw
        .legacy(
            "/mcp",
            &joined,
            &[],
            2,
            "tools/call",
            json!({ "name": "d__echo", "arguments": { "text": "new" } }),
        )
        .await
        .json()
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "new", "{r}");

    let mut pids = gw.server_pids();
    pids.extend(b0);
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
    assert!(end.stderr.contains("--watch"), "{}", end.stderr);
    assert!(all_gone(&pids), "{pids:?}");
}

#[tokio::test]
async fn a_server_killed_with_sigkill_restarts_while_the_others_serve_and_metrics_count_it() {
    let dir = tempdir("gw-sigkill");
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]), "b": fixture(&dir, "b", &[]) }),
        &[],
        &[],
    )
    .await;
    let a0 = pids_of(&dir, "a");
    common::kill9(a0[0]);
    // b serves while a restarts.
    let r = gw
        .call_modern("/mcp", 1, "b__echo", json!({ "text": "up" }))
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "up", "{r}");
    let back = common::eventually(Duration::from_secs(10), || {
        let now = pids_of(&dir, "a");
        !now.is_empty() && now != a0
    })
    .await;
    assert!(back.is_some(), "a was not restarted");
    let mut healthy = false;
    for _ in 0..200 {
        if gw.health().await.0 == 200 {
            healthy = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(healthy);
    let r = gw
        .call_modern("/mcp", 2, "a__echo", json!({ "text": "again" }))
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "again", "{r}");
    let m = gw.send("GET", "/metrics", &[], None).await;
    let text = String::from_utf8(m.bytes().await.to_vec()).unwrap();
    assert!(
        text.contains(r#"mcp_gateway_server_restarts_total{server="a"} 1"#),
        "{text}"
    );
    assert!(
        !text.contains(r#"mcp_gateway_server_restarts_total{server="b"}"#),
        "{text}"
    );
    assert!(
        text.contains("mcp_gateway_request_duration_seconds_bucket"),
        "{text}"
    );

    gw.terminate_clean().await;
}

#[tokio::test]
async fn a_url_server_is_served_beside_a_stdio_one_in_one_namespace() {
    let dir = tempdir("gw-url");
    // A Streamable HTTP server of this crate: echo, sleep (progress), roots.
    let remote = gateway_support::http::start(gateway_support::http::config()).await;
    let servers = json!({
        "local": fixture(&dir, "local", &[]),
        "remote": { "type": "http", "url": remote.url },
    });
    let gw = serve(&dir, servers, &[], &[]).await;
    let (status, health) = gw.health().await;
    assert_eq!(status, 200, "{health}");
    let names = tool_names(
        &gw.modern("/mcp", &[], 1, "tools/list", json!({}))
            .await
            .json()
            .await,
    );
    assert!(
        names.contains(&"remote__echo".to_owned()) && names.contains(&"local__echo".to_owned()),
        "{names:?}"
    );
    for (id, name) in [(2, "remote__echo"), (3, "local__echo")] {
        let r = gw
            .call_modern("/mcp", id, name, json!({ "text": name }))
            .await;
        assert_eq!(r["result"]["content"][0]["text"], name, "{r}");
    }
    // Its own endpoint, a 2025-11-25 session, progress passed through.
    let sid = gw.session("/servers/remote/mcp", &[], json!({})).await;
    let r = gw
        .legacy(
            "/servers/remote/mcp",
            &sid,
            &[],
            4,
            "tools/call",
            json!({ "name": "sleep", "arguments": { "ms": 50 }, "_meta": { "progressToken": "p" } }),
        )
        .await;
    let mut events = r.sse();
    let first = events.next_message().await.unwrap();
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert_eq!(first["params"]["progressToken"], "p", "{first}");
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
    remote.handle.stop();
}

#[test]
fn the_gateways_options_are_read_from_each_servers_conduit_key_and_errors_name_the_key() {
    use conduit_mcp::config_file::ServersFile;
    let path = std::path::Path::new("/tmp/servers.json");
    let env = |_: &str| None;
    let text = r#"{ "mcpServers": {
        "a": { "command": "srv", "conduit": { "tools": { "allow": ["get_*"], "deny": ["get_secret"] }, "lazy": true, "request_timeout_ms": 5000 } },
        "b": { "command": "srv" }
    } }"#;
    let file = ServersFile::parse(text, path, &env).unwrap();
    let a = &file.serve["a"];
    assert_eq!(a.tools_allow, vec!["get_*".to_owned()]);
    assert_eq!(a.tools_deny, vec!["get_secret".to_owned()]);
    assert!(a.lazy);
    assert_eq!(
        file.servers["a"].get_request_timeout(),
        Duration::from_secs(5)
    );
    assert_eq!(file.serve["b"], Default::default());
    for (bad, key) in [
        (
            r#"{ "tools": { "allow": "get_*" } }"#,
            "mcpServers.a.conduit.tools.allow",
        ),
        (
            r#"{ "tools": { "allow": [""] } }"#,
            "mcpServers.a.conduit.tools.allow[0]",
        ),
        (
            r#"{ "tools": { "only": [] } }"#,
            "mcpServers.a.conduit.tools.only",
        ),
        (r#"{ "lazy": "yes" }"#, "mcpServers.a.conduit.lazy"),
    ] {
        let text =
            format!(r#"{{ "mcpServers": {{ "a": {{ "command": "srv", "conduit": {bad} }} }} }}"#);
        let e = ServersFile::parse(&text, path, &env)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("`{key}`")), "{bad}: {e}");
    }
}
