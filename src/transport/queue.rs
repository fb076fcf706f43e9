//! The write queue: lines waiting for the server's stdin, bounded in bytes.
//!
//! The bound exists against a server that stops reading, and must not
//! punish the callers of one that reads. So a line waits for room
//! ([`WriteQueue::send`], back-pressure on the caller, who bounds the wait
//! with its own timeout) instead of failing, and only a line longer than
//! the whole bound fails, alone ([`QueueError::TooLarge`]). A server that
//! accepts no byte at all while callers wait for room is detected by the
//! writer task (see `write_stall_timeout`), not here.
//!
//! Room is a semaphore of bytes: a sender takes as many permits as its line
//! has bytes, the writer task gives them back once the line is written.
//! The semaphore is fair, so lines go out in the order they got room.
//! Protocol lines of the client itself (handshake, cancellations, answers
//! to the server's pings) skip the callers' room
//! ([`WriteQueue::send_control`]): they are small, and a cancellation must
//! not wait behind the requests it cancels. They have a bound of their own
//! (the same size), past which they are refused, so a server that floods
//! requests and reads nothing cannot make the client queue answers without
//! end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, Semaphore, TryAcquireError};

/// Why a line was not queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum QueueError {
    /// The line alone is longer than the bound.
    TooLarge {
        /// The line's length.
        bytes: usize,
        /// The bound.
        limit: usize,
    },
    /// No room now (only from the non-waiting sends).
    Full {
        /// Bytes queued and not yet written.
        queued: usize,
        /// The bound.
        limit: usize,
    },
    /// The writer has stopped (the link is closing).
    Closed,
}

/// One queued line and the room it holds.
#[derive(Debug)]
pub(crate) struct Item {
    pub(crate) line: Vec<u8>,
    /// Permits to give back once written (0 for control lines).
    pub(crate) room: u32,
    /// A control line (counted in `control`, not in the permits).
    pub(crate) control: bool,
}

#[derive(Debug)]
struct Inner {
    tx: mpsc::UnboundedSender<Item>,
    room: Semaphore,
    limit: usize,
    /// Senders waiting for room right now.
    waiting: AtomicUsize,
    /// Bytes of control lines queued and not yet written.
    control: AtomicUsize,
}

/// The sending side (cheap to clone).
#[derive(Debug, Clone)]
pub(crate) struct WriteQueue {
    inner: Arc<Inner>,
}

/// The receiving side, owned by the writer task. Dropping it closes the
/// queue: waiting senders get [`QueueError::Closed`].
#[derive(Debug)]
pub(crate) struct QueueReceiver {
    rx: mpsc::UnboundedReceiver<Item>,
    inner: Arc<Inner>,
}

/// The largest bound: the semaphore counts in `u32` per acquisition.
pub(crate) const MAX_LIMIT: usize = u32::MAX as usize;

impl WriteQueue {
    /// A queue holding at most `limit` bytes of counted lines (clamped to
    /// 1..=[`MAX_LIMIT`]).
    pub(crate) fn new(limit: usize) -> (WriteQueue, QueueReceiver) {
        let limit = limit.clamp(1, MAX_LIMIT);
        let (tx, rx) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            tx,
            room: Semaphore::new(limit),
            limit,
            waiting: AtomicUsize::new(0),
            control: AtomicUsize::new(0),
        });
        (
            WriteQueue {
                inner: inner.clone(),
            },
            QueueReceiver { rx, inner },
        )
    }

    /// The bound in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.inner.limit
    }

    /// Bytes queued and not yet written (counted lines only).
    pub(crate) fn queued(&self) -> usize {
        self.inner.limit - self.inner.room.available_permits().min(self.inner.limit)
    }

    /// Queues `line` if there is room now.
    pub(crate) fn try_send(&self, line: Vec<u8>) -> Result<(), QueueError> {
        let n = self.permits(line.len())?;
        match self.inner.room.try_acquire_many(n) {
            Ok(p) => p.forget(),
            Err(TryAcquireError::NoPermits) => {
                return Err(QueueError::Full {
                    queued: self.queued(),
                    limit: self.inner.limit,
                })
            }
            Err(TryAcquireError::Closed) => return Err(QueueError::Closed),
        }
        self.push(line, n)
    }

    /// Queues `line`, waiting for room.
    ///
    /// Cancel safety: cancel safe. If the future is dropped before it
    /// completes, nothing was queued.
    pub(crate) async fn send(&self, line: Vec<u8>) -> Result<(), QueueError> {
        self.reserve(line.len()).await?.send(line)
    }

    /// Waits for room for a line of `bytes` bytes; the returned
    /// [`Reservation`] queues it without waiting again.
    ///
    /// Cancel safety: cancel safe; a dropped reservation gives its room
    /// back.
    pub(crate) async fn reserve(&self, bytes: usize) -> Result<Reservation<'_>, QueueError> {
        let n = self.permits(bytes)?;
        let permit = match self.inner.room.try_acquire_many(n) {
            Ok(p) => p,
            Err(TryAcquireError::Closed) => return Err(QueueError::Closed),
            Err(TryAcquireError::NoPermits) => {
                let _waiting = Waiting::new(&self.inner.waiting);
                self.inner
                    .room
                    .acquire_many(n)
                    .await
                    .map_err(|_| QueueError::Closed)?
            }
        };
        permit.forget();
        Ok(Reservation {
            queue: self,
            room: n,
        })
    }

    /// Queues a small protocol line of the client's own outside the
    /// callers' room (never waits). Refused with [`QueueError::Full`] when
    /// control lines alone fill the bound (the server reads nothing).
    pub(crate) fn send_control(&self, line: Vec<u8>) -> Result<(), QueueError> {
        if self.inner.room.is_closed() {
            return Err(QueueError::Closed);
        }
        let n = line.len();
        let now = self.inner.control.fetch_add(n, Ordering::AcqRel) + n;
        if now > self.inner.limit {
            self.inner.control.fetch_sub(n, Ordering::AcqRel);
            return Err(QueueError::Full {
                queued: now - n,
                limit: self.inner.limit,
            });
        }
        self.inner
            .tx
            .send(Item {
                line,
                room: 0,
                control: true,
            })
            .map_err(|e| {
                self.inner
                    .control
                    .fetch_sub(e.0.line.len(), Ordering::AcqRel);
                QueueError::Closed
            })
    }

    fn permits(&self, bytes: usize) -> Result<u32, QueueError> {
        if bytes > self.inner.limit {
            return Err(QueueError::TooLarge {
                bytes,
                limit: self.inner.limit,
            });
        }
        // At most MAX_LIMIT, so it fits.
        u32::try_from(bytes).map_err(|_| QueueError::TooLarge {
            bytes,
            limit: self.inner.limit,
        })
    }

    fn push(&self, line: Vec<u8>, room: u32) -> Result<(), QueueError> {
        let item = Item {
            line,
            room,
            control: false,
        };
        self.inner.tx.send(item).map_err(|e| {
            self.inner.room.add_permits(e.0.room as usize);
            QueueError::Closed
        })
    }
}

/// Room taken in a [`WriteQueue`] for one line; given back if dropped
/// unused.
#[derive(Debug)]
pub(crate) struct Reservation<'a> {
    queue: &'a WriteQueue,
    room: u32,
}

impl Reservation<'_> {
    /// Queues `line` (at most as long as reserved) in the room taken.
    pub(crate) fn send(mut self, line: Vec<u8>) -> Result<(), QueueError> {
        let room = std::mem::take(&mut self.room);
        self.queue.push(line, room)
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.queue.inner.room.add_permits(self.room as usize);
    }
}

impl QueueReceiver {
    /// The next line; `None` once every sender is gone.
    pub(crate) async fn recv(&mut self) -> Option<Item> {
        self.rx.recv().await
    }

    /// The next line if one is queued.
    pub(crate) fn try_recv(&mut self) -> Option<Item> {
        self.rx.try_recv().ok()
    }

    /// Gives back the room of written lines (`room` permits, `control`
    /// bytes of control lines).
    pub(crate) fn written(&self, room: usize, control: usize) {
        if room > 0 {
            self.inner.room.add_permits(room);
        }
        if control > 0 {
            self.inner.control.fetch_sub(control, Ordering::AcqRel);
        }
    }

    /// Whether a sender waits for room.
    pub(crate) fn has_waiters(&self) -> bool {
        self.inner.waiting.load(Ordering::Acquire) > 0
    }

    /// Bytes queued and not yet written.
    pub(crate) fn queued(&self) -> usize {
        self.inner.limit - self.inner.room.available_permits().min(self.inner.limit)
    }
}

impl Drop for QueueReceiver {
    fn drop(&mut self) {
        self.inner.room.close();
    }
}

/// Counts a sender as waiting while it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::AcqRel);
        Self(n)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_over_the_bound_fails_alone_and_others_wait_for_room() {
        let (q, mut rx) = WriteQueue::new(10);
        assert_eq!(
            q.try_send(vec![0; 11]),
            Err(QueueError::TooLarge {
                bytes: 11,
                limit: 10
            })
        );
        q.send(vec![1; 6]).await.unwrap();
        assert_eq!(
            q.try_send(vec![2; 6]),
            Err(QueueError::Full {
                queued: 6,
                limit: 10
            })
        );
        let q2 = q.clone();
        let waiter = tokio::spawn(async move { q2.send(vec![2; 6]).await });
        while !rx.has_waiters() {
            tokio::task::yield_now().await;
        }
        let first = rx.recv().await.unwrap();
        assert_eq!(first.room, 6);
        rx.written(first.room as usize, 0);
        waiter.await.unwrap().unwrap();
        assert_eq!(rx.recv().await.unwrap().line, vec![2; 6]);
        // Control lines skip the callers' room, within a bound of their
        // own.
        q.send_control(vec![3; 6]).unwrap();
        q.send_control(vec![3; 4]).unwrap();
        assert!(matches!(
            q.send_control(vec![3; 1]),
            Err(QueueError::Full { .. })
        ));
        let c = rx.recv().await.unwrap();
        assert!(c.control && c.room == 0);
        rx.written(0, c.line.len());
        q.send_control(vec![3; 6]).unwrap();
    }

    #[tokio::test]
    async fn waiting_senders_learn_that_the_writer_stopped() {
        let (q, rx) = WriteQueue::new(4);
        q.send(vec![0; 4]).await.unwrap();
        let q2 = q.clone();
        let waiter = tokio::spawn(async move { q2.send(vec![0; 4]).await });
        tokio::task::yield_now().await;
        drop(rx);
        assert_eq!(waiter.await.unwrap(), Err(QueueError::Closed));
        assert_eq!(q.send_control(vec![1]), Err(QueueError::Closed));
    }
}
