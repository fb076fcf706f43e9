//! A 2026-07-28 front call to a legacy server that asks for input:
//! the server's call stays open across the front's rounds.
//!
//! The server sends `sampling/createMessage` (say) over its stdio and waits
//! for the answer; the front client, stateless, can only be told
//! `input_required` and retry. So the server's call runs in a task of its
//! own, and when it asks, the front request ends with `input_required`
//! (the server's request under a key, and the gateway's own
//! `requestState`), while the call waits in a table keyed by that state:
//! 128 random bits, tied to the client's token, used once. The retry finds
//! it, hands each `inputResponses` entry to the server's waiting request,
//! and goes on waiting for the result (or the next request).
//!
//! Bounded: at most [`max_held_calls`](super::FrontConfig::max_held_calls)
//! calls wait at once (past it a server's request is refused), each for at
//! most [`input_timeout`](super::FrontConfig::input_timeout): then the
//! server's request fails and its call is cancelled. A retry with a state
//! that is unknown, expired, already used, another client's, or for
//! another method or tool is refused with -32602.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::client::{Progress, RequestOptions};
use crate::error::Error;
use crate::jsonrpc::{codes, ErrorObject, RawJson};
use crate::protocol::InputRequest;
use crate::server::{AskError, HandlerError, RequestContext};
use crate::sync::AbortOnDrop;

use super::forward::{answer, send_progress, with_progress, Call};
use super::server_requests::{ask_error, Ask, Registered, CURRENT};
use super::state::FrontState;

/// The prefix of the gateway's own request states.
const STATE_PREFIX: &str = "conduit-gw.";

/// A server's request sent to the client: its key, its answer slot, and
/// the request.
type Pending = (
    String,
    oneshot::Sender<Result<Value, ErrorObject>>,
    InputRequest,
);

/// A server call waiting for its front client's next round.
pub(crate) struct Held {
    principal: usize,
    method: String,
    name: Option<String>,
    /// Keeps the call where the server's requests find it.
    registered: Registered,
    asks: mpsc::UnboundedReceiver<Ask>,
    /// The server's requests sent to the client, by key, with their answer
    /// slots.
    pending: Vec<Pending>,
    next_key: u64,
    result: oneshot::Receiver<Result<RawJson, Error>>,
    progress: Option<mpsc::UnboundedReceiver<Progress>>,
    /// The server's call; aborting it (drop) cancels it.
    _task: AbortOnDrop<()>,
}

/// The held calls, by request state.
pub(crate) struct HeldCalls {
    table: Mutex<HashMap<String, (Held, AbortOnDrop<()>)>>,
    max: usize,
    timeout: Duration,
}

impl HeldCalls {
    pub(crate) fn new(max: usize, timeout: Duration) -> Arc<Self> {
        Arc::new(HeldCalls {
            table: Mutex::new(HashMap::new()),
            max,
            timeout,
        })
    }

    /// Calls waiting now.
    pub(crate) fn len(&self) -> usize {
        crate::sync::lock(&self.table).len()
    }

    /// Keeps `held` under a new state until its retry or its expiry;
    /// `Err(held)` when the table is full.
    fn put(self: &Arc<Self>, held: Held) -> Result<String, Box<Held>> {
        let Some(state) = mint() else {
            return Err(Box::new(held));
        };
        let mut table = crate::sync::lock(&self.table);
        if table.len() >= self.max {
            return Err(Box::new(held));
        }
        let weak: Weak<HeldCalls> = Arc::downgrade(self);
        let key = state.clone();
        let timeout = self.timeout;
        let timer = AbortOnDrop(tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            if let Some(calls) = weak.upgrade() {
                let expired = crate::sync::lock(&calls.table).remove(&key);
                if expired.is_some() {
                    tracing::info!("gateway: a call waiting for its client's input expired; the server's request fails and its call is cancelled");
                }
                // Dropped outside the lock: its timer is this task.
                drop(expired);
            }
        }));
        table.insert(state.clone(), (held, timer));
        Ok(state)
    }

    /// Takes the call kept under `state`, if it is `principal`'s.
    fn take(&self, state: &str, principal: usize) -> Option<Held> {
        let mut table = crate::sync::lock(&self.table);
        match table.get(state) {
            Some((h, _)) if h.principal == principal => {}
            _ => return None,
        }
        let (held, timer) = table.remove(state)?;
        drop(table);
        // The timer is this retry's no longer.
        drop(timer);
        Some(held)
    }
}

/// A fresh request state: the prefix and 128 random bits.
fn mint() -> Option<String> {
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw).ok()?;
    Some(
        std::iter::once(STATE_PREFIX.to_owned())
            .chain(raw.iter().map(|b| format!("{b:02x}")))
            .collect(),
    )
}

/// The request's `requestState`, if it is one of the gateway's.
pub(crate) fn our_state(params: &Option<Value>) -> Option<String> {
    let s = params.as_ref()?.get("requestState")?.as_str()?;
    s.starts_with(STATE_PREFIX).then(|| s.to_owned())
}

fn tool_name(params: &Option<Value>) -> Option<String> {
    params
        .as_ref()
        .and_then(|p| p.get("name").or_else(|| p.get("uri")))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Starts the server's call in a task of its own, and serves the first
/// round.
pub(crate) async fn start(call: &Call<'_>, params: Option<Value>) -> Result<Value, HandlerError> {
    let (front, principal, target, method, ctx) = call.parts();
    let (asks_tx, asks) = mpsc::unbounded_channel();
    let registered = front.relay.register(
        &target.server,
        principal.clone(),
        ctx.clone(),
        Some(asks_tx),
    );
    let (opts, progress) = with_progress(RequestOptions::new(), ctx);
    let (done, result) = oneshot::channel();
    let name = tool_name(&params);
    let client = target.client.clone();
    let m = method.to_owned();
    let call = registered.call.clone();
    let task = tokio::spawn(CURRENT.scope(call, async move {
        let r = client.request_raw(&m, params.clone(), opts).await;
        let _ = done.send(r);
    }));
    let held = Held {
        principal: principal.index,
        method: method.to_owned(),
        name,
        registered,
        asks,
        pending: Vec::new(),
        next_key: 0,
        result,
        progress,
        _task: AbortOnDrop(task),
    };
    held.run(front, &target.server, ctx).await
}

/// A retry: the answers go to the server's waiting requests, then the
/// call goes on.
pub(crate) async fn resume(
    call: &Call<'_>,
    params: Option<Value>,
    state: String,
) -> Result<Value, HandlerError> {
    let (front, principal, target, method, ctx) = call.parts();
    let invalid = |why: &str| {
        HandlerError::Rpc(ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("invalid requestState: {why}"),
        ))
    };
    let Some(mut held) = front.held.take(&state, principal.index) else {
        return Err(invalid("unknown, expired or already used"));
    };
    let name = tool_name(&params);
    if held.method != method || held.name != name {
        return Err(invalid("it belongs to another request"));
    }
    held.registered.call.set_ctx(ctx.clone());
    held.registered.call.set_waiting(false);
    let responses: Map<String, Value> = params
        .as_ref()
        .and_then(|p| p.get("inputResponses"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut missing = Vec::new();
    for (key, reply, request) in std::mem::take(&mut held.pending) {
        match responses.get(&key) {
            Some(v) => {
                let _ = reply.send(Ok(v.clone()));
            }
            None => missing.push((key, reply, request)),
        }
    }
    if !missing.is_empty() {
        // Asked again, in this round's answer.
        held.pending = missing;
        return held.park(front, &target.server, ctx).await;
    }
    held.run(front, &target.server, ctx).await
}

impl Held {
    /// Waits for the server's answer (passing progress), or its next
    /// request for input (then parks).
    async fn run(
        mut self,
        front: &Arc<FrontState>,
        server: &str,
        ctx: &RequestContext,
    ) -> Result<Value, HandlerError> {
        loop {
            tokio::select! {
                biased;
                r = &mut self.result => {
                    self.drain_progress(ctx);
                    front.flush_notes(server).await;
                    let r = r.unwrap_or(Err(Error::Stopped));
                    return answer(server, r);
                }
                Some(ask) = self.asks.recv() => {
                    self.queue(ask);
                    while let Ok(more) = self.asks.try_recv() {
                        self.queue(more);
                    }
                    return self.park(front, server, ctx).await;
                }
                Some(p) = recv(&mut self.progress) => send_progress(ctx, &p),
            }
        }
    }

    fn drain_progress(&mut self, ctx: &RequestContext) {
        if let Some(rx) = &mut self.progress {
            while let Ok(p) = rx.try_recv() {
                send_progress(ctx, &p);
            }
        }
    }

    fn queue(&mut self, ask: Ask) {
        self.next_key += 1;
        let key = format!("input-{}", self.next_key);
        let request = InputRequest::from_parts(&ask.request.method, ask.request.params);
        self.pending.push((key, ask.reply, request));
    }

    /// Ends this round with `input_required` for the pending requests (the
    /// ones the client cannot take are answered with an error at once), and
    /// keeps the call for the retry.
    fn park<'a>(
        mut self,
        front: &'a Arc<FrontState>,
        server: &'a str,
        ctx: &'a RequestContext,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, HandlerError>> + Send + 'a>>
    {
        Box::pin(async move {
            let mut asked = Vec::new();
            for (key, reply, request) in std::mem::take(&mut self.pending) {
                match ctx.ask(&key, request.clone()).await {
                    Err(AskError::InputRequired { .. }) => asked.push((key, reply, request)),
                    Ok(v) => {
                        let _ = reply.send(Ok(v));
                    }
                    Err(e @ AskError::MissingCapability { .. }) => {
                        // The client cannot give it: the call fails with
                        // -32021 naming the capability, and the server's
                        // call is cancelled (this held call is dropped).
                        tracing::debug!(server, error = %e, "gateway: the server asked for a capability the client did not declare");
                        let _ = reply.send(Err(ask_error(e.clone())));
                        return Err(HandlerError::from(e));
                    }
                    Err(e) => {
                        tracing::debug!(server, error = %e, "gateway: a server's request the client cannot take: answered with an error");
                        let _ = reply.send(Err(ask_error(e)));
                    }
                }
            }
            if asked.is_empty() {
                return self.run(front, server, ctx).await;
            }
            self.pending = asked;
            self.registered.call.set_waiting(true);
            match front.held.put(self) {
                Ok(state) => {
                    ctx.set_request_state(state);
                    Err(HandlerError::InputRequired)
                }
                Err(mut held) => {
                    held.registered.call.set_waiting(false);
                    tracing::warn!(server, max = front.held.max, "gateway: too many calls waiting for their clients' input; a server's request refused");
                    for (_, reply, _) in std::mem::take(&mut held.pending) {
                        let _ = reply.send(Err(ErrorObject::new(
                            codes::INTERNAL_ERROR,
                            "the gateway holds too many calls waiting for input; try again later",
                        )));
                    }
                    held.run(front, server, ctx).await
                }
            }
        })
    }
}

async fn recv(rx: &mut Option<mpsc::UnboundedReceiver<Progress>>) -> Option<Progress> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
