//! Finding the authorization server of a protected MCP server: its
//! protected resource metadata (RFC 9728: the URL of the challenge, then
//! the path-based and root well-known URLs), then the authorization
//! server's metadata (RFC 8414 and OpenID Connect Discovery, in the order
//! the MCP specification gives), whose `issuer` must be the one it was
//! fetched for. A server with no resource metadata is a 2025-03-26 server:
//! its origin is its authorization server, with RFC 8414 metadata at the
//! root or, failing that, the default `/authorize`, `/token` and
//! `/register` endpoints. Every URL is checked before it is fetched (or
//! handed to the browser): see [`guard`](super::guard).

use reqwest::Url;
use serde::Deserialize;
use serde_json::Value;
use tracing::debug;

use super::challenge::Challenge;
use super::fetch::{get_json, shown, FetchError, Fetched};
use super::guard::FlowClient;
use super::AuthError;

/// The authorization server's metadata this client uses.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct AsMetadata {
    #[serde(default)]
    issuer: Option<String>,
    authorization_endpoint: String,
    token_endpoint: String,
    #[serde(default)]
    registration_endpoint: Option<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    client_id_metadata_document_supported: Option<bool>,
    #[serde(default)]
    authorization_response_iss_parameter_supported: Option<bool>,
}

impl AsMetadata {
    /// `authorization_endpoint`.
    #[inline]
    pub(crate) fn authorization_endpoint(&self) -> &String {
        &self.authorization_endpoint
    }

    /// `token_endpoint`.
    #[inline]
    pub(crate) fn token_endpoint(&self) -> &String {
        &self.token_endpoint
    }

    /// `registration_endpoint`.
    #[inline]
    pub(crate) fn registration_endpoint(&self) -> Option<&String> {
        self.registration_endpoint.as_ref()
    }

    /// `scopes_supported`.
    #[inline]
    pub(crate) fn scopes_supported(&self) -> Option<&[String]> {
        self.scopes_supported.as_deref()
    }

    /// `token_endpoint_auth_methods_supported`.
    #[inline]
    pub(crate) fn token_endpoint_auth_methods_supported(&self) -> Option<&[String]> {
        self.token_endpoint_auth_methods_supported.as_deref()
    }

    /// `client_id_metadata_document_supported`.
    #[inline]
    pub(crate) fn client_id_metadata_document_supported(&self) -> Option<bool> {
        self.client_id_metadata_document_supported
    }

    /// `authorization_response_iss_parameter_supported`.
    #[inline]
    pub(crate) fn authorization_response_iss_parameter_supported(&self) -> Option<bool> {
        self.authorization_response_iss_parameter_supported
    }
}

/// Everything discovery found.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The `resource` parameter: the metadata's `resource` exactly as
    /// published, or the server's URL when it published none.
    resource: String,
    /// The resource's `scopes_supported`.
    resource_scopes: Option<Vec<String>>,
    /// The issuer the metadata was validated against (`None` for the
    /// 2025-03-26 default endpoints, which come with no metadata).
    issuer: Option<String>,
    metadata: AsMetadata,
}

impl Discovered {
    /// The `resource` parameter.
    #[inline]
    pub(crate) fn resource(&self) -> &str {
        &self.resource
    }

    /// The resource's `scopes_supported`.
    #[inline]
    pub(crate) fn resource_scopes(&self) -> Option<&Vec<String>> {
        self.resource_scopes.as_ref()
    }

    /// The issuer the metadata was validated against.
    #[inline]
    pub(crate) fn issuer(&self) -> Option<&String> {
        self.issuer.as_ref()
    }

    /// The authorization server's metadata.
    #[inline]
    pub(crate) fn metadata(&self) -> &AsMetadata {
        &self.metadata
    }
}

#[derive(Deserialize)]
struct ResourceMetadata {
    resource: String,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
}

/// Discovers the authorization server of `server` after `challenge`.
pub(crate) async fn discover(
    client: &FlowClient,
    server: &Url,
    challenge: &Challenge,
) -> Result<Discovered, AuthError> {
    match resource_metadata(client, server, challenge).await? {
        Some(prm) => {
            check_resource(server, &prm.resource)?;
            let issuer =
                prm.authorization_servers
                    .first()
                    .cloned()
                    .ok_or_else(|| AuthError::Discovery {
                        url: shown(server.as_str()),
                        problem: "the protected resource metadata names no authorization server"
                            .into(),
                    })?;
            let metadata = authorization_server(client, &issuer)
                .await?
                .ok_or_else(|| AuthError::NoMetadata {
                    issuer: issuer.clone(),
                })?;
            Ok(Discovered {
                resource: prm.resource,
                resource_scopes: prm.scopes_supported,
                issuer: Some(issuer),
                metadata,
            })
        }
        None => legacy(client, server).await,
    }
}

/// A 2025-03-26 server: its origin is the authorization server.
async fn legacy(client: &FlowClient, server: &Url) -> Result<Discovered, AuthError> {
    let origin = server.origin().ascii_serialization();
    let resource = canonical(server);
    if let Some(metadata) = authorization_server(client, &origin).await? {
        return Ok(Discovered {
            resource,
            resource_scopes: None,
            issuer: Some(origin),
            metadata,
        });
    }
    debug!(server = %shown(server.as_str()), "no authorization metadata: the 2025-03-26 default endpoints");
    Ok(Discovered {
        resource,
        resource_scopes: None,
        issuer: None,
        metadata: AsMetadata {
            authorization_endpoint: format!("{origin}/authorize"),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            ..AsMetadata::default()
        },
    })
}

/// The server's URL as a resource identifier: no fragment or query.
pub(crate) fn canonical(server: &Url) -> String {
    let mut u = server.clone();
    u.set_fragment(None);
    u.set_query(None);
    u.to_string()
}

/// Fetches the protected resource metadata: from the challenge's URL, then
/// the path-based and root well-known URLs. `None` when none has it.
async fn resource_metadata(
    client: &FlowClient,
    server: &Url,
    challenge: &Challenge,
) -> Result<Option<ResourceMetadata>, AuthError> {
    let mut urls = Vec::new();
    if let Some(u) = challenge.resource_metadata() {
        match Url::parse(u) {
            Ok(u) => urls.push(u),
            Err(_) => {
                debug!("the challenge's resource_metadata is not a URL; well-known URLs used")
            }
        }
    }
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        urls.extend(well_known(server, "oauth-protected-resource", path));
    }
    urls.extend(well_known(server, "oauth-protected-resource", ""));
    let Some((url, v)) = first_json(client, "the protected resource metadata", urls).await? else {
        return Ok(None);
    };
    let prm = serde_json::from_value(v).map_err(|e| AuthError::Discovery {
        url: shown(url.as_str()),
        problem: format!("not protected resource metadata: {e}"),
    })?;
    debug!(url = %shown(url.as_str()), "protected resource metadata found");
    Ok(Some(prm))
}

/// Fetches `what` from each of `urls` in turn and gives the first JSON
/// answer with its URL. `None` when every URL answers with a status.
async fn first_json(
    client: &FlowClient,
    what: &'static str,
    urls: Vec<Url>,
) -> Result<Option<(Url, Value)>, AuthError> {
    for url in urls {
        match get_json(client, what, &url).await {
            Ok(Fetched::Json(v)) => return Ok(Some((url, v))),
            Ok(Fetched::Status(status, _)) => {
                debug!(url = %shown(url.as_str()), %status, "{what}: none here");
            }
            Err(FetchError::Refused(e)) => return Err(e),
            Err(FetchError::Failed(problem)) => {
                let url = shown(url.as_str());
                return Err(AuthError::Discovery { url, problem });
            }
        }
    }
    Ok(None)
}

/// `origin/.well-known/<name><path>`.
fn well_known(base: &Url, name: &str, path: &str) -> Option<Url> {
    let origin = base.origin().ascii_serialization();
    Url::parse(&format!("{origin}/.well-known/{name}{path}")).ok()
}

/// The resource metadata must be for this server: same origin, and the
/// server's path within the resource's.
fn check_resource(server: &Url, resource: &str) -> Result<(), AuthError> {
    let mismatch = || AuthError::ResourceMismatch {
        resource: shown(resource),
        server: shown(server.as_str()),
    };
    let r = Url::parse(resource).map_err(|_| mismatch())?;
    if r.origin() != server.origin() {
        return Err(mismatch());
    }
    let rp = r.path().trim_end_matches('/');
    let sp = server.path();
    let within = rp.is_empty() || sp == rp || sp.starts_with(&format!("{rp}/"));
    if within {
        Ok(())
    } else {
        Err(mismatch())
    }
}

/// Fetches the metadata of the authorization server `issuer` from the
/// locations the MCP specification lists, in its order; `None` when none
/// has it. A document whose `issuer` is not `issuer`, exactly, is refused
/// (it is not used, and discovery stops).
pub(crate) async fn authorization_server(
    client: &FlowClient,
    issuer: &str,
) -> Result<Option<AsMetadata>, AuthError> {
    let base = Url::parse(issuer).map_err(|e| AuthError::Discovery {
        url: shown(issuer),
        problem: format!("the authorization server is not a URL: {e}"),
    })?;
    client
        .admit("the authorization server", &base, false)
        .await?;
    let path = base.path().trim_end_matches('/');
    let mut urls: Vec<Url> = ["oauth-authorization-server", "openid-configuration"]
        .into_iter()
        .filter_map(|name| well_known(&base, name, path))
        .collect();
    if !path.is_empty() {
        let origin = base.origin().ascii_serialization();
        urls.extend(Url::parse(&format!("{origin}{path}/.well-known/openid-configuration")).ok());
    }
    match first_json(client, "the authorization server metadata", urls).await? {
        Some((url, v)) => validate(client, &url, issuer, v).await.map(Some),
        None => Ok(None),
    }
}

/// Reads and checks one metadata document: its issuer, its endpoints
/// (the rules of [`guard`](super::guard)), PKCE with S256.
async fn validate(
    client: &FlowClient,
    url: &Url,
    issuer: &str,
    v: Value,
) -> Result<AsMetadata, AuthError> {
    let md: AsMetadata = serde_json::from_value(v).map_err(|e| AuthError::Discovery {
        url: shown(url.as_str()),
        problem: format!("not authorization server metadata: {e}"),
    })?;
    if md.issuer.as_deref() != Some(issuer) {
        return Err(AuthError::IssuerMismatch {
            expected: issuer.to_owned(),
            found: md.issuer.unwrap_or_default(),
        });
    }
    let endpoints = [
        (
            "the authorization endpoint",
            Some(&md.authorization_endpoint),
        ),
        ("the token endpoint", Some(&md.token_endpoint)),
        (
            "the registration endpoint",
            md.registration_endpoint.as_ref(),
        ),
    ];
    for (what, endpoint) in endpoints {
        let Some(e) = endpoint else { continue };
        let u = Url::parse(e).map_err(|err| AuthError::Discovery {
            url: shown(url.as_str()),
            problem: format!("{what} is not a URL: {err}"),
        })?;
        // Endpoints may have a query (RFC 6749 sections 3.1 and 3.2).
        client.admit(what, &u, true).await?;
    }
    let s256 = md
        .code_challenge_methods_supported
        .as_ref()
        .is_some_and(|m| m.iter().any(|m| m == "S256"));
    if !s256 {
        return Err(AuthError::NoPkce {
            issuer: issuer.to_owned(),
        });
    }
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_metadata_must_name_this_server_or_a_path_above_it() {
        let server = Url::parse("https://mcp.example.com/tenant/mcp").unwrap();
        assert!(check_resource(&server, "https://mcp.example.com/tenant/mcp").is_ok());
        assert!(check_resource(&server, "https://mcp.example.com").is_ok());
        assert!(check_resource(&server, "https://mcp.example.com/tenant/").is_ok());
        assert!(check_resource(&server, "https://evil.example.com/tenant/mcp").is_err());
        assert!(check_resource(&server, "https://mcp.example.com/ten").is_err());
        assert!(check_resource(&server, "http://mcp.example.com/tenant/mcp").is_err());
        assert!(check_resource(&server, "not a url").is_err());
    }
}
