//! Launching and owning a child process on Linux, without `fork`.
//!
//! [`spawn`] starts the child the way glibc's `posix_spawn` does: `clone`
//! with `CLONE_VM | CLONE_VFORK` on a small stack of its own. The child
//! borrows this process's memory until it calls `execve`, and the calling
//! thread is suspended until then, so no page tables are copied and the cost
//! of a spawn does not grow with the size of this process. `std` (and so
//! `tokio::process`) takes that path only when no `pre_exec` hook is set,
//! and `die_with_parent` needs one (`PR_SET_PDEATHSIG`), which made every
//! spawn a full `fork` of this (large, multi-threaded) process.
//!
//! Between `clone` and `execve` the child shares memory with this process,
//! so it makes only raw async-signal-safe calls on data prepared beforehand
//! (see [`clone`]).
//!
//! # Platform behaviour and caveats
//!
//! - **One spawning thread.** `PR_SET_PDEATHSIG` fires when the *thread*
//!   that created the child exits, not the process. Tokio retires threads
//!   (`block_in_place` hands a worker's core to a new thread and the old
//!   one leaves after `thread_keep_alive`; `spawn_blocking` threads retire
//!   too), and a user may start a client from a `std::thread` that ends.
//!   So every child is cloned on one dedicated thread ([`spawner`]) that
//!   lives as long as the process: the signal fires when the process dies,
//!   never because some thread went away.
//! - **Exit without reaping.** The exit is observed through a pidfd
//!   (`pidfd_open`, Linux 5.3+) registered with the tokio reactor, and its
//!   status read with `waitid(WNOWAIT)`: the child stays a zombie, holding
//!   its pid and pgid, until the escalation reaps it last. Where
//!   `pidfd_open` is unavailable (older kernels, some seccomp sandboxes),
//!   one thread per child blocks in `waitid(WNOWAIT)` instead.
//! - The child is reaped by pid, only here. As with `tokio::process`,
//!   anything else in the process that reaps every child (`waitpid(-1)`,
//!   `SIGCHLD` set to `SIG_IGN`) breaks exit reporting.
//! - **Descriptors.** Every descriptor above 2 is closed in the child before
//!   `execve` (`close_range`; a walk of `/proc/self/fd` before Linux 5.9),
//!   as Python's `subprocess` does: the server never inherits this
//!   process's files, sockets or pipes, with or without `FD_CLOEXEC`.
//! - The child starts with an empty signal mask and `SIGPIPE` at its default
//!   action, like a child of `std::process::Command`; other ignored signals
//!   stay ignored.
//! - The program is run with `execve`, not `execvp`: a file without a `#!`
//!   line is not retried with `/bin/sh` (as with `posix_spawn`).
//! - The stdin and stdout pipes (and the stderr pipe, if any) are in
//!   non-blocking mode on this side only; the child's ends are blocking.
//! - **The reaper.** With a process group (x86_64, aarch64), the child is
//!   cloned by a small per-server process that set
//!   `PR_SET_CHILD_SUBREAPER`, so the descendants that leave the group (a
//!   daemon's `setsid` and double fork) are adopted by it rather than by
//!   init, and the shutdown ends them too (see [`reaper`]). It shares this
//!   process's memory (a spawn costs about 70 µs more), and appears in
//!   `ps` as `conduit-reaper`, the server's parent.

use std::ffi::CString;
use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use libc::pid_t;
use tokio::net::unix::pipe;
use tracing::{debug, warn};

use super::command::Executable;
use super::shutdown::{Process, Sig};
use super::{io_err, open_stderr_file, Env, Spawned, Spec, Stderr};
use crate::error::{ChildExit, SpawnError};

mod clone;
mod exit;
mod fds;
mod launch;
mod raw;
mod reaper;
mod report;
mod spawner;
mod watchdog;

use clone::Prepared;
use exit::{kill_and_reap, reap, Exited};
use launch::Launched;
use reaper::Reaper;
use watchdog::Watchdog;

/// This side of the child's stdin.
pub(crate) type ChildStdin = pipe::Sender;
/// This side of the child's stdout.
pub(crate) type ChildStdout = pipe::Receiver;
/// This side of the child's stderr.
pub(crate) type ChildStderr = pipe::Receiver;

/// Spawns `spec` (already resolved to `exe`, with its whole environment).
pub(super) async fn spawn(spec: &Spec, exe: &Executable, env: Env) -> Result<Spawned, SpawnError> {
    let err = io_err(exe);
    let (child_stdin, our_stdin) = pipe2().map_err(io_err(exe))?;
    let (our_stdout, child_stdout) = pipe2().map_err(io_err(exe))?;
    let (our_stderr, child_stderr) = match &spec.stderr {
        Stderr::Inherit => (None, None),
        Stderr::Null => {
            let null = OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .map_err(io_err(exe))?;
            (None, Some(OwnedFd::from(null)))
        }
        Stderr::Piped => {
            let (ours, theirs) = pipe2().map_err(io_err(exe))?;
            (Some(ours), Some(theirs))
        }
        Stderr::File(path) => (None, Some(OwnedFd::from(open_stderr_file(path)?))),
    };
    let watchdog = if spec.die_with_parent && spec.process_group && spec.group_watchdog {
        Some(Watchdog::pipe().map_err(io_err(exe))?)
    } else {
        None
    };
    let (watchdog_read, watchdog_write) = match watchdog {
        Some((rd, wr)) => (Some(rd), Some(wr)),
        None => (None, None),
    };
    let prepared = Prepared::new(
        exe.path(),
        &spec.args,
        &env,
        spec.cwd.as_ref().map(|cwd| Path::new(cwd.expose())),
        [Some(child_stdin), Some(child_stdout), child_stderr],
        spec.process_group,
        spec.die_with_parent,
        watchdog_read,
        watchdog_write,
        // The reaper ends what leaves the group; without a group, only the
        // leader is signalled, as asked.
        raw::AVAILABLE && spec.process_group,
    )
    .map_err(io_err(exe))?;
    let mut launched = spawner::launch(prepared).await.map_err(err)?;
    let exited = match launched.reaper_mut() {
        Some(reaper) => reaper.exit_reports().map(Exited::Reported),
        None => Exited::watch(launched.pid()),
    };
    let exited = match exited {
        Ok(exited) => exited,
        Err(e) => {
            abandon(launched, spec.process_group);
            return Err(io_err(exe)(e));
        }
    };
    let (pid, watchdog, reaper) = launched.into_parts();
    let child = Child {
        pid,
        group: spec.process_group,
        exited,
        status: None,
        reaped: false,
        watchdog,
        reaper,
    };
    // From here an error drops `child`, which kills and reaps it.
    let stdin = pipe::Sender::from_owned_fd(our_stdin).map_err(io_err(exe))?;
    let stdout = pipe::Receiver::from_owned_fd(our_stdout).map_err(io_err(exe))?;
    let stderr = our_stderr
        .map(pipe::Receiver::from_owned_fd)
        .transpose()
        .map_err(io_err(exe))?;
    Ok(super::start(
        spec,
        child,
        pid.unsigned_abs(),
        stdin,
        stdout,
        stderr,
    ))
}

/// Kills and reaps a child nobody will own.
fn abandon(launched: Launched, group: bool) {
    let (pid, watchdog, reaper) = launched.into_parts();
    let mut child = Child {
        pid,
        group,
        exited: Exited::Unwatched,
        status: None,
        reaped: false,
        watchdog,
        reaper,
    };
    child.kill_now();
}

/// A running (or exited, not yet reaped) child process.
///
/// It is reaped only by [`Process::release`] or its drop (by its reaper,
/// when it has one), so until then its pid (and its pgid, when it leads a
/// group) names this child and no other process.
#[derive(Debug)]
pub(crate) struct Child {
    pid: pid_t,
    /// It leads its own process group (pgid == pid).
    group: bool,
    exited: Exited,
    /// The exit status, once seen (the child may still be unreaped).
    status: Option<ChildExit>,
    reaped: bool,
    watchdog: Option<Watchdog>,
    /// The child's parent, which adopts its orphans (see [`reaper`]).
    reaper: Option<Reaper>,
}

impl Child {
    /// SIGKILL to the group and the leader (and, through the reaper, to
    /// every adopted descendant), then the reap (on a thread if the leader
    /// has not died yet). For drops before the end.
    fn kill_now(&mut self) {
        if self.reaped {
            return;
        }
        if self.group {
            // SAFETY: killpg only sends a signal; the unreaped leader holds
            // the pgid, so it names our group.
            unsafe { libc::killpg(self.pid, libc::SIGKILL) };
        }
        if let Some(w) = self.watchdog.take() {
            w.disarm();
        }
        match self.reaper.take() {
            // Released: it kills the rest and reaps the leader.
            Some(reaper) => drop(reaper),
            None => kill_and_reap(self.pid),
        }
        self.reaped = true;
    }

    /// The watchdog's pid, left out of the group's live members.
    fn watchdog_pid(&self) -> Option<pid_t> {
        self.watchdog.as_ref().map(Watchdog::pid)
    }
}

impl Process for Child {
    async fn exited(&mut self) -> io::Result<ChildExit> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        let s = match self.exited.wait(self.pid).await {
            Ok(s) => s,
            Err(e) => {
                if e.kind() == io::ErrorKind::BrokenPipe && self.reaper.is_some() {
                    // The reaper was killed from outside: the leader (dead
                    // with it, or re-parented) may be reaped by someone
                    // else, so nothing is signalled by its pid any more.
                    warn!(
                        pid = self.pid,
                        "the server's reaper process ended; no more signals to its group"
                    );
                    self.reaper.take();
                    self.reaped = true;
                }
                return Err(e);
            }
        };
        self.status = Some(s);
        Ok(s)
    }

    fn signal(&mut self, sig: Sig) {
        if self.reaped {
            return;
        }
        let s = match sig {
            Sig::Term => libc::SIGTERM,
            Sig::Kill => libc::SIGKILL,
        };
        // SAFETY: kill/killpg only send a signal. The leader is unreaped,
        // so its pid and pgid name our child and its group.
        unsafe {
            if self.group {
                libc::killpg(self.pid, s);
            } else {
                libc::kill(self.pid, s);
            }
        }
        // The descendants that left the group, adopted by the reaper.
        if let Some(reaper) = &self.reaper {
            match sig {
                Sig::Term => reaper.term(),
                Sig::Kill => reaper.kill(),
            }
        }
    }

    fn group_alive(&mut self) -> bool {
        if !self.group || self.reaped {
            return false;
        }
        let skip = self.watchdog_pid();
        let adopted = |r: &Reaper| r.has_live_children(&[self.pid, skip.unwrap_or(0)]);
        if self.reaper.as_ref().is_some_and(adopted) {
            return true;
        }
        match group_has_live_member(self.pid, skip) {
            Some(live) => live,
            // No /proc: the zombie leader alone keeps killpg(0) succeeding,
            // so assume alive and let the graces run out.
            None => {
                // SAFETY: signal 0 only checks for existence.
                unsafe { libc::killpg(self.pid, 0) == 0 }
            }
        }
    }

    async fn release(&mut self) {
        if self.reaped {
            return;
        }
        if let Some(w) = self.watchdog.take() {
            w.disarm();
        }
        if let Some(reaper) = self.reaper.take() {
            // It kills what is left, reaps the leader and exits.
            reaper.end(super::AFTER_KILL).await;
            self.reaped = true;
            return;
        }
        match self.status.map(|_| reap(self.pid)) {
            Some(Ok(Some(_))) => self.reaped = true,
            // Not exited (it survived SIGKILL, stuck in the kernel) or the
            // reap failed: reap it on a thread when it dies.
            _ => self.kill_now(),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            debug!(
                pid = self.pid,
                "server process dropped before its shutdown ended: SIGKILL"
            );
            self.kill_now();
        }
    }
}

/// Whether a live (non-zombie) process other than the leader `pgid` and
/// `skip` is in group `pgid`; `None` if /proc is unreadable. Called once
/// the leader has exited (it is a zombie, so it is skipped).
///
/// Cost: one `getpgid` per process of the system (a fraction of a
/// microsecond each), and a read of `/proc/PID/stat` only for members of
/// the group, to tell zombies apart. Reading every process's `stat`
/// instead costs about 6 µs a process on a small VM, 0.5 ms with 85
/// processes, which would delay every reap by as much.
fn group_has_live_member(pgid: pid_t, skip: Option<pid_t>) -> Option<bool> {
    let dir = std::fs::read_dir("/proc").ok()?;
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<pid_t>().ok()) else {
            continue;
        };
        if pid == pgid || Some(pid) == skip {
            continue;
        }
        // SAFETY: getpgid only reads another process's group id.
        if unsafe { libc::getpgid(pid) } != pgid {
            continue;
        }
        if is_live(pid) {
            return Some(true);
        }
    }
    Some(false)
}

/// Whether `pid` is a live process (not a zombie), as `/proc` says.
fn is_live(pid: pid_t) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state is the field after the parenthesised command.
    let state = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .next();
    !matches!(state, Some("Z") | Some("X") | None)
}

/// A `pipe2(O_CLOEXEC)`: (read end, write end).
fn pipe2() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?)
}

/// `fd`, moved above 2 if it is 0, 1 or 2 (possible only if this process
/// runs with a standard descriptor closed). Then the child's `dup2` onto
/// 0..=2 never overwrites a source it still needs, and never has source
/// and target equal (where it would leave `FD_CLOEXEC` set).
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor or -1.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` was just returned by the kernel and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// A C string; a NUL byte inside is an error, as with std's `Command`.
fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    })
}

/// `path` as a C string.
fn path_cstring(path: &Path) -> io::Result<CString> {
    cstring(path.as_os_str().as_bytes())
}

#[cfg(test)]
mod tests;
