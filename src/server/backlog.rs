//! Requests waiting for a handler slot (past
//! [`max_in_flight`](super::ServerConfig::max_in_flight)), in arrival order.
//!
//! The backlog is bounded by the inbound byte budget (every entry holds its
//! message's [`Charge`]), not by a count: a count bounded nothing that the
//! budget does not, and made the server stop reading while the budget still
//! had room, so the cancellations behind the queued requests were not read
//! until handlers ended on their own. With the queue this long, finding an
//! id must not be a scan: duplicates and cancellations look ids up in a
//! map, and a cancelled entry goes at once, charge and all.

use std::collections::{BTreeMap, HashMap};

use crate::jsonrpc::{Request, RequestId};

use super::budget::Charge;
use super::dispatch::Dispatch;

/// A queued request, with what it needs to start and the bytes it holds.
pub(crate) type Queued = (Request, Dispatch, Charge);

/// See the [module documentation](self).
#[derive(Default)]
pub(crate) struct Backlog {
    /// Arrival number of the next request.
    next: u64,
    /// By arrival number: the first is the next to start.
    queue: BTreeMap<u64, Queued>,
    /// Each queued request's arrival number.
    ids: HashMap<RequestId, u64>,
}

impl Backlog {
    /// Queues a request. Its id must not be queued already (the session
    /// refuses duplicates before).
    pub(crate) fn push(&mut self, q: Queued) {
        let n = self.next;
        self.next += 1;
        self.ids.insert(q.0.id.clone(), n);
        self.queue.insert(n, q);
    }

    /// The request that came first.
    pub(crate) fn pop(&mut self) -> Option<Queued> {
        let (_, q) = self.queue.pop_first()?;
        self.ids.remove(&q.0.id);
        Some(q)
    }

    /// Removes (and so releases the charge of) the request with this id;
    /// returns whether one was queued.
    pub(crate) fn remove(&mut self, id: &RequestId) -> bool {
        match self.ids.remove(id) {
            Some(n) => self.queue.remove(&n).is_some(),
            None => false,
        }
    }

    pub(crate) fn contains(&self, id: &RequestId) -> bool {
        self.ids.contains_key(id)
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Drops every queued request (and its charge).
    pub(crate) fn clear(&mut self) {
        self.queue.clear();
        self.ids.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::footprint::Estimate;
    use crate::protocol::Era;
    use crate::server::budget::InboundBudget;

    #[test]
    fn requests_start_in_order_and_a_cancelled_one_releases_its_bytes_at_once() {
        let budget = InboundBudget::new(1 << 20);
        let mut b = Backlog::default();
        for id in 1..=3 {
            let req = Request {
                id: RequestId::Number(id),
                method: "m".into(),
                params: None,
            };
            let d = Dispatch {
                era: Era::Legacy,
                meta: None,
                client_capabilities: None,
                input_responses: None,
                request_state: None,
            };
            let charge = budget
                .try_take(Estimate {
                    bytes: 100,
                    control: false,
                })
                .expect("fits");
            b.push((req, d, charge));
        }
        assert_eq!((b.len(), budget.held()), (3, 300));
        assert!(b.remove(&RequestId::Number(2)));
        assert!(!b.remove(&RequestId::Number(2)), "already gone");
        assert_eq!(budget.held(), 200, "released when removed");
        assert!(b.contains(&RequestId::Number(3)) && !b.contains(&RequestId::Number(2)));
        let order: Vec<_> = std::iter::from_fn(|| b.pop().map(|q| q.0.id)).collect();
        assert_eq!(order, [RequestId::Number(1), RequestId::Number(3)]);
        assert!(b.is_empty());
    }
}
