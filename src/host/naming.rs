//! How a server's name and an item's name are joined into one name of the
//! namespace, and which server names keep that join unambiguous.
//!
//! A namespaced name is the server's name, the separator and the item's
//! name, each name with every character outside `A-Z a-z 0-9 _ -` replaced
//! by `_` (the characters model APIs accept in a tool name; the separator
//! is kept as configured). A name longer than the limit is cut and ends
//! with `_` and 8 hex digits of a hash of the whole name.
//!
//! A server name is refused (at config time, and by
//! [`Host::add`](super::Host::add)) when a name could then mean two
//! servers: when its sanitised form holds the separator (`a__b`: its
//! `echo` and server `a`'s `b__echo` would both be `a__b__echo`), runs
//! into it (`a_` + `__`), equals another server's (`my.fx`, `my_fx`), or
//! is so long that the cut could reach it. So every name of the namespace
//! starts with exactly one server's prefix, and no server can list its
//! way into another's names.

use crate::error::ConfigError;

/// The default separator between a server's name and a tool's.
pub const DEFAULT_SEPARATOR: &str = "__";
/// The default longest namespaced name: the limit hosts impose on tool
/// names.
pub const DEFAULT_MAX_NAME_LEN: usize = 64;
/// Hex digits of the hash that ends a shortened name.
const HASH_DIGITS: usize = 8;

/// How names are joined.
#[derive(Debug, Clone)]
pub(crate) struct Naming {
    separator: String,
    max_len: usize,
}

impl Naming {
    /// Joins names with `separator`, within `max_len` bytes.
    #[inline]
    pub(crate) fn new(separator: String, max_len: usize) -> Self {
        Naming { separator, max_len }
    }
}

impl Default for Naming {
    fn default() -> Self {
        Naming {
            separator: DEFAULT_SEPARATOR.to_owned(),
            max_len: DEFAULT_MAX_NAME_LEN,
        }
    }
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

    /// The part of a name a cut keeps.
    fn uncut(&self) -> usize {
        self.max_len.saturating_sub(HASH_DIGITS + 1)
    }

    fn shorten(&self, full: String) -> String {
        if full.len() <= self.max_len {
            return full;
        }
        let keep = self.uncut();
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

    /// Refuses `name` if, beside the servers `others`, a namespaced name
    /// could mean two servers (see the module).
    pub(crate) fn check_server<'a>(
        &self,
        name: &str,
        others: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), ConfigError> {
        let refuse = |why: String| Err(ConfigError::new("servers", why));
        if name.trim().is_empty() {
            return refuse(format!("server name {name:?} is empty"));
        }
        let sep = &self.separator;
        let prefix = self.prefix(name);
        let clean = &prefix[..prefix.len() - sep.len()];
        // The first separator of `clean + sep` must be the one joined on.
        if prefix.find(sep.as_str()) != Some(clean.len()) {
            // Say what the name becomes when that is what meets the separator.
            let becomes = if clean == name {
                String::new()
            } else {
                format!(" (as `{clean}`, its characters outside A-Z a-z 0-9 _ - replaced)")
            };
            return refuse(format!(
                "server name `{name}` holds or runs into the separator `{sep}`{becomes}: \
                 a tool's name could then mean another server (choose another name or separator)"
            ));
        }
        if prefix.len() > self.uncut() {
            return refuse(format!(
                "server name `{name}` is {} characters long: with the separator it must fit in {} \
                 (max_name_len {} less the cut's hash) so that a cut name keeps it whole",
                clean.len(),
                self.uncut(),
                self.max_len
            ));
        }
        if let Some(other) = others
            .into_iter()
            .find(|o| *o != name && sanitize(o) == clean)
        {
            return refuse(format!(
                "server names `{other}` and `{name}` both become `{clean}` in the namespace"
            ));
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_join_server_and_item_with_the_separator() {
        assert_eq!(
            Naming::default().join("time", "get_current_time"),
            "time__get_current_time"
        );
        assert_eq!(
            Naming::default().join("my.server", "do it!"),
            "my_server__do_it_"
        );
        let dotted = Naming {
            separator: ".".into(),
            max_len: 64,
        };
        assert_eq!(dotted.join("a", "b.c"), "a.b_c");
    }

    #[test]
    fn long_names_are_cut_to_the_limit_and_stay_distinct() {
        let n = Naming::default();
        let server = "server-with-a-rather-long-name";
        let long_a = n.join(server, &"a".repeat(60));
        let long_b = n.join(server, &format!("{}b", "a".repeat(59)));
        assert_eq!(long_a.len(), 64, "{long_a}");
        assert_eq!(long_b.len(), 64, "{long_b}");
        assert_ne!(long_a, long_b);
        assert!(long_a.starts_with("server-with-a-rather-long-name__aaa"));
        // Stable: the same input, the same name.
        assert_eq!(long_a, n.join(server, &"a".repeat(60)));
        let exact = format!("s__{}", "x".repeat(61));
        assert_eq!(n.join("s", &"x".repeat(61)), exact);
    }

    #[test]
    fn a_server_name_is_refused_when_a_name_could_mean_two_servers() {
        let n = Naming::default();
        let ok = |name: &str, others: &[&str]| n.check_server(name, others.iter().copied());
        ok("a", &["b", "a-b"]).unwrap();
        ok("a-", &[]).unwrap();
        ok(&"s".repeat(53), &[]).unwrap();
        for (name, others, needle) in [
            ("a__b", &["a"][..], "separator"),
            ("a_", &[], "separator"),
            ("__a", &[], "separator"),
            ("é", &[], "(as `_`, its characters outside"),
            ("my_fx", &["my.fx"], "`my.fx` and `my_fx`"),
            (&"s".repeat(54), &[], "54 characters"),
            (" ", &[], "empty"),
        ] {
            let e = ok(name, others).unwrap_err();
            assert_eq!(e.key, "servers");
            assert!(e.problem.contains(needle), "{name}: {e}");
        }
        // With another separator, the same names are fine.
        let dotted = Naming {
            separator: ".".into(),
            max_len: 64,
        };
        dotted.check_server("a__b", ["a"]).unwrap();
        dotted.check_server("a_", []).unwrap();
    }
}
