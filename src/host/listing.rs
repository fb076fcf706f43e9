//! Listing a server's tools, prompts and resources, every page.

use std::future::Future;

use serde_json::{json, Value};

use super::namespace::Lists;
use crate::client::ServerSession;
use crate::client::{Client, Tool};
use crate::error::Error;

/// Why a paginated list stopped.
#[derive(Debug)]
pub(crate) enum PageError<E> {
    /// A page could not be fetched.
    Fetch(E),
    /// The server sent a cursor it had sent before (it would loop).
    RepeatedCursor(String),
}

/// Fetches every page of a `*/list` method with `fetch` (given the params
/// of each page: `None`, then `{"cursor": ...}`) and concatenates the `key`
/// arrays.
pub(crate) async fn all_pages<F, Fut, E>(
    key: &str,
    mut fetch: F,
) -> Result<Vec<Value>, PageError<E>>
where
    F: FnMut(Option<Value>) -> Fut,
    Fut: Future<Output = Result<Value, E>>,
{
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    loop {
        let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
        let mut page = fetch(params).await.map_err(PageError::Fetch)?;
        if let Some(list) = page.get_mut(key).and_then(Value::as_array_mut) {
            items.append(list);
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() => {
                if !seen.insert(next.to_owned()) {
                    return Err(PageError::RepeatedCursor(next.to_owned()));
                }
                cursor = Some(next.to_owned());
            }
            _ => return Ok(items),
        }
    }
}

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
