//! The room for request bodies being read (`max_inbound_bytes`), shared
//! out so that bodies one client stalls cost that client, not everyone.
//!
//! A body takes room as its bytes arrive, from two places:
//! - a reserve of 1/8 of the room, for small bodies (at most
//!   [`SMALL_BODY`]: every request but uploads), taken without waiting
//!   when it has room;
//! - the rest, shared, where a body waits while its [`Owner`] holds its
//!   share (a quarter of the room, and at least one body of
//!   `max_message_bytes`), then while the room is full.
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
    owners: Mutex<HashMap<Owner, Arc<Semaphore>>>,
}

/// The room one body holds; given back when dropped.
pub(crate) struct Held {
    room: Arc<BodyRoom>,
    owner: Owner,
    owner_sem: Option<Arc<Semaphore>>,
    of_owner: Option<OwnedSemaphorePermit>,
    of_shared: Option<OwnedSemaphorePermit>,
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
        Arc::new(BodyRoom {
            shared: Arc::new(Semaphore::new(shared_total)),
            shared_total,
            reserve: Arc::new(Semaphore::new(reserve)),
            share,
            owners: Mutex::new(HashMap::new()),
        })
    }

    /// Nothing held yet, for a body of `owner`.
    pub(crate) fn hold(self: &Arc<Self>, owner: Owner) -> Held {
        Held {
            room: self.clone(),
            owner,
            owner_sem: None,
            of_owner: None,
            of_shared: None,
            of_reserve: None,
        }
    }

    fn owner_sem(&self, owner: &Owner) -> Arc<Semaphore> {
        crate::sync::lock(&self.owners)
            .entry(owner.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.share)))
            .clone()
    }
}

impl Held {
    /// Takes room for `n` more bytes of a body that has `so_far` bytes
    /// (and declared `declared`), waiting while there is none. A body
    /// larger than the owner's share, or than the whole room, is read
    /// once it holds all of it.
    ///
    /// Cancel safety: cancel safe (what it took before is kept).
    pub(crate) async fn take(
        &mut self,
        n: usize,
        so_far: usize,
        declared: Option<usize>,
    ) -> Result<(), Closed> {
        let room = self.room.clone();
        let small = declared.is_none_or(|d| d <= SMALL_BODY) && so_far + n <= SMALL_BODY;
        if small && held(&self.of_owner) == 0 && held(&self.of_shared) == 0 {
            if let Ok(p) = room.reserve.clone().try_acquire_many_owned(permits(n)) {
                merge(&mut self.of_reserve, p);
                return Ok(());
            }
        }
        let sem = match &self.owner_sem {
            Some(s) => s.clone(),
            None => {
                let s = room.owner_sem(&self.owner);
                self.owner_sem = Some(s.clone());
                s
            }
        };
        let want = n.min(room.share.saturating_sub(held(&self.of_owner)));
        if want > 0 {
            let p = sem
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
        self.of_shared.take();
        self.of_owner.take();
        // The owner's semaphore goes once nobody holds or waits on it.
        if let Some(sem) = self.owner_sem.take() {
            let mut owners = crate::sync::lock(&self.room.owners);
            if Arc::strong_count(&sem) == 2 && sem.available_permits() == self.room.share {
                owners.remove(&self.owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};
    use std::time::Duration;

    use super::*;

    fn peer(last: u8) -> Owner {
        Owner::Peer(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)))
    }

    #[tokio::test]
    async fn one_owner_holds_at_most_its_share_and_others_still_get_room() {
        let room = BodyRoom::new(64, 16);
        // shared 56, reserve 8, share max(14, 16) = 16.
        let mut a = room.hold(peer(2));
        a.take(16, 0, Some(SMALL_BODY + 1)).await.unwrap();
        let mut a2 = room.hold(peer(2));
        let waited = tokio::time::timeout(
            Duration::from_millis(50),
            a2.take(1, 0, Some(SMALL_BODY + 1)),
        )
        .await;
        assert!(
            waited.is_err(),
            "a second body beyond the owner's share got room"
        );
        let mut b = room.hold(peer(1));
        b.take(16, 0, Some(SMALL_BODY + 1)).await.unwrap();
        drop(a);
        tokio::time::timeout(Duration::from_secs(1), a2.take(1, 0, Some(SMALL_BODY + 1)))
            .await
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
        tokio::time::timeout(Duration::from_millis(50), small.take(5, 0, Some(5)))
            .await
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
}
