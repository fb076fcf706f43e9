//! The process core against real child processes: which thread the server's
//! life is tied to, what it inherits, how a clean stop lets it exit, and
//! that no process group is signalled after its number could be reused.
//!
//! Regression tests for defects found from outside (DESIGN.md section 6).
//! Each prints the figure it measures (`--nocapture`).
//!
//! Every test here holds one lock ([`serial`]): the pid-reuse tests steer
//! the kernel's pid allocator (/proc/sys/kernel/ns_last_pid), which a spawn
//! in a concurrent test would disturb. The tests build their own runtimes.

mod common;

use std::future::Future;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use conduit_mcp::LifecycleEvent;
use conduit_mcp::{
    Backoff, ChildExit, Client, ClientConfig, CloseReason, Error, RequestOptions, StderrMode,
};
use serde_json::json;
use tokio::sync::mpsc;

use common::figure;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` alone (see [`serial`]) on a fresh 2-worker runtime.
fn run<F: Future>(f: F) -> F::Output {
    let _g = serial();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// A restart policy that will not restart within a test's lifetime, so no
/// new server (and no new pid) appears while a test watches one.
fn no_restart_during_test() -> Backoff {
    Backoff::new()
        .initial(Duration::from_secs(120))
        .max(Duration::from_secs(120))
}

// ------------------------------------------------ item 2: die_with_parent
//
// PR_SET_PDEATHSIG fires when the *thread* that spawned the child exits, not
// the process. A server started from a thread that later ends (a tokio
// worker retired after block_in_place, a spawn_blocking thread, a user's
// std::thread) is SIGKILLed although this process lives on. Before the fix:
// the server was SIGKILLed as the thread exited (dead within 15 µs of the
// test seeing the thread gone; an idle thread retires after the 100 ms
// keep-alive), and the client reported it closed (killed by signal 9) and
// restarted it.

const KEEP_ALIVE: Duration = Duration::from_millis(100);

fn keep_alive_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_keep_alive(KEEP_ALIVE)
        .enable_all()
        .build()
        .unwrap()
}

struct Started {
    client: Client,
    events: mpsc::UnboundedReceiver<LifecycleEvent>,
    pid: u32,
    /// The thread on which `Client::start` was called.
    tid: i32,
}

/// Called on the thread under test: starts a default client (die_with_parent
/// on) there and waits until it is ready.
async fn start_here() -> Started {
    let tid = common::gettid();
    let (client, events) = common::start_recording(common::config(&[])).await;
    let pid = common::ready_pid(&client).await;
    Started {
        client,
        events,
        pid,
        tid,
    }
}

/// Runs an unrelated `block_in_place` on worker thread `tid`: spawns probe
/// tasks until one runs there. The blocking work takes long enough for the
/// worker's core to move to a new thread, so `tid` leaves the pool of
/// workers and retires after the keep-alive.
async fn block_in_place_on(tid: i32) {
    for _ in 0..1000 {
        let probes: Vec<_> = (0..4)
            .map(|_| {
                tokio::spawn(async move {
                    if common::gettid() != tid {
                        return false;
                    }
                    // The user's unrelated blocking work.
                    tokio::task::block_in_place(|| std::thread::sleep(Duration::from_millis(200)));
                    true
                })
            })
            .collect();
        let mut hit = false;
        for p in probes {
            hit |= p.await.unwrap();
        }
        if hit {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("no task ran on worker thread {tid}");
}

/// Waits until thread `tid` has exited, then checks that the server it
/// started lives on: same pid, no Closed or Restarting event, a request
/// answered. Stops the client.
async fn check_server_outlives_thread(s: Started, scenario: &str) {
    let Started {
        client,
        mut events,
        pid,
        tid,
    } = s;
    common::eventually(Duration::from_secs(10), || !common::thread_exists(tid))
        .await
        .unwrap_or_else(|| panic!("thread {tid}, which started the client, never exited"));
    // PR_SET_PDEATHSIG is sent while the thread exits, so a server killed by
    // it is dead within milliseconds; watch it well past the keep-alive.
    let died = common::eventually(KEEP_ALIVE * 10, || !common::alive(pid)).await;
    let is_bad = |e: &LifecycleEvent| {
        matches!(
            e,
            LifecycleEvent::Closed { .. } | LifecycleEvent::Restarting { .. }
        )
    };
    let mut bad: Vec<LifecycleEvent> = common::drain(&mut events)
        .into_iter()
        .filter(is_bad)
        .collect();
    if died.is_some() && bad.is_empty() {
        // Let the close that death caused reach the events, for the figure.
        if let Ok(Some(e)) = tokio::time::timeout(Duration::from_secs(2), events.recv()).await {
            bad.push(e);
        }
    }
    figure(
        scenario,
        match died {
            Some(after) => {
                format!("server {pid} died {after:.1?} after thread {tid} exited; events: {bad:?}")
            }
            None => format!(
                "server {pid} still alive {:?} after thread {tid} exited; no close",
                KEEP_ALIVE * 10
            ),
        },
    );
    let answer = client
        .request_with(
            "echo",
            Some(json!({ "tid": tid })),
            RequestOptions::new().timeout(Duration::from_secs(10)),
        )
        .await;
    let now = client.pid();
    let reports = crate::common::shutdown(client.stop().wait()).await;
    for r in &reports {
        assert!(!common::alive(r.pid) && !common::zombie(r.pid), "{r:?}");
    }
    assert!(
        died.is_none(),
        "server {pid} was killed when thread {tid} exited, although this process lives"
    );
    assert!(bad.is_empty(), "unexpected events: {bad:?}");
    assert_eq!(now, Some(pid), "the server was replaced");
    assert_eq!(answer.unwrap()["tid"], tid);
}

#[test]
fn server_outlives_a_worker_thread_retired_after_block_in_place() {
    let _g = serial();
    let rt = keep_alive_runtime();
    rt.block_on(async {
        // Started inside a task: the spawn runs on that worker thread.
        let s = tokio::spawn(start_here()).await.unwrap();
        block_in_place_on(s.tid).await;
        check_server_outlives_thread(s, "die_with_parent, worker retired after block_in_place")
            .await;
    });
}

#[test]
fn server_outlives_the_spawn_blocking_thread_that_started_it() {
    let _g = serial();
    let rt = keep_alive_runtime();
    rt.block_on(async {
        let s = tokio::task::spawn_blocking(|| {
            tokio::runtime::Handle::current().block_on(start_here())
        })
        .await
        .unwrap();
        // The blocking thread is idle now and retires after the keep-alive.
        check_server_outlives_thread(s, "die_with_parent, started in spawn_blocking").await;
    });
}

#[test]
fn server_outlives_the_std_thread_that_started_it() {
    let _g = serial();
    let rt = keep_alive_runtime();
    let handle = rt.handle().clone();
    let s = std::thread::spawn(move || handle.block_on(start_here()))
        .join()
        .unwrap();
    rt.block_on(check_server_outlives_thread(
        s,
        "die_with_parent, started from a std::thread that ended",
    ));
}

// ------------------------------------------- item 3: EPIPE on a clean stop
//
// A well-behaved server that writes while it exits (a Node server logging
// "shutting down") must exit 0 on a clean stop. Before the fix the reader
// dropped the stdout read end when stdin was closed, so the server's writes
// failed with EPIPE and it exited with an error (the fixture: status 3).

#[test]
fn a_clean_stop_lets_a_server_that_writes_while_exiting_exit_0() {
    run(async {
        let mut exits = Vec::new();
        for _ in 0..20 {
            let client = Client::start(common::config(&[
                "--write-on-eof",
                "50",
                "--write-on-eof-delay-ms",
                "20",
            ]))
            .await
            .unwrap();
            let pid = common::ready_pid(&client).await;
            let reports = crate::common::shutdown(client.stop().wait()).await;
            let r = reports
                .iter()
                .find(|r| r.pid == pid)
                .unwrap_or_else(|| panic!("no report for {pid}: {reports:?}"));
            assert!(!common::alive(pid) && !common::zombie(pid));
            exits.push(r.exit);
        }
        let ok = exits
            .iter()
            .filter(|e| **e == Some(ChildExit::Code(0)))
            .count();
        let others: Vec<_> = exits
            .iter()
            .filter(|e| **e != Some(ChildExit::Code(0)))
            .collect();
        figure(
            "clean stop, server writes 50 lines 20 ms after stdin EOF",
            format!("{ok}/20 exited with status 0; the others: {others:?}"),
        );
        assert_eq!(ok, 20, "exit statuses: {exits:?}");
    });
}

// ----------------------------------------- item 8: inherited descriptors
//
// A descriptor of this process without FD_CLOEXEC (opened by a C library,
// or dup()ed) must not leak into the server. Before the fix it did: the
// server saw it open.

#[test]
fn the_server_inherits_only_stdin_stdout_and_stderr() {
    run(async {
        let file = std::fs::File::open(common::fixture()).unwrap();
        // SAFETY: dup of an open descriptor; closed below.
        let leaked = unsafe { libc::dup(file.as_raw_fd()) };
        assert!(leaked > 2);
        // SAFETY: F_GETFD on a descriptor we own.
        let flags = unsafe { libc::fcntl(leaked, libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, 0, "dup() clears FD_CLOEXEC");
        let client = Client::start(common::config(&[])).await.unwrap();
        let info = client.request("fixture/info", None).await.unwrap();
        crate::common::shutdown(client.stop().wait()).await;
        // SAFETY: closing the descriptor dup()ed above.
        unsafe { libc::close(leaked) };
        let fds: Vec<i64> = info["fds"]
            .as_array()
            .expect("fixture/info lists fds")
            .iter()
            .filter_map(|v| v.as_i64())
            .collect();
        figure(
            "descriptors open in the server",
            format!("{fds:?} (this process had {leaked} open without FD_CLOEXEC)"),
        );
        assert_eq!(
            fds,
            [0, 1, 2],
            "the server inherited descriptors beyond stdio (ours without FD_CLOEXEC: {leaked})"
        );
    });
}

// ---------------------------------------- item 4: pid and group reuse
//
// Reaping the leader frees its pid, and with it the number of its process
// group: the kernel may give both to an unrelated process, which a later
// killpg(pgid) of the escalation then hits. The leader must stay a zombie
// (exited, not reaped) until the shutdown has ended.

/// The fixture with a grandchild that stays in its process group and holds
/// its stdout (the link stays open 100 ms after the leader exits, and the
/// shutdown waits for the grandchild until the stdin grace ends).
fn leader_with_grandchild(pids: &std::path::Path) -> ClientConfig {
    let mut cfg = common::config(&["--grandchild", "--pid-file", pids.to_str().unwrap()]);
    cfg = cfg.stdin_grace(Duration::from_secs(2));
    cfg = cfg.backoff(no_restart_during_test());
    cfg
}

/// Sends `fixture/exit {code: 5}`: the server exits by itself; the call
/// fails once the link has closed (Closed event emitted).
async fn exit_by_itself(client: &Client) {
    let r = client
        .request_with(
            "fixture/exit",
            Some(json!({"code": 5})),
            RequestOptions::new().timeout(Duration::from_secs(10)),
        )
        .await;
    assert!(
        matches!(
            r,
            Err(Error::Closed(CloseReason::Exited(ChildExit::Code(5))))
        ),
        "{r:?}"
    );
}

/// (a) Deterministic, no root needed. The server exits by itself while a
/// grandchild (group member, ignores stdin EOF) keeps its shutdown waiting
/// for the whole stdin grace. Until the report, the leader must be a zombie;
/// after it, reaped. Before the fix: reaped at once when it exited, so at
/// the close its pid (and, once the grandchild was gone, its group number)
/// was free for the whole shutdown.
#[test]
fn a_server_that_exits_by_itself_stays_a_zombie_until_its_shutdown_ends() {
    run(async {
        // The grandchild, orphaned when the server exits, is reaped here.
        common::become_subreaper();
        let dir = common::tempdir("zombie-until-report");
        let pids = dir.join("pids");
        let (client, mut events) = common::start_recording(leader_with_grandchild(&pids)).await;
        let leader = common::ready_pid(&client).await;
        common::eventually(Duration::from_secs(5), || {
            common::read_pids(&pids).len() == 2
        })
        .await
        .expect("grandchild started");
        let grandchild = common::read_pids(&pids)[1];
        let t = Instant::now();
        exit_by_itself(&client).await;
        let closed_after = t.elapsed();
        let state_at_close = common::proc_state(leader);
        let grandchild_alive_at_close = common::alive(grandchild);
        let reports = crate::common::shutdown(client.stop().wait()).await;
        let state_after_report = common::proc_state(leader);
        let grandchild_reaped = common::reap_within(grandchild, Duration::from_secs(5)).await;
        let r = reports.iter().find(|r| r.pid == leader).cloned();
        let closed: Vec<_> = common::drain(&mut events)
            .into_iter()
            .filter(|e| matches!(e, LifecycleEvent::Closed { pid: Some(p), .. } if *p == leader))
            .collect();
        figure(
            "server exits by itself, its group still has a member",
            format!(
                "at the close ({closed_after:.0?} after the exit request) the leader {leader} was {}; \
                 after the report: {}; report {r:?}",
                describe(state_at_close),
                describe(state_after_report)
            ),
        );
        assert_eq!(closed.len(), 1, "{closed:?}");
        assert!(
            grandchild_alive_at_close,
            "the grandchild must hold the shutdown open"
        );
        assert_eq!(
            state_at_close,
            Some('Z'),
            "the leader {leader} was reaped while its shutdown still ran: its pid and group \
             number were free for reuse"
        );
        let r = r.expect("a report for the leader");
        assert_eq!(r.exit, Some(ChildExit::Code(5)), "{r:?}");
        assert!(r.exited_before_close && r.sent_term, "{r:?}");
        assert_eq!(
            state_after_report, None,
            "the leader must be reaped once the report is out"
        );
        assert!(grandchild_reaped && !common::alive(grandchild));
    });
}

fn describe(state: Option<char>) -> String {
    match state {
        None => "reaped (no such process)".into(),
        Some('Z') => "a zombie (exited, not reaped)".into(),
        Some(c) => format!("alive (state {c})"),
    }
}

/// Runs this test binary again as `test` with `role` set, with a time limit;
/// returns its stdout.
fn run_role(test: &str, role: &str, limit: Duration) -> String {
    let mut child = Command::new(std::env::current_exe().unwrap())
        // The roles of ignored tests (root only) run too.
        .args([
            "--exact",
            test,
            "--include-ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(role, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
            .join("\n")
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("role {role} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = reader.join().unwrap();
    assert!(status.success(), "role {role} failed ({status}):\n{text}");
    text
}

/// The `OUTCOME k=v ...` line of a role's output.
/// Runs `role` of test `test` in a child process until its outcome is
/// conclusive (up to 5 times: another process may take a number first).
fn conclusive_outcome(test: &str, role: &str) -> std::collections::HashMap<String, String> {
    for attempt in 1..=5 {
        let o = outcome(&run_role(test, role, Duration::from_secs(60)));
        if o.get("conclusive").map(String::as_str) == Some("true") {
            return o;
        }
        println!("attempt {attempt} inconclusive: {o:?}");
    }
    panic!("{test}: no conclusive run in 5 attempts");
}

fn outcome(text: &str) -> std::collections::HashMap<String, String> {
    let line = text
        .lines()
        .find_map(|l| l.split_once("OUTCOME ").map(|(_, o)| o))
        .unwrap_or_else(|| panic!("no OUTCOME line in:\n{text}"));
    line.split(' ')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// How a victim process ended, if it did.
fn victim_fate(child: &mut std::process::Child, within: Duration) -> String {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            use std::os::unix::process::ExitStatusExt;
            return match s.signal() {
                Some(sig) => format!("signal-{sig}"),
                None => format!("exit-{}", s.code().unwrap_or(-1)),
            };
        }
        if t.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            return "alive".into();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A process in a new process group of its own (the fixture, sleeping).
fn spawn_victim() -> std::process::Child {
    use std::os::unix::process::CommandExt;
    Command::new(common::fixture())
        .arg("--sleeper")
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

const REUSE_ROLE: &str = "CONDUIT_TEST_ROLE_GROUP_REUSE";

/// (b) The attack, root only. As in (a), the server exits by itself while
/// its grandchild holds the shutdown open. Then, with every task of the
/// client frozen (a current-thread runtime whose thread the test holds),
/// the test kills the grandchild (reaped here if this process, a
/// subreaper, adopted it; kept a zombie by the server's reaper, which
/// adopts it first, otherwise), points the pid allocator at the leader's number
/// (ns_last_pid) and starts an unrelated process in a new group: if the
/// leader was reaped, it gets the leader's pid, and so leads a group with
/// the old group's number. Then the tasks run again; the escalation must
/// never signal that process. Before the fix: it got the number, the
/// escalation saw "its" group alive, and SIGTERMed it at the end of the
/// stdin grace.
#[test]
#[ignore = "needs root (writes /proc/sys/kernel/ns_last_pid); CI runs it with --ignored"]
fn the_escalation_never_signals_a_group_that_reused_the_number() {
    if std::env::var(REUSE_ROLE).is_ok() {
        return reuse_role();
    }
    assert!(
        common::is_root(),
        "needs root (writes /proc/sys/kernel/ns_last_pid)"
    );
    let _g = serial();
    {
        let o = conclusive_outcome(
            "the_escalation_never_signals_a_group_that_reused_the_number",
            REUSE_ROLE,
        );
        figure(
            "unrelated group reuses the number of a reaped leader during its shutdown",
            format!(
                "leader state when the victim was started: {}; victim got the leader's number: {}; victim: {}",
                o["leader_state"], o["reused"], o["victim"]
            ),
        );
        assert_eq!(
            o["victim"], "alive",
            "the client signalled an unrelated process group that reused its server's number: {o:?}"
        );
    }
}

fn reuse_role() {
    common::become_subreaper();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = common::tempdir("group-reuse");
    let pids = dir.join("pids");
    let (client, leader, grandchild) = rt.block_on(async {
        let (client, mut events) = common::start_recording(leader_with_grandchild(&pids)).await;
        let leader = common::ready_pid(&client).await;
        common::eventually(Duration::from_secs(5), || {
            common::read_pids(&pids).len() == 2
        })
        .await
        .expect("grandchild started");
        exit_by_itself(&client).await;
        tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(e) = events.recv().await {
                if matches!(e, LifecycleEvent::Closed { pid: Some(p), .. } if p == leader) {
                    return;
                }
            }
        })
        .await
        .expect("the link closed");
        (client, leader, common::read_pids(&pids)[1])
    });
    // Frozen from here: no task of the client runs until block_on again.
    assert!(common::alive(grandchild), "the shutdown must still wait");
    common::kill9(grandchild);
    // Adopted by the server's reaper (then it holds the group's number as
    // a zombie until the release) or by this process (reaped here).
    // SAFETY: waitpid on one pid.
    unsafe { libc::waitpid(grandchild as i32, std::ptr::null_mut(), 0) };
    let t = Instant::now();
    while common::alive(grandchild) && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(!common::alive(grandchild), "the grandchild was SIGKILLed");
    let leader_state = common::proc_state(leader);
    common::set_ns_last_pid(leader - 1).unwrap();
    let mut victim = spawn_victim();
    let v = victim.id();
    let reused = v == leader;
    let conclusive = reused || leader_state == Some('Z');
    // Thaw: the escalation goes on (and, before the fix, sends SIGTERM at
    // the end of the stdin grace to the group it believes is its own).
    let reports = rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(20), client.stop().wait())
            .await
            .expect("shutdown ends")
    });
    // Any signal of the escalation was sent before its report.
    let fate = victim_fate(&mut victim, Duration::from_millis(500));
    let report = reports.iter().find(|r| r.pid == leader);
    println!(
        "OUTCOME conclusive={conclusive} reused={reused} leader_state={} victim={fate} \
         victim_pid={v} leader={leader} sent_term={:?} sent_kill={:?}",
        leader_state.map_or("reaped".into(), |c| c.to_string()),
        report.map(|r| r.sent_term),
        report.map(|r| r.sent_kill),
    );
    assert!(!common::alive(leader) && !common::zombie(leader));
}

// ------------------------------- item 11: the group watchdog after a failed exec
//
// With group_watchdog, the watchdog is forked from the server's child
// before execve. If execve then fails (here ENOEXEC: an executable file
// that is neither ELF nor a #! script), the spawn reaps the child and lets
// go of the watchdog's pipe. Before the fix, the watchdog (in a group of
// its own) then SIGKILLed the child's group number, which was free by
// then: an unrelated process that had come to lead a group with that
// number was killed (7 of 7 runs, with the race pinned by SCHED_FIFO).
// Now the watchdog is a member of the child's group (so the number stays
// taken while it lives) and is disarmed before the child is reaped.
//
// The test (root) makes this process a subreaper, so the failed child's
// watchdog becomes its child, points the pid allocator at the failed
// child's number (ns_last_pid) right after the failed start, starts an
// unrelated process in a new group, and then waits for the watchdog to
// end: the unrelated process must live, and the watchdog must have exited
// by itself (disarmed), not by its own group SIGKILL.

const WATCHDOG_ROLE: &str = "CONDUIT_TEST_ROLE_WATCHDOG_ENOEXEC";

#[test]
#[ignore = "needs root (ns_last_pid, subreaper); CI runs it with --ignored"]
fn the_group_watchdog_of_a_failed_exec_never_kills_an_unrelated_group() {
    if std::env::var(WATCHDOG_ROLE).is_ok() {
        return watchdog_role();
    }
    assert!(common::is_root(), "needs root (ns_last_pid, subreaper)");
    let _g = serial();
    {
        let o = conclusive_outcome(
            "the_group_watchdog_of_a_failed_exec_never_kills_an_unrelated_group",
            WATCHDOG_ROLE,
        );
        figure(
            "group watchdog after exec fails with ENOEXEC, its number reused",
            format!(
                "watchdog {}; victim got the failed child's number: {}; victim: {}",
                o["watchdog"], o["reused"], o["victim"]
            ),
        );
        assert_eq!(
            o["victim"], "alive",
            "the watchdog of a failed spawn killed an unrelated process group: {o:?}"
        );
        assert_eq!(
            o["watchdog"], "exit-0",
            "the watchdog of a failed spawn was not disarmed: {o:?}"
        );
    }
}

/// How child `pid` of this process ended, once it has (within `limit`).
fn wait_child(pid: u32, limit: Duration) -> Option<String> {
    let t = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: waitpid on one pid with WNOHANG.
        let r = unsafe { libc::waitpid(pid as i32, &mut status, libc::WNOHANG) };
        if r == pid as i32 {
            return Some(if libc::WIFSIGNALED(status) {
                format!("signal-{}", libc::WTERMSIG(status))
            } else {
                format!("exit-{}", libc::WEXITSTATUS(status))
            });
        }
        if r < 0 || t.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn watchdog_role() {
    common::become_subreaper();
    let dir = common::tempdir("enoexec");
    let exe = dir.join("not-a-program");
    std::fs::write(&exe, "neither ELF nor a #! script\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut cfg = ClientConfig::new(exe.to_str().unwrap()).stderr(StderrMode::Discard);
    cfg = cfg.group_watchdog(true);
    assert!(cfg.get_die_with_parent() && cfg.get_kill_process_group());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Warm-up: the first spawn starts the crate's spawning thread, which
    // takes a number from the pid space too. Its watchdog is reaped here.
    let warm_last: u32 = common::read_ns_last_pid();
    assert!(rt.block_on(Client::start(cfg.clone())).is_err());
    for pid in warm_last + 1..=common::read_ns_last_pid() {
        let _ = wait_child(pid, Duration::from_millis(200));
    }
    // The failed start: its child and its watchdog took the last two
    // numbers handed out (the child's reaper, if any, the one before).
    let started = rt.block_on(Client::start(cfg));
    let watchdog = common::read_ns_last_pid();
    let child = watchdog - 1;
    // The failed child is reaped: offer its number to an unrelated group.
    common::set_ns_last_pid(child - 1).unwrap();
    let mut victim = spawn_victim();
    let v = victim.id();
    let reused = v == child;
    let watchdog_end = wait_child(watchdog, Duration::from_secs(5));
    let fate = victim_fate(&mut victim, Duration::from_millis(500));
    println!(
        "OUTCOME conclusive={} reused={reused} watchdog={} victim={fate} victim_pid={v} \
         child={child} start_error={}",
        watchdog_end.is_some(),
        watchdog_end.as_deref().unwrap_or("unseen"),
        match &started {
            Ok(_) => "none".to_string(),
            Err(e) => e.to_string().replace(' ', "_"),
        }
    );
    assert!(
        started.is_err(),
        "exec of a non-executable format must fail"
    );
}

// ------------------------------- issue 20, item 15: a stderr file that is a FIFO
//
// `stderr: {"file": PATH}` comes from config files too. Opening a FIFO for
// writing waits for a reader, for ever, and the open ran on a runtime
// worker. Now the file is opened non-blocking: a FIFO nobody reads is an
// error at once; one with a reader is used (and the server's end blocks,
// as a file's does).

#[test]
fn a_stderr_file_that_is_a_fifo_without_reader_fails_the_start_at_once() {
    let _g = serial();
    let dir = common::tempdir("stderr-fifo");
    let fifo = dir.join("fifo");
    common::mkfifo(&fifo);
    let cfg = common::config(&[]).stderr(StderrMode::File(fifo.clone()));
    // The open that waits for a reader waits for ever: the limits only
    // catch that hang.
    let r = common::on_own_runtime(Duration::from_secs(60), || async {
        let t = Instant::now();
        let r = tokio::time::timeout(Duration::from_secs(30), Client::start(cfg)).await;
        (
            t.elapsed(),
            r.map(|r| r.map(|c| drop(c.stop())).map_err(|e| e.to_string())),
        )
    });
    figure("stderr file is a FIFO nobody reads", format!("{r:?}"));
    let (_, r) = r.expect("Client::start blocked its runtime's thread");
    let e = r
        .expect("Client::start returned before its timeout")
        .expect_err("a FIFO without reader cannot take stderr");
    assert!(e.contains("stderr"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

// ------------------- issue 20, item 8: the executable checked is the one run
//
// A bare command is looked up in PATH. A relative PATH entry (`rel`) was
// resolved against this process's directory, and the relative match
// (`rel/tool`) handed to the child, which changes to its own directory
// (`cd`) before execve: it ran `<cd>/rel/tool`, not the file found. Now the
// match is made absolute before the spawn. The test runs as a role (its
// own process) because it changes this process's directory.

const PATH_ROLE: &str = "CONDUIT_TEST_ROLE_RELATIVE_PATH";

#[test]
fn a_relative_path_entry_runs_the_file_found_not_one_under_the_server_s_cd() {
    if std::env::var(PATH_ROLE).is_ok() {
        return relative_path_role();
    }
    let _g = serial();
    let o = outcome(&run_role(
        "a_relative_path_entry_runs_the_file_found_not_one_under_the_server_s_cd",
        PATH_ROLE,
        Duration::from_secs(60),
    ));
    figure(
        "PATH=rel, cd=OTHER: the tool found as rel/tool, and the one that ran",
        format!("ran {} (found {})", o["ran"], o["found"]),
    );
    assert_eq!(
        o["ran"], "checked",
        "the server ran <cd>/rel/tool, not the rel/tool found in PATH: {o:?}"
    );
}

/// A script at `dir/rel/tool` that runs the fixture with `marker` as a
/// free argument (reported by fixture/info).
fn tool_script(dir: &std::path::Path, marker: &str) {
    use std::os::unix::fs::PermissionsExt;
    let rel = dir.join("rel");
    std::fs::create_dir_all(&rel).unwrap();
    let tool = rel.join("tool");
    let script = format!(
        "#!/bin/sh\nexec '{}' --print-args -- {marker}\n",
        common::fixture()
    );
    std::fs::write(&tool, script).unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn relative_path_role() {
    let here = common::tempdir("relative-path-here");
    let there = common::tempdir("relative-path-there");
    tool_script(&here, "checked");
    tool_script(&there, "decoy");
    std::env::set_current_dir(&here).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ran = rt.block_on(async {
        let cfg = common::config(&[])
            .command("tool")
            .env("PATH", "rel")
            .cd(&there);
        let mut cfg = cfg;
        cfg.transport.as_stdio_mut().unwrap().args.clear();
        let client = Client::start(cfg).await.unwrap();
        let info = client.request("fixture/info", None).await.unwrap();
        crate::common::shutdown(client.stop().wait()).await;
        info["args"]
            .as_array()
            .and_then(|a| a.last())
            .and_then(|v| v.as_str())
            .unwrap_or("none")
            .to_owned()
    });
    println!("OUTCOME ran={ran} found={}/rel/tool", here.display());
    let _ = std::fs::remove_dir_all(&here);
    let _ = std::fs::remove_dir_all(&there);
}

// -------------- issue 20, item 16: a daemon that double-forks with setsid
//
// The server starts a daemon the classic way: a child calls setsid, starts
// the daemon and exits, so the daemon is an orphan in a session and group
// of its own. Group signals cannot reach it. Before the fix it outlived
// the server's stop (re-parented to init, alive after `stop().wait()`).
// Now a per-server reaper (PR_SET_CHILD_SUBREAPER) adopts it, and the
// stop ends it with the server.

#[test]
fn a_daemon_that_double_forks_with_setsid_is_ended_with_its_server() {
    run(async {
        let dir = common::tempdir("setsid-daemon");
        let pids = dir.join("pids");
        let cfg = common::config(&["--daemon", pids.to_str().unwrap()]);
        let client = Client::start(cfg).await.unwrap();
        let leader = common::ready_pid(&client).await;
        common::eventually(Duration::from_secs(5), || {
            common::read_pids(&pids).len() == 2
        })
        .await
        .expect("the daemon started");
        let daemon = common::read_pids(&pids)[1];
        let stat = common::proc_stat(daemon);
        let t = Instant::now();
        let reports = crate::common::shutdown(client.stop().wait()).await;
        let took = t.elapsed();
        let alive_after = common::alive(daemon);
        figure(
            "daemon (setsid + double fork) of a stopped server",
            format!(
                "daemon {daemon} (state, ppid, pgrp) = {stat:?}, leader {leader}; \
                 after stop().wait() ({took:.0?}): {}; reports {reports:?}",
                if alive_after { "alive" } else { "gone" }
            ),
        );
        if alive_after {
            common::kill9(daemon);
        }
        let (_, _, pgrp) = stat.expect("the daemon was running");
        assert_ne!(pgrp, leader, "the daemon must have left the server's group");
        assert!(
            !alive_after,
            "the daemon {daemon} outlived its server's stop"
        );
        let _ = std::fs::remove_dir_all(dir);
    });
}

/// The client's process SIGKILLed (no destructor runs): the server (which
/// ignores EOF and SIGTERM), a member of its group and its setsid daemon
/// all die, without the group watchdog. Before the reaper, the server died
/// (PR_SET_PDEATHSIG) and the other two lived on under init.
#[test]
fn a_sigkilled_client_takes_its_server_s_whole_tree_with_it() {
    if let Ok(dir) = std::env::var(TREE_ROLE) {
        return tree_role(std::path::Path::new(&dir));
    }
    let _g = serial();
    let dir = common::tempdir("sigkilled-tree");
    let mut role = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_sigkilled_client_takes_its_server_s_whole_tree_with_it",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(TREE_ROLE, &dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (pids, daemon) = (dir.join("pids"), dir.join("daemon"));
    let t = Instant::now();
    while (common::read_pids(&pids).len() < 2 || common::read_pids(&daemon).len() < 2)
        && t.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut tree = common::read_pids(&pids);
    tree.push(
        *common::read_pids(&daemon)
            .last()
            .expect("the daemon started"),
    );
    assert_eq!(tree.len(), 3, "server, grandchild, daemon: {tree:?}");
    assert!(tree.iter().all(|p| common::alive(*p)), "{tree:?}");
    role.kill().unwrap(); // SIGKILL: no destructor, no escalation runs.
    role.wait().unwrap();
    let t = Instant::now();
    while tree.iter().any(|p| common::alive(*p)) && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let survivors: Vec<u32> = tree.iter().copied().filter(|p| common::alive(*p)).collect();
    figure(
        "client process SIGKILLed, no group watchdog: server, group member, setsid daemon",
        format!("{} of 3 alive {:.1?} later", survivors.len(), t.elapsed()),
    );
    for p in &survivors {
        common::kill9(*p);
    }
    assert!(
        survivors.is_empty(),
        "outlived the client: {survivors:?} of {tree:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

const TREE_ROLE: &str = "CONDUIT_TEST_ROLE_SIGKILLED_TREE";

fn tree_role(dir: &std::path::Path) {
    let (pids, daemon) = (dir.join("pids"), dir.join("daemon"));
    let cfg = common::config(&[
        "--ignore-eof",
        "--ignore-term",
        "--grandchild",
        "--pid-file",
        pids.to_str().unwrap(),
        "--daemon",
        daemon.to_str().unwrap(),
    ]);
    assert!(!cfg.get_group_watchdog());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = Client::start(cfg).await.unwrap();
        client.ready(Duration::from_secs(10)).await.unwrap();
        std::future::pending::<()>().await;
    });
}

/// The reaper is a process anyone of the same user can SIGKILL. Then the
/// server dies with it (PR_SET_PDEATHSIG), the client sees the exit, and a
/// stop still completes without signalling the dead server's number.
#[test]
fn a_reaper_killed_from_outside_takes_the_server_and_the_stop_completes() {
    run(async {
        let mut cfg = common::config(&[]);
        cfg = cfg.backoff(no_restart_during_test());
        let (client, mut events) = common::start_recording(cfg).await;
        let leader = common::ready_pid(&client).await;
        let (_, reaper, _) = common::proc_stat(leader).expect("the server runs");
        assert_ne!(
            reaper,
            std::process::id(),
            "the server's parent is its reaper"
        );
        common::kill9(reaper);
        let closed = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(e) = events.recv().await {
                if let LifecycleEvent::Closed {
                    pid: Some(p),
                    reason,
                    ..
                } = e
                {
                    if p == leader {
                        return reason;
                    }
                }
            }
            panic!("events ended");
        })
        .await
        .expect("the server's death was seen");
        let t = Instant::now();
        let reports = tokio::time::timeout(Duration::from_secs(10), client.stop().wait())
            .await
            .expect("the stop completes");
        figure(
            "reaper SIGKILLed from outside",
            format!(
                "closed: {closed}; stop().wait() {:.0?}; reports {reports:?}",
                t.elapsed()
            ),
        );
        assert!(!common::alive(leader));
    });
}
