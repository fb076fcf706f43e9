//! Clients as members of a user's own supervision tree, and lifecycle events.

mod common;

use std::time::Duration;

use conduit_mcp::{forward_events, LifecycleEvent};
use conduit_mcp::{ChildExit, Client, CloseReason, StartOptions, StderrMode};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use serde_json::json;
use tokio::sync::mpsc;

/// A user's application root: starts two MCP clients under itself.
struct AppRoot;

impl Actor for AppRoot {
    type Msg = ();
    type State = Vec<Client>;
    type Arguments = mpsc::UnboundedSender<Vec<u32>>;

    async fn pre_start(
        &self,
        myself: ActorRef<()>,
        pids: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut clients = Vec::new();
        for name in ["files", "time"] {
            let c = Client::start_with(
                common::config(&["--ignore-eof"]).name(name),
                StartOptions {
                    supervisor: Some(myself.get_cell()),
                    ..Default::default()
                },
            )
            .await?;
            clients.push(c);
        }
        let mut ids = Vec::new();
        for c in &clients {
            ids.push(c.ready(Duration::from_secs(10)).await?.pid.unwrap_or(0));
        }
        let _ = pids.send(ids);
        Ok(clients)
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<()>,
        _evt: SupervisionEvent,
        _st: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_users_root_ends_every_server() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (root, handle) = Actor::spawn(None, AppRoot, tx).await.unwrap();
    let pids = rx.recv().await.unwrap();
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|p| common::alive(*p)));
    // Names are per client, not global: two trees may reuse them.
    assert_eq!(root.get_children().len(), 2);
    root.stop(None);
    handle.await.unwrap();
    // Servers ignore EOF: they get SIGTERM after the 500 ms stdin grace.
    for p in pids {
        common::eventually(Duration::from_secs(5), || !common::alive(p))
            .await
            .unwrap_or_else(|| panic!("server {p} survived its tree"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_events_cover_a_crash_and_restart() {
    let (tx, mut events) = mpsc::unbounded_channel();
    let client = Client::start_with(
        common::config(&["--stderr-mib", "1"])
            .name("crashy")
            .stderr(StderrMode::Log),
        StartOptions {
            events: Some(tx),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let _ = client
        .request("fixture/exit", Some(json!({"code": 9})))
        .await;
    client.request("echo", None).await.unwrap();
    client.stop().wait().await;
    let mut kinds = Vec::new();
    let mut stderr_lines = 0;
    while let Some(e) = events.recv().await {
        let last = e.is_final();
        match &e {
            LifecycleEvent::Stderr { name, .. } => {
                assert_eq!(name, "crashy");
                stderr_lines += 1;
                continue;
            }
            LifecycleEvent::Closed { reason, exit, .. } if kinds.len() == 2 => {
                assert_eq!(*reason, CloseReason::Exited(ChildExit::Code(9)));
                assert_eq!(*exit, Some(ChildExit::Code(9)));
            }
            _ => {}
        }
        kinds.push(
            format!("{e:?}")
                .split([' ', '{'])
                .next()
                .unwrap()
                .to_owned(),
        );
        if last {
            break;
        }
    }
    assert_eq!(
        kinds,
        [
            "Spawned",
            "Ready",
            "Closed",
            "Restarting",
            "Spawned",
            "Ready",
            "Closed",
            "Stopped"
        ]
    );
    assert!(stderr_lines > 0, "no stderr line captured");
}

#[derive(Debug)]
enum Watcher {
    Mcp(LifecycleEvent),
}

#[cfg(feature = "cluster")]
impl ractor::Message for Watcher {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_can_be_forwarded_to_an_actor() {
    struct W;
    impl Actor for W {
        type Msg = Watcher;
        type State = mpsc::UnboundedSender<String>;
        type Arguments = mpsc::UnboundedSender<String>;
        async fn pre_start(
            &self,
            _m: ActorRef<Watcher>,
            a: Self::Arguments,
        ) -> Result<Self::State, ActorProcessingErr> {
            Ok(a)
        }
        async fn handle(
            &self,
            _m: ActorRef<Watcher>,
            msg: Watcher,
            st: &mut Self::State,
        ) -> Result<(), ActorProcessingErr> {
            let Watcher::Mcp(e) = msg;
            let _ = st.send(format!("{e:?}"));
            Ok(())
        }
    }
    let (tx, mut seen) = mpsc::unbounded_channel();
    let (w, _h) = Actor::spawn(None, W, tx).await.unwrap();
    let client = Client::start(common::config(&[])).await.unwrap();
    forward_events(client.events(), w.clone(), Watcher::Mcp);
    client.ready(Duration::from_secs(10)).await.unwrap();
    client.stop().wait().await;
    let mut all = Vec::new();
    while let Some(s) = seen.recv().await {
        let done = s.starts_with("Stopped");
        all.push(s);
        if done {
            break;
        }
    }
    assert!(all.iter().any(|s| s.starts_with("Closed")), "{all:?}");
    w.stop(None);
}
