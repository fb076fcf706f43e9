//! MCP's HTTP headers: their names, which values are valid, and the base64
//! sentinel form (`=?base64?...?=`) that carries values a plain header
//! cannot (non-ASCII, control characters, leading or trailing blanks).
//!
//! Header names are compared case-insensitively (the `http` crate keeps
//! them lower-case); values are case-sensitive.

use base64::Engine as _;
use serde_json::Value;

/// `MCP-Session-Id` (2025-11-25 era): the session minted by `initialize`.
pub(crate) const SESSION_ID: &str = "mcp-session-id";
/// `MCP-Protocol-Version`: the protocol version of the request.
pub(crate) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method` (2026-07-28 era): mirrors the body's `method`.
pub(crate) const METHOD: &str = "mcp-method";
/// `Mcp-Name` (2026-07-28 era): mirrors `params.name` (`tools/call`,
/// `prompts/get`) or `params.uri` (`resources/read`).
pub(crate) const NAME: &str = "mcp-name";
/// Prefix of `Mcp-Param-{Name}` (2026-07-28 era): a tool argument mirrored
/// into a header, as its input schema's `x-mcp-header` asks.
pub(crate) const PARAM_PREFIX: &str = "mcp-param-";
/// `Last-Event-ID` (2025-11-25 era): resume an SSE stream after this event.
pub(crate) const LAST_EVENT_ID: &str = "last-event-id";

/// The sentinel's prefix (exact, lower-case).
const SENTINEL_START: &str = "=?base64?";
/// The sentinel's suffix.
const SENTINEL_END: &str = "?=";

/// A header value that is not valid for MCP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum HeaderValueError {
    /// A byte outside visible ASCII, space and horizontal tab.
    #[error("invalid byte 0x{byte:02x} at offset {at}")]
    InvalidByte {
        /// The byte.
        byte: u8,
        /// Where it is.
        at: usize,
    },
    /// The sentinel form's payload is not base64.
    #[error("invalid base64 in a =?base64?...?= value: {0}")]
    Base64(String),
    /// The decoded sentinel payload is not UTF-8.
    #[error("a =?base64?...?= value does not decode to UTF-8")]
    NotUtf8,
}

/// Whether `s` is a valid session id: 1 or more visible ASCII characters
/// (0x21 to 0x7E), as the 2025-11-25 transport requires.
pub(crate) fn is_visible_ascii(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// Whether `s` is an HTTP token (RFC 9110 `1*tchar`): what an
/// `x-mcp-header` name must be.
pub(crate) fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

fn is_sentinel(s: &str) -> bool {
    s.len() >= SENTINEL_START.len() + SENTINEL_END.len()
        && s.starts_with(SENTINEL_START)
        && s.ends_with(SENTINEL_END)
}

/// Whether `s` can be sent as a plain header value: visible ASCII, space
/// and tab only, no leading or trailing blank, and not itself shaped like
/// the sentinel.
pub(crate) fn is_plain(s: &str) -> bool {
    let blank = |c: char| c == ' ' || c == '\t';
    !s.starts_with(blank)
        && !s.ends_with(blank)
        && !is_sentinel(s)
        && s.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
}

/// The header form of `value`: itself when [`is_plain`], else
/// `=?base64?{base64 of its UTF-8}?=`.
pub(crate) fn encode_value(value: &str) -> String {
    if is_plain(value) {
        value.to_owned()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        format!("{SENTINEL_START}{b64}{SENTINEL_END}")
    }
}

/// The value a header carries: the sentinel form decoded, any other value
/// checked (visible ASCII, space and tab only) and returned as is.
pub(crate) fn decode_value(raw: &[u8]) -> Result<String, HeaderValueError> {
    if let Some(at) = raw
        .iter()
        .position(|&b| b != b'\t' && !(0x20..=0x7e).contains(&b))
    {
        return Err(HeaderValueError::InvalidByte { byte: raw[at], at });
    }
    // Only visible ASCII, space and tab: valid UTF-8.
    let s = std::str::from_utf8(raw).map_err(|_| HeaderValueError::NotUtf8)?;
    if !is_sentinel(s) {
        return Ok(s.to_owned());
    }
    let payload = &s[SENTINEL_START.len()..s.len() - SENTINEL_END.len()];
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .map_err(|e| HeaderValueError::Base64(e.to_string()))?;
    String::from_utf8(bytes).map_err(|_| HeaderValueError::NotUtf8)
}

/// The body value `Mcp-Name` mirrors for `method`: `params.name` for
/// `tools/call` and `prompts/get`, `params.uri` for `resources/read`; `None`
/// for other methods (the header is not used), `Some(None)` when the
/// method uses it but the body has no string there.
pub(crate) fn name_source<'a>(method: &str, params: Option<&'a Value>) -> Option<Option<&'a str>> {
    crate::protocol::request_target(method, params)
}

/// The header form of a tool argument mirrored by `x-mcp-header`: a string
/// as is, an integer in decimal, a boolean as `true`/`false`; `None` for
/// other values (null, numbers with a fraction, arrays, objects), which are
/// never mirrored.
pub(crate) fn param_value(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_values_stay_plain_and_others_use_the_sentinel() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        // The specification's own examples.
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn decoding_inverts_encoding() {
        for v in [
            "us-west1",
            "Hello, 世界",
            " padded ",
            "a\r\nb",
            "=?base64?x?=",
            "",
        ] {
            assert_eq!(decode_value(encode_value(v).as_bytes()).as_deref(), Ok(v));
        }
    }

    #[test]
    fn invalid_header_values_are_refused() {
        assert_eq!(
            decode_value(b"caf\xc3\xa9"),
            Err(HeaderValueError::InvalidByte { byte: 0xc3, at: 3 })
        );
        assert!(matches!(
            decode_value(b"=?base64?not base64!?="),
            Err(HeaderValueError::Base64(_))
        ));
        assert_eq!(
            decode_value(b"=?base64?/w==?="),
            Err(HeaderValueError::NotUtf8)
        );
        // The markers are case-sensitive: an upper-case one is a plain value.
        assert_eq!(
            decode_value(b"=?BASE64?eA==?=").as_deref(),
            Ok("=?BASE64?eA==?=")
        );
    }

    #[test]
    fn session_ids_and_tokens() {
        assert!(is_visible_ascii("a1-B2_~"));
        assert!(!is_visible_ascii(""));
        assert!(!is_visible_ascii("a b"));
        assert!(is_token("Region"));
        assert!(!is_token("Re gion"));
        assert!(!is_token(""));
    }

    #[test]
    fn name_sources_follow_the_method() {
        let p = serde_json::json!({ "name": "t", "uri": "u" });
        assert_eq!(name_source("tools/call", Some(&p)), Some(Some("t")));
        assert_eq!(name_source("resources/read", Some(&p)), Some(Some("u")));
        assert_eq!(name_source("prompts/get", None), Some(None));
        assert_eq!(name_source("tools/list", Some(&p)), None);
        assert_eq!(param_value(&serde_json::json!(42)).as_deref(), Some("42"));
        assert_eq!(
            param_value(&serde_json::json!(true)).as_deref(),
            Some("true")
        );
        assert_eq!(param_value(&serde_json::json!(1.5)), None);
    }
}
