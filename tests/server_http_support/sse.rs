//! A reader of `text/event-stream` bodies for the tests and benches: the
//! parts of the WHATWG event-stream rules that MCP servers use (`data`,
//! `id`, `event` and `retry` fields, comments, LF, CR and CRLF line ends,
//! events split anywhere across chunks). Written apart from the crate's own
//! parser, so that the tests do not check the server with its own code.

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

/// An event grew past the reader's bound.
#[derive(Debug)]
pub struct TooLarge(pub usize);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "an SSE event over {} bytes", self.0)
    }
}

/// Reads events from the chunks of one stream.
#[derive(Debug, Default)]
pub struct Parser {
    limit: usize,
    /// Bytes not yet ended by a line break.
    pending: Vec<u8>,
    /// The previous chunk ended in CR: a LF starting this one is its pair.
    after_cr: bool,
    /// The fields of the event being read; `data` is `None` until a data
    /// field came (an event without one is not dispatched).
    id: Option<String>,
    event: Option<String>,
    data: Option<String>,
    size: usize,
    last_id: Option<String>,
    retry: Option<u64>,
}

impl Parser {
    /// A reader that refuses events of more than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Parser {
            limit,
            ..Parser::default()
        }
    }

    /// The id of the latest event that set one.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The latest `retry` field, in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Reads `chunk`; the events it completed. Scans for line ends with
    /// `memchr` (the bench's load generator reads every answer with this).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Event>, TooLarge> {
        let mut events = Vec::new();
        let mut rest = chunk;
        if std::mem::take(&mut self.after_cr) && rest.first() == Some(&b'\n') {
            rest = &rest[1..];
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            self.take(&rest[..end])?;
            let line = std::mem::take(&mut self.pending);
            if let Some(e) = self.line(&line) {
                events.push(e);
            }
            let cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.take(rest)?;
        Ok(events)
    }

    /// Keeps `bytes` of a line not yet ended, within the event's bound.
    fn take(&mut self, bytes: &[u8]) -> Result<(), TooLarge> {
        self.size += bytes.len();
        if self.size > self.limit {
            return Err(TooLarge(self.limit));
        }
        self.pending.extend_from_slice(bytes);
        Ok(())
    }

    fn line(&mut self, line: &[u8]) -> Option<Event> {
        if line.is_empty() {
            self.size = 0;
            let data = self.data.take();
            let (id, event) = (self.id.take(), self.event.take());
            return data.map(|data| Event { id, event, data });
        }
        let text = String::from_utf8_lossy(line);
        let (name, value) = match text.split_once(':') {
            Some((n, v)) => (n, v.strip_prefix(' ').unwrap_or(v)),
            None => (&*text, ""),
        };
        match name {
            "" => {} // a comment
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "id" if !value.contains('\0') => {
                self.id = Some(value.to_owned());
                self.last_id = self.id.clone();
            }
            "event" => self.event = Some(value.to_owned()),
            "retry" => self.retry = value.parse().ok().or(self.retry),
            _ => {}
        }
        None
    }
}
