//! A log line a peer can trigger at will, such as a refused request, is
//! written a few times, not each time: [`Throttle`] lets one through per period and
//! counts the others, which the next one reports.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One log line's rate: at most one per [`PERIOD`](Throttle::PERIOD).
/// One per server or gateway, so one's refusals do not hide another's.
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    last: Mutex<Option<Instant>>,
    skipped: AtomicU64,
}

impl Throttle {
    /// How often the line may be written.
    pub(crate) const PERIOD: Duration = Duration::from_secs(10);

    /// `Some(n)` when the line may be written now, `n` being how many were
    /// skipped since the last one. Otherwise `None`, and it is counted.
    pub(crate) fn admit(&self) -> Option<u64> {
        let now = Instant::now();
        let mut last = crate::sync::lock(&self.last);
        if last.is_some_and(|t| now.duration_since(t) < Self::PERIOD) {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *last = Some(now);
        Some(self.skipped.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_and_the_next_counts_the_skipped() {
        let t = Throttle::default();
        assert_eq!(t.admit(), Some(0));
        for _ in 0..5 {
            assert_eq!(t.admit(), None);
        }
        *crate::sync::lock(&t.last) = Some(Instant::now() - Throttle::PERIOD);
        assert_eq!(t.admit(), Some(5));
    }
}
