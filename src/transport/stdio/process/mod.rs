//! Launching and owning the server process on Linux, without `fork`.
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
//! so it makes only raw async-signal-safe calls on data prepared beforehand:
//! no allocation, no locks, no unwinding. A failing step stores its errno in
//! a slot of that shared memory and the child exits with 127; [`spawn`] then
//! reaps it and returns the error.
//!
//! # Platform behaviour and caveats
//!
//! - The exit is observed through a pidfd (`pidfd_open`, Linux 5.3+)
//!   registered with the tokio reactor: no `SIGCHLD` handler, no polling.
//!   Where `pidfd_open` is unavailable (older kernels, some seccomp
//!   sandboxes), one thread per child blocks in `waitid(WNOWAIT)` instead.
//! - The child is reaped by pid, only through its [`Child`]. As with
//!   `tokio::process`, anything else in the process that reaps every child
//!   (`waitpid(-1)`, `SIGCHLD` set to `SIG_IGN`) makes [`Child::wait`] fail.
//! - Dropping a [`Child`] that has not been reaped sends it `SIGKILL` and
//!   reaps it on a short-lived thread, so no zombie is left behind (the
//!   equivalent of `kill_on_drop(true)`).
//! - The child starts with an empty signal mask and `SIGPIPE` at its default
//!   action, like a child of `std::process::Command`; other ignored signals
//!   stay ignored.
//! - The program is run with `execve`, not `execvp`: a file without a `#!`
//!   line is not retried with `/bin/sh` (as with `posix_spawn`).
//! - The stdin and stdout pipes (and the stderr pipe, if any) are in
//!   non-blocking mode on this side only; the child's ends are blocking.

use std::ffi::{CString, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::ExitStatus;
use std::ptr;
use std::sync::atomic::{AtomicI32, Ordering};

use libc::{c_char, pid_t};
use tokio::net::unix::pipe;
use tracing::debug;

mod clone;
mod exit;

use clone::{clone_vfork, ChildSpec};
use exit::{kill_and_reap, reap, wait_blocking, Exited};

/// Where the child's stderr goes. stdin and stdout are always pipes.
#[derive(Debug)]
pub(crate) enum Stderr {
    /// This process's stderr.
    Inherit,
    /// `/dev/null`.
    Null,
    /// A pipe, read through [`Child::stderr`].
    Piped,
    /// A file opened by the caller.
    File(File),
}

/// What to run, and how.
#[derive(Debug)]
pub(crate) struct Command<'a> {
    /// The executable, run with `execve` (no PATH search); also `argv[0]`.
    pub(crate) program: &'a Path,
    /// The other arguments.
    pub(crate) args: &'a [String],
    /// The whole environment.
    pub(crate) env: Vec<(OsString, OsString)>,
    /// Working directory; `None` keeps this process's.
    pub(crate) cwd: Option<&'a Path>,
    /// Where stderr goes.
    pub(crate) stderr: Stderr,
    /// `setpgid(0, 0)`: the child leads a new process group.
    pub(crate) process_group: bool,
    /// `PR_SET_PDEATHSIG = SIGKILL`: the child is killed when the thread
    /// that spawned it exits (see `ClientConfig::die_with_parent`).
    pub(crate) die_with_parent: bool,
    /// The read end of a group watchdog's pipe: the watchdog is forked from
    /// the child just before `execve` (see the `watchdog` module).
    pub(crate) watchdog: Option<RawFd>,
}

/// A running (or exited, not yet reaped) child process, and this side of
/// its pipes.
///
/// It is reaped only through [`Child::wait`] or its drop, so until then its
/// pid names this child and no other process.
#[derive(Debug)]
pub(crate) struct Child {
    pid: pid_t,
    exited: Exited,
    /// Set once reaped; [`Child::wait`] returns it from then on.
    status: Option<ExitStatus>,
    /// The child's stdin, if not taken.
    pub(crate) stdin: Option<pipe::Sender>,
    /// The child's stdout, if not taken.
    pub(crate) stdout: Option<pipe::Receiver>,
    /// The child's stderr, with [`Stderr::Piped`], if not taken.
    pub(crate) stderr: Option<pipe::Receiver>,
}

/// Spawns `cmd` with piped stdin and stdout.
///
/// Must be called within a tokio runtime with IO enabled (the pipes and the
/// pidfd are registered with its reactor). Errors are those of the failed
/// step, the child's (`execve`: not found, permission denied; `chdir`) as
/// well as this process's (pipes, descriptors).
pub(crate) fn spawn(cmd: Command<'_>) -> io::Result<Child> {
    let path = cstring(cmd.program.as_os_str().as_bytes().to_vec())?;
    let args = cmd
        .args
        .iter()
        .map(|a| cstring(a.as_bytes().to_vec()))
        .collect::<io::Result<Vec<_>>>()?;
    let env = cmd
        .env
        .iter()
        .map(|(k, v)| {
            let mut kv = Vec::with_capacity(k.len() + v.len() + 1);
            kv.extend_from_slice(k.as_bytes());
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            cstring(kv)
        })
        .collect::<io::Result<Vec<_>>>()?;
    let cwd = cmd
        .cwd
        .map(|d| cstring(d.as_os_str().as_bytes().to_vec()))
        .transpose()?;
    let argv = null_terminated(std::iter::once(&path).chain(&args));
    let envp = null_terminated(&env);

    let (child_stdin, our_stdin) = pipe2()?;
    let (our_stdout, child_stdout) = pipe2()?;
    let (our_stderr, child_stderr) = match cmd.stderr {
        Stderr::Inherit => (None, None),
        Stderr::Null => {
            let null = OpenOptions::new().write(true).open("/dev/null")?;
            (None, Some(OwnedFd::from(null)))
        }
        Stderr::Piped => {
            let (ours, theirs) = pipe2()?;
            (Some(ours), Some(theirs))
        }
        Stderr::File(f) => (None, Some(OwnedFd::from(f))),
    };
    let child_stdin = above_stdio(child_stdin)?;
    let child_stdout = above_stdio(child_stdout)?;
    let child_stderr = child_stderr.map(above_stdio).transpose()?;

    let spec = ChildSpec {
        path: path.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: cwd.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
        stdio: [
            child_stdin.as_raw_fd(),
            child_stdout.as_raw_fd(),
            child_stderr.as_ref().map_or(-1, |f| f.as_raw_fd()),
        ],
        process_group: cmd.process_group,
        // SAFETY: getpid has no preconditions.
        parent: cmd.die_with_parent.then(|| unsafe { libc::getpid() }),
        watchdog: cmd.watchdog,
        last_signal: libc::SIGRTMAX(),
        error: AtomicI32::new(0),
    };
    let pid = clone_vfork(&spec)?;
    // The child has called execve or exited: its copies are its own now.
    drop((child_stdin, child_stdout, child_stderr));
    let err = spec.error.load(Ordering::Relaxed);
    if err != 0 {
        // It has exited (a vfork parent resumes only then): reap it.
        let _ = wait_blocking(pid, 0);
        return Err(io::Error::from_raw_os_error(err));
    }
    let exited = Exited::watch(pid).inspect_err(|_| kill_and_reap(pid))?;
    let mut child = Child {
        pid,
        exited,
        status: None,
        stdin: None,
        stdout: None,
        stderr: None,
    };
    // From here an error drops `child`, which kills and reaps it.
    child.stdin = Some(pipe::Sender::from_owned_fd(our_stdin)?);
    child.stdout = Some(pipe::Receiver::from_owned_fd(our_stdout)?);
    child.stderr = our_stderr.map(pipe::Receiver::from_owned_fd).transpose()?;
    Ok(child)
}

impl Child {
    /// The process id; `None` once reaped.
    pub(crate) fn id(&self) -> Option<u32> {
        self.status.is_none().then_some(self.pid.unsigned_abs())
    }

    /// Waits for the child to exit and reaps it.
    ///
    /// Cancel safety: cancel safe. Once the child is reaped, every call
    /// returns its status at once.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.status {
                return Ok(status);
            }
            match &mut self.exited {
                Exited::PidFd(fd) => {
                    let mut ready = fd.readable().await?;
                    match reap(self.pid)? {
                        Some(status) => self.status = Some(status),
                        // Readiness without an exit: wait for the next.
                        None => ready.clear_ready(),
                    }
                }
                Exited::Thread(rx) => {
                    // The thread always sends before ending.
                    let _ = rx.wait_for(|exited| *exited).await;
                    match reap(self.pid)? {
                        Some(status) => self.status = Some(status),
                        None => {
                            return Err(io::Error::other(
                                "waitid reported an exit that waitpid did not see",
                            ))
                        }
                    }
                }
            }
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.status.is_none() {
            debug!(
                pid = self.pid,
                "server process dropped before it was reaped: SIGKILL"
            );
            kill_and_reap(self.pid);
        }
    }
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
fn cstring(bytes: Vec<u8>) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    })
}

/// The pointers of `strings`, then a null pointer (argv, envp).
fn null_terminated<'a>(strings: impl IntoIterator<Item = &'a CString>) -> Vec<*const c_char> {
    strings
        .into_iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(ptr::null()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn sh(script: &str) -> Command<'static> {
        Command {
            program: Path::new("/bin/sh"),
            args: Box::leak(Box::new(vec!["-c".to_owned(), script.to_owned()])),
            env: vec![("GREETING".into(), "hi".into())],
            cwd: None,
            stderr: Stderr::Piped,
            process_group: true,
            die_with_parent: true,
            watchdog: None,
        }
    }

    async fn read_all(mut r: pipe::Receiver) -> String {
        use tokio::io::AsyncReadExt;
        let mut s = String::new();
        let _ = r.read_to_string(&mut s).await;
        s
    }

    #[tokio::test]
    async fn runs_with_pipes_env_cwd_and_reports_the_status() {
        use tokio::io::AsyncWriteExt;
        let mut cmd = sh("read line; echo \"$GREETING $line $(pwd)\"; echo err >&2; exit 3");
        cmd.cwd = Some(Path::new("/tmp"));
        let mut child = spawn(cmd).unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"there\n").await.unwrap();
        drop(stdin);
        let out = read_all(child.stdout.take().unwrap()).await;
        let err = read_all(child.stderr.take().unwrap()).await;
        assert_eq!(out, "hi there /tmp\n");
        assert_eq!(err, "err\n");
        let status = child.wait().await.unwrap();
        assert_eq!(status.code(), Some(3));
        // Reaped: the cached status, and no pid any more.
        assert_eq!(child.wait().await.unwrap().code(), Some(3));
        assert_eq!(child.id(), None);
    }

    #[tokio::test]
    async fn reports_exec_and_chdir_failures() {
        let mut cmd = sh("exit 0");
        cmd.program = Path::new("/nonexistent/program");
        let err = spawn(cmd).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        let mut cmd = sh("exit 0");
        cmd.cwd = Some(Path::new("/nonexistent/dir"));
        let err = spawn(cmd).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        let mut cmd = sh("exit 0");
        cmd.env.push(("BAD".into(), "a\0b".into()));
        let err = spawn(cmd).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    }

    #[tokio::test]
    async fn wait_is_cancel_safe_and_the_child_has_default_signals() {
        // SIGPIPE is ignored in this process; the child must not inherit
        // that: `kill -PIPE $$` must kill it.
        let mut child = spawn(sh("sleep 0.2; kill -PIPE $$; sleep 5")).unwrap();
        let first = tokio::time::timeout(std::time::Duration::from_millis(20), child.wait()).await;
        assert!(first.is_err(), "still running");
        let status = child.wait().await.unwrap();
        assert_eq!(status.signal(), Some(libc::SIGPIPE));
    }

    #[tokio::test]
    async fn the_thread_fallback_reports_the_exit() {
        let mut child = spawn(sh("exit 7")).unwrap();
        child.exited = Exited::thread(child.pid).unwrap();
        assert_eq!(child.wait().await.unwrap().code(), Some(7));
    }

    #[tokio::test]
    async fn drop_kills_and_reaps() {
        let child = spawn(sh("sleep 30")).unwrap();
        let pid = child.pid;
        drop(child);
        // The reaper thread reaps it; then the pid is no child of ours.
        for _ in 0..500 {
            // SAFETY: kill with signal 0 only checks for existence.
            if unsafe { libc::kill(pid, 0) } != 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("child {pid} still exists (or is a zombie) after drop");
    }
}
