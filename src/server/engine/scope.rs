//! The requests of one client: a stdio session, an HTTP session, or the
//! 2026-07-28 requests of one principal.
//!
//! - **Ids.** Where the revision has sessions (stdio, 2025-11-25 HTTP), an
//!   id in flight or waiting is unique: a second request with it is refused
//!   ([`Duplicate`]; `5` and `"5"` are different ids). 2026-07-28 requests
//!   stand alone, so their ids may repeat.
//! - **`max_in_flight`.** At most that many requests of the scope run at
//!   once; the others wait in arrival order. A `subscriptions/listen`
//!   stream is a subscription, not work: listen streams have a pool of
//!   their own, of the same size, so they can neither starve requests nor
//!   grow without bound. What waits is bounded by the bytes it holds
//!   (`max_inbound_bytes`), not by a count, so cancellations behind a long
//!   queue are still read and acted on.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::jsonrpc::{codes, ErrorObject, Request, RequestId};
use crate::server::handle::{SessionId, SessionShared};

use super::budget::Charge;
use super::dispatch::Dispatch;

/// A request refused because its id is in flight in its scope.
#[derive(Debug)]
pub(crate) struct Duplicate<R>(pub(crate) R);

/// What a client is told of a request refused as a [`Duplicate`], on every
/// transport.
pub(crate) fn duplicate_message(id: &RequestId) -> String {
    format!("duplicate request id {id}: a request with this id is in flight")
}

/// The error a stdio client gets for a [`Duplicate`] (HTTP answers its
/// refusal type's).
pub(crate) fn duplicate_error(id: &RequestId) -> ErrorObject {
    ErrorObject::new(codes::INVALID_REQUEST, duplicate_message(id))
}

/// Which slots a request takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pool {
    /// Every request but a listen stream.
    Work = 0,
    /// `subscriptions/listen` streams.
    Listen = 1,
}

impl Pool {
    pub(crate) fn of(method: &str) -> Pool {
        if method == crate::protocol::methods::SUBSCRIPTIONS_LISTEN {
            Pool::Listen
        } else {
            Pool::Work
        }
    }
}

/// A request waiting for a slot, with what it needs to start.
pub(crate) struct Queued<R> {
    pub(crate) req: Request,
    pub(crate) d: Dispatch,
    pub(crate) charge: Charge,
    pub(crate) reply: R,
    pub(crate) pool: Pool,
}

pub(crate) struct ScopeState<R> {
    /// Unique scopes: each id in flight or waiting, and its key.
    by_id: HashMap<RequestId, u64>,
    /// The keys of the requests running, and the pool of each.
    running: HashMap<u64, Pool, BuildHasherDefault<KeyHasher>>,
    /// Running requests per pool.
    busy: [usize; 2],
    /// Waiting requests per pool, by key (keys grow: the first is the
    /// oldest).
    queue: [BTreeMap<u64, Queued<R>>; 2],
}

impl<R> ScopeState<R> {
    /// Takes the waiting request `key` out of its queue.
    pub(crate) fn unqueue(&mut self, key: u64) -> Option<Queued<R>> {
        self.queue[0]
            .remove(&key)
            .or_else(|| self.queue[1].remove(&key))
    }

    /// Records the id of request `key` in a unique scope; false if a
    /// request with that id is already in flight or waiting.
    #[inline]
    pub(crate) fn claim_id(&mut self, id: &RequestId, key: u64) -> bool {
        match self.by_id.entry(id.clone()) {
            Entry::Occupied(_) => false,
            Entry::Vacant(v) => {
                v.insert(key);
                true
            }
        }
    }

    /// Forgets the id of a request that leaves a unique scope.
    #[inline]
    pub(crate) fn release_id(&mut self, id: &RequestId) {
        self.by_id.remove(id);
    }

    /// Whether `pool` runs `max_in_flight` requests already.
    #[inline]
    pub(crate) fn is_full(&self, pool: Pool, max_in_flight: usize) -> bool {
        self.busy[pool as usize] >= max_in_flight
    }

    /// Queues request `key` until its pool has a slot.
    #[inline]
    pub(crate) fn enqueue(&mut self, pool: Pool, key: u64, q: Queued<R>) {
        self.queue[pool as usize].insert(key, q);
    }

    /// Takes the oldest waiting request of `pool` if the pool has a slot.
    #[inline]
    pub(crate) fn next_waiting(
        &mut self,
        pool: Pool,
        max_in_flight: usize,
    ) -> Option<(u64, Queued<R>)> {
        if self.is_full(pool, max_in_flight) {
            return None;
        }
        self.queue[pool as usize].pop_first()
    }

    /// Request `key` of `pool` started: it takes a slot.
    #[inline]
    pub(crate) fn started(&mut self, key: u64, pool: Pool) {
        self.running.insert(key, pool);
        self.busy[pool as usize] += 1;
    }

    /// Request `key` (id `id`) ended: its slot is free, and in a unique
    /// scope its id too unless a later request took it.
    #[inline]
    pub(crate) fn ended(&mut self, key: u64, id: &RequestId, unique_ids: bool) {
        if let Some(pool) = self.running.remove(&key) {
            self.busy[pool as usize] -= 1;
        }
        if unique_ids && self.by_id.get(id) == Some(&key) {
            self.by_id.remove(id);
        }
    }

    fn waiting(&self) -> usize {
        self.queue[0].len() + self.queue[1].len()
    }
}

/// See the [module documentation](self).
pub(crate) struct Scope<R> {
    /// The session state its requests' contexts and handles share.
    shared: Arc<SessionShared>,
    /// The session's id, or one of its own for a scope without sessions.
    id: SessionId,
    unique_ids: bool,
    max_in_flight: usize,
    state: Mutex<ScopeState<R>>,
    /// Woken whenever a request of the scope ends or leaves the queue.
    changed: Notify,
}

impl<R> Scope<R> {
    /// The session state its requests' contexts and handles share.
    #[inline]
    pub(crate) fn shared(&self) -> &Arc<SessionShared> {
        &self.shared
    }

    /// Wakes whoever waits for a request of the scope to end or leave the
    /// queue.
    #[inline]
    pub(crate) fn notify_changed(&self) {
        self.changed.notify_waiters();
    }

    /// The id its held calls are kept under.
    #[inline]
    pub(crate) fn id(&self) -> &SessionId {
        &self.id
    }

    /// A scope whose requests run against `shared`; `unique_ids` where the
    /// revision has sessions (the scope is then the session's).
    pub(crate) fn new(shared: Arc<SessionShared>, unique_ids: bool) -> Arc<Self> {
        let max_in_flight = shared.config().get_max_in_flight().max(1);
        let id = match unique_ids {
            true => shared.id().clone(),
            false => SessionId::local("requests"),
        };
        Arc::new(Scope {
            shared,
            id,
            unique_ids,
            max_in_flight,
            state: Mutex::new(ScopeState {
                by_id: HashMap::new(),
                running: HashMap::default(),
                busy: [0, 0],
                queue: [BTreeMap::new(), BTreeMap::new()],
            }),
            changed: Notify::new(),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, ScopeState<R>> {
        crate::sync::lock(&self.state)
    }

    pub(crate) fn unique_ids(&self) -> bool {
        self.unique_ids
    }

    pub(crate) fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// The key of the request with `id` in flight or waiting (unique
    /// scopes only).
    pub(crate) fn key_of(&self, id: &RequestId) -> Option<u64> {
        self.lock().by_id.get(id).copied()
    }

    /// Requests running and waiting.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let st = self.lock();
        (st.running.len(), st.waiting())
    }

    /// Whether nothing runs and nothing waits.
    pub(crate) fn is_empty(&self) -> bool {
        let st = self.lock();
        st.running.is_empty() && st.waiting() == 0
    }

    /// The keys of the requests running.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn running_keys(&self) -> HashSet<u64> {
        self.lock().running.keys().copied().collect()
    }

    /// Takes every waiting request out (its reply is the caller's to end).
    pub(crate) fn take_queue(&self) -> Vec<Queued<R>> {
        let mut st = self.lock();
        let [work, listen] = std::mem::take(&mut st.queue);
        let all: Vec<Queued<R>> = work.into_values().chain(listen.into_values()).collect();
        for q in &all {
            st.by_id.remove(&q.req.id);
        }
        drop(st);
        self.changed.notify_waiters();
        all
    }

    /// Waits until nothing runs and nothing waits. Cancel safe.
    pub(crate) async fn emptied(&self) {
        crate::sync::until(&self.changed, || self.is_empty()).await;
    }
}

/// Hashes the engine's request keys. The engine hands them out, the client
/// cannot choose them, so SipHash's defence against chosen keys buys
/// nothing here.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: spreads consecutive keys over all the bits.
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
