//! Sending one request with authorization: the access token on it, and on
//! a 401 (or a 403 asking for more scope) authorizing and sending it again,
//! until the server accepts it or authorization gives up. The HTTP link
//! sends every request through this; [`OAuth::login`](super::OAuth::login)
//! sends its probe through it too.

use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, WWW_AUTHENTICATE};
use reqwest::{RequestBuilder, Response, StatusCode, Url};
use tracing::info;

use super::challenge::Challenge;
use super::fetch::describe;
use super::guard::FlowClient;
use super::{AuthError, OAuth};

/// Why a request got no response to read.
pub(crate) enum SendError {
    /// The connection failed (what happened, without the URL).
    Http(String),
    /// Authorization failed or gave up, after the server answered this
    /// status (`None`: before anything was sent).
    Auth(Option<StatusCode>, AuthError),
}

impl SendError {
    /// "authorization failed" with the status that asked for it.
    pub(crate) fn auth_text(status: Option<StatusCode>, e: &AuthError) -> String {
        match status {
            Some(s) => format!("the server asked for authorization (HTTP {s}), which failed: {e}"),
            None => format!("authorization failed: {e}"),
        }
    }
}

impl OAuth {
    /// Sends the request `build` makes (again for each attempt) to the
    /// server at `url`, with its access token, authorizing (on `flow`)
    /// when the server asks. `name` is the server's name in logs.
    pub(crate) async fn send(
        &self,
        flow: &FlowClient,
        url: &Url,
        name: &str,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<Response, SendError> {
        loop {
            let token = self
                .bearer(url)
                .await
                .map_err(|e| SendError::Auth(None, e))?;
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
                    self.accepted(url);
                }
                return Ok(resp);
            }
            drop(resp);
            info!(server = %name, %status, "the server asks for authorization");
            self.challenged(flow, url, step_up, &challenge, token.as_ref())
                .await
                .map_err(|e| SendError::Auth(Some(status), e))?;
        }
    }
}
