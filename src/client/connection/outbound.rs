//! Outbound traffic: calls (queued until ready, then serialised with the
//! era's `_meta`), cancellations and notifications, all queued to the link
//! without waiting.

use serde_json::{json, Map, Value};
use tracing::warn;

use super::{Call, ConnectionState, Phase, Waiter};
use crate::error::Error;
use crate::jsonrpc::{encode, RequestId};
use crate::protocol::{methods, Era};

impl ConnectionState {
    pub(super) fn send_line(&mut self, line: Vec<u8>) -> bool {
        match &self.link {
            // On failure the link reports Closed with the reason.
            Some(link) => link.send(line).is_ok(),
            None => false,
        }
    }

    pub(super) fn send_notification(&mut self, method: &str, params: Option<&Value>) {
        match encode::notification(method, params) {
            Ok(line) => {
                self.send_line(line);
            }
            Err(e) => {
                warn!(server = %self.name(), method, error = %e, "could not encode notification")
            }
        }
    }

    pub(super) fn send_cancelled(&mut self, id: &RequestId, reason: &str) {
        let params = json!({ "requestId": id, "reason": reason });
        self.send_notification(methods::CANCELLED, Some(&params));
    }

    pub(super) fn call(&mut self, call: Call) {
        if !call.reply.is_waiting() {
            return;
        }
        match self.phase {
            Phase::Ready(_) => self.send_call(call),
            _ => self.queued.push_back(call),
        }
    }

    pub(super) fn send_call(&mut self, call: Call) {
        let Phase::Ready(session) = &self.phase else {
            self.queued.push_back(call);
            return;
        };
        let Call {
            id,
            method,
            params,
            reply,
            progress,
        } = call;
        if !reply.is_waiting() {
            return;
        }
        let line = match encode_call(
            session.era,
            self.meta_cache.as_deref(),
            &id,
            &method,
            &params,
            progress.is_some(),
        ) {
            Ok(l) => l,
            Err(problem) => {
                reply.answer(Err(Error::Codec { method, problem }));
                return;
            }
        };
        self.pending.insert(
            id,
            Waiter::Caller {
                method,
                reply,
                progress,
            },
        );
        // A failed send closes the link, which fails this call with the reason.
        self.send_line(line);
    }

    pub(super) fn cancel(&mut self, id: RequestId, reason: String) {
        if let Some(pos) = self.queued.iter().position(|c| c.id == id) {
            self.queued.remove(pos);
            return;
        }
        if let Some(link) = &self.link {
            super::direct::cancel_waiting(&self.pending, link.as_ref(), self.name(), &id, &reason);
        }
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
