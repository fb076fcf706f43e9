//! The room for request bodies being read (`max_inbound_bytes`), shared
//! out so that bodies one client stalls cost that client, not everyone.
//!
//! A body takes room as its bytes arrive, from two places:
//! - a reserve of 1/8 of the room, for small bodies (at most
//!   [`SMALL_BODY`]: every request but uploads), taken without waiting
//!   when it has room and the body's [`Owner`] holds less than its part
//!   of it (1/8 of the reserve, and at least one small body);
//! - the rest, shared, where a body waits while its owner holds its
//!   share (a quarter of the rest, and at least one body of
//!   `max_message_bytes`), then while the room is full.
//!
//! So no owner holds more than its share and its part of the reserve, and
//! what is left of the reserve goes to small bodies of other owners. The
//! bytes that complete a body take no room: the room bounds what bodies
//! hold while they wait for more, and a body that has all its bytes
//! (every small request sent whole, as clients send them) waits for
//! nothing, whoever holds the room.
//!
//! Every wait is inside the body's deadline (`body_timeout`), which the
//! caller sets.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::principal::Owner;

/// A body of at most this many bytes may take room from the reserve.
pub(crate) const SMALL_BODY: usize = 64 * 1024;

/// See the [module documentation](self).
pub(crate) struct BodyRoom {
    shared: Arc<Semaphore>,
    shared_total: usize,
    reserve: Arc<Semaphore>,
    /// What one owner may hold of the shared room.
    share: usize,
    /// What one owner may hold of the reserve.
    reserve_share: usize,
    owners: Mutex<HashMap<Owner, Arc<OwnerRoom>>>,
}

/// What one owner may still take: of the shared room, of the reserve.
struct OwnerRoom {
    shared: Arc<Semaphore>,
    reserve: Arc<Semaphore>,
}

/// The room one body holds; given back when dropped.
pub(crate) struct Held {
    room: Arc<BodyRoom>,
    owner: Owner,
    mine: Option<Arc<OwnerRoom>>,
    of_owner: Option<OwnedSemaphorePermit>,
    of_shared: Option<OwnedSemaphorePermit>,
    of_owner_reserve: Option<OwnedSemaphorePermit>,
    of_reserve: Option<OwnedSemaphorePermit>,
}

/// The server stopped while a body waited for room.
#[derive(Debug)]
pub(crate) struct Closed;

fn merge(slot: &mut Option<OwnedSemaphorePermit>, p: OwnedSemaphorePermit) {
    match slot {
        Some(s) => s.merge(p),
        None => *slot = Some(p),
    }
}

fn held(slot: &Option<OwnedSemaphorePermit>) -> usize {
    slot.as_ref().map_or(0, OwnedSemaphorePermit::num_permits)
}

/// One acquisition takes at most `u32::MAX` permits.
fn permits(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl BodyRoom {
    /// Room for `total` bytes of bodies at once, of which one may be
    /// `max_body` bytes.
    pub(crate) fn new(total: usize, max_body: usize) -> Arc<Self> {
        let total = total.clamp(8, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        let reserve = total / 8;
        let shared_total = total - reserve;
        let share = (shared_total / 4).max(max_body.min(shared_total)).max(1);
        let reserve_share = (reserve / 8).max(SMALL_BODY.min(reserve)).max(1);
        Arc::new(BodyRoom {
            shared: Arc::new(Semaphore::new(shared_total)),
            shared_total,
            reserve: Arc::new(Semaphore::new(reserve)),
            share,
            reserve_share,
            owners: Mutex::new(HashMap::new()),
        })
    }

    /// Nothing held yet, for a body of `owner`.
    pub(crate) fn hold(self: &Arc<Self>, owner: Owner) -> Held {
        Held {
            room: self.clone(),
            owner,
            mine: None,
            of_owner: None,
            of_shared: None,
            of_owner_reserve: None,
            of_reserve: None,
        }
    }

    fn owner_room(&self, owner: &Owner) -> Arc<OwnerRoom> {
        crate::sync::lock(&self.owners)
            .entry(owner.clone())
            .or_insert_with(|| {
                Arc::new(OwnerRoom {
                    shared: Arc::new(Semaphore::new(self.share)),
                    reserve: Arc::new(Semaphore::new(self.reserve_share)),
                })
            })
            .clone()
    }
}

impl OwnerRoom {
    /// Whether the owner holds nothing.
    fn is_unused(&self, room: &BodyRoom) -> bool {
        self.shared.available_permits() == room.share
            && self.reserve.available_permits() == room.reserve_share
    }
}

impl Held {
    /// Takes room for `n` more bytes of a body that has `so_far` bytes
    /// (and declared `declared`), waiting while there is none. A body
    /// larger than the owner's share, or than the whole room, is read
    /// once it holds all of it; bytes that complete the declared length
    /// take nothing.
    ///
    /// Cancel safety: cancel safe (what it took before is kept).
    pub(crate) async fn take(
        &mut self,
        n: usize,
        so_far: usize,
        declared: Option<usize>,
    ) -> Result<(), Closed> {
        if declared == Some(so_far.saturating_add(n)) {
            return Ok(());
        }
        let room = self.room.clone();
        let mine = match &self.mine {
            Some(m) => m.clone(),
            None => {
                let m = room.owner_room(&self.owner);
                self.mine = Some(m.clone());
                m
            }
        };
        let small = declared.is_none_or(|d| d <= SMALL_BODY) && so_far + n <= SMALL_BODY;
        if small && held(&self.of_owner) == 0 && held(&self.of_shared) == 0 {
            if let Ok(p) = mine.reserve.clone().try_acquire_many_owned(permits(n)) {
                if let Ok(q) = room.reserve.clone().try_acquire_many_owned(permits(n)) {
                    merge(&mut self.of_owner_reserve, p);
                    merge(&mut self.of_reserve, q);
                    return Ok(());
                }
            }
        }
        let want = n.min(room.share.saturating_sub(held(&self.of_owner)));
        if want > 0 {
            let p = mine
                .shared
                .clone()
                .acquire_many_owned(permits(want))
                .await
                .map_err(|_| Closed)?;
            merge(&mut self.of_owner, p);
        }
        let want = n.min(room.shared_total.saturating_sub(held(&self.of_shared)));
        if want > 0 {
            let p = room
                .shared
                .clone()
                .acquire_many_owned(permits(want))
                .await
                .map_err(|_| Closed)?;
            merge(&mut self.of_shared, p);
        }
        Ok(())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.of_reserve.take();
        self.of_owner_reserve.take();
        self.of_shared.take();
        self.of_owner.take();
        // The owner's entry goes once no body holds or waits on it.
        if let Some(mine) = self.mine.take() {
            let mut owners = crate::sync::lock(&self.room.owners);
            if Arc::strong_count(&mine) == 2 && mine.is_unused(&self.room) {
                owners.remove(&self.owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::net::{IpAddr, Ipv4Addr};
    use std::task::{Context, Poll, Waker};

    use super::super::principal::PeerGroup;
    use super::*;

    /// The owner of 10.0.0.`last` (an owner of its own).
    fn peer(last: u8) -> Owner {
        Owner::Peer(PeerGroup::of(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))))
    }

    /// `fut`'s output if it has it on its first poll, `None` if it waits
    /// (`take` is cancel safe: dropping it then takes nothing).
    fn at_once<F: Future>(fut: F) -> Option<F::Output> {
        match std::pin::pin!(fut).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(out) => Some(out),
            Poll::Pending => None,
        }
    }

    #[tokio::test]
    async fn one_owner_holds_at_most_its_share_and_others_still_get_room() {
        let room = BodyRoom::new(64, 16);
        // shared 56, reserve 8, share max(14, 16) = 16.
        let mut a = room.hold(peer(2));
        a.take(16, 0, Some(SMALL_BODY + 1)).await.unwrap();
        let mut a2 = room.hold(peer(2));
        assert!(
            at_once(a2.take(1, 0, Some(SMALL_BODY + 1))).is_none(),
            "a second body beyond the owner's share got room"
        );
        let mut b = room.hold(peer(1));
        b.take(16, 0, Some(SMALL_BODY + 1)).await.unwrap();
        drop(a);
        at_once(a2.take(1, 0, Some(SMALL_BODY + 1)))
            .expect("room once the owner's first body is done")
            .unwrap();
    }

    #[tokio::test]
    async fn small_bodies_use_the_reserve_when_the_room_is_full() {
        let room = BodyRoom::new(80, 20);
        // shared 70, reserve 10; fill the shared room with four owners.
        let mut held = Vec::new();
        for i in 2..6 {
            let mut h = room.hold(peer(i));
            h.take(17, 0, Some(SMALL_BODY + 1)).await.unwrap();
            held.push(h);
        }
        let mut small = room.hold(peer(1));
        at_once(small.take(5, 0, Some(6)))
            .expect("a small body waited though the reserve had room")
            .unwrap();
    }

    #[tokio::test]
    async fn an_owner_entry_is_gone_once_its_bodies_are() {
        let room = BodyRoom::new(64, 16);
        let mut a = room.hold(peer(2));
        a.take(20, 0, Some(100_000)).await.unwrap();
        assert_eq!(crate::sync::lock(&room.owners).len(), 1);
        drop(a);
        assert_eq!(crate::sync::lock(&room.owners).len(), 0);
    }

    /// Fills the shared room with four owners' large bodies.
    async fn full(room: &Arc<BodyRoom>, each: usize) -> Vec<Held> {
        let mut held = Vec::new();
        for i in 2..6 {
            let mut h = room.hold(peer(i));
            h.take(each, 0, Some(SMALL_BODY * 4)).await.unwrap();
            held.push(h);
        }
        held
    }

    #[tokio::test]
    async fn one_owner_takes_at_most_its_part_of_the_reserve() {
        // Reserve 256 KiB, 64 KiB (one small body) per owner.
        let room = BodyRoom::new(2048 * 1024, 1024 * 1024);
        let _shared = full(&room, 448 * 1024).await;
        // An owner stalls small bodies, 1 byte short each.
        let mut stalled = Vec::new();
        let mut waited = 0;
        for _ in 0..8 {
            let mut h = room.hold(peer(7));
            let take = h.take(SMALL_BODY / 2, 0, Some(SMALL_BODY / 2 + 1));
            match at_once(take) {
                Some(r) => r.unwrap(),
                None => waited += 1,
            }
            stalled.push(h);
        }
        assert_eq!(
            waited, 6,
            "the owner's part of the reserve is two half bodies"
        );
        // Another owner's small body, arriving in two pieces, gets room.
        let mut other = room.hold(peer(1));
        at_once(other.take(100, 0, Some(150)))
            .expect("one owner's stalled bodies held the whole reserve")
            .unwrap();
    }

    #[tokio::test]
    async fn the_bytes_that_complete_a_body_never_wait() {
        let room = BodyRoom::new(80, 20);
        let _shared = full(&room, 17).await;
        let mut reserve = room.hold(peer(6));
        reserve.take(10, 0, Some(11)).await.unwrap();
        // Shared and reserve full; a whole body, and the end of one.
        let mut whole = room.hold(peer(1));
        at_once(whole.take(5, 0, Some(5)))
            .expect("a whole body waited")
            .unwrap();
        at_once(reserve.take(1, 10, Some(11)))
            .expect("the last byte of a body waited")
            .unwrap();
    }
}
