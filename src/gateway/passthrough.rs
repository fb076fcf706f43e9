//! `/servers/NAME/mcp`: one server as it is, its own names, every method
//! passed on; the gateway answers only what is per session (a stateful
//! client's log level and resource subscriptions, kept by its sessions) and
//! serves `subscriptions/listen` (passed on to a 2026-07-28 server, kept
//! by the sessions for a stateful one), and applies the tool filter and the
//! caller's grant to `tools/list` and `tools/call`.

use std::sync::{Arc, Weak};

use serde_json::{json, Value};

use crate::jsonrpc::Request;
use crate::protocol::{methods, Era, ListenParams};
use crate::server::{Handler, HandlerError, RequestContext, ServerHandle, Sessions};

use super::auth::{caller, Principal};
use super::forward::{forward, Call};
use super::listen;
use super::state::GatewayState;
use super::subscribe::subscription;
use super::target::Target;
use super::watches::watch;

/// The handler of `/servers/NAME/mcp`, for every caller: each request's
/// caller is in its HTTP request's extensions.
pub(crate) struct Passthrough {
    gateway: Weak<GatewayState>,
    server: Arc<str>,
    sessions: Sessions,
}

impl Passthrough {
    pub(crate) fn new(gateway: Weak<GatewayState>, server: Arc<str>, sessions: Sessions) -> Self {
        Passthrough {
            gateway,
            server,
            sessions,
        }
    }

    fn gateway(&self) -> Result<Arc<GatewayState>, HandlerError> {
        self.gateway
            .upgrade()
            .ok_or_else(|| HandlerError::Internal("the gateway is stopping".into()))
    }

    fn target(&self, gateway: &GatewayState) -> Result<Target, HandlerError> {
        gateway.target(&self.server)
    }

    /// Whether the caller may see and call the tool `name`.
    fn tool_visible(&self, caller: &Principal, gateway: &GatewayState, name: &str) -> bool {
        gateway.serves_tool(&self.server, name) && caller.tool_allowed(&self.server, name)
    }

    fn filtered(&self, caller: &Principal, gateway: &GatewayState) -> bool {
        gateway.has_filter(&self.server) || caller.restricted()
    }
}

impl Handler for Passthrough {
    async fn handle_request(
        &self,
        req: Request,
        ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        let gateway = self.gateway()?;
        let caller = caller(&ctx)?;
        let target = self.target(&gateway)?;
        let era = ctx.era();
        let method = req.method.clone();
        let call = Call {
            gateway: &gateway,
            caller: &caller,
            target: &target,
            method: &method,
            ctx: &ctx,
        };
        let pass = |params| forward(call, params, false);
        match req.method.as_str() {
            methods::LOGGING_SET_LEVEL if era == Era::Stateful => {
                // Kept for this session (its calls carry it to a 2026-07-28
                // server); a stateful server is told too.
                self.sessions
                    .handle_request(req.clone(), ctx.clone())
                    .await?;
                if target
                    .client()
                    .session()
                    .is_some_and(|s| s.era == Era::Stateful)
                {
                    pass(req.params).await?;
                }
                Ok(json!({}))
            }
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE
                if era == Era::Stateful =>
            {
                subscription(&gateway, &caller, &self.sessions, &target, req, &ctx).await
            }
            methods::SUBSCRIPTIONS_LISTEN if era == Era::Stateless => {
                let modern = target
                    .client()
                    .session()
                    .is_some_and(|s| s.era == Era::Stateless);
                if modern {
                    listen::pass(&target, &req, ctx).await
                } else {
                    let p: ListenParams = listen::params(&req)?;
                    let caps = target
                        .client()
                        .session()
                        .map(|s| s.capabilities.clone())
                        .unwrap_or(Value::Null);
                    let agreed = listen::agreed(&p.notifications, &caps);
                    // The stream's resources are watched for it alone, as
                    // long as it lasts.
                    let mut _watches = None;
                    for uri in agreed.resource_subscriptions.iter().flatten() {
                        let holder =
                            _watches.get_or_insert_with(|| gateway.watches().stream_holder());
                        watch(gateway.watches(), holder.holder(), &target, uri).await?;
                    }
                    self.sessions.serve_listen(&req, ctx, agreed).await
                }
            }
            methods::TOOLS_CALL => {
                let name = req
                    .params
                    .as_ref()
                    .and_then(|p| p.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !self.tool_visible(&caller, &gateway, name) {
                    return Err(HandlerError::InvalidParams(format!("Unknown tool: {name}")));
                }
                forward(call, req.params, true).await
            }
            methods::TOOLS_LIST if self.filtered(&caller, &gateway) => {
                let mut v = pass(req.params).await?;
                if let Some(tools) = v.get_mut("tools").and_then(Value::as_array_mut) {
                    tools.retain(|t| {
                        t.get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| self.tool_visible(&caller, &gateway, n))
                    });
                }
                Ok(v)
            }
            _ => forward(call, req.params, true).await,
        }
    }

    fn serving(&self, handle: ServerHandle) {
        self.sessions.serving(handle);
    }

    fn tool_input_schema(&self, name: &str) -> Option<Value> {
        let gateway = self.gateway.upgrade()?;
        // Asked on every 2026-07-28 `tools/call`: only the one tool is
        // copied out of the namespace.
        let (n, h) = gateway
            .host()
            .find_listed(crate::host::ItemKind::Tool, |h| {
                h.server() == &*self.server && h.own_name() == name
            })?;
        Some(h.tool(&n).tool.input_schema)
    }
}
