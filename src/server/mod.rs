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
mod handle;
mod held;
mod held_table;
#[cfg(feature = "http")]
pub mod http;
mod request_handler;
mod router;
mod server_config;
mod sessions;
mod stdio;
mod subscriptions;

pub use actor::{ServeActor, ServeArgs, ServeEnded, ServeState};
pub use context::RequestContext;
pub use error::{AskError, HandlerError, RawAnswerError, SendError, ServerError};
pub use handle::{LifetimeToken, ListKind, ServerHandle, SessionId, STDIO_SESSION};
pub use held::HeldCall;
pub use request_handler::Handler;
pub use router::{schema_of, RouteFuture, Router};
pub use sessions::Sessions;

pub use server_config::{
    ServerConfig, DEFAULT_MAX_INBOUND_BYTES, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_OUTBOUND_BYTES,
    DEFAULT_MAX_SUBSCRIPTION_BYTES, MIN_INBOUND_BYTES,
};

pub use stdio::StdioServer;

/// Why serving ended cleanly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeEnd {
    /// The input reached end of file (the client closed our stdin).
    Eof,
    /// [`ServerHandle::stop`] was called.
    Stopped,
}
