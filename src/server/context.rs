//! What a request handler knows about its request, and how it talks back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::Notify;

use crate::jsonrpc::RequestId;
use crate::memory_estimate;
use crate::protocol::InputRequest;
use crate::protocol::{Era, MULTI_ROUND_METHODS};

use super::engine::budget::Charge;
use super::error::{AskError, RawAnswerError, SendError};
use super::handle::{capability_for, has_capability, LifetimeToken, ServerHandle, SessionId};

/// Input requests and state recorded by a 2026-07-28-era handler.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    requests: Map<String, Value>,
    state: Option<String>,
    /// The result as JSON text, set by a handler that has it so (see
    /// [`RequestContext::answer_raw`]).
    raw: Option<crate::jsonrpc::RawJson>,
}

/// What the session and a request's task (and its contexts) share: one
/// allocation per request, and nothing to signal when the request ends (a
/// watch channel per request cost an allocation and a wake-up of its
/// receivers when dropped).
#[derive(Debug, Default)]
pub(crate) struct RequestShared {
    cancelled: AtomicBool,
    /// Its answer is not wanted any more (the client cancelled it, or its
    /// transport dropped it).
    withdrawn: AtomicBool,
    /// Woken once, when `cancelled` is set.
    cancel: Notify,
    recorded: Mutex<Recorded>,
    /// The request's charge on the inbound byte budget
    /// (`max_inbound_bytes`), while its task runs.
    input: Mutex<Option<Charge>>,
}

impl Recorded {
    /// Takes the input requests and the state recorded.
    pub(crate) fn take(&mut self) -> (Map<String, Value>, Option<String>) {
        (std::mem::take(&mut self.requests), self.state.take())
    }

    /// Forgets the input request `key`.
    pub(crate) fn forget_request(&mut self, key: &str) {
        self.requests.remove(key);
    }

    /// Takes the result recorded as JSON text, if any.
    pub(crate) fn take_raw(&mut self) -> Option<crate::jsonrpc::RawJson> {
        self.raw.take()
    }
}

impl RequestShared {
    /// What the request's handler recorded for an input-required result.
    #[inline]
    pub(crate) fn recorded(&self) -> &Mutex<Recorded> {
        &self.recorded
    }
    /// Holds `charge` for the request until [`release_input`](Self::release_input).
    pub(crate) fn hold_input(&self, charge: Charge) {
        *crate::sync::lock(&self.input) = Some(charge);
    }

    /// Releases the request's charge: its task ended.
    pub(crate) fn release_input(&self) {
        crate::sync::lock(&self.input).take();
    }

    /// Marks the request cancelled and wakes who waits for it.
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.cancel.notify_waiters();
    }

    /// Marks the request's answer as not wanted.
    pub(crate) fn withdraw(&self) {
        self.withdrawn.store(true, Ordering::Release);
    }

    /// Whether the request's answer is not wanted.
    pub(crate) fn is_withdrawn(&self) -> bool {
        self.withdrawn.load(Ordering::Acquire)
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
/// - **2025-11-25**: it sends the server-to-client request and awaits the answer.
/// - **2026-07-28**: the server never sends requests. If this request's
///   `inputResponses` already holds the answer under `key` (the client's
///   retry), `ask` returns it. Otherwise it records the input request and
///   returns [`AskError::InputRequired`]; the handler returns it with `?`
///   and the server answers `{"resultType": "input_required",
///   "inputRequests": {key: ...}, "requestState"?}`. The client retries the
///   request with `inputResponses`, and the handler runs again from the
///   start, this time getting the answer.
///
/// So the same handler code works in both eras, provided it is idempotent
/// up to its `ask` calls (in the 2026-07-28 era it runs once per round).
///
/// Work that must not run twice (it started something, or relays another
/// process that asks) runs in [`run_held`](Self::run_held) instead: it runs
/// once, and each round resumes it where it waits.
#[derive(Clone, Debug)]
pub struct RequestContext {
    id: RequestId,
    method: String,
    era: Era,
    meta: Option<Map<String, Value>>,
    client_capabilities: Option<Arc<Value>>,
    input_responses: Option<Map<String, Value>>,
    request_state: Option<String>,
    handle: ServerHandle,
    shared: Arc<RequestShared>,
    /// The client it came from, as the engine tells them apart.
    scope: SessionId,
    /// 2026-07-28 multi-round requests: the `name` (or `uri`) they are for.
    target: Option<String>,
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
        scope: SessionId,
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

    /// Bytes of parsed input the request is charged (`max_inbound_bytes`).
    pub(crate) fn input_charged(&self) -> usize {
        crate::sync::lock(&self.shared.input)
            .as_ref()
            .map_or(0, Charge::bytes)
    }

    /// The handler decoded the request's input into values of its own that
    /// hold `decoded` bytes, and dropped the parsed input: the request's
    /// charge falls to that, plus what this context keeps of the request
    /// (`_meta`, input responses, state) and the cost of any message.
    pub(crate) fn input_decoded(&self, decoded: usize) {
        let object = |m: &Option<Map<String, Value>>| {
            m.as_ref().map_or(0, |m| {
                m.iter()
                    .map(|(k, v)| 64 + k.len() + memory_estimate::value(v))
                    .sum::<usize>()
            })
        };
        let kept = memory_estimate::MESSAGE_OVERHEAD
            .saturating_add(decoded)
            .saturating_add(object(&self.meta))
            .saturating_add(object(&self.input_responses))
            .saturating_add(self.request_state.as_ref().map_or(0, String::len));
        if let Some(c) = crate::sync::lock(&self.shared.input).as_mut() {
            c.shrink_to(kept);
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

    /// The era of this request: 2026-07-28 if it carried the 2026-07-28 `_meta`,
    /// 2025-11-25 if it came in a session opened by `initialize`.
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
    /// (2026-07-28) or the session's `initialize` (2025-11-25).
    pub fn client_capabilities(&self) -> Option<&Value> {
        self.client_capabilities.as_deref()
    }

    /// Whether the client declared `capability` (`"roots"`, `"sampling"`,
    /// `"elicitation"`, ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::CallToolResult;
    /// use conduit_mcp::server::{HandlerError, RequestContext};
    ///
    /// async fn files(ctx: RequestContext) -> Result<CallToolResult, HandlerError> {
    ///     if !ctx.client_supports("roots") {
    ///         return Ok(CallToolResult::error("this tool needs the client's roots"));
    ///     }
    ///     Ok(CallToolResult::text("..."))
    /// }
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::CallToolResult;
    /// use conduit_mcp::server::{HandlerError, RequestContext};
    ///
    /// async fn import(ctx: RequestContext) -> Result<CallToolResult, HandlerError> {
    ///     for done in 1..=10 {
    ///         // ... one tenth of the work ...
    ///         let _ = ctx.progress(done as f64, Some(10.0), Some("importing"));
    ///     }
    ///     Ok(CallToolResult::text("imported"))
    /// }
    /// ```
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
    /// 2026-07-28 era: only when the request's `_meta` carries
    /// `io.modelcontextprotocol/logLevel` and `level` is at least as severe
    /// (the specification forbids log messages otherwise). 2025-11-25 era: when
    /// the session set a level with `logging/setLevel` (recorded by a
    /// [`Router`](super::Router): [`ServerHandle::log_level`]), only at least
    /// as severe; otherwise always. Levels, least severe first: debug, info,
    /// notice, warning, error, critical, alert, emergency; an unknown level
    /// counts as debug.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::CallToolResult;
    /// use conduit_mcp::server::{HandlerError, RequestContext};
    /// use serde_json::json;
    ///
    /// async fn fetch(ctx: RequestContext) -> Result<CallToolResult, HandlerError> {
    ///     // Sent only if the client asked for "warning" or a less severe level.
    ///     let sent = ctx.log("warning", json!({ "message": "cache miss, fetching" }));
    ///     tracing::debug!(?sent, "log to the client");
    ///     Ok(CallToolResult::text("fetched"))
    /// }
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::CallToolResult;
    /// use conduit_mcp::server::{HandlerError, RequestContext};
    /// use serde_json::json;
    ///
    /// async fn build(ctx: RequestContext) -> Result<CallToolResult, HandlerError> {
    ///     ctx.notify("notifications/acme/built", Some(json!({ "target": "docs" })))
    ///         .map_err(|e| HandlerError::Internal(e.to_string()))?;
    ///     Ok(CallToolResult::text("built"))
    /// }
    /// ```
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), SendError> {
        self.handle.notify(method, params)
    }

    /// Resolves when the client has closed its input (end of file) or the
    /// server is stopping: a request meant to stay open (a
    /// `subscriptions/listen` stream) ends then, so that serving can end
    /// without waiting for [`ServerConfig::eof_drain`](super::ServerConfig::eof_drain).
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::RequestContext;
    /// use std::time::Duration;
    ///
    /// // Ticks until the client goes away or the server stops.
    /// async fn watch(ctx: RequestContext) {
    ///     loop {
    ///         tokio::select! {
    ///             _ = ctx.input_closed() => break,
    ///             _ = tokio::time::sleep(Duration::from_secs(1)) => {
    ///                 let _ = ctx.progress(1.0, None, Some("still watching"));
    ///             }
    ///         }
    ///     }
    /// }
    /// ```
    pub async fn input_closed(&self) {
        self.handle.closed().await
    }

    /// Answers the request with `result`, JSON text the handler already
    /// has (a result passed on from another server, say), so that it is
    /// not parsed into a `Value` and written again: the value the handler
    /// then returns is ignored, unless it is an error, which is the answer.
    /// In the 2026-07-28 era the text is parsed all the same (the
    /// transport adds `resultType` and the cache hints to every result).
    ///
    /// `result` must be one JSON value on one line (no CR or LF between
    /// its tokens): it may go out as one stdio line or one SSE event.
    /// Otherwise nothing is recorded and the error gives `result` back
    /// ([`RawAnswerError::into_raw`]). The check scans the text once, with
    /// no allocation.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::jsonrpc::RawJson;
    /// use conduit_mcp::server::{HandlerError, RequestContext};
    /// use serde_json::Value;
    ///
    /// // A handler that answers with text it got from elsewhere.
    /// async fn cached(ctx: RequestContext) -> Result<Value, HandlerError> {
    ///     let text = br#"{"content":[{"type":"text","text":"cached"}]}"#.to_vec();
    ///     ctx.answer_raw(RawJson::from_vec(text))
    ///         .map_err(|e| HandlerError::Internal(e.to_string()))?;
    ///     Ok(Value::Null) // ignored: the answer is the text above
    /// }
    /// ```
    pub fn answer_raw(&self, result: crate::jsonrpc::RawJson) -> Result<(), RawAnswerError> {
        let bytes = result.as_bytes();
        let problem = if memchr::memchr2(b'\n', b'\r', bytes).is_some() {
            Some("it spans more than one line".to_owned())
        } else {
            serde_json::from_slice::<&serde_json::value::RawValue>(bytes)
                .err()
                .map(|e| format!("it is not JSON: {e}"))
        };
        if let Some(problem) = problem {
            return Err(RawAnswerError {
                raw: result,
                problem,
            });
        }
        crate::sync::lock(&self.shared.recorded).raw = Some(result);
        Ok(())
    }

    /// Whether the request was cancelled (stop with a drain period). A
    /// request cancelled by `notifications/cancelled` is aborted outright:
    /// its future is dropped at its next `.await`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::CallToolResult;
    /// use conduit_mcp::server::{HandlerError, RequestContext};
    ///
    /// async fn index(ctx: RequestContext, files: Vec<String>) -> Result<CallToolResult, HandlerError> {
    ///     for file in &files {
    ///         if ctx.is_cancelled() {
    ///             break; // the server is stopping: end early
    ///         }
    ///         // ... index `file` ...
    ///     }
    ///     Ok(CallToolResult::text("indexed"))
    /// }
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.shared.is_cancelled()
    }

    /// Resolves when the request is cancelled (see
    /// [`is_cancelled`](Self::is_cancelled)). Cancel safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::CallToolResult;
    /// use conduit_mcp::server::{HandlerError, RequestContext};
    ///
    /// async fn slow(ctx: RequestContext) -> Result<CallToolResult, HandlerError> {
    ///     tokio::select! {
    ///         _ = ctx.cancelled() => Ok(CallToolResult::error("cancelled")),
    ///         _ = tokio::time::sleep(std::time::Duration::from_secs(60)) => Ok(CallToolResult::text("done")),
    ///     }
    /// }
    /// ```
    pub async fn cancelled(&self) {
        // Never cancelled (the session gone first): never resolves.
        let s = &self.shared;
        crate::sync::until(&s.cancel, || s.is_cancelled()).await;
    }

    /// 2026-07-28 era: the `requestState` the client echoed back on a retry.
    ///
    /// **Attacker-controlled**: the client can send anything. Verify it
    /// (e.g. sign it with a server secret) before trusting its content.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::RequestContext;
    ///
    /// fn round(ctx: &RequestContext) -> u32 {
    ///     // Untrusted: parse it, never act on it unchecked.
    ///     ctx.request_state().and_then(|s| s.parse().ok()).unwrap_or(0)
    /// }
    /// ```
    pub fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }

    /// 2026-07-28 era: sets the `requestState` sent with an input-required
    /// result (the client echoes it on the retry).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::InputRequest;
    /// use conduit_mcp::server::{HandlerError, RequestContext};
    /// use serde_json::Value;
    ///
    /// async fn plan(ctx: RequestContext) -> Result<Value, HandlerError> {
    ///     let step: u32 = ctx.request_state().and_then(|s| s.parse().ok()).unwrap_or(0);
    ///     ctx.set_request_state((step + 1).to_string()); // echoed back by the retry
    ///     let roots = ctx.ask("roots", InputRequest::list_roots()).await?;
    ///     Ok(roots)
    /// }
    /// ```
    pub fn set_request_state(&self, state: impl Into<String>) {
        crate::sync::lock(&self.shared.recorded).state = Some(state.into());
    }

    /// 2026-07-28 era: the retry's `inputResponses`, if any.
    #[inline]
    pub(crate) fn input_responses(&self) -> Option<&Map<String, Value>> {
        self.input_responses.as_ref()
    }

    /// The scope the request runs in.
    #[inline]
    pub(crate) fn scope(&self) -> &SessionId {
        &self.scope
    }

    /// The request's target (a tool's or prompt's name, a resource's URI).
    #[inline]
    pub(crate) fn target(&self) -> Option<&str> {
        self.target.as_deref()
    }

    /// What the request's handler recorded for an input-required result.
    #[inline]
    pub(crate) fn recorded(&self) -> &Mutex<Recorded> {
        self.shared.recorded()
    }

    /// 2026-07-28 era: the retry's `inputResponses[key]`, if present.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::RequestContext;
    ///
    /// fn confirmed(ctx: &RequestContext) -> bool {
    ///     ctx.input_response("confirm")
    ///         .and_then(|answer| answer["action"].as_str())
    ///         == Some("accept")
    /// }
    /// ```
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.input_responses.as_ref().and_then(|m| m.get(key))
    }

    /// Asks the client for input (roots, sampling, elicitation) in a way
    /// that works in both eras; see the [type documentation](Self).
    ///
    /// Fails with [`AskError::MissingCapability`] if the client did not
    /// declare the capability (the server must not ask for it), and in the
    /// 2026-07-28 era with [`AskError::NotAllowed`] outside `tools/call`,
    /// `prompts/get` and `resources/read`. Every `AskError` converts into a
    /// [`HandlerError`](super::HandlerError) with `?`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{CallToolResult, InputRequest};
    /// use conduit_mcp::server::{HandlerError, RequestContext};
    /// use serde_json::json;
    ///
    /// async fn delete(ctx: RequestContext) -> Result<CallToolResult, HandlerError> {
    ///     let question = json!({
    ///         "message": "Delete every file?",
    ///         "requestedSchema": { "type": "object", "properties": {} },
    ///     });
    ///     let answer = ctx.ask("confirm", InputRequest::elicit(question)).await?;
    ///     if answer["action"] != "accept" {
    ///         return Ok(CallToolResult::text("kept"));
    ///     }
    ///     Ok(CallToolResult::text("deleted"))
    /// }
    /// ```
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

    /// [`ask`](Self::ask) for several inputs at once. In the 2026-07-28 era all
    /// missing ones are requested in a single input-required round.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{CallToolResult, InputRequest};
    /// use conduit_mcp::server::{HandlerError, RequestContext};
    /// use serde_json::json;
    ///
    /// async fn summarise(ctx: RequestContext) -> Result<CallToolResult, HandlerError> {
    ///     let sample = json!({ "messages": [], "maxTokens": 200 });
    ///     let answers = ctx
    ///         .ask_all(vec![
    ///             ("roots".to_owned(), InputRequest::list_roots()),
    ///             ("summary".to_owned(), InputRequest::create_message(sample)),
    ///         ])
    ///         .await?; // 2026-07-28: both asked in one round
    ///     Ok(CallToolResult::text(answers["summary"].to_string()))
    /// }
    /// ```
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
