//! `mcp serve`: the endpoints (`/mcp`, `/servers/NAME/mcp`, `/health`),
//! the refusals (token, origin, an open listener without a token), and the
//! stop (SIGTERM: calls in flight finish, exit 0, no server process left).
//! Real stdio backends: the fixture server, one per era.

use crate::gateway_support;

use std::time::Duration;

use gateway_support::common::tempdir;
use gateway_support::{all_gone, fixture, serve, tool_names, LEGACY};
use serde_json::json;

/// Two fixture servers: `a` modern, `b` legacy.
fn two(dir: &std::path::Path) -> serde_json::Value {
    json!({
        "a": fixture(dir, "a", &["--era", "modern"]),
        "b": fixture(dir, "b", &["--era", "legacy"]),
    })
}

#[tokio::test]
async fn mcp_serve_puts_every_server_in_one_namespace_and_each_at_its_own_endpoint() {
    let dir = tempdir("gw-endpoints");
    let gw = serve(&dir, two(&dir), &[], &[]).await;

    let (status, health) = gw.health().await;
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["servers"]["a"]["status"], "ready", "{health}");
    assert_eq!(health["servers"]["a"]["era"], "modern", "{health}");
    assert_eq!(health["servers"]["b"]["era"], "legacy", "{health}");

    // /mcp, 2026-07-28: every server's tools, namespaced.
    let list = gw
        .modern("/mcp", &[], 1, "tools/list", json!({}))
        .await
        .json()
        .await;
    let names = tool_names(&list);
    for n in ["a__echo", "a__add", "b__echo", "b__add"] {
        assert!(names.contains(&n.to_owned()), "{n} in {names:?}");
    }
    for (id, server) in [(2, "a"), (3, "b")] {
        let name = format!("{server}__echo");
        let r = gw
            .call_modern("/mcp", id, &name, json!({ "text": server }))
            .await;
        assert_eq!(r["result"]["content"][0]["text"], server, "{r}");
    }

    // /mcp, 2025-11-25 session: the same namespace.
    let sid = gw.session("/mcp", &[], json!({})).await;
    let r = gw
        .legacy(
            "/mcp",
            &sid,
            &[],
            4,
            "tools/call",
            json!({ "name": "b__add", "arguments": { "a": 2, "b": 3 } }),
        )
        .await
        .json()
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "5", "{r}");

    // /servers/NAME/mcp: one server as it is, own names.
    let list = gw
        .modern("/servers/b/mcp", &[], 5, "tools/list", json!({}))
        .await
        .json()
        .await;
    let names = tool_names(&list);
    assert!(
        names.contains(&"echo".to_owned()) && !names.iter().any(|n| n.contains("__")),
        "{names:?}"
    );
    let sid = gw.session("/servers/a/mcp", &[], json!({})).await;
    let r = gw
        .legacy(
            "/servers/a/mcp",
            &sid,
            &[],
            6,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "own" } }),
        )
        .await
        .json()
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "own", "{r}");
    let missing = gw
        .modern("/servers/nope/mcp", &[], 7, "tools/list", json!({}))
        .await;
    assert_eq!(missing.status, 404);

    let pids = gw.server_pids();
    assert_eq!(pids.len(), 2, "{pids:?}");
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
    assert!(all_gone(&pids), "a server outlived mcp serve: {pids:?}");
}

#[tokio::test]
async fn health_is_503_while_a_server_is_not_ready_and_needs_no_token() {
    let dir = tempdir("gw-health");
    // `late` answers its discovery after 3 s; the host waits 200 ms.
    let servers = json!({
        "up": fixture(&dir, "up", &[]),
        "late": fixture(&dir, "late", &["--start-delay-ms", "3000"]),
    });
    std::fs::write(
        dir.join("servers.json"),
        json!({ "mcpServers": servers, "conduit": { "ready_timeout_ms": 200 } }).to_string(),
    )
    .unwrap();
    let gw = gateway_support::serve_file(
        &dir,
        &dir.join("servers.json"),
        &["--token-env", "GW_TOKEN"],
        &[("GW_TOKEN", "health-needs-no-token-0123")],
    )
    .await;
    let (status, health) = gw.health().await;
    assert_eq!(status, 503, "{health}");
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(health["servers"]["up"]["status"], "ready", "{health}");
    assert_ne!(health["servers"]["late"]["status"], "ready", "{health}");
    let mut became = None;
    for _ in 0..200 {
        let (s, h) = gw.health().await;
        if s == 200 {
            became = Some(h);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let h = became.expect("health never turned 200 once the late server was ready");
    assert_eq!(h["servers"]["late"]["status"], "ready", "{h}");
    gw.terminate_clean().await;
}

#[tokio::test]
async fn a_token_is_needed_when_one_is_set_and_metrics_stay_behind_it() {
    let dir = tempdir("gw-token");
    let token = "a-bearer-token-0123456789";
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]) }),
        &["--token-env", "GW_TOKEN"],
        &[("GW_TOKEN", token)],
    )
    .await;
    let bearer = format!("Bearer {token}");
    let none = gw.modern("/mcp", &[], 1, "tools/list", json!({})).await;
    assert_eq!(none.status, 401);
    assert_eq!(none.header("www-authenticate").as_deref(), Some("Bearer"));
    let wrong = gw
        .modern(
            "/mcp",
            &[("authorization", "Bearer a-bearer-token-0123456780")],
            2,
            "tools/list",
            json!({}),
        )
        .await;
    assert_eq!(wrong.status, 401);
    let single = gw
        .modern("/servers/a/mcp", &[], 3, "tools/list", json!({}))
        .await;
    assert_eq!(single.status, 401);
    let ok = gw
        .modern(
            "/mcp",
            &[("authorization", &bearer)],
            4,
            "tools/call",
            json!({ "name": "a__echo", "arguments": { "text": "in" } }),
        )
        .await
        .json()
        .await;
    assert_eq!(ok["result"]["content"][0]["text"], "in", "{ok}");

    let metrics = gw.send("GET", "/metrics", &[], None).await;
    assert_eq!(metrics.status, 401);
    let metrics = gw
        .send("GET", "/metrics", &[("authorization", &bearer)], None)
        .await;
    assert_eq!(metrics.status, 200);
    let text = String::from_utf8(metrics.bytes().await.to_vec()).unwrap();
    assert!(
        text.contains(
            r#"mcp_gateway_requests_total{server="a",method="tools/call",outcome="ok"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"mcp_gateway_server_ready{server="a"} 1"#),
        "{text}"
    );
    let (status, _) = gw.health().await;
    assert_eq!(status, 200, "/health needs no token");

    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
}

#[tokio::test]
async fn per_client_tokens_refuse_what_is_outside_the_grant_with_403_and_hide_it() {
    let dir = tempdir("gw-grants");
    std::fs::write(
        dir.join("tokens.json"),
        json!({ "clients": {
            "ci": { "token": "ci-token-0123456789abcdef", "servers": { "a": ["echo"] } },
            "admin": { "token_env": "ADMIN_TOKEN", "servers": { "*": ["*"] } }
        }})
        .to_string(),
    )
    .unwrap();
    let tokens = dir.join("tokens.json").display().to_string();
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]), "b": fixture(&dir, "b", &[]) }),
        &["--tokens", &tokens],
        &[("ADMIN_TOKEN", "admin-token-0123456789abc")],
    )
    .await;
    let ci = [("authorization", "Bearer ci-token-0123456789abcdef")];
    let admin = [("authorization", "Bearer admin-token-0123456789abc")];

    // Listing: only what the grant allows.
    let names = tool_names(
        &gw.modern("/mcp", &ci, 1, "tools/list", json!({}))
            .await
            .json()
            .await,
    );
    assert_eq!(names, vec!["a__echo".to_owned()]);
    let names = tool_names(
        &gw.modern("/mcp", &admin, 2, "tools/list", json!({}))
            .await
            .json()
            .await,
    );
    assert!(names.len() >= 10, "{names:?}");

    // Calling: 403 outside the grant, in both eras and on both endpoints.
    let add = gw
        .modern(
            "/mcp",
            &ci,
            3,
            "tools/call",
            json!({ "name": "a__add", "arguments": { "a": 1, "b": 2 } }),
        )
        .await;
    assert_eq!(add.status, 403);
    let body = add.json().await;
    assert_eq!(body["id"], 3, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("a__add"),
        "{body}"
    );
    let other = gw
        .modern(
            "/mcp",
            &ci,
            4,
            "tools/call",
            json!({ "name": "b__echo", "arguments": { "text": "x" } }),
        )
        .await;
    assert_eq!(other.status, 403);
    let sid = gw.session("/servers/a/mcp", &ci, json!({})).await;
    let add = gw
        .legacy(
            "/servers/a/mcp",
            &sid,
            &ci,
            5,
            "tools/call",
            json!({ "name": "add", "arguments": { "a": 1, "b": 2 } }),
        )
        .await;
    assert_eq!(add.status, 403);
    let server = gw
        .modern("/servers/b/mcp", &ci, 6, "tools/list", json!({}))
        .await;
    assert_eq!(server.status, 403);
    let echo = gw
        .legacy(
            "/servers/a/mcp",
            &sid,
            &ci,
            7,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "ok" } }),
        )
        .await
        .json()
        .await;
    assert_eq!(echo["result"]["content"][0]["text"], "ok", "{echo}");

    // A session belongs to its token: another one cannot use it.
    let stolen = gw
        .legacy("/servers/a/mcp", &sid, &admin, 8, "tools/list", json!({}))
        .await;
    assert_eq!(stolen.status, 404, "another token's session id is unknown");

    gw.terminate_clean().await;
}

#[tokio::test]
async fn a_foreign_origin_is_refused_with_403_unless_allowed() {
    let dir = tempdir("gw-origin");
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]) }),
        &["--allow-origin", "https://app.example.com"],
        &[],
    )
    .await;
    let evil = gw
        .modern(
            "/mcp",
            &[("origin", "https://evil.example.com")],
            1,
            "tools/list",
            json!({}),
        )
        .await;
    assert_eq!(evil.status, 403);
    let evil = gw
        .send(
            "GET",
            "/metrics",
            &[("origin", "https://evil.example.com")],
            None,
        )
        .await;
    assert_eq!(evil.status, 403);
    for origin in ["https://app.example.com", "http://localhost:5173"] {
        let ok = gw
            .modern("/mcp", &[("origin", origin)], 2, "tools/list", json!({}))
            .await;
        assert_eq!(ok.status, 200, "{origin}");
    }
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
}

#[tokio::test]
async fn a_non_loopback_listener_without_a_token_is_refused_and_starts_no_server() {
    let dir = tempdir("gw-open");
    std::fs::write(
        dir.join("servers.json"),
        json!({ "mcpServers": { "a": fixture(&dir, "a", &[]) } }).to_string(),
    )
    .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"))
        .args(["serve", "--config"])
        .arg(dir.join("servers.json"))
        .args(["--listen", "0.0.0.0:0"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("without a token") && err.contains("--insecure-no-auth"),
        "{err}"
    );
    assert!(
        !dir.join("a.pids").exists(),
        "no server may start when the listener is refused"
    );
}

#[tokio::test]
async fn sigterm_lets_a_call_in_flight_finish_then_exits_0_with_no_process_left() {
    let dir = tempdir("gw-sigterm");
    let gw = serve(&dir, two(&dir), &["--grace-ms", "5000"], &[]).await;
    let sid = gw.session("/mcp", &[], json!({})).await;
    let addr = gw.addr;
    let call = tokio::spawn(async move {
        let req = gateway_support::request(
            "POST",
            addr,
            "/mcp",
            &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
            Some(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": { "name": "b__sleep", "arguments": { "ms": 1500 }, "_meta": { "progressToken": 1 } } })),
        );
        let started = std::time::Instant::now();
        let r = gateway_support::http::send(addr, req).await;
        (r.json().await, started)
    });
    // The call is running once the server says so (its first progress
    // would need SSE parsing here; its metrics say it too).
    let mut running = false;
    for _ in 0..200 {
        let m = gw.send("GET", "/metrics", &[], None).await;
        let text = String::from_utf8(m.bytes().await.to_vec()).unwrap();
        if text.contains(r#"mcp_gateway_requests_in_flight{server="b"} 1"#) {
            running = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(running, "the call never started");
    let pids = gw.server_pids();
    let end = gw.terminate().await;
    let (answer, started) = call.await.unwrap();
    assert_eq!(end.code, Some(0), "{}", end.stderr);
    assert!(
        answer["result"]["content"][0]["text"].is_string() && answer.get("error").is_none(),
        "the call in flight was not let finish: {answer}"
    );
    assert!(started.elapsed() >= Duration::from_millis(1400));
    assert!(all_gone(&pids), "a server outlived mcp serve: {pids:?}");
    assert!(end.stderr.contains("SIGTERM"), "{}", end.stderr);
}

#[tokio::test]
async fn start_failures_crashes_restarts_and_give_ups_are_each_one_line_and_the_start_line_tells_ready_from_not(
) {
    let dir = tempdir("gw-said");
    let crashy_args = [
        "--pid-file".to_owned(),
        dir.join("crashy.pids").display().to_string(),
        "--exit-immediately".to_owned(),
        "7".to_owned(),
    ];
    let servers = json!({
        "ok": fixture(&dir, "ok", &[]),
        "broken": { "command": dir.join("no-such-server").display().to_string() },
        // Exits 7 at once; restarted once, then given up.
        "crashy": {
            "command": gateway_support::common::fixture(),
            "args": crashy_args,
            "env": { "CRASHY_TOKEN": "s3cr3t-crashy-value" },
            "conduit": { "max_reconnects": 1, "backoff": { "initial_ms": 50, "max_ms": 50, "factor": 1.0 } },
        },
    });
    let gw = serve(&dir, servers, &[], &[]).await;
    let said = format!("{}{}", gw.early, gw.start_line);
    gateway_support::common::figure("mcp serve's stderr up to its start line", &said);
    let line_with =
        |text: &str, all: &[&str]| text.lines().any(|l| all.iter().all(|w| l.contains(w)));
    let early = &gw.early;
    assert!(line_with(early, &["broken", "could not start"]), "{said}");
    assert!(line_with(early, &["crashy", "exit status 7"]), "{said}");
    assert!(line_with(early, &["crashy", "restarting"]), "{said}");
    assert!(line_with(early, &["crashy", "gave up"]), "{said}");
    let start = &gw.start_line;
    assert!(start.contains("1 of 3 servers ready: ok;"), "{start}");
    assert!(
        start.contains("not ready: broken (gave up), crashy (gave up)"),
        "{start}"
    );

    // A crash once it serves: said too, and the restart.
    let (_, h) = gw.health().await;
    let pid = h["servers"]["ok"]["pid"].as_u64().expect("ok's pid") as u32;
    gateway_support::common::kill9(pid);
    let mut back = false;
    for _ in 0..400 {
        let (_, h) = gw.health().await;
        if h["servers"]["ok"]["status"] == "ready" && h["servers"]["ok"]["pid"] != json!(pid) {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(back, "ok was not restarted");
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
    assert!(
        line_with(&end.stderr, &["ok", "signal 9"]),
        "{}",
        end.stderr
    );
    assert!(
        line_with(&end.stderr, &["ok", "restarting"]),
        "{}",
        end.stderr
    );
    for text in [&said, &end.stderr] {
        assert!(
            !text.contains("s3cr3t") && !text.contains("--exit-immediately"),
            "a server's env or args were printed: {text}"
        );
    }
}

#[tokio::test]
async fn server_names_the_servers_served_and_flags_serve_cannot_honour_are_refused() {
    let dir = tempdir("gw-server-flag");
    let servers = json!({
        "a": fixture(&dir, "a", &[]),
        "b": fixture(&dir, "b", &[]),
        "c": fixture(&dir, "c", &[]),
    });
    let gw = serve(&dir, servers.clone(), &["--server", "b"], &[]).await;
    let (status, h) = gw.health().await;
    gateway_support::common::figure("servers served with --server b", &h["servers"]);
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["servers"]["b"]["status"], "ready", "{h}");
    assert!(
        h["servers"].get("a").is_none() && h["servers"].get("c").is_none(),
        "{h}"
    );
    gw.terminate_clean().await;
    assert!(
        !dir.join("a.pids").exists() && !dir.join("c.pids").exists(),
        "a or c was started"
    );

    let gw = serve(&dir, servers, &["--server", "a", "--server", "c"], &[]).await;
    let (status, h) = gw.health().await;
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["servers"]["a"]["status"], "ready", "{h}");
    assert_eq!(h["servers"]["c"]["status"], "ready", "{h}");
    assert!(h["servers"].get("b").is_none(), "{h}");
    gw.terminate_clean().await;

    // Refused before anything starts: exit 2, naming what is wrong.
    for (args, named) in [
        (&["--server", "a", "--server", "nope"][..], "nope"),
        (&["--progress"][..], "--progress"),
    ] {
        let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"))
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(dir.join("servers.json"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(gateway_support::PATIENCE, run)
            .await
            .unwrap_or_else(|_| panic!("mcp serve {args:?} was accepted and served"))
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(named), "{args:?}: {err}");
    }
    // A subcommand that uses one server takes one --server.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"))
        .args(["tools", "--config"])
        .arg(dir.join("servers.json"))
        .args(["--server", "a", "--server", "b"])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(gateway_support::PATIENCE, out)
        .await
        .unwrap()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--server"), "{err}");
}

/// Polls `/health` until server `name`'s status is `status` (bounded by
/// the harness's patience); returns the whole body then.
async fn health_until(
    gw: &gateway_support::Gateway,
    name: &str,
    status: &str,
) -> serde_json::Value {
    for _ in 0..800 {
        let (_, h) = gw.health().await;
        if h["servers"][name]["status"] == status {
            return h;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("server {name} never had the status {status}");
}

#[tokio::test]
async fn a_server_that_gave_up_is_started_again_after_its_pause_and_serves_without_a_gateway_restart(
) {
    let dir = tempdir("gw-revive");
    // A copy of the fixture, taken away while it runs: its revives fail
    // until it is put back.
    let exe = dir.join("fragile-server");
    std::fs::copy(gateway_support::common::fixture(), &exe).unwrap();
    let servers = json!({
        "ok": fixture(&dir, "ok", &[]),
        "fragile": {
            "command": exe,
            "args": ["--pid-file", dir.join("fragile.pids")],
            // No restart: its first crash is a give-up.
            "conduit": { "max_reconnects": 0, "revive_after_ms": 300 },
        },
    });
    let mut gw = serve(&dir, servers, &[], &[]).await;
    let r = gw
        .call_modern("/mcp", 1, "fragile__echo", json!({ "text": "before" }))
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "before", "{r}");
    let (_, h) = gw.health().await;
    let first = h["servers"]["fragile"]["pid"].as_u64().expect("its pid") as u32;

    std::fs::remove_file(&exe).unwrap();
    gateway_support::common::kill9(first);
    gw.said(|l| l.contains("server fragile gave up")).await;
    // Tried again after its pause, it cannot start, and waits again.
    gw.said(|l| l.contains("server fragile: starting again"))
        .await;
    let down = gw
        .said(|l| l.contains("server fragile could not start") && l.contains("started again in"))
        .await;
    assert!(down.contains("fragile-server"), "{down}");

    // Meanwhile /health says why it is down and when it is tried again.
    let h = health_until(&gw, "fragile", "gave_up").await;
    let fragile = &h["servers"]["fragile"];
    assert!(
        fragile["reason"]
            .as_str()
            .unwrap()
            .contains("fragile-server"),
        "{h}"
    );
    assert!(fragile["next_try_in_ms"].as_u64().unwrap() <= 300, "{h}");
    assert_eq!(h["servers"]["ok"]["status"], "ready", "{h}");
    // And a call of its tool names the server and the reason.
    let e = gw
        .call_modern("/mcp", 2, "fragile__echo", json!({ "text": "down" }))
        .await;
    let message = e["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{e}"));
    assert!(
        message.contains("`fragile`") && message.contains("fragile-server"),
        "{e}"
    );
    assert!(!message.contains("Unknown tool"), "{e}");
    assert_eq!(e["error"]["data"]["server"], "fragile", "{e}");
    let r = gw
        .call_modern("/mcp", 3, "ok__echo", json!({ "text": "fine" }))
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "fine", "{r}");

    // Put back (whole, by a rename), its next revive serves again.
    let staged = dir.join("fragile-server.new");
    std::fs::copy(gateway_support::common::fixture(), &staged).unwrap();
    std::fs::rename(&staged, &exe).unwrap();
    gw.said(|l| l.contains("server fragile ready again")).await;
    let r = gw
        .call_modern("/mcp", 4, "fragile__echo", json!({ "text": "back" }))
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "back", "{r}");
    let (status, h) = gw.health().await;
    assert_eq!(status, 200, "{h}");
    let now = h["servers"]["fragile"]["pid"].as_u64().expect("its pid") as u32;
    assert_ne!(now, first, "{h}");
    assert!(
        gw.child.try_wait().unwrap().is_none(),
        "the gateway itself was restarted"
    );
    gw.terminate_clean().await;
}
