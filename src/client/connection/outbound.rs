//! Outbound traffic of the Connection itself: handshake lines, pongs,
//! error answers and cancellations, all small control lines.

use serde_json::{json, Value};
use tracing::warn;

use super::ConnectionState;
use crate::jsonrpc::{encode, RequestId};
use crate::line_io::queue::QueueError;
use crate::protocol::methods;

impl ConnectionState {
    /// Queues one of the Connection's own protocol lines (handshake,
    /// pong, error answers): small, so it skips the write queue's bound.
    /// Returns whether it was queued.
    pub(super) fn send_control(&self, line: Vec<u8>) -> bool {
        let Some(link) = self.shared.link() else {
            return false;
        };
        match link.queue().send_control(line) {
            Ok(()) => true,
            // The link is closing and reports Closed.
            Err(QueueError::Closed) => false,
            Err(e) => {
                warn!(server = %self.name(), error = ?e, "the server reads nothing: a protocol line was dropped");
                false
            }
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
