//! Inbound dispatch in the Connection: answers to the probe and
//! `initialize`, cancellations of the server's requests, and the server's
//! requests themselves, handed to the user's handler.
//!
//! Responses to callers, progress and notifications never come here: the
//! link's sink delivers them directly (see [`Connection::sink`](super::Connection::sink)).
//! Server requests are bounded: at most `max_inbound_requests` are handled
//! at once; past that, or for an id already being handled, the server gets
//! an error at once, so nothing is dropped silently and no handler is lost
//! track of.

use std::sync::Arc;

use ractor::ActorRef;
use serde_json::{json, Value};
use tracing::{debug, warn};

use super::{ConnectionMsg, ConnectionState, LinkPhase};
use crate::client::reply_slot::call_result;
use crate::client::waiters::Waiter;
use crate::client::{ClientHandler, InboundRequest};
use crate::jsonrpc::{codes, encode, ErrorObject, Message, Notification, Request, RequestId};
use crate::line_io::WriteQueue;
use crate::protocol::{methods, Era};

impl ConnectionState {
    pub(super) fn inbound(&mut self, myself: &ActorRef<ConnectionMsg>, msg: Message) {
        match msg {
            Message::Response(r) => {
                let Some(id) = r.id else {
                    debug!(server = %self.name(), "server sent an error without an id; ignored");
                    return;
                };
                match self.shared.pending().remove(&id) {
                    // Normally answered by the sink already; kept for safety.
                    Some(Waiter::Caller { reply, .. }) => reply.answer(call_result(r.outcome)),
                    Some(Waiter::Probe) => self.probe_answered(myself, r.outcome),
                    Some(Waiter::LateProbe) => self.late_probe_answered(r.outcome),
                    Some(Waiter::Initialize) => self.initialize_answered(myself, r.outcome),
                    None => {
                        debug!(server = %self.name(), %id, "response to an unknown or abandoned request; ignored")
                    }
                }
            }
            Message::Notification(n) => self.notification(n),
            Message::Request(req) => self.server_request(myself, req),
        }
    }

    fn notification(&mut self, n: Notification) {
        if n.method != methods::CANCELLED {
            // Published by the sink; only cancellations come here.
            self.shared.publish(n);
            return;
        }
        let id = crate::protocol::cancelled_request_id(&n);
        if let Some((_, h)) = id.and_then(|id| self.inbound.remove(&id)) {
            h.abort();
        }
    }

    fn server_request(&mut self, myself: &ActorRef<ConnectionMsg>, req: Request) {
        let Some(handler) = self.handler_for(&req) else {
            return;
        };
        if let Some(e) = self.refusal(&req) {
            warn!(server = %self.name(), id = %req.id, method = %req.method, error = %e.message, "server request refused");
            self.send_control(encode::error(&Some(req.id), &e));
            return;
        }
        let Some(link) = self.shared.link() else {
            return;
        };
        let queue = link.queue().clone();
        let me = myself.clone();
        let id = req.id.clone();
        self.inbound_serial += 1;
        let serial = self.inbound_serial;
        let task = tokio::spawn(async move {
            let outcome = handler
                .handle(InboundRequest {
                    method: req.method,
                    params: req.params,
                })
                .await;
            send_answer(&queue, &req.id, outcome).await;
            let _ = me.cast(ConnectionMsg::InboundDone { id: req.id, serial });
        });
        self.inbound.insert(id, (serial, task.abort_handle()));
    }

    /// The user's handler for `req`, or `None` once `req` has been answered
    /// here: `ping` without a handler, and every request without a handler
    /// or in the 2026-07-28 era (where the server asks nothing of the client
    /// outside a call) is method-not-found.
    fn handler_for(&mut self, req: &Request) -> Option<Arc<dyn ClientHandler>> {
        let era = match &self.phase {
            LinkPhase::Ready(s) => Some(s.era),
            _ => None,
        };
        match (self.shared.handler(), req.method.as_str()) {
            (Some(handler), _) if era != Some(Era::Stateless) => Some(handler.clone()),
            (None, methods::PING) => {
                if let Ok(line) = encode::result(&Some(req.id.clone()), &json!({})) {
                    self.send_control(line);
                }
                None
            }
            (_, method) => {
                let e = ErrorObject::new(
                    codes::METHOD_NOT_FOUND,
                    format!("method not found: {method}"),
                );
                self.send_control(encode::error(&Some(req.id.clone()), &e));
                None
            }
        }
    }

    /// Why `req` is not handled: its id is still being handled, or
    /// `max_inbound_requests` are.
    fn refusal(&self, req: &Request) -> Option<ErrorObject> {
        let limit = self.shared.config().get_max_inbound_requests();
        if self.inbound.contains_key(&req.id) {
            Some(ErrorObject::new(
                codes::INVALID_REQUEST,
                format!(
                    "duplicate request id {}: a request with this id is still being handled",
                    req.id
                ),
            ))
        } else if self.inbound.len() >= limit {
            Some(ErrorObject::new(
                codes::SERVER_ERROR,
                format!("the client is busy: {limit} requests from the server are already being handled (the limit)"),
            ))
        } else {
            None
        }
    }
}

/// Queues the answer to the server's request `id`. The answer may be large:
/// it takes room in the queue (and waits for it); one over the whole queue
/// becomes an error, so the server is answered either way.
async fn send_answer(queue: &WriteQueue, id: &RequestId, outcome: Result<Value, ErrorObject>) {
    let id = Some(id.clone());
    let line = match outcome {
        Ok(v) => encode::result(&id, &v).unwrap_or_else(|e| {
            let e = ErrorObject::new(codes::INTERNAL_ERROR, e.to_string());
            encode::error(&id, &e)
        }),
        Err(e) => encode::error(&id, &e),
    };
    if line.len() > queue.limit() {
        let e = ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!(
                "the answer is {} bytes, over the client's {}-byte write queue",
                line.len(),
                queue.limit()
            ),
        );
        let _ = queue.send_control(encode::error(&id, &e));
    } else {
        // Closed: the server is gone, and this answer with it.
        let _ = queue.send(line).await;
    }
}
