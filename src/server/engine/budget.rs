//! The inbound byte budget: bounds the memory the server holds for parsed
//! input in bytes, because a bound in messages is none (one 8 MiB line can
//! parse to 128 MiB, see [`memory_estimate`](crate::memory_estimate)).
//!
//! The reader [`take`](InboundBudget::take)s a [`Charge`] for a line's
//! estimate *before* parsing it, waiting while the budget cannot afford it;
//! meanwhile it reads nothing more, so back-pressure reaches the client's
//! writes. The charge travels with the message (a waiting request, the
//! request's task, the notification queue) and is released when it is
//! dropped: when the handler task ends or is aborted, or the message is
//! refused, answered by the transport or routed.
//!
//! Admission:
//! - a message fits if the total stays within the limit;
//! - a message is always admitted when nothing is held, so one message
//!   larger than the budget is still served, alone. Never two;
//! - responses, `notifications/cancelled` and `ping` have a reserve of
//!   their own, 1/8 of the limit, used first: they end or unblock requests
//!   (or are answered at once), so a full budget (even one held by a
//!   single oversized request) must not keep them out. One too large for
//!   the reserve is admitted like any other message.
//!
//! Two may wait at once: the reader (for a control message) and the task
//! holding the one request line that did not fit; a release wakes both.
//!
//! So the total stays within `limit + limit / 8`, or one message's estimate
//! plus the reserve when that is larger.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

use crate::memory_estimate::Estimate;

/// See the [module documentation](self).
#[derive(Debug)]
pub(crate) struct InboundBudget {
    limit: usize,
    /// Bytes held in the main pool.
    held: AtomicUsize,
    /// Bytes of responses and cancellations held in the reserve.
    reserve_held: AtomicUsize,
    released: Notify,
}

/// Bytes held for one message; released when dropped.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<InboundBudget>,
    bytes: usize,
    reserve: bool,
}

impl InboundBudget {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            held: AtomicUsize::new(0),
            reserve_held: AtomicUsize::new(0),
            released: Notify::new(),
        })
    }

    /// Bytes currently charged, reserve included.
    pub(crate) fn held(&self) -> usize {
        self.held
            .load(Ordering::Acquire)
            .saturating_add(self.reserve_held.load(Ordering::Acquire))
    }

    /// Charges `e` if it fits now.
    pub(crate) fn try_take(self: &Arc<Self>, e: Estimate) -> Option<Charge> {
        let reserve = e.is_control()
            && self
                .reserve_held
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                    let after = held.saturating_add(e.bytes());
                    (after <= self.limit / 8).then_some(after)
                })
                .is_ok();
        let taken = reserve
            || self
                .held
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                    let after = held.saturating_add(e.bytes());
                    (held == 0 || after <= self.limit).then_some(after)
                })
                .is_ok();
        if taken && !reserve && e.bytes() > self.limit {
            tracing::debug!(
                bytes = e.bytes(),
                limit = self.limit,
                "message over max_inbound_bytes admitted alone"
            );
        }
        taken.then(|| Charge {
            budget: self.clone(),
            bytes: e.bytes(),
            reserve,
        })
    }

    /// Charges `e`, waiting until it fits.
    ///
    /// Cancel safety: cancel safe (nothing is charged until it returns).
    pub(crate) async fn take(self: &Arc<Self>, e: Estimate) -> Charge {
        if let Some(c) = self.try_take(e) {
            return c;
        }
        tracing::debug!(
            held = self.held(),
            limit = self.limit,
            next = e.bytes(),
            control = e.is_control(),
            "inbound byte budget full: reading paused"
        );
        loop {
            // Created before the check: `notify_waiters` reaches it from
            // here on, so a release in between is not missed.
            let released = self.released.notified();
            if let Some(c) = self.try_take(e) {
                tracing::debug!(held = self.held(), "inbound byte budget: reading resumed");
                return c;
            }
            released.await;
        }
    }
}

impl Charge {
    /// Bytes this charge holds.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let pool = if self.reserve {
            &self.budget.reserve_held
        } else {
            &self.budget.held
        };
        pool.fetch_sub(self.bytes, Ordering::AcqRel);
        // Every waiter (two at most): each registered its `Notified` before
        // its last try, so none misses this release.
        self.budget.released.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn req(bytes: usize) -> Estimate {
        Estimate::new(bytes, false)
    }

    fn ctl(bytes: usize) -> Estimate {
        Estimate::new(bytes, true)
    }

    #[test]
    fn messages_fit_within_the_limit_and_a_lone_one_may_exceed_it() {
        let b = InboundBudget::new(1000);
        let a = b.try_take(req(600)).expect("fits");
        assert!(b.try_take(req(500)).is_none(), "600 + 500 > 1000");
        let c = b.try_take(req(400)).expect("600 + 400 = 1000 fits");
        assert_eq!(b.held(), 1000);
        drop((a, c));
        assert_eq!(b.held(), 0);
        // Alone, a message over the limit is admitted; a second one is not.
        let big = b.try_take(req(5000)).expect("alone");
        assert_eq!(big.bytes(), 5000);
        assert!(b.try_take(req(1)).is_none());
    }

    #[test]
    fn control_messages_have_a_reserve_of_an_eighth() {
        let b = InboundBudget::new(800);
        let _full = b.try_take(req(800)).expect("fits");
        assert!(b.try_take(req(1)).is_none());
        let c = b.try_take(ctl(100)).expect("within the reserve");
        assert!(b.try_take(ctl(1)).is_none(), "reserve used up");
        drop(c);
        assert_eq!(b.held(), 800);
    }

    #[test]
    fn a_lone_oversized_message_does_not_keep_control_messages_out() {
        let b = InboundBudget::new(800);
        let _lone = b.try_take(req(5000)).expect("alone");
        assert!(b.try_take(req(1)).is_none());
        let _cancel = b.try_take(ctl(100)).expect("the reserve is separate");
        assert_eq!(b.held(), 5100);
    }

    #[test]
    fn a_control_message_too_large_for_the_reserve_uses_the_main_pool() {
        let b = InboundBudget::new(800);
        let big = b.try_take(ctl(500)).expect("main pool");
        assert_eq!(b.held(), 500);
        assert!(b.try_take(ctl(400)).is_none(), "neither pool has room");
        let _small = b.try_take(ctl(100)).expect("reserve");
        drop(big);
        assert_eq!(b.held(), 100);
    }

    #[tokio::test]
    async fn a_release_wakes_the_waiting_reader() {
        let b = InboundBudget::new(1000);
        let held = b.try_take(req(900)).expect("fits");
        let waiter = tokio::spawn({
            let b = b.clone();
            async move { b.take(req(500)).await.bytes() }
        });
        // Not admitted while 900 are held.
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(held);
        let got = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("woken")
            .expect("task");
        assert_eq!(got, 500);
        assert_eq!(b.held(), 0, "the waiter's charge was dropped with it");
    }
}
