//! `subscriptions/listen` (2026-07-28) at the gateway: passed on to a
//! 2026-07-28 server as its own stream (each notification re-tagged with
//! the client's stream id), or served by the endpoint's sessions for a 2025-11-25
//! server, with the notifications its capabilities promise.

use serde_json::{json, Map, Value};

use crate::jsonrpc::Request;
use crate::protocol::{meta, ListenParams, SubscriptionFilter};
use crate::server::{HandlerError, RequestContext};

use super::target::{failure, Target};

/// The request's params.
pub(crate) fn params(req: &Request) -> Result<ListenParams, HandlerError> {
    let p = req.params.clone().unwrap_or_else(|| json!({}));
    serde_json::from_value(p).map_err(|e| HandlerError::InvalidParams(e.to_string()))
}

/// What a 2025-11-25 server can send of what was asked: list changes it
/// declares, resource updates when it supports subscriptions.
pub(crate) fn agreed(asked: &SubscriptionFilter, caps: &Value) -> SubscriptionFilter {
    let declares = |kind: &str, flag: &str| {
        caps.get(kind)
            .and_then(|c| c.get(flag))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let both = |b: Option<bool>, have: bool| (b == Some(true) && have).then_some(true);
    SubscriptionFilter {
        tools_list_changed: both(asked.tools_list_changed, declares("tools", "listChanged")),
        prompts_list_changed: both(
            asked.prompts_list_changed,
            declares("prompts", "listChanged"),
        ),
        resources_list_changed: both(
            asked.resources_list_changed,
            declares("resources", "listChanged"),
        ),
        resource_subscriptions: asked
            .resource_subscriptions
            .clone()
            .filter(|_| declares("resources", "subscribe")),
        ..Default::default()
    }
}

/// Passes the stream on to a 2026-07-28 server until the client
/// cancels it or the server ends it.
pub(crate) async fn pass(
    target: &Target,
    req: &Request,
    ctx: RequestContext,
) -> Result<Value, HandlerError> {
    let p = params(req)?;
    let mut sub = target
        .client()
        .listen(p.notifications)
        .await
        .map_err(|e| failure(target.server(), &e))?;
    let id = serde_json::to_value(&req.id).unwrap_or(Value::Null);
    loop {
        tokio::select! {
            n = sub.next_raw() => match n {
                Some(n) => {
                    let params = crate::protocol::on_stream(n.params, &id);
                    let _ = ctx.notify(&n.method, Some(params));
                }
                None => break,
            },
            _ = ctx.cancelled() => break,
            _ = ctx.input_closed() => break,
        }
    }
    let mut m = Map::new();
    m.insert(meta::SUBSCRIPTION_ID.into(), id);
    Ok(json!({ "resultType": "complete", "_meta": m }))
}
