//! Building and spawning the child process. No shell is involved: the
//! executable is run directly with literal arguments, and stderr files are
//! opened by this process.
//!
//! On Linux the child is launched by the `process` module (`clone` with
//! `CLONE_VM | CLONE_VFORK`, like `posix_spawn`, even with the
//! `die_with_parent` and `group_watchdog` setup); elsewhere by
//! `tokio::process`.

use std::fs::{File, OpenOptions};
use std::path::Path;

use super::Child;
use crate::client::command::{check_batch_file, child_env, effective_path, resolve_executable};
use crate::client::config::{ClientConfig, StderrMode};
use crate::error::SpawnError;

/// A spawned child and, on Linux with `die_with_parent`,
/// `kill_process_group` and `group_watchdog`, the write end that keeps its
/// group watchdog waiting.
pub(crate) struct Spawned {
    pub(crate) child: Child,
    #[cfg(target_os = "linux")]
    pub(crate) watchdog: Option<super::watchdog::WatchdogFd>,
}

/// Spawns the configured server with piped stdin/stdout.
///
/// Platform behaviour: on unix with `kill_process_group`, the child leads a
/// new process group. On Linux with `die_with_parent`, the child gets
/// `PR_SET_PDEATHSIG = SIGKILL`, which fires when the *thread* that spawned
/// it exits; this is called from a tokio worker thread, which lives as long
/// as the runtime.
pub(crate) fn spawn_child(cfg: &ClientConfig) -> Result<Spawned, SpawnError> {
    let exe = resolve_executable(&cfg.command, effective_path(&cfg.env).as_deref())?;
    check_batch_file(&exe.to_string_lossy(), &cfg.args, cfg.allow_batch_files)?;
    spawn_platform(cfg, &exe)
}

/// Opens a `StderrMode::File` for appending.
fn open_stderr_file(path: &Path) -> Result<File, SpawnError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| SpawnError::StderrFile {
            path: path.display().to_string(),
            source,
        })
}

/// The error of a failed spawn of `exe`.
fn io_err(exe: &Path) -> impl FnOnce(std::io::Error) -> SpawnError + '_ {
    move |source| SpawnError::Io {
        executable: exe.display().to_string(),
        source,
    }
}

/// Linux: through the `process` module, without `fork`.
#[cfg(target_os = "linux")]
fn spawn_platform(cfg: &ClientConfig, exe: &Path) -> Result<Spawned, SpawnError> {
    use super::process::{self, Stderr};
    use std::os::fd::AsRawFd;

    let stderr = match &cfg.stderr {
        StderrMode::Inherit => Stderr::Inherit,
        StderrMode::Discard => Stderr::Null,
        StderrMode::Log => Stderr::Piped,
        StderrMode::File(path) => Stderr::File(open_stderr_file(path)?),
    };
    let watchdog = if cfg.die_with_parent && cfg.kill_process_group && cfg.group_watchdog {
        Some(super::watchdog::pipe().map_err(io_err(exe))?)
    } else {
        None
    };
    let child = process::spawn(process::Command {
        program: exe,
        args: &cfg.args,
        env: child_env(std::env::vars_os(), &cfg.env),
        cwd: cfg.cd.as_deref(),
        stderr,
        process_group: cfg.kill_process_group,
        die_with_parent: cfg.die_with_parent,
        watchdog: watchdog.as_ref().map(|(rd, _)| rd.as_raw_fd()),
    })
    .map_err(io_err(exe))?;
    Ok(Spawned {
        child,
        // Our copy of the read end is closed here; the watchdog has its own.
        watchdog: watchdog.map(|(_rd, wr)| wr),
    })
}

/// Other platforms: through `tokio::process`.
#[cfg(not(target_os = "linux"))]
fn spawn_platform(cfg: &ClientConfig, exe: &Path) -> Result<Spawned, SpawnError> {
    use std::process::Stdio;

    let mut cmd = tokio::process::Command::new(exe);
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
    cmd.stderr(match &cfg.stderr {
        StderrMode::Inherit => Stdio::inherit(),
        StderrMode::Discard => Stdio::null(),
        StderrMode::Log => Stdio::piped(),
        StderrMode::File(path) => Stdio::from(open_stderr_file(path)?),
    });
    #[cfg(unix)]
    if cfg.kill_process_group {
        cmd.process_group(0);
    }
    Ok(Spawned {
        child: cmd.spawn().map_err(io_err(exe))?,
    })
}
