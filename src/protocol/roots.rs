//! Roots: the directories the client lets the server work in
//! (`roots/list`).

use serde::{Deserialize, Serialize};

schema_object! {
    /// A root: a `file://` URI the server may work in.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    pub struct Root {
        /// Its URI (`file://` in this revision).
        pub uri: String,
        /// Display name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub name: Option<String>,
    }
}

impl Root {
    /// A root with a URI and a display name.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Root;
    ///
    /// let root = Root::new("file:///srv/project", "project");
    /// let json = serde_json::to_value(&root)?;
    /// assert_eq!(json, serde_json::json!({ "uri": "file:///srv/project", "name": "project" }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: Some(name.into()),
            ..Self::default()
        }
    }
}

schema_object! {
    /// The result of `roots/list` (the client's answer).
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    pub struct ListRootsResult {
        /// The roots.
        pub roots: Vec<Root>,
    }
}
