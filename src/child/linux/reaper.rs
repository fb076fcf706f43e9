//! The per-server reaper (Linux, x86_64 and aarch64): a small process
//! between this one and the server that adopts every descendant the server
//! leaves behind, so that the server's shutdown ends them all.
//!
//! Group signals reach the server's process group only. A daemon started
//! the classic way (a child calls `setsid`, forks the daemon and exits)
//! leaves the group and the session, and once its parent has exited it is
//! re-parented to init: nothing of ours can find it any more. So the server
//! is not cloned from this process directly, but from a reaper process that
//! has set `PR_SET_CHILD_SUBREAPER`: every orphan of the server's tree is
//! re-parented to the reaper instead of init, and the reaper signals its
//! children when asked.
//!
//! ```text
//! this process ── reaper (PR_SET_CHILD_SUBREAPER) ── server (group leader)
//!                    └── adopted orphans: daemons, a dead launcher's children
//! ```
//!
//! # How it runs
//!
//! The spawning thread clones the reaper with `CLONE_VM` (it shares this
//! process's memory: no page is copied, a spawn costs about what a thread
//! does) on a stack mapped for it, and parks in a blocking `read` until the
//! reaper reports. Meanwhile the reaper, in effect that thread, resets its
//! signal handlers, becomes a subreaper, clones the server exactly as the
//! spawning thread would (`clone` module: `CLONE_VFORK`, the setup before
//! `execve`, with itself as the parent the server dies with), keeps only
//! its two pipes, and reports the server's pid (or the `execve` error).
//!
//! From then on the spawning thread runs again, and the reaper makes only
//! raw system calls (`raw` module: no `errno`, no allocation, no lock, no
//! thread-local storage). It waits in `ppoll` on its command pipe with
//! SIGCHLD unblocked, and on each wake-up:
//!
//! - reaps the orphans that have exited, but never the server: once the
//!   server has exited it reports its status and keeps it a zombie, so that
//!   the server's pid and process-group id stay taken while this process
//!   signals them (see the [module docs](super::super));
//! - obeys the commands of this process: `T` SIGTERMs its other children
//!   (the adopted descendants), `K` SIGKILLs them, now and whenever more
//!   are adopted, `R` (release) kills what is left, the server included,
//!   waits until it is all gone, reaps the server and exits;
//! - end of file on the command pipe (this process died, even by SIGKILL):
//!   with `die_with_parent` it SIGKILLs the server's group and then
//!   everything as on `R`; without, it just exits (the server outlives us,
//!   re-parented to init).
//!
//! The escalation (`shutdown` module) treats the reaper's live children as
//! members of the server's group: it waits for them, sends them its
//! SIGTERM and its SIGKILL.
//!
//! # Limits
//!
//! - Only descendants are caught: a process the server asks another,
//!   already running process to start (a systemd or D-Bus service, a
//!   container daemon, an existing tmux server, ssh) is not one.
//! - A descendant that became another user (setuid, sudo) cannot be
//!   signalled.
//! - The reaper lists its children in `/proc/thread-self/children`
//!   (`CONFIG_PROC_CHILDREN`, enabled by the usual distributions); without
//!   it, adopted descendants are reaped when they exit but not signalled.
//! - The reaper shares this process's memory: a core dump or the OOM
//!   killer, which end every process of a memory space, end it with this
//!   process; the server then dies with it (`PR_SET_PDEATHSIG`) and the
//!   rest of its tree is left as before (the group watchdog, a separate
//!   copy, still ends the group).
//! - The user's own `fork` of this process while a server runs keeps the
//!   command pipe open in the fork, so the reaper sees this process's death
//!   only when the fork exits or execs (as for the group watchdog).

use std::ffi::c_void;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use libc::{c_int, pid_t};
use tokio::net::unix::pipe;

use super::clone::{clone_vfork, ChildSpec};
use super::exit::{reap, reap_eventually, wait_blocking, Exited};
use super::raw;
use super::report::{record, ExitReports, EXITED, LAUNCHED, RECORD_BYTES};

/// The reaper's command pipe is its descriptor 0, its report pipe 1.
const COMMANDS: c_int = 0;
const REPORTS: c_int = 1;

/// Commands, one byte each.
const TERM: u8 = b'T';
const KILL: u8 = b'K';
const RELEASE: u8 = b'R';

/// Size of the reaper's stack: its loop, a 512-byte read buffer, and during
/// the launch the `clone` of the server (whose own stack is separate).
const STACK_BYTES: usize = 64 * 1024;
const GUARD_BYTES: usize = 4096;

/// What the spawning thread hands to a new reaper. Read by the reaper
/// only until it reports the launch (the spawning thread waits for that).
pub(super) struct Start<'a> {
    /// The server to clone.
    pub(super) spec: &'a ChildSpec,
    /// The read end of the command pipe (above 2).
    pub(super) commands: RawFd,
    /// The write end of the report pipe (above 2).
    pub(super) reports: RawFd,
    /// End the server's tree when this process dies.
    pub(super) die_with_parent: bool,
}

/// The reaper, as this process holds it: its pid (our child, reaped only
/// here), the write end of its commands, the read end of its reports, and
/// the stack it runs on.
#[derive(Debug)]
pub(crate) struct Reaper {
    pid: pid_t,
    commands: OwnedFd,
    reports: Option<OwnedFd>,
    /// Unmapped only once the reaper is reaped (it runs on it).
    stack: Option<Stack>,
}

/// The reaper's stack: an anonymous mapping with a guard page below it.
#[derive(Debug)]
struct Stack {
    base: *mut c_void,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; the pointer is only
// handed to `clone` and to `munmap`.
unsafe impl Send for Stack {}

impl Stack {
    fn new() -> io::Result<Self> {
        let len = STACK_BYTES + GUARD_BYTES;
        // SAFETY: a fresh private anonymous mapping; nothing else uses it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack { base, len };
        // SAFETY: the lowest page of the mapping just made.
        if unsafe { libc::mprotect(base, GUARD_BYTES, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The top of the stack (it grows down), 16-byte aligned.
    fn top(&self) -> *mut c_void {
        self.base.cast::<u8>().wrapping_add(self.len).cast()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; its reaper has been reaped.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// Starts a reaper that clones the server of `spec`, and waits for its
/// report. Returns the reaper and the server's pid; if a step before
/// `execve` failed (`spec.error()`), the server is an exited child of the
/// reaper, kept until [`end_blocking`](Reaper::end_blocking).
///
/// Call on the spawning thread, with every signal blocked (the reaper
/// inherits the mask).
pub(super) fn launch(spec: &ChildSpec, die_with_parent: bool) -> io::Result<(Reaper, pid_t)> {
    let (commands_wr, commands_rd) = socket_pair()?;
    let (reports_rd, reports_wr) = super::pipe2()?;
    let (commands_rd, reports_wr) = (
        super::above_stdio(commands_rd)?,
        super::above_stdio(reports_wr)?,
    );
    let stack = Stack::new()?;
    let start = Start {
        spec,
        commands: commands_rd.as_raw_fd(),
        reports: reports_wr.as_raw_fd(),
        die_with_parent,
    };
    // SAFETY: `stack.top()` is the end of a live mapping that only the
    // reaper uses; `start` and what it points to outlive the reaper's use
    // of them (it reports before it lets go, and this thread waits for the
    // report); `main` only makes the calls described in the module docs.
    let pid = unsafe {
        libc::clone(
            main,
            stack.top(),
            libc::CLONE_VM | libc::SIGCHLD,
            std::ptr::from_ref(&start).cast_mut().cast::<c_void>(),
        )
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    // The reaper holds its copies: with ours closed, its death is an end of
    // file on the reports, and it sees ours as one on the commands.
    drop(commands_rd);
    drop(reports_wr);
    let mut reaper = Reaper {
        pid,
        commands: commands_wr,
        reports: Some(reports_rd),
        stack: Some(stack),
    };
    match reaper.read_launch() {
        Ok((server, _)) if server > 0 => Ok((reaper, server)),
        Ok((_, errno)) => {
            reaper.end_blocking();
            Err(io::Error::from_raw_os_error(errno))
        }
        Err(e) => {
            reaper.end_blocking();
            Err(e)
        }
    }
}

/// The command channel: a connected pair of stream sockets (close-on-exec),
/// so that this side's sends can refuse SIGPIPE. Our end, the reaper's.
fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: socketpair writes two new descriptors into `fds`.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just returned by the kernel and nothing else owns
    // them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Reaper {
    /// Reads the launch report, blocking (spawning thread).
    fn read_launch(&mut self) -> io::Result<(pid_t, c_int)> {
        let fd = self
            .reports
            .as_ref()
            .ok_or_else(|| io::Error::other("no report pipe"))?;
        let mut buf = [0u8; RECORD_BYTES];
        let mut got = 0;
        while got < RECORD_BYTES {
            // SAFETY: reads into the rest of a live buffer.
            let n = unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    buf[got..].as_mut_ptr().cast(),
                    RECORD_BYTES - got,
                )
            };
            match n {
                0 => {
                    return Err(io::Error::other(
                        "the reaper ended before the server started",
                    ))
                }
                n if n > 0 => got += n.unsigned_abs(),
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
        match record(&buf) {
            [LAUNCHED, server, errno] => Ok((server, errno)),
            _ => Err(io::Error::other("the reaper sent an unexpected report")),
        }
    }

    /// The exit reports of the server, for [`Exited::Reported`].
    pub(super) fn exit_reports(&mut self) -> io::Result<ExitReports> {
        let fd = self
            .reports
            .take()
            .ok_or_else(|| io::Error::other("the reports were taken"))?;
        Ok(ExitReports::new(pipe::Receiver::from_owned_fd(fd)?))
    }

    /// Sends one command. A full or closed socket means the reaper is gone
    /// or has not read for a while; either way nothing more can be done
    /// (MSG_NOSIGNAL: no SIGPIPE for a reaper that is gone).
    fn command(&self, c: u8) {
        // SAFETY: a one-byte send from a live buffer on our socket.
        unsafe {
            libc::send(
                self.commands.as_raw_fd(),
                (&raw const c).cast(),
                1,
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
    }

    /// SIGTERM to the descendants it adopted.
    pub(super) fn term(&self) {
        self.command(TERM);
    }

    /// SIGKILL to the descendants it adopted, and to those it adopts next.
    pub(super) fn kill(&self) {
        self.command(KILL);
    }

    /// Whether a live child of the reaper other than those in `skip` (the
    /// server, the watchdog) remains: an adopted descendant. Reads `/proc`
    /// (a pid read there can be stale, which only makes the answer late:
    /// nothing is signalled here).
    pub(super) fn has_live_children(&self, skip: &[pid_t]) -> bool {
        let path = format!("/proc/{0}/task/{0}/children", self.pid);
        let Ok(list) = std::fs::read_to_string(path) else {
            return false;
        };
        list.split_whitespace()
            .filter_map(|p| p.parse::<pid_t>().ok())
            .filter(|p| !skip.contains(p))
            .any(super::is_live)
    }

    /// Releases the server: the reaper kills what is left, reaps the server
    /// and exits; this waits up to `limit` for that and reaps the reaper
    /// (or leaves the reap to a thread). Called once, at the end of the
    /// shutdown.
    pub(super) async fn end(mut self, limit: Duration) {
        self.command(RELEASE);
        if let Ok(mut exited) = Exited::watch(self.pid) {
            let _ = tokio::time::timeout(limit, exited.wait(self.pid)).await;
        }
        if matches!(reap(self.pid), Ok(Some(_))) {
            self.stack.take();
            self.pid = 0;
        }
        // Dropped here: a reaper not yet reaped goes to a thread.
    }

    /// [`end`](Self::end), on the spawning thread: blocks until the
    /// reaper has exited.
    pub(super) fn end_blocking(mut self) {
        self.command(RELEASE);
        if wait_blocking(self.pid, 0).is_ok() {
            self.stack.take();
            self.pid = 0;
        }
    }
}

impl Drop for Reaper {
    /// Releases the server (if not done) and reaps the reaper when it
    /// exits, on a thread if it has not yet. Its stack is unmapped only
    /// after that.
    fn drop(&mut self) {
        if self.pid == 0 {
            return;
        }
        self.command(RELEASE);
        let stack = self.stack.take();
        reap_eventually(self.pid, move || drop(stack));
    }
}

// ---------------------------------------------------------------- the reaper

/// The reaper process. Never returns.
extern "C" fn main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Start` passed by `launch`, alive until the
    // launch report below (the spawning thread waits for it).
    let start = unsafe { &*arg.cast::<Start<'_>>() };
    let die_with_parent = start.die_with_parent;
    // The launch: the spawning thread is parked until the report, so the
    // libc calls (errno) and the allocation in `clone_vfork` are as if it
    // made them itself.
    // SAFETY: this is the reaper, before its report.
    let waiting = unsafe { set_up() };
    if die_with_parent {
        // SAFETY: getpid has no preconditions.
        start.spec.set_parent(unsafe { libc::getpid() });
    }
    let (server, errno) = match clone_vfork(start.spec) {
        Ok(pid) => (pid, start.spec.error()),
        Err(e) => (0, e.raw_os_error().unwrap_or(libc::EIO)),
    };
    // SAFETY: the reaper's own descriptor table (not shared): the two
    // pipes become 0 and 1, every other descriptor (this process's, the
    // server's pipe ends) is closed, so the reaper holds nothing open that
    // someone waits to see closed.
    unsafe {
        libc::dup3(start.commands, COMMANDS, 0);
        libc::dup3(start.reports, REPORTS, 0);
        super::fds::close_from(2, None);
    }
    let spared = start.spec.watchdog_pid();
    // From here on: raw system calls only. `start` is not read again.
    report([LAUNCHED, server, errno]);
    if server <= 0 {
        raw::exit(0);
    }
    let mut watch = Watch {
        server,
        spared,
        exited: false,
        killing: false,
        die_with_parent,
        waiting,
    };
    if errno != 0 {
        // The exec failed: the server has exited; keep it until released.
        watch.exited = true;
        watch.wait_for_release();
    }
    watch.run()
}

/// Signal handling for the reaper; returns the mask to wait with. Every
/// handler of this process is reset (one would run in our memory), SIGPIPE
/// is ignored (the report pipe may be closed), and SIGCHLD gets a handler
/// that does nothing, only so that it interrupts `ppoll`.
///
/// # Safety
/// Only in the reaper, before its launch report.
unsafe fn set_up() -> libc::sigset_t {
    extern "C" fn on_child(_: c_int) {}
    // SAFETY (whole block): sigaction/prctl on plain data, in the reaper,
    // whose handler table is its own (no CLONE_SIGHAND).
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        let mut old: libc::sigaction = std::mem::zeroed();
        for sig in 1..=libc::SIGRTMAX() {
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction != libc::SIG_DFL
                && old.sa_sigaction != libc::SIG_IGN
            {
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
        let mut ign: libc::sigaction = std::mem::zeroed();
        ign.sa_sigaction = libc::SIG_IGN;
        libc::sigaction(libc::SIGPIPE, &ign, std::ptr::null_mut());
        let mut child: libc::sigaction = std::mem::zeroed();
        child.sa_sigaction = on_child as extern "C" fn(c_int) as libc::sighandler_t;
        child.sa_flags = libc::SA_NOCLDSTOP;
        libc::sigaction(libc::SIGCHLD, &child, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::prctl(libc::PR_SET_NAME, c"conduit-reaper".as_ptr(), 0, 0, 0);
        // Every signal stays blocked (inherited); SIGCHLD is let in only
        // while waiting in ppoll, so none is missed between two waits.
        let mut waiting: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut waiting);
        libc::sigdelset(&mut waiting, libc::SIGCHLD);
        waiting
    }
}

/// Writes one report; a closed pipe (this process gone) is ignored.
fn report(words: [i32; 3]) {
    let mut buf = [0u8; RECORD_BYTES];
    for (chunk, w) in buf.chunks_exact_mut(4).zip(words) {
        chunk.copy_from_slice(&w.to_ne_bytes());
    }
    let _ = raw::write(REPORTS, &buf);
}

/// The reaper's state once the server runs.
struct Watch {
    server: pid_t,
    /// The group watchdog (0: none), left alone while this process lives:
    /// it is disarmed by this process, and adopted here if the server
    /// exits first.
    spared: pid_t,
    /// The server has exited (it is kept a zombie until the release).
    exited: bool,
    /// `K` was received: adopted descendants are SIGKILLed as they come.
    killing: bool,
    die_with_parent: bool,
    /// The signal mask while waiting: all blocked but SIGCHLD.
    waiting: libc::sigset_t,
}

impl Watch {
    fn run(mut self) -> ! {
        loop {
            self.sweep();
            if self.killing {
                self.signal_children(libc::SIGKILL);
            }
            let mut fds = [libc::pollfd {
                fd: COMMANDS,
                events: libc::POLLIN,
                revents: 0,
            }];
            // Err(EINTR): a SIGCHLD; sweep again.
            if matches!(raw::ppoll(&mut fds, &self.waiting), Ok(n) if n > 0) {
                self.read_commands();
            }
        }
    }

    /// Reads and obeys the pending commands; end of file: this process is
    /// gone.
    fn read_commands(&mut self) {
        let mut buf = [0u8; 16];
        match raw::read(COMMANDS, &mut buf) {
            Ok(0) => self.parent_gone(),
            Ok(n) => {
                for &c in buf.iter().take(n) {
                    match c {
                        TERM => {
                            self.signal_children(libc::SIGTERM);
                        }
                        KILL => {
                            self.killing = true;
                            self.signal_children(libc::SIGKILL);
                        }
                        RELEASE => self.release(),
                        _ => {}
                    }
                }
            }
            Err(libc::EINTR | libc::EAGAIN) => {}
            Err(_) => self.parent_gone(),
        }
    }

    /// This process died (its end of the command pipe closed).
    fn parent_gone(&mut self) -> ! {
        if !self.die_with_parent {
            // The server outlives us; its tree goes to init with it.
            raw::exit(0);
        }
        // Everything, the watchdog too (it does the same).
        self.spared = 0;
        self.release()
    }

    /// Reaps the orphans that have exited and reports the server's exit.
    /// The server, once exited, stays a zombie: it is first in the list of
    /// children, so orphans behind it wait for `signal_children`.
    fn sweep(&mut self) {
        loop {
            // SAFETY: siginfo_t is plain data.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let options = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            if raw::waitid(libc::P_ALL, 0, &mut info, options).is_err() {
                return;
            }
            // SAFETY: waitid filled `info` (si_pid 0: nobody has exited).
            let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
            if pid == 0 {
                return;
            }
            if pid == self.server {
                if !self.exited {
                    self.exited = true;
                    report([EXITED, info.si_code, status]);
                }
                return;
            }
            let _ = raw::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOHANG);
        }
    }

    /// Sends `sig` to every child but the server (reaping those that have
    /// exited, with SIGKILL); returns how many are left.
    fn signal_children(&mut self, sig: c_int) -> usize {
        let Ok(fd) = raw::open_read(c"/proc/thread-self/children") else {
            return 0;
        };
        let mut left = 0;
        let mut buf = [0u8; 512];
        let mut pid: Option<pid_t> = None;
        let mut visit = |p: pid_t| {
            if p == self.server || p == self.spared {
                return;
            }
            // Our unreaped child: the pid is its own.
            let _ = raw::kill(p, sig);
            if sig == libc::SIGKILL {
                // SAFETY: siginfo_t is plain data.
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                let reaped = raw::waitid(libc::P_PID, p, &mut info, libc::WEXITED | libc::WNOHANG)
                    .is_ok()
                    // SAFETY: filled by waitid.
                    && unsafe { info.si_pid() } == p;
                if reaped {
                    return;
                }
            }
            left += 1;
        };
        while let Ok(n) = raw::read(fd, &mut buf) {
            if n == 0 {
                break;
            }
            for &b in buf.iter().take(n) {
                match b.checked_sub(b'0').filter(|d| *d <= 9) {
                    Some(d) => {
                        pid = pid
                            .unwrap_or(0)
                            .checked_mul(10)
                            .and_then(|v| v.checked_add(pid_t::from(d)));
                    }
                    None => {
                        if let Some(p) = pid.take() {
                            visit(p);
                        }
                    }
                }
            }
        }
        if let Some(p) = pid {
            visit(p);
        }
        raw::close(fd);
        left
    }

    /// The exec failed: waits for the release (or this process's end),
    /// reaps the server and exits.
    fn wait_for_release(&mut self) -> ! {
        let mut buf = [0u8; 16];
        while let Err(libc::EINTR) = raw::read(COMMANDS, &mut buf) {}
        self.reap_server_and_exit()
    }

    /// Kills what is left (the server's group, the server, every adopted
    /// descendant), waits until every child but the server (and the
    /// watchdog) is gone and the server has exited, reaps it, and exits.
    fn release(&mut self) -> ! {
        self.killing = true;
        // Unreaped: the pid, and the group id it leads, are the server's.
        let _ = raw::kill(-self.server, libc::SIGKILL);
        if !self.exited {
            let _ = raw::kill(self.server, libc::SIGKILL);
        }
        loop {
            self.sweep();
            let left = self.signal_children(libc::SIGKILL);
            if self.exited && left == 0 {
                break;
            }
            // Until the next SIGCHLD.
            let _ = raw::ppoll(&mut [], &self.waiting);
        }
        self.reap_server_and_exit()
    }

    fn reap_server_and_exit(&mut self) -> ! {
        // SAFETY: siginfo_t is plain data.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        while let Err(libc::EINTR) = raw::waitid(libc::P_PID, self.server, &mut info, libc::WEXITED)
        {
        }
        raw::exit(0)
    }
}
