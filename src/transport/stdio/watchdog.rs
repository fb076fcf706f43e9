//! The group watchdog (Linux): ends the server's whole process group if
//! this process dies without running its shutdown (SIGKILL, abort).
//!
//! `PR_SET_PDEATHSIG` kills the server itself when we die, but not the
//! server's own children (a launcher's real server), and nothing else is
//! left to signal their group. So, when the server is spawned, a tiny
//! watchdog process is forked from the child before `exec`: it closes every
//! descriptor but the read end of a pipe whose write end only this process
//! holds, moves to a process group of its own (so the server's group can
//! still be seen to empty), and blocks reading. When the write end closes
//! (our process died, or the shutdown finished and dropped it), the read
//! returns and the watchdog sends SIGKILL to the server's group, then exits.
//! It uses only async-signal-safe calls (`close`, `setpgid`, `read`,
//! `killpg`, `_exit`), as required after `fork` in a multi-threaded process.
//!
//! The server's child runs in this process's memory until it calls `execve`
//! (see the `process` module), so the watchdog is forked with a raw `clone`
//! system call rather than glibc's `fork`: the wrapper's atfork handlers and
//! lock resets would write to memory this process is using. The watchdog is
//! still a copy-on-write image of this process (see `group_watchdog`).

use std::os::fd::{OwnedFd, RawFd};

use libc::{c_int, c_long};

/// The write end kept by this process; dropping it releases the watchdog.
#[derive(Debug)]
pub(crate) struct WatchdogFd(#[allow(dead_code)] OwnedFd);

/// A pipe for one watchdog: the read end for the child (close it once the
/// child is spawned), the write end kept.
pub(crate) fn pipe() -> std::io::Result<(OwnedFd, WatchdogFd)> {
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    Ok((rd, WatchdogFd(wr)))
}

/// Runs in the server's child before `execve` (after the process
/// group is set): forks the watchdog. Returns errno if the fork failed.
///
/// # Safety
/// Must be called only in the child, before `execve`; `rd` must be the read
/// end from [`pipe`].
pub(crate) unsafe fn fork_watchdog(rd: RawFd) -> Result<(), c_int> {
    // SAFETY (whole block): only async-signal-safe system calls follow.
    unsafe {
        let pgid = libc::getpgrp();
        match raw_fork() {
            -1 => Err(*libc::__errno_location()),
            0 => {
                // The watchdog: keep only `rd`.
                close_all_but(rd);
                libc::setpgid(0, 0);
                let mut b = [0u8; 1];
                loop {
                    let n = libc::read(rd, b.as_mut_ptr().cast(), 1);
                    if n == 0 {
                        break;
                    }
                    if n < 0 && *libc::__errno_location() != libc::EINTR {
                        break;
                    }
                }
                libc::killpg(pgid, libc::SIGKILL);
                libc::_exit(0)
            }
            _ => Ok(()),
        }
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

/// Closes every descriptor except `keep`.
unsafe fn close_all_but(keep: RawFd) {
    // SAFETY: close_range and close are async-signal-safe system calls.
    unsafe {
        let k = keep as libc::c_uint;
        let ok_low = k == 0 || libc::syscall(libc::SYS_close_range, 0u32, k - 1, 0u32) == 0;
        let ok_high = libc::syscall(libc::SYS_close_range, k + 1, u32::MAX, 0u32) == 0;
        if !(ok_low && ok_high) {
            // Kernels before 5.9: close one by one.
            for fd in 0..4096 {
                if fd != keep {
                    libc::close(fd);
                }
            }
        }
    }
}
