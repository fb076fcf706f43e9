//! Two shapes the schema uses over and over, written once: a string enum
//! that keeps values it does not know, and an object tagged by its `type`
//! member that keeps kinds it does not know.

/// A string enum of the schema (`"user"`, `"assistant"`, ...) with an
/// `Other(String)` variant: a value this library does not know decodes and
/// re-encodes as sent instead of failing.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this library does not know, kept as sent.
            Other(String),
        }

        impl $name {
            /// The value as it is on the wire.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use conduit_mcp::protocol::", stringify!($name), ";")]
            ///
            $(
                #[doc = concat!(
                    "assert_eq!(", stringify!($name), "::", stringify!($variant),
                    ".as_str(), ", stringify!($wire), ");"
                )]
            )+
            #[doc = concat!("let unknown = ", stringify!($name), "::from(\"x-vendor-value\");")]
            /// assert_eq!(unknown.as_str(), "x-vendor-value"); // kept as sent
            /// ```
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $wire, )+
                    Self::Other(s) => s,
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $( $wire => Self::$variant, )+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Ok(Self::from(s.as_ref()))
            }
        }
    };
}

/// An object tagged by its `"type"` member (content blocks, completion
/// references): one variant per known kind, each holding the kind's struct
/// (without the tag), and `Unknown(Value)` for a kind this library does
/// not know, kept as sent. A known kind whose members do not match its
/// shape is a decoding error (the peer broke the schema).
macro_rules! tagged_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident($ty:ty) = $wire:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $( $(#[$vmeta])* $variant($ty), )+
            /// A kind this library does not know, kept as sent (with its
            /// `type`).
            Unknown(serde_json::Value),
        }

        impl $name {
            /// The `type` member: the kind of this object.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use conduit_mcp::protocol::", stringify!($name), ";")]
            ///
            #[doc = concat!("let unknown: ", stringify!($name), " =")]
            ///     serde_json::from_value(serde_json::json!({ "type": "x-vendor-kind", "n": 1 }))?;
            /// assert_eq!(unknown.kind(), "x-vendor-kind"); // kept as sent
            /// # Ok::<(), serde_json::Error>(())
            /// ```
            pub fn kind(&self) -> &str {
                match self {
                    $( Self::$variant(_) => $wire, )+
                    Self::Unknown(v) => v
                        .get("type")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or_default(),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( Self::$variant(inner) => {
                        $crate::protocol::macros::WithType::new($wire, inner).serialize(s)
                    } )+
                    Self::Unknown(v) => v.serialize(s),
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = serde_json::Value::deserialize(d)?;
                let kind = v.get("type").and_then(serde_json::Value::as_str);
                match kind {
                    $( Some($wire) => $crate::protocol::macros::untagged(v)
                        .map(Self::$variant)
                        .map_err(|e| serde::de::Error::custom(
                            format_args!("{} of type {:?}: {e}", stringify!($name), $wire)
                        )), )+
                    _ => Ok(Self::Unknown(v)),
                }
            }
        }
    };
}

/// A tagged kind's struct serialised with its tag in front, without an
/// intermediate `Value` (a large text block is not copied).
#[derive(serde::Serialize)]
pub(crate) struct WithType<'a, T> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

impl<'a, T> WithType<'a, T> {
    #[inline]
    pub(crate) fn new(kind: &'static str, inner: &'a T) -> Self {
        Self { kind, inner }
    }
}

/// Decodes a tagged object's members, the tag removed (strings are moved,
/// not copied).
pub(crate) fn untagged<T: serde::de::DeserializeOwned>(
    v: serde_json::Value,
) -> Result<T, serde_json::Error> {
    match v {
        serde_json::Value::Object(mut m) => {
            m.remove("type");
            serde_json::from_value(serde_json::Value::Object(m))
        }
        other => serde_json::from_value(other),
    }
}

/// A struct of the schema whose last two fields are its `_meta` and the
/// members this library does not model, kept as sent. With `cached` before
/// the struct, the 2026-07-28 era's `resultType`, `ttlMs` and `cacheScope`
/// come before those two.
macro_rules! schema_object {
    (
        cached
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        schema_object! {
            $(#[$meta])*
            $vis struct $name {
                $( $(#[$fmeta])* $fvis $field: $ty, )*
                /// 2026-07-28 era: `"complete"`.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub result_type: Option<$crate::protocol::ResultType>,
                /// 2026-07-28 era: how long the client may cache this, in milliseconds.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub ttl_ms: Option<u64>,
                /// 2026-07-28 era: who may reuse the cached result.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub cache_scope: Option<$crate::protocol::CacheScope>,
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $ty, )*
            /// `_meta`.
            #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
            pub meta: Option<$crate::protocol::Meta>,
            /// Members not modelled here, kept as sent.
            #[serde(flatten)]
            pub extra: $crate::protocol::Extra,
        }
    };
}
