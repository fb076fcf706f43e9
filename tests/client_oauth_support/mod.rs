//! A small protected MCP server and its authorization server in one axum
//! app, for the OAuth tests: resource metadata, authorization server
//! metadata, dynamic registration, a token endpoint (codes, refresh
//! tokens), and an `/mcp` endpoint (2025-11-25 era, JSON answers) that
//! wants a bearer token it issued. The authorization endpoint is the test's
//! authorizer itself ([`AuthFake::authorizer`]): it records the
//! authorization request and "approves" it at once. Every request of the
//! flow is recorded; the knobs say how the servers misbehave.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use conduit_mcp::oauth::{AuthorizationRequest, AuthorizationResponse};
use conduit_mcp::server::http::axum;
use conduit_mcp::Secret;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// How the servers behave (set before or during a test).
#[derive(Debug, Clone, Default)]
pub struct Knobs {
    /// The `issuer` the metadata claims (default: the right one).
    pub metadata_issuer: Option<String>,
    /// The resource metadata's `resource` (default: the endpoint).
    pub resource: Option<String>,
    /// `scope` of the 401 challenge.
    pub challenge_scope: Option<String>,
    /// `iss` in the redirect (default: the issuer).
    pub redirect_iss: Option<String>,
    /// tools/call needs this scope (403 insufficient_scope otherwise).
    pub call_scope: Option<String>,
    /// Issue refresh tokens.
    pub refresh: bool,
    /// The challenge's `resource_metadata` (default: the server's own
    /// path-based well-known URL).
    pub resource_metadata: Option<String>,
    /// The resource metadata's `authorization_servers` (default: this
    /// server).
    pub authorization_servers: Option<Vec<String>>,
    /// The resource metadata answers 302 to this location instead.
    pub metadata_redirect: Option<String>,
    /// The resource metadata carries this many bytes of padding.
    pub metadata_padding: usize,
}

/// What the servers saw.
#[derive(Debug, Default)]
pub struct Seen {
    pub registrations: Vec<Value>,
    /// Query parameters of each authorization request.
    pub authorizations: Vec<HashMap<String, String>>,
    /// Form fields (and the Authorization header) of each token request.
    pub token_requests: Vec<(HashMap<String, String>, Option<String>)>,
    /// The bearer token of each /mcp request (None: without one).
    pub mcp_tokens: Vec<Option<String>>,
    /// Paths of every GET of metadata.
    pub metadata_gets: Vec<String>,
}

struct State {
    knobs: Knobs,
    seen: Seen,
    /// Issued access tokens and their scopes.
    tokens: HashMap<String, String>,
    refresh_tokens: HashMap<String, String>,
    /// code -> (challenge, scope)
    codes: HashMap<String, (String, String)>,
    next: u32,
}

pub struct AuthFake {
    pub base: String,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

/// `application/x-www-form-urlencoded` (or a query) decoded.
pub fn form(text: &str) -> HashMap<String, String> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' && i + 2 < b.len() {
                if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                    out.push(v);
                    i += 3;
                    continue;
                }
            }
            out.push(b[i]);
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

impl AuthFake {
    pub async fn start(knobs: Knobs) -> AuthFake {
        Self::start_at("127.0.0.1".parse().unwrap(), knobs).await
    }

    /// As [`start`](Self::start), listening on `ip` (its URLs name it).
    pub async fn start_at(ip: std::net::IpAddr, knobs: Knobs) -> AuthFake {
        use axum::body::Bytes;
        use axum::extract::{Path, State as S};
        use axum::http::{HeaderMap, StatusCode};
        use axum::response::{IntoResponse, Response};
        use axum::routing::{get, post};

        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            knobs,
            seen: Seen::default(),
            tokens: HashMap::new(),
            refresh_tokens: HashMap::new(),
            codes: HashMap::new(),
            next: 0,
        }));
        type St = (Arc<Mutex<State>>, String);
        let json_response = |status: u16, v: Value| -> Response {
            let mut r = (StatusCode::from_u16(status).unwrap(), v.to_string()).into_response();
            r.headers_mut()
                .insert("content-type", "application/json".parse().unwrap());
            r
        };
        let app = axum::Router::new()
            .route(
                "/.well-known/{*rest}",
                get(move |S((st, base)): S<St>, Path(rest): Path<String>| async move {
                    let mut s = st.lock().unwrap();
                    s.seen.metadata_gets.push(format!("/.well-known/{rest}"));
                    match rest.as_str() {
                        "oauth-protected-resource/mcp" => {
                            if let Some(to) = &s.knobs.metadata_redirect {
                                let mut r = StatusCode::FOUND.into_response();
                                r.headers_mut().insert("location", to.parse().unwrap());
                                return r;
                            }
                            json_response(
                                200,
                                json!({
                                    "resource": s.knobs.resource.clone().unwrap_or(format!("{base}/mcp")),
                                    "authorization_servers": s.knobs.authorization_servers.clone().unwrap_or(vec![base.clone()]),
                                    "padding": "x".repeat(s.knobs.metadata_padding),
                                }),
                            )
                        }
                        "oauth-authorization-server" => json_response(
                            200,
                            json!({
                                "issuer": s.knobs.metadata_issuer.clone().unwrap_or(base.clone()),
                                "authorization_endpoint": format!("{base}/authorize"),
                                "token_endpoint": format!("{base}/token"),
                                "registration_endpoint": format!("{base}/register"),
                                "response_types_supported": ["code"],
                                "code_challenge_methods_supported": ["S256"],
                                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                                "authorization_response_iss_parameter_supported": true,
                                "scopes_supported": ["mcp:read", "mcp:write", "offline_access"],
                            }),
                        ),
                        _ => json_response(404, json!({ "error": "not_found" })),
                    }
                }),
            )
            .route(
                "/authorize",
                get(move |S((st, base)): S<St>, uri: axum::http::Uri| async move {
                    let q = form(uri.query().unwrap_or(""));
                    let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
                    let (code, state, iss) = approve(&st, &base, q);
                    let mut location = format!("{redirect}?code={code}&iss={}", iss.replace(':', "%3A").replace('/', "%2F"));
                    if let Some(state) = state {
                        location.push_str(&format!("&state={state}"));
                    }
                    let mut r = StatusCode::FOUND.into_response();
                    r.headers_mut().insert("location", location.parse().unwrap());
                    r
                }),
            )
            .route(
                "/register",
                post(move |S((st, _)): S<St>, body: Bytes| async move {
                    let v: Value = serde_json::from_slice(&body).unwrap_or_default();
                    st.lock().unwrap().seen.registrations.push(v);
                    json_response(
                        201,
                        json!({
                            "client_id": "client-1",
                            "client_secret": "client-secret-1",
                            "token_endpoint_auth_method": "client_secret_basic",
                        }),
                    )
                }),
            )
            .route(
                "/token",
                post(move |S((st, _)): S<St>, headers: HeaderMap, body: Bytes| async move {
                    let f = form(&String::from_utf8_lossy(&body));
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    let mut s = st.lock().unwrap();
                    s.seen.token_requests.push((f.clone(), auth));
                    let scope = match f.get("grant_type").map(String::as_str) {
                        Some("authorization_code") => {
                            match s.codes.remove(f.get("code").map(String::as_str).unwrap_or("")) {
                                Some((_, scope)) => scope,
                                None => return json_response(400, json!({ "error": "invalid_grant" })),
                            }
                        }
                        Some("refresh_token") => {
                            match s.refresh_tokens.get(f.get("refresh_token").map(String::as_str).unwrap_or("")) {
                                Some(scope) => scope.clone(),
                                None => return json_response(400, json!({ "error": "invalid_grant" })),
                            }
                        }
                        _ => return json_response(400, json!({ "error": "unsupported_grant_type" })),
                    };
                    s.next += 1;
                    let token = format!("access-{}", s.next);
                    s.tokens.insert(token.clone(), scope.clone());
                    let mut answer = json!({
                        "access_token": token,
                        "token_type": "Bearer",
                        "expires_in": 3600,
                        "scope": scope,
                    });
                    if s.knobs.refresh {
                        let rt = format!("refresh-{}", s.next);
                        s.refresh_tokens.insert(rt.clone(), scope);
                        answer["refresh_token"] = json!(rt);
                    }
                    json_response(200, answer)
                }),
            )
            .route(
                "/mcp",
                post(move |S((st, base)): S<St>, headers: HeaderMap, body: Bytes| async move {
                    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
                    let bearer = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.strip_prefix("Bearer "))
                        .map(str::to_owned);
                    let mut s = st.lock().unwrap();
                    s.seen.mcp_tokens.push(bearer.clone());
                    let metadata = s
                        .knobs
                        .resource_metadata
                        .clone()
                        .unwrap_or(format!("{base}/.well-known/oauth-protected-resource/mcp"));
                    let granted = bearer.as_ref().and_then(|b| s.tokens.get(b).cloned());
                    let Some(granted) = granted else {
                        let scope = s
                            .knobs
                            .challenge_scope
                            .as_ref()
                            .map(|sc| format!(", scope=\"{sc}\""))
                            .unwrap_or_default();
                        let mut r = json_response(401, json!({ "error": "invalid_token" }));
                        r.headers_mut().insert(
                            "www-authenticate",
                            format!("Bearer resource_metadata=\"{metadata}\"{scope}")
                                .parse()
                                .unwrap(),
                        );
                        return r;
                    };
                    let method = req["method"].as_str().unwrap_or_default();
                    if method == "tools/call" {
                        if let Some(need) = s.knobs.call_scope.clone() {
                            if !granted.split(' ').any(|g| g == need) {
                                let mut r =
                                    json_response(403, json!({ "error": "insufficient_scope" }));
                                r.headers_mut().insert(
                                    "www-authenticate",
                                    format!("Bearer error=\"insufficient_scope\", scope=\"{need}\", resource_metadata=\"{metadata}\"")
                                        .parse()
                                        .unwrap(),
                                );
                                return r;
                            }
                        }
                    }
                    if req.get("id").is_none() {
                        return StatusCode::ACCEPTED.into_response();
                    }
                    let result = match method {
                        "initialize" => json!({
                            "protocolVersion": "2025-11-25",
                            "capabilities": { "tools": {} },
                            "serverInfo": { "name": "protected", "version": "1" },
                        }),
                        "tools/list" => json!({
                            "tools": [{ "name": "t", "inputSchema": { "type": "object" } }]
                        }),
                        "tools/call" => json!({ "content": [{ "type": "text", "text": "ok" }] }),
                        _ => json!({}),
                    };
                    json_response(200, json!({ "jsonrpc": "2.0", "id": req["id"], "result": result }))
                })
                .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
                .delete(|| async { StatusCode::OK }),
            )
            .with_state((state.clone(), base.clone()));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        AuthFake { base, state, task }
    }

    pub fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn knobs(&self, f: impl FnOnce(&mut Knobs)) {
        f(&mut self.state.lock().unwrap().knobs);
    }

    pub fn seen<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(&self.state.lock().unwrap().seen)
    }

    /// Makes every access token issued so far invalid (as an expiry would).
    pub fn revoke_access_tokens(&self) {
        self.state.lock().unwrap().tokens.clear();
    }

    /// The authorization endpoint, as an authorizer: records the request,
    /// issues a code for its challenge and scope, and redirects back with
    /// `state` and `iss`.
    pub fn authorizer(
        &self,
    ) -> impl Fn(AuthorizationRequest) -> std::future::Ready<Result<AuthorizationResponse, String>>
           + Send
           + Sync
           + 'static {
        let state = self.state.clone();
        let base = self.base.clone();
        move |req: AuthorizationRequest| {
            let query = req.url.split_once('?').map(|(_, q)| q).unwrap_or("");
            let (code, state, iss) = approve(&state, &base, form(query));
            std::future::ready(Ok(AuthorizationResponse::new(
                Secret::new(code),
                state,
                Some(iss),
            )))
        }
    }
}

/// The authorization endpoint's work: records the request, issues a code
/// for its challenge and scope; `(code, state, iss)` to redirect with.
fn approve(
    st: &Mutex<State>,
    base: &str,
    q: HashMap<String, String>,
) -> (String, Option<String>, String) {
    let mut s = st.lock().unwrap();
    s.seen.authorizations.push(q.clone());
    s.next += 1;
    let code = format!("code-{}", s.next);
    s.codes.insert(
        code.clone(),
        (
            q.get("code_challenge").cloned().unwrap_or_default(),
            q.get("scope").cloned().unwrap_or_default(),
        ),
    );
    let iss = s.knobs.redirect_iss.clone().unwrap_or(base.to_owned());
    (code, q.get("state").cloned(), iss)
}

/// A plain HTTP/1.1 GET of `url` (`http://host:port/...`): its status and
/// `Location` header; status 0 when the connection failed before a
/// status line came.
pub async fn get(url: &str) -> (u16, Option<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").expect("http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let Ok(mut conn) = tokio::net::TcpStream::connect(authority).await else {
        return (0, None);
    };
    let req = format!("GET {path} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n\r\n");
    let mut text = Vec::new();
    if conn.write_all(req.as_bytes()).await.is_ok() {
        // What came before a reset still counts.
        let _ = conn.read_to_end(&mut text).await;
    }
    let text = String::from_utf8_lossy(&text);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let location = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("location: ")
                .or_else(|| l.strip_prefix("Location: "))
        })
        .map(|l| l.trim().to_owned());
    (status, location)
}

/// A server that should never be reached: counts the connections made
/// to it (on every address of the machine), reading each request head and
/// answering `200 {}`.
pub struct Victim {
    pub port: u16,
    hits: Arc<std::sync::atomic::AtomicUsize>,
    task: JoinHandle<()>,
}

impl Victim {
    pub async fn start() -> Victim {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits: Arc<std::sync::atomic::AtomicUsize> = Arc::default();
        let h = hits.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let _ = conn
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
                        .await;
                });
            }
        });
        Victim { port, hits, task }
    }

    pub fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An address of this machine that is not loopback (the one its route
/// to the outside leaves from; no packet is sent to find it).
pub fn outside_address() -> std::net::IpAddr {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    s.connect("198.51.100.1:9")
        .expect("this test needs a network interface besides loopback");
    let ip = s.local_addr().unwrap().ip();
    assert!(
        !ip.is_loopback() && !ip.is_unspecified(),
        "this test needs an address besides loopback, found {ip}"
    );
    ip
}

impl Drop for AuthFake {
    fn drop(&mut self) {
        self.task.abort();
    }
}
