//! Process stdin and stdout, each served by a dedicated plain thread.
//!
//! # Why threads, not `tokio::io::stdin()`
//!
//! tokio's `stdin()`/`stdout()` run each blocking `read`/`write` on the
//! runtime's blocking pool. A read of an idle stdin never returns, and the
//! runtime waits for blocking-pool tasks when it shuts down, so a server
//! whose client keeps stdin open would hang at exit; `stop()` could not take
//! effect either. Here a plain `std::thread` reads fd 0 and forwards chunks
//! over a small bounded channel. On stop the session simply stops listening
//! and the thread is **abandoned**: it stays blocked in `read(2)` until the
//! process exits (threads do not keep a process alive) or the next chunk
//! arrives, which it then discards and exits.
//!
//! The same applies to stdout: a client that stops reading makes `write(2)`
//! block; the writer thread absorbs that and is abandoned after
//! `flush_timeout` when serving ends.
//!
//! Caveats:
//! - Serve process stdio at most once at a time per process. Serving it again
//!   after a stop may lose up to one chunk (64 KiB) read by the abandoned
//!   thread of the previous run.
//! - Chosen over a non-blocking `AsyncFd` on fd 0 because `O_NONBLOCK` is a
//!   property of the shared open file description: setting it would also
//!   change the parent's end of a terminal or pipe, and regular files do not
//!   support readiness at all. The thread works for pipes, ttys, files and
//!   `/dev/null` alike, on every platform.

use std::io::{self, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::{mpsc, oneshot};

/// Bytes asked for per `read(2)` of fd 0.
const CHUNK: usize = 64 * 1024;
/// Chunks the reader thread may run ahead of the session.
const READ_AHEAD: usize = 4;

/// An [`AsyncRead`] fed by a thread that reads process stdin.
pub(crate) struct ThreadReader {
    rx: mpsc::Receiver<io::Result<Vec<u8>>>,
    cur: Vec<u8>,
    pos: usize,
}

impl ThreadReader {
    /// Starts the reader thread. Fails only if the OS refuses a thread.
    pub(crate) fn stdin() -> io::Result<Self> {
        let (tx, rx) = mpsc::channel(READ_AHEAD);
        std::thread::Builder::new()
            .name("conduit-mcp-stdin".into())
            .spawn(move || read_thread(io::stdin(), tx))?;
        Ok(Self {
            rx,
            cur: Vec::new(),
            pos: 0,
        })
    }
}

fn read_thread(mut input: impl Read, tx: mpsc::Sender<io::Result<Vec<u8>>>) {
    loop {
        let mut buf = vec![0u8; CHUNK];
        match input.read(&mut buf) {
            Ok(0) => {
                tracing::debug!("stdin reader thread: end of input");
                return; // dropping tx is the EOF signal
            }
            Ok(n) => {
                buf.truncate(n);
                if tx.blocking_send(Ok(buf)).is_err() {
                    return; // the session is gone: this chunk is discarded
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        }
    }
}

impl AsyncRead for ThreadReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.pos >= this.cur.len() {
            match this.rx.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(Ok(())), // EOF
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                Poll::Ready(Some(Ok(chunk))) => {
                    this.cur = chunk;
                    this.pos = 0;
                }
            }
        }
        let n = (this.cur.len() - this.pos).min(out.remaining());
        out.put_slice(&this.cur[this.pos..this.pos + n]);
        this.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// A thread writing blocking output (process stdout or its guarded copy).
pub(crate) struct ThreadSink {
    tx: Option<mpsc::Sender<Vec<u8>>>,
    /// Receives the thread's write error, if it fails.
    failed: oneshot::Receiver<io::Error>,
    failed_done: bool,
    /// Completes when the thread has written everything and exited.
    finished: Option<oneshot::Receiver<()>>,
}

impl ThreadSink {
    pub(crate) fn spawn(output: Box<dyn Write + Send>) -> io::Result<Self> {
        // Capacity 1: the writer task waits while the thread is busy, and
        // the outbound queue (with its byte limit) absorbs the rest.
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(1);
        let (fail_tx, failed) = oneshot::channel();
        let (fin_tx, finished) = oneshot::channel();
        std::thread::Builder::new()
            .name("conduit-mcp-stdout".into())
            .spawn(move || {
                let mut output = output;
                while let Some(buf) = rx.blocking_recv() {
                    if let Err(e) = output.write_all(&buf).and_then(|_| output.flush()) {
                        let _ = fail_tx.send(e);
                        return;
                    }
                }
                let _ = fin_tx.send(());
            })?;
        Ok(Self {
            tx: Some(tx),
            failed,
            failed_done: false,
            finished: Some(finished),
        })
    }

    pub(crate) async fn write(&mut self, buf: Vec<u8>) -> io::Result<()> {
        let sent = match &self.tx {
            Some(tx) => tx.send(buf).await.is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            Err(self.failed().await)
        }
    }

    /// Waits until the thread has written everything queued.
    pub(crate) async fn finish(&mut self) -> io::Result<()> {
        self.tx = None;
        match self.finished.take() {
            Some(fin) => match fin.await {
                Ok(()) => Ok(()),
                Err(_) => Err(self.failed().await),
            },
            None => Ok(()),
        }
    }

    pub(crate) async fn failed(&mut self) -> io::Error {
        if !self.failed_done {
            if let Ok(e) = (&mut self.failed).await {
                self.failed_done = true;
                return e;
            }
            self.failed_done = true;
        }
        // The thread ended without reporting an error (it finished).
        std::future::pending::<()>().await;
        io::Error::other("unreachable")
    }
}
