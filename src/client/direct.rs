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
use crate::protocol::{meta, methods, Era};
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
    server: String,
    gen: u64,
    era: Era,
    meta: Option<Arc<MetaCache>>,
    link: Arc<dyn Link>,
    pending: Pending,
}

impl Direct {
    #[inline]
    pub(crate) fn new(
        server: String,
        gen: u64,
        era: Era,
        meta: Option<Arc<MetaCache>>,
        link: Arc<dyn Link>,
        pending: Pending,
    ) -> Self {
        Self {
            server,
            gen,
            era,
            meta,
            link,
            pending,
        }
    }

    /// The era of the server this path goes to.
    #[inline]
    pub(crate) fn era(&self) -> Era {
        self.era
    }

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

/// Serialises a call's request line for `era`: in the 2026-07-28 era with the
/// session's `_meta`, with a `progressToken` (the request id) when progress
/// is wanted. The call's own `_meta` entries win over both. Written in one
/// pass over the caller's params, which are not changed or copied, so a
/// call that could not be sent directly can still be sent by the
/// Connection.
pub(crate) fn encode_call(
    era: Era,
    meta: Option<&MetaCache>,
    id: &RequestId,
    method: &str,
    params: &Option<Value>,
    progress: bool,
) -> Result<Vec<u8>, String> {
    let session = match era {
        Era::Stateless => meta,
        Era::Stateful => None,
    };
    if session.is_none() && !progress {
        return encode::request(id, method, params.as_ref()).map_err(|e| e.to_string());
    }
    let object = match params {
        None => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => return Err("params must be a JSON object to carry _meta".into()),
    };
    let own = match object.and_then(|m| m.get("_meta")) {
        None => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => return Err("params._meta must be a JSON object".into()),
    };
    write_call(id, method, object, own, session, progress).map_err(|e| e.to_string())
}

/// The request line: the params' entries, then `_meta` as the call's own
/// entries, the progress token and the session's entries, each key once
/// (the first wins). With nothing to merge, the session's `_meta` is
/// spliced in pre-serialised.
fn write_call(
    id: &RequestId,
    method: &str,
    params: Option<&Map<String, Value>>,
    own: Option<&Map<String, Value>>,
    session: Option<&MetaCache>,
    progress: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    let spliced = session.map_or(0, |c| c.raw.get().len());
    let mut out = Vec::with_capacity(96 + method.len() + spliced);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut out, id)?;
    out.extend_from_slice(b",\"method\":");
    serde_json::to_writer(&mut out, method)?;
    out.extend_from_slice(b",\"params\":{");
    for (k, v) in params.into_iter().flatten().filter(|(k, _)| *k != "_meta") {
        write_entry(&mut out, k, v)?;
        out.push(b',');
    }
    out.extend_from_slice(b"\"_meta\":");
    match (own, progress, session) {
        (None, false, Some(cache)) => out.extend_from_slice(cache.raw.get().as_bytes()),
        _ => {
            let taken = |k: &str| own.is_some_and(|m| m.contains_key(k));
            out.push(b'{');
            for (k, v) in own.into_iter().flatten() {
                write_entry(&mut out, k, v)?;
                out.push(b',');
            }
            if progress && !taken(meta::PROGRESS_TOKEN) {
                serde_json::to_writer(&mut out, meta::PROGRESS_TOKEN)?;
                out.push(b':');
                serde_json::to_writer(&mut out, id)?;
                out.push(b',');
            }
            let session = session.map(|c| &c.map).into_iter().flatten();
            for (k, v) in session
                .filter(|(k, _)| !(taken(k) || progress && k.as_str() == meta::PROGRESS_TOKEN))
            {
                write_entry(&mut out, k, v)?;
                out.push(b',');
            }
            if out.last() == Some(&b',') {
                out.pop();
            }
            out.push(b'}');
        }
    }
    out.extend_from_slice(b"}}\n");
    Ok(out)
}

fn write_entry(out: &mut Vec<u8>, key: &str, value: &Value) -> Result<(), serde_json::Error> {
    serde_json::to_writer(&mut *out, key)?;
    out.push(b':');
    serde_json::to_writer(&mut *out, value)
}

/// The session's `_meta` for 2026-07-28 requests, built once when ready.
pub(crate) struct MetaCache {
    map: Map<String, Value>,
    raw: Box<serde_json::value::RawValue>,
}

impl MetaCache {
    #[inline]
    pub(crate) fn new(map: Map<String, Value>, raw: Box<serde_json::value::RawValue>) -> Self {
        Self { map, raw }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> MetaCache {
        let map = match json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "k": "a\"b\n", "progressToken": "session's" })
        {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let raw = serde_json::value::to_raw_value(&map).unwrap();
        MetaCache { map, raw }
    }

    /// The reference: the extra entries merged into a copy of the params
    /// (the call's own entries win), then written by serde.
    fn merged(
        id: &RequestId,
        method: &str,
        params: &Option<Value>,
        c: Option<&MetaCache>,
        progress: bool,
    ) -> Result<Value, String> {
        let mut extra = c.map(|c| c.map.clone()).unwrap_or_default();
        if progress {
            extra.insert("progressToken".into(), serde_json::to_value(id).unwrap());
        }
        let mut params = params.clone();
        if !extra.is_empty() {
            let p = params.get_or_insert_with(|| json!({}));
            let Value::Object(obj) = p else {
                return Err("params must be a JSON object to carry _meta".into());
            };
            let Value::Object(m) = obj.entry("_meta").or_insert_with(|| json!({})) else {
                return Err("params._meta must be a JSON object".into());
            };
            for (k, v) in extra {
                m.entry(k).or_insert(v);
            }
        }
        let line = encode::request(id, method, params.as_ref()).unwrap();
        Ok(serde_json::from_slice(&line).unwrap())
    }

    #[test]
    fn the_one_pass_encoder_writes_what_a_merge_into_a_copy_writes() {
        let c = cache();
        let all_params = [
            None,
            Some(json!({})),
            Some(json!({ "name": "echo", "arguments": { "text": "x\"\\\n\u{1F600}" } })),
            Some(json!({ "name": "echo", "_meta": {} })),
            Some(json!({ "name": "echo", "_meta": { "k": "own", "progressToken": 99 } })),
            Some(json!({ "_meta": { "other": [1, 2] } })),
            Some(json!([1])),
            Some(json!({ "_meta": 3 })),
        ];
        for id in [RequestId::Number(7), RequestId::String("s-1".into())] {
            for params in &all_params {
                for (era, session) in [
                    (Era::Stateless, Some(&c)),
                    (Era::Stateless, None),
                    (Era::Stateful, Some(&c)),
                ] {
                    for progress in [false, true] {
                        let want = merged(
                            &id,
                            "tools/call",
                            params,
                            session.filter(|_| era == Era::Stateless),
                            progress,
                        );
                        let got = encode_call(era, session, &id, "tools/call", params, progress);
                        match (got, want) {
                            (Ok(line), Ok(want)) => {
                                assert_eq!(line.last(), Some(&b'\n'));
                                assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
                                let got: Value = serde_json::from_slice(&line).unwrap();
                                assert_eq!(got, want, "{params:?} {era:?} {progress}");
                            }
                            (Err(got), Err(want)) => assert_eq!(got, want),
                            (got, want) => {
                                panic!("{params:?} {era:?} {progress}: {got:?} against {want:?}")
                            }
                        }
                    }
                }
            }
        }
    }
}
