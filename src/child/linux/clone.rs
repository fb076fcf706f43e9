//! The `CLONE_VM | CLONE_VFORK` child: everything between `clone` and
//! `execve`, which runs in this process's memory and so makes only raw
//! async-signal-safe calls on data prepared beforehand: no allocation, no
//! locks, no unwinding. A failing step stores its errno in a slot of that
//! shared memory and the child exits with 127; the `launch` module then
//! reaps it and returns the error.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicI32, Ordering};

use libc::{c_char, c_int, c_void, pid_t};

use super::watchdog::{Watchdog, WatchdogRead};
use super::{above_stdio, cstring, path_cstring};

/// Everything one child needs, owned.
pub(crate) struct Prepared {
    path: CString,
    /// `argv`, with the program path first.
    argv: Vec<CString>,
    /// `KEY=VALUE` strings.
    envp: Vec<CString>,
    cwd: Option<CString>,
    /// The child's ends of its stdin, stdout and stderr (`None`: inherit),
    /// all above 2. Closed here once the child has called `execve`.
    stdio: [Option<OwnedFd>; 3],
    process_group: bool,
    die_with_parent: bool,
    /// The group watchdog's pipe.
    watchdog: Option<(WatchdogRead, Watchdog)>,
    /// Clone the child from a reaper (see the `reaper` module).
    reaper: bool,
}

impl Prepared {
    /// The arguments, the executable's name first.
    #[inline]
    pub(crate) fn argv(&self) -> &[CString] {
        &self.argv
    }

    /// The environment, `KEY=value`.
    #[inline]
    pub(crate) fn envp(&self) -> &[CString] {
        &self.envp
    }

    /// Whether the child is cloned from a reaper.
    #[inline]
    pub(crate) fn uses_reaper(&self) -> bool {
        self.reaper
    }

    /// Whether the child dies with this process.
    #[inline]
    pub(crate) fn dies_with_parent(&self) -> bool {
        self.die_with_parent
    }

    /// Takes this side's copies of the child's stdio and the watchdog's
    /// pipe, once the child has them (the rest stays until `self` drops).
    pub(crate) fn take_stdio_and_watchdog(
        &mut self,
    ) -> ([Option<OwnedFd>; 3], Option<(WatchdogRead, Watchdog)>) {
        (std::mem::take(&mut self.stdio), self.watchdog.take())
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        exe: &Path,
        args: &[crate::secret::Arg],
        env: &super::Env,
        cwd: Option<&Path>,
        stdio: [Option<OwnedFd>; 3],
        process_group: bool,
        die_with_parent: bool,
        watchdog_read: Option<WatchdogRead>,
        watchdog_write: Option<Watchdog>,
        reaper: bool,
    ) -> io::Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let path = path_cstring(exe)?;
        let mut argv = Vec::with_capacity(args.len() + 1);
        argv.push(path.clone());
        // Secret arguments are revealed here, for the child only.
        for a in args {
            argv.push(cstring(a.expose().as_bytes())?);
        }
        let envp = env
            .iter()
            .map(|(k, v)| {
                let mut kv = Vec::with_capacity(k.len() + v.len() + 1);
                kv.extend_from_slice(k.as_bytes());
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                cstring(&kv)
            })
            .collect::<io::Result<Vec<_>>>()?;
        let cwd = cwd.map(path_cstring).transpose()?;
        let [a, b, c] = stdio;
        let stdio = [
            a.map(above_stdio).transpose()?,
            b.map(above_stdio).transpose()?,
            c.map(above_stdio).transpose()?,
        ];
        Ok(Self {
            path,
            argv,
            envp,
            cwd,
            stdio,
            process_group,
            die_with_parent,
            watchdog: watchdog_read.zip(watchdog_write),
            reaper,
        })
    }
}

/// Size of the stack the cloned child runs on until `execve`. The child
/// only makes a few system calls; glibc uses about as much.
const CHILD_STACK_BYTES: usize = 64 * 1024;

/// Everything the cloned child reads, prepared before `clone`; the child
/// sees it through the shared memory.
pub(super) struct ChildSpec {
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    /// Null: do not change directory.
    cwd: *const c_char,
    /// The descriptor to install as 0, 1 and 2; -1 leaves it inherited.
    /// All are above 2 (see [`above_stdio`]).
    stdio: [c_int; 3],
    process_group: bool,
    /// With `die_with_parent`: the pid `getppid` must return once
    /// `PR_SET_PDEATHSIG` is set (this process, or the reaper, which sets
    /// it); 0 without.
    parent: AtomicI32,
    /// The read end of the group watchdog's pipe.
    watchdog: Option<RawFd>,
    last_signal: c_int,
    /// errno of the step that failed; 0 if none did.
    error: AtomicI32,
    /// The watchdog's pid, written by the child once it is forked.
    watchdog_pid: AtomicI32,
}

impl ChildSpec {
    /// The child's view of `p`, with `argv` and `envp` the null-terminated
    /// pointers of `p.argv` and `p.envp` (see [`null_terminated`]), which
    /// must outlive it.
    pub(super) fn new(p: &Prepared, argv: &[*const c_char], envp: &[*const c_char]) -> Self {
        ChildSpec {
            path: p.path.as_ptr(),
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            cwd: p.cwd.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
            stdio: p
                .stdio
                .each_ref()
                .map(|f| f.as_ref().map_or(-1, |f| f.as_raw_fd())),
            process_group: p.process_group,
            // The reaper sets its own pid, if there is one.
            parent: AtomicI32::new(if p.die_with_parent && !p.reaper {
                // SAFETY: getpid has no preconditions.
                unsafe { libc::getpid() }
            } else {
                0
            }),
            watchdog: p.watchdog.as_ref().map(|(rd, _)| rd.as_raw_fd()),
            last_signal: libc::SIGRTMAX(),
            error: AtomicI32::new(0),
            watchdog_pid: AtomicI32::new(0),
        }
    }

    /// Sets the pid the child must die with (the reaper's own).
    pub(super) fn set_parent(&self, pid: pid_t) {
        self.parent.store(pid, Ordering::Relaxed);
    }

    /// errno of the step that failed in the child; 0 if none did. Read
    /// once the clone has returned.
    pub(super) fn error(&self) -> c_int {
        self.error.load(Ordering::Relaxed)
    }

    /// The group watchdog's pid (0: none). Read once the clone has returned.
    pub(super) fn watchdog_pid(&self) -> pid_t {
        self.watchdog_pid.load(Ordering::Relaxed)
    }
}

/// Runs `f` with every signal blocked in this thread, then restores the
/// mask. A child cloned meanwhile inherits the blocked mask, which keeps
/// this process's handlers from running on the child's stack (and so in
/// our memory) before the child has reset them; glibc's posix_spawn does
/// the same.
pub(super) fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: sigset_t is plain data; sigfillset initialises it.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut saved: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `all` and `saved` are valid sigsets.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut saved);
    }
    let out = f();
    // SAFETY: `saved` holds the mask read above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &saved, ptr::null_mut()) };
    out
}

/// Runs [`child_main`] in a `CLONE_VM | CLONE_VFORK` child, returning its
/// pid once it has called `execve` or exited. Called by the spawning
/// thread, or by a reaper during its launch.
pub(super) fn clone_vfork(spec: &ChildSpec) -> io::Result<pid_t> {
    let mut stack: Vec<u8> = Vec::with_capacity(CHILD_STACK_BYTES + 16);
    // Stacks grow down on every Linux target Rust supports; the ABI wants
    // the top 16-byte aligned.
    let top = stack.as_mut_ptr().wrapping_add(CHILD_STACK_BYTES + 16);
    let top = top.wrapping_sub(top as usize % 16);
    // SAFETY: `top` is the aligned end of a live allocation of
    // CHILD_STACK_BYTES that nothing else uses; `spec` and everything it
    // points to outlive the call, since this thread is suspended until the
    // child calls execve (its memory is replaced) or exits; `child_main`
    // never returns and only makes async-signal-safe calls.
    let (pid, clone_error) = with_signals_blocked(|| {
        let pid = unsafe {
            libc::clone(
                child_main,
                top.cast::<c_void>(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                ptr::from_ref(spec).cast_mut().cast::<c_void>(),
            )
        };
        (pid, io::Error::last_os_error())
    });
    drop(stack);
    if pid < 0 {
        return Err(clone_error);
    }
    Ok(pid)
}

/// The cloned child: prepares and calls `execve`; on failure stores errno
/// and exits with 127. Never returns.
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildSpec` passed by `clone_vfork`, alive and
    // unmodified while the parent thread is suspended.
    let spec = unsafe { &*arg.cast::<ChildSpec>() };
    // SAFETY: this is the child of a `CLONE_VM | CLONE_VFORK` clone.
    let errno = unsafe { exec_child(spec) };
    spec.error.store(errno, Ordering::Relaxed);
    // SAFETY: _exit ends this process only and touches no shared state.
    unsafe { libc::_exit(127) }
}

/// Sets the child up and calls `execve`; returns errno of the step that
/// failed.
///
/// # Safety
/// Only in the child of a `CLONE_VM | CLONE_VFORK` clone, with every signal
/// blocked.
unsafe fn exec_child(spec: &ChildSpec) -> c_int {
    // SAFETY (whole block): only async-signal-safe calls follow, on the
    // pointers and descriptors prepared in `launch`.
    unsafe {
        // A handler of this process must not run here (before exec it would
        // run in our memory), and ignored signals survive exec: reset every
        // handler, and SIGPIPE, which the Rust runtime ignores, as std does.
        // The handler table is this child's own (no CLONE_SIGHAND).
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        let mut old: libc::sigaction = std::mem::zeroed();
        for sig in 1..=spec.last_signal {
            // Fails only for the signals glibc reserves for itself.
            if libc::sigaction(sig, ptr::null(), &mut old) != 0 {
                continue;
            }
            if sig == libc::SIGPIPE
                || (old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN)
            {
                libc::sigaction(sig, &dfl, ptr::null_mut());
            }
        }
        if spec.process_group && libc::setpgid(0, 0) != 0 {
            return errno();
        }
        let parent = spec.parent.load(Ordering::Relaxed);
        if parent != 0 {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return errno();
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                return libc::ESRCH;
            }
        }
        if !spec.cwd.is_null() && libc::chdir(spec.cwd) != 0 {
            return errno();
        }
        // Every handler is reset, so unblocking is safe from here on; the
        // child starts with an empty mask, as with std.
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::pthread_sigmask(libc::SIG_SETMASK, &empty, ptr::null_mut());
        // Before the dup2s, which could overwrite its descriptor if this
        // process runs with a standard descriptor closed.
        if let Some(rd) = spec.watchdog {
            match super::watchdog::fork_watchdog(rd) {
                Ok(pid) => spec.watchdog_pid.store(pid, Ordering::Relaxed),
                Err(e) => return e,
            }
        }
        // The sources are above 2, so no dup2 overwrites a later source,
        // and each new 0/1/2 is inheritable (dup2 clears FD_CLOEXEC).
        for (target, &source) in (0..).zip(&spec.stdio) {
            if source >= 0 && libc::dup2(source, target) < 0 {
                return errno();
            }
        }
        // Nothing of this process but 0, 1 and 2 reaches the server, with
        // or without FD_CLOEXEC.
        super::fds::close_from(3, None);
        libc::execve(spec.path, spec.argv, spec.envp);
        errno()
    }
}

/// The calling thread's errno.
fn errno() -> c_int {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The pointers of `strings`, then a null pointer (argv, envp).
pub(super) fn null_terminated(strings: &[CString]) -> Vec<*const c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(ptr::null()))
        .collect()
}
