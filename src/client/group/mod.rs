//! ClientGroup: an OTP-style supervisor of clients (and of any actor):
//! `one_for_one`, `one_for_all` and `rest_for_one`, restart types, and a
//! restart intensity whose excess fails the group, so that its own parent
//! decides, as an OTP supervisor escalates.
//!
//! ```text
//! parent (any actor, optional)
//!  └─ ClientGroup            this actor: starts children in order, restarts them
//!      ├─ ClientSupervisor   a client (ChildSpec::client)
//!      ├─ ClientGroup        a group (ChildSpec::group)
//!      └─ any actor          (ChildSpec::actor)
//! ```
//!
//! Children are linked under the group. When one ends, its [`Restart`] type
//! says whether it is restarted; if so, the restart counts against the
//! intensity (more than `max_restarts` within `restart_period`: the group
//! stops every child, last started first, and fails with
//! [`GroupError::Meltdown`]); then the strategy says which siblings are
//! stopped (last started first) and started again with it (in order).
//! A child is stopped by unlinking it and stopping it, killed after its
//! shutdown time: so the group never sees the exits it caused, and a
//! client is final before its replacement starts.

mod child;

use std::collections::HashSet;
use std::time::Duration;

use ractor::{
    Actor, ActorCell, ActorProcessingErr, ActorRef, RactorErr, SpawnErr, SupervisionEvent,
};
use tokio::time::Instant;
use tracing::{error, info, warn};

pub use child::{ChildSpec, Restart, DEFAULT_SHUTDOWN};

use super::restarts::{RestartIntensity, Verdict};

/// Which children a [`ClientGroup`] restarts when one of them is restarted
/// (OTP's strategy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Strategy {
    /// That child alone.
    OneForOne,
    /// Every child: the others are stopped, then all are started again, in
    /// order.
    OneForAll,
    /// That child and the children started after it.
    RestForOne,
}

/// A group's strategy, restart intensity and children, in start order
/// (OTP's supervisor flags and child specs).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use conduit_mcp::client::{ChildSpec, ClientSpec, GroupSpec, Strategy};
/// use conduit_mcp::ClientConfig;
///
/// let spec = GroupSpec::new("tools", Strategy::OneForAll)
///     .max_restarts(3)
///     .restart_period(Duration::from_secs(5))
///     .child(ChildSpec::client(ClientSpec::new(ClientConfig::new("uvx").name("time"))));
/// assert_eq!(spec.name(), "tools");
/// ```
#[derive(Debug, Clone)]
pub struct GroupSpec {
    name: String,
    strategy: Strategy,
    max_restarts: u32,
    restart_period: Duration,
    children: Vec<ChildSpec>,
}

impl GroupSpec {
    /// A group named `name` (in logs, errors, and as its id in a parent
    /// group) with `strategy`, no children, and Elixir's default intensity:
    /// at most 3 restarts within 5 s.
    pub fn new(name: impl Into<String>, strategy: Strategy) -> Self {
        Self {
            name: name.into(),
            strategy,
            max_restarts: 3,
            restart_period: Duration::from_secs(5),
            children: Vec::new(),
        }
    }

    /// Sets the restarts allowed within the restart period (default 3;
    /// OTP's `intensity`, Elixir's `max_restarts`). One more and the group
    /// fails.
    pub fn max_restarts(mut self, n: u32) -> Self {
        self.max_restarts = n;
        self
    }

    /// Sets the restart period (default 5 s; OTP's `period`, Elixir's
    /// `max_seconds`). It is counted while the children run: the time a
    /// restart itself takes is not part of it.
    pub fn restart_period(mut self, period: Duration) -> Self {
        self.restart_period = period;
        self
    }

    /// Adds a child, started after the ones added before.
    pub fn child(mut self, child: ChildSpec) -> Self {
        self.children.push(child);
        self
    }

    /// The group's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Why a [`ClientGroup`] could not start, or failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// Two children have the same id.
    #[error("group `{group}`: two children have the id `{child}`")]
    DuplicateChild {
        /// The group.
        group: String,
        /// The id.
        child: String,
    },
    /// A child could not be started when the group started (the children
    /// started before it were stopped again).
    #[error("group `{group}`: child `{child}` could not start: {reason}")]
    ChildStart {
        /// The group.
        group: String,
        /// The child's id.
        child: String,
        /// Its start's error.
        reason: String,
    },
    /// More than `max_restarts` restarts within `restart_period`: every
    /// child was stopped and the group failed (OTP's
    /// `reached_max_restart_intensity`). What its parent's `ActorFailed`
    /// carries.
    #[error("group `{group}`: more than {max_restarts} restarts within {period:?}; the last: child `{child}` ended: {reason}")]
    Meltdown {
        /// The group.
        group: String,
        /// The child whose end was one restart too many.
        child: String,
        /// How it ended.
        reason: String,
        /// The group's `max_restarts`.
        max_restarts: u32,
        /// The group's `restart_period`.
        period: Duration,
    },
    /// The group's actor could not be spawned.
    #[error("group `{group}`: could not spawn its actor: {reason}")]
    Actor {
        /// The group.
        group: String,
        /// Why.
        reason: String,
    },
}

/// A handle to a running group. Dropping it leaves the group running (it
/// lives as its parent's child until it is stopped, fails, or its parent
/// ends).
#[derive(Debug, Clone)]
pub struct ClientGroup {
    actor: ActorRef<GroupMsg>,
}

impl ClientGroup {
    /// Starts the group's actor, linked under `parent` when given, and its
    /// children in order; returns once all of them have started.
    ///
    /// # Errors
    ///
    /// A duplicate child id, or a child that could not start (those
    /// started before it are stopped again).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::client::{ChildSpec, ClientGroup, ClientRegistry, ClientSpec, GroupSpec, Strategy};
    /// use conduit_mcp::ClientConfig;
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let names = ClientRegistry::new();
    /// let time = ClientSpec::new(ClientConfig::new("uvx").arg("mcp-server-time").name("time"))
    ///     .register(&names)?;
    /// let group = ClientGroup::start(
    ///     GroupSpec::new("tools", Strategy::OneForOne).child(ChildSpec::client(time)),
    ///     None,
    /// )
    /// .await?;
    /// let time = names.whereis("time").expect("started");
    /// # let _ = (time, group);
    /// # Ok(()) }
    /// ```
    pub async fn start(spec: GroupSpec, parent: Option<ActorCell>) -> Result<Self, GroupError> {
        let group = spec.name.clone();
        let spawned = match parent {
            Some(parent) => Actor::spawn_linked(None, GroupActor, spec, parent).await,
            None => Actor::spawn(None, GroupActor, spec).await,
        };
        match spawned {
            Ok((actor, _)) => Ok(Self { actor }),
            Err(SpawnErr::StartupFailed(e)) => match e.downcast::<GroupError>() {
                Ok(e) => Err(*e),
                Err(e) => Err(GroupError::Actor {
                    group,
                    reason: e.to_string(),
                }),
            },
            Err(e) => Err(GroupError::Actor {
                group,
                reason: e.to_string(),
            }),
        }
    }

    /// The group's actor: to link, monitor or wait on it.
    pub fn actor(&self) -> ActorCell {
        self.actor.get_cell()
    }

    /// Stops the group: its children are stopped, last started first,
    /// then the group ends normally (its parent sees `ActorTerminated`).
    /// Returns at once; wait with `actor().wait(..)`.
    pub fn stop(&self) {
        self.actor.stop(Some("group stopped".into()));
    }
}

/// Messages of a group's actor.
#[derive(Debug)]
pub(crate) enum GroupMsg {
    /// Child `index` could not be started again: restart it (counted).
    StartFailed { index: usize, reason: String },
}

local_messages!(GroupMsg);

struct GroupActor;

struct Child {
    spec: ChildSpec,
    /// The running actor, if any.
    cell: Option<ActorCell>,
    /// A temporary child that ended: never started again.
    removed: bool,
}

struct GroupState {
    name: String,
    strategy: Strategy,
    max_restarts: u32,
    period: Duration,
    children: Vec<Child>,
    intensity: RestartIntensity,
}

impl GroupState {
    fn index_of(&self, cell: &ActorCell) -> Option<usize> {
        let id = cell.get_id();
        self.children
            .iter()
            .position(|c| c.cell.as_ref().is_some_and(|c| c.get_id() == id))
    }

    /// Starts child `i` linked under the group.
    async fn start_child(&mut self, myself: &ActorCell, i: usize) -> Result<(), String> {
        let child = &mut self.children[i];
        let cell = child
            .spec
            .start(myself.clone())
            .await
            .map_err(|e| e.to_string())?;
        // A start function that spawned it unlinked: linked now.
        cell.link(myself.clone());
        info!(group = %self.name, child = %child.spec.id(), actor = %cell.get_id(), "child started");
        child.cell = Some(cell);
        Ok(())
    }

    /// Stops child `i` if it runs: unlinked first, so its exit is not
    /// reported to the group; killed if it takes longer than its shutdown
    /// time.
    async fn stop_child(&mut self, myself: &ActorCell, i: usize) {
        let child = &mut self.children[i];
        let Some(cell) = child.cell.take() else {
            return;
        };
        cell.unlink(myself.clone());
        let shutdown = child.spec.shutdown_time();
        if let Err(RactorErr::Timeout) = cell
            .stop_and_wait(Some("shutdown by its group".into()), Some(shutdown))
            .await
        {
            warn!(group = %self.name, child = %child.spec.id(), ?shutdown, "child did not stop in time: killed");
            let _ = cell.kill_and_wait(Some(shutdown)).await;
        }
        info!(group = %self.name, child = %child.spec.id(), "child stopped");
    }

    /// Stops every child, last started first.
    async fn stop_all(&mut self, myself: &ActorCell) {
        for i in (0..self.children.len()).rev() {
            self.stop_child(myself, i).await;
        }
    }

    /// Child `i` ended (or could not start again) with `reason`: counts
    /// the restart, then restarts the children the strategy names; fails
    /// the group past its intensity.
    async fn restart(
        &mut self,
        myself: &ActorRef<GroupMsg>,
        i: usize,
        reason: String,
    ) -> Result<(), ActorProcessingErr> {
        let cell = myself.get_cell();
        let id = self.children[i].spec.id().to_owned();
        if let Verdict::GiveUp { attempts } = self.intensity.died(Instant::now()) {
            error!(group = %self.name, child = %id, %reason, restarts = attempts, "restart intensity reached: the group fails");
            self.stop_all(&cell).await;
            return Err(Box::new(GroupError::Meltdown {
                group: self.name.clone(),
                child: id,
                reason,
                max_restarts: self.max_restarts,
                period: self.period,
            }));
        }
        let n = self.children.len();
        let set = match self.strategy {
            Strategy::OneForOne => i..i + 1,
            Strategy::OneForAll => 0..n,
            Strategy::RestForOne => i..n,
        };
        warn!(group = %self.name, child = %id, %reason, strategy = ?self.strategy, "restarting");
        for j in set.clone().rev() {
            self.stop_child(&cell, j).await;
        }
        for j in set {
            let child = &mut self.children[j];
            if child.spec.restart_type() == Restart::Temporary {
                // Stopped with its siblings, never started again (OTP).
                child.removed = true;
            }
            if child.removed {
                continue;
            }
            if let Err(reason) = self.start_child(&cell, j).await {
                warn!(group = %self.name, child = %self.children[j].spec.id(), %reason, "child could not start again");
                // Counted like an exit, after whatever the mailbox holds.
                myself.cast(GroupMsg::StartFailed { index: j, reason })?;
                return Ok(());
            }
        }
        self.intensity.ready(Instant::now());
        Ok(())
    }
}

impl Actor for GroupActor {
    type Msg = GroupMsg;
    type State = GroupState;
    type Arguments = GroupSpec;

    async fn pre_start(
        &self,
        myself: ActorRef<GroupMsg>,
        spec: GroupSpec,
    ) -> Result<GroupState, ActorProcessingErr> {
        let mut ids = HashSet::new();
        if let Some(dup) = spec.children.iter().find(|c| !ids.insert(c.id())) {
            return Err(Box::new(GroupError::DuplicateChild {
                group: spec.name.clone(),
                child: dup.id().to_owned(),
            }));
        }
        let mut st = GroupState {
            intensity: RestartIntensity::new(spec.max_restarts, spec.restart_period),
            name: spec.name,
            strategy: spec.strategy,
            max_restarts: spec.max_restarts,
            period: spec.restart_period,
            children: spec
                .children
                .into_iter()
                .map(|spec| Child {
                    spec,
                    cell: None,
                    removed: false,
                })
                .collect(),
        };
        let cell = myself.get_cell();
        for i in 0..st.children.len() {
            if let Err(reason) = st.start_child(&cell, i).await {
                st.stop_all(&cell).await;
                return Err(Box::new(GroupError::ChildStart {
                    group: st.name.clone(),
                    child: st.children[i].spec.id().to_owned(),
                    reason,
                }));
            }
        }
        st.intensity.ready(Instant::now());
        info!(group = %st.name, children = st.children.len(), strategy = ?st.strategy, "group started");
        Ok(st)
    }

    async fn handle(
        &self,
        myself: ActorRef<GroupMsg>,
        msg: GroupMsg,
        st: &mut GroupState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            GroupMsg::StartFailed { index, reason } => st.restart(&myself, index, reason).await,
        }
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<GroupMsg>,
        evt: SupervisionEvent,
        st: &mut GroupState,
    ) -> Result<(), ActorProcessingErr> {
        // A failure, or a kill (ractor gives a killed actor's event no
        // state), is abnormal; any other stop is normal.
        let (cell, abnormal, reason) = match evt {
            SupervisionEvent::ActorFailed(cell, e) => (cell, true, e.to_string()),
            SupervisionEvent::ActorTerminated(cell, state, why) => (
                cell,
                state.is_none(),
                why.unwrap_or_else(|| "stopped".into()),
            ),
            _ => return Ok(()),
        };
        // Not a child that runs now: one the group stopped or replaced.
        let Some(i) = st.index_of(&cell) else {
            return Ok(());
        };
        let child = &mut st.children[i];
        child.cell = None;
        let restart = match child.spec.restart_type() {
            Restart::Permanent => true,
            Restart::Transient => abnormal,
            Restart::Temporary => false,
        };
        info!(group = %st.name, child = %child.spec.id(), abnormal, %reason, restart, "child ended");
        if !restart {
            child.removed = child.spec.restart_type() == Restart::Temporary;
            return Ok(());
        }
        st.restart(&myself, i, reason).await
    }

    async fn post_stop(
        &self,
        myself: ActorRef<GroupMsg>,
        st: &mut GroupState,
    ) -> Result<(), ActorProcessingErr> {
        st.stop_all(&myself.get_cell()).await;
        info!(group = %st.name, "group stopped");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child whose start must never run.
    fn unstartable(id: &str) -> ChildSpec {
        ChildSpec::actor(id, |_parent| async { Err("must not be started".into()) })
    }

    #[tokio::test]
    async fn two_children_with_one_id_are_refused_before_any_starts() {
        let spec = GroupSpec::new("g", Strategy::OneForOne)
            .child(unstartable("a"))
            .child(unstartable("b"))
            .child(unstartable("a"));
        match ClientGroup::start(spec, None).await {
            Err(GroupError::DuplicateChild { group, child }) => {
                assert_eq!((group.as_str(), child.as_str()), ("g", "a"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_child_that_cannot_start_fails_the_groups_start() {
        let spec = GroupSpec::new("g", Strategy::OneForAll).child(unstartable("a"));
        match ClientGroup::start(spec, None).await {
            Err(GroupError::ChildStart { child, reason, .. }) => {
                assert_eq!(child, "a");
                assert_eq!(reason, "must not be started");
            }
            other => panic!("{other:?}"),
        }
    }
}
