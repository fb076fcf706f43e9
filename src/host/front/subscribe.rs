//! A 2025-11-25 session's `resources/subscribe`, whatever the server's era:
//! a legacy server is sent the request; a 2026-07-28 server has no such
//! method (its updates come only on a `subscriptions/listen` stream that
//! names the resource), so the front keeps one stream per subscribed
//! resource open on it, for as long as some session subscribes. Its
//! updates reach the subscribed sessions through the server's
//! notifications (see `state::on_note`). Bounded: at most
//! [`MAX_PER_SERVER`] resources per server are watched at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::protocol::{Era, SubscriptionFilter};
use crate::server::{HandlerError, RequestContext};
use crate::sync::AbortOnDrop;

use super::auth::Principal;
use super::forward::{failure, forward, Target};
use super::state::FrontState;

/// The most resources of one server watched at once.
pub(crate) const MAX_PER_SERVER: usize = 256;

/// How long a subscription waits for the server's acknowledgement of the
/// stream that carries it.
const ACK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A watched resource: its server and URI.
type Watched = (Arc<str>, String);

/// The streams kept open, by server and URI, with their subscribers.
#[derive(Default)]
pub(crate) struct ResourceWatches {
    open: Mutex<HashMap<Watched, (usize, AbortOnDrop<()>)>>,
}

impl ResourceWatches {
    async fn subscribe(&self, target: &Target, uri: &str) -> Result<(), HandlerError> {
        let key = (target.server.clone(), uri.to_owned());
        {
            let mut open = crate::sync::lock(&self.open);
            if let Some((n, _)) = open.get_mut(&key) {
                *n += 1;
                return Ok(());
            }
            if open.keys().filter(|(s, _)| *s == target.server).count() >= MAX_PER_SERVER {
                return Err(HandlerError::Internal(format!(
                    "the gateway watches {MAX_PER_SERVER} resources of server `{}` already",
                    target.server
                )));
            }
        }
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec![uri.to_owned()]),
            ..Default::default()
        };
        let mut stream = target
            .client
            .listen(filter)
            .await
            .map_err(|e| failure(&target.server, &e))?;
        // Answered once the server has the stream: an update it sends
        // right after the session's `resources/subscribe` is then not lost
        // (the request was only queued when `listen` returned). The
        // acknowledgement comes first on a stream; a server that never
        // sends one is not waited for past ACK_WAIT.
        match tokio::time::timeout(ACK_WAIT, stream.next_raw()).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                return Err(match stream.end() {
                    Some(crate::client::ListenEnd::Failed(e)) => failure(&target.server, e),
                    _ => HandlerError::Internal(format!(
                        "server `{}` ended the subscriptions/listen stream for `{uri}` at once",
                        target.server
                    )),
                })
            }
            Err(_) => tracing::warn!(
                server = %target.server,
                uri,
                "gateway: no acknowledgement of subscriptions/listen within {} s; answering the subscription anyway",
                ACK_WAIT.as_secs()
            ),
        }
        // Its notifications are read by the server's watcher; this copy
        // only keeps the stream open.
        let task = AbortOnDrop(tokio::spawn(async move {
            while stream.next_raw().await.is_some() {}
        }));
        let mut open = crate::sync::lock(&self.open);
        match open.get_mut(&key) {
            // Opened meanwhile by another session: one stream is enough.
            Some((n, _)) => *n += 1,
            None => {
                open.insert(key, (1, task));
            }
        }
        Ok(())
    }

    fn unsubscribe(&self, server: &Arc<str>, uri: &str) {
        let mut open = crate::sync::lock(&self.open);
        let key = (server.clone(), uri.to_owned());
        if let Some((n, _)) = open.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                open.remove(&key);
            }
        }
    }

    /// Closes every stream on `server` (removed or restarted).
    pub(crate) fn forget(&self, server: &str) {
        crate::sync::lock(&self.open).retain(|(s, _), _| &**s != server);
    }
}

/// `resources/subscribe` (or `unsubscribe`) of `uri` on `target`, for a
/// session whose hub has recorded it.
pub(crate) async fn subscription(
    front: &Arc<FrontState>,
    principal: &Arc<Principal>,
    target: &Target,
    method: &str,
    params: Option<Value>,
    ctx: &RequestContext,
) -> Result<Value, HandlerError> {
    let subscribe = method == crate::protocol::methods::RESOURCES_SUBSCRIBE;
    let uri = params
        .as_ref()
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let era = target.client.session().map(|s| s.era);
    match era {
        Some(Era::Modern) if subscribe => front.watches.subscribe(target, &uri).await?,
        Some(Era::Modern) => front.watches.unsubscribe(&target.server, &uri),
        _ => {
            forward(front, principal, target, method, params, ctx).await?;
        }
    }
    Ok(json!({}))
}
