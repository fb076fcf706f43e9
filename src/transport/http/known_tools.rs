//! What the link knows of the tools' `x-mcp-header` annotations: learned
//! from every `tools/list` answer it carries (whose invalid tools are
//! dropped), or, when a 2026-07-28 `tools/call` names a tool it has never
//! seen listed, from a listing of its own made once per link before that
//! call goes out (a caller may call a tool without listing first, as
//! `mcp call` does, and the server then requires its `Mcp-Param-*`
//! headers all the same).

use std::sync::Arc;

use reqwest::header::CONTENT_TYPE;
use serde_json::{json, Value};
use tracing::{debug, warn};

use super::body::{read_body, BodyError};
use super::tool_headers::{self, Pairs};
use super::{headers, Core};
use crate::http::sse::Parser;
use crate::jsonrpc::{Message, Outcome, RawJson, RequestId};

/// Pages the link's own listing follows at most.
const MAX_PAGES: usize = 64;

/// Keeps the annotations of `kept` tools (`(tool, pairs)`), replacing what
/// was known of them.
pub(super) fn store(core: &Core, kept: Vec<(String, Pairs)>) {
    let mut st = core.state();
    for (tool, pairs) in kept {
        if pairs.is_empty() {
            st.tool_headers.remove(&tool);
        } else {
            st.tool_headers.insert(tool, Arc::new(pairs));
        }
    }
}

/// Filters a `tools/list` result in place (invalid tools dropped, each
/// said in the log) and keeps the annotations of the others; `true` when
/// a tool was dropped.
pub(super) fn from_result(core: &Core, result: &mut Value) -> bool {
    let (kept, dropped) = tool_headers::filter_tools(result);
    for (tool, why) in &dropped {
        warn!(server = %core.name(), tool = %tool, reason = %why, "tool dropped: invalid x-mcp-header");
    }
    store(core, kept);
    !dropped.is_empty()
}

/// Whether a 2026-07-28 `tools/call` with `params` names a tool the link has
/// no annotations for, before any listing of its own.
pub(super) fn unknown_tool(core: &Core, params: Option<&Value>) -> bool {
    if core.tools_learned.initialized() {
        return false;
    }
    let tool = params.and_then(|p| p.get("name")).and_then(Value::as_str);
    tool.is_some_and(|t| !core.state().tool_headers.contains_key(t))
}

/// Lists the tools once for this link (all pages, within [`MAX_PAGES`]),
/// with the `_meta` of the call that needs them; any failure leaves the
/// annotations as they were (the call then goes out without them).
pub(super) async fn list_once(core: &Arc<Core>, meta: Value) {
    core.tools_learned
        .get_or_init(|| async {
            let mut cursor: Option<String> = None;
            for page in 0..MAX_PAGES {
                let mut params = json!({ "_meta": meta });
                if let Some(c) = cursor.take() {
                    params["cursor"] = json!(c);
                }
                let id = RequestId::String(format!("conduit-http-tools-{page}"));
                let Some(mut result) = request(core, &id, params).await else {
                    return;
                };
                from_result(core, &mut result);
                match result.get("nextCursor").and_then(Value::as_str) {
                    Some(c) => cursor = Some(c.to_owned()),
                    None => return,
                }
            }
        })
        .await;
}

/// POSTs `tools/list` as `id` and returns its result, read from a JSON or
/// SSE answer within the link's limits; `None` on any failure.
async fn request(core: &Arc<Core>, id: &RequestId, params: Value) -> Option<Value> {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params })
        .to_string()
        .into_bytes();
    let message = Message::parse(&body).ok()?;
    let h = headers::for_post(&core.opts.headers, &core.state(), &message);
    let body = bytes::Bytes::from(body);
    let request = || {
        core.client
            .post(core.opts.url.clone())
            .headers(h.clone())
            .body(body.clone())
    };
    let sent = super::auth::send(core, request).await;
    let resp = match sent {
        Ok(r) if r.status().is_success() => r,
        Ok(r) => {
            debug!(server = %core.name(), status = %r.status(), "the link's own tools/list was refused");
            return None;
        }
        Err(_) => return None,
    };
    let sse = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
    let answer = if sse {
        sse_answer(core, resp, id).await?
    } else {
        match read_body(resp, core.opts.max_message_bytes).await {
            Ok(b) => Message::parse_owned(b).ok()?,
            Err(BodyError::TooLarge { .. } | BodyError::Failed(_)) => return None,
        }
    };
    match answer {
        Message::Response(r) if r.id.as_ref() == Some(id) => match r.outcome {
            Outcome::Result(raw) => raw.parse().ok(),
            Outcome::Error(_) => None,
        },
        _ => None,
    }
}

/// The answer to `id` on an SSE response (other events are not for
/// anyone: this request is the link's own).
async fn sse_answer(core: &Core, mut resp: reqwest::Response, id: &RequestId) -> Option<Message> {
    let mut parser = Parser::new(core.opts.max_message_bytes);
    while let Ok(Some(chunk)) = resp.chunk().await {
        for event in parser.feed(&chunk).ok()? {
            if let Ok(m @ Message::Response(_)) = Message::parse(event.data().as_bytes()) {
                if matches!(&m, Message::Response(r) if r.id.as_ref() == Some(id)) {
                    return Some(m);
                }
            }
        }
    }
    None
}

/// Delivers a message from the server, after what the link learns from
/// it: the protocol version of an `initialize` answer, the annotations of
/// a `tools/list` answer (whose invalid tools are dropped).
pub(super) async fn received(core: &Arc<Core>, message: Message) {
    let message = match message {
        Message::Response(mut r) => {
            let method =
                r.id.as_ref()
                    .and_then(|id| core.state().inflight.get(id).map(|f| f.method.clone()));
            if let (Some(method), Outcome::Result(raw)) = (method.as_deref(), &mut r.outcome) {
                learn_from(core, method, raw);
            }
            Message::Response(r)
        }
        m => m,
    };
    core.deliver(message).await
}

/// What the link keeps from the result of `method`.
fn learn_from(core: &Arc<Core>, method: &str, raw: &mut RawJson) {
    match method {
        crate::protocol::methods::INITIALIZE => {
            let version = raw.parse::<Value>().ok().and_then(|v| {
                v.get("protocolVersion")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            core.state().stateful_version = version;
        }
        "tools/list" => {
            let Ok(mut v) = raw.parse::<Value>() else {
                return;
            };
            if from_result(core, &mut v) {
                if let Ok(filtered) = RawJson::from_value(&v) {
                    *raw = filtered;
                }
            }
        }
        _ => {}
    }
}
