//! What the gateway's endpoints share: the host, the token check, the routing
//! of server requests, the metrics and call log, and one
//! [`HttpService`] per endpoint, made on first use (the `endpoints` module).
//!
//! Every caller (a token's principal) uses the same services: each request
//! carries its caller in its extensions, for the handler (what it may see)
//! and for the service (a named client's 2025-11-25 sessions serve it only,
//! and its shares of the bounds are its own). `/servers/NAME/mcp` is made
//! once NAME is ready (its identity and capabilities are the server's),
//! starting it first if it is lazy.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::client::{Client, Delivered, LifecycleEvent, Status};
use crate::host::{Host, HostError, HostEvent, ItemKind};
use crate::protocol::{Era, SubscriptionFilter};
use crate::server::http::{HttpService, Rejection};
use crate::server::{HandlerError, ListKind, Sessions};

use super::auth::{Gate, Principal};
use super::calllog::{now_rfc3339, CallLog, Line};
use super::config::{HttpGatewayConfig, ToolFilter};
use super::metrics::{method_label, Metrics};
use super::server_requests::ServerRequests;
use super::target::Target;
use super::watches::ResourceWatches;

/// How long a call's answer waits for its server's notifications to be
/// passed on before it goes anyway.
const NOTE_FLUSH_WAIT: Duration = Duration::from_secs(1);

/// One server's notification watcher, as calls see it.
#[derive(Clone)]
struct NoteFlush {
    /// The client followed (its supervisor actor's id): a server started
    /// again after it gave up has a new one.
    client: ractor::ActorId,
    /// Asks the watcher to pass on what it has queued, then to answer.
    ask: mpsc::UnboundedSender<oneshot::Sender<()>>,
    /// Notifications the server's client handed to the watcher.
    sent: Delivered,
    /// Notifications the watcher has passed on (counted after each is).
    passed: Arc<AtomicU64>,
}

impl NoteFlush {
    /// Whether the watcher has passed on every notification handed to it
    /// so far.
    fn idle(&self) -> bool {
        self.sent.get() == self.passed.load(Ordering::Acquire)
    }
}

/// One of the gateway's endpoints.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Endpoint {
    /// `/mcp`: every server in one namespace.
    Namespace,
    /// `/servers/NAME/mcp`.
    Server(Arc<str>),
}

/// A made endpoint: its service, and the router that keeps what is per
/// session (log levels, subscriptions) and tells the sessions of list
/// changes and resource updates.
#[derive(Clone)]
pub(crate) struct EndpointService {
    service: HttpService,
    sessions: Sessions,
    /// The service's routes, built once.
    router: axum::Router,
}

pub(crate) struct GatewayState {
    host: Host,
    config: HttpGatewayConfig,
    gate: Gate,
    relay: Arc<ServerRequests>,
    metrics: Metrics,
    call_log: Option<CallLog>,
    /// The servers' resources watched for the gateway's sessions and streams.
    watches: Arc<ResourceWatches>,
    /// Per server: its notification watcher's progress, and the way to ask
    /// it to pass on what it has queued (see
    /// [`flush_notes`](Self::flush_notes)).
    note_flush: Mutex<HashMap<Arc<str>, NoteFlush>>,
    services: Mutex<HashMap<Endpoint, EndpointService>>,
    /// Per server: which of its tools are served (changed by a reload).
    tools: std::sync::RwLock<BTreeMap<String, ToolFilter>>,
    /// A fingerprint of the namespace's tools, prompts and resources, to
    /// tell `/mcp`'s sessions only of the lists that changed.
    fingerprints: Mutex<[u64; 3]>,
    stopping: AtomicBool,
    /// True once the gateway stops accepting (its listener's signal).
    closing: watch::Sender<bool>,
    /// True once the gateway's start is over (its servers ready, given up,
    /// or the ready wait passed).
    started: watch::Sender<bool>,
    /// True once every start of the gateway's host returned.
    spawned: watch::Sender<bool>,
}

impl EndpointService {
    fn new(service: HttpService, sessions: Sessions) -> Self {
        let router = service.axum_router();
        EndpointService {
            service,
            sessions,
            router,
        }
    }

    /// The endpoint's MCP service.
    #[inline]
    pub(crate) fn service(&self) -> &HttpService {
        &self.service
    }

    /// The service's routes.
    #[inline]
    pub(crate) fn into_router(self) -> axum::Router {
        self.router
    }
}

impl GatewayState {
    /// The host behind the gateway.
    #[inline]
    pub(crate) fn host(&self) -> &Host {
        &self.host
    }

    /// The gateway's configuration.
    #[inline]
    pub(crate) fn config(&self) -> &HttpGatewayConfig {
        &self.config
    }

    /// Who may call (tokens, the metrics token).
    #[inline]
    pub(crate) fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The servers' requests to their callers, on their way.
    #[inline]
    pub(crate) fn relay(&self) -> &Arc<ServerRequests> {
        &self.relay
    }

    /// The gateway's metrics.
    #[inline]
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The call log, if calls are logged.
    #[inline]
    pub(crate) fn call_log(&self) -> Option<&CallLog> {
        self.call_log.as_ref()
    }

    /// The resources callers watch.
    #[inline]
    pub(crate) fn watches(&self) -> &Arc<ResourceWatches> {
        &self.watches
    }

    /// Whether the gateway is stopping.
    #[inline]
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// The gateway stops: new requests are refused and the listener closes.
    pub(crate) fn mark_stopping(&self) {
        self.stopping.store(true, Ordering::Release);
        self.closing.send_replace(true);
    }

    /// A receiver that wakes when the listener is to close.
    pub(crate) fn watch_closing(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// The start is over.
    pub(crate) fn mark_started(&self) {
        self.started.send_replace(true);
    }

    /// Whether the start is over.
    #[inline]
    pub(crate) fn has_started(&self) -> bool {
        *self.started.borrow()
    }

    /// The starts of the servers returned.
    pub(crate) fn mark_spawned(&self) {
        self.spawned.send_replace(true);
    }

    /// A receiver that wakes when the starts of the servers returned.
    pub(crate) fn watch_spawned(&self) -> watch::Receiver<bool> {
        self.spawned.subscribe()
    }

    /// The service of `key`, if made.
    #[inline]
    pub(crate) fn made_endpoint(&self, key: &Endpoint) -> Option<EndpointService> {
        crate::sync::lock(&self.services).get(key).cloned()
    }

    /// Keeps the service just made for `key`, unless another request made
    /// one meanwhile (that one is kept) or the gateway is stopping: then
    /// the new one is stopped.
    pub(crate) fn keep_endpoint(
        &self,
        key: Endpoint,
        service: HttpService,
        sessions: Sessions,
    ) -> Result<EndpointService, Rejection> {
        let made = EndpointService::new(service, sessions);
        let mut services = crate::sync::lock(&self.services);
        if let Some(m) = services.get(&key) {
            // Made meanwhile by another request: that one is kept.
            made.service.handle().stop();
            return Ok(m.clone());
        }
        if self.is_stopping() {
            made.service.handle().stop();
            return Err(Rejection::Stopping);
        }
        services.insert(key, made.clone());
        Ok(made)
    }

    pub(crate) fn new(
        host: Host,
        config: HttpGatewayConfig,
        relay: Arc<ServerRequests>,
        call_log: Option<CallLog>,
    ) -> Arc<Self> {
        let gate = Gate::new(&config.auth, config.metrics_token.clone());
        let mut metrics = Metrics::new();
        metrics.count_server_request_refusals(relay.refused());
        if let Some(log) = &call_log {
            metrics.count_call_log_drops(log.dropped());
        }
        Arc::new(GatewayState {
            watches: Arc::new(ResourceWatches::new(host.clone())),
            host,
            gate,
            relay,
            metrics,
            call_log,
            note_flush: Mutex::new(HashMap::new()),
            services: Mutex::new(HashMap::new()),
            tools: std::sync::RwLock::new(config.tools.clone()),
            fingerprints: Mutex::new([0; 3]),
            stopping: AtomicBool::new(false),
            closing: watch::Sender::new(false),
            started: watch::Sender::new(false),
            spawned: watch::Sender::new(false),
            config,
        })
    }

    /// Waits until the gateway's start is over, or it stops.
    pub(crate) async fn start_over(&self) {
        if *self.started.borrow() {
            return;
        }
        let mut started = self.started.subscribe();
        let mut closing = self.closing.subscribe();
        tokio::select! {
            _ = started.wait_for(|s| *s) => {}
            _ = closing.wait_for(|c| *c) => {}
        }
    }

    /// Whether the host is gone (stopped, or its actor ended in the
    /// user's tree) while the gateway was not stopped.
    pub(crate) fn host_gone(&self) -> bool {
        !self.stopping.load(Ordering::Acquire) && self.host.is_stopped()
    }

    /// Whether `server`'s filter serves its tool `tool`.
    pub(crate) fn serves_tool(&self, server: &str, tool: &str) -> bool {
        let tools = self.tools.read().unwrap_or_else(|e| e.into_inner());
        tools.get(server).is_none_or(|f| f.allows(tool))
    }

    /// Whether `server` has a tool filter.
    pub(crate) fn has_filter(&self, server: &str) -> bool {
        let tools = self.tools.read().unwrap_or_else(|e| e.into_inner());
        tools.contains_key(server)
    }

    /// Sets (or, with `None`, removes) `server`'s tool filter.
    pub(crate) fn set_filter(&self, server: &str, filter: Option<ToolFilter>) {
        let mut tools = self.tools.write().unwrap_or_else(|e| e.into_inner());
        match filter {
            Some(f) if f != ToolFilter::all() => {
                tools.insert(server.to_owned(), f);
            }
            _ => {
                tools.remove(server);
            }
        }
    }

    /// The server `name`, as a call target; the error naming it when it
    /// has no client now (starting again after it was down) or is gone.
    pub(crate) fn target(&self, name: &str) -> Result<Target, HandlerError> {
        Target::of(&self.host, name).ok_or_else(|| super::target::absent(&self.host, name))
    }

    /// Whether `name` is a server of the gateway (started or lazy).
    pub(crate) fn knows(&self, name: &str) -> bool {
        // The client, not the summary: this runs on every request.
        self.host.client(name).is_some()
            || self.host.is_lazy(name)
            || self.host.server(name).is_some()
    }

    /// Starts the lazy server `name` if it is one and not started yet
    /// (concurrent first uses share one start), and follows it.
    pub(crate) async fn ensure_started(self: &Arc<Self>, name: &str) -> Result<(), HostError> {
        if !self.host.is_lazy(name) {
            return Ok(());
        }
        tracing::info!(
            server = name,
            "gateway: starting a lazy server on its first use"
        );
        self.host.start_lazy(name).await?;
        self.watch_server(name);
        Ok(())
    }

    /// Calls held across their clients' input rounds, over every endpoint.
    pub(crate) fn held_calls(&self) -> usize {
        crate::sync::lock(&self.services)
            .values()
            .map(|m| m.service.handle().held_calls())
            .sum()
    }

    /// Every made endpoint (for list changes, and the stop).
    pub(crate) fn made(&self) -> Vec<(Endpoint, EndpointService)> {
        crate::sync::lock(&self.services)
            .iter()
            .map(|(e, m)| (e.clone(), m.clone()))
            .collect()
    }

    /// Stops and forgets the endpoints of server `name` (it was removed or
    /// changed: its sessions end, clients start new ones).
    pub(crate) fn drop_endpoints(&self, name: &str) {
        self.watches.forget(name);
        // Its watcher ends with its client; the next server of this name
        // gets its own.
        crate::sync::lock(&self.note_flush).remove(name);
        let mut services = crate::sync::lock(&self.services);
        services.retain(|e, m| {
            let theirs = matches!(e, Endpoint::Server(n) if &**n == name);
            if theirs {
                m.service.handle().stop();
            }
            !theirs
        });
    }

    /// Tells the sessions of the endpoints `which` selects that a list
    /// changed.
    pub(crate) fn list_changed(&self, which: impl Fn(&Endpoint) -> bool, kind: ListKind) {
        for (e, m) in self.made() {
            if which(&e) {
                m.sessions.notify_list_changed(kind);
            }
        }
    }

    /// The kinds of the namespace whose lists changed since last asked.
    fn changed_kinds(&self) -> Vec<ListKind> {
        use std::hash::{Hash, Hasher};
        let kinds = [
            (ItemKind::Tool, ListKind::Tools),
            (ItemKind::Prompt, ListKind::Prompts),
            (ItemKind::Resource, ListKind::Resources),
        ];
        let mut last = crate::sync::lock(&self.fingerprints);
        let mut changed = Vec::new();
        for (i, (item, list)) in kinds.into_iter().enumerate() {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            for (name, holder) in self.host.listed(item) {
                name.hash(&mut h);
                holder.server().hash(&mut h);
                holder.json().hash(&mut h);
            }
            let f = h.finish();
            if last[i] != f {
                last[i] = f;
                changed.push(list);
            }
        }
        changed
    }

    /// Follows server `name`'s notifications: log messages go to the calls
    /// in flight on it, resource updates and list changes to the sessions
    /// of its endpoints.
    /// Once per client: concurrent first uses of a lazy one follow it
    /// once; a server started again after it gave up (a new client) is
    /// followed anew, its resource watches opened again on it.
    pub(crate) fn watch_server(self: &Arc<Self>, name: &str) {
        let Some(client) = self.host.client(name) else {
            return;
        };
        let id = client.supervisor().get_id();
        let mut flushes = crate::sync::lock(&self.note_flush);
        let revived = match flushes.get(name) {
            Some(f) if f.client == id => return,
            Some(_) => true,
            None => false,
        };
        let weak = Arc::downgrade(self);
        let server: Arc<str> = name.into();
        let notes = client.notifications();
        let (ask, flush) = mpsc::unbounded_channel();
        let passed = Arc::new(AtomicU64::new(0));
        let entry = NoteFlush {
            client: id,
            ask,
            sent: notes.delivered(),
            passed: passed.clone(),
        };
        flushes.insert(server.clone(), entry);
        drop(flushes);
        let watcher = Watcher {
            gateway: weak,
            server,
            passed,
        };
        tokio::spawn(watch_notes(watcher, client, notes, flush, revived));
    }

    /// Waits until server `server`'s watcher has passed on every
    /// notification queued so far. A call's answer comes after the log
    /// messages the server sent before it, on another path: without this
    /// the last of them reached the gateway after the answer, when the call
    /// was gone (1 in 5 calls lost its last log line).
    ///
    /// Without a round trip when the watcher has already passed on every
    /// notification the server sent (the usual case): the answer was read
    /// after them, so they are counted in `sent`, and `passed` is counted
    /// after each was passed on.
    pub(crate) async fn flush_notes(&self, server: &str) {
        let ask = {
            let flushes = crate::sync::lock(&self.note_flush);
            match flushes.get(server) {
                Some(f) if !f.idle() => f.ask.clone(),
                _ => return,
            }
        };
        let (ack, done) = oneshot::channel();
        if ask.send(ack).is_ok() {
            // Bounded: a watcher busy opening its listen stream is not
            // worth holding an answer for.
            let _ = tokio::time::timeout(NOTE_FLUSH_WAIT, done).await;
        }
    }

    /// Starts following every server and the host's events.
    pub(crate) fn watch_all(self: &Arc<Self>) {
        // The lists as they are now are the ones sessions start with.
        let _ = self.changed_kinds();
        for s in self.host.servers() {
            // One added while the gateway started is followed already.
            self.watch_server(&s.name);
        }
        let weak = Arc::downgrade(self);
        let events = self.host.events();
        tokio::spawn(watch_host(weak, events));
    }

    /// Starts observing one call (metrics, call log); finish it with its
    /// result, or drop it (cancelled).
    pub(crate) fn observe<'a>(
        &'a self,
        principal: &'a Principal,
        server: &'a str,
        method: &'a str,
        tool: Option<String>,
        arguments: Option<Value>,
    ) -> Record<'a> {
        self.metrics.started(server);
        Record {
            gateway: self,
            principal,
            server,
            method,
            tool,
            arguments,
            start: Instant::now(),
            done: false,
        }
    }
    /// A call refused before it reached `server` (outside the caller's
    /// grant): logged and counted as any call, with the outcome
    /// `forbidden`.
    pub(crate) fn refused(
        &self,
        principal: &Principal,
        server: &str,
        method: Option<&str>,
        tool: Option<&str>,
    ) {
        let method = method.unwrap_or_default();
        let mut record = self.observe(principal, server, method, tool.map(str::to_owned), None);
        record.write("forbidden", None, 0);
    }
}

/// One call being observed.
pub(crate) struct Record<'a> {
    gateway: &'a GatewayState,
    principal: &'a Principal,
    server: &'a str,
    method: &'a str,
    tool: Option<String>,
    arguments: Option<Value>,
    start: Instant,
    done: bool,
}

impl Record<'_> {
    /// Records the call's outcome.
    pub(crate) fn finish(&mut self, result: &Result<Value, HandlerError>) {
        let (outcome, code, bytes) = match result {
            Ok(v) => {
                let input = v.get("resultType").and_then(Value::as_str) == Some("input_required");
                let outcome = if input { "input_required" } else { "ok" };
                (outcome, None, approximate_bytes(v))
            }
            Err(HandlerError::InputRequired) => ("input_required", None, 0),
            Err(e) => ("error", Some(e.to_error_object().code), 0),
        };
        self.write(outcome, code, bytes);
    }

    /// Records a call answered with a result of `bytes` bytes (not
    /// `input_required`) that the client gets as it is.
    pub(crate) fn finish_ok(&mut self, bytes: usize) {
        self.write("ok", None, bytes as u64);
    }

    fn write(&mut self, outcome: &str, code: Option<i64>, bytes: u64) {
        self.done = true;
        let elapsed = self.start.elapsed();
        let method = method_label(self.method);
        self.gateway
            .metrics
            .finished(self.server, method, outcome, elapsed.as_secs_f64(), bytes);
        if let Some(log) = &self.gateway.call_log {
            log.write(&Line {
                time: now_rfc3339(),
                client: self.principal.name(),
                server: self.server,
                method: self.method,
                tool: self.tool.as_deref(),
                duration_ms: elapsed.as_secs_f64() * 1000.0,
                outcome,
                error: code,
                arguments: if log.logs_arguments() {
                    self.arguments.as_ref()
                } else {
                    None
                },
            });
        }
    }
}

impl Drop for Record<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.write("cancelled", None, 0);
        }
    }
}

/// The size of an answer, from its text content (cheap: no
/// serialisation): what `/metrics` counts as response bytes.
fn approximate_bytes(v: &Value) -> u64 {
    fn walk(v: &Value) -> u64 {
        match v {
            Value::String(s) => s.len() as u64 + 2,
            Value::Array(a) => a.iter().map(walk).sum::<u64>() + 2,
            Value::Object(m) => {
                m.iter()
                    .map(|(k, v)| k.len() as u64 + 3 + walk(v))
                    .sum::<u64>()
                    + 2
            }
            _ => 8,
        }
    }
    walk(v)
}

/// Follows one server's notifications until its client ends. A
/// 2026-07-28 server sends list changes only on a `subscriptions/listen`
/// stream: one is kept open while it is ready (so that the host lists it
/// again, and the gateway's sessions are told), its notifications read here
/// through `notes` like a 2025-11-25 server's. With `revived` (a new client
/// of a server that gave up), its first ready process is a restart too.
async fn watch_notes(
    watcher: Watcher,
    client: Client,
    mut notes: crate::client::Notifications,
    mut flush: mpsc::UnboundedReceiver<oneshot::Sender<()>>,
    mut revived: bool,
) {
    let server = &watcher.server;
    let mut status = client.watch_status();
    let mut stream: Option<crate::client::Subscription> = None;
    // One refusal per session is enough: a server without the method is
    // not asked again until it restarts.
    let mut refused = false;
    // The process last seen ready (its session is one per process).
    let mut last: Option<Arc<crate::client::ServerSession>> = None;
    loop {
        let ready = match &*status.borrow_and_update() {
            Status::Ready(s) => Some(s.clone()),
            _ => None,
        };
        let stateless_ready = ready.as_ref().is_some_and(|s| s.era == Era::Stateless);
        let restarted = match (&last, &ready) {
            (Some(a), Some(b)) => !Arc::ptr_eq(a, b),
            (None, Some(_)) => std::mem::take(&mut revived),
            _ => false,
        };
        if ready.is_some() {
            last = ready;
        }
        if restarted {
            // A new process: the resource watches of the old one are gone.
            let gateway = watcher.gateway.clone();
            let server = server.clone();
            tokio::spawn(async move {
                if let Some(gateway) = gateway.upgrade() {
                    super::watches::rewatch(&gateway.watches, &server).await;
                }
            });
        }
        if stateless_ready && stream.is_none() && !refused {
            match client.listen(SubscriptionFilter::all_list_changes()).await {
                Ok(s) => stream = Some(s),
                Err(e) => {
                    tracing::debug!(server = %server, error = %e, "gateway: no subscriptions/listen stream for list changes");
                    refused = true;
                }
            }
        }
        tokio::select! {
            Some(ack) = flush.recv() => {
                // Everything queued before the answer that asked for this.
                while let Some(n) = notes.try_recv() {
                    if !watcher.pass(n) {
                        return;
                    }
                }
                let _ = ack.send(());
            }
            n = notes.recv() => match n {
                Some(n) => {
                    if !watcher.pass(n) {
                        return;
                    }
                }
                None => return,
            },
            changed = status.changed() => {
                // A restart ends the stream: a new one for the new server.
                stream = None;
                refused = false;
                if changed.is_err() || status.borrow().is_final() {
                    return;
                }
            }
            more = next_on(&mut stream) => {
                // Read through `notes` above; the stream's own copy is
                // dropped, and an ended stream is opened again.
                if more.is_none() {
                    stream = None;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

/// What one server's notification watcher passes on, and counts.
struct Watcher {
    gateway: Weak<GatewayState>,
    server: Arc<str>,
    /// Notifications passed on (see [`NoteFlush`]).
    passed: Arc<AtomicU64>,
}

impl Watcher {
    /// Passes `n` on; false once the gateway is gone.
    fn pass(&self, n: crate::jsonrpc::Notification) -> bool {
        let Some(gateway) = self.gateway.upgrade() else {
            return false;
        };
        on_note(&gateway, &self.server, n);
        // After it was passed on: a call that sees the count sees its log
        // message already on the gateway's stream.
        self.passed.fetch_add(1, Ordering::AcqRel);
        true
    }
}

/// The stream's next notification; never without a stream.
async fn next_on(
    stream: &mut Option<crate::client::Subscription>,
) -> Option<crate::jsonrpc::Notification> {
    match stream {
        Some(s) => s.next_raw().await,
        None => std::future::pending().await,
    }
}

/// One notification of server `server`.
fn on_note(gateway: &GatewayState, server: &Arc<str>, n: crate::jsonrpc::Notification) {
    let params = n.params.unwrap_or(Value::Null);
    match n.method.as_str() {
        "notifications/message" => {
            let level = params
                .get("level")
                .and_then(Value::as_str)
                .unwrap_or("info")
                .to_owned();
            let data = params.get("data").cloned().unwrap_or(Value::Null);
            for call in gateway.relay.calls_on(server) {
                let _ = call.ctx().log(&level, data.clone());
            }
        }
        "notifications/resources/updated" => {
            let uri = params.get("uri").and_then(Value::as_str);
            if let Some(uri) = uri.filter(|u| gateway.watches.delivers(server, u, &params)) {
                for (e, m) in gateway.made() {
                    let ours = match &e {
                        Endpoint::Namespace => true,
                        Endpoint::Server(s) => s == server,
                    };
                    if ours {
                        m.sessions.resource_updated(uri);
                    }
                }
            }
        }
        method => {
            let kind = match method {
                "notifications/tools/list_changed" => ListKind::Tools,
                "notifications/prompts/list_changed" => ListKind::Prompts,
                "notifications/resources/list_changed" => ListKind::Resources,
                _ => return,
            };
            gateway.list_changed(|e| matches!(e, Endpoint::Server(s) if s == server), kind);
        }
    }
}

/// Follows the host's events: `/mcp`'s lists changed (after the host
/// listed again), restarts counted.
async fn watch_host(gateway: Weak<GatewayState>, mut events: crate::host::HostEvents) {
    while let Some(event) = events.recv().await {
        let Some(gateway) = gateway.upgrade() else {
            return;
        };
        match event {
            HostEvent::Listed { server, .. } => {
                // A server started again after it gave up has a new client.
                gateway.watch_server(&server);
                for kind in gateway.changed_kinds() {
                    gateway.list_changed(|e| *e == Endpoint::Namespace, kind);
                }
            }
            HostEvent::Removed { .. } | HostEvent::Down { .. } => {
                for kind in gateway.changed_kinds() {
                    gateway.list_changed(|e| *e == Endpoint::Namespace, kind);
                }
            }
            HostEvent::Lifecycle {
                server,
                event: LifecycleEvent::Restarting { .. },
            } => gateway.metrics.restarted(&server),
            _ => {}
        }
    }
}
