//! One namespace over many servers: `server__tool` names, kept within the
//! length hosts allow, and the collisions reported.
//!
//! A namespaced name is the server's name, the separator and the item's
//! name, each name with every character outside `A-Z a-z 0-9 _ -` replaced
//! by `_` (the characters model APIs accept in a tool name; the separator
//! is kept as configured). A name longer than the limit is cut and ends
//! with `_` and 8 hex digits of a hash of the whole name. Two items that
//! end with the same name collide: the first (servers in name order, items
//! in the order the server listed them) keeps it, the other is left out of
//! the namespace and reported as a [`Collision`].
//!
//! Resources are addressed by URI, which names them across servers
//! already: they are not renamed, and two servers listing the same URI
//! collide.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::client::Tool;

/// Hex digits of the hash that ends a shortened name.
const HASH_DIGITS: usize = 8;

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

/// One server's item, by its own name (or URI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemRef {
    /// The server's name in the host.
    pub server: String,
    /// The item's name as the server gave it (a URI for a resource).
    pub name: String,
}

/// Two items that would have had the same name in the namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// Tool, prompt or resource.
    pub kind: ItemKind,
    /// The contested name (a URI for a resource).
    pub name: String,
    /// The item that has the name.
    pub kept: ItemRef,
    /// The item left out of the namespace.
    pub dropped: ItemRef,
}

impl std::fmt::Display for Collision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} name `{}`: {}'s `{}` keeps it, {}'s `{}` is left out",
            self.kind,
            self.name,
            self.kept.server,
            self.kept.name,
            self.dropped.server,
            self.dropped.name
        )
    }
}

/// A tool in the namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTool {
    /// The namespaced name: what [`Host::call_tool`](super::Host::call_tool) takes.
    pub name: String,
    /// The server that serves it.
    pub server: String,
    /// The tool as the server listed it (with its own name).
    pub tool: Tool,
}

/// A prompt in the namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct HostPrompt {
    /// The namespaced name: what [`Host::get_prompt`](super::Host::get_prompt) takes.
    pub name: String,
    /// The server that serves it.
    pub server: String,
    /// The prompt as the server listed it (with its own name).
    pub prompt: Value,
}

/// A resource of one of the servers.
#[derive(Debug, Clone, PartialEq)]
pub struct HostResource {
    /// Its URI: what [`Host::read_resource`](super::Host::read_resource) takes.
    pub uri: String,
    /// The server that serves it.
    pub server: String,
    /// The resource as the server listed it.
    pub resource: Value,
}

/// What one server listed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lists {
    pub(crate) tools: Vec<Tool>,
    pub(crate) prompts: Vec<Value>,
    pub(crate) resources: Vec<Value>,
}

/// How names are joined.
#[derive(Debug, Clone)]
pub(crate) struct Naming {
    pub(crate) separator: String,
    pub(crate) max_len: usize,
}

impl Naming {
    /// The namespaced name of `server`'s item `item`.
    pub(crate) fn join(&self, server: &str, item: &str) -> String {
        let full = format!("{}{}{}", sanitize(server), self.separator, sanitize(item));
        self.shorten(full)
    }

    /// What every namespaced name of `server` starts with.
    pub(crate) fn prefix(&self, server: &str) -> String {
        format!("{}{}", sanitize(server), self.separator)
    }

    fn shorten(&self, full: String) -> String {
        if full.len() <= self.max_len {
            return full;
        }
        let keep = self.max_len.saturating_sub(HASH_DIGITS + 1);
        let mut cut = String::with_capacity(self.max_len);
        for c in full.chars() {
            if cut.len() + c.len_utf8() > keep {
                break;
            }
            cut.push(c);
        }
        // FNV-1a: stable across runs and builds, which a name must be.
        let hash = full.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        format!("{cut}_{:0width$x}", hash as u32, width = HASH_DIGITS)
    }
}

/// Every character outside `A-Z a-z 0-9 _ -` becomes `_`.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The namespace built from every server's lists.
#[derive(Debug, Default)]
pub(crate) struct Namespace {
    pub(crate) tools: BTreeMap<String, HostTool>,
    pub(crate) prompts: BTreeMap<String, HostPrompt>,
    pub(crate) resources: BTreeMap<String, HostResource>,
    pub(crate) collisions: Vec<Collision>,
}

impl Namespace {
    /// Joins the lists of `servers` (in the order given).
    pub(crate) fn build<'a>(
        naming: &Naming,
        servers: impl IntoIterator<Item = (&'a str, &'a Lists)>,
    ) -> Namespace {
        let mut ns = Namespace::default();
        for (server, lists) in servers {
            for tool in &lists.tools {
                let item = HostTool {
                    name: naming.join(server, &tool.name),
                    server: server.to_owned(),
                    tool: tool.clone(),
                };
                insert(&mut ns.tools, &mut ns.collisions, ItemKind::Tool, item);
            }
            for prompt in &lists.prompts {
                let Some(own) = prompt.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let item = HostPrompt {
                    name: naming.join(server, own),
                    server: server.to_owned(),
                    prompt: prompt.clone(),
                };
                insert(&mut ns.prompts, &mut ns.collisions, ItemKind::Prompt, item);
            }
            for resource in &lists.resources {
                let Some(uri) = resource.get("uri").and_then(Value::as_str) else {
                    continue;
                };
                let item = HostResource {
                    uri: uri.to_owned(),
                    server: server.to_owned(),
                    resource: resource.clone(),
                };
                insert(
                    &mut ns.resources,
                    &mut ns.collisions,
                    ItemKind::Resource,
                    item,
                );
            }
        }
        ns
    }
}

/// An item of the namespace: its name there, its server, its own name.
pub(crate) trait Named {
    fn key(&self) -> &str;
    fn item(&self) -> ItemRef;
}

impl Named for HostTool {
    fn key(&self) -> &str {
        &self.name
    }
    fn item(&self) -> ItemRef {
        ItemRef {
            server: self.server.clone(),
            name: self.tool.name.clone(),
        }
    }
}

impl Named for HostPrompt {
    fn key(&self) -> &str {
        &self.name
    }
    fn item(&self) -> ItemRef {
        ItemRef {
            server: self.server.clone(),
            name: own_name(&self.prompt, "name"),
        }
    }
}

impl Named for HostResource {
    fn key(&self) -> &str {
        &self.uri
    }
    fn item(&self) -> ItemRef {
        ItemRef {
            server: self.server.clone(),
            name: self.uri.clone(),
        }
    }
}

/// The string field `key` of a listed item ("" if absent).
pub(crate) fn own_name(item: &Value, key: &str) -> String {
    item.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn insert<T: Named>(
    map: &mut BTreeMap<String, T>,
    collisions: &mut Vec<Collision>,
    kind: ItemKind,
    item: T,
) {
    match map.get(item.key()) {
        Some(kept) => collisions.push(Collision {
            kind,
            name: item.key().to_owned(),
            kept: kept.item(),
            dropped: item.item(),
        }),
        None => {
            map.insert(item.key().to_owned(), item);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn naming() -> Naming {
        Naming {
            separator: "__".into(),
            max_len: 64,
        }
    }

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({ "name": name, "inputSchema": {"type": "object"} })).unwrap()
    }

    fn lists(tools: &[&str]) -> Lists {
        Lists {
            tools: tools.iter().map(|t| tool(t)).collect(),
            ..Lists::default()
        }
    }

    #[test]
    fn names_join_server_and_item_with_the_separator() {
        assert_eq!(
            naming().join("time", "get_current_time"),
            "time__get_current_time"
        );
        assert_eq!(naming().join("my.server", "do it!"), "my_server__do_it_");
        let dotted = Naming {
            separator: ".".into(),
            max_len: 64,
        };
        assert_eq!(dotted.join("a", "b.c"), "a.b_c");
    }

    #[test]
    fn long_names_are_cut_to_the_limit_and_stay_distinct() {
        let n = naming();
        let long_a = n.join("server-with-a-rather-long-name", &"a".repeat(60));
        let long_b = n.join(
            "server-with-a-rather-long-name",
            &format!("{}b", "a".repeat(59)),
        );
        assert_eq!(long_a.len(), 64, "{long_a}");
        assert_eq!(long_b.len(), 64, "{long_b}");
        assert_ne!(long_a, long_b);
        assert!(long_a.starts_with("server-with-a-rather-long-name__aaa"));
        // Stable: the same input, the same name.
        assert_eq!(
            long_a,
            n.join("server-with-a-rather-long-name", &"a".repeat(60))
        );
        let exact = format!("s__{}", "x".repeat(61));
        assert_eq!(n.join("s", &"x".repeat(61)), exact);
    }

    #[test]
    fn collisions_keep_the_first_and_report_the_other() {
        let a = lists(&["b__c", "echo"]);
        let ab = lists(&["c"]);
        let dotted = lists(&["echo"]);
        let ns = Namespace::build(
            &naming(),
            [("a", &a), ("a__b", &ab), ("a.", &dotted), ("a_", &dotted)],
        );
        assert_eq!(
            ns.tools.keys().collect::<Vec<_>>(),
            ["a___echo", "a__b__c", "a__echo"]
        );
        assert_eq!(ns.tools["a__b__c"].server, "a");
        assert_eq!(ns.collisions.len(), 2, "{:?}", ns.collisions);
        let c = &ns.collisions[0];
        assert_eq!(c.kind, ItemKind::Tool);
        assert_eq!(c.name, "a__b__c");
        assert_eq!(
            (c.kept.server.as_str(), c.kept.name.as_str()),
            ("a", "b__c")
        );
        assert_eq!(
            (c.dropped.server.as_str(), c.dropped.name.as_str()),
            ("a__b", "c")
        );
        assert_eq!(ns.collisions[1].dropped.server, "a_");
    }

    #[test]
    fn prompts_are_namespaced_and_resources_keep_their_uri() {
        let one = Lists {
            prompts: vec![json!({"name": "greet"})],
            resources: vec![json!({"uri": "file:///a", "name": "a"})],
            ..Lists::default()
        };
        let two = Lists {
            prompts: vec![json!({"name": "greet"}), json!({"no": "name"})],
            resources: vec![json!({"uri": "file:///a"}), json!({"uri": "file:///b"})],
            ..Lists::default()
        };
        let ns = Namespace::build(&naming(), [("one", &one), ("two", &two)]);
        assert_eq!(
            ns.prompts.keys().collect::<Vec<_>>(),
            ["one__greet", "two__greet"]
        );
        assert_eq!(
            ns.resources.keys().collect::<Vec<_>>(),
            ["file:///a", "file:///b"]
        );
        assert_eq!(ns.resources["file:///a"].server, "one");
        assert_eq!(ns.collisions.len(), 1);
        assert_eq!(ns.collisions[0].kind, ItemKind::Resource);
        assert_eq!(ns.collisions[0].dropped.server, "two");
    }
}
