//! State shared by the user's handles and the actors of one client.
//!
//! What must hold whatever state the actor tree is in lives here, not in an
//! actor: the status (a stop is final the moment it is asked for, see
//! [`ClientShared::stop_now`]), the pending calls, the direct request path, the
//! current link (so a stop can close it without any mailbox), the shutdown
//! handle of every process started, and the event and notification
//! subscribers.

use crate::sync::lock;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use super::client_config::ClientConfig;
use super::direct::Direct;
use super::events::LifecycleEvent;
use super::notifications::{Fanout, Notifications};
use super::reply_slot::DownReason;
use super::responder::ClientHandler;
use super::restarts::{RestartIntensity, Verdict};
use super::status::Status;
use super::waiters::{fail_waiters, Pending};
use crate::child::{ShutdownHandle, ShutdownReport};
use crate::error::{CloseReason, Error};
use crate::jsonrpc::{Notification, RequestId};
use crate::transport::Link;

/// Reports of finished shutdowns kept for [`ClientShutdown::wait`](crate::client::ClientShutdown::wait).
pub(crate) const MAX_REPORTS: usize = 256;

/// The link of the running server process.
pub(crate) struct CurrentLink {
    gen: u64,
    link: Arc<dyn Link>,
}

/// Event subscribers, and whether a final event was sent.
#[derive(Default)]
struct Events {
    subscribers: Vec<mpsc::UnboundedSender<LifecycleEvent>>,
    ended: bool,
}

/// Every process the client started.
#[derive(Default)]
struct Processes {
    /// Shutdowns not yet known to have ended.
    running: Vec<ShutdownHandle>,
    /// Reports of ended shutdowns, oldest first, at most [`MAX_REPORTS`].
    ended: VecDeque<ShutdownReport>,
}

pub(crate) struct ClientShared {
    name: String,
    config: Arc<ClientConfig>,
    handler: Option<Arc<dyn ClientHandler>>,
    down: DownReason,
    /// Calls waiting for their answer, for the life of the client.
    pending: Pending,
    notifications: Fanout,
    events: Mutex<Events>,
    status: watch::Sender<Status>,
    /// The error calls get once the client gave up.
    gave_up: Mutex<Option<Error>>,
    /// The ready link's direct request path, if a server is ready.
    direct: watch::Sender<Option<Arc<Direct>>>,
    link: Mutex<Option<CurrentLink>>,
    processes: Mutex<Processes>,
    /// Teardowns of links that are not processes (an HTTP session's
    /// DELETE): `true` once done.
    teardowns: Mutex<Vec<watch::Receiver<bool>>>,
    /// Spawns under way (see [`ClientShared::begin_spawn`]).
    spawning: watch::Sender<usize>,
    /// Deaths of servers (and Connections) that still count against
    /// `max_reconnects`: here, not in an actor, so that a respawned
    /// Connection goes on counting.
    restarts: Mutex<RestartIntensity>,
}

impl std::fmt::Debug for ClientShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientShared")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Held while a spawn is under way; see [`ClientShared::begin_spawn`].
pub(crate) struct SpawnTicket(Arc<ClientShared>);

impl Drop for SpawnTicket {
    fn drop(&mut self) {
        self.0.spawning.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl ClientShared {
    pub(crate) fn new(config: Arc<ClientConfig>, handler: Option<Arc<dyn ClientHandler>>) -> Self {
        let name = config.display_name();
        let restarts =
            RestartIntensity::new(config.get_max_reconnects(), config.get_restart_period());
        Self {
            restarts: Mutex::new(restarts),
            notifications: Fanout::new(config.get_max_queued_notification_bytes(), name.clone()),
            name,
            config,
            handler,
            down: DownReason::default(),
            pending: Pending::default(),
            events: Mutex::new(Events::default()),
            status: watch::channel(Status::Starting).0,
            gave_up: Mutex::new(None),
            direct: watch::channel(None).0,
            link: Mutex::new(None),
            processes: Mutex::new(Processes::default()),
            teardowns: Mutex::new(Vec::new()),
            spawning: watch::channel(0).0,
        }
    }

    /// The client's name in logs and errors.
    #[inline]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The configuration the client was started with.
    #[inline]
    pub(crate) fn config(&self) -> &Arc<ClientConfig> {
        &self.config
    }

    /// The handler of the server's requests, if the user gave one.
    #[inline]
    pub(crate) fn handler(&self) -> Option<&Arc<dyn ClientHandler>> {
        self.handler.as_ref()
    }

    /// Why the connection is down, shared with every caller's reply slot.
    #[inline]
    pub(crate) fn down(&self) -> &DownReason {
        &self.down
    }

    /// The calls waiting for their answer.
    #[inline]
    pub(crate) fn pending(&self) -> &Pending {
        &self.pending
    }

    pub(crate) fn next_id(&self) -> RequestId {
        self.pending.next_id()
    }

    // ---- the direct path and the current link ----

    /// The direct request path, while a server is ready.
    pub(crate) fn direct(&self) -> Option<Arc<Direct>> {
        self.direct.borrow().clone()
    }

    /// A receiver that wakes when the direct path changes (or the client
    /// ends).
    pub(crate) fn watch_direct(&self) -> watch::Receiver<Option<Arc<Direct>>> {
        self.direct.subscribe()
    }

    /// Publishes the direct path of a ready server, unless the client has
    /// ended meanwhile.
    pub(crate) fn publish_direct(&self, direct: Arc<Direct>) {
        self.direct.send_if_modified(|d| {
            if self.is_final() {
                return false;
            }
            *d = Some(direct);
            true
        });
    }

    /// Withdraws the direct path and fails every pending call with `err`.
    pub(crate) fn fail_pending(&self, err: impl Fn() -> Error) {
        self.direct.send_replace(None);
        fail_waiters(self.pending.take_all(), err);
    }

    /// A link closed: fails the pending calls with `err`, then delivers its
    /// `Closed` event, with nothing in between (a stop that races waits
    /// for both, so its `Stopped` comes after this `Closed`, and a caller
    /// that sees the event finds its call already failed with the reason).
    pub(crate) fn link_closed(&self, err: impl Fn() -> Error, closed: LifecycleEvent) {
        let mut subs = lock(&self.events);
        self.fail_pending(err);
        deliver(&mut subs, closed);
    }

    /// Makes `link` (of generation `gen`) the current one. Returns it back
    /// when the client has ended meanwhile: close it then.
    pub(crate) fn set_link(&self, gen: u64, link: Arc<dyn Link>) -> Result<(), Arc<dyn Link>> {
        let mut cur = lock(&self.link);
        if self.is_final() {
            return Err(link);
        }
        *cur = Some(CurrentLink { gen, link });
        Ok(())
    }

    /// Takes the current link if it is of generation `gen`: whoever takes
    /// it reports its close, exactly once.
    pub(crate) fn take_link(&self, gen: u64) -> Option<Arc<dyn Link>> {
        let mut cur = lock(&self.link);
        if cur.as_ref().is_some_and(|c| c.gen == gen) {
            return cur.take().map(|c| c.link);
        }
        None
    }

    /// The current link, if any.
    pub(crate) fn link(&self) -> Option<Arc<dyn Link>> {
        lock(&self.link).as_ref().map(|c| c.link.clone())
    }

    // ---- restarts ----

    /// The running server became ready: its ready time counts towards
    /// `restart_period` from now.
    pub(crate) fn server_ready(&self) {
        lock(&self.restarts).ready(tokio::time::Instant::now());
    }

    /// A server died (or could not be spawned, or its Connection died):
    /// restart it, or give up.
    pub(crate) fn count_death(&self) -> Verdict {
        lock(&self.restarts).died(tokio::time::Instant::now())
    }

    // ---- stopping and giving up ----

    /// Makes the client stopped, whatever state its actors are in: the
    /// status becomes final (no call is sent and no server spawned from
    /// here on) and every pending call fails with [`Error::Stopped`].
    /// Cheap and wakes no task of the link: the running server is closed by
    /// [`close_link`](Self::close_link), from the supervisor (or from
    /// [`stop_now`](Self::stop_now)). Returns `false` if the client had
    /// already ended.
    pub(crate) fn finalize(&self, why: &str) -> bool {
        let closed = self.link().map(|link| LifecycleEvent::Closed {
            name: self.name.clone(),
            pid: link.pid(),
            reason: CloseReason::ClientClosed,
            exit: None,
        });
        let stopped = LifecycleEvent::Stopped {
            name: self.name.clone(),
        };
        if !self.end(why, Status::Stopped, closed.into_iter().chain([stopped])) {
            return false;
        }
        self.fail_pending(|| Error::Stopped);
        tracing::info!(server = %self.name, reason = why, "client stopped");
        true
    }

    /// Closes the running server's link, if any: its shutdown starts at
    /// once, whatever the Connection's mailbox holds.
    pub(crate) fn close_link(&self) {
        let current = lock(&self.link).take();
        if let Some(CurrentLink { link, .. }) = current {
            link.close(CloseReason::ClientClosed);
        }
    }

    /// [`finalize`](Self::finalize), then [`close_link`](Self::close_link).
    pub(crate) fn stop_now(&self, why: &str) {
        self.finalize(why);
        self.close_link();
    }

    /// Records the final give-up: status, the error later calls get, and
    /// the event. `last` is the last failure, `attempts` how many deaths
    /// counted within the restart period.
    pub(crate) fn give_up(&self, attempts: u32, last: &str) -> Error {
        let err = Error::GaveUp {
            attempts,
            last: last.to_owned(),
        };
        let why = err.to_string();
        *lock(&self.gave_up) = Some(err.clone());
        let event = LifecycleEvent::GaveUp {
            name: self.name.clone(),
            reason: why.clone(),
        };
        if self.end(&why, Status::GaveUp(why.clone()), [event]) {
            self.fail_pending(|| err.clone());
        }
        err
    }

    /// Ends the client, once: delivers `events` (the last one final), then
    /// sets the final `status`. Every final status is set here, under the
    /// events' lock, so whoever sees the final status finds the final event
    /// already in its channel, and the event and the status always agree.
    /// `false` if the client had ended already.
    fn end(
        &self,
        why: &str,
        status: Status,
        events: impl IntoIterator<Item = LifecycleEvent>,
    ) -> bool {
        let mut subs = lock(&self.events);
        if self.is_final() {
            return false;
        }
        self.down.set(why);
        for e in events {
            deliver(&mut subs, e);
        }
        self.status.send_replace(status);
        true
    }

    /// The error for calls on a client that gave up or was stopped.
    pub(crate) fn final_error(&self) -> Option<Error> {
        match &*self.status.borrow() {
            Status::Stopped => Some(Error::Stopped),
            Status::GaveUp(why) => Some(
                lock(&self.gave_up)
                    .clone()
                    .unwrap_or_else(|| Error::ConnectionDown(why.clone())),
            ),
            _ => None,
        }
    }

    // ---- status ----

    /// Sets a non-final status (a final status is never overwritten).
    pub(crate) fn set_status(&self, status: Status) {
        self.status.send_if_modified(|s| {
            if s.is_final() {
                false
            } else {
                *s = status;
                true
            }
        });
    }

    pub(crate) fn status(&self) -> watch::Receiver<Status> {
        self.status.subscribe()
    }

    /// Whether the status is final (stopped or gave up), read without
    /// subscribing (a subscription per request costs contended atomics).
    pub(crate) fn is_final(&self) -> bool {
        self.status.borrow().is_final()
    }

    /// The era of the ready session, read without subscribing.
    pub(crate) fn era(&self) -> Option<crate::protocol::Era> {
        match &*self.status.borrow() {
            Status::Ready(s) => Some(s.era),
            _ => None,
        }
    }

    /// The current status, read without subscribing.
    pub(crate) fn status_now(&self) -> Status {
        self.status.borrow().clone()
    }

    // ---- processes ----

    /// Announces a spawn; `None` once the client has ended (then nothing
    /// may be spawned). Hold the ticket until the spawned process's
    /// shutdown handle is [registered](Self::register_process) or the
    /// spawn failed.
    pub(crate) fn begin_spawn(self: &Arc<Self>) -> Option<SpawnTicket> {
        self.spawning.send_modify(|n| *n += 1);
        let ticket = SpawnTicket(self.clone());
        // Checked after counting: a stop either sees this spawn counted or
        // this check sees the stop.
        (!self.is_final()).then_some(ticket)
    }

    /// Records a process the client started.
    pub(crate) fn register_process(&self, h: ShutdownHandle) {
        let mut p = lock(&self.processes);
        let Processes { running, ended } = &mut *p;
        running.retain(|h| match h.try_report() {
            Some(r) => {
                ended.push_back(r);
                false
            }
            None => true,
        });
        while ended.len() > MAX_REPORTS {
            ended.pop_front();
        }
        running.push(h);
    }

    /// Records the teardown of a link that is not a process (finished
    /// ones are forgotten).
    pub(crate) fn register_teardown(&self, done: watch::Receiver<bool>) {
        let mut t = lock(&self.teardowns);
        t.retain(|d| !*d.borrow() && d.has_changed().is_ok());
        t.push(done);
    }

    /// Waits until the client has ended, no spawn is under way, and every
    /// process it started is shut down (and every link teardown done);
    /// returns the processes' reports, oldest first (at most the
    /// [`MAX_REPORTS`] most recent).
    pub(crate) async fn wait_processes(&self) -> Vec<ShutdownReport> {
        let mut status = self.status();
        while !status.borrow_and_update().is_final() {
            if status.changed().await.is_err() {
                break;
            }
        }
        let mut spawning = self.spawning.subscribe();
        let _ = spawning.wait_for(|n| *n == 0).await;
        let (mut out, running) = {
            let p = lock(&self.processes);
            (Vec::from_iter(p.ended.iter().cloned()), p.running.clone())
        };
        for h in running {
            if let Some(r) = h.wait().await {
                out.push(r);
            }
        }
        let teardowns = lock(&self.teardowns).clone();
        for mut done in teardowns {
            // Err: the link is gone, and its teardown with it.
            let _ = done.wait_for(|d| *d).await;
        }
        let skip = out.len().saturating_sub(MAX_REPORTS);
        out.drain(..skip);
        out
    }

    // ---- subscribers ----

    pub(crate) fn subscribe(&self) -> Notifications {
        self.notifications.subscribe()
    }

    /// Delivers a server notification to every subscriber with room.
    pub(crate) fn publish(&self, n: Notification) {
        self.notifications.publish(n);
    }

    pub(crate) fn add_event_subscriber(&self, tx: mpsc::UnboundedSender<LifecycleEvent>) {
        lock(&self.events).subscribers.push(tx);
    }

    /// Delivers a lifecycle event to every live subscriber. Nothing is
    /// delivered after a final event ([`LifecycleEvent::is_final`]).
    pub(crate) fn emit(&self, e: LifecycleEvent) {
        deliver(&mut lock(&self.events), e);
    }
}

/// Sends `e` to every live subscriber, unless a final event was sent.
fn deliver(events: &mut Events, e: LifecycleEvent) {
    if events.ended {
        return;
    }
    events.ended = e.is_final();
    events.subscribers.retain(|s| s.send(e.clone()).is_ok());
}
