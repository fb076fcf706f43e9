//! JSON-RPC 2.0 messages as MCP uses them, shared by client and server.
//!
//! Inbound lines are classified by [`Message::parse`] without ever panicking:
//! a line that is not JSON, JSON that is not a JSON-RPC message, and a batch
//! array are distinct [`ParseError`]s so each side can decide whether to
//! answer (the server answers -32700/-32600) or drop and count (the client
//! never answers junk).
//!
//! A response's `result` is kept as unparsed JSON text ([`RawValue`]) so the
//! actor that routes it does not pay for parsing a large result: the caller's
//! task parses it.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// JSON-RPC error codes used by MCP.
pub mod codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Modern era: a header and the `_meta` disagree.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// Modern era: a client capability the server needs is missing.
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// Modern era: the requested protocol version is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// A request id. `5` and `"5"` are different ids.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code (see [`codes`]).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Additional data, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and message and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// A request: has an id and expects a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id the response will carry.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A notification: no id, no response.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A response's outcome.
#[derive(Debug)]
pub enum Outcome {
    /// `result`, unparsed.
    Result(Box<RawValue>),
    /// `error`.
    Error(ErrorObject),
}

/// A response to a request.
#[derive(Debug)]
pub struct Response {
    /// The id of the request answered; `None` when the peer sent `null`
    /// (it could not read the request's id).
    pub id: Option<RequestId>,
    /// Result or error.
    pub outcome: Outcome,
}

/// Any JSON-RPC message.
#[derive(Debug)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

/// Why a line is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Not JSON at all (includes invalid UTF-8).
    #[error("not JSON: {0}")]
    NotJson(String),
    /// A JSON array: batches are not part of MCP (except 2025-03-26).
    #[error("JSON-RPC batch arrays are not supported")]
    Batch,
    /// JSON, but not a JSON-RPC 2.0 message; `id` is the request id if one
    /// could be read (so a server can answer -32600 for it).
    #[error("not a JSON-RPC 2.0 message: {reason}")]
    Invalid {
        /// What is wrong.
        reason: &'static str,
        /// The id, when present and valid.
        id: Option<RequestId>,
    },
}

/// The wire shape of any message, all fields optional, for classification.
#[derive(Deserialize)]
struct Envelope {
    jsonrpc: Option<Version2>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    method: Option<String>,
    params: Option<Value>,
    result: Option<Box<RawValue>>,
    error: Option<Value>,
}

/// Whether `jsonrpc` was the string "2.0", read without allocating (a
/// `String` here cost one allocation per message). Anything but a string is
/// a type error, as it was for `Option<String>`.
struct Version2(bool);

impl<'de> Deserialize<'de> for Version2 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Version2;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Version2, E> {
                Ok(Version2(v == "2.0"))
            }
        }
        d.deserialize_str(V)
    }
}

/// Distinguishes `"id": null` (Some(Null)) from a missing id (None).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn id_of(v: &Value) -> Option<RequestId> {
    match v {
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        Value::String(s) => Some(RequestId::String(s.clone())),
        _ => None,
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Message {
    /// Classifies one line. A leading UTF-8 byte-order mark is ignored.
    pub fn parse(line: &[u8]) -> Result<Message, ParseError> {
        let line = line.strip_prefix(BOM).unwrap_or(line);
        let first = line.iter().find(|b| !b.is_ascii_whitespace());
        if first == Some(&b'[') {
            // Still check it is JSON so "[" junk is reported as junk.
            return match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
                Ok(_) => Err(ParseError::Batch),
                Err(e) => Err(ParseError::NotJson(e.to_string())),
            };
        }
        let env: Envelope = match serde_json::from_slice(line) {
            Ok(env) => env,
            Err(e) if e.is_data() => {
                // Valid JSON of the wrong shape (a number, a string, wrong field types).
                let id = serde_json::from_slice::<Value>(line)
                    .ok()
                    .and_then(|v| v.get("id").and_then(id_of));
                return Err(ParseError::Invalid {
                    reason: "not an object of the JSON-RPC shape",
                    id,
                });
            }
            Err(e) => return Err(ParseError::NotJson(e.to_string())),
        };
        Self::classify(env)
    }

    fn classify(env: Envelope) -> Result<Message, ParseError> {
        let id = match &env.id {
            None => None,
            Some(Value::Null) => Some(None),
            Some(v) => match id_of(v) {
                Some(id) => Some(Some(id)),
                None => {
                    return Err(ParseError::Invalid {
                        reason: "id must be a string or an integer",
                        id: None,
                    })
                }
            },
        };
        let valid_id = id.clone().flatten();
        if !env.jsonrpc.is_some_and(|v| v.0) {
            return Err(ParseError::Invalid {
                reason: "jsonrpc must be \"2.0\"",
                id: valid_id,
            });
        }
        if let Some(p) = &env.params {
            if !(p.is_object() || p.is_array()) {
                return Err(ParseError::Invalid {
                    reason: "params must be an object or an array",
                    id: valid_id,
                });
            }
        }
        match (env.method, id) {
            (Some(method), None) => {
                if env.result.is_some() || env.error.is_some() {
                    return Err(ParseError::Invalid {
                        reason: "a notification cannot carry result or error",
                        id: None,
                    });
                }
                Ok(Message::Notification(Notification {
                    method,
                    params: env.params,
                }))
            }
            (Some(method), Some(Some(id))) => {
                if env.result.is_some() || env.error.is_some() {
                    return Err(ParseError::Invalid {
                        reason: "a request cannot carry result or error",
                        id: Some(id),
                    });
                }
                Ok(Message::Request(Request {
                    id,
                    method,
                    params: env.params,
                }))
            }
            (Some(_), Some(None)) => Err(ParseError::Invalid {
                reason: "a request id cannot be null",
                id: None,
            }),
            (None, Some(id)) => {
                let outcome = match (env.result, env.error) {
                    (Some(r), None) => Outcome::Result(r),
                    (None, Some(e)) => match serde_json::from_value::<ErrorObject>(e) {
                        Ok(e) => Outcome::Error(e),
                        Err(_) => {
                            return Err(ParseError::Invalid {
                                reason: "error must have an integer code and a message",
                                id,
                            })
                        }
                    },
                    _ => {
                        return Err(ParseError::Invalid {
                            reason: "a response needs exactly one of result and error",
                            id,
                        })
                    }
                };
                Ok(Message::Response(Response { id, outcome }))
            }
            (None, None) => Err(ParseError::Invalid {
                reason: "neither a request, a notification nor a response",
                id: None,
            }),
        }
    }
}

/// Serialisation of outbound messages straight into a line buffer.
///
/// Every function appends exactly one line (JSON followed by `\n`). serde_json
/// escapes control characters, so the JSON never contains a raw newline.
pub mod encode {
    use super::*;

    #[derive(Serialize)]
    struct Req<'a, P: Serialize + ?Sized> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a P>,
    }

    #[derive(Serialize)]
    struct Notif<'a, P: Serialize + ?Sized> {
        jsonrpc: &'static str,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a P>,
    }

    #[derive(Serialize)]
    struct Res<'a, R: Serialize + ?Sized> {
        jsonrpc: &'static str,
        id: &'a Option<RequestId>,
        result: &'a R,
    }

    #[derive(Serialize)]
    struct Err<'a> {
        jsonrpc: &'static str,
        id: &'a Option<RequestId>,
        error: &'a ErrorObject,
    }

    fn line<T: Serialize>(msg: &T) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::with_capacity(128);
        serde_json::to_writer(&mut out, msg)?;
        out.push(b'\n');
        Ok(out)
    }

    /// A request line.
    pub fn request<P: Serialize + ?Sized>(
        id: &RequestId,
        method: &str,
        params: Option<&P>,
    ) -> Result<Vec<u8>, serde_json::Error> {
        line(&Req {
            jsonrpc: "2.0",
            id,
            method,
            params,
        })
    }

    /// A notification line.
    pub fn notification<P: Serialize + ?Sized>(
        method: &str,
        params: Option<&P>,
    ) -> Result<Vec<u8>, serde_json::Error> {
        line(&Notif {
            jsonrpc: "2.0",
            method,
            params,
        })
    }

    /// A success response line.
    pub fn result<R: Serialize + ?Sized>(
        id: &Option<RequestId>,
        result: &R,
    ) -> Result<Vec<u8>, serde_json::Error> {
        line(&Res {
            jsonrpc: "2.0",
            id,
            result,
        })
    }

    /// An error response line. Cannot fail: an [`ErrorObject`] always
    /// serialises (its `data` is already a `Value`).
    pub fn error(id: &Option<RequestId>, error: &ErrorObject) -> Vec<u8> {
        line(&Err {
            jsonrpc: "2.0",
            id,
            error,
        })
        .unwrap_or_else(|_| {
            // Unreachable in practice; keep the stream valid regardless.
            b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"internal error\"}}\n".to_vec()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_keep_their_type() {
        assert_ne!(RequestId::Number(5), RequestId::String("5".into()));
        let m = Message::parse(br#"{"jsonrpc":"2.0","id":"5","method":"x"}"#).unwrap();
        match m {
            Message::Request(r) => assert_eq!(r.id, RequestId::String("5".into())),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn classifies_junk() {
        assert!(matches!(
            Message::parse(b"hello"),
            Err(ParseError::NotJson(_))
        ));
        assert!(matches!(
            Message::parse(b"{}"),
            Err(ParseError::Invalid { .. })
        ));
        assert!(matches!(Message::parse(b"[1]"), Err(ParseError::Batch)));
        assert!(matches!(Message::parse(b"[1"), Err(ParseError::NotJson(_))));
        assert!(matches!(
            Message::parse(b"\xff\xfe"),
            Err(ParseError::NotJson(_))
        ));
        assert!(matches!(
            Message::parse(b"42"),
            Err(ParseError::Invalid { .. })
        ));
        assert!(matches!(
            Message::parse(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#),
            Err(ParseError::Invalid {
                id: Some(RequestId::Number(1)),
                ..
            })
        ));
    }

    #[test]
    fn parses_responses_and_bom() {
        let m = Message::parse(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1}}")
            .unwrap();
        match m {
            Message::Response(Response {
                id: Some(RequestId::Number(1)),
                outcome: Outcome::Result(r),
            }) => assert_eq!(r.get(), r#"{"a":1}"#),
            other => panic!("{other:?}"),
        }
        let m = Message::parse(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#,
        )
        .unwrap();
        assert!(matches!(
            m,
            Message::Response(Response {
                id: None,
                outcome: Outcome::Error(_)
            })
        ));
    }

    #[test]
    fn encodes_one_line() {
        let l =
            encode::request(&RequestId::Number(1), "a\nb", Some(&json!({"t": "x\ny"}))).unwrap();
        assert_eq!(l.iter().filter(|b| **b == b'\n').count(), 1);
        assert!(matches!(
            Message::parse(&l[..l.len() - 1]).unwrap(),
            Message::Request(_)
        ));
    }
}
