//! Calls kept running across their client's input rounds: the held-call
//! mode of asking for input, beside the re-run mode of
//! [`RequestContext::ask`].
//!
//! In the 2026-07-28 revision a server never sends a request: a handler
//! that needs input answers `input_required` and the client retries the
//! request with the answers. [`RequestContext::ask`] re-runs the handler
//! on the retry. [`RequestContext::run_held`] instead runs the work once,
//! in a task of its own: when it asks ([`HeldCall::ask`]), the round ends
//! with `input_required` and a `requestState` of this server's, and the
//! call waits in the server's table of held calls, keyed by that state (128
//! random bits, used once), for the retry. The retry finds it (in the same
//! client's scope, for the same method and name), hands each
//! `inputResponses` entry to the ask waiting for it, and goes on waiting
//! for the result or the next ask.
//!
//! Bounded: at most [`max_held_calls`](super::ServerConfig::max_held_calls)
//! calls wait at once, a quarter of them per client; each waits at most
//! [`held_input_timeout`](super::ServerConfig::held_input_timeout), then
//! its task is aborted. The end of the session (stdio) or of the server
//! (HTTP) aborts those that wait.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::protocol::{Era, InputRequest};
use crate::sync::AbortOnDrop;

use super::context::RequestContext;
use super::error::{AskError, HandlerError};
use super::handle::SessionShared;
use super::held_table::{invalid_state, Asker, STATE_PREFIX};

/// A call that keeps running across its client's input rounds: what the
/// work given to [`RequestContext::run_held`] gets.
///
/// Cloneable; [`ask`](Self::ask) may be called from any task (say, a task
/// that relays what another process asks).
#[derive(Clone)]
pub struct HeldCall {
    inner: Arc<CallInner>,
}

struct CallInner {
    /// The 2026-07-28 era's asks, to the round waiting for them; `None` in
    /// the 2025-11-25 era, where an ask goes straight to the client.
    asks: Option<mpsc::UnboundedSender<Ask>>,
    /// The context of the round running now.
    ctx: Mutex<RequestContext>,
    /// Parked, waiting for the client's next round.
    waiting: AtomicBool,
}

/// An ask waiting for a round to carry it to the client.
struct Ask {
    request: InputRequest,
    reply: oneshot::Sender<Result<Value, AskError>>,
}

impl std::fmt::Debug for HeldCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldCall")
            .field("era", &self.context().era())
            .field("waiting", &self.is_waiting())
            .finish()
    }
}

impl HeldCall {
    fn new(ctx: RequestContext, asks: Option<mpsc::UnboundedSender<Ask>>) -> Self {
        HeldCall {
            inner: Arc::new(CallInner {
                asks,
                ctx: Mutex::new(ctx),
                waiting: AtomicBool::new(false),
            }),
        }
    }

    /// Asks the client for input (roots, sampling, elicitation) and waits
    /// for its answer, in either era.
    ///
    /// - **2025-11-25 and earlier** ([`Era::Stateful`]): the request goes
    ///   to the client at once, as [`RequestContext::ask`] sends it.
    /// - **2026-07-28** ([`Era::Stateless`]): the current round ends with
    ///   `input_required` carrying this request (several asks made at once
    ///   go in one round); the answer arrives with the client's retry.
    ///
    /// Fails as [`RequestContext::ask`] does when the client did not
    /// declare the capability or the method may not ask; with
    /// [`AskError::NotAnswered`] when the client did not come back in
    /// time, and [`AskError::TooManyHeld`] when the server holds its most
    /// calls already.
    ///
    /// Cancel safety: dropping the future forgets the answer; the client
    /// may still be asked.
    ///
    /// # Examples
    ///
    /// Two questions asked at once go to the client in one round:
    ///
    /// ```
    /// use conduit_mcp::protocol::InputRequest;
    /// use conduit_mcp::server::{HandlerError, HeldCall};
    /// use serde_json::{json, Value};
    ///
    /// async fn work(call: HeldCall) -> Result<Value, HandlerError> {
    ///     let (roots, answer) = tokio::join!(
    ///         call.ask(InputRequest::list_roots()),
    ///         call.ask(InputRequest::elicit(json!({
    ///             "mode": "form",
    ///             "message": "Which branch?",
    ///             "requestedSchema": { "type": "object", "properties": { "branch": { "type": "string" } } },
    ///         }))),
    ///     );
    ///     let (roots, answer) = (roots?, answer?);
    ///     Ok(json!({ "content": [{ "type": "text", "text": format!("{} on {}", answer["content"]["branch"], roots["roots"][0]["uri"]) }] }))
    /// }
    /// ```
    pub async fn ask(&self, request: InputRequest) -> Result<Value, AskError> {
        let ctx = self.context();
        ctx.check(&request)?;
        let Some(asks) = &self.inner.asks else {
            return Ok(ctx
                .handle()
                .request(request.method(), request.params())
                .await?);
        };
        let (reply, answer) = oneshot::channel();
        asks.send(Ask { request, reply })
            .map_err(|_| AskError::NotAnswered)?;
        answer.await.unwrap_or(Err(AskError::NotAnswered))
    }

    /// The context of the round running now: progress and log messages
    /// sent through it reach the client's current request. Between rounds
    /// it is the last round's, whose request has been answered (what is
    /// sent then is not delivered).
    ///
    /// ```
    /// use conduit_mcp::server::{HandlerError, HeldCall};
    /// use serde_json::{json, Value};
    ///
    /// async fn work(call: HeldCall) -> Result<Value, HandlerError> {
    ///     for step in 1..=3 {
    ///         // Reaches the client's request of this round.
    ///         let _ = call.context().progress(step as f64, Some(3.0), Some("working"));
    ///     }
    ///     Ok(json!({ "content": [] }))
    /// }
    /// ```
    pub fn context(&self) -> RequestContext {
        crate::sync::lock(&self.inner.ctx).clone()
    }

    /// Whether the call waits for its client's next round (it asked, and
    /// the round that carried the ask has been answered).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::HeldCall;
    ///
    /// fn describe(call: &HeldCall) -> &'static str {
    ///     if call.is_waiting() { "waiting for the client's next round" } else { "running" }
    /// }
    /// ```
    pub fn is_waiting(&self) -> bool {
        self.inner.waiting.load(Ordering::Acquire)
    }
}

/// An ask carried to the client: its key in `inputRequests`, its answer
/// slot, and the request.
type Pending = (
    String,
    oneshot::Sender<Result<Value, AskError>>,
    InputRequest,
);

/// The held work of one call, driven by the round running now.
struct Driver<T> {
    call: HeldCall,
    asks: mpsc::UnboundedReceiver<Ask>,
    pending: Vec<Pending>,
    next_key: u64,
    result: oneshot::Receiver<Result<T, HandlerError>>,
    /// The work; aborted when the driver goes (expiry, stop).
    _task: AbortOnDrop<()>,
}

/// The held-call table's view of `ctx`.
fn asker(ctx: &RequestContext) -> Asker<'_> {
    Asker {
        scope: ctx.scope(),
        method: ctx.method(),
        target: ctx.target(),
    }
}

/// [`RequestContext::run_held`].
async fn run<T, F, Fut>(ctx: &RequestContext, work: F) -> Result<T, HandlerError>
where
    T: Send + 'static,
    F: FnOnce(HeldCall) -> Fut,
    Fut: Future<Output = Result<T, HandlerError>> + Send + 'static,
{
    if ctx.era() == Era::Stateful {
        return work(HeldCall::new(ctx.clone(), None)).await;
    }
    let shared = ctx
        .handle()
        .shared()
        .map_err(|e| HandlerError::Internal(e.to_string()))?;
    if let Some(state) = ctx.request_state().filter(|s| s.starts_with(STATE_PREFIX)) {
        let parked = shared.held().take(state, asker(ctx))?;
        let driver = parked
            .driver
            .downcast::<Driver<T>>()
            .map_err(|_| invalid_state("it belongs to another request"))?;
        *crate::sync::lock(&driver.call.inner.ctx) = ctx.clone();
        driver.call.inner.waiting.store(false, Ordering::Release);
        return driver.resume(&shared, ctx).await;
    }
    let (asks_tx, asks) = mpsc::unbounded_channel();
    let call = HeldCall::new(ctx.clone(), Some(asks_tx));
    let (done, result) = oneshot::channel();
    let work = work(call.clone());
    let task = tokio::spawn(async move {
        let _ = done.send(work.await);
    });
    Box::new(Driver {
        call,
        asks,
        pending: Vec::new(),
        next_key: 0,
        result,
        _task: AbortOnDrop(task),
    })
    .run(&shared, ctx)
    .await
}

impl<T: Send + 'static> Driver<T> {
    /// A retry: its answers go to the asks waiting for them; the call goes
    /// on, or asks again for what the retry lacked.
    async fn resume(
        mut self: Box<Self>,
        shared: &Arc<SessionShared>,
        ctx: &RequestContext,
    ) -> Result<T, HandlerError> {
        let empty = Map::new();
        let responses = ctx.input_responses().unwrap_or(&empty);
        let mut missing = Vec::new();
        for (key, reply, request) in std::mem::take(&mut self.pending) {
            match responses.get(&key) {
                Some(v) => {
                    let _ = reply.send(Ok(v.clone()));
                }
                None => missing.push((key, reply, request)),
            }
        }
        if !missing.is_empty() {
            // Asked again, in this round's answer.
            self.pending = missing;
            match self.park(shared, ctx) {
                Ok(()) => return Err(HandlerError::InputRequired),
                Err(back) => self = back,
            }
        }
        self.run(shared, ctx).await
    }

    /// Waits for the work's result, or its next asks (then parks).
    async fn run(
        mut self: Box<Self>,
        shared: &Arc<SessionShared>,
        ctx: &RequestContext,
    ) -> Result<T, HandlerError> {
        loop {
            tokio::select! {
                biased;
                r = &mut self.result => {
                    return r.unwrap_or_else(|_| {
                        tracing::warn!(id = %ctx.id(), "a held call's work panicked: answering -32603");
                        Err(HandlerError::Internal("the request handler panicked".into()))
                    });
                }
                Some(ask) = self.asks.recv() => {
                    self.queue(ask);
                    while let Ok(more) = self.asks.try_recv() {
                        self.queue(more);
                    }
                    match self.park(shared, ctx) {
                        Ok(()) => return Err(HandlerError::InputRequired),
                        Err(back) => self = back,
                    }
                }
            }
        }
    }

    fn queue(&mut self, ask: Ask) {
        self.next_key += 1;
        self.pending
            .push((format!("input-{}", self.next_key), ask.reply, ask.request));
    }

    /// Records the pending asks as this round's `input_required` and keeps
    /// the call for the retry. Refused (the table is full), the asks fail
    /// and the call comes back to go on running.
    fn park(
        self: Box<Self>,
        shared: &Arc<SessionShared>,
        ctx: &RequestContext,
    ) -> Result<(), Box<Self>> {
        for (key, _, request) in &self.pending {
            ctx.record(key, request);
        }
        let asks = self.pending.len();
        let call = self.call.clone();
        call.inner.waiting.store(true, Ordering::Release);
        match shared.held().park(shared.config(), asker(ctx), self) {
            Ok(state) => {
                ctx.set_request_state(state);
                tracing::debug!(id = %ctx.id(), asks, "a held call waits for its client's input");
                Ok(())
            }
            Err((mut back, e)) => {
                call.inner.waiting.store(false, Ordering::Release);
                tracing::warn!(id = %ctx.id(), error = %e, "a held call's ask refused");
                let mut recorded = crate::sync::lock(ctx.recorded());
                for (key, reply, _) in std::mem::take(&mut back.pending) {
                    recorded.forget_request(&key);
                    let _ = reply.send(Err(e.clone()));
                }
                drop(recorded);
                Err(back)
            }
        }
    }
}

impl RequestContext {
    /// Runs `work` once, however many input rounds it needs: the held-call
    /// mode of asking for input (see the [type documentation](Self) for the
    /// re-run mode of [`ask`](Self::ask)).
    ///
    /// `work` gets a [`HeldCall`]; its [`ask`](HeldCall::ask) returns the
    /// client's answer in either era. In the 2025-11-25 era `work` simply
    /// runs here, its asks sent to the client as they are made. In the
    /// 2026-07-28 era it runs in a task of its own: an ask ends this round
    /// with `input_required` and a `requestState` of the server's (this
    /// method returns [`HandlerError::InputRequired`](super::HandlerError);
    /// return it with `?`), and the call waits for the client's retry.
    /// The retry is routed to the same handler, which calls `run_held`
    /// again: that call resumes the waiting work (its own `work` is dropped
    /// unrun) and returns the work's result, or ends the round again at the
    /// next ask. A retry with a state that is unknown, expired, used, of
    /// another client, or of another method or name is refused with -32602.
    ///
    /// Bounded by [`ServerConfig::max_held_calls`](super::ServerConfig::max_held_calls)
    /// and [`held_input_timeout`](super::ServerConfig::held_input_timeout);
    /// a stop of the server aborts the calls that wait.
    ///
    /// Cancel safety: dropping the future (the request was cancelled)
    /// aborts the work, unless it is waiting for the next round.
    ///
    /// # Examples
    ///
    /// A tool that starts a job once and asks the user to confirm it:
    ///
    /// ```
    /// use conduit_mcp::protocol::InputRequest;
    /// use conduit_mcp::server::{HandlerError, RequestContext};
    /// use serde_json::{json, Value};
    ///
    /// async fn deploy(ctx: RequestContext) -> Result<Value, HandlerError> {
    ///     ctx.run_held(|call| async move {
    ///         let plan = "3 services"; // computed once, not once per round
    ///         let answer = call
    ///             .ask(InputRequest::elicit(json!({
    ///                 "mode": "form",
    ///                 "message": format!("Deploy {plan}?"),
    ///                 "requestedSchema": { "type": "object", "properties": {} },
    ///             })))
    ///             .await?;
    ///         Ok(json!({ "content": [{ "type": "text", "text": answer["action"].to_string() }] }))
    ///     })
    ///     .await
    /// }
    /// ```
    pub async fn run_held<T, F, Fut>(&self, work: F) -> Result<T, super::HandlerError>
    where
        T: Send + 'static,
        F: FnOnce(HeldCall) -> Fut,
        Fut: std::future::Future<Output = Result<T, super::HandlerError>> + Send + 'static,
    {
        run(self, work).await
    }
}
