//! Resource subscriptions through the gateway, each owned by its holder: a
//! 2025-11-25 session's `resources/subscribe` (released by its own
//! `resources/unsubscribe` or by the session's end: DELETE, idle expiry,
//! the gateway's stop), or a `subscriptions/listen` stream the gateway serves
//! that names resources (released when the stream ends). A holder releases
//! only what it holds, and a repeated subscription is one.
//!
//! Per server, the gateway watches each URI once for all its holders: a
//! 2025-11-25 server is sent `resources/subscribe` for the first holder and
//! `resources/unsubscribe` after the last; a 2026-07-28 server (which has
//! no such method) gets one `subscriptions/listen` stream naming every
//! watched URI, opened anew when the set changes and taken into use once
//! the server has acknowledged it, so its watches take one of the server's
//! request slots whatever their number. A watch that cannot be opened is a
//! JSON-RPC error saying why. The updates reach the holders through the
//! server's notifications ([`ResourceWatches::delivers`], `state::on_note`),
//! each session's and stream's own subscriptions choosing what it gets.
//! Bounded: at most [`MAX_PER_SERVER`] URIs, of [`MAX_BYTES_PER_SERVER`]
//! bytes in all, watched per server.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{json, Value};

use crate::client::{ListenEnd, RequestOptions, Subscription};
use crate::jsonrpc::{codes, ErrorObject};
use crate::protocol::{meta, methods, Era, SubscriptionFilter};
use crate::server::{HandlerError, RequestContext, SessionId};
use crate::sync::{lock, AbortOnDrop};

use super::target::{backend_era, failure, Target};
use crate::host::Host;

/// The most resources of one server watched at once.
pub(crate) const MAX_PER_SERVER: usize = 256;

/// The most bytes of URIs of one server watched at once (a 2026-07-28
/// server is sent them all in one request).
pub(crate) const MAX_BYTES_PER_SERVER: usize = 1 << 20;

/// How long a 2026-07-28 server has to acknowledge the stream of its
/// watches. A live server does so at once; one that does not has no room
/// for the request (every request slot taken) or does not serve it.
const ACK_WAIT: Duration = Duration::from_secs(5);

/// Who holds a watch.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Listed {
    /// A 2025-11-25 session, by its id.
    Session(SessionId),
    /// A `subscriptions/listen` stream served by the gateway.
    Stream(u64),
}

/// Which holders hold which URIs of one server: the bookkeeping alone.
#[derive(Debug, Default)]
struct Holdings {
    uris: BTreeMap<String, BTreeSet<Listed>>,
    bytes: usize,
}

/// What adding a holder's URI takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adding {
    /// The holder holds it already: nothing.
    Held,
    /// Another holder does: the watch is there.
    Shared,
    /// Nobody does: the watch is to be opened.
    New,
}

impl Holdings {
    fn adding(&self, holder: &Listed, uri: &str) -> Adding {
        match self.uris.get(uri) {
            Some(h) if h.contains(holder) => Adding::Held,
            Some(_) => Adding::Shared,
            None => Adding::New,
        }
    }

    /// Whether a new URI fits the bounds; the error says which it breaks.
    fn room(&self, server: &str, uri: &str) -> Result<(), HandlerError> {
        let full = |what: String, limit: &str| {
            HandlerError::Rpc(
                ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("resources/subscribe refused: the gateway watches {what} of server `{server}` already"),
                )
                .with_data(json!({ "server": server, "uri": uri, "limit": limit })),
            )
        };
        if self.uris.len() >= MAX_PER_SERVER {
            return Err(full(format!("{MAX_PER_SERVER} resources"), "resources"));
        }
        if self.bytes.saturating_add(uri.len()) > MAX_BYTES_PER_SERVER {
            return Err(full(
                format!("{MAX_BYTES_PER_SERVER} bytes of resource URIs"),
                "bytes",
            ));
        }
        Ok(())
    }

    fn add(&mut self, holder: &Listed, uri: &str) {
        if !self.uris.contains_key(uri) {
            self.bytes = self.bytes.saturating_add(uri.len());
        }
        self.uris
            .entry(uri.to_owned())
            .or_default()
            .insert(holder.clone());
    }

    /// Removes `holder`'s `uri`; whether nobody watches it any more.
    fn remove(&mut self, holder: &Listed, uri: &str) -> bool {
        let Some(h) = self.uris.get_mut(uri) else {
            return false;
        };
        if !h.remove(holder) || !h.is_empty() {
            return false;
        }
        self.uris.remove(uri);
        self.bytes = self.bytes.saturating_sub(uri.len());
        true
    }

    /// Removes everything `holder` holds; the URIs nobody watches any more.
    fn remove_all(&mut self, holder: &Listed) -> Vec<String> {
        let mine: Vec<String> = self
            .uris
            .iter()
            .filter(|(_, h)| h.contains(holder))
            .map(|(u, _)| u.clone())
            .collect();
        mine.into_iter()
            .filter(|u| self.remove(holder, u))
            .collect()
    }

    fn watched(&self) -> BTreeSet<String> {
        self.uris.keys().cloned().collect()
    }
}

/// A `subscriptions/listen` stream on a 2026-07-28 server.
struct Open {
    /// The stream's id, as its notifications carry it.
    id: Value,
    covers: BTreeSet<String>,
    /// Keeps the stream open; `None` until the server acknowledged it.
    keep: Option<AbortOnDrop<()>>,
}

#[derive(Default)]
struct WatchState {
    holdings: Holdings,
    /// Oldest first: the stream in use, and the one being opened.
    open: Vec<Open>,
}

/// One server's watches.
#[derive(Default)]
struct ServerWatch {
    /// Serialises changes (opening a stream waits for the server).
    change: tokio::sync::Mutex<()>,
    state: Mutex<WatchState>,
}

/// A known holder.
struct Live {
    /// Its release has begun: it takes nothing more.
    ending: bool,
}

/// Every server's watches and their holders.
pub(crate) struct ResourceWatches {
    /// Where the servers are found by name.
    host: Host,
    servers: Mutex<HashMap<Arc<str>, Arc<ServerWatch>>>,
    live: Mutex<HashMap<Listed, Live>>,
    next_stream: AtomicU64,
}

impl ResourceWatches {
    /// No watches yet, of the servers of `host`.
    pub(crate) fn new(host: Host) -> Self {
        Self {
            host,
            servers: Mutex::default(),
            live: Mutex::default(),
            next_stream: AtomicU64::new(0),
        }
    }

    fn target(&self, name: &str) -> Option<Target> {
        Target::of(&self.host, name)
    }

    fn server(&self, name: &Arc<str>) -> Arc<ServerWatch> {
        lock(&self.servers).entry(name.clone()).or_default().clone()
    }

    /// The holder of the session `ctx` came in, known from now on: its
    /// watches are released when it ends.
    pub(crate) fn session_holder(
        self: &Arc<Self>,
        ctx: &RequestContext,
    ) -> Result<Listed, HandlerError> {
        let handle = ctx.handle().clone();
        let Some(id) = handle.id().filter(|_| handle.lifetime_token().is_alive()) else {
            return Err(HandlerError::Internal("the session has ended".into()));
        };
        let holder = Listed::Session(id);
        let mut live = lock(&self.live);
        if live.contains_key(&holder) {
            return Ok(holder);
        }
        live.insert(holder.clone(), Live { ending: false });
        drop(live);
        let watches = Arc::downgrade(self);
        let held = holder.clone();
        tokio::spawn(async move {
            // Closed, or the session's state gone: it ended either way.
            handle.closed().await;
            if let Some(watches) = watches.upgrade() {
                release(&watches, &held).await;
            }
        });
        Ok(holder)
    }

    /// A new stream holder, released when the returned guard drops.
    pub(crate) fn stream_holder(self: &Arc<Self>) -> StreamHolder {
        let holder = Listed::Stream(self.next_stream.fetch_add(1, Ordering::Relaxed));
        lock(&self.live).insert(holder.clone(), Live { ending: false });
        StreamHolder {
            watches: Arc::downgrade(self),
            holder,
        }
    }

    /// Records that `holder` holds `uri` of `w`, unless its release has
    /// begun (then false).
    fn record(&self, w: &ServerWatch, holder: &Listed, uri: &str) -> bool {
        let live = lock(&self.live);
        if live.get(holder).is_none_or(|l| l.ending) {
            return false;
        }
        lock(&w.state).holdings.add(holder, uri);
        true
    }

    /// Whether a `notifications/resources/updated` of `uri` with `params`
    /// from `server` is one of the gateway's watches, to pass on to the
    /// subscribed sessions and streams. 2025-11-25 servers' carry no stream id
    /// (they come for the gateway's subscriptions); a 2026-07-28 server's
    /// must come on the newest stream that names the URI: not on a stream
    /// of a client's own (passed on by itself), nor twice while the
    /// gateway's stream is replaced.
    pub(crate) fn delivers(&self, server: &str, uri: &str, params: &Value) -> bool {
        let Some(id) = params
            .get("_meta")
            .and_then(|m| m.get(meta::SUBSCRIPTION_ID))
        else {
            return true;
        };
        let Some(w) = lock(&self.servers).get(server).cloned() else {
            return false;
        };
        let st = lock(&w.state);
        st.open
            .iter()
            .rev()
            .find(|o| o.covers.contains(uri))
            .is_some_and(|o| &o.id == id)
    }

    /// Closes every watch of `server` (removed or restarted).
    pub(crate) fn forget(&self, server: &str) {
        lock(&self.servers).retain(|s, _| &**s != server);
    }
}

/// The watches of one `subscriptions/listen` stream: released when this is
/// dropped, however the stream ends.
pub(crate) struct StreamHolder {
    watches: Weak<ResourceWatches>,
    holder: Listed,
}

impl StreamHolder {
    /// Who holds the stream's watches.
    #[inline]
    pub(crate) fn holder(&self) -> &Listed {
        &self.holder
    }
}

impl Drop for StreamHolder {
    fn drop(&mut self) {
        let (Some(watches), Ok(rt)) = (
            self.watches.upgrade(),
            tokio::runtime::Handle::try_current(),
        ) else {
            return;
        };
        let holder = self.holder.clone();
        rt.spawn(async move { release(&watches, &holder).await });
    }
}

/// `holder` watches `uri` of `target` from now on: nothing more if it does
/// already, the server's watch opened if nobody else has it. An error (and
/// nothing held) if it cannot be opened.
pub(crate) async fn watch(
    watches: &ResourceWatches,
    holder: &Listed,
    target: &Target,
    uri: &str,
) -> Result<(), HandlerError> {
    let w = watches.server(target.server());
    let _change = w.change.lock().await;
    let adding = {
        let st = lock(&w.state);
        let adding = st.holdings.adding(holder, uri);
        if adding == Adding::New {
            st.holdings.room(target.server(), uri)?;
        }
        adding
    };
    match adding {
        Adding::Held => return Ok(()),
        Adding::Shared => {}
        Adding::New => match backend_era(target).await? {
            Era::Stateful => {
                target
                    .client()
                    .request_raw(
                        methods::RESOURCES_SUBSCRIBE,
                        Some(json!({ "uri": uri })),
                        RequestOptions::new(),
                    )
                    .await
                    .map_err(|e| failure(target.server(), &e))?;
            }
            Era::Stateless => {
                let mut wanted = lock(&w.state).holdings.watched();
                wanted.insert(uri.to_owned());
                sync(&w, target, wanted, Some(uri)).await?;
            }
        },
    }
    if !watches.record(&w, holder, uri) {
        // Its holder ended meanwhile: what was opened for it goes.
        let freed = if adding == Adding::New {
            vec![uri.to_owned()]
        } else {
            Vec::new()
        };
        settle(&w, target, freed).await;
        return Err(HandlerError::Internal(
            "the subscription's session or stream has ended".into(),
        ));
    }
    Ok(())
}

/// `holder` no longer watches `uri` of `target` (nothing if it did not);
/// the server's watch goes with its last holder.
pub(crate) async fn unwatch(
    watches: &ResourceWatches,
    holder: &Listed,
    target: &Target,
    uri: &str,
) {
    let Some(w) = lock(&watches.servers).get(target.server()).cloned() else {
        return;
    };
    let _change = w.change.lock().await;
    if lock(&w.state).holdings.remove(holder, uri) {
        settle(&w, target, vec![uri.to_owned()]).await;
    }
}

/// Releases everything `holder` holds, on every server.
pub(crate) async fn release(watches: &ResourceWatches, holder: &Listed) {
    match lock(&watches.live).get_mut(holder) {
        Some(l) if !l.ending => l.ending = true,
        _ => return,
    }
    let servers: Vec<(Arc<str>, Arc<ServerWatch>)> = lock(&watches.servers)
        .iter()
        .map(|(s, w)| (s.clone(), w.clone()))
        .collect();
    let mut released = 0;
    for (name, w) in servers {
        let _change = w.change.lock().await;
        let freed = lock(&w.state).holdings.remove_all(holder);
        if freed.is_empty() {
            continue;
        }
        released += freed.len();
        if let Some(target) = watches.target(&name) {
            settle(&w, &target, freed).await;
        }
    }
    lock(&watches.live).remove(holder);
    if released > 0 {
        tracing::debug!(
            ?holder,
            released,
            "gateway: a holder's resource watches released"
        );
    }
}

/// Opens `server`'s watches again on its new process (after a restart,
/// which ended them).
pub(crate) async fn rewatch(watches: &ResourceWatches, server: &str) {
    let w = lock(&watches.servers).get(server).cloned();
    let (Some(w), Some(target)) = (w, watches.target(server)) else {
        return;
    };
    let _change = w.change.lock().await;
    let wanted = {
        let mut st = lock(&w.state);
        st.open.clear();
        st.holdings.watched()
    };
    if wanted.is_empty() {
        return;
    }
    let watched = wanted.len();
    match target.client().session().map(|s| s.era) {
        Some(Era::Stateful) => {
            for uri in wanted {
                let r = target
                    .client()
                    .request_raw(
                        methods::RESOURCES_SUBSCRIBE,
                        Some(json!({ "uri": uri })),
                        RequestOptions::new(),
                    )
                    .await;
                if let Err(e) = r {
                    tracing::warn!(server, uri, error = %e, "gateway: resources/subscribe after a restart failed");
                }
            }
        }
        Some(Era::Stateless) => {
            if let Err(e) = sync(&w, &target, wanted, None).await {
                tracing::warn!(server, error = %e.to_error_object().message, "gateway: the resource watches could not be opened after a restart");
                return;
            }
        }
        None => return,
    }
    tracing::info!(
        server,
        watched,
        "gateway: resource watches opened again after a restart"
    );
}

/// The server's watches after `freed` lost their last holder: a 2025-11-25
/// server is told to unsubscribe them, a 2026-07-28 server's stream is
/// opened anew for what is left (or closed). Best effort: a failure leaves
/// at most a watch nobody receives.
async fn settle(w: &ServerWatch, target: &Target, freed: Vec<String>) {
    match target.client().session().map(|s| s.era) {
        Some(Era::Stateful) => {
            for uri in freed {
                let r = target
                    .client()
                    .request_raw(
                        methods::RESOURCES_UNSUBSCRIBE,
                        Some(json!({ "uri": uri })),
                        RequestOptions::new(),
                    )
                    .await;
                if let Err(e) = r {
                    tracing::debug!(server = %target.server(), uri, error = %e, "gateway: resources/unsubscribe failed");
                }
            }
        }
        Some(Era::Stateless) => {
            let wanted = lock(&w.state).holdings.watched();
            if let Err(e) = sync(w, target, wanted, None).await {
                tracing::debug!(server = %target.server(), error = ?e, "gateway: the resource watches' stream was not narrowed");
            }
        }
        // Not ready: nothing is open on the server it will be.
        None => lock(&w.state).open.clear(),
    }
}

/// Makes the 2026-07-28 server's stream of watches name `wanted`: a new
/// stream, used once the server acknowledged it (the old one is closed
/// then), or none for nothing. `new` is the URI this is for, if any (for
/// the error).
async fn sync(
    w: &ServerWatch,
    target: &Target,
    wanted: BTreeSet<String>,
    new: Option<&str>,
) -> Result<(), HandlerError> {
    if wanted.is_empty() {
        lock(&w.state).open.clear();
        return Ok(());
    }
    let current = lock(&w.state)
        .open
        .last()
        .is_some_and(|o| o.keep.is_some() && o.covers == wanted);
    if current {
        return Ok(());
    }
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(wanted.iter().cloned().collect()),
        ..Default::default()
    };
    let mut stream = target
        .client()
        .listen(filter)
        .await
        .map_err(|e| failure(target.server(), &e))?;
    let id = serde_json::to_value(stream.id()).unwrap_or(Value::Null);
    lock(&w.state).open.push(Open {
        id: id.clone(),
        covers: wanted.clone(),
        keep: None,
    });
    let acked = acknowledged(&mut stream, target.server(), &wanted, new).await;
    let mut st = lock(&w.state);
    if let Err(e) = acked {
        st.open.retain(|o| o.id != id);
        return Err(e);
    }
    // Its notifications are read by the server's watcher; this copy
    // only keeps the stream open.
    let keep = AbortOnDrop(tokio::spawn(async move {
        while stream.next_raw().await.is_some() {}
    }));
    st.open.retain(|o| o.id == id);
    if let Some(o) = st.open.last_mut() {
        o.keep = Some(keep);
    }
    tracing::debug!(server = %target.server(), watched = wanted.len(), "gateway: resource watches' stream opened");
    Ok(())
}

/// Waits (at most [`ACK_WAIT`]) for the server's acknowledgement of
/// `stream`, which must name every URI of `wanted`: the acknowledgement
/// comes first, so that an update the server sends once the subscription
/// is answered is on the stream.
async fn acknowledged(
    stream: &mut Subscription,
    server: &str,
    wanted: &BTreeSet<String>,
    new: Option<&str>,
) -> Result<(), HandlerError> {
    let what = new.map_or_else(|| "the watched resources".to_owned(), |u| format!("`{u}`"));
    let error = |code: i64, message: String| {
        HandlerError::Rpc(
            ErrorObject::new(code, message).with_data(json!({ "server": server, "uri": new })),
        )
    };
    let deadline = tokio::time::Instant::now() + ACK_WAIT;
    let params = loop {
        match tokio::time::timeout_at(deadline, stream.next_raw()).await {
            Err(_) => {
                return Err(error(
                    codes::INTERNAL_ERROR,
                    format!(
                        "server `{server}` did not acknowledge the subscriptions/listen stream for {what} within {} s (it may have no request slot free)",
                        ACK_WAIT.as_secs()
                    ),
                ))
            }
            Ok(Some(n)) if n.method == methods::SUBSCRIPTIONS_ACKNOWLEDGED => {
                break n.params.unwrap_or(Value::Null)
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                return Err(match stream.end() {
                    Some(ListenEnd::Failed(e)) => failure(server, e),
                    _ => error(
                        codes::INTERNAL_ERROR,
                        format!("server `{server}` ended the subscriptions/listen stream for {what} at once"),
                    ),
                })
            }
        }
    };
    // A server says what it agreed to send; one that says nothing is
    // taken at its word.
    let Some(agreed) = params.get("notifications") else {
        return Ok(());
    };
    let agreed: BTreeSet<&str> = agreed
        .get("resourceSubscriptions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let refused: Vec<&str> = wanted
        .iter()
        .map(String::as_str)
        .filter(|u| !agreed.contains(u))
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(error(
        codes::INVALID_PARAMS,
        format!(
            "server `{server}` does not send updates of {}",
            refused.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_holds_a_uri_once_and_releases_only_its_own() {
        let (a, b) = (&Listed::Session("a".to_owned().into()), &Listed::Stream(2));
        let mut h = Holdings::default();
        assert_eq!(h.adding(a, "u"), Adding::New);
        h.add(a, "u");
        // A repeated subscription is one.
        assert_eq!(h.adding(a, "u"), Adding::Held);
        h.add(a, "u");
        assert_eq!(h.adding(b, "u"), Adding::Shared);
        // B releases what it never held: A's watch stays.
        assert!(!h.remove(b, "u"));
        assert!(h.watched().contains("u"));
        h.add(b, "u");
        assert!(!h.remove(b, "u"), "A still holds it");
        // One release undoes A's two subscriptions.
        assert!(h.remove(a, "u"));
        assert!(h.watched().is_empty());
        assert_eq!(h.bytes, 0);
    }

    #[test]
    fn a_holders_end_frees_only_what_nobody_else_holds() {
        let (a, b) = (
            &Listed::Session("a".to_owned().into()),
            &Listed::Session("b".to_owned().into()),
        );
        let mut h = Holdings::default();
        for u in ["x", "y", "z"] {
            h.add(a, u);
        }
        h.add(b, "y");
        assert_eq!(h.remove_all(a), vec!["x".to_owned(), "z".to_owned()]);
        assert_eq!(h.watched(), BTreeSet::from(["y".to_owned()]));
        assert!(h.remove_all(a).is_empty());
        assert_eq!(h.remove_all(b), vec!["y".to_owned()]);
    }

    #[test]
    fn the_bounds_refuse_a_uri_past_them_naming_the_bound() {
        let mut h = Holdings::default();
        for i in 0..MAX_PER_SERVER {
            h.add(&Listed::Stream(0), &format!("u{i}"));
        }
        let e = h.room("s", "one more").unwrap_err().to_error_object();
        assert!(e.message.contains("256 resources"), "{}", e.message);
        let mut h = Holdings::default();
        h.add(&Listed::Stream(0), &"x".repeat(MAX_BYTES_PER_SERVER));
        let e = h.room("s", "y").unwrap_err().to_error_object();
        assert!(e.message.contains("bytes"), "{}", e.message);
    }
}
