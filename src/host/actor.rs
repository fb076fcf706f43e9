//! The HostSupervisor actor: the root of a host's subtree.
//!
//! ```text
//! user's actor (optional)
//!  └─ HostSupervisor          this actor
//!      ├─ ClientSupervisor    one client's tree per server (restarts its own server)
//!      └─ ...
//! ```
//!
//! Each client applies its own restart policy; this actor only holds the
//! subtree together. A client's tree that ends (it gave up, or was
//! stopped) does not end the host: the server's watcher reports it. When
//! this actor ends in any way (a stop, or killed with a parent), every
//! client is stopped, from the `Drop` of its state.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tracing::debug;

use super::catalog::HostShared;

/// The host's supervisor takes no messages: it is the parent of the
/// clients' trees, and is stopped through [`Host::stop`](super::Host::stop).
#[derive(Debug)]
pub enum HostMsg {}

local_messages!(HostMsg);

pub(crate) struct HostSupervisor;

/// Stops every server when the actor ends, however it ends.
pub(crate) struct StopOnEnd(Arc<HostShared>);

impl Drop for StopOnEnd {
    fn drop(&mut self) {
        // The shutdowns run detached; nobody waits for them here.
        drop(self.0.stop_all());
    }
}

impl Actor for HostSupervisor {
    type Msg = HostMsg;
    type State = StopOnEnd;
    type Arguments = Arc<HostShared>;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        shared: Arc<HostShared>,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(StopOnEnd(shared))
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        _state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {}
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        _state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // A client's tree ended (gave up, stopped or killed): its watcher
        // sees the final status. The host goes on.
        match &evt {
            SupervisionEvent::ActorTerminated(cell, _, why) => {
                debug!(actor = ?cell.get_id(), ?why, "host: a client's tree stopped");
            }
            SupervisionEvent::ActorFailed(cell, why) => {
                debug!(actor = ?cell.get_id(), %why, "host: a client's tree failed");
            }
            _ => {}
        }
        Ok(())
    }
}
