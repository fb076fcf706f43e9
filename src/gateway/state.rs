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
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::watch;

use crate::host::{Host, HostError, Starting};
use crate::server::http::{HttpService, Rejection};
use crate::server::{HandlerError, Sessions};

use super::auth::{Gate, Principal};
use super::calllog::{now_rfc3339, CallLog, Line};
use super::config::{HttpGatewayConfig, ToolFilter};
use super::metrics::{method_label, Metrics};
use super::notes::Notes;
use super::server_requests::ServerRequests;
use super::target::Target;
use super::watches::ResourceWatches;

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
    /// The servers' notification watchers, and the namespace's lists.
    notes: Notes,
    services: Mutex<HashMap<Endpoint, EndpointService>>,
    /// Per server: which of its tools are served (changed by a reload).
    tools: std::sync::RwLock<BTreeMap<String, ToolFilter>>,
    /// Where the gateway is in its life.
    phase: watch::Sender<Phase>,
    /// The starts of the host's servers, until they returned: the start's
    /// task waits for them, and so does a stop that comes first.
    starts: Arc<tokio::sync::Mutex<Option<Starting>>>,
}

/// Where a gateway is in its life. It only moves forward, in
/// [`GatewayState::enter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    /// Its servers start: requests wait, and `/health` says `"starting"`.
    Starting,
    /// Its start is over: every server ready, given up, or the ready wait
    /// passed.
    Serving,
    /// It stops: new requests are refused and its listener closes.
    Closing,
    /// Every server of its host has stopped.
    Stopped,
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

    /// What follows the servers' notifications.
    #[inline]
    pub(crate) fn notes(&self) -> &Notes {
        &self.notes
    }

    /// The starts of the host's servers, until they returned.
    #[inline]
    pub(crate) fn starts(&self) -> &Arc<tokio::sync::Mutex<Option<Starting>>> {
        &self.starts
    }

    /// Where the gateway is in its life.
    #[inline]
    pub(crate) fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// A receiver that wakes at each change of phase.
    pub(crate) fn watch_phase(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }

    /// The one place the phase changes: it moves to `next` when that is
    /// later, and stays otherwise (a start that ends during the stop leaves
    /// the gateway closing).
    pub(crate) fn enter(&self, next: Phase) {
        self.phase.send_if_modified(|p| {
            next > *p && {
                *p = next;
                true
            }
        });
    }

    /// Whether the gateway is stopping or stopped.
    #[inline]
    pub(crate) fn is_stopping(&self) -> bool {
        self.phase() >= Phase::Closing
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
    ) -> Result<EndpointService, super::Refusal> {
        let made = EndpointService::new(service, sessions);
        let mut services = crate::sync::lock(&self.services);
        if let Some(m) = services.get(&key) {
            // Made meanwhile by another request: that one is kept.
            made.service.handle().stop();
            return Ok(m.clone());
        }
        if self.is_stopping() {
            made.service.handle().stop();
            return Err(Rejection::Stopping.into());
        }
        services.insert(key, made.clone());
        Ok(made)
    }

    pub(crate) fn new(
        host: Host,
        starts: Starting,
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
            notes: Notes::default(),
            services: Mutex::new(HashMap::new()),
            tools: std::sync::RwLock::new(config.tools.clone()),
            phase: watch::Sender::new(Phase::Starting),
            starts: Arc::new(tokio::sync::Mutex::new(Some(starts))),
            config,
        })
    }

    /// Waits until the gateway's start is over, or it stops.
    pub(crate) async fn start_over(&self) {
        let _ = self.watch_phase().wait_for(|p| *p != Phase::Starting).await;
    }

    /// Whether the host is gone (stopped, or its actor ended in the
    /// user's tree) while the gateway was not stopped.
    pub(crate) fn host_gone(&self) -> bool {
        !self.is_stopping() && self.host.is_stopped()
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
        self.notes.forget(name);
        let mut services = crate::sync::lock(&self.services);
        services.retain(|e, m| {
            let theirs = matches!(e, Endpoint::Server(n) if &**n == name);
            if theirs {
                m.service.handle().stop();
            }
            !theirs
        });
    }

    /// Tells the sessions of the endpoints `which` selects what `tell`
    /// says: a list changed, a resource was updated.
    pub(crate) fn tell_sessions(
        &self,
        which: impl Fn(&Endpoint) -> bool,
        tell: impl Fn(&Sessions),
    ) {
        for (e, m) in self.made() {
            if which(&e) {
                tell(&m.sessions);
            }
        }
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

    fn write(&mut self, outcome: &'static str, code: Option<i64>, bytes: u64) {
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
