//! conduit-mcp: the Model Context Protocol, MCP, over stdio and Streamable
//! HTTP, on [`ractor`] and tokio.
//!
//! - [`Client`] runs a local MCP server as a child process and talks to it
//!   over its stdin/stdout in newline-delimited JSON-RPC. It is a
//!   supervision tree that restarts the server, discovers its protocol era,
//!   and always ends it. With feature `http`, the same `Client` talks to a
//!   remote server over Streamable HTTP: see [`ClientConfig::http`].
//! - [`server::StdioServer`] serves MCP over this process's stdin/stdout,
//!   or any async byte streams. With feature `http`,
//!   `server::http::HttpServer` serves the same handlers over Streamable
//!   HTTP.
//! - [`host::Host`] runs many clients as one supervised subtree, with one
//!   namespace of tools such as `server__tool`. It loads them from the
//!   config files people already keep: [`config_file`] reads `mcpServers`
//!   and VS Code's `servers`.
//! - `cli`, with feature `cli`, is the `mcp` command:
//!   `cargo install conduit-mcp --features cli`.
//!
//! ```no_run
//! use conduit_mcp::{Client, ClientConfig, RequestOptions};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::start(ClientConfig::new("uvx").arg("mcp-server-time")).await?;
//! let now = client
//!     .call_tool("get_current_time", json!({"timezone": "UTC"}), RequestOptions::new())
//!     .await?;
//! println!("{}", now.joined_text());
//! client.stop().wait().await; // the server is gone (and reaped) after this
//! # Ok(()) }
//! ```
//!
//! # Guide
//!
//! Each chapter of the guide, in `docs/` in the repository, is the
//! documentation of the module it describes:
//!
//! - [`client`]: the stdio client, supervision, Streamable HTTP, the
//!   caveats of processes and the reliability figures. The caveats cover
//!   process groups, `die_with_parent` and Windows. `oauth`, with feature
//!   `http`: authorization.
//! - [`server`]: the `Router`, the stdio server, and the methods of both
//!   schemas. `server::http`, with feature `http`: the Streamable HTTP
//!   server.
//! - [`host`]: many servers in one host; [`config_file`]: the config files.
//! - `cli`, with feature `cli`: the `mcp` command. `gateway`, with feature
//!   `gateway`: `mcp serve` and the embedded gateway.
//! - `cluster`, with feature `cluster`: servers on one node called from
//!   another.
//!
//! The security model in `SECURITY.md`, the benchmarks in `BENCHMARKS.md`
//! and the changes in `CHANGELOG.md` are in the
//! [repository](https://github.com/conduit-mcp/conduit-mcp).
//!
//! # Architecture
//!
//! ```text
//! user's handles (Client, clonable)
//!   │ request: straight to the writer's queue    ▲ reply: oneshot from the reader task (decoded by the caller)
//!   │ (waits for a ready server, and for room)   │
//!   ▼                                            │
//! ClientSupervisor ── respawns a dead Connection (backoff, max_reconnects)
//!  └─ Connection ──── discovery, the server's requests, server restarts
//!      └─ PortOwner ─ one child process: owns its ShutdownGuard
//!          ├─ writer task  queue → child stdin (coalesced writes, 16 MiB of room)
//!          ├─ reader task  child stdout → framer → Message → caller's reply slot
//!          │               (responses, progress), subscribers (notifications)
//!          │               or Connection (the rest, within a byte budget)
//!          └─ child task   exit seen without reaping; on close: stdin, SIGTERM,
//!                          SIGKILL, then the reap (see the `child` module)
//! ```
//!
//! # Module map
//!
//! The modules mirror the tree above, leaves first. Modules marked private
//! are not part of the public API; the others name the feature they need,
//! if any.
//!
//! | module | what lives there |
//! |---|---|
//! | `child`, private | spawning and ending processes: all `unsafe`, every signal, the end of a shutdown sequence as a [`ShutdownReport`]; from the rest of the crate it imports only the leaf modules `error`, `secret`, `deadline` and `sync` |
//! | `line_io`, private | the byte-bounded write queue, the writer and the line reader shared by both halves |
//! | `transport`, private | the Connection's seam: one child turned into a link, with its PortOwner, reader and writer tasks; or, with feature `http`, one HTTP session: a POST per message, SSE streams and their resumption, the session's headers. It also holds where an HTTP server is, [`HttpOptions`], and its authorization, `oauth`, public as `conduit_mcp::oauth` |
//! | [`client`] | the actor tree of ClientSupervisor and Connection, and the user's [`Client`] handle |
//! | [`host`] | many clients as one supervised subtree and one tool namespace |
//! | `gateway`, feature `gateway` | the supervised gateway behind `mcp serve`, `HttpGateway`: a host served over Streamable HTTP, with tokens and grants, tool filters, `/health`, `/metrics`, requests carried across eras |
//! | [`config_file`] | the files that list servers: `mcpServers`, VS Code's `servers` |
//! | [`server`] | serving MCP over stdio or any streams, and the tool [`server::Router`] |
//! | `server::http`, feature `http` | the same over Streamable HTTP: both eras on one endpoint, sessions, SSE streams and their resumption, limits, the axum service form |
//! | `http`, private, feature `http` | what both halves of Streamable HTTP share: SSE framing and parsing, MCP header names and checks, the base64 sentinel. It is the seam a client transport over HTTP reuses |
//! | [`protocol`] | typed MCP messages for both eras: tools, resources, prompts and the rest |
//! | [`jsonrpc`], `framing`, private | the wire format shared by both halves |
//! | [`error`], [`secret`] | typed errors; values kept out of logs |
//! | `cluster`, feature `cluster` | clients served to and used from other nodes over `ractor_cluster` |
//! | `cli`, feature `cli` | the `mcp` command |
//!
//! One request: the caller's task allocates an id. While a server is ready
//! the Connection publishes a direct path: the link, the era's
//! pre-serialised `_meta`, and the pending table. The caller serialises its
//! request, waits for room in the write queue within its timeout if the
//! server is behind, records its reply slot in the pending table and queues
//! the line itself, with no hop through the Connection's mailbox. The table
//! accepts such entries only while that server's link is open. A close
//! fails every entry and refuses new ones under the same lock, so a request
//! racing a crash is never stranded: it waits for the next ready server, as
//! does a request made while no server is ready.
//!
//! The reader task frames the answer and delimits the envelope with a
//! structural scan; the `result` is not parsed there. Its sink looks the id
//! up in the pending table and hands the result's bytes, a [`RawJson`], to
//! the caller's reply slot, and progress notifications too. A long line is
//! handed over without being copied. Notifications go to their subscribers
//! from the same task; only discovery answers, cancellations and the
//! server's requests go to the Connection. The caller decodes the result
//! once, into its type. Timeouts run in the caller's task; on timeout,
//! cancel or drop, the caller forgets the id and queues
//! `notifications/cancelled`, so a late answer is ignored.
//!
//! A shutdown: [`Client::stop`] makes the status final at once, in shared
//! state rather than through a mailbox. It fails the calls in flight, and
//! starts the running server's escalation directly; the supervisor then
//! stops the actors. However the tree ends, the server's shutdown runs:
//! by a stop, the drop of the last handle, a `kill()` of any actor, or a
//! panic. It is started by the drop of a guard in the PortOwner's state and
//! runs in a task of its own.
//!
//! # What happens when things go wrong
//!
//! - **The server exits**: every in-flight call fails at once with
//!   [`Error::Closed`] carrying the exit status. Calls not yet sent wait for
//!   the restarted server, within their own timeouts.
//! - **The Connection dies** by a panic or a `kill()`: every waiting caller
//!   gets [`Error::ConnectionDown`] at once, since reply slots answer from
//!   `Drop`. The PortOwner dies with it and its guard starts the shutdown.
//! - **Any actor of the tree is killed**: the child's shutdown still runs,
//!   because it lives in the `Drop` of the PortOwner's state and in a
//!   detached task that already waits on the child.
//! - **The server stops reading**: callers wait for room in the write queue
//!   within their timeouts. Once no byte has been accepted for
//!   `write_stall_timeout` while someone waits, the server is closed as not
//!   reading, with [`CloseReason::WriteStalled`], and restarted. One request
//!   larger than the whole queue fails alone with [`Error::RequestTooLarge`].
//! - **The server floods**: notifications nobody reads are dropped and
//!   counted per subscriber. Messages for the Connection beyond its budget
//!   make the reader wait, so the server blocks on its own stdout. A
//!   [`Client::stop`] takes effect at once whatever is queued.
//!
#![warn(missing_docs, unreachable_pub)]
// docs.rs builds every feature and marks the items each one brings.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]

/// Declares actor message types that never leave this process. With
/// ractor's `cluster` feature, which this crate's `cluster` feature turns
/// on, ractor has no blanket `Message` impl. So each type implements it as
/// not serialisable, ractor's default: sending one to a remote actor fails.
macro_rules! local_messages {
    ($($t:ty),+ $(,)?) => {
        $(
            #[cfg(feature = "cluster")]
            impl ractor::Message for $t {}
        )+
    };
}

#[macro_use]
mod config_fields;
mod child;
#[cfg(feature = "cli")]
pub mod cli;
pub mod client;
#[cfg(feature = "cluster")]
pub mod cluster;
pub mod config_file;
mod deadline;
pub mod error;
mod framing;
#[cfg(feature = "gateway")]
pub mod gateway;
pub mod host;
#[cfg(feature = "http")]
mod http;
pub mod jsonrpc;
mod line_io;
mod memory_estimate;
#[cfg(feature = "http")]
pub use transport::http::oauth;
pub mod protocol;
pub mod secret;
mod serde_support;
pub mod server;
mod sync;
#[cfg(feature = "http")]
mod throttle;
mod transport;

pub use child::ShutdownReport;
pub use client::{
    forward_events, Backoff, CancelToken, Client, ClientConfig, ClientHandler, ClientResponder,
    ClientShutdown, EraPreference, HttpOptions, InboundRequest, LifecycleEvent, ListenEnd,
    Notifications, Progress, RequestOptions, ServerSession, StartError, StartOptions, Status,
    StderrMode, Subscription,
};
pub use error::{ChildExit, CloseReason, ConfigError, Error, ListCap, SpawnError};
pub use jsonrpc::{ErrorObject, Notification, RawJson, RequestId};
pub use protocol::{CallToolResult, Era, Implementation, Tool};

/// The `schemars` this crate generates tool and prompt schemas with, so
/// that an application's `#[derive(JsonSchema)]` matches it. A derive of
/// another major version is an unexplained trait-bound error.
///
/// Without `schemars` among your own dependencies, point the derive at
/// this one:
///
/// ```
/// use conduit_mcp::JsonSchema;
///
/// #[derive(serde::Deserialize, JsonSchema)]
/// #[schemars(crate = "conduit_mcp::schemars")]
/// struct Echo {
///     /// The text to return.
///     text: String,
/// }
///
/// let schema = conduit_mcp::schemars::schema_for!(Echo);
/// assert_eq!(schema.get("type"), Some(&serde_json::json!("object")));
/// ```
pub use schemars;
/// The derive and trait of [`schemars`]: `#[derive(JsonSchema)]` on a
/// tool's or prompt's argument type.
pub use schemars::JsonSchema;
pub use secret::{Arg, EnvValue, MaybeSecret, Secret};

// The README's examples are compiled as doctests too, with every feature
// but `cluster`: they are read as Markdown, where a hidden line would
// show, so they carry no `impl ractor::Message` (the README says when one
// is needed).
#[cfg(all(doctest, feature = "cli", not(feature = "cluster")))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
