//! The single writer: one task drains the outbound queue and writes many
//! queued lines per write call.
//!
//! Everything that goes to the client (responses, error replies, handle
//! notifications, server-to-client requests) is serialised by its producer
//! and pushed onto one unbounded channel whose *byte* count is tracked, so
//! producers never wait on the client. The bound is enforced by the callers:
//! [`OutQueue::try_push`] refuses past the limit (notifications, requests),
//! and the session stops reading new requests while the queue is full.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};

use super::error::SendError;

/// Most bytes gathered into one write call.
const BATCH_BYTES: usize = 256 * 1024;

pub(crate) enum OutMsg {
    Line(Vec<u8>),
    /// Write what precedes, flush, and end.
    Close,
}

/// Producer side of the outbound queue.
pub(crate) struct OutQueue {
    tx: mpsc::UnboundedSender<OutMsg>,
    queued: Arc<AtomicUsize>,
    drained: Arc<Notify>,
    limit: usize,
}

/// Consumer side, handed to [`run`].
pub(crate) struct OutReceiver {
    rx: mpsc::UnboundedReceiver<OutMsg>,
    queued: Arc<AtomicUsize>,
    drained: Arc<Notify>,
}

pub(crate) fn queue(limit: usize) -> (OutQueue, OutReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    let drained = Arc::new(Notify::new());
    (
        OutQueue {
            tx,
            queued: queued.clone(),
            drained: drained.clone(),
            limit,
        },
        OutReceiver {
            rx,
            queued,
            drained,
        },
    )
}

impl OutQueue {
    /// Queues a line whatever the queue's size (responses: their number is
    /// bounded by the in-flight limit). Returns false once the writer is gone.
    pub(crate) fn push(&self, line: Vec<u8>) -> bool {
        self.queued.fetch_add(line.len(), Ordering::AcqRel);
        let len = line.len();
        if self.tx.send(OutMsg::Line(line)).is_err() {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Queues a line unless the queue is over its limit.
    pub(crate) fn try_push(&self, line: Vec<u8>) -> Result<(), SendError> {
        if self.is_full() {
            return Err(SendError::QueueFull { limit: self.limit });
        }
        if self.push(line) {
            Ok(())
        } else {
            Err(SendError::TransportGone)
        }
    }

    pub(crate) fn is_full(&self) -> bool {
        self.queued.load(Ordering::Acquire) >= self.limit
    }

    /// Resolves after the writer has written something (a permit is stored
    /// if nobody waits, so a wake-up between check and wait is not lost).
    pub(crate) async fn drained(&self) {
        self.drained.notified().await
    }

    pub(crate) fn close(&self) {
        let _ = self.tx.send(OutMsg::Close);
    }
}

/// Where the writer's bytes go.
pub(crate) enum Sink {
    /// A caller-supplied stream.
    Async(Pin<Box<dyn AsyncWrite + Send>>),
    /// A dedicated thread writing a blocking file descriptor (process stdout).
    Thread(super::process_stdio::ThreadSink),
}

impl Sink {
    async fn write(&mut self, buf: Vec<u8>) -> io::Result<()> {
        match self {
            Sink::Async(w) => {
                w.write_all(&buf).await?;
                w.flush().await
            }
            Sink::Thread(t) => t.write(buf).await,
        }
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        match self {
            Sink::Async(w) => w.flush().await,
            Sink::Thread(t) => t.finish().await,
        }
    }

    /// Resolves only if the sink failed on its own (the thread's last write).
    async fn failed(&mut self) -> io::Error {
        match self {
            Sink::Async(_) => std::future::pending().await,
            Sink::Thread(t) => t.failed().await,
        }
    }
}

/// The writer task's body. Ends `Ok` after a [`OutMsg::Close`] (or when every
/// producer is gone) once everything before it is written; `Err` on the first
/// write failure (e.g. `EPIPE`: the failure is returned, never retried, so a
/// closed pipe cannot spin).
pub(crate) async fn run(mut out: OutReceiver, mut sink: Sink) -> io::Result<()> {
    loop {
        let first = tokio::select! {
            m = out.rx.recv() => m,
            e = sink.failed() => return Err(e),
        };
        let mut buf = match first {
            Some(OutMsg::Line(l)) => l,
            Some(OutMsg::Close) | None => return sink.shutdown().await,
        };
        let mut closing = false;
        // Coalesce whatever else is already queued into one write.
        while buf.len() < BATCH_BYTES {
            match out.rx.try_recv() {
                Ok(OutMsg::Line(l)) => buf.extend_from_slice(&l),
                Ok(OutMsg::Close) => {
                    closing = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let len = buf.len();
        let res = sink.write(buf).await;
        out.queued.fetch_sub(len, Ordering::AcqRel);
        out.drained.notify_one();
        res?;
        if closing {
            return sink.shutdown().await;
        }
    }
}
