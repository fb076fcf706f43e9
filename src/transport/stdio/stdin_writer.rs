//! The writer task: drains the write queue into the child's stdin.
//!
//! It coalesces whatever is queued into one `write` so a burst of small
//! messages costs one syscall. A write error (EPIPE) ends the task at once:
//! no retry loop. A server that accepts no byte for `stall_timeout` while
//! callers wait for room in the queue is reported as not reading
//! ([`CloseReason::WriteStalled`]); a server that is merely slow, or that
//! stops reading while nobody waits, is left alone.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::child::ShutdownSignal;
use crate::deadline::After;
use crate::error::CloseReason;
use crate::transport::queue::QueueReceiver;

/// Largest coalesced write.
const COALESCE_BYTES: usize = 256 * 1024;

/// Writes until the queue closes, the shutdown starts, or a write fails or
/// stalls (then `on_error` is called once). Returning drops `out`, which
/// closes the pipe (the first step of the shutdown), and the queue, which
/// wakes the senders waiting for room.
pub(crate) async fn run<W: AsyncWrite + Unpin>(
    mut out: W,
    mut queue: QueueReceiver,
    mut shutdown: ShutdownSignal,
    stall_timeout: Duration,
    on_error: impl FnOnce(CloseReason),
) {
    let mut batch: Vec<u8> = Vec::new();
    // One wait for the whole loop: a fresh one per message would register
    // and unregister a waiter for every message.
    let stop = shutdown.fired();
    tokio::pin!(stop);
    loop {
        let first = tokio::select! {
            biased;
            _ = &mut stop => break,
            m = queue.recv() => match m {
                Some(m) => m,
                None => break,
            },
        };
        let mut room = first.room as usize;
        let mut control = if first.control { first.line.len() } else { 0 };
        if first.line.len() >= COALESCE_BYTES {
            batch = first.line;
        } else {
            batch.clear();
            batch.extend_from_slice(&first.line);
            while batch.len() < COALESCE_BYTES {
                match queue.try_recv() {
                    Some(m) => {
                        room += m.room as usize;
                        if m.control {
                            control += m.line.len();
                        }
                        batch.extend_from_slice(&m.line);
                    }
                    None => break,
                }
            }
        }
        let res = tokio::select! {
            biased;
            _ = &mut stop => break,
            r = write_watched(&mut out, &batch, &queue, stall_timeout) => r,
        };
        queue.written(room, control);
        if batch.capacity() > 4 * COALESCE_BYTES {
            batch = Vec::new();
        }
        if let Err(reason) = res {
            on_error(reason);
            break;
        }
    }
}

/// Writes all of `buf`, failing with [`CloseReason::WriteStalled`] if no
/// byte is accepted for `stall` while senders wait for room. No timer is
/// armed while the pipe accepts bytes at once (the common case).
async fn write_watched<W: AsyncWrite + Unpin>(
    out: &mut W,
    buf: &[u8],
    queue: &QueueReceiver,
    stall: Duration,
) -> Result<(), CloseReason> {
    // Re-check at least this often once the stall time has passed (senders
    // may start waiting later).
    let recheck = (stall / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut off = 0;
    while off < buf.len() {
        let rest = &buf[off..];
        let now = poll_fn(|cx| match Pin::new(&mut *out).poll_write(cx, rest) {
            Poll::Ready(r) => Poll::Ready(Some(r)),
            Poll::Pending => Poll::Ready(None),
        })
        .await;
        let written = match now {
            Some(r) => r,
            None => {
                // The pipe is full: wait, watching for a stall.
                let since = Instant::now();
                let mut wake = since.after(stall);
                loop {
                    tokio::select! {
                        r = out.write(rest) => break r,
                        _ = tokio::time::sleep_until(wake) => {
                            let stalled_for = since.elapsed();
                            if stalled_for >= stall && queue.has_waiters() {
                                return Err(CloseReason::WriteStalled {
                                    stalled_for,
                                    queued: queue.queued(),
                                });
                            }
                            wake = Instant::now().after(recheck);
                        }
                    }
                }
            }
        };
        match written {
            Ok(0) => {
                return Err(CloseReason::WriteFailed(
                    "the pipe accepted no bytes".into(),
                ))
            }
            Ok(n) => off += n,
            Err(e) => return Err(CloseReason::WriteFailed(e.to_string())),
        }
    }
    out.flush()
        .await
        .map_err(|e| CloseReason::WriteFailed(e.to_string()))
}
