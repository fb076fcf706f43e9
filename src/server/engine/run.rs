//! A request's task, from its start to its answer: the same for every
//! transport.
//!
//! The task owns the work, not the transport: it runs the handler with the
//! request's context, turns the outcome into the answer line (one rule for
//! a panic and for a result that cannot be serialised: -32603, serving goes
//! on; 2026-07-28 results get `resultType` and their cache hints) and hands
//! it to its [`Reply`]. A request that ends without an answer (cancelled
//! by the client, aborted by a stop or by its transport) tells its reply so
//! ([`Reply::unanswered`]). Its table entries go however the task ends
//! (the guard below), and the next waiting request of its scope starts.

use std::collections::HashMap;
use std::future::Future;
use std::hash::BuildHasherDefault;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::deadline::After;
use crate::jsonrpc::{codes, encode, ErrorObject, Request, RequestId};
use crate::protocol::{methods, Era};
use crate::server::context::{Recorded, RequestContext, RequestShared};
use crate::server::error::HandlerError;
use crate::server::handle::{ServerHandle, SessionTransport};
use crate::server::request_handler::Handler;
use crate::server::server_config::ServerConfig;

use super::budget::Charge;
use super::dispatch::Dispatch;
use super::scope::{Duplicate, KeyHasher, Pool, Queued, Scope, ScopeState};

/// Where one request's messages and its answer go: the transport's side
/// of the seam.
pub(crate) trait Reply: Send + Sync + 'static {
    /// Where notifications and server-to-client requests sent through the
    /// request's context go; `None`: the session's own output.
    fn target(&self) -> Option<Arc<dyn SessionTransport>> {
        None
    }

    /// The answer: a serialised JSON-RPC response, sent as it is.
    fn answer(&self, line: Vec<u8>);

    /// The request ended without an answer.
    fn unanswered(&self, why: Unanswered) {
        let _ = why;
    }
}

/// Why a request ended without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unanswered {
    /// The client cancelled it, or its transport dropped it (a closed
    /// 2026-07-28 stream, an ended session): nobody waits for an answer.
    Withdrawn,
    /// The server is stopping and its drain is over.
    Stopping,
}

/// A running request, as a cancellation and the stop see it.
struct Running {
    abort: AbortHandle,
    shared: Arc<RequestShared>,
}

/// Releases a request's charge on the inbound byte budget when its task
/// ends, however it ends (the contexts a handler keeps may live on).
struct InputHeld(Arc<RequestShared>);

impl Drop for InputHeld {
    fn drop(&mut self) {
        self.0.release_input();
    }
}

/// See the [module documentation](self).
pub(crate) struct Engine<H> {
    handler: Arc<H>,
    running: Mutex<HashMap<u64, Running, BuildHasherDefault<KeyHasher>>>,
    next_key: AtomicU64,
    /// Woken when a request ends.
    ended: Notify,
    stopping: AtomicBool,
}

/// Methods of the 2026-07-28 revision whose results carry cache hints.
const CACHEABLE: &[&str] = &[
    methods::TOOLS_LIST,
    methods::PROMPTS_LIST,
    methods::RESOURCES_LIST,
    methods::RESOURCES_TEMPLATES_LIST,
    methods::RESOURCES_READ,
];

/// What the engine adds to a 2026-07-28 result: `resultType`, and the
/// cache hints of a cacheable method.
#[derive(Clone, Copy)]
pub(crate) struct ResultHints {
    era: Era,
    cacheable: bool,
    ttl_ms: u64,
    scope: &'static str,
}

impl ResultHints {
    pub(crate) fn of(method: &str, era: Era, config: &ServerConfig) -> Self {
        ResultHints {
            era,
            cacheable: CACHEABLE.contains(&method),
            ttl_ms: config.get_cache_ttl_ms(),
            scope: config.get_cache_scope().as_str(),
        }
    }
}

/// A 2026-07-28 result object and the members the engine adds to it where
/// the handler did not set them, written after its own members: no copy
/// of the result, no member inserted into it.
struct WithHints {
    result: serde_json::Map<String, Value>,
    hints: ResultHints,
}

impl serde::Serialize for WithHints {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (r, h) = (&self.result, &self.hints);
        let mut m = s.serialize_map(None)?;
        for (k, v) in r {
            m.serialize_entry(k, v)?;
        }
        if !r.contains_key("resultType") {
            m.serialize_entry("resultType", "complete")?;
        }
        if h.cacheable && !r.contains_key("ttlMs") {
            m.serialize_entry("ttlMs", &h.ttl_ms)?;
        }
        if h.cacheable && !r.contains_key("cacheScope") {
            m.serialize_entry("cacheScope", h.scope)?;
        }
        m.end()
    }
}

fn internal(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(codes::INTERNAL_ERROR, message)
}

/// Turns a handler's outcome into the answer line: a result (with its
/// hints), an `input_required` result, or an error. A result that cannot
/// be serialised is answered -32603.
pub(crate) fn answer_line(
    id: &RequestId,
    hints: ResultHints,
    result: Result<Value, HandlerError>,
    recorded: &Mutex<Recorded>,
) -> Vec<u8> {
    let rid = Some(id.clone());
    let encoded = |line: Result<Vec<u8>, serde_json::Error>| {
        line.unwrap_or_else(|e| {
            tracing::warn!(%id, error = %e, "result not serialisable: answering -32603");
            encode::error(
                &rid,
                &internal(format!("the result could not be serialised: {e}")),
            )
        })
    };
    // The handler's result as text (see `RequestContext::answer_raw`).
    let raw = match &result {
        Ok(_) => crate::sync::lock(recorded).take_raw(),
        Err(_) => None,
    };
    let result = match (raw, hints.era) {
        (Some(raw), Era::Stateful) => return encode::raw_result(&rid, &raw),
        (Some(raw), Era::Stateless) => raw
            .parse::<Value>()
            .map_err(|e| HandlerError::Internal(format!("the result is not JSON: {e}"))),
        (None, _) => result,
    };
    match result {
        Ok(Value::Object(result)) if hints.era == Era::Stateless => {
            encoded(encode::result(&rid, &WithHints { result, hints }))
        }
        Ok(v) => encoded(encode::result(&rid, &v)),
        Err(HandlerError::InputRequired) if hints.era == Era::Stateless => {
            let (requests, state) = { crate::sync::lock(recorded).take() };
            if requests.is_empty() && state.is_none() {
                let e = internal("handler required input but recorded no input request");
                return encode::error(&rid, &e);
            }
            let mut v = json!({ "resultType": "input_required" });
            if !requests.is_empty() {
                v["inputRequests"] = Value::Object(requests);
            }
            if let Some(s) = state {
                v["requestState"] = json!(s);
            }
            encoded(encode::result(&rid, &v))
        }
        Err(e) => encode::error(&rid, &e.to_error_object()),
    }
}

impl<H: Handler> Engine<H> {
    pub(crate) fn new(handler: Arc<H>) -> Arc<Self> {
        Arc::new(Engine {
            handler,
            running: Mutex::new(HashMap::default()),
            next_key: AtomicU64::new(1),
            ended: Notify::new(),
            stopping: AtomicBool::new(false),
        })
    }

    /// The handler (HTTP reads its tools' schemas from it).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn handler(&self) -> &Arc<H> {
        &self.handler
    }

    /// Starts `req` in `scope` (or queues it while the scope has no slot);
    /// returns its key. A request whose id is in flight in a unique scope
    /// is refused, its reply given back.
    pub(crate) fn submit<R: Reply>(
        self: &Arc<Self>,
        scope: &Arc<Scope<R>>,
        req: Request,
        d: Dispatch,
        charge: Charge,
        reply: R,
    ) -> Result<u64, Duplicate<R>> {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let pool = Pool::of(&req.method);
        let mut st = scope.lock();
        if scope.unique_ids() && !st.claim_id(&req.id, key) {
            return Err(Duplicate(reply));
        }
        let q = Queued {
            req,
            d,
            charge,
            reply,
            pool,
        };
        if st.is_full(pool, scope.max_in_flight()) {
            st.enqueue(pool, key, q);
        } else {
            self.spawn_locked(scope, &mut st, key, q);
        }
        Ok(key)
    }

    /// Runs a request's task. Called with the scope locked: its entries and
    /// the engine's are made under the locks the task's guard takes to
    /// remove them, so a task that ends at once cannot remove them first.
    fn spawn_locked<R: Reply>(
        self: &Arc<Self>,
        scope: &Arc<Scope<R>>,
        st: &mut ScopeState<R>,
        key: u64,
        q: Queued<R>,
    ) {
        let Queued {
            req,
            d,
            charge,
            reply,
            pool,
        } = q;
        let rs = Arc::new(RequestShared::default());
        let handle = ServerHandle::with_target(scope.shared(), reply.target());
        let hints = ResultHints::of(&req.method, d.era, scope.shared().config());
        tracing::debug!(id = %req.id, method = %req.method, era = %hints.era, "request started");
        let ctx = RequestContext::new(&req, d, handle, rs.clone(), scope.id().clone());
        let guard = RunGuard {
            engine: Arc::downgrade(self),
            scope: scope.clone(),
            key,
            id: req.id.clone(),
            shared: rs.clone(),
            reply: Some(reply),
        };
        let handler = self.handler.clone();
        rs.hold_input(charge);
        let input = InputHeld(rs.clone());
        let task = async move {
            let mut guard = guard;
            let input = input;
            let id = req.id.clone();
            // Pinned in the task itself: no allocation per request.
            let work = handler.handle_request(req, ctx);
            tokio::pin!(work);
            let out = Watched { inner: work }.await;
            let line = match out {
                Ok(result) => answer_line(&id, hints, result, input.0.recorded()),
                Err(()) => {
                    tracing::warn!(%id, "request handler panicked: answering -32603");
                    encode::error(
                        &Some(id.clone()),
                        &internal("internal error: the request handler panicked"),
                    )
                }
            };
            tracing::debug!(%id, "request completed");
            guard.answer(line);
        };
        let mut running = crate::sync::lock(&self.running);
        let task = tokio::spawn(task);
        running.insert(
            key,
            Running {
                abort: task.abort_handle(),
                shared: rs,
            },
        );
        drop(running);
        st.started(key, pool);
    }

    /// Starts waiting requests of `scope` while it has slots. Called with
    /// the scope locked (`st`).
    fn start_waiting<R: Reply>(self: &Arc<Self>, scope: &Arc<Scope<R>>, st: &mut ScopeState<R>) {
        for pool in [Pool::Work, Pool::Listen] {
            while let Some((key, q)) = st.next_waiting(pool, scope.max_in_flight()) {
                self.spawn_locked(scope, st, key, q);
            }
        }
    }

    /// Cancels the request `key` of `scope`: running, its context sees the
    /// cancellation and its task is aborted; waiting, it leaves the queue.
    /// Either way it gets no answer. Returns whether it was found.
    pub(crate) fn cancel<R: Reply>(self: &Arc<Self>, scope: &Arc<Scope<R>>, key: u64) -> bool {
        if let Some(r) = crate::sync::lock(&self.running).get(&key) {
            r.shared.withdraw();
            r.shared.cancel();
            r.abort.abort();
            return true;
        }
        let mut st = scope.lock();
        let Some(q) = st.unqueue(key) else {
            return false;
        };
        if scope.unique_ids() {
            st.release_id(&q.req.id);
        }
        drop(st);
        scope.notify_changed();
        tracing::debug!(id = %q.req.id, "queued request cancelled");
        q.reply.unanswered(Unanswered::Withdrawn);
        true
    }

    /// Cancels the request `id` of a unique `scope` (a client's
    /// `notifications/cancelled`).
    pub(crate) fn cancel_id<R: Reply>(
        self: &Arc<Self>,
        scope: &Arc<Scope<R>>,
        id: &RequestId,
    ) -> bool {
        match scope.key_of(id) {
            Some(key) => self.cancel(scope, key),
            None => false,
        }
    }

    /// Ends every request of `scope`, running or waiting, without answers
    /// (its session ended).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn cancel_all<R: Reply>(self: &Arc<Self>, scope: &Arc<Scope<R>>) {
        for q in scope.take_queue() {
            q.reply.unanswered(Unanswered::Withdrawn);
        }
        for key in scope.running_keys() {
            self.cancel(scope, key);
        }
    }

    /// Requests running now, in every scope.
    pub(crate) fn running(&self) -> usize {
        crate::sync::lock(&self.running).len()
    }

    /// Whether [`stop`](Self::stop) has begun.
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Waits until no request runs, or `deadline`; whether none does.
    pub(crate) async fn quiesce(&self, deadline: Instant) -> bool {
        let idle = crate::sync::until(&self.ended, || self.running() == 0);
        tokio::time::timeout_at(deadline, idle).await.is_ok() || self.running() == 0
    }

    /// Aborts every running request now; how many there were.
    pub(crate) fn abort_all(&self) -> usize {
        let running = crate::sync::lock(&self.running);
        for r in running.values() {
            r.abort.abort();
        }
        running.len()
    }

    /// The stop: the waiting requests of `scopes` leave their queues, each
    /// told [`Unanswered::Stopping`]; running requests see cancellation
    /// and get `drain` to answer (their answers are sent); then the rest
    /// are aborted, each told [`Unanswered::Stopping`]. Returns how many
    /// requests ended unanswered.
    pub(crate) async fn stop<'a, R: Reply>(
        &self,
        drain: Duration,
        scopes: impl IntoIterator<Item = &'a Arc<Scope<R>>>,
    ) -> usize {
        self.stopping.store(true, Ordering::Release);
        let mut waiting = 0;
        for q in scopes.into_iter().flat_map(|s| s.take_queue()) {
            q.reply.unanswered(Unanswered::Stopping);
            waiting += 1;
        }
        for r in crate::sync::lock(&self.running).values() {
            r.shared.cancel();
        }
        if self.quiesce(Instant::now().after(drain)).await {
            return waiting;
        }
        let aborted = self.abort_all();
        tracing::info!(aborted, "in-flight requests aborted after the stop grace");
        // Aborted tasks end at their next poll.
        self.quiesce(Instant::now().after(Duration::from_secs(1)))
            .await;
        waiting + aborted
    }
}

/// The engine goes with what serves it (a stdio session's future dropped,
/// an HTTP server gone): its requests are aborted, as a task set's are.
impl<H> Drop for Engine<H> {
    fn drop(&mut self) {
        let running = self.running.get_mut().unwrap_or_else(|e| e.into_inner());
        for r in running.values() {
            r.abort.abort();
        }
    }
}

/// Ends a request's entries however its task ends, tells its reply of an
/// end without an answer, and starts the next waiting request of its scope.
struct RunGuard<H: Handler, R: Reply> {
    engine: Weak<Engine<H>>,
    scope: Arc<Scope<R>>,
    key: u64,
    id: RequestId,
    /// The request's state (whether its answer is still wanted).
    shared: Arc<RequestShared>,
    /// Taken by the answer.
    reply: Option<R>,
}

impl<H: Handler, R: Reply> RunGuard<H, R> {
    fn answer(&mut self, line: Vec<u8>) {
        if let Some(reply) = self.reply.take() {
            // A cancelled request is not answered, even if it finished.
            if self.shared.is_withdrawn() {
                reply.unanswered(Unanswered::Withdrawn);
            } else {
                reply.answer(line);
            }
        }
    }
}

impl<H: Handler, R: Reply> Drop for RunGuard<H, R> {
    fn drop(&mut self) {
        let engine = self.engine.upgrade();
        if let Some(e) = &engine {
            crate::sync::lock(&e.running).remove(&self.key);
        }
        {
            let mut st = self.scope.lock();
            st.ended(self.key, &self.id, self.scope.unique_ids());
            // The slot goes to the next waiting request under the same lock.
            if let Some(e) = &engine {
                e.start_waiting(&self.scope, &mut st);
            }
        }
        if let Some(reply) = self.reply.take() {
            let why = if !self.shared.is_withdrawn()
                && engine.as_ref().is_some_and(|e| e.is_stopping())
            {
                Unanswered::Stopping
            } else {
                Unanswered::Withdrawn
            };
            reply.unanswered(why);
        }
        if let Some(e) = &engine {
            e.ended.notify_waiters();
        }
        self.scope.notify_changed();
    }
}

/// The handler's future, its panic caught (`Err(())`).
struct Watched<F> {
    inner: F,
}

impl<F: Future + Unpin> Future for Watched<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.inner;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(Err(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex as StdMutex;

    use serde_json::json;
    use tokio::sync::{mpsc, oneshot};

    use super::*;
    use crate::line_io::WriteQueue;
    use crate::memory_estimate::Estimate;
    use crate::protocol::{Era, Implementation};
    use crate::server::engine::budget::InboundBudget;
    use crate::server::handle::{SessionId, SessionShared};

    /// Holds each gated request (by id) until its gate opens, answers
    /// `boom` by panicking, anything else at once. `all` gates every method.
    struct Gated {
        gates: StdMutex<HashMap<i64, oneshot::Receiver<()>>>,
        all: bool,
    }

    /// A handler gating `ids`, and the gates' openers.
    fn gated(ids: impl IntoIterator<Item = i64>, all: bool) -> (Gated, Vec<oneshot::Sender<()>>) {
        let (mut gates, mut openers) = (HashMap::new(), Vec::new());
        for id in ids {
            let (tx, rx) = oneshot::channel();
            gates.insert(id, rx);
            openers.push(tx);
        }
        let handler = Gated {
            gates: StdMutex::new(gates),
            all,
        };
        (handler, openers)
    }

    impl Handler for Gated {
        async fn handle_request(
            &self,
            req: Request,
            _ctx: RequestContext,
        ) -> Result<Value, HandlerError> {
            match req.method.as_str() {
                "boom" => panic!("the handler panicked"),
                m if m == "wait" || self.all => {
                    let RequestId::Number(n) = req.id else {
                        return Ok(json!({}));
                    };
                    let gate = crate::sync::lock(&self.gates).remove(&n);
                    if let Some(gate) = gate {
                        let _ = gate.await;
                    }
                    Ok(json!({ "waited": true }))
                }
                _ => Ok(json!({})),
            }
        }
    }

    /// What a transport is told of one request: its answer, or why none.
    type Told = (Option<Value>, Option<Unanswered>);

    /// Answers and ends, as a transport sees them.
    struct Seen(mpsc::UnboundedSender<Told>);

    impl Reply for Seen {
        fn answer(&self, line: Vec<u8>) {
            let v: Value = serde_json::from_slice(&line).expect("an answer line is JSON");
            let _ = self.0.send((Some(v), None));
        }

        fn unanswered(&self, why: Unanswered) {
            let _ = self.0.send((None, Some(why)));
        }
    }

    /// An engine, the budget its requests are charged to, and what their
    /// replies are told.
    struct Harness {
        engine: Arc<Engine<Gated>>,
        budget: Arc<InboundBudget>,
        tx: mpsc::UnboundedSender<Told>,
        told: mpsc::UnboundedReceiver<Told>,
    }

    impl Harness {
        fn new(handler: Gated) -> Self {
            let (tx, told) = mpsc::unbounded_channel();
            Harness {
                engine: Engine::new(Arc::new(handler)),
                budget: InboundBudget::new(1 << 20),
                tx,
                told,
            }
        }

        /// Submits request `id` of `method` (100 bytes charged).
        fn submit(
            &self,
            scope: &Arc<Scope<Seen>>,
            id: i64,
            method: &str,
        ) -> Result<u64, Duplicate<Seen>> {
            let req = Request {
                id: RequestId::Number(id),
                method: method.into(),
                params: None,
            };
            let d = Dispatch {
                era: Era::Stateful,
                meta: None,
                client_capabilities: None,
                input_responses: None,
                request_state: None,
                target: None,
                #[cfg(feature = "http")]
                http: None,
            };
            let charge = self
                .budget
                .try_take(Estimate::new(100, false))
                .expect("fits");
            self.engine
                .submit(scope, req, d, charge, Seen(self.tx.clone()))
        }

        async fn next(&mut self) -> Told {
            self.told.recv().await.expect("the harness holds a sender")
        }

        /// The next answer.
        async fn answer(&mut self) -> Value {
            self.next().await.0.expect("an answer")
        }
    }

    fn scope(max_in_flight: usize, unique: bool) -> Arc<Scope<Seen>> {
        let config = ServerConfig::new(Implementation::new("t", "0")).max_in_flight(max_in_flight);
        let (out, _rx) = WriteQueue::new(1024);
        Scope::new(
            Arc::new(SessionShared::new(
                SessionId::local("test"),
                config,
                Some(out),
            )),
            unique,
        )
    }

    #[tokio::test]
    async fn past_max_in_flight_requests_wait_in_order_and_a_cancelled_one_releases_its_bytes() {
        let (handler, openers) = gated(1..=4, false);
        let mut h = Harness::new(handler);
        let scope = scope(1, true);
        let keys: Vec<u64> = (1..=4)
            .map(|id| h.submit(&scope, id, "wait").ok().expect("not a duplicate"))
            .collect();
        assert_eq!(scope.counts(), (1, 3));
        assert_eq!(h.budget.held(), 400);
        // The third, waiting, goes at once, its bytes with it.
        assert!(h.engine.cancel(&scope, keys[2]));
        assert_eq!(h.next().await, (None, Some(Unanswered::Withdrawn)));
        assert_eq!(h.budget.held(), 300);
        // One slot: whatever the gates' order, the requests run in turn.
        for gate in openers {
            let _ = gate.send(());
        }
        let mut order = Vec::new();
        for _ in 0..3 {
            order.push(h.answer().await["id"].clone());
        }
        assert_eq!(order, [json!(1), json!(2), json!(4)]);
        scope.emptied().await;
        assert_eq!(h.budget.held(), 0);
    }

    #[tokio::test]
    async fn ids_are_unique_in_a_session_scope_and_may_repeat_in_a_stateless_one() {
        let (handler, mut openers) = gated([7], false);
        let mut h = Harness::new(handler);
        let session = scope(4, true);
        assert!(h.submit(&session, 7, "wait").is_ok());
        let again = h.submit(&session, 7, "other");
        assert!(again.is_err(), "a second request with an id in flight");
        let stateless = scope(4, false);
        for _ in 0..2 {
            assert!(h.submit(&stateless, 7, "other").is_ok());
        }
        for _ in 0..2 {
            assert_eq!(h.answer().await["id"], 7);
        }
        let _ = openers.remove(0).send(());
        assert_eq!(h.answer().await["result"]["waited"], true);
    }

    #[tokio::test]
    async fn a_panic_is_answered_and_a_cancelled_request_is_not() {
        let (handler, _openers) = gated([2], false);
        let mut h = Harness::new(handler);
        let scope = scope(4, true);
        let _ = h.submit(&scope, 1, "boom");
        assert_eq!(h.answer().await["error"]["code"], codes::INTERNAL_ERROR);
        let key = h.submit(&scope, 2, "wait").ok().expect("not a duplicate");
        assert!(h.engine.cancel(&scope, key));
        assert_eq!(h.next().await, (None, Some(Unanswered::Withdrawn)));
        scope.emptied().await;
        assert_eq!(h.engine.running(), 0);
    }

    #[tokio::test]
    async fn listen_streams_have_a_pool_of_their_own() {
        let (handler, _openers) = gated(1..=3, true);
        let h = Harness::new(handler);
        let scope = scope(1, true);
        let listen = methods::SUBSCRIPTIONS_LISTEN;
        for (id, method) in [(1, listen), (2, "tools/call"), (3, listen)] {
            let _ = h.submit(&scope, id, method);
        }
        // One listen stream and one request run; the second stream waits.
        assert_eq!(scope.counts(), (2, 1));
    }

    #[tokio::test]
    async fn a_stop_tells_waiting_requests_it_is_stopping_and_aborts_the_rest_after_the_drain() {
        let (handler, _openers) = gated(1..=2, false);
        let mut h = Harness::new(handler);
        let scope = scope(1, true);
        for id in 1..=2 {
            let _ = h.submit(&scope, id, "wait");
        }
        let ended = h.engine.stop(Duration::from_millis(50), [&scope]).await;
        assert_eq!(ended, 2, "one waiting, one aborted after the drain");
        assert_eq!(h.next().await, (None, Some(Unanswered::Stopping)));
        assert_eq!(h.next().await, (None, Some(Unanswered::Stopping)));
        assert_eq!(h.engine.running(), 0);
        assert_eq!(h.budget.held(), 0);
    }
}
