//! The seam between the client's Connection actor and what carries its
//! messages.
//!
//! A [`Transport`] opens [`Link`]s: one link per server process (or, over
//! HTTP, per session with the server). The Connection only sees these
//! traits; [`StdioTransport`] and (feature `http`) [`http::HttpTransport`]
//! implement them. Internal: nothing public accepts a transport.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use ractor::ActorCell;

use crate::child::ShutdownHandle;
use crate::error::{CloseReason, SpawnError};
use crate::jsonrpc::{Message, RequestId};

pub(crate) mod display_url;
#[cfg(feature = "http")]
pub(crate) mod http;
pub(crate) mod http_options;
pub(crate) mod stdio;

pub(crate) use crate::line_io::WriteQueue;
pub(crate) use stdio::StdioTransport;

/// What a link reports to its owner.
#[derive(Debug)]
pub(crate) enum TransportEvent {
    /// The server process was started. Delivered once, first, from within
    /// [`Transport::open`], before any other event of the link.
    Spawned {
        /// The server's process id.
        pid: u32,
        /// Resolves when the process is shut down.
        shutdown: ShutdownHandle,
    },
    /// The link is not a process, but its end takes time (an HTTP
    /// session's DELETE): `done` turns `true` when it is over, and the
    /// client's shutdown waits for it. Delivered first, from within
    /// [`Transport::open`], if at all.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Teardown {
        /// `true` once the teardown is done.
        done: tokio::sync::watch::Receiver<bool>,
    },
    /// A message arrived.
    Message {
        /// The message.
        message: Message,
    },
    /// A line the server wrote to stderr (only when stderr is captured).
    Stderr {
        /// The server's process id.
        pid: Option<u32>,
        /// The line, without its newline.
        line: String,
    },
    /// The request `id` will get no answer on this link, which stays open
    /// (HTTP: its response ended without one and cannot be resumed, or was
    /// over a limit): its caller fails now rather than at its timeout.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Unanswered {
        /// The request.
        id: RequestId,
        /// What happened, for the caller's error.
        problem: String,
    },
    /// The link closed; no more events follow. Sent exactly once.
    Closed(CloseReason),
}

/// What a sink did with an event.
pub(crate) enum Delivery {
    /// Delivered.
    Done,
    /// The sink is full: the reader awaits this (back-pressure on the
    /// server's stdout), which delivers the event.
    Wait(Pin<Box<dyn Future<Output = ()> + Send>>),
}

/// Where a link delivers its events. Called from the link's own tasks; it
/// must not block (it returns [`Delivery::Wait`] instead).
pub(crate) type EventSink = Arc<dyn Fn(TransportEvent) -> Delivery + Send + Sync>;

/// A future returned by [`Transport::open`].
pub(crate) type OpenFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Arc<dyn Link>, SpawnError>> + Send + 'a>>;

/// Opens links. Implemented by [`StdioTransport`].
pub(crate) trait Transport: Send + Sync + 'static {
    /// Opens a link whose events go to `sink`. Actors the link needs are
    /// spawned linked under `supervisor`, so they die with it.
    ///
    /// Cancel safety: cancel safe; a process started by a dropped call is
    /// shut down.
    fn open(&self, sink: EventSink, supervisor: ActorCell) -> OpenFuture<'_>;
}

/// One open connection to a server.
pub(crate) trait Link: Send + Sync {
    /// The queue of lines to the server (bounded in bytes).
    fn queue(&self) -> &WriteQueue;

    /// Starts closing the link: the shutdown starts at once, and the link
    /// reports `Closed` (with this reason, unless another came first).
    fn close(&self, reason: CloseReason);

    /// The server's process id, if it is a process.
    fn pid(&self) -> Option<u32>;

    /// The actor that owns the link, if any (for supervision events).
    fn owner(&self) -> Option<ActorCell>;
}
