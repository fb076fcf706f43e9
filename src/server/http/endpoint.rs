//! The MCP endpoint: one route, POST for every message, GET and DELETE for
//! the 2025-11-25 era's sessions, both eras told apart per request.
//!
//! A request's era: the `MCP-Protocol-Version` header names it; without the
//! header, a body carrying the 2026-07-28 `_meta` is 2026-07-28 and anything
//! else (an `initialize`, a session's traffic from a client older than
//! 2025-06-18) 2025-11-25. A 2025-11-25 request with a `MCP-Session-Id` header and
//! an unknown version is 2025-11-25 (and refused with 400 for that version).

// A refusal is the HTTP response itself: returned as is, once per request.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use axum::response::IntoResponse;
use serde_json::Value;

use crate::http::headers;
use crate::jsonrpc::{encode, Message, RequestId};
use crate::memory_estimate::{self, Estimate};
use crate::protocol::{meta, methods, Era, STATEFUL_VERSIONS, STATELESS_VERSIONS};
use crate::server::engine::budget::{Charge, Refused};
use crate::server::engine::dispatch::{route, Route};
use crate::server::engine::{Duplicate, Scope};
use crate::server::handle::ServerHandle;
use crate::server::Handler;

use super::admission::HostOriginLayer;
use super::body::ParsedBody;
use super::core::Core;
use super::principal::Owner;
use super::response::{self, Accepts};
use super::session::StreamReply;
use super::session::{self, Session};
use super::stateless;
use super::stream::{self, First, SseBody, Stream};
use super::Rejection;

/// The MCP header names as [`HeaderName`]s: a lookup by `&str` parses
/// the name first, which costs as much as the lookup itself.
const SESSION_ID: HeaderName = HeaderName::from_static(headers::SESSION_ID);
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static(headers::PROTOCOL_VERSION);

/// The router of one endpoint: POST, GET and DELETE at its path (any
/// other method 405), behind `layers` and, before them, the `Host` and
/// `Origin` check.
pub(crate) fn router(
    core: Arc<Core>,
    layers: impl FnOnce(axum::Router) -> axum::Router,
) -> axum::Router {
    let path = core.config().get_path().to_owned();
    let admission = HostOriginLayer::of(core.config());
    let methods = axum::routing::post(on_post)
        .get(on_get)
        .delete(on_delete)
        // axum answers HEAD with the GET handler unless HEAD has its own.
        .head(on_other)
        .fallback(on_other);
    layers(axum::Router::new().route(&path, methods).with_state(core)).layer(admission)
}

/// The era a request speaks, from its version header, its session header
/// and whether its body carries the 2026-07-28 `_meta`.
fn era_of(h: &HeaderMap, body_is_stateless: bool) -> Era {
    let version = h.get(PROTOCOL_VERSION).and_then(|v| v.to_str().ok());
    let has_session = h.contains_key(SESSION_ID);
    match version {
        Some(v) if STATELESS_VERSIONS.contains(&v) => Era::Stateless,
        Some(v) if STATEFUL_VERSIONS.contains(&v) => Era::Stateful,
        Some(_) if has_session => Era::Stateful,
        Some(_) => Era::Stateless,
        None if body_is_stateless && !has_session => Era::Stateless,
        None => Era::Stateful,
    }
}

/// Whether a message carries the 2026-07-28 era's `_meta`.
fn has_stateless_meta(m: &Message) -> bool {
    let params = match m {
        Message::Request(r) => r.params.as_ref(),
        Message::Notification(n) => n.params.as_ref(),
        Message::Response(_) => None,
    };
    params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .is_some_and(|m| {
            m.contains_key(meta::PROTOCOL_VERSION) || m.contains_key(meta::CLIENT_CAPABILITIES)
        })
}

/// What a request passes after its `Host`, `Origin` and the server's
/// layers: the stop.
fn admitted(core: &Arc<Core>, parts: &Parts) -> Result<Owner, Rejection> {
    core.start();
    if core.is_stopping() {
        return Err(Rejection::Stopping);
    }
    Ok(Owner::of(&parts.extensions))
}

async fn on_post(State(core): State<Arc<Core>>, req: Request) -> Response<Body> {
    let (mut parts, body) = req.into_parts();
    let parsed = parts.extensions.remove::<ParsedBody>();
    match admitted(&core, &parts) {
        // Shared with the handler (`RequestContext::http_request`).
        Ok(owner) => post(core, Arc::new(parts), owner, body, parsed).await,
        Err(refused) => refused.into_response(),
    }
}

/// `serve`'s answer to a request without a body the endpoint admits; the
/// refusal otherwise.
fn when_admitted(
    core: Arc<Core>,
    req: Request,
    serve: impl FnOnce(Arc<Core>, &HeaderMap, Owner) -> Response<Body>,
) -> Response<Body> {
    let (parts, _) = req.into_parts();
    match admitted(&core, &parts) {
        Ok(owner) => serve(core, &parts.headers, owner),
        Err(refused) => refused.into_response(),
    }
}

async fn on_get(State(core): State<Arc<Core>>, req: Request) -> Response<Body> {
    when_admitted(core, req, |core, h, owner| get(core, h, &owner))
}

async fn on_delete(State(core): State<Arc<Core>>, req: Request) -> Response<Body> {
    when_admitted(core, req, |core, h, owner| delete(core, h, &owner))
}

async fn on_other(State(core): State<Arc<Core>>, req: Request) -> Response<Body> {
    when_admitted(core, req, |_, _, _| {
        Rejection::MethodNotAllowed {
            allow: "GET, POST, DELETE",
        }
        .into_response()
    })
}

/// The media types a POST's answer can have.
const POST_ACCEPTS: &str = "application/json and text/event-stream";

/// What a POST must be before its body is read: accepting an answer, and
/// JSON (a body without `Content-Type` is read as JSON).
fn post_media(h: &HeaderMap) -> Result<Accepts, Rejection> {
    let accepts = Accepts::of(h);
    if !accepts.json() && !accepts.sse() {
        return Err(Rejection::NotAcceptable {
            expected: POST_ACCEPTS,
        });
    }
    if let Some(ct) = h.get(header::CONTENT_TYPE) {
        let media = ct.to_str().unwrap_or("").split(';').next().unwrap_or("");
        if !media.trim().eq_ignore_ascii_case("application/json") {
            return Err(Rejection::UnsupportedMediaType {
                content_type: String::from_utf8_lossy(ct.as_bytes()).into_owned(),
            });
        }
    }
    Ok(accepts)
}

/// Serves a POST: its body, or the message a layer already read and
/// parsed from it.
async fn post(
    core: Arc<Core>,
    parts: Arc<Parts>,
    owner: Owner,
    body: Body,
    parsed: Option<ParsedBody>,
) -> Response<Body> {
    let h = &parts.headers;
    let accepts = match post_media(h) {
        Ok(a) => a,
        Err(r) => return r.into_response(),
    };
    let (msg, charge) = match parsed {
        Some(p) => {
            let (msg, estimate) = p.into_parts();
            match charge(&core, &owner, estimate) {
                Ok(charge) => (msg, charge),
                Err(r) => return r.into_response(),
            }
        }
        None => {
            let bytes = match core.bodies().read_as(h, owner.clone(), body).await {
                Ok(b) => b,
                Err(r) => return r.into_response(),
            };
            // Charged before parsing, as on stdio: what the parsed message
            // will hold.
            let charge = match charge(&core, &owner, memory_estimate::estimate(&bytes)) {
                Ok(c) => c,
                Err(r) => return r.into_response(),
            };
            match Message::parse(&bytes) {
                Ok(m) => (m, charge),
                Err(e) => return Rejection::of_parse(e).into_response(),
            }
        }
    };
    match era_of(h, has_stateless_meta(&msg)) {
        Era::Stateless => post_stateless(core, &parts, owner, msg, charge, accepts).await,
        Era::Stateful => post_stateful(core, &parts, owner, msg, charge, accepts).await,
    }
}

/// Charges a message's estimate to its owner's share of the inbound
/// budget, without waiting: the refusal (413 for a message larger than a
/// share, else 503) when it does not fit.
fn charge(core: &Core, owner: &Owner, e: Estimate) -> Result<Charge, Rejection> {
    let share = core.inbound_share(owner);
    core.inbound().try_take_shared(&share, e).map_err(|refused| {
        let r = match refused {
            Refused::TooLarge { bytes, share } => Rejection::InboundTooLarge { bytes, share },
            Refused::ShareInUse { share } => Rejection::InboundShareInUse { share },
            Refused::Full => Rejection::Busy,
        };
        if let Some(skipped) = core.warn_inbound_refused() {
            tracing::warn!(server = %core.name(), %owner, held = share.held(), skipped, "request refused: {r}");
        }
        r
    })
}

fn request_id(m: &Message) -> Option<RequestId> {
    match m {
        Message::Request(r) => Some(r.id.clone()),
        Message::Response(r) => r.id.clone(),
        Message::Notification(_) => None,
    }
}

async fn post_stateless(
    core: Arc<Core>,
    parts: &Arc<Parts>,
    owner: Owner,
    msg: Message,
    charge: Charge,
    accepts: Accepts,
) -> Response<Body> {
    let h = &parts.headers;
    let req = match msg {
        Message::Request(r) => r,
        // This revision defines no client notifications over HTTP (closing
        // a stream is the cancellation): accepted and ignored.
        Message::Notification(n) => {
            tracing::debug!(method = %n.method, "2026-07-28 notification over HTTP ignored");
            return response::empty(StatusCode::ACCEPTED);
        }
        Message::Response(r) => {
            return Rejection::UnexpectedResponse { id: r.id }.into_response();
        }
    };
    if let Err(r) = stateless::check(h, &req, |name, f| {
        core.handler().with_tool_input_schema(name, f)
    }) {
        return r.with_id(Some(req.id)).into_response();
    }
    match route(core.root(), &req) {
        Route::Answer(a) => answer_now(Some(req.id), a, true),
        Route::Dispatch(mut d) => {
            d.http = Some(parts.clone());
            let stream = core.stateless_stream();
            let scope = core.stateless_scope(&owner);
            let reply = StreamReply::new(stream.clone(), req.id.clone(), None);
            match core.engine().submit(&scope, req, d, charge, reply) {
                Ok(key) => respond(&core, stream, Kind::Stateless { scope, key }, accepts).await,
                // Stateless scopes let ids repeat.
                Err(Duplicate(_)) => Rejection::Internal {
                    id: None,
                    reason: "internal error".into(),
                }
                .into_response(),
            }
        }
    }
}

/// An answer the transport gives itself (no handler ran).
fn answer_now(
    id: Option<RequestId>,
    a: Result<Value, crate::jsonrpc::ErrorObject>,
    stateless: bool,
) -> Response<Body> {
    match a {
        Ok(v) => match encode::result(&id, &v) {
            Ok(line) => response::json(StatusCode::OK, line),
            Err(e) => Rejection::Internal {
                id,
                reason: e.to_string(),
            }
            .into_response(),
        },
        Err(e) => {
            let status = if stateless {
                crate::http::status::status_for_error(e.code)
            } else {
                StatusCode::OK
            };
            response::error_object(status, id, &e)
        }
    }
}

/// The session a request names. A session opened by a [`Principal`]
/// serves that principal only (another one gets 404, as for an unknown id).
///
/// [`Principal`]: super::Principal
fn session_of(core: &Core, h: &HeaderMap, owner: &Owner) -> Result<Arc<Session>, Rejection> {
    let Some(raw) = h.get(SESSION_ID) else {
        return Err(Rejection::SessionRequired { id: None });
    };
    let found = raw
        .to_str()
        .ok()
        .and_then(|id| core.sessions().get(id))
        .filter(|s| s.serves(owner));
    match found {
        Some(s) => Ok(s),
        None => Err(Rejection::SessionNotFound { id: None }),
    }
}

/// A 2025-11-25 request's version header, when present, must be a 2025-11-25
/// version.
fn stateful_version_ok(h: &HeaderMap) -> Result<(), Rejection> {
    match h.get(PROTOCOL_VERSION) {
        None => Ok(()),
        Some(v) if v.to_str().is_ok_and(|v| STATEFUL_VERSIONS.contains(&v)) => Ok(()),
        Some(v) => Err(Rejection::SessionVersion {
            requested: String::from_utf8_lossy(v.as_bytes()).into_owned(),
        }),
    }
}

async fn post_stateful(
    core: Arc<Core>,
    parts: &Arc<Parts>,
    owner: Owner,
    msg: Message,
    charge: Charge,
    accepts: Accepts,
) -> Response<Body> {
    let h = &parts.headers;
    if let Message::Request(req) = &msg {
        if req.method == methods::INITIALIZE {
            return initialize(&core, req, owner);
        }
    }
    let id = request_id(&msg);
    let session = match session_of(&core, h, &owner) {
        Ok(s) => s,
        // Carrying the request's id when there is one.
        Err(r) => return r.with_id(id).into_response(),
    };
    if let Err(r) = stateful_version_ok(h) {
        return r.into_response();
    }
    session.touch();
    match msg {
        Message::Request(req) => match route(session.shared(), &req) {
            Route::Answer(a) => answer_now(Some(req.id), a, false),
            Route::Dispatch(mut d) => {
                d.http = Some(parts.clone());
                let stream = session.new_stream(core.config(), core.global());
                if !accepts.sse() {
                    stream.json_only();
                }
                let number = stream.number();
                let id = req.id.clone();
                let reply = StreamReply::new(
                    stream.clone(),
                    req.id.clone(),
                    Some(Arc::downgrade(&session)),
                );
                match core.engine().submit(session.scope(), req, d, charge, reply) {
                    Ok(_) => respond(&core, stream, Kind::Stateful { session }, accepts).await,
                    Err(Duplicate(mut reply)) => {
                        // Never ran: nothing to keep for a resumption.
                        reply.forget_session();
                        drop(reply);
                        session.retire(number, false);
                        Rejection::DuplicateId { id }.into_response()
                    }
                }
            }
        },
        Message::Notification(n) => {
            match n.method.as_str() {
                methods::CANCELLED => {
                    if let Some(rid) = crate::protocol::cancelled_request_id(&n) {
                        if core.engine().cancel_id(session.scope(), &rid) {
                            tracing::debug!(session = %session.id(), id = %rid, "request cancelled by the client");
                        } else {
                            tracing::debug!(id = %rid, "cancellation of an unknown or finished request ignored")
                        }
                    }
                    return response::empty(StatusCode::ACCEPTED);
                }
                methods::INITIALIZED => {
                    session.shared().session().mark_initialized();
                    tracing::info!(session = %session.id(), "client sent notifications/initialized");
                }
                _ => {}
            }
            let handle = ServerHandle::new(session.shared());
            let method = n.method.clone();
            let handler = core.engine().handler().clone();
            // In a task of its own: a panic is reported, not propagated.
            let done = tokio::spawn(async move {
                let _charge = charge;
                Handler::handle_notification(&*handler, n, handle).await
            })
            .await;
            match done {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(%method, error = %e, "notification handler failed"),
                Err(e) => tracing::warn!(%method, error = %e, "notification handler panicked"),
            }
            response::empty(StatusCode::ACCEPTED)
        }
        Message::Response(r) => {
            session.shared().route_response(r);
            response::empty(StatusCode::ACCEPTED)
        }
    }
}

/// `initialize`: a new session, its id in `MCP-Session-Id`.
fn initialize(core: &Arc<Core>, req: &crate::jsonrpc::Request, owner: Owner) -> Response<Body> {
    let id = match session::mint_id() {
        Ok(id) => id,
        Err(e) => {
            tracing::error!(error = %e, "no randomness for a session id");
            return Rejection::Internal {
                id: Some(req.id.clone()),
                reason: "no session id could be made".into(),
            }
            .into_response();
        }
    };
    let session = core.new_session(id.clone(), owner.clone());
    match route(session.shared(), req) {
        Route::Answer(Ok(v)) => {
            match core.sessions().insert(session.clone()) {
                Ok(None) => {}
                Ok(Some(expired)) => {
                    tracing::info!(server = %core.name(), session = %expired.id(), owner = %expired.owner(), "expired session ended to make room for a new one");
                    core.end_session(&expired);
                }
                Err(full) => {
                    session.end();
                    if let Some(skipped) = core.warn_sessions_full() {
                        tracing::warn!(server = %core.name(), %owner, skipped, "initialize refused: {full}");
                    }
                    return full.rejection(Some(req.id.clone())).into_response();
                }
            }
            tracing::info!(server = %core.name(), session = %id, sessions = core.sessions().len(), "session opened");
            let mut r = answer_now(Some(req.id.clone()), Ok(v), false);
            if let Ok(v) = HeaderValue::from_str(&id) {
                r.headers_mut().insert(SESSION_ID, v);
            }
            r
        }
        Route::Answer(Err(e)) => {
            session.end();
            response::error_object(StatusCode::BAD_REQUEST, Some(req.id.clone()), &e)
        }
        Route::Dispatch(_) => {
            session.end();
            Rejection::Internal {
                id: Some(req.id.clone()),
                reason: "initialize was not answered".into(),
            }
            .into_response()
        }
    }
}

/// Whose response this is.
enum Kind {
    /// A 2025-11-25 request, in its session.
    Stateful { session: Arc<Session> },
    /// A 2026-07-28 request, in its client's scope under its engine key.
    Stateless {
        scope: Arc<Scope<StreamReply>>,
        key: u64,
    },
}

/// Cancels a 2026-07-28 request if its response goes away first.
struct CancelOnDrop {
    core: std::sync::Weak<Core>,
    request: Option<(Arc<Scope<StreamReply>>, u64)>,
}

impl CancelOnDrop {
    fn disarm(&mut self) -> Option<(Arc<Scope<StreamReply>>, u64)> {
        self.request.take()
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let (Some((scope, key)), Some(core)) = (self.request.take(), self.core.upgrade()) {
            tracing::debug!(key, "response closed by the client: request cancelled");
            core.engine().cancel(&scope, key);
        }
    }
}

fn sse_response(body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// The response to a request the handler runs: JSON when its answer comes
/// alone (and soon), else an SSE stream of its messages and answer.
async fn respond(
    core: &Arc<Core>,
    stream: Arc<Stream>,
    kind: Kind,
    accepts: Accepts,
) -> Response<Body> {
    let mut guard = CancelOnDrop {
        core: Arc::downgrade(core),
        request: match &kind {
            Kind::Stateless { scope, key } => Some((scope.clone(), *key)),
            Kind::Stateful { .. } => None,
        },
    };
    let first = if accepts.json() {
        let patience = if accepts.sse() {
            core.config().get_keep_alive()
        } else {
            std::time::Duration::MAX
        };
        if accepts.sse() {
            stream.first(patience, core.timer()).await
        } else {
            // JSON only: wait for the answer; messages before it have
            // nowhere to go.
            stream.first_answer().await
        }
    } else {
        First::Events
    };
    let stateless = matches!(kind, Kind::Stateless { .. });
    match first {
        First::Answer(data) => {
            guard.disarm();
            if let Kind::Stateful { session } = &kind {
                session.retire(stream.number(), false);
            }
            let status = if stateless {
                status_of_answer(&data)
            } else {
                StatusCode::OK
            };
            if data.ends_with(b"\n") {
                return response::json(status, data);
            }
            response::json(status, [&data[..], b"\n"].concat())
        }
        First::Closed => {
            guard.disarm();
            if let Kind::Stateful { session } = &kind {
                session.retire(stream.number(), false);
            }
            sse_response(Body::empty())
        }
        First::Events => {
            let attached = stream.attach(0);
            let prelude = stream.priming(attached.after(), core.config().get_sse_retry());
            let mut body = SseBody::new(
                stream.clone(),
                attached.generation(),
                prelude,
                core.config().get_keep_alive(),
            );
            if let Some((scope, key)) = guard.disarm() {
                let weak = Arc::downgrade(core);
                body = body.on_drop(Box::new(move || {
                    if let Some(core) = weak.upgrade() {
                        tracing::debug!(
                            key,
                            "SSE response closed by the client: request cancelled"
                        );
                        core.engine().cancel(&scope, key);
                    }
                }));
            }
            if let Kind::Stateful { session } = kind {
                body = watch_open(body, &session, stream);
            }
            sse_response(Body::new(body))
        }
    }
}

/// Counts an open SSE response in its session (an idle session has none),
/// and retires a request stream once it was read to its end.
fn watch_open(body: SseBody, session: &Arc<Session>, stream: Arc<Stream>) -> SseBody {
    session.stream_opened();
    let weak = Arc::downgrade(session);
    body.on_close(Box::new(move || {
        if let Some(s) = weak.upgrade() {
            s.stream_closed();
            s.touch();
            if stream.number() != 0 && stream.drained() {
                s.retire(stream.number(), true);
            }
        }
    }))
}

/// The HTTP status of a 2026-07-28 answer: by its error code, if an error.
///
/// The answer is our encoder's line: `{"jsonrpc":"2.0","id":ID,` then
/// `"result":` or `"error":`, compact. A quote inside a string is escaped,
/// so the first `,"result":` or `,"error":` is the top-level member: found
/// without walking a large result.
fn status_of_answer(data: &[u8]) -> StatusCode {
    #[derive(serde::Deserialize)]
    struct Code {
        code: i64,
    }
    const ERROR: &[u8] = b",\"error\":";
    // The first comma that starts either member (a searcher built per call
    // would cost more than this short scan).
    let Some(at) = memchr::memchr_iter(b',', data).find(|&i| {
        let rest = &data[i..];
        rest.starts_with(b",\"result\":") || rest.starts_with(ERROR)
    }) else {
        return StatusCode::OK;
    };
    if !data[at..].starts_with(ERROR) {
        return StatusCode::OK;
    }
    let mut de = serde_json::Deserializer::from_slice(&data[at + ERROR.len()..]);
    match <Code as serde::Deserialize>::deserialize(&mut de) {
        Ok(c) => crate::http::status::status_for_error(c.code),
        Err(_) => StatusCode::OK,
    }
}

/// The session of a GET or DELETE: 405 in the 2026-07-28 era (and for a
/// request that names neither a session nor a version: nothing to serve
/// there), then as for POST.
fn session_of_get_or_delete(
    core: &Core,
    h: &HeaderMap,
    owner: &Owner,
) -> Result<Arc<Session>, Rejection> {
    if era_of(h, false) == Era::Stateless
        || (!h.contains_key(SESSION_ID) && !h.contains_key(PROTOCOL_VERSION))
    {
        return Err(Rejection::MethodNotAllowed { allow: "POST" });
    }
    let session = session_of(core, h, owner)?;
    stateful_version_ok(h)?;
    Ok(session)
}

/// GET: a session's SSE stream, or the resumption of one of its streams
/// after `Last-Event-ID`.
fn get(core: Arc<Core>, h: &HeaderMap, owner: &Owner) -> Response<Body> {
    let session = match session_of_get_or_delete(&core, h, owner) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    if !Accepts::of(h).sse() {
        return Rejection::NotAcceptable {
            expected: "text/event-stream",
        }
        .into_response();
    }
    session.touch();
    let (stream, after) = match h.get(headers::LAST_EVENT_ID) {
        Some(raw) => {
            let Some((number, seq)) = raw.to_str().ok().and_then(stream::parse_event_id) else {
                return Rejection::MalformedLastEventId.into_response();
            };
            match session.stream(number) {
                Some(s) if !(s.drained() && number != 0) => (s, seq),
                // Ended and read, or forgotten: nothing more on that stream.
                _ => return response::empty(StatusCode::NO_CONTENT),
            }
        }
        None => {
            let s = session.standalone().clone();
            let after = s.delivered();
            (s, after)
        }
    };
    tracing::debug!(session = %session.id(), stream = stream.number(), after, "SSE stream attached");
    let attached = stream.attach(after);
    let mut prelude = stream
        .priming(attached.after(), core.config().get_sse_retry())
        .map(Vec::from)
        .unwrap_or_default();
    if attached.lost() > 0 {
        let logging = session.shared().capabilities().get("logging").is_some();
        prelude.extend_from_slice(&stream::loss_notice(
            stream.number(),
            attached.lost(),
            logging,
        ));
    }
    let prelude = (!prelude.is_empty()).then(|| prelude.into());
    let body = SseBody::new(
        stream.clone(),
        attached.generation(),
        prelude,
        core.config().get_keep_alive(),
    );
    sse_response(Body::new(watch_open(body, &session, stream)))
}

/// DELETE: ends a session.
fn delete(core: Arc<Core>, h: &HeaderMap, owner: &Owner) -> Response<Body> {
    let session = match session_of_get_or_delete(&core, h, owner) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    core.sessions().remove(session.id());
    core.end_session(&session);
    tracing::info!(server = %core.name(), session = %session.id(), "session ended by the client (DELETE)");
    response::empty(StatusCode::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stateless_answer_gets_the_status_of_its_error_code() {
        let not_found = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#;
        assert_eq!(status_of_answer(not_found), StatusCode::NOT_FOUND);
        let invalid = br#"{"jsonrpc":"2.0","id":"a\"b","error":{"code":-32602,"message":"x"}}"#;
        assert_eq!(status_of_answer(invalid), StatusCode::BAD_REQUEST);
        let handler_error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}"#;
        assert_eq!(status_of_answer(handler_error), StatusCode::OK);
        // An "error" inside a result is the result's business.
        let result = br#"{"jsonrpc":"2.0","id":1,"result":{"a":1,"error":{"code":-32601}}}"#;
        assert_eq!(status_of_answer(result), StatusCode::OK);
        // So is one inside the id (a client chooses it).
        let id = crate::jsonrpc::RequestId::String(r#"x,"error":{"code":-32601}"#.into());
        let line = encode::result(&Some(id.clone()), &serde_json::json!({})).unwrap();
        assert_eq!(status_of_answer(&line), StatusCode::OK);
        let e = crate::jsonrpc::ErrorObject::new(-32602, "bad");
        assert_eq!(
            status_of_answer(&encode::error(&Some(id), &e)),
            StatusCode::BAD_REQUEST
        );
    }
}
