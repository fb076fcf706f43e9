//! The Connection actor: request ids, the pending-call table, era discovery,
//! inbound dispatch and restarts of the server with backoff.
//!
//! It lives across server restarts; each server process is one [`Link`] with
//! a generation number, and events of an old generation are ignored. Calls
//! made while no server is ready are queued (their own timeouts still run on
//! the caller's side) and sent once discovery completes.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::discovery::{self, DiscoverVerdict};
use super::events::LifecycleEvent;
use super::handler::InboundRequest;
use super::pending::ReplySlot;
use super::session::{ServerSession, Status};
use super::shared::Shared;
use crate::client::config::EraPreference;
use crate::error::{CloseReason, Error};
use crate::jsonrpc::{codes, encode, ErrorObject, Message, Notification, Outcome, RequestId};
use crate::protocol::{meta, methods, Era, LATEST_LEGACY_VERSION, MODERN_VERSION};
use crate::transport::{EventSink, Link, Transport, TransportEvent};

/// A call from the user's handle.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) params: Option<Value>,
    pub(crate) reply: ReplySlot,
    /// Receives each `notifications/progress` params for this call.
    pub(crate) progress: Option<mpsc::UnboundedSender<Value>>,
}

/// Messages of the Connection.
#[derive(Debug)]
pub(crate) enum ConnectionMsg {
    /// Send a request.
    Call(Call),
    /// The caller gave up on a request (timeout or cancel).
    Cancel { id: RequestId, reason: String },
    /// Send a notification.
    Notify {
        method: String,
        params: Option<Value>,
    },
    /// An event of link generation `gen`.
    Transport { gen: u64, event: TransportEvent },
    /// The discovery probe of `gen` timed out.
    ProbeTimeout { gen: u64 },
    /// The `initialize` of `gen` timed out.
    InitTimeout { gen: u64 },
    /// Time to start the next server.
    Reconnect,
    /// A user handler answered a server-to-client request.
    Respond {
        gen: u64,
        id: RequestId,
        outcome: Result<Value, ErrorObject>,
    },
    /// The owner of link `gen` terminated (queued behind its Closed event).
    OwnerGone { gen: u64, why: String },
    /// Close the server and stop (the client is stopping).
    Shutdown,
}

enum Waiter {
    Caller {
        method: String,
        reply: ReplySlot,
        progress: Option<mpsc::UnboundedSender<Value>>,
    },
    Probe,
    /// A probe that timed out; its answer may still settle the era.
    LateProbe,
    Initialize,
}

enum Phase {
    /// No server (between restarts).
    Down,
    /// `server/discover` sent.
    Probing { id: RequestId, version: String },
    /// `initialize` sent.
    Initializing,
    /// Serving.
    Ready(Arc<ServerSession>),
}

/// Re-probes allowed per server process after `initialize` was refused by a
/// modern server (bounds a loop with a server that keeps timing out).
const MAX_REPROBES: u32 = 2;

pub(crate) struct Connection;

pub(crate) struct ConnectionArgs {
    pub(crate) shared: Arc<Shared>,
    pub(crate) transport: Arc<dyn Transport>,
    /// Present for the first Connection of a client: the first server is
    /// spawned in `pre_start` and the outcome sent here, so `Client::start`
    /// reports a missing executable at once instead of retrying.
    pub(crate) first: Option<tokio::sync::oneshot::Sender<Result<(), crate::error::SpawnError>>>,
}

pub(crate) struct ConnectionState {
    shared: Arc<Shared>,
    transport: Arc<dyn Transport>,
    link: Option<Box<dyn Link>>,
    gen: u64,
    phase: Phase,
    pending: HashMap<RequestId, Waiter>,
    /// Calls waiting for a ready server, in arrival order.
    queued: VecDeque<Call>,
    /// Consecutive attempts that did not reach ready.
    failures: u32,
    /// Server-to-client requests being handled, to abort on cancel.
    inbound: HashMap<RequestId, tokio::task::AbortHandle>,
    /// The pending probe or initialize timeout; aborted once answered, so
    /// no timer task outlives its purpose (they hold an actor reference).
    /// `_meta` of modern requests for the ready session.
    meta_cache: Option<MetaCache>,
    /// Probes re-sent after a modern refusal of `initialize`, this link.
    reprobes: u32,
    handshake_timer:
        Option<tokio::task::JoinHandle<Result<(), ractor::MessagingErr<ConnectionMsg>>>>,
    stopping: bool,
}

impl Drop for ConnectionState {
    fn drop(&mut self) {
        if let Some(t) = self.handshake_timer.take() {
            t.abort();
        }
    }
}

impl Connection {
    /// A sink that forwards link events of `gen` to `me`. Stderr lines are
    /// logged and published from the caller (the link's stderr task), so a
    /// stderr flood never competes with responses in the mailbox.
    pub(crate) fn sink(me: ActorRef<ConnectionMsg>, gen: u64, shared: Arc<Shared>) -> EventSink {
        Arc::new(move |event| match event {
            TransportEvent::Stderr { pid, line } => {
                info!(target: "conduit_mcp::stderr", server = %shared.name, pid, "{line}");
                shared.emit(LifecycleEvent::Stderr {
                    name: shared.name.clone(),
                    pid,
                    line,
                });
            }
            event => {
                let _ = me.cast(ConnectionMsg::Transport { gen, event });
            }
        })
    }
}

impl Actor for Connection {
    type Msg = ConnectionMsg;
    type State = ConnectionState;
    type Arguments = ConnectionArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: ConnectionArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut st = ConnectionState {
            shared: args.shared,
            transport: args.transport,
            link: None,
            gen: 0,
            phase: Phase::Down,
            pending: HashMap::new(),
            queued: VecDeque::new(),
            failures: 0,
            inbound: HashMap::new(),
            handshake_timer: None,
            reprobes: 0,
            meta_cache: None,
            stopping: false,
        };
        match args.first {
            Some(report) => {
                st.gen = 1;
                let sink = Connection::sink(myself.clone(), st.gen, st.shared.clone());
                match st.transport.open(sink, myself.get_cell()).await {
                    Ok(link) => {
                        let _ = report.send(Ok(()));
                        st.adopt(&myself, link);
                    }
                    Err(e) => {
                        let msg = e.to_string();
                        warn!(server = %st.shared.name, error = %msg, "could not start server");
                        let _ = report.send(Err(e));
                        return Err(msg.into());
                    }
                }
            }
            None => {
                let _ = myself.cast(ConnectionMsg::Reconnect);
            }
        }
        Ok(st)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        st: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ConnectionMsg::Call(call) => st.call(call),
            ConnectionMsg::Cancel { id, reason } => st.cancel(id, reason),
            ConnectionMsg::Notify { method, params } => {
                if let Phase::Ready(_) = st.phase {
                    st.send_notification(&method, params.as_ref());
                }
            }
            ConnectionMsg::Transport { gen, event } if gen == st.gen => match event {
                TransportEvent::Message(m) => st.inbound(&myself, m),
                // Delivered by the sink directly; never queued here.
                TransportEvent::Stderr { .. } => {}
                TransportEvent::Closed(reason) => st.closed(&myself, reason),
            },
            ConnectionMsg::Transport { .. } => {}
            ConnectionMsg::ProbeTimeout { gen } if gen == st.gen => {
                if let Phase::Probing { id, .. } = &st.phase {
                    let id = id.clone();
                    info!(server = %st.shared.name, timeout = ?st.shared.config.probe_timeout, "no answer to server/discover: legacy era");
                    // Kept pending: a modern server slow to start answers
                    // it before `initialize` (see `late_probe_answered`).
                    st.pending.insert(id.clone(), Waiter::LateProbe);
                    st.send_cancelled(&id, "discovery probe timed out");
                    st.initialize(&myself);
                }
            }
            ConnectionMsg::InitTimeout { gen } if gen == st.gen => {
                if let Phase::Initializing = st.phase {
                    let reason = CloseReason::Handshake(format!(
                        "no answer to initialize within {:?}",
                        st.shared.config.init_timeout
                    ));
                    if let Some(link) = &st.link {
                        link.close(reason);
                    }
                }
            }
            ConnectionMsg::ProbeTimeout { .. } | ConnectionMsg::InitTimeout { .. } => {}
            ConnectionMsg::Reconnect => st.reconnect(&myself).await,
            ConnectionMsg::Respond { gen, id, outcome } => {
                st.inbound.remove(&id);
                if gen == st.gen {
                    let line = match outcome {
                        Ok(v) => encode::result(&Some(id), &v).unwrap_or_else(|e| {
                            encode::error(
                                &None,
                                &ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()),
                            )
                        }),
                        Err(e) => encode::error(&Some(id), &e),
                    };
                    st.send_line(line);
                }
            }
            ConnectionMsg::OwnerGone { gen, why } => {
                if gen == st.gen {
                    st.closed(&myself, CloseReason::OwnerDied(why));
                }
            }
            ConnectionMsg::Shutdown => {
                st.stopping = true;
                st.shared.down.set("the client was stopped");
                st.fail_all(|| Error::Stopped);
                if let Some(link) = st.link.take() {
                    st.shared.emit(LifecycleEvent::Closed {
                        name: st.shared.name.clone(),
                        pid: link.pid(),
                        reason: CloseReason::ClientClosed,
                        exit: None,
                    });
                    link.close(CloseReason::ClientClosed);
                }
                st.shared.set_status(Status::Stopped);
                st.shared.emit(LifecycleEvent::Stopped {
                    name: st.shared.name.clone(),
                });
                myself.stop(Some("client stopped".into()));
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        st: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // A PortOwner normally stops after reporting Closed; if it died
        // without a word (killed, panicked), treat that as a close.
        let Some((cell, why)) = super::supervisor::child_exit(evt) else {
            return Ok(());
        };
        let is_current = st
            .link
            .as_ref()
            .and_then(|l| l.owner())
            .is_some_and(|o| o.get_id() == cell.get_id());
        if is_current {
            // Supervision events overtake ordinary messages: queue behind
            // the Closed event the owner may have sent before it stopped.
            let why = why.unwrap_or_else(|| "killed".into());
            let _ = myself.cast(ConnectionMsg::OwnerGone { gen: st.gen, why });
        }
        Ok(())
    }
}

impl ConnectionState {
    fn name(&self) -> &str {
        &self.shared.name
    }

    fn adopt(&mut self, myself: &ActorRef<ConnectionMsg>, link: Box<dyn Link>) {
        self.reprobes = 0;
        let pid = link.pid();
        if let Some(pid) = pid {
            self.shared.emit(LifecycleEvent::Spawned {
                name: self.shared.name.clone(),
                pid,
            });
        }
        self.shared.add_shutdown(link.shutdown_handle());
        self.link = Some(link);
        self.shared.set_status(Status::Starting);
        match self.shared.config.era {
            EraPreference::Legacy => self.initialize(myself),
            EraPreference::Auto | EraPreference::Modern => {
                self.probe(myself, MODERN_VERSION.to_owned())
            }
        }
        debug!(server = %self.name(), pid, gen = self.gen, "server link adopted");
    }

    fn next_id(&self) -> RequestId {
        self.shared.next_id()
    }

    fn send_line(&mut self, line: Vec<u8>) -> bool {
        match &self.link {
            // On failure the link reports Closed with the reason.
            Some(link) => link.send(line).is_ok(),
            None => false,
        }
    }

    fn send_notification(&mut self, method: &str, params: Option<&Value>) {
        match encode::notification(method, params) {
            Ok(line) => {
                self.send_line(line);
            }
            Err(e) => {
                warn!(server = %self.name(), method, error = %e, "could not encode notification")
            }
        }
    }

    fn send_cancelled(&mut self, id: &RequestId, reason: &str) {
        let params = json!({ "requestId": id, "reason": reason });
        self.send_notification(methods::CANCELLED, Some(&params));
    }

    fn probe(&mut self, myself: &ActorRef<ConnectionMsg>, version: String) {
        let id = self.next_id();
        let params = json!({ "_meta": self.modern_meta(&version) });
        let Ok(line) = encode::request(&id, methods::DISCOVER, Some(&params)) else {
            return;
        };
        self.pending.insert(id.clone(), Waiter::Probe);
        self.phase = Phase::Probing {
            id,
            version: version.clone(),
        };
        debug!(server = %self.name(), version = %version, "probing with server/discover");
        self.send_line(line);
        if self.shared.config.era == EraPreference::Auto {
            let gen = self.gen;
            self.handshake_timer = Some(
                myself.send_after(self.shared.config.probe_timeout, move || {
                    ConnectionMsg::ProbeTimeout { gen }
                }),
            );
        } else {
            let gen = self.gen;
            self.handshake_timer =
                Some(myself.send_after(self.shared.config.init_timeout, move || {
                    ConnectionMsg::InitTimeout { gen }
                }));
        }
    }

    fn initialize(&mut self, myself: &ActorRef<ConnectionMsg>) {
        let id = self.next_id();
        let cfg = &self.shared.config;
        let params = json!({
            "protocolVersion": LATEST_LEGACY_VERSION,
            "capabilities": cfg.capabilities,
            "clientInfo": cfg.client_info,
        });
        let Ok(line) = encode::request(&id, methods::INITIALIZE, Some(&params)) else {
            return;
        };
        self.pending.insert(id.clone(), Waiter::Initialize);
        self.phase = Phase::Initializing;
        let init_timeout = cfg.init_timeout;
        self.send_line(line);
        let gen = self.gen;
        self.handshake_timer =
            Some(myself.send_after(init_timeout, move || ConnectionMsg::InitTimeout { gen }));
    }

    fn modern_meta(&self, version: &str) -> Value {
        let cfg = &self.shared.config;
        json!({
            meta::PROTOCOL_VERSION: version,
            meta::CLIENT_CAPABILITIES: cfg.capabilities,
            meta::CLIENT_INFO: cfg.client_info,
        })
    }

    fn ready(&mut self, session: ServerSession) {
        self.meta_cache = match session.era {
            Era::Modern => match self.modern_meta(&session.protocol_version) {
                Value::Object(map) => serde_json::value::to_raw_value(&map)
                    .ok()
                    .map(|raw| MetaCache { map, raw }),
                _ => None,
            },
            Era::Legacy => None,
        };
        let session = Arc::new(session);
        info!(
            server = %self.name(), pid = session.pid, era = %session.era,
            version = %session.protocol_version, "server ready"
        );
        self.failures = 0;
        if let Some(t) = self.handshake_timer.take() {
            t.abort();
        }
        self.shared.emit(LifecycleEvent::Ready {
            name: self.shared.name.clone(),
            session: session.clone(),
        });
        self.phase = Phase::Ready(session.clone());
        self.shared.set_status(Status::Ready(session));
        while let Some(call) = self.queued.pop_front() {
            self.send_call(call);
        }
    }

    fn call(&mut self, call: Call) {
        if !call.reply.is_waiting() {
            return;
        }
        match self.phase {
            Phase::Ready(_) => self.send_call(call),
            _ => self.queued.push_back(call),
        }
    }

    fn send_call(&mut self, call: Call) {
        let Phase::Ready(session) = &self.phase else {
            self.queued.push_back(call);
            return;
        };
        let Call {
            id,
            method,
            mut params,
            reply,
            progress,
        } = call;
        if !reply.is_waiting() {
            return;
        }
        let line = if session.era == Era::Modern {
            match &self.meta_cache {
                // Fast path: splice the session's pre-serialised `_meta` in.
                Some(cache) if progress.is_none() && !has_meta(&params) => {
                    let with = WithMeta {
                        params: params.as_ref().and_then(Value::as_object),
                        meta: &cache.raw,
                    };
                    encode::request(&id, &method, Some(&with))
                }
                cache => {
                    let mut extra = cache.as_ref().map(|c| c.map.clone()).unwrap_or_default();
                    if progress.is_some() {
                        extra.insert("progressToken".into(), id_value(&id));
                    }
                    match merge_meta(&mut params, extra) {
                        Ok(()) => encode::request(&id, &method, params.as_ref()),
                        Err(problem) => {
                            reply.answer(Err(Error::Codec { method, problem }));
                            return;
                        }
                    }
                }
            }
        } else {
            if progress.is_some() {
                let mut extra = Map::new();
                extra.insert("progressToken".into(), id_value(&id));
                if let Err(problem) = merge_meta(&mut params, extra) {
                    reply.answer(Err(Error::Codec { method, problem }));
                    return;
                }
            }
            encode::request(&id, &method, params.as_ref())
        };
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                reply.answer(Err(Error::Codec {
                    method,
                    problem: e.to_string(),
                }));
                return;
            }
        };
        self.pending.insert(
            id,
            Waiter::Caller {
                method,
                reply,
                progress,
            },
        );
        // A failed send closes the link, which fails this call with the reason.
        self.send_line(line);
    }

    fn cancel(&mut self, id: RequestId, reason: String) {
        if let Some(pos) = self.queued.iter().position(|c| c.id == id) {
            self.queued.remove(pos);
            return;
        }
        if let Some(Waiter::Caller { method, .. }) = self.pending.get(&id) {
            debug!(server = %self.name(), %id, method = %method, reason = %reason, "cancelling request");
            self.pending.remove(&id);
            self.send_cancelled(&id, &reason);
        }
    }

    fn inbound(&mut self, myself: &ActorRef<ConnectionMsg>, msg: Message) {
        match msg {
            Message::Response(r) => {
                let Some(id) = r.id else {
                    debug!(server = %self.name(), "server sent an error without an id; ignored");
                    return;
                };
                match self.pending.remove(&id) {
                    Some(Waiter::Caller { reply, .. }) => reply.answer(match r.outcome {
                        Outcome::Result(raw) => Ok(raw),
                        Outcome::Error(e) => Err(Error::Server(e)),
                    }),
                    Some(Waiter::Probe) => self.probe_answered(myself, r.outcome),
                    Some(Waiter::LateProbe) => self.late_probe_answered(r.outcome),
                    Some(Waiter::Initialize) => self.initialize_answered(myself, r.outcome),
                    None => {
                        debug!(server = %self.name(), %id, "response to an unknown or abandoned request; ignored")
                    }
                }
            }
            Message::Notification(n) => self.notification(n),
            Message::Request(req) => self.server_request(myself, req),
        }
    }

    fn probe_answered(&mut self, myself: &ActorRef<ConnectionMsg>, outcome: Outcome) {
        let Phase::Probing { version, .. } = &self.phase else {
            return;
        };
        let requested = version.clone();
        let pid = self.link.as_ref().and_then(|l| l.pid());
        let pinned = self.shared.config.era == EraPreference::Modern;
        match discovery::judge(&outcome, &requested) {
            DiscoverVerdict::Modern(mut session) => {
                session.pid = pid;
                self.ready(session);
            }
            DiscoverVerdict::Retry(v) => {
                info!(server = %self.name(), version = %v, "server asked for another modern version");
                self.probe(myself, v)
            }
            DiscoverVerdict::Incompatible(why) => self.handshake_failed(why),
            DiscoverVerdict::Legacy(why) if pinned => {
                self.handshake_failed(format!("era pinned to modern, but {why}"))
            }
            DiscoverVerdict::Legacy(why) => {
                info!(server = %self.name(), reason = %why, "legacy era");
                self.initialize(myself)
            }
        }
    }

    /// The answer to a probe that timed out. Servers answer in order, so a
    /// DiscoverResult that arrives while `initialize` is still unanswered
    /// means a modern server that was merely slow to start (a cold `npx` or
    /// Python start): it settles the era as modern and the `initialize`
    /// answer is then ignored. Once the legacy era is established, or if
    /// the late answer is an error, it is ignored.
    fn late_probe_answered(&mut self, outcome: Outcome) {
        if !matches!(self.phase, Phase::Initializing) {
            debug!(server = %self.name(), "late server/discover answer ignored: era already settled");
            return;
        }
        if let DiscoverVerdict::Modern(mut session) = discovery::judge(&outcome, MODERN_VERSION) {
            info!(server = %self.name(), "late server/discover answer before initialize's: modern era");
            session.pid = self.link.as_ref().and_then(|l| l.pid());
            self.pending.retain(|_, w| !matches!(w, Waiter::Initialize));
            self.ready(session);
        }
    }

    fn initialize_answered(&mut self, myself: &ActorRef<ConnectionMsg>, outcome: Outcome) {
        if !matches!(self.phase, Phase::Initializing) {
            return;
        }
        // A modern server that refuses `initialize` with -32022 and lists
        // modern versions is modern: probe again (now warm), never give up.
        if let Outcome::Error(e) = &outcome {
            if let DiscoverVerdict::Retry(v) = discovery::judge(&outcome, "") {
                if self.reprobes < MAX_REPROBES {
                    self.reprobes += 1;
                    info!(server = %self.name(), error = %e, version = %v, "initialize refused by a modern server: probing again");
                    self.probe(myself, v);
                    return;
                }
            }
        }
        match discovery::judge_initialize(&outcome) {
            Ok(mut session) => {
                session.pid = self.link.as_ref().and_then(|l| l.pid());
                self.send_notification(methods::INITIALIZED, None::<&Value>);
                self.ready(session);
            }
            Err(why) => self.handshake_failed(why),
        }
    }

    /// A handshake failure is final: restarting would meet the same server.
    fn handshake_failed(&mut self, why: String) {
        warn!(server = %self.name(), reason = %why, "handshake failed; giving up");
        self.failures = self.shared.config.max_reconnects;
        if let Some(link) = &self.link {
            link.close(CloseReason::Handshake(why));
        }
    }

    fn notification(&mut self, n: Notification) {
        match n.method.as_str() {
            methods::PROGRESS => {
                let token = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("progressToken"))
                    .and_then(|t| serde_json::from_value::<RequestId>(t.clone()).ok());
                if let Some(Waiter::Caller {
                    progress: Some(tx), ..
                }) = token.as_ref().and_then(|t| self.pending.get(t))
                {
                    let _ = tx.send(n.params.unwrap_or(Value::Null));
                    return;
                }
                self.shared.publish(n);
            }
            methods::CANCELLED => {
                let id = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(|t| serde_json::from_value::<RequestId>(t.clone()).ok());
                if let Some(h) = id.and_then(|id| self.inbound.remove(&id)) {
                    h.abort();
                }
            }
            _ => self.shared.publish(n),
        }
    }

    fn server_request(&mut self, myself: &ActorRef<ConnectionMsg>, req: crate::jsonrpc::Request) {
        let id = req.id.clone();
        let era = match &self.phase {
            Phase::Ready(s) => Some(s.era),
            _ => None,
        };
        match (&self.shared.handler, req.method.as_str()) {
            (Some(handler), _) if era != Some(Era::Modern) => {
                let handler = handler.clone();
                let me = myself.clone();
                let gen = self.gen;
                let rid = id.clone();
                let task = tokio::spawn(async move {
                    let outcome = handler
                        .handle(InboundRequest {
                            method: req.method,
                            params: req.params,
                        })
                        .await;
                    let _ = me.cast(ConnectionMsg::Respond {
                        gen,
                        id: rid,
                        outcome,
                    });
                });
                self.inbound.insert(id, task.abort_handle());
            }
            (None, methods::PING) => {
                if let Ok(line) = encode::result(&Some(id), &json!({})) {
                    self.send_line(line);
                }
            }
            (_, method) => {
                let e = ErrorObject::new(
                    codes::METHOD_NOT_FOUND,
                    format!("method not found: {method}"),
                );
                let line = encode::error(&Some(id), &e);
                self.send_line(line);
            }
        }
    }

    fn closed(&mut self, myself: &ActorRef<ConnectionMsg>, reason: CloseReason) {
        let Some(link) = self.link.take() else {
            return;
        };
        if let Some(t) = self.handshake_timer.take() {
            t.abort();
        }
        self.shared.emit(LifecycleEvent::Closed {
            name: self.shared.name.clone(),
            pid: link.pid(),
            reason: reason.clone(),
            exit: reason.exit_status(),
        });
        let was_ready = matches!(self.phase, Phase::Ready(_));
        self.phase = Phase::Down;
        for (_, h) in self.inbound.drain() {
            h.abort();
        }
        // In-flight calls fail at once with the reason; queued ones wait for
        // the next server.
        for (_, w) in self.pending.drain() {
            if let Waiter::Caller { reply, .. } = w {
                reply.answer(Err(Error::Closed(reason.clone())));
            }
        }
        if self.stopping {
            return;
        }
        if !was_ready {
            self.failures += 1;
        }
        let attempt = self.failures.max(1);
        if self.failures > self.shared.config.max_reconnects && !was_ready
            || matches!(reason, CloseReason::Handshake(_))
        {
            self.give_up(myself, reason.to_string());
            return;
        }
        let delay = self.shared.config.backoff.delay(attempt);
        info!(server = %self.name(), reason = %reason, attempt, delay_ms = delay.as_millis() as u64, "restarting server");
        self.restarting(myself, attempt, delay, reason.to_string());
    }

    async fn reconnect(&mut self, myself: &ActorRef<ConnectionMsg>) {
        if self.stopping || self.link.is_some() {
            return;
        }
        self.gen += 1;
        let sink = Connection::sink(myself.clone(), self.gen, self.shared.clone());
        match self.transport.open(sink, myself.get_cell()).await {
            Ok(link) => self.adopt(myself, link),
            Err(e) => {
                self.failures += 1;
                warn!(server = %self.name(), error = %e, attempt = self.failures, "could not start server");
                if self.failures > self.shared.config.max_reconnects {
                    self.give_up(myself, e.to_string());
                } else {
                    let delay = self.shared.config.backoff.delay(self.failures);
                    self.restarting(myself, self.failures, delay, e.to_string());
                }
            }
        }
    }

    fn restarting(
        &mut self,
        myself: &ActorRef<ConnectionMsg>,
        attempt: u32,
        delay: std::time::Duration,
        reason: String,
    ) {
        self.shared.emit(LifecycleEvent::Restarting {
            name: self.shared.name.clone(),
            attempt,
            delay,
        });
        self.shared
            .set_status(Status::Restarting { attempt, reason });
        myself.send_after(delay, || ConnectionMsg::Reconnect);
    }

    fn give_up(&mut self, myself: &ActorRef<ConnectionMsg>, last: String) {
        let attempts = self.failures;
        warn!(server = %self.name(), attempts, last = %last, "giving up on the server");
        let err = self.shared.give_up(attempts, &last);
        self.fail_all(|| err.clone());
        myself.stop(Some(err.to_string()));
    }

    fn fail_all(&mut self, err: impl Fn() -> Error) {
        for (_, w) in self.pending.drain() {
            if let Waiter::Caller { reply, .. } = w {
                reply.answer(Err(err()));
            }
        }
        for call in self.queued.drain(..) {
            call.reply.answer(Err(err()));
        }
    }
}

/// Params serialised with a pre-serialised `_meta` (modern fast path).
#[derive(serde::Serialize)]
struct WithMeta<'a> {
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    params: Option<&'a Map<String, Value>>,
    #[serde(rename = "_meta")]
    meta: &'a serde_json::value::RawValue,
}

/// The session's `_meta` for modern requests, built once when ready.
struct MetaCache {
    map: Map<String, Value>,
    raw: Box<serde_json::value::RawValue>,
}

fn has_meta(params: &Option<Value>) -> bool {
    match params {
        None => false,
        Some(Value::Object(m)) => m.contains_key("_meta"),
        // Not an object: the merge path reports the error.
        Some(_) => true,
    }
}

fn id_value(id: &RequestId) -> Value {
    match id {
        RequestId::Number(n) => Value::from(*n),
        RequestId::String(s) => Value::from(s.clone()),
    }
}

/// Adds `extra` to `params._meta`, creating both if needed.
fn merge_meta(params: &mut Option<Value>, extra: Map<String, Value>) -> Result<(), String> {
    let p = params.get_or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(obj) = p else {
        return Err("params must be a JSON object to carry _meta".into());
    };
    let m = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(m) = m else {
        return Err("params._meta must be a JSON object".into());
    };
    for (k, v) in extra {
        m.entry(k).or_insert(v);
    }
    Ok(())
}
