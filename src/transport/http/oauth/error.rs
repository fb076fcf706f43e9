//! [`AuthError`]: why authorizing with a protected server failed. Every
//! variant carries what happened (URLs without their query, statuses,
//! OAuth error codes), never a token, a code or a client secret.

/// Why the client could not get (or keep) authorization for a protected
/// server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A metadata document could not be fetched or read.
    #[error("discovery failed at {url}: {problem}")]
    Discovery {
        /// Where (no query).
        url: String,
        /// What went wrong.
        problem: String,
    },
    /// The protected resource metadata names another resource than the
    /// server this client talks to (RFC 9728 section 3.3).
    #[error("the protected resource metadata is for {resource}, not for {server}")]
    ResourceMismatch {
        /// The metadata's `resource`.
        resource: String,
        /// The server's URL.
        server: String,
    },
    /// The authorization server's metadata names another issuer than the
    /// one it was fetched for (RFC 8414 section 3.3): it is not used.
    #[error("the authorization server metadata says issuer {found:?}, expected {expected:?}")]
    IssuerMismatch {
        /// The issuer the metadata was fetched for.
        expected: String,
        /// The metadata's `issuer`.
        found: String,
    },
    /// No authorization server metadata at any well-known location.
    #[error("no authorization server metadata for {issuer}")]
    NoMetadata {
        /// The authorization server.
        issuer: String,
    },
    /// The authorization server does not offer PKCE with S256, which the
    /// client requires.
    #[error("the authorization server {issuer} does not support PKCE with S256")]
    NoPkce {
        /// The authorization server.
        issuer: String,
    },
    /// A server's answer pointed the client at a URL it does not fetch
    /// (nor send the browser to): see [`UrlRule`] for the rules. Nothing
    /// was sent there.
    #[error("{what} at {origin} is refused: {rule}")]
    RefusedUrl {
        /// What the URL is for (`the protected resource metadata`, `the
        /// token endpoint`, ...).
        what: &'static str,
        /// Its origin, `scheme://host:port` (no credentials, path or query).
        origin: String,
        /// The rule it breaks.
        rule: UrlRule,
    },
    /// No way to identify the client to this authorization server: no
    /// pre-registered id, no client metadata document it accepts, no
    /// registration endpoint.
    #[error("no client registration possible with {issuer}: configure a client id")]
    NoRegistration {
        /// The authorization server.
        issuer: String,
    },
    /// Dynamic client registration was refused.
    #[error("client registration at {url} failed: {problem}")]
    Registration {
        /// The registration endpoint.
        url: String,
        /// The status and OAuth error.
        problem: String,
    },
    /// The application's [`Authorizer`](super::Authorizer) failed.
    #[error("authorization was not completed: {0}")]
    Authorizer(String),
    /// The authorization server answered the authorization request with an
    /// error (for example `access_denied`).
    #[error("the authorization server refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The OAuth error code.
        error: String,
        /// Its `error_description`.
        description: Option<String>,
    },
    /// The authorization response is not the answer to this client's
    /// request (its `state` differs): possible CSRF, not used.
    #[error("the authorization response's state does not match the request")]
    StateMismatch,
    /// The authorization response has no `code`.
    #[error("the authorization response carries no code")]
    NoCode,
    /// The authorization response's `iss` is missing although the server
    /// announced it, or names another issuer (RFC 9207): not used.
    #[error("the authorization response's issuer is {found:?}, expected {expected:?}")]
    IssMismatch {
        /// The issuer the request went to.
        expected: String,
        /// The response's `iss` (`None`: absent).
        found: Option<String>,
    },
    /// The token endpoint refused or failed.
    #[error("the token request to {url} failed: {problem}")]
    Token {
        /// The token endpoint.
        url: String,
        /// The status and OAuth error.
        problem: String,
    },
    /// The server kept refusing: this many authorizations in a row did not
    /// get a request through.
    #[error("gave up after {attempts} authorizations in a row that the server did not accept")]
    RetryLimit {
        /// Authorizations tried.
        attempts: u32,
    },
    /// The server answered `status` asking for authorization, and
    /// authorizing failed.
    #[error("the server asked for authorization (HTTP {status}), which failed: {error}")]
    Challenged {
        /// The status (401, or 403 for more scope).
        status: u16,
        /// Why authorizing failed.
        error: Box<AuthError>,
    },
    /// The token store failed.
    #[error("token store: {0}")]
    Store(String),
    /// [`OAuth::login`](super::OAuth::login) could not reach the server at
    /// all (connection refused, DNS, TLS, a timeout): nothing was asked
    /// about authorization.
    #[error("cannot reach {url}: {problem}")]
    Unreachable {
        /// The server (no query).
        url: String,
        /// What went wrong.
        problem: String,
    },
}

/// A rule of the URLs the authorization flow reaches, all of which come
/// from a server's answers (see [`AuthError::RefusedUrl`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlRule {
    /// `https://` only; `http://` only when both the MCP server and the
    /// URL are on loopback (a loopback IP literal or `localhost`).
    #[error("it is not https:// (plain http:// only from a server on loopback to loopback)")]
    NotHttps,
    /// User credentials in the URL.
    #[error("it carries user credentials")]
    Credentials,
    /// A query (or fragment) where the specification defines none: the
    /// resource metadata URL, the authorization server's issuer.
    #[error("it has a query or a fragment, which the specification does not define here")]
    Query,
    /// An address that is not on the public Internet (loopback, private,
    /// link-local, ...), from an MCP server that is not on loopback, off
    /// the server's own origin. For a host name: one of the addresses it
    /// resolves to.
    #[error("{address} is a {kind} address, and the server is not on loopback")]
    Internal {
        /// The address.
        address: std::net::IpAddr,
        /// What it is (`loopback`, `private`, `link-local`, ...).
        kind: &'static str,
    },
}
