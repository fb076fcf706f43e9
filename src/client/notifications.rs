//! Server notifications for the user, bounded in bytes per subscriber.
//!
//! The reader task publishes each notification to every live subscriber
//! directly (no actor mailbox on the way). A subscriber that does not read
//! holds at most `max_queued_notification_bytes` (measured as the parsed
//! notification holds them in memory); past that, notifications for it are
//! dropped, counted ([`Notifications::dropped`]) and logged, never queued
//! without bound. With nobody subscribed, a notification is dropped at once.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tracing::warn;

use crate::jsonrpc::Notification;
use crate::memory_estimate;
use crate::protocol::ServerNotification;

/// What one subscriber holds and has lost.
#[derive(Debug, Default)]
struct Account {
    /// Bytes sent and not yet received.
    held: AtomicUsize,
    dropped: AtomicU64,
    /// Notifications handed to the subscriber, ever.
    sent: AtomicU64,
}

/// One notification and what it costs its subscriber.
#[derive(Debug)]
struct Queued {
    notification: Notification,
    cost: usize,
}

/// A subscription to the server's notifications: see
/// [`Client::notifications`](crate::client::Client::notifications).
///
/// Bounded: while more than `max_queued_notification_bytes` of
/// notifications wait unread here, new ones are dropped and counted in
/// [`dropped`](Self::dropped). Keep reading.
#[derive(Debug)]
pub struct Notifications {
    rx: mpsc::UnboundedReceiver<Queued>,
    account: Arc<Account>,
}

impl Notifications {
    /// The next notification; `None` once the client has ended.
    ///
    /// Cancel safety: cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) {
    /// let mut notes = client.notifications();
    /// while let Some(n) = notes.recv().await {
    ///     println!("{} {:?}", n.method, n.params);
    /// }
    /// # }
    /// ```
    pub async fn recv(&mut self) -> Option<Notification> {
        let q = self.rx.recv().await?;
        Some(self.take(q))
    }

    /// The next notification if one is waiting.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn example(client: conduit_mcp::Client) {
    /// let mut notes = client.notifications();
    /// // ... later, without waiting:
    /// while let Some(n) = notes.try_recv() {
    ///     println!("{}", n.method);
    /// }
    /// # }
    /// ```
    pub fn try_recv(&mut self) -> Option<Notification> {
        let q = self.rx.try_recv().ok()?;
        Some(self.take(q))
    }

    /// The next notification, typed ([`ServerNotification`]: unknown
    /// methods are kept raw); `None` once the client has ended.
    ///
    /// Cancel safety: cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::ServerNotification;
    ///
    /// # async fn example(client: conduit_mcp::Client) {
    /// let mut notes = client.notifications();
    /// while let Some(n) = notes.recv_typed().await {
    ///     match n {
    ///         ServerNotification::ToolsListChanged(_) => println!("the tools changed"),
    ///         ServerNotification::Unknown(raw) => println!("other: {}", raw.method),
    ///         _ => {}
    ///     }
    /// }
    /// # }
    /// ```
    pub async fn recv_typed(&mut self) -> Option<ServerNotification> {
        self.recv().await.map(ServerNotification::from_raw)
    }

    /// The next notification, typed, if one is waiting.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::ServerNotification;
    ///
    /// # fn example(client: conduit_mcp::Client) {
    /// let mut notes = client.notifications();
    /// // ... later, without waiting:
    /// let changed = std::iter::from_fn(|| notes.try_recv_typed())
    ///     .any(|n| matches!(n, ServerNotification::ToolsListChanged(_)));
    /// println!("tools changed: {changed}");
    /// # }
    /// ```
    pub fn try_recv_typed(&mut self) -> Option<ServerNotification> {
        self.try_recv().map(ServerNotification::from_raw)
    }

    /// Notifications dropped for this subscriber because it had too many
    /// bytes unread.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) {
    /// let mut notes = client.notifications();
    /// while let Some(n) = notes.recv().await {
    ///     println!("{}", n.method);
    ///     if notes.dropped() > 0 {
    ///         eprintln!("{} notifications lost: reading too slowly", notes.dropped());
    ///     }
    /// }
    /// # }
    /// ```
    pub fn dropped(&self) -> u64 {
        self.account.dropped.load(Ordering::Relaxed)
    }

    /// A counter of the notifications handed to this subscriber so far,
    /// readable from another task than the one that receives them: a
    /// relay compares it with what it passed on to know it is caught up
    /// (everything the server sent before an answer read after it is
    /// counted).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(client: conduit_mcp::Client) {
    /// let mut notes = client.notifications();
    /// let delivered = notes.delivered();
    /// tokio::spawn(async move {
    ///     while let Some(n) = notes.recv().await {
    ///         println!("relaying {}", n.method);
    ///     }
    /// });
    /// println!("{} handed to the relay so far", delivered.get());
    /// # }
    /// ```
    pub fn delivered(&self) -> Delivered {
        Delivered(self.account.clone())
    }

    fn take(&self, q: Queued) -> Notification {
        self.account.held.fetch_sub(q.cost, Ordering::AcqRel);
        q.notification
    }
}

/// How many notifications a subscriber was handed: see
/// [`Notifications::delivered`].
#[derive(Debug, Clone)]
pub struct Delivered(Arc<Account>);

impl Delivered {
    /// The count so far. A notification published before something this
    /// thread saw later (an answer read after it) is counted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn example(client: conduit_mcp::Client) {
    /// let notes = client.notifications();
    /// let delivered = notes.delivered();
    /// assert_eq!(delivered.get(), 0); // none handed over yet
    /// # drop(notes);
    /// # }
    /// ```
    pub fn get(&self) -> u64 {
        self.0.sent.load(Ordering::Acquire)
    }
}

/// The publishing side: one entry per live subscriber.
#[derive(Debug)]
pub(crate) struct Fanout {
    subscribers: Mutex<Vec<(mpsc::UnboundedSender<Queued>, Arc<Account>)>>,
    limit: usize,
    server: String,
}

impl Fanout {
    pub(crate) fn new(limit: usize, server: String) -> Self {
        Self {
            subscribers: Mutex::new(Vec::new()),
            limit,
            server,
        }
    }

    /// A new subscriber, from now on.
    pub(crate) fn subscribe(&self) -> Notifications {
        let (tx, rx) = mpsc::unbounded_channel();
        let account = Arc::new(Account::default());
        self.lock().push((tx, account.clone()));
        Notifications { rx, account }
    }

    /// Delivers `n` to every subscriber with room for it.
    pub(crate) fn publish(&self, n: Notification) {
        let mut subs = self.lock();
        subs.retain(|(tx, _)| !tx.is_closed());
        if subs.is_empty() {
            return;
        }
        // The params, the method and the channel slot the notification
        // takes.
        let cost = n.params.as_ref().map_or(0, memory_estimate::value)
            + n.method.capacity()
            + std::mem::size_of::<Queued>();
        let admitted: Vec<usize> = (0..subs.len())
            .filter(|&i| {
                let account = &subs[i].1;
                let held = account.held.load(Ordering::Acquire);
                if held.saturating_add(cost) <= self.limit {
                    return true;
                }
                let dropped = account.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                // The first drop, then every 1000th: a note, not a flood.
                if dropped == 1 || dropped % 1000 == 0 {
                    warn!(server = %self.server, dropped, held, limit = self.limit,
                        "a notifications subscriber is not reading: notifications dropped");
                }
                false
            })
            .collect();
        let mut n = Some(n);
        for (j, &i) in admitted.iter().enumerate() {
            // The last one gets the original, the others copies.
            let note = if j + 1 == admitted.len() {
                n.take()
            } else {
                n.clone()
            };
            let Some(notification) = note else { break };
            let (tx, account) = &subs[i];
            account.held.fetch_add(cost, Ordering::AcqRel);
            account.sent.fetch_add(1, Ordering::AcqRel);
            if tx.send(Queued { notification, cost }).is_err() {
                account.held.fetch_sub(cost, Ordering::AcqRel);
            }
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, Vec<(mpsc::UnboundedSender<Queued>, Arc<Account>)>> {
        crate::sync::lock(&self.subscribers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn note(k: usize) -> Notification {
        Notification {
            method: "notifications/message".into(),
            params: Some(json!({ "data": "x".repeat(100), "k": k })),
        }
    }

    #[test]
    fn a_subscriber_that_does_not_read_holds_at_most_the_limit() {
        let hub = Fanout::new(10_000, "t".into());
        let mut slow = hub.subscribe();
        let mut fast = hub.subscribe();
        let mut got_fast = 0;
        for k in 0..1000 {
            hub.publish(note(k));
            while fast.try_recv().is_some() {
                got_fast += 1;
            }
        }
        assert_eq!(got_fast, 1000, "a reading subscriber loses nothing");
        assert_eq!(fast.dropped(), 0);
        assert!(slow.account.held.load(Ordering::Relaxed) <= 10_000);
        let mut kept = 0;
        while slow.try_recv().is_some() {
            kept += 1;
        }
        assert!(kept > 0 && kept < 1000, "{kept}");
        assert_eq!(slow.dropped() + kept, 1000);
        assert_eq!(slow.account.held.load(Ordering::Relaxed), 0);
        // Once read, it has room again.
        hub.publish(note(0));
        assert!(slow.try_recv().is_some());
    }

    #[test]
    fn with_nobody_subscribed_nothing_is_kept() {
        let hub = Fanout::new(10, "t".into());
        let sub = hub.subscribe();
        drop(sub);
        hub.publish(note(1));
        assert!(hub.lock().is_empty());
    }
}
