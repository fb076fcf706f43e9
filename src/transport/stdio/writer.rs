//! The writer task: drains queued lines into the child's stdin.
//!
//! Senders never wait: [`WriterHandle::send`] only counts bytes and pushes
//! onto an unbounded channel, refusing once `limit` bytes are unwritten. The
//! task coalesces whatever is queued into one `write` so a burst of small
//! messages costs one syscall. A write error (EPIPE) ends the task at once:
//! no retry loop.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use crate::error::CloseReason;
use crate::transport::shutdown::closed;

/// Largest coalesced write.
const COALESCE_BYTES: usize = 256 * 1024;

/// The sending side of a writer task.
#[derive(Debug, Clone)]
pub(crate) struct WriterHandle {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    limit: usize,
}

impl WriterHandle {
    /// A handle and the receiver to give to [`run`].
    pub(crate) fn new(limit: usize) -> (Self, WriterQueue) {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        (
            Self {
                tx,
                queued: queued.clone(),
                limit,
            },
            WriterQueue { rx, queued },
        )
    }

    /// Queues a line without waiting.
    pub(crate) fn send(&self, line: Vec<u8>) -> Result<(), CloseReason> {
        let n = line.len();
        let now = self.queued.fetch_add(n, Ordering::AcqRel) + n;
        if now > self.limit {
            self.queued.fetch_sub(n, Ordering::AcqRel);
            return Err(CloseReason::WriteQueueFull {
                queued: now,
                limit: self.limit,
            });
        }
        self.tx.send(line).map_err(|_| {
            self.queued.fetch_sub(n, Ordering::AcqRel);
            CloseReason::WriteFailed("the writer has stopped".into())
        })
    }
}

/// The receiving side, owned by the task.
#[derive(Debug)]
pub(crate) struct WriterQueue {
    rx: mpsc::UnboundedReceiver<Vec<u8>>,
    queued: Arc<AtomicUsize>,
}

/// Writes until the queue closes, `shutdown` fires, or a write fails (then
/// `on_error` is called once). Dropping `out` on return closes the pipe.
pub(crate) async fn run<W: AsyncWrite + Unpin>(
    mut out: W,
    mut queue: WriterQueue,
    mut shutdown: watch::Receiver<()>,
    on_error: impl FnOnce(CloseReason),
) {
    let mut batch: Vec<u8> = Vec::new();
    // One wait for the whole loop (see the reader).
    let stop = closed(&mut shutdown);
    tokio::pin!(stop);
    loop {
        let first = tokio::select! {
            biased;
            _ = &mut stop => break,
            m = queue.rx.recv() => match m {
                Some(m) => m,
                None => break,
            },
        };
        let mut total = first.len();
        let buf: &[u8] = if first.len() >= COALESCE_BYTES {
            batch = first;
            &batch
        } else {
            batch.clear();
            batch.extend_from_slice(&first);
            while batch.len() < COALESCE_BYTES {
                match queue.rx.try_recv() {
                    Ok(m) => {
                        total += m.len();
                        batch.extend_from_slice(&m);
                    }
                    Err(_) => break,
                }
            }
            &batch
        };
        let res = tokio::select! {
            biased;
            _ = &mut stop => break,
            r = async { out.write_all(buf).await?; out.flush().await } => r,
        };
        queue.queued.fetch_sub(total, Ordering::AcqRel);
        if batch.capacity() > 4 * COALESCE_BYTES {
            batch = Vec::new();
        }
        if let Err(e) = res {
            on_error(CloseReason::WriteFailed(e.to_string()));
            break;
        }
    }
}
