//! Content blocks (tool results, prompt messages, sampling) and resource
//! contents.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::Annotations;
use super::resources::Resource;

schema_object! {
    /// Text.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    pub struct TextContent {
        /// The text.
        pub text: String,
        /// Usage hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub annotations: Option<Annotations>,
    }
}

impl TextContent {
    /// A text block.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{ContentBlock, TextContent};
    ///
    /// let block = ContentBlock::Text(TextContent::new("hello"));
    /// let json = serde_json::to_value(&block)?;
    /// assert_eq!(json, serde_json::json!({ "type": "text", "text": "hello" }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
}

schema_object! {
    /// Base64-encoded media: an image or audio clip.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct MediaContent {
        /// The base64-encoded data.
        pub data: String,
        /// Its MIME type (`image/png`, `audio/wav`, ...).
        pub mime_type: String,
        /// Usage hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub annotations: Option<Annotations>,
    }
}

impl MediaContent {
    /// Base64 `data` of type `mime_type`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{ContentBlock, MediaContent};
    ///
    /// let clip = ContentBlock::Audio(MediaContent::new("UklGRg==", "audio/wav"));
    /// assert_eq!(clip.kind(), "audio");
    /// assert_eq!(serde_json::to_value(&clip)?["mimeType"], "audio/wav");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Self::default()
        }
    }
}

schema_object! {
    /// A resource's contents inside a message.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct EmbeddedResource {
        /// The contents.
        pub resource: ResourceContents,
        /// Usage hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub annotations: Option<Annotations>,
    }
}

tagged_enum! {
    /// A content block of a tool result or a prompt message.
    ContentBlock {
        /// `"text"`.
        Text(TextContent) = "text",
        /// `"image"`.
        Image(MediaContent) = "image",
        /// `"audio"`.
        Audio(MediaContent) = "audio",
        /// `"resource_link"`: a resource the client may read.
        ResourceLink(Resource) = "resource_link",
        /// `"resource"`: a resource's contents, embedded.
        Resource(EmbeddedResource) = "resource",
    }
}

impl ContentBlock {
    /// A text block.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::ContentBlock;
    ///
    /// let block = ContentBlock::text("42");
    /// assert_eq!((block.kind(), block.as_text()), ("text", Some("42")));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// An image block (base64 `data`).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::ContentBlock;
    ///
    /// let png = ContentBlock::image("iVBORw0KGgo=", "image/png");
    /// assert_eq!(png.kind(), "image");
    /// assert_eq!(png.as_text(), None);
    /// ```
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(MediaContent::new(data, mime_type))
    }

    /// The text, if this is a text block.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{CallToolResult, ContentBlock};
    ///
    /// let blocks = vec![ContentBlock::text("a"), ContentBlock::image("AA==", "image/png")];
    /// let result = CallToolResult::content(blocks);
    /// let texts: Vec<&str> = result.content.iter().filter_map(ContentBlock::as_text).collect();
    /// assert_eq!(texts, ["a"]);
    /// ```
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

schema_object! {
    /// A tool call the model asks for (sampling with tools).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ToolUseContent {
        /// The call's id (its result names it).
        pub id: String,
        /// The tool.
        pub name: String,
        /// The arguments.
        pub input: Value,
    }
}

schema_object! {
    /// The result of a tool call, given back to the model (sampling with
    /// tools).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ToolResultContent {
        /// The [`ToolUseContent::id`] answered.
        pub tool_use_id: String,
        /// The result's content.
        pub content: Vec<ContentBlock>,
        /// Structured output.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub structured_content: Option<Value>,
        /// Whether the call failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub is_error: Option<bool>,
    }
}

tagged_enum! {
    /// A content block of a sampling message.
    SamplingContent {
        /// `"text"`.
        Text(TextContent) = "text",
        /// `"image"`.
        Image(MediaContent) = "image",
        /// `"audio"`.
        Audio(MediaContent) = "audio",
        /// `"tool_use"`: the model calls a tool.
        ToolUse(ToolUseContent) = "tool_use",
        /// `"tool_result"`: a tool call's result.
        ToolResult(ToolResultContent) = "tool_result",
    }
}

schema_object! {
    /// A text resource's contents.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct TextResourceContents {
        /// The resource's URI.
        pub uri: String,
        /// The text.
        pub text: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub mime_type: Option<String>,
    }
}

schema_object! {
    /// A binary resource's contents.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct BlobResourceContents {
        /// The resource's URI.
        pub uri: String,
        /// The base64-encoded bytes.
        pub blob: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub mime_type: Option<String>,
    }
}

/// A resource's contents: text, binary, or a shape this library does not
/// know (kept as sent). Told apart by the `text` or `blob` member.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceContents {
    /// Text (`text`).
    Text(TextResourceContents),
    /// Binary (`blob`, base64).
    Blob(BlobResourceContents),
    /// Neither, kept as sent.
    Unknown(Value),
}

impl ResourceContents {
    /// Text contents.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::ResourceContents;
    ///
    /// let contents = ResourceContents::text("file:///srv/notes.md", "# Notes");
    /// let json = serde_json::to_value(&contents)?;
    /// assert_eq!(json, serde_json::json!({ "uri": "file:///srv/notes.md", "text": "# Notes" }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents::Text(TextResourceContents {
            uri: uri.into(),
            text: text.into(),
            ..Default::default()
        })
    }

    /// The resource's URI.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::ResourceContents;
    /// use serde_json::json;
    ///
    /// let blob: ResourceContents = serde_json::from_value(json!({ "uri": "file:///a.png", "blob": "AA==" }))?;
    /// assert_eq!(blob.uri(), Some("file:///a.png"));
    /// let odd: ResourceContents = serde_json::from_value(json!({ "uri": "x:1", "data": 1 }))?;
    /// assert_eq!(odd.uri(), Some("x:1")); // kept as sent, still read
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn uri(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => Some(&t.uri),
            ResourceContents::Blob(b) => Some(&b.uri),
            ResourceContents::Unknown(v) => v.get("uri").and_then(Value::as_str),
        }
    }

    /// The text, for text contents.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::ResourceContents;
    /// use serde_json::json;
    ///
    /// assert_eq!(ResourceContents::text("file:///a.md", "hi").as_text(), Some("hi"));
    /// let blob: ResourceContents = serde_json::from_value(json!({ "uri": "file:///a.png", "blob": "AA==" }))?;
    /// assert_eq!(blob.as_text(), None);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl Serialize for ResourceContents {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ResourceContents::Text(t) => t.serialize(s),
            ResourceContents::Blob(b) => b.serialize(s),
            ResourceContents::Unknown(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let v = Value::deserialize(d)?;
        if v.get("text").is_some() {
            serde_json::from_value(v)
                .map(ResourceContents::Text)
                .map_err(D::Error::custom)
        } else if v.get("blob").is_some() {
            serde_json::from_value(v)
                .map(ResourceContents::Blob)
                .map_err(D::Error::custom)
        } else {
            Ok(ResourceContents::Unknown(v))
        }
    }
}
