//! Spawning on platforms other than Linux, through `tokio::process`.
//!
//! tokio reaps the leader when it exits, so the escalation may signal the
//! process group after that (see the [module docs](super) for the window).
//! Windows has no process groups or signals: SIGTERM is skipped, SIGKILL is
//! `TerminateProcess`. Not tested in CI.

use std::process::Stdio;

use super::command::Executable;
use super::shutdown::{Process, Sig};
use super::{io_err, open_stderr_file, Env, Spawned, Spec, Stderr};
use crate::error::{ChildExit, SpawnError};

/// This side of the child's stdin.
pub(crate) type ChildStdin = tokio::process::ChildStdin;
/// This side of the child's stdout.
pub(crate) type ChildStdout = tokio::process::ChildStdout;
/// This side of the child's stderr.
pub(crate) type ChildStderr = tokio::process::ChildStderr;

/// Spawns `spec` (already resolved to `exe`, with its whole environment).
pub(super) async fn spawn(spec: &Spec, exe: &Executable, env: Env) -> Result<Spawned, SpawnError> {
    let mut cmd = tokio::process::Command::new(exe.path());
    // Secret arguments are revealed here, for the child only.
    cmd.args(spec.args.iter().map(|a| a.expose()))
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Safety net only: the escalation normally owns the whole shutdown.
        .kill_on_drop(true);
    if let Some(cd) = &spec.cwd {
        cmd.current_dir(cd.expose());
    }
    cmd.stderr(match &spec.stderr {
        Stderr::Inherit => Stdio::inherit(),
        Stderr::Null => Stdio::null(),
        Stderr::Piped => Stdio::piped(),
        Stderr::File(path) => Stdio::from(open_stderr_file(path)?),
    });
    #[cfg(unix)]
    if spec.process_group {
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(io_err(exe))?;
    let pid = child.id().unwrap_or(0);
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io_err(exe)(std::io::Error::other("child pipes missing")));
    };
    let stderr = child.stderr.take();
    let process = Child {
        child,
        pid,
        group: cfg!(unix) && spec.process_group,
        status: None,
    };
    Ok(super::start(spec, process, pid, stdin, stdout, stderr))
}

/// A `tokio::process` child.
struct Child {
    child: tokio::process::Child,
    pid: u32,
    group: bool,
    status: Option<ChildExit>,
}

impl Process for Child {
    async fn exited(&mut self) -> std::io::Result<ChildExit> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        let s = ChildExit::from_std(self.child.wait().await?);
        self.status = Some(s);
        Ok(s)
    }

    fn signal(&mut self, sig: Sig) {
        #[cfg(unix)]
        {
            use nix::sys::signal::Signal as S;
            let s = match sig {
                Sig::Term => S::SIGTERM,
                Sig::Kill => S::SIGKILL,
            };
            let pid = nix::unistd::Pid::from_raw(self.pid as i32);
            if self.group {
                let _ = nix::sys::signal::killpg(pid, s);
            } else if self.status.is_none() {
                // Not reaped yet (only this task reaps), so the pid is ours.
                let _ = nix::sys::signal::kill(pid, s);
            }
        }
        // No signals: both steps end the process (term_grace is unused).
        #[cfg(not(unix))]
        {
            let _ = sig;
            let _ = self.child.start_kill();
        }
    }

    fn group_alive(&mut self) -> bool {
        #[cfg(unix)]
        if self.group {
            let pid = nix::unistd::Pid::from_raw(self.pid as i32);
            return nix::sys::signal::killpg(pid, None).is_ok();
        }
        false
    }

    async fn release(&mut self) {}
}
