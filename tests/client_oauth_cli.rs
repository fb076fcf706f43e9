//! `mcp --url` and a protected server: the command prints the
//! authorization URL, takes the browser's redirect on its loopback
//! listener, keeps the tokens in its token file (mode 0600), and the next
//! run reuses them without asking again.

mod client_oauth_support;
mod common;

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
