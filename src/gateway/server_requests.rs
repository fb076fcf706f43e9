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
//!   client it may not belong to. A held call waiting for its client's
//!   next round is in flight: the server may ask it more. With no call in
//!   flight, `roots/list` is answered with the server's configured roots
//!   (none by default) and anything else refused.
//!
//! A request over the server's link holds one of its client's slots for
//! the server's requests (`max_inbound_requests`) until it is answered,
//! and it is answered no later than its call ends. Each owner (the
//! caller's principal, else its address: as the HTTP server shares its
//! bounds) holds at most a quarter of the slots, and the last quarter goes
//! only to owners that hold none, so that a client that never answers
//! leaves the others room.
//!
//! A 2025-11-25 client's session gets the request on its call's SSE stream
//! ([`RequestContext::ask`]); a 2026-07-28 client's call to a stateful server
//! is a [`HeldCall`], and the request is its [`ask`](HeldCall::ask): an
//! `input_required` round of the client's call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::client::{ClientHandler, HandlerFuture, InboundRequest};
use crate::jsonrpc::{codes, ErrorObject};
use crate::protocol::{
    methods, ClientCapabilities, ElicitationCapability, InputRequest, ListChangedCapability, Root,
    SamplingCapability,
};
use crate::server::http::Owner;
use crate::server::{AskError, HeldCall, RequestContext, SendError, SessionId};
use crate::CancelToken;

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
    /// The client's session (2025-11-25); `None` for a call that stands
    /// alone (2026-07-28).
    session: Option<SessionId>,
    /// Whose share of the server's request slots its requests take.
    owner: Owner,
    /// The server's request slots (its client's `max_inbound_requests`).
    slots: usize,
    /// Cancelled when the call ends: the server's requests for it end too.
    ended: CancelToken,
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

impl FrontCall {
    fn ctx(&self) -> RequestContext {
        match self {
            FrontCall::Request(ctx) => ctx.clone(),
            FrontCall::Held(held) => held.context(),
        }
    }
}

impl Call {
    /// The current client context (a held call's: the current round's).
    pub(crate) fn ctx(&self) -> RequestContext {
        self.gateway.ctx()
    }

    /// Asks the call's client `input` and waits for its answer.
    async fn ask(&self, server: &str, input: InputRequest) -> Result<Value, ErrorObject> {
        match &self.gateway {
            FrontCall::Held(held) => match held.ask(input).await {
                Err(e @ AskError::MissingCapability { .. }) => {
                    // The client cannot give it: its call fails with
                    // -32021 naming the capability, and the server's call
                    // is cancelled with it.
                    tracing::debug!(server, error = %e, "gateway: the server asked for a capability the client did not declare");
                    if let Some(fail) = crate::sync::lock(&self.fail).take() {
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

/// Every client's call in flight, by server; the server's requests waiting
/// for an answer, by server and owner; each server's configured roots.
#[derive(Default)]
pub(crate) struct ServerRequests {
    calls: Mutex<HashMap<Arc<str>, Vec<Arc<Call>>>>,
    slots: Mutex<HashMap<Arc<str>, Slots>>,
    roots: RwLock<HashMap<String, Arc<Value>>>,
    refused: Family<Refused, Counter>,
    next: AtomicU64,
}

/// A server's requests refused, by server and why (the metrics' labels).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Refused {
    server: String,
    reason: &'static str,
}

/// The slots of one server's requests held, in all and by owner.
#[derive(Debug, Default)]
struct Slots {
    total: usize,
    by_owner: HashMap<Owner, usize>,
}

/// Whether an owner that holds `mine` of a server's `slots` (`total` held
/// in all) may take one more: at most a quarter each, and the last quarter
/// only for an owner that holds none.
fn may_take(mine: usize, total: usize, slots: usize) -> bool {
    let (share, reserve) = ((slots / 4).max(1), slots / 4);
    total < slots && mine < share && (mine == 0 || total + reserve < slots)
}

/// One slot of a server's requests, given back when dropped.
struct Slot<'a> {
    relay: &'a ServerRequests,
    server: Arc<str>,
    owner: Owner,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut slots = crate::sync::lock(&self.relay.slots);
        let Some(s) = slots.get_mut(&self.server) else {
            return;
        };
        s.total -= 1;
        if let Some(n) = s.by_owner.get_mut(&self.owner) {
            *n -= 1;
            if *n == 0 {
                s.by_owner.remove(&self.owner);
            }
        }
        if s.total == 0 {
            slots.remove(&self.server);
        }
    }
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
        self.call.ended.cancel();
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
    /// Records a call of `principal` on `server` (whose client handles
    /// `slots` of its requests at once) made for the client's request `ctx`.
    pub(crate) fn register(
        self: &Arc<Self>,
        server: &str,
        slots: usize,
        principal: Arc<Principal>,
        ctx: RequestContext,
    ) -> Registered {
        let session = match ctx.era() {
            crate::protocol::Era::Stateful => ctx.handle().id(),
            crate::protocol::Era::Stateless => None,
        };
        let call = FrontCall::Request(ctx);
        self.add(server, slots, principal, call, session, None)
    }

    /// Records a held call of `principal` on `server` (as
    /// [`register`](Self::register)); `fail` ends it when its client cannot
    /// give what the server asks for.
    pub(crate) fn register_held(
        self: &Arc<Self>,
        server: &str,
        slots: usize,
        principal: Arc<Principal>,
        held: HeldCall,
        fail: oneshot::Sender<AskError>,
    ) -> Registered {
        let call = FrontCall::Held(held);
        self.add(server, slots, principal, call, None, Some(fail))
    }

    fn add(
        self: &Arc<Self>,
        server: &str,
        slots: usize,
        principal: Arc<Principal>,
        gateway: FrontCall,
        session: Option<SessionId>,
        fail: Option<oneshot::Sender<AskError>>,
    ) -> Registered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let owner = match gateway.ctx().http_request() {
            Some(parts) => Owner::of(&parts.extensions),
            None => Owner::Unknown,
        };
        let call = Arc::new(Call {
            id,
            server: server.into(),
            principal,
            gateway,
            session,
            owner,
            slots,
            ended: CancelToken::new(),
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

    /// Sets the roots `server` is answered with when it asks outside any
    /// client call (`None`: none).
    pub(crate) fn set_roots(&self, server: &str, roots: Option<&[Root]>) {
        let mut all = self.roots.write().unwrap_or_else(|e| e.into_inner());
        match roots {
            Some(r) if !r.is_empty() => {
                all.insert(server.to_owned(), Arc::new(json!({ "roots": r })));
            }
            _ => {
                all.remove(server);
            }
        }
    }

    /// The server's requests refused, by server and reason (for the
    /// metrics).
    pub(crate) fn refused(&self) -> Family<Refused, Counter> {
        self.refused.clone()
    }

    /// Counts a refusal of one of `server`'s requests and returns it.
    fn refuse(&self, server: &str, reason: &'static str, e: ErrorObject) -> ErrorObject {
        self.refused
            .get_or_create(&Refused {
                server: server.to_owned(),
                reason,
            })
            .inc();
        e
    }

    /// The call a request of `server` belongs to, and whether the request
    /// came over the server's link (rather than in the call's own task);
    /// `None` when no client call is in flight on `server`.
    fn attribute(
        &self,
        server: &str,
        method: &str,
    ) -> Result<Option<(Arc<Call>, bool)>, ErrorObject> {
        if let Ok(call) = CURRENT.try_with(|c| c.clone()) {
            if &*call.server == server {
                return Ok(Some((call, false)));
            }
        }
        // A held call waiting for its client's next round counts: the
        // server may ask it more while it waits.
        let calls = self.calls_on(server);
        let Some(first) = calls.first() else {
            return Ok(None);
        };
        if calls
            .iter()
            .any(|c| c.id != first.id && (c.session.is_none() || c.session != first.session))
        {
            tracing::warn!(server, method, calls = calls.len(), "gateway: a server's request refused: calls of several clients in flight, and the server does not say which it is for");
            let e = ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "the gateway cannot tell which of {} client calls on server `{server}` this {method} is for (the server's request names none); refused",
                    calls.len()
                ),
            );
            return Err(self.refuse(server, "several_clients", e));
        }
        Ok(Some((first.clone(), true)))
    }

    /// The answer to `server`'s `method` when no client call is in flight
    /// on it: its configured roots for `roots/list`, else a refusal.
    fn outside_calls(&self, server: &str, method: &str) -> Result<Value, ErrorObject> {
        if method == methods::ROOTS_LIST {
            tracing::debug!(server, "gateway: a server's roots/list outside any client call answered with its configured roots");
            let roots = self.roots.read().unwrap_or_else(|e| e.into_inner());
            return Ok(roots
                .get(server)
                .map_or_else(|| json!({ "roots": [] }), |r| Value::clone(r)));
        }
        let e = ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!(
                "the gateway has no client call in flight on server `{server}` to send {method} to"
            ),
        );
        Err(self.refuse(server, "no_call", e))
    }

    /// One of the server's request slots for `call`'s owner, or the refusal
    /// when it holds its share (see [`may_take`]).
    fn take_slot(&self, call: &Call) -> Result<Slot<'_>, ErrorObject> {
        let server = &call.server;
        let mut slots = crate::sync::lock(&self.slots);
        let s = slots.entry(server.clone()).or_default();
        let mine = s.by_owner.get(&call.owner).copied().unwrap_or(0);
        if !may_take(mine, s.total, call.slots) {
            let total = s.total;
            drop(slots);
            tracing::warn!(server = %server, owner = %call.owner, held = mine, total, "gateway: a server's request refused: its client holds its share of the server's request slots");
            let e = ErrorObject::new(
                codes::SERVER_ERROR,
                format!(
                    "the client is busy: {mine} of server `{server}`'s requests wait for its answers, {total} of {} for all clients (each holds at most a quarter, and the last quarter is for clients holding none)",
                    call.slots
                ),
            );
            return Err(self.refuse(server, "client_share", e));
        }
        s.total += 1;
        *s.by_owner.entry(call.owner.clone()).or_default() += 1;
        Ok(Slot {
            relay: self,
            server: server.clone(),
            owner: call.owner.clone(),
        })
    }

    async fn answer(&self, server: &str, request: InboundRequest) -> Result<Value, ErrorObject> {
        if request.method == methods::PING {
            return Ok(json!({}));
        }
        let Some((call, over_link)) = self.attribute(server, &request.method)? else {
            return self.outside_calls(server, &request.method);
        };
        let _slot = match over_link {
            true => Some(self.take_slot(&call)?),
            false => None,
        };
        tracing::debug!(server, method = %request.method, client = %call.principal.name(), "gateway: a server's request goes to its client");
        let input = InputRequest::from_parts(&request.method, request.params);
        tokio::select! {
            r = call.ask(server, input) => r,
            () = call.ended.cancelled() => Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                "the client's call ended before its client answered",
            )),
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

#[cfg(test)]
mod tests {
    use super::may_take;

    /// Owners come one after another, each taking slots as long as it may;
    /// the count each got.
    fn fill(owners: usize, slots: usize) -> Vec<usize> {
        let mut total = 0;
        (0..owners)
            .map(|_| {
                let mut mine = 0;
                while may_take(mine, total, slots) {
                    mine += 1;
                    total += 1;
                }
                mine
            })
            .collect()
    }

    #[test]
    fn one_owner_takes_a_quarter_and_a_newcomer_always_finds_a_slot_while_few_hold_some() {
        // Alone, one owner holds a quarter of the 16 slots.
        assert_eq!(fill(1, 16), [4]);
        // Three owners hold three quarters; the last quarter is left to
        // owners holding none, one slot each.
        assert_eq!(fill(3, 16), [4, 4, 4]);
        assert!(may_take(0, 12, 16) && !may_take(1, 12, 16));
        assert_eq!(fill(8, 16), [4, 4, 4, 1, 1, 1, 1, 0]);
        // Never more than the whole.
        assert!(!may_take(0, 16, 16));
        // Small limits still admit someone.
        assert_eq!(fill(2, 1), [1, 0]);
        assert_eq!(fill(3, 2), [1, 1, 0]);
        assert_eq!(fill(1, 4), [1]);
    }
}
