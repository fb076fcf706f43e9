//! The names of the connected nodes, as this node's `NodeServer` knows
//! them: what [`RemoteServers::find`](super::RemoteServers::find) checks a
//! claimant against.
//!
//! A remote actor here is known by ractor_cluster's id of the connection it
//! came over, `ActorId::Remote { node_id, .. }`. The `NodeServer` maps
//! each id to the name the peer declared in its handshake,
//! `name@hostname`. The map is kept current by the `NodeServer`'s events
//! and read again whenever a claimant's id is not in it yet.
//!
//! A declared name is only as good as the handshake that carried it: any
//! node holding the cookie may declare any name, as the
//! [`Security model`](super#security-model) says.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::rpc::CallResult;
use ractor::ActorRef;
use ractor_cluster::node::NodeServerSessionInformation;
use ractor_cluster::{NodeEventSubscription, NodeServerMessage};

use crate::sync::lock;

/// How long a read of the `NodeServer`'s sessions may take.
const ASK: Duration = Duration::from_secs(5);

type Map = Arc<Mutex<HashMap<u64, String>>>;

/// Keeps the map current from the `NodeServer`'s events.
struct Feed(Map);

impl Feed {
    fn learn(&self, ses: &NodeServerSessionInformation) {
        if let Some(name) = &ses.peer_name {
            lock(&self.0).insert(ses.node_id, name.name.clone());
        }
    }
}

impl NodeEventSubscription for Feed {
    fn node_session_opened(&self, _: NodeServerSessionInformation) {}

    fn node_session_disconnected(&self, ses: NodeServerSessionInformation) {
        lock(&self.0).remove(&ses.node_id);
    }

    fn node_session_authenticated(&self, ses: NodeServerSessionInformation) {
        self.learn(&ses);
    }

    fn node_session_ready(&self, ses: NodeServerSessionInformation) {
        self.learn(&ses);
    }
}

/// Node id -> declared name, for the nodes connected to one `NodeServer`.
#[derive(Debug)]
pub(crate) struct NodeNames {
    server: ActorRef<NodeServerMessage>,
    map: Map,
    /// The event subscription's id.
    id: String,
}

impl NodeNames {
    /// Follows `server`'s sessions under subscription `id`.
    pub(crate) async fn follow(
        server: ActorRef<NodeServerMessage>,
        id: String,
    ) -> Result<Self, String> {
        let map = Map::default();
        server
            .cast(NodeServerMessage::SubscribeToEvents {
                id: id.clone(),
                subscription: Box::new(Feed(map.clone())),
            })
            .map_err(|e| format!("the node server is gone: {e}"))?;
        let names = NodeNames { server, map, id };
        names.refresh().await;
        Ok(names)
    }

    /// Reads every session's name from the `NodeServer` again.
    pub(crate) async fn refresh(&self) {
        let asked = self
            .server
            .call(NodeServerMessage::GetSessions, Some(ASK))
            .await;
        if let Ok(CallResult::Success(sessions)) = asked {
            let mut map = lock(&self.map);
            for (id, ses) in sessions {
                if let Some(name) = ses.peer_name {
                    map.insert(id, name.name);
                }
            }
        }
    }

    /// The declared name of node `node_id`, if known.
    pub(crate) fn name(&self, node_id: u64) -> Option<String> {
        lock(&self.map).get(&node_id).cloned()
    }

    /// Stops following the sessions.
    pub(crate) fn stop(&self) {
        let _ = self
            .server
            .cast(NodeServerMessage::UnsubscribeToEvents(self.id.clone()));
    }
}
