//! Sending: the dispatcher that turns each queued message into a POST, one
//! POST and its answer, and DELETE at the end of a session.
//!
//! The room a message holds in the [`WriteQueue`] is given back once its
//! POST has been sent (the response's head arrived, or it failed), so
//! `max_write_queue_bytes` bounds the request bodies in transit, as it
//! bounds the unwritten bytes of a stdio server.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use reqwest::{Response, StatusCode};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use super::{headers, learn, stream, Core, Inflight};
use crate::error::CloseReason;
use crate::http::headers as mcp;
use crate::jsonrpc::{ErrorObject, Message, Outcome, RawJson, RequestId, Response as RpcResponse};
use crate::line_io::queue::Item;
use crate::line_io::QueueReceiver;

/// Room of one sent message: `(counted room, control bytes)`.
type Room = (usize, usize);

/// The room a message holds in the queue, given back when this is
/// dropped: once its POST was sent or failed, and also when the task
/// sending it is aborted (a cancelled call), so no room is ever lost.
struct Held {
    tx: mpsc::UnboundedSender<Room>,
    room: Room,
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = self.tx.send(self.room);
    }
}

/// Bytes of an error body read to explain an HTTP failure.
const ERROR_BODY_BYTES: usize = 64 * 1024;

/// How long the DELETE that ends a session may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);

/// Takes queued messages and POSTs each on its own task, until the queue
/// closes or the link does.
pub(super) async fn dispatch(core: Arc<Core>, mut rx: QueueReceiver) {
    let (room_tx, mut room_rx) = mpsc::unbounded_channel::<Room>();
    let stopped = core.clone();
    let stopped = stopped.stopped();
    tokio::pin!(stopped);
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            Some((room, control)) = room_rx.recv() => rx.written(room, control),
            item = rx.recv() => match item {
                None | Some(Item::Close) => break,
                Some(Item::Line { line, room, control }) => {
                    let held = Held {
                        tx: room_tx.clone(),
                        room: (room as usize, if control { line.len() } else { 0 }),
                    };
                    if let Some(first) = send_line(&core, line, held) {
                        // `notifications/initialized` reaches the server
                        // before the session's first request.
                        tokio::select! {
                            _ = &mut stopped => break,
                            _ = first => {}
                        }
                    }
                }
            }
        }
    }
}

/// Sends one serialised message; for `notifications/initialized`, returns
/// its task (acknowledged, then the GET stream opened), which the
/// dispatcher awaits before sending anything else.
fn send_line(
    core: &Arc<Core>,
    mut line: Vec<u8>,
    release: Held,
) -> Option<tokio::task::JoinHandle<()>> {
    while line.last().is_some_and(|b| b.is_ascii_whitespace()) {
        line.pop();
    }
    let message = match Message::parse(&line) {
        Ok(m) => m,
        Err(e) => {
            // Our own serialisation: cannot happen, but never panic.
            warn!(server = %core.name(), error = %e, "unparsable outgoing message dropped");
            drop(release);
            return None;
        }
    };
    match &message {
        Message::Notification(n) if n.method == crate::protocol::methods::CANCELLED => {
            let id = n
                .params
                .as_ref()
                .and_then(|p| p.get("requestId"))
                .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
            // Nobody waits for the answer any more: its response is closed
            // (and its room given back). In the 2026-07-28 era that is the
            // cancellation; in a 2025-11-25 session the notification
            // follows, as the server does not take a closed stream for one.
            let cancelled = id.and_then(|id| core.state().inflight.remove(&id).map(|f| (id, f)));
            if let Some((id, f)) = cancelled {
                if let Some(a) = f.abort {
                    a.abort();
                }
                debug!(server = %core.name(), %id, "request cancelled: its response closed");
                if f.modern {
                    drop(release);
                    return None;
                }
            }
        }
        _ => {}
    }
    let headers = headers::for_post(&core.opts.headers, &core.state(), &message);
    match message {
        Message::Request(r) => {
            let modern = headers::meta_version(r.params.as_ref()).is_some();
            if let Some(v) = headers::meta_version(r.params.as_ref()) {
                core.state().modern_version = Some(v.to_owned());
            }
            let id = r.id.clone();
            // Registered before the task runs, so a cancel finds it.
            core.state().inflight.insert(
                id.clone(),
                Inflight {
                    method: r.method.clone(),
                    modern,
                    abort: None,
                },
            );
            // A modern call of a tool never listed on this link: list first,
            // so its Mcp-Param-* headers can be sent.
            let meta = (modern
                && r.method == "tools/call"
                && learn::unknown_tool(core, r.params.as_ref()))
            .then(|| r.params.as_ref().and_then(|p| p.get("_meta")).cloned())
            .flatten();
            let task = tokio::spawn({
                let core = core.clone();
                async move {
                    let headers = match meta {
                        Some(meta) => {
                            learn::list_once(&core, meta).await;
                            headers::for_post(
                                &core.opts.headers,
                                &core.state(),
                                &Message::Request(r.clone()),
                            )
                        }
                        None => headers,
                    };
                    post_request(core, r.id, r.method, line, headers, release).await
                }
            });
            if let Some(f) = core.state().inflight.get_mut(&id) {
                f.abort = Some(task.abort_handle());
            }
            if core.is_closed() {
                task.abort();
            }
        }
        Message::Notification(n) => {
            let core = core.clone();
            let initialized = n.method == crate::protocol::methods::INITIALIZED;
            let task = tokio::spawn(async move {
                if post_other(&core, &n.method, line, headers, release).await && initialized {
                    stream::open_get(&core).await;
                }
            });
            return initialized.then_some(task);
        }
        Message::Response(_) => {
            let core = core.clone();
            tokio::spawn(async move {
                post_other(&core, "response", line, headers, release).await;
            });
        }
    }
    None
}

/// Describes a transport error, with its causes, without the URL (its
/// query may hold a token).
pub(super) fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// POSTs a notification or an answer; `true` when the server accepted it.
async fn post_other(
    core: &Arc<Core>,
    what: &str,
    body: Vec<u8>,
    headers: reqwest::header::HeaderMap,
    release: Held,
) -> bool {
    let sent = tokio::select! {
        _ = core.stopped() => { drop(release); return false; }
        r = core.client.post(core.opts.url.clone()).headers(headers).body(body).send() => r,
    };
    drop(release);
    match sent {
        Ok(resp) if resp.status().is_success() => true,
        Ok(resp) if resp.status() == StatusCode::NOT_FOUND && core.state().session_id.is_some() => {
            core.close(CloseReason::SessionExpired);
            false
        }
        Ok(resp) => {
            warn!(server = %core.name(), what, status = %resp.status(), "the server refused a message");
            false
        }
        Err(e) => {
            core.close(CloseReason::ConnectionFailed(describe(e)));
            false
        }
    }
}

/// POSTs request `id` and reads its answer (JSON or SSE).
async fn post_request(
    core: Arc<Core>,
    id: RequestId,
    method: String,
    body: Vec<u8>,
    headers: reqwest::header::HeaderMap,
    release: Held,
) {
    let sent = core
        .client
        .post(core.opts.url.clone())
        .headers(headers)
        .body(body)
        .send()
        .await;
    drop(release);
    match sent {
        Err(e) => core.close(CloseReason::ConnectionFailed(describe(e))),
        Ok(resp) => answer(&core, &id, &method, resp).await,
    }
    core.state().inflight.remove(&id);
}

/// Reads the answer to request `id` from `resp`.
async fn answer(core: &Arc<Core>, id: &RequestId, method: &str, resp: Response) {
    let status = resp.status();
    if method == crate::protocol::methods::INITIALIZE && status.is_success() {
        let session = resp
            .headers()
            .get(mcp::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .filter(|s| mcp::is_visible_ascii(s))
            .map(str::to_owned);
        core.state().session_id = session;
    }
    if status == StatusCode::NOT_FOUND
        && method != crate::protocol::methods::INITIALIZE
        && core.state().session_id.is_some()
    {
        core.close(CloseReason::SessionExpired);
        return;
    }
    if status == StatusCode::ACCEPTED {
        // The answer will come on another stream (the GET stream).
        return;
    }
    if !status.is_success() {
        return refused(core, id, status, resp).await;
    }
    let sse = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
    if sse {
        stream::read_post_stream(core.clone(), id.clone(), resp).await;
        return;
    }
    match read_body(resp, core.opts.max_message_bytes).await {
        Ok(body) => match Message::parse_owned(body) {
            Ok(m) => received(core, m).await,
            Err(e) => core.unanswered(id.clone(), format!("the answer is not JSON-RPC: {e}")),
        },
        Err(BodyError::TooLarge { at_least }) => core.unanswered(
            id.clone(),
            format!(
                "the answer is at least {at_least} bytes, over the {}-byte limit",
                core.opts.max_message_bytes
            ),
        ),
        Err(BodyError::Failed(e)) => core.close(CloseReason::ConnectionFailed(e)),
    }
}

/// An HTTP error status for request `id`: the body's JSON-RPC error when
/// it has one (a 400 carrying -32022, a 404 carrying -32601), else an
/// error made of the status and the start of the body. Either way the
/// caller (or the discovery probe, which then falls back) gets an answer.
async fn refused(core: &Arc<Core>, id: &RequestId, status: StatusCode, resp: Response) {
    let body = match read_body(resp, ERROR_BODY_BYTES).await {
        Ok(b) => b,
        Err(BodyError::TooLarge { .. }) => Vec::new(),
        Err(BodyError::Failed(e)) => return core.close(CloseReason::ConnectionFailed(e)),
    };
    if let Ok(Message::Response(mut r)) = Message::parse(&body) {
        if let Outcome::Error(e) = &mut r.outcome {
            // The code and data as sent (-32022's `supported` matters);
            // the status said too, as an auth failure only says it there.
            e.message = format!("HTTP {status}: {}", e.message);
            r.id = Some(id.clone());
            return core.deliver(Message::Response(r)).await;
        }
    }
    let text = String::from_utf8_lossy(&body);
    let excerpt: String = text.chars().take(200).collect();
    let code = if status.is_client_error() {
        -32600
    } else {
        -32603
    };
    let error = ErrorObject::new(code, format!("HTTP {status}: {}", excerpt.trim()))
        .with_data(json!({ "httpStatus": status.as_u16() }));
    let r = RpcResponse {
        id: Some(id.clone()),
        outcome: Outcome::Error(error),
    };
    core.deliver(Message::Response(r)).await
}

/// Delivers a message from the server, after what the link learns from
/// it: the protocol version of an `initialize` answer, the annotations of
/// a `tools/list` answer (whose invalid tools are dropped).
pub(super) async fn received(core: &Arc<Core>, message: Message) {
    let message = match message {
        Message::Response(mut r) => {
            let method =
                r.id.as_ref()
                    .and_then(|id| core.state().inflight.get(id).map(|f| f.method.clone()));
            if let (Some(method), Outcome::Result(raw)) = (method.as_deref(), &mut r.outcome) {
                learn(core, method, raw);
            }
            Message::Response(r)
        }
        m => m,
    };
    core.deliver(message).await
}

/// What the link keeps from the result of `method`.
fn learn(core: &Arc<Core>, method: &str, raw: &mut RawJson) {
    match method {
        crate::protocol::methods::INITIALIZE => {
            let version = raw.parse::<Value>().ok().and_then(|v| {
                v.get("protocolVersion")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            core.state().legacy_version = version;
        }
        "tools/list" => {
            let Ok(mut v) = raw.parse::<Value>() else {
                return;
            };
            if learn::from_result(core, &mut v) {
                if let Ok(filtered) = RawJson::from_value(&v) {
                    *raw = filtered;
                }
            }
        }
        _ => {}
    }
}

/// Why a body was not read.
pub(super) enum BodyError {
    /// Over the limit: reading stopped there.
    TooLarge { at_least: usize },
    /// The connection failed.
    Failed(String),
}

/// Reads a whole body, at most `limit` bytes (never buffering more).
pub(super) async fn read_body(mut resp: Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    if let Some(len) = resp.content_length() {
        if len > limit as u64 {
            return Err(BodyError::TooLarge {
                at_least: usize::try_from(len).unwrap_or(usize::MAX),
            });
        }
    }
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Err(BodyError::TooLarge {
                        at_least: body.len() + chunk.len(),
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(BodyError::Failed(describe(e))),
        }
    }
}

/// Ends the session with DELETE, in the background (a server that does
/// not answer within [`DELETE_TIMEOUT`] is left to expire it); the link's
/// teardown is done after it, which the client's shutdown waits for.
pub(super) fn end_session(core: Arc<Core>, session: String, version: Option<String>) {
    let mut h = core.opts.headers.clone();
    if let Ok(v) = reqwest::header::HeaderValue::from_str(&session) {
        h.insert(mcp::SESSION_ID, v);
    }
    if let Some(Ok(v)) = version.map(|v| reqwest::header::HeaderValue::from_str(&v)) {
        h.insert(mcp::PROTOCOL_VERSION, v);
    }
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        let _ = core.teardown.send(true);
        return;
    };
    rt.spawn(async move {
        let req = core
            .client
            .delete(core.opts.url.clone())
            .headers(h)
            .timeout(DELETE_TIMEOUT);
        match req.send().await {
            Ok(r) => {
                debug!(server = %core.name(), status = %r.status(), "session ended with DELETE")
            }
            Err(e) => {
                debug!(server = %core.name(), error = %describe(e), "DELETE of the session failed")
            }
        }
        let _ = core.teardown.send(true);
    });
}
