//! Outbound traffic of the Connection itself: handshake lines, pongs,
//! error answers and cancellations, all small control lines.

use serde_json::{json, Value};
use tracing::warn;

use super::ConnectionState;
use crate::jsonrpc::{encode, RequestId};
use crate::protocol::methods;

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
