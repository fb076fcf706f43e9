//! Prompts: `prompts/list` and `prompts/get`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{Cursor, Extra, Icon, ResultType, Role};
use super::content::ContentBlock;
use super::multi_round::InputResponses;

/// An argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

schema_object! {
    /// A prompt (template) the server offers.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Prompt {
        /// Its name.
        pub name: String,
        /// Display name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub title: Option<String>,
        /// What it is for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub description: Option<String>,
        /// The arguments it takes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub arguments: Option<Vec<PromptArgument>>,
        /// Icons to show.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub icons: Option<Vec<Icon>>,
    }
}

schema_object! { cached
    /// The result of `prompts/list` (one page).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ListPromptsResult {
        /// The prompts.
        pub prompts: Vec<Prompt>,
        /// The next page's cursor, if there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub next_cursor: Option<Cursor>,
    }
}

schema_object! {
    /// The parameters of `prompts/get`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct GetPromptParams {
        /// The prompt.
        pub name: String,
        /// Its arguments (the schema says string values).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub arguments: Option<Map<String, Value>>,
        /// 2026-07-28 era: the answers to a previous round's input requests.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub input_responses: Option<InputResponses>,
        /// 2026-07-28 era: the previous round's `requestState`, echoed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub request_state: Option<String>,
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl PromptMessage {
    /// A text message from `role`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{PromptMessage, Role};
    ///
    /// let message = PromptMessage::text(Role::User, "Review this diff");
    /// assert_eq!(
    ///     serde_json::to_value(&message)?,
    ///     serde_json::json!({ "role": "user", "content": { "type": "text", "text": "Review this diff" } })
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: ContentBlock::text(text),
            extra: Extra::new(),
        }
    }
}

schema_object! {
    /// The result of `prompts/get`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct GetPromptResult {
        /// The messages.
        pub messages: Vec<PromptMessage>,
        /// What the prompt is for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub description: Option<String>,
        /// 2026-07-28 era: `"complete"`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub result_type: Option<ResultType>,
    }
}
