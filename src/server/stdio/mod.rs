//! The stdio transport: one session over the process's stdin and stdout,
//! or over caller-supplied byte streams.

#[cfg(unix)]
mod guard;
mod output;
mod process_stdio;
mod serve_loop;

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

use super::handle::{ServerHandle, SessionId, SessionShared};
use super::{Handler, ServeEnd, ServerConfig, ServerError};
use crate::line_io::{QueueReceiver, WriteQueue};
use output::Sink;

enum Io {
    Process,
    Streams {
        reader: Box<dyn AsyncRead + Send + Unpin>,
        writer: Box<dyn AsyncWrite + Send + Unpin>,
    },
}

/// An MCP server transport over stdio (or caller-supplied streams).
///
/// Create it, take [`handle`](Self::handle)s as needed, then
/// [`serve`](Self::serve) consumes it and runs until end of input, stop, or
/// an unrecoverable error.
pub struct StdioServer {
    pub(in crate::server) shared: Arc<SessionShared>,
    io: Io,
    /// The output queue: its sender (the serve loop's) and its receiver
    /// (the writer's).
    out: (WriteQueue, QueueReceiver),
}

impl std::fmt::Debug for StdioServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioServer")
            .field("process_stdio", &matches!(self.io, Io::Process))
            .field("config", self.shared.config())
            .finish_non_exhaustive()
    }
}

impl StdioServer {
    /// A server over the process's stdin and stdout.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::{Router, ServerConfig, StdioServer};
    ///
    /// # async fn run() -> Result<(), conduit_mcp::server::ServerError> {
    /// let server = StdioServer::new(ServerConfig::new(Implementation::new("tools", "1.0.0")));
    /// let end = server.serve(Router::new()).await?; // until the client closes stdin
    /// # Ok(()) }
    /// ```
    pub fn new(config: ServerConfig) -> Self {
        Self::with_io(config, Io::Process)
    }

    /// A server over caller-supplied streams (a socket, a pipe, or
    /// `tokio::io::duplex` in tests). The server owns them and drops them
    /// when serving ends (dropping the writer closes the client's input).
    ///
    /// # Examples
    ///
    /// A server on one end of an in-memory pipe, answering a `ping`:
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::{Router, ServeEnd, ServerConfig, StdioServer};
    /// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// let (client, server_end) = tokio::io::duplex(64 * 1024);
    /// let (reader, writer) = tokio::io::split(server_end);
    /// let serving = tokio::spawn(StdioServer::over(reader, writer, config).serve(Router::new()));
    ///
    /// let (from_server, mut to_server) = tokio::io::split(client);
    /// to_server.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await?;
    /// let answer = BufReader::new(from_server).lines().next_line().await?.unwrap();
    /// assert_eq!(serde_json::from_str::<serde_json::Value>(&answer)?["id"], 1);
    ///
    /// to_server.shutdown().await?; // end of input
    /// assert_eq!(serving.await??, ServeEnd::Eof);
    /// # Ok(()) }
    /// ```
    pub fn over<R, W>(reader: R, writer: W, config: ServerConfig) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        Self::with_io(
            config,
            Io::Streams {
                reader: Box::new(reader),
                writer: Box::new(writer),
            },
        )
    }

    fn with_io(config: ServerConfig, io: Io) -> Self {
        let (out, rx) = WriteQueue::new(config.get_max_outbound_bytes());
        Self {
            shared: Arc::new(SessionShared::new(
                SessionId::local("stdio"),
                config,
                Some(out.clone()),
            )),
            io,
            out: (out, rx),
        }
    }

    /// A cloneable handle: stop, notifications, server-to-client requests,
    /// client capabilities, readiness.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::{Router, ServeEnd, ServerConfig, StdioServer};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// let (_client, server_end) = tokio::io::duplex(4096);
    /// let (reader, writer) = tokio::io::split(server_end);
    /// let server = StdioServer::over(reader, writer, config);
    /// let handle = server.handle();
    /// handle.stop(); // before serving starts: `serve` returns at once
    /// assert_eq!(server.serve(Router::new()).await?, ServeEnd::Stopped);
    /// # Ok(()) }
    /// ```
    pub fn handle(&self) -> ServerHandle {
        ServerHandle::new(&self.shared)
    }

    /// The transport's diagnostic name: `"stdio"`.
    pub fn name(&self) -> &'static str {
        "stdio"
    }

    /// Serves until end of input, [`ServerHandle::stop`], or an
    /// unrecoverable error.
    ///
    /// `Ok` says why it ended cleanly; `Err` is invalid configuration, a
    /// read or write failure, a serialisation failure, or a notification
    /// handler failure. Request handler errors and panics are answered as
    /// JSON-RPC errors and do not end serving.
    ///
    /// Must be called within a tokio runtime (it spawns tasks).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::protocol::Implementation;
    /// use conduit_mcp::server::{Router, ServeEnd, ServerConfig, StdioServer};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let config = ServerConfig::new(Implementation::new("tools", "1.0.0"));
    /// // Empty input: serving ends with end of file.
    /// let server = StdioServer::over(tokio::io::empty(), tokio::io::sink(), config);
    /// assert_eq!(server.serve(Router::new()).await?, ServeEnd::Eof);
    /// # Ok(()) }
    /// ```
    pub async fn serve<H: Handler>(self, handler: H) -> Result<ServeEnd, ServerError> {
        let StdioServer { shared, io, out } = self;
        let mut capabilities = shared.config().get_capabilities().clone();
        crate::protocol::add_missing(&mut capabilities, &handler.capabilities());
        shared.declare_capabilities(capabilities);
        handler.serving(ServerHandle::new(&shared));
        // The session runs as a task of its own. Awaited where `serve` is
        // awaited, it would run on the thread of `block_on` (the main thread
        // under `#[tokio::main]`) while its reader, writer and request tasks
        // run on the workers: every message would cross threads twice.
        let session = tokio::spawn(serve_inner(shared.clone(), Arc::new(handler), io, out));
        let mut session = crate::sync::AbortOnDrop(session);
        let result = match (&mut session.0).await {
            Ok(result) => result,
            Err(e) => match e.try_into_panic() {
                // A bug of ours: surface it as a panic of `serve`, as it
                // would have been without the task.
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(_) => Err(ServerError::Read(std::io::Error::other(
                    "the runtime shut down while serving",
                ))),
            },
        };
        // Expire the lifetime token even on early errors.
        shared.close();
        result
    }
}

async fn serve_inner<H: Handler>(
    shared: Arc<SessionShared>,
    handler: Arc<H>,
    io: Io,
    out: (WriteQueue, QueueReceiver),
) -> Result<ServeEnd, ServerError> {
    shared.config().validate()?;
    if shared.stop_requested() {
        tracing::info!("server stopped before it started");
        return Ok(ServeEnd::Stopped);
    }
    tracing::info!(
        server = %shared.config().server_info.name,
        process_stdio = matches!(io, Io::Process),
        "server starting"
    );
    match io {
        Io::Streams { reader, writer } => {
            if shared.config().get_stdout_guard() {
                return Err(ServerError::InvalidConfig {
                    key: "stdout_guard",
                    reason: "applies only to process stdio (StdioServer::new)".into(),
                });
            }
            serve_loop::run(shared, handler, reader, Sink::Async(Box::pin(writer)), out).await
        }
        Io::Process => {
            #[cfg(unix)]
            let (_guard, output, output_fd): (
                Option<guard::StdoutGuard>,
                Box<dyn std::io::Write + Send>,
                std::os::fd::RawFd,
            ) = if shared.config().get_stdout_guard() {
                let (g, file) = guard::StdoutGuard::install()?;
                let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
                (Some(g), Box::new(file), fd)
            } else {
                (None, Box::new(std::io::stdout()), 1)
            };
            // `_guard` lives until serving ends, then restores fd 1.
            #[cfg(target_os = "linux")]
            if let Some((rx, tx)) = process_stdio::reopen_pipes(0, output_fd) {
                tracing::debug!("process stdio: non-blocking pipes on the reactor");
                drop(output);
                let sink = Sink::Async(Box::pin(tx));
                return serve_loop::run(shared, handler, Box::new(rx), sink, out).await;
            }
            #[cfg(all(unix, not(target_os = "linux")))]
            let _ = output_fd;
            #[cfg(not(unix))]
            let output: Box<dyn std::io::Write + Send> = if shared.config().get_stdout_guard() {
                return Err(ServerError::InvalidConfig {
                    key: "stdout_guard",
                    reason: "is supported on unix only".into(),
                });
            } else {
                Box::new(std::io::stdout())
            };
            let sink = process_stdio::ThreadSink::spawn(output).map_err(ServerError::Write)?;
            let reader = process_stdio::ThreadReader::stdin().map_err(ServerError::Read)?;
            // `_guard` lives until serving ends, then restores fd 1.
            serve_loop::run(shared, handler, Box::new(reader), Sink::Thread(sink), out).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{HandlerError, RequestContext};

    struct Nop;
    impl Handler for Nop {
        async fn handle_request(
            &self,
            _: crate::jsonrpc::Request,
            _: RequestContext,
        ) -> Result<serde_json::Value, HandlerError> {
            Ok(serde_json::Value::Null)
        }
    }

    fn assert_send<T: Send + 'static>(_: T) {}

    #[test]
    fn serve_future_is_send() {
        let server = StdioServer::over(
            tokio::io::empty(),
            tokio::io::sink(),
            ServerConfig::new(crate::protocol::Implementation::new("t", "0")),
        );
        assert_send(server.serve(Nop));
    }
}
