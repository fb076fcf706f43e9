//! Detached shutdown of a child process and its process group.
//!
//! The escalation is the MCP specification's, extended to the process group:
//!
//! 1. the child's stdin is closed (the writer task drops it);
//! 2. wait up to `stdin_grace` for the leader to exit *and* its process group
//!    to empty;
//! 3. SIGTERM to the group (or the pid), wait up to `term_grace`;
//! 4. SIGKILL to the group, reap the leader, then wait briefly for the group
//!    to empty.
//!
//! The sequence runs in the task that owns the child process and
//! already waits on it, so the leader is signalled only before it is reaped
//! (its pid cannot have been reused) and exit is detected by `wait`, never by
//! polling. Emptiness of the group after the leader is reaped can only be
//! polled (`killpg(pgid, 0)`); the pgid of a group whose last member just
//! exited could in theory be reused within that poll interval.
//!
//! The task starts when the process is spawned; the owning actor holds a
//! `ShutdownGuard` whose `Drop` (on stop, kill, panic or parent death alike)
//! triggers the sequence, so no runtime is needed at drop time. If the runtime
//! itself shuts down mid-sequence, the task's drop sends SIGKILL to the group.

use std::time::{Duration, Instant};

use crate::deadline::After;

use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::error::ExitStatus;
use crate::transport::stdio::Child;

/// Held by the owner of a process; dropping it starts the shutdown.
#[derive(Debug)]
pub(crate) struct ShutdownGuard {
    _signal: watch::Sender<()>,
}

impl ShutdownGuard {
    /// A guard and the receiver its drop wakes (give clones to the tasks).
    pub(crate) fn new() -> (Self, watch::Receiver<()>) {
        let (tx, rx) = watch::channel(());
        (Self { _signal: tx }, rx)
    }
}

/// Waits until the guard of `rx` is dropped.
pub(crate) async fn closed(rx: &mut watch::Receiver<()>) {
    while rx.changed().await.is_ok() {}
}

/// What the shutdown of one server process did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// The server's process id.
    pub pid: u32,
    /// How the leader ended (`None` if it could not be reaped).
    pub exit: Option<ExitStatus>,
    /// Whether the process exited by itself before the shutdown began.
    pub exited_before_close: bool,
    /// Whether SIGTERM was sent.
    pub sent_term: bool,
    /// Whether SIGKILL was sent.
    pub sent_kill: bool,
    /// Time from the start of the shutdown to the end of the sequence.
    pub elapsed: Duration,
    /// Whether members of the process group were still alive at the end
    /// (zombies of processes reparented to an init that does not reap count).
    pub group_survivors: bool,
}

/// Resolves when one server process (or all of a client's) is shut down.
///
/// Cloneable; awaiting it never delays the shutdown itself.
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
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
    pub async fn wait(mut self) -> Option<ShutdownReport> {
        loop {
            if let Some(r) = self.rx.borrow_and_update().clone() {
                return Some(r);
            }
            if self.rx.changed().await.is_err() {
                return self.rx.borrow().clone();
            }
        }
    }

    /// The report, if the sequence has ended.
    pub fn try_report(&self) -> Option<ShutdownReport> {
        self.rx.borrow().clone()
    }
}

/// Timing of the escalation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Graces {
    pub(crate) stdin: Duration,
    pub(crate) term: Duration,
}

/// Sends SIGKILL to the group if the task is dropped before it finished.
struct KillOnDrop {
    pgid: Option<i32>,
    armed: bool,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if self.armed {
            if let Some(pgid) = self.pgid {
                #[cfg(unix)]
                let _ = signal_group(pgid, nix::sys::signal::Signal::SIGKILL);
            }
            // The leader itself is killed by the drop of its `Child`.
        }
    }
}

#[cfg(unix)]
fn signal_group(pgid: i32, sig: nix::sys::signal::Signal) -> nix::Result<()> {
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), sig)
}

/// Whether any live member of the group remains. A zombie does not count:
/// members reparented to an init that reaps slowly (or never) are dead.
#[cfg(unix)]
fn group_alive(pgid: i32) -> bool {
    if nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), None).is_err() {
        return false;
    }
    #[cfg(target_os = "linux")]
    if let Some(live) = linux_group_has_live_member(pgid) {
        return live;
    }
    true
}

/// Scans /proc for a non-zombie process in group `pgid`; `None` if /proc is
/// unreadable.
#[cfg(target_os = "linux")]
fn linux_group_has_live_member(pgid: i32) -> Option<bool> {
    let dir = std::fs::read_dir("/proc").ok()?;
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the parenthesised command: state ppid pgrp ...
        let mut rest = stat.rsplit(')').next().unwrap_or("").split_whitespace();
        let state = rest.next();
        let pgrp = rest.nth(1).and_then(|p| p.parse::<i32>().ok());
        if pgrp == Some(pgid) && !matches!(state, Some("Z") | Some("X")) {
            return Some(true);
        }
    }
    Some(false)
}

/// Per-process context of the reaper task.
pub(crate) struct Reaper {
    pub(crate) child: Child,
    pub(crate) pid: u32,
    /// The process group to signal, when `kill_process_group` is on.
    pub(crate) pgid: Option<i32>,
    pub(crate) graces: Graces,
    pub(crate) name: String,
    /// Keeps the group watchdog waiting; dropped when the sequence ends (or
    /// with this task), which makes it SIGKILL whatever is left of the group.
    #[cfg(target_os = "linux")]
    pub(crate) watchdog: Option<crate::transport::stdio::WatchdogFd>,
}

impl Reaper {
    /// Runs for the life of the process: reports its exit through `on_exit`,
    /// then, once `shutdown` fires, runs the escalation and publishes the
    /// report.
    pub(crate) async fn run(
        mut self,
        mut shutdown: watch::Receiver<()>,
        on_exit: impl FnOnce(ExitStatus),
        report: watch::Sender<Option<ShutdownReport>>,
    ) {
        let mut fallback = KillOnDrop {
            pgid: self.pgid,
            armed: true,
        };
        let mut exit = None;
        let exited_before_close = tokio::select! {
            status = self.child.wait() => {
                let status = status.map(ExitStatus::from_std).ok();
                if let Some(s) = status {
                    info!(server = %self.name, pid = self.pid, status = %s, "server process exited");
                    on_exit(s);
                }
                exit = status;
                closed(&mut shutdown).await;
                true
            }
            _ = closed(&mut shutdown) => false,
        };
        let start = Instant::now();
        let mut out = ShutdownReport {
            pid: self.pid,
            exit,
            exited_before_close,
            sent_term: false,
            sent_kill: false,
            elapsed: Duration::ZERO,
            group_survivors: false,
        };
        debug!(server = %self.name, pid = self.pid, "shutdown: stdin closed");
        let deadline = start.after(self.graces.stdin);
        if !self.wait_gone(&mut out, deadline).await {
            self.signal(&mut out, Signal::Term);
            let deadline = Instant::now().after(self.graces.term);
            if !self.wait_gone(&mut out, deadline).await {
                self.signal(&mut out, Signal::Kill);
                let deadline = Instant::now().after(Duration::from_secs(1));
                if !self.wait_gone(&mut out, deadline).await {
                    out.group_survivors = true;
                    warn!(server = %self.name, pid = self.pid, "process group still has members after SIGKILL");
                }
            }
        }
        out.elapsed = start.elapsed();
        info!(
            server = %self.name, pid = self.pid, exit = ?out.exit, sent_term = out.sent_term,
            sent_kill = out.sent_kill, elapsed_ms = out.elapsed.as_secs_f64() * 1e3,
            "server shut down"
        );
        fallback.armed = false;
        #[cfg(target_os = "linux")]
        drop(self.watchdog.take());
        let _ = report.send(Some(out));
    }

    /// Waits until the leader is reaped and the group is empty, or until
    /// `deadline`. Returns whether everything is gone.
    async fn wait_gone(&mut self, out: &mut ShutdownReport, deadline: Instant) -> bool {
        if out.exit.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.child.wait()).await {
                Ok(Ok(status)) => out.exit = Some(ExitStatus::from_std(status)),
                Ok(Err(e)) => {
                    warn!(server = %self.name, pid = self.pid, error = %e, "waiting for the server failed");
                    return false;
                }
                Err(_) => return false,
            }
        }
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            // The leader is reaped; only polling can tell when the rest of
            // its group is gone. Start fast, back off to 10 ms.
            let mut pause = Duration::from_micros(200);
            while group_alive(pgid) {
                if Instant::now() >= deadline {
                    return false;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(10));
            }
        }
        true
    }

    fn signal(&mut self, out: &mut ShutdownReport, sig: Signal) {
        match sig {
            Signal::Term => out.sent_term = true,
            Signal::Kill => out.sent_kill = true,
        }
        #[cfg(unix)]
        {
            use nix::sys::signal::Signal as S;
            let s = match sig {
                Signal::Term => S::SIGTERM,
                Signal::Kill => S::SIGKILL,
            };
            if let Some(pgid) = self.pgid {
                // While the leader is unreaped the pgid cannot be reused.
                info!(server = %self.name, pid = self.pid, pgid, signal = s.as_str(), "signalling process group");
                let _ = signal_group(pgid, s);
            } else if out.exit.is_none() {
                // Not reaped yet (this task is the only one that reaps), so
                // the pid still names our child.
                info!(server = %self.name, pid = self.pid, signal = s.as_str(), "signalling server");
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid as i32), s);
            }
        }
        #[cfg(not(unix))]
        if matches!(sig, Signal::Kill) || cfg!(windows) {
            let _ = self.child.start_kill();
        }
    }
}

#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}
