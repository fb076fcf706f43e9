//! What the host knows, shared by its handles and its watchers: the servers
//! by name, their lists, the namespace built from them, and the event
//! subscribers. One lock, never held across an `await`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{info, warn};

use super::config::{HostConfig, WhenUnavailable};
use super::listing::Fetched;
use super::namespace::{ItemKind, Lists, Namespace, Naming};
use super::{HostError, HostEvent, ServerSummary};
use crate::client::ClientHandler;
use crate::client::Status;
use crate::client::{Client, ClientShutdown};

/// One server of the host.
pub(crate) struct Entry {
    /// `None` while it is being started, or if it could not start.
    client: Option<Client>,
    /// Why it could not start, or why it gave up.
    failure: Option<String>,
    /// The timeout of its calls (for waiting on its first listing).
    request_timeout: Duration,
    added: Instant,
    ready_after: Option<Duration>,
    lists: Lists,
    listed: bool,
    list_error: Option<String>,
    watcher: Option<JoinHandle<()>>,
}

impl Entry {
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
}

impl Drop for Entry {
    fn drop(&mut self) {
        if let Some(w) = self.watcher.take() {
            w.abort();
        }
    }
}

#[derive(Default)]
struct Catalog {
    servers: BTreeMap<String, Entry>,
    namespace: Namespace,
    stopped: bool,
}

/// Where a call goes.
pub(crate) struct Route {
    pub(crate) server: String,
    /// The item's own name (or URI) on its server.
    pub(crate) own: String,
    pub(crate) client: Client,
}

pub(crate) struct HostShared {
    pub(crate) naming: Naming,
    pub(crate) when_unavailable: WhenUnavailable,
    pub(crate) handler: Option<Arc<dyn ClientHandler>>,
    catalog: Mutex<Catalog>,
    /// Bumped whenever a server's status or lists may have changed.
    changed: watch::Sender<u64>,
    subscribers: Mutex<Vec<mpsc::UnboundedSender<HostEvent>>>,
}

impl HostShared {
    pub(crate) fn new(
        config: &HostConfig,
        handler: Option<Arc<dyn ClientHandler>>,
        events: Option<mpsc::UnboundedSender<HostEvent>>,
    ) -> Self {
        HostShared {
            naming: config.naming(),
            when_unavailable: config.when_unavailable,
            handler,
            catalog: Mutex::default(),
            changed: watch::Sender::new(0),
            subscribers: Mutex::new(events.into_iter().collect()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Catalog> {
        crate::sync::lock(&self.catalog)
    }

    pub(crate) fn subscribe(&self) -> mpsc::UnboundedReceiver<HostEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        crate::sync::lock(&self.subscribers).push(tx);
        rx
    }

    pub(crate) fn emit(&self, event: HostEvent) {
        let mut subs = crate::sync::lock(&self.subscribers);
        subs.retain(|tx| tx.send(event.clone()).is_ok());
    }

    /// Wakes whoever waits for the servers (see [`wait_settled`](Self::wait_settled)).
    pub(crate) fn touch(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Reserves `name` for a server being started.
    pub(crate) fn reserve(&self, name: &str, request_timeout: Duration) -> Result<(), HostError> {
        let mut cat = self.lock();
        if cat.stopped {
            return Err(HostError::Stopped);
        }
        if cat.servers.contains_key(name) {
            return Err(HostError::Duplicate(name.to_owned()));
        }
        cat.servers.insert(
            name.to_owned(),
            Entry {
                client: None,
                failure: None,
                request_timeout,
                added: Instant::now(),
                ready_after: None,
                lists: Lists::default(),
                listed: false,
                list_error: None,
                watcher: None,
            },
        );
        Ok(())
    }

    /// The started client of a reserved `name`, and its watcher. `false`
    /// if the host was stopped (or the server removed) meanwhile: the
    /// caller stops the client.
    pub(crate) fn fill(&self, name: &str, client: Client, watcher: JoinHandle<()>) -> bool {
        let mut cat = self.lock();
        let stopped = cat.stopped;
        match cat.servers.get_mut(name) {
            Some(e) if !stopped && e.client.is_none() => {
                e.client = Some(client);
                e.watcher = Some(watcher);
                true
            }
            _ => {
                watcher.abort();
                false
            }
        }
    }

    /// A reserved server that could not start: kept with its reason
    /// (`keep`), or forgotten.
    pub(crate) fn failed(&self, name: &str, reason: String, keep: bool) {
        {
            let mut cat = self.lock();
            if keep {
                if let Some(e) = cat.servers.get_mut(name) {
                    e.failure = Some(reason.clone());
                }
            } else {
                cat.servers.remove(name);
            }
        }
        if keep {
            self.emit(HostEvent::Removed {
                server: name.to_owned(),
                reason,
            });
        }
        self.touch();
    }

    /// Notes the first time a server is ready.
    pub(crate) fn mark_ready(&self, name: &str) {
        if let Some(e) = self.lock().servers.get_mut(name) {
            e.ready_after.get_or_insert(e.added.elapsed());
        }
    }

    /// Applies a listing: new lists, a new namespace, the events.
    pub(crate) fn listed(&self, name: &str, fetched: Fetched) {
        let error = fetched.error.clone();
        let (counts, new_collisions) = {
            let mut cat = self.lock();
            let Some(entry) = cat.servers.get_mut(name) else {
                return;
            };
            fetched.apply(&mut entry.lists);
            entry.listed = true;
            entry.list_error = error.clone();
            let l = &entry.lists;
            let counts = (l.tools.len(), l.prompts.len(), l.resources.len());
            (counts, self.rebuild(&mut cat))
        };
        let (tools, prompts, resources) = counts;
        info!(server = %name, tools, prompts, resources, "host: server listed");
        if let Some(error) = error {
            warn!(server = %name, %error, "host: listing failed");
            self.emit(HostEvent::ListFailed {
                server: name.to_owned(),
                error,
            });
        }
        self.emit(HostEvent::Listed {
            server: name.to_owned(),
            tools,
            prompts,
            resources,
        });
        for c in new_collisions {
            warn!(collision = %c, "host: namespace collision");
            self.emit(HostEvent::Collision(c));
        }
        self.touch();
    }

    /// Removes a server that gave up from the namespace, keeping its reason.
    pub(crate) fn retire(&self, name: &str, reason: String) {
        {
            let mut cat = self.lock();
            let Some(entry) = cat.servers.get_mut(name) else {
                return;
            };
            entry.failure = Some(reason.clone());
            entry.lists = Lists::default();
            self.rebuild(&mut cat);
        }
        info!(server = %name, %reason, "host: server removed from the namespace");
        self.emit(HostEvent::Removed {
            server: name.to_owned(),
            reason,
        });
        self.touch();
    }

    /// Takes `name` out of the host; its client to stop.
    pub(crate) fn remove(&self, name: &str) -> Result<Option<Client>, HostError> {
        let entry = {
            let mut cat = self.lock();
            let entry = cat
                .servers
                .remove(name)
                .ok_or_else(|| HostError::UnknownServer(name.to_owned()))?;
            self.rebuild(&mut cat);
            entry
        };
        self.emit(HostEvent::Removed {
            server: name.to_owned(),
            reason: "removed from the host".into(),
        });
        self.touch();
        Ok(entry.client.clone())
    }

    /// Stops every server; no server is added after this.
    pub(crate) fn stop_all(&self) -> Vec<(String, ClientShutdown)> {
        let entries = {
            let mut cat = self.lock();
            cat.stopped = true;
            cat.namespace = Namespace::default();
            std::mem::take(&mut cat.servers)
        };
        self.touch();
        entries
            .into_iter()
            .filter_map(|(name, e)| {
                let shutdown = e.client.as_ref()?.stop();
                info!(server = %name, "host: server stopped");
                Some((name, shutdown))
            })
            .collect()
    }

    /// Rebuilds the namespace; returns the collisions that are new.
    fn rebuild(&self, cat: &mut Catalog) -> Vec<super::Collision> {
        let ns = Namespace::build(
            &self.naming,
            cat.servers.iter().map(|(n, e)| (n.as_str(), &e.lists)),
        );
        let new = ns
            .collisions
            .iter()
            .filter(|c| !cat.namespace.collisions.contains(c))
            .cloned()
            .collect();
        cat.namespace = ns;
        new
    }

    pub(crate) fn summaries(&self) -> Vec<ServerSummary> {
        let cat = self.lock();
        cat.servers
            .iter()
            .map(|(name, e)| ServerSummary {
                name: name.clone(),
                status: e.status(),
                tools: e.lists.tools.len(),
                prompts: e.lists.prompts.len(),
                resources: e.lists.resources.len(),
                listed: e.listed,
                ready_after: e.ready_after,
                list_error: e.list_error.clone(),
            })
            .collect()
    }

    pub(crate) fn client(&self, name: &str) -> Option<Client> {
        self.lock().servers.get(name)?.client.clone()
    }

    pub(crate) fn with_namespace<R>(&self, f: impl FnOnce(&Namespace) -> R) -> R {
        f(&self.lock().namespace)
    }

    /// Waits until every server is settled (ready and listed, or final),
    /// up to `timeout`.
    pub(crate) async fn wait_settled(&self, timeout: Duration) {
        let mut rx = self.changed.subscribe();
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
        let _ = tokio::time::timeout(timeout, all).await;
    }

    /// Where the item `name` of `kind` goes, if its server can take a call
    /// now (see [`WhenUnavailable`]); with `Wait`, waits (up to the
    /// server's request timeout) for a server that was not listed yet.
    pub(crate) async fn route(&self, kind: ItemKind, name: &str) -> Result<Route, HostError> {
        let mut rx = self.changed.subscribe();
        let mut deadline: Option<Instant> = None;
        loop {
            match self.route_now(kind, name) {
                Err(RouteMiss::NotYet { timeout, .. })
                    if self.when_unavailable == WhenUnavailable::Wait =>
                {
                    let until = *deadline.get_or_insert_with(|| Instant::now() + timeout);
                    let changed = tokio::time::timeout_at(until, rx.changed()).await;
                    if !matches!(changed, Ok(Ok(()))) {
                        return self
                            .route_now(kind, name)
                            .map_err(|e| e.into_error(kind, name));
                    }
                }
                r => return r.map_err(|e| e.into_error(kind, name)),
            }
        }
    }

    fn route_now(&self, kind: ItemKind, name: &str) -> Result<Route, RouteMiss> {
        let cat = self.lock();
        if cat.stopped {
            return Err(RouteMiss::Error(HostError::Stopped));
        }
        let ns = &cat.namespace;
        let found = match kind {
            ItemKind::Tool => ns.tools.get(name).map(|t| (&t.server, t.tool.name.clone())),
            ItemKind::Prompt => ns
                .prompts
                .get(name)
                .map(|p| (&p.server, super::namespace::own_name(&p.prompt, "name"))),
            ItemKind::Resource => ns.resources.get(name).map(|r| (&r.server, r.uri.clone())),
        };
        let Some((server, own)) = found else {
            return Err(self.explain_miss(&cat, kind, name));
        };
        let entry = cat
            .servers
            .get(server)
            .ok_or_else(|| RouteMiss::Error(HostError::UnknownServer(server.clone())))?;
        let client = entry
            .client
            .clone()
            .ok_or_else(|| RouteMiss::Error(HostError::UnknownServer(server.clone())))?;
        match entry.status() {
            Status::Ready(_) => {}
            s if s.is_final() => {
                return Err(RouteMiss::Error(HostError::Removed {
                    server: server.clone(),
                    reason: describe(&s),
                }))
            }
            s if self.when_unavailable == WhenUnavailable::FailFast => {
                return Err(RouteMiss::Error(HostError::Unavailable {
                    server: server.clone(),
                    state: describe(&s),
                }))
            }
            // Wait: the client waits for its server within the call's timeout.
            _ => {}
        }
        Ok(Route {
            server: server.clone(),
            own,
            client,
        })
    }

    /// Why `name` is not in the namespace: its server (found by prefix) is
    /// not listed yet, or gave up; or no such item.
    fn explain_miss(&self, cat: &Catalog, kind: ItemKind, name: &str) -> RouteMiss {
        let owner = match kind {
            ItemKind::Resource => None,
            _ => cat
                .servers
                .iter()
                .filter(|(server, _)| name.starts_with(&self.naming.prefix(server)))
                .max_by_key(|(server, _)| server.len()),
        };
        match owner {
            Some((server, e)) if e.status().is_final() => RouteMiss::Error(HostError::Removed {
                server: server.clone(),
                reason: describe(&e.status()),
            }),
            Some((server, e)) if !e.listed => RouteMiss::NotYet {
                server: server.clone(),
                timeout: e.request_timeout,
            },
            _ => RouteMiss::Unknown,
        }
    }
}

/// Why an item could not be routed now.
enum RouteMiss {
    /// Its server (found by the name's prefix) has not listed yet.
    NotYet {
        server: String,
        timeout: Duration,
    },
    /// No server has it.
    Unknown,
    Error(HostError),
}

impl RouteMiss {
    fn into_error(self, kind: ItemKind, name: &str) -> HostError {
        match self {
            RouteMiss::Error(e) => e,
            RouteMiss::NotYet { server, .. } => HostError::Unavailable {
                server,
                state: "starting: its list is not known yet".into(),
            },
            RouteMiss::Unknown => match kind {
                ItemKind::Tool => HostError::UnknownTool(name.to_owned()),
                ItemKind::Prompt => HostError::UnknownPrompt(name.to_owned()),
                ItemKind::Resource => HostError::UnknownResource(name.to_owned()),
            },
        }
    }
}

/// A status, in words, for an error.
fn describe(status: &Status) -> String {
    match status {
        Status::Starting => "starting".into(),
        Status::Ready(_) => "ready".into(),
        Status::Restarting { attempt, reason } => {
            format!("restarting (attempt {attempt}) after: {reason}")
        }
        Status::GaveUp(reason) => reason.clone(),
        Status::Stopped => "stopped".into(),
    }
}
