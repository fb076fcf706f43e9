//! Handling what the server asks of the client: 2025-11-25 server-to-client
//! requests (`roots/list`, `sampling/createMessage`, `elicitation/create`,
//! `ping`) and the 2026-07-28 era's input requests.
//!
//! Two ways: [`ClientResponder`], typed, one function per kind of request,
//! which declares the matching capability by itself (a server must not ask
//! for what the client did not declare); or any [`ClientHandler`], raw
//! JSON in and out, which declares what [`ClientHandler::capabilities`]
//! returns.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::jsonrpc::{codes, ErrorObject};
use crate::protocol::{
    methods, ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitParams,
    ElicitResult, ElicitationCapability, ListChangedCapability, ListRootsResult, Root,
    SamplingCapability,
};

/// A request from the server (2025-11-25), or one input request of an
/// `input_required` result (2026-07-28). The same handler serves both eras.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundRequest {
    /// `roots/list`, `sampling/createMessage`, `elicitation/create` or `ping`.
    pub method: String,
    /// Its parameters.
    pub params: Option<Value>,
}

/// The future a [`ClientHandler`] returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, ErrorObject>> + Send>>;

/// Answers what the server asks of the client (raw JSON; see
/// [`ClientResponder`] for the typed way).
///
/// Without a handler, `ping` is answered `{}` and everything else gets
/// -32601 (method not found). Each request runs in its own task; a
/// `notifications/cancelled` from the server aborts it.
///
/// The capabilities a handler returns from
/// [`capabilities`](Self::capabilities) are added to
/// [`ClientConfig::capabilities`](crate::client::ClientConfig::capabilities) when the
/// client starts (what the configuration already says wins). A closure
/// declares nothing: declare what it answers in the configuration, or use
/// [`ClientResponder`].
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

    /// The capabilities this handler's answers need declared (`roots`,
    /// `sampling`, `elicitation`). The default declares none.
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::default()
    }
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

type Answer<P> = Arc<dyn Fn(P) -> HandlerFuture + Send + Sync>;

/// A typed [`ClientHandler`]: one async function per kind of request the
/// server may make, each declaring its capability when set.
///
/// ```
/// use conduit_mcp::{ClientResponder, ErrorObject};
/// use conduit_mcp::protocol::{ElicitResult, Root};
///
/// let responder = ClientResponder::new()
///     .roots(|| async { Ok(vec![Root::new("file:///srv/project", "project")]) })
///     .elicitation(|params| async move {
///         eprintln!("the server asks: {}", params.message);
///         Ok(ElicitResult::decline())
///     });
/// // Declares {"roots": {}, "elicitation": {}}; `ping` is answered `{}`.
/// // Attach it with `Client::start_with` (`StartOptions::handler`).
/// assert!(conduit_mcp::client::ClientHandler::capabilities(&responder).roots.is_some());
/// ```
#[derive(Clone, Default)]
pub struct ClientResponder {
    roots: Option<Arc<dyn Fn() -> HandlerFuture + Send + Sync>>,
    sampling: Option<Answer<CreateMessageParams>>,
    elicitation: Option<Answer<ElicitParams>>,
}

impl std::fmt::Debug for ClientResponder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientResponder")
            .field("roots", &self.roots.is_some())
            .field("sampling", &self.sampling.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .finish()
    }
}

/// A typed answer as the JSON the server gets.
fn answer<T: Serialize>(
    fut: impl Future<Output = Result<T, ErrorObject>> + Send + 'static,
) -> HandlerFuture {
    Box::pin(async move {
        let t = fut.await?;
        serde_json::to_value(t).map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
    })
}

/// A request's params decoded as `P`, or the -32602 the server gets.
fn params<P: DeserializeOwned>(request: &InboundRequest) -> Result<P, ErrorObject> {
    let empty = Value::Object(Default::default());
    P::deserialize(request.params.as_ref().unwrap_or(&empty)).map_err(|e| {
        ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("invalid {} params: {e}", request.method),
        )
    })
}

impl ClientResponder {
    /// A responder that answers only `ping`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::client::{ClientHandler, ClientResponder, InboundRequest};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let responder = ClientResponder::new();
    /// let ping = InboundRequest { method: "ping".into(), params: None };
    /// assert_eq!(responder.handle(ping).await.unwrap(), serde_json::json!({}));
    /// let roots = InboundRequest { method: "roots/list".into(), params: None };
    /// assert_eq!(responder.handle(roots).await.unwrap_err().code, -32601);
    /// # }
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers `roots/list` with `f`'s roots; declares `roots`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::client::{ClientHandler, ClientResponder, InboundRequest};
    /// use conduit_mcp::protocol::Root;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let responder =
    ///     ClientResponder::new().roots(|| async { Ok(vec![Root::new("file:///srv/app", "app")]) });
    /// assert!(responder.capabilities().roots.is_some());
    /// let request = InboundRequest { method: "roots/list".into(), params: None };
    /// let answer = responder.handle(request).await.unwrap();
    /// assert_eq!(answer["roots"][0]["uri"], "file:///srv/app");
    /// # }
    /// ```
    pub fn roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Root>, ErrorObject>> + Send + 'static,
    {
        self.roots = Some(Arc::new(move || {
            let fut = f();
            answer(async move {
                Ok(ListRootsResult {
                    roots: fut.await?,
                    ..Default::default()
                })
            })
        }));
        self
    }

    /// Answers `sampling/createMessage` with `f`; declares `sampling`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::client::{ClientHandler, ClientResponder};
    /// use conduit_mcp::protocol::{CreateMessageResult, Role, SamplingContent, TextContent};
    ///
    /// let responder = ClientResponder::new().sampling(|params| async move {
    ///     // Ask a model about `params.messages` (at most `params.max_tokens`).
    ///     Ok(CreateMessageResult {
    ///         role: Role::Assistant,
    ///         content: SamplingContent::Text(TextContent::new("Paris")).into(),
    ///         model: "my-model".into(),
    ///         stop_reason: Some("endTurn".into()),
    ///         meta: None,
    ///         extra: Default::default(),
    ///     })
    /// });
    /// assert!(responder.capabilities().sampling.is_some());
    /// ```
    pub fn sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |p| answer(f(p))));
        self
    }

    /// Answers `elicitation/create` with `f`; declares `elicitation`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::client::{ClientHandler, ClientResponder, InboundRequest};
    /// use conduit_mcp::protocol::ElicitResult;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let responder = ClientResponder::new().elicitation(|params| async move {
    ///     println!("the server asks: {}", params.message);
    ///     Ok(ElicitResult::decline())
    /// });
    /// let request = InboundRequest {
    ///     method: "elicitation/create".into(),
    ///     params: Some(json!({
    ///         "message": "Deploy?",
    ///         "requestedSchema": { "type": "object", "properties": {} },
    ///     })),
    /// };
    /// assert_eq!(responder.handle(request).await.unwrap(), json!({ "action": "decline" }));
    /// # }
    /// ```
    pub fn elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ElicitParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |p| answer(f(p))));
        self
    }
}

impl ClientHandler for ClientResponder {
    fn handle(&self, request: InboundRequest) -> HandlerFuture {
        let unsupported = |m: &str| {
            let e = ErrorObject::new(codes::METHOD_NOT_FOUND, format!("method not found: {m}"));
            Box::pin(async move { Err(e) }) as HandlerFuture
        };
        let failed = |e: ErrorObject| Box::pin(async move { Err(e) }) as HandlerFuture;
        match (
            request.method.as_str(),
            &self.roots,
            &self.sampling,
            &self.elicitation,
        ) {
            (methods::PING, ..) => Box::pin(async { Ok(Value::Object(Default::default())) }),
            (methods::ROOTS_LIST, Some(f), ..) => f(),
            (methods::SAMPLING_CREATE_MESSAGE, _, Some(f), _) => match params(&request) {
                Ok(p) => f(p),
                Err(e) => failed(e),
            },
            (methods::ELICITATION_CREATE, _, _, Some(f)) => match params(&request) {
                Ok(p) => f(p),
                Err(e) => failed(e),
            },
            (m, ..) => unsupported(m),
        }
    }

    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: self
                .roots
                .as_ref()
                .map(|_| ListChangedCapability::default()),
            sampling: self
                .sampling
                .as_ref()
                .map(|_| SamplingCapability::default()),
            elicitation: self
                .elicitation
                .as_ref()
                .map(|_| ElicitationCapability::default()),
            ..Default::default()
        }
    }
}
