//! The requests authorization makes (metadata, registration, token), on
//! the flow's HTTP client (the link's proxy settings and TLS, no
//! redirects followed), each to a URL [`FlowClient::admit`] accepted, with
//! a deadline and its body read within a byte bound; and the adapter
//! through which the `oauth2` crate sends its requests.

use std::time::Duration;

use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{StatusCode, Url};
use serde_json::Value;

pub(crate) use super::guard::shown;
use super::guard::FlowClient;

/// Largest metadata, registration or token answer read.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Time allowed for one request of the flow.
pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What a JSON request got.
pub(crate) enum Fetched {
    /// A 2xx answer's JSON.
    Json(Value),
    /// Another status (the body's start, for the error).
    Status(StatusCode, String),
}

/// Reads `resp`'s body, at most [`MAX_BODY_BYTES`].
async fn body(mut resp: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(describe)? {
        if out.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(format!("the answer is over {MAX_BODY_BYTES} bytes"));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// A transport error with its causes, without the URL.
pub(crate) fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Sends `req` and reads a JSON answer; `Err` when the request failed or
/// a 2xx body is not JSON.
async fn json(req: reqwest::RequestBuilder) -> Result<Fetched, String> {
    let resp = req
        .header(ACCEPT, HeaderValue::from_static("application/json"))
        .timeout(REQUEST_TIMEOUT)
        .send()
        .await
        .map_err(describe)?;
    let status = resp.status();
    let bytes = body(resp).await?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes);
        return Ok(Fetched::Status(status, text.chars().take(200).collect()));
    }
    serde_json::from_slice(&bytes)
        .map(Fetched::Json)
        .map_err(|e| format!("the answer is not JSON: {e}"))
}

/// Why a JSON request got no answer to read.
pub(crate) enum FetchError {
    /// The URL is refused ([`AuthError::RefusedUrl`](super::AuthError::RefusedUrl))
    /// or its name does not resolve: nothing was sent.
    Refused(super::AuthError),
    /// The request failed, or its answer is not JSON (what happened).
    Failed(String),
}

/// GETs a JSON document: `what` (no query allowed) at `url`.
pub(crate) async fn get_json(
    flow: &FlowClient,
    what: &'static str,
    url: &Url,
) -> Result<Fetched, FetchError> {
    flow.admit(what, url, false)
        .await
        .map_err(FetchError::Refused)?;
    json(flow.client().get(url.clone()))
        .await
        .map_err(FetchError::Failed)
}

/// POSTs a JSON body to `what` at `url` (an OAuth endpoint, which may have
/// a query) and reads a JSON answer.
pub(crate) async fn post_json(
    flow: &FlowClient,
    what: &'static str,
    url: &Url,
    body: &Value,
) -> Result<Fetched, FetchError> {
    flow.admit(what, url, true)
        .await
        .map_err(FetchError::Refused)?;
    let req = flow
        .client()
        .post(url.clone())
        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .body(body.to_string());
    json(req).await.map_err(FetchError::Failed)
}

/// Why a request of the `oauth2` crate failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct HttpFailure(String);

/// Sends one request of the `oauth2` crate (to the token endpoint) with
/// `flow`'s client.
pub(crate) async fn send(
    flow: FlowClient,
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, HttpFailure> {
    let (parts, body_bytes) = request.into_parts();
    let url = Url::parse(&parts.uri.to_string()).map_err(|e| HttpFailure(e.to_string()))?;
    flow.admit("the token endpoint", &url, true)
        .await
        .map_err(|e| HttpFailure(e.to_string()))?;
    let resp = flow
        .client()
        .request(parts.method, url)
        .headers(parts.headers)
        .body(body_bytes)
        .timeout(REQUEST_TIMEOUT)
        .send()
        .await
        .map_err(|e| HttpFailure(describe(e)))?;
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = body(resp).await.map_err(HttpFailure)?;
    let mut out = oauth2::http::Response::new(bytes);
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    Ok(out)
}
