//! Restart intensity: how many restarts a server that keeps dying gets, and
//! the number of each (which sets its backoff). A
//! [`ClientGroup`](super::ClientGroup) counts its children's restarts the
//! same way, with "ready" meaning its children were all started.
//!
//! As OTP's supervisors count them: at most `max_reconnects` restarts
//! within `restart_period`, whatever phase the server died in (spawn,
//! handshake, or after it was ready); one more and the client gives up.
//! A count reset when the server becomes ready is never reached by a server
//! that dies right after its handshake.
//!
//! The period is measured in time a server was up and ready, not on the
//! wall clock. OTP restarts at once; here every restart first waits its
//! backoff (up to `backoff.max`, 30 s by default), and a server may take
//! long to start: on the wall clock those waits would spread the restarts
//! of a server that never serves a call beyond any period, and the client
//! would restart it for ever. So a server that never gets ready gives up
//! after `max_reconnects` restarts whatever the backoff (as before), and a
//! server that has served for `restart_period` since its last deaths
//! starts again from restart number 1 (and the shortest backoff).

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// Entries kept in [`RestartIntensity::deaths`].
const MAX_ENTRIES: usize = 1024;

/// What to do after a server died.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Restart it: this is restart number `attempt` within the period.
    Restart {
        /// 1-based; sets the backoff delay.
        attempt: u32,
    },
    /// Give up: `attempts` deaths within the period, over the limit.
    GiveUp {
        /// Deaths counted within the period (this one included).
        attempts: u32,
    },
}

/// The restart count of one client, across its servers (and its
/// Connection actors), or of one group, across its children.
#[derive(Debug)]
pub(crate) struct RestartIntensity {
    max: u32,
    period: Duration,
    /// Deaths still within the period, oldest first: the ready time (see
    /// `uptime`) at which they happened and how many happened then (deaths
    /// with no ready time between them share an entry). At most
    /// [`MAX_ENTRIES`] entries, whatever `max` is.
    deaths: VecDeque<(Duration, u32)>,
    /// The sum of the counts in `deaths`.
    counted: u32,
    /// Time servers have been ready, summed over the client's life up to
    /// the last death.
    uptime: Duration,
    /// When the running server became ready, if it is.
    ready_since: Option<Instant>,
}

impl RestartIntensity {
    /// At most `max` restarts within `period` of ready time.
    pub(crate) fn new(max: u32, period: Duration) -> Self {
        Self {
            max,
            period,
            deaths: VecDeque::new(),
            counted: 0,
            uptime: Duration::ZERO,
            ready_since: None,
        }
    }

    /// The running server became ready at `now`: its ready time counts
    /// from here.
    pub(crate) fn ready(&mut self, now: Instant) {
        self.ready_since = Some(now);
    }

    /// A server died (or could not be spawned) at `now`.
    pub(crate) fn died(&mut self, now: Instant) -> Verdict {
        if let Some(since) = self.ready_since.take() {
            self.uptime = self
                .uptime
                .saturating_add(now.saturating_duration_since(since));
        }
        // Deaths a whole period of ready time ago no longer count.
        while let Some(&(at, n)) = self.deaths.front() {
            if self.uptime.saturating_sub(at) < self.period {
                break;
            }
            self.deaths.pop_front();
            self.counted = self.counted.saturating_sub(n);
        }
        match self.deaths.back_mut() {
            Some((at, n)) if *at == self.uptime => *n = n.saturating_add(1),
            _ => self.deaths.push_back((self.uptime, 1)),
        }
        // A huge `max` with a server that is ready for an instant each time:
        // the oldest deaths are counted as if they came with the next ones
        // (they expire a little later: never fewer restarts counted).
        if self.deaths.len() > MAX_ENTRIES {
            if let Some((_, n)) = self.deaths.pop_front() {
                if let Some(next) = self.deaths.front_mut() {
                    next.1 = next.1.saturating_add(n);
                }
            }
        }
        self.counted = self.counted.saturating_add(1);
        let n = self.counted;
        if n > self.max {
            Verdict::GiveUp { attempts: n }
        } else {
            Verdict::Restart { attempt: n }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD: Duration = Duration::from_secs(10);

    #[test]
    fn deaths_before_ready_count_whatever_time_passes() {
        let mut r = RestartIntensity::new(2, PERIOD);
        let t = Instant::now();
        assert_eq!(r.died(t), Verdict::Restart { attempt: 1 });
        // Backoff waits and slow starts are not ready time.
        assert_eq!(r.died(t + PERIOD * 5), Verdict::Restart { attempt: 2 });
        assert_eq!(r.died(t + PERIOD * 50), Verdict::GiveUp { attempts: 3 });
    }

    #[test]
    fn deaths_right_after_ready_count() {
        let mut r = RestartIntensity::new(3, PERIOD);
        let mut t = Instant::now();
        for attempt in 1..=3 {
            r.ready(t);
            t += Duration::from_millis(5);
            assert_eq!(r.died(t), Verdict::Restart { attempt });
            t += Duration::from_secs(30);
        }
        r.ready(t);
        assert_eq!(
            r.died(t + Duration::from_millis(5)),
            Verdict::GiveUp { attempts: 4 }
        );
    }

    #[test]
    fn a_server_up_for_the_period_starts_from_one_again() {
        let mut r = RestartIntensity::new(1, PERIOD);
        let mut t = Instant::now();
        assert_eq!(r.died(t), Verdict::Restart { attempt: 1 });
        for _ in 0..5 {
            r.ready(t);
            t += PERIOD;
            assert_eq!(r.died(t), Verdict::Restart { attempt: 1 });
        }
    }

    #[test]
    fn deaths_within_the_period_of_ready_time_add_up() {
        let mut r = RestartIntensity::new(2, PERIOD);
        let mut t = Instant::now();
        // Up 4 s each time: the third death is 8 s of ready time after the
        // first, within the period.
        for expect in [
            Verdict::Restart { attempt: 1 },
            Verdict::Restart { attempt: 2 },
            Verdict::GiveUp { attempts: 3 },
        ] {
            r.ready(t);
            t += Duration::from_secs(4);
            assert_eq!(r.died(t), expect);
        }
    }

    #[test]
    fn memory_stays_bounded_whatever_max_is() {
        let mut r = RestartIntensity::new(u32::MAX, Duration::from_secs(3600));
        let mut t = Instant::now();
        for attempt in 1..=10_000 {
            r.ready(t);
            t += Duration::from_micros(10);
            assert_eq!(r.died(t), Verdict::Restart { attempt });
        }
        assert!(r.deaths.len() <= MAX_ENTRIES, "{}", r.deaths.len());
    }

    #[test]
    fn zero_restarts_give_up_at_the_first_death() {
        let mut r = RestartIntensity::new(0, PERIOD);
        assert_eq!(r.died(Instant::now()), Verdict::GiveUp { attempts: 1 });
    }
}
