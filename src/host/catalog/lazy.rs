//! Servers started on their first use. Each is kept by name, its name
//! checked with the others', until a call, a listing or
//! [`Host::start_lazy`](crate::host::Host::start_lazy) needs it. It stays
//! lazy until that start is over (ready and listed, or never to be), so
//! that every use meanwhile finds it and waits for the same start; a
//! start that fails leaves it lazy, and the next use tries again.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OnceCell;
use tracing::{info, warn};

use super::{HostShared, Ticket};
use crate::client::ClientConfig;
use crate::deadline::After;
use crate::host::HostError;

/// One start of a lazy server, shared by its concurrent first uses: its
/// result, or why it could not start.
pub(crate) type LazyStart = OnceCell<Result<(), String>>;

/// A lazy server not started yet.
pub(super) struct Lazy {
    config: ClientConfig,
    start: Arc<LazyStart>,
}

impl Lazy {
    fn new(config: ClientConfig) -> Self {
        Lazy {
            config,
            start: Arc::default(),
        }
    }
}

/// What [`HostShared::reserve_lazy`] found.
pub(crate) enum Reserved {
    /// It was lazy: now reserved, to be started with this config.
    Now(Ticket, Box<ClientConfig>),
    /// It is in the host already (an earlier start of it is under way or
    /// done).
    Already,
}

impl HostShared {
    /// Adds `name` as a lazy server (not started until its first use).
    pub(crate) fn add_lazy(&self, name: &str, config: ClientConfig) -> Result<(), HostError> {
        {
            let mut cat = self.lock();
            if cat.stopped {
                return Err(HostError::Stopped);
            }
            cat.check_new(&self.naming, name)?;
            cat.lazy.insert(name.to_owned(), Lazy::new(config));
        }
        info!(server = %name, "host: lazy server added; it starts on its first use");
        self.touch();
        Ok(())
    }

    /// The lazy servers not started yet, by name.
    pub(crate) fn lazy_names(&self) -> Vec<String> {
        self.lock().lazy.keys().cloned().collect()
    }

    /// Whether `name` is a lazy server not started yet.
    pub(crate) fn is_lazy(&self, name: &str) -> bool {
        self.lock().lazy.contains_key(name)
    }

    /// The lazy server (not started yet) whose prefix the namespaced
    /// `name` has.
    pub(crate) fn lazy_owner(&self, name: &str) -> Option<String> {
        let cat = self.lock();
        cat.lazy
            .keys()
            .find(|s| name.starts_with(&self.naming.prefix(s)))
            .cloned()
    }

    /// The start that lazy server `name`'s first uses share, if it is one.
    pub(crate) fn lazy_start(&self, name: &str) -> Option<Arc<LazyStart>> {
        self.lock().lazy.get(name).map(|l| l.start.clone())
    }

    /// Reserves the lazy server `name` for its start (it stays lazy until
    /// the start is over: see [`started_lazy`](Self::started_lazy)).
    pub(crate) fn reserve_lazy(&self, name: &str) -> Result<Reserved, HostError> {
        let mut cat = self.lock();
        if cat.stopped {
            return Err(HostError::Stopped);
        }
        if cat.servers.contains_key(name) {
            return Ok(Reserved::Already);
        }
        let config = match cat.lazy.get(name) {
            Some(lazy) => lazy.config.clone(),
            None => return Err(HostError::UnknownServer(name.to_owned())),
        };
        // Its name was checked when it was added.
        let ticket = cat.reserve(name, &config);
        Ok(Reserved::Now(ticket, Box::new(config)))
    }

    /// A lazy server's start is over: it is lazy no more (unless `start`
    /// is not its start: removed and added again meanwhile).
    pub(crate) fn started_lazy(&self, name: &str, start: &Arc<LazyStart>) {
        let mut cat = self.lock();
        if cat
            .lazy
            .get(name)
            .is_some_and(|l| Arc::ptr_eq(&l.start, start))
        {
            cat.lazy.remove(name);
        }
    }

    /// A lazy server's start failed: its reservation goes, and its next
    /// use starts it again (a fresh start), in one step.
    pub(crate) fn failed_lazy(&self, ticket: &Ticket, reason: &str) {
        {
            let mut cat = self.lock();
            cat.orphans.remove(&ticket.generation);
            if cat.servers.get(&ticket.name).is_some_and(|e| e.is(ticket)) {
                cat.servers.remove(&ticket.name);
            }
            if let Some(lazy) = cat.lazy.get_mut(&ticket.name) {
                lazy.start = Arc::default();
            }
        }
        warn!(server = %ticket.name, %reason, "host: lazy server could not start; it stays lazy");
        self.touch();
    }

    /// Forgets that `name` is lazy; whether it was.
    pub(super) fn forget_lazy(cat: &mut super::Catalog, name: &str) -> bool {
        cat.lazy.remove(name).is_some()
    }

    /// Waits until server `name` is ready and listed, or will never be, or
    /// is gone, up to `timeout`.
    pub(crate) async fn wait_one_settled(&self, name: &str, timeout: Duration) {
        let mut rx = self.changes();
        let settled = async {
            loop {
                match self.lock().servers.get(name) {
                    Some(e) if !e.settled() => {}
                    _ => return,
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        let until = tokio::time::Instant::now().after(timeout);
        let _ = tokio::time::timeout_at(until, settled).await;
    }
}
