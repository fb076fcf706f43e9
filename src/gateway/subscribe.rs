//! `resources/subscribe` and `resources/unsubscribe` from a client's session:
//! the session becomes a holder of the gateway's watches (see the
//! `watches` module), released when the session ends.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::jsonrpc::Request;
use crate::protocol::methods;
use crate::server::{Handler, HandlerError, RequestContext, Sessions};

use super::auth::Principal;
use super::state::GatewayState;
use super::target::Target;
use super::watches::{unwatch, watch};

/// A 2025-11-25 session's `resources/subscribe` or `unsubscribe` of a
/// resource of `target`: recorded in the session (its `sessions` passes it the
/// updates) and held by it.
pub(crate) async fn subscription(
    gateway: &Arc<GatewayState>,
    principal: &Principal,
    sessions: &Sessions,
    target: &Target,
    req: Request,
    ctx: &RequestContext,
) -> Result<Value, HandlerError> {
    let method = req.method.clone();
    let mut record = gateway.observe(principal, target.server(), &method, None, None);
    let result = subscribe_session(gateway, sessions, target, req, ctx).await;
    record.finish(&result);
    result
}

async fn subscribe_session(
    gateway: &Arc<GatewayState>,
    sessions: &Sessions,
    target: &Target,
    req: Request,
    ctx: &RequestContext,
) -> Result<Value, HandlerError> {
    let subscribe = req.method == methods::RESOURCES_SUBSCRIBE;
    let holder = gateway.watches().session_holder(ctx)?;
    // Checks the params and the session's own bound, and records it.
    sessions.handle_request(req.clone(), ctx.clone()).await?;
    let uri = req
        .params
        .as_ref()
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !subscribe {
        unwatch(gateway.watches(), &holder, target, uri).await;
        return Ok(json!({}));
    }
    if let Err(e) = watch(gateway.watches(), &holder, target, uri).await {
        // The session does not hold what could not be opened.
        let undo = Request {
            method: methods::RESOURCES_UNSUBSCRIBE.into(),
            ..req.clone()
        };
        let _ = sessions.handle_request(undo, ctx.clone()).await;
        return Err(e);
    }
    Ok(json!({}))
}
