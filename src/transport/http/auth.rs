//! Sending with authorization: every request of the link carries the
//! access token of its [`OAuth`](crate::oauth::OAuth) (when it has one); a
//! 401, or a 403 asking for more scope, makes it authorize (or refresh)
//! and send the request again, until the server accepts it or
//! authorization gives up (its limit of attempts in a row).

use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, WWW_AUTHENTICATE};
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::json;
use tracing::info;

use super::answer::describe;
use super::Core;
use crate::jsonrpc::{ErrorObject, Message, Outcome, RequestId, Response as RpcResponse};
use crate::oauth::{AuthError, Challenge};

/// Why a request got no response to read.
pub(super) enum SendError {
    /// The connection failed (what happened, without the URL).
    Http(String),
    /// Authorization failed or gave up.
    Auth(AuthError),
}

/// Sends the request `build` makes (again for each attempt), with the
/// link's access token, authorizing when the server asks.
pub(super) async fn send(
    core: &Core,
    build: impl Fn() -> RequestBuilder,
) -> Result<Response, SendError> {
    let Some(oauth) = &core.opts.oauth else {
        return build()
            .send()
            .await
            .map_err(|e| SendError::Http(describe(e)));
    };
    let url = &core.opts.url;
    loop {
        let token = oauth.bearer(url).await.map_err(SendError::Auth)?;
        let mut req = build();
        if let Some(t) = &token {
            if let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", t.expose())) {
                v.set_sensitive(true);
                let mut h = HeaderMap::new();
                h.insert(AUTHORIZATION, v);
                // Replaces a configured Authorization header.
                req = req.headers(h);
            }
        }
        let resp = req.send().await.map_err(|e| SendError::Http(describe(e)))?;
        let status = resp.status();
        let challenge = Challenge::parse(
            resp.headers()
                .get_all(WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok()),
        );
        let step_up = status == StatusCode::FORBIDDEN && challenge.insufficient_scope();
        if status != StatusCode::UNAUTHORIZED && !step_up {
            if token.is_some() && status.is_success() {
                oauth.accepted(url);
            }
            return Ok(resp);
        }
        drop(resp);
        info!(server = %core.name(), %status, "the server asks for authorization");
        oauth
            .challenged(&core.client, url, step_up, &challenge, token.as_ref())
            .await
            .map_err(SendError::Auth)?;
    }
}

/// Request `id` failed for want of authorization: its caller gets an
/// error saying why.
pub(super) async fn refused(core: &Core, id: &RequestId, e: AuthError) {
    let error = ErrorObject::new(-32600, format!("authorization failed: {e}"))
        .with_data(json!({ "authorization": true }));
    let r = RpcResponse {
        id: Some(id.clone()),
        outcome: Outcome::Error(error),
    };
    core.deliver(Message::Response(r)).await
}
