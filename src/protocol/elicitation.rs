//! Elicitation: the server asks the user (`elicitation/create`), in a
//! form or at a URL.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::Extra;
use super::tasks::TaskMetadata;

/// One field of an elicitation form: a primitive JSON Schema (string,
/// number, integer, boolean, or a single- or multi-select enum). The
/// common members are typed; the kind's own (`minLength`, `enum`,
/// `oneOf`, `items`, ...) are in `extra`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PrimitiveSchema {
    /// `"string"`, `"number"`, `"integer"`, `"boolean"` or `"array"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What to enter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// The kind's own members, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The form an elicitation asks for: a flat object schema.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ElicitationSchema {
    /// `"object"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The fields.
    pub properties: Map<String, Value>,
    /// The fields that must be filled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitationSchema {
    /// The fields, typed (a field that is not a primitive schema is left
    /// out).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::ElicitationSchema;
    /// use serde_json::json;
    ///
    /// let schema: ElicitationSchema = serde_json::from_value(json!({
    ///     "type": "object",
    ///     "properties": { "name": { "type": "string", "title": "Name" }, "age": { "type": "integer" } },
    /// }))?;
    /// let mut kinds: Vec<(&str, String)> = schema.fields().map(|(k, f)| (k, f.kind)).collect();
    /// kinds.sort();
    /// assert_eq!(kinds, [("age", "integer".to_string()), ("name", "string".to_string())]);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn fields(&self) -> impl Iterator<Item = (&str, PrimitiveSchema)> + '_ {
        self.properties.iter().filter_map(|(k, v)| {
            PrimitiveSchema::deserialize(v)
                .ok()
                .map(|s| (k.as_str(), s))
        })
    }
}

schema_object! {
    /// The parameters of `elicitation/create`: a form (`mode` absent or
    /// `"form"`, with `requestedSchema`) or a URL to open (`mode: "url"`).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ElicitParams {
        /// What to tell the user.
        pub message: String,
        /// `"form"` (the default when absent) or `"url"`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub mode: Option<String>,
        /// Form mode: what to ask for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub requested_schema: Option<ElicitationSchema>,
        /// URL mode: where to send the user.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub url: Option<String>,
        /// URL mode (2025-11-25): the id its completion notification names.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub elicitation_id: Option<String>,
        /// 2025-11-25: run it as a task.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub task: Option<TaskMetadata>,
    }
}

string_enum! {
    /// What the user did.
    ElicitAction {
        /// Submitted (form content in `content`).
        Accept = "accept",
        /// Said no.
        Decline = "decline",
        /// Dismissed it.
        Cancel = "cancel",
    }
}

schema_object! {
    /// The result of `elicitation/create` (the client's answer).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ElicitResult {
        /// What the user did.
        pub action: ElicitAction,
        /// Form mode, accepted: the values entered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub content: Option<Map<String, Value>>,
    }
}

impl ElicitResult {
    /// The user submitted `content` (form mode; URL mode has none).
    ///
    /// ```
    /// use conduit_mcp::protocol::{ElicitAction, ElicitResult};
    /// use serde_json::json;
    ///
    /// let content = json!({ "name": "Ada" }).as_object().cloned().unwrap();
    /// let r = ElicitResult::accept(Some(content));
    /// assert_eq!(r.action, ElicitAction::Accept);
    /// assert_eq!(serde_json::to_value(&r)?, json!({ "action": "accept", "content": { "name": "Ada" } }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn accept(content: Option<Map<String, Value>>) -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content,
            meta: None,
            extra: Extra::default(),
        }
    }

    /// The user said no.
    ///
    /// ```
    /// use conduit_mcp::protocol::ElicitResult;
    ///
    /// assert_eq!(serde_json::to_value(ElicitResult::decline())?, serde_json::json!({ "action": "decline" }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn decline() -> Self {
        ElicitResult {
            action: ElicitAction::Decline,
            ..ElicitResult::accept(None)
        }
    }

    /// The user dismissed the request.
    ///
    /// ```
    /// use conduit_mcp::protocol::ElicitResult;
    ///
    /// assert_eq!(serde_json::to_value(ElicitResult::cancel())?, serde_json::json!({ "action": "cancel" }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn cancel() -> Self {
        ElicitResult {
            action: ElicitAction::Cancel,
            ..ElicitResult::accept(None)
        }
    }
}

schema_object! {
    /// The parameters of `notifications/elicitation/complete` (2025-11-25):
    /// a URL-mode elicitation finished.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ElicitationCompleteParams {
        /// The elicitation's id.
        pub elicitation_id: String,
    }
}
