//! The PortOwner actor: owns one child process through its shutdown guard and
//! decides why the link closed.
//!
//! It does no I/O itself. The reader task sends messages straight to the
//! link's sink and reports its end here; the reaper task reports the exit
//! status here; the Connection asks to close here. Whatever comes first
//! decides the [`CloseReason`], the sink hears it once, and the actor stops.
//! Its state holds the [`ShutdownGuard`], so stopping, being killed, or dying
//! with its linked Connection all start the same detached escalation.

use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tracing::{debug, info};

use crate::child::ShutdownGuard;
use crate::error::{ChildExit, CloseReason};
use crate::transport::{EventSink, TransportEvent};

/// How long to let the reader drain what the server wrote before it exited
/// (its stdout may stay open in a grandchild).
const EXIT_DRAIN: Duration = Duration::from_millis(100);

/// Messages of the PortOwner.
#[derive(Debug)]
pub(crate) enum PortOwnerMsg {
    /// The reaper saw the process exit.
    Exited(ChildExit),
    /// The reader hit end of stream.
    Eof,
    /// The reader or writer failed fatally.
    Fatal(CloseReason),
    /// The Connection closes the link.
    Close(CloseReason),
    /// The drain period after exit is over.
    DrainElapsed,
    /// The wait for an exit after EOF is over.
    EofWaitElapsed,
}

local_messages!(PortOwnerMsg);

pub(crate) struct PortOwner;

pub(crate) struct PortOwnerArgs {
    guard: ShutdownGuard,
    sink: EventSink,
    name: String,
    pid: u32,
    eof_wait: Duration,
}

impl PortOwnerArgs {
    #[inline]
    pub(crate) fn new(
        guard: ShutdownGuard,
        sink: EventSink,
        name: String,
        pid: u32,
        eof_wait: Duration,
    ) -> Self {
        Self {
            guard,
            sink,
            name,
            pid,
            eof_wait,
        }
    }
}

pub(crate) struct PortOwnerState {
    // Dropped with the state, whatever ends the actor.
    _guard: ShutdownGuard,
    sink: EventSink,
    name: String,
    pid: u32,
    eof_wait: Duration,
    exit: Option<ChildExit>,
    eof: bool,
    /// A write failed (EPIPE): the process is probably exiting; its exit
    /// status is the better reason if it comes soon.
    write_failed: Option<CloseReason>,
    closed: bool,
}

impl PortOwnerState {
    fn close(&mut self, myself: &ActorRef<PortOwnerMsg>, reason: CloseReason) {
        if self.closed {
            return;
        }
        self.closed = true;
        info!(server = %self.name, pid = self.pid, reason = %reason, "transport closed");
        let _ = (self.sink)(TransportEvent::Closed(reason));
        myself.stop(None);
    }
}

impl Actor for PortOwner {
    type Msg = PortOwnerMsg;
    type State = PortOwnerState;
    type Arguments = PortOwnerArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: PortOwnerArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(PortOwnerState {
            _guard: args.guard,
            sink: args.sink,
            name: args.name,
            pid: args.pid,
            eof_wait: args.eof_wait,
            exit: None,
            eof: false,
            write_failed: None,
            closed: false,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        st: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            PortOwnerMsg::Exited(status) => {
                st.exit = Some(status);
                if st.eof || st.write_failed.is_some() {
                    st.close(&myself, CloseReason::Exited(status));
                } else {
                    myself.send_after(EXIT_DRAIN, || PortOwnerMsg::DrainElapsed);
                }
            }
            PortOwnerMsg::Eof => {
                debug!(server = %st.name, pid = st.pid, "server stdout reached end of stream");
                st.eof = true;
                match st.exit {
                    Some(status) => st.close(&myself, CloseReason::Exited(status)),
                    None => {
                        myself.send_after(st.eof_wait, || PortOwnerMsg::EofWaitElapsed);
                    }
                }
            }
            PortOwnerMsg::DrainElapsed => {
                if let Some(status) = st.exit {
                    st.close(&myself, CloseReason::Exited(status));
                } else if let Some(reason) = st.write_failed.take() {
                    st.close(&myself, reason);
                }
            }
            PortOwnerMsg::Fatal(reason @ CloseReason::WriteFailed(_)) => match st.exit {
                Some(status) => st.close(&myself, CloseReason::Exited(status)),
                None => {
                    st.write_failed = Some(reason);
                    myself.send_after(EXIT_DRAIN, || PortOwnerMsg::DrainElapsed);
                }
            },
            PortOwnerMsg::EofWaitElapsed => {
                let reason = st
                    .exit
                    .map(CloseReason::Exited)
                    .unwrap_or(CloseReason::StdoutClosed);
                st.close(&myself, reason);
            }
            PortOwnerMsg::Fatal(reason) | PortOwnerMsg::Close(reason) => st.close(&myself, reason),
        }
        Ok(())
    }
}
