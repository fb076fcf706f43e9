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
//!
//! The fan-out itself ([`Fanout`]) knows nothing of events: any item with
//! a cost can go through it.

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

/// An item and what it costs its subscriber.
#[derive(Debug)]
struct Queued<T> {
    item: T,
    cost: usize,
}

/// The receiving side of one bounded subscription.
#[derive(Debug)]
struct Receiver<T> {
    rx: mpsc::UnboundedReceiver<Queued<T>>,
    account: Arc<Account>,
}

impl<T> Receiver<T> {
    fn take(&self, q: Queued<T>) -> T {
        self.account.held.fetch_sub(q.cost, Ordering::AcqRel);
        q.item
    }
}

/// The sending side of one subscription.
#[derive(Debug)]
pub(crate) struct Subscriber<T = HostEvent> {
    tx: mpsc::UnboundedSender<Queued<T>>,
    account: Arc<Account>,
}

fn channel<T>() -> (Subscriber<T>, Receiver<T>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let account = Arc::new(Account::default());
    let sub = Subscriber {
        tx,
        account: account.clone(),
    };
    (sub, Receiver { rx, account })
}

/// Every live subscriber of one stream, each bounded to `limit` bytes
/// unread.
#[derive(Debug)]
pub(crate) struct Fanout<T> {
    subscribers: Mutex<Vec<Subscriber<T>>>,
    limit: usize,
    /// What the stream is, for the log.
    what: &'static str,
}

impl<T: Clone> Fanout<T> {
    pub(crate) fn new(limit: usize, what: &'static str, early: Vec<Subscriber<T>>) -> Self {
        Self {
            subscribers: Mutex::new(early),
            limit,
            what,
        }
    }

    fn subscribe(&self) -> Receiver<T> {
        let (sub, rx) = channel();
        crate::sync::lock(&self.subscribers).push(sub);
        rx
    }

    /// Delivers `item`, which costs `cost` bytes, to every subscriber with
    /// room for it; counts it as dropped for the others.
    fn send(&self, item: T, cost: usize) {
        let mut subs = crate::sync::lock(&self.subscribers);
        subs.retain(|s| !s.tx.is_closed());
        let mut item = Some(item);
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
                        stream = self.what,
                        "a subscriber is not reading: items dropped"
                    );
                }
                continue;
            }
            // The last one gets the original, the others copies.
            let copy = if i == last { item.take() } else { item.clone() };
            let Some(item) = copy else { break };
            s.account.held.fetch_add(cost, Ordering::AcqRel);
            if s.tx.send(Queued { item, cost }).is_err() {
                s.account.held.fetch_sub(cost, Ordering::AcqRel);
            }
        }
    }
}

/// A subscription to a host's events: see [`Host::events`](super::Host::events).
///
/// Bounded: while more than
/// [`max_queued_event_bytes`](super::HostConfig::max_queued_event_bytes)
/// of events wait unread here, new ones are dropped and counted in
/// [`dropped`](Self::dropped). Keep reading.
#[derive(Debug)]
pub struct HostEvents(Receiver<HostEvent>);

impl HostEvents {
    /// The next event; `None` once the host has stopped and every event
    /// was read.
    ///
    /// Cancel safety: cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::host::HostEvent;
    ///
    /// # async fn example(host: conduit_mcp::host::Host) {
    /// let mut events = host.events();
    /// while let Some(event) = events.recv().await {
    ///     if let HostEvent::Removed { server, reason } = event {
    ///         eprintln!("{server} left the namespace: {reason}");
    ///     }
    /// }
    /// # }
    /// ```
    pub async fn recv(&mut self) -> Option<HostEvent> {
        let q = self.0.rx.recv().await?;
        Some(self.0.take(q))
    }

    /// The next event if one is waiting.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::HostOptions;
    ///
    /// let (opts, mut events) = HostOptions::new().subscribe();
    /// assert!(events.try_recv().is_err()); // nothing yet
    /// // ... `Host::start_with(config, opts)`; later, without waiting:
    /// while let Ok(event) = events.try_recv() {
    ///     println!("{}: {event:?}", event.server());
    /// }
    /// # drop(opts);
    /// ```
    pub fn try_recv(&mut self) -> Result<HostEvent, TryRecvError> {
        let q = self.0.rx.try_recv()?;
        Ok(self.0.take(q))
    }

    /// Events dropped for this subscriber because it had too many bytes
    /// unread.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(host: conduit_mcp::host::Host) {
    /// let mut events = host.events();
    /// while let Some(event) = events.recv().await {
    ///     println!("{event:?}");
    ///     if events.dropped() > 0 {
    ///         eprintln!("{} events lost: reading too slowly", events.dropped());
    ///     }
    /// }
    /// # }
    /// ```
    pub fn dropped(&self) -> u64 {
        self.0.account.dropped.load(Ordering::Relaxed)
    }

    /// Bytes of events waiting unread (as counted against the bound).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::host::HostOptions;
    ///
    /// let (_opts, events) = HostOptions::new().subscribe();
    /// assert_eq!((events.held_bytes(), events.dropped()), (0, 0));
    /// ```
    pub fn held_bytes(&self) -> usize {
        self.0.account.held.load(Ordering::Acquire)
    }
}

/// A subscription made before the host exists
/// ([`HostOptions::subscribe`](super::HostOptions::subscribe)): its
/// sending side and the user's receiver.
pub(crate) fn subscription() -> (Subscriber, HostEvents) {
    let (sub, rx) = channel();
    (sub, HostEvents(rx))
}

/// The host's events.
pub(crate) type EventFanout = Fanout<HostEvent>;

impl EventFanout {
    pub(crate) fn events(&self) -> HostEvents {
        HostEvents(self.subscribe())
    }

    /// Delivers `event` to every subscriber with room for it.
    pub(crate) fn publish(&self, event: HostEvent) {
        let cost = std::mem::size_of::<Queued<HostEvent>>() + strings(&event);
        self.send(event, cost);
    }
}

/// The bytes of an event's strings.
fn strings(event: &HostEvent) -> usize {
    match event {
        HostEvent::Lifecycle { server, event } => server.len() + lifecycle_strings(event),
        HostEvent::Listed { server, .. } => server.len(),
        HostEvent::ListFailed { server, error } => server.len() + error.len(),
        HostEvent::Removed { server, reason } | HostEvent::Down { server, reason, .. } => {
            server.len() + reason.len()
        }
        HostEvent::Reviving { server } => server.len(),
        HostEvent::Collision(c) => {
            c.name.len()
                + c.kept.server.len()
                + c.kept.name.len()
                + c.dropped.server.len()
                + c.dropped.name.len()
        }
    }
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
        let hub = EventFanout::new(10_000, "test", vec![early]);
        let mut fast = hub.events();
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
        let hub = EventFanout::new(10, "test", Vec::new());
        drop(hub.events());
        hub.publish(line(1));
        assert!(crate::sync::lock(&hub.subscribers).is_empty());
    }
}
