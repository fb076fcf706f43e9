//! What the cluster tests share: nodes in child processes (this test
//! binary run again in a role chosen by an environment variable), talking
//! to them over stdin/stdout, their memory, and a spy actor that records
//! what other nodes send it.
#![allow(dead_code)]

pub mod roles;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conduit_mcp::cluster::{NodeConfig, SinkMsg};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use ractor_cluster::NodeServerMessage;
use tokio::sync::mpsc;

/// The environment variable that makes this binary a node in a role.
const ROLE: &str = "CONDUIT_CLUSTER_TEST_ROLE";
pub const COOKIE: &str = "conduit-mcp-test-cookie";
pub const LOOPBACK: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

pub fn free_port() -> u16 {
    std::net::TcpListener::bind((LOOPBACK, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// The role this process plays, if it is a child node.
pub fn role() -> Option<Vec<String>> {
    let spec = std::env::var(ROLE).ok()?;
    Some(spec.split(' ').map(str::to_owned).collect())
}

/// A node server named `name@localhost` on `port` (loopback), started.
pub async fn node(name: &str, port: u16) -> ActorRef<NodeServerMessage> {
    let server = NodeConfig::new(name, "localhost", COOKIE)
        .port(port)
        .build()
        .expect("node config");
    let (node, _) = Actor::spawn(None, server, ()).await.expect("node server");
    node
}

/// A node in a child process: its stdout lines, its stdin; killed and
/// reaped however the test ends.
pub struct Node {
    pub child: std::process::Child,
    lines: mpsc::UnboundedReceiver<String>,
    stdin: std::process::ChildStdin,
}

impl Node {
    /// Runs `test` of this binary as a node in `role` (space-separated
    /// words).
    pub fn spawn(test: &str, role: &str) -> Node {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture", "--test-threads", "1"])
            .env(ROLE, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Node {
            child,
            lines,
            stdin,
        }
    }

    /// The rest of the next line that holds `prefix`, after it (other
    /// lines are skipped); panics after `limit`.
    pub async fn expect(&mut self, prefix: &str, limit: Duration) -> String {
        let wait = async {
            loop {
                let line = self.lines.recv().await.expect("the node's stdout ended");
                // The test harness's own "test NAME ... " may begin the line.
                if let Some((_, rest)) = line.split_once(prefix) {
                    return rest.trim().to_owned();
                }
            }
        };
        tokio::time::timeout(limit, wait)
            .await
            .unwrap_or_else(|_| panic!("the node printed no `{prefix}` within {limit:?}"))
    }

    /// Sends one command line.
    pub fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("the node's stdin");
        self.stdin.flush().expect("the node's stdin");
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The resident set size of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Waits until process `pid`'s RSS has not grown for `quiet` (at most
/// `limit`), and returns it (KiB).
pub async fn settled_rss_kib(pid: u32, quiet: Duration, limit: Duration) -> u64 {
    let start = std::time::Instant::now();
    let mut last = rss_kib(pid);
    let mut since = std::time::Instant::now();
    while start.elapsed() < limit {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = rss_kib(pid);
        if now > last + 256 {
            last = now;
            since = std::time::Instant::now();
        } else if since.elapsed() >= quiet {
            break;
        }
    }
    rss_kib(pid).max(last)
}

/// What a spy received, as the raw payloads.
pub type Seen = Arc<Mutex<Vec<(&'static str, Vec<u8>)>>>;

/// An actor that takes sink messages (progress, notifications) and records
/// them: a node that puts itself where only a sink should be.
pub struct Spy;

impl Actor for Spy {
    type Msg = SinkMsg;
    type State = Seen;
    type Arguments = Seen;

    async fn pre_start(
        &self,
        _: ActorRef<SinkMsg>,
        seen: Seen,
    ) -> Result<Seen, ActorProcessingErr> {
        Ok(seen)
    }

    async fn handle(
        &self,
        _: ActorRef<SinkMsg>,
        msg: SinkMsg,
        seen: &mut Seen,
    ) -> Result<(), ActorProcessingErr> {
        let entry = match msg {
            SinkMsg::Ticket(b) => ("ticket", b),
            SinkMsg::Progress(b) => ("progress", b),
            SinkMsg::Notification(b) => ("notification", b),
        };
        seen.lock().unwrap().push(entry);
        Ok(())
    }
}

/// A spy, started, joined to `group`.
pub async fn spy(group: &str) -> (ActorRef<SinkMsg>, Seen) {
    let seen = Seen::default();
    let (spy, _) = Actor::spawn(None, Spy, seen.clone()).await.unwrap();
    ractor::pg::join(group.to_owned(), vec![spy.get_cell()]);
    (spy, seen)
}

/// The payloads of kind `kind` a spy has seen, as JSON.
pub fn seen_json(seen: &Seen, kind: &str) -> Vec<serde_json::Value> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k == kind)
        .filter_map(|(_, b)| serde_json::from_slice(b).ok())
        .collect()
}

/// A test certificate authority and certificates signed by it, made with
/// the `openssl` command in `dir`: `<leaf>.pem`/`<leaf>.key` for each of
/// `leaves` (subject alternative name `localhost`); returns the authority's
/// certificate (PEM), or None if `openssl` is missing.
pub fn make_certificates(dir: &std::path::Path, leaves: &[&str]) -> Option<Vec<u8>> {
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .ok()?;
    let mut made = openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=conduit test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]);
    for leaf in leaves {
        let (key, csr, cert) = (
            format!("{leaf}.key"),
            format!("{leaf}.csr"),
            format!("{leaf}.pem"),
        );
        let subject = format!("/CN={leaf}");
        made =
            made && openssl(&[
                "req", "-newkey", "rsa:2048", "-nodes", "-subj", &subject, "-keyout", &key, "-out",
                &csr,
            ]) && openssl(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "1",
                "-extfile",
                "leaf.ext",
                "-out",
                &cert,
            ]);
    }
    made.then(|| std::fs::read(dir.join("ca.pem")).ok())
        .flatten()
}

/// A message that never leaves this process.
pub struct Nop;
impl ractor::Message for Nop {}

/// An actor that does nothing, and is not shown to other nodes.
pub struct Filler;

impl Actor for Filler {
    type Msg = Nop;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<Nop>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

/// Spawns and stops `n` actors: later actors get larger pids.
pub async fn spend_pids(n: usize) {
    for _ in 0..n {
        let (a, h) = Actor::spawn(None, Filler, ()).await.unwrap();
        a.stop(None);
        let _ = h.await;
    }
}

/// What a node server reports about its sessions.
pub struct Events(mpsc::UnboundedSender<(&'static str, String)>);

impl ractor_cluster::NodeEventSubscription for Events {
    fn node_session_opened(&self, s: ractor_cluster::node::NodeServerSessionInformation) {
        let _ = self.0.send(("opened", s.peer_addr));
    }
    fn node_session_disconnected(&self, s: ractor_cluster::node::NodeServerSessionInformation) {
        let _ = self.0.send(("disconnected", s.peer_addr));
    }
    fn node_session_authenticated(&self, s: ractor_cluster::node::NodeServerSessionInformation) {
        let _ = self.0.send(("authenticated", s.peer_addr));
    }
}

/// The session events of `node` from now on.
pub fn session_events(
    node: &ActorRef<NodeServerMessage>,
) -> mpsc::UnboundedReceiver<(&'static str, String)> {
    let (tx, rx) = mpsc::unbounded_channel();
    node.cast(NodeServerMessage::SubscribeToEvents {
        id: "test".into(),
        subscription: Box::new(Events(tx)),
    })
    .unwrap();
    rx
}

/// The first session event that ends the question: `authenticated` or
/// `disconnected`.
pub async fn session_outcome(
    events: &mut mpsc::UnboundedReceiver<(&'static str, String)>,
    limit: Duration,
) -> &'static str {
    let wait = async {
        loop {
            match events.recv().await {
                Some(("opened", _)) => continue,
                Some((what, _)) => return what,
                None => return "gone",
            }
        }
    };
    tokio::time::timeout(limit, wait).await.unwrap_or("nothing")
}
