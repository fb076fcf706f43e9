//! Tools: `tools/list` and `tools/call`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{Cursor, Extra, Icon, ResultType};
use super::content::ContentBlock;
use super::multi_round::InputResponses;
use super::tasks::TaskMetadata;

/// Hints about a tool's behaviour. Hints only: never trust them from an
/// untrusted server.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// It does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// It may destroy (default true; meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call has no further effect (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// It reaches an open world of external entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// 2025-11-25 (experimental): how a tool runs as a task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// `"forbidden"`, `"optional"` or `"required"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<String>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

schema_object! {
    /// One tool, as listed by `tools/list`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Tool {
        /// The tool's name.
        pub name: String,
        /// Display name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub title: Option<String>,
        /// What it does (a hint to the model).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub description: Option<String>,
        /// JSON Schema of its arguments (an object schema).
        #[serde(default)]
        pub input_schema: Value,
        /// JSON Schema of its `structuredContent`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub output_schema: Option<Value>,
        /// Behaviour hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub annotations: Option<ToolAnnotations>,
        /// Icons to show.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub icons: Option<Vec<Icon>>,
        /// 2025-11-25: task support.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub execution: Option<ToolExecution>,
    }
}

impl Tool {
    /// The name to show: `title`, then `annotations.title`, then `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::Tool;
    ///
    /// let mut tool = Tool { name: "get_weather".into(), ..Tool::default() };
    /// assert_eq!(tool.display_name(), "get_weather");
    /// tool.title = Some("Weather".into());
    /// assert_eq!(tool.display_name(), "Weather");
    /// ```
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref()?.title.as_deref())
            .unwrap_or(&self.name)
    }
}

schema_object! { cached
    /// The result of `tools/list` (one page).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ListToolsResult {
        /// The tools.
        pub tools: Vec<Tool>,
        /// The next page's cursor, if there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub next_cursor: Option<Cursor>,
    }
}

schema_object! {
    /// The parameters of `tools/call`.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct CallToolParams {
        /// The tool.
        pub name: String,
        /// Its arguments (a JSON object).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub arguments: Option<Map<String, Value>>,
        /// 2025-11-25: run it as a task.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub task: Option<TaskMetadata>,
        /// 2026-07-28 era: the answers to a previous round's input requests.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub input_responses: Option<InputResponses>,
        /// 2026-07-28 era: the previous round's `requestState`, echoed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub request_state: Option<String>,
    }
}

schema_object! {
    /// The result of `tools/call`. A tool that failed says so with
    /// `isError: true` in a result (the model sees it); a JSON-RPC error is a
    /// protocol failure.
    ///
    /// ```
    /// use conduit_mcp::protocol::CallToolResult;
    /// use serde_json::json;
    ///
    /// let ok = CallToolResult::text("42");
    /// let failed = CallToolResult::error("the city is unknown");
    /// let structured = CallToolResult::structured(json!({ "sum": 42 }));
    /// assert!(failed.is_error() && !ok.is_error());
    /// assert_eq!(structured.joined_text(), r#"{"sum":42}"#);
    /// ```
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct CallToolResult {
        /// Content blocks (text, image, audio, resource links and resources).
        #[serde(default)]
        pub content: Vec<ContentBlock>,
        /// Structured output (matching the tool's `outputSchema`, if it has
        /// one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub structured_content: Option<Value>,
        /// Whether the tool reported an error (absent means no); see
        /// [`is_error`](Self::is_error).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub is_error: Option<bool>,
        /// 2026-07-28 era: `"complete"`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub result_type: Option<ResultType>,
    }
}

impl CallToolResult {
    /// A result with these content blocks.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{CallToolResult, ContentBlock};
    ///
    /// let result = CallToolResult::content(vec![
    ///     ContentBlock::text("A chart:"),
    ///     ContentBlock::image("iVBORw0KGgo=", "image/png"),
    /// ]);
    /// assert_eq!(result.content.len(), 2);
    /// assert!(!result.is_error());
    /// ```
    pub fn content(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A successful result with one text block.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::CallToolResult;
    ///
    /// let result = CallToolResult::text("21.5 °C");
    /// let json = serde_json::to_value(&result)?;
    /// assert_eq!(json, serde_json::json!({ "content": [{ "type": "text", "text": "21.5 °C" }] }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self::content(vec![ContentBlock::text(text)])
    }

    /// A tool error (`isError: true`) with one text block saying what went
    /// wrong. The model sees it and may try again.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::CallToolResult;
    ///
    /// let result = CallToolResult::error("unknown city: Atlantis");
    /// assert!(result.is_error());
    /// assert_eq!(serde_json::to_value(&result)?["isError"], true);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            is_error: Some(true),
            ..Self::text(message)
        }
    }

    /// A successful result with structured content, and its JSON text as a
    /// text block (for clients that do not read `structuredContent`, as
    /// the specification recommends).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::CallToolResult;
    /// use serde_json::json;
    ///
    /// let result = CallToolResult::structured(json!({ "celsius": 21.5 }));
    /// assert_eq!(result.structured_content, Some(json!({ "celsius": 21.5 })));
    /// assert_eq!(result.joined_text(), r#"{"celsius":21.5}"#);
    /// ```
    pub fn structured(value: Value) -> Self {
        Self {
            structured_content: Some(value.clone()),
            ..Self::text(value.to_string())
        }
    }

    /// Whether the tool reported an error.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::CallToolResult;
    ///
    /// assert!(CallToolResult::error("no such file").is_error());
    /// let result: CallToolResult = serde_json::from_str(r#"{"content": []}"#)?; // absent: no error
    /// assert!(!result.is_error());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// The text of all text blocks, joined with newlines.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{CallToolResult, ContentBlock};
    ///
    /// let result = CallToolResult::content(vec![
    ///     ContentBlock::text("line 1"),
    ///     ContentBlock::image("AA==", "image/png"),
    ///     ContentBlock::text("line 2"),
    /// ]);
    /// assert_eq!(result.joined_text(), "line 1\nline 2");
    /// ```
    pub fn joined_text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}
