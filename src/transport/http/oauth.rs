//! OAuth 2.1 for protected Streamable HTTP servers (feature `http`), as
//! the MCP authorization specification describes it.
//!
#![doc = include_str!("../../../docs/oauth.md")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use reqwest::Url;
use tracing::{debug, info, warn};

mod authorizer;
mod challenge;
mod discovery;
mod error;
mod fetch;
mod grant;
mod guard;
mod login;
mod register;
mod send;
mod store;

pub use authorizer::{AuthorizationRequest, AuthorizationResponse, AuthorizeFuture, Authorizer};
pub(crate) use challenge::Challenge;
pub use error::{AuthError, UrlRule};
pub(crate) use fetch::describe;
pub(crate) use guard::FlowClient;
pub(crate) use send::SendError;
pub use store::{
    FileStore, MemoryStore, RegisteredClient, StoredAuth, TokenAuthMethod, TokenStore, Tokens,
};

use crate::secret::Secret;

/// What the client needs to authorize: how it is known to authorization
/// servers, where they send the user back, who takes the user there, and
/// where tokens are kept.
#[non_exhaustive]
pub struct OAuthConfig {
    /// `client_name` in dynamic registration (default `conduit-mcp`).
    pub client_name: String,
    /// The redirect URI (for a native application, `http://127.0.0.1:PORT/...`
    /// on which it listens).
    pub redirect_uri: String,
    /// A client registered out of band (used with any authorization
    /// server that has no registration of its own in the store).
    pub client: Option<RegisteredClient>,
    /// The URL of this client's metadata document (a Client ID Metadata
    /// Document), used as its client id where the server supports them.
    pub client_metadata_url: Option<String>,
    /// Ask for `offline_access` (a refresh token) when the authorization
    /// server lists it (default on).
    pub offline_access: bool,
    /// Authorizations in a row (without a request getting through between
    /// them) before giving up (default 3).
    pub max_attempts: u32,
    /// Takes the user to the authorization server.
    pub authorizer: Arc<dyn Authorizer>,
    /// Keeps registrations and tokens (default: in memory).
    pub store: Arc<dyn TokenStore>,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_name", &self.client_name)
            .field("redirect_uri", &self.redirect_uri)
            .field("client", &self.client)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("offline_access", &self.offline_access)
            .field("max_attempts", &self.max_attempts)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    /// A configuration redirecting to `redirect_uri`, the user taken there
    /// by `authorizer`, tokens kept in memory.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::{AuthorizationRequest, AuthorizationResponse, OAuthConfig};
    ///
    /// let authorizer = |req: AuthorizationRequest| async move {
    ///     println!("open {} in a browser", req.url);
    ///     // ... wait for the browser to come back to req.redirect_uri ...
    ///     AuthorizationResponse::from_redirect("/callback?code=c&state=s")
    ///         .map_err(|e| e.to_string())
    /// };
    /// let config = OAuthConfig::new("http://127.0.0.1:8765/callback", authorizer);
    /// assert_eq!(config.client_name, "conduit-mcp");
    /// assert!(config.offline_access && config.max_attempts == 3);
    /// ```
    pub fn new(redirect_uri: impl Into<String>, authorizer: impl Authorizer) -> Self {
        Self {
            client_name: "conduit-mcp".into(),
            redirect_uri: redirect_uri.into(),
            client: None,
            client_metadata_url: None,
            offline_access: true,
            max_attempts: 3,
            authorizer: Arc::new(authorizer),
            store: Arc::new(MemoryStore::new()),
        }
    }

    /// Sets the name given in dynamic registration (default
    /// `conduit-mcp`).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Uses a client registered out of band (with a secret: a
    /// confidential client).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::{AuthorizationRequest, AuthorizationResponse, OAuthConfig, TokenAuthMethod};
    /// use conduit_mcp::Secret;
    ///
    /// # let authorizer = |_: AuthorizationRequest| async { Err::<AuthorizationResponse, String>("no browser".into()) };
    /// let config = OAuthConfig::new("http://127.0.0.1:8765/callback", authorizer)
    ///     .client("my-app", Some(Secret::new("app-secret")));
    /// let client = config.client.as_ref().unwrap();
    /// assert_eq!(client.client_id, "my-app");
    /// assert_eq!(client.auth_method, TokenAuthMethod::ClientSecretBasic);
    /// ```
    pub fn client(mut self, client_id: impl Into<String>, client_secret: Option<Secret>) -> Self {
        self.client = Some(RegisteredClient::new(client_id, client_secret));
        self
    }

    /// Uses `url` (this client's metadata document) as the client id
    /// where the authorization server supports Client ID Metadata Documents
    /// (default none).
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Keeps registrations and tokens in `store` (default: a
    /// [`MemoryStore`], for the life of the process).
    pub fn store(mut self, store: impl TokenStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Whether to ask for `offline_access` where offered (default on).
    pub fn offline_access(mut self, on: bool) -> Self {
        self.offline_access = on;
        self
    }

    /// Authorizations in a row before giving up (default 3).
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }
}

/// Authorization for protected HTTP servers: a cheap handle (clones share
/// the tokens) to put in a client's HTTP options (`HttpOptions::oauth`).
/// See the [module docs](self).
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OAuth").field(&self.inner.config).finish()
    }
}

impl PartialEq for OAuth {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

struct Inner {
    config: OAuthConfig,
    servers: Mutex<HashMap<String, Arc<ServerAuth>>>,
}

/// The authorization of one server.
struct ServerAuth {
    /// The store's key: the server's URL without query.
    key: String,
    /// One discovery and authorization at a time.
    flow: tokio::sync::Mutex<()>,
    state: Mutex<Option<StoredAuth>>,
    /// Authorizations since a request last got through.
    attempts: AtomicU32,
}

impl ServerAuth {
    fn get(&self) -> Option<StoredAuth> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, auth: StoredAuth) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = Some(auth);
    }
}

impl OAuth {
    /// Authorization as `config` says.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::{AuthorizationRequest, AuthorizationResponse, FileStore, OAuth, OAuthConfig};
    /// use conduit_mcp::ClientConfig;
    ///
    /// # let authorizer = |_: AuthorizationRequest| async { Err::<AuthorizationResponse, String>("no browser".into()) };
    /// let oauth = OAuth::new(
    ///     OAuthConfig::new("http://127.0.0.1:8765/callback", authorizer)
    ///         .store(FileStore::new("tokens.json")),
    /// );
    /// // Clones share the tokens: one handle may serve several clients.
    /// let a = ClientConfig::http("https://a.example.com/mcp").oauth(oauth.clone());
    /// let b = ClientConfig::http("https://b.example.com/mcp").oauth(oauth);
    /// # let _ = (a, b);
    /// ```
    pub fn new(config: OAuthConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                servers: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &OAuthConfig {
        &self.inner.config
    }

    fn server(&self, url: &Url) -> Arc<ServerAuth> {
        let key = fetch::shown(url.as_str());
        let mut map = self.inner.servers.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(key.clone())
            .or_insert_with(|| {
                Arc::new(ServerAuth {
                    key,
                    flow: tokio::sync::Mutex::new(()),
                    state: Mutex::new(None),
                    attempts: AtomicU32::new(0),
                })
            })
            .clone()
    }

    /// The record of `sa`, read from the store the first time.
    async fn loaded(&self, sa: &ServerAuth) -> Result<StoredAuth, AuthError> {
        if let Some(a) = sa.get() {
            return Ok(a);
        }
        let store = self.inner.config.store.clone();
        let key = sa.key.clone();
        let loaded = tokio::task::spawn_blocking(move || store.load(&key))
            .await
            .map_err(|e| AuthError::Store(e.to_string()))?
            .map_err(AuthError::Store)?
            .unwrap_or_default();
        sa.set(loaded.clone());
        Ok(loaded)
    }

    async fn save(&self, sa: &ServerAuth, auth: StoredAuth) -> Result<(), AuthError> {
        sa.set(auth.clone());
        let store = self.inner.config.store.clone();
        let key = sa.key.clone();
        tokio::task::spawn_blocking(move || store.save(&key, &auth))
            .await
            .map_err(|e| AuthError::Store(e.to_string()))?
            .map_err(AuthError::Store)
    }

    /// The access token to send to `server`, if there is one.
    pub(crate) async fn bearer(&self, server: &Url) -> Result<Option<Secret>, AuthError> {
        let sa = self.server(server);
        if let Some(a) = sa.get() {
            return Ok(a.tokens.map(|t| t.access_token));
        }
        let _flow = sa.flow.lock().await;
        Ok(self.loaded(&sa).await?.tokens.map(|t| t.access_token))
    }

    /// A request to `server` got through: the count of authorizations in
    /// a row starts again.
    pub(crate) fn accepted(&self, server: &Url) {
        let sa = self.server(server);
        sa.attempts.store(0, Ordering::Relaxed);
    }

    /// `server` refused `sent` (a 401, or a 403 asking for more scope, as
    /// `challenge` says): authorizes again, so that the request can be
    /// retried; an error when it cannot.
    pub(crate) async fn challenged(
        &self,
        http: &FlowClient,
        server: &Url,
        insufficient_scope: bool,
        challenge: &Challenge,
        sent: Option<&Secret>,
    ) -> Result<(), AuthError> {
        let sa = self.server(server);
        let _flow = sa.flow.lock().await;
        let mut auth = self.loaded(&sa).await?;
        let current = auth.tokens.as_ref().map(|t| &t.access_token);
        if current.is_some() && current != sent {
            // Another request authorized meanwhile: retry with its token.
            return Ok(());
        }
        let config = &self.inner.config;
        let attempts = sa.attempts.fetch_add(1, Ordering::Relaxed);
        if attempts >= config.max_attempts {
            sa.attempts.store(attempts, Ordering::Relaxed);
            warn!(server = %sa.key, attempts, "the server keeps refusing: authorization given up");
            return Err(AuthError::RetryLimit { attempts });
        }
        let found = discovery::discover(http, server, challenge).await?;
        if auth.issuer.as_ref() != found.issuer()
            && (auth.client.is_some() || auth.tokens.is_some())
        {
            info!(server = %sa.key, issuer = ?found.issuer(), "the authorization server changed: its registration and tokens are dropped");
            auth = StoredAuth::default();
        }
        auth.issuer = found.issuer().cloned();
        let issuer_name = found
            .issuer()
            .cloned()
            .unwrap_or_else(|| server.origin().ascii_serialization());
        // Its scopes still count for the next authorization (SEP-2350).
        let prior_scope = auth.tokens.as_ref().and_then(|t| t.scope.clone());
        // A refused token that can be refreshed, for the same scopes.
        if !insufficient_scope {
            let old = auth.tokens.take();
            if let (Some(client), Some(t)) = (&auth.client, &old) {
                if let Some(rt) = &t.refresh_token {
                    match grant::refresh(http, config, &found, client, rt, t.scope.as_deref()).await
                    {
                        Ok(fresh) => {
                            info!(server = %sa.key, "access token refreshed");
                            auth.tokens = Some(fresh);
                            return self.save(&sa, auth).await;
                        }
                        Err(e) => {
                            debug!(server = %sa.key, error = %e, "refresh failed: authorizing again")
                        }
                    }
                }
            }
        }
        let scopes = self.scopes(challenge, &found, prior_scope.as_deref());
        let client = register::client_for(
            http,
            config,
            &issuer_name,
            found.metadata(),
            auth.client.clone(),
        )
        .await?;
        auth.client = Some(client.clone());
        auth.tokens = None;
        self.save(&sa, auth.clone()).await?;
        info!(server = %sa.key, scopes = %scopes.join(" "), "authorizing");
        let tokens = grant::authorize(http, config, &found, &client, &scopes).await?;
        info!(server = %sa.key, "authorized");
        auth.tokens = Some(tokens);
        self.save(&sa, auth).await
    }

    /// The scopes to ask for: the challenge's, else the resource's
    /// `scopes_supported`, else none; with those of the previous token
    /// added (a step-up keeps what was granted), and `offline_access` where
    /// the authorization server offers it.
    fn scopes(
        &self,
        challenge: &Challenge,
        found: &discovery::Discovered,
        prior: Option<&str>,
    ) -> Vec<String> {
        fn add(scopes: &mut Vec<String>, s: &str) {
            if !s.is_empty() && !scopes.iter().any(|x| x == s) {
                scopes.push(s.to_owned());
            }
        }
        let mut scopes: Vec<String> = Vec::new();
        for s in prior.unwrap_or_default().split_whitespace() {
            add(&mut scopes, s);
        }
        match (challenge.scope(), found.resource_scopes()) {
            (Some(list), _) => list.split_whitespace().for_each(|s| add(&mut scopes, s)),
            (None, Some(list)) => list.iter().for_each(|s| add(&mut scopes, s)),
            (None, None) => {}
        }
        let offered = found
            .metadata()
            .scopes_supported()
            .is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        if self.inner.config.offline_access && offered && !scopes.is_empty() {
            add(&mut scopes, "offline_access");
        }
        scopes
    }

    /// Forgets the tokens kept for the server at `url` (its registration
    /// stays).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::{
    ///     AuthorizationRequest, AuthorizationResponse, MemoryStore, OAuth, OAuthConfig,
    ///     RegisteredClient, StoredAuth, TokenStore,
    /// };
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conduit_mcp::oauth::AuthError> {
    /// # let authorizer = |_: AuthorizationRequest| async { Err::<AuthorizationResponse, String>("no browser".into()) };
    /// let store = MemoryStore::new();
    /// let mut kept = StoredAuth::default();
    /// kept.client = Some(RegisteredClient::new("my-app", None));
    /// store.save("https://mcp.example.com/mcp", &kept).unwrap();
    /// let oauth = OAuth::new(OAuthConfig::new("http://127.0.0.1:8765/callback", authorizer).store(store));
    ///
    /// oauth.forget("https://mcp.example.com/mcp").await?; // the next request authorizes again
    /// let now = oauth.stored("https://mcp.example.com/mcp").await?;
    /// assert!(now.tokens.is_none() && now.client.is_some());
    /// # Ok(()) }
    /// ```
    pub async fn forget(&self, url: &str) -> Result<(), AuthError> {
        let sa = self.server(&parse(url)?);
        let _flow = sa.flow.lock().await;
        let mut auth = self.loaded(&sa).await?;
        auth.tokens = None;
        self.save(&sa, auth).await
    }

    /// What the store holds for the server at `url` (its URL without
    /// query is the key).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::{AuthorizationRequest, AuthorizationResponse, OAuth, OAuthConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), conduit_mcp::oauth::AuthError> {
    /// # let authorizer = |_: AuthorizationRequest| async { Err::<AuthorizationResponse, String>("no browser".into()) };
    /// let oauth = OAuth::new(OAuthConfig::new("http://127.0.0.1:8765/callback", authorizer));
    /// let auth = oauth.stored("https://mcp.example.com/mcp?session=1").await?;
    /// assert!(auth.tokens.is_none()); // not authorized yet
    /// match &auth.tokens {
    ///     Some(t) => println!("expires at {:?}, scope {:?}", t.expires_at, t.scope),
    ///     None => println!("no token kept"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn stored(&self, url: &str) -> Result<StoredAuth, AuthError> {
        let sa = self.server(&parse(url)?);
        let _flow = sa.flow.lock().await;
        self.loaded(&sa).await
    }
}

/// A server's URL, or why it is not one.
fn parse(url: &str) -> Result<Url, AuthError> {
    Url::parse(url).map_err(|e| AuthError::Discovery {
        url: fetch::shown(url),
        problem: e.to_string(),
    })
}
