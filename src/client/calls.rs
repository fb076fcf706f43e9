//! Typed helpers for the common MCP calls. Each is a thin layer over
//! [`Client::request_with`]; the raw request is always available.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{Client, RequestOptions};
use crate::error::Error;

/// One tool, as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The tool's name.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of its arguments.
    #[serde(default)]
    pub input_schema: Value,
    /// Every other field, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Content blocks (text, image, resource, ...), as sent.
    #[serde(default)]
    pub content: Vec<Value>,
    /// Whether the tool reported an error.
    #[serde(default)]
    pub is_error: bool,
    /// Structured output, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Every other field, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    /// The text of all text content blocks, joined with newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Client {
    /// Lists every tool, following `nextCursor` through all pages.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        let pages = self.list_all("tools/list", "tools").await?;
        pages
            .into_iter()
            .map(|t| {
                serde_json::from_value(t).map_err(|e| Error::Codec {
                    method: "tools/list".into(),
                    problem: format!("bad tool: {e}"),
                })
            })
            .collect()
    }

    /// Calls a tool. A tool that fails reports `is_error: true` in an `Ok`;
    /// `Err` is a protocol or transport failure.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        opts: RequestOptions,
    ) -> Result<CallToolResult, Error> {
        let params = json!({ "name": name, "arguments": arguments });
        self.request_as("tools/call", Some(params), opts).await
    }

    /// Lists every resource (all pages), as sent.
    pub async fn list_resources(&self) -> Result<Vec<Value>, Error> {
        self.list_all("resources/list", "resources").await
    }

    /// Reads a resource; returns the result as sent (`contents`).
    pub async fn read_resource(&self, uri: &str) -> Result<Value, Error> {
        self.request("resources/read", Some(json!({ "uri": uri })))
            .await
    }

    /// Lists every prompt (all pages), as sent.
    pub async fn list_prompts(&self) -> Result<Vec<Value>, Error> {
        self.list_all("prompts/list", "prompts").await
    }

    /// Gets a prompt with arguments; returns the result as sent.
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<Value, Error> {
        self.request(
            "prompts/get",
            Some(json!({ "name": name, "arguments": arguments })),
        )
        .await
    }

    /// Asks for completions of an argument; returns the result as sent.
    pub async fn complete(&self, reference: Value, argument: Value) -> Result<Value, Error> {
        self.request(
            "completion/complete",
            Some(json!({ "ref": reference, "argument": argument })),
        )
        .await
    }

    /// Follows `nextCursor` and concatenates the `key` arrays of every page.
    /// Stops with an error if the server repeats a cursor (a loop).
    pub async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, Error> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        loop {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let mut page = self.request(method, params).await?;
            if let Some(items) = page.get_mut(key).and_then(Value::as_array_mut) {
                out.append(items);
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => {
                    if !seen.insert(next.to_owned()) {
                        return Err(Error::Codec {
                            method: method.into(),
                            problem: format!("server repeated cursor {next:?}"),
                        });
                    }
                    cursor = Some(next.to_owned());
                }
                _ => return Ok(out),
            }
        }
    }
}
