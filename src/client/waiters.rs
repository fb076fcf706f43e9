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

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::mpsc;

use crate::client::pending::{call_result, ReplySlot};
use crate::error::Error;
use crate::jsonrpc::{Notification, RequestId, Response};

#[derive(Default)]
struct Table {
    waiters: HashMap<RequestId, Waiter>,
    /// The link generation whose callers may insert directly; `None`
    /// between a close (every waiter failed) and the next ready server.
    accepting: Option<u64>,
}

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
/// direct callers.
#[derive(Clone, Default)]
pub(crate) struct Pending(Arc<Mutex<Table>>);

impl Pending {
    fn lock(&self) -> MutexGuard<'_, Table> {
        crate::sync::lock(&self.0)
    }

    /// Inserts for the Connection (which orders this against closes itself).
    pub(crate) fn insert(&self, id: RequestId, w: Waiter) {
        self.lock().waiters.insert(id, w);
    }

    /// Inserts for a direct caller of link `gen`: refused (the waiter is
    /// given back) once that link has closed, so no entry can be added
    /// after its waiters were failed.
    pub(crate) fn insert_direct(&self, gen: u64, id: RequestId, w: Waiter) -> Result<(), Waiter> {
        let mut t = self.lock();
        if t.accepting != Some(gen) {
            return Err(w);
        }
        t.waiters.insert(id, w);
        Ok(())
    }

    /// Lets direct callers of link `gen` insert.
    pub(crate) fn accept(&self, gen: u64) {
        self.lock().accepting = Some(gen);
    }

    /// Drops the `initialize` waiter (the era was settled without it).
    pub(crate) fn forget_initialize(&self) {
        self.lock()
            .waiters
            .retain(|_, w| !matches!(w, Waiter::Initialize));
    }

    /// Removes the waiter of `id` if it is a caller's (probes and
    /// `initialize` stay for the Connection).
    fn take_caller(&self, id: &RequestId) -> Option<Waiter> {
        let mut t = self.lock();
        if !matches!(t.waiters.get(id), Some(Waiter::Caller { .. })) {
            return None;
        }
        t.waiters.remove(id)
    }

    /// Removes a caller's waiter; returns its method.
    pub(crate) fn remove_caller(&self, id: &RequestId) -> Option<String> {
        match self.take_caller(id)? {
            Waiter::Caller { method, .. } => Some(method),
            _ => None,
        }
    }

    pub(crate) fn remove(&self, id: &RequestId) -> Option<Waiter> {
        self.lock().waiters.remove(id)
    }

    /// Stops direct inserts and takes every waiter, atomically.
    pub(crate) fn take_all(&self) -> Vec<Waiter> {
        let mut t = self.lock();
        t.accepting = None;
        t.waiters.drain().map(|(_, w)| w).collect()
    }

    /// Answers a caller's response here. A response for a probe or
    /// `initialize` is given back for the Connection; one for an id nobody
    /// waits for (answered, cancelled, or never asked) is dropped.
    pub(crate) fn answer(&self, r: Response) -> Answer {
        let Some(id) = &r.id else {
            return Answer::Unknown;
        };
        let mut t = self.lock();
        match t.waiters.get(id) {
            Some(Waiter::Caller { .. }) => {}
            Some(_) => return Answer::Connection(r),
            None => return Answer::Unknown,
        }
        let w = t.waiters.remove(id);
        drop(t);
        if let Some(Waiter::Caller { reply, .. }) = w {
            reply.answer(call_result(r.outcome));
        }
        Answer::Answered
    }

    /// Delivers a progress notification to its caller; returns it back when
    /// no caller asked for that token.
    pub(crate) fn progress(&self, n: Notification) -> Option<Notification> {
        let token = n
            .params
            .as_ref()
            .and_then(|p| p.get("progressToken"))
            .and_then(|t| serde_json::from_value::<RequestId>(t.clone()).ok());
        let Some(token) = token else { return Some(n) };
        let tx = match self.lock().waiters.get(&token) {
            Some(Waiter::Caller {
                progress: Some(tx), ..
            }) => tx.clone(),
            _ => return Some(n),
        };
        let _ = tx.send(n.params.unwrap_or(Value::Null));
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::pending::DownReason;

    fn caller() -> (
        Waiter,
        tokio::sync::oneshot::Receiver<crate::client::pending::CallResult>,
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
