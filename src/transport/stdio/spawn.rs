//! Building and spawning the child process. No shell is involved: the
//! executable is run directly with literal arguments, and stderr files are
//! opened by this process.

use std::fs::OpenOptions;
use std::process::Stdio;

use tokio::process::{Child, Command};

use crate::client::command::{check_batch_file, child_env, effective_path, resolve_executable};
use crate::client::config::{ClientConfig, StderrMode};
use crate::error::SpawnError;

/// Spawns the configured server with piped stdin/stdout.
///
/// Platform behaviour: on unix with `kill_process_group`, the child leads a
/// new process group. On Linux with `die_with_parent`, the child gets
/// `PR_SET_PDEATHSIG = SIGKILL`, which fires when the *thread* that forked it
/// exits; this is called from a tokio worker thread, which lives as long as
/// the runtime.
/// A spawned child and, on Linux with `die_with_parent`,
/// `kill_process_group` and `group_watchdog`, the write end that keeps its
/// group watchdog waiting.
pub(crate) struct Spawned {
    pub(crate) child: Child,
    #[cfg(target_os = "linux")]
    pub(crate) watchdog: Option<super::watchdog::WatchdogFd>,
}

pub(crate) fn spawn_child(cfg: &ClientConfig) -> Result<Spawned, SpawnError> {
    let exe = resolve_executable(&cfg.command, effective_path(&cfg.env).as_deref())?;
    check_batch_file(&exe.to_string_lossy(), &cfg.args, cfg.allow_batch_files)?;
    let mut cmd = Command::new(&exe);
    cmd.args(&cfg.args)
        .env_clear()
        .envs(child_env(std::env::vars_os(), &cfg.env))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Safety net only: the reaper task normally owns the whole shutdown.
        .kill_on_drop(true);
    if let Some(cd) = &cfg.cd {
        cmd.current_dir(cd);
    }
    let stderr = match &cfg.stderr {
        StderrMode::Inherit => Stdio::inherit(),
        StderrMode::Discard => Stdio::null(),
        StderrMode::Log => Stdio::piped(),
        StderrMode::File(path) => OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map(Stdio::from)
            .map_err(|source| SpawnError::StderrFile {
                path: path.display().to_string(),
                source,
            })?,
    };
    cmd.stderr(stderr);
    #[cfg(unix)]
    if cfg.kill_process_group {
        cmd.process_group(0);
    }
    let io_err = |source| SpawnError::Io {
        executable: exe.display().to_string(),
        source,
    };
    #[cfg(target_os = "linux")]
    let mut watchdog = None;
    #[cfg(target_os = "linux")]
    if cfg.die_with_parent {
        let group_rd = if cfg.kill_process_group && cfg.group_watchdog {
            let (rd, rd_owned, wr) = super::watchdog::pipe().map_err(io_err)?;
            watchdog = Some((rd_owned, wr));
            Some(rd)
        } else {
            None
        };
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before exec and only
        // calls async-signal-safe functions (prctl, getppid).
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died before prctl took effect.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("parent exited during spawn"));
                }
                if let Some(rd) = group_rd {
                    super::watchdog::fork_watchdog(rd)?;
                }
                Ok(())
            });
        }
    }
    let child = cmd.spawn().map_err(io_err)?;
    Ok(Spawned {
        child,
        // Our copy of the read end is closed here; the watchdog has its own.
        #[cfg(target_os = "linux")]
        watchdog: watchdog.map(|(_rd, wr)| wr),
    })
}
