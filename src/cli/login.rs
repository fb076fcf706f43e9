//! `mcp --url` and protected servers: the command logs in with OAuth
//! (`conduit_mcp::oauth`) before it talks to the server, and keeps the
//! tokens in a file of mode 0600 for the next run.
//!
//! The user is sent to the authorization URL (printed on stderr); the
//! authorization server brings the browser back to a loopback redirect
//! URI on which the command listens (`http://127.0.0.1:PORT/callback`),
//! for at most five minutes. The token file is `$MCP_TOKEN_FILE`, else
//! `$XDG_CONFIG_HOME/conduit-mcp/oauth-tokens.json`, else
//! `~/.config/conduit-mcp/oauth-tokens.json`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::oauth::{
    AuthorizationRequest, AuthorizationResponse, FileStore, MemoryStore, OAuth, OAuthConfig,
};

/// The port tried first for the redirect URI: the same one run after run,
/// so a client registered by an earlier run still matches.
const PREFERRED_PORT: u16 = 33418;

/// How long the user has to come back from the browser.
const WAIT: Duration = Duration::from_secs(300);

/// Largest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;

/// The token file (`None`: no home directory, tokens kept in memory).
pub(super) fn token_file() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("MCP_TOKEN_FILE") {
        return Some(PathBuf::from(p));
    }
    let config = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("conduit-mcp").join("oauth-tokens.json"))
}

/// Set once the user is asked to authorize: from then on the wait is the
/// user's (bounded by [`WAIT`]), not the server's.
pub(super) type Asked = Arc<AtomicBool>;

/// Resolves when `limit` has passed and the user was not asked to
/// authorize meanwhile: the server did not answer the login's probe in
/// time. Never resolves once the user was asked.
pub(super) async fn server_silent_for(limit: Duration, asked: &Asked) {
    tokio::time::sleep(limit).await;
    if asked.load(Ordering::Acquire) {
        std::future::pending::<()>().await;
    }
}

/// Authorization for `mcp`: a loopback listener for the redirect, tokens
/// in the token file; and the flag set when the user is asked.
pub(super) fn oauth() -> Result<(OAuth, Asked), String> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", PREFERRED_PORT))
        .or_else(|_| std::net::TcpListener::bind(("127.0.0.1", 0)))
        .map_err(|e| format!("cannot listen for the authorization redirect: {e}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("cannot listen for the authorization redirect: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let listener = Arc::new(listener);
    let asked = Asked::default();
    let flag = asked.clone();
    let authorizer = move |req: AuthorizationRequest| {
        let listener = listener.clone();
        flag.store(true, Ordering::Release);
        async move {
            eprintln!(
                "This server needs authorization. Open this address in a browser:\n\n  {}\n\nWaiting for the browser to come back to {} ...",
                req.url, req.redirect_uri
            );
            let std = listener.try_clone().map_err(|e| e.to_string())?;
            let listener = tokio::net::TcpListener::from_std(std).map_err(|e| e.to_string())?;
            tokio::time::timeout(WAIT, callback(&listener))
                .await
                .map_err(|_| format!("no answer from the browser within {} s", WAIT.as_secs()))?
        }
    };
    let mut config = OAuthConfig::new(redirect, authorizer).client_name("mcp (conduit-mcp)");
    config = match token_file() {
        Some(path) => config.store(FileStore::new(path)),
        None => config.store(MemoryStore::new()),
    };
    Ok((OAuth::new(config), asked))
}

/// Serves the redirect: the first `GET /callback?...` is the answer.
async fn callback(listener: &tokio::net::TcpListener) -> Result<AuthorizationResponse, String> {
    loop {
        let (mut conn, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let mut head = Vec::new();
        let mut buf = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let text = String::from_utf8_lossy(&head);
        let target = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("GET "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or_default()
            .to_owned();
        if !target.starts_with("/callback") {
            let _ = conn
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let answer = AuthorizationResponse::from_redirect(&target);
        let page = match &answer {
            Ok(_) => "Authorization received: you can close this tab and go back to the terminal.",
            Err(_) => "Authorization failed: see the terminal.",
        };
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = conn.write_all(reply.as_bytes()).await;
        return answer.map_err(|e| e.to_string());
    }
}
