//! One SSE stream's events: a request's (its notifications, its
//! server-to-client requests, then its answer) or a session's GET stream.
//!
//! The events live here, not in the HTTP response: the response is a
//! consumer ([`SseBody`]) that takes them at the pace the client reads, so
//! a client that does not read holds back nothing but this buffer, bounded
//! in bytes (per stream or session, and for the whole server). A consumer
//! can go (the client disconnected, or the server closed the stream for
//! the client to poll) and another attach where it stopped: the 2025-11-25
//! era's resumption by `Last-Event-ID`, from the delivered events each
//! stream keeps (at most `replay_bytes`).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;

use super::coarse::CoarseTimer;
use crate::http::sse;
use crate::server::error::SendError;
use crate::server::handle::{SessionShared, SessionTransport};

/// Bytes held, against a limit; shared by the streams it bounds.
#[derive(Debug)]
pub(crate) struct Counter {
    used: AtomicUsize,
    limit: usize,
}

impl Counter {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Counter {
            used: AtomicUsize::new(0),
            limit,
        })
    }

    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    fn try_add(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                let after = u.saturating_add(n);
                (after <= self.limit).then_some(after)
            })
            .is_ok()
    }

    fn force_add(&self, n: usize) {
        self.used.fetch_add(n, Ordering::AcqRel);
    }

    fn sub(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// The bytes an event counts against the bounds: its line without the
/// newline it is kept with.
fn held(data: &[u8]) -> usize {
    data.len() - usize::from(data.last() == Some(&b'\n'))
}

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The request's answer is the last event.
    Answered,
    /// Closed without an answer (cancelled, session ended).
    Closed,
}

#[derive(Debug)]
struct State {
    /// Events by sequence number (the first is 1), the delivered ones kept
    /// for replay, within `replay_bytes`.
    events: VecDeque<(u64, Bytes)>,
    next_seq: u64,
    /// Bytes of every event held.
    bytes: usize,
    /// The last sequence number handed to a consumer.
    sent: u64,
    end: Option<End>,
    /// The attached consumer's generation (0: none).
    consumer: u64,
    generation: u64,
    waker: Option<Waker>,
    /// The server closed the stream for the client to poll: the consumer
    /// (or the next one, after its priming event) ends.
    kick: bool,
    /// The client accepts only JSON: nobody reads what comes before the
    /// answer (see [`Stream::json_only`]).
    json_only: bool,
}

/// What happened first on a request's stream (see [`Stream::first`]).
pub(crate) enum First {
    /// The answer, and nothing before it: send it as JSON (the line as it
    /// was queued, its newline included).
    Answer(Bytes),
    /// Events (or a long wait): send an SSE stream.
    Events,
    /// Closed without an answer and with nothing to send.
    Closed,
}

/// One SSE stream.
#[derive(Debug)]
pub(crate) struct Stream {
    /// The stream's number in its session (event ids are
    /// `{number}-{seq}`); 0 for the session's GET stream.
    number: u64,
    /// 2025-11-25 era: events carry ids and delivered ones are kept for
    /// replay. The 2026-07-28 era has neither.
    resumable: bool,
    replay_limit: usize,
    /// The queue bound it shares (its session's; a 2026-07-28 request's own).
    queue: Arc<Counter>,
    /// The whole server's bound.
    global: Arc<Counter>,
    state: Mutex<State>,
    /// Woken on every change, for [`first`](Self::first).
    changed: Notify,
}

impl Stream {
    /// The stream's number in its session (0 for the GET stream).
    #[inline]
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    pub(crate) fn new(
        number: u64,
        resumable: bool,
        replay_limit: usize,
        queue: Arc<Counter>,
        global: Arc<Counter>,
    ) -> Arc<Self> {
        Arc::new(Stream {
            number,
            resumable,
            replay_limit: if resumable { replay_limit } else { 0 },
            queue,
            global,
            state: Mutex::new(State {
                events: VecDeque::new(),
                next_seq: 1,
                bytes: 0,
                sent: 0,
                end: None,
                consumer: 0,
                generation: 0,
                waker: None,
                kick: false,
                json_only: false,
            }),
            changed: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    fn wake(&self, st: &mut State) {
        if let Some(w) = st.waker.take() {
            w.wake();
        }
        self.changed.notify_waiters();
    }

    fn try_charge(&self, n: usize) -> bool {
        if !self.queue.try_add(n) {
            return false;
        }
        if !self.global.try_add(n) {
            self.queue.sub(n);
            return false;
        }
        true
    }

    fn release(&self, n: usize) {
        self.queue.sub(n);
        self.global.sub(n);
    }

    /// Drops the oldest delivered event; false when there is none.
    fn evict_delivered(&self, st: &mut State) -> bool {
        match st.events.front() {
            Some(&(seq, _)) if seq <= st.sent => {
                if let Some((_, data)) = st.events.pop_front() {
                    st.bytes -= held(&data);
                    self.release(held(&data));
                }
                true
            }
            _ => false,
        }
    }

    /// Keeps at most `replay_limit` bytes of delivered events.
    fn trim(&self, st: &mut State) {
        let delivered: usize = st
            .events
            .iter()
            .take_while(|(seq, _)| *seq <= st.sent)
            .map(|(_, d)| held(d))
            .sum();
        let mut over = delivered.saturating_sub(self.replay_limit);
        while over > 0 {
            let Some((_, front)) = st.events.front() else {
                break;
            };
            let n = held(front);
            if !self.evict_delivered(st) {
                break;
            }
            over = over.saturating_sub(n);
        }
    }

    /// Queues one message (a serialised line). `last` marks the request's
    /// answer: always queued (one per stream, whatever the bounds), and the
    /// stream ends after it. Other messages fail with
    /// [`SendError::QueueFull`] when the bounds are reached (after dropping
    /// delivered events kept for replay), and with
    /// [`SendError::TransportGone`] once the stream has ended.
    pub(crate) fn push(&self, line: Vec<u8>, last: bool) -> Result<(), SendError> {
        // Kept with its newline: a JSON answer is sent as it is.
        let data = Bytes::from(line);
        let n = held(&data);
        let mut st = self.lock();
        if st.end.is_some() {
            return Err(SendError::TransportGone);
        }
        if last {
            self.queue.force_add(n);
            self.global.force_add(n);
        } else {
            while !self.try_charge(n) {
                if !self.evict_delivered(&mut st) {
                    let limit = if self.queue.used().saturating_add(n) > self.queue.limit() {
                        self.queue.limit()
                    } else {
                        self.global.limit()
                    };
                    return Err(SendError::QueueFull { limit });
                }
            }
        }
        let seq = st.next_seq;
        st.next_seq += 1;
        st.events.push_back((seq, data));
        st.bytes += n;
        if last {
            st.end = Some(End::Answered);
        }
        self.wake(&mut st);
        Ok(())
    }

    /// Ends the stream without (further) events: consumers finish once
    /// they have what is queued.
    pub(crate) fn close(&self) {
        let mut st = self.lock();
        if st.end.is_none() {
            st.end = Some(End::Closed);
        }
        self.wake(&mut st);
    }

    /// Whether the request's answer was queued.
    pub(crate) fn answered(&self) -> bool {
        self.lock().end == Some(End::Answered)
    }

    /// Whether a consumer (an SSE response) reads the stream now.
    pub(crate) fn attached(&self) -> bool {
        self.lock().consumer != 0
    }

    /// Whether the stream has ended and a consumer has taken everything.
    pub(crate) fn drained(&self) -> bool {
        let st = self.lock();
        st.end.is_some() && st.events.back().is_none_or(|&(seq, _)| seq <= st.sent)
    }

    /// Marks the stream as read for its answer only (the client accepts
    /// only JSON): a request's messages before its answer go elsewhere
    /// (see [`RequestTarget`]) instead of being dropped unread.
    pub(crate) fn json_only(&self) {
        self.lock().json_only = true;
    }

    /// Waits for what decides the shape of a request's response: its answer
    /// alone (JSON), events before it or `patience` passing (SSE), or the
    /// end of the stream without an answer. The patience is counted from
    /// the call, on `timer`: a tokio timer per request would cost a wake-up
    /// of the runtime's driver per request (see [`CoarseTimer`]).
    pub(crate) async fn first(&self, patience: Duration, timer: &CoarseTimer) -> First {
        let deadline = tokio::time::Instant::now() + patience.min(Duration::from_secs(3600));
        let out_of_patience = timer.sleep_until(deadline);
        tokio::pin!(out_of_patience);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut st = self.lock();
                if st.kick {
                    return First::Events;
                }
                match (st.events.len(), st.end) {
                    (0, Some(_)) => return First::Closed,
                    (1, Some(End::Answered)) if st.consumer == 0 && st.sent == 0 => {
                        if let Some((seq, data)) = st.events.pop_front() {
                            st.sent = seq;
                            st.bytes -= held(&data);
                            self.release(held(&data));
                            return First::Answer(data);
                        }
                    }
                    (0, None) => {}
                    _ => return First::Events,
                }
            }
            tokio::select! {
                biased;
                _ = changed => {}
                _ = &mut out_of_patience => return First::Events,
            }
        }
    }

    /// Waits for the end; returns the answer alone (what came before it is
    /// dropped: for a client that accepts only JSON).
    pub(crate) async fn first_answer(&self) -> First {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut st = self.lock();
                match st.end {
                    Some(End::Answered) => {
                        let Some((seq, data)) = st.events.pop_back() else {
                            return First::Closed;
                        };
                        st.sent = seq;
                        let mut freed = held(&data);
                        while let Some((_, d)) = st.events.pop_front() {
                            freed += held(&d);
                        }
                        st.bytes = 0;
                        self.release(freed);
                        return First::Answer(data);
                    }
                    Some(End::Closed) => return First::Closed,
                    None => {
                        // Nobody reads the messages before the answer.
                        st.sent = st.next_seq - 1;
                        while self.evict_delivered(&mut st) {}
                    }
                }
            }
            changed.await;
        }
    }

    /// The last event handed to a consumer.
    pub(crate) fn delivered(&self) -> u64 {
        self.lock().sent
    }

    /// Attaches a consumer that starts after event `after` (0: from the
    /// start; past the last event: from the last); a consumer already
    /// attached ends. Returns its generation, where it starts, and how many
    /// events after `after` it will not get (dropped from the replay
    /// buffer).
    pub(crate) fn attach(&self, after: u64) -> Attached {
        let mut st = self.lock();
        if let Some(w) = st.waker.take() {
            w.wake();
        }
        st.generation += 1;
        st.consumer = st.generation;
        // A position past the last event (a client's bogus `Last-Event-ID`)
        // is the last event: nothing later is skipped.
        let after = after.min(st.next_seq.saturating_sub(1));
        st.sent = after;
        // The first event still held, or the next one to come.
        let first = st.events.front().map_or(st.next_seq, |&(first, _)| first);
        let lost = first.saturating_sub(after.saturating_add(1));
        if lost > 0 {
            tracing::debug!(
                stream = self.number,
                after,
                first,
                lost,
                "SSE resumption: events after the given id were dropped (replay buffer full)"
            );
        }
        Attached {
            generation: st.generation,
            after,
            lost,
        }
    }

    /// Detaches consumer `generation` (if still attached): its body ends.
    pub(crate) fn detach(&self, generation: u64) {
        let mut st = self.lock();
        if st.consumer == generation {
            st.consumer = 0;
            if let Some(w) = st.waker.take() {
                w.wake();
            }
        }
    }

    /// Ends the response reading this stream (or the next one, after its
    /// priming event): the client is to reconnect with `Last-Event-ID` to
    /// get the rest. Only resumable streams; returns whether it applied.
    pub(crate) fn kick(&self) -> bool {
        if !self.resumable {
            return false;
        }
        let mut st = self.lock();
        if st.end.is_some() {
            return false;
        }
        st.kick = true;
        self.wake(&mut st);
        true
    }

    /// The next event for consumer `generation`.
    fn poll_next(&self, generation: u64, cx: &mut Context<'_>) -> Poll<Next> {
        let mut st = self.lock();
        if st.consumer != generation {
            return Poll::Ready(Next::Detached);
        }
        if st.kick {
            st.kick = false;
            st.consumer = 0;
            return Poll::Ready(Next::Detached);
        }
        let sent = st.sent;
        if let Some((seq, data)) = st.events.iter().find(|(s, _)| *s > sent).cloned() {
            st.sent = seq;
            self.trim(&mut st);
            return Poll::Ready(Next::Event(seq, data));
        }
        if st.end.is_some() {
            return Poll::Ready(Next::End);
        }
        st.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// The SSE form of event `seq`.
    fn frame(&self, seq: u64, data: &Bytes) -> Bytes {
        let text = String::from_utf8_lossy(data.strip_suffix(b"\n").unwrap_or(data));
        let ev = sse::Event::message(text);
        if self.resumable {
            ev.with_id(event_id(self.number, seq)).to_bytes()
        } else {
            ev.to_bytes()
        }
    }

    /// The priming event of a resumable stream: the position a reconnect
    /// starts from, and the `retry` delay.
    pub(crate) fn priming(&self, after: u64, retry: Duration) -> Option<Bytes> {
        self.resumable.then(|| {
            sse::Event::message("")
                .with_id(event_id(self.number, after))
                .with_retry(u64::try_from(retry.as_millis()).unwrap_or(u64::MAX))
                .to_bytes()
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let bytes = crate::sync::lock(&self.state).bytes;
        self.release(bytes);
    }
}

impl SessionTransport for Stream {
    fn send_line(&self, line: Vec<u8>) -> Result<(), SendError> {
        self.push(line, false)
    }
}

/// A consumer attached to a stream ([`Stream::attach`]).
pub(crate) struct Attached {
    generation: u64,
    /// The event it starts after.
    after: u64,
    /// Events after the one it asked to start after that it will not get.
    lost: u64,
}

impl Attached {
    /// The stream's generation the consumer attached to.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The event it starts after.
    #[inline]
    pub(crate) fn after(&self) -> u64 {
        self.after
    }

    /// Events after the one it asked to start after that it will not get.
    #[inline]
    pub(crate) fn lost(&self) -> u64 {
        self.lost
    }
}

/// What a resumption that lost `lost` events is told first: an SSE
/// comment, and, when the server declared `logging`, a warning message
/// (neither has an event id: the client's position stays where it is).
pub(crate) fn loss_notice(stream: u64, lost: u64, logging: bool) -> Bytes {
    let mut out = format!(
        ": {lost} events of this stream were dropped from the replay buffer before this resumption\n\n"
    )
    .into_bytes();
    if logging {
        let message = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {
                "level": "warning",
                "logger": "conduit-mcp",
                "data": {
                    "message": "events were lost: the resumption started past the replay buffer (replay_bytes)",
                    "stream": stream,
                    "lostEvents": lost,
                },
            },
        });
        out.extend_from_slice(&sse::Event::message(message.to_string()).to_bytes());
    }
    Bytes::from(out)
}

/// An SSE event id: the stream's number and the event's sequence number.
pub(crate) fn event_id(stream: u64, seq: u64) -> String {
    format!("{stream}-{seq}")
}

/// The stream number and sequence number of an event id.
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

enum Next {
    Event(u64, Bytes),
    End,
    Detached,
}

/// What a request's stream does for its context once the stream has ended
/// (a context kept by the handler after its answer), or when the client
/// reads only the answer (JSON only): a 2025-11-25 request's messages go to
/// its session's GET stream; a 2026-07-28 request has nowhere else to send
/// them.
pub(crate) struct RequestTarget {
    stream: Arc<Stream>,
    fallback: Option<Weak<SessionShared>>,
}

impl RequestTarget {
    #[inline]
    pub(crate) fn new(stream: Arc<Stream>, fallback: Option<Weak<SessionShared>>) -> Self {
        Self { stream, fallback }
    }
}

impl SessionTransport for RequestTarget {
    fn close_for_polling(&self) -> bool {
        self.stream.kick()
    }

    fn send_line(&self, line: Vec<u8>) -> Result<(), SendError> {
        // A JSON-only response carries the answer alone: what comes before
        // it (progress, logs, `ask`) goes where the ended stream's would.
        let open = {
            let st = self.stream.lock();
            st.end.is_none() && !st.json_only
        };
        if open {
            return self.stream.push(line, false);
        }
        match self.fallback.as_ref().and_then(Weak::upgrade) {
            Some(session) => session.send_line(line),
            None => Err(SendError::TransportGone),
        }
    }
}

/// What happens when a response body is dropped before its stream ended.
pub(crate) type OnDrop = Box<dyn FnOnce() + Send + Sync>;

/// A response body that reads a [`Stream`]: a priming event (resumable
/// streams), the stream's events as SSE, keep-alive comments while it is
/// idle; it ends when the stream has ended and been read, or when another
/// consumer takes over.
pub(crate) struct SseBody {
    stream: Arc<Stream>,
    generation: u64,
    prelude: Option<Bytes>,
    keep_alive: Duration,
    idle: Pin<Box<tokio::time::Sleep>>,
    /// Run if dropped before the end (a 2026-07-28 request: cancel it).
    on_drop: Option<OnDrop>,
    /// Run when the body ends or is dropped (a session's open-stream count).
    on_close: Option<OnDrop>,
    done: bool,
}

impl SseBody {
    pub(crate) fn new(
        stream: Arc<Stream>,
        generation: u64,
        prelude: Option<Bytes>,
        keep_alive: Duration,
    ) -> Self {
        SseBody {
            stream,
            generation,
            prelude,
            keep_alive,
            idle: Box::pin(tokio::time::sleep(keep_alive)),
            on_drop: None,
            on_close: None,
            done: false,
        }
    }

    /// Runs `f` if the body is dropped before its stream's end.
    pub(crate) fn on_drop(mut self, f: OnDrop) -> Self {
        self.on_drop = Some(f);
        self
    }

    /// Runs `f` when the body ends or is dropped.
    pub(crate) fn on_close(mut self, f: OnDrop) -> Self {
        self.on_close = Some(f);
        self
    }

    fn rearm(&mut self) {
        let next = tokio::time::Instant::now() + self.keep_alive;
        self.idle.as_mut().reset(next);
    }
}

impl http_body::Body for SseBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Some(p) = self.prelude.take() {
            return Poll::Ready(Some(Ok(http_body::Frame::data(p))));
        }
        match self.stream.poll_next(self.generation, cx) {
            Poll::Ready(Next::Event(seq, data)) => {
                self.rearm();
                let frame = self.stream.frame(seq, &data);
                Poll::Ready(Some(Ok(http_body::Frame::data(frame))))
            }
            Poll::Ready(Next::End) => {
                self.done = true;
                self.on_drop = None;
                if let Some(f) = self.on_close.take() {
                    f();
                }
                Poll::Ready(None)
            }
            Poll::Ready(Next::Detached) => {
                // Another consumer took over, or the server closed the
                // stream for the client to reconnect: not a cancellation.
                self.done = true;
                self.on_drop = None;
                if let Some(f) = self.on_close.take() {
                    f();
                }
                Poll::Ready(None)
            }
            Poll::Pending => match self.idle.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    self.rearm();
                    Poll::Ready(Some(Ok(http_body::Frame::data(sse::keep_alive()))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        if !self.done {
            self.stream.detach(self.generation);
            if let Some(f) = self.on_drop.take() {
                f();
            }
        }
        if let Some(f) = self.on_close.take() {
            f();
        }
    }
}

use std::future::Future as _;

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(limit: usize) -> Arc<Stream> {
        Stream::new(1, true, 16, Counter::new(limit), Counter::new(1 << 20))
    }

    #[test]
    fn notifications_past_the_bound_are_refused_but_the_answer_is_queued() {
        let s = stream(20);
        assert!(s.push(b"0123456789\n".to_vec(), false).is_ok());
        assert!(s.push(b"0123456789".to_vec(), false).is_ok());
        assert!(matches!(
            s.push(b"x".to_vec(), false),
            Err(SendError::QueueFull { limit: 20 })
        ));
        assert!(s.push(b"the answer".to_vec(), true).is_ok());
        assert_eq!(s.queue.used(), 30);
        assert!(matches!(
            s.push(b"late".to_vec(), false),
            Err(SendError::TransportGone)
        ));
        drop(s);
    }

    #[test]
    fn dropping_a_stream_releases_its_bytes() {
        let queue = Counter::new(100);
        let global = Counter::new(100);
        let s = Stream::new(1, true, 16, queue.clone(), global.clone());
        s.push(b"abc".to_vec(), false).unwrap();
        assert_eq!((queue.used(), global.used()), (3, 3));
        drop(s);
        assert_eq!((queue.used(), global.used()), (0, 0));
    }

    #[test]
    fn event_ids_round_trip() {
        assert_eq!(parse_event_id(&event_id(3, 17)), Some((3, 17)));
        assert_eq!(parse_event_id("x-1"), None);
        assert_eq!(parse_event_id("17"), None);
    }
}
