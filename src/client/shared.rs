//! State shared by the user's handles and the actors of one client.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use ractor::ActorRef;
use tokio::sync::{mpsc, watch};

use super::config::ClientConfig;
use super::connection::{ConnectionMsg, Direct};
use super::events::LifecycleEvent;
use super::handler::ClientHandler;
use super::pending::DownReason;
use super::session::Status;
use crate::error::Error;
use crate::jsonrpc::{Notification, RequestId};
use crate::transport::ShutdownHandle;

pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) handler: Option<Arc<dyn ClientHandler>>,
    pub(crate) down: DownReason,
    next_id: AtomicI64,
    subscribers: Mutex<Vec<mpsc::UnboundedSender<Notification>>>,
    events: Mutex<Vec<mpsc::UnboundedSender<LifecycleEvent>>>,
    status: watch::Sender<Status>,
    shutdowns: Mutex<Vec<ShutdownHandle>>,
    /// The error calls get once the client gave up.
    gave_up: Mutex<Option<Error>>,
    pub(crate) connection: watch::Sender<Option<ActorRef<ConnectionMsg>>>,
    /// The ready link's direct request path, if a server is ready.
    direct: Mutex<Option<Arc<Direct>>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub(crate) fn new(config: Arc<ClientConfig>, handler: Option<Arc<dyn ClientHandler>>) -> Self {
        Self {
            name: config.display_name(),
            config,
            handler,
            down: DownReason::default(),
            next_id: AtomicI64::new(1),
            subscribers: Mutex::new(Vec::new()),
            events: Mutex::new(Vec::new()),
            status: watch::channel(Status::Starting).0,
            shutdowns: Mutex::new(Vec::new()),
            gave_up: Mutex::new(None),
            connection: watch::channel(None).0,
            direct: Mutex::new(None),
        }
    }

    /// The direct request path, while a server is ready.
    pub(crate) fn direct(&self) -> Option<Arc<Direct>> {
        self.direct.lock().ok().and_then(|d| d.clone())
    }

    /// Publishes (or, with `None`, withdraws) the direct request path.
    pub(crate) fn set_direct(&self, direct: Option<Arc<Direct>>) {
        if let Ok(mut d) = self.direct.lock() {
            *d = direct;
        }
    }

    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn subscribe(&self) -> mpsc::UnboundedReceiver<Notification> {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut s) = self.subscribers.lock() {
            s.push(tx);
        }
        rx
    }

    /// Delivers a server notification to every live subscriber. Unbounded
    /// queues: a burst is never dropped.
    pub(crate) fn publish(&self, n: Notification) {
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.retain(|s| !s.is_closed());
            if let Some((last, rest)) = subs.split_last() {
                for s in rest {
                    let _ = s.send(n.clone());
                }
                let _ = last.send(n);
            }
        }
    }

    pub(crate) fn add_event_subscriber(&self, tx: mpsc::UnboundedSender<LifecycleEvent>) {
        if let Ok(mut s) = self.events.lock() {
            s.push(tx);
        }
    }

    /// Delivers a lifecycle event to every live subscriber.
    pub(crate) fn emit(&self, e: LifecycleEvent) {
        if let Ok(mut subs) = self.events.lock() {
            subs.retain(|s| s.send(e.clone()).is_ok());
        }
    }

    /// Records the final give-up: status, the error later calls get, and
    /// the event. `last` is the last failure, `attempts` how many in a row.
    pub(crate) fn give_up(&self, attempts: u32, last: &str) -> Error {
        let err = Error::GaveUp {
            attempts,
            last: last.to_owned(),
        };
        let why = err.to_string();
        self.down.set(why.clone());
        if let Ok(mut g) = self.gave_up.lock() {
            *g = Some(err.clone());
        }
        self.set_status(Status::GaveUp(why.clone()));
        self.emit(LifecycleEvent::GaveUp {
            name: self.name.clone(),
            reason: why,
        });
        err
    }

    /// The error for calls on a client that gave up or was stopped.
    pub(crate) fn final_error(&self) -> Option<Error> {
        match &*self.status.borrow() {
            Status::Stopped => Some(Error::Stopped),
            Status::GaveUp(why) => Some(
                self.gave_up
                    .lock()
                    .ok()
                    .and_then(|g| g.clone())
                    .unwrap_or_else(|| Error::ConnectionDown(why.clone())),
            ),
            _ => None,
        }
    }

    pub(crate) fn set_status(&self, status: Status) {
        // A final status is never overwritten.
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

    pub(crate) fn add_shutdown(&self, h: ShutdownHandle) {
        if let Ok(mut v) = self.shutdowns.lock() {
            v.retain(|h| h.try_report().is_none());
            v.push(h);
        }
    }

    pub(crate) fn shutdowns(&self) -> Vec<ShutdownHandle> {
        self.shutdowns.lock().map(|v| v.clone()).unwrap_or_default()
    }
}
