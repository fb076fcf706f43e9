//! The Linux child, spawned for real: pipes, environment, errors, signals,
//! descriptors, the spawning thread, and the zombie kept until the end.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::child::{spawn as spawn_spec, Graces, Spawned, Spec, Stderr};
use crate::secret::EnvValue;

fn sh(script: &str) -> Spec {
    Spec {
        name: "test".into(),
        command: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        env: vec![("GREETING".into(), EnvValue::from("hi"))],
        cwd: None,
        stderr: Stderr::Piped,
        allow_batch_files: false,
        process_group: true,
        die_with_parent: true,
        group_watchdog: false,
        graces: Graces::new(Duration::from_millis(300), Duration::from_millis(300)),
    }
}

/// `fut`'s output, or a panic saying that `what` did not happen within
/// 30 s: a child that does not do what a test waits for fails the test
/// instead of hanging it.
async fn within<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within 30 s"))
}

async fn read_all(mut r: pipe::Receiver) -> String {
    let mut s = String::new();
    let _ = r.read_to_string(&mut s).await;
    s
}

/// The state letter of `/proc/PID/stat`, `None` once the pid is gone.
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

#[tokio::test]
async fn runs_with_pipes_env_cwd_and_reports_the_status() {
    let mut spec = sh("read line; echo \"$GREETING $line $(pwd)\"; echo err >&2; exit 3");
    spec.cwd = Some("/tmp".into());
    let Spawned {
        pid,
        mut stdin,
        stdout,
        stderr,
        guard,
        mut exit,
        shutdown,
    } = spawn_spec(&spec).await.unwrap();
    stdin.write_all(b"there\n").await.unwrap();
    drop(stdin);
    assert_eq!(
        within("the end of the child's output", read_all(stdout)).await,
        "hi there /tmp\n"
    );
    assert_eq!(
        within("the end of the child's output", read_all(stderr.unwrap())).await,
        "err\n"
    );
    assert_eq!(
        within("the child's exit", exit.wait()).await,
        Some(ChildExit::Code(3))
    );
    drop(guard);
    let report = within("the shutdown", shutdown.wait()).await.unwrap();
    assert_eq!(report.exit, Some(ChildExit::Code(3)));
    assert!(report.exited_before_close && !report.sent_term);
    assert_eq!(state(pid), None, "reaped at the end");
}

#[tokio::test]
async fn reports_exec_chdir_and_nul_failures() {
    let mut spec = sh("exit 0");
    spec.command = "/nonexistent/program".into();
    let err = spawn_spec(&spec).await.unwrap_err();
    assert!(matches!(err, SpawnError::NotFound { .. }), "{err}");
    let mut spec = sh("exit 0");
    spec.cwd = Some("/nonexistent/dir".into());
    match spawn_spec(&spec).await.unwrap_err() {
        SpawnError::Io { source, .. } => assert_eq!(source.kind(), io::ErrorKind::NotFound),
        e => panic!("{e}"),
    }
    let mut spec = sh("exit 0");
    spec.env.push(("BAD".into(), EnvValue::from("a\0b")));
    match spawn_spec(&spec).await.unwrap_err() {
        SpawnError::Io { source, .. } => assert_eq!(source.kind(), io::ErrorKind::InvalidInput),
        e => panic!("{e}"),
    }
    // An executable file that is neither ELF nor a script: execve fails
    // after the watchdog was forked; the watchdog is disarmed.
    let dir = std::env::temp_dir().join(format!("conduit-noexec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("not-a-program");
    std::fs::write(&file, b"\x00\x01\x02 not a program\n").unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut spec = sh("");
    spec.command = file.display().to_string().into();
    spec.args.clear();
    spec.group_watchdog = true;
    match spawn_spec(&spec).await.unwrap_err() {
        SpawnError::Io { source, .. } => assert_eq!(source.raw_os_error(), Some(libc::ENOEXEC)),
        e => panic!("{e}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_child_has_default_signals() {
    // SIGPIPE is ignored in this process; the child must not inherit that:
    // `kill -PIPE $$` must kill it.
    let mut s = spawn_spec(&sh("kill -PIPE $$; sleep 5")).await.unwrap();
    assert_eq!(
        within("the child's exit", s.exit.wait()).await,
        Some(ChildExit::Signal(libc::SIGPIPE))
    );
}

#[tokio::test]
async fn the_thread_fallback_reports_the_exit_without_reaping() {
    // Without a group there is no reaper: the child is ours to wait for.
    let mut spec = sh("exit 7");
    spec.process_group = false;
    let s = spawn_spec(&spec).await.unwrap();
    let pid = s.pid as pid_t;
    let mut exited = Exited::thread(pid).unwrap();
    assert_eq!(
        within("the exit", exited.wait(pid)).await.unwrap(),
        ChildExit::Code(7)
    );
    assert_eq!(state(s.pid), Some('Z'));
    drop(s.guard);
    assert_eq!(
        within("the shutdown", s.shutdown.wait())
            .await
            .unwrap()
            .exit,
        Some(ChildExit::Code(7))
    );
}

#[test]
fn a_runtime_shut_down_mid_shutdown_kills_and_reaps_the_child() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (pid, shutdown) = rt.block_on(async {
        let mut spec = sh("trap '' TERM; while :; do sleep 1; done");
        spec.graces = Graces::new(Duration::from_secs(30), Duration::from_millis(300));
        let s = spawn_spec(&spec).await.unwrap();
        s.guard.trigger();
        (s.pid, s.shutdown)
    });
    drop(rt);
    assert_eq!(shutdown.try_report(), None);
    for _ in 0..500 {
        if state(pid).is_none() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("child {pid} still exists (or is a zombie) after the runtime's drop");
}

#[tokio::test]
async fn an_exited_child_stays_a_zombie_until_its_shutdown_ends() {
    let mut s = spawn_spec(&sh("exit 5")).await.unwrap();
    assert_eq!(
        within("the child's exit", s.exit.wait()).await,
        Some(ChildExit::Code(5))
    );
    // Its pid (and pgid) stay taken: nothing can reuse them while the
    // escalation may still signal the group.
    assert_eq!(state(s.pid), Some('Z'));
    drop(s.guard);
    let handle = s.shutdown.clone();
    let report = within("the shutdown", s.shutdown.wait()).await.unwrap();
    assert_eq!(report.exit, Some(ChildExit::Code(5)));
    assert_eq!(handle.try_report(), Some(report));
    assert_eq!(state(s.pid), None);
}

#[tokio::test]
async fn no_descriptor_of_this_process_reaches_the_child() {
    // A descriptor without FD_CLOEXEC, at a number the child can test.
    let file = std::fs::File::open("/dev/null").unwrap();
    // SAFETY: F_DUPFD (not _CLOEXEC) duplicates an open descriptor.
    let fd = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD, 200) };
    assert!(fd >= 200);
    let script = format!("if [ -e /proc/$$/fd/{fd} ]; then echo open; else echo closed; fi");
    let s = spawn_spec(&sh(&script)).await.unwrap();
    let out = within("the end of the child's output", read_all(s.stdout)).await;
    // SAFETY: closing the descriptor made above.
    unsafe { libc::close(fd) };
    assert_eq!(out, "closed\n");
}

#[tokio::test]
async fn a_child_spawned_from_a_thread_that_ends_lives_on() {
    // PR_SET_PDEATHSIG fires when the spawning *thread* exits: spawns run
    // on a thread of their own, so this thread's end must not kill it.
    let handle = tokio::runtime::Handle::current();
    let (spawned, tid) = std::thread::spawn(move || {
        let spawned = handle.block_on(spawn_spec(&sh("read x; echo \"$x\"")));
        // SAFETY: gettid has no preconditions.
        (spawned, unsafe { libc::gettid() })
    })
    .join()
    .unwrap();
    let mut spawned = spawned.unwrap();
    // The kernel releases a thread after its exit has signalled its
    // children: from then on a death signal would have been delivered.
    let task = format!("/proc/self/task/{tid}");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::path::Path::new(&task).exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the spawning thread was not released"
        );
        tokio::task::yield_now().await;
    }
    // The child still reads and answers.
    spawned.stdin.write_all(b"alive\n").await.unwrap();
    drop(spawned.stdin);
    let out = within("the end of the child's output", read_all(spawned.stdout)).await;
    assert_eq!(out, "alive\n", "the child died with the spawning thread");
    let exit = within("the child's exit", spawned.exit.wait()).await;
    assert_eq!(exit, Some(ChildExit::Code(0)));
}

#[tokio::test]
async fn the_group_watchdog_is_disarmed_by_a_normal_shutdown() {
    let mut spec = sh("read x; exit 0");
    spec.group_watchdog = true;
    let s = spawn_spec(&spec).await.unwrap();
    let pgid = s.pid as pid_t;
    // The watchdog is a member of the server's group.
    let members = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|st| {
                    let f: Vec<&str> = st
                        .rsplit(')')
                        .next()
                        .unwrap_or("")
                        .split_whitespace()
                        .collect();
                    f.len() > 2 && f[0] != "Z" && f[2] == pgid.to_string()
                })
            })
            .count()
    };
    assert_eq!(members(), 2, "leader and watchdog");
    drop(s.stdin);
    drop(s.guard);
    let report = within("the shutdown", s.shutdown.wait()).await.unwrap();
    assert_eq!(report.exit, Some(ChildExit::Code(0)));
    assert!(
        !report.sent_term,
        "the watchdog does not hold the shutdown up"
    );
    // Disarmed, it exits (and is reaped by init) without a signal.
    for _ in 0..300 {
        if members() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the watchdog outlived the shutdown");
}
