//! Closing every inherited descriptor in a child before `execve`, with
//! async-signal-safe system calls only (no allocation: the caller shares
//! this process's memory or is a fork of a multi-threaded process).
//!
//! `close_range` (Linux 5.9) does it in one call. Before 5.9 the open
//! descriptors are listed with `getdents64` on `/proc/self/fd` into a stack
//! buffer; without `/proc`, every number below the descriptor limit is
//! closed (slow, but complete).

use libc::{c_int, c_long, c_uint};

/// Closes every descriptor `>= low` except `keep`.
///
/// # Safety
/// Only in a child before `execve` (or a process that owns all its
/// descriptors): it closes descriptors other code may think it holds.
pub(super) unsafe fn close_from(low: c_int, keep: Option<c_int>) {
    // SAFETY (whole block): system calls on integers and a stack buffer.
    unsafe {
        let ok = match keep {
            Some(k) if k >= low => {
                (k == low || close_range(low, k - 1)) && close_range(k + 1, c_int::MAX)
            }
            _ => close_range(low, c_int::MAX),
        };
        if ok || close_listed(low, keep.unwrap_or(-1)) {
            return;
        }
        let mut lim: libc::rlimit = std::mem::zeroed();
        let max = if libc::syscall(
            libc::SYS_prlimit64,
            0 as c_long,
            libc::RLIMIT_NOFILE as c_long,
            std::ptr::null::<libc::rlimit>(),
            &mut lim as *mut libc::rlimit,
        ) == 0
        {
            lim.rlim_max.min(1 << 20) as c_int
        } else {
            65_536
        };
        for fd in low..max {
            if Some(fd) != keep {
                libc::close(fd);
            }
        }
    }
}

/// `close_range(first, last, 0)`; `false` if the kernel lacks it.
unsafe fn close_range(first: c_int, last: c_int) -> bool {
    // SAFETY: close_range only closes descriptors.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first as c_uint,
            last as c_uint,
            0 as c_uint,
        ) == 0
    }
}

/// Closes the descriptors `>= low` (but `keep`) listed in `/proc/self/fd`;
/// `false` if it cannot be read.
unsafe fn close_listed(low: c_int, keep: c_int) -> bool {
    // SAFETY (whole block): open/getdents64/close on our own descriptors,
    // reading into a stack buffer whose length is passed.
    unsafe {
        let dir = libc::open(
            c"/proc/self/fd".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return false;
        }
        // u64 elements: linux_dirent64 records are 8-byte aligned.
        let mut buf = [0u64; 256];
        loop {
            let n = libc::syscall(
                libc::SYS_getdents64,
                dir as c_long,
                buf.as_mut_ptr(),
                std::mem::size_of_val(&buf) as c_long,
            );
            if n <= 0 {
                break;
            }
            let bytes = buf.as_ptr().cast::<u8>();
            let mut off = 0usize;
            while off < n as usize {
                // struct linux_dirent64 { u64 d_ino; i64 d_off;
                //   u16 d_reclen; u8 d_type; char d_name[]; }
                let rec = bytes.add(off);
                let reclen = usize::from(u16::from_ne_bytes([*rec.add(16), *rec.add(17)]));
                if reclen == 0 {
                    break;
                }
                if let Some(fd) = parse_fd(rec.add(19)) {
                    if fd >= low && fd != keep && fd != dir {
                        libc::close(fd);
                    }
                }
                off += reclen;
            }
        }
        libc::close(dir);
        true
    }
}

/// A NUL-terminated run of decimal digits; `None` for `.` and `..`.
unsafe fn parse_fd(mut p: *const u8) -> Option<c_int> {
    let mut v: c_int = 0;
    let mut digits = 0;
    // SAFETY: the name is NUL-terminated within its record.
    unsafe {
        while *p != 0 {
            let d = (*p).wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v.checked_mul(10)?.checked_add(c_int::from(d))?;
            digits += 1;
            p = p.add(1);
        }
    }
    (digits > 0).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proc_walk_closes_everything_above_the_floor_but_the_kept_one() {
        // Run in a forked child so this process keeps its descriptors.
        // SAFETY: the child makes only system calls, then _exit.
        unsafe {
            let a = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
            let b = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
            assert!(a > 2 && b > a);
            let pid = libc::fork();
            if pid == 0 {
                let ok = close_listed(a, b);
                let a_closed = libc::fcntl(a, libc::F_GETFD) < 0;
                let b_open = libc::fcntl(b, libc::F_GETFD) >= 0;
                let std_open = (0..3).all(|fd| libc::fcntl(fd, libc::F_GETFD) >= 0);
                libc::_exit(if ok && a_closed && b_open && std_open {
                    0
                } else {
                    1
                });
            }
            let mut status = 0;
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
            assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
            libc::close(a);
            libc::close(b);
        }
    }
}
