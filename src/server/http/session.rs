//! 2025-11-25 era sessions: minted by `initialize`, named by a random
//! `MCP-Session-Id`, ended by DELETE, idle expiry or the server's stop.
//!
//! A session is what a stdio connection is: one [`SessionShared`] (what the
//! client declared, the pending server-to-client requests, the lifetime of
//! its handles), plus its SSE streams: the GET stream (number 0), where
//! messages not tied to a request go, and one per request answered as a
//! stream, kept for resumption until delivered (and a few after).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use crate::line_io::WriteQueue;
use crate::server::handle::{SessionShared, Sessions};

use crate::server::engine::Scope;

use super::config::HttpConfig;
use super::core::StreamReply;
use super::principal::Owner;
use super::stream::{Counter, Stream};

/// Streams kept after they were delivered, in case the client missed the
/// end and resumes.
const ENDED_KEPT: usize = 8;

/// A session's streams.
#[derive(Default)]
struct Streams {
    live: HashMap<u64, Arc<Stream>>,
    ended: VecDeque<Arc<Stream>>,
    next: u64,
}

/// One 2025-11-25 era session.
pub(crate) struct Session {
    pub(crate) id: String,
    /// Whose share of the table it is.
    pub(crate) owner: Owner,
    pub(crate) shared: Arc<SessionShared>,
    /// Bytes queued over all its streams.
    pub(crate) queue: Arc<Counter>,
    /// The GET stream: messages not tied to a request.
    pub(crate) standalone: Arc<Stream>,
    streams: Mutex<Streams>,
    /// Its requests, on the engine: ids unique while in flight,
    /// `max_in_flight` running, the others waiting.
    pub(crate) scope: Arc<Scope<StreamReply>>,
    last_seen: Mutex<Instant>,
    /// Open SSE responses (an idle session has none).
    pub(crate) open_streams: AtomicUsize,
}

impl Session {
    pub(crate) fn new(
        id: String,
        owner: Owner,
        config: &HttpConfig,
        global: &Arc<Counter>,
        inbound: &Arc<crate::server::engine::budget::InboundBudget>,
    ) -> Arc<Self> {
        // The session's own queue is unused (the outlet below takes its
        // messages); it exists because SessionShared owns one.
        let (out, _rx) = WriteQueue::new(1024);
        let mut shared = SessionShared::new(config.server.clone(), out);
        shared.inbound = inbound.clone();
        shared.transport = "http";
        let queue = Counter::new(config.session_queue_bytes);
        let standalone = Stream::new(0, true, config.replay_bytes, queue.clone(), global.clone());
        let shared = Arc::new(shared);
        let _ = shared.outlet.set(standalone.clone());
        Arc::new(Session {
            id,
            owner,
            scope: Scope::new(shared.clone(), true),
            shared,
            queue,
            standalone,
            streams: Mutex::new(Streams {
                next: 1,
                ..Streams::default()
            }),
            last_seen: Mutex::new(Instant::now()),
            open_streams: AtomicUsize::new(0),
        })
    }

    /// Records activity (idle expiry counts from the last one).
    pub(crate) fn touch(&self) {
        *crate::sync::lock(&self.last_seen) = Instant::now();
    }

    /// Whether the session has been idle (no request running, no stream
    /// open) since `before`.
    fn idle_since(&self, before: Instant) -> bool {
        *crate::sync::lock(&self.last_seen) < before && self.idle()
    }

    /// Whether no request runs and no stream is open.
    fn idle(&self) -> bool {
        self.open_streams.load(Ordering::Acquire) == 0 && self.scope.is_empty()
    }

    fn last_seen(&self) -> Instant {
        *crate::sync::lock(&self.last_seen)
    }

    /// Whether a request of `owner` may use this session: any, unless a
    /// [`Principal`](super::Principal) opened it (then that one only; a
    /// peer's address may change, a principal's name does not).
    pub(crate) fn serves(&self, owner: &Owner) -> bool {
        match &self.owner {
            Owner::Principal(_) => &self.owner == owner,
            Owner::Peer(_) | Owner::Unknown => true,
        }
    }

    /// A new request stream.
    pub(crate) fn new_stream(&self, config: &HttpConfig, global: &Arc<Counter>) -> Arc<Stream> {
        let mut s = crate::sync::lock(&self.streams);
        let number = s.next;
        s.next += 1;
        let stream = Stream::new(
            number,
            true,
            config.replay_bytes,
            self.queue.clone(),
            global.clone(),
        );
        s.live.insert(number, stream.clone());
        stream
    }

    /// The stream with this number (0: the GET stream).
    pub(crate) fn stream(&self, number: u64) -> Option<Arc<Stream>> {
        if number == 0 {
            return Some(self.standalone.clone());
        }
        let s = crate::sync::lock(&self.streams);
        s.live
            .get(&number)
            .or_else(|| s.ended.iter().find(|st| st.number == number))
            .cloned()
    }

    /// Moves an ended request stream out of the live ones: to the few kept
    /// for a late resumption (`keep`), or away (answered as JSON: nothing
    /// to resume). So live streams are those of running requests and those
    /// being read, whatever clients do.
    pub(crate) fn retire(&self, number: u64, keep: bool) {
        let mut s = crate::sync::lock(&self.streams);
        let stream = s.live.remove(&number);
        if !keep {
            s.ended.retain(|st| st.number != number);
            return;
        }
        if let Some(stream) = stream {
            s.ended.push_back(stream);
            if s.ended.len() > ENDED_KEPT {
                s.ended.pop_front();
            }
        }
    }

    /// Streams held: live, and kept after their end.
    #[cfg(test)]
    pub(crate) fn held_streams(&self) -> (usize, usize) {
        let s = crate::sync::lock(&self.streams);
        (s.live.len(), s.ended.len())
    }

    /// Ends the session: its handles become inert, its pending
    /// server-to-client requests fail, its streams close.
    pub(crate) fn end(&self) {
        self.shared.close();
        self.standalone.close();
        let s = crate::sync::lock(&self.streams);
        for stream in s.live.values() {
            stream.close();
        }
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
        if let Some(n) = self.per_owner.get_mut(&s.owner) {
            *n -= 1;
            if *n == 0 {
                self.per_owner.remove(&s.owner);
            }
        }
        Some(s)
    }

    /// The id of the idle session seen last longest ago, of `owner` (any
    /// owner: `None`) and among those, of the owner holding the most.
    fn oldest_idle(&self, owner: Option<&Owner>) -> Option<String> {
        self.map
            .values()
            .filter(|s| owner.is_none_or(|o| *o == s.owner) && s.idle())
            .max_by_key(|s| {
                (
                    self.per_owner.get(&s.owner).copied().unwrap_or(0),
                    std::cmp::Reverse(s.last_seen()),
                )
            })
            .map(|s| s.id.clone())
    }
}

/// The live sessions, by id, with a quota per owner.
///
/// A new session of an owner at its quota takes the place of that owner's
/// oldest idle session; in a full table, of the oldest idle session of
/// the owner that holds the most. Without one to take, it is refused.
pub(crate) struct SessionTable {
    table: Mutex<Table>,
    max: usize,
    per_owner: usize,
}

impl SessionTable {
    pub(crate) fn new(config: &HttpConfig) -> Arc<Self> {
        Arc::new(SessionTable {
            table: Mutex::new(Table::default()),
            max: config.max_sessions.max(1),
            per_owner: config
                .max_sessions_per_principal
                .clamp(1, config.max_sessions.max(1)),
        })
    }

    /// Adds a session; the session it took the place of, if any.
    pub(crate) fn insert(&self, session: Arc<Session>) -> Result<Option<Arc<Session>>, TableFull> {
        let mut t = crate::sync::lock(&self.table);
        let held = t.per_owner.get(&session.owner).copied().unwrap_or(0);
        let make_room = if held >= self.per_owner {
            Some(
                t.oldest_idle(Some(&session.owner))
                    .ok_or(TableFull::Principal(self.per_owner))?,
            )
        } else if t.map.len() >= self.max {
            Some(t.oldest_idle(None).ok_or(TableFull::Server(self.max))?)
        } else {
            None
        };
        let evicted = make_room.and_then(|id| t.remove(&id));
        *t.per_owner.entry(session.owner.clone()).or_insert(0) += 1;
        t.map.insert(session.id.clone(), session);
        Ok(evicted)
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        crate::sync::lock(&self.table).map.get(id).cloned()
    }

    pub(crate) fn remove(&self, id: &str) -> Option<Arc<Session>> {
        crate::sync::lock(&self.table).remove(id)
    }

    pub(crate) fn len(&self) -> usize {
        crate::sync::lock(&self.table).map.len()
    }

    pub(crate) fn all(&self) -> Vec<Arc<Session>> {
        crate::sync::lock(&self.table)
            .map
            .values()
            .cloned()
            .collect()
    }

    /// Removes the sessions idle since `before`; returns them.
    pub(crate) fn take_idle(&self, before: Instant) -> Vec<Arc<Session>> {
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

impl Sessions for SessionTable {
    fn find(&self, id: &str) -> Option<Arc<SessionShared>> {
        self.get(id).map(|s| s.shared.clone())
    }
}

/// A fresh session id: 128 random bits from the operating system, as 32
/// hexadecimal digits (visible ASCII, as the transport requires).
pub(crate) fn mint_id() -> Result<String, getrandom::Error> {
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw)?;
    Ok(raw.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_random_visible_ascii() {
        let a = mint_id().unwrap();
        let b = mint_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(crate::http::headers::is_visible_ascii(&a));
        assert_ne!(a, b);
    }
}
