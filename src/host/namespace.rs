//! One namespace over many servers: `server__tool` names, kept within the
//! length hosts allow, each name held by one server, and the collisions
//! reported.
//!
//! A namespaced name is the server's name, the separator and the item's
//! name, each name with every character outside `A-Z a-z 0-9 _ -` replaced
//! by `_` (the characters model APIs accept in a tool name; the separator
//! is kept as configured). A name longer than the limit is cut and ends
//! with `_` and 8 hex digits of a hash of the whole name. A server name
//! that could make one name mean two servers is refused (it holds the
//! separator, or another server's name sanitises to it: see
//! [`HostConfig::validate`](super::HostConfig::validate)), so a tool or a
//! prompt always goes to the server its name starts with.
//!
//! Resources are addressed by URI, which any server may list. A name (a
//! URI, or two items of one server that end with the same name) belongs to
//! the first item that claimed it, for as long as its server lists it: a
//! later claimant is left out and reported as a [`Collision`], and it
//! never takes the name over. When the holder stops listing it (or leaves
//! the host), the name passes to the next claimant in the order they came.
//!
//! Each listing changes the namespace for its own server only.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

pub use super::items::ItemKind;

use super::items::Item;
use super::naming::Naming;
use crate::protocol::Tool;

/// One server's item, by its own name (or URI).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ItemRef {
    /// The server's name in the host.
    pub server: String,
    /// The item's name as the server gave it (a URI for a resource).
    pub name: String,
}

/// Two items that would have had the same name in the namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Collision {
    /// Tool, prompt or resource.
    pub kind: ItemKind,
    /// The contested name (a URI for a resource).
    pub name: String,
    /// The item that has the name: the first that claimed it.
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

/// An item of the namespace as its server listed it: who serves it, its
/// own name there, and its JSON text unparsed (members this crate does not
/// model included). Cheap to clone: it shares the host's copy.
#[derive(Debug, Clone)]
pub struct Listed {
    server: Arc<str>,
    item: Arc<Item>,
}

impl Listed {
    /// The item.
    #[inline]
    pub(crate) fn item(&self) -> &Arc<Item> {
        &self.item
    }

    /// The server that serves it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Its own name on that server (a resource's URI).
    pub fn own_name(&self) -> &str {
        self.item.own()
    }

    /// The item as the server listed it, as JSON text.
    pub fn json(&self) -> &str {
        self.item.raw()
    }

    fn item_ref(&self) -> ItemRef {
        ItemRef {
            server: self.server.to_string(),
            name: self.item.own().to_string(),
        }
    }

    /// The item parsed, under its namespaced `name`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::host::ItemKind;
    ///
    /// # fn example(host: conduit_mcp::host::Host) {
    /// let found = host.find_listed(ItemKind::Tool, |l| l.server() == "time");
    /// if let Some((name, listed)) = found {
    ///     let tool = listed.tool(&name); // parsed: only this one
    ///     println!("{}: {:?}", tool.name, tool.tool.description);
    /// }
    /// # }
    /// ```
    pub fn tool(&self, name: &str) -> HostTool {
        HostTool {
            name: name.to_owned(),
            server: self.server.to_string(),
            tool: self.item.parse(|| Tool {
                name: self.item.own().to_string(),
                ..Tool::default()
            }),
        }
    }

    /// The item parsed, under its namespaced `name`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::host::ItemKind;
    ///
    /// # fn example(host: conduit_mcp::host::Host) {
    /// let found = host.find_listed(ItemKind::Prompt, |l| l.own_name() == "commit_message");
    /// if let Some((name, listed)) = found {
    ///     println!("{}", listed.prompt(&name).prompt["arguments"]);
    /// }
    /// # }
    /// ```
    pub fn prompt(&self, name: &str) -> HostPrompt {
        HostPrompt {
            name: name.to_owned(),
            server: self.server.to_string(),
            prompt: self.item.parse(|| Value::Null),
        }
    }

    /// The item parsed, under its namespaced `name`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::host::ItemKind;
    ///
    /// # fn example(host: conduit_mcp::host::Host) {
    /// for (uri, listed) in host.listed(ItemKind::Resource) {
    ///     let resource = listed.resource(&uri);
    ///     println!("{} ({})", resource.uri, resource.resource["mimeType"]);
    /// }
    /// # }
    /// ```
    pub fn resource(&self, uri: &str) -> HostResource {
        HostResource {
            uri: uri.to_owned(),
            server: self.server.to_string(),
            resource: self.item.parse(|| Value::Null),
        }
    }
}

/// The namespace: for each kind, every name and who holds it.
#[derive(Debug, Default)]
pub(crate) struct Namespace {
    tables: [BTreeMap<String, Listed>; 3],
    collisions: Vec<Collision>,
}

/// Another server's current list of one kind, by its name.
pub(crate) type ListsOf<'a> = &'a dyn Fn(&str) -> Option<&'a [Arc<Item>]>;

/// A server's current items of one kind, by their own names.
struct ItemsOf<'a> {
    server: Arc<str>,
    by_name: HashMap<&'a str, &'a Arc<Item>>,
}

impl<'a> ItemsOf<'a> {
    fn new(server: &str, lists_of: ListsOf<'a>) -> Self {
        let by_name = lists_of(server)
            .unwrap_or_default()
            .iter()
            .map(|i| (i.own(), i))
            .collect();
        ItemsOf {
            server: Arc::from(server),
            by_name,
        }
    }
}

impl Namespace {
    /// The names of `kind` and their holders.
    pub(crate) fn table(&self, kind: ItemKind) -> &BTreeMap<String, Listed> {
        &self.tables[kind.index()]
    }

    pub(crate) fn collisions(&self) -> &[Collision] {
        &self.collisions
    }

    /// `server`'s `kind` items were `old` and are now `new`: the names it
    /// held and still lists stay its own, the ones it dropped pass to the
    /// next claimant, and a name another server holds is left out (see the
    /// module). `lists_of` gives the other servers' current lists. Returns
    /// the collisions that are new. Costs the size of the two lists and of
    /// the collisions, not of the namespace.
    pub(crate) fn update(
        &mut self,
        naming: &Naming,
        kind: ItemKind,
        server: &Arc<str>,
        old: &[Arc<Item>],
        new: &[Arc<Item>],
        lists_of: ListsOf<'_>,
    ) -> Vec<Collision> {
        let key = |server: &str, item: &Item| match kind {
            ItemKind::Resource => item.own().to_string(),
            _ => naming.join(server, item.own()),
        };
        let table = &mut self.tables[kind.index()];
        for item in old {
            let k = key(server, item);
            if table.get(&k).is_some_and(|h| h.server == *server) {
                table.remove(&k);
            }
        }
        let (about, rest): (Vec<Collision>, Vec<Collision>) = std::mem::take(&mut self.collisions)
            .into_iter()
            .partition(|c| {
                c.kind == kind && (*c.kept.server == **server || *c.dropped.server == **server)
            });
        self.collisions = rest;
        let first_new = self.collisions.len();
        for item in new {
            self.claim(kind, key(server, item), server, item);
        }
        // Claimants that were left out for `server`: they claim again, in
        // the order they came (a name `server` no longer lists is theirs).
        let mut others: HashMap<&str, ItemsOf<'_>> = HashMap::new();
        for c in &about {
            let claimant = &c.dropped;
            if *c.kept.server != **server || *claimant.server == **server {
                continue;
            }
            let of = others
                .entry(claimant.server.as_str())
                .or_insert_with(|| ItemsOf::new(&claimant.server, lists_of));
            if let Some(item) = of.by_name.get(claimant.name.as_str()).copied() {
                let holder = of.server.clone();
                self.claim(kind, key(&holder, item), &holder, item);
            }
        }
        let before: HashSet<&Collision> = about.iter().collect();
        self.collisions[first_new..]
            .iter()
            .filter(|c| !before.contains(c))
            .cloned()
            .collect()
    }

    /// `server`'s `item` claims `name`: it gets it if it is free, or is
    /// left out.
    fn claim(&mut self, kind: ItemKind, name: String, server: &Arc<str>, item: &Arc<Item>) {
        let table = &mut self.tables[kind.index()];
        match table.get(&name) {
            Some(holder) => self.collisions.push(Collision {
                kind,
                kept: holder.item_ref(),
                dropped: ItemRef {
                    server: server.to_string(),
                    name: item.own().to_string(),
                },
                name,
            }),
            None => {
                table.insert(
                    name,
                    Listed {
                        server: server.clone(),
                        item: item.clone(),
                    },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn items(kind: ItemKind, names: &[&str]) -> Vec<Arc<Item>> {
        let key = if kind == ItemKind::Resource {
            "uri"
        } else {
            "name"
        };
        names
            .iter()
            .map(|n| Arc::new(Item::keyed(&json!({ key: n }), key).unwrap()))
            .collect()
    }

    /// A namespace and the servers' lists, updated together.
    #[derive(Default)]
    struct Fixture {
        ns: Namespace,
        lists: BTreeMap<String, Vec<Arc<Item>>>,
    }

    impl Fixture {
        fn list(&mut self, kind: ItemKind, server: &str, names: &[&str]) -> Vec<Collision> {
            let new = items(kind, names);
            let old = self.lists.remove(server).unwrap_or_default();
            let lists = &self.lists;
            let lists_of = |s: &str| lists.get(s).map(Vec::as_slice);
            let c = self.ns.update(
                &Naming::default(),
                kind,
                &Arc::from(server),
                &old,
                &new,
                &lists_of,
            );
            self.lists.insert(server.to_owned(), new);
            c
        }

        fn holder(&self, kind: ItemKind, name: &str) -> Option<&str> {
            self.ns.table(kind).get(name).map(|h| &*h.server)
        }
    }

    #[test]
    fn a_later_claimant_never_takes_a_name_over() {
        for kind in ItemKind::ALL {
            let mut f = Fixture::default();
            // Resources keep their URI: two servers can name the same one.
            let (name, mine, theirs) = match kind {
                ItemKind::Resource => ("x://a", "x://a", "x://a"),
                _ => ("z__a", "a", "a"),
            };
            assert!(f.list(kind, "z", &[mine]).is_empty());
            if kind == ItemKind::Resource {
                // `b` sorts first and comes second: it is left out.
                let c = f.list(kind, "b", &[theirs]);
                assert_eq!(c.len(), 1, "{kind:?}");
                assert_eq!(
                    (c[0].kept.server.as_str(), c[0].dropped.server.as_str()),
                    ("z", "b")
                );
                assert_eq!(f.holder(kind, name), Some("z"));
                // `z` lists again (the name still in it): it keeps it, and
                // the collision is not new.
                assert!(f.list(kind, "z", &[mine, "x://b"]).is_empty());
                assert_eq!(f.holder(kind, name), Some("z"));
                assert_eq!(f.ns.collisions().len(), 1);
                // `b` lists again: still left out, not reported again.
                assert!(f.list(kind, "b", &[theirs]).is_empty());
                // `z` drops it: it passes to `b`.
                assert!(f.list(kind, "z", &["x://b"]).is_empty());
                assert_eq!(f.holder(kind, name), Some("b"));
                assert!(f.ns.collisions().is_empty());
                // `z` lists it again: now `z` is the later one.
                let c = f.list(kind, "z", &[mine]);
                assert_eq!(c[0].dropped.server, "z");
                assert_eq!(f.holder(kind, name), Some("b"));
            } else {
                assert_eq!(f.holder(kind, name), Some("z"));
            }
        }
    }

    #[test]
    fn two_items_of_one_server_with_one_name_keep_the_first() {
        let mut f = Fixture::default();
        let c = f.list(ItemKind::Tool, "s", &["do it", "do_it", "other"]);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].name, "s__do_it");
        assert_eq!(
            (c[0].kept.name.as_str(), c[0].dropped.name.as_str()),
            ("do it", "do_it")
        );
        assert_eq!(f.ns.table(ItemKind::Tool).len(), 2);
        // The first goes: the second has the name.
        assert!(f.list(ItemKind::Tool, "s", &["do_it", "other"]).is_empty());
        let h = &f.ns.table(ItemKind::Tool)["s__do_it"];
        assert_eq!(h.item.own(), "do_it");
        assert!(f.ns.collisions().is_empty());
    }

    #[test]
    fn a_listing_changes_the_names_of_its_own_server_only() {
        let mut f = Fixture::default();
        f.list(ItemKind::Tool, "a", &["x", "y"]);
        f.list(ItemKind::Tool, "b", &["x"]);
        f.list(ItemKind::Tool, "a", &["y", "z"]);
        let names: Vec<&String> = f.ns.table(ItemKind::Tool).keys().collect();
        assert_eq!(names, ["a__y", "a__z", "b__x"]);
        f.list(ItemKind::Tool, "a", &[]);
        let names: Vec<&String> = f.ns.table(ItemKind::Tool).keys().collect();
        assert_eq!(names, ["b__x"]);
    }

    #[test]
    fn the_public_views_are_parsed_from_the_kept_text() {
        let tool = Tool {
            name: "t".into(),
            description: Some("does t".into()),
            input_schema: json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
            ..Tool::default()
        };
        let holder = Listed {
            server: Arc::from("s"),
            item: Arc::new(Item::tool(&tool).unwrap()),
        };
        let view = holder.tool("s__t");
        assert_eq!(view.tool, tool);
        assert_eq!((view.name.as_str(), view.server.as_str()), ("s__t", "s"));
        let p = Listed {
            server: Arc::from("s"),
            item: Arc::new(
                Item::keyed(&json!({"name": "greet", "arguments": []}), "name").unwrap(),
            ),
        };
        assert_eq!(
            p.prompt("s__greet").prompt,
            json!({"name": "greet", "arguments": []})
        );
    }
}
