//! `--log-calls FILE`: one JSON line per call (time, client, server,
//! method, tool, duration, outcome; the arguments only when asked),
//! appended by a thread of its own so that a slow disk never slows a call.
//!
//! Bounded in bytes, as its fields come from peers: a name (client, server,
//! method, tool) over [`MAX_FIELD_BYTES`] is cut there and marked [`CUT`];
//! arguments whose JSON text is over [`MAX_ARGUMENTS_BYTES`] are logged as
//! a string, that text cut there and marked. At most [`MAX_QUEUED_BYTES`]
//! wait for the writer; past it whole lines are dropped, counted (in
//! `/metrics` as `mcp_gateway_call_log_dropped_lines_total`), warned of
//! when dropping starts, and said in the log itself: the next line that
//! gets in follows one `{"time", "dropped": N}` line.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use prometheus_client::metrics::counter::Counter;
use serde::Serialize;
use serde_json::Value;

/// The longest name logged, in bytes (then cut and marked).
pub(crate) const MAX_FIELD_BYTES: usize = 256;

/// The longest arguments logged, in bytes of their JSON text (then logged
/// as that text, cut and marked).
pub(crate) const MAX_ARGUMENTS_BYTES: usize = 4096;

/// What ends a cut field.
pub(crate) const CUT: &str = "…(cut)";

/// Bytes of lines that may wait for the writer.
pub(crate) const MAX_QUEUED_BYTES: usize = 4 * 1024 * 1024;

/// One call, as logged.
#[derive(Debug, Serialize)]
pub(crate) struct Line<'a> {
    pub(crate) time: String,
    pub(crate) client: &'a str,
    pub(crate) server: &'a str,
    pub(crate) method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool: Option<&'a str>,
    pub(crate) duration_ms: f64,
    pub(crate) outcome: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<&'a Value>,
}

/// A [`Line`] with its fields bounded.
#[derive(Serialize)]
struct Bounded<'a> {
    time: &'a str,
    client: Cow<'a, str>,
    server: Cow<'a, str>,
    method: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<Cow<'a, str>>,
    duration_ms: f64,
    outcome: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<Cow<'a, Value>>,
}

impl<'a> Bounded<'a> {
    fn of(line: &'a Line<'a>) -> Self {
        Bounded {
            time: &line.time,
            client: cut(line.client),
            server: cut(line.server),
            method: cut(line.method),
            tool: line.tool.map(cut),
            duration_ms: line.duration_ms,
            outcome: line.outcome,
            error: line.error,
            arguments: line.arguments.map(arguments),
        }
    }
}

/// `s`, or its first [`MAX_FIELD_BYTES`] (whole characters) and [`CUT`].
pub(crate) fn cut(s: &str) -> Cow<'_, str> {
    if s.len() <= MAX_FIELD_BYTES {
        return Cow::Borrowed(s);
    }
    let mut end = MAX_FIELD_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}{CUT}", &s[..end]))
}

/// `v`, or the first [`MAX_ARGUMENTS_BYTES`] of its JSON text (whole
/// characters) and [`CUT`], as a string. Never serialises more than that.
fn arguments(v: &Value) -> Cow<'_, Value> {
    let mut w = Capped {
        buf: Vec::new(),
        room: MAX_ARGUMENTS_BYTES + 1,
    };
    if serde_json::to_writer(&mut w, v).is_ok() && w.buf.len() <= MAX_ARGUMENTS_BYTES {
        return Cow::Borrowed(v);
    }
    let mut end = w.buf.len().min(MAX_ARGUMENTS_BYTES);
    let text = loop {
        match std::str::from_utf8(&w.buf[..end]) {
            Ok(t) => break t,
            Err(e) => end = e.valid_up_to(),
        }
    };
    Cow::Owned(Value::String(format!("{text}{CUT}")))
}

/// A writer that takes `room` bytes, then fails (stopping the serialiser).
struct Capped {
    buf: Vec<u8>,
    room: usize,
}

impl Write for Capped {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = b.len().min(self.room);
        if n == 0 && !b.is_empty() {
            return Err(std::io::Error::other("full"));
        }
        self.buf.extend_from_slice(&b[..n]);
        self.room -= n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What the writer is behind by, and what was dropped.
#[derive(Default)]
struct Queue {
    /// Bytes queued and not yet written.
    bytes: AtomicUsize,
    /// Lines dropped since the last one that got in.
    pending: AtomicU64,
}

/// The log: a queue to its writer thread.
pub(crate) struct CallLog {
    tx: std::sync::mpsc::Sender<Vec<u8>>,
    arguments: bool,
    queue: Arc<Queue>,
    /// Lines dropped in all.
    dropped: Counter,
}

impl CallLog {
    /// Whether lines carry the calls' arguments.
    #[inline]
    pub(crate) fn logs_arguments(&self) -> bool {
        self.arguments
    }

    /// Opens `path` for appending (created if missing) and starts its
    /// writer: a thread of its own, so that a slow disk blocks nothing
    /// else.
    pub(crate) fn open(path: &Path, arguments: bool) -> std::io::Result<CallLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Self::with_writer(file, path.display().to_string(), arguments)
    }

    /// The log written to `out` (`shown` in warnings).
    fn with_writer(
        mut out: impl Write + Send + 'static,
        shown: String,
        arguments: bool,
    ) -> std::io::Result<CallLog> {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let queue = Arc::new(Queue::default());
        let behind = queue.clone();
        std::thread::Builder::new()
            .name("mcp-call-log".into())
            .spawn(move || {
                // Ends when the log is dropped (the sender with it).
                while let Ok(first) = rx.recv() {
                    let mut buf = first;
                    while let Ok(more) = rx.try_recv() {
                        buf.extend_from_slice(&more);
                    }
                    if let Err(e) = out.write_all(&buf).and_then(|()| out.flush()) {
                        tracing::warn!(file = %shown, error = %e, "gateway: the call log could not be written");
                    }
                    behind.bytes.fetch_sub(buf.len(), Ordering::AcqRel);
                }
            })?;
        Ok(CallLog {
            tx,
            arguments,
            queue,
            dropped: Counter::default(),
        })
    }

    /// The count of lines dropped (for `/metrics`).
    pub(crate) fn dropped(&self) -> Counter {
        self.dropped.clone()
    }

    /// Queues one line, its fields bounded; drops it when the queue is
    /// full.
    pub(crate) fn write(&self, line: &Line<'_>) {
        let Ok(mut bytes) = serde_json::to_vec(&Bounded::of(line)) else {
            return;
        };
        bytes.push(b'\n');
        let pending = self.queue.pending.load(Ordering::Acquire);
        if pending > 0 {
            // Said before the line, once it can get in.
            let note = serde_json::json!({ "time": line.time, "dropped": pending });
            let mut with = note.to_string().into_bytes();
            with.push(b'\n');
            with.extend_from_slice(&bytes);
            bytes = with;
        }
        let len = bytes.len();
        let before = self.queue.bytes.fetch_add(len, Ordering::AcqRel);
        if before + len > MAX_QUEUED_BYTES || self.tx.send(bytes).is_err() {
            self.queue.bytes.fetch_sub(len, Ordering::AcqRel);
            self.dropped.inc();
            if self.queue.pending.fetch_add(1, Ordering::AcqRel) == 0 {
                tracing::warn!(
                    queued_bytes = before,
                    "gateway: call log lines dropped (the writer is behind; counted in /metrics)"
                );
            }
            return;
        }
        if pending > 0 {
            self.queue.pending.fetch_sub(pending, Ordering::AcqRel);
        }
    }
}

/// Now, as RFC 3339 UTC with milliseconds (`2026-12-01T14:03:07.123Z`).
pub(crate) fn now_rfc3339() -> String {
    let d = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil(i64::try_from(days).unwrap_or(0));
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// The civil date of a day count from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(tool: &'a str, arguments: Option<&'a Value>) -> Line<'a> {
        Line {
            time: "t".into(),
            client: "c",
            server: "s",
            method: "tools/call",
            tool: Some(tool),
            duration_ms: 1.0,
            outcome: "ok",
            error: None,
            arguments,
        }
    }

    #[test]
    fn a_long_name_and_long_arguments_are_cut_and_marked() {
        let name = "é".repeat(300);
        let args = serde_json::json!({ "text": "x".repeat(10_000) });
        let small = serde_json::json!({ "a": 1 });
        let l = line(&name, Some(&args));
        let b = Bounded::of(&l);
        // As docs/gateway.md says: a name cut at 256 bytes (whole
        // characters), arguments at 4 KiB of their JSON text, each marked.
        let tool = b.tool.as_deref().unwrap();
        assert_eq!(tool, format!("{}…(cut)", "é".repeat(128)));
        let Some(Value::String(a)) = b.arguments.as_deref() else {
            panic!("cut arguments are a string");
        };
        let text = serde_json::to_string(&args).unwrap();
        assert_eq!(*a, format!("{}…(cut)", &text[..4096]));
        let l = line("echo", Some(&small));
        let b = Bounded::of(&l);
        assert_eq!(b.tool.as_deref(), Some("echo"));
        assert_eq!(b.arguments.as_deref(), Some(&small));
    }

    /// A writer that waits until told to go on.
    struct Stuck(
        std::sync::mpsc::Receiver<()>,
        Arc<std::sync::Mutex<Vec<u8>>>,
    );

    impl Write for Stuck {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.recv();
            self.1.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn past_the_queued_bytes_lines_are_dropped_counted_and_said_in_the_log() {
        let (go, wait) = std::sync::mpsc::channel();
        let written = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = CallLog::with_writer(Stuck(wait, written.clone()), "t".into(), false).unwrap();
        let name = "n".repeat(MAX_FIELD_BYTES);
        let one = serde_json::to_vec(&Bounded::of(&line(&name, None)))
            .unwrap()
            .len()
            + 1;
        let fit = MAX_QUEUED_BYTES / one;
        for _ in 0..fit + 10 {
            log.write(&line(&name, None));
        }
        // The writer took the first line and waits: the queue holds the
        // rest up to its bound.
        assert!(log.dropped().get() >= 10, "{}", log.dropped().get());
        assert!(log.queue.bytes.load(Ordering::Acquire) <= MAX_QUEUED_BYTES);
        let dropped = log.dropped().get();
        for _ in 0..(fit + 20) {
            let _ = go.send(());
        }
        let drained = (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            log.queue.bytes.load(Ordering::Acquire) == 0
        });
        assert!(drained);
        log.write(&line("after", None));
        for _ in 0..10 {
            let _ = go.send(());
        }
        drop(go);
        let said = (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            String::from_utf8_lossy(&written.lock().unwrap()).contains(r#""tool":"after""#)
        });
        assert!(said);
        let text = String::from_utf8_lossy(&written.lock().unwrap()).into_owned();
        let note = text
            .lines()
            .find(|l| l.contains(r#""dropped":"#))
            .expect("the drop said in the log");
        let v: Value = serde_json::from_str(note).unwrap();
        assert_eq!(v["dropped"], dropped, "{note}");
    }

    #[test]
    fn day_counts_are_civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(civil(20_788), (2026, 12, 1));
    }
}
