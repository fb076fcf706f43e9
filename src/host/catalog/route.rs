//! Routing a call: the namespaced name to its server's client, or why not
//! (unknown, not listed yet, restarting, gave up), waiting for a server
//! that is not listed yet when the host is set to wait.

use std::time::Duration;

use tokio::time::Instant;

use super::{Catalog, Entry, HostShared};
use crate::client::{Client, Status};
use crate::deadline::After;
use crate::host::{HostError, ItemKind, WhenUnavailable};

/// Where a call goes.
pub(crate) struct Route {
    server: String,
    /// The item's own name (or URI) on its server.
    own: String,
    client: Client,
}

impl Route {
    /// The item's own name (or URI) on its server.
    #[inline]
    pub(crate) fn own(&self) -> &str {
        &self.own
    }

    /// The client of the item's server.
    #[inline]
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// The host's error for a call of the route that failed with `source`.
    pub(crate) fn failed(self, source: crate::error::Error) -> HostError {
        HostError::Call {
            server: self.server,
            source,
        }
    }
}

/// Why an item could not be routed now.
enum Miss {
    /// Its server (found by the name's prefix) has not listed yet; when
    /// it is starting again after it was down, why it was.
    NotYet {
        server: String,
        timeout: Duration,
        revived_from: Option<String>,
    },
    /// No server has it.
    Unknown,
    Error(HostError),
}

impl HostShared {
    /// Where the item `name` of `kind` goes, if its server can take a call
    /// now (see [`WhenUnavailable`]); with `Wait`, waits (up to the
    /// server's request timeout) for a server that was not listed yet.
    pub(crate) async fn route(&self, kind: ItemKind, name: &str) -> Result<Route, HostError> {
        let mut rx = self.changes();
        let mut deadline: Option<Instant> = None;
        loop {
            match self.route_now(kind, name) {
                Err(Miss::NotYet { timeout, .. })
                    if self.when_unavailable == WhenUnavailable::Wait =>
                {
                    let until = *deadline.get_or_insert_with(|| Instant::now().after(timeout));
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

    fn route_now(&self, kind: ItemKind, name: &str) -> Result<Route, Miss> {
        let cat = self.lock();
        if cat.stopped {
            return Err(Miss::Error(HostError::Stopped));
        }
        let Some(holder) = cat.namespace.table(kind).get(name) else {
            return Err(self.explain_miss(&cat, kind, name));
        };
        let server = holder.server().to_string();
        let entry = cat
            .servers
            .get(&server)
            .ok_or_else(|| Miss::Error(HostError::UnknownServer(server.clone())))?;
        let client = entry
            .client
            .clone()
            .ok_or_else(|| Miss::Error(HostError::UnknownServer(server.clone())))?;
        match entry.status() {
            Status::Ready(_) => {}
            s if s.is_final() => return Err(Miss::Error(down(server, entry))),
            s if self.when_unavailable == WhenUnavailable::FailFast => {
                return Err(Miss::Error(HostError::Unavailable {
                    server,
                    state: describe(&s),
                }))
            }
            // Wait: the client waits for its server within the call's timeout.
            _ => {}
        }
        Ok(Route {
            server,
            own: holder.item().own().to_string(),
            client,
        })
    }

    /// Why `name` is not in the namespace: its server (the one whose
    /// prefix it starts with) is not listed yet, or gave up; or no such
    /// item.
    fn explain_miss(&self, cat: &Catalog, kind: ItemKind, name: &str) -> Miss {
        let owner = match kind {
            ItemKind::Resource => None,
            _ => cat
                .servers
                .iter()
                .find(|(server, _)| name.starts_with(&self.naming.prefix(server))),
        };
        match owner {
            Some((server, e)) if e.status().is_final() => Miss::Error(down(server.clone(), e)),
            Some((server, e)) if !e.listed => Miss::NotYet {
                server: server.clone(),
                timeout: e.request_timeout(),
                revived_from: e.revived_from.clone(),
            },
            _ => Miss::Unknown,
        }
    }

    /// The error a call of the namespaced `name` of `kind` gets now,
    /// without waiting; `None` if it would be routed.
    pub(crate) fn route_error(&self, kind: ItemKind, name: &str) -> Option<HostError> {
        self.route_now(kind, name)
            .err()
            .map(|m| m.into_error(kind, name))
    }
}

/// The error of a call to `server`, which gave up (or stopped): down until
/// its revive, or removed for good.
fn down(server: String, entry: &Entry) -> HostError {
    let reason = describe(&entry.status());
    match entry.next_try_in() {
        Some(next_try_in) => HostError::Down {
            server,
            reason,
            next_try_in,
        },
        None => HostError::Removed { server, reason },
    }
}

impl Miss {
    fn into_error(self, kind: ItemKind, name: &str) -> HostError {
        match self {
            Miss::Error(e) => e,
            Miss::NotYet {
                server,
                revived_from,
                ..
            } => HostError::Unavailable {
                server,
                state: match revived_from {
                    Some(reason) => format!("starting again after it was down ({reason})"),
                    None => "starting: its list is not known yet".into(),
                },
            },
            Miss::Unknown => match kind {
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
