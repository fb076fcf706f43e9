//! Reading a `WWW-Authenticate` header (RFC 9110 section 11.6.1): the
//! parameters of its `Bearer` challenge that authorization uses
//! (`resource_metadata`, `scope`, `error`).

/// What a 401 or 403 asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// RFC 9728: where the protected resource metadata is.
    resource_metadata: Option<String>,
    /// The scopes the request needs.
    scope: Option<String>,
    /// The OAuth error (`invalid_token`, `insufficient_scope`).
    error: Option<String>,
}

impl Challenge {
    /// The `resource_metadata` parameter: where the protected resource's
    /// metadata is.
    #[inline]
    pub(crate) fn resource_metadata(&self) -> Option<&str> {
        self.resource_metadata.as_deref()
    }

    /// The `scope` parameter: the scopes the request needs.
    #[inline]
    pub(crate) fn scope(&self) -> Option<&String> {
        self.scope.as_ref()
    }

    /// The `Bearer` challenge among the header's values (other schemes'
    /// parameters are ignored); empty when there is none.
    pub(crate) fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Self {
        let mut out = Challenge::default();
        for value in values {
            for (scheme, params) in challenges(value) {
                if !scheme.eq_ignore_ascii_case("bearer") {
                    continue;
                }
                for (k, v) in params {
                    let slot = match k.to_ascii_lowercase().as_str() {
                        "resource_metadata" => &mut out.resource_metadata,
                        "scope" => &mut out.scope,
                        "error" => &mut out.error,
                        _ => continue,
                    };
                    slot.get_or_insert(v);
                }
                return out;
            }
        }
        out
    }

    /// A 403 that asks for more scope.
    pub(crate) fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// `(scheme, [(name, value)])` of each challenge in one header value.
fn challenges(value: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let b = value.as_bytes();
    let mut i = 0;
    let skip = |i: &mut usize| {
        while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t' || b[*i] == b',') {
            *i += 1;
        }
    };
    let token = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && !matches!(b[*i], b' ' | b'\t' | b',' | b'=' | b'"') {
            *i += 1;
        }
        value[start..*i].to_owned()
    };
    loop {
        skip(&mut i);
        if i >= b.len() {
            return out;
        }
        let word = token(&mut i);
        if word.is_empty() {
            i += 1;
            continue;
        }
        // A name followed by `=` (a parameter, or a token68 ending in
        // `=`), else a new scheme.
        let mut j = i;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        if j < b.len() && b[j] == b'=' && !out.is_empty() {
            i = j + 1;
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
            let v = if i < b.len() && b[i] == b'"' {
                i += 1;
                let mut s = String::new();
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    }
                    let ch = value[i..].chars().next().unwrap_or('\u{fffd}');
                    s.push(ch);
                    i += ch.len_utf8();
                }
                i += 1;
                s
            } else {
                token(&mut i)
            };
            if let Some(last) = out.last_mut() {
                last.1.push((word, v));
            }
        } else {
            out.push((word, Vec::new()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_challenges_parameters_are_read_quoted_or_not() {
        let c = Challenge::parse([
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://x.example/.well-known/oauth-protected-resource/mcp", error_description="a \"quoted\" word""#,
        ]);
        assert_eq!(c.scope.as_deref(), Some("mcp:basic mcp:write"));
        assert!(c.insufficient_scope());
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://x.example/.well-known/oauth-protected-resource/mcp")
        );
        let c = Challenge::parse(["Basic realm=x, Bearer scope=read,error=invalid_token"]);
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(
            Challenge::parse(["Basic realm=\"x\""]),
            Challenge::default()
        );
        assert_eq!(Challenge::parse(["Bearer"]), Challenge::default());
        assert_eq!(
            Challenge::parse(["Bearer scope=\"unterminated"])
                .scope
                .as_deref(),
            Some("unterminated")
        );
    }
}
