//! The gateway's record of who may do what: the tickets it issued, each
//! bound to the node it was sent to, the calls in flight under each, the
//! subscriptions, and per node the counts and the forwarding window that
//! bound them.
//!
//! A ticket counts against its node's cap once a call or a subscription
//! uses it, and only the node that received it can use it. Until then it
//! waits in a pool of bounded size, oldest dropped first. Another node can
//! make the gateway send tickets to a node that never asked, with a hello
//! naming that node's sink, and those must not fill that node's share.
//!
//! One value behind one lock, and every step that checks a count and
//! changes it runs inside one critical section, so no two calls can both
//! take the last slot.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ractor::{ActorCell, ActorId};

use super::token;
use super::wire::{CallCap, RemoteError};
use crate::CancelToken;

/// The node a ticket went to: the only identity a message from another
/// node can be tied to. ractor_cluster delivers messages without their
/// sender, but an actor's stand-in here belongs to one node's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum NodeKey {
    /// This process.
    Local,
    /// Another node, by ractor_cluster's id of its connection.
    Remote(u64),
}

impl NodeKey {
    pub(crate) fn of(id: ActorId) -> Self {
        match id {
            ActorId::Local(_) => NodeKey::Local,
            ActorId::Remote { node_id, .. } => NodeKey::Remote(node_id),
        }
    }
}

impl std::fmt::Display for NodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeKey::Local => f.write_str("this node"),
            NodeKey::Remote(id) => write!(f, "node #{id}"),
        }
    }
}

/// The caps of [`GatewayConfig`](super::GatewayConfig).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    calls_per_node: usize,
    calls: usize,
    tickets_per_node: usize,
    /// Tickets issued and not used yet, from all nodes.
    unused_tickets: usize,
    window: u64,
}

impl Limits {
    #[inline]
    pub(crate) fn new(
        calls_per_node: usize,
        calls: usize,
        tickets_per_node: usize,
        unused_tickets: usize,
        window: u64,
    ) -> Self {
        Self {
            calls_per_node,
            calls,
            tickets_per_node,
            unused_tickets,
            window,
        }
    }
}

/// Bytes of progress and notifications sent to one node's sinks and not
/// yet acknowledged: what may sit in queues between here and there.
#[derive(Debug)]
pub(crate) struct Window {
    unacked: AtomicU64,
    limit: u64,
    dropped: AtomicU64,
}

impl Window {
    fn new(limit: u64) -> Self {
        Self {
            unacked: AtomicU64::new(0),
            limit,
            dropped: AtomicU64::new(0),
        }
    }

    /// Takes room for `bytes`; false, counted as dropped, if there is not
    /// enough.
    pub(crate) fn try_take(&self, bytes: u64) -> bool {
        let taken = self
            .unacked
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|&n| n <= self.limit)
            })
            .is_ok();
        if !taken {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        taken
    }

    /// Gives room back on an ack.
    fn give_back(&self, bytes: u64) {
        let _ = self
            .unacked
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                Some(held.saturating_sub(bytes))
            });
    }

    /// Messages dropped for lack of room so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The window's size.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }
}

/// Where a ticket's traffic goes, and how it proves its origin.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    /// The sink's stand-in here: a cast to it travels over its node's
    /// connection only.
    sink: ActorCell,
    secret: String,
    window: Arc<Window>,
    node: NodeKey,
}

impl Route {
    /// The caller's sink.
    #[inline]
    pub(crate) fn sink(&self) -> &ActorCell {
        &self.sink
    }

    /// The ticket's secret, which the sink checks on every message.
    #[inline]
    pub(crate) fn secret(&self) -> &str {
        &self.secret
    }

    /// The bytes in flight to the sink, unacknowledged.
    #[inline]
    pub(crate) fn window(&self) -> &Window {
        &self.window
    }

    /// The sink's node.
    #[inline]
    pub(crate) fn node(&self) -> NodeKey {
        self.node
    }
}

#[derive(Debug)]
struct Listed {
    route: Route,
    subscriptions: HashSet<String>,
    /// Used once by a call or a subscription: counted in its node's cap.
    used: bool,
}

#[derive(Debug)]
struct NodeEntry {
    /// Tickets of the node, used or not. The entry lives while any does.
    tickets: usize,
    /// Tickets used, against the cap.
    used: usize,
    calls: usize,
    window: Arc<Window>,
}

/// The gateway's record, as the module describes it.
#[derive(Debug)]
pub(crate) struct Peers {
    limits: Limits,
    tickets: HashMap<String, Listed>,
    nodes: HashMap<NodeKey, NodeEntry>,
    calls: HashMap<(String, u64), CancelToken>,
    total_calls: usize,
    /// Server -> tickets subscribed to its notifications.
    subscribed: HashMap<String, HashSet<String>>,
    /// Tickets in the order they were issued, to drop the oldest unused.
    issued: VecDeque<String>,
}

/// What an unknown ticket is told.
fn unknown() -> RemoteError {
    RemoteError::NotAdmitted {
        reason: "unknown ticket (tickets end with the caller's connection)".into(),
    }
}

impl Peers {
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            limits,
            tickets: HashMap::new(),
            nodes: HashMap::new(),
            calls: HashMap::new(),
            total_calls: 0,
            subscribed: HashMap::new(),
            issued: VecDeque::new(),
        }
    }

    /// A new ticket for `sink`, bound to `sink`'s node: the ticket, its
    /// secret and the window's size.
    pub(crate) fn issue(&mut self, sink: ActorCell) -> Result<(String, String, u64), RemoteError> {
        let node = NodeKey::of(sink.get_id());
        let (ticket, secret) = (token::fresh()?, token::fresh()?);
        let limits = self.limits;
        let entry = self.nodes.entry(node).or_insert_with(|| NodeEntry {
            tickets: 0,
            used: 0,
            calls: 0,
            window: Arc::new(Window::new(limits.window)),
        });
        entry.tickets += 1;
        let route = Route {
            sink,
            secret: secret.clone(),
            window: entry.window.clone(),
            node,
        };
        self.tickets.insert(
            ticket.clone(),
            Listed {
                route,
                subscriptions: HashSet::new(),
                used: false,
            },
        );
        self.issued.push_back(ticket.clone());
        while self.issued.len() > limits.unused_tickets {
            let Some(oldest) = self.issued.pop_front() else {
                break;
            };
            if self.tickets.get(&oldest).is_some_and(|h| !h.used) {
                self.remove(&oldest);
            }
        }
        Ok((ticket, secret, limits.window))
    }

    /// Marks `ticket` used, within its node's cap, and returns its holder.
    fn use_ticket(&mut self, ticket: &str) -> Result<&mut Listed, RemoteError> {
        let holder = self.tickets.get_mut(ticket).ok_or_else(unknown)?;
        if !holder.used {
            let node = holder.route.node;
            let entry = self.nodes.get_mut(&node).ok_or_else(unknown)?;
            if entry.used >= self.limits.tickets_per_node {
                return Err(RemoteError::NotAdmitted {
                    reason: format!("{node} uses {} tickets, the most one node may", entry.used),
                });
            }
            entry.used += 1;
            holder.used = true;
        }
        Ok(holder)
    }

    /// Removes a ticket: its subscriptions end, its calls are cancelled.
    fn remove(&mut self, ticket: &str) {
        let Some(holder) = self.tickets.remove(ticket) else {
            return;
        };
        for server in &holder.subscriptions {
            self.drop_subscription(ticket, server);
        }
        for ((t, _), token) in &self.calls {
            if t == ticket {
                token.cancel();
            }
        }
        let node = holder.route.node;
        if let Some(entry) = self.nodes.get_mut(&node) {
            entry.tickets -= 1;
            entry.used -= usize::from(holder.used);
            if entry.calls == 0 && entry.tickets == 0 {
                self.nodes.remove(&node);
            }
        }
    }

    /// Admits call `id` under `ticket`, within the caps: its route and its
    /// cancel token.
    pub(crate) fn admit(
        &mut self,
        ticket: &str,
        id: u64,
    ) -> Result<(Route, CancelToken), RemoteError> {
        let key = (ticket.to_owned(), id);
        if self.calls.contains_key(&key) {
            return Err(RemoteError::DuplicateCall { id });
        }
        let route = self.use_ticket(ticket)?.route.clone();
        let node = self.nodes.get_mut(&route.node).ok_or_else(unknown)?;
        if node.calls >= self.limits.calls_per_node {
            return Err(RemoteError::TooManyCalls {
                scope: CallCap::PerNode,
                limit: self.limits.calls_per_node as u64,
            });
        }
        if self.total_calls >= self.limits.calls {
            return Err(RemoteError::TooManyCalls {
                scope: CallCap::PerGateway,
                limit: self.limits.calls as u64,
            });
        }
        node.calls += 1;
        self.total_calls += 1;
        let token = CancelToken::new();
        self.calls.insert(key, token.clone());
        Ok((route, token))
    }

    /// Call `id` under `ticket` has ended.
    pub(crate) fn end(&mut self, ticket: &str, id: u64, node: NodeKey) {
        if self.calls.remove(&(ticket.to_owned(), id)).is_none() {
            return;
        }
        self.total_calls -= 1;
        if let Some(entry) = self.nodes.get_mut(&node) {
            entry.calls -= 1;
            if entry.calls == 0 && entry.tickets == 0 {
                self.nodes.remove(&node);
            }
        }
    }

    /// Cancels call `id` under `ticket`, if it is in flight. Its task ends
    /// it.
    pub(crate) fn cancel(&self, ticket: &str, id: u64) -> bool {
        match self.calls.get(&(ticket.to_owned(), id)) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Subscribes `ticket`'s sink to `server`'s notifications.
    pub(crate) fn subscribe(&mut self, ticket: &str, server: &str) -> Result<(), RemoteError> {
        self.use_ticket(ticket)?
            .subscriptions
            .insert(server.to_owned());
        self.subscribed
            .entry(server.to_owned())
            .or_default()
            .insert(ticket.to_owned());
        Ok(())
    }

    /// Ends a subscription.
    pub(crate) fn unsubscribe(&mut self, ticket: &str, server: &str) {
        if let Some(holder) = self.tickets.get_mut(ticket) {
            holder.subscriptions.remove(server);
        }
        self.drop_subscription(ticket, server);
    }

    fn drop_subscription(&mut self, ticket: &str, server: &str) {
        if let Some(set) = self.subscribed.get_mut(server) {
            set.remove(ticket);
            if set.is_empty() {
                self.subscribed.remove(server);
            }
        }
    }

    /// Where `server`'s notifications go.
    pub(crate) fn subscribers(&self, server: &str) -> Vec<Route> {
        self.subscribed.get(server).map_or_else(Vec::new, |set| {
            set.iter()
                .filter_map(|t| self.tickets.get(t))
                .map(|h| h.route.clone())
                .collect()
        })
    }

    /// `ticket`'s sink has handled `bytes`.
    pub(crate) fn ack(&self, ticket: &str, bytes: u64) {
        if let Some(holder) = self.tickets.get(ticket) {
            holder.route.window.give_back(bytes);
        }
    }

    /// The sink `sink` is gone, because its node's connection ended or it
    /// stopped: its tickets end, their calls are cancelled. Returns how
    /// many tickets ended.
    pub(crate) fn forget(&mut self, sink: ActorId) -> usize {
        let gone: Vec<String> = self
            .tickets
            .iter()
            .filter(|(_, h)| h.route.sink.get_id() == sink)
            .map(|(t, _)| t.clone())
            .collect();
        for ticket in &gone {
            self.remove(ticket);
        }
        gone.len()
    }

    /// Every call in flight is cancelled: the gateway is going.
    pub(crate) fn cancel_all(&mut self) {
        for token in self.calls.values() {
            token.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ractor::{Actor, ActorProcessingErr, ActorRef};

    struct Nop;
    impl ractor::Message for Nop {}
    struct Idle;
    impl Actor for Idle {
        type Msg = Nop;
        type State = ();
        type Arguments = ();
        async fn pre_start(&self, _: ActorRef<Nop>, _: ()) -> Result<(), ActorProcessingErr> {
            Ok(())
        }
    }

    async fn sink() -> ActorCell {
        Actor::spawn(None, Idle, ()).await.unwrap().0.get_cell()
    }

    fn limits() -> Limits {
        Limits {
            calls_per_node: 2,
            calls: 3,
            tickets_per_node: 2,
            unused_tickets: 3,
            window: 100,
        }
    }

    #[tokio::test]
    async fn calls_are_keyed_by_ticket_and_id_and_capped() {
        let mut peers = Peers::new(limits());
        let (a, _, _) = peers.issue(sink().await).unwrap();
        let (b, _, _) = peers.issue(sink().await).unwrap();
        let (route, token_a1) = peers.admit(&a, 1).unwrap();
        assert_eq!(route.node, NodeKey::Local);
        // The same id under another ticket is another call.
        let (_, token_b1) = peers.admit(&b, 1).unwrap();
        assert_eq!(
            peers.admit(&a, 1).unwrap_err(),
            RemoteError::DuplicateCall { id: 1 }
        );
        // Both tickets are this node's: two calls is its cap.
        assert_eq!(
            peers.admit(&a, 2).unwrap_err(),
            RemoteError::TooManyCalls {
                scope: CallCap::PerNode,
                limit: 2
            }
        );
        // Cancelling under one ticket leaves the other's call alone.
        assert!(peers.cancel(&b, 1));
        assert!(token_b1.is_cancelled() && !token_a1.is_cancelled());
        assert!(!peers.cancel("made-up", 1));
        peers.end(&b, 1, NodeKey::Local);
        peers.end(&b, 1, NodeKey::Local);
        assert!(peers.admit(&a, 2).is_ok());
        assert!(matches!(
            peers.admit("made-up", 1),
            Err(RemoteError::NotAdmitted { .. })
        ));
    }

    #[tokio::test]
    async fn a_gone_sink_takes_its_tickets_and_calls_with_it() {
        let mut peers = Peers::new(limits());
        let cell = sink().await;
        let (t, _, _) = peers.issue(cell.clone()).unwrap();
        let (_, token) = peers.admit(&t, 1).unwrap();
        peers.subscribe(&t, "files").unwrap();
        assert_eq!(peers.subscribers("files").len(), 1);
        assert_eq!(peers.forget(cell.get_id()), 1);
        assert!(token.is_cancelled());
        assert!(peers.subscribers("files").is_empty());
        assert!(matches!(
            peers.admit(&t, 2),
            Err(RemoteError::NotAdmitted { .. })
        ));
        // The call's end still balances the counts.
        peers.end(&t, 1, NodeKey::Local);
        assert!(peers.nodes.is_empty() && peers.total_calls == 0);
    }

    #[tokio::test]
    async fn unused_tickets_are_dropped_oldest_first_and_used_ones_are_capped() {
        let mut peers = Peers::new(limits());
        let s = sink().await;
        let issued: Vec<String> = (0..4).map(|_| peers.issue(s.clone()).unwrap().0).collect();
        // Three unused at most: the first went.
        assert!(matches!(
            peers.admit(&issued[0], 1),
            Err(RemoteError::NotAdmitted { .. })
        ));
        peers.subscribe(&issued[1], "x").unwrap();
        peers.subscribe(&issued[2], "x").unwrap();
        // Two used tickets per node.
        assert!(matches!(
            peers.subscribe(&issued[3], "x"),
            Err(RemoteError::NotAdmitted { reason }) if reason.contains("2 tickets")
        ));
        // A used ticket is not dropped as unused.
        for _ in 0..5 {
            peers.issue(s.clone()).unwrap();
        }
        assert!(peers.admit(&issued[1], 1).is_ok());
    }

    #[test]
    fn the_window_holds_at_most_its_size_until_acked() {
        let w = Window::new(100);
        assert!(w.try_take(60) && w.try_take(40));
        assert!(!w.try_take(1));
        assert_eq!(w.dropped(), 1);
        w.give_back(50);
        assert!(w.try_take(50) && !w.try_take(1));
        w.give_back(u64::MAX);
        assert!(w.try_take(100));
    }
}
