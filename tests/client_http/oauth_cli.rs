//! `mcp --url` and a protected server: the command prints the
//! authorization URL, takes the browser's redirect on its loopback
//! listener, keeps the tokens in its token file (mode 0600), and the next
//! run reuses them without asking again.

use crate::client_oauth_support;
use crate::common;

use std::process::Stdio;
use std::time::Duration;

use client_oauth_support::{get, AuthFake, Knobs};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

const PATIENCE: Duration = Duration::from_secs(60);

fn mcp(args: &[&str], token_file: &std::path::Path) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp"))
        .args(args)
        .env("MCP_TOKEN_FILE", token_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("mcp runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_logs_in_through_the_browser_once_and_reuses_the_kept_token() {
    let fake = AuthFake::start(Knobs::default()).await;
    let dir = common::tempdir("oauth-cli");
    let file = dir.join("tokens.json");
    let url = fake.url();

    // First run: the authorization URL on stderr; a "browser" visits it
    // and follows the redirect back to mcp's listener.
    let mut child = mcp(&["tools", "--url", &url], &file);
    through_the_browser(&mut child, &fake).await;
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .await
        .unwrap();
    let code = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(code.code(), Some(0), "{stdout}");
    assert!(stdout.contains("\"t\""), "{stdout}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    // Second run: the kept token; nobody is asked.
    let out = mcp(&["tools", "--url", &url], &file).wait_with_output();
    let out = tokio::time::timeout(PATIENCE, out).await.unwrap().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("needs authorization"), "{err}");
    fake.seen(|s| {
        assert_eq!(s.authorizations.len(), 1);
        assert_eq!(s.registrations.len(), 1);
    });
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_login_and_reuse_never_print_a_token_a_code_or_a_client_secret() {
    let fake = AuthFake::start(Knobs {
        refresh: true,
        ..Knobs::default()
    })
    .await;
    let dir = common::tempdir("oauth-cli-verbose");
    let file = dir.join("tokens.json");
    let url = fake.url();
    let mut child = mcp(&["tools", "--url", &url, "--verbose"], &file);
    let (mut said, code) = through_the_browser(&mut child, &fake).await;
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0), "{said}");
    // The second run reuses the kept token, also with --verbose.
    let out = mcp(&["tools", "--url", &url, "--verbose"], &file).wait_with_output();
    let out = tokio::time::timeout(PATIENCE, out).await.unwrap().unwrap();
    assert_eq!(out.status.code(), Some(0));
    said.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("DEBUG"), "--verbose logged: {said}");
    // What the token file keeps is what must never be printed.
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let server = &kept[url.as_str()];
    let mut secrets: Vec<String> = [
        &server["tokens"]["access_token"],
        &server["tokens"]["refresh_token"],
        &server["client"]["client_secret"],
    ]
    .iter()
    .map(|v| v.as_str().expect("kept").to_owned())
    .collect();
    secrets.push(code);
    for secret in &secrets {
        assert!(!said.contains(secret.as_str()), "{secret} printed:\n{said}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Plays the user of `child` (an `mcp` that logs in to `fake`): takes the
/// authorization URL from its stderr, visits it and follows the redirect
/// to mcp's listener. Returns all of mcp's stderr (read to its end) and
/// the authorization code the redirect carried.
async fn through_the_browser(
    child: &mut tokio::process::Child,
    fake: &AuthFake,
) -> (String, String) {
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = String::new();
    let auth_url = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            said.push_str(&line);
            said.push('\n');
            if let Some(u) = line
                .trim()
                .strip_prefix(&format!("{}/authorize?", fake.base))
            {
                return format!("{}/authorize?{u}", fake.base);
            }
        }
        panic!("mcp ended without an authorization URL: {said}");
    })
    .await
    .expect("the authorization URL in time");
    let (status, location) = get(&auth_url).await;
    assert_eq!(status, 302);
    let location = location.expect("a redirect");
    let code = location
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("code="))
        .expect("a code")
        .to_owned();
    let (status, _) = get(&location).await;
    assert_eq!(status, 200, "mcp's listener took the redirect");
    tokio::time::timeout(PATIENCE, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            said.push_str(&line);
            said.push('\n');
        }
    })
    .await
    .expect("mcp ends");
    (said, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_server_of_a_config_file_is_logged_in_to_once_and_its_token_reused() {
    let fake = AuthFake::start(Knobs::default()).await;
    let dir = common::tempdir("oauth-cli-config");
    let file = dir.join("tokens.json");
    let config = dir.join(".mcp.json");
    let servers =
        serde_json::json!({ "mcpServers": { "remote": { "type": "http", "url": fake.url() } } });
    std::fs::write(&config, servers.to_string()).unwrap();
    let config = config.to_str().unwrap();
    // The file's only server, and the same one named with --server.
    let mut child = mcp(&["tools", "--config", config], &file);
    let (said, _) = through_the_browser(&mut child, &fake).await;
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0), "{said}");
    let out = mcp(
        &["call", "t", "--config", config, "--server", "remote"],
        &file,
    )
    .wait_with_output();
    let out = tokio::time::timeout(PATIENCE, out).await.unwrap().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("needs authorization"), "{err}");
    fake.seen(|s| assert_eq!(s.authorizations.len(), 1));
    std::fs::remove_dir_all(dir).ok();
}

/// The authorization URL `child` (an `mcp` logging in to `fake`) prints,
/// and its stderr as read so far.
async fn authorization_url(
    stderr: &mut tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
    fake: &AuthFake,
) -> String {
    let mut said = String::new();
    tokio::time::timeout(PATIENCE, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            said.push_str(&line);
            said.push('\n');
            if let Some(u) = line
                .trim()
                .strip_prefix(&format!("{}/authorize?", fake.base))
            {
                return format!("{}/authorize?{u}", fake.base);
            }
        }
        panic!("mcp ended without an authorization URL: {said}");
    })
    .await
    .expect("the authorization URL in time")
}

/// Where the authorization server sends the browser back for
/// `auth_url`: the whole redirect, its callback URL without the query, and
/// the listener's `host:port`.
async fn redirect(auth_url: &str) -> (String, String, String) {
    let (status, location) = get(auth_url).await;
    assert_eq!(status, 302);
    let location = location.expect("a redirect");
    let callback = location.split('?').next().unwrap().to_owned();
    let authority = callback
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .unwrap()
        .to_owned();
    (location, callback, authority)
}

/// A GET with a deadline: `None` when no answer came within it.
async fn get_within(url: &str, limit: Duration) -> Option<u16> {
    tokio::time::timeout(limit, get(url))
        .await
        .ok()
        .map(|(s, _)| s)
}

/// A browser's GET of `url` at `authority`: connect and send at once (on
/// this thread, blocking), then read the answer (within 10 s); its status,
/// `None` when none came.
fn browser_get(authority: &str, url: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let path = &url[url.find(authority)? + authority.len()..];
    let mut conn = std::net::TcpStream::connect(authority).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
}

/// What is left of `child`'s run: its exit code and stdout.
async fn finish(
    mut child: tokio::process::Child,
    mut stderr: tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
) -> (Option<i32>, String, String) {
    let mut said = String::new();
    let mut stdout = String::new();
    let mut out = child.stdout.take().unwrap();
    let ended = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            said.push_str(&line);
            said.push('\n');
        }
        out.read_to_string(&mut stdout).await.unwrap();
        child.wait().await.unwrap()
    })
    .await;
    let code = match ended {
        Ok(status) => status.code(),
        Err(_) => {
            let _ = child.start_kill();
            None
        }
    };
    (code, stdout, said)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_connections_to_the_login_listener_neither_stall_nor_end_the_login() {
    let fake = AuthFake::start(Knobs::default()).await;
    let dir = common::tempdir("oauth-cli-callback");
    let file = dir.join("tokens.json");
    let mut child = mcp(&["tools", "--url", &fake.url()], &file);
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let auth_url = authorization_url(&mut stderr, &fake).await;
    let (location, callback, authority) = redirect(&auth_url).await;

    // Another local process: one connection that never sends a byte,
    // one request elsewhere, and callbacks with another state (or none),
    // one of them reporting an error, before the browser comes back.
    let _silent = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let limit = Duration::from_secs(10);
    let elsewhere = get_within(&format!("http://{authority}/favicon.ico"), limit).await;
    let forged = get_within(&format!("{callback}?code=forged&state=forged"), limit).await;
    let stateless = get_within(&format!("{callback}?code=forged"), limit).await;
    let denied = get_within(&format!("{callback}?error=access_denied&state=x"), limit).await;
    let real = get_within(&location, limit).await;
    let (code, stdout, said) = finish(child, stderr).await;
    common::figure(
        "login listener: silent connection, /favicon.ico, forged, stateless, denied, browser",
        format!("{elsewhere:?} {forged:?} {stateless:?} {denied:?} {real:?}; mcp exit {code:?}"),
    );
    assert_eq!(
        (elsewhere, forged, stateless, denied),
        (Some(404), Some(400), Some(400), Some(400)),
        "{said}"
    );
    assert_eq!(real, Some(200), "the browser's redirect: {said}");
    assert_eq!(code, Some(0), "{said}");
    assert!(stdout.contains("\"t\""), "{stdout}");
    fake.seen(|s| assert_eq!(s.token_requests.len(), 1, "only the real code exchanged"));
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_silent_connections_does_not_keep_the_browsers_redirect_out() {
    let fake = AuthFake::start(Knobs::default()).await;
    let dir = common::tempdir("oauth-cli-flood");
    let file = dir.join("tokens.json");
    let mut child = mcp(&["tools", "--url", &fake.url()], &file);
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let auth_url = authorization_url(&mut stderr, &fake).await;
    let (location, callback, authority) = redirect(&auth_url).await;

    // Another local process opens connections that never send a byte, as
    // fast as it can, for as long as the browser is at it: every one the
    // listener still holds open stays open.
    let (filled, full) = tokio::sync::oneshot::channel();
    let target = authority.clone();
    let flood = tokio::spawn(async move {
        let mut filled = Some(filled);
        let (mut open, mut opened) = (Vec::<tokio::net::TcpStream>::new(), 0u64);
        loop {
            if let Ok(c) = tokio::net::TcpStream::connect(&target).await {
                open.push(c);
                opened += 1;
            }
            // Those the listener closed are let go.
            open.retain(|c| {
                let mut byte = [0u8; 1];
                matches!(c.try_read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            });
            if opened >= 256 {
                if let Some(f) = filled.take() {
                    let _ = f.send(());
                }
            }
        }
    });
    full.await.expect("the flood runs");
    // The browser comes back during the flood: five visits with another
    // state (each answered 400 by a listener that serves), then its own;
    // as a browser does, each sends its request as soon as it connects.
    let visit = |url: String| {
        let authority = authority.clone();
        tokio::task::spawn_blocking(move || browser_get(&authority, &url))
    };
    let mut served = Vec::new();
    for i in 0..5 {
        let forged = format!("{callback}?code=forged&state=forged-{i}");
        served.push(visit(forged).await.unwrap());
    }
    let real = visit(location).await.unwrap();
    flood.abort();
    let (code, stdout, said) = finish(child, stderr).await;
    common::figure(
        "login listener during a flood of silent connections: 5 visits with another state, then the browser's redirect",
        format!("{served:?} {real:?}; mcp exit {code:?}"),
    );
    assert_eq!(served, [Some(400); 5], "{said}");
    assert_eq!(real, Some(200), "the browser's redirect: {said}");
    assert_eq!(code, Some(0), "{said}");
    assert!(stdout.contains("\"t\""), "{stdout}");
    std::fs::remove_dir_all(dir).ok();
}
