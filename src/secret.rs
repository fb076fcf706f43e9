//! [`Secret`]: an environment value that is revealed only at spawn.
//!
//! # Serialisation
//!
//! A serialised [`Secret`] never carries its value: it is written as
//! `{"redacted": true}`, and reading that back fails with an error that
//! says the value was redacted. A serialised configuration holding secrets
//! is therefore a description (safe to log or show), not a copy: supply the
//! secrets again (for example from an env file, see
//! [`config_file`](crate::config_file)) to run it. A secret is read from
//! `{"secret": "value"}` (or, where a `Secret` alone is expected, from a
//! plain string); an [`EnvValue`] read from a plain string is
//! [`EnvValue::Plain`].

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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

/// What a [`Secret`] is written as: its value never leaves.
const REDACTED_KEY: &str = "redacted";
/// The key that marks a secret value when one is read.
const SECRET_KEY: &str = "secret";

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(REDACTED_KEY, &true)?;
        map.end()
    }
}

/// The forms a secret may be read from.
#[derive(Deserialize)]
#[serde(untagged)]
enum SecretForm {
    Value(String),
    Marked {
        #[serde(default)]
        secret: Option<String>,
        #[serde(default)]
        redacted: Option<bool>,
    },
}

impl SecretForm {
    fn into_secret<E: serde::de::Error>(self) -> Result<Secret, E> {
        match self {
            SecretForm::Value(v)
            | SecretForm::Marked {
                secret: Some(v),
                redacted: None,
            } => Ok(Secret(v)),
            SecretForm::Marked {
                redacted: Some(_), ..
            } => Err(E::custom(
                "this secret was redacted when the configuration was serialised; supply its value",
            )),
            SecretForm::Marked { .. } => Err(E::custom(format!(
                "expected a string or {{\"{SECRET_KEY}\": \"value\"}}"
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        SecretForm::deserialize(deserializer)?.into_secret()
    }
}

impl Serialize for EnvValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            EnvValue::Plain(s) => serializer.serialize_str(s),
            EnvValue::Secret(s) => s.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for EnvValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match SecretForm::deserialize(deserializer)
            .map_err(|_| D::Error::custom("expected a string, or {\"secret\": \"value\"}"))?
        {
            SecretForm::Value(v) => Ok(EnvValue::Plain(v)),
            marked => marked.into_secret().map(EnvValue::Secret),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_serialised_secret_reveals_nothing_and_cannot_be_read_back() {
        let v = EnvValue::from(Secret::new("hunter2"));
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(text, r#"{"redacted":true}"#);
        let e = serde_json::from_str::<EnvValue>(&text).unwrap_err();
        assert!(e.to_string().contains("redacted"), "{e}");
        assert!(!e.to_string().contains("hunter2"));
    }

    #[test]
    fn env_values_read_as_plain_or_marked_secret() {
        let plain: EnvValue = serde_json::from_str(r#""text""#).unwrap();
        assert_eq!(plain, EnvValue::Plain("text".into()));
        assert_eq!(serde_json::to_string(&plain).unwrap(), r#""text""#);
        let secret: EnvValue = serde_json::from_str(r#"{"secret": "s"}"#).unwrap();
        assert_eq!(secret, EnvValue::Secret(Secret::new("s")));
        let alone: Secret = serde_json::from_str(r#""s""#).unwrap();
        assert_eq!(alone.expose(), "s");
        assert!(serde_json::from_str::<EnvValue>("42").is_err());
        assert!(serde_json::from_str::<EnvValue>(r#"{"other": 1}"#).is_err());
    }
}
