//! The interactive part, which is the application's: [`Authorizer`] takes
//! the authorization URL to the user (a browser) and brings back what the
//! authorization server sent to the redirect URI.

use std::future::Future;
use std::pin::Pin;

use super::AuthError;
use crate::secret::Secret;

/// What the user must visit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizationRequest {
    /// The authorization URL (with PKCE challenge, state, scope and
    /// resource): open it in a browser, or print it.
    pub url: String,
    /// Where the authorization server will send the user back.
    pub redirect_uri: String,
}

/// What came back to the redirect URI.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizationResponse {
    /// The authorization code.
    pub code: Secret,
    /// The `state` parameter (checked against the request's).
    pub state: Option<String>,
    /// The `iss` parameter (RFC 9207; checked against the issuer).
    pub iss: Option<String>,
}

impl std::fmt::Debug for AuthorizationResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationResponse")
            .field("code", &self.code)
            .field("state", &self.state.as_ref().map(|_| "***"))
            .field("iss", &self.iss)
            .finish()
    }
}

impl AuthorizationResponse {
    /// A response from its parts.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::AuthorizationResponse;
    /// use conduit_mcp::Secret;
    ///
    /// // What a custom-scheme handler received, already parsed.
    /// let response = AuthorizationResponse::new(Secret::new("abc"), Some("xyz".into()), None);
    /// assert_eq!(response.code.expose(), "abc");
    /// assert!(!format!("{response:?}").contains("xyz"));
    /// ```
    pub fn new(code: Secret, state: Option<String>, iss: Option<String>) -> Self {
        Self { code, state, iss }
    }

    /// Reads the redirect the authorization server sent (the whole URL, or
    /// its query): `code`, `state` and `iss`, or the `error` it reported.
    ///
    /// ```
    /// use conduit_mcp::oauth::AuthorizationResponse;
    /// let r = AuthorizationResponse::from_redirect(
    ///     "http://127.0.0.1:8765/callback?code=abc&state=xyz&iss=https%3A%2F%2Fauth.example.com",
    /// )?;
    /// assert_eq!(r.code.expose(), "abc");
    /// assert_eq!(r.iss.as_deref(), Some("https://auth.example.com"));
    /// assert!(AuthorizationResponse::from_redirect("/cb?error=access_denied").is_err());
    /// # Ok::<(), conduit_mcp::oauth::AuthError>(())
    /// ```
    pub fn from_redirect(redirect: &str) -> Result<Self, AuthError> {
        let query = redirect.split_once('?').map_or(redirect, |(_, q)| q);
        let query = query.split('#').next().unwrap_or_default();
        let (mut code, mut state, mut iss, mut error, mut description) =
            (None, None, None, None, None);
        for (k, v) in form_urlencoded_pairs(query) {
            let slot = match k.as_str() {
                "code" => &mut code,
                "state" => &mut state,
                "iss" => &mut iss,
                "error" => &mut error,
                "error_description" => &mut description,
                _ => continue,
            };
            slot.get_or_insert(v);
        }
        if let Some(error) = error {
            return Err(AuthError::Denied { error, description });
        }
        let code = code.filter(|c| !c.is_empty()).ok_or(AuthError::NoCode)?;
        Ok(Self {
            code: Secret::new(code),
            state,
            iss,
        })
    }
}

/// `application/x-www-form-urlencoded` pairs, decoded.
fn form_urlencoded_pairs(query: &str) -> Vec<(String, String)> {
    let url = reqwest::Url::parse("http://x/").map(|mut u| {
        u.set_query(Some(query));
        u
    });
    match url {
        Ok(u) => u
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The future an [`Authorizer`] returns.
pub type AuthorizeFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AuthorizationResponse, String>> + Send + 'a>>;

/// Takes the user through the authorization server's page and returns what
/// it sent back to the redirect URI. The error is a message for the user;
/// it must not contain secrets.
///
/// Any `Fn(AuthorizationRequest) -> impl Future<Output = Result<AuthorizationResponse, String>>`
/// is one:
///
/// ```
/// use conduit_mcp::oauth::{Authorizer, AuthorizationRequest, AuthorizationResponse};
/// fn needs(_: impl Authorizer) {}
/// needs(|req: AuthorizationRequest| async move {
///     eprintln!("open {}", req.url);
///     // ... wait for the browser to come back to req.redirect_uri ...
///     AuthorizationResponse::from_redirect("http://127.0.0.1:8765/cb?code=c&state=s")
///         .map_err(|e| e.to_string())
/// });
/// ```
pub trait Authorizer: Send + Sync + 'static {
    /// Sends the user to `request.url`; resolves with the redirect's
    /// parameters.
    fn authorize(&self, request: AuthorizationRequest) -> AuthorizeFuture<'_>;
}

impl<F, Fut> Authorizer for F
where
    F: Fn(AuthorizationRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AuthorizationResponse, String>> + Send + 'static,
{
    fn authorize(&self, request: AuthorizationRequest) -> AuthorizeFuture<'_> {
        Box::pin(self(request))
    }
}
