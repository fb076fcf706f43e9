//! The gateway's routes: `/mcp`, `/servers/NAME/mcp`, `/health` and
//! `/metrics`, and what a request passes before it reaches one: its `Host`
//! and `Origin` (403, on every route), the stop (503), its token (401), its
//! grant (403 for a server, or a tool, prompt or resource of a server,
//! outside it).
//!
//! A grant is checked on the request's body before MCP sees it, so that a
//! call outside it is refused with 403 rather than a JSON-RPC error: the
//! body is read as the endpoint reads it (within `max_message_bytes`,
//! `body_timeout` and the caller's share of `max_inbound_bytes`) and parsed
//! by the same parser, so a body the check cannot read is refused by the
//! check, and the endpoint serves the message checked (a [`ParsedBody`]);
//! and only for callers whose grant leaves something out.

use std::sync::Arc;

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::{header, Response, StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::{json, Map, Value};

use crate::client::Status;
use crate::host::ItemKind;
use crate::jsonrpc::{Message, RequestId};
use crate::server::http::{response, Allow, BodyReader, HostOriginLayer, ParsedBody, Rejection};

use super::auth::{MetricsAccess, Principal};
use super::config::HttpGatewayConfig;
use super::refusal::Refusal;
use super::state::{Endpoint, GatewayState, Phase};

/// The routes of a gateway.
pub(crate) fn router(gateway: Arc<GatewayState>) -> axum::Router {
    let admission = host_origin(gateway.config());
    let state = Routes {
        bodies: BodyReader::of(&gateway.config().http),
        gateway,
    };
    let mcp = axum::Router::new()
        .route("/mcp", axum::routing::any(namespace_route))
        .route("/servers/{name}/mcp", axum::routing::any(passthrough_route));
    let mcp = match state.gateway.gate().layer() {
        Some(tokens) => mcp.route_layer(tokens),
        None => mcp,
    };
    axum::Router::new()
        .route("/health", axum::routing::get(health))
        .route("/metrics", axum::routing::get(metrics))
        .merge(mcp)
        .with_state(state)
        .layer(admission)
}

#[derive(Clone)]
struct Routes {
    gateway: Arc<GatewayState>,
    /// The reader of the bodies a grant check reads (room of its own).
    bodies: BodyReader,
}

/// `Host` and `Origin`, on every route the listener serves (a rebinding
/// page can reach them all): origins are loopback ones, the allowed ones,
/// or any with `*`.
fn host_origin(config: &HttpGatewayConfig) -> HostOriginLayer {
    let list = &config.allowed_origins;
    let layer = if list.iter().any(|o| o == "*") {
        HostOriginLayer::new(config.allowed_hosts.clone(), Allow::Any)
    } else {
        HostOriginLayer::new(config.allowed_hosts.clone(), Allow::List(list.clone()))
            .with_loopback_origins()
    };
    layer.named("gateway")
}

async fn namespace_route(State(r): State<Routes>, req: Request) -> Result<Response<Body>, Refusal> {
    dispatch(&r, Endpoint::Namespace, req).await
}

async fn passthrough_route(
    State(r): State<Routes>,
    Path(name): Path<String>,
    req: Request,
) -> Result<Response<Body>, Refusal> {
    dispatch(&r, Endpoint::Server(name.into()), req).await
}

/// Admits a request to `endpoint` and serves it there: the gateway's
/// state, the caller's token, the start held for, the server and the
/// caller's grant, then the endpoint's service.
async fn dispatch(r: &Routes, endpoint: Endpoint, req: Request) -> Result<Response<Body>, Refusal> {
    let gateway = &r.gateway;
    if gateway.is_stopping() {
        return Err(Rejection::Stopping.into());
    }
    // Let in by the bearer layer (or no token is configured).
    let principal = gateway
        .gate()
        .caller(req.extensions())
        .ok_or(Rejection::Unauthorized)?;
    // Requests wait for the start to be over, or the gateway's stop.
    gateway.start_over().await;
    if gateway.is_stopping() {
        return Err(Rejection::Stopping.into());
    }
    if gateway.host_gone() {
        return Err(Refusal::HostStopped);
    }
    if let Endpoint::Server(name) = &endpoint {
        if !gateway.knows(name) {
            return Err(Refusal::UnknownServer {
                name: name.to_string(),
            });
        }
        if !principal.server_allowed(name) {
            tracing::info!(client = %principal.name(), server = %name, "gateway: request refused: server outside the client's grant");
            return Err(Refusal::OutsideGrant {
                id: None,
                what: format!("server `{name}`"),
            });
        }
    }
    let mut req = req;
    if let Some(owner) = principal.session_owner() {
        // Its sessions and its share of the bounds are its own.
        req.extensions_mut().insert(owner.clone());
    }
    // For the endpoint's handler (one endpoint serves every caller).
    req.extensions_mut().insert(principal.clone());
    let req = if principal.restricted() && req.method() == axum::http::Method::POST {
        peek(r, &principal, &endpoint, req).await?
    } else {
        req
    };
    let made = gateway.endpoint(&endpoint).await?;
    let (mut parts, body) = req.into_parts();
    parts.uri = endpoint_uri(&parts.uri);
    let mut router = made.into_router();
    let served = tower_service::Service::call(&mut router, Request::from_parts(parts, body));
    Ok(served.await.unwrap_or_else(|never| match never {}))
}

/// The endpoint's own path (`/mcp`), with the request's query.
fn endpoint_uri(uri: &Uri) -> Uri {
    let path = match uri.query() {
        Some(q) => format!("{}?{q}", crate::server::http::DEFAULT_PATH),
        None => crate::server::http::DEFAULT_PATH.to_owned(),
    };
    path.parse().unwrap_or_else(|_| Uri::from_static("/mcp"))
}

/// What the grant check reads of a message: its id, method, and the name
/// or URI of what it calls.
struct Peek {
    id: Option<RequestId>,
    method: Option<String>,
    name: Option<String>,
    uri: Option<String>,
}

impl Peek {
    fn of(m: &Message) -> Peek {
        let (id, method, params) = match m {
            Message::Request(r) => (
                Some(r.id.clone()),
                Some(r.method.clone()),
                r.params.as_ref(),
            ),
            Message::Notification(n) => (None, Some(n.method.clone()), n.params.as_ref()),
            Message::Response(r) => (r.id.clone(), None, None),
        };
        let member = |key: &str| {
            params
                .and_then(|p| p.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        Peek {
            id,
            method,
            name: member("name"),
            uri: member("uri"),
        }
    }
}

/// Reads the body as the endpoint will, refuses a call outside the
/// caller's grant (403), and gives the request back whole.
async fn peek(
    r: &Routes,
    principal: &Principal,
    endpoint: &Endpoint,
    req: Request,
) -> Result<Request, Refusal> {
    let gateway = &r.gateway;
    let (mut parts, body) = req.into_parts();
    let bytes = r.bodies.read(&parts, body).await?;
    // The endpoint's own parser: what it would refuse, the check refuses,
    // and the endpoint serves the message checked here.
    let parsed = match ParsedBody::parse(&bytes) {
        Ok(p) => p,
        Err(refused) => {
            tracing::info!(client = %principal.name(), message = %refused, "gateway: request refused: the grant check cannot read its body");
            return Err(refused.into());
        }
    };
    drop(bytes);
    let m = Peek::of(parsed.message());
    let refused = match endpoint {
        Endpoint::Namespace => start_named_lazy(gateway, principal, &m).await,
        Endpoint::Server(_) => None,
    };
    if let Some(r) = refused.or_else(|| outside_grant(gateway, principal, endpoint, &m)) {
        let what = &r.what;
        tracing::info!(client = %principal.name(), %what, "gateway: call refused: outside the client's grant");
        // In the call log and the metrics as any other outcome.
        gateway.refused(principal, &r.server, m.method.as_deref(), r.own.as_deref());
        return Err(Refusal::OutsideGrant {
            id: m.id.clone(),
            what: what.clone(),
        });
    }
    parts.extensions.insert(parsed);
    Ok(Request::from_parts(parts, Body::empty()))
}

/// A lazy server not started yet whose name (by its prefix) a call of
/// `/mcp` holds: started now when the caller may use it, so that the grant
/// is checked on the server's own names as for any other server; when it
/// may not, the server is what the grant leaves out (and stays unstarted).
async fn start_named_lazy(
    gateway: &Arc<GatewayState>,
    principal: &Principal,
    m: &Peek,
) -> Option<Outside> {
    let kind = match m.method.as_deref()? {
        "tools/call" => ItemKind::Tool,
        "prompts/get" => ItemKind::Prompt,
        _ => return None,
    };
    let name = m.name.as_deref()?;
    if gateway.host().owner(kind, name).is_some() {
        return None;
    }
    let server = gateway.host().lazy_owner(name)?;
    if !principal.server_allowed(&server) {
        return Some(Outside {
            what: format!("server `{server}`"),
            own: None,
            server,
        });
    }
    if let Err(e) = gateway.ensure_started(&server).await {
        // The call itself says so (`/mcp` tries the start again).
        tracing::warn!(server = %server, error = %e, "gateway: a lazy server could not start");
    }
    None
}

/// A call the caller's grant leaves out.
struct Outside {
    /// What the 403 names (`server `x`` or `tool `x__y``).
    what: String,
    /// The server the call was for.
    server: String,
    /// The item's own name at that server, when known.
    own: Option<String>,
}

/// What of the message, if anything, the caller's grant leaves out.
fn outside_grant(
    gateway: &GatewayState,
    principal: &Principal,
    endpoint: &Endpoint,
    m: &Peek,
) -> Option<Outside> {
    let method = m.method.as_deref()?;
    let (kind, name) = match method {
        "tools/call" => (ItemKind::Tool, m.name.as_deref()?),
        "prompts/get" => (ItemKind::Prompt, m.name.as_deref()?),
        "resources/read" | "resources/subscribe" => (ItemKind::Resource, m.uri.as_deref()?),
        _ => return None,
    };
    let (server, own) = match endpoint {
        Endpoint::Server(s) => (s.to_string(), name.to_owned()),
        Endpoint::Namespace => {
            let r = gateway.host().owner(kind, name)?;
            (r.server, r.name)
        }
    };
    if !principal.server_allowed(&server) {
        return Some(Outside {
            what: format!("server `{server}`"),
            server,
            own: Some(own),
        });
    }
    if kind == ItemKind::Tool && !principal.tool_allowed(&server, &own) {
        return Some(Outside {
            what: format!("tool `{name}`"),
            server,
            own: Some(own),
        });
    }
    None
}

/// `GET /health`: each server's status (for one that gave up, its reason
/// and when it is started again); 200 when every server is ready
/// (a lazy server not started yet counts as ready: it starts on use),
/// else 503: `"starting"` until the gateway's start is over,
/// `"host_stopped"` once its host is gone. No token needed.
async fn health(State(r): State<Routes>) -> Response<Body> {
    let gateway = &r.gateway;
    let mut servers = Map::new();
    let mut all = true;
    for s in gateway.host().servers() {
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
        if let Some(next) = s.next_try_in {
            v["next_try_in_ms"] = json!(u64::try_from(next.as_millis()).unwrap_or(u64::MAX));
        }
        servers.insert(s.name.clone(), v);
    }
    for name in gateway.host().lazy_servers() {
        servers.insert(name, json!({ "status": "lazy" }));
    }
    let status = match gateway.phase() {
        Phase::Closing | Phase::Stopped => "stopping",
        _ if gateway.host().is_stopped() => "host_stopped",
        Phase::Starting => "starting",
        Phase::Serving if all => "ok",
        Phase::Serving => "degraded",
    };
    let code = match status {
        "ok" => StatusCode::OK,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    response::json(
        code,
        json!({ "status": status, "servers": servers }).to_string(),
    )
}

/// `GET /metrics`: Prometheus text, for operators: the metrics token or an
/// operator client's; without either configured, the one bearer token;
/// without any token, loopback peers only.
async fn metrics(State(r): State<Routes>, req: Request) -> Response<Body> {
    let gateway = &r.gateway;
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    match gateway.gate().metrics_access(req.headers()) {
        MetricsAccess::Allowed => {}
        MetricsAccess::NoToken => return Rejection::Unauthorized.into_response(),
        MetricsAccess::NotOperator => {
            tracing::info!("gateway: /metrics refused: the token is no operator's");
            return Refusal::MetricsNeedOperator.into_response();
        }
        MetricsAccess::LoopbackOnly => {
            if peer.is_some_and(|ip| !ip.is_loopback()) {
                return Refusal::MetricsLoopbackOnly.into_response();
            }
        }
    }
    let ready: Vec<(String, bool)> = gateway
        .host()
        .servers()
        .into_iter()
        .map(|s| (s.name.clone(), s.is_ready()))
        .collect();
    let text = gateway.metrics().render(&ready, gateway.held_calls());
    let text_type = "text/plain; version=0.0.4; charset=utf-8";
    ([(header::CONTENT_TYPE, text_type)], text).into_response()
}
