//! The Streamable HTTP transport (feature `http`): the client's second
//! implementation of the [`Transport`] seam, so the Connection and
//! everything above it work unchanged over HTTP.
//!
//! One [`Link`] is one conversation with the server (in the 2025-11-25 era,
//! one session). The Connection queues serialised messages as it does for
//! stdio; the link's **dispatcher** task takes each from the byte-bounded
//! [`WriteQueue`] and POSTs it on its own task (`post`), with the MCP
//! headers the body implies (`headers`). Answers come back as JSON or as
//! an SSE stream (`answer`, `stream`), and everything the server sends,
//! on any stream, goes to the link's sink, where the Connection's routing answers
//! callers by id. What the link learns from the traffic it carries:
//!
//! - the session id of an `initialize` answer and its protocol version,
//!   sent with every later request; after `notifications/initialized` it
//!   opens the session's GET stream; 404 for the session closes the link
//!   as [`CloseReason::SessionExpired`] (the Connection reconnects and
//!   initializes again); closing ends the session with DELETE;
//! - in the 2026-07-28 era, the version in each request's `_meta`
//!   (mirrored into `MCP-Protocol-Version`), and the `x-mcp-header`
//!   annotations of the tools a `tools/list` answer carries (tools with
//!   invalid annotations are dropped from it, as the specification says;
//!   `tools/call` then mirrors the annotated arguments into
//!   `Mcp-Param-*`; for a tool called before any listing, the link lists
//!   the tools once itself: `learn`); `notifications/cancelled` becomes
//!   closing the request's response (in a 2025-11-25 session the
//!   notification is sent too).
//!
//! Failures map to the stdio link's: a server that cannot be reached, or a
//! stream that breaks where it cannot be resumed, closes the link
//! ([`CloseReason::ConnectionFailed`]): every call in flight fails at once
//! and the Connection reconnects with its backoff and restart policy. A
//! single answer that cannot come (its stream ended without it, or it is
//! over `max_message_bytes`) fails that call alone
//! ([`TransportEvent::Unanswered`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use ractor::ActorCell;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::watch;
use tracing::{debug, info};

use crate::error::{CloseReason, ConfigError};
use crate::jsonrpc::{Message, RequestId};
use crate::line_io::WriteQueue;
use crate::transport::display_url::display_url;
use crate::transport::http_options::HttpOptions;
use crate::transport::{Delivery, EventSink, Link, OpenFuture, Transport, TransportEvent};

mod auth;
mod body;
mod headers;
pub(crate) mod http_client;
mod known_tools;
pub mod oauth;
mod post;
mod response;
mod stream;
mod tool_headers;

/// Everything an HTTP link needs to know.
#[derive(Debug)]
pub(crate) struct HttpLinkOptions {
    /// The server's name in logs and events.
    name: String,
    /// The endpoint.
    url: reqwest::Url,
    /// The configured headers (values marked sensitive).
    headers: HeaderMap,
    /// Largest answer body or SSE event.
    max_message_bytes: usize,
    /// Bytes of request bodies being sent at once.
    max_write_queue_bytes: usize,
    /// Authorization, when the server asks for it, and the client its
    /// flow uses.
    oauth: Option<(
        crate::transport::http::oauth::OAuth,
        crate::transport::http::oauth::FlowClient,
    )>,
}

/// Opens HTTP links to one endpoint; links share its connection pool.
#[derive(Debug, Clone)]
pub(crate) struct HttpTransport {
    options: Arc<HttpLinkOptions>,
    client: reqwest::Client,
}

impl HttpTransport {
    /// A transport for `http`, with the limits of the client's config.
    pub(crate) fn new(
        name: String,
        http: &HttpOptions,
        max_message_bytes: usize,
        max_write_queue_bytes: usize,
    ) -> Result<Self, ConfigError> {
        let url = reqwest::Url::parse(http.url.trim())
            .map_err(|e| ConfigError::new("url", format!("{}: {e}", http.display_url())))?;
        let mut headers = HeaderMap::new();
        for (k, v) in &http.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| ConfigError::new("headers", format!("{k:?} is not a header name")))?;
            let mut value = HeaderValue::from_str(v.expose()).map_err(|_| {
                ConfigError::new(
                    "headers",
                    format!("the value of {k:?} is not a valid header value"),
                )
            })?;
            // Kept out of reqwest's and hyper's Debug output.
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let client = http_client::build(http.connect())?;
        let oauth = match &http.oauth {
            Some(o) => Some((
                o.clone(),
                crate::transport::http::oauth::FlowClient::new(http.connect(), url.clone())?,
            )),
            None => None,
        };
        Ok(Self {
            options: Arc::new(HttpLinkOptions {
                name,
                url,
                headers,
                max_message_bytes,
                max_write_queue_bytes,
                oauth,
            }),
            client,
        })
    }
}

impl Transport for HttpTransport {
    fn open(&self, sink: EventSink, _supervisor: ActorCell) -> OpenFuture<'_> {
        Box::pin(async move {
            let (queue, rx) = WriteQueue::new(self.options.max_write_queue_bytes);
            let core = Core::new(self.options.clone(), self.client.clone(), sink.clone());
            // First: the client's shutdown waits for the session's end.
            let _ = sink(TransportEvent::Teardown {
                done: core.teardown.subscribe(),
            });
            info!(server = %self.options.name, url = %shown_url(&self.options.url), "HTTP link opened");
            tokio::spawn(post::dispatch(core.clone(), rx));
            Ok(Arc::new(HttpLink { queue, core }) as Arc<dyn Link>)
        })
    }
}

/// The endpoint as logs show it: no credentials, no query.
fn shown_url(url: &reqwest::Url) -> String {
    display_url(url.as_str())
}

/// One request sent and not yet answered.
struct Inflight {
    method: String,
    /// Sent in the 2026-07-28 era: cancelled by closing its response.
    modern: bool,
    /// Ends the task reading its response.
    abort: Option<tokio::task::AbortHandle>,
}

/// What the link learned from its traffic.
#[derive(Default)]
struct State {
    /// `MCP-Session-Id` from the `initialize` answer.
    session_id: Option<String>,
    /// The version `initialize` negotiated.
    stateful_version: Option<String>,
    /// The version of the last 2026-07-28 request's `_meta`.
    modern_version: Option<String>,
    /// The session's GET stream was started.
    get_started: bool,
    inflight: HashMap<RequestId, Inflight>,
    /// Tool name to its `(argument, header name)` pairs.
    tool_headers: HashMap<String, Arc<Vec<(String, String)>>>,
}

/// The link's shared core: options, client, sink, state and the stop
/// signal every task of the link watches.
pub(super) struct Core {
    opts: Arc<HttpLinkOptions>,
    client: reqwest::Client,
    sink: EventSink,
    closed: AtomicBool,
    stop: watch::Sender<bool>,
    /// `true` once the link's end is done (the session's DELETE answered
    /// or timed out).
    teardown: watch::Sender<bool>,
    /// Set once the link listed the tools itself (see `learn`).
    tools_learned: tokio::sync::OnceCell<()>,
    state: Mutex<State>,
}

impl Core {
    fn new(opts: Arc<HttpLinkOptions>, client: reqwest::Client, sink: EventSink) -> Arc<Self> {
        Arc::new(Self {
            opts,
            client,
            sink,
            closed: AtomicBool::new(false),
            stop: watch::channel(false).0,
            teardown: watch::channel(false).0,
            tools_learned: tokio::sync::OnceCell::new(),
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding it leaves plain data: keep using it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn name(&self) -> &str {
        &self.opts.name
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Resolves once the link is closed.
    async fn stopped(&self) {
        let mut rx = self.stop.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Delivers `message` to the sink, waiting while it is full; nothing
    /// once the link is closed.
    async fn deliver(&self, message: Message) {
        if self.is_closed() {
            return;
        }
        if let Delivery::Wait(wait) = (self.sink)(TransportEvent::Message { message }) {
            wait.await;
        }
    }

    /// Fails request `id` alone (see [`TransportEvent::Unanswered`]).
    fn unanswered(&self, id: RequestId, problem: String) {
        if self.is_closed() {
            return;
        }
        debug!(server = %self.name(), %id, problem = %problem, "request unanswered");
        let _ = (self.sink)(TransportEvent::Unanswered { id, problem });
    }

    /// Closes the link once: every stream and POST ends, the session (if
    /// any) is ended with DELETE in the background, and `Closed` goes to
    /// the sink.
    pub(super) fn close(self: &Arc<Self>, reason: CloseReason) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let _ = self.stop.send(true);
        let session = {
            let mut st = self.state();
            for (_, f) in st.inflight.drain() {
                if let Some(a) = f.abort {
                    a.abort();
                }
            }
            st.session_id
                .take()
                .map(|id| (id, st.stateful_version.clone()))
        };
        info!(server = %self.name(), reason = %reason, "HTTP link closed");
        match session {
            Some((id, version)) => post::end_session(self.clone(), id, version),
            None => {
                let _ = self.teardown.send(true);
            }
        }
        let _ = (self.sink)(TransportEvent::Closed(reason));
    }
}

/// One conversation with an HTTP server.
struct HttpLink {
    queue: WriteQueue,
    core: Arc<Core>,
}

impl Link for HttpLink {
    fn queue(&self) -> &WriteQueue {
        &self.queue
    }

    fn close(&self, reason: CloseReason) {
        self.queue.close();
        self.core.close(reason);
    }

    fn pid(&self) -> Option<u32> {
        None
    }

    fn owner(&self) -> Option<ActorCell> {
        None
    }
}

impl Drop for HttpLink {
    fn drop(&mut self) {
        // The Connection dropped the link without closing it (it is gone):
        // end the streams and the session all the same.
        self.core
            .close(CloseReason::OwnerDied("the link was dropped".into()));
    }
}
