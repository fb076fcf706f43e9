//! 2026-07-28 multi round-trip requests: a `tools/call`, `prompts/get` or
//! `resources/read` answered with `input_required`, and the retry's
//! `inputResponses`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{MetaParams, ResultType};
use super::elicitation::{ElicitParams, ElicitResult};
use super::methods;
use super::roots::ListRootsResult;
use super::sampling::{CreateMessageParams, CreateMessageResult};

/// Something the server needs from the client: a `sampling/createMessage`,
/// `roots/list` or `elicitation/create` request (`{method, params}`), in
/// an [`InputRequiredResult`] (2026-07-28) or sent as a request (2025-11-25).
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageParams),
    /// `roots/list`.
    ListRoots(Option<MetaParams>),
    /// `elicitation/create`.
    Elicit(ElicitParams),
    /// Another method, or a known one whose params do not match its shape,
    /// kept as sent (`{method, params}`).
    Unknown(Value),
}

impl InputRequest {
    /// `roots/list`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::InputRequest;
    ///
    /// let ask = InputRequest::list_roots();
    /// assert_eq!((ask.method(), ask.params()), ("roots/list", None));
    /// ```
    pub fn list_roots() -> Self {
        InputRequest::ListRoots(None)
    }

    /// `sampling/createMessage` with these parameters (typed when they
    /// match the schema, kept as given otherwise).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::InputRequest;
    /// use serde_json::json;
    ///
    /// let ask = InputRequest::create_message(json!({
    ///     "messages": [{ "role": "user", "content": { "type": "text", "text": "Summarise the diff" } }],
    ///     "maxTokens": 200,
    /// }));
    /// assert!(matches!(ask, InputRequest::CreateMessage(ref p) if p.max_tokens == 200));
    /// ```
    pub fn create_message(params: Value) -> Self {
        Self::from_parts(methods::SAMPLING_CREATE_MESSAGE, Some(params))
    }

    /// `elicitation/create` with these parameters (typed when they match
    /// the schema, kept as given otherwise).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::InputRequest;
    /// use serde_json::json;
    ///
    /// let ask = InputRequest::elicit(json!({
    ///     "message": "Which branch?",
    ///     "requestedSchema": { "type": "object", "properties": { "branch": { "type": "string" } } },
    /// }));
    /// assert!(matches!(ask, InputRequest::Elicit(ref p) if p.message == "Which branch?"));
    /// ```
    pub fn elicit(params: Value) -> Self {
        Self::from_parts(methods::ELICITATION_CREATE, Some(params))
    }

    /// The method.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::InputRequest;
    ///
    /// assert_eq!(InputRequest::list_roots().method(), "roots/list");
    /// assert_eq!(InputRequest::from_parts("x/custom", None).method(), "x/custom");
    /// ```
    pub fn method(&self) -> &str {
        match self {
            InputRequest::CreateMessage(_) => methods::SAMPLING_CREATE_MESSAGE,
            InputRequest::ListRoots(_) => methods::ROOTS_LIST,
            InputRequest::Elicit(_) => methods::ELICITATION_CREATE,
            InputRequest::Unknown(v) => v.get("method").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The params, as JSON.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::InputRequest;
    /// use serde_json::json;
    ///
    /// let ask = InputRequest::elicit(json!({
    ///     "message": "Go?",
    ///     "requestedSchema": { "type": "object", "properties": {} },
    /// }));
    /// assert_eq!(ask.params().unwrap()["message"], "Go?");
    /// ```
    pub fn params(&self) -> Option<Value> {
        let v = match self {
            InputRequest::CreateMessage(p) => serde_json::to_value(p),
            InputRequest::ListRoots(None) => return None,
            InputRequest::ListRoots(Some(p)) => serde_json::to_value(p),
            InputRequest::Elicit(p) => serde_json::to_value(p),
            InputRequest::Unknown(v) => return v.get("params").cloned(),
        };
        // These types serialise to JSON without fail (string keys only).
        v.ok()
    }

    /// The request for `method` with `params` (typed when known).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::InputRequest;
    /// use serde_json::json;
    ///
    /// // The `{method, params}` of an `inputRequests` entry, typed.
    /// let ask = InputRequest::from_parts("roots/list", None);
    /// assert_eq!(ask, InputRequest::list_roots());
    /// let other = InputRequest::from_parts("x/custom", Some(json!({ "a": 1 })));
    /// assert!(matches!(other, InputRequest::Unknown(_)));
    /// assert_eq!(other.params(), Some(json!({ "a": 1 })));
    /// ```
    pub fn from_parts(method: &str, params: Option<Value>) -> Self {
        fn typed<T: serde::de::DeserializeOwned>(p: &Option<Value>) -> Option<T> {
            T::deserialize(p.as_ref()?).ok()
        }
        let known = match method {
            methods::SAMPLING_CREATE_MESSAGE => typed(&params).map(InputRequest::CreateMessage),
            methods::ELICITATION_CREATE => typed(&params).map(InputRequest::Elicit),
            methods::ROOTS_LIST => match &params {
                None => Some(InputRequest::ListRoots(None)),
                Some(_) => typed(&params).map(|p| InputRequest::ListRoots(Some(p))),
            },
            _ => None,
        };
        known.unwrap_or_else(|| {
            let mut m = serde_json::Map::new();
            m.insert("method".into(), Value::String(method.to_owned()));
            if let Some(p) = params {
                m.insert("params".into(), p);
            }
            InputRequest::Unknown(Value::Object(m))
        })
    }
}

impl Serialize for InputRequest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Parts<'a, P> {
            method: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            params: Option<&'a P>,
        }
        match self {
            InputRequest::CreateMessage(p) => Parts {
                method: self.method(),
                params: Some(p),
            }
            .serialize(s),
            InputRequest::ListRoots(p) => Parts {
                method: self.method(),
                params: p.as_ref(),
            }
            .serialize(s),
            InputRequest::Elicit(p) => Parts {
                method: self.method(),
                params: Some(p),
            }
            .serialize(s),
            InputRequest::Unknown(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        // Typed only when `{method, params?}` is all there is: anything
        // else would be lost on the way back.
        let parts_only = v
            .as_object()
            .is_some_and(|o| o.keys().all(|k| k == "method" || k == "params"));
        Ok(match v.get("method").and_then(Value::as_str) {
            Some(method) if parts_only => {
                match InputRequest::from_parts(method, v.get("params").cloned()) {
                    InputRequest::Unknown(_) => InputRequest::Unknown(v),
                    typed => typed,
                }
            }
            _ => InputRequest::Unknown(v),
        })
    }
}

/// The input requests of an [`InputRequiredResult`], by the server's keys.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The client's answer to one [`InputRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
// A wire model: its variants are the schema's shapes, matched directly.
#[allow(clippy::large_enum_variant)]
pub enum InputResponse {
    /// To `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// To `roots/list`.
    ListRoots(ListRootsResult),
    /// To `elicitation/create`.
    Elicit(ElicitResult),
    /// Anything else, kept as sent.
    Unknown(Value),
}

/// The answers of a retry, by the keys of the input requests.
pub type InputResponses = BTreeMap<String, InputResponse>;

schema_object! {
    /// A 2026-07-28 result saying the server needs input before it can answer:
    /// the client fulfils `inputRequests` and retries the request with
    /// `inputResponses`, echoing `requestState`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct InputRequiredResult {
        /// `"input_required"`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub result_type: Option<ResultType>,
        /// What the server needs, by key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub input_requests: Option<InputRequests>,
        /// Opaque state to echo on the retry.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub request_state: Option<String>,
    }
}
