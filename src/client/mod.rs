//! The client: run a local MCP server as a child process, or reach a remote
//! one over Streamable HTTP, and talk to it.
//!
#![doc = include_str!("../../docs/client.md")]
//!
#![doc = include_str!("../../docs/reliability.md")]
//!
//! # The actor tree
//!
//! ```text
//! ClientGroup (optional)  OTP strategies and intensity over clients (ClientSpec)
//!  └─ ClientSupervisor    respawns a dead Connection; what the handle stops;
//!      │                  fails with Error::GaveUp when the client gives up
//!      └─ Connection      ids, pending calls, discovery, dispatch, server restarts
//!          └─ PortOwner   one child process: writer, reader and reaper tasks
//! ```
//!
//! [`Client`] is the user's handle: cheap to clone, usable from any task.
//! A [`ClientRegistry`] name resolves to the client a [`ClientSpec`]
//! started last.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorCell, ActorRef};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::deadline::After;

mod client_config;
mod client_spec;
mod client_transport;
pub(crate) use client_config::merge_env;
#[cfg(feature = "cli")]
pub(crate) use client_config::plain_dir;
mod connection;
mod direct;
mod discovery;
mod events;
mod group;
mod listen;
mod notifications;
mod pagination;
mod registry;
mod reply_slot;
mod request_options;
mod responder;
mod restarts;
mod shared;
mod status;
mod supervisor;
mod typed;
mod waiters;

pub use crate::transport::http_options::HttpOptions;
pub use client_config::{Backoff, ClientConfig, EraPreference, DEFAULT_MAX_WRITE_QUEUE_BYTES};
pub use client_spec::ClientSpec;
pub use client_transport::{ClientTransport, StderrMode, StdioCommand};
pub use events::{forward_events, LifecycleEvent};
pub use group::{
    ChildSpec, ClientGroup, GroupError, GroupSpec, Restart, Strategy, DEFAULT_SHUTDOWN,
};
pub use listen::{ListenEnd, Subscription};
pub use notifications::{Delivered, Notifications};
pub use registry::{AlreadyRegistered, ClientRegistry};
pub use request_options::{CancelToken, Progress, RequestOptions};
pub use responder::{ClientHandler, ClientResponder, HandlerFuture, InboundRequest};
pub use status::{ServerSession, Status};
pub(crate) use supervisor::SupervisorMsg;

use self::direct::{Direct, Refused};
use self::reply_slot::ReplySlot;
use self::shared::ClientShared;
use self::supervisor::{ClientSupervisor, SupervisorArgs};
use self::typed::TypedState;
use self::waiters::Waiter;
use crate::child::ShutdownReport;
use crate::error::{ConfigError, Error, SpawnError};
use crate::jsonrpc::{encode, RawJson, RequestId};
use crate::line_io::queue::QueueError;
use crate::transport::{StdioTransport, Transport};

/// Why [`Client::start`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// An option was refused; the error names it.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The first server process could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// An actor of the tree could not be spawned.
    #[error("could not start the client's actors: {0}")]
    Actor(String),
}

/// The transport `config` asks for.
fn transport_for(config: &ClientConfig) -> Result<Arc<dyn Transport>, ConfigError> {
    match &config.transport {
        ClientTransport::Stdio(child) => {
            Ok(Arc::new(StdioTransport::new(config.stdio_options(child))))
        }
        #[cfg(feature = "http")]
        ClientTransport::Http(http) => Ok(Arc::new(crate::transport::http::HttpTransport::new(
            config.display_name(),
            http,
            config.get_max_message_bytes(),
            config.get_max_write_queue_bytes(),
        )?)),
        #[cfg(not(feature = "http"))]
        ClientTransport::Http(_) => Err(ConfigError::new(
            "http",
            "this build of conduit-mcp has no `http` feature",
        )),
    }
}

/// Options of [`Client::start_with`] beyond the config: built with
/// [`new`](Self::new) and its setters (the fields stay public).
#[derive(Default)]
#[non_exhaustive]
pub struct StartOptions {
    /// Answers server-to-client requests and 2026-07-28 input requests.
    pub handler: Option<Arc<dyn ClientHandler>>,
    /// Spawn the ClientSupervisor linked under this actor (embedding in a
    /// user's supervision tree). The actor's `handle_supervisor_evt` then
    /// gets `ActorFailed` carrying [`Error::GaveUp`] if the client gives
    /// up, and `ActorTerminated` if it is stopped.
    pub supervisor: Option<ActorCell>,
    /// Receives every lifecycle event from the first spawn on.
    pub events: Option<mpsc::UnboundedSender<events::LifecycleEvent>>,
}

impl StartOptions {
    /// No handler, no supervisor, no event subscriber.
    ///
    /// ```
    /// use conduit_mcp::{ClientResponder, StartOptions};
    ///
    /// let (events, _rx) = tokio::sync::mpsc::unbounded_channel();
    /// let options = StartOptions::new()
    ///     .handler(ClientResponder::new().roots(|| async { Ok(vec![]) }))
    ///     .events(events);
    /// assert!(options.handler.is_some() && options.supervisor.is_none());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`handler`](Self::handler), which answers the server's requests
    /// and the input requests of 2026-07-28 results (default none: `ping`
    /// is answered, every other server request refused with -32601).
    pub fn handler(mut self, handler: impl ClientHandler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// Sets [`supervisor`](Self::supervisor): the ClientSupervisor is
    /// spawned linked under this actor (default none: unlinked).
    pub fn supervisor(mut self, supervisor: ActorCell) -> Self {
        self.supervisor = Some(supervisor);
        self
    }

    /// Sets [`events`](Self::events), which then receives every lifecycle
    /// event from the first spawn on (default none: see
    /// [`Client::events`] for a subscription after the start).
    pub fn events(mut self, events: mpsc::UnboundedSender<events::LifecycleEvent>) -> Self {
        self.events = Some(events);
        self
    }
}

impl std::fmt::Debug for StartOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartOptions")
            .field("handler", &self.handler.is_some())
            .field("supervisor", &self.supervisor.as_ref().map(|s| s.get_id()))
            .finish()
    }
}

/// A handle to a running client. Clones share the same client.
///
/// Dropping the last handle stops the client, like [`stop`](Self::stop)
/// without waiting: the server is shut down in the background, never leaked.
#[derive(Clone)]
pub struct Client {
    shared: Arc<ClientShared>,
    supervisor: ActorRef<SupervisorMsg>,
    /// `None` in the library's own background handles, which must not keep
    /// the client alive (see [`Client::detached`]).
    _last: Option<Arc<StopOnLastDrop>>,
    typed: Arc<TypedState>,
}

/// Stops the tree when the last [`Client`] handle goes.
struct StopOnLastDrop(ActorRef<SupervisorMsg>, Arc<ClientShared>);

impl Drop for StopOnLastDrop {
    fn drop(&mut self) {
        // Final at once, whatever state the tree is in (see `stop`).
        self.1.finalize("the last client handle was dropped");
        let _ = self.0.cast(SupervisorMsg::Stop);
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("name", &self.shared.name())
            .field("status", &*self.shared.status().borrow())
            .finish()
    }
}

/// Methods whose 2026-07-28-era result may be `input_required`.
const MULTI_ROUND_METHODS: &[&str] = &["tools/call", "prompts/get", "resources/read"];
/// Input rounds allowed for one call before it fails (as the other SDKs).
const MAX_INPUT_ROUNDS: usize = 10;

impl Client {
    /// Validates `config`, spawns the actor tree and the first server
    /// process, and returns at once (discovery continues in the background;
    /// calls wait for it). A missing executable or a bad option is reported
    /// here, without retries.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use conduit_mcp::{Client, ClientConfig};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = Client::start(ClientConfig::new("uvx").arg("mcp-server-time")).await?;
    /// let session = client.ready(Duration::from_secs(30)).await?;
    /// println!("{} speaks {}", client.name(), session.protocol_version);
    /// client.stop().wait().await;
    /// # Ok(()) }
    /// ```
    pub async fn start(config: ClientConfig) -> Result<Client, StartError> {
        Self::start_with(config, StartOptions::default()).await
    }

    /// [`start`](Self::start) with a handler and/or a parent supervisor.
    ///
    /// The handler's [`capabilities`](ClientHandler::capabilities) are
    /// added to the configuration's (what the configuration says wins).
    ///
    /// # Examples
    ///
    /// A [`ClientResponder`] that gives the server the project's root and
    /// declines every elicitation, attached to a client:
    ///
    /// ```no_run
    /// use std::sync::Arc;
    ///
    /// use conduit_mcp::protocol::{ElicitResult, Root};
    /// use conduit_mcp::{Client, ClientConfig, ClientResponder, StartOptions};
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let responder = ClientResponder::new()
    ///     .roots(|| async { Ok(vec![Root::new("file:///srv/project", "project")]) })
    ///     .elicitation(|_| async { Ok(ElicitResult::decline()) });
    /// let client = Client::start_with(
    ///     ClientConfig::new("npx").args(["-y", "@modelcontextprotocol/server-everything"]),
    ///     StartOptions::new().handler(responder),
    /// )
    /// .await?;
    /// // Declared {"roots": {}, "elicitation": {}}; the server's requests
    /// // are answered by the responder.
    /// client.stop().wait().await;
    /// # Ok(()) }
    /// ```
    pub async fn start_with(
        mut config: ClientConfig,
        opts: StartOptions,
    ) -> Result<Client, StartError> {
        config.validate()?;
        if let Some(handler) = &opts.handler {
            config.declare(&handler.capabilities());
        }
        let typed = Arc::new(TypedState::new(config.get_log_level().cloned()));
        let refresh_tools = config.get_refresh_tools_on_list_changed();
        let config = Arc::new(config);
        let transport = transport_for(&config)?;
        let shared = Arc::new(ClientShared::new(config, opts.handler));
        if let Some(tx) = opts.events {
            shared.add_event_subscriber(tx);
        }
        let (tx, rx) = oneshot::channel();
        let args = SupervisorArgs::new(shared.clone(), transport, Some(tx));
        let spawned = match opts.supervisor {
            Some(parent) => Actor::spawn_linked(None, ClientSupervisor, args, parent).await,
            None => Actor::spawn(None, ClientSupervisor, args).await,
        };
        match spawned {
            Ok((supervisor, _)) => {
                let client = Client {
                    _last: Some(Arc::new(StopOnLastDrop(supervisor.clone(), shared.clone()))),
                    shared,
                    supervisor,
                    typed,
                };
                if refresh_tools {
                    tokio::spawn(listen::refresh_tools(client.detached()));
                }
                Ok(client)
            }
            Err(e) => match rx.await {
                Ok(Err(spawn)) => Err(StartError::Spawn(spawn)),
                _ => Err(StartError::Actor(e.to_string())),
            },
        }
    }

    /// A handle for the library's background tasks: it works like any
    /// other, but does not keep the client alive (the client stops when the
    /// last user handle goes, whatever these hold).
    fn detached(&self) -> Client {
        Client {
            shared: self.shared.clone(),
            supervisor: self.supervisor.clone(),
            _last: None,
            typed: self.typed.clone(),
        }
    }

    /// The name used in logs.
    pub fn name(&self) -> &str {
        self.shared.name()
    }

    /// The client's supervisor actor (to link or monitor from a user's
    /// tree). It fails with [`Error::GaveUp`] when the client gives up, and
    /// stops when the client is stopped.
    pub fn supervisor(&self) -> ActorCell {
        self.supervisor.get_cell()
    }

    /// The current status.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::Status;
    ///
    /// # fn example(client: conduit_mcp::Client) {
    /// match client.status() {
    ///     Status::Ready(session) => println!("ready, pid {:?}", session.pid),
    ///     Status::Restarting { attempt, reason } => println!("restart {attempt}: {reason}"),
    ///     other => println!("{other:?}"),
    /// }
    /// # }
    /// ```
    pub fn status(&self) -> Status {
        self.shared.status_now()
    }

    /// A receiver that sees every status change.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) {
    /// let mut status = client.watch_status();
    /// while status.changed().await.is_ok() {
    ///     let now = status.borrow_and_update().clone();
    ///     println!("now {now:?}");
    ///     if now.is_final() {
    ///         break;
    ///     }
    /// }
    /// # }
    /// ```
    pub fn watch_status(&self) -> watch::Receiver<Status> {
        self.shared.status()
    }

    /// The discovered session, when a server is ready.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn example(client: conduit_mcp::Client) {
    /// if let Some(session) = client.session() {
    ///     println!("{:?} era, version {}", session.era, session.protocol_version);
    /// }
    /// # }
    /// ```
    pub fn session(&self) -> Option<Arc<ServerSession>> {
        match self.shared.status_now() {
            Status::Ready(s) => Some(s.clone()),
            _ => None,
        }
    }

    /// Waits until a server is ready (discovery done), up to `timeout`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let session = client.ready(Duration::from_secs(30)).await?;
    /// if let Some(info) = &session.server_info {
    ///     println!("{} {}", info.name, info.version);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn ready(&self, timeout: Duration) -> Result<Arc<ServerSession>, Error> {
        let mut rx = self.shared.status();
        let wait = async {
            loop {
                if let Status::Ready(s) = &*rx.borrow_and_update() {
                    return Ok(s.clone());
                }
                if let Some(e) = self.shared.final_error() {
                    return Err(e);
                }
                if rx.changed().await.is_err() {
                    return Err(Error::Stopped);
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .unwrap_or_else(|_| {
                Err(Error::Timeout {
                    method: "(waiting for the server to be ready)".into(),
                    after: timeout,
                })
            })
    }

    /// Subscribes to lifecycle events from now on (spawned, ready, closed,
    /// restarting, gave up, stopped, stderr lines). Unbounded: nothing is
    /// dropped under bursts. Use [`StartOptions::events`] to see the first
    /// spawn as well.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::LifecycleEvent;
    ///
    /// # async fn example(client: conduit_mcp::Client) {
    /// let mut events = client.events();
    /// while let Some(event) = events.recv().await {
    ///     if let LifecycleEvent::Restarting { attempt, delay, .. } = &event {
    ///         println!("restart {attempt} in {delay:?}");
    ///     }
    ///     if event.is_final() {
    ///         break;
    ///     }
    /// }
    /// # }
    /// ```
    pub fn events(&self) -> mpsc::UnboundedReceiver<events::LifecycleEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.shared.add_event_subscriber(tx);
        rx
    }

    /// Subscribes to the server's notifications (logging messages, list
    /// changes, resource updates, progress without a waiting caller) from
    /// now on. Bounded in bytes: a subscriber that leaves more than
    /// [`max_queued_notification_bytes`](ClientConfig::max_queued_notification_bytes)
    /// unread loses the next ones (counted in [`Notifications::dropped`] and
    /// logged); the server is never slowed down by it. With no subscriber,
    /// notifications are dropped at once.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::ServerNotification;
    ///
    /// # async fn example(client: conduit_mcp::Client) {
    /// let mut notes = client.notifications();
    /// while let Some(n) = notes.recv_typed().await {
    ///     if let ServerNotification::Log(entry) = n {
    ///         println!("[{}] {}", entry.level.as_str(), entry.data);
    ///     }
    /// }
    /// # }
    /// ```
    pub fn notifications(&self) -> Notifications {
        self.shared.subscribe()
    }

    /// Sends a request with the default timeout and returns its result.
    ///
    /// Cancel safety: dropping the future cancels the request (the server is
    /// sent `notifications/cancelled`, and a late answer is ignored).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let result = client.request("tools/list", None).await?;
    /// let tools = result["tools"].as_array().map_or(0, Vec::len);
    /// println!("{tools} tools on the first page");
    /// # Ok(()) }
    /// ```
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, Error> {
        self.request_with(method, params, RequestOptions::default())
            .await
    }

    /// Sends a request and decodes its result into `T`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::ListPromptsResult;
    /// use conduit_mcp::RequestOptions;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let page: ListPromptsResult = client
    ///     .request_as("prompts/list", None, RequestOptions::new())
    ///     .await?;
    /// for prompt in &page.prompts {
    ///     println!("{}", prompt.name);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn request_as<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RequestOptions,
    ) -> Result<T, Error> {
        let raw = self.request_raw(method, params, opts).await?;
        raw.parse().map_err(|e| Error::Codec {
            method: method.to_owned(),
            problem: format!("could not decode the result: {e}"),
        })
    }

    /// Sends a request with options (timeout, progress, cancellation).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use conduit_mcp::RequestOptions;
    /// use serde_json::json;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// let params = json!({ "name": "get_current_time", "arguments": { "timezone": "UTC" } });
    /// let opts = RequestOptions::new().timeout(Duration::from_secs(5));
    /// let result = client.request_with("tools/call", Some(params), opts).await?;
    /// println!("{}", result["content"][0]["text"]);
    /// # Ok(()) }
    /// ```
    pub async fn request_with(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RequestOptions,
    ) -> Result<Value, Error> {
        self.request_as(method, params, opts).await
    }

    /// Sends a request and returns its result as the bytes the server sent,
    /// not yet decoded (see [`RawJson`]: [`RawJson::parse`] decodes and
    /// validates them). In the 2026-07-28 era an `input_required` result is
    /// fulfilled by the handler and the request retried (new id,
    /// `inputResponses`, `requestState` echoed).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::ListResourcesResult;
    /// use conduit_mcp::RequestOptions;
    ///
    /// # async fn example(client: conduit_mcp::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let raw = client.request_raw("resources/list", None, RequestOptions::new()).await?;
    /// println!("{} bytes", raw.len());
    /// let page: ListResourcesResult = raw.parse()?;
    /// println!("{} resources", page.resources.len());
    /// # Ok(()) }
    /// ```
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        opts: RequestOptions,
    ) -> Result<RawJson, Error> {
        let start = Instant::now();
        let mut params = self.with_log_level(params);
        for _ in 0..MAX_INPUT_ROUNDS {
            let id = self.shared.next_id();
            let (raw, era) = self.round(id, method, &params, &opts, start).await?;
            // Only stateless servers answer `input_required`: skip the scan of
            // (possibly large) stateful results.
            if opts.is_single_round()
                || !MULTI_ROUND_METHODS.contains(&method)
                || era != crate::protocol::Era::Stateless
                || memchr::memmem::find(raw.as_bytes(), b"input_required").is_none()
            {
                return Ok(raw);
            }
            let v: Value = raw.parse().map_err(|e| Error::Codec {
                method: method.into(),
                problem: e.to_string(),
            })?;
            if v.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return Ok(raw);
            }
            params = Some(self.fulfil(method, params, &v).await?);
        }
        Err(Error::Codec {
            method: method.into(),
            problem: format!("server asked for input more than {MAX_INPUT_ROUNDS} times"),
        })
    }

    /// Builds the retry's params: the original params plus `inputResponses`
    /// from the handler and the echoed `requestState`.
    async fn fulfil(&self, method: &str, params: Option<Value>, v: &Value) -> Result<Value, Error> {
        let mut responses = serde_json::Map::new();
        if let Some(reqs) = v.get("inputRequests").and_then(Value::as_object) {
            let Some(handler) = self.shared.handler() else {
                return Err(Error::Codec {
                    method: method.into(),
                    problem: "the server needs input from the client, but no handler is set".into(),
                });
            };
            for (key, req) in reqs {
                let inbound = InboundRequest {
                    method: req
                        .get("method")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    params: req.get("params").cloned(),
                };
                let answer = handler.handle(inbound).await.map_err(Error::Server)?;
                responses.insert(key.clone(), answer);
            }
        }
        let mut p = match params {
            Some(Value::Object(m)) => m,
            None => serde_json::Map::new(),
            Some(_) => {
                return Err(Error::Codec {
                    method: method.into(),
                    problem: "params must be an object to carry inputResponses".into(),
                })
            }
        };
        p.insert("inputResponses".into(), Value::Object(responses));
        match v.get("requestState") {
            Some(s) => p.insert("requestState".into(), s.clone()),
            None => p.remove("requestState"),
        };
        Ok(Value::Object(p))
    }

    /// One request/response round, as request `id`.
    async fn round(
        &self,
        id: RequestId,
        method: &str,
        params: &Option<Value>,
        opts: &RequestOptions,
        start: Instant,
    ) -> Result<(RawJson, crate::protocol::Era), Error> {
        let clock = Deadlines {
            start,
            timeout: opts.timeout_or(self.shared.config().get_request_timeout()),
            hard: opts.max_total().map(|m| start.after(m)),
        };
        let deadline = clock.from(start);
        if let Some(e) = self.shared.final_error() {
            return Err(e);
        }
        let (reply, rx) = ReplySlot::new(self.shared.down().clone());
        let wants_progress = opts.wants_progress();
        let (ptx, prx) = if wants_progress {
            let (t, r) = mpsc::unbounded_channel();
            (Some(t), Some(r))
        } else {
            (None, None)
        };
        let mut waiter = Some(Waiter::Caller {
            method: method.to_owned(),
            reply,
            progress: ptx,
        });
        // Waiting for a ready server and for room in its write queue counts
        // against the timeout; so does a cancellation.
        let sent = tokio::select! {
            biased;
            r = self.send(&id, method, params, wants_progress, &mut waiter) => r?,
            _ = tokio::time::sleep_until(deadline) => return Err(clock.timed_out(method, deadline)),
            _ = cancelled(opts.cancel()) => return Err(Error::Cancelled { method: method.into() }),
        };
        // The era of the server this call went to (the status may still be
        // catching up with a server that just became ready).
        let era = sent.era();
        let guard = CancelOnDrop {
            direct: Some(sent),
            id,
            reason: "the caller dropped the request",
        };
        let answer = Answer {
            rx,
            progress: prx,
            guard,
        };
        answer
            .wait(self, method, opts, &clock, deadline)
            .await
            .map(|raw| (raw, era))
    }

    /// Sends a call on the ready server's direct path, waiting (without
    /// spinning: on the path's watch) while no server is ready or the path
    /// at hand went stale. Returns the path it was sent on.
    ///
    /// Cancel safety: cancel safe; nothing is sent or registered until it
    /// returns `Ok`.
    async fn send(
        &self,
        id: &RequestId,
        method: &str,
        params: &Option<Value>,
        progress: bool,
        waiter: &mut Option<Waiter>,
    ) -> Result<Arc<Direct>, Error> {
        // The first look needs no watch subscription (the common case: a
        // server is ready); a subscription is taken only to wait.
        let mut watch: Option<tokio::sync::watch::Receiver<Option<Arc<Direct>>>> = None;
        loop {
            let current = match &mut watch {
                None => self.shared.direct(),
                Some(w) => w.borrow_and_update().clone(),
            };
            if let Some(e) = self.shared.final_error() {
                return Err(e);
            }
            if let Some(direct) = current {
                match direct.send(id, method, params, progress, waiter).await {
                    Ok(()) => return Ok(direct),
                    Err(Refused::Failed(e)) => return Err(e),
                    // Closed meanwhile: its withdrawal wakes the wait below.
                    Err(Refused::Stale) => {}
                }
            }
            match &mut watch {
                None => watch = Some(self.shared.watch_direct()),
                Some(w) => {
                    if w.changed().await.is_err() {
                        return Err(self.down_error());
                    }
                }
            }
        }
    }

    /// The error for a call that found the client down.
    fn down_error(&self) -> Error {
        self.shared
            .final_error()
            .unwrap_or_else(|| Error::ConnectionDown(self.shared.down().get()))
    }

    /// Sends a notification to the server without waiting. It is dropped
    /// (and `Ok` returned) when no server is ready; it fails with
    /// [`Error::WriteQueueFull`] when the server is not keeping up with
    /// what it is sent.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn example(client: conduit_mcp::Client) -> Result<(), conduit_mcp::Error> {
    /// // The client's roots changed: tell the server (a 2025-11-25 one asks again).
    /// client.notify("notifications/roots/list_changed", None)?;
    /// # Ok(()) }
    /// ```
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        if let Some(e) = self.shared.final_error() {
            return Err(e);
        }
        let Some(direct) = self.shared.direct() else {
            return Ok(());
        };
        let line = encode::notification(method, params.as_ref()).map_err(|e| Error::Codec {
            method: method.to_owned(),
            problem: e.to_string(),
        })?;
        match direct.queue().try_send(line) {
            Ok(()) | Err(QueueError::Closed) => Ok(()),
            Err(QueueError::Full { queued, limit }) => Err(Error::WriteQueueFull { queued, limit }),
            Err(QueueError::TooLarge { bytes, limit }) => Err(Error::RequestTooLarge {
                method: method.to_owned(),
                bytes,
                limit,
            }),
        }
    }

    /// Stops the client and returns at once. The stop is final at once:
    /// calls in flight fail with [`Error::Stopped`], later calls too, and no
    /// server is spawned again, whatever state the actors are in. The
    /// server's shutdown (stdin close, SIGTERM, SIGKILL, reap) runs
    /// detached; await the returned handle to wait for its end (for
    /// example before the program exits).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) {
    /// let shutdown = client.stop();
    /// assert!(client.status().is_final()); // at once
    /// for report in shutdown.wait().await {
    ///     println!("pid {} ended: {:?}", report.pid, report.exit);
    /// }
    /// # }
    /// ```
    pub fn stop(&self) -> ClientShutdown {
        // Final, and the server's stdin closed, from here: no actor hop
        // between the call and the shutdown's first step.
        self.shared.stop_now("the client was stopped");
        let _ = self.supervisor.cast(SupervisorMsg::Stop);
        ClientShutdown {
            shared: self.shared.clone(),
        }
    }

    /// The pid of the current server process, if one is ready.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn example(client: conduit_mcp::Client) {
    /// match client.pid() {
    ///     Some(pid) => println!("the server runs as pid {pid}"),
    ///     None => println!("no server ready (or an HTTP server)"),
    /// }
    /// # }
    /// ```
    pub fn pid(&self) -> Option<u32> {
        self.session().and_then(|s| s.pid)
    }

    /// The server's requests handled at once
    /// ([`ClientConfig::max_inbound_requests`]).
    ///
    /// ```
    /// # fn demo(client: &conduit_mcp::Client) {
    /// println!("{} server requests at once", client.max_inbound_requests());
    /// # }
    /// ```
    #[inline]
    pub fn max_inbound_requests(&self) -> usize {
        self.shared.config().get_max_inbound_requests()
    }
}

/// The deadlines of one call: its timeout runs from the start (or from the
/// last progress, when asked), never past the hard deadline.
struct Deadlines {
    start: Instant,
    timeout: Duration,
    hard: Option<Instant>,
}

impl Deadlines {
    /// The deadline of a timeout that runs from `from`.
    fn from(&self, from: Instant) -> Instant {
        let d = from.after(self.timeout);
        self.hard.map_or(d, |h| d.min(h))
    }

    fn timed_out(&self, method: &str, deadline: Instant) -> Error {
        Error::Timeout {
            method: method.into(),
            after: deadline.saturating_duration_since(self.start),
        }
    }
}

/// A sent call waiting for its answer.
struct Answer {
    rx: tokio::sync::oneshot::Receiver<reply_slot::CallResult>,
    progress: Option<mpsc::UnboundedReceiver<Value>>,
    guard: CancelOnDrop,
}

impl Answer {
    /// Waits for the answer, forwarding progress (which moves the deadline
    /// when asked); a timeout or a cancel forgets the call and tells the
    /// server (the guard's drop).
    async fn wait(
        mut self,
        client: &Client,
        method: &str,
        opts: &RequestOptions,
        clock: &Deadlines,
        mut deadline: Instant,
    ) -> Result<RawJson, Error> {
        loop {
            tokio::select! {
                biased;
                r = &mut self.rx => {
                    self.guard.direct = None;
                    // Progress sent just before the answer is still queued:
                    // deliver it before returning.
                    if let (Some(prx), Some(tx)) = (self.progress.as_mut(), opts.progress_sender()) {
                        while let Ok(p) = prx.try_recv() {
                            let _ = tx.send(Progress::from_params(p));
                        }
                    }
                    return r.unwrap_or_else(|_| Err(client.down_error()));
                }
                p = async { match self.progress.as_mut() { Some(r) => r.recv().await, None => std::future::pending().await } } => {
                    let Some(p) = p else { continue };
                    if opts.resets_timeout_on_progress() {
                        deadline = clock.from(Instant::now());
                    }
                    if let Some(tx) = opts.progress_sender() {
                        let _ = tx.send(Progress::from_params(p));
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    self.guard.reason = "timeout";
                    return Err(clock.timed_out(method, deadline));
                }
                _ = cancelled(opts.cancel()) => {
                    self.guard.reason = "cancelled by the caller";
                    return Err(Error::Cancelled { method: method.into() });
                }
            }
        }
    }
}

/// Resolves when `cancel` is cancelled; never without one.
async fn cancelled(cancel: Option<&CancelToken>) {
    match cancel {
        Some(c) => c.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Sends `notifications/cancelled` if a request is abandoned (timeout,
/// cancel, or the future dropped) while its answer is still awaited.
struct CancelOnDrop {
    direct: Option<Arc<Direct>>,
    id: RequestId,
    reason: &'static str,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(direct) = self.direct.take() {
            // `false`: answered or failed by a close meanwhile; nothing to
            // cancel.
            direct.cancel(&self.id, self.reason);
        }
    }
}

/// Returned by [`Client::stop`]: await the end of every server shutdown.
#[derive(Debug)]
#[must_use = "stop() has begun; await .wait() to know when the server is gone"]
pub struct ClientShutdown {
    shared: Arc<ClientShared>,
}

impl ClientShutdown {
    /// Waits until every server process this client started is shut down
    /// and reaped (including a spawn that was under way when the client
    /// stopped), and, over HTTP, until the session was ended (its DELETE
    /// answered, or given up after 5 s); HTTP servers have no report. Returns one report per process, oldest first (the last
    /// one is the server that was running when the client stopped); a
    /// client that restarted its server more than 256 times returns the
    /// 256 most recent.
    ///
    /// Cancel safety: cancel safe; the shutdown goes on regardless.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) {
    /// let reports = client.stop().wait().await;
    /// if let Some(last) = reports.last() {
    ///     println!("took {:?}, SIGKILL sent: {}", last.elapsed, last.sent_kill);
    /// }
    /// # }
    /// ```
    pub async fn wait(self) -> Vec<ShutdownReport> {
        self.shared.wait_processes().await
    }
}
