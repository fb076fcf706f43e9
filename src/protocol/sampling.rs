//! Sampling: the server asks the client's model (`sampling/createMessage`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{Extra, OneOrMany, Role};
use super::content::SamplingContent;
use super::tasks::TaskMetadata;
use super::tools::Tool;

schema_object! {
    /// One message of a sampling conversation.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct SamplingMessage {
        /// Who says it.
        pub role: Role,
        /// One block or several.
        pub content: OneOrMany<SamplingContent>,
    }
}

/// A model name hint.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelHint {
    /// A (sub)string of a model name (`"claude-3-sonnet"`, `"claude"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What the server prefers in a model (the client decides).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model names, in order of preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::protocol::common::number::option"
    )]
    pub cost_priority: Option<f64>,
    /// How much speed matters, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::protocol::common::number::option"
    )]
    pub speed_priority: Option<f64>,
    /// How much capability matters, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::protocol::common::number::option"
    )]
    pub intelligence_priority: Option<f64>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// How the model may use the tools offered.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolChoice {
    /// `"auto"`, `"required"` or `"none"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

schema_object! {
    /// The parameters of `sampling/createMessage`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct CreateMessageParams {
        /// The conversation.
        pub messages: Vec<SamplingMessage>,
        /// The most tokens to generate.
        pub max_tokens: u64,
        /// A system prompt.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub system_prompt: Option<String>,
        /// Model preferences.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub model_preferences: Option<ModelPreferences>,
        /// `"none"`, `"thisServer"` or `"allServers"` (deprecated).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub include_context: Option<String>,
        /// Sampling temperature.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            serialize_with = "crate::protocol::common::number::option"
        )]
        pub temperature: Option<f64>,
        /// Sequences that end generation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub stop_sequences: Option<Vec<String>>,
        /// Provider-specific metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub metadata: Option<Value>,
        /// Tools the model may call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub tools: Option<Vec<Tool>>,
        /// How it may call them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub tool_choice: Option<ToolChoice>,
        /// 2025-11-25: run it as a task.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub task: Option<TaskMetadata>,
    }
}

schema_object! {
    /// The result of `sampling/createMessage` (the client's answer).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct CreateMessageResult {
        /// Who said it (the model: `assistant`).
        pub role: Role,
        /// One block or several.
        pub content: OneOrMany<SamplingContent>,
        /// The model that answered.
        pub model: String,
        /// Why generation stopped (`endTurn`, `stopSequence`, `maxTokens`,
        /// `toolUse`, or another).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub stop_reason: Option<String>,
    }
}
