//! The reqwest client of one Streamable HTTP server, shared by its link and
//! its OAuth requests: one place decides timeouts, proxies and redirects.

use std::time::Duration;

use crate::error::ConfigError;
use crate::transport::http_options::HttpOptions;

/// The HTTP client for the server of `http`: its connect timeout and
/// proxy settings, redirects never followed.
pub(crate) fn build(http: &HttpOptions) -> Result<reqwest::Client, ConfigError> {
    builder(http)
        .build()
        .map_err(|e| ConfigError::new("http", format!("could not build the HTTP client: {e}")))
}

/// [`build`]'s settings, to add to.
pub(crate) fn builder(http: &HttpOptions) -> reqwest::ClientBuilder {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(http.connect_timeout)
        .pool_idle_timeout(Duration::from_secs(60))
        .user_agent(concat!("conduit-mcp/", env!("CARGO_PKG_VERSION")))
        // A redirect would re-send the headers (a token) elsewhere.
        .redirect(reqwest::redirect::Policy::none());
    if !http.proxy_from_env {
        builder = builder.no_proxy();
    }
    builder
}
