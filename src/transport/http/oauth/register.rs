//! Identifying the client to an authorization server, in the order the MCP
//! specification gives: a client registered earlier with this same issuer
//! (kept in the store), the pre-registered client of the configuration, a
//! Client ID Metadata Document (when the server accepts them and the
//! application has one), else dynamic client registration (RFC 7591).

use reqwest::Url;
use serde_json::json;
use tracing::info;

use super::discovery::AsMetadata;
use super::fetch::{post_json, shown, FetchError, Fetched};
use super::guard::FlowClient;
use super::store::{RegisteredClient, TokenAuthMethod};
use super::{AuthError, OAuthConfig};
use crate::secret::Secret;

/// How a client with a secret authenticates at this server: Basic unless
/// only `client_secret_post` is offered (RFC 8414's default is Basic).
fn secret_method(md: &AsMetadata) -> TokenAuthMethod {
    match md.token_endpoint_auth_methods_supported() {
        Some(m)
            if !m.iter().any(|m| m == "client_secret_basic")
                && m.iter().any(|m| m == "client_secret_post") =>
        {
            TokenAuthMethod::ClientSecretPost
        }
        _ => TokenAuthMethod::ClientSecretBasic,
    }
}

/// The client to use with the server of `md`.
pub(crate) async fn client_for(
    http: &FlowClient,
    config: &OAuthConfig,
    issuer: &str,
    md: &AsMetadata,
    kept: Option<RegisteredClient>,
) -> Result<RegisteredClient, AuthError> {
    if let Some(kept) = kept {
        let same_redirect = kept
            .redirect_uri
            .as_deref()
            .is_none_or(|r| r == config.redirect_uri);
        if same_redirect {
            return Ok(kept);
        }
    }
    if let Some(pre) = &config.client {
        let mut pre = pre.clone();
        if pre.client_secret.is_some() && pre.auth_method == TokenAuthMethod::ClientSecretBasic {
            pre.auth_method = secret_method(md);
        }
        return Ok(pre);
    }
    if let (Some(true), Some(url)) = (
        md.client_id_metadata_document_supported(),
        config.client_metadata_url.as_ref(),
    ) {
        return Ok(RegisteredClient {
            client_id: url.clone(),
            client_secret: None,
            auth_method: TokenAuthMethod::None,
            redirect_uri: None,
        });
    }
    match md.registration_endpoint() {
        Some(endpoint) => register(http, config, endpoint, md).await,
        None => Err(AuthError::NoRegistration {
            issuer: issuer.to_owned(),
        }),
    }
}

/// Dynamic client registration at `endpoint`.
async fn register(
    http: &FlowClient,
    config: &OAuthConfig,
    endpoint: &str,
    md: &AsMetadata,
) -> Result<RegisteredClient, AuthError> {
    let failed = |problem: String| AuthError::Registration {
        url: shown(endpoint),
        problem,
    };
    let url = Url::parse(endpoint).map_err(|e| failed(e.to_string()))?;
    let supported = md.token_endpoint_auth_methods_supported();
    // A public client where the server allows one (the redirect is the
    // application's own); else a secret.
    let wanted = match supported {
        Some(m) if m.iter().any(|m| m == "none") => TokenAuthMethod::None,
        _ => secret_method(md),
    };
    let loopback = Url::parse(&config.redirect_uri)
        .is_ok_and(|u| u.scheme() == "http" || !u.scheme().starts_with("http"));
    let body = json!({
        "client_name": config.client_name,
        "redirect_uris": [config.redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": wanted.as_str(),
        "application_type": if loopback { "native" } else { "web" },
    });
    let answer = match post_json(http, "the registration endpoint", &url, &body).await {
        Ok(Fetched::Json(v)) => v,
        Ok(Fetched::Status(status, text)) => return Err(failed(format!("HTTP {status}: {text}"))),
        Err(FetchError::Refused(e)) => return Err(e),
        Err(FetchError::Failed(problem)) => return Err(failed(problem)),
    };
    let client_id = answer["client_id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| failed("the answer has no client_id".into()))?
        .to_owned();
    let client_secret = answer["client_secret"].as_str().map(Secret::new);
    let auth_method = answer["token_endpoint_auth_method"]
        .as_str()
        .and_then(TokenAuthMethod::parse)
        .unwrap_or(wanted);
    let auth_method = match (auth_method, &client_secret) {
        (TokenAuthMethod::None, _) | (_, None) => TokenAuthMethod::None,
        (m, Some(_)) => m,
    };
    info!(endpoint = %shown(endpoint), client_id = %client_id, method = auth_method.as_str(), "client registered");
    Ok(RegisteredClient {
        client_id,
        client_secret,
        auth_method,
        redirect_uri: Some(config.redirect_uri.clone()),
    })
}
