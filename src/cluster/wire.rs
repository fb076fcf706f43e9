//! What crosses between nodes: the gateway's and the sink's messages, and
//! the byte formats inside them.
//!
//! The messages derive ractor_cluster's `RactorClusterMessage`: each
//! variant's arguments are bytes that ractor_cluster frames as they are.
//! Inside them:
//!
//! - a call is a JSON [`CallEnvelope`];
//! - its answer is one tag byte, then either the server's result exactly as
//!   the server sent it ([`OK`]: no re-encoding, the caller decodes it), or a
//!   JSON [`RemoteError`] ([`ERR`]);
//! - progress and notifications are JSON objects ([`ProgressEnvelope`],
//!   [`NotificationEnvelope`]).

use ractor::RpcReplyPort;
use ractor_cluster::RactorClusterMessage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Tag of a successful answer: the result's bytes follow.
pub(crate) const OK: u8 = 0;
/// Tag of a failed answer: a JSON [`RemoteError`] follows.
pub(crate) const ERR: u8 = 1;

/// The messages a gateway (node A) takes from other nodes.
#[derive(RactorClusterMessage)]
pub enum GatewayMsg {
    /// A call (a JSON envelope: caller, id, server, operation, timeout,
    /// progress group); answered with one tag byte, then the server's
    /// result bytes or a JSON [`RemoteError`].
    #[rpc]
    Call(Vec<u8>, RpcReplyPort<Vec<u8>>),
    /// Cancels the call `caller/id`.
    Cancel(String),
    /// The names of the servers the gateway exposes (a JSON array).
    #[rpc]
    Servers(RpcReplyPort<Vec<u8>>),
}

/// The messages a caller's sink (node B) takes from gateways.
#[derive(RactorClusterMessage)]
pub enum SinkMsg {
    /// A progress notification for a call (JSON: the call's id and the
    /// `notifications/progress` params).
    Progress(Vec<u8>),
    /// A notification of a server (JSON: the server's name, the method
    /// and the params).
    Notification(Vec<u8>),
}

/// What a call asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Operation {
    /// Any request, its result returned raw.
    Request {
        method: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        params: Option<Value>,
    },
    /// Every tool (all pages of `tools/list`).
    ListTools,
    /// The server's session (era, version, info, capabilities).
    Session,
}

/// One call from node B to a gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CallEnvelope {
    /// The caller's sink (its process group's name): with `id`, the key of
    /// the call for cancellation.
    pub(crate) caller: String,
    /// Unique for the caller's sink; used by cancellation and progress.
    pub(crate) id: u64,
    /// The server, by the name the gateway exposes it under.
    pub(crate) server: String,
    #[serde(flatten)]
    pub(crate) op: Operation,
    /// The call's timeout on node A, in milliseconds.
    pub(crate) timeout_ms: u64,
    /// The process group of the caller's sink, when progress is wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) progress_group: Option<String>,
}

/// Progress of call `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProgressEnvelope {
    pub(crate) id: u64,
    /// The `notifications/progress` params, as the server sent them.
    pub(crate) params: Value,
}

/// A notification of server `server`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NotificationEnvelope {
    pub(crate) server: String,
    pub(crate) method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) params: Option<Value>,
}

/// Why a call to a server on another node failed, as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RemoteError {
    /// The server answered with a JSON-RPC error.
    #[error("server error {code}: {message}")]
    Server {
        /// The error code.
        code: i64,
        /// The message.
        message: String,
        /// The error's `data`, as JSON text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
    },
    /// The server's connection closed while the call was in flight (it
    /// exited, or was stopped), or the client there is down.
    #[error("the server on node A is down: {reason}")]
    Closed {
        /// Why, as node A's client said.
        reason: String,
    },
    /// No answer within the call's timeout.
    #[error("no answer within {after_ms} ms")]
    Timeout {
        /// The timeout.
        after_ms: u64,
    },
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// No gateway exposes a server of this name (or it was removed).
    #[error("no server named `{server}` is exposed")]
    NotFound {
        /// The name asked for.
        server: String,
    },
    /// The gateway's allowlist refuses this server or method.
    #[error("refused: `{method}` on `{server}` is not allowed from other nodes")]
    Refused {
        /// The server.
        server: String,
        /// The method.
        method: String,
    },
    /// The answer is larger than what one cluster frame may carry.
    #[error("the answer is {bytes} bytes, over the {limit}-byte cluster frame limit")]
    TooLarge {
        /// The answer's size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The node hosting the server went away (or the connection to it
    /// broke) while the call was in flight.
    #[error("node lost: the node hosting `{server}` went away")]
    NodeLost {
        /// The server called.
        server: String,
    },
    /// The call or its answer could not be encoded or decoded.
    #[error("bad message: {0}")]
    Codec(String),
}

/// Encodes an answer: the result's raw bytes, or the error.
pub(crate) fn answer(outcome: Result<&[u8], &RemoteError>) -> Vec<u8> {
    match outcome {
        Ok(raw) => {
            let mut out = Vec::with_capacity(raw.len() + 1);
            out.push(OK);
            out.extend_from_slice(raw);
            out
        }
        Err(e) => {
            let mut out = vec![ERR];
            // A RemoteError always serialises (strings and numbers only).
            out.extend(serde_json::to_vec(e).unwrap_or_default());
            out
        }
    }
}

/// Decodes an answer: the result's bytes (`bytes[1..]`, to be decoded by
/// the caller), or the error.
pub(crate) fn read_answer(mut bytes: Vec<u8>) -> Result<Vec<u8>, RemoteError> {
    match bytes.first() {
        Some(&OK) => {
            bytes.remove(0);
            Ok(bytes)
        }
        Some(&ERR) => Err(serde_json::from_slice(&bytes[1..])
            .unwrap_or_else(|e| RemoteError::Codec(format!("an error that does not decode: {e}")))),
        _ => Err(RemoteError::Codec("an empty or untagged answer".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_round_trip_with_the_result_bytes_untouched() {
        let raw = br#"{"content":[{"type":"text","text":"\u00e9"}]}"#;
        assert_eq!(read_answer(answer(Ok(raw))).unwrap(), raw.to_vec());
        let e = RemoteError::TooLarge {
            bytes: 20,
            limit: 10,
        };
        assert_eq!(read_answer(answer(Err(&e))), Err(e));
        assert!(matches!(read_answer(vec![]), Err(RemoteError::Codec(_))));
        assert!(matches!(
            read_answer(vec![7, 1]),
            Err(RemoteError::Codec(_))
        ));
    }

    #[test]
    fn envelopes_are_plain_json() {
        let c = CallEnvelope {
            caller: "b".into(),
            id: 7,
            server: "files".into(),
            op: Operation::Request {
                method: "tools/call".into(),
                params: Some(serde_json::json!({"name": "echo"})),
            },
            timeout_ms: 1000,
            progress_group: None,
        };
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(
            text,
            r#"{"caller":"b","id":7,"server":"files","op":"request","method":"tools/call","params":{"name":"echo"},"timeout_ms":1000}"#
        );
        assert_eq!(serde_json::from_str::<CallEnvelope>(&text).unwrap(), c);
    }
}
