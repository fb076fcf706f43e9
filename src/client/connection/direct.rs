//! The direct request path: while a server is ready, a caller serialises
//! its request, registers its waiter and queues the line itself, with no
//! hop through the Connection's mailbox.
//!
//! The Connection publishes a [`Direct`] when a server becomes ready and
//! withdraws it when the link closes, the client stops, or the Connection
//! itself goes away. A caller holding a stale `Direct` cannot strand its
//! request: the waiter is inserted only while the pending table still
//! accepts that link's generation (checked under the table's lock, which
//! the close also takes to fail every waiter), and otherwise the call goes
//! to the Connection as before.

use std::sync::Arc;

use serde_json::json;
use tracing::debug;

use super::outbound::{encode_call, MetaCache};
use super::{Call, Pending, Waiter};
use crate::error::Error;
use crate::jsonrpc::{encode, RequestId};
use crate::protocol::{methods, Era};
use crate::transport::Link;

/// Forgets the waiter of caller `id` and sends `notifications/cancelled` on
/// `link`; `false` if no caller waits under `id`. Shared by direct callers
/// and the Connection.
pub(super) fn cancel_waiting(
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
        // A failed send means the link is closing anyway.
        let _ = link.send(line);
    }
    true
}

/// What a caller needs to send on the ready link of generation `gen`.
pub(crate) struct Direct {
    pub(super) server: String,
    pub(super) gen: u64,
    pub(super) era: Era,
    pub(super) meta: Option<Arc<MetaCache>>,
    pub(super) link: Arc<dyn Link>,
    pub(super) pending: Pending,
}

impl Direct {
    /// Sends `call` on the link. Gives it back, untouched, when the link has
    /// closed in the meantime: send it through the Connection then.
    pub(crate) fn send(&self, call: Call) -> Result<(), Call> {
        if !call.reply.is_waiting() {
            return Ok(());
        }
        let line = match encode_call(
            self.era,
            self.meta.as_deref(),
            &call.id,
            &call.method,
            &call.params,
            call.progress.is_some(),
        ) {
            Ok(line) => line,
            Err(problem) => {
                call.reply.answer(Err(Error::Codec {
                    method: call.method,
                    problem,
                }));
                return Ok(());
            }
        };
        let Call {
            id,
            method,
            params,
            reply,
            progress,
        } = call;
        let waiter = Waiter::Caller {
            method,
            reply,
            progress,
        };
        if let Err(w) = self.pending.insert_direct(self.gen, id.clone(), waiter) {
            let Waiter::Caller {
                method,
                reply,
                progress,
            } = w
            else {
                // Invariant: insert_direct gives back the waiter it was given.
                return Ok(());
            };
            return Err(Call {
                id,
                method,
                params,
                reply,
                progress,
            });
        }
        // A failed send means the link is closing: its close fails this
        // waiter with the reason, as for a call sent by the Connection.
        let _ = self.link.send(line);
        Ok(())
    }

    /// Cancels a call still waiting on this link: forgets its waiter and
    /// sends `notifications/cancelled`. Returns `false` when no caller
    /// waits under `id` here (answered, failed by a close, or queued in the
    /// Connection: ask the Connection then).
    pub(crate) fn cancel(&self, id: &RequestId, reason: &str) -> bool {
        cancel_waiting(&self.pending, self.link.as_ref(), &self.server, id, reason)
    }
}
