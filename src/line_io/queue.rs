//! The outbound queue: lines waiting to be written to the peer, bounded in
//! bytes. Both halves use it: the client for the server's stdin, the server
//! for its stdout.
//!
//! The bound exists against a peer that stops reading, and must not punish
//! the senders while it reads. So a line waits for room
//! ([`WriteQueue::send`], back-pressure on the caller, who bounds the wait
//! with its own timeout) instead of failing, and only a line longer than
//! the whole bound fails, alone ([`QueueError::TooLarge`]). A server that
//! accepts no byte at all while callers wait for room is detected by the
//! writer task (see `write_stall_timeout`), not here.
//!
//! Room is a semaphore of bytes: a sender takes as many permits as its line
//! has bytes, the writer task gives them back once the line is written.
//! The semaphore is fair, so lines go out in the order they got room.
//! Protocol lines of the sender itself (handshake, cancellations, answers
//! to pings) skip the senders' room ([`WriteQueue::send_control`]): they
//! are small, and a cancellation must not wait behind the requests it
//! cancels. They have a bound of their own (the same size), past which
//! they are refused, so a peer that floods requests and reads nothing
//! cannot make us queue answers without end. The server's answers to
//! requests ([`WriteQueue::push`]) are never refused: their number is
//! bounded by the requests it runs at once; they count towards
//! [`is_full`](WriteQueue::is_full), which makes the server stop reading.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, Notify, Semaphore, TryAcquireError};

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

/// What the writer takes from the queue.
#[derive(Debug)]
pub(crate) enum Item {
    /// One line and the room it holds.
    Line {
        line: Vec<u8>,
        /// Permits to give back once written (0 for control lines).
        room: u32,
        /// A control or pushed line (counted in `control`, not in the
        /// permits).
        control: bool,
    },
    /// Write what precedes, flush, and end.
    Close,
}

#[derive(Debug)]
struct Inner {
    tx: mpsc::UnboundedSender<Item>,
    room: Semaphore,
    limit: usize,
    /// Senders waiting for room right now.
    waiting: AtomicUsize,
    /// Bytes of control and pushed lines queued and not yet written.
    control: AtomicUsize,
    /// Woken after each write.
    drained: Notify,
    /// Set by a reader that got several messages in one read: their
    /// answers (or the next calls) are about to be queued together.
    burst: Arc<AtomicBool>,
}

/// Tells the writer that several lines are about to be queued at once, so
/// it lets their senders run before it writes (one write instead of one
/// each). Held by the reader of the same link; does not keep the queue open.
#[derive(Debug, Clone)]
pub(crate) struct BurstHint(Arc<AtomicBool>);

impl BurstHint {
    /// Several lines are coming.
    pub(crate) fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
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
            drained: Notify::new(),
            burst: Arc::new(AtomicBool::new(false)),
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

    /// Bytes queued and not yet written.
    pub(crate) fn queued(&self) -> usize {
        self.inner.queued()
    }

    /// Whether the queue holds its bound or more.
    pub(crate) fn is_full(&self) -> bool {
        self.queued() >= self.inner.limit
    }

    /// Resolves after the writer has written something (a wake-up between
    /// a check and this wait is not lost).
    pub(crate) async fn drained(&self) {
        self.inner.drained.notified().await
    }

    /// Queues `line` if there is room now.
    pub(crate) fn try_send(&self, line: Vec<u8>) -> Result<(), QueueError> {
        let n = self.permits(line.len())?;
        let full = || QueueError::Full {
            queued: self.queued(),
            limit: self.inner.limit,
        };
        // Pushed answers count against the bound too.
        if self.queued() + line.len() > self.inner.limit {
            return Err(full());
        }
        match self.inner.room.try_acquire_many(n) {
            Ok(p) => p.forget(),
            Err(TryAcquireError::NoPermits) => return Err(full()),
            Err(TryAcquireError::Closed) => return Err(QueueError::Closed),
        }
        self.enqueue(line, n)
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
        self.enqueue_control(line)
    }

    /// Queues an answer whatever the queue holds (never waits, never
    /// refused but when the writer has stopped). For answers whose number
    /// is bounded elsewhere (the requests a server runs at once).
    pub(crate) fn push(&self, line: Vec<u8>) -> Result<(), QueueError> {
        self.inner.control.fetch_add(line.len(), Ordering::AcqRel);
        self.enqueue_control(line)
    }

    /// Asks the writer to write what is queued, flush, and end.
    pub(crate) fn close(&self) {
        let _ = self.inner.tx.send(Item::Close);
    }

    fn enqueue_control(&self, line: Vec<u8>) -> Result<(), QueueError> {
        let item = Item::Line {
            line,
            room: 0,
            control: true,
        };
        self.inner.tx.send(item).map_err(|e| {
            if let Item::Line { line, .. } = e.0 {
                self.inner.control.fetch_sub(line.len(), Ordering::AcqRel);
            }
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

    fn enqueue(&self, line: Vec<u8>, room: u32) -> Result<(), QueueError> {
        let item = Item::Line {
            line,
            room,
            control: false,
        };
        self.inner.tx.send(item).map_err(|_| {
            self.inner.room.add_permits(room as usize);
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
        self.queue.enqueue(line, room)
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
    /// bytes of control and pushed lines), and wakes who waits for it.
    pub(crate) fn written(&self, room: usize, control: usize) {
        if room > 0 {
            self.inner.room.add_permits(room);
        }
        if control > 0 {
            self.inner.control.fetch_sub(control, Ordering::AcqRel);
        }
        self.inner.drained.notify_one();
    }

    /// The hint a reader of the same link sets (see [`BurstHint`]).
    pub(crate) fn burst_hint(&self) -> BurstHint {
        BurstHint(self.inner.burst.clone())
    }

    /// Whether a burst was announced since the last call (and clears it).
    pub(crate) fn take_burst(&self) -> bool {
        self.inner.burst.swap(false, Ordering::Relaxed)
    }

    /// Whether a sender waits for room.
    pub(crate) fn has_waiters(&self) -> bool {
        self.inner.waiting.load(Ordering::Acquire) > 0
    }

    /// Bytes queued and not yet written.
    pub(crate) fn queued(&self) -> usize {
        self.inner.queued()
    }
}

impl Inner {
    fn queued(&self) -> usize {
        let counted = self.limit - self.room.available_permits().min(self.limit);
        counted + self.control.load(Ordering::Acquire)
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
        let Some(Item::Line { room, .. }) = rx.recv().await else {
            panic!("a line")
        };
        assert_eq!(room, 6);
        rx.written(room as usize, 0);
        waiter.await.unwrap().unwrap();
        assert!(matches!(rx.recv().await, Some(Item::Line { line, .. }) if line == vec![2; 6]));
        // Control lines skip the callers' room, within a bound of their
        // own.
        q.send_control(vec![3; 6]).unwrap();
        q.send_control(vec![3; 4]).unwrap();
        assert!(matches!(
            q.send_control(vec![3; 1]),
            Err(QueueError::Full { .. })
        ));
        let Some(Item::Line {
            line,
            room: 0,
            control: true,
        }) = rx.recv().await
        else {
            panic!("a control line")
        };
        rx.written(0, line.len());
        q.send_control(vec![3; 6]).unwrap();
        // Pushed answers are never refused, but fill the queue.
        q.push(vec![4; 20]).unwrap();
        assert!(q.is_full());
        assert!(matches!(q.try_send(vec![5]), Err(QueueError::Full { .. })));
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
