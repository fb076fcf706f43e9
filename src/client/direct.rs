//! The request path: while a server is ready, a caller serialises its
//! request, waits for room in the write queue, registers its waiter and
//! queues the line itself, with no hop through the Connection's mailbox.
//!
//! The Connection publishes a [`Direct`] when a server becomes ready and
//! withdraws it when the link closes, the client stops, or the Connection
//! itself goes away. A caller holding a stale `Direct` cannot strand its
//! request: the waiter is inserted only while the pending table still
//! accepts that link's generation (checked under the table's lock, which
//! the close also takes to fail every waiter); otherwise the caller waits
//! for the next ready server (within its own deadline) and tries again.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tracing::debug;

use super::waiters::{Pending, Waiter};
use crate::error::Error;
use crate::jsonrpc::{encode, RequestId};
use crate::line_io::queue::QueueError;
use crate::protocol::{methods, Era};
use crate::transport::Link;

/// Why [`Direct::send`] did not send.
pub(crate) enum Refused {
    /// The link has closed meanwhile: wait for the next server.
    Stale,
    /// The call cannot be sent at all.
    Failed(Error),
}

/// Forgets the waiter of caller `id` and sends `notifications/cancelled` on
/// `link`; `false` if no caller waits under `id`. ClientShared by callers and the
/// Connection.
pub(crate) fn cancel_waiting(
    pending: &Pending,
    link: &dyn Link,
    server: &str,
    id: &RequestId,
    reason: &str,
) -> bool {
    let Some(method) = pending.remove_caller(id) else {
        return false;
    };
    debug!(server, %id, method = %method, reason, "cancelling request");
    let params = json!({ "requestId": id, "reason": reason });
    if let Ok(line) = encode::notification(methods::CANCELLED, Some(&params)) {
        // A control line: it must not wait behind the requests it cancels.
        // A failure means the link is closing anyway.
        let _ = link.queue().send_control(line);
    }
    true
}

/// What a caller needs to send on the ready link of generation `gen`.
pub(crate) struct Direct {
    pub(crate) server: String,
    pub(crate) gen: u64,
    pub(crate) era: Era,
    pub(crate) meta: Option<Arc<MetaCache>>,
    pub(crate) link: Arc<dyn Link>,
    pub(crate) pending: Pending,
}

impl Direct {
    /// Sends a call: waits for room for its line, registers `waiter` (taken
    /// from the option) and queues the line. On [`Refused::Stale`] the
    /// waiter is put back.
    ///
    /// Cancel safety: cancel safe. Dropped while waiting for room, nothing
    /// was registered or queued.
    pub(crate) async fn send(
        &self,
        id: &RequestId,
        method: &str,
        params: &Option<Value>,
        progress: bool,
        waiter: &mut Option<Waiter>,
    ) -> Result<(), Refused> {
        let line = encode_call(self.era, self.meta.as_deref(), id, method, params, progress)
            .map_err(|problem| {
                Refused::Failed(Error::Codec {
                    method: method.to_owned(),
                    problem,
                })
            })?;
        let room = match self.link.queue().reserve(line.len()).await {
            Ok(room) => room,
            Err(QueueError::TooLarge { bytes, limit }) => {
                return Err(Refused::Failed(Error::RequestTooLarge {
                    method: method.to_owned(),
                    bytes,
                    limit,
                }))
            }
            Err(_) => return Err(Refused::Stale),
        };
        // Invariant: the caller passes its waiter until it is registered.
        let Some(w) = waiter.take() else {
            return Err(Refused::Failed(Error::Internal(
                "a call was sent twice".into(),
            )));
        };
        if let Err(w) = self.pending.insert_direct(self.gen, id.clone(), w) {
            *waiter = Some(w);
            return Err(Refused::Stale);
        }
        // A failure means the link is closing: its close fails this waiter
        // with the reason, as for any call in flight.
        let _ = room.send(line);
        Ok(())
    }

    /// Cancels a call still waiting on this link: forgets its waiter and
    /// sends `notifications/cancelled`. Returns `false` when no caller
    /// waits under `id` here (answered, or failed by a close).
    pub(crate) fn cancel(&self, id: &RequestId, reason: &str) -> bool {
        cancel_waiting(&self.pending, self.link.as_ref(), &self.server, id, reason)
    }

    /// The link's write queue (for notifications).
    pub(crate) fn queue(&self) -> &crate::transport::WriteQueue {
        self.link.queue()
    }
}

/// Serialises a call's request line for `era`: in the modern era with the
/// session's `_meta` (spliced in pre-serialised when nothing needs merging),
/// with a `progressToken` (the request id) when progress is wanted. The
/// caller's params are not changed (merging works on a copy), so a call
/// that could not be sent directly can still be sent by the Connection.
pub(crate) fn encode_call(
    era: Era,
    meta: Option<&MetaCache>,
    id: &RequestId,
    method: &str,
    params: &Option<Value>,
    progress: bool,
) -> Result<Vec<u8>, String> {
    let mut extra = match (era, meta) {
        (Era::Stateless, Some(cache)) if !progress && !has_meta(params) => {
            let object = match params {
                None => None,
                Some(Value::Object(m)) => Some(m),
                // Not an object: the merge path below reports the error.
                Some(_) => return encode_merged(id, method, params, cache.map.clone()),
            };
            return encode_with_meta(id, method, object, &cache.raw).map_err(|e| e.to_string());
        }
        (Era::Stateless, cache) => cache.map(|c| c.map.clone()).unwrap_or_default(),
        (Era::Stateful, _) => Map::new(),
    };
    if progress {
        extra.insert("progressToken".into(), id_value(id));
    }
    encode_merged(id, method, params, extra)
}

/// The request line with `extra` merged into the params' `_meta` (on a
/// copy of the params).
fn encode_merged(
    id: &RequestId,
    method: &str,
    params: &Option<Value>,
    extra: Map<String, Value>,
) -> Result<Vec<u8>, String> {
    if extra.is_empty() {
        return encode::request(id, method, params.as_ref()).map_err(|e| e.to_string());
    }
    let mut params = params.clone();
    merge_meta(&mut params, extra)?;
    encode::request(id, method, params.as_ref()).map_err(|e| e.to_string())
}

/// The modern fast path: the line written directly, the session's `_meta`
/// spliced in pre-serialised after the caller's params (the same bytes
/// serde would write for `{..params, "_meta": meta}`, without its
/// flattening machinery or a reallocation).
fn encode_with_meta(
    id: &RequestId,
    method: &str,
    params: Option<&Map<String, Value>>,
    meta: &serde_json::value::RawValue,
) -> Result<Vec<u8>, serde_json::Error> {
    let meta = meta.get().as_bytes();
    let mut out = Vec::with_capacity(64 + method.len() + meta.len());
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut out, id)?;
    out.extend_from_slice(b",\"method\":");
    serde_json::to_writer(&mut out, method)?;
    out.extend_from_slice(b",\"params\":{");
    for (k, v) in params.into_iter().flatten() {
        serde_json::to_writer(&mut out, k)?;
        out.push(b':');
        serde_json::to_writer(&mut out, v)?;
        out.push(b',');
    }
    out.extend_from_slice(b"\"_meta\":");
    out.extend_from_slice(meta);
    out.extend_from_slice(b"}}\n");
    Ok(out)
}

/// The session's `_meta` for modern requests, built once when ready.
pub(crate) struct MetaCache {
    pub(crate) map: Map<String, Value>,
    pub(crate) raw: Box<serde_json::value::RawValue>,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> MetaCache {
        let map = match json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "k": "a\"b\n" })
        {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let raw = serde_json::value::to_raw_value(&map).unwrap();
        MetaCache { map, raw }
    }

    /// What the slow path (merge into a copy, then serde) writes.
    fn merged(id: &RequestId, method: &str, params: &Option<Value>, c: &MetaCache) -> Value {
        let line = encode_merged(id, method, params, c.map.clone()).unwrap();
        serde_json::from_slice(&line).unwrap()
    }

    #[test]
    fn the_modern_fast_path_writes_what_the_merge_writes() {
        let c = cache();
        let id = RequestId::Number(7);
        for params in [
            None,
            Some(json!({})),
            Some(json!({ "name": "echo", "arguments": { "text": "x\"\\\n\u{1F600}" } })),
        ] {
            let line =
                encode_call(Era::Stateless, Some(&c), &id, "tools/call", &params, false).unwrap();
            assert_eq!(line.last(), Some(&b'\n'));
            assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
            let got: Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(got, merged(&id, "tools/call", &params, &c), "{params:?}");
        }
        // Params that are not an object: the same error as the merge path.
        let err =
            encode_call(Era::Stateless, Some(&c), &id, "x", &Some(json!([1])), false).unwrap_err();
        assert!(err.contains("must be a JSON object"), "{err}");
    }
}
