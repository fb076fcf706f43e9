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
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::events::LifecycleEvent;
use super::pending::ReplySlot;
use super::session::{ServerSession, Status};
use super::shared::Shared;
use crate::client::config::EraPreference;
use crate::error::{CloseReason, Error};
use crate::jsonrpc::{codes, encode, ErrorObject, Message, RequestId};
use crate::protocol::methods;
use crate::protocol::MODERN_VERSION;
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

/// Who waits for the answer of a request id.
pub(crate) enum Waiter {
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

mod direct;
mod handshake;
mod inbound;
mod outbound;
mod table;

pub(crate) use direct::Direct;
pub(crate) use table::Pending;

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
    link: Option<Arc<dyn Link>>,
    gen: u64,
    phase: Phase,
    pending: Pending,
    /// Calls waiting for a ready server, in arrival order.
    queued: VecDeque<Call>,
    /// Consecutive attempts that did not reach ready.
    failures: u32,
    /// Server-to-client requests being handled, to abort on cancel.
    inbound: HashMap<RequestId, tokio::task::AbortHandle>,
    /// The pending probe or initialize timeout; aborted once answered, so
    /// no timer task outlives its purpose (they hold an actor reference).
    /// `_meta` of modern requests for the ready session.
    meta_cache: Option<Arc<outbound::MetaCache>>,
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
        // Killed or stopped: no caller may register with a dead Connection.
        drop(self.take_pending());
    }
}

impl Connection {
    /// A sink that forwards link events of `gen` to `me`. Stderr lines are
    /// logged and published from the caller (the link's stderr task), so a
    /// stderr flood never competes with responses in the mailbox.
    pub(crate) fn sink(
        me: ActorRef<ConnectionMsg>,
        gen: u64,
        shared: Arc<Shared>,
        pending: Pending,
    ) -> EventSink {
        Arc::new(move |event| match event {
            TransportEvent::Message(Message::Response(r)) => {
                if let Some(r) = pending.answer(r) {
                    let _ = me.cast(ConnectionMsg::Transport {
                        gen,
                        event: TransportEvent::Message(Message::Response(r)),
                    });
                }
            }
            TransportEvent::Message(Message::Notification(n)) if n.method == methods::PROGRESS => {
                if let Some(n) = pending.progress(n) {
                    let _ = me.cast(ConnectionMsg::Transport {
                        gen,
                        event: TransportEvent::Message(Message::Notification(n)),
                    });
                }
            }
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
            pending: Pending::default(),
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
                let sink = Connection::sink(
                    myself.clone(),
                    st.gen,
                    st.shared.clone(),
                    st.pending.clone(),
                );
                match st.transport.open(sink, myself.get_cell()).await {
                    Ok(link) => {
                        let _ = report.send(Ok(()));
                        st.adopt(&myself, Arc::from(link));
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

    fn adopt(&mut self, myself: &ActorRef<ConnectionMsg>, link: Arc<dyn Link>) {
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
        for w in self.take_pending() {
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
        let sink = Connection::sink(
            myself.clone(),
            self.gen,
            self.shared.clone(),
            self.pending.clone(),
        );
        match self.transport.open(sink, myself.get_cell()).await {
            Ok(link) => self.adopt(myself, Arc::from(link)),
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

    /// Withdraws the direct path, then takes every waiter.
    fn take_pending(&self) -> Vec<Waiter> {
        self.shared.set_direct(None);
        self.pending.take_all()
    }

    fn fail_all(&mut self, err: impl Fn() -> Error) {
        for w in self.take_pending() {
            if let Waiter::Caller { reply, .. } = w {
                reply.answer(Err(err()));
            }
        }
        for call in self.queued.drain(..) {
            call.reply.answer(Err(err()));
        }
    }
}
