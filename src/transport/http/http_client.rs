//! The reqwest client of one Streamable HTTP server, shared by its link and
//! its OAuth requests: one place decides timeouts, proxies and redirects.

use std::time::Duration;

use crate::error::ConfigError;

/// How a server's HTTP clients connect (from its `HttpOptions`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Connect {
    /// Time allowed to open a connection (TCP and TLS).
    timeout: Duration,
    /// Use the proxy the environment names.
    proxy_from_env: bool,
}

impl Connect {
    #[inline]
    pub(crate) fn new(timeout: Duration, proxy_from_env: bool) -> Self {
        Self {
            timeout,
            proxy_from_env,
        }
    }
}

/// The HTTP client for a server: its connect timeout and proxy settings,
/// redirects never followed.
pub(crate) fn build(connect: Connect) -> Result<reqwest::Client, ConfigError> {
    builder(connect)
        .build()
        .map_err(|e| ConfigError::new("http", format!("could not build the HTTP client: {e}")))
}

/// [`build`]'s settings, to add to.
pub(crate) fn builder(connect: Connect) -> reqwest::ClientBuilder {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(connect.timeout)
        .pool_idle_timeout(Duration::from_secs(60))
        .user_agent(concat!("conduit-mcp/", env!("CARGO_PKG_VERSION")))
        // A redirect would re-send the headers (a token) elsewhere.
        .redirect(reqwest::redirect::Policy::none());
    if !connect.proxy_from_env {
        builder = builder.no_proxy();
    }
    builder
}
