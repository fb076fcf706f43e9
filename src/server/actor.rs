//! Serving as a ractor actor: [`ServeActor`].

use std::marker::PhantomData;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::task::JoinHandle;

use super::error::ServerError;
use super::handle::ServerHandle;
use super::request_handler::Handler;
use super::{ServeEnd, StdioServer};

/// An actor that serves one [`StdioServer`], for programs built as
/// supervision trees.
///
/// [`ServeActor`] owns a [`StdioServer`] and serves it from a task of its
/// own. Its life follows the server's:
///
/// - serving ends cleanly (EOF, [`ServerHandle::stop`]) → the actor stops
///   normally, with the reason `"eof"` or `"stopped"`;
/// - serving fails ([`ServerError`]) → the actor fails with that error, so a
///   supervising parent receives `SupervisionEvent::ActorFailed`;
/// - the actor is stopped (`stop()`, or its parent stops) → `post_stop`
///   calls [`ServerHandle::stop`] and waits for serving to end (within
///   [`ServerConfig::stop_drain`](super::ServerConfig::stop_drain) and
///   [`ServerConfig::flush_timeout`](super::ServerConfig::flush_timeout));
/// - the actor is killed (`kill()`, a linked parent's death) → its state is
///   dropped, which drops the serving future: handlers are aborted and the
///   stdout guard, if any, is removed (ractor skips `post_stop` on kill, so
///   this path lives in `Drop`). The aborted future is dropped by the
///   runtime shortly after, not inside `kill()`: a replacement started at
///   once with [`stdout_guard`](super::ServerConfig::stdout_guard) may fail
///   with [`ServerError::StdoutGuardInUse`] until then (a restart with
///   backoff gets through).
///
/// Take the [`ServerHandle`] (`server.handle()`) before handing the server
/// to the actor: the actor has no messages of its own to send.
///
/// ```no_run
/// use conduit_mcp::jsonrpc::Request;
/// use conduit_mcp::protocol::Implementation;
/// use conduit_mcp::server::{Handler, HandlerError, RequestContext, ServeActor, ServeArgs, ServerConfig, StdioServer};
/// use serde_json::Value;
///
/// struct Tools;
/// impl Handler for Tools {
///     async fn handle_request(&self, r: Request, _: RequestContext) -> Result<Value, HandlerError> {
///         Err(HandlerError::MethodNotFound(r.method))
///     }
/// }
///
/// # async fn run() -> Result<(), ractor::SpawnErr> {
/// let server = StdioServer::new(ServerConfig::new(Implementation::new("tools", "1")));
/// let handle = server.handle();
/// let (actor, done) = ractor::Actor::spawn(None, ServeActor::new(), ServeArgs { server, handler: Tools }).await?;
/// // ... `handle.notify(...)`; `actor.stop(None)` ends serving.
/// let _ = done.await;
/// # Ok(()) }
/// ```
pub struct ServeActor<H>(PhantomData<fn() -> H>);

impl<H> ServeActor<H> {
    /// The actor (pass it to `ractor::Actor::spawn` or `spawn_linked`).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::{Router, ServeActor, ServeArgs, ServerConfig, StdioServer};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// let server = StdioServer::over(tokio::io::empty(), tokio::io::sink(), config);
    /// let args = ServeArgs { server, handler: Router::new() };
    /// let (_actor, done) = ractor::Actor::spawn(None, ServeActor::new(), args).await?;
    /// done.await?; // the input was empty: serving ended, and the actor stopped
    /// # Ok(()) }
    /// ```
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<H> Default for ServeActor<H> {
    fn default() -> Self {
        Self::new()
    }
}

/// What a [`ServeActor`] serves.
pub struct ServeArgs<H> {
    /// The server (take its [`handle`](StdioServer::handle) first).
    pub server: StdioServer,
    /// The request handler.
    pub handler: H,
}

/// Messages of a [`ServeActor`] (internal: sent by its serving task).
/// Public only because the `Actor` trait names it.
#[doc(hidden)]
#[derive(Debug)]
pub struct ServeEnded(Result<ServeEnd, ServerError>);

local_messages!(ServeEnded);

/// The actor's state. Public only because the `Actor` trait names it.
#[doc(hidden)]
pub struct ServeState {
    handle: ServerHandle,
    task: Option<JoinHandle<()>>,
}

impl Drop for ServeState {
    fn drop(&mut self) {
        // Kill path (post_stop skipped): drop the serving future at once.
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

impl<H: Handler> Actor for ServeActor<H> {
    type Msg = ServeEnded;
    type State = ServeState;
    type Arguments = ServeArgs<H>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: ServeArgs<H>,
    ) -> Result<Self::State, ActorProcessingErr> {
        let handle = args.server.handle();
        let task = tokio::spawn(async move {
            let end = args.server.serve(args.handler).await;
            // Fails only if the actor is already gone; nothing to tell then.
            let _ = myself.cast(ServeEnded(end));
        });
        Ok(ServeState {
            handle,
            task: Some(task),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: ServeEnded,
        st: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        st.task = None; // it has finished
        match msg.0 {
            Ok(end) => {
                let reason = match end {
                    ServeEnd::Eof => "eof",
                    ServeEnd::Stopped => "stopped",
                };
                myself.stop(Some(reason.to_owned()));
                Ok(())
            }
            Err(e) => Err(Box::new(e)),
        }
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        st: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(task) = st.task.take() {
            st.handle.stop();
            let _ = task.await;
        }
        Ok(())
    }
}
