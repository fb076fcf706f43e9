//! What the host keeps of each listed item: its own name and the JSON the
//! server sent, as text.
//!
//! A parsed JSON tree costs tens of times its bytes (a 7.4 MiB list of
//! 70,000 tools kept the host at +367 MiB); text costs its bytes. The
//! public views ([`HostTool`](super::HostTool) and the others) are parsed
//! from the text when asked for.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::protocol::Tool;

/// What kind of item a name belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ItemKind {
    /// A tool (`tools/list`).
    Tool,
    /// A prompt (`prompts/list`).
    Prompt,
    /// A resource (`resources/list`), by URI.
    Resource,
}

impl ItemKind {
    /// Every kind, in table order.
    pub(crate) const ALL: [ItemKind; 3] = [ItemKind::Tool, ItemKind::Prompt, ItemKind::Resource];

    pub(crate) fn index(self) -> usize {
        match self {
            ItemKind::Tool => 0,
            ItemKind::Prompt => 1,
            ItemKind::Resource => 2,
        }
    }
}

/// One listed tool, prompt or resource.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Item {
    /// Its own name on its server (a resource's URI).
    own: Box<str>,
    /// The item as the server listed it, as JSON text.
    raw: Box<str>,
}

impl Item {
    /// Its own name on its server (a resource's URI).
    #[inline]
    pub(crate) fn own(&self) -> &str {
        &self.own
    }

    /// The item as the server listed it, as JSON text.
    #[inline]
    pub(crate) fn raw(&self) -> &str {
        &self.raw
    }

    /// A tool, as text.
    pub(crate) fn tool(tool: &Tool) -> Option<Item> {
        Some(Item {
            own: tool.name.as_str().into(),
            raw: serde_json::to_string(tool).ok()?.into(),
        })
    }

    /// A prompt (`key` "name") or a resource (`key` "uri"); `None` without
    /// that string field.
    pub(crate) fn keyed(value: &Value, key: &str) -> Option<Item> {
        Some(Item {
            own: value.get(key)?.as_str()?.into(),
            raw: value.to_string().into(),
        })
    }

    /// The item parsed as `T`; `fallback` if the text does not parse as
    /// one (it was written from one, so only a changed type could do it).
    pub(crate) fn parse<T: DeserializeOwned>(&self, fallback: impl FnOnce() -> T) -> T {
        serde_json::from_str(&self.raw).unwrap_or_else(|_| fallback())
    }
}

/// One kind of a server's list, in the order the server gave it.
pub(crate) type List = Vec<Arc<Item>>;

/// What one server listed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lists {
    tools: List,
    prompts: List,
    resources: List,
}

impl Lists {
    pub(crate) fn get(&self, kind: ItemKind) -> &List {
        match kind {
            ItemKind::Tool => &self.tools,
            ItemKind::Prompt => &self.prompts,
            ItemKind::Resource => &self.resources,
        }
    }

    pub(crate) fn get_mut(&mut self, kind: ItemKind) -> &mut List {
        match kind {
            ItemKind::Tool => &mut self.tools,
            ItemKind::Prompt => &mut self.prompts,
            ItemKind::Resource => &mut self.resources,
        }
    }

    /// Tools, prompts and resources, counted.
    pub(crate) fn counts(&self) -> (usize, usize, usize) {
        (self.tools.len(), self.prompts.len(), self.resources.len())
    }
}

/// Whether two lists hold the same items in the same order (a re-listing
/// that changed nothing costs the namespace nothing).
pub(crate) fn same(a: &[Arc<Item>], b: &[Arc<Item>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}
