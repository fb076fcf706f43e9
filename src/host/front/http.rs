//! The front's routes: `/mcp`, `/servers/NAME/mcp`, `/health` and
//! `/metrics`, and what a request passes before it reaches an endpoint:
//! the stop (503), its `Origin` (403), its token (401), its grant (403 for
//! a server, or a tool, prompt or resource of a server, outside it).
//!
//! A grant is checked on the request's body before MCP sees it, so that a
//! call outside it is refused with 403 rather than a JSON-RPC error: the
//! body is read within `max_message_bytes` and `body_timeout`, a few at a
//! time (their bytes bounded by `max_inbound_bytes`), and only for callers
//! whose grant leaves something out.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Response, StatusCode, Uri};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Map};
use tokio::sync::Semaphore;

use crate::client::Status;
use crate::host::ItemKind;
use crate::jsonrpc::RequestId;
use crate::server::http::gate;

use super::auth::Principal;
use super::state::{Endpoint, FrontState};

/// The routes of a front.
pub(crate) fn router(front: Arc<FrontState>) -> axum::Router {
    let peeks = (front.config.http.server.max_inbound_bytes
        / front.config.http.server.max_message_bytes.max(1))
    .max(1);
    let state = Routes {
        front,
        peeks: Arc::new(Semaphore::new(peeks)),
    };
    axum::Router::new()
        .route("/health", axum::routing::get(health))
        .route("/metrics", axum::routing::get(metrics))
        .route("/mcp", axum::routing::any(joined))
        .route("/servers/{name}/mcp", axum::routing::any(single))
        .with_state(state)
}

#[derive(Clone)]
struct Routes {
    front: Arc<FrontState>,
    /// Bodies read for a grant check at once.
    peeks: Arc<Semaphore>,
}

async fn joined(State(r): State<Routes>, req: Request) -> Response<Body> {
    dispatch(&r, Endpoint::Joined, req).await
}

async fn single(State(r): State<Routes>, Path(name): Path<String>, req: Request) -> Response<Body> {
    dispatch(&r, Endpoint::Server(name.into()), req).await
}

fn refuse(status: StatusCode, message: impl Into<String>) -> Response<Body> {
    gate::rpc_error(status, None, -32000, message)
}

/// `Origin`: loopback origins, the allowed ones, or `*`.
fn origin_ok(front: &FrontState, headers: &HeaderMap) -> bool {
    let list = &front.config.allowed_origins;
    if list.iter().any(|o| o == "*") {
        return true;
    }
    if gate::origin_allowed(&crate::server::http::Allow::Loopback, headers) {
        return true;
    }
    gate::origin_allowed(&crate::server::http::Allow::List(list.clone()), headers)
}

/// The caller, or the refusal (401 without a valid token, 403 for a
/// foreign origin).
#[allow(clippy::result_large_err)]
fn admit(front: &FrontState, headers: &HeaderMap) -> Result<Arc<Principal>, Response<Body>> {
    if !origin_ok(front, headers) {
        tracing::warn!(origin = ?headers.get(header::ORIGIN), "gateway: request refused: Origin not allowed");
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "Forbidden: Origin not allowed",
        ));
    }
    match front.gate.check(headers) {
        Some(p) => Ok(p),
        None => {
            tracing::info!("gateway: request refused: no valid token");
            let mut r = refuse(StatusCode::UNAUTHORIZED, "Unauthorized");
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            Err(r)
        }
    }
}

async fn dispatch(r: &Routes, endpoint: Endpoint, req: Request) -> Response<Body> {
    let front = &r.front;
    if front.stopping.load(Ordering::Acquire) {
        return refuse(StatusCode::SERVICE_UNAVAILABLE, "the gateway is stopping");
    }
    let principal = match admit(front, req.headers()) {
        Ok(p) => p,
        Err(refused) => return refused,
    };
    if let Some(refused) = held_for_start(front).await {
        return refused;
    }
    if let Endpoint::Server(name) = &endpoint {
        if !front.knows(name) {
            return refuse(
                StatusCode::NOT_FOUND,
                format!("no server named `{name}` in the gateway"),
            );
        }
        if !principal.server_allowed(name) {
            tracing::info!(client = %principal.name, server = %name, "gateway: request refused: server outside the client's grant");
            return refuse(
                StatusCode::FORBIDDEN,
                format!("Forbidden: server `{name}` is outside this client's grant"),
            );
        }
    }
    let req = if principal.restricted() && req.method() == axum::http::Method::POST {
        match peek(r, &principal, &endpoint, req).await {
            Ok(req) => req,
            Err(refused) => return refused,
        }
    } else {
        req
    };
    let made = match front.endpoint(&principal, &endpoint).await {
        Ok(m) => m,
        Err(e) => {
            return gate::error_object(StatusCode::SERVICE_UNAVAILABLE, None, &e.to_error_object())
        }
    };
    let (mut parts, body) = req.into_parts();
    parts.uri = endpoint_uri(&parts.uri);
    let mut router = made.router;
    match tower_service::Service::call(&mut router, Request::from_parts(parts, body)).await {
        Ok(resp) => resp,
        Err(never) => match never {},
    }
}

/// Waits for the front's start to be over; the refusal (503) when the
/// front stopped meanwhile or its host is gone.
async fn held_for_start(front: &FrontState) -> Option<Response<Body>> {
    front.start_over().await;
    if front.stopping.load(Ordering::Acquire) {
        return Some(refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "the gateway is stopping",
        ));
    }
    if front.host_gone() {
        return Some(refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "the gateway's host has stopped: no server can be reached",
        ));
    }
    None
}

/// The endpoint's own path (`/mcp`), with the request's query.
fn endpoint_uri(uri: &Uri) -> Uri {
    let path = match uri.query() {
        Some(q) => format!("{}?{q}", crate::server::http::DEFAULT_PATH),
        None => crate::server::http::DEFAULT_PATH.to_owned(),
    };
    path.parse().unwrap_or_else(|_| Uri::from_static("/mcp"))
}

/// What the grant check reads of a message.
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<PeekParams<'a>>,
}

#[derive(Deserialize)]
struct PeekParams<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uri: Option<Cow<'a, str>>,
}

/// Reads the body, refuses a call outside the caller's grant (403), and
/// gives the request back whole.
#[allow(clippy::result_large_err)]
async fn peek(
    r: &Routes,
    principal: &Principal,
    endpoint: &Endpoint,
    req: Request,
) -> Result<Request, Response<Body>> {
    use http_body_util::BodyExt as _;
    let front = &r.front;
    let limit = front.config.http.server.max_message_bytes;
    let (parts, body) = req.into_parts();
    let permit = r.peeks.acquire().await.ok();
    let limited = http_body_util::Limited::new(body, limit);
    let read = tokio::time::timeout(front.config.http.body_timeout, limited.collect()).await;
    drop(permit);
    let bytes: Bytes = match read {
        Err(_) => {
            return Err(refuse(
                StatusCode::REQUEST_TIMEOUT,
                "the request body took too long",
            ))
        }
        Ok(Err(_)) => {
            return Err(refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is over {limit} bytes"),
            ))
        }
        Ok(Ok(c)) => c.to_bytes(),
    };
    let messages: Vec<Peek<'_>> = match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => serde_json::from_slice(&bytes).unwrap_or_default(),
        _ => serde_json::from_slice(&bytes)
            .map(|m| vec![m])
            .unwrap_or_default(),
    };
    for m in &messages {
        let refused = match endpoint {
            Endpoint::Joined => start_named_lazy(front, principal, m).await,
            Endpoint::Server(_) => None,
        };
        if let Some(r) = refused.or_else(|| outside_grant(front, principal, endpoint, m)) {
            let what = &r.what;
            tracing::info!(client = %principal.name, %what, "gateway: call refused: outside the client's grant");
            // In the call log and the metrics as any other outcome.
            front.refused(principal, &r.server, m.method.as_deref(), r.own.as_deref());
            return Err(gate::rpc_error(
                StatusCode::FORBIDDEN,
                m.id.clone(),
                -32000,
                format!("Forbidden: {what} is outside this client's grant"),
            ));
        }
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// A lazy server not started yet whose name (by its prefix) a call of
/// `/mcp` holds: started now when the caller may use it, so that the grant
/// is checked on the server's own names as for any other server; when it
/// may not, the server is what the grant leaves out (and stays unstarted).
async fn start_named_lazy(
    front: &Arc<FrontState>,
    principal: &Principal,
    m: &Peek<'_>,
) -> Option<Refusal> {
    let kind = match m.method.as_deref()? {
        "tools/call" => ItemKind::Tool,
        "prompts/get" => ItemKind::Prompt,
        _ => return None,
    };
    let name = m.params.as_ref()?.name.as_deref()?;
    if front.host.shared.owner_of(kind, name).is_some() {
        return None;
    }
    let server = front.lazy_owner(name)?;
    if !principal.server_allowed(&server) {
        return Some(Refusal {
            what: format!("server `{server}`"),
            own: None,
            server,
        });
    }
    if let Err(e) = front.ensure_started(&server).await {
        // The call itself says so (`/mcp` tries the start again).
        tracing::warn!(server = %server, error = %e, "gateway: a lazy server could not start");
    }
    None
}

/// A call the caller's grant leaves out.
struct Refusal {
    /// What the 403 names (`server `x`` or `tool `x__y``).
    what: String,
    /// The server the call was for.
    server: String,
    /// The item's own name at that server, when known.
    own: Option<String>,
}

/// What of the message, if anything, the caller's grant leaves out.
fn outside_grant(
    front: &FrontState,
    principal: &Principal,
    endpoint: &Endpoint,
    m: &Peek<'_>,
) -> Option<Refusal> {
    let method = m.method.as_deref()?;
    let params = m.params.as_ref()?;
    let (kind, name) = match method {
        "tools/call" => (ItemKind::Tool, params.name.as_deref()?),
        "prompts/get" => (ItemKind::Prompt, params.name.as_deref()?),
        "resources/read" | "resources/subscribe" => (ItemKind::Resource, params.uri.as_deref()?),
        _ => return None,
    };
    let (server, own) = match endpoint {
        Endpoint::Server(s) => (s.to_string(), name.to_owned()),
        Endpoint::Joined => {
            let r = front.host.shared.owner_of(kind, name)?;
            (r.server, r.name)
        }
    };
    if !principal.server_allowed(&server) {
        return Some(Refusal {
            what: format!("server `{server}`"),
            server,
            own: Some(own),
        });
    }
    if kind == ItemKind::Tool && !principal.tool_allowed(&server, &own) {
        return Some(Refusal {
            what: format!("tool `{name}`"),
            server,
            own: Some(own),
        });
    }
    None
}

/// `GET /health`: each server's status; 200 when every server is ready
/// (a lazy server not started yet counts as ready: it starts on use),
/// else 503: `"starting"` until the front's start is over,
/// `"host_stopped"` once its host is gone. No token needed.
async fn health(State(r): State<Routes>) -> Response<Body> {
    let front = &r.front;
    let mut servers = Map::new();
    let mut all = true;
    for s in front.host.servers() {
        let status = match &s.status {
            Status::Ready(_) if s.listed => "ready",
            Status::Ready(_) | Status::Starting => "starting",
            Status::Restarting { .. } => "restarting",
            Status::GaveUp(_) => "gave_up",
            Status::Stopped => "stopped",
        };
        all &= s.is_ready();
        let mut v = json!({ "status": status, "tools": s.tools });
        if let Some(session) = s.session() {
            v["era"] = json!(session.era);
            v["protocolVersion"] = json!(session.protocol_version);
            if let Some(pid) = session.pid {
                v["pid"] = json!(pid);
            }
        }
        if let Status::GaveUp(reason) = &s.status {
            v["reason"] = json!(reason);
        }
        servers.insert(s.name.clone(), v);
    }
    for name in front.lazy_names() {
        servers.insert(name, json!({ "status": "lazy" }));
    }
    // Servers of the file a reload could not add: as at the start.
    for (name, reason) in front.failed() {
        all = false;
        servers.insert(
            name,
            json!({ "status": "gave_up", "tools": 0, "reason": reason }),
        );
    }
    let stopping = front.stopping.load(Ordering::Acquire);
    let gone = front.host_gone();
    let starting = !*front.started.borrow();
    let ok = all && !stopping && !gone && !starting;
    let body = json!({
        "status": if stopping {
            "stopping"
        } else if gone {
            "host_stopped"
        } else if starting {
            "starting"
        } else if ok {
            "ok"
        } else {
            "degraded"
        },
        "servers": servers,
    });
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    gate::json(status, body.to_string())
}

/// `GET /metrics`: Prometheus text; behind the token when one is set.
async fn metrics(State(r): State<Routes>, headers: HeaderMap) -> Response<Body> {
    let front = &r.front;
    if let Err(refused) = admit(front, &headers) {
        return refused;
    }
    let ready: Vec<(String, bool)> = front
        .host
        .servers()
        .into_iter()
        .map(|s| (s.name.clone(), s.is_ready()))
        .collect();
    let text = front.metrics.render(&ready, front.held.len());
    let mut resp = Response::new(Body::from(text));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}
