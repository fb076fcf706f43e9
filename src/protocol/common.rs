//! Pieces every part of the schema uses: `_meta`, implementations and icons,
//! annotations, roles, result types and cache hints, cursors.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A `_meta` object (free-form; see [`meta`](super::meta) for the keys
/// the protocol defines).
pub type Meta = Map<String, Value>;

/// Members of an object that this library does not model, kept as sent.
pub type Extra = Map<String, Value>;

/// An opaque pagination cursor.
pub type Cursor = String;

/// A progress token: a string or an integer, chosen by the requester.
pub type ProgressToken = crate::jsonrpc::RequestId;

/// A name and version (`clientInfo`, `serverInfo`), with the optional
/// display members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Its website.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Implementation {
    /// A name and version.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::Implementation;
    ///
    /// let info = Implementation::new("my-client", "1.2.0");
    /// let json = serde_json::to_value(&info)?;
    /// assert_eq!(json, serde_json::json!({ "name": "my-client", "version": "1.2.0" }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            icons: None,
            website_url: None,
            extra: Extra::new(),
        }
    }

    /// Sets the display name.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::{ClientConfig, Implementation};
    ///
    /// let info = Implementation::new("my-client", "1.2.0").with_title("My Client");
    /// assert_eq!(info.title.as_deref(), Some("My Client"));
    /// let config = ClientConfig::new("uvx").client_info(info); // sent as `clientInfo`
    /// # let _ = config;
    /// ```
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
}

string_enum! {
    /// Which background an icon is designed for.
    IconTheme {
        /// A light background.
        Light = "light",
        /// A dark background.
        Dark = "dark",
    }
}

/// An icon to show in a user interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// An `http(s)` URL or a `data:` URI.
    pub src: String,
    /// Its MIME type, when `src` does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes it suits (`"48x48"`, `"any"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The background it is designed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

string_enum! {
    /// Who said something, or who it is for.
    Role {
        /// The user.
        User = "user",
        /// The model.
        Assistant = "assistant",
    }
}

/// Hints about how a piece of content is to be used.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who it is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance, from 0 (optional) to 1 (required).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::protocol::common::number::option"
    )]
    pub priority: Option<f64>,
    /// When it last changed (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

string_enum! {
    /// 2026-07-28 era: what a result is (`resultType`). A result without one
    /// (2025-11-25 servers) is complete.
    ResultType {
        /// The final result.
        Complete = "complete",
        /// The server needs input first ([`InputRequiredResult`](super::InputRequiredResult)).
        InputRequired = "input_required",
    }
}

/// Who may reuse a cached 2026-07-28-era result (`cacheScope`).
///
/// The schema allows exactly these two values; any other decodes as
/// [`Private`](Self::Private), the narrower scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CacheScope {
    /// Only within the same authorization context (`"private"`).
    #[default]
    Private,
    /// Any client or intermediary (`"public"`).
    Public,
}

impl CacheScope {
    /// `"private"` or `"public"`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::CacheScope;
    ///
    /// assert_eq!(CacheScope::Public.as_str(), "public");
    /// let read: CacheScope = serde_json::from_str(r#""shared""#)?; // unknown: the narrower scope
    /// assert_eq!(read.as_str(), "private");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Private => "private",
            CacheScope::Public => "public",
        }
    }
}

impl Serialize for CacheScope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CacheScope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(if s == "public" {
            CacheScope::Public
        } else {
            CacheScope::Private
        })
    }
}

/// A result with nothing in it but the common members (`ping`,
/// `logging/setLevel`, `resources/subscribe`, ...).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmptyResult {
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// 2026-07-28 era: `"complete"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Parameters that carry nothing but `_meta`: the `list_changed`
/// notifications, `notifications/initialized`, `roots/list`, `ping`,
/// `server/discover`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MetaParams {
    /// `_meta` (2026-07-28: the stream's
    /// [`SUBSCRIPTION_ID`](super::meta::SUBSCRIPTION_ID)).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here, kept as sent.
    #[serde(flatten)]
    pub extra: Extra,
}

impl MetaParams {
    /// The `subscriptions/listen` stream a notification belongs to
    /// (2026-07-28), if it says.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::MetaParams;
    /// use serde_json::json;
    ///
    /// let params: MetaParams =
    ///     serde_json::from_value(json!({ "_meta": { "io.modelcontextprotocol/subscriptionId": 3 } }))?;
    /// assert_eq!(params.subscription_id(), Some(&json!(3)));
    /// assert_eq!(MetaParams::default().subscription_id(), None);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn subscription_id(&self) -> Option<&Value> {
        self.meta.as_ref()?.get(super::meta::SUBSCRIPTION_ID)
    }
}

schema_object! {
    /// The parameters of a paginated list request.
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    pub struct PaginatedParams {
        /// Where to continue (a previous result's `nextCursor`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub cursor: Option<Cursor>,
    }
}

/// One item or several: where the schema accepts both (sampling content).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A single item.
    One(T),
    /// An array.
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    /// The items, one or several.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::OneOrMany;
    ///
    /// let one = OneOrMany::One("a");
    /// let many = OneOrMany::Many(vec!["a", "b"]);
    /// assert_eq!(one.iter().count(), 1);
    /// assert_eq!(many.iter().copied().collect::<Vec<_>>(), ["a", "b"]);
    /// ```
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        match self {
            OneOrMany::One(t) => std::slice::from_ref(t).iter(),
            OneOrMany::Many(v) => v.iter(),
        }
    }
}

impl<T> From<T> for OneOrMany<T> {
    fn from(t: T) -> Self {
        OneOrMany::One(t)
    }
}

/// Writes a whole `f64` as an integer (`50`, not `50.0`), so a number
/// received as an integer is sent back as one.
pub(crate) mod number {
    use serde::Serializer;

    /// Largest integer an `f64` holds exactly.
    const EXACT: f64 = 9_007_199_254_740_992.0;

    pub(crate) fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.fract() == 0.0 && v.abs() <= EXACT {
            s.serialize_i64(*v as i64)
        } else {
            s.serialize_f64(*v)
        }
    }

    /// The same for an optional number (skipped when `None` by the field).
    pub(crate) fn option<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => serialize(v, s),
            None => s.serialize_none(),
        }
    }
}
