//! [`RawJson`]: a response's `result` as the peer sent it, not yet decoded.

use std::fmt;
use std::ops::Range;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;

/// A JSON value kept as the bytes the peer sent, decoded only by the code
/// that knows its type.
///
/// Routing a response never parses its result: only the shape of the
/// envelope around it is checked (see [`Message::parse`](super::Message::parse)).
/// So the bytes are *not validated* until you decode them:
/// [`parse`](Self::parse) and [`to_raw_value`](Self::to_raw_value) report
/// malformed JSON as an error. A large result is handed over without
/// copying: it may keep the line it arrived in (a few bytes more than the
/// value itself).
///
/// ```
/// use conduit_mcp::RawJson;
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct Sum {
///     total: i64,
/// }
///
/// // What `Client::request_raw` returns: the result's bytes, undecoded.
/// let raw = RawJson::from_vec(br#"{"total": 42}"#.to_vec());
/// assert_eq!(raw.parse::<Sum>()?.total, 42);
/// // Malformed JSON is reported when decoded, not before.
/// assert!(RawJson::from_vec(b"{".to_vec()).parse::<Sum>().is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone)]
pub struct RawJson {
    buf: Vec<u8>,
    range: Range<usize>,
}

impl RawJson {
    /// Wraps bytes, unchecked.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::RawJson;
    ///
    /// let raw = RawJson::from_vec(b"[1, 2, 3]".to_vec());
    /// assert_eq!(raw.parse::<Vec<u8>>()?, [1, 2, 3]);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        let range = 0..bytes.len();
        Self { buf: bytes, range }
    }

    /// Serialises `value`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::RawJson;
    /// use serde_json::json;
    ///
    /// let raw = RawJson::from_value(&json!({ "ok": true }))?;
    /// assert_eq!(raw.as_bytes(), br#"{"ok":true}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn from_value<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_vec(value).map(Self::from_vec)
    }

    /// `line[range]`; the range must lie within the line (checked by the
    /// caller, the envelope scan).
    pub(super) fn in_line(line: Vec<u8>, range: Range<usize>) -> Self {
        let range = if line.get(range.clone()).is_some() {
            range
        } else {
            0..0
        };
        Self { buf: line, range }
    }

    /// The JSON text's bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::RawJson;
    ///
    /// let raw = RawJson::from_vec(br#"{"a":1}"#.to_vec());
    /// assert_eq!(std::str::from_utf8(raw.as_bytes()).unwrap(), r#"{"a":1}"#);
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        // In bounds: every constructor checks the range.
        self.buf.get(self.range.clone()).unwrap_or_default()
    }

    /// Length of the JSON text in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::RawJson;
    ///
    /// assert_eq!(RawJson::from_vec(b"true".to_vec()).len(), 4);
    /// ```
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Bytes held in memory: the whole buffer, which may be the line the
    /// value arrived in.
    pub(crate) fn held(&self) -> usize {
        self.buf.capacity()
    }

    /// Whether there are no bytes at all (never the case for a parsed
    /// message: a member always has a value).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::RawJson;
    ///
    /// assert!(RawJson::from_vec(Vec::new()).is_empty());
    /// assert!(!RawJson::from_vec(b"0".to_vec()).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// Decodes the value into `T`, validating it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use conduit_mcp::RawJson;
    ///
    /// let raw = RawJson::from_vec(br#"{"celsius": 21.5}"#.to_vec());
    /// let map: HashMap<String, f64> = raw.parse()?;
    /// assert_eq!(map["celsius"], 21.5);
    /// assert!(RawJson::from_vec(b"{oops".to_vec()).parse::<serde_json::Value>().is_err());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(self.as_bytes())
    }

    /// Validates the value and copies it into a serde_json [`RawValue`].
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::RawJson;
    ///
    /// let raw = RawJson::from_vec(br#"{"k": [1, 2]}"#.to_vec());
    /// let value = raw.to_raw_value()?; // validated, kept as text
    /// assert_eq!(value.get(), r#"{"k": [1, 2]}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn to_raw_value(&self) -> Result<Box<RawValue>, serde_json::Error> {
        serde_json::from_slice(self.as_bytes())
    }
}

/// Equal when the JSON texts are the same bytes, wherever they are kept
/// (a value handed over in the line it arrived in equals a copy of it).
impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for RawJson {}

impl std::hash::Hash for RawJson {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Results can be megabytes: show the start and the size.
        const SHOWN: usize = 256;
        let b = self.as_bytes();
        let head = String::from_utf8_lossy(b.get(..SHOWN).unwrap_or(b));
        if b.len() > SHOWN {
            write!(f, "RawJson({head}... {} bytes)", b.len())
        } else {
            write!(f, "RawJson({head})")
        }
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_reports_bad_json() {
        let r = RawJson::from_vec(br#"{"a":[1,2]}"#.to_vec());
        assert_eq!(r.parse::<serde_json::Value>().unwrap()["a"][1], 2);
        assert_eq!(r.to_raw_value().unwrap().get(), r#"{"a":[1,2]}"#);
        let bad = RawJson::in_line(b"xx{\"a\":]yy".to_vec(), 2..8);
        assert_eq!(bad.as_bytes(), b"{\"a\":]");
        assert!(bad.parse::<serde_json::Value>().is_err());
        assert!(RawJson::in_line(b"ab".to_vec(), 1..9).is_empty());
    }

    #[test]
    fn equality_compares_the_json_bytes_not_the_buffer() {
        let copied = RawJson::from_vec(br#"{"a":1}"#.to_vec());
        let in_line = RawJson::in_line(br#"{"id":1,"result":{"a":1}}"#.to_vec(), 17..24);
        assert_eq!(in_line.as_bytes(), br#"{"a":1}"#);
        assert_eq!(copied, in_line);
        assert_ne!(copied, RawJson::from_vec(br#"{"a":2}"#.to_vec()));
    }

    #[test]
    fn debug_of_a_large_value_is_short() {
        let r = RawJson::from_vec(vec![b'1'; 100_000]);
        let d = format!("{r:?}");
        assert!(d.len() < 400 && d.ends_with("100000 bytes)"), "{d}");
    }
}
