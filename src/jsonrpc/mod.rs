//! JSON-RPC 2.0 messages as MCP uses them, shared by client and server.
//!
//! Inbound lines are classified by [`Message::parse`] without ever panicking:
//! a line that is not JSON, JSON that is not a JSON-RPC message, and a batch
//! array are distinct [`ParseError`]s so each side can decide whether to
//! answer (the server answers -32700/-32600) or drop and count (the client
//! never answers junk).
//!
//! A response's `result` is kept as the bytes the peer sent ([`RawJson`]),
//! delimited by a structural scan but not parsed, so routing it costs a
//! fraction of a parse and the caller's task decodes it once, into its type.

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) mod pending;
mod raw;
mod scan;

pub use raw::RawJson;

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
    /// A server-defined error (JSON-RPC's range for implementation-defined
    /// errors): here a refusal for lack of room, such as a full queue or a
    /// busy client.
    pub const SERVER_ERROR: i64 = -32000;
    /// 2026-07-28 era: a header and the `_meta` disagree.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28 era: a client capability the server needs is missing.
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28 era: the requested protocol version is not supported.
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
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::ErrorObject;
    ///
    /// let e = ErrorObject::new(-32602, "unknown tool: weather");
    /// assert_eq!(e.to_string(), "unknown tool: weather (code -32602)");
    /// let json = serde_json::to_value(&e)?;
    /// assert_eq!(json, serde_json::json!({ "code": -32602, "message": "unknown tool: weather" }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds `data`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::ErrorObject;
    /// use serde_json::json;
    ///
    /// let e = ErrorObject::new(-32602, "invalid params").with_data(json!({ "field": "arguments.n" }));
    /// assert_eq!(e.data, Some(json!({ "field": "arguments.n" })));
    /// ```
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
#[derive(Debug, Clone)]
pub enum Outcome {
    /// `result`, not yet decoded.
    Result(RawJson),
    /// `error`.
    Error(ErrorObject),
}

/// A response to a request.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request answered; `None` when the peer sent `null`
    /// (it could not read the request's id).
    pub id: Option<RequestId>,
    /// Result or error.
    pub outcome: Outcome,
}

/// Any JSON-RPC message.
#[derive(Debug, Clone)]
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

/// The envelope of any message, all members optional, for classification.
/// `result` stays a byte range: see [`scan`].
struct Envelope {
    jsonrpc: Option<Version2>,
    id: Option<Value>,
    method: Option<String>,
    params: Option<Value>,
    result: Option<Range<usize>>,
    error: Option<Value>,
}

/// Whether `jsonrpc` was the string "2.0", read without allocating. Anything
/// but a string is a type error.
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

fn id_of(v: &Value) -> Option<RequestId> {
    match v {
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        Value::String(s) => Some(RequestId::String(s.clone())),
        _ => None,
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A classified line whose response result is still a range of the line.
enum Parsed {
    Done(Message),
    Result {
        id: Option<RequestId>,
        range: Range<usize>,
    },
}

impl Message {
    /// Classifies one line (without its newline). Never panics.
    ///
    /// A response's `result` is not validated here, only delimited: decoding
    /// it ([`RawJson::parse`]) reports malformed JSON inside it. Everything
    /// else in the line is fully checked.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::jsonrpc::{Message, Outcome, ParseError};
    /// use conduit_mcp::RequestId;
    ///
    /// let line = br#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#;
    /// let Message::Response(response) = Message::parse(line)? else { unreachable!() };
    /// assert_eq!(response.id, Some(RequestId::Number(7)));
    /// let Outcome::Result(raw) = response.outcome else { unreachable!() };
    /// assert_eq!(raw.as_bytes(), br#"{"tools":[]}"#); // delimited, not decoded
    /// assert_eq!(Message::parse(b"[1]").unwrap_err(), ParseError::Batch);
    /// # Ok::<(), ParseError>(())
    /// ```
    pub fn parse(line: &[u8]) -> Result<Message, ParseError> {
        Ok(match Self::parse_in(line)? {
            Parsed::Done(m) => m,
            Parsed::Result { id, range } => Message::Response(Response {
                id,
                outcome: Outcome::Result(RawJson::from_vec(
                    line.get(range).unwrap_or_default().to_vec(),
                )),
            }),
        })
    }

    /// Like [`parse`](Self::parse), but a response's result keeps `line`
    /// itself instead of copying its bytes out: for large lines.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::jsonrpc::{Message, Outcome, ParseError};
    ///
    /// let line = br#"{"jsonrpc":"2.0","id":"a","result":{"text":"a long result"}}"#.to_vec();
    /// let Message::Response(response) = Message::parse_owned(line)? else { unreachable!() };
    /// let Outcome::Result(raw) = response.outcome else { unreachable!() };
    /// assert_eq!(raw.parse::<serde_json::Value>().unwrap()["text"], "a long result");
    /// # Ok::<(), ParseError>(())
    /// ```
    pub fn parse_owned(line: Vec<u8>) -> Result<Message, ParseError> {
        Ok(match Self::parse_in(&line)? {
            Parsed::Done(m) => m,
            Parsed::Result { id, range } => Message::Response(Response {
                id,
                outcome: Outcome::Result(RawJson::in_line(line, range)),
            }),
        })
    }

    fn parse_in(line: &[u8]) -> Result<Parsed, ParseError> {
        let bom = if line.starts_with(BOM) { BOM.len() } else { 0 };
        let body = line.get(bom..).unwrap_or_default();
        let members = match scan::scan_object(body) {
            Ok(m) => m,
            Err(scan::ScanError::NotObject) => return Err(not_an_object(body)),
            Err(scan::ScanError::Duplicate(_)) => {
                return Err(ParseError::Invalid {
                    reason: "a member appears twice",
                    id: None,
                })
            }
            Err(e) => return Err(ParseError::NotJson(e.to_string())),
        };
        let env = Envelope::decode(body, members)?;
        let parsed = Self::classify(body, env)?;
        Ok(match parsed {
            Parsed::Result { id, range } => Parsed::Result {
                id,
                range: range.start + bom..range.end + bom,
            },
            done => done,
        })
    }

    fn classify(body: &[u8], env: Envelope) -> Result<Parsed, ParseError> {
        let id = Self::envelope_id(&env)?;
        Self::check_envelope(body, &env, id.clone().flatten())?;
        let carries_outcome = env.result.is_some() || env.error.is_some();
        let invalid = |reason, id| Err(ParseError::Invalid { reason, id });
        match (env.method, id) {
            (Some(_), None) if carries_outcome => {
                invalid("a notification cannot carry result or error", None)
            }
            (Some(method), None) => Ok(Parsed::Done(Message::Notification(Notification {
                method,
                params: env.params,
            }))),
            (Some(_), Some(Some(id))) if carries_outcome => {
                invalid("a request cannot carry result or error", Some(id))
            }
            (Some(method), Some(Some(id))) => Ok(Parsed::Done(Message::Request(Request {
                id,
                method,
                params: env.params,
            }))),
            (Some(_), Some(None)) => invalid("a request id cannot be null", None),
            (None, Some(id)) => Self::response(id, env.result, env.error),
            (None, None) => invalid("neither a request, a notification nor a response", None),
        }
    }

    /// The envelope's id: absent (`None`), `null` (`Some(None)`), or valid.
    fn envelope_id(env: &Envelope) -> Result<Option<Option<RequestId>>, ParseError> {
        match &env.id {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(v) => match id_of(v) {
                Some(id) => Ok(Some(Some(id))),
                None => Err(ParseError::Invalid {
                    reason: "id must be a string or an integer",
                    id: None,
                }),
            },
        }
    }

    /// What every message must satisfy: `jsonrpc` "2.0", structured params,
    /// and a `result` that is JSON when it will not be decoded later.
    fn check_envelope(
        body: &[u8],
        env: &Envelope,
        id: Option<RequestId>,
    ) -> Result<(), ParseError> {
        if !env.jsonrpc.as_ref().is_some_and(|v| v.0) {
            return Err(ParseError::Invalid {
                reason: "jsonrpc must be \"2.0\"",
                id,
            });
        }
        if env
            .params
            .as_ref()
            .is_some_and(|p| !(p.is_object() || p.is_array()))
        {
            return Err(ParseError::Invalid {
                reason: "params must be an object or an array",
                id,
            });
        }
        if env.method.is_some() {
            // Not a response, so its result was never going to be decoded:
            // check it here so malformed JSON is still reported as such.
            if let Some(r) = &env.result {
                check_json(body.get(r.clone()).unwrap_or_default())?;
            }
        }
        Ok(())
    }

    /// A response: exactly one of `result` (left as a range of the line)
    /// and a well-formed `error`.
    fn response(
        id: Option<RequestId>,
        result: Option<Range<usize>>,
        error: Option<Value>,
    ) -> Result<Parsed, ParseError> {
        match (result, error) {
            (Some(range), None) => Ok(Parsed::Result { id, range }),
            (None, Some(e)) => match serde_json::from_value::<ErrorObject>(e) {
                Ok(e) => Ok(Parsed::Done(Message::Response(Response {
                    id,
                    outcome: Outcome::Error(e),
                }))),
                Err(_) => Err(ParseError::Invalid {
                    reason: "error must have an integer code and a message",
                    id,
                }),
            },
            _ => Err(ParseError::Invalid {
                reason: "a response needs exactly one of result and error",
                id,
            }),
        }
    }
}

impl Envelope {
    /// Parses every member but `result` from its range. A syntax error is
    /// [`ParseError::NotJson`]; a value of the wrong type is
    /// [`ParseError::Invalid`] (with the id, when it could be read).
    fn decode(body: &[u8], m: scan::Members) -> Result<Self, ParseError> {
        let id_value = match &m.id {
            Some(r) => Some(member::<Value>(body, r, None)?),
            None => None,
        };
        let id = id_value.as_ref().and_then(id_of);
        Ok(Envelope {
            jsonrpc: m
                .jsonrpc
                .map(|r| member(body, &r, id.clone()))
                .transpose()?,
            method: m.method.map(|r| member(body, &r, id.clone())).transpose()?,
            params: m.params.map(|r| member(body, &r, id.clone())).transpose()?,
            error: m.error.map(|r| member(body, &r, id.clone())).transpose()?,
            id: id_value,
            result: m.result,
        })
    }
}

/// One member's value, decoded.
fn member<T: serde::de::DeserializeOwned>(
    body: &[u8],
    range: &Range<usize>,
    id: Option<RequestId>,
) -> Result<T, ParseError> {
    serde_json::from_slice(body.get(range.clone()).unwrap_or_default()).map_err(|e| {
        if e.is_data() {
            ParseError::Invalid {
                reason: "not an object of the JSON-RPC shape",
                id,
            }
        } else {
            ParseError::NotJson(e.to_string())
        }
    })
}

fn check_json(bytes: &[u8]) -> Result<(), ParseError> {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
        .map(drop)
        .map_err(|e| ParseError::NotJson(e.to_string()))
}

/// A line that is not an object: a batch, another JSON value, or junk.
fn not_an_object(body: &[u8]) -> ParseError {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    match (first, check_json(body)) {
        (_, Err(e)) => e,
        (Some(b'['), Ok(())) => ParseError::Batch,
        (_, Ok(())) => ParseError::Invalid {
            reason: "not an object of the JSON-RPC shape",
            id: None,
        },
    }
}

pub(crate) mod encode;

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
            }) => assert_eq!(r.as_bytes(), br#"{"a":1}"#),
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
    fn a_malformed_result_reaches_its_caller_as_a_decode_error() {
        // Delimited but not validated while routing: the caller that
        // decodes it gets the error (instead of a timeout).
        let m = Message::parse(br#"{"jsonrpc":"2.0","id":3,"result":{"a":tru}}"#).unwrap();
        match m {
            Message::Response(Response {
                id: Some(RequestId::Number(3)),
                outcome: Outcome::Result(r),
            }) => assert!(r.parse::<Value>().is_err()),
            other => panic!("{other:?}"),
        }
        // Not a response: it is checked, and reported as what it is.
        assert!(matches!(
            Message::parse(br#"{"jsonrpc":"2.0","id":3,"method":"x","result":[}"#),
            Err(ParseError::NotJson(_))
        ));
        // The owned path hands over the same bytes.
        let line = br#"{"result":{"big":"\\\"}"},"id":"q","jsonrpc":"2.0"}"#.to_vec();
        match Message::parse_owned(line).unwrap() {
            Message::Response(Response {
                id: Some(RequestId::String(q)),
                outcome: Outcome::Result(r),
            }) => {
                assert_eq!(q, "q");
                assert_eq!(r.parse::<Value>().unwrap()["big"], "\\\"}");
            }
            other => panic!("{other:?}"),
        }
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
