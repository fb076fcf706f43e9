//! `/mcp`: every server in one namespace, as [`Host`](crate::host::Host)
//! joins them (`server__tool`, prompts likewise, resources by URI), each
//! list built from the host's catalog (the servers' own JSON, renamed) and
//! each call routed to its server under its own name. What a caller sees
//! is what its grant and each server's tool filter allow; a lazy server
//! starts when the namespace is first listed or one of its names is
//! called.

use std::sync::{Arc, Weak};

use serde_json::{json, Map, Value};

use crate::host::{HostError, ItemKind};
use crate::jsonrpc::{codes, ErrorObject, Request};
use crate::protocol::{methods, Era, SubscriptionFilter};
use crate::server::{Handler, HandlerError, RequestContext, ServerHandle, Sessions};

use super::auth::{caller, Principal};
use super::forward::{for_client, forward, Call};
use super::listen;
use super::state::GatewayState;
use super::subscribe::subscription;
use super::target::READY_WAIT;
use super::watches::watch;

/// The handler of `/mcp`, for every caller: each request's caller is in
/// its HTTP request's extensions.
pub(crate) struct Namespace {
    gateway: Weak<GatewayState>,
    sessions: Sessions,
}

/// Where a namespaced name goes.
struct Owner {
    server: String,
    own: String,
}

impl Namespace {
    pub(crate) fn new(gateway: Weak<GatewayState>, sessions: Sessions) -> Self {
        Namespace { gateway, sessions }
    }

    fn gateway(&self) -> Result<Arc<GatewayState>, HandlerError> {
        self.gateway
            .upgrade()
            .ok_or_else(|| HandlerError::Internal("the gateway is stopping".into()))
    }

    /// Whether the caller sees `server`'s item `own` of `kind`.
    fn visible(
        caller: &Principal,
        gateway: &GatewayState,
        kind: ItemKind,
        server: &str,
        own: &str,
    ) -> bool {
        if !caller.server_allowed(server) {
            return false;
        }
        match kind {
            ItemKind::Tool => gateway.serves_tool(server, own) && caller.tool_allowed(server, own),
            _ => true,
        }
    }

    /// Starts the lazy servers this caller may use, and waits (bounded) for
    /// their lists.
    async fn start_lazy(caller: &Principal, gateway: &Arc<GatewayState>) {
        let mut started = false;
        for name in gateway.host().lazy_servers() {
            if caller.server_allowed(&name) {
                if let Err(e) = gateway.ensure_started(&name).await {
                    tracing::warn!(server = %name, error = %e, "gateway: a lazy server could not start");
                }
                started = true;
            }
        }
        if started {
            gateway.host().ready(READY_WAIT).await;
        }
    }

    /// The namespace's items of `kind` this caller sees, as JSON.
    fn list(caller: &Principal, gateway: &GatewayState, kind: ItemKind) -> Vec<Value> {
        let renamed = kind != ItemKind::Resource;
        gateway
            .host()
            .listed(kind)
            .into_iter()
            .filter(|(_, h)| Self::visible(caller, gateway, kind, h.server(), h.own_name()))
            .filter_map(|(name, h)| {
                let mut v: Value = serde_json::from_str(h.json()).ok()?;
                if renamed {
                    v.as_object_mut()?
                        .insert("name".into(), Value::String(name));
                }
                Some(v)
            })
            .collect()
    }

    /// The server and own name of the namespaced `name`; a lazy server
    /// whose prefix it has is started first.
    async fn resolve(
        caller: &Principal,
        gateway: &Arc<GatewayState>,
        kind: ItemKind,
        name: &str,
    ) -> Result<Owner, HandlerError> {
        let unknown = || {
            let what = match kind {
                ItemKind::Tool => "tool",
                ItemKind::Prompt => "prompt",
                _ => "resource",
            };
            HandlerError::Rpc(
                ErrorObject::new(codes::INVALID_PARAMS, format!("Unknown {what}: {name}"))
                    .with_data(json!({ "name": name })),
            )
        };
        let found = |gateway: &GatewayState| {
            gateway.host().owner(kind, name).map(|r| Owner {
                server: r.server,
                own: r.name,
            })
        };
        let owner = match found(gateway) {
            Some(o) => Some(o),
            None if kind != ItemKind::Resource => match gateway.host().lazy_owner(name) {
                Some(server) if caller.server_allowed(&server) => {
                    gateway
                        .ensure_started(&server)
                        .await
                        .map_err(|e| HandlerError::Internal(e.to_string()))?;
                    gateway.host().ready(READY_WAIT).await;
                    found(gateway)
                }
                _ => None,
            },
            None => None,
        };
        let Some(owner) = owner else {
            return Err(Self::why_not(caller, gateway, kind, name).unwrap_or_else(unknown));
        };
        if !Self::visible(caller, gateway, kind, &owner.server, &owner.own) {
            return Err(unknown());
        }
        Ok(owner)
    }

    /// Why the namespaced `name` has no server now, when the caller may see
    /// it: its server gave up (down until its revive, or for good) or is
    /// starting (again); `None` when no server has it.
    fn why_not(
        caller: &Principal,
        gateway: &GatewayState,
        kind: ItemKind,
        name: &str,
    ) -> Option<HandlerError> {
        let e = gateway.host().route_error(kind, name)?;
        let server = match &e {
            HostError::Down { server, .. }
            | HostError::Removed { server, .. }
            | HostError::Unavailable { server, .. } => server,
            _ => return None,
        };
        let own = name
            .strip_prefix(&gateway.host().prefix(server))
            .unwrap_or(name);
        if !Self::visible(caller, gateway, kind, server, own) {
            return None;
        }
        let mut data = json!({ "name": name, "server": server });
        if let HostError::Down {
            reason,
            next_try_in,
            ..
        } = &e
        {
            data["reason"] = json!(reason);
            data["nextTryInMs"] = json!(u64::try_from(next_try_in.as_millis()).unwrap_or(u64::MAX));
        }
        Some(HandlerError::Rpc(
            ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()).with_data(data),
        ))
    }

    /// Sends `method` to the server of `owner`, with `params`.
    async fn send(
        caller: &Arc<Principal>,
        gateway: &Arc<GatewayState>,
        owner: &Owner,
        method: &str,
        params: Option<Value>,
        ctx: &RequestContext,
    ) -> Result<Value, HandlerError> {
        let target = gateway.target(&owner.server)?;
        let call = Call {
            gateway,
            caller,
            target: &target,
            method,
            ctx,
        };
        forward(call, params, false).await
    }

    /// `params` with `key` set to `value`.
    fn with(params: Option<Value>, key: &str, value: &str) -> Option<Value> {
        let mut p = match params {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        p.insert(key.into(), Value::String(value.into()));
        Some(Value::Object(p))
    }

    fn string(params: &Option<Value>, key: &str) -> Result<String, HandlerError> {
        params
            .as_ref()
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| HandlerError::InvalidParams(format!("missing `{key}`")))
    }

    async fn complete(
        caller: &Arc<Principal>,
        gateway: &Arc<GatewayState>,
        params: Option<Value>,
        ctx: &RequestContext,
    ) -> Result<Value, HandlerError> {
        let reference = params
            .as_ref()
            .and_then(|p| p.get("ref"))
            .cloned()
            .unwrap_or(Value::Null);
        let (kind, key) = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => (ItemKind::Prompt, "name"),
            Some("ref/resource") => (ItemKind::Resource, "uri"),
            _ => return Err(HandlerError::InvalidParams("unknown `ref` type".into())),
        };
        let name = reference
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| HandlerError::InvalidParams(format!("missing `ref.{key}`")))?;
        let owner = Self::resolve(caller, gateway, kind, name).await?;
        let mut p = params.unwrap_or_else(|| json!({}));
        if let Some(r) = p.get_mut("ref").and_then(Value::as_object_mut) {
            r.insert(key.into(), Value::String(owner.own.clone()));
        }
        Self::send(
            caller,
            gateway,
            &owner,
            methods::COMPLETION_COMPLETE,
            Some(p),
            ctx,
        )
        .await
    }
}

impl Handler for Namespace {
    async fn handle_request(
        &self,
        req: Request,
        ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        let gateway = self.gateway()?;
        let caller = caller(&ctx)?;
        let caller = &caller;
        let era = ctx.era();
        let params = req.params.clone();
        match req.method.as_str() {
            methods::TOOLS_LIST => {
                Self::start_lazy(caller, &gateway).await;
                let v = json!({ "tools": Self::list(caller, &gateway, ItemKind::Tool) });
                Ok(for_client(v, &req.method, era))
            }
            methods::PROMPTS_LIST => {
                Self::start_lazy(caller, &gateway).await;
                Ok(json!({ "prompts": Self::list(caller, &gateway, ItemKind::Prompt) }))
            }
            methods::RESOURCES_LIST => {
                Self::start_lazy(caller, &gateway).await;
                Ok(json!({ "resources": Self::list(caller, &gateway, ItemKind::Resource) }))
            }
            // Templates name no resource the namespace routes: read them
            // through `/servers/NAME/mcp`.
            methods::RESOURCES_TEMPLATES_LIST => Ok(json!({ "resourceTemplates": [] })),
            methods::TOOLS_CALL | methods::PROMPTS_GET => {
                let kind = if req.method == methods::TOOLS_CALL {
                    ItemKind::Tool
                } else {
                    ItemKind::Prompt
                };
                let name = Self::string(&params, "name")?;
                let owner = Self::resolve(caller, &gateway, kind, &name).await?;
                let params = Self::with(params, "name", &owner.own);
                Self::send(caller, &gateway, &owner, &req.method, params, &ctx).await
            }
            methods::RESOURCES_READ => {
                let uri = Self::string(&params, "uri")?;
                let owner = Self::resolve(caller, &gateway, ItemKind::Resource, &uri).await?;
                Self::send(caller, &gateway, &owner, &req.method, params, &ctx).await
            }
            methods::COMPLETION_COMPLETE => Self::complete(caller, &gateway, params, &ctx).await,
            methods::LOGGING_SET_LEVEL if era == Era::Stateful => {
                self.sessions.handle_request(req, ctx).await
            }
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE
                if era == Era::Stateful =>
            {
                let uri = Self::string(&params, "uri")?;
                let owner = Self::resolve(caller, &gateway, ItemKind::Resource, &uri).await?;
                let target = gateway.target(&owner.server)?;
                subscription(&gateway, caller, &self.sessions, &target, req, &ctx).await
            }
            methods::SUBSCRIPTIONS_LISTEN if era == Era::Stateless => {
                let p = listen::params(&req)?;
                let all = json!({
                    "tools": { "listChanged": true },
                    "prompts": { "listChanged": true },
                    "resources": { "listChanged": true, "subscribe": true },
                });
                let mut agreed: SubscriptionFilter = listen::agreed(&p.notifications, &all);
                // The stream's resources are watched for it alone, as long
                // as it lasts; those of no server are not acknowledged.
                let mut _watches = None;
                if let Some(uris) = agreed.resource_subscriptions.take() {
                    let holder = _watches.insert(gateway.watches().stream_holder());
                    let mut watched = Vec::new();
                    for uri in uris {
                        let Ok(owner) =
                            Self::resolve(caller, &gateway, ItemKind::Resource, &uri).await
                        else {
                            continue;
                        };
                        watch(
                            gateway.watches(),
                            holder.holder(),
                            &gateway.target(&owner.server)?,
                            &uri,
                        )
                        .await?;
                        watched.push(uri);
                    }
                    agreed.resource_subscriptions = Some(watched);
                }
                self.sessions.serve_listen(&req, ctx, agreed).await
            }
            m => Err(HandlerError::MethodNotFound(m.to_owned())),
        }
    }

    fn serving(&self, handle: ServerHandle) {
        self.sessions.serving(handle);
    }

    fn tool_input_schema(&self, name: &str) -> Option<Value> {
        let gateway = self.gateway.upgrade()?;
        let tools = gateway.host().listed(ItemKind::Tool);
        tools
            .iter()
            .find(|(n, _)| n == name)
            .map(|(n, h)| h.tool(n).tool.input_schema)
    }
}
