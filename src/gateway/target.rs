//! Where a client's request goes: a server of the host by name, how long a
//! request waits for it to be ready, and its failures as JSON-RPC errors.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::client::Client;
use crate::error::Error;
use crate::host::Host;
use crate::jsonrpc::{codes, ErrorObject};
use crate::protocol::Era;
use crate::server::HandlerError;

/// How long a request waits for a server that is not ready (starting,
/// restarting) before it fails.
pub(crate) const READY_WAIT: Duration = Duration::from_secs(30);

/// Where a request goes.
pub(crate) struct Target {
    /// The server's name in the host.
    server: Arc<str>,
    client: Client,
}

impl Target {
    /// The server's name in the host.
    #[inline]
    pub(crate) fn server(&self) -> &Arc<str> {
        &self.server
    }

    /// The server's client.
    #[inline]
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// Server `name` of `host`, if it has one by that name.
    pub(crate) fn of(host: &Host, name: &str) -> Option<Target> {
        host.client(name).map(|client| Target {
            server: name.into(),
            client,
        })
    }
}

/// Why server `name` of `host` has no client to take a request: it is
/// starting (again, after it gave up), or it is not in the host.
pub(crate) fn absent(host: &Host, name: &str) -> HandlerError {
    let message = match host.server(name) {
        Some(_) => format!("server `{name}` is unavailable: starting"),
        None => format!("server `{name}` is no longer in the gateway"),
    };
    HandlerError::Rpc(
        ErrorObject::new(codes::INTERNAL_ERROR, message).with_data(json!({ "server": name })),
    )
}

/// The server's era, waiting (a bounded time) for a server that is not
/// ready.
pub(crate) async fn backend_era(target: &Target) -> Result<Era, HandlerError> {
    if let Some(s) = target.client.session() {
        return Ok(s.era);
    }
    match target.client.ready(READY_WAIT).await {
        Ok(s) => Ok(s.era),
        Err(e) => Err(failure(&target.server, &e)),
    }
}

/// A failed call as a JSON-RPC error: the server's own error as it is,
/// anything else (timeout, crash, not ready) as -32603 naming the server.
pub(crate) fn failure(server: &str, e: &Error) -> HandlerError {
    match e.server_error() {
        Some(obj) => HandlerError::Rpc(obj.clone()),
        None => HandlerError::Rpc(
            ErrorObject::new(codes::INTERNAL_ERROR, format!("server `{server}`: {e}"))
                .with_data(json!({ "server": server })),
        ),
    }
}
