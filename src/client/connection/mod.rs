//! The Connection actor: era discovery, the server's requests, and
//! restarts of the server with backoff.
//!
//! It lives across server restarts; each server process is one [`Link`] with
//! a generation number, and events of an old generation are ignored.
//! Callers do not go through it: while a server is ready they send on the
//! [`Direct`](crate::client::direct::Direct) path it publishes, and otherwise they wait (within their own
//! timeouts) for it to publish the next one. What the server sends reaches
//! this mailbox only when it is for the Connection (discovery answers,
//! cancellations, the server's requests), and the reader waits while more
//! than [`MAILBOX_BYTES`] of such messages are unprocessed: a server cannot
//! make it hold more.

use std::collections::HashMap;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::{debug, info, warn};

use super::events::LifecycleEvent;
use super::restarts::Verdict;
use super::shared::ClientShared;
use super::status::{ServerSession, Status};
use super::waiters::{self, Waiter};
use crate::client::EraPreference;
use crate::error::{CloseReason, Error, SpawnError};
use crate::jsonrpc::{Message, RequestId};
use crate::protocol::methods;
use crate::protocol::STATELESS_VERSION;
use crate::transport::{Delivery, EventSink, Link, Transport, TransportEvent};

/// Bytes (as held in memory once parsed) of server messages queued for the
/// Connection before the reader waits.
pub(crate) const MAILBOX_BYTES: usize = 16 * 1024 * 1024;

/// Messages of the Connection.
#[derive(Debug)]
pub(crate) enum ConnectionMsg {
    /// A message of link `gen` for the Connection; `_charge` holds its
    /// room in the mailbox budget until it is handled.
    Inbound {
        gen: u64,
        message: Message,
        _charge: OwnedSemaphorePermit,
    },
    /// Link `gen` closed.
    Closed { gen: u64, reason: CloseReason },
    /// The discovery probe of `gen` timed out.
    ProbeTimeout { gen: u64 },
    /// The `initialize` of `gen` timed out.
    InitTimeout { gen: u64 },
    /// Time to start the next server.
    Reconnect,
    /// The handler task `serial` for server request `id` has answered.
    InboundDone { id: RequestId, serial: u64 },
    /// The owner of link `gen` terminated (queued behind its Closed event).
    OwnerGone { gen: u64, why: String },
    /// Link `gen` says the probe or `initialize` `id` will get no answer.
    HandshakeUnanswered {
        gen: u64,
        id: RequestId,
        problem: String,
    },
}

local_messages!(ConnectionMsg);

enum LinkPhase {
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
/// 2026-07-28 server (bounds a loop with a server that keeps timing out).
const MAX_REPROBES: u32 = 2;

mod handshake;
mod inbound;
mod outbound;

pub(crate) struct Connection;

/// The child and reason of a termination or failure event; `None` for the
/// other supervision events.
pub(crate) fn child_exit(evt: SupervisionEvent) -> Option<(ractor::ActorCell, Option<String>)> {
    match evt {
        SupervisionEvent::ActorTerminated(cell, _, why) => Some((cell, why)),
        SupervisionEvent::ActorFailed(cell, e) => Some((cell, Some(e.to_string()))),
        _ => None,
    }
}

pub(crate) struct ConnectionArgs {
    shared: Arc<ClientShared>,
    transport: Arc<dyn Transport>,
    /// Present for the first Connection of a client: the first server is
    /// spawned in `pre_start` and the outcome sent here, so `Client::start`
    /// reports a missing executable at once instead of retrying.
    first: Option<tokio::sync::oneshot::Sender<Result<(), SpawnError>>>,
}

impl ConnectionArgs {
    #[inline]
    pub(crate) fn new(
        shared: Arc<ClientShared>,
        transport: Arc<dyn Transport>,
        first: Option<tokio::sync::oneshot::Sender<Result<(), SpawnError>>>,
    ) -> Self {
        Self {
            shared,
            transport,
            first,
        }
    }
}

pub(crate) struct ConnectionState {
    shared: Arc<ClientShared>,
    transport: Arc<dyn Transport>,
    /// Room left in the mailbox for server messages (see [`MAILBOX_BYTES`]).
    budget: Arc<Semaphore>,
    gen: u64,
    phase: LinkPhase,
    /// The handshake failed for good: give up once the link has closed.
    give_up_after_close: Option<String>,
    /// Server requests being handled: their handler task, to abort on
    /// cancel, tagged with a serial so a late "done" cannot remove a newer
    /// request that reused the id.
    inbound: HashMap<RequestId, (u64, tokio::task::AbortHandle)>,
    inbound_serial: u64,
    /// `_meta` of 2026-07-28 requests for the ready session.
    meta_cache: Option<Arc<super::direct::MetaCache>>,
    /// Probes re-sent after a 2026-07-28 refusal of `initialize`, this link.
    reprobes: u32,
    /// The pending probe or initialize timeout; aborted once answered, so
    /// no timer task outlives its purpose (they hold an actor reference).
    handshake_timer:
        Option<tokio::task::JoinHandle<Result<(), ractor::MessagingErr<ConnectionMsg>>>>,
}

impl Drop for ConnectionState {
    fn drop(&mut self) {
        if let Some(t) = self.handshake_timer.take() {
            t.abort();
        }
        for (_, (_, h)) in self.inbound.drain() {
            h.abort();
        }
        // Stopped, killed or crashed: no caller may wait on a Connection
        // that is gone, and its server goes (the link's owner dies with it,
        // linked; closing starts the shutdown at once anyway).
        let down = self.shared.down().clone();
        self.shared
            .fail_pending(|| Error::ConnectionDown(down.get()));
        if let Some(link) = self.shared.take_link(self.gen) {
            let reason = CloseReason::OwnerDied("the connection actor stopped".into());
            self.shared.emit(LifecycleEvent::Closed {
                name: self.shared.name().to_owned(),
                pid: link.pid(),
                reason: reason.clone(),
                exit: None,
            });
            link.close(reason);
        }
    }
}

impl Connection {
    /// A sink for the events of link `gen`. Responses and progress go to
    /// their callers, notifications to subscribers, stderr lines to the
    /// log and the events, all from the link's own tasks; only what the
    /// Connection must handle is cast to it, within the mailbox budget.
    pub(crate) fn sink(
        me: ActorRef<ConnectionMsg>,
        gen: u64,
        shared: Arc<ClientShared>,
        budget: Arc<Semaphore>,
    ) -> EventSink {
        Arc::new(move |event| match event {
            TransportEvent::Spawned { pid, shutdown } => {
                shared.register_process(shutdown);
                shared.emit(LifecycleEvent::Spawned {
                    name: shared.name().to_owned(),
                    pid,
                });
                Delivery::Done
            }
            TransportEvent::Teardown { done } => {
                shared.register_teardown(done);
                Delivery::Done
            }
            TransportEvent::Message { message } => match message {
                Message::Response(r) => match shared.pending().answer(r) {
                    waiters::Answer::Answered => Delivery::Done,
                    waiters::Answer::Connection(r) => {
                        to_mailbox(&me, gen, &budget, Message::Response(r))
                    }
                    waiters::Answer::Unknown => {
                        debug!(server = %shared.name(), "response to an unknown or abandoned request; ignored");
                        Delivery::Done
                    }
                },
                Message::Notification(n) if n.method == methods::PROGRESS => {
                    if let Some(n) = shared.pending().progress(n) {
                        shared.publish(n);
                    }
                    Delivery::Done
                }
                Message::Notification(n) if n.method != methods::CANCELLED => {
                    shared.publish(n);
                    Delivery::Done
                }
                m => to_mailbox(&me, gen, &budget, m),
            },
            TransportEvent::Stderr { pid, line } => {
                info!(target: "conduit_mcp::stderr", server = %shared.name(), pid, "{line}");
                shared.emit(LifecycleEvent::Stderr {
                    name: shared.name().to_owned(),
                    pid,
                    line,
                });
                Delivery::Done
            }
            TransportEvent::Unanswered { id, problem } => {
                if let Some(Waiter::Caller { reply, .. }) = shared.pending().remove_if_caller(&id) {
                    debug!(server = %shared.name(), %id, problem = %problem, "request will get no answer");
                    reply.answer(Err(Error::Unanswered { problem }));
                } else {
                    // The probe or `initialize` (an HTTP answer that is
                    // not JSON-RPC): settled now, not at its timeout.
                    let _ = me.cast(ConnectionMsg::HandshakeUnanswered { gen, id, problem });
                }
                Delivery::Done
            }
            TransportEvent::Closed(reason) => {
                // Once per link: outside the budget.
                let _ = me.cast(ConnectionMsg::Closed { gen, reason });
                Delivery::Done
            }
        })
    }
}

/// Casts `message` to the Connection once the budget has room for it.
fn to_mailbox(
    me: &ActorRef<ConnectionMsg>,
    gen: u64,
    budget: &Arc<Semaphore>,
    message: Message,
) -> Delivery {
    // One message larger than the whole budget takes all of it.
    let cost = u32::try_from(message.estimated_bytes().min(MAILBOX_BYTES)).unwrap_or(u32::MAX);
    let cast = {
        let me = me.clone();
        move |message, charge| {
            let _ = me.cast(ConnectionMsg::Inbound {
                gen,
                message,
                _charge: charge,
            });
        }
    };
    match budget.clone().try_acquire_many_owned(cost) {
        Ok(charge) => {
            cast(message, charge);
            Delivery::Done
        }
        Err(_) => {
            let budget = budget.clone();
            Delivery::Wait(Box::pin(async move {
                if let Ok(charge) = budget.acquire_many_owned(cost).await {
                    cast(message, charge);
                }
            }))
        }
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
            budget: Arc::new(Semaphore::new(MAILBOX_BYTES)),
            gen: 0,
            phase: LinkPhase::Down,
            give_up_after_close: None,
            inbound: HashMap::new(),
            inbound_serial: 0,
            handshake_timer: None,
            reprobes: 0,
            meta_cache: None,
        };
        match args.first {
            Some(report) => match st.open_link(&myself).await {
                Ok(()) => {
                    let _ = report.send(Ok(()));
                }
                Err(e) => {
                    let msg = e.to_string();
                    warn!(server = %st.shared.name(), error = %msg, "could not start server");
                    let _ = report.send(Err(e));
                    return Err(msg.into());
                }
            },
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
            ConnectionMsg::Inbound { gen, message, .. } if gen == st.gen => {
                st.inbound(&myself, message)
            }
            ConnectionMsg::Inbound { .. } => {}
            ConnectionMsg::Closed { gen, reason } if gen == st.gen => st.closed(&myself, reason),
            ConnectionMsg::Closed { .. } => {}
            ConnectionMsg::ProbeTimeout { gen } if gen == st.gen => st.probe_timed_out(&myself),
            ConnectionMsg::InitTimeout { gen } if gen == st.gen => {
                if let LinkPhase::Initializing = st.phase {
                    let reason = CloseReason::Handshake(format!(
                        "no answer to initialize within {:?}",
                        st.shared.config().get_init_timeout()
                    ));
                    if let Some(link) = st.shared.link() {
                        link.close(reason);
                    }
                }
            }
            ConnectionMsg::HandshakeUnanswered { gen, id, problem } if gen == st.gen => {
                st.handshake_unanswered(&myself, &id, problem)
            }
            ConnectionMsg::ProbeTimeout { .. }
            | ConnectionMsg::InitTimeout { .. }
            | ConnectionMsg::HandshakeUnanswered { .. } => {}
            ConnectionMsg::Reconnect => st.reconnect(&myself).await,
            ConnectionMsg::InboundDone { id, serial } => {
                if st.inbound.get(&id).is_some_and(|(s, _)| *s == serial) {
                    st.inbound.remove(&id);
                }
            }
            ConnectionMsg::OwnerGone { gen, why } => {
                if gen == st.gen {
                    st.closed(&myself, CloseReason::OwnerDied(why));
                }
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
        let Some((cell, why)) = child_exit(evt) else {
            return Ok(());
        };
        let is_current = st
            .shared
            .link()
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
        self.shared.name()
    }

    /// Spawns the next server process and adopts its link. Does nothing
    /// once the client has ended.
    async fn open_link(&mut self, myself: &ActorRef<ConnectionMsg>) -> Result<(), SpawnError> {
        let Some(ticket) = self.shared.begin_spawn() else {
            return Ok(());
        };
        self.gen += 1;
        let sink = Connection::sink(
            myself.clone(),
            self.gen,
            self.shared.clone(),
            self.budget.clone(),
        );
        let link = self.transport.open(sink, myself.get_cell()).await?;
        drop(ticket);
        self.adopt(myself, link);
        Ok(())
    }

    fn adopt(&mut self, myself: &ActorRef<ConnectionMsg>, link: Arc<dyn Link>) {
        self.reprobes = 0;
        let pid = link.pid();
        if let Err(link) = self.shared.set_link(self.gen, link) {
            // Stopped while spawning: this process goes at once.
            link.close(CloseReason::ClientClosed);
            return;
        }
        self.shared.set_status(Status::Starting);
        match self.shared.config().get_era() {
            EraPreference::Stateful => self.initialize(myself),
            EraPreference::Auto | EraPreference::Stateless => {
                self.probe(myself, STATELESS_VERSION.to_owned())
            }
        }
        debug!(server = %self.name(), pid, gen = self.gen, "server link adopted");
    }

    fn next_id(&self) -> RequestId {
        self.shared.next_id()
    }

    fn closed(&mut self, myself: &ActorRef<ConnectionMsg>, reason: CloseReason) {
        let Some(link) = self.shared.take_link(self.gen) else {
            return;
        };
        if let Some(t) = self.handshake_timer.take() {
            t.abort();
        }
        self.phase = LinkPhase::Down;
        for (_, (_, h)) in self.inbound.drain() {
            h.abort();
        }
        // Whatever phase it died in (item 12 of issue 20: a count reset at
        // ready was never reached by a server dying after its handshake).
        let verdict = self.shared.count_death();
        let attempt = match verdict {
            Verdict::Restart { attempt } => attempt,
            Verdict::GiveUp { attempts } => attempts,
        };
        // The status leaves Ready before the close can be seen (a caller
        // failed by it, or a subscriber of the event, finds it restarting).
        self.shared.set_status(Status::Restarting {
            attempt,
            reason: reason.to_string(),
        });
        // In-flight calls fail at once with the reason, before anyone can
        // see the Closed event and act on it; calls not yet sent wait for
        // the next server.
        self.shared.link_closed(
            || Error::Closed(reason.clone()),
            LifecycleEvent::Closed {
                name: self.shared.name().to_owned(),
                pid: link.pid(),
                reason: reason.clone(),
                exit: reason.exit_status(),
            },
        );
        if self.shared.is_final() {
            return;
        }
        if let Some(why) = self.give_up_after_close.take() {
            self.give_up(myself, attempt, why);
            return;
        }
        if let Verdict::GiveUp { .. } = verdict {
            self.give_up(myself, attempt, reason.to_string());
            return;
        }
        let delay = self.shared.config().get_backoff().delay(attempt);
        info!(server = %self.name(), reason = %reason, attempt, delay_ms = delay.as_millis() as u64, "restarting server");
        // The status says so already (set above, before the close).
        self.restarting(myself, attempt, delay, None);
    }

    async fn reconnect(&mut self, myself: &ActorRef<ConnectionMsg>) {
        if self.shared.is_final() || self.shared.link().is_some() {
            return;
        }
        if let Err(e) = self.open_link(myself).await {
            warn!(server = %self.name(), error = %e, "could not start server");
            match self.shared.count_death() {
                Verdict::GiveUp { attempts } => self.give_up(myself, attempts, e.to_string()),
                Verdict::Restart { attempt } => {
                    let delay = self.shared.config().get_backoff().delay(attempt);
                    self.restarting(myself, attempt, delay, Some(e.to_string()));
                }
            }
        }
    }

    /// Announces the restart and schedules it; sets the status when given
    /// its reason (`None`: the status says so already).
    fn restarting(
        &mut self,
        myself: &ActorRef<ConnectionMsg>,
        attempt: u32,
        delay: std::time::Duration,
        reason: Option<String>,
    ) {
        self.shared.emit(LifecycleEvent::Restarting {
            name: self.shared.name().to_owned(),
            attempt,
            delay,
        });
        if let Some(reason) = reason {
            self.shared
                .set_status(Status::Restarting { attempt, reason });
        }
        myself.send_after(delay, || ConnectionMsg::Reconnect);
    }

    /// Gives up after `attempts` deaths within the restart period.
    fn give_up(&mut self, myself: &ActorRef<ConnectionMsg>, attempts: u32, last: String) {
        warn!(server = %self.name(), attempts, last = %last, "giving up on the server");
        let err = self.shared.give_up(attempts, &last);
        myself.stop(Some(err.to_string()));
    }
}
