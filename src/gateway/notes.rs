//! Following the gateway's servers: each server's notifications passed on
//! to the sessions and calls they are for, flushed before a call's answer,
//! and the host's events turned into the namespace's list changes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::client::{Client, Delivered, LifecycleEvent, Status};
use crate::host::{HostEvent, ItemKind};
use crate::protocol::{Era, SubscriptionFilter};
use crate::server::ListKind;

use super::state::{Endpoint, GatewayState};

/// How long a call's answer waits for its server's notifications to be
/// passed on before it goes anyway.
const NOTE_FLUSH_WAIT: Duration = Duration::from_secs(1);

/// One server's notification watcher, as calls see it.
#[derive(Clone)]
struct NoteFlush {
    /// The client followed (its supervisor actor's id): a server started
    /// again after it gave up has a new one.
    client: ractor::ActorId,
    /// Asks the watcher to pass on what it has queued, then to answer.
    ask: mpsc::UnboundedSender<oneshot::Sender<()>>,
    /// Notifications the server's client handed to the watcher.
    sent: Delivered,
    /// Notifications the watcher has passed on (counted after each is).
    passed: Arc<AtomicU64>,
}

impl NoteFlush {
    /// Whether the watcher has passed on every notification handed to it
    /// so far.
    fn idle(&self) -> bool {
        self.sent.get() == self.passed.load(Ordering::Acquire)
    }
}

/// What the gateway follows: per server, its notification watcher's
/// progress and the way to ask it to pass on what it has queued; and a
/// fingerprint of the namespace's tools, prompts and resources, to tell
/// `/mcp`'s sessions only of the lists that changed.
#[derive(Default)]
pub(crate) struct Notes {
    flushes: Mutex<HashMap<Arc<str>, NoteFlush>>,
    fingerprints: Mutex<[u64; 3]>,
}

impl Notes {
    /// Forgets server `name`'s watcher: it ends with its client, and the
    /// next server of this name gets its own.
    pub(crate) fn forget(&self, name: &str) {
        crate::sync::lock(&self.flushes).remove(name);
    }

    /// Waits until server `server`'s watcher has passed on every
    /// notification queued so far. A call's answer comes after the log
    /// messages the server sent before it, on another path: without this
    /// the last of them reached the gateway after the answer, when the call
    /// was gone (1 in 5 calls lost its last log line).
    ///
    /// Without a round trip when the watcher has already passed on every
    /// notification the server sent (the usual case): the answer was read
    /// after them, so they are counted in `sent`, and `passed` is counted
    /// after each was passed on.
    pub(crate) async fn flush(&self, server: &str) {
        let ask = match crate::sync::lock(&self.flushes).get(server) {
            Some(f) if !f.idle() => f.ask.clone(),
            _ => return,
        };
        let (ack, done) = oneshot::channel();
        if ask.send(ack).is_ok() {
            // Bounded: a watcher busy opening its listen stream is not
            // worth holding an answer for.
            let _ = tokio::time::timeout(NOTE_FLUSH_WAIT, done).await;
        }
    }

    /// The kinds of the namespace whose lists changed since last asked.
    fn changed_kinds(&self, host: &crate::host::Host) -> Vec<ListKind> {
        use std::hash::{Hash, Hasher};
        let kinds = [
            (ItemKind::Tool, ListKind::Tools),
            (ItemKind::Prompt, ListKind::Prompts),
            (ItemKind::Resource, ListKind::Resources),
        ];
        let mut last = crate::sync::lock(&self.fingerprints);
        let mut changed = Vec::new();
        for (i, (item, list)) in kinds.into_iter().enumerate() {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            for (name, holder) in host.listed(item) {
                name.hash(&mut h);
                holder.server().hash(&mut h);
                holder.json().hash(&mut h);
            }
            let f = h.finish();
            if last[i] != f {
                last[i] = f;
                changed.push(list);
            }
        }
        changed
    }
}

impl GatewayState {
    /// Follows server `name`'s notifications: log messages go to the calls
    /// in flight on it, resource updates and list changes to the sessions
    /// of its endpoints.
    /// Once per client: concurrent first uses of a lazy one follow it
    /// once; a server started again after it gave up (a new client) is
    /// followed anew, its resource watches opened again on it.
    pub(crate) fn watch_server(self: &Arc<Self>, name: &str) {
        let Some(client) = self.host().client(name) else {
            return;
        };
        let id = client.supervisor().get_id();
        let mut flushes = crate::sync::lock(&self.notes().flushes);
        let revived = match flushes.get(name) {
            Some(f) if f.client == id => return,
            Some(_) => true,
            None => false,
        };
        let server: Arc<str> = name.into();
        let notes = client.notifications();
        let (ask, flush) = mpsc::unbounded_channel();
        let passed = Arc::new(AtomicU64::new(0));
        let entry = NoteFlush {
            client: id,
            ask,
            sent: notes.delivered(),
            passed: passed.clone(),
        };
        flushes.insert(server.clone(), entry);
        drop(flushes);
        let watcher = Watcher {
            gateway: Arc::downgrade(self),
            server,
            passed,
        };
        tokio::spawn(watch_notes(watcher, client, notes, flush, revived));
    }

    /// Starts following every server and the host's events.
    pub(crate) fn watch_all(self: &Arc<Self>) {
        // The lists as they are now are the ones sessions start with.
        let _ = self.notes().changed_kinds(self.host());
        for s in self.host().servers() {
            // One added while the gateway started is followed already.
            self.watch_server(&s.name);
        }
        tokio::spawn(watch_host(Arc::downgrade(self), self.host().events()));
    }
}

/// Follows one server's notifications until its client ends. A
/// 2026-07-28 server sends list changes only on a `subscriptions/listen`
/// stream: one is kept open while it is ready (so that the host lists it
/// again, and the gateway's sessions are told), its notifications read here
/// through `notes` like a 2025-11-25 server's. With `revived` (a new client
/// of a server that gave up), its first ready process is a restart too.
async fn watch_notes(
    watcher: Watcher,
    client: Client,
    mut notes: crate::client::Notifications,
    mut flush: mpsc::UnboundedReceiver<oneshot::Sender<()>>,
    mut revived: bool,
) {
    let server = &watcher.server;
    let mut status = client.watch_status();
    let mut stream: Option<crate::client::Subscription> = None;
    // One refusal per session is enough: a server without the method is
    // not asked again until it restarts.
    let mut refused = false;
    // The process last seen ready (its session is one per process).
    let mut last: Option<Arc<crate::client::ServerSession>> = None;
    loop {
        let ready = match &*status.borrow_and_update() {
            Status::Ready(s) => Some(s.clone()),
            _ => None,
        };
        let stateless_ready = ready.as_ref().is_some_and(|s| s.era == Era::Stateless);
        let restarted = match (&last, &ready) {
            (Some(a), Some(b)) => !Arc::ptr_eq(a, b),
            (None, Some(_)) => std::mem::take(&mut revived),
            _ => false,
        };
        if ready.is_some() {
            last = ready;
        }
        if restarted {
            // A new process: the resource watches of the old one are gone.
            let gateway = watcher.gateway.clone();
            let server = server.clone();
            tokio::spawn(async move {
                if let Some(gateway) = gateway.upgrade() {
                    super::watches::rewatch(gateway.watches(), &server).await;
                }
            });
        }
        if stateless_ready && stream.is_none() && !refused {
            match client.listen(SubscriptionFilter::all_list_changes()).await {
                Ok(s) => stream = Some(s),
                Err(e) => {
                    tracing::debug!(server = %server, error = %e, "gateway: no subscriptions/listen stream for list changes");
                    refused = true;
                }
            }
        }
        tokio::select! {
            Some(ack) = flush.recv() => {
                // Everything queued before the answer that asked for this.
                while let Some(n) = notes.try_recv() {
                    if !watcher.pass(n) {
                        return;
                    }
                }
                let _ = ack.send(());
            }
            n = notes.recv() => match n {
                Some(n) => {
                    if !watcher.pass(n) {
                        return;
                    }
                }
                None => return,
            },
            changed = status.changed() => {
                // A restart ends the stream: a new one for the new server.
                stream = None;
                refused = false;
                if changed.is_err() || status.borrow().is_final() {
                    return;
                }
            }
            more = next_on(&mut stream) => {
                // Read through `notes` above; the stream's own copy is
                // dropped, and an ended stream is opened again.
                if more.is_none() {
                    stream = None;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

/// What one server's notification watcher passes on, and counts.
struct Watcher {
    gateway: Weak<GatewayState>,
    server: Arc<str>,
    /// Notifications passed on (see [`NoteFlush`]).
    passed: Arc<AtomicU64>,
}

impl Watcher {
    /// Passes `n` on; false once the gateway is gone.
    fn pass(&self, n: crate::jsonrpc::Notification) -> bool {
        let Some(gateway) = self.gateway.upgrade() else {
            return false;
        };
        on_note(&gateway, &self.server, n);
        // After it was passed on: a call that sees the count sees its log
        // message already on the gateway's stream.
        self.passed.fetch_add(1, Ordering::AcqRel);
        true
    }
}

/// The stream's next notification; never without a stream.
async fn next_on(
    stream: &mut Option<crate::client::Subscription>,
) -> Option<crate::jsonrpc::Notification> {
    match stream {
        Some(s) => s.next_raw().await,
        None => std::future::pending().await,
    }
}

/// One notification of server `server`.
fn on_note(gateway: &GatewayState, server: &Arc<str>, n: crate::jsonrpc::Notification) {
    let params = n.params.unwrap_or(Value::Null);
    match n.method.as_str() {
        "notifications/message" => {
            let level = params
                .get("level")
                .and_then(Value::as_str)
                .unwrap_or("info")
                .to_owned();
            let data = params.get("data").cloned().unwrap_or(Value::Null);
            for call in gateway.relay().calls_on(server) {
                let _ = call.ctx().log(&level, data.clone());
            }
        }
        "notifications/resources/updated" => {
            let uri = params.get("uri").and_then(Value::as_str);
            if let Some(uri) = uri.filter(|u| gateway.watches().delivers(server, u, &params)) {
                // The namespace's sessions, and the server's own.
                let ours = |e: &Endpoint| !matches!(e, Endpoint::Server(s) if s != server);
                gateway.tell_sessions(ours, |s| s.resource_updated(uri));
            }
        }
        method => {
            let kind = match method {
                "notifications/tools/list_changed" => ListKind::Tools,
                "notifications/prompts/list_changed" => ListKind::Prompts,
                "notifications/resources/list_changed" => ListKind::Resources,
                _ => return,
            };
            let ours = |e: &Endpoint| matches!(e, Endpoint::Server(s) if s == server);
            gateway.tell_sessions(ours, |s| s.notify_list_changed(kind));
        }
    }
}

/// Follows the host's events: `/mcp`'s lists changed (after the host
/// listed again), restarts counted.
async fn watch_host(gateway: Weak<GatewayState>, mut events: crate::host::HostEvents) {
    while let Some(event) = events.recv().await {
        let Some(gateway) = gateway.upgrade() else {
            return;
        };
        if let HostEvent::Listed { server, .. } = &event {
            // A server started again after it gave up has a new client.
            gateway.watch_server(server);
        }
        match event {
            HostEvent::Listed { .. } | HostEvent::Removed { .. } | HostEvent::Down { .. } => {
                for kind in gateway.notes().changed_kinds(gateway.host()) {
                    gateway.tell_sessions(
                        |e| *e == Endpoint::Namespace,
                        |s| s.notify_list_changed(kind),
                    );
                }
            }
            HostEvent::Lifecycle {
                server,
                event: LifecycleEvent::Restarting { .. },
            } => gateway.metrics().restarted(&server),
            _ => {}
        }
    }
}
