//! Newline-delimited framing with a hard size limit.
//!
//! MCP's stdio transport carries one JSON-RPC message per line. [`LineFramer`]
//! owns one read buffer, finds line ends with `memchr` (each byte is scanned
//! once, so a message arriving in many small reads costs linear time), and
//! enforces `max_message_bytes` *while scanning*: an oversize line is reported
//! once and then discarded as it streams in, never stored whole. Memory stays
//! bounded by the limit plus one read chunk whatever the peer sends.
//!
//! The same framer serves the client's reader (child stdout) and the server's
//! reader (process stdin).

use std::borrow::Cow;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Default largest line, in bytes, excluding the newline: 8 MiB.
pub(crate) const DEFAULT_MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// Bytes asked for per read call.
const READ_CHUNK: usize = 64 * 1024;

/// What [`LineFramer::next_frame`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    /// One complete line, without its `\n` (a trailing `\r` is removed too).
    Line(&'a [u8]),
    /// A line longer than the limit began. Its bytes are being discarded up
    /// to and including its newline; `at_least` is how much was seen so far.
    TooLarge {
        /// Bytes of the oversize line seen when it was detected.
        at_least: usize,
    },
}

/// What [`LineFramer::next_frame_owned`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FrameBuf<'a> {
    /// One complete line, without its `\n` (a trailing `\r` is removed too):
    /// borrowed from the framer when short, owned when long.
    Line(Cow<'a, [u8]>),
    /// As [`Frame::TooLarge`].
    TooLarge {
        /// Bytes of the oversize line seen when it was detected.
        at_least: usize,
    },
}

/// A located frame, as positions in the buffer.
enum Found {
    Line { start: usize, len: usize },
    TooLarge(usize),
}

fn trim_cr(line: &[u8]) -> &[u8] {
    match line {
        [rest @ .., b'\r'] => rest,
        _ => line,
    }
}

/// Splits a byte stream into lines of at most `max` bytes.
///
/// Usage: call [`fill`](Self::fill) to read more, then drain
/// [`next_frame`](Self::next_frame) until it returns `None`.
#[derive(Debug)]
pub(crate) struct LineFramer {
    buf: Vec<u8>,
    /// Start of the first unconsumed byte.
    start: usize,
    /// Bytes from `start` already scanned without finding a newline.
    scanned: usize,
    max: usize,
    /// Inside an oversize line: drop bytes until the next newline.
    discarding: bool,
}

impl LineFramer {
    /// A framer that refuses lines longer than `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            buf: Vec::with_capacity(READ_CHUNK),
            start: 0,
            scanned: 0,
            max,
            discarding: false,
        }
    }

    /// Bytes currently buffered (at most the limit plus one read chunk).
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Appends bytes as if they had been read.
    #[cfg(test)]
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.compact();
        self.buf.extend_from_slice(data);
    }

    /// Reads once from `reader` into the buffer. Returns the number of bytes
    /// read; `0` means end of stream.
    ///
    /// Cancel safety: this is cancel safe; if the future is dropped before it
    /// completes, no data has been read.
    pub(crate) async fn fill<R: AsyncRead + Unpin + ?Sized>(
        &mut self,
        reader: &mut R,
    ) -> std::io::Result<usize> {
        self.compact();
        let len = self.buf.len();
        // Grow geometrically (linear total cost), but with exact
        // reservations: `reserve` may double past the cap, which would let
        // the capacity reach twice the limit.
        let cap = self.max.saturating_add(READ_CHUNK + 1);
        let want = (len + READ_CHUNK).min(cap);
        if self.buf.capacity() < want {
            let target = self.buf.capacity().saturating_mul(2).max(want).min(cap);
            self.buf.reserve_exact(target - len);
        }
        reader.read_buf(&mut self.buf).await
    }

    /// Moves unconsumed bytes to the front of the buffer.
    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        // Release a large buffer once it has emptied (after a big message).
        if self.buf.is_empty() && self.buf.capacity() > 4 * READ_CHUNK {
            self.buf = Vec::with_capacity(READ_CHUNK);
        }
    }

    /// Returns the next complete line or oversize report, or `None` when more
    /// input is needed.
    pub(crate) fn next_frame(&mut self) -> Option<Frame<'_>> {
        Some(match self.locate()? {
            Found::Line { start, len } => Frame::Line(trim_cr(&self.buf[start..start + len])),
            Found::TooLarge(at_least) => Frame::TooLarge { at_least },
        })
    }

    /// Like [`next_frame`](Self::next_frame), but a line of at least
    /// `own_from` bytes is handed over owned. When it starts the buffer (as
    /// a line that took several reads always does) the buffer itself is
    /// handed over and the few bytes after the line move to a new one, so
    /// a large message is never copied.
    pub(crate) fn next_frame_owned(&mut self, own_from: usize) -> Option<FrameBuf<'_>> {
        Some(match self.locate()? {
            Found::Line { start, len } if len >= own_from => {
                let line = if start == 0 {
                    let tail = &self.buf[len + 1..];
                    let mut rest = Vec::with_capacity(READ_CHUNK.max(tail.len()));
                    rest.extend_from_slice(tail);
                    self.start = 0;
                    let mut line = std::mem::replace(&mut self.buf, rest);
                    line.truncate(len);
                    line
                } else {
                    self.buf[start..start + len].to_vec()
                };
                let mut line = line;
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                FrameBuf::Line(Cow::Owned(line))
            }
            Found::Line { start, len } => {
                FrameBuf::Line(Cow::Borrowed(trim_cr(&self.buf[start..start + len])))
            }
            Found::TooLarge(at_least) => FrameBuf::TooLarge { at_least },
        })
    }

    /// Finds the next line (as `buf[start..start + len]`, before its `\n`)
    /// or oversize report and consumes it.
    fn locate(&mut self) -> Option<Found> {
        loop {
            let pending = &self.buf[self.start..];
            if pending.is_empty() {
                return None;
            }
            let found = memchr::memchr(b'\n', &pending[self.scanned..]).map(|i| i + self.scanned);
            if self.discarding {
                match found {
                    Some(nl) => {
                        self.start += nl + 1;
                        self.scanned = 0;
                        self.discarding = false;
                        continue;
                    }
                    None => {
                        // Drop everything: nothing of an oversize line is kept.
                        self.start = self.buf.len();
                        self.scanned = 0;
                        return None;
                    }
                }
            }
            match found {
                Some(nl) => {
                    let line_start = self.start;
                    self.start += nl + 1;
                    self.scanned = 0;
                    if nl > self.max {
                        // Complete but too long: the whole line was in one read.
                        return Some(Found::TooLarge(nl));
                    }
                    return Some(Found::Line {
                        start: line_start,
                        len: nl,
                    });
                }
                None => {
                    let len = pending.len();
                    if len > self.max {
                        self.discarding = true;
                        self.start = self.buf.len();
                        self.scanned = 0;
                        return Some(Found::TooLarge(len));
                    }
                    self.scanned = len;
                    return None;
                }
            }
        }
    }

    /// Bytes of an unterminated final line (at end of stream), if any.
    pub(crate) fn remainder(&self) -> &[u8] {
        if self.discarding {
            &[]
        } else {
            &self.buf[self.start..]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn lines(framer: &mut LineFramer) -> Vec<Result<Vec<u8>, usize>> {
        let mut out = Vec::new();
        while let Some(f) = framer.next_frame() {
            out.push(match f {
                Frame::Line(l) => Ok(l.to_vec()),
                Frame::TooLarge { at_least } => Err(at_least),
            });
        }
        out
    }

    #[test]
    fn long_lines_are_handed_over_owned_short_ones_borrowed() {
        let mut framer = LineFramer::new(1024);
        framer.push(b"short\nsomewhat longer\n");
        let first = framer.next_frame_owned(10);
        assert_eq!(first, Some(FrameBuf::Line(Cow::Borrowed(&b"short"[..]))));
        let second = framer.next_frame_owned(10);
        assert!(matches!(second, Some(FrameBuf::Line(Cow::Owned(l))) if l == b"somewhat longer"));
        assert_eq!(framer.next_frame_owned(10), None);
    }

    #[tokio::test]
    async fn the_buffer_never_grows_past_the_limit_and_one_chunk() {
        // A long line arriving in small reads: every fill may grow the
        // buffer, and no growth may overshoot the cap (limit + chunk + 1).
        let max = 1_000_000;
        let mut framer = LineFramer::new(max);
        let mut input: &[u8] = &vec![b'x'; 3 * max];
        let mut peak = 0;
        while framer.fill(&mut input).await.unwrap() > 0 {
            peak = peak.max(framer.buf.capacity());
            while framer.next_frame().is_some() {}
        }
        assert!(peak <= max + READ_CHUNK + 1, "capacity {peak}");
        assert!(peak >= max, "the buffer did grow to the limit: {peak}");
    }

    /// As [`lines`], through `next_frame_owned(own_from)`.
    fn lines_owned(framer: &mut LineFramer, own_from: usize) -> Vec<Result<Vec<u8>, usize>> {
        let mut out = Vec::new();
        while let Some(f) = framer.next_frame_owned(own_from) {
            out.push(match f {
                FrameBuf::Line(l) => {
                    assert_eq!(matches!(l, Cow::Owned(_)), l.len() >= own_from);
                    Ok(l.into_owned())
                }
                FrameBuf::TooLarge { at_least } => Err(at_least),
            });
        }
        out
    }

    #[test]
    fn long_lines_are_handed_over_with_the_buffer() {
        let mut f = LineFramer::new(1 << 20);
        let long = vec![b'x'; 200_000];
        f.push(&long[..100_000]);
        assert!(lines_owned(&mut f, 1000).is_empty());
        f.push(&long[100_000..]);
        f.push(b"\r\nshort\npartial");
        let ptr_before = f.buf.as_ptr();
        let got = f.next_frame_owned(1000);
        match got {
            Some(FrameBuf::Line(Cow::Owned(v))) => {
                assert_eq!(v, long);
                // The very buffer the bytes were read into: no copy.
                assert_eq!(v.as_ptr(), ptr_before);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(lines_owned(&mut f, 1000), vec![Ok(b"short".to_vec())]);
        assert_eq!(f.remainder(), b"partial");
        // A long line after a short one in the same read is copied out.
        f.push(b"\nab\n");
        f.push(&long);
        f.push(b"\n");
        assert_eq!(
            lines_owned(&mut f, 1000),
            vec![
                Ok(b"partial".to_vec()),
                Ok(b"ab".to_vec()),
                Ok(long.clone())
            ]
        );
    }

    #[test]
    fn splits_lines_and_strips_cr() {
        let mut f = LineFramer::new(100);
        f.push(b"a\r\nbb\n\nccc");
        assert_eq!(
            lines(&mut f),
            vec![Ok(b"a".to_vec()), Ok(b"bb".to_vec()), Ok(Vec::new())]
        );
        assert_eq!(f.remainder(), b"ccc");
        f.push(b"\n");
        assert_eq!(lines(&mut f), vec![Ok(b"ccc".to_vec())]);
    }

    #[test]
    fn limit_is_inclusive_and_oversize_is_discarded() {
        let mut f = LineFramer::new(4);
        f.push(b"1234\n12345\nok\n");
        assert_eq!(
            lines(&mut f),
            vec![Ok(b"1234".to_vec()), Err(5), Ok(b"ok".to_vec())]
        );
    }

    proptest::proptest! {
        /// Any split of a stream into chunks yields the same lines.
        #[test]
        fn chunk_boundaries_do_not_matter(
            lines in proptest::collection::vec("[ -~]{0,40}", 0..20),
            cuts in proptest::collection::vec(0usize..1000, 0..30),
        ) {
            let mut stream = Vec::new();
            for l in &lines {
                stream.extend_from_slice(l.as_bytes());
                stream.push(b'\n');
            }
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (stream.len() + 1)).collect();
            cuts.push(stream.len());
            cuts.sort_unstable();
            let mut f = LineFramer::new(64);
            let mut owned = LineFramer::new(64);
            let mut got = Vec::new();
            let mut got_owned = Vec::new();
            let mut at = 0;
            for c in cuts {
                f.push(&stream[at..c]);
                owned.push(&stream[at..c]);
                at = c;
                got.extend(super::tests::lines(&mut f));
                got_owned.extend(lines_owned(&mut owned, 5));
            }
            proptest::prop_assert_eq!(&got, &got_owned);
            let want: Vec<Result<Vec<u8>, usize>> = lines
                .iter()
                .map(|l| Ok(l.trim_end_matches('\r').as_bytes().to_vec()))
                .collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn every_single_split_of_two_messages() {
        let stream = b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";
        for cut in 0..=stream.len() {
            let mut f = LineFramer::new(1024);
            f.push(&stream[..cut]);
            let mut got = lines(&mut f);
            f.push(&stream[cut..]);
            got.extend(lines(&mut f));
            assert_eq!(got.len(), 2, "cut at {cut}");
            for l in got {
                assert!(
                    crate::jsonrpc::Message::parse(&l.unwrap()).is_ok(),
                    "cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn oversize_streaming_line_keeps_memory_bounded() {
        let mut f = LineFramer::new(10);
        f.push(&[b'x'; 8]);
        assert!(lines(&mut f).is_empty());
        f.push(&[b'x'; 8]);
        assert_eq!(lines(&mut f), vec![Err(16)]);
        for _ in 0..100 {
            f.push(&[b'y'; 1000]);
            assert!(lines(&mut f).is_empty());
            assert_eq!(f.buffered(), 0);
        }
        f.push(b"yyy\nnext\n");
        assert_eq!(lines(&mut f), vec![Ok(b"next".to_vec())]);
    }
}
