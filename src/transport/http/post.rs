//! Sending: the dispatcher that turns each queued message into a POST (its
//! answer is read by `answer`), and DELETE at the end of a session.
//!
//! The room a message holds in the [`WriteQueue`](crate::line_io::WriteQueue) is given back once its
//! POST has been sent (the response's head arrived, or it failed), so
//! `max_write_queue_bytes` bounds the request bodies in transit, as it
//! bounds the unwritten bytes of a stdio server.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use tokio::sync::mpsc;
use tracing::{debug, warn};

use super::auth::{self, SendError};
use super::response::answer;
use super::{headers, known_tools, stream, Core, Inflight};
use crate::error::CloseReason;
use crate::http::headers as mcp;
use crate::jsonrpc::{Message, RequestId};
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
            // A stateless call of a tool never listed on this link: list first,
            // so its Mcp-Param-* headers can be sent.
            let meta = (modern
                && r.method == "tools/call"
                && known_tools::unknown_tool(core, r.params.as_ref()))
            .then(|| r.params.as_ref().and_then(|p| p.get("_meta")).cloned())
            .flatten();
            let task = tokio::spawn({
                let core = core.clone();
                async move {
                    let headers = match meta {
                        Some(meta) => {
                            known_tools::list_once(&core, meta).await;
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

/// POSTs a notification or an answer; `true` when the server accepted it.
async fn post_other(
    core: &Arc<Core>,
    what: &str,
    body: Vec<u8>,
    headers: reqwest::header::HeaderMap,
    release: Held,
) -> bool {
    let body = bytes::Bytes::from(body);
    let request = || {
        core.client
            .post(core.opts.url.clone())
            .headers(headers.clone())
            .body(body.clone())
    };
    let sent = tokio::select! {
        _ = core.stopped() => { drop(release); return false; }
        r = auth::send(core, request) => r,
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
        Err(SendError::Auth(_, e)) => {
            warn!(server = %core.name(), what, error = %e, "a message was not sent: authorization failed");
            false
        }
        Err(SendError::Http(e)) => {
            core.close(CloseReason::ConnectionFailed(e));
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
    let body = bytes::Bytes::from(body);
    let request = || {
        core.client
            .post(core.opts.url.clone())
            .headers(headers.clone())
            .body(body.clone())
    };
    let sent = auth::send(&core, request).await;
    drop(release);
    match sent {
        Err(SendError::Http(e)) => core.close(CloseReason::ConnectionFailed(e)),
        Err(SendError::Auth(status, e)) => auth::refused(&core, &id, status, e).await,
        Ok(resp) => answer(&core, &id, &method, resp).await,
    }
    core.state().inflight.remove(&id);
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
        let req = || {
            core.client
                .delete(core.opts.url.clone())
                .headers(h.clone())
                .timeout(DELETE_TIMEOUT)
        };
        match tokio::time::timeout(DELETE_TIMEOUT, auth::send(&core, req)).await {
            Ok(Ok(r)) => {
                debug!(server = %core.name(), status = %r.status(), "session ended with DELETE")
            }
            Ok(Err(SendError::Http(e))) => {
                debug!(server = %core.name(), error = %e, "DELETE of the session failed")
            }
            Ok(Err(SendError::Auth(_, e))) => {
                debug!(server = %core.name(), error = %e, "DELETE of the session not authorized")
            }
            Err(_) => debug!(server = %core.name(), "DELETE of the session timed out"),
        }
        let _ = core.teardown.send(true);
    });
}
