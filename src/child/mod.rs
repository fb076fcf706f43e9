//! Child processes: spawning a server, knowing when it exits, and always
//! ending it and its process group.
//!
//! This is a leaf module: it imports nothing from the client, the server or
//! the transport. Its input is one [`Spec`] (program, arguments,
//! environment, working directory, stderr, process group, death with this
//! process, group watchdog, graces); its output a [`Spawned`]: the child's
//! pipes, the [`ShutdownGuard`] whose drop (or
//! [`trigger`](ShutdownGuard::trigger)) starts the escalation, a watch of the
//! exit status, and a [`ShutdownHandle`] that resolves with the
//! [`ShutdownReport`]. Every `unsafe` block and every signal the crate sends
//! live below this module.
//!
//! # The life of one child
//!
//! 1. [`spawn`] resolves the command (bare name in `PATH`, or an absolute
//!    path) to an absolute path (see [`command::resolve_executable`]),
//!    builds the environment from the allowlist plus the configured
//!    variables, and starts the child (Linux: `clone(CLONE_VM |
//!    CLONE_VFORK)` on a dedicated thread, see below; with a process group,
//!    on x86_64 and aarch64, from a per-server reaper that adopts the
//!    child's orphans; elsewhere `tokio::process`). A task that owns the
//!    child starts at once.
//! 2. That task learns of the exit from the kernel (a pidfd, or a thread in
//!    `waitid(WNOWAIT)`, or the reaper's report), **without reaping**: the
//!    exit status is published, the leader stays a zombie, and so its pid
//!    and its process-group id cannot be reused by an unrelated process.
//! 3. When the guard is dropped or triggered, the escalation runs: stdin is
//!    closed (by whoever owns it: the writer drops it on the same signal),
//!    wait up to `stdin` grace for the leader to exit and its group (and
//!    the descendants the reaper adopted) to empty, SIGTERM to the group
//!    and those descendants, wait up to `term` grace, SIGKILL, wait. Every
//!    signal goes out while the leader is unreaped.
//! 4. Last, the group watchdog (if any) is disarmed and the leader reaped
//!    (the reaper, released, kills what is left, reaps the leader and
//!    exits); then the report is published.
//!
//! What a shutdown ends, on Linux with a process group (the default): the
//! server, every member of its group, and every descendant that left the
//! group (`setsid`, `setpgid`, a daemon's double fork), since each is
//! adopted by the reaper when its parent dies. Not caught: a process the
//! server has another, already running process start for it (a systemd or
//! D-Bus service, a container daemon, an existing tmux server, ssh); a
//! descendant that became another user; adopted descendants without
//! `/proc/thread-self/children` (they are reaped, not signalled). If this
//! process is SIGKILLed, the reaper ends the whole tree; if it dumps core or
//! is OOM-killed, the reaper, which shares its memory, ends with it: the
//! server dies by `PR_SET_PDEATHSIG` and the rest as without a reaper (the
//! group watchdog still ends the group).
//!
//! # Platform behaviour
//!
//! - **Linux**: spawned without `fork` (see [`linux`]), exit watched through
//!   a pidfd (Linux 5.3+; a thread per child blocked in `waitid` on older
//!   kernels) or reported by the reaper, every descriptor above 2 closed in
//!   the child before `exec` (`close_range`, or a walk of `/proc/self/fd`
//!   before Linux 5.9), `PR_SET_PDEATHSIG` from a spawning thread that
//!   lives as long as the process, the per-server reaper (x86_64, aarch64,
//!   with a process group) and the optional group watchdog.
//! - **Other unix and Windows**: `tokio::process`, which reaps the leader
//!   when it exits; after that, a group signal of the escalation could in
//!   theory reach a group that reused the number (there is no way to wait
//!   without reaping through tokio). Windows has no groups or signals:
//!   shutdown closes stdin, waits `stdin` grace, then kills the process.
//!
//! # Why no signal can reach a reused number (Linux)
//!
//! A pid, and a process-group id equal to it, stay taken while any process
//! holds them, a zombie included. So:
//!
//! - the escalation signals the group (or the leader) only while the leader
//!   is unreaped, and reaps it last;
//! - the emptiness poll reads `/proc` only while the zombie leader holds
//!   the number, so it cannot mistake a new group for ours;
//! - the group watchdog stays a member of the group it kills: while it
//!   lives, the number is taken, and it signals its own group
//!   (`killpg(0)`);
//! - the reaper signals only its own unreaped children (an adopted pid is
//!   its own until it reaps it), and keeps the leader a zombie until it is
//!   released; if the reaper is killed from outside, nothing is signalled
//!   by the leader's pid any more;
//! - dropping a [`Child`](linux::Child) before the end (the runtime shut
//!   down mid-escalation) sends SIGKILL to the group and the leader before
//!   reaping it.
//!
//! No window remains on Linux. On other platforms `tokio::process` reaps the
//! leader as it exits, so a group signal after that could in theory reach a
//! group that reused the number within the escalation's graces.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::SpawnError;
use crate::secret::{Arg, EnvValue, MaybeSecret};

pub(crate) mod command;
#[cfg(target_os = "linux")]
pub(crate) mod linux;
#[cfg(not(target_os = "linux"))]
mod other;
pub(crate) mod pipe_size;
pub(crate) mod shutdown;

pub(crate) use shutdown::ShutdownHandle;
pub use shutdown::ShutdownReport;
pub(crate) use shutdown::{ExitWatch, Graces, ShutdownGuard, ShutdownSignal, ShutdownTrigger};

#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(not(target_os = "linux"))]
use other as imp;

/// This side of the child's stdin.
pub(crate) type ChildStdin = imp::ChildStdin;
/// This side of the child's stdout.
pub(crate) type ChildStdout = imp::ChildStdout;
/// This side of the child's stderr (with [`Stderr::Piped`]).
pub(crate) type ChildStderr = imp::ChildStderr;

/// Where the child's stderr goes. stdin and stdout are always pipes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stderr {
    /// This process's stderr.
    Inherit,
    /// `/dev/null`.
    Null,
    /// A pipe, returned in [`Spawned::stderr`].
    Piped,
    /// Appended to this file (opened by this process: no shell).
    File(PathBuf),
}

/// What to run, and how to end it.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    /// Name for logs.
    pub(crate) name: String,
    /// A bare name looked up in `PATH` (the configured `PATH` wins), or an
    /// absolute path.
    pub(crate) command: Arg,
    /// Arguments, passed literally.
    pub(crate) args: Vec<Arg>,
    /// Variables set after the allowlist (see [`command::child_env`]).
    pub(crate) env: Vec<(String, EnvValue)>,
    /// Working directory; `None` keeps this process's.
    pub(crate) cwd: Option<MaybeSecret>,
    /// Where stderr goes.
    pub(crate) stderr: Stderr,
    /// Windows: allow `.bat`/`.cmd` (see [`command::check_batch_file`]).
    pub(crate) allow_batch_files: bool,
    /// Unix: the child leads a new process group, and signals go to the
    /// group.
    pub(crate) process_group: bool,
    /// Linux: the child is SIGKILLed when this process dies.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) die_with_parent: bool,
    /// Linux, with the two above: a watchdog SIGKILLs the whole group when
    /// this process dies.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) group_watchdog: bool,
    /// The escalation's timing.
    pub(crate) graces: Graces,
}

/// A spawned child: this side of its pipes and the handles on its end.
pub(crate) struct Spawned {
    /// The child's process id.
    pub(crate) pid: u32,
    /// Its stdin. Dropping it closes the pipe (step 1 of the shutdown).
    pub(crate) stdin: ChildStdin,
    /// Its stdout.
    pub(crate) stdout: ChildStdout,
    /// Its stderr, with [`Stderr::Piped`].
    pub(crate) stderr: Option<ChildStderr>,
    /// Dropping or triggering it starts the escalation.
    pub(crate) guard: ShutdownGuard,
    /// The exit status, once the child has exited (it may not be reaped
    /// yet: the escalation reaps it last).
    pub(crate) exit: ExitWatch,
    /// Resolves with the report at the end of the escalation.
    pub(crate) shutdown: ShutdownHandle,
}

impl std::fmt::Debug for Spawned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawned")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

/// Spawns `spec` with piped stdin and stdout, and starts the task that owns
/// the child (it waits for the exit and, once the guard goes, runs the
/// escalation).
///
/// Must be called within a tokio runtime with IO and time enabled.
///
/// Cancel safety: cancel safe. If the future is dropped after the child was
/// started but before it was handed over, the child is killed and reaped.
pub(crate) async fn spawn(spec: &Spec) -> Result<Spawned, SpawnError> {
    let exe =
        command::resolve_executable(&spec.command, command::effective_path(&spec.env).as_deref())?;
    command::check_batch_file(&exe.name(), &spec.args, spec.allow_batch_files)?;
    let env = command::child_env(std::env::vars_os(), &spec.env);
    imp::spawn(spec, &exe, env).await
}

/// Starts the task that owns `process` (see [`shutdown::Escalation`]) and
/// hands the child over.
fn start<P: shutdown::Process + 'static>(
    spec: &Spec,
    process: P,
    pid: u32,
    stdin: ChildStdin,
    stdout: ChildStdout,
    stderr: Option<ChildStderr>,
) -> Spawned {
    let (guard, signal) = ShutdownGuard::new();
    let (exit_tx, exit_rx) = tokio::sync::watch::channel(None);
    let (report_tx, report_rx) = tokio::sync::watch::channel(None);
    let escalation = shutdown::Escalation::new(process, pid, spec.graces, spec.name.clone());
    tokio::spawn(escalation.run(signal, exit_tx, report_tx));
    Spawned {
        pid,
        stdin,
        stdout,
        stderr,
        guard,
        exit: ExitWatch::new(exit_rx),
        shutdown: ShutdownHandle::new(report_rx),
    }
}

/// The error of a failed spawn of `exe`.
fn io_err(exe: &command::Executable) -> impl FnOnce(std::io::Error) -> SpawnError + '_ {
    move |source| SpawnError::Io {
        executable: exe.name().to_string(),
        source,
    }
}

/// Opens a [`Stderr::File`] for appending.
///
/// The path may come from a config file and name a FIFO, whose open for
/// writing waits for a reader for ever (here, on a runtime worker). So it
/// is opened non-blocking: a FIFO nobody reads is refused at once (ENXIO),
/// anything else opens as before; then the descriptor is made blocking
/// again, since the server shares it and must not see `EAGAIN`.
fn open_stderr_file(path: &Path) -> Result<std::fs::File, SpawnError> {
    let err = |source| SpawnError::StderrFile {
        path: path.display().to_string(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ENXIO) {
            return err(std::io::Error::new(
                e.kind(),
                "a FIFO that nobody reads (opening it would wait for a reader)",
            ));
        }
        err(e)
    })?;
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: fcntl on a descriptor this function owns, with integer
        // arguments only.
        let cleared = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
        };
        if !cleared {
            return Err(err(std::io::Error::last_os_error()));
        }
    }
    Ok(file)
}

/// The environment as `KEY=VALUE` pairs, for the platform code.
type Env = Vec<(OsString, OsString)>;

/// How long the escalation polls a group with no live leader before it
/// gives up after SIGKILL (members that survive SIGKILL are stuck in the
/// kernel, for example in uninterruptible I/O).
const AFTER_KILL: Duration = Duration::from_secs(1);
