//! Inbound dispatch: responses to their callers, progress to its request,
//! notifications to subscribers, and server-to-client requests to the
//! user's handler.

use ractor::ActorRef;
use serde_json::json;
use tracing::debug;

use super::{ConnectionMsg, ConnectionState, Phase, Waiter};
use crate::client::handler::InboundRequest;
use crate::client::pending::call_result;
use crate::jsonrpc::{codes, encode, ErrorObject, Message, Notification, RequestId};
use crate::protocol::{methods, Era};

impl ConnectionState {
    pub(super) fn inbound(&mut self, myself: &ActorRef<ConnectionMsg>, msg: Message) {
        match msg {
            Message::Response(r) => {
                let Some(id) = r.id else {
                    debug!(server = %self.name(), "server sent an error without an id; ignored");
                    return;
                };
                match self.pending.remove(&id) {
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

    pub(super) fn notification(&mut self, n: Notification) {
        match n.method.as_str() {
            methods::PROGRESS => {
                // Progress for a waiting caller is delivered by the sink;
                // what reaches here has no caller.
                if let Some(n) = self.pending.progress(n) {
                    self.shared.publish(n);
                }
            }
            methods::CANCELLED => {
                let id = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(|t| serde_json::from_value::<RequestId>(t.clone()).ok());
                if let Some(h) = id.and_then(|id| self.inbound.remove(&id)) {
                    h.abort();
                }
            }
            _ => self.shared.publish(n),
        }
    }

    pub(super) fn server_request(
        &mut self,
        myself: &ActorRef<ConnectionMsg>,
        req: crate::jsonrpc::Request,
    ) {
        let id = req.id.clone();
        let era = match &self.phase {
            Phase::Ready(s) => Some(s.era),
            _ => None,
        };
        match (&self.shared.handler, req.method.as_str()) {
            (Some(handler), _) if era != Some(Era::Modern) => {
                let handler = handler.clone();
                let me = myself.clone();
                let gen = self.gen;
                let rid = id.clone();
                let task = tokio::spawn(async move {
                    let outcome = handler
                        .handle(InboundRequest {
                            method: req.method,
                            params: req.params,
                        })
                        .await;
                    let _ = me.cast(ConnectionMsg::Respond {
                        gen,
                        id: rid,
                        outcome,
                    });
                });
                self.inbound.insert(id, task.abort_handle());
            }
            (None, methods::PING) => {
                if let Ok(line) = encode::result(&Some(id), &json!({})) {
                    self.send_line(line);
                }
            }
            (_, method) => {
                let e = ErrorObject::new(
                    codes::METHOD_NOT_FOUND,
                    format!("method not found: {method}"),
                );
                let line = encode::error(&Some(id), &e);
                self.send_line(line);
            }
        }
    }
}
