//! The line-reading loop both halves share: frame a stream into lines (the
//! size limit of [`LineFramer`] enforced while reading), skip blank lines,
//! and hand each line, or each line over the limit, to the owner's
//! [`LineHandler`], which may wait (back-pressure on the stream) or stop.
//!
//! What a line means is the handler's business: the client parses its
//! server's output and counts junk; the server charges its byte budget and
//! answers malformed lines.

use std::borrow::Cow;
use std::future::Future;
use std::io;

use tokio::io::AsyncRead;

use crate::framing::{FrameBuf, LineFramer};

/// Whether to read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Read on.
    Go,
    /// Stop reading (the handler knows why).
    Stop,
}

/// How reading ended.
#[derive(Debug)]
pub(crate) enum ReadEnd {
    /// End of stream; the framer may hold a last line without a newline.
    Eof,
    /// Reading failed.
    Failed(io::Error),
    /// The handler said [`Flow::Stop`].
    Stopped,
}

/// What the owner of a stream does with its lines.
pub(crate) trait LineHandler: Send {
    /// Lines at least this long are handed over owned: the buffer they
    /// arrived in, without a copy. `usize::MAX`: always borrowed.
    const OWN_FROM: usize = usize::MAX;

    /// After each read, with how many bytes are buffered (a partial line).
    fn filled(&mut self, _buffered: usize) {}

    /// One read brought several lines: called once per such read, before
    /// the second line is handed over.
    fn several(&mut self) {}

    /// One complete line, not blank, without its newline.
    fn line(&mut self, line: Cow<'_, [u8]>) -> impl Future<Output = Flow> + Send;

    /// A line over the limit began; it is being discarded as it streams in.
    fn too_large(&mut self, at_least: usize) -> impl Future<Output = Flow> + Send;
}

/// Reads `input` through `framer` into `handler` until end of stream, a
/// failure, or the handler stops.
///
/// Cancel safety: cancel safe at every await (a read lost on cancellation
/// was not made).
pub(crate) async fn read_lines<R, H>(
    input: &mut R,
    framer: &mut LineFramer,
    handler: &mut H,
) -> ReadEnd
where
    R: AsyncRead + Unpin + ?Sized,
    H: LineHandler,
{
    loop {
        let mut handed = 0;
        while let Some(frame) = framer.next_frame_owned(H::OWN_FROM) {
            handed += 1;
            if handed == 2 {
                handler.several();
            }
            let flow = match frame {
                FrameBuf::Line(line) if line.iter().all(u8::is_ascii_whitespace) => Flow::Go,
                FrameBuf::Line(line) => handler.line(line).await,
                FrameBuf::TooLarge { at_least } => handler.too_large(at_least).await,
            };
            if flow == Flow::Stop {
                return ReadEnd::Stopped;
            }
        }
        match framer.fill(input).await {
            Ok(0) => return ReadEnd::Eof,
            Ok(_) => handler.filled(framer.buffered()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return ReadEnd::Failed(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        lines: Vec<Vec<u8>>,
        too_large: Vec<usize>,
        stop_after: Option<usize>,
        /// `lines.len()` at each call of `several`.
        several_at: Vec<usize>,
    }

    impl LineHandler for Collect {
        fn several(&mut self) {
            self.several_at.push(self.lines.len());
        }

        async fn line(&mut self, line: Cow<'_, [u8]>) -> Flow {
            self.lines.push(line.into_owned());
            if Some(self.lines.len()) == self.stop_after {
                Flow::Stop
            } else {
                Flow::Go
            }
        }

        async fn too_large(&mut self, at_least: usize) -> Flow {
            self.too_large.push(at_least);
            Flow::Go
        }
    }

    #[tokio::test]
    async fn lines_blank_skipped_oversize_reported_and_a_stop_honoured() {
        let mut input: &[u8] = b"a\n\n  \r\nbb\r\nxxxxxxxxxxxx\nc\nrest";
        let mut framer = LineFramer::new(8);
        let mut h = Collect::default();
        let end = read_lines(&mut input, &mut framer, &mut h).await;
        assert!(matches!(end, ReadEnd::Eof));
        assert_eq!(h.lines, vec![b"a".to_vec(), b"bb".to_vec(), b"c".to_vec()]);
        assert_eq!(h.too_large.len(), 1);
        assert_eq!(framer.remainder(), b"rest");

        let mut input: &[u8] = b"1\n2\n3\n";
        let mut h = Collect {
            stop_after: Some(2),
            ..Collect::default()
        };
        let end = read_lines(&mut input, &mut LineFramer::new(8), &mut h).await;
        assert!(matches!(end, ReadEnd::Stopped));
        assert_eq!(h.lines.len(), 2);
    }

    #[tokio::test]
    async fn several_is_called_once_per_read_that_brings_more_than_one_line() {
        // Reads of "1\n", "2\n3\n4\n", "5\n": only the second has several.
        let mut input = chunked_reads(&[b"1\n", b"2\n3\n4\n", b"5\n"]);
        let mut h = Collect::default();
        let end = read_lines(&mut input, &mut LineFramer::new(64), &mut h).await;
        assert!(matches!(end, ReadEnd::Eof));
        assert_eq!(h.lines.len(), 5);
        // Called before line 3 (the second of that read) is handed over.
        assert_eq!(h.several_at, vec![2]);
    }

    /// A reader that returns each chunk from its own `read`.
    fn chunked_reads(chunks: &[&[u8]]) -> impl AsyncRead + Unpin {
        struct Chunks(std::collections::VecDeque<Vec<u8>>);
        impl AsyncRead for Chunks {
            fn poll_read(
                mut self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<io::Result<()>> {
                if let Some(c) = self.0.pop_front() {
                    buf.put_slice(&c);
                }
                std::task::Poll::Ready(Ok(()))
            }
        }
        Chunks(chunks.iter().map(|c| c.to_vec()).collect())
    }
}
