//! The caller's sink, on node B: the local actor gateways send tickets,
//! progress and notifications to.
//!
//! Any node can cast to it, since ractor_cluster shows every remotable actor
//! to every connected node. So nothing it receives is taken on trust:
//!
//! - a ticket is taken only for a hello this node sent, by its nonce, which
//!   crossed only between this node and the gateway;
//! - progress and notifications are taken only with the secret of the
//!   ticket of the gateway the call or the subscription went to;
//! - everything else is dropped and counted in
//!   [`RemoteServers::rejected`](super::RemoteServers::rejected).
//!
//! It acknowledges what it handled, so the gateway's window for this node
//! opens again: [`GatewayMsg::Ack`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::{mpsc, oneshot};
use tracing::debug;

use super::notifications::{RemoteNotifications, Subscriber};
use super::token;
use super::wire::{
    self, Ack, GatewayMsg, NotificationEnvelope, ProgressEnvelope, SinkMsg, Subscription, Ticket,
};
use crate::jsonrpc::Notification;
use crate::sync::lock;
use crate::Progress;

/// A ticket this node holds at one gateway.
#[derive(Clone)]
pub(crate) struct Admission {
    ticket: String,
    secret: String,
}

impl Admission {
    /// The ticket calls name.
    #[inline]
    pub(crate) fn ticket(&self) -> &str {
        &self.ticket
    }

    /// The secret the gateway's messages to this sink carry.
    #[inline]
    pub(crate) fn secret(&self) -> &str {
        &self.secret
    }
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admission(<redacted>)")
    }
}

/// A hello waiting for its ticket.
struct Pending {
    gateway: ActorRef<GatewayMsg>,
    tx: oneshot::Sender<Admission>,
}

/// What the sink knows of a gateway it holds a ticket from.
struct Link {
    gateway: ActorRef<GatewayMsg>,
    ticket: String,
    /// Bytes handled since the last ack.
    handled: u64,
    ack_every: u64,
}

/// Where the progress of one call goes, and whose secret it must carry.
struct ProgressRoute {
    secret: String,
    tx: mpsc::UnboundedSender<Progress>,
}

/// What the sink routes, shared with the callers' handles.
#[derive(Default)]
pub(crate) struct Routes {
    /// Hellos in flight, by nonce.
    pending: Mutex<HashMap<String, Pending>>,
    /// Gateways holding a ticket of ours, by their secret.
    links: Mutex<HashMap<String, Link>>,
    /// Calls that want progress, by id.
    progress: Mutex<HashMap<u64, ProgressRoute>>,
    /// Subscribers, by the secret of the gateway and the server.
    notifications: Mutex<HashMap<(String, String), Vec<Subscriber>>>,
    rejected: AtomicU64,
}

impl Routes {
    /// Waits for the ticket that answers the hello with `nonce`.
    pub(crate) fn expect_ticket(
        &self,
        nonce: &str,
        gateway: &ActorRef<GatewayMsg>,
    ) -> oneshot::Receiver<Admission> {
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(
            nonce.to_owned(),
            Pending {
                gateway: gateway.clone(),
                tx,
            },
        );
        rx
    }

    /// The hello with `nonce` is over: answered or abandoned.
    pub(crate) fn forget_nonce(&self, nonce: &str) {
        lock(&self.pending).remove(nonce);
    }

    /// Progress of call `id`, from the gateway whose secret is `secret`,
    /// goes to `tx`.
    pub(crate) fn route_progress(
        &self,
        id: u64,
        secret: &str,
        tx: mpsc::UnboundedSender<Progress>,
    ) {
        let route = ProgressRoute {
            secret: secret.to_owned(),
            tx,
        };
        lock(&self.progress).insert(id, route);
    }

    /// Call `id` is over.
    pub(crate) fn unroute_progress(&self, id: u64) {
        lock(&self.progress).remove(&id);
    }

    /// A new subscriber to `server`'s notifications from the gateway whose
    /// secret is `secret`.
    pub(crate) fn subscribe(
        &self,
        secret: &str,
        server: &str,
        limit: usize,
    ) -> RemoteNotifications {
        let (sub, rx) = Subscriber::new(limit);
        lock(&self.notifications)
            .entry((secret.to_owned(), server.to_owned()))
            .or_default()
            .push(sub);
        rx
    }

    /// Removes the subscribers of `server` whose receiver is gone.
    pub(crate) fn prune(&self, secret: &str, server: &str) {
        let mut subs = lock(&self.notifications);
        let key = (secret.to_owned(), server.to_owned());
        if let Some(list) = subs.get_mut(&key) {
            list.retain(|s| !s.is_closed());
            if list.is_empty() {
                subs.remove(&key);
            }
        }
    }

    /// Messages dropped as not from a gateway holding our ticket.
    pub(crate) fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    fn reject(&self, what: &str) {
        let n = self.rejected.fetch_add(1, Ordering::Relaxed) + 1;
        debug!(
            rejected = n,
            "{what} dropped: not from a gateway this node holds a ticket from"
        );
    }

    /// Takes a ticket if it answers one of our hellos.
    fn take_ticket(&self, bytes: &[u8]) {
        let Ok(t) = wire::decode::<Ticket>(bytes, "ticket") else {
            return self.reject("a ticket that does not decode");
        };
        let Some(pending) = lock(&self.pending).remove(&t.nonce) else {
            return self.reject("a ticket for no hello of ours");
        };
        let link = Link {
            gateway: pending.gateway,
            ticket: t.ticket.clone(),
            handled: 0,
            ack_every: (t.window / 4).max(1),
        };
        let mut links = lock(&self.links);
        // Gateways that stopped hold no ticket of ours any more.
        links.retain(|_, l| l.gateway.get_status() < ractor::ActorStatus::Stopping);
        links.insert(t.secret.clone(), link);
        drop(links);
        let _ = pending.tx.send(Admission {
            ticket: t.ticket,
            secret: t.secret,
        });
    }

    /// Counts `bytes` handled for the gateway with `secret`, acknowledging
    /// them now and then; false if no gateway holds that secret.
    fn handled(&self, secret: &str, bytes: u64) -> bool {
        let mut links = lock(&self.links);
        let Some(link) = links.get_mut(secret) else {
            return false;
        };
        link.handled += bytes;
        if link.handled >= link.ack_every {
            let ack = Ack::new(link.ticket.clone(), link.handled);
            let _ = link.gateway.cast(GatewayMsg::Ack(wire::encode(&ack)));
            link.handled = 0;
        }
        true
    }

    fn progress(&self, bytes: &[u8]) {
        let Ok(p) = wire::decode::<ProgressEnvelope>(bytes, "progress") else {
            return self.reject("progress that does not decode");
        };
        let (secret, id, params) = p.into_parts();
        if !self.handled(&secret, bytes.len() as u64) {
            return self.reject("progress");
        }
        let routes = lock(&self.progress);
        match routes.get(&id) {
            Some(route) if token::same(&route.secret, &secret) => {
                let _ = route.tx.send(Progress::from_params(params));
            }
            // Another gateway's progress for our call's id.
            Some(_) => self.reject("progress for a call that went elsewhere"),
            // The call has ended: late progress.
            None => {}
        }
    }

    fn notification(&self, bytes: &[u8]) {
        let Ok(n) = wire::decode::<NotificationEnvelope>(bytes, "notification") else {
            return self.reject("a notification that does not decode");
        };
        let (secret, server, method, params) = n.into_parts();
        if !self.handled(&secret, bytes.len() as u64) {
            return self.reject("a notification");
        }
        let key = (secret, server);
        let mut subs = lock(&self.notifications);
        if let Some(list) = subs.get_mut(&key) {
            list.retain(|s| !s.is_closed());
            let note = Notification { method, params };
            for s in list.iter() {
                s.offer(note.clone(), &key.1);
            }
            if !list.is_empty() {
                return;
            }
            subs.remove(&key);
        }
        drop(subs);
        // Nobody here reads this server's notifications any more.
        let links = lock(&self.links);
        if let Some(link) = links.get(&key.0) {
            let s = Subscription::new(link.ticket.clone(), key.1);
            let _ = link.gateway.cast(GatewayMsg::Unsubscribe(wire::encode(&s)));
        }
    }
}

/// The sink actor: routes what gateways send to this node's callers.
pub(crate) struct Sink;

impl Actor for Sink {
    type Msg = SinkMsg;
    type State = Arc<Routes>;
    type Arguments = (String, Arc<Routes>);

    async fn pre_start(
        &self,
        myself: ActorRef<SinkMsg>,
        (group, routes): (String, Arc<Routes>),
    ) -> Result<Arc<Routes>, ActorProcessingErr> {
        ractor::pg::join(group, vec![myself.get_cell()]);
        Ok(routes)
    }

    async fn handle(
        &self,
        _myself: ActorRef<SinkMsg>,
        msg: SinkMsg,
        routes: &mut Arc<Routes>,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SinkMsg::Ticket(bytes) => routes.take_ticket(&bytes),
            SinkMsg::Progress(bytes) => routes.progress(&bytes),
            SinkMsg::Notification(bytes) => routes.notification(&bytes),
        }
        Ok(())
    }
}
