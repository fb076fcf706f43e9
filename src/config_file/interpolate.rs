//! `${...}` in config-file strings, as the hosts that keep these files
//! expand them. Claude Code's are `${VAR}` and `${VAR:-default}`. VS Code
//! and Cursor have `${env:VAR}` and the predefined `${userHome}`,
//! `${workspaceFolder}`, `${workspaceFolderBasename}`, `${pathSeparator}`
//! and `${/}`. VS Code's `${input:ID}` takes the values the caller
//! supplied. Nothing else of a string is touched: a `$` not followed by `{`
//! stays as written.

use std::collections::BTreeMap;
use std::path::Path;

use crate::secret::Secret;

/// Where variables come from: the environment, or a stand-in for it in
/// tests, and the file's place.
pub(crate) struct Variables<'a> {
    /// Looks an environment variable up.
    env: &'a dyn Fn(&str) -> Option<String>,
    /// `${workspaceFolder}`.
    workspace: &'a Path,
    /// The values of `${input:ID}`, by ID.
    inputs: &'a BTreeMap<String, Secret>,
}

/// Why a string could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// `${VAR}` or `${env:VAR}` with VAR unset.
    Unset(String),
    /// A kind of variable these files may hold but we cannot resolve, such
    /// as `${input:...}` or `${command:...}`, or a malformed one.
    Unsupported(String),
}

/// A string after expansion.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Expanded {
    /// The text.
    text: String,
    /// Whether part of it came from the environment or an input. Such
    /// values are kept as secrets.
    from_env: bool,
}

impl Expanded {
    /// The text, and whether part of it came from the environment.
    pub(crate) fn into_parts(self) -> (String, bool) {
        (self.text, self.from_env)
    }
}

impl<'a> Variables<'a> {
    #[inline]
    pub(crate) fn new(
        env: &'a dyn Fn(&str) -> Option<String>,
        workspace: &'a Path,
        inputs: &'a BTreeMap<String, Secret>,
    ) -> Self {
        Self {
            env,
            workspace,
            inputs,
        }
    }

    /// Whether `${input:id}` has a value.
    pub(crate) fn has_input(&self, id: &str) -> bool {
        self.inputs.contains_key(id)
    }

    /// Expands every `${...}` of `input`.
    pub(crate) fn expand(&self, input: &str) -> Result<Expanded, Problem> {
        let mut text = String::with_capacity(input.len());
        let mut from_env = false;
        let mut rest = input;
        while let Some(start) = rest.find("${") {
            text.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                return Err(Problem::Unsupported(format!(
                    "`${{{after}` has no closing `}}`"
                )));
            };
            let (value, env) = self.resolve(&after[..end])?;
            from_env |= env;
            text.push_str(&value);
            rest = &after[end + 1..];
        }
        text.push_str(rest);
        Ok(Expanded { text, from_env })
    }

    /// One variable's value, and whether it came from the environment.
    fn resolve(&self, inner: &str) -> Result<(String, bool), Problem> {
        let predefined = match inner {
            "userHome" => Some(self.lookup("HOME")?),
            "workspaceFolder" => Some(self.workspace.to_string_lossy().into_owned()),
            "workspaceFolderBasename" => Some(
                self.workspace
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ),
            "pathSeparator" | "/" => Some(std::path::MAIN_SEPARATOR.to_string()),
            _ => None,
        };
        if let Some(v) = predefined {
            return Ok((v, false));
        }
        if let Some(id) = inner.strip_prefix("input:") {
            return match self.inputs.get(id) {
                Some(v) => Ok((v.expose().to_owned(), true)),
                None => Err(Problem::Unsupported(format!(
                    "`${{{inner}}}` (no value supplied)"
                ))),
            };
        }
        if let Some(name) = inner.strip_prefix("env:") {
            return Ok((self.lookup(valid_name(name, inner)?)?, true));
        }
        if let Some((name, default)) = inner.split_once(":-") {
            let v = (self.env)(valid_name(name, inner)?).filter(|v| !v.is_empty());
            return Ok(match v {
                Some(v) => (v, true),
                None => (default.to_owned(), false),
            });
        }
        Ok((self.lookup(valid_name(inner, inner)?)?, true))
    }

    fn lookup(&self, name: &str) -> Result<String, Problem> {
        (self.env)(name).ok_or_else(|| Problem::Unset(name.to_owned()))
    }
}

/// The IDs of the `${input:ID}` variables in `text`, in order.
pub(crate) fn inputs(text: &str) -> impl Iterator<Item = &str> {
    text.split("${input:")
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(id, _)| id))
}

/// `name` if it is a variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn valid_name<'a>(name: &'a str, whole: &str) -> Result<&'a str, Problem> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(name)
    } else {
        Err(Problem::Unsupported(format!("`${{{whole}}}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(input: &str) -> Result<Expanded, Problem> {
        let env = |k: &str| match k {
            "HOME" => Some("/home/me".to_owned()),
            "TOKEN" => Some("t0k".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        let inputs = BTreeMap::from([("api-key".to_owned(), Secret::new("k3y"))]);
        Variables {
            env: &env,
            workspace: Path::new("/work/proj"),
            inputs: &inputs,
        }
        .expand(input)
    }

    fn text(input: &str) -> String {
        expand(input).unwrap().text
    }

    #[test]
    fn every_form_the_hosts_use() {
        assert_eq!(text("Bearer ${TOKEN}"), "Bearer t0k");
        assert_eq!(text("${env:TOKEN}/${TOKEN}"), "t0k/t0k");
        assert_eq!(text("${MISSING:-fallback}"), "fallback");
        assert_eq!(text("${EMPTY:-fallback}"), "fallback");
        assert_eq!(text("${TOKEN:-fallback}"), "t0k");
        assert_eq!(text("${MISSING:-}"), "");
        assert_eq!(text("${userHome}/x"), "/home/me/x");
        assert_eq!(text("${workspaceFolder}${/}a"), "/work/proj/a");
        assert_eq!(text("${workspaceFolderBasename}"), "proj");
        assert_eq!(
            text("$HOME and $ alone, {braces}"),
            "$HOME and $ alone, {braces}"
        );
    }

    #[test]
    fn a_supplied_input_is_its_value_and_a_secret() {
        let e = expand("Bearer ${input:api-key}").unwrap();
        assert_eq!((e.text.as_str(), e.from_env), ("Bearer k3y", true));
        assert_eq!(
            inputs("${input:a} and ${input:b-2}, ${env:X}").collect::<Vec<_>>(),
            ["a", "b-2"]
        );
    }

    #[test]
    fn values_from_the_environment_are_marked() {
        assert!(expand("${TOKEN}").unwrap().from_env);
        assert!(expand("a${env:TOKEN}").unwrap().from_env);
        assert!(!expand("${MISSING:-x}").unwrap().from_env);
        assert!(!expand("${workspaceFolder}").unwrap().from_env);
        assert!(!expand("plain").unwrap().from_env);
    }

    #[test]
    fn unset_and_unsupported_variables_are_errors() {
        assert_eq!(expand("${NOPE}"), Err(Problem::Unset("NOPE".into())));
        assert_eq!(expand("${env:NOPE}"), Err(Problem::Unset("NOPE".into())));
        for bad in ["${input:token}", "${command:x}", "${1X}", "${}", "${open"] {
            assert!(matches!(expand(bad), Err(Problem::Unsupported(_))), "{bad}");
        }
    }
}
