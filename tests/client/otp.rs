//! The client as an OTP child: a give-up reaches the parent as a failure
//! carrying the reason, and `ClientGroup` restarts clients by strategy,
//! intensity and registered name.

use crate::common;

use std::time::Duration;

use conduit_mcp::client::{
    ChildSpec, ClientGroup, ClientRegistry, ClientSpec, GroupError, GroupSpec, Restart, Strategy,
};
use conduit_mcp::{Client, ClientConfig, Error, LifecycleEvent, StartOptions};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use serde_json::json;
use tokio::sync::mpsc;

/// A bound for what must happen; never reached when the code is right.
const LIMIT: Duration = Duration::from_secs(20);

/// How a child of [`Parent`] ended.
#[derive(Debug)]
enum Exit {
    /// `ActorFailed`, with its error.
    Failed(ActorProcessingErr),
    /// `ActorTerminated`.
    Terminated,
}

/// A user's actor that reports how its children end.
struct Parent;

impl Actor for Parent {
    type Msg = ();
    type State = mpsc::UnboundedSender<Exit>;
    type Arguments = mpsc::UnboundedSender<Exit>;

    async fn pre_start(
        &self,
        _myself: ActorRef<()>,
        exits: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(exits)
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<()>,
        evt: SupervisionEvent,
        exits: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let exit = match evt {
            SupervisionEvent::ActorFailed(_, e) => Exit::Failed(e),
            SupervisionEvent::ActorTerminated(..) => Exit::Terminated,
            _ => return Ok(()),
        };
        let _ = exits.send(exit);
        Ok(())
    }
}

/// A client that gives up reaches its parent as `ActorFailed` carrying
/// `Error::GaveUp` (so a supervisor can tell it from a stop), and a client
/// that was stopped as `ActorTerminated`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_give_up_reaches_the_parent_as_a_failure_and_a_stop_as_a_stop() {
    let (tx, mut exits) = mpsc::unbounded_channel();
    let (parent, handle) = Actor::spawn(None, Parent, tx).await.unwrap();
    let start = |name: &str| {
        Client::start_with(
            common::config(&[]).name(name).max_reconnects(0),
            StartOptions::new().supervisor(parent.get_cell()),
        )
    };
    let crashing = start("crashing").await.unwrap();
    crashing.ready(Duration::from_secs(10)).await.unwrap();
    let _ = crashing
        .request("fixture/exit", Some(json!({"code": 7})))
        .await;
    match exits.recv().await.unwrap() {
        Exit::Failed(e) => match e.downcast_ref::<Error>() {
            Some(Error::GaveUp { attempts, last }) => {
                assert_eq!(*attempts, 1);
                assert!(last.contains('7'), "the reason names the exit: {last}");
            }
            _ => panic!("a give-up must carry Error::GaveUp: {e}"),
        },
        other => panic!("a give-up must be a failure: {other:?}"),
    }
    let stopped = start("stopped").await.unwrap();
    stopped.ready(Duration::from_secs(10)).await.unwrap();
    stopped.stop().wait().await;
    match exits.recv().await.unwrap() {
        Exit::Terminated => {}
        other => panic!("a stop must be a normal termination: {other:?}"),
    }
    parent.stop(None);
    handle.await.unwrap();
}

/// A fixture client that leaves every restart to its parent: the first
/// death of its server is a give-up.
fn crash_only(name: &str, args: &[&str]) -> ClientConfig {
    common::config(args).name(name).max_reconnects(0)
}

/// A registered spec of [`crash_only`].
fn spec(names: &ClientRegistry, name: &str, args: &[&str]) -> ClientSpec {
    ClientSpec::new(crash_only(name, args))
        .register(names)
        .expect("a fresh name")
}

/// The client registered as `name` once it is ready with a server other
/// than `old`: waits on the registry and on each client's status.
async fn replaced(names: &ClientRegistry, name: &str, old: u32) -> (Client, u32) {
    let next = async {
        loop {
            let c = names.wait_for(name, LIMIT).await?;
            if let Ok(s) = c.ready(LIMIT).await {
                let pid = s.pid.expect("a stdio server has a pid");
                if pid != old {
                    return Some((c, pid));
                }
            }
            // Still the old client: wait for its end.
            let mut status = c.watch_status();
            let _ = status.wait_for(|s| s.is_final()).await;
        }
    };
    match tokio::time::timeout(LIMIT, next).await {
        Ok(Some(found)) => found,
        _ => panic!("`{name}` was not restarted with a new server"),
    }
}

/// The pid of the ready client registered as `name`.
async fn ready_pid(names: &ClientRegistry, name: &str) -> u32 {
    let c = names.wait_for(name, LIMIT).await.expect("registered");
    c.ready(LIMIT).await.unwrap().pid.unwrap()
}

fn sigkill(pid: u32) {
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
}

/// Asserts that `c` answers a call.
async fn answers(c: &Client) {
    let v = c.request("echo", Some(json!({"n": 1}))).await.unwrap();
    assert_eq!(v["n"], 1);
}

/// `one_for_all`: killing one server's process restarts both clients,
/// each with a new server, and both answer after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_for_all_restarts_both_clients_when_one_server_is_killed() {
    let names = ClientRegistry::new();
    let group = ClientGroup::start(
        GroupSpec::new("pair", Strategy::OneForAll)
            .child(ChildSpec::client(spec(&names, "a", &[])))
            .child(ChildSpec::client(spec(&names, "b", &[]))),
        None,
    )
    .await
    .unwrap();
    let (a0, b0) = (ready_pid(&names, "a").await, ready_pid(&names, "b").await);
    let old_b = names.whereis("b").unwrap();
    sigkill(a0);
    let (a, a1) = replaced(&names, "a", a0).await;
    let (b, b1) = replaced(&names, "b", b0).await;
    assert!(a1 != a0 && b1 != b0);
    answers(&a).await;
    answers(&b).await;
    // The sibling was stopped by the group, and its server shut down.
    assert_eq!(old_b.status(), conduit_mcp::Status::Stopped);
    let reports = old_b.stop().wait().await;
    assert_eq!(reports.iter().map(|r| r.pid).collect::<Vec<_>>(), [b0]);
    assert!(!common::alive(b0));
    group.stop();
    group.actor().wait(Some(LIMIT)).await.unwrap();
    assert!(names.whereis("a").is_none() && names.whereis("b").is_none());
    // The group's stop ended the new servers too.
    for (c, pid) in [(a, a1), (b, b1)] {
        let reports = c.stop().wait().await;
        assert_eq!(reports.iter().map(|r| r.pid).collect::<Vec<_>>(), [pid]);
        assert!(!common::alive(pid));
    }
}

/// `rest_for_one`: the client whose server died and the ones started after
/// it are restarted; the ones before it keep their server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_for_one_restarts_the_client_and_those_started_after_it() {
    let names = ClientRegistry::new();
    let group = ClientGroup::start(
        GroupSpec::new("chain", Strategy::RestForOne)
            .child(ChildSpec::client(spec(&names, "first", &[])))
            .child(ChildSpec::client(spec(&names, "middle", &[])))
            .child(ChildSpec::client(spec(&names, "last", &[]))),
        None,
    )
    .await
    .unwrap();
    let first = ready_pid(&names, "first").await;
    let middle = ready_pid(&names, "middle").await;
    let last = ready_pid(&names, "last").await;
    sigkill(middle);
    let (m, _) = replaced(&names, "middle", middle).await;
    let (l, _) = replaced(&names, "last", last).await;
    answers(&m).await;
    answers(&l).await;
    let f = names.whereis("first").unwrap();
    assert_eq!(
        f.pid(),
        Some(first),
        "the client started before kept its server"
    );
    answers(&f).await;
    group.stop();
    group.actor().wait(Some(LIMIT)).await.unwrap();
}

/// A `:permanent` client that gave up is restarted by its group; a holder
/// of its name finds the new client, while the old handle reports the
/// give-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_client_that_gave_up_is_restarted_and_its_name_resolves_to_the_new_one() {
    let names = ClientRegistry::new();
    let (tx, mut events) = mpsc::unbounded_channel();
    let files = spec(&names, "files", &[]).events(tx);
    let _group = ClientGroup::start(
        GroupSpec::new("app", Strategy::OneForOne).child(ChildSpec::client(files)),
        None,
    )
    .await
    .unwrap();
    // A holder: the registry and the name, nothing else.
    let holder = names.clone();
    let old = holder.whereis("files").unwrap();
    let pid = old.ready(LIMIT).await.unwrap().pid.unwrap();
    let _ = old.request("fixture/exit", Some(json!({"code": 4}))).await;
    let (new, new_pid) = replaced(&holder, "files", pid).await;
    assert_ne!(new_pid, pid);
    answers(&new).await;
    assert!(
        matches!(old.request("echo", None).await, Err(Error::GaveUp { .. })),
        "the old handle is final"
    );
    // One stream of events across both clients: the give-up, then the
    // new client's spawn.
    let mut seen = Vec::new();
    while let Some(e) = events.recv().await {
        let ready_again =
            matches!(&e, LifecycleEvent::Ready { session, .. } if session.pid == Some(new_pid));
        seen.push(
            format!("{e:?}")
                .split([' ', '{'])
                .next()
                .unwrap()
                .to_owned(),
        );
        if ready_again {
            break;
        }
    }
    assert_eq!(
        seen,
        ["Spawned", "Ready", "Closed", "GaveUp", "Spawned", "Ready"]
    );
}

/// Restart types: after a stop, a permanent client comes back, a
/// transient or temporary one does not; after a give-up, a transient one
/// comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_types_decide_which_clients_come_back() {
    let names = ClientRegistry::new();
    let child = |name: &str, restart| ChildSpec::client(spec(&names, name, &[])).restart(restart);
    let _group = ClientGroup::start(
        GroupSpec::new("kinds", Strategy::OneForOne)
            .max_restarts(10)
            .child(child("perm", Restart::Permanent))
            .child(child("trans", Restart::Transient))
            .child(child("temp", Restart::Temporary))
            .child(child("trans_crash", Restart::Transient)),
        None,
    )
    .await
    .unwrap();
    for name in ["trans", "temp"] {
        let c = names.whereis(name).unwrap();
        c.ready(LIMIT).await.unwrap();
        c.stop().wait().await;
        // Its exit has reached the group once its actor is gone.
        c.supervisor().wait(Some(LIMIT)).await.unwrap();
    }
    let crashing = ready_pid(&names, "trans_crash").await;
    sigkill(crashing);
    replaced(&names, "trans_crash", crashing).await;
    let perm = names.whereis("perm").unwrap();
    let pid = perm.ready(LIMIT).await.unwrap().pid.unwrap();
    drop(perm.stop());
    // The group handles exits in order: once `perm` is back, the stops
    // before it were handled.
    replaced(&names, "perm", pid).await;
    assert!(
        names.whereis("trans").is_none(),
        "a stopped transient client is not restarted"
    );
    assert!(
        names.whereis("temp").is_none(),
        "a temporary client is never restarted"
    );
}

/// A supervisor of the user's own: restarts its client from the spec when
/// the client's actor fails.
struct OwnSupervisor;

impl Actor for OwnSupervisor {
    type Msg = ();
    type State = ClientSpec;
    type Arguments = ClientSpec;

    async fn pre_start(
        &self,
        myself: ActorRef<()>,
        spec: ClientSpec,
    ) -> Result<ClientSpec, ActorProcessingErr> {
        spec.start(Some(myself.get_cell())).await?;
        Ok(spec)
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<()>,
        evt: SupervisionEvent,
        spec: &mut ClientSpec,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorFailed(..) = evt {
            spec.start(Some(myself.get_cell())).await?;
        }
        Ok(())
    }
}

/// Any supervisor can restart a client from its spec: a hand-written one
/// here, and the registered name follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervisor_of_ones_own_restarts_a_client_from_its_spec() {
    let names = ClientRegistry::new();
    let (sup, handle) = Actor::spawn(None, OwnSupervisor, spec(&names, "own", &[]))
        .await
        .unwrap();
    let first = ready_pid(&names, "own").await;
    sigkill(first);
    let (own, _) = replaced(&names, "own", first).await;
    answers(&own).await;
    sup.stop(None);
    handle.await.unwrap();
    // The spec went with its supervisor: the name is free, its client ended.
    assert!(names.names().is_empty());
    own.watch_status().wait_for(|s| s.is_final()).await.unwrap();
}

/// How the children of [`Root`] failed.
struct Root;

impl Actor for Root {
    type Msg = ();
    type State = mpsc::UnboundedSender<Exit>;
    type Arguments = (GroupSpec, mpsc::UnboundedSender<Exit>);

    async fn pre_start(
        &self,
        myself: ActorRef<()>,
        (spec, exits): Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        ClientGroup::start(spec, Some(myself.get_cell())).await?;
        Ok(exits)
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<()>,
        evt: SupervisionEvent,
        exits: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        Parent.handle_supervisor_evt(myself, evt, exits).await
    }
}

/// A group past its restart intensity stops its children and fails; its
/// parent group counts that as a failure of a child and restarts it, and
/// past its own intensity fails too, up to the application's root.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_meltdown_escalates_to_the_parents_parent() {
    let names = ClientRegistry::new();
    let inner = GroupSpec::new("inner", Strategy::OneForOne)
        .max_restarts(0)
        .child(ChildSpec::client(spec(&names, "leaf", &[])));
    let outer = GroupSpec::new("outer", Strategy::OneForOne)
        .max_restarts(1)
        .restart_period(Duration::from_secs(3600))
        .child(ChildSpec::group(inner));
    let (tx, mut exits) = mpsc::unbounded_channel();
    let (root, handle) = Actor::spawn(None, Root, (outer, tx)).await.unwrap();
    // The leaf's server dies: the inner group melts down at once (no
    // restart allowed), the outer group restarts it with a new leaf.
    let first = ready_pid(&names, "leaf").await;
    sigkill(first);
    let (leaf, second) = replaced(&names, "leaf", first).await;
    answers(&leaf).await;
    // Again: the outer group's second restart is one too many.
    sigkill(second);
    let exit = tokio::time::timeout(LIMIT, exits.recv())
        .await
        .unwrap()
        .unwrap();
    let Exit::Failed(e) = exit else {
        panic!("the root must see a failure: {exit:?}");
    };
    match e.downcast_ref::<GroupError>() {
        Some(GroupError::Meltdown {
            group,
            child,
            reason,
            max_restarts,
            ..
        }) => {
            assert_eq!(
                (group.as_str(), child.as_str(), *max_restarts),
                ("outer", "inner", 1)
            );
            // The inner group's meltdown, with the leaf's give-up in it.
            assert!(
                reason.contains("group `inner`") && reason.contains("child `leaf`"),
                "{reason}"
            );
            assert!(
                reason.contains("gave up"),
                "the reason goes up with it: {reason}"
            );
        }
        _ => panic!("the root must see the outer group's meltdown: {e}"),
    }
    assert!(names.whereis("leaf").is_none(), "no client is left running");
    assert!(leaf.status().is_final());
    root.stop(None);
    handle.await.unwrap();
}
