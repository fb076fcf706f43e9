//! Starting a session: the 2025-11-25 `initialize` handshake and the 2026-07-28
//! `server/discover`.

use serde::{Deserialize, Serialize};

use super::capabilities::{ClientCapabilities, ServerCapabilities};
use super::common::Implementation;

schema_object! {
    /// The parameters of the 2025-11-25 `initialize`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct InitializeParams {
        /// The newest version the client speaks.
        pub protocol_version: String,
        /// What the client supports.
        pub capabilities: ClientCapabilities,
        /// Who the client is.
        pub client_info: Implementation,
    }
}

schema_object! {
    /// The result of the 2025-11-25 `initialize`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct InitializeResult {
        /// The version the server chose.
        pub protocol_version: String,
        /// What the server supports.
        pub capabilities: ServerCapabilities,
        /// Who the server is.
        pub server_info: Implementation,
        /// Guidance for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub instructions: Option<String>,
    }
}

schema_object! { cached
    /// The result of the 2026-07-28 `server/discover`. The server's
    /// [`Implementation`] is in `_meta` under
    /// [`SERVER_INFO`](super::meta::SERVER_INFO) (see
    /// [`server_info`](Self::server_info)).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct DiscoverResult {
        /// The versions the server speaks.
        pub supported_versions: Vec<String>,
        /// What the server supports.
        pub capabilities: ServerCapabilities,
        /// Guidance for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub instructions: Option<String>,
    }
}

impl DiscoverResult {
    /// The server's name and version from `_meta`, if it gave a valid one.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::DiscoverResult;
    /// use serde_json::json;
    ///
    /// let result: DiscoverResult = serde_json::from_value(json!({
    ///     "supportedVersions": ["2026-07-28"],
    ///     "capabilities": {},
    ///     "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "time", "version": "1.0" } },
    /// }))?;
    /// assert_eq!(result.server_info().map(|i| i.name), Some("time".to_string()));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn server_info(&self) -> Option<Implementation> {
        let v = self.meta.as_ref()?.get(super::meta::SERVER_INFO)?;
        Implementation::deserialize(v).ok()
    }
}
