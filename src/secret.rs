//! [`Secret`]: an environment value that is revealed only at spawn.

use std::fmt;

/// A value that must not appear in logs, `Debug`, `Display` or errors.
///
/// The only way to read it is [`Secret::expose`], which the stdio transport
/// calls when it builds the child's environment, immediately before spawning.
///
/// ```
/// use conduit_mcp::Secret;
/// let token = Secret::new("ghp_example");
/// assert_eq!(format!("{token:?}"), "Secret(***)");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value. Call only where the value must be used.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// An environment value: plain text, or a [`Secret`].
#[derive(Clone, PartialEq, Eq)]
pub enum EnvValue {
    /// Shown in logs and `Debug`.
    Plain(String),
    /// Never shown.
    Secret(Secret),
}

impl EnvValue {
    /// The value to put in the child's environment.
    pub fn expose(&self) -> &str {
        match self {
            EnvValue::Plain(s) => s,
            EnvValue::Secret(s) => s.expose(),
        }
    }
}

impl fmt::Debug for EnvValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvValue::Plain(s) => fmt::Debug::fmt(s, f),
            EnvValue::Secret(s) => fmt::Debug::fmt(s, f),
        }
    }
}

impl From<&str> for EnvValue {
    fn from(s: &str) -> Self {
        EnvValue::Plain(s.to_owned())
    }
}

impl From<String> for EnvValue {
    fn from(s: String) -> Self {
        EnvValue::Plain(s)
    }
}

impl From<Secret> for EnvValue {
    fn from(s: Secret) -> Self {
        EnvValue::Secret(s)
    }
}
