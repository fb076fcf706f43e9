//! What a server asks of its client (sampling, elicitation, roots), taken
//! to the client whose call it belongs to.
//!
//! Each server of the host gets its own [`ServerRelay`] as its
//! [`ClientHandler`]. A request reaches it in one of two ways:
//! - a 2026-07-28 server's input request, fulfilled by the client inside
//!   the call's own task: the call is known exactly (a task-local);
//! - a stateful server's request over stdio, which says nothing of the call
//!   it belongs to: it goes to the one client with calls in flight on that
//!   server (the oldest call of that client's session); with calls of
//!   several sessions in flight it is refused, rather than shown to a
//!   client it may not belong to.
//!
//! A 2025-11-25 client's session gets the request on its call's SSE stream
//! ([`RequestContext::ask`]); a 2026-07-28 client's call to a stateful server
//! is a [`HeldCall`], and the request is its [`ask`](HeldCall::ask): an
//! `input_required` round of the client's call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::client::{ClientHandler, HandlerFuture, InboundRequest};
use crate::jsonrpc::{codes, ErrorObject};
use crate::protocol::{
    methods, ClientCapabilities, ElicitationCapability, InputRequest, ListChangedCapability,
    SamplingCapability,
};
use crate::server::{AskError, HeldCall, RequestContext, SendError};

use super::auth::Principal;

tokio::task_local! {
    /// The client's call a server call is made for (set around the client's
    /// request, so a stateless server's input requests find it).
    pub(crate) static CURRENT: Arc<Call>;
}

/// One client's call in flight on a server.
pub(crate) struct Call {
    id: u64,
    server: Arc<str>,
    principal: Arc<Principal>,
    gateway: FrontCall,
    /// The client's session (2025-11-25), or the call itself (2026-07-28).
    session: usize,
    /// A held call's end when its client cannot give what the server
    /// asks for: the client's call fails with this error.
    fail: Mutex<Option<oneshot::Sender<AskError>>>,
}

/// Where a server's requests for the call go.
// The large variant is the common one, and a `Call` lives in an `Arc`
// anyway: boxing it would cost each forwarded call an allocation.
#[allow(clippy::large_enum_variant)]
enum FrontCall {
    /// The client's request (a 2025-11-25 session's: asked on its stream;
    /// a 2026-07-28 one to a 2026-07-28 server: fulfilled in its task).
    Request(RequestContext),
    /// A 2026-07-28 client's call to a stateful server, held across its
    /// client's input rounds.
    Held(HeldCall),
}

impl Call {
    /// The current client context (a held call's: the current round's).
    pub(crate) fn ctx(&self) -> RequestContext {
        match &self.gateway {
            FrontCall::Request(ctx) => ctx.clone(),
            FrontCall::Held(held) => held.context(),
        }
    }

    /// Held, waiting for its client's next round: a server's new request
    /// is more likely another call's.
    fn is_waiting(&self) -> bool {
        matches!(&self.gateway, FrontCall::Held(h) if h.is_waiting())
    }
}

/// Every client's call in flight, by server.
#[derive(Default)]
pub(crate) struct ServerRequests {
    calls: Mutex<HashMap<Arc<str>, Vec<Arc<Call>>>>,
    next: AtomicU64,
}

/// Takes a call out of the table of calls in flight when dropped.
pub(crate) struct Registered {
    relay: Arc<ServerRequests>,
    call: Arc<Call>,
}

impl Registered {
    /// The call registered.
    #[inline]
    pub(crate) fn call(&self) -> &Arc<Call> {
        &self.call
    }
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
    /// Records a call of `principal` on `server` made for the client's request
    /// `ctx`.
    pub(crate) fn register(
        self: &Arc<Self>,
        server: &str,
        principal: Arc<Principal>,
        ctx: RequestContext,
    ) -> Registered {
        let session = match ctx.era() {
            crate::protocol::Era::Stateful => session_key(&ctx),
            crate::protocol::Era::Stateless => None,
        };
        self.add(server, principal, FrontCall::Request(ctx), session, None)
    }

    /// Records a held call of `principal` on `server`; `fail` ends it when
    /// its client cannot give what the server asks for.
    pub(crate) fn register_held(
        self: &Arc<Self>,
        server: &str,
        principal: Arc<Principal>,
        held: HeldCall,
        fail: oneshot::Sender<AskError>,
    ) -> Registered {
        self.add(server, principal, FrontCall::Held(held), None, Some(fail))
    }

    fn add(
        self: &Arc<Self>,
        server: &str,
        principal: Arc<Principal>,
        gateway: FrontCall,
        session: Option<usize>,
        fail: Option<oneshot::Sender<AskError>>,
    ) -> Registered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let call = Arc::new(Call {
            id,
            server: server.into(),
            principal,
            gateway,
            session: session.unwrap_or(usize::MAX - id as usize),
            fail: Mutex::new(fail),
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
        if calls.iter().any(|c| !c.is_waiting()) {
            calls.retain(|c| !c.is_waiting());
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
        tracing::debug!(server, method = %request.method, client = %call.principal.name(), "gateway: a server's request goes to its client");
        let input = InputRequest::from_parts(&request.method, request.params);
        match &call.gateway {
            FrontCall::Held(held) => match held.ask(input).await {
                Err(e @ AskError::MissingCapability { .. }) => {
                    // The client cannot give it: its call fails with
                    // -32021 naming the capability, and the server's call
                    // is cancelled with it.
                    tracing::debug!(server, error = %e, "gateway: the server asked for a capability the client did not declare");
                    if let Some(fail) = crate::sync::lock(&call.fail).take() {
                        let _ = fail.send(e.clone());
                    }
                    Err(ask_error(e))
                }
                r => r.map_err(ask_error),
            },
            FrontCall::Request(ctx) => ctx.ask("input", input).await.map_err(ask_error),
        }
    }
}

/// A client's failure to answer, as the server's request's error.
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

/// The session a 2025-11-25 client's request came in (its shared state's
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

    /// Everything a client may have: whether this call's client has
    /// it is checked when the server asks (2026-07-28 servers are told the
    /// client's own capabilities with each call).
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(ListChangedCapability::default()),
            sampling: Some(SamplingCapability::default()),
            elicitation: Some(ElicitationCapability::default()),
            ..Default::default()
        }
    }
}
