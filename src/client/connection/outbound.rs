//! Outbound traffic of the Connection itself (handshake, cancellations,
//! answers to the server's requests), and the serialisation of calls with
//! the era's `_meta`, shared with the callers' direct path.

use serde_json::{json, Map, Value};
use tracing::warn;

use super::ConnectionState;
use crate::jsonrpc::{encode, RequestId};
use crate::protocol::{methods, Era};

impl ConnectionState {
    /// Queues one of the Connection's own protocol lines (handshake,
    /// pong, error answers): small, so it skips the write queue's bound.
    /// Returns whether it was queued.
    pub(super) fn send_control(&self, line: Vec<u8>) -> bool {
        match self.shared.link() {
            // On failure the link is closing and reports Closed.
            Some(link) => link.queue().send_control(line).is_ok(),
            None => false,
        }
    }

    pub(super) fn send_notification(&self, method: &str, params: Option<&Value>) {
        match encode::notification(method, params) {
            Ok(line) => {
                self.send_control(line);
            }
            Err(e) => {
                warn!(server = %self.name(), method, error = %e, "could not encode notification")
            }
        }
    }

    pub(super) fn send_cancelled(&self, id: &RequestId, reason: &str) {
        let params = json!({ "requestId": id, "reason": reason });
        self.send_notification(methods::CANCELLED, Some(&params));
    }
}

/// Serialises a call's request line for `era`: in the modern era with the
/// session's `_meta` (spliced in pre-serialised when nothing needs merging),
/// with a `progressToken` (the request id) when progress is wanted. The
/// caller's params are not changed (merging works on a copy), so a call
/// that could not be sent directly can still be sent by the Connection.
pub(super) fn encode_call(
    era: Era,
    meta: Option<&MetaCache>,
    id: &RequestId,
    method: &str,
    params: &Option<Value>,
    progress: bool,
) -> Result<Vec<u8>, String> {
    let mut extra = match (era, meta) {
        (Era::Modern, Some(cache)) if !progress && !has_meta(params) => {
            let with = WithMeta {
                params: params.as_ref().and_then(Value::as_object),
                meta: &cache.raw,
            };
            return encode::request(id, method, Some(&with)).map_err(|e| e.to_string());
        }
        (Era::Modern, cache) => cache.map(|c| c.map.clone()).unwrap_or_default(),
        (Era::Legacy, _) => Map::new(),
    };
    if progress {
        extra.insert("progressToken".into(), id_value(id));
    }
    if extra.is_empty() {
        return encode::request(id, method, params.as_ref()).map_err(|e| e.to_string());
    }
    let mut params = params.clone();
    merge_meta(&mut params, extra)?;
    encode::request(id, method, params.as_ref()).map_err(|e| e.to_string())
}

/// Params serialised with a pre-serialised `_meta` (modern fast path).
#[derive(serde::Serialize)]
struct WithMeta<'a> {
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    params: Option<&'a Map<String, Value>>,
    #[serde(rename = "_meta")]
    meta: &'a serde_json::value::RawValue,
}

/// The session's `_meta` for modern requests, built once when ready.
pub(super) struct MetaCache {
    pub(super) map: Map<String, Value>,
    pub(super) raw: Box<serde_json::value::RawValue>,
}

fn has_meta(params: &Option<Value>) -> bool {
    match params {
        None => false,
        Some(Value::Object(m)) => m.contains_key("_meta"),
        // Not an object: the merge path reports the error.
        Some(_) => true,
    }
}

fn id_value(id: &RequestId) -> Value {
    match id {
        RequestId::Number(n) => Value::from(*n),
        RequestId::String(s) => Value::from(s.clone()),
    }
}

/// Adds `extra` to `params._meta`, creating both if needed.
fn merge_meta(params: &mut Option<Value>, extra: Map<String, Value>) -> Result<(), String> {
    let p = params.get_or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(obj) = p else {
        return Err("params must be a JSON object to carry _meta".into());
    };
    let m = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(m) = m else {
        return Err("params._meta must be a JSON object".into());
    };
    for (k, v) in extra {
        m.entry(k).or_insert(v);
    }
    Ok(())
}
