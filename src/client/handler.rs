//! Handling what the server asks of the client: legacy server-to-client
//! requests (`roots/list`, `sampling/createMessage`, `elicitation/create`,
//! `ping`) and the modern era's input requests.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::jsonrpc::ErrorObject;

/// A request from the server (legacy), or one input request of an
/// `input_required` result (modern). The same handler serves both eras.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundRequest {
    /// `roots/list`, `sampling/createMessage`, `elicitation/create` or `ping`.
    pub method: String,
    /// Its parameters.
    pub params: Option<Value>,
}

/// The future a [`ClientHandler`] returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, ErrorObject>> + Send>>;

/// Answers what the server asks of the client.
///
/// Without a handler, `ping` is answered `{}` and everything else gets
/// -32601 (method not found). Each request runs in its own task; a
/// `notifications/cancelled` from the server aborts it.
///
/// Any `Fn(InboundRequest) -> impl Future<Output = Result<Value, ErrorObject>>`
/// is a handler:
///
/// ```
/// use conduit_mcp::{ClientHandler, InboundRequest, ErrorObject};
/// use serde_json::{json, Value};
///
/// let handler = |req: InboundRequest| async move {
///     match req.method.as_str() {
///         "roots/list" => Ok(json!({"roots": [{"uri": "file:///srv", "name": "srv"}]})),
///         "ping" => Ok(json!({})),
///         m => Err(ErrorObject::new(-32601, format!("unsupported: {m}"))),
///     }
/// };
/// fn takes<H: ClientHandler>(_: H) {}
/// takes(handler);
/// ```
pub trait ClientHandler: Send + Sync + 'static {
    /// Answers one request.
    fn handle(&self, request: InboundRequest) -> HandlerFuture;
}

impl<F, Fut> ClientHandler for F
where
    F: Fn(InboundRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
{
    fn handle(&self, request: InboundRequest) -> HandlerFuture {
        Box::pin(self(request))
    }
}
