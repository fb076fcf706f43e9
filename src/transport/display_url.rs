//! [`display_url`]: a URL as logs, errors and names may show it.

/// `scheme://host[:port]/path` of `url`: no user info, query or fragment.
pub(crate) fn display_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s, r),
        None => return "(not a URL)".into(),
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let rest = &rest[..end];
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let host = authority.rsplit('@').next().unwrap_or_default();
    format!("{scheme}://{host}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_shown_in_logs_carry_no_credentials_or_query() {
        assert_eq!(
            display_url("https://user:pw@example.com:8443/mcp?token=x#f"),
            "https://example.com:8443/mcp"
        );
        assert_eq!(display_url("http://127.0.0.1:9"), "http://127.0.0.1:9");
    }
}
