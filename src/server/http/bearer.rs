//! Bearer tokens: which of a set of tokens a request carries
//! ([`BearerTokens`]), and the tower [`Layer`](tower::Layer) that lets in
//! only requests that carry one ([`BearerLayer`]).

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::{header, HeaderMap, Request, Response};
use axum::response::IntoResponse;

use crate::secret::Secret;

use super::admission::AdmissionFuture;
use super::Rejection;

/// Tokens, and what each one stands for (a client's name, its grant, or
/// `()`): the token of a request's `Authorization: Bearer` header is
/// compared with every one of them, in time that depends on the lengths
/// only, so the answer's timing tells nothing of a token.
///
/// ```
/// use conduit_mcp::secret::Secret;
/// use conduit_mcp::server::http::BearerTokens;
///
/// let tokens = BearerTokens::new()
///     .token(Secret::new("alice-0123456789abcdef"), "alice")
///     .token(Secret::new("bob-0123456789abcdef"), "bob");
/// let mut headers = axum::http::HeaderMap::new();
/// headers.insert("authorization", "Bearer bob-0123456789abcdef".parse()?);
/// assert_eq!(tokens.find(&headers), Some(&"bob"));
/// assert_eq!(tokens.find(&axum::http::HeaderMap::new()), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct BearerTokens<T> {
    entries: Vec<(Secret, T)>,
}

impl<T> std::fmt::Debug for BearerTokens<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never a token.
        f.debug_struct("BearerTokens")
            .field("tokens", &self.entries.len())
            .finish()
    }
}

impl<T> Default for BearerTokens<T> {
    fn default() -> Self {
        BearerTokens {
            entries: Vec::new(),
        }
    }
}

impl<T> BearerTokens<T> {
    /// No tokens (nothing is found).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::http::BearerTokens;
    ///
    /// let tokens: BearerTokens<String> = BearerTokens::new();
    /// assert!(tokens.is_empty());
    /// assert_eq!(tokens.find_token("anything"), None);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `token`, standing for `value`. When two tokens are equal, the
    /// first added is found.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::secret::Secret;
    /// use conduit_mcp::server::http::BearerTokens;
    ///
    /// let tokens = BearerTokens::new()
    ///     .token(Secret::new("ci-0123456789abcdef"), "ci")
    ///     .token(Secret::new("ops-0123456789abcdef"), "ops");
    /// assert_eq!(tokens.find_token("ops-0123456789abcdef"), Some(&"ops"));
    /// ```
    pub fn token(mut self, token: Secret, value: T) -> Self {
        self.entries.push((token, value));
        self
    }

    /// Whether it holds no token.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::secret::Secret;
    /// use conduit_mcp::server::http::BearerTokens;
    ///
    /// let tokens = BearerTokens::new().token(Secret::new("ci-0123456789abcdef"), ());
    /// assert!(!tokens.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What the request's bearer token stands for, if it is one of these
    /// (the scheme's name in any case, as RFC 7235 says).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::secret::Secret;
    /// use conduit_mcp::server::http::BearerTokens;
    ///
    /// let tokens = BearerTokens::new().token(Secret::new("ci-0123456789abcdef"), "ci");
    /// let mut headers = axum::http::HeaderMap::new();
    /// headers.insert("authorization", "bearer ci-0123456789abcdef".parse()?); // any case
    /// assert_eq!(tokens.find(&headers), Some(&"ci"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn find(&self, headers: &HeaderMap) -> Option<&T> {
        self.find_token(given(headers)?)
    }

    /// What `token` stands for, if it is one of these.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::secret::Secret;
    /// use conduit_mcp::server::http::BearerTokens;
    ///
    /// let tokens = BearerTokens::new().token(Secret::new("ci-0123456789abcdef"), "ci");
    /// assert_eq!(tokens.find_token("ci-0123456789abcdef"), Some(&"ci"));
    /// assert_eq!(tokens.find_token("ci-guess"), None);
    /// ```
    pub fn find_token(&self, token: &str) -> Option<&T> {
        let mut found = None;
        // Every token compared, found or not: the time is the same.
        for (t, value) in &self.entries {
            if same_secret(token.as_bytes(), t.expose().as_bytes()) && found.is_none() {
                found = Some(value);
            }
        }
        found
    }
}

/// The token of an `Authorization: Bearer` header.
fn given(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(rest.trim())
}

/// Compares in time that depends on the lengths only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

/// Lets in a request that carries one of its [`BearerTokens`], with what
/// the token stands for put in the request's extensions (a handler takes
/// it with `Extension<T>`); refuses any other with 401
/// ([`Rejection::Unauthorized`], `WWW-Authenticate: Bearer`).
///
/// [`HttpServer::layer`](super::HttpServer::layer) puts it on a server;
/// the gateway's client tokens are this layer too.
///
/// ```
/// use conduit_mcp::secret::Secret;
/// use conduit_mcp::server::http::{BearerLayer, BearerTokens, Principal};
/// use tower::ServiceExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let tokens = BearerTokens::new().token(Secret::new("ci-0123456789abcdef"), Principal::new("ci"));
/// let app = axum::Router::new()
///     .route(
///         "/whoami",
///         axum::routing::get(|axum::Extension(p): axum::Extension<Principal>| async move {
///             p.name().to_owned()
///         }),
///     )
///     .layer(BearerLayer::new(tokens));
/// let anonymous = axum::http::Request::get("/whoami").body(axum::body::Body::empty())?;
/// assert_eq!(app.clone().oneshot(anonymous).await?.status(), 401);
/// let ci = axum::http::Request::get("/whoami")
///     .header("authorization", "Bearer ci-0123456789abcdef")
///     .body(axum::body::Body::empty())?;
/// assert_eq!(app.oneshot(ci).await?.status(), 200);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct BearerLayer<T> {
    tokens: Arc<BearerTokens<T>>,
}

impl<T> Clone for BearerLayer<T> {
    fn clone(&self) -> Self {
        BearerLayer {
            tokens: self.tokens.clone(),
        }
    }
}

impl<T> BearerLayer<T> {
    /// Lets in the holders of `tokens`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::secret::Secret;
    /// use conduit_mcp::server::http::{BearerLayer, BearerTokens};
    /// use tower::ServiceExt;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let tokens = BearerTokens::new().token(Secret::new("ci-0123456789abcdef"), ());
    /// let app = axum::Router::new()
    ///     .route("/deploy", axum::routing::post(|| async { "deployed" }))
    ///     .layer(BearerLayer::new(tokens));
    /// let anonymous = axum::http::Request::post("/deploy").body(axum::body::Body::empty())?;
    /// assert_eq!(app.oneshot(anonymous).await?.status(), 401);
    /// # Ok(()) }
    /// ```
    pub fn new(tokens: BearerTokens<T>) -> Self {
        BearerLayer {
            tokens: Arc::new(tokens),
        }
    }
}

impl<S, T> tower::Layer<S> for BearerLayer<T> {
    type Service = Bearer<S, T>;

    fn layer(&self, inner: S) -> Bearer<S, T> {
        Bearer {
            inner,
            tokens: self.tokens.clone(),
        }
    }
}

/// The service of a [`BearerLayer`] around `S`.
#[derive(Debug)]
pub struct Bearer<S, T> {
    inner: S,
    tokens: Arc<BearerTokens<T>>,
}

impl<S: Clone, T> Clone for Bearer<S, T> {
    fn clone(&self) -> Self {
        Bearer {
            inner: self.inner.clone(),
            tokens: self.tokens.clone(),
        }
    }
}

impl<S, T, B> tower::Service<Request<B>> for Bearer<S, T>
where
    S: tower::Service<Request<B>, Response = Response<axum::body::Body>>,
    T: Clone + Send + Sync + 'static,
{
    type Response = Response<axum::body::Body>;
    type Error = S::Error;
    type Future = AdmissionFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        match self.tokens.find(req.headers()) {
            Some(value) => {
                req.extensions_mut().insert(value.clone());
                AdmissionFuture::admitted(self.inner.call(req))
            }
            None => {
                tracing::debug!("request refused: no valid bearer token");
                AdmissionFuture::refused(Rejection::Unauthorized.into_response())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        assert!(!same_secret(b"", b"a"));
    }

    #[test]
    fn the_scheme_is_any_case_and_the_token_whole() {
        let tokens = BearerTokens::new().token(Secret::new("t0ken"), 1);
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, v.parse().unwrap());
            tokens.find(&h).copied()
        };
        assert_eq!(with("Bearer t0ken"), Some(1));
        assert_eq!(with("bearer  t0ken "), Some(1));
        assert_eq!(with("Basic t0ken"), None);
        assert_eq!(with("Bearer t0ke"), None);
        assert_eq!(with("Bearer t0ken1"), None);
        assert_eq!(with("Bearert0ken"), None);
    }
}
