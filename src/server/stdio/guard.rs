//! The stdout guard: keeps stray prints off the protocol stream.
//!
//! While a [`StdoutGuard`] lives (unix only), fd 1 refers to the process's
//! stderr, and the protocol is written to a private duplicate of the original
//! stdout. A `println!` from a handler or a dependency therefore lands in
//! stderr (the client's log), not in the middle of a JSON-RPC line. Dropping
//! the guard points fd 1 back at the original stdout.
//!
//! At most one guard lives in a process at a time: a second
//! [`install`](StdoutGuard::install) while one is live fails with
//! [`ServerError::StdoutGuardInUse`](crate::server::ServerError::StdoutGuardInUse). Overlapping guards (a supervisor
//! restarting a server before the old one's guard dropped) would each save
//! the fd 1 they found, and the second one found stderr: restoring in the
//! wrong order points fd 1 at the real stdout while the second server still
//! serves, then leaves it on stderr for good.
//!
//! Caveats:
//! - fd 1 is process-global: the swap affects every thread, which is the
//!   point, and is why a second live guard is refused.
//! - Rust's buffered `std::io::stdout()` is flushed before the swap, so
//!   output printed earlier still goes to the original stdout.
//! - Output of child processes spawned while serving inherits fd 1, i.e.
//!   goes to stderr too.

#[cfg(unix)]
mod imp {
    use std::fs::File;
    use std::io::{self, Write};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::sync::atomic::{AtomicBool, Ordering};

    use crate::server::error::ServerError;

    /// Set while a guard is live anywhere in the process (fd 1 is global).
    static IN_USE: AtomicBool = AtomicBool::new(false);

    /// See the [module documentation](self).
    #[derive(Debug)]
    pub(crate) struct StdoutGuard {
        /// The original stdout, for restoring fd 1.
        saved: OwnedFd,
    }

    fn dup_cloexec(fd: i32) -> io::Result<OwnedFd> {
        // SAFETY: F_DUPFD_CLOEXEC creates a new descriptor or fails; on
        // success we are its only owner.
        let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
        if new < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `new` is a fresh, open descriptor owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(new) })
    }

    impl StdoutGuard {
        /// Redirects fd 1 to stderr; returns the guard and the private
        /// protocol output. Fails with [`ServerError::StdoutGuardInUse`]
        /// while another guard is live in the process.
        pub(crate) fn install() -> Result<(Self, File), ServerError> {
            if IN_USE
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                tracing::warn!("stdout guard refused: another one is live in this process");
                return Err(ServerError::StdoutGuardInUse);
            }
            Self::redirect().map_err(|e| {
                IN_USE.store(false, Ordering::Release);
                ServerError::StdoutGuard(e)
            })
        }

        fn redirect() -> io::Result<(Self, File)> {
            let _ = io::stdout().flush();
            let saved = dup_cloexec(1)?;
            let proto = dup_cloexec(1)?;
            // SAFETY: dup2 on two descriptors we know are open (fd 2 may be
            // closed, in which case dup2 fails and nothing changed).
            if unsafe { libc::dup2(2, 1) } < 0 {
                return Err(io::Error::last_os_error());
            }
            tracing::debug!("stdout guard installed: fd 1 now refers to stderr");
            Ok((Self { saved }, File::from(proto)))
        }
    }

    impl Drop for StdoutGuard {
        fn drop(&mut self) {
            // Whatever happens below, this guard is no longer live.
            let _release = Release;
            let _ = io::stdout().flush();
            // SAFETY: both descriptors are open; failure leaves fd 1 on stderr,
            // which is harmless.
            if unsafe { libc::dup2(self.saved.as_raw_fd(), 1) } < 0 {
                tracing::warn!(
                    error = %io::Error::last_os_error(),
                    "stdout guard: restoring fd 1 failed"
                );
            } else {
                tracing::debug!("stdout guard removed: fd 1 restored");
            }
        }
    }

    /// Clears [`IN_USE`] when dropped, after fd 1 was restored (so a new
    /// guard never saves the stderr this one installed).
    struct Release;

    impl Drop for Release {
        fn drop(&mut self) {
            IN_USE.store(false, Ordering::Release);
        }
    }
}

#[cfg(unix)]
pub(crate) use imp::StdoutGuard;
