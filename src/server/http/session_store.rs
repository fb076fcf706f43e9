//! Where an HTTP server keeps its 2025-11-25 era sessions, and the policy
//! for a full table.
//!
//! [`SessionStore`] is the seam: the endpoint, the idle expiry and the stop
//! sequence reach sessions only through it. [`MemorySessions`], the one
//! store today, keeps them in this process. A store that keeps session
//! records elsewhere (so that a request may reach any of several
//! machines) implements the same five operations; a session's streams and
//! running requests stay with the process that serves them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use crate::server::handle::{SessionShared, Sessions};

use super::config::HttpConfig;
use super::principal::Owner;
use super::session::Session;

/// The live sessions of one HTTP server, by id.
///
/// Every method is quick and never waits on I/O: the endpoint calls them
/// while serving a request.
pub(crate) trait SessionStore: Send + Sync + 'static {
    /// Adds a session; the session it took the place of, if any (ended by
    /// the caller). Refused when the owner's quota or the table is full and
    /// no session can give way.
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

impl<S: SessionStore> Sessions for S {
    fn find(&self, id: &str) -> Option<Arc<SessionShared>> {
        self.get(id).map(|s| s.shared().clone())
    }
}

/// Why an `initialize` got no session.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TableFull {
    #[error(
        "too many sessions of this client (max_sessions_per_principal = {0}), none of them idle"
    )]
    Principal(usize),
    #[error("too many sessions (max_sessions = {0}), none of them idle")]
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

    /// The id of the idle session seen last longest ago, of `owner` (any
    /// owner: `None`) and among those, of the owner holding the most.
    fn oldest_idle(&self, owner: Option<&Owner>) -> Option<String> {
        self.map
            .values()
            .filter(|s| owner.is_none_or(|o| o == s.owner()) && s.idle())
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
/// A new session of an owner at its quota takes the place of that owner's
/// oldest idle session; in a full table, of the oldest idle session of
/// the owner that holds the most. Without one to take, it is refused.
pub(crate) struct MemorySessions {
    table: Mutex<Table>,
    max: usize,
    per_owner: usize,
}

impl MemorySessions {
    pub(crate) fn new(config: &HttpConfig) -> Arc<Self> {
        Arc::new(MemorySessions {
            table: Mutex::new(Table::default()),
            max: config.max_sessions.max(1),
            per_owner: config
                .max_sessions_per_principal
                .clamp(1, config.max_sessions.max(1)),
        })
    }
}

impl SessionStore for MemorySessions {
    fn insert(&self, session: Arc<Session>) -> Result<Option<Arc<Session>>, TableFull> {
        let mut t = crate::sync::lock(&self.table);
        let held = t.per_owner.get(session.owner()).copied().unwrap_or(0);
        let make_room = if held >= self.per_owner {
            Some(
                t.oldest_idle(Some(session.owner()))
                    .ok_or(TableFull::Principal(self.per_owner))?,
            )
        } else if t.map.len() >= self.max {
            Some(t.oldest_idle(None).ok_or(TableFull::Server(self.max))?)
        } else {
            None
        };
        let evicted = make_room.and_then(|id| t.remove(&id));
        *t.per_owner.entry(session.owner().clone()).or_insert(0) += 1;
        t.map.insert(session.id().to_owned(), session);
        Ok(evicted)
    }

    fn get(&self, id: &str) -> Option<Arc<Session>> {
        crate::sync::lock(&self.table).map.get(id).cloned()
    }

    fn remove(&self, id: &str) -> Option<Arc<Session>> {
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
        idle.iter().filter_map(|k| t.remove(k)).collect()
    }
}
