//! The headers of one POST: what the body implies (`Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-*`, `MCP-Protocol-Version`) and what the link
//! learned (`MCP-Session-Id`), on top of the configured ones.
//!
//! `Mcp-Method` and `Mcp-Name` go on every POST in both eras: the
//! 2026-07-28 transport requires them, and a 2025 server ignores headers
//! it does not know. `Mcp-Param-*` only on 2026-07-28 `tools/call`, where the
//! tool's `x-mcp-header` annotations (learned from `tools/list`) ask.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::Value;

use super::State;
use crate::http::headers as mcp;
use crate::jsonrpc::Message;
use crate::protocol::meta;

/// `Accept` of a POST: either answer form.
const ACCEPT_POST: &str = "application/json, text/event-stream";

/// The version a 2026-07-28 request names in its `_meta`.
pub(super) fn meta_version(params: Option<&Value>) -> Option<&str> {
    params?.get("_meta")?.get(meta::PROTOCOL_VERSION)?.as_str()
}

/// Sets `name: value`, skipping a value no header can carry (the body
/// still says it; the server's check then reports the mismatch).
fn set(h: &mut HeaderMap, name: &str, value: &str) {
    if let (Ok(n), Ok(v)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        h.insert(n, v);
    }
}

/// The session headers every request of the link carries: the configured
/// ones, `MCP-Session-Id`, and `MCP-Protocol-Version` (`version`, or what
/// the link negotiated).
pub(super) fn base(configured: &HeaderMap, st: &State, version: Option<&str>) -> HeaderMap {
    let mut h = configured.clone();
    if let Some(id) = &st.session_id {
        set(&mut h, mcp::SESSION_ID, id);
    }
    let version = version
        .or(st.stateful_version.as_deref())
        .or(st.modern_version.as_deref());
    if let Some(v) = version {
        set(&mut h, mcp::PROTOCOL_VERSION, v);
    }
    h
}

/// All headers of the POST carrying `message`.
pub(super) fn for_post(configured: &HeaderMap, st: &State, message: &Message) -> HeaderMap {
    let (method, params) = match message {
        Message::Request(r) => (Some(r.method.as_str()), r.params.as_ref()),
        Message::Notification(n) => (Some(n.method.as_str()), n.params.as_ref()),
        Message::Response(_) => (None, None),
    };
    let version = meta_version(params);
    let mut h = base(configured, st, version);
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(ACCEPT, HeaderValue::from_static(ACCEPT_POST));
    let Some(method) = method else { return h };
    set(&mut h, mcp::METHOD, &mcp::encode_value(method));
    if let Some(Some(name)) = mcp::name_source(method, params) {
        set(&mut h, mcp::NAME, &mcp::encode_value(name));
    }
    if method == "tools/call" && version.is_some() {
        params_headers(&mut h, st, params);
    }
    h
}

/// `Mcp-Param-{Name}` for each annotated argument present with a value a
/// header can mirror (null and absent ones are omitted).
fn params_headers(h: &mut HeaderMap, st: &State, params: Option<&Value>) {
    let Some(params) = params else { return };
    let Some(tool) = params.get("name").and_then(Value::as_str) else {
        return;
    };
    let Some(pairs) = st.tool_headers.get(tool) else {
        return;
    };
    let args = params.get("arguments");
    for (arg, header) in pairs.iter() {
        let Some(v) = args.and_then(|a| a.get(arg)).and_then(mcp::param_value) else {
            continue;
        };
        set(
            h,
            &format!("{}{header}", mcp::PARAM_PREFIX),
            &mcp::encode_value(&v),
        );
    }
}
