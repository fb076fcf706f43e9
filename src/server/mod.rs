//! Serving MCP over the process's own stdin/stdout, or over any
//! caller-supplied async byte streams, with a raw `Handler` or a `Router`.
//!
#![doc = include_str!("../../docs/server.md")]
//!
//! # Behaviour
//!
//! - **One reader, one writer.** A reader task frames input with
//!   the crate's line framer (a line over
//!   `max_message_bytes` is refused with -32600 and discarded as it streams
//!   in, never buffered whole), one writer task writes everything, many
//!   queued lines per write call. Responses go out in completion order.
//! - **Concurrency.** Every request runs in its own task, up to
//!   [`ServerConfig::max_in_flight`] of one client at once; further requests
//!   wait, bounded by the byte budget (below), not by a count,
//!   so the lines behind them go on being read: cancellations, pings and
//!   responses are acted on while requests wait (300 five-second calls then
//!   a cancel for each: none runs to completion, a ping behind them is
//!   answered in milliseconds).
//! - **Memory, in bytes.** A count of messages bounds nothing (a
//!   `serde_json::Value` costs 32 bytes per node: the 8 MiB line `[0,0,...]`
//!   parses to 128 MiB). Every line is charged an estimate of its parsed
//!   size *before* it is parsed, against
//!   [`ServerConfig::max_inbound_bytes`] (default 64 MiB), and the charge is
//!   held until the server is done with the message: its handler task ends
//!   or is cancelled, or it is refused, answered by the transport, routed or
//!   handled. A message larger than the budget is admitted when nothing
//!   else is held, and then alone. Responses, `notifications/cancelled` and
//!   `ping` (control messages) have a reserve of 1/8 of the budget, so they
//!   are read when the budget is full. A request line that does not fit is
//!   held, unparsed, until bytes are released (one at most), and the lines
//!   behind it are still read as long as they are control messages; the
//!   first other line stops reading (back-pressure) until the held request
//!   is in. Held input peaks at the budget (or one message, if larger) plus
//!   the 1/8 reserve, plus two lines of up to `max_message_bytes` waiting
//!   unparsed (the held request and the line behind it).
//! - **Cancellation.** `notifications/cancelled` aborts the request's task,
//!   or drops it from the backlog and releases its bytes at once, or drops
//!   the request line held for room unread; no response is sent for it. A
//!   server-to-client request it was awaiting is withdrawn: its pending
//!   entry is removed and the client gets a `notifications/cancelled` for
//!   it (the same happens when a [`ServerHandle::request`] future is
//!   dropped); a late answer is ignored.
//! - **Duplicate ids.** A request whose id equals that of an in-flight or
//!   queued request is refused with -32600 for that id (`5` and `"5"` are
//!   different ids); the first one is unaffected.
//! - **Malformed input.** -32700 (id null) for a line that is not JSON,
//!   -32600 for JSON that is not a valid message (with its id when one could
//!   be read), nothing for blank lines; never more than one reply per line.
//! - **Dual era.** 2025-11-25 clients `initialize` (one of
//!   [`STATEFUL_VERSIONS`](crate::protocol::STATEFUL_VERSIONS) is negotiated) and
//!   may `ping`; 2026-07-28 clients send `server/discover` and the
//!   `io.modelcontextprotocol/*` `_meta` keys on every request (-32602 when a
//!   required key is missing, -32022 for an unsupported version). Before
//!   `initialize` a request without 2026-07-28 `_meta` gets -32602 (only `ping`
//!   and `initialize` are served). See [`RequestContext::ask`] for input
//!   from the client in both eras.
//! - **Ending.** [`serve`](StdioServer::serve) returns `Ok(`[`ServeEnd`]`)`
//!   on end of input (after letting in-flight requests finish within
//!   [`ServerConfig::eof_drain`]) or on [`ServerHandle::stop`] (immediately;
//!   handlers are aborted after [`ServerConfig::stop_drain`], zero by
//!   default). Queued output is flushed for at most
//!   [`ServerConfig::flush_timeout`]. When `serve` returns, the lifetime
//!   token has expired: handles and contexts kept by user code fail with
//!   [`SendError::TransportGone`].
//! - **Slow clients.** Output waits in a queue bounded by
//!   [`ServerConfig::max_outbound_bytes`]. While it is full the server reads
//!   no new messages (so answers cannot pile up) and
//!   [`ServerHandle::notify`] fails with [`SendError::QueueFull`]; nothing
//!   blocks `stop()`. Input and output are bounded separately: together at
//!   most `max_inbound_bytes` × 9/8 (or one message) plus
//!   `max_outbound_bytes`, plus what handlers allocate.
//!
//! - **Supervision.** [`ServeActor`] serves a server as a ractor actor: a
//!   clean end stops it normally, a [`ServerError`] fails it (its supervisor
//!   sees `ActorFailed`), and stopping or killing it ends serving.
//!
//! # Caveats
//!
//! - While reading is paused (outbound queue full, or a request waiting for
//!   room in the budget with a line that is not a control message behind
//!   it), the client's responses to server-to-client requests are not read
//!   either: a handler awaiting [`RequestContext::ask`] with the budget full
//!   of such handlers and their queued requests waits until its request
//!   times out ([`ServerConfig::client_request_timeout`]).
//! - Input is read in order, except that control messages go past the one
//!   request held for room. So cancellations overtake a full backlog only
//!   while the budget affords the requests before them: a client that
//!   sends requests past the budget, then more requests, then the
//!   cancellations that would free it, waits for a handler to end on its
//!   own (or for its asks to time out); a message larger than the budget
//!   waits until nothing else is held. The answer to a `ping` says that
//!   every earlier line was read except, when the budget is full, the one
//!   request held for room.
//! - The byte budget counts the parsed message and the copies the transport
//!   makes of it (the context's `_meta`, `inputResponses`,
//!   `requestState`), not what handlers allocate: their clones of the
//!   params, or the results of their own [`RequestContext::ask`]s, decoded
//!   after the response's charge is released. The latest client
//!   capabilities and client info are kept after their request ends (one
//!   copy). The estimate is on the generous side; the parse can briefly need
//!   more (a `Vec` moved while it doubles).
//! - In the 2026-07-28 era a handler that asks for input runs once per round
//!   (the client retries the whole request), so work before an `ask` is
//!   repeated; keep it idempotent or carry it in the request state.
//! - `requestState` comes back from the client unverified
//!   ([`RequestContext::request_state`]).
//!
//! # Platform behaviour
//!
//! Everything works on every platform tokio supports, except
//! [`ServerConfig::stdout_guard`], which needs unix (`dup`/`dup2`); on other
//! platforms asking for it is an [`InvalidConfig`](ServerError::InvalidConfig)
//! error.
//!
//! # Process stdio
//!
//! On Linux, when fd 0 and fd 1 are pipes (always, under a client that
//! spawned this process), [`StdioServer::new`] reopens them through
//! `/proc/self/fd` with `O_NONBLOCK` and serves them from tokio's reactor,
//! as rmcp's `stdio_pipes` does: the reopened descriptors are new open file
//! descriptions, so fd 0 and fd 1 themselves, the parent's ends and
//! children that inherit them keep their blocking mode. On stop they are
//! dropped; input not yet read stays in the pipe. This needs a runtime with I/O
//! enabled (`#[tokio::main]`, `enable_all`), as every tokio I/O type does.
//!
//! Everything else (a terminal, a file, a socket, other platforms) is read
//! and written by dedicated plain threads, not tokio's `stdin()`/`stdout()`:
//! those run each blocking read on the runtime's blocking pool, and an idle
//! stdin read never returns, so `stop()` could not take effect and runtime
//! shutdown would hang. On stop the reader thread is simply abandoned,
//! blocked in `read(2)`; threads do not keep a process alive, so exiting is
//! immediate. The writer thread absorbs a client that stopped reading, and
//! is abandoned after [`ServerConfig::flush_timeout`] (the pipe path bounds
//! its last flush by the same timeout).
//!
//! Caveat: serve process stdio at most once at a time per process. Serving
//! it again after a stop may lose what the previous run had read and not
//! yet handled: up to one 64 KiB chunk (on the thread path, the chunk the
//! abandoned thread reads next is lost too).
//!
//! With [`ServerConfig::stdout_guard`] (unix), fd 1 points at stderr while
//! serving and the protocol uses a private duplicate of the original stdout,
//! so a stray `println!` cannot corrupt the stream; fd 1 is restored when
//! serving ends. fd 1 is process-wide: child processes spawned meanwhile
//! write their stdout to stderr too, and only one guard may be live in the
//! process: a server asking for one while another server's guard is live
//! fails at once with [`ServerError::StdoutGuardInUse`] (after a restart,
//! wait for the previous `serve` to return first).
//!
//! # Cancel safety
//!
//! Dropping the [`serve`](StdioServer::serve) future is like `stop()` with
//! no drain and no flush: the request, reader, writer and notification tasks
//! are aborted, and handles and contexts become inert (the last strong
//! reference to the transport's state was in the future).

mod actor;
mod context;
pub(crate) mod engine;
mod error;
#[cfg(unix)]
mod guard;
mod handle;
mod held;
mod held_table;
#[cfg(feature = "http")]
pub mod http;
mod output;
mod process_stdio;
mod request_handler;
mod router;
mod serve_loop;
mod server_config;
mod sessions;
mod subscriptions;

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

pub use actor::{ServeActor, ServeArgs, ServeEnded, ServeState};
pub use context::RequestContext;
pub use error::{AskError, HandlerError, RawAnswerError, SendError, ServerError};
pub use handle::{LifetimeToken, ListKind, ServerHandle, SessionId, STDIO_SESSION};
pub use held::HeldCall;
pub use request_handler::Handler;
pub use router::{schema_of, RouteFuture, Router};
pub use sessions::Sessions;

/// Moved to [`protocol::CacheScope`](crate::protocol::CacheScope).
#[deprecated(note = "use `conduit_mcp::protocol::CacheScope`")]
#[doc(hidden)]
pub type CacheScope = crate::protocol::CacheScope;
/// Moved to [`protocol::InputRequest`](crate::protocol::InputRequest).
#[deprecated(note = "use `conduit_mcp::protocol::InputRequest`")]
#[doc(hidden)]
pub type InputRequest = crate::protocol::InputRequest;
pub use server_config::{
    ServerConfig, DEFAULT_MAX_INBOUND_BYTES, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_OUTBOUND_BYTES,
    DEFAULT_MAX_SUBSCRIPTION_BYTES, MIN_INBOUND_BYTES,
};

use crate::line_io::{QueueReceiver, WriteQueue};
use handle::SessionShared;
use output::Sink;

/// Why serving ended cleanly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeEnd {
    /// The input reached end of file (the client closed our stdin).
    Eof,
    /// [`ServerHandle::stop`] was called.
    Stopped,
}

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
    shared: Arc<SessionShared>,
    io: Io,
    out: QueueReceiver,
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
        let (out, rx) = WriteQueue::new(config.max_outbound_bytes);
        Self {
            shared: Arc::new(SessionShared::new(SessionId::local("stdio"), config, out)),
            io,
            out: rx,
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
        let mut capabilities = shared.config().capabilities.clone();
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
    out: QueueReceiver,
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
            if shared.config().stdout_guard {
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
            ) = if shared.config().stdout_guard {
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
            let output: Box<dyn std::io::Write + Send> = if shared.config().stdout_guard {
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
