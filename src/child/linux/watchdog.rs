//! The group watchdog (Linux): ends the server's whole process group if
//! this process dies without running its shutdown (SIGKILL, abort).
//!
//! `PR_SET_PDEATHSIG` kills the server itself when we die, but not the
//! server's own children (a launcher's real server), and nothing else is
//! left to signal their group. So, when the server is spawned, a tiny
//! watchdog process is forked from the child before `exec`. It closes every
//! descriptor but the read end of a pipe whose write end only this process
//! holds, ignores the escalation's SIGTERM, and blocks reading:
//!
//! - one byte arrives: it was **disarmed** (the shutdown finished, or the
//!   spawn failed); it exits without signalling anything;
//! - end of file (this process died: the kernel closed the write end): it
//!   sends SIGKILL to its own process group, then exits.
//!
//! It stays a **member of the server's group**: while it lives, the group's
//! number is taken, so the group it signals (`killpg(0)`, its own) cannot be
//! an unrelated group that reused the number. The escalation leaves it out
//! when it checks that the group has emptied, and disarms it before the
//! leader is reaped.
//!
//! It uses only async-signal-safe calls (`sigaction`, `close_range`, `read`,
//! `killpg`, `_exit`), as required after `fork` in a multi-threaded
//! process. The server's child runs in this process's memory until it calls
//! `execve` (see the `clone` module), so the watchdog is forked with a raw
//! `clone` system call rather than glibc's `fork`: the wrapper's atfork
//! handlers and lock resets would write to memory this process is using.
//! The watchdog is still a copy-on-write image of this process (see
//! `group_watchdog`).

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use libc::{c_int, c_long, pid_t};

/// The write end kept by this process, and the watchdog's pid.
#[derive(Debug)]
pub(crate) struct Watchdog {
    fd: OwnedFd,
    pid: pid_t,
}

/// The read end, for the child (closed here once the child is spawned).
#[derive(Debug)]
pub(crate) struct WatchdogRead(OwnedFd);

impl AsRawFd for WatchdogRead {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl Watchdog {
    /// A pipe for one watchdog (both ends close-on-exec).
    pub(crate) fn pipe() -> std::io::Result<(WatchdogRead, Watchdog)> {
        let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        Ok((WatchdogRead(rd), Watchdog { fd: wr, pid: 0 }))
    }

    /// The same write end, for the watchdog `pid` (0: none was forked).
    pub(crate) fn with_pid(self, pid: pid_t) -> Self {
        Self { pid, ..self }
    }

    /// The watchdog's pid (0 if none was forked).
    pub(crate) fn pid(&self) -> pid_t {
        self.pid
    }

    /// Tells the watchdog to exit without signalling, and lets go of it.
    pub(crate) fn disarm(self) {
        // SAFETY: a one-byte write from a live buffer on an open descriptor.
        // If it fails the pipe is broken, so the watchdog is gone already.
        unsafe { libc::write(self.fd.as_raw_fd(), b"x".as_ptr().cast(), 1) };
    }
}

/// Runs in the server's child before `execve` (after the process group is
/// set): forks the watchdog. Returns its pid, or errno if the fork failed.
///
/// # Safety
/// Must be called only in the child, before `execve`; `rd` must be the read
/// end from [`Watchdog::pipe`].
pub(crate) unsafe fn fork_watchdog(rd: RawFd) -> Result<pid_t, c_int> {
    // SAFETY (whole block): only async-signal-safe system calls follow.
    unsafe {
        match raw_fork() {
            -1 => Err(*libc::__errno_location()),
            0 => watch(rd),
            pid => Ok(pid as pid_t),
        }
    }
}

/// The watchdog's life. Never returns.
unsafe fn watch(rd: RawFd) -> ! {
    // SAFETY (whole block): async-signal-safe system calls on our own
    // descriptors and a stack buffer.
    unsafe {
        super::fds::close_from(0, Some(rd));
        let mut ign: libc::sigaction = std::mem::zeroed();
        ign.sa_sigaction = libc::SIG_IGN;
        // The escalation's SIGTERM and terminal signals must not end the
        // watchdog early; SIGKILL (the group's, or the escalation's) does.
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
            libc::sigaction(sig, &ign, std::ptr::null_mut());
        }
        let mut b = [0u8; 1];
        let disarmed = loop {
            match libc::read(rd, b.as_mut_ptr().cast(), 1) {
                1 => break true,
                n if n < 0 && *libc::__errno_location() == libc::EINTR => continue,
                _ => break false,
            }
        };
        if !disarmed {
            // Our own group: the server's, whose number we keep taken.
            libc::killpg(0, libc::SIGKILL);
        }
        libc::_exit(0)
    }
}

/// `fork` as a bare system call: `clone` with only `SIGCHLD` and no new
/// stack, so the child continues on a copy of the current one. The first
/// two arguments are swapped on s390x.
unsafe fn raw_fork() -> c_long {
    let sigchld = c_long::from(libc::SIGCHLD);
    // SAFETY: a plain fork; the caller makes only async-signal-safe calls
    // in the new process.
    unsafe {
        if cfg!(target_arch = "s390x") {
            libc::syscall(
                libc::SYS_clone,
                0 as c_long,
                sigchld,
                0 as c_long,
                0 as c_long,
                0 as c_long,
            )
        } else {
            libc::syscall(
                libc::SYS_clone,
                sigchld,
                0 as c_long,
                0 as c_long,
                0 as c_long,
                0 as c_long,
            )
        }
    }
}
