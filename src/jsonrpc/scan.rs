//! A structural scan of one JSON object: where each top-level member's value
//! starts and ends, without parsing the values.
//!
//! Why: a response's `result` can be megabytes. Validating it while routing
//! and then again when the caller decodes it into its type cost two full
//! passes (and a copy). The scan checks the object's shape (strings closed,
//! brackets balanced, colons and commas in place, nothing after the closing
//! brace); the members other than `result` are then parsed by serde from
//! their ranges, so only the interior of `result` is left for the caller's
//! decode to validate. Strings are skipped with `memchr`, so the scan of a
//! large result costs a fraction of a parse.
//!
//! The scan never panics and never recurses, whatever the input: nesting
//! depth is a counter, and every index is checked.

use std::ops::Range;

/// Byte ranges of the members MCP's envelope cares about.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Members {
    pub(super) jsonrpc: Option<Range<usize>>,
    pub(super) id: Option<Range<usize>>,
    pub(super) method: Option<Range<usize>>,
    pub(super) params: Option<Range<usize>>,
    pub(super) result: Option<Range<usize>>,
    pub(super) error: Option<Range<usize>>,
}

/// Why a scan failed.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ScanError {
    /// The first non-blank byte is not `{`.
    NotObject,
    /// Not well-formed JSON: what was expected, at which byte.
    Syntax(&'static str, usize),
    /// A member the envelope knows appears twice.
    Duplicate(&'static str),
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScanError::NotObject => f.write_str("not a JSON object"),
            ScanError::Syntax(what, at) => write!(f, "{what} at byte {at}"),
            ScanError::Duplicate(key) => write!(f, "duplicate member `{key}`"),
        }
    }
}

/// Scans `s`, which must hold exactly one JSON object (blanks around it are
/// allowed). Unknown members are validated with serde as they are met, so
/// only the values of known members are left unchecked.
pub(super) fn scan_object(s: &[u8]) -> Result<Members, ScanError> {
    let mut i = skip_ws(s, 0);
    if s.get(i) != Some(&b'{') {
        return Err(ScanError::NotObject);
    }
    i = skip_ws(s, i + 1);
    let mut m = Members::default();
    if s.get(i) == Some(&b'}') {
        return finish(s, i + 1, m);
    }
    loop {
        if s.get(i) != Some(&b'"') {
            return Err(ScanError::Syntax("expected a member name", i));
        }
        let key_end = skip_string(s, i)?;
        let key = &s[i..key_end];
        i = skip_ws(s, key_end);
        if s.get(i) != Some(&b':') {
            return Err(ScanError::Syntax("expected `:`", i));
        }
        let start = skip_ws(s, i + 1);
        let end = skip_value(s, start)?;
        place(&mut m, s, key, start..end)?;
        i = skip_ws(s, end);
        match s.get(i) {
            Some(b',') => i = skip_ws(s, i + 1),
            Some(b'}') => return finish(s, i + 1, m),
            _ => return Err(ScanError::Syntax("expected `,` or `}`", i)),
        }
    }
}

fn finish(s: &[u8], i: usize, m: Members) -> Result<Members, ScanError> {
    let end = skip_ws(s, i);
    if end == s.len() {
        Ok(m)
    } else {
        Err(ScanError::Syntax("trailing characters", end))
    }
}

/// Records a member's range in its slot; validates unknown members.
fn place(m: &mut Members, s: &[u8], key: &[u8], value: Range<usize>) -> Result<(), ScanError> {
    let name = key_name(key);
    let slot = match name.as_deref() {
        Some("jsonrpc") => Some(("jsonrpc", &mut m.jsonrpc)),
        Some("id") => Some(("id", &mut m.id)),
        Some("method") => Some(("method", &mut m.method)),
        Some("params") => Some(("params", &mut m.params)),
        Some("result") => Some(("result", &mut m.result)),
        Some("error") => Some(("error", &mut m.error)),
        _ => None,
    };
    match slot {
        Some((name, slot)) => {
            if slot.is_some() {
                return Err(ScanError::Duplicate(name));
            }
            *slot = Some(value);
            Ok(())
        }
        None => {
            // Ignored members must still be JSON, as they were when the
            // whole line went through serde.
            let valid = |r: &[u8]| serde_json::from_slice::<serde::de::IgnoredAny>(r).is_ok();
            if name.is_none() && !valid(key) {
                return Err(ScanError::Syntax("invalid member name", 0));
            }
            match s.get(value.clone()) {
                Some(v) if valid(v) => Ok(()),
                _ => Err(ScanError::Syntax("invalid value", value.start)),
            }
        }
    }
}

/// A member name (with its quotes) as text: borrowed bytes when it has no
/// escapes, decoded by serde otherwise; `None` if it is not valid.
fn key_name(key: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    let inner = key.get(1..key.len().saturating_sub(1))?;
    if !inner.contains(&b'\\') {
        return std::str::from_utf8(inner)
            .ok()
            .filter(|k| !k.bytes().any(|b| b < 0x20))
            .map(std::borrow::Cow::Borrowed);
    }
    serde_json::from_slice::<String>(key)
        .ok()
        .map(std::borrow::Cow::Owned)
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\r' | b'\n') = s.get(i) {
        i += 1;
    }
    i
}

/// `s[i]` is `"`: returns the index just past the closing quote.
fn skip_string(s: &[u8], i: usize) -> Result<usize, ScanError> {
    let mut j = i + 1;
    loop {
        let rest = s
            .get(j..)
            .ok_or(ScanError::Syntax("unterminated string", i))?;
        match memchr::memchr2(b'"', b'\\', rest) {
            None => return Err(ScanError::Syntax("unterminated string", i)),
            Some(k) if rest[k] == b'"' => return Ok(j + k + 1),
            // A backslash: the next byte is escaped, whatever it is.
            Some(k) => j += k + 2,
        }
    }
}

/// Returns the index just past the value starting at `s[i]`.
fn skip_value(s: &[u8], i: usize) -> Result<usize, ScanError> {
    match s.get(i) {
        None => Err(ScanError::Syntax("expected a value", i)),
        Some(b'"') => skip_string(s, i),
        Some(b'{' | b'[') => skip_nested(s, i),
        Some(_) => {
            let mut j = i;
            while let Some(b) = s.get(j) {
                if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                    break;
                }
                j += 1;
            }
            if j == i {
                Err(ScanError::Syntax("expected a value", i))
            } else {
                Ok(j)
            }
        }
    }
}

/// An object or array: brackets are counted (not matched by kind: the
/// member's own parse reports a mismatch), strings skipped whole.
fn skip_nested(s: &[u8], i: usize) -> Result<usize, ScanError> {
    let mut depth = 0usize;
    let mut j = i;
    loop {
        match s.get(j) {
            None => return Err(ScanError::Syntax("unterminated object or array", i)),
            Some(b'"') => j = skip_string(s, j)?,
            Some(b'{' | b'[') => {
                depth += 1;
                j += 1;
            }
            Some(b'}' | b']') => {
                depth -= 1;
                j += 1;
                if depth == 0 {
                    return Ok(j);
                }
            }
            Some(_) => j += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text<'a>(s: &'a [u8], r: &Option<Range<usize>>) -> &'a str {
        std::str::from_utf8(&s[r.clone().unwrap()]).unwrap()
    }

    #[test]
    fn finds_members_in_any_order() {
        let s = br#" { "result" : {"a":[1,"]}\"",{}]} , "id":7,"jsonrpc":"2.0", "x":null } "#;
        let m = scan_object(s).unwrap();
        assert_eq!(text(s, &m.result), r#"{"a":[1,"]}\"",{}]}"#);
        assert_eq!(text(s, &m.id), "7");
        assert_eq!(text(s, &m.jsonrpc), r#""2.0""#);
        assert!(m.method.is_none());
    }

    #[test]
    fn escaped_names_are_decoded() {
        let s = br#"{"\u0069d":1}"#;
        assert_eq!(text(s, &scan_object(s).unwrap().id), "1");
    }

    #[test]
    fn rejects_malformed_shapes() {
        for bad in [
            &b"{"[..],
            b"{\"a\"}",
            b"{\"a\":}",
            b"{\"a\":1,}",
            b"{\"a\":1 \"b\":2}",
            b"{\"id\":\"open}",
            b"{\"result\":[1,2}",
            b"{}x",
            b"{\"x\":nul}",
            b"{\"x\x01\":1}",
        ] {
            assert!(
                matches!(scan_object(bad), Err(ScanError::Syntax(..))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(scan_object(b" 42"), Err(ScanError::NotObject));
        assert_eq!(
            scan_object(br#"{"id":1,"id":2}"#),
            Err(ScanError::Duplicate("id"))
        );
    }

    proptest::proptest! {
        /// Arbitrary bytes never panic, and whatever the scan accepts as an
        /// object whose values are all valid JSON is accepted by serde too.
        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = scan_object(&bytes);
        }

        /// Each of the six members is found exactly when serde finds it,
        /// with the value serde parses.
        #[test]
        fn agrees_with_serde_on_json_objects(v in json_object()) {
            let s = serde_json::to_vec(&v).unwrap();
            let m = scan_object(&s).unwrap();
            for (name, range) in [
                ("jsonrpc", m.jsonrpc),
                ("id", m.id),
                ("method", m.method),
                ("params", m.params),
                ("result", m.result),
                ("error", m.error),
            ] {
                let got: Option<serde_json::Value> =
                    range.map(|r| serde_json::from_slice(&s[r]).unwrap());
                proptest::prop_assert_eq!(got.as_ref(), v.get(name), "{}", name);
            }
        }
    }

    fn json_object() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i64>().prop_map(|n| serde_json::json!(n)),
            "[\"\\\\{}\\[\\] a-z\u{e9}\n]{0,12}".prop_map(serde_json::Value::String),
        ];
        let value = leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
                proptest::collection::btree_map("[a-z\"]{0,4}", inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        });
        proptest::collection::btree_map(
            prop_oneof![
                proptest::sample::select(
                    &["jsonrpc", "id", "method", "params", "result", "error"][..]
                )
                .prop_map(str::to_owned),
                "[a-z]{1,6}",
            ],
            value,
            0..5,
        )
        .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
    }
}
