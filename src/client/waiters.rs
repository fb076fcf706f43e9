//! Who waits for which answer: the pending-call table.
//!
//! It lives in the client's shared state for the client's life; the
//! Connection inserts its own waiters (probe, `initialize`) and fails
//! everything on close;
//! the link's sink, running in the reader task, answers callers from it
//! directly so a response or a progress notification costs no hop through
//! the Connection's mailbox; and while a server is ready, callers insert
//! their own entries ([`Direct`](super::Direct)) so a request costs no hop
//! either. The lock is never held across an await or while answering.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::client::reply_slot::{call_result, ReplySlot};
use crate::error::Error;
use crate::jsonrpc::pending::PendingTable;
use crate::jsonrpc::{Notification, RequestId, Response};

/// Who waits for the answer of a request id.
pub(crate) enum Waiter {
    Caller {
        method: String,
        reply: ReplySlot,
        progress: Option<mpsc::UnboundedSender<Value>>,
    },
    Probe,
    /// A probe that timed out; its answer may still settle the era.
    LateProbe,
    Initialize,
}

/// Fails every caller among `waiters` with `err`.
pub(crate) fn fail_waiters(waiters: Vec<Waiter>, err: impl Fn() -> Error) {
    for w in waiters {
        if let Waiter::Caller { reply, .. } = w {
            reply.answer(Err(err()));
        }
    }
}

/// What [`Pending::answer`] did with a response.
pub(crate) enum Answer {
    /// Delivered to its caller.
    Answered,
    /// A probe's or `initialize`'s: for the Connection.
    Connection(Response),
    /// Nobody waits for it.
    Unknown,
}

/// The pending-call table, shared by the Connection, the link's sink and
/// direct callers: the crate's [`PendingTable`], with what the client asks
/// of it.
#[derive(Clone, Default)]
pub(crate) struct Pending(Arc<PendingTable<Waiter>>);

impl Pending {
    /// A fresh request id.
    pub(crate) fn next_id(&self) -> RequestId {
        self.0.next_id()
    }

    /// Inserts for the Connection (which orders this against closes itself).
    pub(crate) fn insert(&self, id: RequestId, w: Waiter) {
        self.0.insert(id, w);
    }

    /// Inserts for a direct caller of link `gen`: refused (the waiter is
    /// given back) once that link has closed, so no entry can be added
    /// after its waiters were failed.
    pub(crate) fn insert_direct(&self, gen: u64, id: RequestId, w: Waiter) -> Result<(), Waiter> {
        self.0.insert_for(gen, id, w)
    }

    /// Lets direct callers of link `gen` insert.
    pub(crate) fn accept(&self, gen: u64) {
        self.0.accept(gen);
    }

    /// Drops the `initialize` waiter (the era was settled without it).
    pub(crate) fn forget_initialize(&self) {
        self.0.retain(|_, w| !matches!(w, Waiter::Initialize));
    }

    /// Removes the waiter of `id` if it is a caller's (probes and
    /// `initialize` stay for the Connection).
    fn take_caller(&self, id: &RequestId) -> Option<Waiter> {
        self.0.remove_if(id, |w| matches!(w, Waiter::Caller { .. }))
    }

    /// Removes a caller's waiter; returns its method.
    pub(crate) fn remove_caller(&self, id: &RequestId) -> Option<String> {
        match self.take_caller(id)? {
            Waiter::Caller { method, .. } => Some(method),
            _ => None,
        }
    }

    /// Removes the waiter of `id` if it is a caller's.
    pub(crate) fn remove_if_caller(&self, id: &RequestId) -> Option<Waiter> {
        self.take_caller(id)
    }

    pub(crate) fn remove(&self, id: &RequestId) -> Option<Waiter> {
        self.0.remove(id)
    }

    /// Stops direct inserts and takes every waiter, atomically.
    pub(crate) fn take_all(&self) -> Vec<Waiter> {
        self.0.take_all()
    }

    /// Answers a caller's response here. A response for a probe or
    /// `initialize` is given back for the Connection; one for an id nobody
    /// waits for (answered, cancelled, or never asked) is dropped.
    pub(crate) fn answer(&self, r: Response) -> Answer {
        let Some(id) = &r.id else {
            return Answer::Unknown;
        };
        match self.take_caller(id) {
            Some(Waiter::Caller { reply, .. }) => {
                reply.answer(call_result(r.outcome));
                Answer::Answered
            }
            _ if self.0.peek(id, |w| w.is_some()) => Answer::Connection(r),
            _ => Answer::Unknown,
        }
    }

    /// Delivers a progress notification to its caller; returns it back when
    /// no caller asked for that token.
    pub(crate) fn progress(&self, n: Notification) -> Option<Notification> {
        let token = n
            .params
            .as_ref()
            .and_then(|p| p.get("progressToken"))
            .and_then(|t| RequestId::deserialize(t).ok());
        let Some(token) = token else { return Some(n) };
        let tx = self.0.peek(&token, |w| match w {
            Some(Waiter::Caller {
                progress: Some(tx), ..
            }) => Some(tx.clone()),
            _ => None,
        });
        let Some(tx) = tx else { return Some(n) };
        let _ = tx.send(n.params.unwrap_or(Value::Null));
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::reply_slot::DownReason;

    fn caller() -> (
        Waiter,
        tokio::sync::oneshot::Receiver<crate::client::reply_slot::CallResult>,
    ) {
        let (reply, rx) = ReplySlot::new(DownReason::default());
        let w = Waiter::Caller {
            method: "m".into(),
            reply,
            progress: None,
        };
        (w, rx)
    }

    #[test]
    fn direct_inserts_only_while_their_link_accepts() {
        let p = Pending::default();
        let (w, _rx) = caller();
        // Nothing accepted yet (no ready server).
        let w = p.insert_direct(1, RequestId::Number(1), w).unwrap_err();
        p.accept(1);
        assert!(p.insert_direct(1, RequestId::Number(1), w).is_ok());
        // The close takes every waiter and refuses later inserts: a caller
        // holding a stale path cannot strand its call.
        assert_eq!(p.take_all().len(), 1);
        let (w, _rx) = caller();
        let w = p.insert_direct(1, RequestId::Number(2), w).unwrap_err();
        // The next server accepts its own generation only.
        p.accept(2);
        let w = p.insert_direct(1, RequestId::Number(2), w).unwrap_err();
        assert!(p.insert_direct(2, RequestId::Number(2), w).is_ok());
        assert_eq!(p.remove_caller(&RequestId::Number(2)).as_deref(), Some("m"));
    }
}
