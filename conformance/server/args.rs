//! The tools' and prompts' arguments.

use super::*;

/// Tools without arguments.
#[derive(Deserialize, JsonSchema)]
pub(super) struct NoArguments {}

/// `test_sampling`'s arguments.
#[derive(Deserialize, JsonSchema)]
pub(super) struct SamplingArgs {
    /// The prompt to send to the LLM.
    pub(super) prompt: String,
}

/// `test_elicitation`'s arguments.
#[derive(Deserialize, JsonSchema)]
pub(super) struct ElicitationArgs {
    /// The message to show the user.
    pub(super) message: String,
}

/// `json_schema_2020_12_tool`'s arguments (its listed schema is the raw
/// 2020-12 one, [`json_schema_2020_12`]).
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // decoded to check the arguments, not read
pub(super) struct ContactArgs {
    pub(super) name: Option<String>,
    pub(super) address: Option<Value>,
    #[serde(rename = "contactMethod")]
    pub(super) contact_method: Option<String>,
    pub(super) phone: Option<String>,
    pub(super) email: Option<String>,
}

/// `test_prompt_with_arguments`'s arguments.
#[derive(Deserialize, JsonSchema)]
pub(super) struct PromptArgs {
    /// First test argument.
    pub(super) arg1: String,
    /// Second test argument.
    pub(super) arg2: String,
}

/// `test_prompt_with_embedded_resource`'s arguments.
#[derive(Deserialize, JsonSchema)]
pub(super) struct EmbedArgs {
    /// URI of the resource to embed.
    #[serde(rename = "resourceUri")]
    pub(super) resource_uri: String,
}
