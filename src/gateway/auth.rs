//! Who is calling: the bearer token of a request, compared in constant
//! time with each configured token, gives the [`Principal`] whose grant
//! decides which servers and tools it may use.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use axum::http::HeaderMap;
use serde_json::Value;

use crate::config_file::{read_jsonc, ConfigFileError};
use crate::secret::Secret;
use crate::server::http::{BearerLayer, BearerTokens, Principal as SessionOwner};
use crate::server::{HandlerError, RequestContext};

use super::glob::{self, Glob};

/// The shortest token accepted from a tokens file.
pub const MIN_TOKEN_LEN: usize = 16;
/// The server key of a grant that covers every server.
const ANY_SERVER: &str = "*";

/// Who may call the gateway.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Auth {
    /// Anyone who reaches it (right for a loopback listener only).
    #[default]
    None,
    /// One bearer token, with access to every server and tool.
    Bearer(Secret),
    /// Per-client tokens, each with the servers and tools it may use (see
    /// [`ClientGrant`]; read from a file with [`ClientGrant::load`]).
    Clients(Vec<ClientGrant>),
}

impl Auth {
    /// Whether a token is needed.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::Auth;
    /// use conduit_mcp::secret::Secret;
    ///
    /// assert!(!Auth::None.required());
    /// assert!(Auth::Bearer(Secret::new("a-long-random-token-0123")).required());
    /// ```
    pub fn required(&self) -> bool {
        !matches!(self, Auth::None)
    }
}

/// One client of the gateway: its token, and the servers and tools it may use.
///
/// A tokens file (`mcp serve --tokens FILE`, [`ClientGrant::load`]) lists
/// them by name:
///
/// ```json
/// { "clients": {
///     "ci":    { "token_env": "CI_MCP_TOKEN", "servers": { "time": ["*"] } },
///     "alice": { "token": "a-long-random-string-0123456789", "servers": { "*": ["*"], "files": ["read_*"] } }
/// } }
/// ```
///
/// `servers` maps a server's name (or `"*"`, every server) to glob patterns
/// of its tools' own names (`*`, `?`); a server absent from it cannot be
/// reached at all. A token is at least 16 characters; `token_env` names the
/// variable that holds it (better than writing it in the file).
/// `"operator": true` lets the client read `/metrics` (no other client
/// may); it grants no server.
#[derive(Clone)]
pub struct ClientGrant {
    /// The client's name (in logs, metrics and the call log; never its token).
    pub name: String,
    token: Secret,
    servers: BTreeMap<String, Vec<Glob>>,
    operator: bool,
}

impl ClientGrant {
    /// The servers its grant names (not `"*"`): `mcp serve` warns about
    /// those its config file lacks.
    #[cfg(feature = "cli")]
    pub(crate) fn named_servers(&self) -> impl Iterator<Item = &str> {
        self.servers
            .keys()
            .map(String::as_str)
            .filter(|s| *s != ANY_SERVER)
    }
}

impl std::fmt::Debug for ClientGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientGrant")
            .field("name", &self.name)
            .field("token", &self.token)
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .field("operator", &self.operator)
            .finish()
    }
}

impl ClientGrant {
    /// A client with `token` that may use nothing yet (see [`server`](Self::server)).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::{Auth, ClientGrant, HttpGatewayConfig};
    /// use conduit_mcp::secret::Secret;
    ///
    /// let ci = ClientGrant::new("ci", Secret::new("ci-token-0123456789")).server("time", ["*"]);
    /// assert_eq!(ci.name, "ci");
    /// let config = HttpGatewayConfig::new().auth(Auth::Clients(vec![ci]));
    /// ```
    pub fn new(name: impl Into<String>, token: Secret) -> Self {
        ClientGrant {
            name: name.into(),
            token,
            servers: BTreeMap::new(),
            operator: false,
        }
    }

    /// Lets the client read `/metrics` (an operator's view: every
    /// server's names, rates and errors). It grants no server.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::{Auth, ClientGrant, HttpGatewayConfig};
    /// use conduit_mcp::secret::Secret;
    ///
    /// let ops = ClientGrant::new("ops", Secret::new("ops-token-0123456789")).operator(); // `/metrics` only
    /// let config = HttpGatewayConfig::new().auth(Auth::Clients(vec![ops]));
    /// assert!(config.auth.required());
    /// ```
    pub fn operator(mut self) -> Self {
        self.operator = true;
        self
    }

    /// Lets the client use `server` (`"*"`: every server), and of its tools
    /// those matching one of `tools`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::{Auth, ClientGrant, HttpGatewayConfig};
    /// use conduit_mcp::secret::Secret;
    ///
    /// let alice = ClientGrant::new("alice", Secret::new("alice-token-0123456789"))
    ///     .server("files", ["read_*", "list_*"]) // two tools of `files`
    ///     .server("time", ["*"]); // every tool of `time`
    /// let config = HttpGatewayConfig::new().auth(Auth::Clients(vec![alice]));
    /// ```
    pub fn server<I: IntoIterator<Item = S>, S: AsRef<str>>(
        mut self,
        server: impl Into<String>,
        tools: I,
    ) -> Self {
        self.servers
            .entry(server.into())
            .or_default()
            .extend(tools.into_iter().map(|t| Glob::new(t.as_ref())));
        self
    }

    /// Reads a tokens file (JSON with comments; a regular file of at most
    /// 4 MiB). Errors name the key, never a token.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::gateway::{Auth, ClientGrant, HttpGatewayConfig};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let clients = ClientGrant::load("/etc/mcp/tokens.json")?;
    /// let config = HttpGatewayConfig::new().auth(Auth::Clients(clients));
    /// # Ok(()) }
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Vec<ClientGrant>, ConfigFileError> {
        let path = path.as_ref();
        let text = read_jsonc(path)?;
        Self::parse(&text, path, &|v| std::env::var(v).ok())
    }

    /// Reads a tokens file's JSON, `env` giving the variables of `token_env`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::gateway::ClientGrant;
    /// use serde_json::json;
    /// use std::path::Path;
    ///
    /// let file = json!({ "clients": {
    ///     "ci": { "token_env": "CI_MCP_TOKEN", "servers": { "time": ["*"] } },
    /// } });
    /// let env = |name: &str| (name == "CI_MCP_TOKEN").then(|| "ci-token-0123456789".to_owned());
    /// let clients = ClientGrant::parse(&file, Path::new("tokens.json"), &env)?;
    /// assert_eq!(clients[0].name, "ci");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parse(
        v: &Value,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<ClientGrant>, ConfigFileError> {
        let invalid = |key: &str, problem: &str| ConfigFileError::Invalid {
            file: path.to_owned(),
            key: key.to_owned(),
            problem: problem.to_owned(),
        };
        let clients = v
            .get("clients")
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("clients", "missing, or not an object of clients"))?;
        let mut out: Vec<ClientGrant> = Vec::new();
        for (name, c) in clients {
            let key = format!("clients.{name}");
            let c = c
                .as_object()
                .ok_or_else(|| invalid(&key, "must be an object"))?;
            // The key the token came from names it in every refusal.
            let (token, token_key) = match (c.get("token"), c.get("token_env")) {
                (Some(Value::String(t)), None) => (t.clone(), format!("{key}.token")),
                (None, Some(Value::String(var))) => {
                    let token_key = format!("{key}.token_env");
                    let token = env(var).ok_or_else(|| ConfigFileError::UnsetVariable {
                        file: path.to_owned(),
                        key: token_key.clone(),
                        variable: var.clone(),
                    })?;
                    (token, token_key)
                }
                _ => {
                    return Err(invalid(
                        &key,
                        "needs exactly one of `token` or `token_env` (a string)",
                    ))
                }
            };
            // A token never holds the whitespace around it (a secret file's
            // newline): no `Authorization` header could carry it.
            let token = token.trim().to_owned();
            if token.chars().count() < MIN_TOKEN_LEN {
                return Err(invalid(
                    &token_key,
                    &format!("too short: at least {MIN_TOKEN_LEN} characters"),
                ));
            }
            if out.iter().any(|o| o.token.expose() == token.as_str()) {
                return Err(invalid(&token_key, "the same token as another client"));
            }
            let servers = c
                .get("servers")
                .and_then(Value::as_object)
                .ok_or_else(|| invalid(&format!("{key}.servers"), "missing, or not an object"))?;
            let mut grant = ClientGrant::new(name.clone(), Secret::new(token));
            for (server, tools) in servers {
                let tkey = format!("{key}.servers.{server}");
                let tools = tools
                    .as_array()
                    .ok_or_else(|| invalid(&tkey, "must be an array of tool patterns"))?;
                let mut patterns = Vec::with_capacity(tools.len());
                for (i, t) in tools.iter().enumerate() {
                    match t.as_str() {
                        Some(p) if !p.is_empty() => patterns.push(p.to_owned()),
                        _ => {
                            return Err(invalid(
                                &format!("{tkey}[{i}]"),
                                "must be a non-empty glob pattern",
                            ))
                        }
                    }
                }
                grant = grant.server(server.clone(), patterns);
            }
            match c.get("operator") {
                None | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => grant = grant.operator(),
                Some(_) => {
                    return Err(invalid(&format!("{key}.operator"), "must be true or false"))
                }
            }
            for k in c.keys() {
                if !["token", "token_env", "servers", "operator"].contains(&k.as_str()) {
                    return Err(invalid(&format!("{key}.{k}"), "unknown field"));
                }
            }
            out.push(grant);
        }
        Ok(out)
    }
}

/// The caller of one request, as its token says.
#[derive(Debug)]
pub(crate) struct Principal {
    /// Its name: the client's, `token` for the one bearer token, or
    /// `anonymous`.
    name: Arc<str>,
    /// What it may use; `None`: everything.
    grants: Option<BTreeMap<String, Vec<Glob>>>,
    /// A client of a tokens file (not the one token or anonymous).
    named: bool,
    /// Whose sessions and shares its requests are, when it is named: its
    /// name, or for a name two clients share, the name and its place.
    session_owner: Option<SessionOwner>,
    /// May read `/metrics`.
    operator: bool,
}

impl Principal {
    /// The client's name (its token's).
    #[inline]
    pub(crate) fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// Whether it may reach `server` at all.
    pub(crate) fn server_allowed(&self, server: &str) -> bool {
        match &self.grants {
            None => true,
            Some(m) => m.contains_key(server) || m.contains_key(ANY_SERVER),
        }
    }

    /// Whether it may see and call `server`'s tool `tool`.
    pub(crate) fn tool_allowed(&self, server: &str, tool: &str) -> bool {
        match &self.grants {
            None => true,
            Some(m) => [server, ANY_SERVER]
                .iter()
                .filter_map(|s| m.get(*s))
                .any(|globs| glob::any(globs, tool)),
        }
    }

    /// Whether some server or tool is out of its reach.
    pub(crate) fn restricted(&self) -> bool {
        self.grants.is_some()
    }

    /// Whose sessions and shares of the endpoints' bounds its requests are
    /// (`None`: its peer address's).
    pub(crate) fn session_owner(&self) -> Option<&SessionOwner> {
        self.session_owner.as_ref()
    }
}

/// The caller of a request an endpoint's handler runs: the gateway puts it
/// in every request it passes on.
pub(crate) fn caller(ctx: &RequestContext) -> Result<Arc<Principal>, HandlerError> {
    ctx.http_request()
        .and_then(|p| p.extensions.get::<Arc<Principal>>())
        .cloned()
        .ok_or_else(|| HandlerError::Internal("the gateway does not know the caller".into()))
}

/// Whether a request may read `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetricsAccess {
    Allowed,
    /// No valid token (401).
    NoToken,
    /// A valid token, of no operator (403).
    NotOperator,
    /// No token is configured at all: loopback peers only.
    LoopbackOnly,
}

/// The gateway's principals, and the check of a request's token.
#[derive(Debug)]
pub(crate) struct Gate {
    /// The clients' tokens, each standing for its principal.
    tokens: BearerTokens<Arc<Principal>>,
    /// The principal of every request when no token is configured.
    open: Option<Arc<Principal>>,
    /// Whether an operator client or a metrics token is configured.
    operators: bool,
    metrics: BearerTokens<()>,
}

impl Gate {
    pub(crate) fn new(auth: &Auth, metrics: Option<Secret>) -> Gate {
        let mut tokens = BearerTokens::new();
        let mut open = None;
        let mut operator_clients = false;
        match auth {
            Auth::None => open = Some(principal("anonymous", None, false, false)),
            Auth::Bearer(t) => {
                tokens = tokens.token(t.clone(), principal("token", None, false, false))
            }
            Auth::Clients(clients) => {
                for (i, c) in clients.iter().enumerate() {
                    operator_clients |= c.operator;
                    let mut p = principal(&c.name, Some(c.servers.clone()), true, c.operator);
                    // Two clients built with one name still keep their
                    // sessions apart.
                    let shared_name = clients[..i].iter().any(|o| o.name == c.name);
                    let owner = if shared_name {
                        format!("{}#{i}", c.name)
                    } else {
                        c.name.clone()
                    };
                    if let Some(p) = Arc::get_mut(&mut p) {
                        p.session_owner = Some(SessionOwner::new(owner));
                    }
                    tokens = tokens.token(c.token.clone(), p);
                }
            }
        }
        let metrics = match metrics {
            Some(m) => BearerTokens::new().token(m, ()),
            None => BearerTokens::new(),
        };
        Gate {
            tokens,
            open,
            operators: operator_clients || !metrics.is_empty(),
            metrics,
        }
    }

    /// The layer that lets in the clients' tokens (none when no token is
    /// configured: every request is the one principal's).
    pub(crate) fn layer(&self) -> Option<BearerLayer<Arc<Principal>>> {
        (self.open.is_none()).then(|| BearerLayer::new(self.tokens.clone()))
    }

    /// The caller of a request the [`layer`](Self::layer) let in.
    pub(crate) fn caller(&self, extensions: &axum::http::Extensions) -> Option<Arc<Principal>> {
        self.open
            .clone()
            .or_else(|| extensions.get::<Arc<Principal>>().cloned())
    }

    /// Whether `headers` may read `/metrics`: with the metrics token or an
    /// operator client's; when neither is configured, with the one bearer
    /// token; when no token is configured at all, from loopback.
    pub(crate) fn metrics_access(&self, headers: &HeaderMap) -> MetricsAccess {
        if self.open.is_some() && !self.operators {
            return MetricsAccess::LoopbackOnly;
        }
        if self.metrics.find(headers).is_some() {
            return MetricsAccess::Allowed;
        }
        let Some(p) = self.check(headers) else {
            return MetricsAccess::NoToken;
        };
        let allowed = if self.operators {
            p.operator
        } else {
            // The one token: whoever holds it may use every server.
            !p.named
        };
        if allowed {
            MetricsAccess::Allowed
        } else {
            MetricsAccess::NotOperator
        }
    }

    /// The principal of the request's token (the one principal when no
    /// token is configured).
    pub(crate) fn check(&self, headers: &HeaderMap) -> Option<Arc<Principal>> {
        match &self.open {
            Some(p) => Some(p.clone()),
            None => self.tokens.find(headers).cloned(),
        }
    }
}

fn principal(
    name: &str,
    grants: Option<BTreeMap<String, Vec<Glob>>>,
    named: bool,
    operator: bool,
) -> Arc<Principal> {
    Arc::new(Principal {
        name: name.into(),
        grants,
        named,
        session_owner: None,
        operator,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;
    use serde_json::json;

    fn parse(v: Value) -> Result<Vec<ClientGrant>, ConfigFileError> {
        ClientGrant::parse(&v, Path::new("/t/tokens.json"), &|k| {
            (k == "CI").then(|| "ci-token-0123456789abcdef".to_owned())
        })
    }

    #[test]
    fn a_tokens_file_gives_each_client_its_servers_and_tools() {
        let grants = parse(json!({ "clients": {
            "ci": { "token_env": "CI", "servers": { "time": ["get_*"] } },
            "admin": { "token": "admin-token-0123456789", "servers": { "*": ["*"] } }
        }}))
        .unwrap();
        let gate = Gate::new(&Auth::Clients(grants), None);
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            "Bearer ci-token-0123456789abcdef".parse().unwrap(),
        );
        let ci = gate.check(&h).expect("the ci token");
        assert_eq!(&*ci.name, "ci");
        assert!(ci.server_allowed("time") && !ci.server_allowed("files"));
        assert!(ci.tool_allowed("time", "get_time") && !ci.tool_allowed("time", "set_time"));
        h.insert(header::AUTHORIZATION, "Bearer wrong".parse().unwrap());
        assert!(gate.check(&h).is_none());
        h.remove(header::AUTHORIZATION);
        assert!(gate.check(&h).is_none());
    }

    #[test]
    fn short_missing_or_shared_tokens_are_refused_by_key_without_the_token() {
        for bad in [
            json!({ "clients": { "a": { "token": "short", "servers": {} } } }),
            json!({ "clients": { "a": { "token_env": "UNSET", "servers": {} } } }),
            json!({ "clients": { "a": { "token": "same-token-0123456789", "servers": {} },
                                 "b": { "token": "same-token-0123456789", "servers": {} } } }),
            json!({ "clients": { "a": { "token": "a-token-0123456789abc" } } }),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("clients."), "{e}");
            assert!(!e.contains("same-token") && !e.contains("short\""), "{e}");
        }
    }

    #[test]
    fn a_refused_token_is_named_by_the_key_that_gave_it() {
        let short_from_env = ClientGrant::parse(
            &json!({ "clients": { "admin": { "token_env": "ADMIN", "servers": {} } } }),
            Path::new("/t/tokens.json"),
            &|_| Some("short".to_owned()),
        )
        .unwrap_err()
        .to_string();
        assert!(
            short_from_env.contains("`clients.admin.token_env`"),
            "{short_from_env}"
        );
        let shared = parse(json!({ "clients": {
            "a": { "token": "ci-token-0123456789abcdef", "servers": {} },
            "b": { "token_env": "CI", "servers": {} } } }))
        .unwrap_err()
        .to_string();
        assert!(shared.contains("`clients.b.token_env`"), "{shared}");
        let short = parse(json!({ "clients": { "c": { "token": "short", "servers": {} } } }))
            .unwrap_err()
            .to_string();
        assert!(short.contains("`clients.c.token`"), "{short}");
    }
}
