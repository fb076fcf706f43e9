//! The two ways to serve: [`HttpServer`] owns a listener (bind, serve until
//! stop, close), [`HttpService`] is the endpoint as a `tower::Service` (and
//! an axum router) to mount in an application that owns its listener.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{Request, Response};
use axum::response::IntoResponse;
use tokio::net::{TcpListener, ToSocketAddrs};

use crate::server::handle::{ServerHandle, SessionId, SessionShared};

use crate::server::{Handler, ServeEnd, ServerError};

use super::config::HttpConfig;
use super::core::Core;
use super::endpoint;
use super::listener::{serve_app, ConnLimits};

/// The server-wide state a handle can reach before serving starts.
fn new_root(config: &HttpConfig) -> Arc<SessionShared> {
    Arc::new(
        SessionShared::new(SessionId::local("http"), config.server.clone(), None)
            .over_http(Arc::<super::core::Link>::default(), None),
    )
}

/// A Streamable HTTP server: a listener, and the MCP endpoint on it.
///
/// [`bind`](Self::bind) (or [`from_listener`](Self::from_listener)), take
/// [`handle`](Self::handle)s, then [`serve`](Self::serve) a [`Handler`] or
/// [`Router`](crate::server::Router) until [`ServerHandle::stop`].
///
/// ```no_run
/// use conduit_mcp::protocol::{CallToolResult, Implementation};
/// use conduit_mcp::server::http::{HttpConfig, HttpServer};
/// use conduit_mcp::server::{RequestContext, Router, ServerConfig};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let router = Router::new().tool("hello", "Says hello.", |_: serde_json::Value, _ctx: RequestContext| async {
///     Ok(CallToolResult::text("hello"))
/// });
/// let config = HttpConfig::new(ServerConfig::new(Implementation::new("hello", "1.0.0")));
/// let server = HttpServer::bind("127.0.0.1:8080", config).await?;
/// println!("serving {}", server.url()?);
/// server.serve(router).await?; // until handle.stop()
/// # Ok(()) }
/// ```
pub struct HttpServer {
    listener: TcpListener,
    config: HttpConfig,
    root: Arc<SessionShared>,
    layers: Layers,
}

/// The layers given to [`HttpServer::layer`], applied in order.
type Layers = Box<dyn FnOnce(axum::Router) -> axum::Router + Send + Sync>;

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("local_addr", &self.listener.local_addr().ok())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Binds `addr`. Bind loopback (`127.0.0.1:PORT`, the safe default)
    /// unless the server is meant to be reached from elsewhere; then list
    /// the names it is reached by in
    /// [`HttpConfig::allowed_hosts`](HttpConfig::allowed_hosts), and add an
    /// authorization [`layer`](Self::layer).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::http::{HttpConfig, HttpServer};
    /// use conduit_mcp::server::{Router, ServerConfig};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = HttpConfig::new(ServerConfig::new(Implementation::new("tools", "1.0.0")));
    /// let server = HttpServer::bind("127.0.0.1:8080", config).await?;
    /// server.serve(Router::new()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn bind(addr: impl ToSocketAddrs, config: HttpConfig) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Self::from_listener(listener, config))
    }

    /// Serves on a listener bound elsewhere.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::http::{HttpConfig, HttpServer};
    /// use conduit_mcp::server::{Router, ServerConfig};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?; // any free port
    /// let config = HttpConfig::new(ServerConfig::new(Implementation::new("tools", "1.0.0")));
    /// let server = HttpServer::from_listener(listener, config);
    /// server.serve(Router::new()).await?;
    /// # Ok(()) }
    /// ```
    pub fn from_listener(listener: TcpListener, config: HttpConfig) -> Self {
        let root = new_root(&config);
        HttpServer {
            listener,
            config,
            root,
            layers: Box::new(|r| r),
        }
    }

    /// Puts `layer` around the endpoint: it sees every request to
    /// [`HttpConfig::path`] that passed the `Host` and `Origin` check, and
    /// may answer it instead of the server. This is how a server is
    /// authorized: a [`BearerLayer`](super::BearerLayer), or any tower
    /// layer that `axum::Router::route_layer` takes. The layer added last
    /// runs first.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::http::{BearerLayer, BearerTokens, HttpConfig, HttpServer};
    /// use conduit_mcp::server::{Router, ServerConfig};
    /// use conduit_mcp::Secret;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = HttpConfig::new(ServerConfig::new(Implementation::new("tools", "1.0.0")));
    /// let tokens = BearerTokens::new().token(Secret::new("s3cret-token"), ());
    /// let server = HttpServer::bind("127.0.0.1:0", config)
    ///     .await?
    ///     .layer(BearerLayer::new(tokens));
    /// server.handle().stop();
    /// server.serve(Router::new()).await?;
    /// # Ok(()) }
    /// ```
    pub fn layer<L>(self, layer: L) -> Self
    where
        L: tower::Layer<axum::routing::Route> + Clone + Send + Sync + 'static,
        L::Service: tower::Service<Request<Body>> + Clone + Send + Sync + 'static,
        <L::Service as tower::Service<Request<Body>>>::Response: IntoResponse + 'static,
        <L::Service as tower::Service<Request<Body>>>::Error: Into<Infallible> + 'static,
        <L::Service as tower::Service<Request<Body>>>::Future: Send + 'static,
    {
        let inner = self.layers;
        HttpServer {
            layers: Box::new(move |r| inner(r).route_layer(layer)),
            ..self
        }
    }

    /// The address the listener is bound to.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::http::{HttpConfig, HttpServer};
    /// # use conduit_mcp::server::ServerConfig;
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// # let config = HttpConfig::new(ServerConfig::new(Implementation::new("tools", "1.0.0")));
    /// let server = HttpServer::bind("127.0.0.1:0", config).await?;
    /// let port = server.local_addr()?.port(); // the port the system chose
    /// assert_ne!(port, 0);
    /// # Ok(()) }
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The endpoint's URL (`http://ADDR/mcp`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::http::{HttpConfig, HttpServer};
    /// # use conduit_mcp::server::ServerConfig;
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// # let config = HttpConfig::new(ServerConfig::new(Implementation::new("tools", "1.0.0")));
    /// let server = HttpServer::bind("127.0.0.1:8080", config).await?;
    /// assert_eq!(server.url()?, "http://127.0.0.1:8080/mcp");
    /// # Ok(()) }
    /// ```
    pub fn url(&self) -> io::Result<String> {
        Ok(format!(
            "http://{}{}",
            self.local_addr()?,
            self.config.get_path()
        ))
    }

    /// A cloneable handle: [`stop`](ServerHandle::stop), the lifetime token,
    /// readiness, and notifications to every session
    /// ([`notify`](ServerHandle::notify)) or one
    /// ([`notify_session`](ServerHandle::notify_session), by its
    /// `MCP-Session-Id`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::http::{HttpConfig, HttpServer};
    /// # use conduit_mcp::server::{Router, ServerConfig};
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// # let config = HttpConfig::new(ServerConfig::new(Implementation::new("tools", "1.0.0")));
    /// let server = HttpServer::bind("127.0.0.1:8080", config).await?;
    /// let handle = server.handle();
    /// tokio::spawn(async move {
    ///     let _ = tokio::signal::ctrl_c().await;
    ///     handle.stop(); // serve returns once every session ended
    /// });
    /// server.serve(Router::new()).await?;
    /// # Ok(()) }
    /// ```
    pub fn handle(&self) -> ServerHandle {
        ServerHandle::new(&self.root)
    }

    /// Serves `handler` until [`ServerHandle::stop`]: then new requests get
    /// 503, in-flight ones their answers within
    /// [`ServerConfig::stop_drain`](crate::server::ServerConfig::stop_drain)
    /// (then an error answer saying the server is stopping), every session
    /// ends, open streams get what was queued for them within
    /// [`ServerConfig::flush_timeout`](crate::server::ServerConfig::flush_timeout),
    /// and the listener closes. Returns `Ok(ServeEnd::Stopped)`; the
    /// lifetime token has expired by then.
    ///
    /// Must be called within a tokio runtime.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::{CallToolResult, Implementation};
    /// use conduit_mcp::server::http::{HttpConfig, HttpServer};
    /// use conduit_mcp::server::{RequestContext, Router, ServeEnd, ServerConfig};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let router = Router::new().tool("hello", "Says hello.", |_: serde_json::Value, _ctx: RequestContext| async {
    ///     Ok(CallToolResult::text("hello"))
    /// });
    /// let config = HttpConfig::new(ServerConfig::new(Implementation::new("hello", "1.0.0")));
    /// let end = HttpServer::bind("127.0.0.1:8080", config).await?.serve(router).await?;
    /// assert_eq!(end, ServeEnd::Stopped);
    /// # Ok(()) }
    /// ```
    pub async fn serve<H: Handler>(self, handler: H) -> Result<ServeEnd, ServerError> {
        let HttpServer {
            listener,
            config,
            root,
            layers,
        } = self;
        let result = serve_on(listener, config, handler, root.clone(), layers).await;
        root.close();
        result
    }
}

async fn serve_on<H: Handler>(
    listener: TcpListener,
    config: HttpConfig,
    handler: H,
    root: Arc<SessionShared>,
    layers: Layers,
) -> Result<ServeEnd, ServerError> {
    config.validate()?;
    if root.stop_requested() {
        tracing::info!("server stopped before it started");
        return Ok(ServeEnd::Stopped);
    }
    let flush = config.server.get_flush_timeout();
    let limits = ConnLimits::of(&config);
    let addr = listener.local_addr().map_err(ServerError::Read)?;
    let records = Arc::new(super::MemoryStore::default());
    let core = Core::new(config, handler, root.clone(), false, records);
    let done = core.watch_done();
    core.start();
    let app = endpoint::router(core.clone(), layers);
    tracing::info!(server = %core.name(), %addr, path = %core.config().get_path(), "http server listening");
    root.mark_ready();
    serve_app(listener, app, limits, root.connections(), done, flush)
        .await
        .map_err(ServerError::Read)?;
    tracing::info!(server = %core.name(), "http server stopped");
    Ok(ServeEnd::Stopped)
}

/// The MCP endpoint as a [`tower::Service`] (and an axum
/// [`Router`](axum::Router), [`axum_router`](Self::axum_router)), to mount in an
/// application that serves other routes and owns its listener.
///
/// ```no_run
/// use conduit_mcp::protocol::Implementation;
/// use conduit_mcp::server::http::{HttpConfig, HttpService};
/// use conduit_mcp::server::{Router, ServerConfig};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = HttpConfig::new(ServerConfig::new(Implementation::new("app", "1.0.0")));
/// let mcp = HttpService::new(config, Router::new())?;
/// let app = axum::Router::new()
///     .route("/health", axum::routing::get(|| async { "ok" }))
///     .merge(mcp.axum_router()); // POST/GET/DELETE /mcp
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// axum::serve(listener, app).await?;
/// # Ok(()) }
/// ```
///
/// As a service, without a listener:
///
/// ```
/// use conduit_mcp::protocol::Implementation;
/// use conduit_mcp::server::http::{HttpConfig, HttpService};
/// use conduit_mcp::server::{Router, ServerConfig};
/// use tower::ServiceExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = HttpConfig::new(ServerConfig::new(Implementation::new("app", "1.0.0")));
/// let mcp = HttpService::new(config, Router::new())?;
/// let request = axum::http::Request::delete("/mcp")
///     .header("host", "localhost")
///     .body(axum::body::Body::empty())?;
/// let response = mcp.clone().oneshot(request).await?;
/// assert_eq!(response.status(), 405); // no session: only POST serves here
/// # Ok(()) }
/// ```
///
/// `new` spawns nothing: the background tasks (the expiry of idle sessions
/// and the watcher of [`ServerHandle::stop`]) start with the first request
/// or with [`stopped`](Self::stopped). [`ServerHandle::stop`] runs the same
/// stop sequence as [`HttpServer::serve`] (new requests then get 503);
/// [`stopped`](Self::stopped) resolves once it has run. The listener is the
/// application's to close.
#[derive(Clone)]
pub struct HttpService {
    core: Arc<Core>,
    router: axum::Router,
}

impl std::fmt::Debug for HttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpService")
            .field("config", self.core.config())
            .finish_non_exhaustive()
    }
}

impl HttpService {
    /// The endpoint's state (tests look inside).
    #[cfg(test)]
    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// The endpoint serving `handler`. Spawns nothing (and needs no
    /// runtime): its background tasks start with its first request, within
    /// the runtime that serves it.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::http::{HttpConfig, HttpService};
    /// use conduit_mcp::server::{Router, ServerConfig};
    /// use tower::ServiceExt;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = HttpConfig::new(ServerConfig::new(Implementation::new("app", "1.0.0")));
    /// let mcp = HttpService::new(config, Router::new())?;
    /// let elsewhere = axum::http::Request::get("/other")
    ///     .header("host", "localhost")
    ///     .body(axum::body::Body::empty())?;
    /// assert_eq!(mcp.oneshot(elsewhere).await?.status(), 404); // only /mcp is served
    /// # Ok(()) }
    /// ```
    pub fn new<H: Handler>(config: HttpConfig, handler: H) -> Result<Self, ServerError> {
        Self::with_session_store(config, handler, Arc::new(super::MemoryStore::default()))
    }

    /// [`new`](Self::new), keeping the sessions' records in `store`: a
    /// request naming a session this service does not hold live is served
    /// from the record `store` loads, whichever service minted it.
    ///
    /// The default store is a [`MemoryStore`](super::MemoryStore) of its own.
    pub fn with_session_store<H: Handler>(
        config: HttpConfig,
        handler: H,
        store: Arc<dyn super::SessionStore>,
    ) -> Result<Self, ServerError> {
        config.validate()?;
        let root = new_root(&config);
        let core = Core::new(config, handler, root, true, store);
        core.root().mark_ready();
        let router = endpoint::router(core.clone(), |r| r);
        Ok(HttpService { core, router })
    }

    /// Resolves once the stop sequence of [`ServerHandle::stop`] has run:
    /// in-flight requests answered or aborted, every session ended, the
    /// lifetime token expired (or the service is gone). Starts the
    /// background tasks if no request did yet.
    ///
    /// # Examples
    ///
    /// ```
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::http::{HttpConfig, HttpService};
    /// # use conduit_mcp::server::{Router, ServerConfig};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let config = HttpConfig::new(ServerConfig::new(Implementation::new("app", "1.0.0")));
    /// let mcp = HttpService::new(config, Router::new())?;
    /// mcp.handle().stop();
    /// mcp.stopped().await; // every session has ended
    /// assert!(!mcp.handle().lifetime_token().is_alive());
    /// # Ok(()) }
    /// ```
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut done = self.core.watch_done();
        let core = Arc::downgrade(&self.core);
        async move {
            if let Some(core) = core.upgrade() {
                core.start();
            }
            let _ = done.wait_for(|d| *d).await;
        }
    }

    /// A cloneable handle (see [`HttpServer::handle`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::http::{HttpConfig, HttpService};
    /// # use conduit_mcp::server::{Router, ServerConfig};
    /// use tower::ServiceExt;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let config = HttpConfig::new(ServerConfig::new(Implementation::new("app", "1.0.0")));
    /// let mcp = HttpService::new(config, Router::new())?;
    /// mcp.handle().stop();
    /// let ping = axum::http::Request::post("/mcp")
    ///     .header("host", "localhost")
    ///     .header("content-type", "application/json")
    ///     .header("accept", "application/json, text/event-stream")
    ///     .body(axum::body::Body::from(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#))?;
    /// assert_eq!(mcp.oneshot(ping).await?.status(), 503); // stopped
    /// # Ok(()) }
    /// ```
    pub fn handle(&self) -> ServerHandle {
        ServerHandle::new(self.core.root())
    }

    /// The router: the endpoint at [`HttpConfig::path`]. Add tower layers
    /// to it (authentication, tracing, timeouts) as to any axum router.
    ///
    /// # Examples
    ///
    /// ```
    /// # use conduit_mcp::protocol::Implementation;
    /// # use conduit_mcp::server::http::{HttpConfig, HttpService};
    /// # use conduit_mcp::server::{Router, ServerConfig};
    /// use tower::ServiceExt;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let config = HttpConfig::new(ServerConfig::new(Implementation::new("app", "1.0.0")));
    /// let mcp = HttpService::new(config, Router::new())?;
    /// let app = axum::Router::new()
    ///     .route("/health", axum::routing::get(|| async { "ok" }))
    ///     .merge(mcp.axum_router());
    /// let end_session = axum::http::Request::delete("/mcp")
    ///     .header("host", "localhost")
    ///     .body(axum::body::Body::empty())?;
    /// assert_eq!(app.oneshot(end_session).await?.status(), 405); // no session to end
    /// # Ok(()) }
    /// ```
    pub fn axum_router(&self) -> axum::Router {
        self.router.clone()
    }
}

/// The endpoint as a service: requests for [`HttpConfig::path`] are
/// served, others get 404. Always ready; never fails (a refusal is a
/// response, see [`Rejection`](super::Rejection)).
impl tower::Service<Request<Body>> for HttpService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = axum::routing::future::RouteFuture<Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        self.core.start();
        tower::Service::call(&mut self.router, req)
    }
}
