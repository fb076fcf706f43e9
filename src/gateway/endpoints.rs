//! The making of an endpoint's [`HttpService`]: `/mcp` serves the
//! [`Namespace`], `/servers/NAME/mcp` the [`Passthrough`] of NAME with
//! NAME's own identity and capabilities, both with the gateway's limits.

use std::sync::Arc;

use crate::protocol::Implementation;
use crate::server::http::{Allow, HttpConfig, HttpService};
use crate::server::{HandlerError, ServerConfig, Sessions};

use super::namespace::Namespace;
use super::passthrough::Passthrough;
use super::refusal::Refusal;
use super::state::{Endpoint, EndpointService, GatewayState};
use super::target::{failure, READY_WAIT};

impl GatewayState {
    /// The service of `endpoint`, made if needed (for a server: once it is
    /// ready). One serves every caller.
    pub(crate) async fn endpoint(
        self: &Arc<Self>,
        endpoint: &Endpoint,
    ) -> Result<EndpointService, Refusal> {
        let unavailable = |e: HandlerError| Refusal::ServerUnavailable {
            error: e.to_error_object(),
        };
        let key = endpoint.clone();
        if let Some(m) = self.made_endpoint(&key) {
            return Ok(m);
        }
        // Keeps what is per session (log levels, subscriptions) for the
        // handler, and tells the sessions of list changes.
        let sessions = Sessions::new();
        let config = match endpoint {
            Endpoint::Namespace => self.namespace_config(),
            Endpoint::Server(name) => self.passthrough_config(name).await.map_err(unavailable)?,
        };
        let weak = Arc::downgrade(self);
        let service = match endpoint {
            Endpoint::Namespace => HttpService::new(config, Namespace::new(weak, sessions.clone())),
            Endpoint::Server(name) => HttpService::new(
                config,
                Passthrough::new(weak, name.clone(), sessions.clone()),
            ),
        }
        .map_err(|e| unavailable(HandlerError::Internal(e.to_string())))?;
        self.keep_endpoint(key, service, sessions)
    }

    /// An endpoint's HTTP configuration: the gateway's limits, hosts and
    /// (already checked) origins.
    fn http_config(&self, server: ServerConfig) -> HttpConfig {
        let config = self.config();
        let mut c = (config.http.clone())
            .path(crate::server::http::DEFAULT_PATH)
            .allowed_hosts(config.allowed_hosts.clone())
            .allowed_origins(Allow::Any);
        c.server = (server.stop_drain(config.grace))
            .max_held_calls(config.max_held_calls)
            .held_input_timeout(config.input_timeout);
        c
    }

    fn namespace_config(&self) -> HttpConfig {
        let server = self
            .config()
            .http
            .server
            .clone()
            .capabilities(serde_json::json!({
                "tools": { "listChanged": true },
                "prompts": { "listChanged": true },
                "resources": { "listChanged": true, "subscribe": true },
                "logging": {},
                "completions": {},
            }));
        if server.get_instructions().is_some() {
            return self.http_config(server);
        }
        self.http_config(server.instructions(
            "Every server of this gateway in one namespace: tools and prompts are named server__name.",
        ))
    }

    /// `/servers/NAME/mcp` is the server as it is: its identity,
    /// capabilities and instructions.
    async fn passthrough_config(self: &Arc<Self>, name: &str) -> Result<HttpConfig, HandlerError> {
        self.ensure_started(name)
            .await
            .map_err(|e| HandlerError::Internal(e.to_string()))?;
        let target = self.target(name)?;
        let session = target
            .client()
            .ready(READY_WAIT)
            .await
            .map_err(|e| failure(name, &e))?;
        let info = session
            .server_info
            .clone()
            .unwrap_or_else(|| Implementation::new(name, "unknown"));
        let limits = &self.config().http.server;
        let server = (ServerConfig::new(info).capabilities(session.capabilities.clone()))
            .max_message_bytes(limits.get_max_message_bytes())
            .max_in_flight(limits.get_max_in_flight())
            .max_inbound_bytes(limits.get_max_inbound_bytes())
            .max_outbound_bytes(limits.get_max_outbound_bytes());
        Ok(self.http_config(match session.instructions.clone() {
            Some(instructions) => server.instructions(instructions),
            None => server,
        }))
    }
}
