//! The host's events, fanned out to every subscriber, bounded in bytes per
//! subscriber.
//!
//! A server decides how many events it causes (stderr lines, restarts,
//! listings), so a subscriber that does not read would otherwise hold all
//! of them. Each subscriber may leave at most
//! [`max_queued_event_bytes`](super::HostConfig::max_queued_event_bytes)
//! unread, counting each event's strings plus its own size (so the bound
//! holds in events too); past it, events for that subscriber are dropped,
//! counted ([`HostEvents::dropped`]) and logged, never queued. The servers
//! and the other subscribers are not slowed down by it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;
use tracing::warn;

use super::HostEvent;
use crate::client::LifecycleEvent;

/// What one subscriber holds unread and has lost.
#[derive(Debug, Default)]
struct Account {
    held: AtomicUsize,
    dropped: AtomicU64,
}

/// An event and what it costs its subscriber.
#[derive(Debug)]
struct Queued {
    event: HostEvent,
    cost: usize,
}

/// A subscription to a host's events: see [`Host::events`](super::Host::events).
///
/// Bounded: while more than
/// [`max_queued_event_bytes`](super::HostConfig::max_queued_event_bytes)
/// of events wait unread here, new ones are dropped and counted in
/// [`dropped`](Self::dropped). Keep reading.
#[derive(Debug)]
pub struct HostEvents {
    rx: mpsc::UnboundedReceiver<Queued>,
    account: Arc<Account>,
}

impl HostEvents {
    /// The next event; `None` once the host has stopped and every event
    /// was read.
    ///
    /// Cancel safety: cancel safe.
    pub async fn recv(&mut self) -> Option<HostEvent> {
        let q = self.rx.recv().await?;
        Some(self.take(q))
    }

    /// The next event if one is waiting.
    pub fn try_recv(&mut self) -> Result<HostEvent, TryRecvError> {
        let q = self.rx.try_recv()?;
        Ok(self.take(q))
    }

    /// Events dropped for this subscriber because it had too many bytes
    /// unread.
    pub fn dropped(&self) -> u64 {
        self.account.dropped.load(Ordering::Relaxed)
    }

    /// Bytes of events waiting unread (as counted against the bound).
    pub fn held_bytes(&self) -> usize {
        self.account.held.load(Ordering::Acquire)
    }

    fn take(&self, q: Queued) -> HostEvent {
        self.account.held.fetch_sub(q.cost, Ordering::AcqRel);
        q.event
    }
}

/// The sending side of one subscription, made before the host exists
/// ([`HostOptions::subscribe`](super::HostOptions::subscribe)).
#[derive(Debug)]
pub(crate) struct Subscriber {
    tx: mpsc::UnboundedSender<Queued>,
    account: Arc<Account>,
}

/// A new subscription: its sending side and the user's receiver.
pub(crate) fn subscription() -> (Subscriber, HostEvents) {
    let (tx, rx) = mpsc::unbounded_channel();
    let account = Arc::new(Account::default());
    (
        Subscriber {
            tx,
            account: account.clone(),
        },
        HostEvents { rx, account },
    )
}

/// Every live subscriber of one host.
#[derive(Debug)]
pub(crate) struct EventHub {
    subscribers: Mutex<Vec<Subscriber>>,
    limit: usize,
}

impl EventHub {
    pub(crate) fn new(limit: usize, early: Vec<Subscriber>) -> Self {
        Self {
            subscribers: Mutex::new(early),
            limit,
        }
    }

    pub(crate) fn subscribe(&self) -> HostEvents {
        let (sub, events) = subscription();
        crate::sync::lock(&self.subscribers).push(sub);
        events
    }

    /// Delivers `event` to every subscriber with room for it.
    pub(crate) fn publish(&self, event: HostEvent) {
        let mut subs = crate::sync::lock(&self.subscribers);
        subs.retain(|s| !s.tx.is_closed());
        let cost = cost(&event);
        let mut event = Some(event);
        let last = subs.len().saturating_sub(1);
        for (i, s) in subs.iter().enumerate() {
            let held = s.account.held.load(Ordering::Acquire);
            if held.saturating_add(cost) > self.limit {
                let dropped = s.account.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                // The first drop, then every 1000th: a note, not a flood.
                if dropped == 1 || dropped % 1000 == 0 {
                    warn!(
                        dropped,
                        held,
                        limit = self.limit,
                        "a host events subscriber is not reading: events dropped"
                    );
                }
                continue;
            }
            // The last one gets the original, the others copies.
            let copy = if i == last {
                event.take()
            } else {
                event.clone()
            };
            let Some(event) = copy else { break };
            s.account.held.fetch_add(cost, Ordering::AcqRel);
            if s.tx.send(Queued { event, cost }).is_err() {
                s.account.held.fetch_sub(cost, Ordering::AcqRel);
            }
        }
    }
}

/// What an event holds in memory: its own size and its strings.
fn cost(event: &HostEvent) -> usize {
    let strings = match event {
        HostEvent::Lifecycle { server, event } => server.len() + lifecycle_strings(event),
        HostEvent::Listed { server, .. } => server.len(),
        HostEvent::ListFailed { server, error } => server.len() + error.len(),
        HostEvent::Removed { server, reason } => server.len() + reason.len(),
        HostEvent::Collision(c) => {
            c.name.len()
                + c.kept.server.len()
                + c.kept.name.len()
                + c.dropped.server.len()
                + c.dropped.name.len()
        }
    };
    std::mem::size_of::<Queued>() + strings
}

/// The strings of a client's event (a close reason is counted as a
/// sentence's worth).
fn lifecycle_strings(event: &LifecycleEvent) -> usize {
    match event {
        LifecycleEvent::Stderr { name, line, .. } => name.len() + line.len(),
        LifecycleEvent::GaveUp { name, reason } => name.len() + reason.len(),
        LifecycleEvent::Closed { name, .. } => name.len() + 128,
        LifecycleEvent::Spawned { name, .. }
        | LifecycleEvent::Ready { name, .. }
        | LifecycleEvent::Restarting { name, .. }
        | LifecycleEvent::Stopped { name } => name.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(k: usize) -> HostEvent {
        HostEvent::Lifecycle {
            server: "s".into(),
            event: LifecycleEvent::Stderr {
                name: "s".into(),
                pid: None,
                line: format!("{k:0100}"),
            },
        }
    }

    #[test]
    fn a_subscriber_that_does_not_read_holds_at_most_the_limit() {
        let (early, mut slow) = subscription();
        let hub = EventHub::new(10_000, vec![early]);
        let mut fast = hub.subscribe();
        let mut got_fast = 0;
        for k in 0..1000 {
            hub.publish(line(k));
            while fast.try_recv().is_ok() {
                got_fast += 1;
            }
        }
        assert_eq!(got_fast, 1000, "a reading subscriber loses nothing");
        assert_eq!(fast.dropped(), 0);
        assert!(slow.held_bytes() <= 10_000, "{}", slow.held_bytes());
        let mut kept = 0;
        while slow.try_recv().is_ok() {
            kept += 1;
        }
        assert!(kept > 0 && kept < 1000, "{kept}");
        assert_eq!(slow.dropped() + kept, 1000);
        assert_eq!(slow.held_bytes(), 0);
        hub.publish(line(0));
        assert!(slow.try_recv().is_ok(), "once read, it has room again");
    }

    #[test]
    fn a_subscriber_that_is_gone_is_forgotten() {
        let hub = EventHub::new(10, Vec::new());
        drop(hub.subscribe());
        hub.publish(line(1));
        assert!(crate::sync::lock(&hub.subscribers).is_empty());
    }
}
