//! `mcp --url` and protected servers: the command logs in with OAuth,
//! `conduit_mcp::oauth`, before it talks to the server, and keeps the
//! tokens in a file of mode 0600 for the next run.
//!
//! The user is sent to the authorization URL, printed on stderr. The
//! authorization server brings the browser back to a loopback redirect
//! URI on which the command listens for at most five minutes:
//! `http://127.0.0.1:PORT/callback`. The token file is `$MCP_TOKEN_FILE`, else
//! `$XDG_CONFIG_HOME/conduit-mcp/oauth-tokens.json`, else
//! `~/.config/conduit-mcp/oauth-tokens.json`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::args::Options;
use super::{interrupted, Fail, DEFAULT_TIMEOUT};
use crate::client::{ClientConfig, HttpOptions};
use crate::oauth::{
    AuthError, AuthorizationRequest, AuthorizationResponse, FileStore, MemoryStore, OAuth,
    OAuthConfig,
};

/// The port tried first for the redirect URI: the same one run after run,
/// so a client registered by an earlier run still matches.
const PREFERRED_PORT: u16 = 33418;

/// How long the user has to come back from the browser.
const WAIT: Duration = Duration::from_secs(300);

/// Largest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;

/// The token file; `None` when there is no home directory, and tokens are
/// kept in memory.
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
/// user's, bounded by [`WAIT`], not the server's.
type Asked = Arc<AtomicBool>;

/// Resolves when `limit` has passed and the user was not asked to
/// authorize meanwhile: the server did not answer the login's probe in
/// time. Never resolves once the user was asked.
async fn server_silent_for(limit: Duration, asked: &Asked) {
    tokio::time::sleep(limit).await;
    if asked.load(Ordering::Acquire) {
        std::future::pending::<()>().await;
    }
}

/// Authorization for `mcp`: a loopback listener for the redirect, tokens
/// in the token file; and the flag set when the user is asked.
fn oauth() -> Result<(OAuth, Asked), String> {
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
            let state = state_of(&req.url)
                .ok_or_else(|| "the authorization URL carries no state".to_owned())?;
            let std = listener.try_clone().map_err(|e| e.to_string())?;
            let listener = tokio::net::TcpListener::from_std(std).map_err(|e| e.to_string())?;
            tokio::time::timeout(WAIT, callback(&listener, &state))
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

/// Logs in to the server of `http` now, or reuses the kept token, so that
/// the user's time in the browser does not count against a request's
/// timeout. The probe is bounded by `--timeout-ms` as any request is; the
/// wait for the browser is not, since it has [`WAIT`].
async fn log_in(
    options: &Options,
    oauth: &OAuth,
    asked: &Asked,
    http: &HttpOptions,
) -> Result<(), LoginError> {
    asked.store(false, Ordering::Release);
    let limit = options.timeout().unwrap_or(DEFAULT_TIMEOUT);
    tokio::select! {
        r = oauth.login(http) => r.map(drop).map_err(|e| match e {
            e @ AuthError::Unreachable { .. } => LoginError::Server(e.to_string()),
            e => LoginError::Authorization(format!("authorization: {e}")),
        }),
        () = server_silent_for(limit, asked) => Err(LoginError::Server(format!(
            "no answer from {} within {} ms",
            http.display_url(),
            limit.as_millis()
        ))),
    }
}

/// Why a login did not happen.
enum LoginError {
    /// The server could not be reached or did not answer.
    Server(String),
    /// The server asked for authorization, which failed.
    Authorization(String),
}

impl From<LoginError> for Fail {
    fn from(e: LoginError) -> Self {
        match e {
            LoginError::Server(m) | LoginError::Authorization(m) => Fail::Transport(m),
        }
    }
}

/// `config` with authorization, logged in to first, when it is an HTTP
/// server: that of `--url`, or the one server of a config file. Otherwise
/// `config` as it is.
pub(super) async fn authorized(
    options: &Options,
    config: ClientConfig,
) -> Result<ClientConfig, Fail> {
    let Some(http) = config.transport.as_http() else {
        return Ok(config);
    };
    let (oauth, asked) = self::oauth().map_err(Fail::Transport)?;
    tokio::select! {
        r = log_in(options, &oauth, &asked, http) => r?,
        f = interrupted() => return Err(f),
    }
    Ok(config.oauth(oauth))
}

/// Every HTTP server of a host logged in to, one after the other, with one
/// browser at a time and one redirect listener. A server whose login fails
/// for authorization reasons is said on stderr; either way it is left
/// without authorization, and the host reports it as not ready, as any
/// server that does not start.
pub(super) async fn authorize_all(
    options: &Options,
    servers: &mut BTreeMap<String, ClientConfig>,
) -> Result<(), Fail> {
    if !servers.values().any(|c| c.transport.as_http().is_some()) {
        return Ok(());
    }
    let (oauth, asked) = self::oauth().map_err(Fail::Transport)?;
    let all = async {
        for (name, config) in servers.iter_mut() {
            let Some(http) = config.transport.as_http_mut() else {
                continue;
            };
            match log_in(options, &oauth, &asked, http).await {
                Ok(()) => http.oauth = Some(oauth.clone()),
                // The host says it when the server is not ready.
                Err(LoginError::Server(_)) => {}
                Err(LoginError::Authorization(m)) => eprintln!("mcp: server {name}: {m}"),
            }
        }
    };
    tokio::select! {
        () = all => Ok(()),
        f = interrupted() => Err(f),
    }
}

/// Serves the redirect until the browser comes back: connections are read
/// at once, each within [`READ_DEADLINE`], and only `GET /callback` with
/// the `state` of this login ends the wait. Any other request is answered
/// 404 for another path, or 400 for another or no `state`, and the wait
/// goes on, so another local process can neither stall the login nor end
/// it. At most [`MAX_CONNECTIONS`] are open at once: a new connection then
/// closes the oldest one that is still sending its request and has nothing
/// unread waiting. A browser sends its request as soon as it connects, so
/// connections that send nothing cannot keep the browser's out.
async fn callback(
    listener: &tokio::net::TcpListener,
    state: &str,
) -> Result<AuthorizationResponse, String> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let mut conns = tokio::task::JoinSet::new();
    let mut open = std::collections::VecDeque::<Open>::new();
    loop {
        tokio::select! {
            Some(answer) = rx.recv() => return answer,
            accepted = listener.accept() => {
                let (conn, socket) = match accepted.and_then(|(conn, _)| Open::split(conn)) {
                    Ok(parts) => parts,
                    // Out of descriptors, say: the listener itself is fine.
                    Err(e) => {
                        tracing::debug!(error = %e, "accept failed on the redirect listener");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                while conns.try_join_next().is_some() {}
                open.retain(|o| !o.task.is_finished());
                if open.len() >= MAX_CONNECTIONS {
                    let oldest = open
                        .iter()
                        .position(Open::idle)
                        .or_else(|| open.iter().position(|o| !o.read.load(Ordering::Acquire)));
                    // Every one is being answered (at once): the newcomer
                    // is closed instead.
                    let Some(oldest) = oldest.and_then(|i| open.remove(i)) else {
                        continue;
                    };
                    tracing::debug!("the redirect listener is full: its oldest connection that sends nothing is closed");
                    oldest.task.abort();
                }
                let read = Arc::new(AtomicBool::new(false));
                let task = conns.spawn(serve_redirect(conn, state.to_owned(), tx.clone(), read.clone()));
                open.push_back(Open { task, socket, read });
                // Its request, if already sent, is read before the next
                // accept.
                tokio::task::yield_now().await;
            }
        }
    }
}

/// A connection to the redirect listener, as the listener keeps it.
struct Open {
    task: tokio::task::AbortHandle,
    /// A second handle on its socket, to see bytes its task has not read
    /// yet. It is closed with this value.
    socket: std::net::TcpStream,
    /// Set once its request is read: it is being answered.
    read: Arc<AtomicBool>,
}

impl Open {
    /// `conn` for its task, and a second handle on its socket.
    fn split(
        conn: tokio::net::TcpStream,
    ) -> std::io::Result<(tokio::net::TcpStream, std::net::TcpStream)> {
        let conn = conn.into_std()?;
        let socket = conn.try_clone()?;
        Ok((tokio::net::TcpStream::from_std(conn)?, socket))
    }

    /// Still sending its request, and nothing it sent waits unread. The
    /// socket is non-blocking, so the look does not wait.
    fn idle(&self) -> bool {
        !self.read.load(Ordering::Acquire)
            && !matches!(self.socket.peek(&mut [0u8; 1]), Ok(n) if n > 0)
    }
}

/// Time one connection to the redirect listener has to send its request.
const READ_DEADLINE: Duration = Duration::from_secs(10);

/// Connections to the redirect listener open at once.
const MAX_CONNECTIONS: usize = 64;

/// One connection to the redirect listener: its request is read within
/// [`READ_DEADLINE`], then `read` is set, and answered. The callback of
/// this login, with its `state`, goes to `done`.
async fn serve_redirect(
    mut conn: tokio::net::TcpStream,
    state: String,
    done: tokio::sync::mpsc::Sender<Result<AuthorizationResponse, String>>,
    read: Arc<AtomicBool>,
) {
    let mut head = Vec::new();
    let head_read = tokio::time::timeout(READ_DEADLINE, async {
        let mut buf = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    });
    if head_read.await.is_err() {
        return;
    }
    read.store(true, Ordering::Release);
    let text = String::from_utf8_lossy(&head);
    let line = text.lines().next().unwrap_or_default();
    let (method, target) = line.split_once(' ').unwrap_or_default();
    let target = target.split(' ').next().unwrap_or_default();
    let url = reqwest::Url::parse("http://127.0.0.1/").and_then(|base| base.join(target));
    let reply = |status: &str, page: &str| {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        )
    };
    let (answer, response) = match url {
        Ok(u) if u.path() == "/callback" && method == "GET" => {
            let sent = u
                .query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned());
            if sent.is_some_and(|s| same(&s, &state)) {
                let answer = AuthorizationResponse::from_redirect(target);
                let page = match &answer {
                    Ok(_) => "Authorization received: you can close this tab and go back to the terminal.",
                    Err(_) => "Authorization failed: see the terminal.",
                };
                (
                    Some(answer.map_err(|e| e.to_string())),
                    reply("200 OK", page),
                )
            } else {
                tracing::debug!("a redirect without this login's state ignored");
                (
                    None,
                    reply("400 Bad Request", "Not the answer to this login."),
                )
            }
        }
        _ => (None, reply("404 Not Found", "")),
    };
    let _ = conn.write_all(response.as_bytes()).await;
    // The listener's second handle keeps the socket open: the end is said.
    let _ = conn.shutdown().await;
    if let Some(answer) = answer {
        let _ = done.send(answer).await;
    }
}

/// `a == b`, in a time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The `state` of an authorization URL.
fn state_of(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
}
