//! What a server asks of its client (sampling, elicitation, roots), taken
//! to the front client whose call it belongs to.
//!
//! Each server of the host gets its own [`ServerRelay`] as its
//! [`ClientHandler`]. A request reaches it in one of two ways:
//! - a 2026-07-28 server's input request, fulfilled by the client inside
//!   the call's own task: the call is known exactly (a task-local);
//! - a legacy server's request over stdio, which says nothing of the call
//!   it belongs to: it goes to the one client with calls in flight on that
//!   server (the oldest call of that client's session); with calls of
//!   several sessions in flight it is refused, rather than shown to a
//!   client it may not belong to.
//!
//! A 2025-11-25 front session gets the request on its call's SSE stream
//! ([`RequestContext::ask`]); a 2026-07-28 front call gets it as an
//! `input_required` round (see [`held_calls`](super::held_calls)): the request
//! waits, with its answer slot, on the call's `asks` channel.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use crate::client::{ClientHandler, HandlerFuture, InboundRequest};
use crate::jsonrpc::{codes, ErrorObject};
use crate::protocol::{
    methods, ClientCapabilities, ElicitationCapability, InputRequest, ListChangedCapability,
    SamplingCapability,
};
use crate::server::{AskError, RequestContext, SendError};

use super::auth::Principal;

tokio::task_local! {
    /// The front call a server call is made for (set around the client's
    /// request, so a modern server's input requests find it).
    pub(crate) static CURRENT: Arc<Call>;
}

/// A server's request for input, waiting for a 2026-07-28 front call to
/// carry it to its client and back.
pub(crate) struct Ask {
    pub(crate) request: InboundRequest,
    pub(crate) reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// One front call in flight on a server.
pub(crate) struct Call {
    id: u64,
    pub(crate) server: Arc<str>,
    pub(crate) principal: Arc<Principal>,
    /// The front request's context (2026-07-28: the current round's).
    ctx: Mutex<RequestContext>,
    /// The front session (2025-11-25), or the call itself (2026-07-28).
    session: usize,
    /// 2026-07-28 front calls: where the server's requests wait.
    asks: Option<mpsc::UnboundedSender<Ask>>,
    /// Held, waiting for its client's next round: a server's new request
    /// is more likely another call's.
    waiting: AtomicBool,
}

impl Call {
    /// The current front context.
    pub(crate) fn ctx(&self) -> RequestContext {
        crate::sync::lock(&self.ctx).clone()
    }

    /// A new round of the same call (2026-07-28 retries).
    pub(crate) fn set_ctx(&self, ctx: RequestContext) {
        *crate::sync::lock(&self.ctx) = ctx;
    }

    /// Marks the call held for its client's input (or running again).
    pub(crate) fn set_waiting(&self, waiting: bool) {
        self.waiting.store(waiting, Ordering::Release);
    }
}

/// Every front call in flight, by server.
#[derive(Default)]
pub(crate) struct ServerRequests {
    calls: Mutex<HashMap<Arc<str>, Vec<Arc<Call>>>>,
    next: AtomicU64,
}

/// Takes a call out of the table of calls in flight when dropped.
pub(crate) struct Registered {
    relay: Arc<ServerRequests>,
    pub(crate) call: Arc<Call>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut calls = crate::sync::lock(&self.relay.calls);
        if let Some(list) = calls.get_mut(&self.call.server) {
            list.retain(|c| c.id != self.call.id);
            if list.is_empty() {
                calls.remove(&self.call.server);
            }
        }
    }
}

impl ServerRequests {
    /// Records a call of `principal` on `server`; `asks` for a 2026-07-28
    /// front call whose server may ask over its own stdio.
    pub(crate) fn register(
        self: &Arc<Self>,
        server: &str,
        principal: Arc<Principal>,
        ctx: RequestContext,
        asks: Option<mpsc::UnboundedSender<Ask>>,
    ) -> Registered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let session = match ctx.era() {
            crate::protocol::Era::Stateful => session_key(&ctx).unwrap_or(usize::MAX - id as usize),
            crate::protocol::Era::Stateless => usize::MAX - id as usize,
        };
        let call = Arc::new(Call {
            id,
            server: server.into(),
            principal,
            ctx: Mutex::new(ctx),
            session,
            asks,
            waiting: AtomicBool::new(false),
        });
        crate::sync::lock(&self.calls)
            .entry(call.server.clone())
            .or_default()
            .push(call.clone());
        Registered {
            relay: self.clone(),
            call,
        }
    }

    /// The calls in flight on `server` (for its log messages).
    pub(crate) fn calls_on(&self, server: &str) -> Vec<Arc<Call>> {
        crate::sync::lock(&self.calls)
            .get(server)
            .cloned()
            .unwrap_or_default()
    }

    /// The handler of `server`'s requests.
    pub(crate) fn handler_for(self: &Arc<Self>, server: &str) -> Arc<dyn ClientHandler> {
        Arc::new(ServerRelay {
            relay: self.clone(),
            server: server.into(),
        })
    }

    /// The call a request of `server` belongs to.
    fn attribute(&self, server: &str, method: &str) -> Result<Arc<Call>, ErrorObject> {
        if let Ok(call) = CURRENT.try_with(|c| c.clone()) {
            if &*call.server == server {
                return Ok(call);
            }
        }
        let mut calls = self.calls_on(server);
        // A call held for its client's input is not running on the server
        // (its request is answered by the client's retry): a new request is
        // another call's, unless every call is held.
        if calls.iter().any(|c| !c.waiting.load(Ordering::Acquire)) {
            calls.retain(|c| !c.waiting.load(Ordering::Acquire));
        }
        let Some(first) = calls.first() else {
            return Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("the gateway has no client call in flight on server `{server}` to send {method} to"),
            ));
        };
        if calls.iter().any(|c| c.session != first.session) {
            tracing::warn!(server, method, calls = calls.len(), "gateway: a server's request refused: calls of several clients in flight, and the server does not say which it is for");
            return Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "the gateway cannot tell which of {} client calls on server `{server}` this {method} is for (the server's request names none); refused",
                    calls.len()
                ),
            ));
        }
        Ok(first.clone())
    }

    async fn answer(&self, server: &str, request: InboundRequest) -> Result<Value, ErrorObject> {
        if request.method == methods::PING {
            return Ok(json!({}));
        }
        let call = self.attribute(server, &request.method)?;
        tracing::debug!(server, method = %request.method, client = %call.principal.name, "gateway: a server's request goes to its client");
        match &call.asks {
            Some(asks) => {
                let (reply, answer) = oneshot::channel();
                let method = request.method.clone();
                if asks.send(Ask { request, reply }).is_err() {
                    return Err(gone(&method));
                }
                answer.await.unwrap_or_else(|_| {
                    Err(ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        format!("the client did not answer {method}: its call ended or its input timed out"),
                    ))
                })
            }
            None => {
                let ctx = call.ctx();
                let input = InputRequest::from_parts(&request.method, request.params);
                ctx.ask("input", input).await.map_err(ask_error)
            }
        }
    }
}

/// The error a server gets when the call it asked for is gone.
fn gone(method: &str) -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        format!("the client call this {method} was for has ended"),
    )
}

/// A front client's failure to answer, as the server's request's error.
pub(crate) fn ask_error(e: AskError) -> ErrorObject {
    match e {
        AskError::MissingCapability { capability, .. } => ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("the client did not declare the {capability} capability"),
        ),
        AskError::Send(SendError::Client(e)) => e,
        e => ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()),
    }
}

/// The session a 2025-11-25 front request came in (its shared state's
/// address: the same for every request of the session).
fn session_key(ctx: &RequestContext) -> Option<usize> {
    ctx.handle()
        .shared()
        .ok()
        .map(|s| Arc::as_ptr(&s) as *const () as usize)
}

/// One server's [`ClientHandler`]: its requests go to the call they belong to.
struct ServerRelay {
    relay: Arc<ServerRequests>,
    server: Arc<str>,
}

impl ClientHandler for ServerRelay {
    fn handle(&self, request: InboundRequest) -> HandlerFuture {
        let relay = self.relay.clone();
        let server = self.server.clone();
        Box::pin(async move { relay.answer(&server, request).await })
    }

    /// Everything a front client may have: whether this call's client has
    /// it is checked when the server asks (2026-07-28 servers are told the
    /// front client's own capabilities with each call).
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(ListChangedCapability::default()),
            sampling: Some(SamplingCapability::default()),
            elicitation: Some(ElicitationCapability::default()),
            ..Default::default()
        }
    }
}
