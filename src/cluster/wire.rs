//! What crosses between nodes: the gateway's and the sink's messages, and
//! the byte formats inside them.
//!
//! The messages derive ractor_cluster's `RactorClusterMessage`: each
//! variant's arguments are bytes that ractor_cluster frames as they are.
//! Inside them are JSON envelopes, except a call's answer: one tag byte,
//! then either the server's result exactly as the server sent it, or a
//! JSON [`RemoteError`]. The first is tagged [`OK`]: it is not re-encoded,
//! and the caller decodes it. The second is tagged [`ERR`].
//!
//! No envelope field says who sent it: ractor_cluster delivers a message
//! without its sender, so a field would be whatever the sender chose. What
//! a node may do rests on a *ticket* instead, as the
//! [`Security model`](super#security-model) says. The gateway sends it, by
//! cast, to the caller's sink on the caller's node only, and every later
//! call, cancellation and subscription carries it. What the gateway sends
//! the sink carries the ticket's *secret*, which only that gateway and
//! that sink know.

use ractor::RpcReplyPort;
use ractor_cluster::RactorClusterMessage;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// Tag of a successful answer: the result's bytes follow.
pub(crate) const OK: u8 = 0;
/// Tag of a failed answer: a JSON [`RemoteError`] follows.
pub(crate) const ERR: u8 = 1;

/// The messages a gateway on node A takes from other nodes.
///
/// Every answer is one tag byte, then the result's bytes or a JSON
/// [`RemoteError`].
#[derive(RactorClusterMessage)]
pub enum GatewayMsg {
    /// Asks for a ticket. The JSON holds the sink's process group, the
    /// sink's pid and a nonce. The gateway casts a ticket, with the nonce
    /// and a secret, to the member of that group with that pid on each
    /// node, over that node's own connection, so a ticket is bound to the
    /// node it went to. The answer says how many it sent.
    #[rpc]
    Hello(Vec<u8>, RpcReplyPort<Vec<u8>>),
    /// A call. The JSON holds the ticket, id, server, operation, timeout,
    /// and whether progress is wanted.
    #[rpc]
    Call(Vec<u8>, RpcReplyPort<Vec<u8>>),
    /// Cancels a call. The JSON holds the ticket and id.
    Cancel(Vec<u8>),
    /// Subscribes the ticket's sink to a server's notifications, if the
    /// server's grants allow it. The JSON holds the ticket and server.
    #[rpc]
    Subscribe(Vec<u8>, RpcReplyPort<Vec<u8>>),
    /// Ends a subscription. The JSON holds the ticket and server.
    Unsubscribe(Vec<u8>),
    /// The sink has handled this many bytes of what the gateway sent it:
    /// room again in the node's forwarding window. The JSON holds the
    /// ticket and bytes.
    Ack(Vec<u8>),
    /// The names of the servers the gateway exposes, as a JSON array.
    #[rpc]
    Servers(RpcReplyPort<Vec<u8>>),
}

/// The messages a caller's sink on node B takes from gateways.
#[derive(RactorClusterMessage)]
pub enum SinkMsg {
    /// A ticket, answering a [`GatewayMsg::Hello`]. The JSON holds the
    /// nonce, ticket, secret and forwarding window.
    Ticket(Vec<u8>),
    /// A progress notification for a call. The JSON holds the secret, the
    /// call's id and the `notifications/progress` params.
    Progress(Vec<u8>),
    /// A notification of a server. The JSON holds the secret, the server's
    /// name, the method and the params.
    Notification(Vec<u8>),
}

/// Asks a gateway for a ticket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Hello {
    /// The sink's process group.
    group: String,
    /// The sink's pid on its node.
    pid: u64,
    /// Pairs the ticket with this request at the sink.
    nonce: String,
}

impl Hello {
    #[inline]
    pub(crate) fn new(group: String, pid: u64, nonce: String) -> Self {
        Self { group, pid, nonce }
    }

    /// The group, pid and nonce, taken apart.
    #[inline]
    pub(crate) fn into_parts(self) -> (String, u64, String) {
        (self.group, self.pid, self.nonce)
    }
}

/// A gateway's ticket, sent to one sink.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ticket {
    pub(crate) nonce: String,
    /// What the sink's node shows the gateway from now on.
    pub(crate) ticket: String,
    /// What the gateway shows the sink from now on.
    pub(crate) secret: String,
    /// Bytes the gateway sends the node before it waits for acks.
    pub(crate) window: u64,
}

/// What a call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Op {
    /// Any request, by `method` and `params`, its result returned raw.
    Request,
    /// Every tool: all pages of `tools/list`.
    ListTools,
    /// The server's session: era, version, info, capabilities.
    Session,
}

/// One call from node B to a gateway.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Call {
    pub(crate) ticket: String,
    /// Unique among the ticket's calls in flight.
    pub(crate) id: u64,
    /// The server, by the name the gateway exposes it under.
    pub(crate) server: String,
    pub(crate) op: Op,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) method: Option<String>,
    /// Kept as text until the call is admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) params: Option<Box<RawValue>>,
    /// The caller's timeout, in milliseconds. The gateway may lower it.
    pub(crate) timeout_ms: u64,
    /// Whether the caller wants progress at its sink.
    #[serde(default)]
    pub(crate) progress: bool,
}

/// Names a call: for cancellation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CallKey {
    ticket: String,
    id: u64,
}

impl CallKey {
    #[inline]
    pub(crate) fn new(ticket: String, id: u64) -> Self {
        Self { ticket, id }
    }

    /// The ticket the call came with.
    #[inline]
    pub(crate) fn ticket(&self) -> &str {
        &self.ticket
    }

    /// The call's id among the ticket's.
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
}

/// Names a subscription.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Subscription {
    ticket: String,
    server: String,
}

impl Subscription {
    #[inline]
    pub(crate) fn new(ticket: String, server: String) -> Self {
        Self { ticket, server }
    }

    /// The ticket the subscription came with.
    #[inline]
    pub(crate) fn ticket(&self) -> &str {
        &self.ticket
    }

    /// The server, by the name the gateway exposes it under.
    #[inline]
    pub(crate) fn server(&self) -> &str {
        &self.server
    }
}

/// Bytes handled by a sink.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ack {
    ticket: String,
    bytes: u64,
}

impl Ack {
    #[inline]
    pub(crate) fn new(ticket: String, bytes: u64) -> Self {
        Self { ticket, bytes }
    }

    /// The ticket whose bytes are acknowledged.
    #[inline]
    pub(crate) fn ticket(&self) -> &str {
        &self.ticket
    }

    /// The bytes acknowledged.
    #[inline]
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Progress of call `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProgressEnvelope {
    secret: String,
    id: u64,
    /// The `notifications/progress` params, as the server sent them.
    params: Value,
}

impl ProgressEnvelope {
    #[inline]
    pub(crate) fn new(secret: String, id: u64, params: Value) -> Self {
        Self { secret, id, params }
    }

    /// The secret, call id and params, taken apart.
    #[inline]
    pub(crate) fn into_parts(self) -> (String, u64, Value) {
        (self.secret, self.id, self.params)
    }
}

/// A notification of server `server`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NotificationEnvelope {
    secret: String,
    server: String,
    method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    params: Option<Value>,
}

impl NotificationEnvelope {
    #[inline]
    pub(crate) fn new(
        secret: String,
        server: String,
        method: String,
        params: Option<Value>,
    ) -> Self {
        Self {
            secret,
            server,
            method,
            params,
        }
    }

    /// The secret, server, method and params, taken apart.
    #[inline]
    pub(crate) fn into_parts(self) -> (String, String, String, Option<Value>) {
        (self.secret, self.server, self.method, self.params)
    }
}

/// Which cap a call met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallCap {
    /// Calls in flight from one node, capped by
    /// [`GatewayConfig::max_calls_per_node`](super::GatewayConfig::max_calls_per_node).
    PerNode,
    /// Calls in flight through the gateway, from all nodes, capped by
    /// [`GatewayConfig::max_calls`](super::GatewayConfig::max_calls).
    PerGateway,
}

impl std::fmt::Display for CallCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CallCap::PerNode => "from one node",
            CallCap::PerGateway => "through the gateway",
        })
    }
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
    /// The server's connection closed while the call was in flight, because
    /// it exited or was stopped, or the client there is down.
    #[error("the server on node A is down: {reason}")]
    Closed {
        /// Why, as node A's client said.
        reason: String,
    },
    /// No answer within the call's timeout: the caller's, or the gateway's
    /// maximum if that is lower.
    #[error("no answer within {after_ms} ms")]
    Timeout {
        /// The timeout applied.
        after_ms: u64,
    },
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// No gateway exposes a server of this name, or it was removed.
    #[error("no server named `{server}` is exposed")]
    NotFound {
        /// The name asked for.
        server: String,
    },
    /// The server's grants do not include this method, or `session`, or
    /// `notifications`.
    #[error("refused: `{method}` on `{server}` is not granted to other nodes")]
    Refused {
        /// The server.
        server: String,
        /// The method, or `session` or `notifications`.
        method: String,
    },
    /// Too many calls in flight: the call was refused, not queued.
    #[error("too many calls in flight {scope}: the limit is {limit}")]
    TooManyCalls {
        /// Which cap.
        scope: CallCap,
        /// The cap.
        limit: u64,
    },
    /// A call with this id is already in flight for this caller.
    #[error("a call with id {id} is already in flight")]
    DuplicateCall {
        /// The id.
        id: u64,
    },
    /// The gateway did not admit the caller: no ticket, an unknown or
    /// expired one, or no ticket could be issued. Tickets end with the
    /// caller's node connection.
    #[error("not admitted by the gateway: {reason}")]
    NotAdmitted {
        /// Why.
        reason: String,
    },
    /// The answer is larger than what one cluster frame may carry.
    #[error("the answer is {bytes} bytes, over the {limit}-byte cluster frame limit")]
    TooLarge {
        /// The answer's size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The node hosting the server went away, or the connection to it
    /// broke, while the call was in flight.
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

/// Decodes an answer: the result's bytes, `bytes[1..]`, to be decoded by
/// the caller, or the error.
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

/// JSON of an envelope. It is plain data, so it always serialises.
pub(crate) fn encode<T: Serialize>(envelope: &T) -> Vec<u8> {
    serde_json::to_vec(envelope).unwrap_or_default()
}

/// An envelope from JSON, or the error to answer with.
pub(crate) fn decode<'a, T: Deserialize<'a>>(
    bytes: &'a [u8],
    what: &str,
) -> Result<T, RemoteError> {
    serde_json::from_slice(bytes)
        .map_err(|e| RemoteError::Codec(format!("a {what} that does not decode: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_round_trip_with_the_result_bytes_untouched() {
        // The format between nodes: tag 0 then the result's bytes, or tag 1
        // then the error's JSON, as two versions of the crate must agree.
        let raw = br#"{"content":[{"type":"text","text":"\u00e9"}]}"#;
        let ok = answer(Ok(raw));
        assert_eq!((ok[0], &ok[1..]), (0, &raw[..]));
        assert_eq!(read_answer(ok).unwrap(), raw.to_vec());
        let e = RemoteError::TooManyCalls {
            scope: CallCap::PerNode,
            limit: 10,
        };
        let err = answer(Err(&e));
        assert_eq!(err[0], 1);
        assert_eq!(
            serde_json::from_slice::<Value>(&err[1..]).unwrap(),
            serde_json::json!({ "kind": "too_many_calls", "scope": "per_node", "limit": 10 })
        );
        assert_eq!(read_answer(err), Err(e));
        assert!(matches!(read_answer(vec![]), Err(RemoteError::Codec(_))));
        assert!(matches!(
            read_answer(vec![7, 1]),
            Err(RemoteError::Codec(_))
        ));
    }

    #[test]
    fn a_call_is_plain_json_with_its_params_kept_as_text() {
        let c = Call {
            ticket: "t".into(),
            id: 7,
            server: "files".into(),
            op: Op::Request,
            method: Some("tools/call".into()),
            params: Some(RawValue::from_string(r#"{"name": "echo"}"#.into()).unwrap()),
            timeout_ms: 1000,
            progress: false,
        };
        let text = String::from_utf8(encode(&c)).unwrap();
        assert_eq!(
            text,
            r#"{"ticket":"t","id":7,"server":"files","op":"request","method":"tools/call","params":{"name": "echo"},"timeout_ms":1000,"progress":false}"#
        );
        let back: Call = decode(text.as_bytes(), "call").unwrap();
        assert_eq!(back.params.unwrap().get(), r#"{"name": "echo"}"#);
        assert!(matches!(
            decode::<Call>(b"{}", "call"),
            Err(RemoteError::Codec(m)) if m.starts_with("a call that does not decode")
        ));
    }
}
