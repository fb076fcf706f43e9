//! Receiving on SSE streams: a request's response stream (resumed with GET
//! and `Last-Event-ID` when it ends before its answer, after the `retry`
//! the server asked for), and the session's own GET stream (2025-11-25
//! era), reopened the same way whenever it ends. The wait is never shorter
//! than [`MIN_RETRY`], and doubles (up to [`MAX_RETRY`]) for each stream
//! in a row that ended without an event: a server that says `retry: 0`
//! and ends every stream at once is not asked again in a tight loop.
//!
//! Every event's data is one JSON-RPC message, delivered in order to the
//! link's sink: answers (to any request, not only the stream's own),
//! notifications and server-to-client requests alike. An event over
//! `max_message_bytes` is never buffered whole: the stream is dropped
//! there.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderValue, ACCEPT};
use reqwest::{Response, StatusCode};
use tracing::{debug, warn};

use super::auth::{self, SendError};
use super::body::describe;
use super::known_tools::received;
use super::{headers, Core};
use crate::error::CloseReason;
use crate::http::headers as mcp;
use crate::http::sse::Parser;
use crate::jsonrpc::{Message, RequestId};

/// Wait before reconnecting when the server named no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// Shortest wait before reconnecting, whatever `retry` says.
const MIN_RETRY: Duration = Duration::from_millis(250);

/// Longest wait the doubling reaches (a longer `retry` is kept as sent).
const MAX_RETRY: Duration = Duration::from_secs(30);

/// How long the session's first request waits for the GET stream to open.
const GET_READY_WAIT: Duration = Duration::from_secs(2);

/// Resumptions of one response stream in a row that brought nothing.
const MAX_IDLE_RESUMES: u32 = 5;

/// The position in a logical stream, carried across its reconnections.
#[derive(Default)]
struct Position {
    last_event_id: Option<String>,
    retry: Option<Duration>,
    /// Streams in a row that ended without an event.
    empty: u32,
}

impl Position {
    /// Counts a stream that ended: one that brought an event starts the
    /// backoff again.
    fn ended(&mut self, progressed: bool) {
        self.empty = if progressed {
            0
        } else {
            self.empty.saturating_add(1)
        };
    }

    /// The wait before the next reconnection: `retry` (or the default),
    /// at least [`MIN_RETRY`], doubled for each empty stream after the
    /// first, up to [`MAX_RETRY`].
    fn delay(&self) -> Duration {
        let base = self.retry.unwrap_or(DEFAULT_RETRY).max(MIN_RETRY);
        let doublings = self.empty.saturating_sub(1).min(16);
        base.saturating_mul(1 << doublings).min(MAX_RETRY.max(base))
    }
}

/// How reading one HTTP response ended.
enum Ended {
    /// The server ended the body.
    Eof,
    /// The connection broke (what happened).
    Broken(String),
    /// An event over the limit.
    TooLarge,
}

/// Reads one SSE response until it ends, delivering its messages; sets
/// `answered` when the answer to `awaited` went by.
async fn read_events(
    core: &Arc<Core>,
    mut resp: Response,
    pos: &mut Position,
    awaited: Option<&RequestId>,
    answered: &mut bool,
    progressed: &mut bool,
) -> Ended {
    let mut parser = Parser::new(core.opts.max_message_bytes);
    loop {
        let chunk = match resp.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => return Ended::Eof,
            Err(e) => {
                let e = describe(e);
                debug!(server = %core.name(), error = %e, "SSE stream broke");
                return Ended::Broken(e);
            }
        };
        let events = match parser.feed(&chunk) {
            Ok(ev) => ev,
            Err(e) => {
                warn!(server = %core.name(), limit = e.limit(), "SSE event over max_message_bytes; stream dropped");
                return Ended::TooLarge;
            }
        };
        if let Some(id) = parser.last_event_id() {
            pos.last_event_id = Some(id.to_owned());
        }
        if let Some(ms) = parser.retry() {
            pos.retry = Some(Duration::from_millis(ms));
        }
        for event in events {
            if event.data().trim().is_empty() {
                continue;
            }
            *progressed = true;
            match Message::parse(event.data().as_bytes()) {
                Ok(m) => {
                    if let (Message::Response(r), Some(want)) = (&m, awaited) {
                        if r.id.as_ref() == Some(want) {
                            *answered = true;
                        }
                    }
                    received(core, m).await;
                }
                Err(e) => {
                    debug!(server = %core.name(), error = %e, "SSE event that is not JSON-RPC ignored")
                }
            }
        }
    }
}

/// What a GET for a stream got.
enum Reopened {
    Stream(Response),
    /// The server offers no such stream (405, or another refusal).
    Refused(StatusCode),
    /// The link was closed meanwhile (or closed by this attempt).
    Closed,
}

/// Waits `retry`, then GETs the stream after `pos.last_event_id`.
async fn reopen(core: &Arc<Core>, pos: &Position, wait: bool) -> Reopened {
    if wait {
        let delay = pos.delay();
        tokio::select! {
            _ = core.stopped() => return Reopened::Closed,
            _ = tokio::time::sleep(delay) => {}
        }
    }
    let mut h = headers::base(&core.opts.headers, &core.state(), None);
    h.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    if let Some(Ok(v)) = pos.last_event_id.as_deref().map(HeaderValue::from_str) {
        h.insert(mcp::LAST_EVENT_ID, v);
    }
    let request = || core.client.get(core.opts.url.clone()).headers(h.clone());
    let sent = tokio::select! {
        _ = core.stopped() => return Reopened::Closed,
        r = auth::send(core, request) => r,
    };
    match sent {
        Err(SendError::Http(e)) => {
            core.close(CloseReason::ConnectionFailed(e));
            Reopened::Closed
        }
        Err(SendError::Auth(_, e)) => {
            debug!(server = %core.name(), error = %e, "stream not authorized");
            Reopened::Refused(StatusCode::UNAUTHORIZED)
        }
        Ok(r) if r.status() == StatusCode::NOT_FOUND && core.state().session_id.is_some() => {
            core.close(CloseReason::SessionExpired);
            Reopened::Closed
        }
        Ok(r) if r.status().is_success() => Reopened::Stream(r),
        Ok(r) => Reopened::Refused(r.status()),
    }
}

/// Reads the SSE answer of request `id`, resuming it while it ends early
/// (2025-11-25 era, when the server gave event ids); fails the request
/// alone when it cannot come.
pub(super) async fn read_post_stream(core: Arc<Core>, id: RequestId, resp: Response) {
    let resumable = !core.state().inflight.get(&id).is_some_and(|f| f.modern);
    let mut pos = Position::default();
    let mut resp = resp;
    let mut idle = 0;
    loop {
        let (mut answered, mut progressed) = (false, false);
        let ended = read_events(
            &core,
            resp,
            &mut pos,
            Some(&id),
            &mut answered,
            &mut progressed,
        )
        .await;
        if answered || core.is_closed() {
            return;
        }
        if matches!(ended, Ended::TooLarge) {
            let limit = core.opts.max_message_bytes;
            return core.unanswered(
                id,
                format!("the server sent an SSE event over the {limit}-byte limit"),
            );
        }
        pos.ended(progressed);
        idle = if progressed { 0 } else { idle + 1 };
        if !resumable || pos.last_event_id.is_none() || idle > MAX_IDLE_RESUMES {
            return match ended {
                // Nothing to resume from: the connection is lost.
                Ended::Broken(e) => core.close(CloseReason::ConnectionFailed(e)),
                _ => core.unanswered(
                    id,
                    "the server ended the response stream without an answer".into(),
                ),
            };
        }
        debug!(server = %core.name(), %id, last_event_id = ?pos.last_event_id, "resuming the response stream");
        resp = match reopen(&core, &pos, true).await {
            Reopened::Stream(r) => r,
            Reopened::Closed => return,
            Reopened::Refused(status) => {
                return core.unanswered(
                    id,
                    format!("the response stream ended, and resuming it got HTTP {status}"),
                )
            }
        };
    }
}

/// Opens the session's GET stream once per link (2025-11-25 era, after
/// `notifications/initialized`), in the background. Resolves once the
/// server accepted it (its response head came) or refused it, or after
/// [`GET_READY_WAIT`]: a server may send requests not tied to one of the
/// client's on that stream only, and drop them while it is not open, so
/// the session's first request waits for it.
pub(super) async fn open_get(core: &Arc<Core>) {
    {
        let mut st = core.state();
        if st.get_started || st.stateful_version.is_none() {
            return;
        }
        st.get_started = true;
    }
    let (opened, ready) = tokio::sync::oneshot::channel();
    tokio::spawn(run_get(core.clone(), opened));
    let _ = tokio::time::timeout(GET_READY_WAIT, ready).await;
}

/// Keeps the GET stream open: reopened after `retry` whenever it ends,
/// until the link closes or the server refuses it.
async fn run_get(core: Arc<Core>, opened: tokio::sync::oneshot::Sender<()>) {
    let mut pos = Position::default();
    let mut wait = false;
    let mut opened = Some(opened);
    loop {
        let reopened = reopen(&core, &pos, wait).await;
        if let Some(o) = opened.take() {
            let _ = o.send(());
        }
        let resp = match reopened {
            Reopened::Stream(r) => r,
            Reopened::Closed => return,
            Reopened::Refused(status) => {
                debug!(server = %core.name(), %status, "no GET stream from this server");
                return;
            }
        };
        let (mut answered, mut progressed) = (false, false);
        let read = read_events(&core, resp, &mut pos, None, &mut answered, &mut progressed);
        let ended = tokio::select! {
            _ = core.stopped() => return,
            e = read => e,
        };
        if matches!(ended, Ended::TooLarge) {
            return;
        }
        pos.ended(progressed);
        wait = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_has_a_floor_doubles_while_streams_are_empty_and_starts_again_after_an_event() {
        let mut pos = Position {
            retry: Some(Duration::ZERO),
            ..Position::default()
        };
        let ms = |p: &Position| p.delay().as_millis();
        assert_eq!(ms(&pos), 250);
        let mut waits = Vec::new();
        for _ in 0..10 {
            pos.ended(false);
            waits.push(ms(&pos));
        }
        assert_eq!(
            waits,
            [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        pos.ended(true);
        assert_eq!(ms(&pos), 250);
        // A server's longer retry is kept, and not doubled past it.
        pos.retry = Some(Duration::from_secs(60));
        pos.ended(false);
        pos.ended(false);
        assert_eq!(ms(&pos), 60_000);
        // No retry: the default second.
        let mut pos = Position::default();
        pos.ended(false);
        assert_eq!(ms(&pos), 1000);
    }
}
