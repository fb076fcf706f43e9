//! The inbound byte budget: bounds the memory the server holds for parsed
//! input in bytes, because a bound in messages is none (one 8 MiB line can
//! parse to 128 MiB, see [`memory_estimate`](crate::memory_estimate)).
//!
//! A message is charged its estimate *before* it is parsed, and the
//! [`Charge`] travels with it (a waiting request, the request's task, the
//! notification queue): it is released when dropped, when the handler task
//! ends or is aborted, or the message is refused, answered by the
//! transport or routed.
//!
//! Responses, `notifications/cancelled` and `ping` have a reserve of their
//! own, 1/8 of the limit, used first: they end or unblock requests (or are
//! answered at once), so a full budget must not keep them out. One too
//! large for the reserve is admitted like any other message.
//!
//! One client (stdio: [`take`](InboundBudget::take)). The reader waits
//! while the budget cannot afford a line, and meanwhile reads nothing
//! more, so back-pressure reaches the client's writes. A message fits if
//! the total stays within the limit, and is always admitted when nothing
//! is held: one message larger than the budget is still served, alone.
//! Two may wait at once: the reader (for a control message) and the task
//! holding the one request line that did not fit; a release wakes both.
//! So the total stays within `limit + limit / 8`, or one message's
//! estimate plus the reserve when that is larger.
//!
//! Many clients (HTTP: [`try_take_shared`](InboundBudget::try_take_shared)).
//! Nothing waits and nothing passes the limit. Each client holds at most
//! its [`Share`], a quarter of the limit: a larger message is refused
//! whatever is held. All clients together hold at most 7/8 of the limit;
//! the last eighth is kept for newcomers, a client holding nothing, for
//! one message of at most [`NEWCOMER_MESSAGE`] bytes each, so that one
//! client, or a few, holding all they can still leave room for another's
//! `initialize` and first call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

use crate::memory_estimate::Estimate;

/// The largest message a newcomer may bring into the room kept for
/// newcomers: an `initialize` or a small call (about 4 KiB each), with
/// room to spare.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) const NEWCOMER_MESSAGE: usize = 16 * 1024;

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

/// What one of many clients holds of the budget: at most
/// [`InboundBudget::share`] bytes.
#[derive(Debug, Default)]
pub(crate) struct Share {
    held: AtomicUsize,
}

impl Share {
    /// Bytes its client holds now.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    #[inline]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

/// Bytes held for one message; released when dropped.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<InboundBudget>,
    bytes: usize,
    reserve: bool,
    /// The share of its client, when the budget is shared out.
    share: Option<Arc<Share>>,
}

/// Why one of many clients got no room for a message.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The message alone is more than a client's share: it never fits.
    TooLarge {
        /// Its estimate.
        bytes: usize,
        /// [`InboundBudget::share`].
        share: usize,
    },
    /// The client holds its share in messages not yet done with.
    ShareInUse {
        /// [`InboundBudget::share`].
        share: usize,
    },
    /// The clients together hold all they may.
    Full,
}

/// `held + bytes` into `at` if the sum stays within `ceiling`; the value
/// before.
fn add_within(at: &AtomicUsize, bytes: usize, ceiling: usize) -> Result<usize, usize> {
    at.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
        let after = held.saturating_add(bytes);
        (after <= ceiling).then_some(after)
    })
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

    /// The most one of many clients may hold: a quarter of the limit.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    #[inline]
    pub(crate) fn share(&self) -> usize {
        self.limit / 4
    }

    /// A charge of `e` on the control reserve, if it is a control message
    /// and fits there.
    fn try_reserve(self: &Arc<Self>, e: Estimate) -> Option<Charge> {
        if !e.is_control() {
            return None;
        }
        add_within(&self.reserve_held, e.bytes(), self.limit / 8).ok()?;
        Some(self.charge(e.bytes(), true, None))
    }

    fn charge(self: &Arc<Self>, bytes: usize, reserve: bool, share: Option<Arc<Share>>) -> Charge {
        Charge {
            budget: self.clone(),
            bytes,
            reserve,
            share,
        }
    }

    /// Charges `e` if it fits now (one client: alone, any message fits).
    pub(crate) fn try_take(self: &Arc<Self>, e: Estimate) -> Option<Charge> {
        if let Some(c) = self.try_reserve(e) {
            return Some(c);
        }
        let lone = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                let after = held.saturating_add(e.bytes());
                (held == 0 || after <= self.limit).then_some(after)
            })
            .ok()?;
        if lone == 0 && e.bytes() > self.limit {
            tracing::debug!(
                bytes = e.bytes(),
                limit = self.limit,
                "message over max_inbound_bytes admitted alone"
            );
        }
        Some(self.charge(e.bytes(), false, None))
    }

    /// Charges `e` to the client of `share` if it fits now: within the
    /// client's share, and within 7/8 of the limit for all clients, or the
    /// whole limit for a newcomer's small message (module documentation).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn try_take_shared(
        self: &Arc<Self>,
        share: &Arc<Share>,
        e: Estimate,
    ) -> Result<Charge, Refused> {
        let cap = self.share();
        if e.bytes() > cap {
            return Err(Refused::TooLarge {
                bytes: e.bytes(),
                share: cap,
            });
        }
        if let Some(c) = self.try_reserve(e) {
            return Ok(c);
        }
        let before = add_within(&share.held, e.bytes(), cap)
            .map_err(|_| Refused::ShareInUse { share: cap })?;
        let newcomer = before == 0 && e.bytes() <= NEWCOMER_MESSAGE;
        let ceiling = if newcomer {
            self.limit
        } else {
            self.limit - self.limit / 8
        };
        if add_within(&self.held, e.bytes(), ceiling).is_err() {
            share.held.fetch_sub(e.bytes(), Ordering::AcqRel);
            return Err(Refused::Full);
        }
        Ok(self.charge(e.bytes(), false, Some(share.clone())))
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
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Gives back all but `bytes` of the charge (nothing when it holds
    /// that or less): what its message held and no longer does.
    pub(crate) fn shrink_to(&mut self, bytes: usize) {
        let freed = self.bytes.saturating_sub(bytes);
        if freed > 0 {
            self.bytes -= freed;
            self.give_back(freed);
        }
    }

    fn give_back(&self, bytes: usize) {
        let pool = if self.reserve {
            &self.budget.reserve_held
        } else {
            &self.budget.held
        };
        pool.fetch_sub(bytes, Ordering::AcqRel);
        if let Some(share) = &self.share {
            share.held.fetch_sub(bytes, Ordering::AcqRel);
        }
        // Every waiter (two at most): each registered its `Notified` before
        // its last try, so none misses this release.
        self.budget.released.notify_waiters();
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.give_back(self.bytes);
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

    #[test]
    fn a_client_holds_at_most_its_share_and_a_larger_message_never_fits() {
        let b = InboundBudget::new(1000);
        let (alice, bob) = (Arc::new(Share::default()), Arc::new(Share::default()));
        assert_eq!(
            b.try_take_shared(&alice, req(251)).unwrap_err(),
            Refused::TooLarge {
                bytes: 251,
                share: 250
            },
            "alone, and still more than a share"
        );
        let a = b
            .try_take_shared(&alice, req(200))
            .expect("within the share");
        assert_eq!(
            b.try_take_shared(&alice, req(100)).unwrap_err(),
            Refused::ShareInUse { share: 250 }
        );
        let _b = b.try_take_shared(&bob, req(200)).expect("bob's own share");
        assert_eq!((alice.held(), bob.held(), b.held()), (200, 200, 400));
        drop(a);
        assert_eq!((alice.held(), b.held()), (0, 200));
    }

    #[test]
    fn clients_together_leave_an_eighth_to_newcomers_one_small_message_each() {
        // 64 KiB: shares of 16 KiB, 56 KiB for all clients, 8 KiB for
        // newcomers.
        let b = InboundBudget::new(64 * 1024);
        let clients: Vec<_> = (0..4).map(|_| Arc::new(Share::default())).collect();
        let _held: Vec<_> = clients
            .iter()
            .map(|c| b.try_take_shared(c, req(14 * 1024)).expect("fits"))
            .collect();
        for c in &clients {
            // Each holds something: no newcomer.
            assert_eq!(b.try_take_shared(c, req(1024)).unwrap_err(), Refused::Full);
        }
        let big_newcomer = Arc::new(Share::default());
        assert_eq!(
            b.try_take_shared(&big_newcomer, req(NEWCOMER_MESSAGE + 1))
                .unwrap_err(),
            Refused::TooLarge {
                bytes: NEWCOMER_MESSAGE + 1,
                share: 16 * 1024
            }
        );
        let newcomer = Arc::new(Share::default());
        let first = b
            .try_take_shared(&newcomer, req(4096))
            .expect("the newcomers' room");
        assert_eq!(
            b.try_take_shared(&newcomer, req(1)).unwrap_err(),
            Refused::Full,
            "a newcomer once"
        );
        assert_eq!(newcomer.held(), 4096, "a refusal gives the share back");
        drop(first);
        assert_eq!(b.held(), 56 * 1024);
    }

    #[test]
    fn a_shrunk_charge_gives_back_to_the_pool_and_the_share() {
        let b = InboundBudget::new(1000);
        let alice = Arc::new(Share::default());
        let mut c = b.try_take_shared(&alice, req(200)).expect("fits");
        c.shrink_to(50);
        assert_eq!((c.bytes(), alice.held(), b.held()), (50, 50, 50));
        c.shrink_to(80);
        assert_eq!(c.bytes(), 50, "never grows");
        drop(c);
        assert_eq!((alice.held(), b.held()), (0, 0));
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
