//! The stdio transport: a child process spoken to over its stdin and stdout.
//!
//! One [`Link`] is one child process (see [`crate::child`]), owned by a
//! `PortOwner` actor linked under the Connection, with these tasks:
//!
//! - the **writer** (the shared one of [`line_io`]) drains the
//!   byte-bounded [`WriteQueue`] into stdin, closing the link as
//!   write-stalled when the server accepts nothing while callers wait;
//! - the **reader** frames stdout with a size limit and forwards messages to
//!   the link's sink, waiting when the sink is full; after the link closes it
//!   keeps draining stdout until the child is reaped;
//! - the **stderr reader** (with captured stderr) relays lines;
//! - the child's own task (in [`crate::child`]) reports its exit and, when
//!   the link closes for any reason, runs the shutdown escalation.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorCell, ActorRef};
use tracing::info;

use crate::child::{self, ShutdownSignal, ShutdownTrigger};
use crate::error::{CloseReason, SpawnError};
use crate::line_io::writer::{StalledAfter, WriteFailure};
use crate::line_io::{self, QueueReceiver, WriteQueue};
use crate::transport::{EventSink, Link, OpenFuture, Transport, TransportEvent};

mod output_readers;
mod port_owner;

use output_readers::{Reader, ReaderEnd, ReaderLimits};
use port_owner::{PortOwner, PortOwnerArgs, PortOwnerMsg};

/// Everything a stdio link needs to know.
#[derive(Debug, Clone)]
pub(crate) struct StdioOptions {
    /// What to spawn, and how to end it.
    spec: child::Spec,
    /// Largest line the server may write.
    max_message_bytes: usize,
    /// Consecutive junk lines tolerated.
    max_junk_lines: usize,
    /// Bytes of unwritten lines held for the server.
    max_write_queue_bytes: usize,
    /// No byte accepted for this long while callers wait: not reading.
    write_stall_timeout: Duration,
}

impl StdioOptions {
    #[inline]
    pub(crate) fn new(
        spec: child::Spec,
        max_message_bytes: usize,
        max_junk_lines: usize,
        max_write_queue_bytes: usize,
        write_stall_timeout: Duration,
    ) -> Self {
        Self {
            spec,
            max_message_bytes,
            max_junk_lines,
            max_write_queue_bytes,
            write_stall_timeout,
        }
    }
}

/// Runs the configured command as a child process, one per [`Link`].
#[derive(Debug, Clone)]
pub(crate) struct StdioTransport {
    options: Arc<StdioOptions>,
}

impl StdioTransport {
    /// A transport spawning `options.spec`.
    pub(crate) fn new(options: StdioOptions) -> Self {
        Self {
            options: Arc::new(options),
        }
    }
}

impl Transport for StdioTransport {
    fn open(&self, sink: EventSink, supervisor: ActorCell) -> OpenFuture<'_> {
        Box::pin(async move {
            let opts = &*self.options;
            let name = opts.spec.name.clone();
            let spawned = child::spawn(&opts.spec).await?;
            let pid = spawned.pid;
            info!(server = %name, pid, command = %opts.spec.command, "server process spawned");
            // First event, before any task of the link can send one.
            let _ = sink(TransportEvent::Spawned {
                pid,
                shutdown: spawned.shutdown.clone(),
            });
            let trigger = spawned.guard.trigger_handle();
            let (queue, queue_rx) = WriteQueue::new(opts.max_write_queue_bytes);
            let (signal, done) = (spawned.guard.signal(), spawned.shutdown.clone());
            // From here the guard lives in the PortOwner's state; if the
            // actor cannot be spawned, its drop starts the shutdown.
            let args = PortOwnerArgs::new(
                spawned.guard,
                sink.clone(),
                name.clone(),
                pid,
                opts.spec.graces.stdin(),
            );
            let (owner, _) = Actor::spawn_linked(None, PortOwner, args, supervisor)
                .await
                .map_err(|e| SpawnError::Io {
                    executable: opts.spec.command.to_string(),
                    source: std::io::Error::other(format!("could not start the port owner: {e}")),
                })?;
            let pipes = Pipes {
                stdin: spawned.stdin,
                stdout: spawned.stdout,
                stderr: spawned.stderr,
            };
            start_tasks(
                opts,
                &name,
                pid,
                pipes,
                spawned.exit,
                queue_rx,
                &owner,
                sink,
                signal,
                done,
            );
            Ok(Arc::new(StdioLink {
                queue,
                owner,
                pid,
                trigger,
            }) as Arc<dyn Link>)
        })
    }
}

/// This side of a child's pipes.
struct Pipes {
    stdin: child::ChildStdin,
    stdout: child::ChildStdout,
    stderr: Option<child::ChildStderr>,
}

/// Starts the link's tasks: the stderr relay, the exit report, the stdin
/// writer and the stdout reader; what ends each goes to the PortOwner.
#[allow(clippy::too_many_arguments)]
fn start_tasks(
    opts: &StdioOptions,
    name: &str,
    pid: u32,
    pipes: Pipes,
    mut exit: child::ExitWatch,
    queue: QueueReceiver,
    owner: &ActorRef<PortOwnerMsg>,
    sink: EventSink,
    signal: ShutdownSignal,
    done: child::ShutdownHandle,
) {
    if let Some(stderr) = pipes.stderr {
        tokio::spawn(output_readers::run_stderr(
            stderr,
            sink.clone(),
            pid,
            done.clone(),
        ));
    }
    let o = owner.clone();
    tokio::spawn(async move {
        if let Some(status) = exit.wait().await {
            let _ = o.cast(PortOwnerMsg::Exited(status));
        }
    });
    let o = owner.clone();
    let stdin = StalledAfter::new(pipes.stdin, opts.write_stall_timeout);
    let mut stop = signal.clone();
    let burst = queue.burst_hint();
    tokio::spawn(async move {
        // Returning drops the pipe (the first step of the shutdown) and the
        // queue (which wakes senders waiting for room).
        let end = line_io::writer::run(queue, stdin, async move { stop.fired().await }).await;
        if let Err(failure) = end {
            let reason = match failure {
                WriteFailure::Io(e) => CloseReason::WriteFailed(e.to_string()),
                WriteFailure::Stalled {
                    stalled_for,
                    queued,
                } => CloseReason::WriteStalled {
                    stalled_for,
                    queued,
                },
            };
            let _ = o.cast(PortOwnerMsg::Fatal(reason));
        }
    });
    let o = owner.clone();
    let grow_pipe = child::pipe_size::grower(&pipes.stdout, name.to_owned(), pid);
    let reader = Reader::new(
        ReaderLimits::new(opts.max_message_bytes, opts.max_junk_lines),
        sink,
        signal,
        done,
        name.to_owned(),
        burst,
    );
    tokio::spawn(reader.run(pipes.stdout, grow_pipe, move |end| {
        let _ = o.cast(match end {
            ReaderEnd::Eof => PortOwnerMsg::Eof,
            ReaderEnd::Fatal(r) => PortOwnerMsg::Fatal(r),
        });
    }));
}

/// One running child process.
struct StdioLink {
    queue: WriteQueue,
    owner: ActorRef<PortOwnerMsg>,
    pid: u32,
    trigger: ShutdownTrigger,
}

impl Link for StdioLink {
    fn queue(&self) -> &WriteQueue {
        &self.queue
    }

    fn close(&self, reason: CloseReason) {
        // At once, whatever the owner's mailbox holds (or if it is gone).
        self.trigger.trigger();
        let _ = self.owner.cast(PortOwnerMsg::Close(reason));
    }

    fn pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    fn owner(&self) -> Option<ActorCell> {
        Some(self.owner.get_cell())
    }
}
