//! `--log-calls FILE`: one JSON line per call (time, client, server,
//! method, tool, duration, outcome; the arguments only when asked),
//! appended by a thread of its own so that a slow disk never slows a call.
//! At most [`QUEUE`] lines wait; past it lines are dropped and counted.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;
use std::io::Write;

/// Lines that may wait for the writer.
pub(crate) const QUEUE: usize = 4096;

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

/// The log: a queue to its writer thread.
pub(crate) struct CallLog {
    tx: std::sync::mpsc::SyncSender<Vec<u8>>,
    pub(crate) arguments: bool,
    dropped: AtomicU64,
}

impl CallLog {
    /// Opens `path` for appending (created if missing) and starts its
    /// writer: a thread of its own, so that a slow disk blocks nothing
    /// else.
    pub(crate) fn open(path: &Path, arguments: bool) -> std::io::Result<CallLog> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(QUEUE);
        let shown = path.display().to_string();
        std::thread::Builder::new()
            .name("mcp-call-log".into())
            .spawn(move || {
                // Ends when the log is dropped (the sender with it).
                while let Ok(first) = rx.recv() {
                    let mut buf = first;
                    while let Ok(more) = rx.try_recv() {
                        buf.extend_from_slice(&more);
                    }
                    if let Err(e) = file.write_all(&buf).and_then(|()| file.flush()) {
                        tracing::warn!(file = %shown, error = %e, "gateway: the call log could not be written");
                    }
                }
            })?;
        Ok(CallLog {
            tx,
            arguments,
            dropped: AtomicU64::new(0),
        })
    }

    /// Queues one line.
    pub(crate) fn write(&self, line: &Line<'_>) {
        let Ok(mut bytes) = serde_json::to_vec(line) else {
            return;
        };
        bytes.push(b'\n');
        if self.tx.try_send(bytes).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    dropped = n,
                    "gateway: call log lines dropped (the writer is behind)"
                );
            }
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

    #[test]
    fn day_counts_are_civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(civil(20_788), (2026, 12, 1));
    }
}
