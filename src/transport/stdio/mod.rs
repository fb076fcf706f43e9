//! The stdio transport: a child process spoken to over its stdin and stdout.
//!
//! One [`Link`] is one child process, owned by a `PortOwner` actor linked
//! under the Connection, with three tasks:
//!
//! - the **writer** drains a queue into stdin without ever making a sender
//!   wait (see `max_write_queue_bytes`);
//! - the **reader** frames stdout with a size limit and forwards messages to
//!   the Connection directly;
//! - the **reaper** waits on the child (no polling), reports its exit and,
//!   when the link closes for any reason, runs the shutdown escalation
//!   detached (see [`shutdown`](crate::transport::shutdown)).

use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorRef};
use tokio::sync::watch;
use tracing::info;

use crate::client::config::ClientConfig;
use crate::error::{CloseReason, SpawnError};
use crate::transport::shutdown::{Graces, Reaper, ShutdownGuard, ShutdownHandle};
use crate::transport::{EventSink, Link, OpenFuture, Transport, TransportKind};

mod pipe;
mod port_owner;
#[cfg(target_os = "linux")]
mod process;
mod reader;
mod spawn;
#[cfg(target_os = "linux")]
mod watchdog;
mod writer;

use port_owner::{PortOwner, PortOwnerArgs, PortOwnerMsg};
use reader::{ReaderEnd, ReaderLimits};
use writer::WriterHandle;

#[cfg(target_os = "linux")]
pub(crate) use watchdog::WatchdogFd;

/// The child process of a link: launched without `fork` on Linux (see the
/// `process` module), by `tokio::process` elsewhere. Both have the same
/// surface here: `id`, `wait`, the `stdin`/`stdout`/`stderr` fields, and
/// SIGKILL on drop.
#[cfg(target_os = "linux")]
pub(crate) use process::Child;
#[cfg(not(target_os = "linux"))]
pub(crate) use tokio::process::Child;

/// Runs the configured command as a child process, one per [`Link`].
#[derive(Debug, Clone)]
pub struct StdioTransport {
    config: Arc<ClientConfig>,
}

impl StdioTransport {
    /// A transport spawning `config.command`. The config should have been
    /// validated ([`ClientConfig::validate`]).
    pub fn new(config: Arc<ClientConfig>) -> Self {
        Self { config }
    }
}

impl Transport for StdioTransport {
    fn kind(&self) -> TransportKind {
        TransportKind::Stdio
    }

    fn open(&self, sink: EventSink, supervisor: ActorCell) -> OpenFuture<'_> {
        Box::pin(async move {
            let cfg = &*self.config;
            let name = cfg.display_name();
            let spawned = spawn::spawn_child(cfg)?;
            let mut child = spawned.child;
            let pid = child.id().unwrap_or(0);
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                // Invariant: both were configured as pipes.
                return Err(SpawnError::Io {
                    executable: cfg.command.clone(),
                    source: std::io::Error::other("child pipes missing"),
                });
            };
            info!(server = %name, pid, command = %cfg.command, "server process spawned");
            let (guard, shutdown_rx) = ShutdownGuard::new();
            let (report_tx, report_rx) = watch::channel(None);
            if let Some(stderr) = child.stderr.take() {
                tokio::spawn(reader::run_stderr(
                    stderr,
                    sink.clone(),
                    pid,
                    report_rx.clone(),
                ));
            }
            let (writer, queue) = WriterHandle::new(cfg.max_write_queue_bytes);
            let reaper = Reaper {
                child,
                pid,
                pgid: (cfg!(unix) && cfg.kill_process_group).then_some(pid as i32),
                graces: Graces {
                    stdin: cfg.stdin_grace,
                    term: cfg.term_grace,
                },
                name: name.clone(),
                #[cfg(target_os = "linux")]
                watchdog: spawned.watchdog,
            };
            let args = PortOwnerArgs {
                guard,
                sink: sink.clone(),
                name: name.clone(),
                pid,
                eof_wait: cfg.stdin_grace,
            };
            // Spawn the reaper first: if the actor cannot be spawned, the
            // guard's drop still runs the escalation.
            let (owner_tx, owner_rx) = tokio::sync::oneshot::channel::<ActorRef<PortOwnerMsg>>();
            tokio::spawn(reaper.run(
                shutdown_rx.clone(),
                move |status| {
                    // The owner exists by the time the child can be reaped
                    // unless spawning it failed; then nobody needs to know.
                    tokio::spawn(async move {
                        if let Ok(owner) = owner_rx.await {
                            let _ = owner.cast(PortOwnerMsg::Exited(status));
                        }
                    });
                },
                report_tx,
            ));
            let (owner, _) = Actor::spawn_linked(None, PortOwner, args, supervisor)
                .await
                .map_err(|e| SpawnError::Io {
                    executable: cfg.command.clone(),
                    source: std::io::Error::other(format!("could not start the port owner: {e}")),
                })?;
            let _ = owner_tx.send(owner.clone());
            let o = owner.clone();
            tokio::spawn(writer::run(stdin, queue, shutdown_rx.clone(), move |r| {
                let _ = o.cast(PortOwnerMsg::Fatal(r));
            }));
            let o = owner.clone();
            let limits = ReaderLimits {
                max_message_bytes: cfg.max_message_bytes,
                max_junk_lines: cfg.max_junk_lines,
            };
            let grow_pipe = pipe::grower(&stdout, name.clone(), pid);
            tokio::spawn(reader::run(
                stdout,
                limits,
                sink,
                shutdown_rx,
                name,
                grow_pipe,
                move |end| {
                    let _ = o.cast(match end {
                        ReaderEnd::Eof => PortOwnerMsg::Eof,
                        ReaderEnd::Fatal(r) => PortOwnerMsg::Fatal(r),
                    });
                },
            ));
            Ok(Box::new(StdioLink {
                writer,
                owner,
                pid,
                shutdown: ShutdownHandle::new(report_rx),
            }) as Box<dyn Link>)
        })
    }
}

/// One running child process.
struct StdioLink {
    writer: WriterHandle,
    owner: ActorRef<PortOwnerMsg>,
    pid: u32,
    shutdown: ShutdownHandle,
}

impl Link for StdioLink {
    fn send(&self, line: Vec<u8>) -> Result<(), CloseReason> {
        self.writer.send(line).inspect_err(|reason| {
            // A full queue is a new reason to close. A stopped writer is
            // not: it stopped on a write error it reported itself (the
            // owner then prefers the exit status) or on the shutdown.
            if matches!(reason, CloseReason::WriteQueueFull { .. }) {
                let _ = self.owner.cast(PortOwnerMsg::Close(reason.clone()));
            }
        })
    }

    fn close(&self, reason: CloseReason) {
        // If the owner is already gone, its guard has already been dropped.
        let _ = self.owner.cast(PortOwnerMsg::Close(reason));
    }

    fn pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    fn shutdown_handle(&self) -> ShutdownHandle {
        self.shutdown.clone()
    }

    fn owner(&self) -> Option<ActorCell> {
        Some(self.owner.get_cell())
    }
}
