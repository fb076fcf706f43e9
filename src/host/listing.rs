//! Listing a server's tools, prompts and resources, every page.

use serde_json::Value;

use super::namespace::Lists;
use crate::client::ServerSession;
use crate::client::{Client, Tool};
use crate::error::Error;

/// Which lists to (re)fetch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Wanted {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
}

impl Wanted {
    pub(crate) const ALL: Wanted = Wanted {
        tools: true,
        prompts: true,
        resources: true,
    };

    pub(crate) fn any(&self) -> bool {
        self.tools || self.prompts || self.resources
    }

    /// Marks the list a `notifications/*/list_changed` is about.
    pub(crate) fn note(&mut self, method: &str) {
        match method {
            "notifications/tools/list_changed" => self.tools = true,
            "notifications/prompts/list_changed" => self.prompts = true,
            "notifications/resources/list_changed" => self.resources = true,
            _ => {}
        }
    }
}

/// What one round of listing brought: each list fetched, and the first
/// failure.
#[derive(Debug, Default)]
pub(crate) struct Fetched {
    pub(crate) tools: Option<Vec<Tool>>,
    pub(crate) prompts: Option<Vec<Value>>,
    pub(crate) resources: Option<Vec<Value>>,
    pub(crate) error: Option<String>,
}

impl Fetched {
    /// Keeps the first failure.
    fn failed(&mut self, what: &str, e: Error) {
        self.error.get_or_insert_with(|| format!("{what}: {e}"));
    }

    /// Replaces the lists that were fetched.
    pub(crate) fn apply(self, lists: &mut Lists) {
        if let Some(t) = self.tools {
            lists.tools = t;
        }
        if let Some(p) = self.prompts {
            lists.prompts = p;
        }
        if let Some(r) = self.resources {
            lists.resources = r;
        }
    }
}

/// Fetches the lists in `wanted` that the server declared capabilities for.
pub(crate) async fn fetch(client: Client, session: &ServerSession, wanted: Wanted) -> Fetched {
    let declares = |cap: &str| session.capabilities.get(cap).is_some_and(|c| !c.is_null());
    let mut out = Fetched::default();
    if wanted.tools && declares("tools") {
        match client.list_tools().await {
            Ok(t) => out.tools = Some(t),
            Err(e) => out.failed("tools/list", e),
        }
    }
    if wanted.prompts && declares("prompts") {
        match client.list_all("prompts/list", "prompts").await {
            Ok(p) => out.prompts = Some(p),
            Err(e) => out.failed("prompts/list", e),
        }
    }
    if wanted.resources && declares("resources") {
        match client.list_all("resources/list", "resources").await {
            Ok(r) => out.resources = Some(r),
            Err(e) => out.failed("resources/list", e),
        }
    }
    out
}
