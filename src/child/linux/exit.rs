//! Knowing when the child has exited without reaping it, and reaping it.
//!
//! The exit status is read with `waitid(WEXITED | WNOWAIT)`, which leaves
//! the child a zombie: its pid and pgid stay taken until [`reap`].

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use libc::{c_int, pid_t};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::watch;
use tracing::warn;

use super::report::ExitReports;
use crate::error::ChildExit;

/// Stack of the helper threads (fallback exit watcher, reaper of killed
/// children); they only block in `waitid`.
const HELPER_STACK_BYTES: usize = 64 * 1024;

/// How the exit of the child becomes known.
#[derive(Debug)]
pub(super) enum Exited {
    /// A pidfd: readable once the child has exited.
    PidFd(AsyncFd<OwnedFd>),
    /// Without `pidfd_open`: set by a thread blocked in `waitid(WNOWAIT)`.
    Thread(watch::Receiver<bool>),
    /// A child of the reaper: the reaper reports its exit (see the
    /// `reaper` module).
    Reported(ExitReports),
    /// Nobody watches (a child that is being abandoned).
    Unwatched,
}

impl Exited {
    /// Starts watching for the exit of child `pid`.
    pub(super) fn watch(pid: pid_t) -> io::Result<Exited> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new
        // descriptor (close-on-exec) or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd >= 0 {
            let fd = RawFd::try_from(fd).map_err(io::Error::other)?;
            // SAFETY: `fd` was just returned by the kernel and nothing
            // else owns it.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: the AsyncFd owns `fd`, which stays open until the
            // AsyncFd is dropped; an OwnedFd's as_raw_fd never changes.
            let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
                .map_err(|e| e.into_parts().1)?;
            return Ok(Exited::PidFd(fd));
        }
        let err = io::Error::last_os_error();
        if !matches!(err.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) {
            return Err(err);
        }
        Self::thread(pid)
    }

    /// The fallback without pidfds: a thread that waits for the exit
    /// without reaping (`WNOWAIT`), so the pid stays ours.
    pub(super) fn thread(pid: pid_t) -> io::Result<Exited> {
        let (tx, rx) = watch::channel(false);
        std::thread::Builder::new()
            .name("conduit-mcp-wait".into())
            .stack_size(HELPER_STACK_BYTES)
            .spawn(move || {
                let _ = wait_blocking(pid, libc::WNOWAIT);
                let _ = tx.send(true);
            })?;
        Ok(Exited::Thread(rx))
    }

    /// Waits until child `pid` has exited and returns its status; the child
    /// stays unreaped.
    ///
    /// Cancel safety: cancel safe.
    pub(super) async fn wait(&mut self, pid: pid_t) -> io::Result<ChildExit> {
        match self {
            Exited::PidFd(fd) => loop {
                let mut ready = fd.readable().await?;
                match peek(pid)? {
                    Some(status) => return Ok(status),
                    // Readiness without an exit: wait for the next.
                    None => ready.clear_ready(),
                }
            },
            Exited::Thread(rx) => {
                // The thread always sends before ending.
                let _ = rx.wait_for(|exited| *exited).await;
                peek(pid)?.ok_or_else(|| {
                    io::Error::other("waitid reported an exit that a second waitid did not see")
                })
            }
            Exited::Reported(reports) => reports.wait().await,
            Exited::Unwatched => std::future::pending().await,
        }
    }
}

/// The exit status of child `pid` if it has exited, leaving it unreaped.
pub(super) fn peek(pid: pid_t) -> io::Result<Option<ChildExit>> {
    let id = libc::id_t::try_from(pid).map_err(io::Error::other)?;
    loop {
        // SAFETY: siginfo_t is plain data, written by waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid writes only to `info`.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                id,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if r == 0 {
            // SAFETY: waitid filled `info` (si_pid 0: no child has exited).
            let (child, status) = unsafe { (info.si_pid(), info.si_status()) };
            if child == 0 {
                return Ok(None);
            }
            return Ok(Some(match info.si_code {
                libc::CLD_EXITED => ChildExit::Code(status),
                _ => ChildExit::Signal(status),
            }));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reaps child `pid` if it has exited.
pub(super) fn reap(pid: pid_t) -> io::Result<Option<ChildExit>> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes only to `status`.
        match unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } {
            0 => return Ok(None),
            -1 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            _ => {
                use std::os::unix::process::ExitStatusExt;
                let s = std::process::ExitStatus::from_raw(status);
                return Ok(Some(ChildExit::from_std(s)));
            }
        }
    }
}

/// Blocks until `pid` has exited; reaps it unless `flags` has `WNOWAIT`.
pub(super) fn wait_blocking(pid: pid_t, flags: c_int) -> io::Result<()> {
    let id = libc::id_t::try_from(pid).map_err(io::Error::other)?;
    loop {
        // SAFETY: siginfo_t is plain data, written by waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid writes only to `info`.
        if unsafe { libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | flags) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// SIGKILLs the unreaped child `pid` and reaps it, on a thread if it has
/// not died yet (this may run during the runtime's shutdown).
pub(super) fn kill_and_reap(pid: pid_t) {
    // SAFETY: kill only sends a signal; `pid` is our unreaped child, so it
    // names no other process.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    reap_eventually(pid, || ());
}

/// Reaps child `pid`, now if it has exited, else on a thread once it does;
/// then runs `after` (which must wait for the reap: it frees what the
/// child may still use). If no thread can be started, `after` never runs
/// (what it holds is leaked rather than freed under a live child).
pub(super) fn reap_eventually(pid: pid_t, after: impl FnOnce() + Send + 'static) {
    if !matches!(reap(pid), Ok(None)) {
        after();
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("conduit-mcp-reap".into())
        .stack_size(HELPER_STACK_BYTES)
        .spawn(move || {
            let _ = wait_blocking(pid, 0);
            if let Ok(after) = rx.recv() {
                let after: Box<dyn FnOnce() + Send> = after;
                after();
            }
        });
    match spawned {
        Ok(_) => {
            let _ = tx.send(Box::new(after) as Box<dyn FnOnce() + Send>);
        }
        Err(e) => {
            std::mem::forget(after);
            warn!(pid, error = %e, "could not start a thread to reap a killed server; it stays a zombie until this process exits");
        }
    }
}
