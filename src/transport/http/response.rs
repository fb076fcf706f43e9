//! Receiving the answer of one POST: JSON or an SSE stream, an HTTP error
//! status read for the JSON-RPC error its body carries (a 400 with -32022,
//! a 404 with -32601), and 404 for the session. Every body is read within
//! a byte bound, never buffered past it.

use std::sync::Arc;

use reqwest::header::{CONTENT_TYPE, LOCATION};
use reqwest::{Response, StatusCode};
use serde_json::json;

use super::body::{read_body, BodyError};
use super::known_tools::received;
use super::{stream, Core};
use crate::error::CloseReason;
use crate::http::headers as mcp;
use crate::jsonrpc::{ErrorObject, Message, Outcome, RequestId, Response as RpcResponse};
use crate::transport::display_url::display_url;

/// Bytes of an error body read to explain an HTTP failure.
const ERROR_BODY_BYTES: usize = 64 * 1024;

/// Reads the answer to request `id` from `resp`.
pub(super) async fn answer(core: &Arc<Core>, id: &RequestId, method: &str, resp: Response) {
    let status = resp.status();
    if method == crate::protocol::methods::INITIALIZE && status.is_success() {
        let session = resp
            .headers()
            .get(mcp::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .filter(|s| mcp::is_visible_ascii(s))
            .map(str::to_owned);
        core.state().session_id = session;
    }
    if status == StatusCode::NOT_FOUND
        && method != crate::protocol::methods::INITIALIZE
        && core.state().session_id.is_some()
    {
        core.close(CloseReason::SessionExpired);
        return;
    }
    if status == StatusCode::ACCEPTED {
        // The answer will come on another stream (the GET stream).
        return;
    }
    if !status.is_success() {
        return refused(core, id, status, resp).await;
    }
    let sse = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
    if sse {
        stream::read_post_stream(core.clone(), id.clone(), resp).await;
        return;
    }
    match read_body(resp, core.opts.max_message_bytes).await {
        Ok(body) => match Message::parse_owned(body) {
            Ok(m) => received(core, m).await,
            Err(e) => core.unanswered(id.clone(), format!("the answer is not JSON-RPC: {e}")),
        },
        Err(BodyError::TooLarge { at_least }) => core.unanswered(
            id.clone(),
            format!(
                "the answer is at least {at_least} bytes, over the {}-byte limit",
                core.opts.max_message_bytes
            ),
        ),
        Err(BodyError::Failed(e)) => core.close(CloseReason::ConnectionFailed(e)),
    }
}

/// An HTTP error status for request `id`: the body's JSON-RPC error when
/// it has one (a 400 carrying -32022, a 404 carrying -32601), else an
/// error made of the status and the start of the body. Either way the
/// caller (or the discovery probe, which then falls back) gets an answer.
async fn refused(core: &Arc<Core>, id: &RequestId, status: StatusCode, resp: Response) {
    // Not followed (the headers would go elsewhere): said, with where to,
    // shown without credentials or query.
    let moved = status
        .is_redirection()
        .then(|| resp.headers().get(LOCATION)?.to_str().ok())
        .flatten()
        .and_then(|to| core.opts.url.join(to).ok())
        .map(|to| display_url(to.as_str()));
    let body = match read_body(resp, ERROR_BODY_BYTES).await {
        Ok(b) => b,
        Err(BodyError::TooLarge { .. }) => Vec::new(),
        Err(BodyError::Failed(e)) => return core.close(CloseReason::ConnectionFailed(e)),
    };
    if let Ok(Message::Response(mut r)) = Message::parse(&body) {
        if let Outcome::Error(e) = &mut r.outcome {
            // The code and data as sent (-32022's `supported` matters).
            // The status is said too when it tells more than the code (an
            // auth failure only says it there); not when it is the one the
            // 2026-07-28 era gives that code (404 for -32601, 400 for
            // -32602...): the error then reads as it does on stdio.
            if crate::http::status::status_for_error(e.code) != status {
                e.message = format!("HTTP {status}: {}", e.message);
            }
            r.id = Some(id.clone());
            return core.deliver(Message::Response(r)).await;
        }
    }
    let text = String::from_utf8_lossy(&body);
    let excerpt: String = text.chars().take(200).collect();
    let code = if status.is_client_error() {
        -32600
    } else {
        -32603
    };
    let text = match moved {
        Some(to) => format!(
            "HTTP {status}: redirected to {to}; redirects are not followed (they would carry the headers elsewhere)"
        ),
        None => format!("HTTP {status}: {}", excerpt.trim()),
    };
    let error = ErrorObject::new(code, text).with_data(json!({ "httpStatus": status.as_u16() }));
    let r = RpcResponse {
        id: Some(id.clone()),
        outcome: Outcome::Error(error),
    };
    core.deliver(Message::Response(r)).await
}
