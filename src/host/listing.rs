//! Listing a server's tools, prompts and resources, every page, into the
//! lean records the host keeps (see [`items`](super::items)).

use std::sync::Arc;

use super::items::{Item, List};
use super::namespace::ItemKind;
use crate::client::Client;
use crate::client::ServerSession;
use crate::error::Error;

/// Which lists to (re)fetch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Wanted {
    tools: bool,
    prompts: bool,
    resources: bool,
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
    lists: Vec<(ItemKind, List)>,
    error: Option<String>,
}

impl Fetched {
    /// The lists fetched, and the first failure.
    pub(crate) fn into_parts(self) -> (Vec<(ItemKind, List)>, Option<String>) {
        (self.lists, self.error)
    }

    /// Keeps the list, or the first failure.
    fn keep(&mut self, kind: ItemKind, what: &str, list: Result<List, Error>) {
        match list {
            Ok(list) => self.lists.push((kind, list)),
            Err(e) => {
                self.error.get_or_insert_with(|| format!("{what}: {e}"));
            }
        }
    }
}

/// Fetches the lists in `wanted` that the server declared capabilities for.
pub(crate) async fn fetch(client: Client, session: &ServerSession, wanted: Wanted) -> Fetched {
    let declares = |cap: &str| session.capabilities.get(cap).is_some_and(|c| !c.is_null());
    let mut out = Fetched::default();
    if wanted.tools && declares("tools") {
        // Every tool becomes text while the trees still stand, then the
        // trees go at once: the texts sit together, and the trees' room is
        // one free block the allocator can give back (freeing each tree as
        // its text is made would scatter the texts over that room).
        let tools = client.list_tools().await.map(|tools| {
            tools
                .iter()
                .filter_map(|t| Item::tool(t).map(Arc::new))
                .collect()
        });
        out.keep(ItemKind::Tool, "tools/list", tools);
    }
    for (kind, on, method, key, field) in [
        (
            ItemKind::Prompt,
            wanted.prompts,
            "prompts/list",
            "prompts",
            "name",
        ),
        (
            ItemKind::Resource,
            wanted.resources,
            "resources/list",
            "resources",
            "uri",
        ),
    ] {
        if on && declares(key) {
            let list = client.list_all(method, key).await.map(|items| {
                items
                    .into_iter()
                    .filter_map(|v| Item::keyed(&v, field).map(Arc::new))
                    .collect()
            });
            out.keep(kind, method, list);
        }
    }
    out
}
