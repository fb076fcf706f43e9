//! What a request handler knows about its request, and how it talks back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::Notify;

use crate::jsonrpc::RequestId;
pub use crate::protocol::InputRequest;
use crate::protocol::{Era, MULTI_ROUND_METHODS};

use super::error::{AskError, SendError};
use super::handle::{capability_for, has_capability, LifetimeToken, ServerHandle};
use super::held_table::ScopeKey;

/// Input requests and state recorded by a stateless-era handler.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    pub(crate) requests: Map<String, Value>,
    pub(crate) state: Option<String>,
    /// The result as JSON text, set by a handler that has it so (see
    /// [`RequestContext::answer_raw`]).
    pub(crate) raw: Option<crate::jsonrpc::RawJson>,
}

/// What the session and a request's task (and its contexts) share: one
/// allocation per request, and nothing to signal when the request ends (a
/// watch channel per request cost an allocation and a wake-up of its
/// receivers when dropped).
#[derive(Debug, Default)]
pub(crate) struct RequestShared {
    cancelled: AtomicBool,
    /// Woken once, when `cancelled` is set.
    cancel: Notify,
    pub(crate) recorded: Mutex<Recorded>,
}

impl RequestShared {
    /// Marks the request cancelled and wakes who waits for it.
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.cancel.notify_waiters();
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }
}

/// The context of one request, passed to
/// [`Handler::handle_request`](super::Handler::handle_request).
///
/// Cloneable; a clone kept after the request ended still works for
/// notifications until the transport is gone, then every operation fails
/// with [`SendError::TransportGone`] (it never panics).
///
/// # Asking the client for input, in both eras
///
/// [`ask`](Self::ask) is the one call a handler makes for roots, sampling or
/// elicitation:
/// - **Stateful**: it sends the server-to-client request and awaits the answer.
/// - **Stateless**: the server never sends requests. If this request's
///   `inputResponses` already holds the answer under `key` (the client's
///   retry), `ask` returns it. Otherwise it records the input request and
///   returns [`AskError::InputRequired`]; the handler returns it with `?`
///   and the server answers `{"resultType": "input_required",
///   "inputRequests": {key: ...}, "requestState"?}`. The client retries the
///   request with `inputResponses`, and the handler runs again from the
///   start, this time getting the answer.
///
/// So the same handler code works in both eras, provided it is idempotent
/// up to its `ask` calls (in the stateless era it runs once per round).
///
/// Work that must not run twice (it started something, or relays another
/// process that asks) runs in [`run_held`](Self::run_held) instead: it runs
/// once, and each round resumes it where it waits.
#[derive(Clone, Debug)]
pub struct RequestContext {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) era: Era,
    pub(crate) meta: Option<Map<String, Value>>,
    pub(crate) client_capabilities: Option<Arc<Value>>,
    pub(crate) input_responses: Option<Map<String, Value>>,
    pub(crate) request_state: Option<String>,
    pub(crate) handle: ServerHandle,
    pub(crate) shared: Arc<RequestShared>,
    /// The client it came from, as the engine tells them apart.
    pub(crate) scope: ScopeKey,
    /// Stateless multi-round requests: the `name` (or `uri`) they are for.
    pub(crate) target: Option<String>,
    #[cfg(feature = "http")]
    http: Option<Arc<axum::http::request::Parts>>,
}

impl RequestContext {
    /// The context of a request routed by [`route`](super::engine::dispatch::route).
    pub(crate) fn new(
        req: &crate::jsonrpc::Request,
        d: super::engine::dispatch::Dispatch,
        handle: ServerHandle,
        shared: Arc<RequestShared>,
        scope: ScopeKey,
    ) -> Self {
        RequestContext {
            id: req.id.clone(),
            method: req.method.clone(),
            era: d.era,
            meta: d.meta,
            client_capabilities: d.client_capabilities,
            input_responses: d.input_responses,
            request_state: d.request_state,
            handle,
            shared,
            scope,
            target: d.target,
            #[cfg(feature = "http")]
            http: d.http,
        }
    }

    /// The request's id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The request's method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The era of this request: stateless if it carried the stateless `_meta`,
    /// stateful if it came in a session opened by `initialize`.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The head of the HTTP request that carried this one: its method, URI,
    /// headers, and the extensions that layers in front of the endpoint
    /// inserted (such as a [`Principal`](crate::server::http::Principal)).
    /// `None` over stdio and any other stream transport.
    ///
    /// Over HTTP each request has its own head, also within one
    /// 2025-11-25 session: a header a client sends with one call is not
    /// seen by the next.
    ///
    /// # Examples
    ///
    /// A tenant named by a header of the client's request:
    ///
    /// ```
    /// use conduit_mcp::server::RequestContext;
    ///
    /// fn tenant(ctx: &RequestContext) -> Option<&str> {
    ///     ctx.http_request()?.headers.get("x-tenant")?.to_str().ok()
    /// }
    /// ```
    #[cfg(feature = "http")]
    pub fn http_request(&self) -> Option<&axum::http::request::Parts> {
        self.http.as_deref()
    }

    /// The request's `params._meta`, if any.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.meta.as_ref()
    }

    /// The request's `_meta.progressToken`, if the client asked for progress.
    pub fn progress_token(&self) -> Option<&Value> {
        self.meta.as_ref().and_then(|m| m.get("progressToken"))
    }

    /// The client's capabilities for this request: from its `_meta`
    /// (stateless) or the session's `initialize` (stateful).
    pub fn client_capabilities(&self) -> Option<&Value> {
        self.client_capabilities.as_deref()
    }

    /// Whether the client declared `capability` (`"roots"`, `"sampling"`,
    /// `"elicitation"`, ...).
    pub fn client_supports(&self, capability: &str) -> bool {
        has_capability(self.client_capabilities.as_deref(), capability)
    }

    /// A handle to the server (for notifications beyond progress).
    pub fn handle(&self) -> &ServerHandle {
        &self.handle
    }

    /// The transport's lifetime token.
    pub fn lifetime_token(&self) -> LifetimeToken {
        self.handle.lifetime_token()
    }

    /// Sends `notifications/progress` for this request. Does nothing (and
    /// succeeds) when the client gave no progress token.
    pub fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), SendError> {
        match self.progress_token() {
            Some(token) => self.handle.notify_progress(token, progress, total, message),
            None => Ok(()),
        }
    }

    /// Sends a `notifications/message` log entry for this request, if the
    /// client wants it; returns whether it was sent.
    ///
    /// Stateless era: only when the request's `_meta` carries
    /// `io.modelcontextprotocol/logLevel` and `level` is at least as severe
    /// (the specification forbids log messages otherwise). Stateful era: when
    /// the session set a level with `logging/setLevel` (recorded by a
    /// [`Router`](super::Router): [`ServerHandle::log_level`]), only at least
    /// as severe; otherwise always. Levels, least severe first: debug, info,
    /// notice, warning, error, critical, alert, emergency; an unknown level
    /// counts as debug.
    pub fn log(&self, level: &str, data: Value) -> Result<bool, SendError> {
        let wanted = match self.era {
            Era::Stateless => match self
                .meta
                .as_ref()
                .and_then(|m| m.get(crate::protocol::meta::LOG_LEVEL))
                .and_then(Value::as_str)
            {
                Some(w) => severity(w),
                None => return Ok(false),
            },
            Era::Stateful => self.handle.log_level().map_or(0, |l| l.severity()),
        };
        if severity(level) < wanted {
            return Ok(false);
        }
        self.handle.notify_log(level, None, data).map(|()| true)
    }

    /// Sends a notification (see [`ServerHandle::notify`]).
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), SendError> {
        self.handle.notify(method, params)
    }

    /// Resolves when the client has closed its input (end of file) or the
    /// server is stopping: a request meant to stay open (a
    /// `subscriptions/listen` stream) ends then, so that serving can end
    /// without waiting for [`ServerConfig::eof_drain`](super::ServerConfig::eof_drain).
    /// Cancel safe.
    pub async fn input_closed(&self) {
        let Ok(shared) = self.handle.shared() else {
            return;
        };
        let mut rx = shared.input_closed.subscribe();
        drop(shared);
        let _ = rx.wait_for(|c| *c).await;
    }

    /// Makes `raw` (valid JSON, checked by the caller) the request's
    /// result, in place of the value the handler returns: for a handler
    /// that has its result as text already (the gateway passing a
    /// server's answer on), so that it is not parsed and written again.
    /// In the 2026-07-28 era it is parsed all the same (the transport adds
    /// members to it).
    pub(crate) fn answer_raw(&self, raw: crate::jsonrpc::RawJson) {
        crate::sync::lock(&self.shared.recorded).raw = Some(raw);
    }

    /// Whether the request was cancelled (stop with a drain period). A
    /// request cancelled by `notifications/cancelled` is aborted outright:
    /// its future is dropped at its next `.await`.
    pub fn is_cancelled(&self) -> bool {
        self.shared.is_cancelled()
    }

    /// Resolves when the request is cancelled (see
    /// [`is_cancelled`](Self::is_cancelled)). Cancel safe.
    pub async fn cancelled(&self) {
        // Never cancelled (the session gone first): never resolves.
        let s = &self.shared;
        crate::sync::until(&s.cancel, || s.is_cancelled()).await;
    }

    /// Stateless era: the `requestState` the client echoed back on a retry.
    ///
    /// **Attacker-controlled**: the client can send anything. Verify it
    /// (e.g. sign it with a server secret) before trusting its content.
    pub fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }

    /// Stateless era: sets the `requestState` sent with an input-required
    /// result (the client echoes it on the retry).
    pub fn set_request_state(&self, state: impl Into<String>) {
        crate::sync::lock(&self.shared.recorded).state = Some(state.into());
    }

    /// Stateless era: the retry's `inputResponses[key]`, if present.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.input_responses.as_ref().and_then(|m| m.get(key))
    }

    /// Asks the client for input (roots, sampling, elicitation) in a way
    /// that works in both eras; see the [type documentation](Self).
    ///
    /// Fails with [`AskError::MissingCapability`] if the client did not
    /// declare the capability (the server must not ask for it), and in the
    /// stateless era with [`AskError::NotAllowed`] outside `tools/call`,
    /// `prompts/get` and `resources/read`. Every `AskError` converts into a
    /// [`HandlerError`](super::HandlerError) with `?`.
    pub async fn ask(&self, key: &str, request: InputRequest) -> Result<Value, AskError> {
        self.check(&request)?;
        match self.era {
            Era::Stateful => Ok(self
                .handle
                .request(request.method(), request.params())
                .await?),
            Era::Stateless => {
                if let Some(v) = self.input_response(key) {
                    return Ok(v.clone());
                }
                self.record(key, &request);
                Err(AskError::InputRequired {
                    key: key.to_owned(),
                })
            }
        }
    }

    /// [`ask`](Self::ask) for several inputs at once. In the stateless era all
    /// missing ones are requested in a single input-required round.
    pub async fn ask_all(
        &self,
        requests: Vec<(String, InputRequest)>,
    ) -> Result<Map<String, Value>, AskError> {
        for (_, r) in &requests {
            self.check(r)?;
        }
        let mut out = Map::new();
        let mut missing = None;
        for (key, req) in requests {
            match self.era {
                Era::Stateful => {
                    let v = self.handle.request(req.method(), req.params()).await?;
                    out.insert(key, v);
                }
                Era::Stateless => match self.input_response(&key) {
                    Some(v) => {
                        out.insert(key, v.clone());
                    }
                    None => {
                        self.record(&key, &req);
                        missing.get_or_insert(key);
                    }
                },
            }
        }
        match missing {
            Some(key) => Err(AskError::InputRequired { key }),
            None => Ok(out),
        }
    }

    pub(crate) fn check(&self, request: &InputRequest) -> Result<(), AskError> {
        if let Some(cap) = capability_for(request.method()) {
            if !self.client_supports(cap) {
                return Err(AskError::MissingCapability {
                    capability: cap,
                    era: self.era,
                });
            }
        }
        if self.era == Era::Stateless && !MULTI_ROUND_METHODS.contains(&self.method.as_str()) {
            return Err(AskError::NotAllowed(self.method.clone()));
        }
        Ok(())
    }

    pub(crate) fn record(&self, key: &str, request: &InputRequest) {
        let v = serde_json::to_value(request).unwrap_or(Value::Null);
        crate::sync::lock(&self.shared.recorded)
            .requests
            .insert(key.to_owned(), v);
    }
}

/// RFC 5424 severity order of MCP log levels (higher is more severe).
fn severity(level: &str) -> u8 {
    match level {
        "info" => 1,
        "notice" => 2,
        "warning" => 3,
        "error" => 4,
        "critical" => 5,
        "alert" => 6,
        "emergency" => 7,
        _ => 0,
    }
}
