//! The user's side of the server: the [`Handler`] trait.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use crate::jsonrpc::{Notification, Request};
use crate::protocol::ServerCapabilities;

use super::context::RequestContext;
use super::error::HandlerError;
use super::handle::ServerHandle;

/// Answers requests and receives notifications.
///
/// The transport itself handles `initialize`, `notifications/initialized`
/// (also passed on), `ping`, `server/discover` and `notifications/cancelled`,
/// validates 2026-07-28 `_meta`, and passes every other message here.
///
/// Each request runs in its own task, concurrently with others (up to
/// [`ServerConfig::max_in_flight`](super::ServerConfig::max_in_flight)), so
/// handlers must be `Send + Sync` and may be slow without blocking the
/// reader. A request cancelled by the client is aborted: its future is
/// dropped at the next `.await` and no response is sent. A handler that
/// panics produces a -32603 response; serving continues.
///
/// In the 2026-07-28 era the transport adds `"resultType": "complete"` to an
/// object result that lacks it.
///
/// # Example
///
/// ```
/// use conduit_mcp::jsonrpc::Request;
/// use conduit_mcp::server::{Handler, HandlerError, RequestContext};
/// use serde_json::{json, Value};
///
/// struct Tools;
///
/// impl Handler for Tools {
///     async fn handle_request(
///         &self,
///         req: Request,
///         _ctx: RequestContext,
///     ) -> Result<Value, HandlerError> {
///         match req.method.as_str() {
///             "tools/list" => Ok(json!({ "tools": [] })),
///             other => Err(HandlerError::MethodNotFound(other.to_owned())),
///         }
///     }
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    /// Answers one request. `Err` becomes a JSON-RPC error response (see
    /// [`HandlerError`]).
    fn handle_request(
        &self,
        request: Request,
        ctx: RequestContext,
    ) -> impl Future<Output = Result<Value, HandlerError>> + Send;

    /// The capabilities this handler serves, added to
    /// [`ServerConfig::capabilities`](super::ServerConfig::capabilities)
    /// when serving starts (what the configuration says wins). The default
    /// declares none; [`Router`](super::Router) declares what is
    /// registered.
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::default()
    }

    /// Called once when serving starts, with the server's handle: keep it
    /// to send notifications later (a [`Router`](super::Router) sends
    /// `list_changed` through it). The default does nothing.
    fn serving(&self, handle: ServerHandle) {
        let _ = handle;
    }

    /// The `inputSchema` of tool `name`, if this handler knows it. The
    /// Streamable HTTP transport (2026-07-28 era) checks a `tools/call`'s
    /// `Mcp-Param-*` headers against the schema's `x-mcp-header`
    /// annotations; without a schema nothing is checked. The default knows
    /// none; [`Router`](super::Router) answers for its tools.
    fn tool_input_schema(&self, name: &str) -> Option<Value> {
        let _ = name;
        None
    }

    /// Receives one notification. Notifications are delivered one at a time,
    /// in arrival order, on a task of their own (a slow one delays later
    /// notifications, never requests). An `Err` ends serving with
    /// [`ServerError::NotificationHandler`](super::ServerError::NotificationHandler).
    /// The default ignores notifications.
    fn handle_notification(
        &self,
        notification: Notification,
        handle: ServerHandle,
    ) -> impl Future<Output = Result<(), HandlerError>> + Send {
        let _ = (notification, handle);
        async { Ok(()) }
    }
}

impl<H: Handler> Handler for Arc<H> {
    fn capabilities(&self) -> ServerCapabilities {
        (**self).capabilities()
    }

    fn serving(&self, handle: ServerHandle) {
        (**self).serving(handle)
    }

    fn tool_input_schema(&self, name: &str) -> Option<Value> {
        (**self).tool_input_schema(name)
    }

    fn handle_request(
        &self,
        request: Request,
        ctx: RequestContext,
    ) -> impl Future<Output = Result<Value, HandlerError>> + Send {
        (**self).handle_request(request, ctx)
    }

    fn handle_notification(
        &self,
        notification: Notification,
        handle: ServerHandle,
    ) -> impl Future<Output = Result<(), HandlerError>> + Send {
        (**self).handle_notification(notification, handle)
    }
}
