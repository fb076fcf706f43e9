//! The ClientSupervisor actor: the root of one client's tree.
//!
//! It spawns the Connection linked under itself and publishes its reference
//! to the user's handles. The Connection applies the server restart policy;
//! the supervisor applies the same policy, with the same count (a dead
//! Connection is one more death of the server within the restart period),
//! to the Connection itself if it dies unexpectedly (a panic or `kill()`),
//! and ends when the Connection ends for good: it stops when the client was
//! stopped, and fails with the [`Error::GaveUp`] when it gave up, so that
//! a parent sees `ActorFailed` carrying the reason, as an OTP supervisor
//! sees a child's abnormal exit.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::oneshot;
use tracing::{info, warn};

use super::connection::{child_exit, Connection, ConnectionArgs, ConnectionMsg};
use super::restarts::Verdict;
use super::shared::ClientShared;
use super::status::Status;
use crate::error::{Error, SpawnError};
use crate::transport::Transport;

/// Messages of the ClientSupervisor.
#[derive(Debug)]
pub(crate) enum SupervisorMsg {
    /// Stop the client: close the server (detached) and stop the tree.
    Stop,
    /// Respawn the Connection (after a backoff).
    Respawn,
}

local_messages!(SupervisorMsg);

pub(crate) struct ClientSupervisor;

/// Marks the client stopped when the tree ends in any way (including a
/// `kill()` of the supervisor or of a user's parent actor), so waiters on
/// the status never hang and the server goes.
struct FinalOnDrop(Arc<ClientShared>);

impl Drop for FinalOnDrop {
    fn drop(&mut self) {
        self.0.stop_now("the client's supervisor stopped");
    }
}

pub(crate) struct SupervisorArgs {
    shared: Arc<ClientShared>,
    transport: Arc<dyn Transport>,
    /// Receives the outcome of the first spawn.
    first: Option<oneshot::Sender<Result<(), SpawnError>>>,
}

impl SupervisorArgs {
    #[inline]
    pub(crate) fn new(
        shared: Arc<ClientShared>,
        transport: Arc<dyn Transport>,
        first: Option<oneshot::Sender<Result<(), SpawnError>>>,
    ) -> Self {
        Self {
            shared,
            transport,
            first,
        }
    }
}

pub(crate) struct SupervisorState {
    _final: FinalOnDrop,
    shared: Arc<ClientShared>,
    transport: Arc<dyn Transport>,
    connection: Option<ActorRef<ConnectionMsg>>,
}

impl SupervisorState {
    async fn spawn_connection(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        first: Option<oneshot::Sender<Result<(), SpawnError>>>,
    ) -> Result<(), ActorProcessingErr> {
        let args = ConnectionArgs::new(self.shared.clone(), self.transport.clone(), first);
        let (conn, _) = Actor::spawn_linked(None, Connection, args, myself.get_cell()).await?;
        self.connection = Some(conn);
        Ok(())
    }
}

impl Actor for ClientSupervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: SupervisorArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut st = SupervisorState {
            _final: FinalOnDrop(args.shared.clone()),
            shared: args.shared,
            transport: args.transport,
            connection: None,
        };
        st.spawn_connection(&myself, args.first).await?;
        Ok(st)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        st: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SupervisorMsg::Stop => {
                // The handle made the stop final and closed the link
                // already (`stop_now`); again here for a link that was
                // being opened meanwhile. Then the tree goes, its
                // Connection killed with it.
                st.shared.stop_now("the client was stopped");
                myself.stop(Some("client stopped".into()));
            }
            SupervisorMsg::Respawn => {
                if !st.shared.is_final() && st.connection.is_none() {
                    st.spawn_connection(&myself, None).await?;
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        st: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let Some((cell, why)) = child_exit(evt) else {
            return Ok(());
        };
        if st.connection.as_ref().map(|c| c.get_id()) != Some(cell.get_id()) {
            return Ok(());
        }
        st.connection = None;
        if st.shared.is_final() {
            return end(&myself, &st.shared, why);
        }
        // Its server died with it: one death, counted with the servers'.
        let attempt = match st.shared.count_death() {
            Verdict::Restart { attempt } => attempt,
            Verdict::GiveUp { attempts } => {
                let last = format!(
                    "the connection actor died: {}",
                    why.unwrap_or_else(|| "killed".into())
                );
                warn!(server = %st.shared.name(), reason = %last, "giving up");
                st.shared.give_up(attempts, &last);
                return end(&myself, &st.shared, None);
            }
        };
        let delay = st.shared.config().get_backoff().delay(attempt);
        warn!(server = %st.shared.name(), reason = ?why, attempt, delay_ms = delay.as_millis() as u64, "connection actor died; respawning");
        st.shared.set_status(Status::Restarting {
            attempt,
            reason: why.unwrap_or_else(|| "connection actor killed".into()),
        });
        myself.send_after(delay, || SupervisorMsg::Respawn);
        Ok(())
    }
}

/// Ends the tree of a client whose status is final: a failure carrying the
/// [`Error::GaveUp`] when it gave up, a stop (with `why`) when it was
/// stopped.
fn end(
    myself: &ActorRef<SupervisorMsg>,
    shared: &ClientShared,
    why: Option<String>,
) -> Result<(), ActorProcessingErr> {
    match shared.final_error() {
        Some(err @ Error::GaveUp { .. }) => {
            info!(server = %shared.name(), reason = %err, "client tree failing: gave up");
            Err(Box::new(err))
        }
        _ => {
            info!(server = %shared.name(), reason = ?why, "client tree stopping");
            myself.stop(why);
            Ok(())
        }
    }
}
