//! `mcp serve` checked from outside, as issue 23 states its contract, on
//! the edges: tokens as secret stores hand them over (a trailing newline),
//! a grant naming a server the file does not have, a call outside a grant
//! to a lazy server not started yet, `/metrics` after `--watch` removed a
//! server, and SIGTERM while a server is still starting.

use crate::gateway_support;

use std::process::Stdio;
use std::time::Duration;

use gateway_support::common::{self, tempdir};
use gateway_support::{all_gone, fixture, serve, serve_file, PATIENCE};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test]
async fn a_token_read_with_a_trailing_newline_is_the_token_without_it() {
    let dir = tempdir("gw-token-newline");
    let token = "a-bearer-token-0123456789";
    // As a secret file mounted into a variable, or written by `echo`.
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]) }),
        &["--token-env", "GW_TOKEN"],
        &[("GW_TOKEN", &format!("{token}\n"))],
    )
    .await;
    let bearer = format!("Bearer {token}");
    let r = gw
        .modern(
            "/mcp",
            &[("authorization", &bearer)],
            1,
            "tools/list",
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "--token-env: the token without its newline");
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);

    std::fs::write(
        dir.join("tokens.json"),
        json!({ "clients": {
            "ci": { "token": format!(" {token}\n"), "servers": { "*": ["*"] } },
            "env": { "token_env": "CI_TOKEN", "servers": { "*": ["*"] } }
        }})
        .to_string(),
    )
    .unwrap();
    let tokens = dir.join("tokens.json").display().to_string();
    let gw = serve_file(
        &dir,
        &dir.join("servers.json"),
        &["--tokens", &tokens],
        &[("CI_TOKEN", "ci-token-0123456789abcdef\r\n")],
    )
    .await;
    for bearer in [bearer.as_str(), "Bearer ci-token-0123456789abcdef"] {
        let r = gw
            .modern(
                "/mcp",
                &[("authorization", bearer)],
                2,
                "tools/list",
                json!({}),
            )
            .await;
        assert_eq!(r.status, 200, "--tokens: the token without its whitespace");
    }
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
}

#[tokio::test]
async fn a_blank_token_in_a_tokens_file_is_refused_naming_its_client() {
    let dir = tempdir("gw-token-blank");
    std::fs::write(
        dir.join("servers.json"),
        json!({ "mcpServers": { "a": fixture(&dir, "a", &[]) } }).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("tokens.json"),
        json!({ "clients": { "ci": { "token": " ".repeat(20), "servers": { "*": ["*"] } } } })
            .to_string(),
    )
    .unwrap();
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(dir.join("servers.json"))
        .arg("--tokens")
        .arg(dir.join("tokens.json"))
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(PATIENCE, run)
        .await
        .expect("mcp serve started with a blank token")
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("clients.ci.token"), "{err}");
    assert!(!dir.join("a.pids").exists(), "no server may start");
}

#[tokio::test]
async fn a_grant_naming_a_server_the_file_lacks_and_a_readable_tokens_file_are_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir("gw-grant-unknown");
    let tokens = dir.join("tokens.json");
    std::fs::write(
        &tokens,
        json!({ "clients": {
            "ci": { "token": "ci-token-0123456789abcdef", "servers": { "tiem": ["*"], "a": ["echo"] } }
        }})
        .to_string(),
    )
    .unwrap();
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(
        dir.join("servers.json"),
        json!({ "mcpServers": { "a": fixture(&dir, "a", &[]) } }).to_string(),
    )
    .unwrap();
    let tokens_arg = tokens.display().to_string();
    let mut child = spawn_serve(&dir, "127.0.0.1:0", &["--tokens", &tokens_arg]);
    // What it says before it listens.
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = String::new();
    tokio::time::timeout(PATIENCE, async {
        while let Some(l) = lines.next_line().await.unwrap() {
            said.push_str(&l);
            said.push('\n');
            if l.starts_with("mcp serve: http://") {
                return;
            }
        }
        panic!("mcp serve ended before it listened: {said}");
    })
    .await
    .expect("mcp serve did not listen in time");
    let status = sigterm(&mut child).await;
    assert_eq!(status.code(), Some(0), "{said}");
    assert!(
        said.contains("clients.ci.servers.tiem") && said.contains("no server `tiem`"),
        "the unknown server is named on stderr: {said}"
    );
    assert!(
        !said.contains("servers.a`"),
        "a server of the file is not warned about: {said}"
    );
    assert!(
        said.contains("readable by others"),
        "the tokens file's mode is warned about without --verbose: {said}"
    );
}

#[tokio::test]
async fn a_call_outside_the_grant_to_a_lazy_server_not_started_yet_is_403() {
    let dir = tempdir("gw-lazy-grant");
    let mut late = fixture(&dir, "late", &[]);
    late["conduit"] = json!({ "lazy": true });
    let mut hidden = fixture(&dir, "hidden", &[]);
    hidden["conduit"] = json!({ "lazy": true });
    std::fs::write(
        dir.join("tokens.json"),
        json!({ "clients": {
            "ci": { "token": "ci-token-0123456789abcdef", "servers": { "late": ["echo"] } }
        }})
        .to_string(),
    )
    .unwrap();
    let tokens = dir.join("tokens.json").display().to_string();
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]), "late": late, "hidden": hidden }),
        &["--tokens", &tokens],
        &[],
    )
    .await;
    let ci = [("authorization", "Bearer ci-token-0123456789abcdef")];
    for id in [1, 2] {
        let r = gw
            .modern(
                "/mcp",
                &ci,
                id,
                "tools/call",
                json!({ "name": "late__add", "arguments": { "a": 1, "b": 2 } }),
            )
            .await;
        let status = r.status;
        assert_eq!(status, 403, "call {id}: {}", r.json().await);
    }
    for (id, name) in [(3, "a__echo"), (4, "hidden__echo")] {
        let r = gw
            .modern(
                "/mcp",
                &ci,
                id,
                "tools/call",
                json!({ "name": name, "arguments": { "text": "x" } }),
            )
            .await;
        let status = r.status;
        assert_eq!(
            status,
            403,
            "{name}: a server outside the grant: {}",
            r.json().await
        );
    }
    let (_, health) = gw.health().await;
    assert_eq!(health["servers"]["hidden"]["status"], "lazy", "{health}");
    assert!(
        !dir.join("hidden.pids").exists(),
        "a server outside the grant is not started by its call"
    );
    let r = gw
        .modern(
            "/mcp",
            &ci,
            5,
            "tools/call",
            json!({ "name": "late__echo", "arguments": { "text": "in" } }),
        )
        .await
        .json()
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "in", "{r}");
    gw.terminate_clean().await;
}

#[tokio::test]
async fn metrics_stop_reporting_a_server_that_watch_removed() {
    let dir = tempdir("gw-metrics-removed");
    let servers = json!({ "a": fixture(&dir, "a", &[]), "b": fixture(&dir, "b", &[]) });
    let gw = serve(&dir, servers, &["--watch"], &[]).await;
    let metrics = |gw: &gateway_support::Gateway| {
        let at = gateway_support::At { addr: gw.addr };
        async move {
            let r = at.send("GET", "/metrics", &[], None).await;
            String::from_utf8(r.bytes().await.to_vec()).unwrap()
        }
    };
    let text = metrics(&gw).await;
    assert!(
        text.contains(r#"mcp_gateway_server_ready{server="b"} 1"#),
        "{text}"
    );
    std::fs::write(
        dir.join("servers.json"),
        json!({ "mcpServers": { "a": fixture(&dir, "a", &[]) } }).to_string(),
    )
    .unwrap();
    let mut gone = false;
    for _ in 0..400 {
        let (_, h) = gw.health().await;
        if h["servers"].get("b").is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(gone, "--watch did not remove b");
    let text = metrics(&gw).await;
    assert!(
        !text.contains(r#"mcp_gateway_server_ready{server="b"}"#),
        "a removed server is no longer reported ready: {text}"
    );
    assert!(
        text.contains(r#"mcp_gateway_server_ready{server="a"} 1"#),
        "{text}"
    );
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
}

#[tokio::test]
async fn sigterm_while_a_server_is_still_starting_exits_0_with_no_process_left() {
    let dir = tempdir("gw-sigterm-starting");
    // `late` answers after 20 s; the gateway waits for it (60 s by default).
    up_and_late(&dir, 20000);
    let mut child = spawn_serve(&dir, "127.0.0.1:0", &[]);
    // Both servers are running (their pid files written): mid-start.
    let started = common::eventually(PATIENCE, || {
        dir.join("up.pids").exists() && dir.join("late.pids").exists()
    })
    .await;
    assert!(started.is_some(), "the servers did not start");
    let pids = up_and_late_pids(&dir);
    let status = sigterm(&mut child).await;
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use tokio::io::AsyncReadExt;
        let _ = e.read_to_string(&mut err).await;
    }
    assert_eq!(status.code(), Some(0), "{status:?}: {err}");
    assert!(err.contains("SIGTERM"), "{err}");
    let gone = common::eventually(Duration::from_secs(5), || all_gone(&pids)).await;
    assert!(gone.is_some(), "a server outlived mcp serve: {pids:?}");
}

#[tokio::test]
async fn an_allowed_origin_written_as_a_url_matches_its_browser_origin_and_a_path_is_refused() {
    let dir = tempdir("gw-origin-slash");
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]) }),
        &["--allow-origin", "https://app.example.com/"],
        &[],
    )
    .await;
    // Browsers send the origin without a path.
    let r = gw
        .modern(
            "/mcp",
            &[("origin", "https://app.example.com")],
            1,
            "tools/list",
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "the origin of https://app.example.com/");
    let r = gw
        .modern(
            "/mcp",
            &[("origin", "https://evil.example.com")],
            2,
            "tools/list",
            json!({}),
        )
        .await;
    assert_eq!(r.status, 403);
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);

    // One that no browser origin can match is said at once.
    for bad in ["https://app.example.com/chat", "app.example.com"] {
        let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"))
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(dir.join("servers.json"))
            .args(["--allow-origin", bad])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(PATIENCE, run)
            .await
            .unwrap_or_else(|_| panic!("mcp serve started with --allow-origin {bad}"))
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains(bad), "{err}");
    }
}

#[tokio::test]
async fn a_server_watch_could_not_add_is_in_health_as_at_start_until_the_file_drops_it() {
    let dir = tempdir("gw-watch-failed");
    let a = fixture(&dir, "a", &[]);
    let gw = serve(&dir, json!({ "a": a.clone() }), &["--watch"], &[]).await;
    let missing = dir.join("no-such-server").display().to_string();
    let write = |servers: serde_json::Value| {
        std::fs::write(
            dir.join("servers.json"),
            json!({ "mcpServers": servers }).to_string(),
        )
        .unwrap()
    };
    write(json!({ "a": a.clone(), "gone": { "command": missing } }));
    let mut seen = None;
    for _ in 0..400 {
        let (s, h) = gw.health().await;
        // (`starting` while the gateway tries it.)
        if h["servers"]["gone"]["status"] == "gave_up" {
            seen = Some((s, h));
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (status, h) = seen.expect("/health never named the server --watch could not start");
    assert_eq!(status, 503, "{h}");
    assert_eq!(h["servers"]["gone"]["status"], "gave_up", "{h}");
    assert!(
        h["servers"]["gone"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no-such-server")),
        "{h}"
    );
    write(json!({ "a": a }));
    let mut back = false;
    for _ in 0..400 {
        let (s, h) = gw.health().await;
        if s == 200 && h["servers"].get("gone").is_none() {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(back, "/health stayed 503 once the file dropped the server");
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
}

#[tokio::test]
async fn a_change_to_the_file_while_the_servers_start_is_applied_by_watch() {
    let dir = tempdir("gw-watch-early");
    let slow = fixture(&dir, "slow", &["--start-delay-ms", "1500"]);
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        json!({ "mcpServers": { "slow": slow } }).to_string(),
    )
    .unwrap();
    let starting = tokio::spawn({
        let (dir, config) = (dir.clone(), config.clone());
        async move { serve_file(&dir, &config, &["--watch"], &[]).await }
    });
    // `slow` is running, not ready yet: the gateway is still starting.
    let mid = common::eventually(PATIENCE, || dir.join("slow.pids").exists()).await;
    assert!(mid.is_some(), "slow did not start");
    std::fs::write(
        &config,
        json!({ "mcpServers": { "slow": slow, "added": fixture(&dir, "added", &[]) } }).to_string(),
    )
    .unwrap();
    let gw = starting.await.unwrap();
    let mut added = false;
    for _ in 0..400 {
        let (_, h) = gw.health().await;
        if h["servers"]["added"]["status"] == "ready" {
            added = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        added,
        "the change made while the servers started was never applied"
    );
    gw.terminate_clean().await;
}

#[tokio::test]
async fn health_answers_503_while_a_server_starts_and_an_early_request_waits_for_the_start() {
    let dir = tempdir("gw-health-starting");
    // `late` answers its first request after 8 s; the ready wait is 60 s.
    up_and_late(&dir, 8000);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = spawn_serve(&dir, &listen, &[]);
    let at = gateway_support::At {
        addr: listen.parse().unwrap(),
    };
    // Mid-start: both servers spawned, `late` not answering yet.
    let started = common::eventually(PATIENCE, || {
        dir.join("up.pids").exists() && dir.join("late.pids").exists()
    })
    .await;
    assert!(started.is_some(), "the servers did not start");
    // An orchestrator's probe gets an answer now, not after the start.
    let (status, body) = tokio::time::timeout(Duration::from_secs(4), at.health())
        .await
        .expect("/health did not answer while the servers started");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "starting", "{body}");
    assert_eq!(body["servers"]["late"]["status"], "starting", "{body}");
    // A request sent now is answered once the start is over, by the gateway.
    let sid = tokio::time::timeout(PATIENCE, at.session("/mcp", &[], json!({})))
        .await
        .expect("the early request was not answered after the start");
    let listed = at
        .legacy("/mcp", &sid, &[], 1, "tools/list", json!({}))
        .await;
    let names = gateway_support::tool_names(&listed.json().await);
    assert!(names.iter().any(|n| n.starts_with("late__")), "{names:?}");
    let (status, body) = at.health().await;
    assert_eq!(status, 200, "{body}");
    let pids = up_and_late_pids(&dir);
    let status = sigterm(&mut child).await;
    assert_eq!(status.code(), Some(0));
    let gone = common::eventually(Duration::from_secs(5), || all_gone(&pids)).await;
    assert!(gone.is_some(), "a server outlived mcp serve: {pids:?}");
}

#[tokio::test]
async fn a_call_refused_outside_the_grant_is_logged_and_counted_as_forbidden() {
    let dir = tempdir("gw-forbidden-logged");
    std::fs::write(
        dir.join("tokens.json"),
        json!({ "clients": {
            "ci": { "token": "ci-token-0123456789abcdef", "servers": { "a": ["echo"] } },
            "ops": { "token": "ops-token-0123456789abcd", "servers": {}, "operator": true }
        }})
        .to_string(),
    )
    .unwrap();
    let tokens = dir.join("tokens.json").display().to_string();
    let log = dir.join("calls.jsonl").display().to_string();
    let gw = serve(
        &dir,
        json!({ "a": fixture(&dir, "a", &[]) }),
        &["--tokens", &tokens, "--log-calls", &log],
        &[],
    )
    .await;
    let ci = [("authorization", "Bearer ci-token-0123456789abcdef")];
    let r = gw
        .modern(
            "/mcp",
            &ci,
            1,
            "tools/call",
            json!({ "name": "a__add", "arguments": { "a": 1, "b": 2 } }),
        )
        .await;
    assert_eq!(r.status, 403);
    let r = gw
        .modern(
            "/mcp",
            &ci,
            2,
            "tools/call",
            json!({ "name": "a__echo", "arguments": { "text": "x" } }),
        )
        .await;
    assert_eq!(r.status, 200);
    // Both calls are in the log, in order; the log is written by a thread.
    let mut lines: Vec<serde_json::Value> = Vec::new();
    common::eventually(PATIENCE, || {
        lines = std::fs::read_to_string(dir.join("calls.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        lines.len() >= 2
    })
    .await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["outcome"], "forbidden", "{:?}", lines);
    assert_eq!(lines[0]["client"], "ci", "{:?}", lines);
    assert_eq!(lines[0]["server"], "a", "{:?}", lines);
    assert_eq!(lines[0]["tool"], "add", "{:?}", lines);
    assert_eq!(lines[1]["outcome"], "ok", "{:?}", lines);
    let metrics = gw
        .send(
            "GET",
            "/metrics",
            &[("authorization", "Bearer ops-token-0123456789abcd")],
            None,
        )
        .await
        .bytes()
        .await;
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("mcp_gateway_requests_total{")
                && l.contains("server=\"a\"")
                && l.contains("outcome=\"forbidden\"")
                && l.ends_with(" 1")),
        "{metrics}"
    );
    gw.terminate_clean().await;
}

#[tokio::test]
async fn watch_applies_a_rewrite_of_the_same_length_and_modification_time() {
    let dir = tempdir("gw-watch-same-stamp");
    let config = dir.join("servers.json");
    let before = json!({ "mcpServers": { "aa": fixture(&dir, "aa", &[]) } }).to_string();
    let after = json!({ "mcpServers": { "bb": fixture(&dir, "bb", &[]) } }).to_string();
    assert_eq!(before.len(), after.len());
    std::fs::write(&config, &before).unwrap();
    let gw = serve_file(&dir, &config, &["--watch"], &[]).await;
    let mtime = std::fs::metadata(&config).unwrap().modified().unwrap();
    std::fs::write(&config, &after).unwrap();
    // As a rewrite within one tick of a coarse file system clock looks.
    std::fs::File::options()
        .write(true)
        .open(&config)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let mut status = serde_json::Value::Null;
    for _ in 0..400 {
        let (_, h) = gw.health().await;
        status = h["servers"].clone();
        if status["bb"]["status"] == "ready" && status.get("aa").is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status["bb"]["status"], "ready", "{status}");
    assert!(status.get("aa").is_none(), "{status}");
    gw.terminate_clean().await;
}

#[tokio::test]
async fn watch_keeps_serving_while_the_config_is_a_fifo_and_applies_the_next_change() {
    let dir = tempdir("gw-watch-fifo");
    let config = dir.join("servers.json");
    let a = fixture(&dir, "a", &[]);
    std::fs::write(
        &config,
        json!({ "mcpServers": { "a": a.clone() } }).to_string(),
    )
    .unwrap();
    let gw = serve_file(&dir, &config, &["--watch"], &[]).await;
    // The config path is a FIFO for 2 s (nobody ever writes to it).
    let fifo = dir.join("servers.fifo");
    common::mkfifo(&fifo);
    std::fs::rename(&fifo, &config).unwrap();
    let began = std::time::Instant::now();
    let mut slowest = Duration::ZERO;
    while began.elapsed() < Duration::from_secs(2) {
        let asked = std::time::Instant::now();
        let (status, _) = tokio::time::timeout(Duration::from_secs(5), gw.health())
            .await
            .unwrap_or_else(|_| {
                panic!("/health did not answer in 5 s while the config was a FIFO")
            });
        assert_eq!(status, 200);
        slowest = slowest.max(asked.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    common::figure(
        "slowest /health while the config was a FIFO",
        format!("{slowest:?}"),
    );
    // Then a real change, written aside and renamed over the FIFO.
    let next = dir.join("servers.next");
    std::fs::write(
        &next,
        json!({ "mcpServers": { "a": a, "b": fixture(&dir, "b", &[]) } }).to_string(),
    )
    .unwrap();
    std::fs::rename(&next, &config).unwrap();
    let applied = std::time::Instant::now();
    let mut added = false;
    while applied.elapsed() < Duration::from_secs(15) {
        let Ok((_, h)) = tokio::time::timeout(Duration::from_secs(5), gw.health()).await else {
            break;
        };
        if h["servers"]["b"]["status"] == "ready" {
            added = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    common::figure(
        "the change after the FIFO applied",
        format!("{added} after {:?}", applied.elapsed()),
    );
    assert!(added, "the change after the FIFO was never applied");
    let end = gw.terminate().await;
    assert_eq!(end.code, Some(0), "{}", end.stderr);
    let said = end.stderr.lines().filter(|l| l.contains("FIFO")).count();
    assert_eq!(said, 1, "the FIFO is said once: {}", end.stderr);
}

/// `mcp serve --listen LISTEN --config DIR/servers.json ARGS...`, its
/// stderr piped.
fn spawn_serve(dir: &std::path::Path, listen: &str, args: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"))
        .args(["serve", "--listen", listen, "--config"])
        .arg(dir.join("servers.json"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// SIGTERM to `child`; its exit status.
async fn sigterm(child: &mut tokio::process::Child) -> std::process::ExitStatus {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id().unwrap() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("mcp serve did not exit after SIGTERM")
        .unwrap()
}

/// `DIR/servers.json` with two fixture servers: `up`, and `late`, which
/// answers its first request after `delay_ms`.
fn up_and_late(dir: &std::path::Path, delay_ms: u64) {
    let delay = delay_ms.to_string();
    std::fs::write(
        dir.join("servers.json"),
        json!({ "mcpServers": {
            "up": fixture(dir, "up", &[]),
            "late": fixture(dir, "late", &["--start-delay-ms", &delay]),
        }})
        .to_string(),
    )
    .unwrap();
}

/// The pids `up_and_late`'s servers recorded.
fn up_and_late_pids(dir: &std::path::Path) -> Vec<u32> {
    ["up", "late"]
        .iter()
        .flat_map(|n| common::read_pids(&dir.join(format!("{n}.pids"))))
        .collect()
}
