//! Argument completion: `completion/complete`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{Extra, ResultType};

/// A reference to a prompt (`ref/prompt`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptReference {
    /// The prompt's name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A reference to a resource template (`ref/resource`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceTemplateReference {
    /// The template's URI template (or a resource's URI).
    pub uri: String,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

tagged_enum! {
    /// What an argument belongs to.
    Reference {
        /// `"ref/prompt"`.
        Prompt(PromptReference) = "ref/prompt",
        /// `"ref/resource"`.
        ResourceTemplate(ResourceTemplateReference) = "ref/resource",
    }
}

impl Reference {
    /// A prompt's argument.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Reference;
    ///
    /// let r = Reference::prompt("code_review");
    /// let json = serde_json::to_value(&r)?;
    /// assert_eq!(json, serde_json::json!({ "type": "ref/prompt", "name": "code_review" }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn prompt(name: impl Into<String>) -> Self {
        Reference::Prompt(PromptReference {
            name: name.into(),
            ..Default::default()
        })
    }

    /// A resource template's variable.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Reference;
    ///
    /// let r = Reference::resource_template("file:///{path}");
    /// assert_eq!(r.kind(), "ref/resource");
    /// assert_eq!(serde_json::to_value(&r)?["uri"], "file:///{path}");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn resource_template(uri_template: impl Into<String>) -> Self {
        Reference::ResourceTemplate(ResourceTemplateReference {
            uri: uri_template.into(),
            extra: Extra::new(),
        })
    }
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompleteArgument {
    /// Its name.
    pub name: String,
    /// What has been typed so far.
    pub value: String,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Arguments already chosen, to complete in context.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompleteContext {
    /// Already resolved arguments, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

schema_object! {
    /// The parameters of `completion/complete`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct CompleteParams {
        /// What the argument belongs to.
        #[serde(rename = "ref")]
        pub reference: Reference,
        /// The argument.
        pub argument: CompleteArgument,
        /// Arguments already chosen.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub context: Option<CompleteContext>,
    }
}

impl CompleteParams {
    /// Completes argument `name`, typed so far as `value`, of `reference`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{CompleteParams, Reference};
    /// use serde_json::json;
    ///
    /// let params = CompleteParams::new(Reference::prompt("code_review"), "language", "py");
    /// assert_eq!(
    ///     serde_json::to_value(&params)?,
    ///     json!({
    ///         "ref": { "type": "ref/prompt", "name": "code_review" },
    ///         "argument": { "name": "language", "value": "py" },
    ///     })
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(reference: Reference, name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            reference,
            argument: CompleteArgument {
                name: name.into(),
                value: value.into(),
                extra: Extra::new(),
            },
            context: None,
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// The completions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Suggested values (at most 100).
    pub values: Vec<String>,
    /// How many there are in all, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than `values`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

schema_object! {
    /// The result of `completion/complete`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct CompleteResult {
        /// The completions.
        pub completion: Completion,
        /// 2026-07-28 era: `"complete"`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub result_type: Option<ResultType>,
    }
}
