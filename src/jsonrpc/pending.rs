//! Requests sent and waiting for their response: the ids they were sent
//! with, and who waits for each. One table type for both halves: the
//! client's calls (its waiters are reply slots) and the server's
//! server-to-client requests (oneshot senders).
//!
//! The lock is never held across an await or while a waiter is answered:
//! every method takes what it needs out and returns.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use super::RequestId;
use crate::sync::lock;

/// Who waits under which id, and the next id to send.
#[derive(Debug)]
pub(crate) struct PendingTable<W> {
    entries: Mutex<Entries<W>>,
    next_id: AtomicI64,
}

#[derive(Debug)]
struct Entries<W> {
    waiters: HashMap<RequestId, W>,
    /// The only generation whose inserts [`PendingTable::insert_for`]
    /// takes; `None` between a [`take_all`](PendingTable::take_all) and the
    /// next [`accept`](PendingTable::accept).
    accepting: Option<u64>,
}

impl<W> Default for PendingTable<W> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(Entries {
                waiters: HashMap::new(),
                accepting: None,
            }),
            next_id: AtomicI64::new(1),
        }
    }
}

impl<W> PendingTable<W> {
    /// A fresh id (numbers from 1; never reused while the table lives).
    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Records `w` as waiting under `id`.
    pub(crate) fn insert(&self, id: RequestId, w: W) {
        lock(&self.entries).waiters.insert(id, w);
    }

    /// Records `w` only while generation `gen` is accepted; gives it back
    /// otherwise (that generation's waiters were all taken: an insert now
    /// would never be answered nor failed).
    pub(crate) fn insert_for(&self, gen: u64, id: RequestId, w: W) -> Result<(), W> {
        let mut e = lock(&self.entries);
        if e.accepting != Some(gen) {
            return Err(w);
        }
        e.waiters.insert(id, w);
        Ok(())
    }

    /// Accepts [`insert_for`](Self::insert_for) of generation `gen`.
    pub(crate) fn accept(&self, gen: u64) {
        lock(&self.entries).accepting = Some(gen);
    }

    /// Removes the waiter of `id`.
    pub(crate) fn remove(&self, id: &RequestId) -> Option<W> {
        lock(&self.entries).waiters.remove(id)
    }

    /// Removes the waiter of `id` if `take` holds for it.
    pub(crate) fn remove_if(&self, id: &RequestId, take: impl FnOnce(&W) -> bool) -> Option<W> {
        let mut e = lock(&self.entries);
        if !e.waiters.get(id).is_some_and(take) {
            return None;
        }
        e.waiters.remove(id)
    }

    /// What `look` makes of the waiter of `id` (or of none), in place.
    pub(crate) fn peek<R>(&self, id: &RequestId, look: impl FnOnce(Option<&W>) -> R) -> R {
        look(lock(&self.entries).waiters.get(id))
    }

    /// Drops every waiter for which `keep` is false.
    pub(crate) fn retain(&self, keep: impl FnMut(&RequestId, &mut W) -> bool) {
        lock(&self.entries).waiters.retain(keep);
    }

    /// Takes every waiter and stops accepting inserts for a generation,
    /// atomically.
    pub(crate) fn take_all(&self) -> Vec<W> {
        let mut e = lock(&self.entries);
        e.accepting = None;
        e.waiters.drain().map(|(_, w)| w).collect()
    }

    /// How many wait.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.entries).waiters.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_inserts_only_while_accepted() {
        let t = PendingTable::<u8>::default();
        let id = t.next_id();
        assert_eq!(t.insert_for(1, id.clone(), 7), Err(7));
        t.accept(1);
        assert_eq!(t.insert_for(1, id.clone(), 7), Ok(()));
        assert_eq!(t.insert_for(2, t.next_id(), 8), Err(8));
        assert_eq!(t.take_all(), vec![7]);
        assert_eq!(
            t.insert_for(1, id, 9),
            Err(9),
            "a taken generation stays closed"
        );
    }

    #[test]
    fn ids_are_fresh_and_conditional_removal_checks_the_waiter() {
        let t = PendingTable::<u8>::default();
        let (a, b) = (t.next_id(), t.next_id());
        assert_ne!(a, b);
        t.insert(a.clone(), 1);
        assert_eq!(t.remove_if(&a, |w| *w == 2), None);
        assert_eq!(t.peek(&a, |w| w.copied()), Some(1));
        assert_eq!(t.remove_if(&a, |w| *w == 1), Some(1));
        assert_eq!(t.len(), 0);
    }
}
