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
use std::sync::{Arc, Mutex, Weak};

use tokio::time::Instant;

use crate::jsonrpc::{codes, encode, ErrorObject, RequestId};
use crate::server::handle::{SessionShared, SessionTransport};

use crate::server::engine::{Reply, Scope, Unanswered};

use super::config::HttpConfig;
use super::principal::Owner;
use super::stream::{Counter, RequestTarget, Stream};

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
    /// Whose share of the table it is.
    owner: Owner,
    shared: Arc<SessionShared>,
    /// Bytes queued over all its streams.
    queue: Arc<Counter>,
    /// The GET stream: messages not tied to a request.
    standalone: Arc<Stream>,
    streams: Mutex<Streams>,
    /// Its requests, on the engine: ids unique while in flight,
    /// `max_in_flight` running, the others waiting.
    scope: Arc<Scope<StreamReply>>,
    last_seen: Mutex<Instant>,
    /// Open SSE responses (an idle session has none).
    open_streams: AtomicUsize,
}

impl Session {
    /// The session's id (`Mcp-Session-Id`).
    #[inline]
    pub(crate) fn id(&self) -> &str {
        self.shared.id().as_str()
    }

    /// Who opened the session.
    #[inline]
    pub(crate) fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The session's state, shared with its handles and contexts.
    #[inline]
    pub(crate) fn shared(&self) -> &Arc<SessionShared> {
        &self.shared
    }

    /// The stream of messages that belong to no request (GET).
    #[inline]
    pub(crate) fn standalone(&self) -> &Arc<Stream> {
        &self.standalone
    }

    /// The scope the session's requests run in.
    #[inline]
    pub(crate) fn scope(&self) -> &Arc<Scope<StreamReply>> {
        &self.scope
    }

    /// An SSE stream of the session opened (it is not idle meanwhile).
    #[inline]
    pub(crate) fn stream_opened(&self) {
        self.open_streams.fetch_add(1, Ordering::AcqRel);
    }

    /// An SSE stream of the session closed.
    #[inline]
    pub(crate) fn stream_closed(&self) {
        self.open_streams.fetch_sub(1, Ordering::AcqRel);
    }

    pub(crate) fn new(
        id: String,
        owner: Owner,
        config: &HttpConfig,
        global: &Arc<Counter>,
        inbound: &Arc<crate::server::engine::budget::InboundBudget>,
        core: Weak<super::core::Core>,
    ) -> Arc<Self> {
        let principal = match &owner {
            Owner::Principal(p) => Some(p.clone()),
            _ => None,
        };
        let queue = Counter::new(config.get_session_queue_bytes());
        let standalone = Stream::new(
            0,
            true,
            config.get_replay_bytes(),
            queue.clone(),
            global.clone(),
        );
        let link = super::core::Link::session(core, standalone.clone());
        let shared = SessionShared::new(id.into(), config.server.clone(), None)
            .over_http(link, principal)
            .with_inbound(inbound.clone());
        let shared = Arc::new(shared);

        Arc::new(Session {
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
    pub(crate) fn idle_since(&self, before: Instant) -> bool {
        *crate::sync::lock(&self.last_seen) < before && self.idle()
    }

    /// Whether no request runs and no stream is open.
    pub(crate) fn idle(&self) -> bool {
        self.open_streams.load(Ordering::Acquire) == 0 && self.scope.is_empty()
    }

    pub(crate) fn last_seen(&self) -> Instant {
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
            config.get_replay_bytes(),
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
            .or_else(|| s.ended.iter().find(|st| st.number() == number))
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
            s.ended.retain(|st| st.number() != number);
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

/// A fresh session id: 128 random bits from the operating system, as 32
/// hexadecimal digits (visible ASCII, as the transport requires).
pub(crate) fn mint_id() -> Result<String, getrandom::Error> {
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw)?;
    Ok(raw.iter().map(|b| format!("{b:02x}")).collect())
}

/// An HTTP request's answer and messages go to its stream.
pub(crate) struct StreamReply {
    stream: Arc<Stream>,
    /// The request's id (for an answer the engine did not write).
    id: RequestId,
    /// A 2025-11-25 request's session: where what its JSON-only response
    /// cannot carry goes, and where its ended stream is kept for a late
    /// resumption.
    session: Option<Weak<Session>>,
}

impl StreamReply {
    #[inline]
    pub(crate) fn new(stream: Arc<Stream>, id: RequestId, session: Option<Weak<Session>>) -> Self {
        Self {
            stream,
            id,
            session,
        }
    }

    /// Drops the request's session: the request never ran, so nothing of
    /// it is kept for a resumption.
    pub(crate) fn forget_session(&mut self) {
        self.session = None;
    }
}

impl Reply for StreamReply {
    fn target(&self) -> Option<Arc<dyn SessionTransport>> {
        if self.session.is_none() {
            // A 2026-07-28 request: its stream alone (never JSON-only, no
            // session to fall back to).
            return Some(self.stream.clone());
        }
        let fallback = self
            .session
            .as_ref()
            .and_then(Weak::upgrade)
            .map(|s| Arc::downgrade(&s.shared));
        Some(Arc::new(RequestTarget::new(self.stream.clone(), fallback)))
    }

    fn answer(&self, line: Vec<u8>) {
        let _ = self.stream.push(line, true);
    }

    fn unanswered(&self, why: Unanswered) {
        if self.stream.answered() {
            return;
        }
        match why {
            Unanswered::Stopping => {
                let e = ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    "request cancelled: the server is stopping",
                );
                let _ = self
                    .stream
                    .push(encode::error(&Some(self.id.clone()), &e), true);
            }
            Unanswered::Withdrawn => self.stream.close(),
        }
    }
}

impl Drop for StreamReply {
    fn drop(&mut self) {
        // Nobody reads the stream (the client left, or has not come back):
        // it leaves the live ones, kept a while for a late resumption.
        if let Some(s) = self.session.as_ref().and_then(Weak::upgrade) {
            s.touch();
            if !self.stream.attached() {
                s.retire(self.stream.number(), true);
            }
        }
    }
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
