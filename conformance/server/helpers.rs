//! Small builders of results and input requests, and the request-state seal.

use super::*;

/// A fixture value built from JSON. The values are constants of this file,
/// so a failure is a bug here (and fails the tests at once).
pub(super) fn typed<T: DeserializeOwned>(v: Value) -> T {
    match serde_json::from_value(v) {
        Ok(t) => t,
        Err(e) => panic!("conformance fixture does not match its type: {e}"),
    }
}

/// A tool result with these content blocks.
pub(super) fn content(blocks: Value) -> CallToolResult {
    typed(json!({ "content": blocks }))
}

/// A prompt result with these messages.
pub(super) fn messages(messages: Value) -> GetPromptResult {
    typed(json!({ "messages": messages }))
}

/// One text resource's contents.
pub(super) fn text_contents(uri: &str, mime: &str, text: &str) -> ReadResourceResult {
    typed(json!({ "contents": [{ "uri": uri, "mimeType": mime, "text": text }] }))
}

/// The client's answer to an input request, decoded as `T`; an answer of
/// the wrong shape is the client's error (-32602 naming the key).
pub(super) fn answer<T: DeserializeOwned>(key: &str, v: Value) -> Result<T, HandlerError> {
    serde_json::from_value(v).map_err(|e| {
        HandlerError::InvalidParams(format!("inputResponses.{key} is not a valid answer: {e}"))
    })
}

/// An elicitation answer as text: `action=..., content={...}`.
pub(super) fn elicit_text(r: &ElicitResult) -> String {
    let content = r.content.clone().map(Value::Object).unwrap_or(json!({}));
    format!("action={}, content={content}", r.action)
}

/// The text of a sampling answer.
pub(super) fn sampled_text(r: &CreateMessageResult) -> String {
    serde_json::to_value(&r.content)
        .ok()
        .and_then(|c| c.get("text").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "No response".into())
}

/// A string field of an accepted elicitation's content.
pub(super) fn field(r: &ElicitResult, name: &str) -> Option<String> {
    r.content
        .as_ref()?
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// An elicitation request: `message` and a flat object schema.
pub(super) fn elicit(message: &str, properties: Value, required: &[&str]) -> InputRequest {
    InputRequest::elicit(json!({
        "message": message,
        "requestedSchema": { "type": "object", "properties": properties, "required": required },
    }))
}

/// A one-message sampling request.
pub(super) fn sample(text: &str, max_tokens: u64) -> InputRequest {
    InputRequest::create_message(json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
        "maxTokens": max_tokens,
    }))
}

/// Seals request state with a keyed hash (SipHash with a random key per
/// process), so that a client cannot forge or alter it. `requestState` is
/// attacker-controlled; a real server would use HMAC-SHA-256 with a key
/// that survives restarts.
pub(super) struct Seal {
    pub(super) key: std::collections::hash_map::RandomState,
}

impl Seal {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            key: Default::default(),
        })
    }

    pub(super) fn tag(&self, body: &str) -> String {
        format!("{:016x}", self.key.hash_one(body.as_bytes()))
    }

    /// `value` sealed for `tool`.
    pub(super) fn seal(&self, tool: &str, value: Value) -> String {
        let body = json!({ "tool": tool, "state": value }).to_string();
        let tag = self.tag(&body);
        format!("{body}.{tag}")
    }

    /// The request's state for `tool`: `None` without one, an error (-32602)
    /// if it was not sealed here for this tool.
    pub(super) fn open(
        &self,
        tool: &str,
        ctx: &RequestContext,
    ) -> Result<Option<Value>, HandlerError> {
        let Some(state) = ctx.request_state() else {
            return Ok(None);
        };
        let bad = || HandlerError::InvalidParams("requestState integrity check failed".into());
        let (body, tag) = state.rsplit_once('.').ok_or_else(bad)?;
        if tag != self.tag(body) {
            return Err(bad());
        }
        let v: Value = serde_json::from_str(body).map_err(|_| bad())?;
        if v["tool"] != tool {
            return Err(bad());
        }
        Ok(Some(v["state"].clone()))
    }
}
