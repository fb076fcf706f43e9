//! One launch: a [`Prepared`] child cloned (from this process or from a
//! reaper) until it has called `execve`, or reaped with the error of the
//! step that failed.

use std::io;

use libc::pid_t;

use super::clone::{clone_vfork, null_terminated, with_signals_blocked, ChildSpec, Prepared};
use super::exit::wait_blocking;
use super::reaper::Reaper;
use super::watchdog::Watchdog;

/// A child that has called `execve`.
#[derive(Debug)]
pub(crate) struct Launched {
    pid: pid_t,
    /// The write end that keeps its group watchdog waiting, if any.
    watchdog: Option<Watchdog>,
    /// Its parent, the reaper, if it was cloned from one.
    reaper: Option<Reaper>,
}

impl Launched {
    /// The child's process id.
    #[inline]
    pub(crate) fn pid(&self) -> pid_t {
        self.pid
    }

    /// Its parent, the reaper, if it was cloned from one.
    #[inline]
    pub(crate) fn reaper_mut(&mut self) -> Option<&mut Reaper> {
        self.reaper.as_mut()
    }

    /// The pid, the watchdog and the reaper, taken apart.
    pub(crate) fn into_parts(self) -> (pid_t, Option<Watchdog>, Option<Reaper>) {
        (self.pid, self.watchdog, self.reaper)
    }
}

/// Starts `p`'s child and returns once it has called `execve`; reaps it
/// and returns the error of the step that failed otherwise. With
/// `p.reaper`, the child is cloned by a reaper (see the `reaper` module),
/// which this returns with it. Call on the spawning thread (see the
/// `spawner` module).
pub(crate) fn launch(mut p: Prepared) -> io::Result<Launched> {
    let argv = null_terminated(p.argv());
    let envp = null_terminated(p.envp());
    let spec = ChildSpec::new(&p, &argv, &envp);
    let (pid, reaper) = if p.uses_reaper() {
        let (reaper, pid) =
            with_signals_blocked(|| super::reaper::launch(&spec, p.dies_with_parent()))?;
        (pid, Some(reaper))
    } else {
        (clone_vfork(&spec)?, None)
    };
    // The child has called execve or exited: its copies are its own now.
    let (stdio, watchdog) = p.take_stdio_and_watchdog();
    drop(stdio);
    let watchdog = watchdog.map(|(_rd, wr)| wr.with_pid(spec.watchdog_pid()));
    let err = spec.error();
    if err != 0 {
        // A watchdog forked before the failed step must not kill anything:
        // disarm it, then reap the child (a vfork parent resumes only once
        // it has exited; the reaper reaps it when released).
        if let Some(w) = watchdog {
            w.disarm();
        }
        match reaper {
            Some(reaper) => reaper.end_blocking(),
            None => {
                let _ = wait_blocking(pid, 0);
            }
        }
        return Err(io::Error::from_raw_os_error(err));
    }
    Ok(Launched {
        pid,
        watchdog,
        reaper,
    })
}
