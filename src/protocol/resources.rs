//! Resources and resource templates: `resources/list`,
//! `resources/templates/list`, `resources/read`, the 2025-11-25
//! `resources/subscribe`/`unsubscribe` and `notifications/resources/updated`.

use serde::{Deserialize, Serialize};

use super::common::{Annotations, Cursor, Extra, Icon, Meta};
use super::content::ResourceContents;
use super::multi_round::InputResponses;

schema_object! {
    /// A resource the server offers (also the body of a `resource_link`
    /// content block).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Resource {
        /// Its URI.
        pub uri: String,
        /// Programmatic name.
        pub name: String,
        /// Display name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub title: Option<String>,
        /// What it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub description: Option<String>,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub mime_type: Option<String>,
        /// Its size in bytes, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub size: Option<u64>,
        /// Usage hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub annotations: Option<Annotations>,
        /// Icons to show.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub icons: Option<Vec<Icon>>,
    }
}

impl Resource {
    /// A resource with a URI and a name.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Resource;
    ///
    /// let mut readme = Resource::new("file:///srv/README.md", "README");
    /// readme.mime_type = Some("text/markdown".into());
    /// assert_eq!(serde_json::to_value(&readme)?["mimeType"], "text/markdown");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            ..Self::default()
        }
    }
}

schema_object! {
    /// A family of resources named by an RFC 6570 URI template.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ResourceTemplate {
        /// The URI template (`file:///{path}`).
        pub uri_template: String,
        /// Programmatic name.
        pub name: String,
        /// Display name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub title: Option<String>,
        /// What its resources are.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub description: Option<String>,
        /// The MIME type of every resource it names, if they share one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub mime_type: Option<String>,
        /// Usage hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub annotations: Option<Annotations>,
        /// Icons to show.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub icons: Option<Vec<Icon>>,
    }
}

schema_object! { cached
    /// The result of `resources/list` (one page).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ListResourcesResult {
        /// The resources.
        pub resources: Vec<Resource>,
        /// The next page's cursor, if there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub next_cursor: Option<Cursor>,
    }
}

schema_object! { cached
    /// The result of `resources/templates/list` (one page).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ListResourceTemplatesResult {
        /// The templates.
        pub resource_templates: Vec<ResourceTemplate>,
        /// The next page's cursor, if there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub next_cursor: Option<Cursor>,
    }
}

schema_object! {
    /// The parameters of `resources/read`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ReadResourceParams {
        /// The resource's URI.
        pub uri: String,
        /// 2026-07-28 era: the answers to a previous round's input requests.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub input_responses: Option<InputResponses>,
        /// 2026-07-28 era: the previous round's `requestState`, echoed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub request_state: Option<String>,
    }
}

schema_object! { cached
    /// The result of `resources/read`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ReadResourceResult {
        /// The contents (several for a resource with parts).
        pub contents: Vec<ResourceContents>,
    }
}

/// The parameters of a request about one resource (the 2025-11-25
/// `resources/subscribe` and `resources/unsubscribe`) and of
/// `notifications/resources/updated`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceParams {
    /// The resource's URI.
    pub uri: String,
    /// `_meta` (on the notification, 2026-07-28: the stream's
    /// [`SUBSCRIPTION_ID`](super::meta::SUBSCRIPTION_ID)).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ResourceParams {
    /// About `uri`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::ResourceParams;
    ///
    /// let params = ResourceParams::new("file:///srv/log.txt");
    /// assert_eq!(serde_json::to_value(&params)?, serde_json::json!({ "uri": "file:///srv/log.txt" }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            ..Self::default()
        }
    }
}
