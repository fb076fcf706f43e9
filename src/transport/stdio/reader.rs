//! The reader task: frames the child's stdout and forwards messages.
//!
//! Messages go straight to the link's sink (one hop to the Connection);
//! everything that ends the link goes to the PortOwner, which decides the
//! close reason. Junk lines are logged at debug level and dropped, never
//! answered; blank lines are ignored.

use tokio::io::AsyncRead;
use tokio::sync::watch;
use tracing::debug;

use crate::error::CloseReason;
use std::borrow::Cow;

use crate::framing::{Frame, FrameBuf, LineFramer};
use crate::jsonrpc::Message;
use crate::transport::shutdown::closed;
use crate::transport::{EventSink, TransportEvent};

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
    pub(crate) max_message_bytes: usize,
    pub(crate) max_junk_lines: usize,
}

/// Lines at least this long are handed to the parser owned, so a large
/// result reaches its caller without being copied.
const OWN_FROM: usize = 64 * 1024;

fn parse(line: Cow<'_, [u8]>) -> Result<Message, crate::jsonrpc::ParseError> {
    match line {
        Cow::Borrowed(l) => Message::parse(l),
        Cow::Owned(l) => Message::parse_owned(l),
    }
}

/// Reads until end of stream, a fatal condition, or `shutdown`. The first
/// time a partial line reaches [`GROW_AT`](super::pipe::GROW_AT) bytes,
/// `on_long_line` runs (it grows the pipe).
pub(crate) async fn run<R: AsyncRead + Unpin>(
    mut input: R,
    limits: ReaderLimits,
    sink: EventSink,
    mut shutdown: watch::Receiver<()>,
    server: String,
    on_long_line: impl FnOnce(),
    on_end: impl FnOnce(ReaderEnd),
) {
    let mut framer = LineFramer::new(limits.max_message_bytes);
    let mut on_long_line = Some(on_long_line);
    let mut junk = 0usize;
    // One wait for the whole loop: a fresh one per read would register and
    // unregister a waiter (two lock round trips) for every message.
    let stop = closed(&mut shutdown);
    tokio::pin!(stop);
    let end = loop {
        let n = tokio::select! {
            biased;
            _ = &mut stop => return,
            n = framer.fill(&mut input) => n,
        };
        match n {
            Ok(0) => break ReaderEnd::Eof,
            Ok(_) => {}
            Err(e) => break ReaderEnd::Fatal(CloseReason::ReadFailed(e.to_string())),
        }
        if framer.buffered() >= super::pipe::GROW_AT {
            if let Some(f) = on_long_line.take() {
                f();
            }
        }
        let mut fatal = None;
        while let Some(frame) = framer.next_frame_owned(OWN_FROM) {
            match frame {
                FrameBuf::Line(line) if line.iter().all(u8::is_ascii_whitespace) => {}
                FrameBuf::Line(line) => {
                    let bytes = line.len();
                    match parse(line) {
                        Ok(msg) => {
                            junk = 0;
                            sink(TransportEvent::Message(msg));
                        }
                        Err(e) => {
                            junk += 1;
                            debug!(server = %server, error = %e, bytes, consecutive = junk, "dropped a line that is not JSON-RPC");
                            if junk > limits.max_junk_lines {
                                fatal = Some(CloseReason::JunkOutput {
                                    lines: junk,
                                    limit: limits.max_junk_lines,
                                });
                                break;
                            }
                        }
                    }
                }
                FrameBuf::TooLarge { at_least } => {
                    fatal = Some(CloseReason::MessageTooLarge {
                        limit: limits.max_message_bytes,
                        at_least,
                    });
                    break;
                }
            }
        }
        if let Some(reason) = fatal {
            break ReaderEnd::Fatal(reason);
        }
    };
    on_end(end);
}

/// Longest stderr line forwarded; longer lines are replaced by a note.
const MAX_STDERR_LINE: usize = 64 * 1024;

/// Drains the child's stderr line by line into `sink` as
/// [`TransportEvent::Stderr`], until end of stream or until the shutdown
/// sequence has ended (`done`). It never stops reading earlier, so a server
/// logging while it exits cannot block on a full pipe.
pub(crate) async fn run_stderr<R: AsyncRead + Unpin>(
    mut input: R,
    sink: EventSink,
    pid: u32,
    mut done: watch::Receiver<Option<crate::transport::ShutdownReport>>,
) {
    let mut framer = LineFramer::new(MAX_STDERR_LINE);
    loop {
        let n = tokio::select! {
            n = framer.fill(&mut input) => n,
            r = done.wait_for(Option::is_some) => {
                let _ = r;
                return;
            }
        };
        if !matches!(n, Ok(k) if k > 0) {
            if !framer.remainder().is_empty() {
                let line = String::from_utf8_lossy(framer.remainder()).into_owned();
                sink(TransportEvent::Stderr {
                    pid: Some(pid),
                    line,
                });
            }
            return;
        }
        while let Some(frame) = framer.next_frame() {
            let line = match frame {
                Frame::Line(l) => String::from_utf8_lossy(l).into_owned(),
                Frame::TooLarge { at_least } => {
                    format!("[a stderr line of at least {at_least} bytes was omitted: over 64 KiB]")
                }
            };
            sink(TransportEvent::Stderr {
                pid: Some(pid),
                line,
            });
        }
    }
}
