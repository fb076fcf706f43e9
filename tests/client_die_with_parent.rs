//! `die_with_parent`: when the client's process is SIGKILLed, its server
//! (which ignores EOF and SIGTERM) and the server's group die too.
//!
//! The test re-runs this test binary as the "client process" (selected by an
//! environment variable), kills it with SIGKILL, and checks the server.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use conduit_mcp::Client;

const ROLE: &str = "CONDUIT_TEST_ROLE_CLIENT_PIDFILE";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_dies_with_a_sigkilled_client_process() {
    if let Ok(pidfile) = std::env::var(ROLE) {
        // Child role: run a client whose server ignores EOF and SIGTERM and
        // has a grandchild, then wait to be killed.
        let mut cfg = common::config(&[
            "--ignore-eof",
            "--ignore-term",
            "--grandchild",
            "--pid-file",
            &pidfile,
        ]);
        cfg = cfg.group_watchdog(true);
        let client = Client::start(cfg).await.unwrap();
        client.ready(Duration::from_secs(10)).await.unwrap();
        println!("READY");
        std::future::pending::<()>().await;
        return;
    }
    let dir = common::tempdir("pdeathsig");
    let pidfile = dir.join("pids");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "server_dies_with_a_sigkilled_client_process",
            "--nocapture",
        ])
        .env(ROLE, &pidfile)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    common::eventually(Duration::from_secs(20), || {
        common::read_pids(&pidfile).len() == 2
    })
    .await
    .expect("server and grandchild started");
    let pids = common::read_pids(&pidfile);
    assert!(pids.iter().all(|p| common::alive(*p)));
    child.kill().unwrap(); // SIGKILL: no destructor, no escalation runs.
    child.wait().unwrap();
    let server_gone = common::eventually(Duration::from_secs(5), || !common::alive(pids[0])).await;
    assert!(
        server_gone.is_some(),
        "server {} outlived its client",
        pids[0]
    );
    println!("server died {server_gone:?} after the client was SIGKILLed");
    // The grandchild (a launcher's real server, say) is ended by the group
    // watchdog (`group_watchdog`) when our process dies.
    let grandchild_gone =
        common::eventually(Duration::from_secs(5), || !common::alive(pids[1])).await;
    assert!(
        grandchild_gone.is_some(),
        "grandchild {} outlived the client",
        pids[1]
    );
    println!("grandchild died {grandchild_gone:?} after the client was SIGKILLed");
}
