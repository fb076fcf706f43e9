//! [`Router`]: a [`Handler`] built from registered tools, resources,
//! resource templates and prompts, so that a server declares each once
//! (name, description, a typed argument struct whose JSON Schema is
//! generated, an async function) instead of matching method names and
//! writing JSON Schema by hand.
//!
//! The router answers `tools/list`, `tools/call`, `resources/list`,
//! `resources/templates/list`, `resources/read`, the 2025-11-25
//! `resources/subscribe`/`unsubscribe` and `logging/setLevel` (kept per
//! session, with the session: one router may serve many),
//! `prompts/list`, `prompts/get`, `completion/complete` (with a completer)
//! and the 2026-07-28 `subscriptions/listen`; anything else goes to its
//! [`fallback`](Router::fallback), the raw escape hatch. It declares the
//! capabilities of what is registered when serving starts, and tells
//! clients when a list changes at run time (2025-11-25: the `list_changed`
//! notification; 2026-07-28: on the `subscriptions/listen` streams that asked
//! for it).
//!
//! ```no_run
//! use conduit_mcp::protocol::{CallToolResult, Implementation};
//! use conduit_mcp::server::{RequestContext, Router, ServerConfig, StdioServer};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add {
//!     /// The first term.
//!     a: f64,
//!     /// The second term.
//!     b: f64,
//! }
//!
//! # async fn run() -> Result<(), conduit_mcp::server::ServerError> {
//! let router = Router::new().tool("add", "Adds two numbers.", |args: Add, _ctx: RequestContext| async move {
//!     Ok(CallToolResult::text((args.a + args.b).to_string()))
//! });
//! let config = ServerConfig::new(Implementation::new("adder", "1.0.0"));
//! StdioServer::new(config).serve(router).await?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::context::RequestContext;
use super::error::{decode, parse_params, HandlerError};
use super::handle::{ListKind, ServerHandle};
use super::request_handler::Handler;
use super::sessions::Sessions;
use crate::jsonrpc::{codes, ErrorObject, Request};
use crate::protocol::{
    methods, CallToolParams, CallToolResult, CompleteParams, CompleteResult, Era, GetPromptParams,
    GetPromptResult, ListChangedCapability, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, ListenParams, LoggingLevel, Prompt, PromptArgument,
    ReadResourceParams, ReadResourceResult, Resource, ResourceTemplate, ResourcesCapability,
    ServerCapabilities, SubscriptionFilter, Tool,
};

mod arguments;
mod template;

use arguments::{ArgumentCheck, Kept};

/// A boxed future of a route.
pub type RouteFuture<T> = Pin<Box<dyn Future<Output = Result<T, HandlerError>> + Send>>;

type ToolFn =
    dyn Fn(Value, RequestContext) -> Result<RouteFuture<CallToolResult>, String> + Send + Sync;
type ReadFn = dyn Fn(String, Map<String, Value>, RequestContext) -> RouteFuture<ReadResourceResult>
    + Send
    + Sync;
type PromptFn = dyn Fn(Map<String, Value>, RequestContext) -> Result<RouteFuture<GetPromptResult>, String>
    + Send
    + Sync;
type CompleteFn =
    dyn Fn(CompleteParams, RequestContext) -> RouteFuture<CompleteResult> + Send + Sync;
type FallbackFn = dyn Fn(Request, RequestContext) -> RouteFuture<Value> + Send + Sync;

/// The JSON Schema of `T` (2020-12, without `$schema`), for a tool's
/// `inputSchema` or `outputSchema`.
///
/// # Examples
///
/// ```
/// use conduit_mcp::server::schema_of;
///
/// #[derive(schemars::JsonSchema)]
/// struct Weather {
///     /// The city.
///     city: String,
/// }
///
/// let schema = schema_of::<Weather>();
/// assert_eq!(schema["properties"]["city"]["type"], "string");
/// assert_eq!(schema["required"], serde_json::json!(["city"]));
/// ```
pub fn schema_of<T: JsonSchema>() -> Value {
    let mut schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
    }
    schema.to_value()
}

/// A request charged more than this for its parsed input
/// (`max_inbound_bytes`) is charged anew once its arguments are decoded.
const RECHARGE_ABOVE: usize = 64 * 1024;

/// `args` decoded as `A` for the request of `ctx`, or what is wrong with
/// them. A request charged much for its input is then charged for the
/// members `A` keeps ([`Kept`]), not for what decoding dropped.
fn decode_input<A: DeserializeOwned>(
    args: Value,
    kept: &Kept,
    ctx: &RequestContext,
) -> Result<A, String> {
    let held = (ctx.input_charged() > RECHARGE_ABOVE).then(|| kept.estimate(&args));
    let a = decode::<A>(args)?;
    if let Some(held) = held {
        ctx.input_decoded(held);
    }
    Ok(a)
}

#[derive(Default)]
struct Routes {
    /// Each tool, its function, and its compiled `inputSchema`.
    tools: Vec<(Tool, Arc<ToolFn>, Arc<ArgumentCheck>)>,
    resources: Vec<(Resource, Arc<ReadFn>)>,
    templates: Vec<(ResourceTemplate, template::UriTemplate, Arc<ReadFn>)>,
    prompts: Vec<(Prompt, Arc<PromptFn>)>,
    completer: Option<Arc<CompleteFn>>,
    fallback: Option<Arc<FallbackFn>>,
}

#[derive(Default)]
struct Inner {
    routes: RwLock<Routes>,
}

/// A [`Handler`] built from registered tools, resources, templates and
/// prompts. It answers `tools/*`, `resources/*`, `prompts/*`,
/// `completion/complete` (with a completer), the 2025-11-25 `logging/setLevel`
/// and the 2026-07-28 `subscriptions/listen`; everything else goes to its
/// [`fallback`](Self::fallback).
///
/// Cloning shares the routes: register or remove at run time on any clone
/// (or on the one served, through an `Arc`), and the clients are told.
/// The router keeps no session: it is served with a [`Sessions`] registry,
/// its own unless given one with [`with_sessions`](Self::with_sessions).
#[derive(Clone, Default)]
pub struct Router {
    inner: Arc<Inner>,
    sessions: Sessions,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self.routes();
        f.debug_struct("Router")
            .field(
                "tools",
                &r.tools.iter().map(|t| &t.0.name).collect::<Vec<_>>(),
            )
            .field("resources", &r.resources.len())
            .field("templates", &r.templates.len())
            .field("prompts", &r.prompts.len())
            .finish_non_exhaustive()
    }
}

impl Router {
    /// An empty router.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::{Handler, Router};
    ///
    /// let router = Router::new();
    /// assert!(router.capabilities().tools.is_none()); // nothing registered yet
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves the router with `sessions`, a registry shared with other
    /// handlers or servers; clones made before keep the registry they had.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::{Router, Sessions};
    ///
    /// let sessions = Sessions::new();
    /// let router = Router::new().with_sessions(sessions.clone());
    /// assert_eq!(router.sessions().log_level(), sessions.log_level());
    /// ```
    pub fn with_sessions(mut self, sessions: Sessions) -> Self {
        self.sessions = sessions;
        self
    }

    /// The session registry the router is served with.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::{ListKind, Router};
    ///
    /// let router = Router::new();
    /// router.sessions().notify_list_changed(ListKind::Tools);
    /// ```
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    fn routes(&self) -> std::sync::RwLockReadGuard<'_, Routes> {
        crate::sync::read(&self.inner.routes)
    }

    fn routes_mut(&self) -> std::sync::RwLockWriteGuard<'_, Routes> {
        crate::sync::write(&self.inner.routes)
    }

    // ------------------------------------------------------------- tools

    /// Registers a tool: `name`, `description`, and `f`, called with the
    /// arguments decoded as `A` (its JSON Schema, generated from `A`, is
    /// the tool's `inputSchema`). Arguments are first checked against that
    /// schema (compiled here, once), so its bounds hold as well as `A`'s
    /// types (`#[schemars(range(max = 20))]`, `length`, `pattern`, ...).
    /// Arguments that break the schema or do not decode make a tool error
    /// result (`isError: true`) naming each argument and the rule, and `f`
    /// does not run; a panic in `f` makes a tool error result too, and
    /// serving goes on. A tool of the same name is replaced.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::CallToolResult;
    /// use conduit_mcp::server::{Handler, RequestContext, Router};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add {
    ///     a: f64,
    ///     b: f64,
    /// }
    ///
    /// let router = Router::new().tool("add", "Adds two numbers.", |args: Add, _ctx: RequestContext| async move {
    ///     Ok(CallToolResult::text((args.a + args.b).to_string()))
    /// });
    /// let schema = router.tool_input_schema("add").unwrap(); // generated from `Add`
    /// assert_eq!(schema["required"], serde_json::json!(["a", "b"]));
    /// ```
    pub fn tool<A, F, Fut>(self, name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, HandlerError>> + Send + 'static,
    {
        let tool = Tool {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            ..Tool::default()
        };
        self.add_tool(tool, f);
        self
    }

    /// [`tool`](Self::tool) at run time, with every member of the [`Tool`]
    /// (title, annotations, `outputSchema`, icons). An `input_schema` left
    /// `null` is generated from `A`; a given one is what arguments are
    /// checked against (a schema that does not compile is logged, and the
    /// tool's calls are refused with the reason). Clients are told the
    /// list changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{CallToolResult, Tool};
    /// use conduit_mcp::server::{Handler, RequestContext, Router};
    /// use serde_json::Value;
    ///
    /// let router = Router::new();
    /// let tool = Tool { name: "now".into(), title: Some("Current time".into()), ..Tool::default() };
    /// router.add_tool(tool, |_: Value, _ctx: RequestContext| async { Ok(CallToolResult::text("12:00")) });
    /// assert!(router.capabilities().tools.is_some());
    /// ```
    pub fn add_tool<A, F, Fut>(&self, mut tool: Tool, f: F)
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, HandlerError>> + Send + 'static,
    {
        let generated = schema_of::<A>();
        let kept = Kept::of(&generated);
        if tool.input_schema.is_null() {
            tool.input_schema = generated;
        }
        let call: Arc<ToolFn> = Arc::new(move |args, ctx| {
            let a = decode_input::<A>(args, &kept, &ctx)?;
            Ok(Box::pin(f(a, ctx)) as RouteFuture<CallToolResult>)
        });
        let check = Arc::new(ArgumentCheck::compile(&tool.name, &tool.input_schema));
        {
            let mut r = self.routes_mut();
            r.tools.retain(|(t, ..)| t.name != tool.name);
            r.tools.push((tool, call, check));
        }
        self.sessions.notify_list_changed(ListKind::Tools);
    }

    /// Removes a tool; returns whether there was one. Clients are told.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::CallToolResult;
    /// use conduit_mcp::server::{RequestContext, Router};
    ///
    /// let router = Router::new().tool("ping", "Pong.", |_: serde_json::Value, _ctx: RequestContext| async {
    ///     Ok(CallToolResult::text("pong"))
    /// });
    /// assert!(router.remove_tool("ping"));
    /// assert!(!router.remove_tool("ping")); // already gone
    /// ```
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = {
            let mut r = self.routes_mut();
            let before = r.tools.len();
            r.tools.retain(|(t, ..)| t.name != name);
            r.tools.len() != before
        };
        if removed {
            self.sessions.notify_list_changed(ListKind::Tools);
        }
        removed
    }

    // --------------------------------------------------------- resources

    /// Registers a resource read by `f`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{ReadResourceResult, Resource, ResourceContents};
    /// use conduit_mcp::server::{Handler, RequestContext, Router};
    ///
    /// let readme = Resource::new("file:///README.md", "readme");
    /// let router = Router::new().resource(readme, |_ctx: RequestContext| async {
    ///     Ok(ReadResourceResult {
    ///         contents: vec![ResourceContents::text("file:///README.md", "# Hello")],
    ///         ..Default::default()
    ///     })
    /// });
    /// assert!(router.capabilities().resources.is_some());
    /// ```
    pub fn resource<F, Fut>(self, resource: Resource, f: F) -> Self
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, HandlerError>> + Send + 'static,
    {
        self.add_resource(resource, f);
        self
    }

    /// [`resource`](Self::resource) at run time (one with the same URI is
    /// replaced). Clients are told the list changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{ReadResourceResult, Resource, ResourceContents};
    /// use conduit_mcp::server::{Handler, RequestContext, Router};
    ///
    /// let router = Router::new();
    /// router.add_resource(Resource::new("memo://today", "today"), |_ctx: RequestContext| async {
    ///     Ok(ReadResourceResult {
    ///         contents: vec![ResourceContents::text("memo://today", "nothing planned")],
    ///         ..Default::default()
    ///     })
    /// });
    /// assert!(router.capabilities().resources.is_some());
    /// ```
    pub fn add_resource<F, Fut>(&self, resource: Resource, f: F)
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, HandlerError>> + Send + 'static,
    {
        let read: Arc<ReadFn> = Arc::new(move |_, _, ctx| Box::pin(f(ctx)));
        {
            let mut r = self.routes_mut();
            r.resources.retain(|(x, _)| x.uri != resource.uri);
            r.resources.push((resource, read));
        }
        self.sessions.notify_list_changed(ListKind::Resources);
    }

    /// Removes a resource; returns whether there was one. Clients are told.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{ReadResourceResult, Resource};
    /// use conduit_mcp::server::{RequestContext, Router};
    ///
    /// let router = Router::new().resource(Resource::new("memo://today", "today"), |_ctx: RequestContext| async {
    ///     Ok(ReadResourceResult::default())
    /// });
    /// assert!(router.remove_resource("memo://today"));
    /// assert!(!router.remove_resource("memo://today"));
    /// ```
    pub fn remove_resource(&self, uri: &str) -> bool {
        let removed = {
            let mut r = self.routes_mut();
            let before = r.resources.len();
            r.resources.retain(|(x, _)| x.uri != uri);
            r.resources.len() != before
        };
        if removed {
            self.sessions.notify_list_changed(ListKind::Resources);
        }
        removed
    }

    /// Registers a resource template: a `resources/read` of a URI that no
    /// resource has and that matches the template's `uriTemplate` (RFC 6570
    /// `{var}` and `{+var}`) calls `f` with the URI and the variables. A
    /// template with the same `uriTemplate` is replaced.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{ReadResourceResult, ResourceContents, ResourceTemplate};
    /// use conduit_mcp::server::{Handler, RequestContext, Router};
    ///
    /// let users = ResourceTemplate {
    ///     uri_template: "users://{id}".into(),
    ///     name: "user".into(),
    ///     ..Default::default()
    /// };
    /// let router = Router::new().resource_template(users, |uri: String, vars, _ctx: RequestContext| async move {
    ///     let id = vars["id"].as_str().unwrap_or_default().to_owned(); // `42` for users://42
    ///     Ok(ReadResourceResult {
    ///         contents: vec![ResourceContents::text(uri, format!("user {id}"))],
    ///         ..Default::default()
    ///     })
    /// });
    /// assert!(router.capabilities().resources.is_some());
    /// ```
    pub fn resource_template<F, Fut>(self, template: ResourceTemplate, f: F) -> Self
    where
        F: Fn(String, Map<String, Value>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, HandlerError>> + Send + 'static,
    {
        let parsed = template::UriTemplate::parse(&template.uri_template);
        let read: Arc<ReadFn> = Arc::new(move |uri, vars, ctx| Box::pin(f(uri, vars, ctx)));
        {
            let mut r = self.routes_mut();
            r.templates
                .retain(|(t, ..)| t.uri_template != template.uri_template);
            r.templates.push((template, parsed, read));
        }
        self.sessions.notify_list_changed(ListKind::Resources);
        self
    }

    /// Tells clients that subscribed to `uri` (2025-11-25
    /// `resources/subscribe`, or a 2026-07-28 stream that named it) that it
    /// changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::Router;
    ///
    /// // After the file behind a resource changes, from any clone of the router
    /// // being served:
    /// fn file_changed(router: &Router) {
    ///     router.resource_updated("file:///README.md");
    /// }
    /// # file_changed(&Router::new());
    /// ```
    pub fn resource_updated(&self, uri: &str) {
        self.sessions.resource_updated(uri);
    }

    // ----------------------------------------------------------- prompts

    /// Registers a prompt: its arguments are `A`'s fields (names,
    /// descriptions and whether required come from `A`'s JSON Schema), and
    /// `f` builds its messages. Arguments that do not decode are an
    /// invalid-params error.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{GetPromptResult, PromptMessage, Role};
    /// use conduit_mcp::server::{Handler, RequestContext, Router};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Review {
    ///     /// The code to review.
    ///     code: String,
    /// }
    ///
    /// let router = Router::new().prompt("review", "Reviews code.", |args: Review, _ctx: RequestContext| async move {
    ///     Ok(GetPromptResult {
    ///         messages: vec![PromptMessage::text(Role::User, format!("Review this:\n{}", args.code))],
    ///         ..Default::default()
    ///     })
    /// });
    /// assert!(router.capabilities().prompts.is_some());
    /// ```
    pub fn prompt<A, F, Fut>(self, name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, HandlerError>> + Send + 'static,
    {
        let schema = schema_of::<A>();
        let kept = Kept::of(&schema);
        let prompt = Prompt {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            arguments: Some(prompt_arguments(&schema)),
            ..Prompt::default()
        };
        let get: Arc<PromptFn> = Arc::new(move |args, ctx| {
            let a = decode_input::<A>(Value::Object(args), &kept, &ctx)?;
            Ok(Box::pin(f(a, ctx)) as RouteFuture<GetPromptResult>)
        });
        {
            let mut r = self.routes_mut();
            r.prompts.retain(|(p, _)| p.name != name);
            r.prompts.push((prompt, get));
        }
        self.sessions.notify_list_changed(ListKind::Prompts);
        self
    }

    // -------------------------------------------------- everything else

    /// Answers `completion/complete` with `f` (and declares
    /// `completions`).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::{CompleteParams, CompleteResult, Completion};
    /// use conduit_mcp::server::{Handler, RequestContext, Router};
    ///
    /// let router = Router::new().completion(|params: CompleteParams, _ctx: RequestContext| async move {
    ///     let cities = ["Paris", "Porto", "Prague"];
    ///     let values = cities.iter().filter(|c| c.starts_with(&params.argument.value)).map(|c| c.to_string());
    ///     Ok(CompleteResult {
    ///         completion: Completion { values: values.collect(), ..Default::default() },
    ///         ..Default::default()
    ///     })
    /// });
    /// assert!(router.capabilities().completions.is_some());
    /// ```
    pub fn completion<F, Fut>(self, f: F) -> Self
    where
        F: Fn(CompleteParams, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CompleteResult, HandlerError>> + Send + 'static,
    {
        self.routes_mut().completer = Some(Arc::new(move |p, ctx| Box::pin(f(p, ctx))));
        self
    }

    /// Sends every request the router does not answer to `f` (the raw
    /// escape hatch); without one they get -32601.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::jsonrpc::Request;
    /// use conduit_mcp::server::{HandlerError, RequestContext, Router};
    /// use serde_json::json;
    ///
    /// let router = Router::new().fallback(|req: Request, _ctx: RequestContext| async move {
    ///     match req.method.as_str() {
    ///         "acme/version" => Ok(json!({ "version": "1.2.3" })),
    ///         other => Err(HandlerError::MethodNotFound(other.to_owned())),
    ///     }
    /// });
    /// ```
    pub fn fallback<F, Fut>(self, f: F) -> Self
    where
        F: Fn(Request, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        self.routes_mut().fallback = Some(Arc::new(move |r, ctx| Box::pin(f(r, ctx))));
        self
    }

    /// The level of the latest 2025-11-25 `logging/setLevel` of any session
    /// this router serves, if any: [`Sessions::log_level`] of its registry. Each session keeps its own level, which
    /// is the one to use: [`ServerHandle::log_level`] (through
    /// [`RequestContext::handle`]), honoured by [`RequestContext::log`].
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::server::Router;
    ///
    /// let router = Router::new();
    /// assert_eq!(router.log_level(), None); // no client has sent `logging/setLevel`
    /// ```
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.sessions.log_level()
    }

    // ----------------------------------------------------------- serving

    async fn call_tool(&self, params: Value, ctx: RequestContext) -> Result<Value, HandlerError> {
        // The name and the arguments; the rest of the params (the context
        // has its own `_meta`) is dropped here, not held while the tool runs.
        let (name, arguments) = name_and_arguments(params)?;
        let call = self
            .routes()
            .tools
            .iter()
            .find(|(t, ..)| t.name == name)
            .map(|(_, f, check)| (f.clone(), check.clone()));
        let Some((call, check)) = call else {
            return Err(HandlerError::InvalidParams(format!("Unknown tool: {name}")));
        };
        let args = Value::Object(arguments.unwrap_or_default());
        if let Err(problem) = check.check(&args) {
            tracing::debug!(tool = %name, %problem, "tool arguments refused by its inputSchema");
            return to_value(CallToolResult::error(format!(
                "invalid arguments for tool {}: {problem}",
                name
            )));
        }
        // `f` runs here, before its future exists: a panic in it is the
        // tool's too.
        let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call(args, ctx)));
        let result = match made.map_err(panic_message) {
            Err(panic) => {
                tracing::warn!(tool = %name, %panic, "tool panicked: answered with a tool error");
                CallToolResult::error(format!("tool {} panicked: {panic}", name))
            }
            Ok(Err(problem)) => {
                CallToolResult::error(format!("invalid arguments for tool {}: {problem}", name))
            }
            Ok(Ok(fut)) => match catch_panic(fut).await {
                Ok(r) => r?,
                Err(panic) => {
                    tracing::warn!(tool = %name, %panic, "tool panicked: answered with a tool error");
                    CallToolResult::error(format!("tool {} panicked: {panic}", name))
                }
            },
        };
        to_value(result)
    }

    async fn read_resource(
        &self,
        params: Value,
        ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        let p: ReadResourceParams = parse_params(params)?;
        let found = {
            let r = self.routes();
            r.resources
                .iter()
                .find(|(x, _)| x.uri == p.uri)
                .map(|(_, f)| (f.clone(), Map::new()))
                .or_else(|| {
                    r.templates
                        .iter()
                        .find_map(|(_, t, f)| t.matches(&p.uri).map(|vars| (f.clone(), vars)))
                })
        };
        let Some((read, vars)) = found else {
            return Err(HandlerError::Rpc(
                ErrorObject::new(resource_not_found(ctx.era()), "Resource not found")
                    .with_data(json!({ "uri": p.uri })),
            ));
        };
        to_value(read(p.uri, vars, ctx).await?)
    }

    async fn get_prompt(&self, params: Value, ctx: RequestContext) -> Result<Value, HandlerError> {
        // As for a tool: the rest of the params is not held meanwhile.
        let (name, arguments) = {
            let p: GetPromptParams = parse_params(params)?;
            (p.name, p.arguments)
        };
        let get = self
            .routes()
            .prompts
            .iter()
            .find(|(x, _)| x.name == name)
            .map(|(_, f)| f.clone());
        let Some(get) = get else {
            return Err(HandlerError::InvalidParams(format!(
                "Unknown prompt: {name}"
            )));
        };
        let fut = get(arguments.unwrap_or_default(), ctx).map_err(|problem| {
            HandlerError::InvalidParams(format!("invalid arguments for prompt {name}: {problem}"))
        })?;
        to_value(fut.await?)
    }

    /// Serves one `subscriptions/listen` stream: acknowledges what this
    /// router can send, then holds the request open until the client
    /// cancels it, closes its input, or the server stops (then the stream
    /// ends with its result).
    async fn listen(&self, req: &Request, ctx: RequestContext) -> Result<Value, HandlerError> {
        let p: ListenParams = parse_params(req.params.clone().unwrap_or(Value::Null))?;
        let agreed = {
            let r = self.routes();
            let asked = |b: Option<bool>, have: bool| (b == Some(true) && have).then_some(true);
            SubscriptionFilter {
                tools_list_changed: asked(p.notifications.tools_list_changed, !r.tools.is_empty()),
                prompts_list_changed: asked(
                    p.notifications.prompts_list_changed,
                    !r.prompts.is_empty(),
                ),
                resources_list_changed: asked(
                    p.notifications.resources_list_changed,
                    !r.resources.is_empty() || !r.templates.is_empty(),
                ),
                resource_subscriptions: p.notifications.resource_subscriptions.clone(),
                ..Default::default()
            }
        };
        self.sessions.serve_listen(req, ctx, agreed).await
    }
}

/// The JSON-RPC code for an unknown resource: -32002 up to 2025-11-25;
/// 2026-07-28 (SEP-2164) standardises on -32602 (invalid params), with the
/// URI in `data` in both.
fn resource_not_found(era: Era) -> i64 {
    match era {
        Era::Stateful => -32002,
        Era::Stateless => crate::jsonrpc::codes::INVALID_PARAMS,
    }
}

fn to_value(v: impl Serialize) -> Result<Value, HandlerError> {
    serde_json::to_value(v).map_err(|e| HandlerError::Internal(e.to_string()))
}

/// Runs `fut` in a task of its own so that a panic is caught (and the task
/// aborted if this future is dropped, as a cancelled request's is).
async fn catch_panic<T: Send + 'static>(
    fut: RouteFuture<T>,
) -> Result<Result<T, HandlerError>, String> {
    let mut task = crate::sync::AbortOnDrop(tokio::spawn(fut));
    match (&mut task.0).await {
        Ok(r) => Ok(r),
        Err(e) => Err(match e.try_into_panic() {
            Ok(p) => panic_message(p),
            Err(_) => "the tool's task was cancelled".to_owned(),
        }),
    }
}

/// The message a panic was raised with.
fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// A prompt's arguments from its argument type's JSON Schema.
fn prompt_arguments(schema: &Value) -> Vec<PromptArgument> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, p)| PromptArgument {
            name: name.clone(),
            description: p
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            required: Some(required.contains(&name.as_str())),
            ..Default::default()
        })
        .collect()
}

/// A `tools/call`'s name and arguments, taken out of its params. Params of
/// the common shape, those two and `_meta`, give them up as they are; any
/// other shape is decoded as [`CallToolParams`], which names what is wrong.
fn name_and_arguments(params: Value) -> Result<(String, Option<Map<String, Value>>), HandlerError> {
    let params = match params {
        Value::Object(mut p)
            if p.iter().all(|(k, v)| match k.as_str() {
                "name" => v.is_string(),
                "arguments" | "_meta" => v.is_object() || v.is_null(),
                _ => false,
            }) =>
        {
            if let Some(Value::String(name)) = p.remove("name") {
                let arguments = match p.remove("arguments") {
                    Some(Value::Object(a)) => Some(a),
                    _ => None,
                };
                return Ok((name, arguments));
            }
            Value::Object(p)
        }
        other => other,
    };
    let p: CallToolParams = parse_params(params)?;
    Ok((p.name, p.arguments))
}

impl Handler for Router {
    async fn handle_request(
        &self,
        mut req: Request,
        ctx: RequestContext,
    ) -> Result<Value, HandlerError> {
        // The params are taken, not copied, by the arms that decode them;
        // the others (and the fall-back) keep the request whole.
        let mut params = || req.params.take().unwrap_or(Value::Null);
        let method = req.method.clone();
        match method.as_str() {
            methods::TOOLS_LIST => to_value(ListToolsResult {
                tools: self
                    .routes()
                    .tools
                    .iter()
                    .map(|(t, ..)| t.clone())
                    .collect(),
                ..Default::default()
            }),
            methods::TOOLS_CALL => self.call_tool(params(), ctx).await,
            methods::RESOURCES_LIST => to_value(ListResourcesResult {
                resources: self
                    .routes()
                    .resources
                    .iter()
                    .map(|(r, _)| r.clone())
                    .collect(),
                ..Default::default()
            }),
            methods::RESOURCES_TEMPLATES_LIST => to_value(ListResourceTemplatesResult {
                resource_templates: self
                    .routes()
                    .templates
                    .iter()
                    .map(|(t, ..)| t.clone())
                    .collect(),
                ..Default::default()
            }),
            methods::RESOURCES_READ => self.read_resource(params(), ctx).await,
            // Stateful only: 2026-07-28 has `subscriptions/listen` and the
            // `_meta` log level instead.
            methods::RESOURCES_SUBSCRIBE
            | methods::RESOURCES_UNSUBSCRIBE
            | methods::LOGGING_SET_LEVEL
                if ctx.era() == Era::Stateful =>
            {
                self.sessions.handle_request(req, ctx).await
            }
            methods::PROMPTS_LIST => to_value(ListPromptsResult {
                prompts: self
                    .routes()
                    .prompts
                    .iter()
                    .map(|(p, _)| p.clone())
                    .collect(),
                ..Default::default()
            }),
            methods::PROMPTS_GET => self.get_prompt(params(), ctx).await,
            methods::SUBSCRIPTIONS_LISTEN if ctx.era() == Era::Stateless => {
                self.listen(&req, ctx).await
            }
            methods::COMPLETION_COMPLETE => {
                let completer = self.routes().completer.clone();
                match completer {
                    Some(f) => to_value(f(parse_params(params())?, ctx).await?),
                    None => self.fall_back(req, ctx).await,
                }
            }
            _ => self.fall_back(req, ctx).await,
        }
    }

    fn capabilities(&self) -> ServerCapabilities {
        let r = self.routes();
        let listed = |any: bool| {
            any.then(|| ListChangedCapability {
                list_changed: Some(true),
                ..Default::default()
            })
        };
        let any_resources = !r.resources.is_empty() || !r.templates.is_empty();
        ServerCapabilities {
            tools: listed(!r.tools.is_empty()),
            prompts: listed(!r.prompts.is_empty()),
            resources: any_resources.then(|| ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
                ..Default::default()
            }),
            completions: r.completer.as_ref().map(|_| Map::new()),
            ..Default::default()
        }
    }

    fn serving(&self, handle: ServerHandle) {
        self.sessions.serving(handle);
    }

    fn tool_input_schema(&self, name: &str) -> Option<Value> {
        let mut schema = None;
        self.with_tool_input_schema(name, &mut |s| schema = Some(s.clone()));
        schema
    }
}

impl Router {
    /// Runs `f` on tool `name`'s `inputSchema` where it is held, if there
    /// is such a tool: the HTTP transport reads it per call, without a copy.
    pub(crate) fn with_tool_input_schema(&self, name: &str, f: &mut dyn FnMut(&Value)) {
        if let Some((t, ..)) = self.routes().tools.iter().find(|(t, ..)| t.name == name) {
            f(&t.input_schema);
        }
    }

    async fn fall_back(&self, req: Request, ctx: RequestContext) -> Result<Value, HandlerError> {
        let fallback = self.routes().fallback.clone();
        match fallback {
            Some(f) => f(req, ctx).await,
            None => Err(HandlerError::Rpc(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("method not found: {}", req.method),
            ))),
        }
    }
}
