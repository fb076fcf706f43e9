//! Reply slots of in-flight calls.
//!
//! A [`ReplySlot`] answers its caller exactly once. If it is dropped without
//! an answer (the Connection stopped, was killed or panicked, and its state
//! was dropped), its `Drop` answers with [`Error::ConnectionDown`] naming the
//! reason, so a caller never sees a bare channel error and never waits for
//! its timeout.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::error::Error;

/// What a call resolves to: the unparsed result, or an error.
pub(crate) type CallResult = Result<crate::jsonrpc::RawJson, Error>;

/// A response's outcome as the caller sees it: only a peer's error object
/// becomes [`Error::Server`].
pub(crate) fn call_result(outcome: crate::jsonrpc::Outcome) -> CallResult {
    match outcome {
        crate::jsonrpc::Outcome::Result(raw) => Ok(raw),
        crate::jsonrpc::Outcome::Error(e) => Err(Error::Server(e)),
    }
}

/// Why the Connection went down, shared with every slot so `Drop` can say.
#[derive(Debug, Clone, Default)]
pub(crate) struct DownReason(Arc<Mutex<Option<String>>>);

impl DownReason {
    pub(crate) fn set(&self, why: impl Into<String>) {
        *crate::sync::lock(&self.0) = Some(why.into());
    }

    pub(crate) fn get(&self) -> String {
        crate::sync::lock(&self.0)
            .clone()
            .unwrap_or_else(|| "the connection actor stopped (killed or crashed)".to_owned())
    }
}

/// The answering side of one call.
#[derive(Debug)]
pub(crate) struct ReplySlot {
    tx: Option<oneshot::Sender<CallResult>>,
    down: DownReason,
}

impl ReplySlot {
    pub(crate) fn new(down: DownReason) -> (Self, oneshot::Receiver<CallResult>) {
        let (tx, rx) = oneshot::channel();
        (Self { tx: Some(tx), down }, rx)
    }

    /// Answers the caller (ignored if the caller has gone).
    pub(crate) fn answer(mut self, result: CallResult) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(result);
        }
    }
}

impl Drop for ReplySlot {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Err(Error::ConnectionDown(self.down.get())));
        }
    }
}
