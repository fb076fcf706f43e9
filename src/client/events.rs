//! Lifecycle events of a client, for a user's actor or task to follow.
//!
//! Subscribe with [`Client::events`](crate::client::Client::events) (or, to see the
//! first spawn too, [`StartOptions::events`](crate::client::StartOptions)). Queues are
//! unbounded: a burst (a restart loop, a stderr flood in
//! [`StderrMode::Log`](crate::client::StderrMode::Log)) is never dropped, so keep
//! reading. [`forward_events`] turns them into messages of any ractor actor.

use std::sync::Arc;
use std::time::Duration;

use ractor::{ActorRef, Message};
use tokio::sync::mpsc;

use super::status::ServerSession;
use crate::error::{ChildExit, CloseReason};

/// Something that happened to one client's server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LifecycleEvent {
    /// A server process was started. Comes before every other event of
    /// that process (its stderr lines included).
    Spawned {
        /// The client's name.
        name: String,
        /// The server's process id.
        pid: u32,
    },
    /// Discovery or the handshake completed.
    Ready {
        /// The client's name.
        name: String,
        /// Era, version, server info, capabilities.
        session: Arc<ServerSession>,
    },
    /// The server's transport closed.
    Closed {
        /// The client's name.
        name: String,
        /// The server's process id, if known.
        pid: Option<u32>,
        /// Why.
        reason: CloseReason,
        /// The exit status, when the server exited.
        exit: Option<ChildExit>,
    },
    /// The server will be restarted after `delay`.
    Restarting {
        /// The client's name.
        name: String,
        /// The restart's number (see [`Status::Restarting`](crate::client::Status::Restarting)).
        attempt: u32,
        /// The backoff delay.
        delay: Duration,
    },
    /// The client gave up restarting; final.
    GaveUp {
        /// The client's name.
        name: String,
        /// The final reason.
        reason: String,
    },
    /// The client was stopped; final.
    Stopped {
        /// The client's name.
        name: String,
    },
    /// A line the server wrote to stderr ([`StderrMode::Log`](crate::client::StderrMode::Log) only).
    Stderr {
        /// The client's name.
        name: String,
        /// The server's process id.
        pid: Option<u32>,
        /// The line, without its newline (invalid UTF-8 replaced; a line
        /// over 64 KiB is replaced by a note giving its size).
        line: String,
    },
}

impl LifecycleEvent {
    /// Whether no event follows this one: after [`GaveUp`](Self::GaveUp)
    /// or [`Stopped`](Self::Stopped) nothing more is delivered (stderr
    /// lines the dying server still writes go to the log only).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::LifecycleEvent;
    ///
    /// let stopped = LifecycleEvent::Stopped { name: "time".into() };
    /// let spawned = LifecycleEvent::Spawned { name: "time".into(), pid: 4242 };
    /// assert!(stopped.is_final() && !spawned.is_final());
    /// ```
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            LifecycleEvent::GaveUp { .. } | LifecycleEvent::Stopped { .. }
        )
    }
}

/// Forwards every event of `events` to `actor` as `wrap(event)`, until the
/// client ends or the actor stops. Returns the forwarding task.
///
/// ```no_run
/// # use conduit_mcp::{forward_events, Client, LifecycleEvent};
/// # use ractor::ActorRef;
/// enum MyMsg { Mcp(LifecycleEvent) }
/// # #[cfg(feature = "cluster")]
/// # impl ractor::Message for MyMsg {}
/// # fn f(client: Client, me: ActorRef<MyMsg>) {
/// forward_events(client.events(), me, MyMsg::Mcp);
/// # }
/// ```
pub fn forward_events<M: Message>(
    mut events: mpsc::UnboundedReceiver<LifecycleEvent>,
    actor: ActorRef<M>,
    wrap: fn(LifecycleEvent) -> M,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(e) = events.recv().await {
            if actor.cast(wrap(e)).is_err() {
                break;
            }
        }
    })
}
