//! conduit-mcp: the Model Context Protocol (MCP) stdio transport on
//! [`ractor`] and tokio.
//!
//! - [`Client`] runs a local MCP server as a child process and talks to it
//!   over its stdin/stdout (newline-delimited JSON-RPC), as a supervision
//!   tree that restarts the server, discovers its protocol era, and always
//!   ends it.
//! - [`server::StdioServer`] serves MCP over this process's stdin/stdout
//!   (or any async byte streams).
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
//! println!("{}", now.text());
//! client.stop().wait().await; // the server is gone (and reaped) after this
//! # Ok(()) }
//! ```
//!
//! # Architecture
//!
//! ```text
//! user's handles (Client, clonable)
//!   │ request: direct to the writer while ready   ▲ reply: oneshot from the reader task (decoded by the caller)
//!   │ (else cast Call to the Connection)          │
//!   ▼                                            │
//! ClientSupervisor ── respawns a dead Connection (backoff, max_reconnects)
//!  └─ Connection ──── ids, pending table, discovery, dispatch, server restarts
//!      └─ PortOwner ─ one child process: owns its ShutdownGuard
//!          ├─ writer task  queue → child stdin (coalesced writes, 16 MiB limit)
//!          ├─ reader task  child stdout → framer → Message → caller's reply slot
//!          │               (responses, progress) or Connection (the rest)
//!          └─ reaper task  child.wait(); on close: stdin, SIGTERM, SIGKILL, reap
//! ```
//!
//! One request: the caller's task allocates an id. While a server is ready
//! the Connection publishes a direct path (the link, the era's pre-serialised
//! `_meta`, the pending table): the caller serialises its request, records
//! its reply slot in the pending table and queues the line to the writer
//! task itself, never waiting and with no hop through the Connection's
//! mailbox. The table accepts such entries only while that server's link is
//! open (a close fails every entry and refuses new ones under the same
//! lock), so a request racing a crash is sent by the Connection instead,
//! never stranded. Before the server is ready (or after a refusal) the
//! caller casts `Call` to the Connection, which queues it until ready.
//!
//! The reader task frames the answer and delimits the envelope with a
//! structural scan (the `result` is not parsed there); its sink looks the id
//! up in the pending table and hands the result's bytes ([`RawJson`]) to
//! the caller's reply slot (progress notifications too); a long line is
//! handed over without being copied. Anything else (discovery answers,
//! notifications, server requests) goes to the Connection. The caller
//! decodes the result once, into its type. Timeouts run in the caller's
//! task; on timeout, cancel or drop, the caller forgets the id and queues
//! `notifications/cancelled` the same way it sent the request, so a late
//! answer is ignored.
//!
//! The seam between Connection and PortOwner is [`transport::Transport`]
//! (open a [`transport::Link`]; send, close): a second transport plugs in
//! there without touching the Connection.
//!
//! # What happens when things go wrong
//!
//! - **The server exits**: every in-flight call fails at once with
//!   [`Error::Closed`] carrying the exit status; calls not yet sent wait for
//!   the restarted server (within their own timeouts).
//! - **The Connection dies** (panic, `kill()`): every waiting caller gets
//!   [`Error::ConnectionDown`] at once (reply slots answer from `Drop`), the
//!   PortOwner dies with it and its guard starts the shutdown.
//! - **Any actor of the tree is killed**: the child's shutdown still runs,
//!   because it lives in the `Drop` of the PortOwner's state and in a
//!   detached task that already waits on the child.
//!
//! # Caveats
//!
//! - **Process groups and terminals.** With `kill_process_group` (default)
//!   the server leads its own process group, so it is not in the terminal's
//!   foreground group: Ctrl-C in a terminal reaches your program, not the
//!   server (your program then stops the client, which ends the server). A
//!   server that itself calls `setsid`/`setpgid` for its children leaves the
//!   group and is out of reach of group signals.
//! - **`die_with_parent` and threads (Linux).** `PR_SET_PDEATHSIG` fires
//!   when the *thread* that spawned the child exits, not the process. Spawns
//!   happen on tokio worker threads, which live as long as the runtime; a
//!   runtime shut down while servers run ends them (by design). The signal
//!   reaches the server (the group leader) only: its own children
//!   (launcher grandchildren) are not covered once this process is gone,
//!   unless `group_watchdog` is on: then a watchdog forked per server
//!   SIGKILLs the group when this process dies. The watchdog is a
//!   copy-on-write image of this process (a `fork`), so in a large process
//!   it costs memory as pages are written, and the spawn costs more; it is
//!   off by default. Not available on other platforms.
//! - **Spawning (Linux).** The server is started like `posix_spawn` does
//!   (`clone` with `CLONE_VM | CLONE_VFORK`), with the `die_with_parent`
//!   setup done in the child before `exec`: no `fork`, so the cost of a
//!   spawn does not grow with the size of this process. The server starts
//!   with an empty signal mask and SIGPIPE at its default action, like a
//!   child of `std::process::Command`; it is run with `execve`, so a script
//!   without a `#!` line is not run by `/bin/sh`. Other platforms use
//!   `tokio::process`.
//! - **Reaping.** Exit is detected by waiting on the child, never by
//!   polling: a pidfd on Linux 5.3+ (a thread per server blocked in
//!   `waitid` on older kernels), tokio's machinery elsewhere. The child is
//!   reaped by pid, so code in the same process that reaps every child
//!   (`waitpid(-1)`, SIGCHLD ignored) breaks exit reporting, as it does
//!   for `tokio::process`. After the leader is reaped, the
//!   emptiness of its group can only be polled (`/proc`, or `killpg(0)`);
//!   in that short window a pgid whose last member just exited could be
//!   reused by an unrelated new group.
//! - **Pipe size (Linux).** When a message longer than 256 KiB starts to
//!   arrive, the server's stdout pipe is grown to 1 MiB (`F_SETPIPE_SZ`), so
//!   a large result costs 8 times fewer reads and wake-ups. The kernel
//!   charges pipe buffers to the user (`/proc/sys/fs/pipe-user-pages-soft`);
//!   over that quota the pipe simply keeps its size. Idle clients never grow
//!   their pipes.
//! - **Results are decoded by the caller.** Routing a response checks the
//!   envelope but not the inside of `result`: malformed JSON there is
//!   reported to the one caller that decodes it ([`Error::Codec`]), not
//!   dropped as junk.
//! - **Runtime shutdown.** If the tokio runtime stops while a shutdown is
//!   still escalating, the task's drop sends SIGKILL to the group at once.
//! - **Windows.** No process groups or signals: shutdown closes stdin, waits
//!   `stdin_grace`, then kills the process (`term_grace` is not used);
//!   `.bat`/`.cmd` commands need `allow_batch_files` (see
//!   [`client::command::check_batch_file`]). The allowlisted environment
//!   differs ([`client::command::INHERITED_ENV_WINDOWS`]). Windows is not
//!   tested in CI.
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod client;
mod deadline;
pub mod error;
pub mod framing;
pub mod jsonrpc;
pub mod protocol;
pub mod secret;
pub mod server;
pub mod transport;

pub use client::config::{Backoff, ClientConfig, EraPreference, StderrMode};
pub use client::handler::{ClientHandler, InboundRequest};
pub use client::session::{ServerSession, Status};
pub use client::{
    CancelToken, Client, ClientShutdown, Progress, RequestOptions, StartError, StartOptions,
};
pub use error::{CloseReason, ConfigError, Error, ExitStatus, SpawnError};
pub use jsonrpc::{ErrorObject, Notification, RawJson, RequestId};
pub use protocol::{Era, Implementation};
pub use secret::{EnvValue, Secret};
pub use transport::{ShutdownHandle, ShutdownReport};
