//! [`Sessions`]: the live sessions of one server, as its handler knows
//! them: each session's subscriptions and log level, the fan-out of list
//! changes and resource updates, and the 2026-07-28 listen streams.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use super::context::RequestContext;
use super::error::{parse_params, HandlerError};
use super::handle::{ListKind, ServerHandle};
use super::request_handler::Handler;
use crate::jsonrpc::{Request, RequestId};
use crate::protocol::{
    meta, methods, on_stream, Era, ListenResult, LoggingLevel, ResourceParams, ResultType,
    SetLevelParams, SubscriptionFilter,
};
use crate::sync::lock;

/// A 2026-07-28 `subscriptions/listen` stream being served.
#[derive(Debug)]
struct Listener {
    id: RequestId,
    filter: SubscriptionFilter,
    handle: ServerHandle,
}

#[derive(Debug, Default)]
struct Inner {
    /// The handles of the servers serving with this registry.
    handles: Mutex<Vec<ServerHandle>>,
    listeners: Mutex<Vec<(u64, Listener)>>,
    next_listener: AtomicU64,
    /// The level of the latest 2025-11-25 `logging/setLevel` of any session.
    log_level: Mutex<Option<LoggingLevel>>,
}

/// The session registry of a server: its live sessions, the 2025-11-25
/// `resources/subscribe`, `unsubscribe` and `logging/setLevel` each
/// records in its own session, list-changed and resource-updated
/// notifications fanned out to them, and the 2026-07-28 listen streams.
///
/// A [`Router`](super::Router) is served with one, its own unless given
/// another with [`Router::with_sessions`](super::Router::with_sessions).
/// A handler of its own serves the session methods with it: as a
/// [`Handler`], a registry answers those three methods and refuses others.
/// Cloning shares the registry.
///
/// # Examples
///
/// ```
/// use conduit_mcp::server::{ListKind, Router, Sessions};
///
/// let sessions = Sessions::new();
/// let router = Router::new().with_sessions(sessions.clone());
/// // Later, for every client of every server serving `router`:
/// sessions.notify_list_changed(ListKind::Tools);
/// sessions.resource_updated("file:///README.md");
/// # drop(router);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Sessions {
    inner: Arc<Inner>,
}

impl Sessions {
    /// An empty registry.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::Sessions;
    ///
    /// assert_eq!(Sessions::new().log_level(), None);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    fn live_handles(&self) -> Vec<ServerHandle> {
        let mut handles = lock(&self.inner.handles);
        handles.retain(|h| h.lifetime_token().is_alive());
        handles.clone()
    }

    /// Tells every client that the list of `kind` changed: 2025-11-25
    /// sessions by notification, 2026-07-28 clients on the listen streams
    /// that asked for it.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::{ListKind, Sessions};
    ///
    /// Sessions::new().notify_list_changed(ListKind::Prompts); // nobody to tell yet
    /// ```
    pub fn notify_list_changed(&self, kind: ListKind) {
        for h in self.live_handles() {
            // Stateful clients get the notification; stateless ones only on a
            // stream that asked for it.
            if h.era() == Some(Era::Stateful) {
                let _ = h.notify_list_changed(kind);
            }
        }
        self.notify_listeners(kind.method(), None, |f| {
            match kind {
                ListKind::Tools => f.tools_list_changed,
                ListKind::Resources => f.resources_list_changed,
                ListKind::Prompts => f.prompts_list_changed,
            }
            .unwrap_or(false)
        });
    }

    /// Tells clients that subscribed to `uri` (2025-11-25
    /// `resources/subscribe`, or a 2026-07-28 stream that named it) that it
    /// changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::Sessions;
    ///
    /// Sessions::new().resource_updated("file:///README.md"); // nobody subscribed yet
    /// ```
    pub fn resource_updated(&self, uri: &str) {
        let params = serde_json::to_value(ResourceParams::new(uri)).ok();
        for h in self.live_handles() {
            let subscribed = h.shared().is_ok_and(|s| s.session().is_subscribed(uri));
            if subscribed {
                let _ = h.notify(methods::RESOURCES_UPDATED, params.clone());
            }
        }
        self.notify_listeners(methods::RESOURCES_UPDATED, params, |f| {
            f.resource_subscriptions
                .as_ref()
                .is_some_and(|u| u.iter().any(|x| x == uri))
        });
    }

    /// The level of the latest 2025-11-25 `logging/setLevel` of any
    /// session, if any. Each session keeps its own, which is the one to
    /// use: [`ServerHandle::log_level`].
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::Sessions;
    ///
    /// assert_eq!(Sessions::new().log_level(), None); // no client has sent `logging/setLevel`
    /// ```
    pub fn log_level(&self) -> Option<LoggingLevel> {
        lock(&self.inner.log_level).clone()
    }

    /// Sends `method` on every 2026-07-28 stream whose filter `wants` it, with
    /// the stream's id in `_meta`.
    fn notify_listeners(
        &self,
        method: &str,
        params: Option<Value>,
        wants: impl Fn(&SubscriptionFilter) -> bool,
    ) {
        for (_, l) in lock(&self.inner.listeners).iter() {
            if wants(&l.filter) {
                let _ = l
                    .handle
                    .notify(method, Some(on_stream(params.clone(), &l.id)));
            }
        }
    }

    /// Serves one `subscriptions/listen` stream `req` for the notifications
    /// in `agreed`: acknowledges them, then holds the request open until
    /// the client cancels it, closes its input, or the server stops (then
    /// the stream ends with its result).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::jsonrpc::Request;
    /// use conduit_mcp::protocol::SubscriptionFilter;
    /// use conduit_mcp::server::{HandlerError, RequestContext, Sessions};
    ///
    /// // A handler that sends tool list changes only, whatever was asked.
    /// async fn listen(
    ///     sessions: &Sessions,
    ///     req: Request,
    ///     ctx: RequestContext,
    /// ) -> Result<serde_json::Value, HandlerError> {
    ///     let agreed = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    ///     sessions.serve_listen(&req, ctx, agreed).await
    /// }
    /// ```
    pub async fn serve_listen(
        &self,
        req: &Request,
        ctx: RequestContext,
        agreed: SubscriptionFilter,
    ) -> Result<Value, HandlerError> {
        let ack = json!({ "notifications": agreed });
        ctx.notify(
            methods::SUBSCRIPTIONS_ACKNOWLEDGED,
            Some(on_stream(Some(ack), &req.id)),
        )
        .map_err(|e| HandlerError::Internal(e.to_string()))?;
        let key = self.inner.next_listener.fetch_add(1, Ordering::Relaxed) + 1;
        let listener = Listener {
            id: req.id.clone(),
            filter: agreed,
            handle: ctx.handle().clone(),
        };
        lock(&self.inner.listeners).push((key, listener));
        // However this ends (answer, cancel, abort), the stream goes.
        let _registered = Unlisten {
            inner: &self.inner,
            key,
        };
        tokio::select! {
            _ = ctx.cancelled() => {}
            _ = ctx.input_closed() => {}
        }
        let mut meta = Map::new();
        meta.insert(meta::SUBSCRIPTION_ID.into(), json!(req.id));
        serde_json::to_value(ListenResult {
            result_type: Some(ResultType::Complete),
            meta: Some(meta),
            ..Default::default()
        })
        .map_err(|e| HandlerError::Internal(e.to_string()))
    }
}

impl Handler for Sessions {
    /// Records a 2025-11-25 `resources/subscribe` or `unsubscribe` (within
    /// the session's `max_subscription_bytes`) or `logging/setLevel` in the
    /// requesting session; refuses any other request.
    async fn handle_request(
        &self,
        req: Request,
        ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        let session = matches!(
            req.method.as_str(),
            methods::RESOURCES_SUBSCRIBE
                | methods::RESOURCES_UNSUBSCRIBE
                | methods::LOGGING_SET_LEVEL
        );
        if !session || ctx.era() != Era::Stateful {
            return Err(HandlerError::MethodNotFound(req.method));
        }
        let params = req.params.unwrap_or(Value::Null);
        let shared = ctx
            .handle()
            .shared()
            .map_err(|e| HandlerError::Internal(e.to_string()))?;
        if req.method == methods::LOGGING_SET_LEVEL {
            let p: SetLevelParams = parse_params(params)?;
            shared.session().set_log_level(p.level.clone());
            *lock(&self.inner.log_level) = Some(p.level);
            return Ok(json!({}));
        }
        let p: ResourceParams = parse_params(params)?;
        let limit = shared.config().get_max_subscription_bytes();
        let mut st = shared.session();
        if req.method == methods::RESOURCES_UNSUBSCRIBE {
            st.unsubscribe(&p.uri);
        } else if let Err(full) = st.subscribe(p.uri, limit) {
            tracing::debug!(
                server = %shared.config().server_info.name,
                limit,
                "resources/subscribe refused: max_subscription_bytes reached"
            );
            return Err(HandlerError::Rpc(full.to_error_object()));
        }
        Ok(json!({}))
    }

    /// Registers a server that serves with this registry: its sessions are
    /// told of list changes and resource updates from now on.
    fn serving(&self, handle: ServerHandle) {
        // Sessions that ended go here too, not only when a list changes: a
        // registry serving session after session would keep every handle.
        let mut handles = lock(&self.inner.handles);
        handles.retain(|h| h.lifetime_token().is_alive());
        handles.push(handle);
    }
}

/// Removes a listener from the registry when its request ends.
struct Unlisten<'a> {
    inner: &'a Inner,
    key: u64,
}

impl Drop for Unlisten<'_> {
    fn drop(&mut self) {
        lock(&self.inner.listeners).retain(|(k, _)| *k != self.key);
    }
}
