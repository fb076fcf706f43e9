//! System calls that write nothing to memory but their buffers, for the
//! per-server reaper's life (see the `reaper` module).
//!
//! The reaper shares this process's memory (it is cloned with `CLONE_VM`)
//! and so the thread pointer of the thread that created it: a libc wrapper
//! called there would write `errno` into that thread's thread-local storage
//! while that thread runs on, a data race. These wrappers make the system
//! call directly and return `Err(errno)` from the register, touching no
//! thread-local state. x86_64 and aarch64 only; on other targets
//! [`AVAILABLE`] is false and the reaper is not used.

use libc::{c_int, c_long, pid_t};

/// Whether this target has the raw system calls (and so the reaper).
pub(super) const AVAILABLE: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// `Ok(value)`, or `Err(errno)` for a return in `-4095..0`.
fn check(r: c_long) -> Result<c_long, c_int> {
    if (-4095..0).contains(&r) {
        Err(c_int::try_from(r.unsigned_abs()).unwrap_or(libc::EINVAL))
    } else {
        Ok(r)
    }
}

/// System call `n` with up to six arguments.
///
/// # Safety
/// The arguments must be valid for system call `n` (pointers to live
/// memory of the right size).
#[cfg(target_arch = "x86_64")]
unsafe fn syscall(n: c_long, a: [c_long; 6]) -> c_long {
    let ret: c_long;
    // SAFETY: the caller passes valid arguments; `syscall` clobbers rcx and
    // r11 only, and the kernel restores the flags.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") n => ret,
            in("rdi") a[0],
            in("rsi") a[1],
            in("rdx") a[2],
            in("r10") a[3],
            in("r8") a[4],
            in("r9") a[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack, preserves_flags),
        );
    }
    ret
}

/// System call `n` with up to six arguments.
///
/// # Safety
/// The arguments must be valid for system call `n`.
#[cfg(target_arch = "aarch64")]
unsafe fn syscall(n: c_long, a: [c_long; 6]) -> c_long {
    let ret: c_long;
    // SAFETY: the caller passes valid arguments; `svc 0` returns in x0.
    unsafe {
        core::arch::asm!(
            "svc 0",
            in("x8") n,
            inlateout("x0") a[0] => ret,
            in("x1") a[1],
            in("x2") a[2],
            in("x3") a[3],
            in("x4") a[4],
            in("x5") a[5],
            options(nostack, preserves_flags),
        );
    }
    ret
}

/// Never called: [`AVAILABLE`] is false here.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
unsafe fn syscall(_n: c_long, _a: [c_long; 6]) -> c_long {
    -c_long::from(libc::ENOSYS)
}

fn arg<T: Into<c_long>>(v: T) -> c_long {
    v.into()
}

/// `read(fd, buf)`.
pub(super) fn read(fd: c_int, buf: &mut [u8]) -> Result<usize, c_int> {
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
    unsafe { transfer(libc::SYS_read, fd, buf.as_mut_ptr() as c_long, buf.len()) }
}

/// `write(fd, buf)`.
pub(super) fn write(fd: c_int, buf: &[u8]) -> Result<usize, c_int> {
    // SAFETY: the kernel reads `buf.len()` bytes of `buf`.
    unsafe { transfer(libc::SYS_write, fd, buf.as_ptr() as c_long, buf.len()) }
}

/// `read` or `write` (`n`) of `len` bytes at `buf`.
///
/// # Safety
/// `buf` must point to `len` live bytes (writable for a read).
unsafe fn transfer(n: c_long, fd: c_int, buf: c_long, len: usize) -> Result<usize, c_int> {
    // SAFETY: as the caller guarantees.
    let r = unsafe { syscall(n, [arg(fd), buf, len as c_long, 0, 0, 0]) };
    check(r).map(|n| n as usize)
}

/// `kill(pid, sig)` (a negative `pid`: the process group).
pub(super) fn kill(pid: pid_t, sig: c_int) -> Result<(), c_int> {
    // SAFETY: integers only.
    check(unsafe { syscall(libc::SYS_kill, [arg(pid), arg(sig), 0, 0, 0, 0]) }).map(drop)
}

/// `waitid(idtype, id, info, options)`, without resource usage.
pub(super) fn waitid(
    idtype: libc::idtype_t,
    id: pid_t,
    info: &mut libc::siginfo_t,
    options: c_int,
) -> Result<(), c_int> {
    // SAFETY: the kernel writes one siginfo_t into `info`.
    let r = unsafe {
        syscall(
            libc::SYS_waitid,
            [
                c_long::from(idtype),
                arg(id),
                info as *mut libc::siginfo_t as c_long,
                arg(options),
                0,
                0,
            ],
        )
    };
    check(r).map(drop)
}

/// `ppoll(fds, NULL, mask)`: waits for one of `fds`, with the signal mask
/// `mask` while it waits (returns `Err(EINTR)` once a handled signal ran).
pub(super) fn ppoll(fds: &mut [libc::pollfd], mask: &libc::sigset_t) -> Result<usize, c_int> {
    // The kernel's sigset: 64 signals, the first 8 bytes of glibc's.
    const KERNEL_SIGSET_BYTES: c_long = 8;
    // SAFETY: `fds` and `mask` are live; a null timeout waits for ever.
    let r = unsafe {
        syscall(
            libc::SYS_ppoll,
            [
                fds.as_mut_ptr() as c_long,
                fds.len() as c_long,
                0,
                mask as *const libc::sigset_t as c_long,
                KERNEL_SIGSET_BYTES,
                0,
            ],
        )
    };
    check(r).map(|n| n as usize)
}

/// `openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC)`.
pub(super) fn open_read(path: &core::ffi::CStr) -> Result<c_int, c_int> {
    // SAFETY: `path` is NUL-terminated.
    let r = unsafe {
        syscall(
            libc::SYS_openat,
            [
                arg(libc::AT_FDCWD),
                path.as_ptr() as c_long,
                arg(libc::O_RDONLY | libc::O_CLOEXEC),
                0,
                0,
                0,
            ],
        )
    };
    check(r).map(|fd| fd as c_int)
}

/// `close(fd)`.
pub(super) fn close(fd: c_int) {
    // SAFETY: integers only; the caller owns `fd`.
    unsafe { syscall(libc::SYS_close, [arg(fd), 0, 0, 0, 0, 0]) };
}

/// `exit_group(code)`: ends this process.
pub(super) fn exit(code: c_int) -> ! {
    loop {
        // SAFETY: integers only; it does not return.
        unsafe { syscall(libc::SYS_exit_group, [arg(code), 0, 0, 0, 0, 0]) };
    }
}
