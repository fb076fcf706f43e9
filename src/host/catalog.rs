//! What the host knows, shared by its handles and its watchers: the servers
//! by name, their lists, the namespace built from them, and the event
//! subscribers. One lock, never held across an `await`.
//!
//! Every change is one step under the lock. A server's reservation carries
//! a generation ([`Ticket`]): whatever comes back later for it (the start's
//! result, a listing, a status) applies only while that very reservation
//! is in place. So a start that was removed, cancelled or overtaken by a
//! new server of the same name can neither fill nor delete the new one's
//! slot: its client is stopped instead, and whoever removed it can await
//! that shutdown.
//!
//! A server that gave up (or could not start) keeps its entry, with its
//! reason and, when it has a pause ([`HostConfig::revive_after`]), the time
//! its revive is due: [`revives_due`](HostShared::revives_due) then puts a
//! fresh reservation of its config in its place, for the host's reviver to
//! start.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{info, warn};

use super::config::{HostConfig, WhenUnavailable};
use super::events::{EventFanout, HostEvents, Subscriber};
use super::items::{self, Lists};
use super::listing::Fetched;
use super::namespace::{Collision, ItemKind, ItemRef, Listed, Namespace};
use super::naming::Naming;
use super::{HostError, HostEvent, HostShutdown, ServerSummary};
use crate::client::ClientConfig;
use crate::client::ClientHandler;
use crate::client::Status;
use crate::client::{Client, ClientShutdown};
use crate::deadline::After;

mod lazy;
mod route;

pub(crate) use lazy::Reserved;
pub(crate) use route::Route;

/// One reservation of a name: whatever comes back for it applies only
/// while it is in place.
#[derive(Debug, Clone)]
pub(crate) struct Ticket {
    name: String,
    generation: u64,
}

impl Ticket {
    /// The server's name.
    #[inline]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The server's name, the ticket spent.
    pub(crate) fn into_name(self) -> String {
        self.name
    }
}

/// One server of the host.
pub(crate) struct Entry {
    generation: u64,
    /// The name, shared by the namespace's entries.
    server: Arc<str>,
    /// `None` while it is being started, or if it could not start.
    client: Option<Client>,
    /// Why it could not start, or why it gave up.
    failure: Option<String>,
    /// What it is started with (again, by a revive).
    config: ClientConfig,
    /// Its pause between giving up and its revive (zero: none).
    revive_after: Duration,
    /// When it is started again, once it gave up.
    revive_at: Option<Instant>,
    /// Why it was down before this start, when this start is a revive.
    revived_from: Option<String>,
    added: Instant,
    ready_after: Option<Duration>,
    lists: Lists,
    listed: bool,
    list_error: Option<String>,
    watcher: Option<JoinHandle<()>>,
}

impl Entry {
    /// The timeout of its calls (for waiting on its first listing).
    fn request_timeout(&self) -> Duration {
        self.config.get_request_timeout()
    }

    /// How long until its revive, once it gave up with a pause.
    fn next_try_in(&self) -> Option<Duration> {
        self.revive_at
            .map(|at| at.saturating_duration_since(Instant::now()))
    }

    fn status(&self) -> Status {
        match (&self.client, &self.failure) {
            (_, Some(reason)) => Status::GaveUp(reason.clone()),
            (Some(c), None) => c.status(),
            (None, None) => Status::Starting,
        }
    }

    /// Whether waiting for this server is over: ready and listed, or never
    /// to serve again.
    fn settled(&self) -> bool {
        let status = self.status();
        status.is_final() || (self.listed && matches!(status, Status::Ready(_)))
    }

    fn is(&self, ticket: &Ticket) -> bool {
        self.generation == ticket.generation
    }

    /// It gave up (or could not start) for `reason`: its revive is due
    /// after its pause, if it has one. Returns the pause.
    fn down(&mut self, reason: String) -> Option<Duration> {
        self.failure = Some(reason);
        let pause = Some(self.revive_after).filter(|p| !p.is_zero())?;
        self.revive_at = Some(Instant::now().after(pause));
        Some(pause)
    }
}

/// What a host says of a server that went down for `reason`: with a
/// revive due in `next_try`, [`HostEvent::Down`], else it left for good.
fn down_event(ticket: &Ticket, reason: String, next_try: Option<Duration>) -> HostEvent {
    let server = ticket.name.clone();
    match next_try {
        Some(next_try_in) => HostEvent::Down {
            server,
            reason,
            next_try_in,
        },
        None => HostEvent::Removed { server, reason },
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if let Some(w) = self.watcher.take() {
            w.abort();
        }
    }
}

/// What [`HostShared::revives_due`] found: the servers to start again now
/// (reserved, with their config), and when the next revive is due.
pub(crate) struct Revives {
    due: Vec<(Ticket, ClientConfig)>,
    next: Option<Instant>,
}

impl Revives {
    /// The servers to start now, and when the next revive is due.
    pub(crate) fn into_parts(self) -> (Vec<(Ticket, ClientConfig)>, Option<Instant>) {
        (self.due, self.next)
    }
}

/// A server taken out of the host: what is left to stop.
enum Taken {
    /// Its client, to stop.
    Running(Client),
    /// Its start is in flight: the client it brings is stopped on arrival,
    /// and its shutdown sent here.
    Starting(oneshot::Receiver<(String, ClientShutdown)>),
    /// It never started.
    Nothing,
}

#[derive(Default)]
struct Catalog {
    servers: BTreeMap<String, Entry>,
    namespace: Namespace,
    stopped: bool,
    next_generation: u64,
    /// Starts in flight whose reservation was removed, by generation.
    orphans: HashMap<u64, oneshot::Sender<(String, ClientShutdown)>>,
    /// Servers started on their first use, not started yet.
    lazy: BTreeMap<String, lazy::Lazy>,
    /// [`HostConfig::revive_after`].
    revive_after: Duration,
    /// [`HostConfig::server_revive_after`].
    server_revive_after: BTreeMap<String, Duration>,
}

impl Catalog {
    /// Whether `name` may be a new server: not taken (started or lazy),
    /// and no namespaced name could then mean two servers.
    fn check_new(&self, naming: &Naming, name: &str) -> Result<(), HostError> {
        if self.servers.contains_key(name) || self.lazy.contains_key(name) {
            return Err(HostError::Duplicate(name.to_owned()));
        }
        let others = self.servers.keys().chain(self.lazy.keys());
        naming.check_server(name, others.map(String::as_str))?;
        Ok(())
    }

    /// Reserves `name` (checked) for a server being started with `config`.
    fn reserve(&mut self, name: &str, config: &ClientConfig) -> Ticket {
        self.next_generation += 1;
        let generation = self.next_generation;
        let revive_after = self
            .server_revive_after
            .get(name)
            .copied()
            .unwrap_or(self.revive_after);
        self.servers.insert(
            name.to_owned(),
            Entry {
                generation,
                server: Arc::from(name),
                client: None,
                failure: None,
                config: config.clone(),
                revive_after,
                revive_at: None,
                revived_from: None,
                added: Instant::now(),
                ready_after: None,
                lists: Lists::default(),
                listed: false,
                list_error: None,
                watcher: None,
            },
        );
        Ticket {
            name: name.to_owned(),
            generation,
        }
    }

    /// Takes `name` out: its names leave the namespace (passing to their
    /// next claimants); returns what is left to stop.
    fn take(&mut self, naming: &Naming, name: &str) -> Option<Taken> {
        let entry = self.servers.remove(name)?;
        release(&mut self.namespace, &self.servers, naming, &entry);
        Some(match (&entry.client, &entry.failure) {
            (Some(c), _) => Taken::Running(c.clone()),
            (None, None) => {
                let (tx, rx) = oneshot::channel();
                self.orphans.insert(entry.generation, tx);
                Taken::Starting(rx)
            }
            (None, Some(_)) => Taken::Nothing,
        })
    }
}

impl HostShutdown {
    /// Stops what is left of a server taken out of the host; its shutdown
    /// joins this one.
    fn add(&mut self, name: String, taken: Taken) {
        match taken {
            Taken::Running(client) => self.servers.push((name, client.stop())),
            Taken::Starting(rx) => self.starting.push(rx),
            Taken::Nothing => {}
        }
    }
}

/// Takes `entry`'s names out of the namespace (they pass to their next
/// claimants among `servers`).
fn release(ns: &mut Namespace, servers: &BTreeMap<String, Entry>, naming: &Naming, entry: &Entry) {
    for kind in ItemKind::ALL {
        let lists_of = |s: &str| servers.get(s).map(|e| e.lists.get(kind).as_slice());
        ns.update(
            naming,
            kind,
            &entry.server,
            entry.lists.get(kind),
            &[],
            &lists_of,
        );
    }
}

pub(crate) struct HostShared {
    naming: Naming,
    when_unavailable: WhenUnavailable,
    /// How long a start waits for its servers ([`HostConfig::ready_timeout`]).
    ready_timeout: Duration,
    handler: Option<Arc<dyn ClientHandler>>,
    handler_for: Option<super::config::HandlerFactory>,
    catalog: Mutex<Catalog>,
    /// Bumped whenever a server's status or lists may have changed.
    changed: watch::Sender<u64>,
    events: EventFanout,
}

impl HostShared {
    /// How the host joins names.
    #[inline]
    pub(crate) fn naming(&self) -> &Naming {
        &self.naming
    }

    /// How long a call waits for its server to be ready.
    #[inline]
    pub(crate) fn ready_timeout(&self) -> Duration {
        self.ready_timeout
    }

    pub(crate) fn new(
        config: &HostConfig,
        handler: Option<Arc<dyn ClientHandler>>,
        handler_for: Option<super::config::HandlerFactory>,
        early: Vec<Subscriber>,
    ) -> Self {
        HostShared {
            naming: config.naming(),
            when_unavailable: config.get_when_unavailable(),
            ready_timeout: config.get_ready_timeout(),
            handler,
            handler_for,
            catalog: Mutex::new(Catalog {
                revive_after: config.get_revive_after(),
                server_revive_after: config.get_server_revive_after().clone(),
                ..Catalog::default()
            }),
            changed: watch::Sender::new(0),
            events: EventFanout::new(config.get_max_queued_event_bytes(), "host events", early),
        }
    }

    /// The handler of the server `name`'s requests.
    pub(crate) fn handler_of(&self, name: &str) -> Option<Arc<dyn ClientHandler>> {
        match &self.handler_for {
            Some(make) => Some(make(name)),
            None => self.handler.clone(),
        }
    }

    /// Who holds the namespaced `name` of `kind` now, without waiting.
    pub(crate) fn owner_of(&self, kind: ItemKind, name: &str) -> Option<ItemRef> {
        let cat = self.lock();
        cat.namespace.table(kind).get(name).map(|h| ItemRef {
            server: h.server().to_string(),
            name: h.item().own().to_string(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Catalog> {
        crate::sync::lock(&self.catalog)
    }

    pub(crate) fn subscribe(&self) -> HostEvents {
        self.events.events()
    }

    pub(crate) fn emit(&self, event: HostEvent) {
        self.events.publish(event);
    }

    /// Wakes whoever waits for the servers (see [`wait_settled`](Self::wait_settled)).
    pub(crate) fn touch(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Reserves `name` for a server being started with `config`.
    pub(crate) fn reserve(&self, name: &str, config: &ClientConfig) -> Result<Ticket, HostError> {
        let mut cat = self.lock();
        if cat.stopped {
            return Err(HostError::Stopped);
        }
        cat.check_new(&self.naming, name)?;
        Ok(cat.reserve(name, config))
    }

    /// Sets (or, with `None`, clears) the server `name`'s own pause before
    /// a revive, for its next start.
    pub(crate) fn set_revive_after(&self, name: &str, pause: Option<Duration>) {
        let mut cat = self.lock();
        match pause {
            Some(p) => cat.server_revive_after.insert(name.to_owned(), p),
            None => cat.server_revive_after.remove(name),
        };
    }

    /// The started client of `ticket`, and its watcher. If the reservation
    /// is gone (removed, cancelled, the host stopped), the client is
    /// stopped and its shutdown handed to whoever removed it.
    pub(crate) fn fill(
        &self,
        ticket: &Ticket,
        client: Client,
        watcher: JoinHandle<()>,
    ) -> Result<(), HostError> {
        let (orphan, stopped) = {
            let mut cat = self.lock();
            let stopped = cat.stopped;
            match cat.servers.get_mut(&ticket.name) {
                Some(e) if !stopped && e.is(ticket) => {
                    e.client = Some(client);
                    e.watcher = Some(watcher);
                    return Ok(());
                }
                _ => (cat.orphans.remove(&ticket.generation), stopped),
            }
        };
        watcher.abort();
        info!(server = %ticket.name, "host: server removed while it started; stopping it");
        let shutdown = client.stop();
        if let Some(tx) = orphan {
            let _ = tx.send((ticket.name.clone(), shutdown));
        }
        Err(if stopped {
            HostError::Stopped
        } else {
            HostError::Removed {
                server: ticket.name.clone(),
                reason: "removed from the host while it started".into(),
            }
        })
    }

    /// `ticket`'s server could not start: kept with its reason (`keep`),
    /// its revive due after its pause, or forgotten.
    pub(crate) fn failed(&self, ticket: &Ticket, reason: String, keep: bool) {
        let kept = {
            let mut cat = self.lock();
            cat.orphans.remove(&ticket.generation);
            match cat.servers.get_mut(&ticket.name) {
                Some(e) if e.is(ticket) && keep => Some(e.down(reason.clone())),
                Some(e) if e.is(ticket) => {
                    cat.servers.remove(&ticket.name);
                    None
                }
                _ => None,
            }
        };
        if let Some(next_try) = kept {
            self.emit(down_event(ticket, reason, next_try));
        }
        self.touch();
    }

    /// Notes the first time a server is ready.
    pub(crate) fn mark_ready(&self, ticket: &Ticket) {
        if let Some(e) = self.lock().servers.get_mut(&ticket.name) {
            if e.is(ticket) {
                e.ready_after.get_or_insert(e.added.elapsed());
            }
        }
    }

    /// Applies a listing: the lists that changed, the namespace for this
    /// server only, the events.
    pub(crate) fn listed(&self, ticket: &Ticket, fetched: Fetched) {
        let name = &ticket.name;
        let (lists, error) = fetched.into_parts();
        let (counts, collisions, changed) = {
            let mut cat = self.lock();
            let Catalog {
                servers, namespace, ..
            } = &mut *cat;
            let Some(entry) = servers.get(name).filter(|e| e.is(ticket)) else {
                return;
            };
            let mut changed = !entry.listed || entry.list_error != error;
            let mut collisions = Vec::new();
            let mut fresh = Vec::new();
            for (kind, list) in lists {
                if items::same(entry.lists.get(kind), &list) {
                    continue;
                }
                let lists_of = |s: &str| servers.get(s).map(|e| e.lists.get(kind).as_slice());
                collisions.extend(namespace.update(
                    &self.naming,
                    kind,
                    &entry.server,
                    entry.lists.get(kind),
                    &list,
                    &lists_of,
                ));
                fresh.push((kind, list));
                changed = true;
            }
            let Some(entry) = servers.get_mut(name) else {
                return;
            };
            for (kind, list) in fresh {
                *entry.lists.get_mut(kind) = list;
            }
            entry.listed = true;
            entry.list_error.clone_from(&error);
            (entry.lists.counts(), collisions, changed)
        };
        let (tools, prompts, resources) = counts;
        info!(server = %name, tools, prompts, resources, changed, "host: server listed");
        if let Some(error) = error {
            warn!(server = %name, %error, "host: listing failed");
            self.emit(HostEvent::ListFailed {
                server: name.clone(),
                error,
            });
        }
        self.emit(HostEvent::Listed {
            server: name.clone(),
            tools,
            prompts,
            resources,
        });
        self.report(collisions);
        if changed {
            self.touch();
        }
    }

    fn report(&self, collisions: Vec<Collision>) {
        for c in collisions {
            warn!(collision = %c, "host: namespace collision");
            self.emit(HostEvent::Collision(c));
        }
    }

    /// Takes a server that gave up out of the namespace, keeping its reason;
    /// its revive is due after its pause.
    pub(crate) fn retire(&self, ticket: &Ticket, reason: String) {
        let next_try = {
            let mut cat = self.lock();
            let Catalog {
                servers, namespace, ..
            } = &mut *cat;
            let Some(entry) = servers.get(&ticket.name).filter(|e| e.is(ticket)) else {
                return;
            };
            release(namespace, servers, &self.naming, entry);
            let Some(entry) = servers.get_mut(&ticket.name) else {
                return;
            };
            entry.lists = Lists::default();
            entry.down(reason.clone())
        };
        info!(server = %ticket.name, %reason, next_try_in = ?next_try, "host: server removed from the namespace");
        self.emit(down_event(ticket, reason, next_try));
        self.touch();
    }

    /// The servers whose revive is due now, each reserved again in place
    /// with its config (their [`HostEvent::Reviving`] emitted), and when
    /// the next one is due; `None` once the host is stopped.
    pub(crate) fn revives_due(&self) -> Option<Revives> {
        let (due, next) = {
            let mut cat = self.lock();
            if cat.stopped {
                return None;
            }
            let now = Instant::now();
            let names: Vec<String> = cat
                .servers
                .iter()
                .filter(|(_, e)| e.revive_at.is_some_and(|at| at <= now))
                .map(|(n, _)| n.clone())
                .collect();
            let mut due = Vec::with_capacity(names.len());
            for name in names {
                let Some(old) = cat.servers.get(&name) else {
                    continue;
                };
                let (config, reason) = (old.config.clone(), old.failure.clone());
                // The old entry (its given-up client) goes; its names left
                // the namespace when it gave up.
                let ticket = cat.reserve(&name, &config);
                if let Some(e) = cat.servers.get_mut(&name) {
                    e.revived_from = reason;
                }
                due.push((ticket, config));
            }
            let next = cat.servers.values().filter_map(|e| e.revive_at).min();
            (due, next)
        };
        for (ticket, _) in &due {
            info!(server = %ticket.name, "host: starting a server again after its pause");
            self.emit(HostEvent::Reviving {
                server: ticket.name.clone(),
            });
        }
        if !due.is_empty() {
            self.touch();
        }
        Some(Revives { due, next })
    }

    /// Takes `name` out of the host and stops it.
    pub(crate) fn remove(&self, name: &str) -> Result<HostShutdown, HostError> {
        let (was_lazy, taken) = {
            let mut cat = self.lock();
            let was_lazy = Self::forget_lazy(&mut cat, name);
            (was_lazy, cat.take(&self.naming, name))
        };
        if !was_lazy && taken.is_none() {
            return Err(HostError::UnknownServer(name.to_owned()));
        }
        info!(server = %name, "host: server removed");
        self.emit(HostEvent::Removed {
            server: name.to_owned(),
            reason: "removed from the host".into(),
        });
        self.touch();
        let mut shutdown = HostShutdown::empty();
        if let Some(taken) = taken {
            shutdown.add(name.to_owned(), taken);
        }
        Ok(shutdown)
    }

    /// An `add` that was dropped before it returned: its server goes
    /// (if that reservation is still the one in place).
    pub(crate) fn cancel(&self, ticket: &Ticket) {
        let taken = {
            let mut cat = self.lock();
            if !cat.servers.get(&ticket.name).is_some_and(|e| e.is(ticket)) {
                return;
            }
            cat.take(&self.naming, &ticket.name)
        };
        info!(server = %ticket.name, "host: add cancelled; server removed");
        if let Some(taken) = taken {
            // Nobody waits for this one: its shutdown runs on its own.
            HostShutdown::empty().add(ticket.name.clone(), taken);
        }
        self.emit(HostEvent::Removed {
            server: ticket.name.clone(),
            reason: "its add was cancelled".into(),
        });
        self.touch();
    }

    /// Whether the host was stopped ([`stop_all`](Self::stop_all): a stop,
    /// its last handle dropped, or its actor's end however it ended).
    pub(crate) fn is_stopped(&self) -> bool {
        self.lock().stopped
    }

    /// Stops every server; no server is added after this.
    pub(crate) fn stop_all(&self) -> HostShutdown {
        let taken: Vec<(String, Taken)> = {
            let mut cat = self.lock();
            cat.stopped = true;
            cat.lazy.clear();
            let names: Vec<String> = cat.servers.keys().cloned().collect();
            names
                .into_iter()
                .filter_map(|n| {
                    let t = cat.take(&self.naming, &n)?;
                    Some((n, t))
                })
                .collect()
        };
        self.touch();
        let mut shutdown = HostShutdown::empty();
        for (name, t) in taken {
            info!(server = %name, "host: server stopped");
            shutdown.add(name, t);
        }
        shutdown
    }

    pub(crate) fn summaries(&self) -> Vec<ServerSummary> {
        let cat = self.lock();
        cat.servers
            .iter()
            .map(|(name, e)| {
                let (tools, prompts, resources) = e.lists.counts();
                ServerSummary {
                    name: name.clone(),
                    status: e.status(),
                    tools,
                    prompts,
                    resources,
                    listed: e.listed,
                    ready_after: e.ready_after,
                    list_error: e.list_error.clone(),
                    next_try_in: e.next_try_in(),
                }
            })
            .collect()
    }

    /// Whether `name` is a server whose start failed (it never ran).
    pub(crate) fn never_started(&self, name: &str) -> bool {
        self.lock()
            .servers
            .get(name)
            .is_some_and(|e| e.client.is_none() && e.failure.is_some())
    }

    pub(crate) fn client(&self, name: &str) -> Option<Client> {
        self.lock().servers.get(name)?.client.clone()
    }

    /// The first holder of `kind` that `matches`, cloned alone (a lookup
    /// on every call copies no table).
    pub(crate) fn holder_where(
        &self,
        kind: ItemKind,
        matches: impl Fn(&Listed) -> bool,
    ) -> Option<(String, Listed)> {
        let cat = self.lock();
        cat.namespace
            .table(kind)
            .iter()
            .find(|(_, h)| matches(h))
            .map(|(k, h)| (k.clone(), h.clone()))
    }

    /// Every name of `kind` and its holder (the public views are built
    /// from them outside the lock).
    pub(crate) fn holders(&self, kind: ItemKind) -> Vec<(String, Listed)> {
        let cat = self.lock();
        cat.namespace
            .table(kind)
            .iter()
            .map(|(k, h)| (k.clone(), h.clone()))
            .collect()
    }

    pub(crate) fn collisions(&self) -> Vec<Collision> {
        self.lock().namespace.collisions().to_vec()
    }

    /// Waits until every server is settled (ready and listed, or final),
    /// up to `timeout`.
    pub(crate) async fn wait_settled(&self, timeout: Duration) {
        use crate::deadline::After;
        let mut rx = self.changes();
        let all = async {
            loop {
                if self.lock().servers.values().all(Entry::settled) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout_at(Instant::now().after(timeout), all).await;
    }
}
