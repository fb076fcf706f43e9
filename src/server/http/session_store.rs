//! Where an HTTP server keeps its 2025-11-25 era sessions, and the policy
//! for a full table.
//!
//! [`LiveSessions`] is the seam: the endpoint, the idle expiry and the stop
//! sequence reach sessions only through it. [`MemorySessions`] keeps them
//! in this process, and their records in the server's
//! [`SessionStore`]: a session it does not hold live is materialised
//! from the record the store loads, whoever minted it.
//!
//! A session ends by DELETE, by its idle expiry or by the server's stop,
//! never to make room for another: an `initialize` past a quota takes the
//! place of a session only when that one has expired (idle for
//! `session_idle_timeout`, which the next sweep would end anyway), and is
//! refused otherwise.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::config::HttpConfig;
use super::principal::Owner;
use super::session::Session;
use super::session_record::{SessionRecord, SessionStore};

/// The live sessions of one HTTP server, by id.
///
/// Every method is quick and never waits on I/O: the endpoint calls them
/// while serving a request.
pub(crate) trait LiveSessions: Send + Sync + 'static {
    /// Adds a session; the expired session it took the place of, if any
    /// (ended by the caller). Refused when the owner's quota or the table
    /// is full and no session there has expired.
    fn insert(&self, session: Arc<Session>) -> Result<Option<Arc<Session>>, TableFull>;

    /// The session with this id, if it is live.
    fn get(&self, id: &str) -> Option<Arc<Session>>;

    /// Removes the session with this id; the session, if it was live.
    fn remove(&self, id: &str) -> Option<Arc<Session>>;

    /// Every live session (for a broadcast, and the stop sequence).
    fn all(&self) -> Vec<Arc<Session>>;

    /// Removes the sessions idle since `before`; returns them.
    fn take_idle(&self, before: Instant) -> Vec<Arc<Session>>;

    /// How many sessions are live.
    fn len(&self) -> usize {
        self.all().len()
    }
}

/// Why an `initialize` got no session.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TableFull {
    #[error("{}", super::rejection::sessions_full(true, *.0))]
    Principal(usize),
    #[error("{}", super::rejection::sessions_full(false, *.0))]
    Server(usize),
}

impl TableFull {
    /// The refusal of the `initialize` request `id`.
    pub(crate) fn rejection(&self, id: Option<crate::jsonrpc::RequestId>) -> super::Rejection {
        let (per_principal, max) = match *self {
            TableFull::Principal(max) => (true, max),
            TableFull::Server(max) => (false, max),
        };
        super::Rejection::SessionsFull {
            id,
            per_principal,
            max,
        }
    }
}

#[derive(Default)]
struct Table {
    map: HashMap<String, Arc<Session>>,
    per_owner: HashMap<Owner, usize>,
}

impl Table {
    fn remove(&mut self, id: &str) -> Option<Arc<Session>> {
        let s = self.map.remove(id)?;
        if let Some(n) = self.per_owner.get_mut(s.owner()) {
            *n -= 1;
            if *n == 0 {
                self.per_owner.remove(s.owner());
            }
        }
        Some(s)
    }

    /// The id of the session that expired longest ago (idle since
    /// `before`), of `owner` (any owner: `None`, and among them, of the
    /// owner holding the most).
    fn oldest_expired(&self, owner: Option<&Owner>, before: Option<Instant>) -> Option<String> {
        let before = before?;
        self.map
            .values()
            .filter(|s| owner.is_none_or(|o| o == s.owner()) && s.idle_since(before))
            .max_by_key(|s| {
                (
                    self.per_owner.get(s.owner()).copied().unwrap_or(0),
                    std::cmp::Reverse(s.last_seen()),
                )
            })
            .map(|s| s.id().to_owned())
    }
}

/// The sessions kept in this process, with a quota per owner
/// (`max_sessions`, `max_sessions_per_principal`).
///
/// The owners together hold at most 7/8 of `max_sessions`: the last
/// eighth is for owners that hold no session, one each. A new session past
/// its owner's quota, or past what the table has for it, takes the place
/// of an expired session (its owner's own, or in a full table the one of
/// the owner holding the most); without one, it is refused.
pub(crate) struct MemorySessions {
    table: Mutex<Table>,
    max: usize,
    /// What owners that already hold a session may fill together.
    open: usize,
    per_owner: usize,
    /// A session idle this long has expired.
    idle_timeout: Duration,
    /// The sessions' records.
    records: Arc<dyn SessionStore>,
    /// The server, which materialises a live session from a record.
    core: Weak<super::core::Core>,
}

impl MemorySessions {
    pub(crate) fn new(
        config: &HttpConfig,
        records: Arc<dyn SessionStore>,
        core: Weak<super::core::Core>,
    ) -> Arc<Self> {
        let max = config.get_max_sessions().max(1);
        let open = max - max / 8;
        Arc::new(MemorySessions {
            table: Mutex::new(Table::default()),
            max,
            open,
            per_owner: config.get_max_sessions_per_principal().clamp(1, open),
            idle_timeout: config.get_session_idle_timeout(),
            records,
            core,
        })
    }

    /// A live session of the record of `id`, if the store has one that has
    /// not expired, and the table has room for it.
    fn materialised(&self, id: &str) -> Option<Arc<Session>> {
        let record = self.records.load(id)?;
        if record.version != SessionRecord::VERSION || record.expires < SystemTime::now() {
            return None;
        }
        let session = self
            .core
            .upgrade()?
            .new_session(record.id.clone(), record.owner.clone());
        session.shared().session().restore(&record);
        match self.insert(session.clone()) {
            Ok(_) => Some(session),
            Err(_) => None,
        }
    }

    /// The record of a live session, expiring an idle timeout from now.
    fn record(&self, s: &Session) -> SessionRecord {
        let mut r = SessionRecord::new(s.id(), s.owner().clone());
        s.shared().session().save(&mut r);
        r.expires = SystemTime::now() + self.idle_timeout;
        r
    }
}

impl LiveSessions for MemorySessions {
    fn insert(&self, session: Arc<Session>) -> Result<Option<Arc<Session>>, TableFull> {
        let expired_before = Instant::now().checked_sub(self.idle_timeout);
        let mut t = crate::sync::lock(&self.table);
        let held = t.per_owner.get(session.owner()).copied().unwrap_or(0);
        let room = if held == 0 { self.max } else { self.open };
        let make_room = if held >= self.per_owner {
            Some(
                t.oldest_expired(Some(session.owner()), expired_before)
                    .ok_or(TableFull::Principal(self.per_owner))?,
            )
        } else if t.map.len() >= room {
            Some(
                t.oldest_expired(None, expired_before)
                    .ok_or(TableFull::Server(self.max))?,
            )
        } else {
            None
        };
        let expired = make_room.and_then(|id| t.remove(&id));
        *t.per_owner.entry(session.owner().clone()).or_insert(0) += 1;
        t.map.insert(session.id().to_owned(), session.clone());
        drop(t);
        if let Some(e) = &expired {
            self.records.remove(e.id());
        }
        self.records.save(self.record(&session));
        Ok(expired)
    }

    fn get(&self, id: &str) -> Option<Arc<Session>> {
        let live = crate::sync::lock(&self.table).map.get(id).cloned();
        live.or_else(|| self.materialised(id))
    }

    fn remove(&self, id: &str) -> Option<Arc<Session>> {
        self.records.remove(id);
        crate::sync::lock(&self.table).remove(id)
    }

    fn len(&self) -> usize {
        crate::sync::lock(&self.table).map.len()
    }

    fn all(&self) -> Vec<Arc<Session>> {
        crate::sync::lock(&self.table)
            .map
            .values()
            .cloned()
            .collect()
    }

    fn take_idle(&self, before: Instant) -> Vec<Arc<Session>> {
        let mut t = crate::sync::lock(&self.table);
        let idle: Vec<String> = t
            .map
            .iter()
            .filter(|(_, s)| s.idle_since(before))
            .map(|(k, _)| k.clone())
            .collect();
        idle.iter().for_each(|k| self.records.remove(k));
        idle.iter().filter_map(|k| t.remove(k)).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::super::principal::PeerGroup;
    use super::super::session_record::MemoryStore;
    use super::super::stream::Counter;
    use super::*;
    use crate::protocol::Implementation;
    use crate::server::engine::budget::InboundBudget;
    use crate::server::ServerConfig;

    fn config(max: usize, per_owner: usize) -> HttpConfig {
        HttpConfig::new(ServerConfig::new(Implementation::new("t", "0")))
            .max_sessions(max)
            .max_sessions_per_principal(per_owner)
            .session_idle_timeout(Duration::from_secs(60))
    }

    fn session(config: &HttpConfig, id: &str, peer: u8) -> Arc<Session> {
        let owner = Owner::Peer(PeerGroup::of(IpAddr::V4(Ipv4Addr::new(10, 0, 0, peer))));
        Session::new(
            id.to_owned(),
            owner,
            config,
            &Counter::new(1 << 20),
            &InboundBudget::new(1 << 20),
            Weak::new(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn only_a_session_idle_for_the_idle_timeout_gives_way_to_a_new_one() {
        let c = config(16, 2);
        let store = MemorySessions::new(&c, Arc::new(MemoryStore::default()), Weak::new());
        for id in ["a", "b"] {
            assert!(store.insert(session(&c, id, 1)).unwrap().is_none());
        }
        // Both idle (nothing running, no stream), neither expired.
        assert!(matches!(
            store.insert(session(&c, "c", 1)),
            Err(TableFull::Principal(2))
        ));
        tokio::time::advance(Duration::from_secs(30)).await;
        store.get("b").expect("b").touch();
        tokio::time::advance(Duration::from_secs(31)).await;
        // `a` was idle 61 s, `b` 31 s.
        let expired = store.insert(session(&c, "c", 1)).unwrap();
        assert_eq!(expired.as_deref().map(Session::id), Some("a"));
        assert!(matches!(
            store.insert(session(&c, "d", 1)),
            Err(TableFull::Principal(2))
        ));
        assert!(store.get("b").is_some() && store.get("c").is_some());
    }

    #[tokio::test]
    async fn owners_together_leave_an_eighth_of_the_table_to_owners_holding_none() {
        // 16 sessions: owners that hold one fill 14 at most.
        let c = config(16, 8);
        let store = MemorySessions::new(&c, Arc::new(MemoryStore::default()), Weak::new());
        for i in 0..14 {
            let owner = if i < 8 { 1 } else { 2 };
            store.insert(session(&c, &format!("s{i}"), owner)).unwrap();
        }
        assert!(matches!(
            store.insert(session(&c, "more", 2)),
            Err(TableFull::Server(16))
        ));
        store.insert(session(&c, "new-3", 3)).expect("a newcomer");
        store.insert(session(&c, "new-4", 4)).expect("a newcomer");
        assert!(matches!(
            store.insert(session(&c, "new-5", 5)),
            Err(TableFull::Server(16))
        ));
        assert_eq!(store.len(), 16);
    }
}
