//! [`HttpOptions`]: where a Streamable HTTP server is and what every request
//! to it carries (the options of `ClientConfig::http`
//! that stdio does not have).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::secret::Secret;
use crate::transport::display_url::display_url;

/// A Streamable HTTP server: its endpoint and the headers sent with every
/// request (feature `http`).
///
/// Header values are [`Secret`]s: an `Authorization` token never appears in
/// `Debug`, logs, errors or a serialised configuration. TLS uses rustls with
/// the platform's certificate verifier; proxies come from the environment
/// (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`) unless
/// [`proxy_from_env`](Self::proxy_from_env) is off.
///
/// An SSE stream that ends (the session's GET stream, or a response
/// stream before its answer) is reopened after the `retry` the server
/// asked for (1 s when it named none), never sooner than 250 ms, and the
/// wait doubles, up to 30 s, for each stream in a row that ended without
/// an event.
///
/// Serialised as `{"url": "...", "headers": {"Authorization": {"redacted": true}},
/// "proxy_from_env": true, "connect_timeout_ms": 10000}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The MCP endpoint (`http://` or `https://`).
    pub url: String,
    /// Headers sent with every request, in order; a later value for the
    /// same name replaces an earlier one.
    #[serde(default, with = "header_map")]
    pub headers: Vec<(String, Secret)>,
    /// Use the proxy the environment names (default on).
    #[serde(default = "yes")]
    pub proxy_from_env: bool,
    /// Time allowed to open a connection (TCP and TLS), default 10 s.
    #[serde(
        default = "default_connect_timeout",
        rename = "connect_timeout_ms",
        with = "crate::serde_support::millis"
    )]
    pub connect_timeout: Duration,
    /// Authorization with OAuth 2.1 when the server asks for it (feature
    /// `http`; see [`oauth`](crate::transport::http::oauth)); not serialised.
    #[cfg(feature = "http")]
    #[serde(skip)]
    pub oauth: Option<crate::transport::http::oauth::OAuth>,
}

fn yes() -> bool {
    true
}

fn default_connect_timeout() -> Duration {
    Duration::from_secs(10)
}

impl HttpOptions {
    /// The endpoint `url`, no extra headers, proxies from the environment.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use conduit_mcp::HttpOptions;
    ///
    /// let options = HttpOptions::new("https://mcp.example.com/mcp");
    /// assert!(options.headers.is_empty() && options.proxy_from_env);
    /// assert_eq!(options.connect_timeout, Duration::from_secs(10));
    /// ```
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            headers: Vec::new(),
            proxy_from_env: true,
            connect_timeout: default_connect_timeout(),
            #[cfg(feature = "http")]
            oauth: None,
        }
    }

    /// How its HTTP clients connect.
    #[cfg(feature = "http")]
    pub(crate) fn connect(&self) -> crate::transport::http::http_client::Connect {
        crate::transport::http::http_client::Connect::new(self.connect_timeout, self.proxy_from_env)
    }

    /// Authorizes with `oauth` when the server asks (a 401, or a 403 for
    /// more scope; feature `http`); see [`oauth`](crate::transport::http::oauth).
    /// Default none.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::{AuthorizationRequest, AuthorizationResponse, OAuth, OAuthConfig};
    /// use conduit_mcp::HttpOptions;
    ///
    /// let authorizer = |req: AuthorizationRequest| async move {
    ///     println!("open {}", req.url);
    ///     AuthorizationResponse::from_redirect("/callback?code=c&state=s")
    ///         .map_err(|e| e.to_string())
    /// };
    /// let oauth = OAuth::new(OAuthConfig::new("http://127.0.0.1:8765/callback", authorizer));
    /// let options = HttpOptions::new("https://mcp.example.com/mcp").oauth(oauth.clone());
    /// assert_eq!(options.oauth, Some(oauth));
    /// ```
    #[cfg(feature = "http")]
    pub fn oauth(mut self, oauth: crate::transport::http::oauth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Sets one header (replacing an earlier value of the same name,
    /// compared case-insensitively). The value is held as a [`Secret`].
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::HttpOptions;
    ///
    /// let options = HttpOptions::new("https://mcp.example.com/mcp")
    ///     .header("Authorization", "Bearer old")
    ///     .header("authorization", "Bearer s3cr3t");
    /// assert_eq!(options.headers.len(), 1);
    /// assert_eq!(options.headers[0].1.expose(), "Bearer s3cr3t");
    /// assert!(!format!("{options:?}").contains("s3cr3t"));
    /// ```
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        set_header(&mut self.headers, name.into(), Secret::new(value));
        self
    }

    /// `scheme://host:port/path` of the endpoint, without credentials or
    /// query: what logs and names may show.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::HttpOptions;
    ///
    /// let options = HttpOptions::new("https://user:pw@mcp.example.com:8443/mcp?api_key=k");
    /// assert_eq!(options.display_url(), "https://mcp.example.com:8443/mcp");
    /// ```
    pub fn display_url(&self) -> String {
        display_url(&self.url)
    }

    /// Checks the URL and the headers; the error names the key.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let url = self.url.trim();
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| {
                ConfigError::new(
                    "url",
                    format!("{} is not an http:// or https:// URL", display_url(url)),
                )
            })?;
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let host = authority.rsplit('@').next().unwrap_or_default();
        if host.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ConfigError::new(
                "url",
                format!("{} has no host or contains whitespace", display_url(url)),
            ));
        }
        for (name, value) in &self.headers {
            let token_ok = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !token_ok {
                return Err(ConfigError::new(
                    "headers",
                    format!("{name:?} is not a valid header name"),
                ));
            }
            if value
                .expose()
                .bytes()
                .any(|b| b == b'\r' || b == b'\n' || b == 0)
            {
                return Err(ConfigError::new(
                    "headers",
                    format!("the value of {name:?} contains CR, LF or NUL"),
                ));
            }
        }
        if self.connect_timeout.is_zero() {
            return Err(ConfigError::new("connect_timeout", "must be positive"));
        }
        Ok(())
    }
}

/// Sets `name` in `headers`, replacing a value of the same name (HTTP
/// header names are case-insensitive).
pub(crate) fn set_header(headers: &mut Vec<(String, Secret)>, name: String, value: Secret) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&name));
    headers.push((name, value));
}

/// Headers as a JSON object of secrets (written redacted).
mod header_map {
    use std::fmt;

    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    use crate::secret::Secret;

    pub(super) fn serialize<S: Serializer>(
        h: &[(String, Secret)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(h.len()))?;
        for (k, v) in h {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(String, Secret)>, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = Vec<(String, Secret)>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of header values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Secret>()? {
                    super::set_header(&mut out, k, v);
                }
                Ok(out)
            }
        }
        d.deserialize_map(Pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_urls_and_headers_are_refused_by_key() {
        let key = |o: HttpOptions| o.validate().unwrap_err().key;
        assert_eq!(key(HttpOptions::new("ftp://x/")), "url");
        assert_eq!(key(HttpOptions::new("http:///mcp")), "url");
        assert_eq!(key(HttpOptions::new("http://a b/")), "url");
        assert_eq!(
            key(HttpOptions::new("http://x/").header("Bad Name", "v")),
            "headers"
        );
        assert_eq!(
            key(HttpOptions::new("http://x/").header("X-A", "v\r\nInjected: 1")),
            "headers"
        );
        assert!(HttpOptions::new("https://x.example/mcp")
            .header("Authorization", "Bearer t")
            .validate()
            .is_ok());
    }

    #[test]
    fn headers_serialise_redacted_and_replace_case_insensitively() {
        let o = HttpOptions::new("http://x/")
            .header("authorization", "Bearer one")
            .header("Authorization", "Bearer two");
        assert_eq!(o.headers.len(), 1);
        assert_eq!(o.headers[0].1.expose(), "Bearer two");
        let text = serde_json::to_string(&o).unwrap();
        assert!(!text.contains("Bearer"), "{text}");
        assert!(!format!("{o:?}").contains("Bearer"));
        let back: HttpOptions =
            serde_json::from_str(r#"{"url": "http://x/", "headers": {"X-Key": "k"}}"#).unwrap();
        assert_eq!(back.headers[0].1.expose(), "k");
        assert!(back.proxy_from_env);
    }
}
