//! The transport seam between the [`Connection`](crate::client) and whatever
//! carries its messages.
//!
//! A [`Transport`] opens [`Link`]s: one link per server process (or
//! connection). The Connection only sees this trait, so a second transport
//! can be added without touching it. [`StdioTransport`] is the one shipped.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use ractor::ActorCell;

use crate::error::{CloseReason, SpawnError};
use crate::jsonrpc::Message;

pub mod shutdown;
pub mod stdio;

pub use shutdown::{ShutdownHandle, ShutdownReport};
pub use stdio::StdioTransport;

/// The kind of a transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// A child process over its stdin/stdout.
    Stdio,
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportKind::Stdio => f.write_str("stdio"),
        }
    }
}

/// What a link reports to its owner.
#[derive(Debug)]
pub enum TransportEvent {
    /// A message arrived.
    Message(Message),
    /// A line the server wrote to stderr (only when stderr is captured).
    Stderr {
        /// The server's process id.
        pid: Option<u32>,
        /// The line, without its newline.
        line: String,
    },
    /// The link closed; no more events follow. Sent exactly once.
    Closed(CloseReason),
}

/// Where a link delivers its events. Called from the link's own tasks; it must
/// not block (casting to an actor is the intended use).
pub type EventSink = Arc<dyn Fn(TransportEvent) + Send + Sync>;

/// A future returned by [`Transport::open`].
pub type OpenFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Box<dyn Link>, SpawnError>> + Send + 'a>>;

/// Opens links. Implemented by [`StdioTransport`].
pub trait Transport: Send + Sync + 'static {
    /// The kind of this transport.
    fn kind(&self) -> TransportKind;

    /// Opens a link whose events go to `sink`. Actors the link needs are
    /// spawned linked under `supervisor`, so they die with it.
    fn open(&self, sink: EventSink, supervisor: ActorCell) -> OpenFuture<'_>;
}

/// One open connection to a server.
pub trait Link: Send + Sync {
    /// Queues one serialised line. Never waits. An error means the link is
    /// closing with that reason (a `Closed` event follows).
    fn send(&self, line: Vec<u8>) -> Result<(), CloseReason>;

    /// Starts closing the link. Returns at once; the shutdown runs detached.
    fn close(&self, reason: CloseReason);

    /// The server's process id, if it is a process.
    fn pid(&self) -> Option<u32>;

    /// A handle that resolves when the server is fully shut down.
    fn shutdown_handle(&self) -> ShutdownHandle;

    /// The actor that owns the link, if any (for supervision events).
    fn owner(&self) -> Option<ActorCell>;
}
