//! Pipe capacity: the child's stdout pipe grows while a long message
//! streams through it.
//!
//! A Linux pipe holds 64 KiB by default, so an 8 MiB result costs the child
//! 128 blocking writes and us 128 wake-ups and reads. Growing the pipe to
//! 1 MiB (the default `/proc/sys/fs/pipe-max-size` for unprivileged
//! processes) cuts both eightfold. It is done only once a long line is seen,
//! never at spawn: the kernel charges pipe capacity to the user
//! (`pipe-user-pages-soft`, 64 MiB by default) and, past that, gives every
//! *new* pipe of the user a single page, so a hundred idle clients must not
//! hold a megabyte each.

#[cfg(unix)]
use std::os::fd::{AsRawFd, RawFd};

#[cfg(unix)]
use tracing::debug;

/// Capacity asked for.
const LARGE_PIPE: usize = 1 << 20;

/// A partial line at least this long grows the pipe (a quarter of the
/// pipe we ask for: shorter messages gain little).
pub(crate) const GROW_AT: usize = 256 * 1024;

/// What the reader runs on its first long line: grows the pipe behind
/// `stdout` (the descriptor stays open as long as the reader owns `stdout`,
/// which outlives the call).
#[cfg(unix)]
pub(crate) fn grower<T: AsRawFd>(stdout: &T, server: String, pid: u32) -> impl FnOnce() + Send {
    let fd = stdout.as_raw_fd();
    move || match grow(fd) {
        Ok(Some(size)) => {
            debug!(server = %server, pid, size, "stdout pipe grown for a long message")
        }
        Ok(None) => {}
        Err(e) => debug!(server = %server, pid, error = %e, "stdout pipe could not grow"),
    }
}

/// What the reader runs on its first long line: nothing on this platform.
#[cfg(not(unix))]
pub(crate) fn grower<T>(_stdout: &T, _server: String, _pid: u32) -> impl FnOnce() + Send {
    || {}
}

/// Grows the pipe behind `fd` (either end) to 1 MiB. Returns the capacity
/// the kernel granted.
///
/// Platform behaviour: Linux only (`F_SETPIPE_SZ`); elsewhere it does
/// nothing and returns `Ok(None)`. Fails with `EPERM` when the user is over
/// the pipe quota: the pipe keeps working at its current size.
#[cfg(unix)]
pub(crate) fn grow(fd: RawFd) -> std::io::Result<Option<usize>> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: fcntl on a descriptor the caller keeps open; no memory is
        // passed.
        let r = unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, LARGE_PIPE as libc::c_int) };
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(Some(r as usize))
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (fd, LARGE_PIPE);
        Ok(None)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::os::fd::AsRawFd;

    #[test]
    fn grows_a_pipe_to_one_mebibyte() {
        let (rd, _wr) = nix::unistd::pipe().unwrap();
        assert_eq!(super::grow(rd.as_raw_fd()).unwrap(), Some(1 << 20));
        // SAFETY: F_GETPIPE_SZ on an open pipe.
        let after = unsafe { libc::fcntl(rd.as_raw_fd(), libc::F_GETPIPE_SZ) };
        assert_eq!(after, 1 << 20);
    }
}
