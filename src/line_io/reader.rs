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
        while let Some(frame) = framer.next_frame_owned(H::OWN_FROM) {
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
    }

    impl LineHandler for Collect {
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
}
