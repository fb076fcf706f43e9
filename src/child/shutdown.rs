//! The detached shutdown of one child and its process group.
//!
//! The escalation is the MCP specification's, extended to the process
//! group:
//!
//! 1. the child's stdin is closed (its owner drops it on the same signal
//!    that starts this sequence);
//! 2. wait up to `stdin` grace for the leader to exit *and* its group to
//!    empty;
//! 3. SIGTERM to the group (or the leader), wait up to `term` grace;
//! 4. SIGKILL to the group, wait briefly;
//! 5. disarm the group watchdog, reap the leader, publish the report.
//!
//! It runs in the task that owns the child from its spawn on, so the exit is
//! seen by waiting, never by polling the leader, and the leader is reaped
//! only at step 5: every signal goes out while its pid and pgid are still
//! taken by it (see the [module docs](super)). The owner holds a
//! [`ShutdownGuard`] whose drop (on stop, kill, panic or parent death alike)
//! starts the sequence, so no runtime is needed at drop time. If the runtime
//! shuts down mid-sequence, the drop of the child sends SIGKILL to the group.
//!
//! The steps are written against the small [`Process`] trait, so their
//! order (no signal after the reap, the reap last) is tested without
//! processes.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use crate::deadline::After;
use crate::error::ChildExit;

/// Held by the owner of a child; dropping it (or [`trigger`](Self::trigger))
/// starts the shutdown.
#[derive(Debug)]
pub(crate) struct ShutdownGuard {
    tx: Arc<watch::Sender<bool>>,
}

impl ShutdownGuard {
    /// A guard and the signal its drop fires (give clones to the tasks).
    pub(crate) fn new() -> (Self, ShutdownSignal) {
        let (tx, rx) = watch::channel(false);
        (Self { tx: Arc::new(tx) }, ShutdownSignal(rx))
    }

    /// Starts the shutdown now, without waiting for the guard's drop.
    pub(crate) fn trigger(&self) {
        self.tx.send_replace(true);
    }

    /// Another signal fired by this guard.
    pub(crate) fn signal(&self) -> ShutdownSignal {
        ShutdownSignal(self.tx.subscribe())
    }

    /// A handle that can start the shutdown too (the guard keeps owning it).
    pub(crate) fn trigger_handle(&self) -> ShutdownTrigger {
        ShutdownTrigger(self.tx.clone())
    }
}

impl Drop for ShutdownGuard {
    fn drop(&mut self) {
        self.trigger();
    }
}

/// Starts the shutdown of one child from anywhere (cloneable).
#[derive(Debug, Clone)]
pub(crate) struct ShutdownTrigger(Arc<watch::Sender<bool>>);

impl ShutdownTrigger {
    /// Starts the shutdown (idempotent).
    pub(crate) fn trigger(&self) {
        self.0.send_replace(true);
    }
}

/// Fires when the guard is dropped or triggered.
#[derive(Debug, Clone)]
pub(crate) struct ShutdownSignal(watch::Receiver<bool>);

impl ShutdownSignal {
    /// Waits until the shutdown has started.
    ///
    /// Cancel safety: cancel safe.
    pub(crate) async fn fired(&mut self) {
        // An error means every sender is gone, which fires it too.
        let _ = self.0.wait_for(|fired| *fired).await;
    }
}

/// The exit status of one child once it has exited.
#[derive(Debug, Clone)]
pub(crate) struct ExitWatch(watch::Receiver<Option<ChildExit>>);

impl ExitWatch {
    pub(crate) fn new(rx: watch::Receiver<Option<ChildExit>>) -> Self {
        Self(rx)
    }

    /// Waits for the exit. `None` if the task owning the child vanished
    /// (the runtime shut down; the child was SIGKILLed then).
    ///
    /// Cancel safety: cancel safe.
    pub(crate) async fn wait(&mut self) -> Option<ChildExit> {
        if let Ok(s) = self.0.wait_for(Option::is_some).await {
            return *s;
        }
        *self.0.borrow()
    }
}

/// What the shutdown of one server process did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// The server's process id.
    pub pid: u32,
    /// How the leader ended (`None` if it could not be reaped).
    pub exit: Option<ChildExit>,
    /// Whether the process exited by itself before the shutdown began.
    pub exited_before_close: bool,
    /// Whether SIGTERM was sent.
    pub sent_term: bool,
    /// Whether SIGKILL was sent.
    pub sent_kill: bool,
    /// Time from the start of the shutdown to the end of the sequence.
    pub elapsed: Duration,
    /// Whether members of the process group were still alive at the end
    /// (they survived SIGKILL, for example stuck in uninterruptible I/O).
    pub group_survivors: bool,
}

/// Resolves when one server process (or all of a client's) is shut down.
///
/// Cloneable; awaiting it never delays the shutdown itself.
#[derive(Debug, Clone)]
pub(crate) struct ShutdownHandle {
    rx: watch::Receiver<Option<ShutdownReport>>,
}

impl ShutdownHandle {
    pub(crate) fn new(rx: watch::Receiver<Option<ShutdownReport>>) -> Self {
        Self { rx }
    }

    /// Waits for the end of the sequence. Returns `None` if the task that ran
    /// it vanished (the runtime shut down; the group was SIGKILLed then).
    ///
    /// Cancel safety: cancel safe.
    pub(crate) async fn wait(mut self) -> Option<ShutdownReport> {
        if let Ok(r) = self.rx.wait_for(Option::is_some).await {
            return r.clone();
        }
        let r = self.rx.borrow().clone();
        r
    }

    /// The report, if the sequence has ended.
    pub(crate) fn try_report(&self) -> Option<ShutdownReport> {
        self.rx.borrow().clone()
    }
}

/// Timing of the escalation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Graces {
    /// After stdin is closed, before SIGTERM.
    stdin: Duration,
    /// After SIGTERM, before SIGKILL.
    term: Duration,
}

impl Graces {
    #[inline]
    pub(crate) fn new(stdin: Duration, term: Duration) -> Self {
        Self { stdin, term }
    }

    /// The grace after stdin is closed, before SIGTERM.
    #[inline]
    pub(crate) fn stdin(&self) -> Duration {
        self.stdin
    }
}

/// A signal of the escalation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sig {
    /// SIGTERM (Windows: nothing).
    Term,
    /// SIGKILL (Windows: `TerminateProcess`).
    Kill,
}

/// What the escalation needs of a child. Implemented by the platform's
/// child, and by a mock in the tests.
pub(crate) trait Process: Send {
    /// Waits until the leader has exited, *without reaping it*, where the
    /// platform allows.
    ///
    /// Cancel safety: must be cancel safe.
    fn exited(&mut self) -> impl Future<Output = std::io::Result<ChildExit>> + Send;

    /// Sends `sig` to the group (or to the leader without one). Called only
    /// before [`release`](Self::release).
    fn signal(&mut self, sig: Sig);

    /// Whether a live member of the group remains (the leader has exited).
    fn group_alive(&mut self) -> bool;

    /// Disarms the group watchdog and reaps the leader (the reaper, if
    /// any, kills what is left and reaps it). Called once, last.
    ///
    /// Cancel safety: not cancel safe; it is awaited to the end.
    fn release(&mut self) -> impl Future<Output = ()> + Send;
}

/// The escalation task's context.
pub(crate) struct Escalation<P> {
    process: P,
    pid: u32,
    graces: Graces,
    name: String,
}

impl<P: Process> Escalation<P> {
    #[inline]
    pub(crate) fn new(process: P, pid: u32, graces: Graces, name: String) -> Self {
        Self {
            process,
            pid,
            graces,
            name,
        }
    }

    /// Runs for the life of the child: publishes its exit on `exit`, then,
    /// once `signal` fires, runs the escalation and publishes the report.
    pub(crate) async fn run(
        mut self,
        mut signal: ShutdownSignal,
        exit: watch::Sender<Option<ChildExit>>,
        report: watch::Sender<Option<ShutdownReport>>,
    ) {
        let mut status = None;
        let exited_before_close = tokio::select! {
            biased;
            _ = signal.fired() => false,
            s = self.process.exited() => {
                match s {
                    Ok(s) => {
                        info!(server = %self.name, pid = self.pid, status = %s, "server process exited");
                        status = Some(s);
                        exit.send_replace(Some(s));
                    }
                    Err(e) => warn!(server = %self.name, pid = self.pid, error = %e, "waiting for the server failed"),
                }
                signal.fired().await;
                true
            }
        };
        let start = Instant::now();
        let mut out = ShutdownReport {
            pid: self.pid,
            exit: status,
            exited_before_close,
            sent_term: false,
            sent_kill: false,
            elapsed: Duration::ZERO,
            group_survivors: false,
        };
        debug!(server = %self.name, pid = self.pid, "shutdown: stdin closed");
        if !self
            .wait_gone(&mut out, start.after(self.graces.stdin))
            .await
        {
            self.signal(&mut out, Sig::Term);
            let deadline = Instant::now().after(self.graces.term);
            if !self.wait_gone(&mut out, deadline).await {
                self.signal(&mut out, Sig::Kill);
                let deadline = Instant::now().after(super::AFTER_KILL);
                if !self.wait_gone(&mut out, deadline).await {
                    out.group_survivors = true;
                    warn!(server = %self.name, pid = self.pid, "process group still has members after SIGKILL");
                }
            }
        }
        if let Some(s) = out.exit {
            exit.send_replace(Some(s));
        }
        self.process.release().await;
        out.elapsed = start.elapsed();
        info!(
            server = %self.name, pid = self.pid, exit = ?out.exit, sent_term = out.sent_term,
            sent_kill = out.sent_kill, elapsed_ms = out.elapsed.as_secs_f64() * 1e3,
            "server shut down"
        );
        report.send_replace(Some(out));
    }

    /// Waits until the leader has exited and the group is empty, or until
    /// `deadline`. Returns whether everything is gone.
    async fn wait_gone(&mut self, out: &mut ShutdownReport, deadline: Instant) -> bool {
        if out.exit.is_none() {
            match tokio::time::timeout_at(deadline, self.process.exited()).await {
                Ok(Ok(status)) => out.exit = Some(status),
                Ok(Err(e)) => {
                    warn!(server = %self.name, pid = self.pid, error = %e, "waiting for the server failed");
                    return false;
                }
                Err(_) => return false,
            }
        }
        // Only polling can tell when the rest of the group is gone. Start
        // fast, back off to 10 ms.
        let mut pause = Duration::from_micros(200);
        while self.process.group_alive() {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(10));
        }
        true
    }

    fn signal(&mut self, out: &mut ShutdownReport, sig: Sig) {
        match sig {
            Sig::Term => out.sent_term = true,
            Sig::Kill => out.sent_kill = true,
        }
        info!(server = %self.name, pid = self.pid, signal = ?sig, "signalling the server's process group");
        self.process.signal(sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// What the mock saw, in order.
    #[derive(Debug, Clone, PartialEq)]
    enum Step {
        Signal(Sig),
        Release,
    }

    /// A process that exits after the signal `exits_on` (or at once with
    /// `None`... never, with `Some(None)`), and whose group keeps a member
    /// for `group_polls` polls after the leader's exit.
    struct Mock {
        log: Arc<Mutex<Vec<Step>>>,
        exits_on: Option<Sig>,
        exited: watch::Sender<bool>,
        group_polls: usize,
        released: bool,
    }

    impl Mock {
        fn new(exits_on: Option<Sig>, group_polls: usize) -> (Self, Arc<Mutex<Vec<Step>>>) {
            let log = Arc::new(Mutex::new(Vec::new()));
            let m = Mock {
                log: log.clone(),
                exits_on,
                exited: watch::channel(false).0,
                group_polls,
                released: false,
            };
            (m, log)
        }
    }

    impl Process for Mock {
        fn exited(&mut self) -> impl Future<Output = std::io::Result<ChildExit>> + Send {
            let mut rx = self.exited.subscribe();
            async move {
                let _ = rx.wait_for(|e| *e).await;
                Ok(ChildExit::Code(0))
            }
        }

        fn signal(&mut self, sig: Sig) {
            assert!(!self.released, "signal after the reap");
            self.log.lock().unwrap().push(Step::Signal(sig));
            if self.exits_on == Some(sig) || sig == Sig::Kill {
                self.exited.send_replace(true);
            }
        }

        fn group_alive(&mut self) -> bool {
            assert!(!self.released, "group polled after the reap");
            if self.group_polls == 0 {
                return false;
            }
            self.group_polls -= 1;
            true
        }

        async fn release(&mut self) {
            assert!(!self.released, "released twice");
            self.released = true;
            self.log.lock().unwrap().push(Step::Release);
        }
    }

    /// `fut`, or a panic naming `what` if it never ends: on the paused
    /// clock a hang runs the clock to the hour at once.
    async fn within<F: Future>(what: &str, fut: F) -> F::Output {
        tokio::time::timeout(Duration::from_secs(3600), fut)
            .await
            .unwrap_or_else(|_| panic!("{what} never ended"))
    }

    async fn run(mock: Mock, exit_first: bool) -> ShutdownReport {
        let exited = mock.exited.clone();
        let esc = Escalation {
            process: mock,
            pid: 42,
            graces: Graces {
                stdin: Duration::from_secs(2),
                term: Duration::from_secs(2),
            },
            name: "mock".into(),
        };
        let (guard, signal) = ShutdownGuard::new();
        let (exit_tx, mut exit_rx) = watch::channel(None);
        let (report_tx, report_rx) = watch::channel(None);
        let task = tokio::spawn(esc.run(signal, exit_tx, report_tx));
        if exit_first {
            exited.send_replace(true);
            within("the exit's report", exit_rx.wait_for(Option::is_some))
                .await
                .unwrap();
        }
        drop(guard);
        within("the escalation", task).await.unwrap();
        let report = report_rx.borrow().clone().unwrap();
        report
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_exits_on_eof_gets_no_signal_and_is_reaped_last() {
        let (mock, log) = Mock::new(None, 0);
        let exited = mock.exited.clone();
        // It exits as soon as the shutdown starts (stdin closed).
        let esc = Escalation {
            process: mock,
            pid: 1,
            graces: Graces {
                stdin: Duration::from_secs(2),
                term: Duration::from_secs(2),
            },
            name: "mock".into(),
        };
        let (guard, signal) = ShutdownGuard::new();
        let (exit_tx, _exit_rx) = watch::channel(None);
        let (report_tx, report_rx) = watch::channel(None);
        let task = tokio::spawn(esc.run(signal, exit_tx, report_tx));
        guard.trigger();
        exited.send_replace(true);
        within("the escalation", task).await.unwrap();
        let r = report_rx.borrow().clone().unwrap();
        assert!(!r.sent_term && !r.sent_kill && !r.exited_before_close);
        assert_eq!(*log.lock().unwrap(), vec![Step::Release]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_ignoring_eof_gets_sigterm_after_the_stdin_grace() {
        let (mock, log) = Mock::new(Some(Sig::Term), 0);
        let start = Instant::now();
        let r = run(mock, false).await;
        assert!(r.sent_term && !r.sent_kill);
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        assert_eq!(
            *log.lock().unwrap(),
            vec![Step::Signal(Sig::Term), Step::Release]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_ignoring_sigterm_gets_sigkill_and_is_reaped_after_it() {
        let (mock, log) = Mock::new(None, 0);
        let start = Instant::now();
        let r = run(mock, false).await;
        assert!(r.sent_term && r.sent_kill && !r.group_survivors);
        assert_eq!(start.elapsed(), Duration::from_secs(4));
        assert_eq!(
            *log.lock().unwrap(),
            vec![
                Step::Signal(Sig::Term),
                Step::Signal(Sig::Kill),
                Step::Release
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_that_exited_by_itself_is_not_reaped_before_its_group_is_signalled() {
        // The leader exits on its own; a member of its group lingers past
        // the stdin grace: the group is signalled, and only then reaped.
        let (mock, log) = Mock::new(None, usize::MAX);
        let r = run(mock, true).await;
        assert!(r.exited_before_close && r.sent_term && r.sent_kill && r.group_survivors);
        assert_eq!(r.exit, Some(ChildExit::Code(0)));
        assert_eq!(log.lock().unwrap().last(), Some(&Step::Release));
    }

    #[tokio::test(start_paused = true)]
    async fn triggering_starts_the_shutdown_while_the_guard_is_kept() {
        let (guard, mut signal) = ShutdownGuard::new();
        let trigger = guard.trigger_handle();
        trigger.trigger();
        // Fires although the guard is still held.
        within("the shutdown signal", signal.fired()).await;
        drop(guard);
    }

    #[tokio::test(start_paused = true)]
    async fn a_group_member_that_leaves_within_the_stdin_grace_is_not_signalled() {
        // The leader exited by itself; a member of its group lingers for
        // three polls, well within the stdin grace.
        let (mock, log) = Mock::new(None, 3);
        let r = run(mock, true).await;
        assert!(!r.sent_term && !r.sent_kill && !r.group_survivors, "{r:?}");
        assert_eq!(*log.lock().unwrap(), vec![Step::Release]);
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_guard_starts_the_shutdown_while_a_trigger_is_kept() {
        let (guard, mut signal) = ShutdownGuard::new();
        let _trigger = guard.trigger_handle();
        drop(guard);
        within("the shutdown signal", signal.fired()).await;
    }

    #[test]
    fn the_stdin_grace_is_the_one_given() {
        let graces = Graces::new(Duration::from_millis(1500), Duration::from_secs(2));
        assert_eq!(graces.stdin(), Duration::from_millis(1500));
    }
}
