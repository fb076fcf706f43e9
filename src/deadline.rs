//! Deadlines that never overflow: a `Duration::MAX` timeout or grace means
//! "practically never" and must not panic when added to an `Instant`.

use std::time::Duration;

/// About a century: the stand-in for "never".
const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `Instant + Duration`, saturating at about a century from `self`.
pub(crate) trait After: Sized {
    /// `self + d`, or about a century later if that overflows.
    fn after(self, d: Duration) -> Self;
}

impl After for std::time::Instant {
    fn after(self, d: Duration) -> Self {
        self.checked_add(d)
            .or_else(|| self.checked_add(FAR))
            .unwrap_or(self)
    }
}

impl After for tokio::time::Instant {
    fn after(self, d: Duration) -> Self {
        self.checked_add(d)
            .or_else(|| self.checked_add(FAR))
            .unwrap_or(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturates_instead_of_panicking() {
        let now = std::time::Instant::now();
        assert!(now.after(Duration::MAX) > now);
        assert_eq!(
            now.after(Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
        let t = tokio::time::Instant::now();
        assert!(t.after(Duration::MAX) > t);
    }
}
