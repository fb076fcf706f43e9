//! Sending with authorization: every request of the link carries the
//! access token of its [`OAuth`](crate::transport::http::oauth::OAuth) (when it has one); a
//! 401, or a 403 asking for more scope, makes it authorize (or refresh)
//! and send the request again, until the server accepts it or
//! authorization gives up (its limit of attempts in a row).

use reqwest::{RequestBuilder, Response};
use serde_json::json;

use super::body::describe;
use super::Core;
use crate::jsonrpc::{ErrorObject, Message, Outcome, RequestId, Response as RpcResponse};
use crate::transport::http::oauth::AuthError;
pub(super) use crate::transport::http::oauth::SendError;

/// Sends the request `build` makes (again for each attempt), with the
/// link's access token, authorizing when the server asks.
pub(super) async fn send(
    core: &Core,
    build: impl Fn() -> RequestBuilder,
) -> Result<Response, SendError> {
    match &core.opts.oauth {
        Some((oauth, flow)) => oauth.send(flow, &core.opts.url, core.name(), build).await,
        None => build()
            .send()
            .await
            .map_err(|e| SendError::Http(describe(e))),
    }
}

/// Request `id` failed for want of authorization: its caller gets an
/// error saying why.
pub(super) async fn refused(
    core: &Core,
    id: &RequestId,
    status: Option<reqwest::StatusCode>,
    e: AuthError,
) {
    let mut data = json!({ "authorization": true });
    if let Some(s) = status {
        data["httpStatus"] = json!(s.as_u16());
    }
    let error = ErrorObject::new(-32600, SendError::auth_text(status, &e)).with_data(data);
    let r = RpcResponse {
        id: Some(id.clone()),
        outcome: Outcome::Error(error),
    };
    core.deliver(Message::Response(r)).await
}
