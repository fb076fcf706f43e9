//! One task per server: follows its client's status, events and
//! notifications, and keeps the host's view of it current.
//!
//! - A new session (the first ready server, or one after a restart): every
//!   list is fetched again.
//! - `notifications/{tools,prompts,resources}/list_changed`: that list is
//!   fetched again. Coalesced: one fetch in flight and one pending, however
//!   many notifications come, and a fetch starts no sooner than
//!   [`RELIST_GAP`] after the previous one ended, so a server that
//!   announces changes without end makes the host list it at most about
//!   ten times a second.
//! - Not ready (restarting): a fetch in flight is dropped (its requests
//!   cancelled); the lists stay, and calls see the server unavailable.
//! - Gave up: the server leaves the namespace, with its reason.
//! - Every lifecycle event is passed on, tagged with the server's name.
//!
//! The task ends with the client (final status), or is aborted when the
//! server is removed or the host stops.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::debug;

use super::catalog::{HostShared, Ticket};
use super::listing::{fetch, Fetched, Wanted};
use super::HostEvent;
use crate::client::Client;
use crate::client::LifecycleEvent;
use crate::client::{ServerSession, Status};
use crate::deadline::After;

/// The least time between the end of a listing and the start of the next.
pub(crate) const RELIST_GAP: Duration = Duration::from_millis(100);

type Listing = Pin<Box<dyn Future<Output = Fetched> + Send>>;

/// Starts watching `client` (the server of `ticket`), whose lifecycle
/// events arrive on `events`.
pub(crate) fn spawn(
    shared: Arc<HostShared>,
    ticket: Ticket,
    client: Client,
    events: mpsc::UnboundedReceiver<LifecycleEvent>,
) -> JoinHandle<()> {
    // Subscribed before the first listing: a change after it is never missed.
    let notes = client.notifications();
    tokio::spawn(async move {
        let mut w = Watcher {
            shared,
            ticket,
            client,
            events,
            session: None,
            wanted: Wanted::default(),
            listing: None,
            next_at: Instant::now(),
        };
        w.run(notes).await;
    })
}

struct Watcher {
    shared: Arc<HostShared>,
    ticket: Ticket,
    client: Client,
    events: mpsc::UnboundedReceiver<LifecycleEvent>,
    /// The session the lists belong to.
    session: Option<Arc<ServerSession>>,
    /// Lists to fetch once the fetch in flight ends.
    wanted: Wanted,
    listing: Option<Listing>,
    /// When the next listing may start.
    next_at: Instant,
}

impl Watcher {
    async fn run(&mut self, mut notes: crate::Notifications) {
        let mut status = self.client.watch_status();
        // The status is followed when it changed, not on every event or
        // notification (following it wakes whoever waits on the host).
        let mut fresh = true;
        loop {
            // A client emits an event before the status it leads to: pass
            // the events on first, so they precede what follows from it.
            self.pass_on_queued();
            if std::mem::take(&mut fresh) {
                let current = status.borrow_and_update().clone();
                if self.on_status(current) {
                    return;
                }
            }
            let gap = self.start_listing();
            tokio::select! {
                changed = status.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    fresh = true;
                }
                Some(event) = self.events.recv() => self.pass_on(event),
                Some(note) = notes.recv() => self.wanted.note(&note.method),
                fetched = poll_listing(&mut self.listing) => {
                    self.listing = None;
                    self.next_at = Instant::now().after(RELIST_GAP);
                    self.shared.listed(&self.ticket, fetched);
                }
                () = tokio::time::sleep_until(self.next_at), if gap => {}
            }
        }
    }

    /// Follows a status; `true` once it is final.
    fn on_status(&mut self, status: Status) -> bool {
        self.shared.touch();
        match status {
            Status::Ready(session) => {
                let new = !self
                    .session
                    .as_ref()
                    .is_some_and(|s| Arc::ptr_eq(s, &session));
                if new {
                    debug!(server = %self.ticket.name(), "host: new session, listing");
                    self.shared.mark_ready(&self.ticket);
                    self.session = Some(session);
                    self.wanted = Wanted::ALL;
                    self.listing = None;
                    // A new session is listed at once (restarts have their
                    // own backoff).
                    self.next_at = Instant::now();
                }
                false
            }
            s if s.is_final() => {
                // The final event is delivered before the final status is
                // set: pass on every event before leaving.
                self.pass_on_queued();
                if let Status::GaveUp(reason) = s {
                    self.shared.retire(&self.ticket, reason);
                }
                true
            }
            _ => {
                self.listing = None;
                false
            }
        }
    }

    /// Starts a fetch when one is wanted, none is in flight, a server is
    /// ready and the gap since the last one has passed; `true` if only the
    /// gap holds it back.
    fn start_listing(&mut self) -> bool {
        if self.listing.is_some() || !self.wanted.any() {
            return false;
        }
        let Some(session) = self.client.session() else {
            return false;
        };
        if Instant::now() < self.next_at {
            return true;
        }
        let wanted = std::mem::take(&mut self.wanted);
        let client = self.client.clone();
        self.listing = Some(Box::pin(
            async move { fetch(client, &session, wanted).await },
        ));
        false
    }

    fn pass_on_queued(&mut self) {
        while let Ok(event) = self.events.try_recv() {
            self.pass_on(event);
        }
    }

    fn pass_on(&self, event: LifecycleEvent) {
        self.shared.emit(HostEvent::Lifecycle {
            server: self.ticket.name().to_owned(),
            event,
        });
    }
}

/// The fetch in flight; never resolves without one.
async fn poll_listing(listing: &mut Option<Listing>) -> Fetched {
    match listing {
        Some(l) => l.await,
        None => std::future::pending().await,
    }
}
