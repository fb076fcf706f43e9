//! Matching URIs against RFC 6570 URI templates, as far as resource
//! templates use them: literal text, `{var}` (no `/` inside) and `{+var}`
//! (anything, `/` included). Other operators match like `{+var}`.

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    /// A variable; `slashes`: it may contain `/`.
    Var {
        name: String,
        slashes: bool,
    },
}

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

impl UriTemplate {
    /// Parses `template`; an unclosed `{` is literal text.
    pub(crate) fn parse(template: &str) -> Self {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}').map(|c| open + c) else {
                break;
            };
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let expr = &rest[open + 1..close];
            let (slashes, name) = match expr.chars().next() {
                Some('+' | '#' | '/' | '.' | ';' | '?' | '&') => (true, &expr[1..]),
                _ => (false, expr),
            };
            parts.push(Part::Var {
                name: name.to_owned(),
                slashes,
            });
            rest = &rest[close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Self { parts }
    }

    /// The variables, if `uri` matches.
    pub(crate) fn matches(&self, uri: &str) -> Option<Map<String, Value>> {
        let mut vars = Map::new();
        match_from(&self.parts, uri, &mut vars).then_some(vars)
    }
}

/// Whether `parts` match all of `s` (backtracking over variable lengths).
fn match_from(parts: &[Part], s: &str, vars: &mut Map<String, Value>) -> bool {
    match parts.split_first() {
        None => s.is_empty(),
        Some((Part::Literal(l), rest)) => s
            .strip_prefix(l.as_str())
            .is_some_and(|tail| match_from(rest, tail, vars)),
        Some((Part::Var { name, slashes }, rest)) => {
            // Shortest first; never empty.
            for i in s.char_indices().skip(1).map(|(i, _)| i).chain([s.len()]) {
                let value = &s[..i];
                if !slashes && value.contains('/') {
                    return false;
                }
                if match_from(rest, &s[i..], vars) {
                    vars.insert(name.clone(), Value::String(value.to_owned()));
                    return true;
                }
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_simple_and_reserved_variables() {
        let t = UriTemplate::parse("users://{id}/profile");
        let v = t.matches("users://42/profile").unwrap();
        assert_eq!(v["id"], "42");
        assert!(t.matches("users://4/2/profile").is_none());
        assert!(t.matches("users:///profile").is_none());
        assert!(t.matches("users://42/profile/x").is_none());

        let t = UriTemplate::parse("file:///{+path}");
        assert_eq!(t.matches("file:///a/b/c.txt").unwrap()["path"], "a/b/c.txt");

        let t = UriTemplate::parse("demo://{a}-{b}");
        let v = t.matches("demo://x-y-z").unwrap();
        assert_eq!((v["a"].as_str(), v["b"].as_str()), (Some("x"), Some("y-z")));
        assert!(UriTemplate::parse("plain").matches("plain").is_some());
    }
}
