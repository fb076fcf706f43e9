//! [`Secret`]: a value that is revealed only at spawn, and [`MaybeSecret`]:
//! text that is plain or a secret, the type of everything a server is
//! started with: the command, each argument as an [`Arg`], each environment
//! value as an [`EnvValue`], and the working directory.
//!
//! A config file keeps every value that came from the environment, as
//! `${VAR}`, or from an env file as a [`Secret`], wherever it lands: see
//! [`config_file`](crate::config_file). In code, pass a [`Secret`] where
//! a value is one:
//!
//! ```
//! use conduit_mcp::{ClientConfig, Secret};
//! let config = ClientConfig::new("github-mcp")
//!     .arg("--token")
//!     .arg(Secret::new("ghp_example"))
//!     .env("GITHUB_TOKEN", Secret::new("ghp_example"));
//! let shown = format!("{config:?} {}", serde_json::to_string(&config)?);
//! assert!(!shown.contains("ghp_example"));
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! # Serialisation
//!
//! A serialised [`Secret`] never carries its value: it is written as
//! `{"redacted": true}`, and reading that back fails with an error that
//! says the value was redacted. A serialised configuration holding secrets
//! is therefore a description, safe to log or show, not a copy. Supply the
//! secrets again to run it, for example from an env file as
//! [`config_file`](crate::config_file) reads them. A secret is read from
//! `{"secret": "value"}`, or from a plain string where a `Secret` alone is
//! expected. A [`MaybeSecret`] read from a plain string is
//! [`MaybeSecret::Plain`].

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value that must not appear in logs, `Debug`, `Display` or errors.
///
/// The only way to read it is [`Secret::expose`], which the stdio transport
/// calls when it builds the child's command line and environment,
/// immediately before spawning.
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
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::Secret;
    ///
    /// let token = Secret::new(String::from("ghp_example"));
    /// assert_eq!(token.to_string(), "***");
    /// ```
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value. Call only where the value must be used.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::Secret;
    ///
    /// let token = Secret::new("ghp_example");
    /// let header = format!("Bearer {}", token.expose()); // where it is sent
    /// assert_eq!(header, "Bearer ghp_example");
    /// ```
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

/// Text that is plain, or a [`Secret`]: the command, an argument, an
/// environment value or the working directory of a server.
///
/// `Debug` shows a plain value as a string and a secret as `Secret(***)`;
/// `Display` shows a secret as `***`; serialised, a secret is
/// `{"redacted": true}`. [`expose`](Self::expose) gives the value, for the
/// spawn. It compares equal to a string with the same value:
///
/// ```
/// use conduit_mcp::{Arg, Secret};
/// let args: Vec<Arg> = vec!["--token".into(), Secret::new("t0k").into()];
/// assert_eq!(args, ["--token", "t0k"]);
/// assert_eq!(format!("{:?} {}", args, args[1]), r#"["--token", Secret(***)] ***"#);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub enum MaybeSecret {
    /// Shown in logs and `Debug`.
    Plain(String),
    /// Never shown.
    Secret(Secret),
}

/// An environment value: a [`MaybeSecret`].
pub type EnvValue = MaybeSecret;

/// A command-line argument, or the command itself: a [`MaybeSecret`].
pub type Arg = MaybeSecret;

impl MaybeSecret {
    /// The value itself: what the child receives. Call only where the value
    /// must be used.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::{Arg, Secret};
    ///
    /// let plain: Arg = "--verbose".into();
    /// let secret: Arg = Secret::new("t0k").into();
    /// assert_eq!((plain.expose(), secret.expose()), ("--verbose", "t0k"));
    /// assert_eq!(secret.to_string(), "***");
    /// ```
    pub fn expose(&self) -> &str {
        match self {
            MaybeSecret::Plain(s) => s,
            MaybeSecret::Secret(s) => s.expose(),
        }
    }

    /// Whether it is a [`Secret`].
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::{EnvValue, Secret};
    ///
    /// let value: EnvValue = Secret::new("t0k").into();
    /// assert!(value.is_secret());
    /// assert!(!EnvValue::from("en_US.UTF-8").is_secret());
    /// ```
    pub fn is_secret(&self) -> bool {
        matches!(self, MaybeSecret::Secret(_))
    }
}

impl fmt::Debug for MaybeSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MaybeSecret::Plain(s) => fmt::Debug::fmt(s, f),
            MaybeSecret::Secret(s) => fmt::Debug::fmt(s, f),
        }
    }
}

/// The plain text, or `***` for a secret.
impl fmt::Display for MaybeSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MaybeSecret::Plain(s) => f.write_str(s),
            MaybeSecret::Secret(s) => fmt::Display::fmt(s, f),
        }
    }
}

impl From<&str> for MaybeSecret {
    fn from(s: &str) -> Self {
        MaybeSecret::Plain(s.to_owned())
    }
}

impl From<&String> for MaybeSecret {
    fn from(s: &String) -> Self {
        MaybeSecret::Plain(s.clone())
    }
}

impl From<String> for MaybeSecret {
    fn from(s: String) -> Self {
        MaybeSecret::Plain(s)
    }
}

impl From<std::borrow::Cow<'_, str>> for MaybeSecret {
    fn from(s: std::borrow::Cow<'_, str>) -> Self {
        MaybeSecret::Plain(s.into_owned())
    }
}

impl From<Secret> for MaybeSecret {
    fn from(s: Secret) -> Self {
        MaybeSecret::Secret(s)
    }
}

impl PartialEq<str> for MaybeSecret {
    fn eq(&self, other: &str) -> bool {
        self.expose() == other
    }
}

impl PartialEq<&str> for MaybeSecret {
    fn eq(&self, other: &&str) -> bool {
        self.expose() == *other
    }
}

impl PartialEq<String> for MaybeSecret {
    fn eq(&self, other: &String) -> bool {
        self.expose() == other
    }
}

impl PartialEq<MaybeSecret> for str {
    fn eq(&self, other: &MaybeSecret) -> bool {
        self == other.expose()
    }
}

impl PartialEq<MaybeSecret> for &str {
    fn eq(&self, other: &MaybeSecret) -> bool {
        *self == other.expose()
    }
}

impl PartialEq<MaybeSecret> for String {
    fn eq(&self, other: &MaybeSecret) -> bool {
        self == other.expose()
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

impl Serialize for MaybeSecret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            MaybeSecret::Plain(s) => serializer.serialize_str(s),
            MaybeSecret::Secret(s) => s.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for MaybeSecret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match SecretForm::deserialize(deserializer)
            .map_err(|_| D::Error::custom("expected a string, or {\"secret\": \"value\"}"))?
        {
            SecretForm::Value(v) => Ok(MaybeSecret::Plain(v)),
            marked => marked.into_secret().map(MaybeSecret::Secret),
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
