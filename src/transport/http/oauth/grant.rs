//! The authorization code grant with PKCE (S256) and the refresh grant,
//! through the `oauth2` crate: the authorization URL (state, challenge,
//! scope, `resource`), the check of what came back (state, RFC 9207
//! `iss`), the code exchange and the refresh, each with the client's token
//! endpoint authentication and the `resource` parameter (RFC 8707).

use super::authorizer::{AuthorizationRequest, AuthorizationResponse};
use super::discovery::Discovered;
use super::fetch::{send, shown};
use super::guard::FlowClient;
use super::store::{RegisteredClient, TokenAuthMethod, Tokens};
use super::{AuthError, OAuthConfig};
use crate::secret::Secret;
use oauth2::basic::{BasicClient, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse, TokenUrl,
};

/// The `oauth2` client for `client` at the server `found` describes.
fn oauth_client(
    config: &OAuthConfig,
    found: &Discovered,
    client: &RegisteredClient,
) -> Result<
    BasicClient<
        oauth2::EndpointSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointSet,
    >,
    AuthError,
> {
    let md = found.metadata();
    let auth =
        AuthUrl::new(md.authorization_endpoint().clone()).map_err(|e| AuthError::Discovery {
            url: shown(md.authorization_endpoint()),
            problem: e.to_string(),
        })?;
    let token = TokenUrl::new(md.token_endpoint().clone()).map_err(|e| AuthError::Discovery {
        url: shown(md.token_endpoint()),
        problem: e.to_string(),
    })?;
    let redirect = RedirectUrl::new(config.redirect_uri.clone())
        .map_err(|e| AuthError::Authorizer(format!("the redirect URI is not a URL: {e}")))?;
    let mut c = BasicClient::new(ClientId::new(client.client_id.clone()))
        .set_auth_uri(auth)
        .set_token_uri(token)
        .set_redirect_uri(redirect);
    match (client.auth_method, &client.client_secret) {
        (TokenAuthMethod::None, _) | (_, None) => {
            c = c.set_auth_type(AuthType::RequestBody);
        }
        (TokenAuthMethod::ClientSecretBasic, Some(s)) => {
            c = c
                .set_client_secret(ClientSecret::new(s.expose().to_owned()))
                .set_auth_type(AuthType::BasicAuth);
        }
        (TokenAuthMethod::ClientSecretPost, Some(s)) => {
            c = c
                .set_client_secret(ClientSecret::new(s.expose().to_owned()))
                .set_auth_type(AuthType::RequestBody);
        }
    }
    Ok(c)
}

/// Runs the authorization code grant: the user authorizes through the
/// application's authorizer, the code comes back and is exchanged.
pub(crate) async fn authorize(
    http: &FlowClient,
    config: &OAuthConfig,
    found: &Discovered,
    client: &RegisteredClient,
    scopes: &[String],
) -> Result<Tokens, AuthError> {
    let oauth = oauth_client(config, found, client)?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state) = oauth
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_scopes(scopes.iter().cloned().map(Scope::new))
        .add_extra_param("resource", found.resource().to_owned())
        .url();
    let request = AuthorizationRequest {
        url: url.to_string(),
        redirect_uri: config.redirect_uri.clone(),
    };
    let response = config
        .authorizer
        .authorize(request)
        .await
        .map_err(AuthError::Authorizer)?;
    check_response(&response, state.secret(), found)?;
    let answer = oauth
        .exchange_code(AuthorizationCode::new(response.code.expose().to_owned()))
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", found.resource().to_owned())
        .request_async(&|r| send(http.clone(), r))
        .await;
    tokens(answer, found.metadata().token_endpoint(), scopes, None)
}

/// The response is the answer to this request (state), from this
/// authorization server (RFC 9207: `iss` required when announced,
/// compared as a plain string whenever present).
fn check_response(
    response: &AuthorizationResponse,
    state: &str,
    found: &Discovered,
) -> Result<(), AuthError> {
    if response.state.as_deref() != Some(state) {
        return Err(AuthError::StateMismatch);
    }
    if let Some(issuer) = found.issuer() {
        let announced = found
            .metadata()
            .authorization_response_iss_parameter_supported()
            == Some(true);
        let bad = match &response.iss {
            Some(iss) => iss != issuer,
            None => announced,
        };
        if bad {
            return Err(AuthError::IssMismatch {
                expected: issuer.clone(),
                found: response.iss.clone(),
            });
        }
    }
    Ok(())
}

/// Exchanges `refresh` for new tokens (the refresh token is kept when the
/// server sends no new one).
pub(crate) async fn refresh(
    http: &FlowClient,
    config: &OAuthConfig,
    found: &Discovered,
    client: &RegisteredClient,
    refresh: &Secret,
    scope: Option<&str>,
) -> Result<Tokens, AuthError> {
    let oauth = oauth_client(config, found, client)?;
    let rt = RefreshToken::new(refresh.expose().to_owned());
    let answer = oauth
        .exchange_refresh_token(&rt)
        .add_extra_param("resource", found.resource().to_owned())
        .request_async(&|r| send(http.clone(), r))
        .await;
    let granted: Vec<String> = scope
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    tokens(
        answer,
        found.metadata().token_endpoint(),
        &granted,
        Some(refresh),
    )
}

type Answer = Result<
    BasicTokenResponse,
    RequestTokenError<super::fetch::HttpFailure, oauth2::basic::BasicErrorResponse>,
>;

/// The tokens of a token endpoint's answer, or why there are none (the
/// OAuth error code and description, never the request).
fn tokens(
    answer: Answer,
    endpoint: &str,
    requested: &[String],
    old_refresh: Option<&Secret>,
) -> Result<Tokens, AuthError> {
    let failed = |problem: String| AuthError::Token {
        url: shown(endpoint),
        problem,
    };
    let r = answer.map_err(|e| match e {
        RequestTokenError::ServerResponse(er) => failed(format!(
            "{}{}",
            er.error(),
            er.error_description()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )),
        RequestTokenError::Request(e) => failed(e.to_string()),
        RequestTokenError::Parse(e, _) => failed(format!("unreadable answer: {e}")),
        RequestTokenError::Other(e) => failed(e),
    })?;
    let scope = match r.scopes() {
        Some(s) => Some(s.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")),
        None if !requested.is_empty() => Some(requested.join(" ")),
        None => None,
    };
    Ok(Tokens {
        access_token: Secret::new(r.access_token().secret().clone()),
        refresh_token: r
            .refresh_token()
            .map(|t| Secret::new(t.secret().clone()))
            .or_else(|| old_refresh.cloned()),
        expires_at: Tokens::expires_in(r.expires_in()),
        scope,
    })
}
