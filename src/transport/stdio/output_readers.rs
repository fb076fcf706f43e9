//! The reader tasks: frame the child's stdout and forward messages; relay
//! its stderr line by line.
//!
//! Messages go straight to the link's sink; everything that ends the link
//! goes to the PortOwner, which decides the close reason. Junk lines are
//! logged at debug level and dropped, never answered; blank lines are
//! ignored. A sink that is full makes the reader wait (the server's stdout
//! pipe fills up and the server blocks): what a server writes is never
//! queued without bound.
//!
//! Both readers keep reading until the child's shutdown has ended, even
//! after the link closed: a server that writes while it exits (a goodbye
//! log line, a last notification) must find an open pipe, or it dies of
//! EPIPE instead of exiting cleanly. What arrives then is discarded.

use std::borrow::Cow;

use tokio::io::{AsyncRead, AsyncReadExt};
use tracing::debug;

use crate::child::{ShutdownHandle, ShutdownSignal};
use crate::error::CloseReason;
use crate::framing::{Frame, LineFramer};
use crate::jsonrpc::Message;
use crate::line_io::reader::{read_lines, Flow, LineHandler, ReadEnd};
use crate::line_io::BurstHint;
use crate::transport::{Delivery, EventSink, TransportEvent};

/// How the reader ended.
#[derive(Debug)]
pub(crate) enum ReaderEnd {
    /// End of stream.
    Eof,
    /// A fatal condition (too large, junk limit, read error).
    Fatal(CloseReason),
}

/// Limits of one reader.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReaderLimits {
    max_message_bytes: usize,
    max_junk_lines: usize,
}

impl ReaderLimits {
    #[inline]
    pub(crate) fn new(max_message_bytes: usize, max_junk_lines: usize) -> Self {
        Self {
            max_message_bytes,
            max_junk_lines,
        }
    }
}

/// Lines at least this long are handed to the parser owned, so a large
/// result reaches its caller without being copied.
const OWN_FROM: usize = 64 * 1024;

/// Bytes read per call while draining.
const DRAIN_CHUNK: usize = 64 * 1024;

/// The stdout reader's context.
pub(crate) struct Reader {
    limits: ReaderLimits,
    sink: EventSink,
    shutdown: ShutdownSignal,
    /// Resolves when the child is reaped: the end of the drain.
    done: ShutdownHandle,
    server: String,
    /// Set when one read brings several answers (see [`BurstHint`]).
    burst: BurstHint,
}

impl Reader {
    #[inline]
    pub(crate) fn new(
        limits: ReaderLimits,
        sink: EventSink,
        shutdown: ShutdownSignal,
        done: ShutdownHandle,
        server: String,
        burst: BurstHint,
    ) -> Self {
        Self {
            limits,
            sink,
            shutdown,
            done,
            server,
            burst,
        }
    }

    /// Reads until end of stream, a fatal condition or the shutdown, then
    /// discards what comes until the child is reaped. The first time a
    /// partial line reaches [`GROW_AT`](crate::child::pipe_size::GROW_AT)
    /// bytes, `on_long_line` runs (it grows the pipe); `on_end` hears how
    /// reading ended (not called when the shutdown came first).
    pub(crate) async fn run<R: AsyncRead + Unpin>(
        self,
        mut input: R,
        on_long_line: impl FnOnce() + Send,
        on_end: impl FnOnce(ReaderEnd),
    ) {
        let mut lines = Lines {
            limits: self.limits,
            sink: self.sink,
            server: self.server,
            on_long_line: Some(on_long_line),
            junk: 0,
            fatal: None,
            burst: self.burst,
        };
        let mut framer = LineFramer::new(self.limits.max_message_bytes);
        let mut shutdown = self.shutdown;
        let end = tokio::select! {
            biased;
            _ = shutdown.fired() => None,
            end = read_lines(&mut input, &mut framer, &mut lines) => Some(end),
        };
        let end = end.map(|end| match end {
            ReadEnd::Eof => ReaderEnd::Eof,
            ReadEnd::Failed(e) => ReaderEnd::Fatal(CloseReason::ReadFailed(e.to_string())),
            ReadEnd::Stopped => ReaderEnd::Fatal(
                lines
                    .fatal
                    .take()
                    .unwrap_or_else(|| CloseReason::ReadFailed("stopped".into())),
            ),
        });
        if let Some(end) = end {
            on_end(end);
        }
        drain(&mut input, self.done).await;
    }
}

/// What the server writes on stdout, line by line: messages to the sink
/// (waiting while it is full), junk counted, an oversize line fatal.
struct Lines<F> {
    limits: ReaderLimits,
    sink: EventSink,
    server: String,
    on_long_line: Option<F>,
    /// Consecutive lines that are not JSON-RPC.
    junk: usize,
    /// Why reading stopped.
    fatal: Option<CloseReason>,
    burst: BurstHint,
}

impl<F: FnOnce() + Send> LineHandler for Lines<F> {
    const OWN_FROM: usize = OWN_FROM;

    fn filled(&mut self, buffered: usize) {
        if buffered >= crate::child::pipe_size::GROW_AT {
            if let Some(f) = self.on_long_line.take() {
                f();
            }
        }
    }

    fn several(&mut self) {
        // The callers these answers wake will send their next calls.
        self.burst.set();
    }

    async fn line(&mut self, line: Cow<'_, [u8]>) -> Flow {
        let bytes = line.len();
        let parsed = match line {
            Cow::Borrowed(l) => Message::parse(l),
            Cow::Owned(l) => Message::parse_owned(l),
        };
        match parsed {
            Ok(message) => {
                self.junk = 0;
                if let Delivery::Wait(delivered) = (self.sink)(TransportEvent::Message { message })
                {
                    delivered.await;
                }
                Flow::Go
            }
            Err(e) => {
                self.junk += 1;
                debug!(server = %self.server, error = %e, bytes, consecutive = self.junk, "dropped a line that is not JSON-RPC");
                if self.junk <= self.limits.max_junk_lines {
                    return Flow::Go;
                }
                self.fatal = Some(CloseReason::JunkOutput {
                    lines: self.junk,
                    limit: self.limits.max_junk_lines,
                });
                Flow::Stop
            }
        }
    }

    async fn too_large(&mut self, at_least: usize) -> Flow {
        self.fatal = Some(CloseReason::MessageTooLarge {
            limit: self.limits.max_message_bytes,
            at_least,
        });
        Flow::Stop
    }
}

/// Reads and discards until end of stream or until `done` resolves (the
/// child is reaped; a grandchild may still hold the pipe open).
async fn drain<R: AsyncRead + Unpin>(input: &mut R, done: ShutdownHandle) {
    let mut scratch = vec![0u8; DRAIN_CHUNK];
    let finished = done.wait();
    tokio::pin!(finished);
    loop {
        tokio::select! {
            biased;
            _ = &mut finished => return,
            n = input.read(&mut scratch) => match n {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
        }
    }
}

/// Longest stderr line forwarded; longer lines are replaced by a note.
const MAX_STDERR_LINE: usize = 64 * 1024;

/// Relays the child's stderr line by line into `sink` as
/// [`TransportEvent::Stderr`], until end of stream or until the child is
/// reaped (`done`). It never stops reading earlier, so a server logging
/// while it exits cannot block on a full pipe.
pub(crate) async fn run_stderr<R: AsyncRead + Unpin>(
    mut input: R,
    sink: EventSink,
    pid: u32,
    done: ShutdownHandle,
) {
    let mut framer = LineFramer::new(MAX_STDERR_LINE);
    let finished = done.wait();
    tokio::pin!(finished);
    let send = |line: String| {
        // Stderr lines are never held back (the sink publishes them).
        let _ = sink(TransportEvent::Stderr {
            pid: Some(pid),
            line,
        });
    };
    loop {
        let n = tokio::select! {
            n = framer.fill(&mut input) => n,
            _ = &mut finished => return,
        };
        if !matches!(n, Ok(k) if k > 0) {
            if !framer.remainder().is_empty() {
                send(String::from_utf8_lossy(framer.remainder()).into_owned());
            }
            return;
        }
        while let Some(frame) = framer.next_frame() {
            send(match frame {
                Frame::Line(l) => String::from_utf8_lossy(l).into_owned(),
                Frame::TooLarge { at_least } => {
                    format!("[a stderr line of at least {at_least} bytes was omitted: over 64 KiB]")
                }
            });
        }
    }
}
