//! [`OAuth::login`]: authorizing with a server before any client talks to
//! it (the one part of OAuth that reads a client's HTTP options).

use super::{fetch, parse, send, AuthError, FlowClient, OAuth};
use crate::transport::http::http_client;
use crate::transport::http_options::HttpOptions;

impl OAuth {
    /// Authorizes with the server of `http` now, before any client talks
    /// to it (an interactive login does not then race a request's
    /// timeout): sends it one harmless request (a `server/discover`) with
    /// the token kept for it, if any, and authorizes (or refreshes) if it
    /// asks. `Ok(true)` when the server asked for authorization and got it,
    /// `Ok(false)` when the request went through as it was (the server is
    /// not protected, or the kept token was accepted);
    /// [`AuthError::Unreachable`] when the request could not be sent.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::oauth::OAuth;
    /// use conduit_mcp::{Client, ClientConfig};
    ///
    /// # async fn example(oauth: OAuth) -> Result<(), Box<dyn std::error::Error>> {
    /// let config = ClientConfig::http("https://mcp.example.com/mcp").oauth(oauth.clone());
    /// if oauth.login(config.transport.as_http().unwrap()).await? {
    ///     println!("logged in");
    /// }
    /// let client = Client::start(config).await?; // no login in the middle of a call
    /// # let _ = client;
    /// # Ok(()) }
    /// ```
    pub async fn login(&self, http: &HttpOptions) -> Result<bool, AuthError> {
        let url = parse(http.url.trim())?;
        let unbuilt = |e: crate::error::ConfigError| AuthError::Discovery {
            url: fetch::shown(&http.url),
            problem: e.to_string(),
        };
        let client = http_client::build(http.connect()).map_err(unbuilt)?;
        let flow = FlowClient::new(http.connect(), url.clone()).map_err(unbuilt)?;
        let version = crate::protocol::STATELESS_VERSION;
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": "conduit-login",
            "method": "server/discover",
            "params": { "_meta": {
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {},
            }},
        })
        .to_string();
        let build = || {
            let mut req = client
                .post(url.clone())
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", version)
                .header("mcp-method", "server/discover")
                // A server that never answers must not hold the login.
                .timeout(fetch::REQUEST_TIMEOUT)
                .body(body.clone());
            for (k, v) in &http.headers {
                req = req.header(k.as_str(), v.expose());
            }
            req
        };
        let before = self.bearer(&url).await?;
        match self
            .send(&flow, &url, &fetch::shown(url.as_str()), build)
            .await
        {
            Ok(_) => Ok(self.bearer(&url).await? != before),
            Err(send::SendError::Auth(Some(status), e)) => Err(AuthError::Challenged {
                status: status.as_u16(),
                error: Box::new(e),
            }),
            Err(send::SendError::Auth(None, e)) => Err(e),
            Err(send::SendError::Http(problem)) => Err(AuthError::Unreachable {
                url: fetch::shown(url.as_str()),
                problem,
            }),
        }
    }
}
