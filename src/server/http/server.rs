//! The two ways to serve: [`HttpServer`] owns a listener (bind, serve until
//! stop, close), [`HttpService`] is the endpoint as an axum router to mount
//! in an application that owns its listener.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};

use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::watch;

use crate::line_io::WriteQueue;
use crate::server::handle::{ServePhase, ServerHandle, SessionShared};
use crate::server::{Handler, ServeEnd, ServerError};

use super::config::HttpConfig;
use super::core::Core;
use super::endpoint;
use super::listener::{serve_app, ConnLimits};

/// The server-wide state a handle can reach before serving starts.
fn new_root(config: &HttpConfig) -> Arc<SessionShared> {
    let (out, _rx) = WriteQueue::new(1024);
    let mut root = SessionShared::new(config.server.clone(), out);
    root.transport = "http";
    Arc::new(root)
}

/// Starts the tasks every server runs: idle-session expiry, and the stop
/// sequence on [`ServerHandle::stop`]. Both hold the core weakly.
/// The receiver turns true once the stop sequence has run.
fn start_tasks(core: &Arc<Core>) -> watch::Receiver<bool> {
    tokio::spawn(Core::sweep(Arc::downgrade(core)));
    let (done_tx, done_rx) = watch::channel(false);
    let weak: Weak<Core> = Arc::downgrade(core);
    let mut stop = core.root.stop.subscribe();
    tokio::spawn(async move {
        if stop.wait_for(|v| *v).await.is_err() {
            return; // the server is gone
        }
        if let Some(core) = weak.upgrade() {
            core.shutdown().await;
        }
        done_tx.send_replace(true);
    });
    done_rx
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
}

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
    /// [`HttpConfig::allowed_hosts`](HttpConfig::allowed_hosts), and set an
    /// authorization.
    pub async fn bind(addr: impl ToSocketAddrs, config: HttpConfig) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Self::from_listener(listener, config))
    }

    /// Serves on a listener bound elsewhere.
    pub fn from_listener(listener: TcpListener, config: HttpConfig) -> Self {
        let root = new_root(&config);
        HttpServer {
            listener,
            config,
            root,
        }
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The endpoint's URL (`http://ADDR/mcp`).
    pub fn url(&self) -> io::Result<String> {
        Ok(format!("http://{}{}", self.local_addr()?, self.config.path))
    }

    /// A cloneable handle: [`stop`](ServerHandle::stop), the lifetime token,
    /// readiness, and notifications to every session
    /// ([`notify`](ServerHandle::notify)) or one
    /// ([`notify_session`](ServerHandle::notify_session), by its
    /// `MCP-Session-Id`).
    pub fn handle(&self) -> ServerHandle {
        ServerHandle::new(&self.root)
    }

    /// The transport's diagnostic name: `"http"`.
    pub fn name(&self) -> &'static str {
        "http"
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
    pub async fn serve<H: Handler>(self, handler: H) -> Result<ServeEnd, ServerError> {
        let HttpServer {
            listener,
            config,
            root,
        } = self;
        let result = serve_on(listener, config, handler, root.clone()).await;
        root.close();
        result
    }
}

async fn serve_on<H: Handler>(
    listener: TcpListener,
    config: HttpConfig,
    handler: H,
    root: Arc<SessionShared>,
) -> Result<ServeEnd, ServerError> {
    config.validate()?;
    if *root.stop.borrow() {
        tracing::info!("server stopped before it started");
        return Ok(ServeEnd::Stopped);
    }
    let flush = config.server.flush_timeout;
    let limits = ConnLimits::of(&config);
    let addr = listener.local_addr().map_err(ServerError::Read)?;
    let core = Core::new(config, handler, root.clone());
    let done = start_tasks(&core);
    let app = endpoint::router(core.clone());
    tracing::info!(server = %core.name(), %addr, path = %core.config.path, "http server listening");
    root.phase.send_replace(ServePhase::Ready);
    serve_app(listener, app, limits, done, flush)
        .await
        .map_err(ServerError::Read)?;
    tracing::info!(server = %core.name(), "http server stopped");
    Ok(ServeEnd::Stopped)
}

/// The MCP endpoint as an axum [`Router`](axum::Router), to mount in an
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
///     .merge(mcp.router()); // POST/GET/DELETE /mcp
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// axum::serve(listener, app).await?;
/// # Ok(()) }
/// ```
///
/// [`ServerHandle::stop`] runs the same stop sequence as
/// [`HttpServer::serve`] (new requests then get 503); the listener is the
/// application's to close.
#[derive(Clone)]
pub struct HttpService {
    pub(crate) core: Arc<Core>,
    /// Turns true once the stop sequence has run.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))]
    pub(crate) done: watch::Receiver<bool>,
}

impl std::fmt::Debug for HttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpService")
            .field("config", &self.core.config)
            .finish_non_exhaustive()
    }
}

impl HttpService {
    /// The endpoint serving `handler`. Must be called within a tokio
    /// runtime (it starts the idle-session expiry and the stop watcher).
    pub fn new<H: Handler>(config: HttpConfig, handler: H) -> Result<Self, ServerError> {
        config.validate()?;
        let root = new_root(&config);
        let core = Core::new(config, handler, root.clone());
        let done = start_tasks(&core);
        let mut closing = done.clone();
        tokio::spawn(async move {
            if closing.wait_for(|d| *d).await.is_ok() {
                root.close();
            }
        });
        core.root.phase.send_replace(ServePhase::Ready);
        Ok(HttpService { core, done })
    }

    /// A cloneable handle (see [`HttpServer::handle`]).
    pub fn handle(&self) -> ServerHandle {
        ServerHandle::new(&self.core.root)
    }

    /// The router: the endpoint at [`HttpConfig::path`]. Add tower layers
    /// to it (authentication, tracing, timeouts) as to any axum router.
    pub fn router(&self) -> axum::Router {
        endpoint::router(self.core.clone())
    }
}
