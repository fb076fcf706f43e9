//! A server's notifications on the caller's node, bounded in bytes per
//! subscriber: what a [`RemoteServer::notifications`](super::RemoteServer::notifications)
//! subscriber leaves unread is at most its limit, measured as the parsed
//! notification holds it in memory. Past that, notifications for it are
//! dropped and counted, never queued without bound.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;
use tracing::warn;

use crate::jsonrpc::Notification;
use crate::memory_estimate;

/// What one subscriber holds unread and has lost.
#[derive(Debug)]
struct Account {
    held: AtomicUsize,
    dropped: AtomicU64,
    limit: usize,
}

/// Notifications of one server on another node, from the moment the
/// gateway accepted the subscription made with
/// [`RemoteServer::notifications`](super::RemoteServer::notifications).
///
/// Bounded: while more than the limit of
/// [`RemoteServersConfig::max_queued_notification_bytes`](super::RemoteServersConfig::max_queued_notification_bytes)
/// waits unread here, new notifications are dropped and counted in
/// [`dropped`](Self::dropped). Keep reading. Dropping it ends the
/// subscription on the gateway.
#[derive(Debug)]
pub struct RemoteNotifications {
    rx: mpsc::UnboundedReceiver<(Notification, usize)>,
    account: Arc<Account>,
}

impl RemoteNotifications {
    /// The next notification; `None` once the subscription has ended, when
    /// the caller's [`RemoteServers`](super::RemoteServers) stopped.
    ///
    /// Cancel safety: cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(files: conduit_mcp::cluster::RemoteServer) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut notifications = files.notifications(std::time::Duration::from_secs(5)).await?;
    /// while let Some(n) = notifications.recv().await {
    ///     println!("{}", n.method);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn recv(&mut self) -> Option<Notification> {
        let (n, cost) = self.rx.recv().await?;
        self.account.held.fetch_sub(cost, Ordering::AcqRel);
        Some(n)
    }

    /// The next notification if one is waiting.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(files: conduit_mcp::cluster::RemoteServer) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut notifications = files.notifications(std::time::Duration::from_secs(5)).await?;
    /// // What arrived so far, without waiting.
    /// while let Some(n) = notifications.try_recv() {
    ///     println!("{}", n.method);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_recv(&mut self) -> Option<Notification> {
        let (n, cost) = self.rx.try_recv().ok()?;
        self.account.held.fetch_sub(cost, Ordering::AcqRel);
        Some(n)
    }

    /// Notifications dropped because this subscriber had too many bytes
    /// unread.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn example(files: conduit_mcp::cluster::RemoteServer) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut notifications = files.notifications(std::time::Duration::from_secs(5)).await?;
    /// while let Some(n) = notifications.recv().await {
    ///     if notifications.dropped() > 0 {
    ///         eprintln!("{} notifications lost: reading too slowly", notifications.dropped());
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn dropped(&self) -> u64 {
        self.account.dropped.load(Ordering::Relaxed)
    }
}

/// The sink's end of one subscription.
#[derive(Debug)]
pub(crate) struct Subscriber {
    tx: mpsc::UnboundedSender<(Notification, usize)>,
    account: Arc<Account>,
}

impl Subscriber {
    /// A subscription that holds at most `limit` bytes unread.
    pub(crate) fn new(limit: usize) -> (Subscriber, RemoteNotifications) {
        let (tx, rx) = mpsc::unbounded_channel();
        let account = Arc::new(Account {
            held: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            limit,
        });
        (
            Subscriber {
                tx,
                account: account.clone(),
            },
            RemoteNotifications { rx, account },
        )
    }

    /// Whether the receiving end is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Queues `n` if there is room for it, else drops and counts it.
    pub(crate) fn offer(&self, n: Notification, server: &str) {
        let cost = n.params.as_ref().map_or(0, memory_estimate::value) + n.method.capacity();
        let account = &self.account;
        let held = account.held.load(Ordering::Acquire);
        if held.saturating_add(cost) > account.limit {
            let dropped = account.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped == 1 || dropped % 1000 == 0 {
                warn!(
                    server,
                    dropped,
                    held,
                    limit = account.limit,
                    "a remote notifications subscriber is not reading: notifications dropped"
                );
            }
            return;
        }
        account.held.fetch_add(cost, Ordering::AcqRel);
        if self.tx.send((n, cost)).is_err() {
            account.held.fetch_sub(cost, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_subscriber_that_does_not_read_holds_at_most_its_limit() {
        let (sub, mut rx) = Subscriber::new(10_000);
        for k in 0..1000 {
            sub.offer(
                Notification {
                    method: "notifications/message".into(),
                    params: Some(json!({ "data": "x".repeat(100), "k": k })),
                },
                "s",
            );
        }
        assert!(rx.account.held.load(Ordering::Relaxed) <= 10_000);
        let mut kept = 0;
        while rx.try_recv().is_some() {
            kept += 1;
        }
        assert!(kept > 0 && kept < 1000, "{kept}");
        assert_eq!(rx.dropped() + kept, 1000);
        assert_eq!(rx.account.held.load(Ordering::Relaxed), 0);
        drop(rx);
        assert!(sub.is_closed());
    }
}
