//! Server-Sent Events (the WHATWG `text/event-stream` format), as MCP uses
//! them: one JSON-RPC message per event in `data`, an `id` per event where
//! the stream is resumable, `retry` to pace reconnections, and comment
//! lines as keep-alives.
//!
//! [`Event::to_bytes`] frames one event; [`Parser`] reads a stream
//! incrementally (any chunking, `\n`, `\r\n` or `\r` line ends), holding at
//! most one event, whose size it bounds.

use bytes::Bytes;

/// One event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Event {
    /// `id:` (the position a client resumes from with `Last-Event-ID`).
    id: Option<String>,
    /// `event:` (MCP uses the default type, `message`: `None`).
    event: Option<String>,
    /// `data:` (a JSON-RPC message; empty for a priming event).
    data: String,
    /// `retry:` in milliseconds (the client's reconnection delay).
    retry: Option<u64>,
}

impl Event {
    /// The event's data.
    #[inline]
    pub(crate) fn data(&self) -> &str {
        &self.data
    }
    /// An event carrying `data` (one JSON-RPC message).
    pub(crate) fn message(data: impl Into<String>) -> Self {
        Event {
            data: data.into(),
            ..Event::default()
        }
    }

    /// Sets the event's id.
    pub(crate) fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the event's `retry`.
    pub(crate) fn with_retry(mut self, ms: u64) -> Self {
        self.retry = Some(ms);
        self
    }

    /// The event in wire form, ending with the blank line that dispatches
    /// it. Line breaks in `data` become several `data:` lines; an id or
    /// event type holding a line break would break the framing, so those
    /// are cut at the first one.
    pub(crate) fn to_bytes(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.data.len() + 48);
        let first_line = |s: &str| s.split(['\r', '\n']).next().unwrap_or("").to_owned();
        if let Some(id) = &self.id {
            out.extend_from_slice(b"id: ");
            out.extend_from_slice(first_line(id).replace('\0', "").as_bytes());
            out.push(b'\n');
        }
        if let Some(ev) = &self.event {
            out.extend_from_slice(b"event: ");
            out.extend_from_slice(first_line(ev).as_bytes());
            out.push(b'\n');
        }
        if let Some(ms) = self.retry {
            out.extend_from_slice(format!("retry: {ms}\n").as_bytes());
        }
        let data = self.data.strip_suffix('\n').unwrap_or(&self.data);
        for line in data.split('\n') {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(line.strip_suffix('\r').unwrap_or(line).as_bytes());
            out.push(b'\n');
        }
        out.push(b'\n');
        Bytes::from(out)
    }
}

/// A comment line: ignored by clients, it keeps idle connections open
/// through proxies and client timeouts.
pub(crate) fn keep_alive() -> Bytes {
    Bytes::from_static(b":\n\n")
}

/// The stream broke the parser's bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("SSE event over {limit} bytes")]
pub(crate) struct EventTooLarge {
    /// The bound.
    limit: usize,
}

impl EventTooLarge {
    /// The bound.
    #[inline]
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }
}

/// An incremental `text/event-stream` parser.
///
/// Feed it bytes as they arrive; it returns the events completed so far.
/// It keeps the last event id and the latest `retry` (as an
/// `EventSource` does). As in WHATWG's algorithm, a block with at least one
/// `data` line is dispatched, even when the data is empty (MCP's priming
/// event: an id, a `retry`, an empty `data`; callers skip empty data), and
/// a block without one (only an id or a comment) is not.
#[derive(Debug)]
pub(crate) struct Parser {
    max_event_bytes: usize,
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` starting the next one
    /// belongs to that line end.
    after_cr: bool,
    data: String,
    has_data: bool,
    event: Option<String>,
    id: Option<String>,
    last_event_id: Option<String>,
    retry: Option<u64>,
    held: usize,
}

impl Parser {
    /// A parser that refuses an event (or a line) larger than
    /// `max_event_bytes`.
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        Parser {
            max_event_bytes,
            line: Vec::new(),
            after_cr: false,
            data: String::new(),
            has_data: false,
            event: None,
            id: None,
            last_event_id: None,
            retry: None,
            held: 0,
        }
    }

    /// The id of the last event seen (the `Last-Event-ID` to resume with).
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The latest `retry` the server sent, in milliseconds.
    pub(crate) fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Parses `chunk`; returns the events it completed.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Event>, EventTooLarge> {
        let mut out = Vec::new();
        let mut rest = chunk;
        if self.after_cr && rest.first() == Some(&b'\n') {
            rest = &rest[1..];
        }
        self.after_cr = false;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            self.add(&rest[..end])?;
            let line = std::mem::take(&mut self.line);
            self.field(&line, &mut out);
            let crlf = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if crlf {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.add(rest)?;
        Ok(out)
    }

    fn add(&mut self, bytes: &[u8]) -> Result<(), EventTooLarge> {
        self.held = self.held.saturating_add(bytes.len());
        if self.held > self.max_event_bytes {
            return Err(EventTooLarge {
                limit: self.max_event_bytes,
            });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn field(&mut self, line: &[u8], out: &mut Vec<Event>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return; // a comment
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => self.event = Some(value.into_owned()),
            b"id" if !value.contains('\0') => {
                self.id = Some(value.into_owned());
                self.last_event_id.clone_from(&self.id);
            }
            b"retry" => {
                if let Ok(ms) = value.parse() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Event>) {
        self.held = 0;
        let id = self.id.take();
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            self.data.clear();
            return;
        }
        out.push(Event {
            id,
            event,
            data: std::mem::take(&mut self.data),
            retry: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_round_trips_through_the_parser_at_every_split() {
        let ev = Event::message("{\"a\":1}\nsecond")
            .with_id("s1_7")
            .with_retry(500);
        let wire = [ev.to_bytes(), Bytes::from_static(b": ping\r\n\r\n")].concat();
        let wire = [&wire[..], b"data: x\r\n\r\n"].concat();
        for cut in 0..=wire.len() {
            let mut p = Parser::new(1024);
            let mut got = p.feed(&wire[..cut]).unwrap();
            got.extend(p.feed(&wire[cut..]).unwrap());
            assert_eq!(got.len(), 2, "cut at {cut}");
            assert_eq!(got[0].data, "{\"a\":1}\nsecond");
            assert_eq!(got[0].id.as_deref(), Some("s1_7"));
            assert_eq!(got[1].data, "x");
            assert_eq!(p.retry(), Some(500));
            assert_eq!(p.last_event_id(), Some("s1_7"));
        }
    }

    #[test]
    fn a_priming_event_has_empty_data_and_sets_the_last_id() {
        let mut p = Parser::new(64);
        let primed = Event::message("").with_id("s2_0").with_retry(1000);
        assert_eq!(&primed.to_bytes()[..], b"id: s2_0\nretry: 1000\ndata: \n\n");
        let got = p.feed(&primed.to_bytes()).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data, "");
        assert_eq!(p.last_event_id(), Some("s2_0"));
        // An id alone, or a comment, dispatches nothing.
        assert!(p.feed(b"id: s2_1\n\n: hi\n\n").unwrap().is_empty());
        assert_eq!(p.last_event_id(), Some("s2_1"));
    }

    #[test]
    fn an_oversize_event_is_refused() {
        let mut p = Parser::new(16);
        assert_eq!(
            p.feed(b"data: 0123456789abcdef"),
            Err(EventTooLarge { limit: 16 })
        );
    }
}
