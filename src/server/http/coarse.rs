//! A timer for the HTTP server's per-request deadlines (a request head's
//! deadline, a slow answer's switch to SSE): deadlines of seconds that are
//! set for nearly every request and almost never reached.
//!
//! A tokio sleep per request registers a timer entry, and an entry that is
//! the runtime's earliest makes tokio wake the thread parked on its driver
//! to re-arm it: a system call and a context switch per request, measured
//! as the gateway's most frequent wake-up with one client. Here a sleep is
//! an entry in a shared table, and one task per timer sleeps until the
//! earliest entry's deadline and wakes what is due. A new entry wakes that
//! task only when it is earlier than what the task sleeps for, which
//! requests of one duration never are; an entry that goes (the head came,
//! the answer came) costs nothing but a spurious look at its deadline.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

use tokio::sync::Notify;
use tokio::time::Instant;

/// The timer: cheap to clone, clones share one table and one task.
#[derive(Clone, Debug)]
pub(crate) struct CoarseTimer {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Wakes the task (an earlier entry, or the timer's end).
    wake: Arc<Notify>,
}

#[derive(Debug, Default)]
struct State {
    /// Waiting sleeps, by deadline and key.
    waiting: BTreeMap<(Instant, u64), Waker>,
    next_key: u64,
    /// What the task sleeps until; `None`: it waits for an entry.
    task_at: Option<Instant>,
    /// Whether the task runs (it ends with its runtime, and is started
    /// again by the next sleep).
    running: bool,
}

impl CoarseTimer {
    pub(crate) fn new() -> Self {
        CoarseTimer {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                wake: Arc::new(Notify::new()),
            }),
        }
    }

    /// A future that resolves at `deadline`.
    pub(crate) fn sleep_until(&self, deadline: Instant) -> Sleep {
        Sleep {
            shared: self.shared.clone(),
            deadline,
            key: None,
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The task holds only a weak reference: let it see the end.
        self.wake.notify_one();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Wakes every due entry (they complete at their next poll); returns
    /// the earliest deadline left, which the task then sleeps until.
    fn fire_due(&self) -> Option<Instant> {
        let mut st = self.lock();
        let now = Instant::now();
        while let Some(e) = st.waiting.first_entry() {
            if e.key().0 > now {
                break;
            }
            e.remove().wake();
        }
        st.task_at = st.waiting.keys().next().map(|(at, _)| *at);
        st.task_at
    }
}

/// Sleeps until the earliest entry is due, wakes it, and so on, for as long
/// as the timer lives.
async fn run(shared: Weak<Shared>, wake: Arc<Notify>) {
    /// Marks the task gone however it ends (its runtime may drop it).
    struct Running(Weak<Shared>);
    impl Drop for Running {
        fn drop(&mut self) {
            if let Some(s) = self.0.upgrade() {
                s.lock().running = false;
            }
        }
    }
    let _running = Running(shared.clone());
    loop {
        let woken = wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let next = match shared.upgrade() {
            Some(s) => s.fire_due(),
            None => return,
        };
        match next {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = woken => {}
                }
            }
            None => woken.await,
        }
    }
}

/// One deadline of a [`CoarseTimer`].
#[derive(Debug)]
pub(crate) struct Sleep {
    shared: Arc<Shared>,
    deadline: Instant,
    /// Its entry's key, once registered.
    key: Option<u64>,
}

impl Sleep {
    fn forget(&mut self) {
        if let Some(k) = self.key.take() {
            self.shared.lock().waiting.remove(&(self.deadline, k));
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let me = &mut *self;
        if Instant::now() >= me.deadline {
            me.forget();
            return Poll::Ready(());
        }
        let shared = &me.shared;
        let mut st = shared.lock();
        let key = match me.key {
            Some(k) => k,
            None => {
                let k = st.next_key;
                st.next_key = st.next_key.wrapping_add(1);
                me.key = Some(k);
                k
            }
        };
        // Woken early (or its entry fired): registered again either way.
        match st.waiting.get_mut(&(me.deadline, key)) {
            Some(w) if w.will_wake(cx.waker()) => {}
            Some(w) => w.clone_from(cx.waker()),
            None => {
                st.waiting.insert((me.deadline, key), cx.waker().clone());
            }
        }
        if st.task_at.is_none_or(|at| at > me.deadline) || !st.running {
            st.task_at = Some(me.deadline);
            if !st.running {
                st.running = true;
                tokio::spawn(run(Arc::downgrade(shared), shared.wake.clone()));
            }
            shared.wake.notify_one();
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.forget();
    }
}

/// The timer hyper's connections use for their header deadline.
impl hyper::rt::Timer for CoarseTimer {
    fn sleep(&self, duration: std::time::Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(self.sleep_until(Instant::now() + duration))
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(CoarseTimer::sleep_until(self, Instant::from_std(deadline)))
    }
}

impl hyper::rt::Sleep for Sleep {}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn sleeps_end_at_their_deadlines_in_any_order_and_dropped_ones_are_forgotten() {
        let timer = CoarseTimer::new();
        let now = Instant::now();
        let late = timer.sleep_until(now + Duration::from_millis(60));
        let dropped = timer.sleep_until(now + Duration::from_millis(5));
        let early = timer.sleep_until(now + Duration::from_millis(20));
        let (late, early) = (tokio::spawn(late), tokio::spawn(early));
        let mut dropped = Box::pin(dropped);
        assert!(futures_poll_once(dropped.as_mut()).await.is_pending());
        drop(dropped);
        early.await.unwrap();
        assert!(Instant::now() >= now + Duration::from_millis(20));
        late.await.unwrap();
        assert!(Instant::now() >= now + Duration::from_millis(60));
        assert!(timer.shared.lock().waiting.is_empty());
        // A sleep already due is ready at once.
        timer.sleep_until(now).await;
    }

    #[tokio::test(start_paused = true)]
    async fn follows_the_runtime_clock() {
        let timer = CoarseTimer::new();
        let start = Instant::now();
        timer.sleep_until(start + Duration::from_secs(3600)).await;
        assert!(Instant::now() >= start + Duration::from_secs(3600));
    }

    async fn futures_poll_once<F: Future + Unpin>(mut f: F) -> Poll<F::Output> {
        std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut f).poll(cx))).await
    }
}
