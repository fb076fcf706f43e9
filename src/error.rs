//! Error and close-reason types.
//!
//! Local failures, such as timeouts, a closed transport or a dead actor, are
//! never reported as if the peer had sent them: only [`Error::Server`] carries an
//! error object that came from the server.

use std::fmt;
use std::time::Duration;

use crate::jsonrpc::ErrorObject;

/// How a child process ended. It is named apart from
/// `std::process::ExitStatus`, which [`from_std`](Self::from_std) converts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal number.
    Signal(i32),
}

impl ChildExit {
    /// Converts a standard library status.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::ChildExit;
    ///
    /// # #[cfg(unix)] {
    /// let status = std::process::Command::new("true").status().unwrap();
    /// assert_eq!(ChildExit::from_std(status), ChildExit::Code(0));
    /// # }
    /// ```
    pub fn from_std(status: std::process::ExitStatus) -> Self {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(sig) = status.signal() {
                return ChildExit::Signal(sig);
            }
        }
        ChildExit::Code(status.code().unwrap_or(-1))
    }

    /// `true` for exit code 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::ChildExit;
    ///
    /// assert!(ChildExit::Code(0).success());
    /// assert!(!ChildExit::Code(1).success() && !ChildExit::Signal(9).success());
    /// ```
    pub fn success(&self) -> bool {
        *self == ChildExit::Code(0)
    }
}

impl fmt::Display for ChildExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChildExit::Code(c) => write!(f, "exit status {c}"),
            #[cfg(unix)]
            ChildExit::Signal(s) => match nix::sys::signal::Signal::try_from(*s) {
                Ok(sig) => write!(f, "killed by signal {s} ({})", sig.as_str()),
                Err(_) => write!(f, "killed by signal {s}"),
            },
            #[cfg(not(unix))]
            ChildExit::Signal(s) => write!(f, "killed by signal {s}"),
        }
    }
}

/// Why a transport, one server process, closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CloseReason {
    /// The server process exited.
    #[error("server exited: {0}")]
    Exited(ChildExit),
    /// The server closed its stdout but did not exit.
    #[error("server closed its stdout")]
    StdoutClosed,
    /// The server wrote a line longer than `max_message_bytes`.
    #[error("server wrote a message of at least {at_least} bytes, over the {limit}-byte limit")]
    MessageTooLarge {
        /// The configured limit.
        limit: usize,
        /// Bytes seen when the line was refused.
        at_least: usize,
    },
    /// The server wrote more consecutive non-JSON-RPC lines than allowed.
    #[error("server wrote {lines} consecutive lines that are not JSON-RPC (limit {limit})")]
    JunkOutput {
        /// Consecutive junk lines seen.
        lines: usize,
        /// The configured `max_junk_lines`.
        limit: usize,
    },
    /// The server accepted no byte of its stdin for `write_stall_timeout`
    /// while callers waited for room in the write queue: it stopped
    /// reading.
    #[error(
        "server stopped reading: no byte accepted for {stalled_for:?} with {queued} bytes queued"
    )]
    WriteStalled {
        /// How long no byte was accepted.
        stalled_for: Duration,
        /// Bytes queued and not yet written.
        queued: usize,
    },
    /// Writing to the server's stdin failed, for example on a broken pipe.
    #[error("writing to the server failed: {0}")]
    WriteFailed(String),
    /// Reading the server's stdout failed.
    #[error("reading from the server failed: {0}")]
    ReadFailed(String),
    /// The client closed the transport to stop or restart.
    #[error("closed by the client")]
    ClientClosed,
    /// The protocol handshake failed.
    #[error("handshake failed: {0}")]
    Handshake(String),
    /// The actor owning the process stopped unexpectedly.
    #[error("transport owner stopped: {0}")]
    OwnerDied(String),
    /// HTTP: the server could not be reached, or a connection to it broke
    /// where no resumption was possible.
    #[error("HTTP connection to the server failed: {0}")]
    ConnectionFailed(String),
    /// HTTP, 2025-11-25 era: the server answered 404 to the session's id,
    /// since it ended or forgot the session. The client starts a new one.
    #[error("the server ended the HTTP session (404 for its MCP-Session-Id)")]
    SessionExpired,
}

impl CloseReason {
    /// The exit status, when the server exited.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::{ChildExit, CloseReason};
    ///
    /// assert_eq!(CloseReason::Exited(ChildExit::Code(3)).exit_status(), Some(ChildExit::Code(3)));
    /// assert_eq!(CloseReason::StdoutClosed.exit_status(), None);
    /// ```
    pub fn exit_status(&self) -> Option<ChildExit> {
        match self {
            CloseReason::Exited(s) => Some(*s),
            _ => None,
        }
    }
}

/// A configuration value that was refused. `key` names the option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration `{key}`: {problem}")]
pub struct ConfigError {
    /// The option's name, as in [`ClientConfig`](crate::client::ClientConfig).
    pub key: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

impl ConfigError {
    pub(crate) fn new(key: &'static str, problem: impl Into<String>) -> Self {
        Self {
            key,
            problem: problem.into(),
        }
    }
}

/// Starting a server process failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The command was not found in PATH, or the absolute path does not exist.
    #[error("executable `{command}` not found{}", if *.searched_path { " in PATH" } else { "" })]
    NotFound {
        /// The configured command.
        command: String,
        /// Whether PATH was searched.
        searched_path: bool,
    },
    /// The path exists but cannot be run: a directory, or a file without
    /// execute permission.
    #[error("`{path}` exists but is not an executable file")]
    NotExecutable {
        /// The path found.
        path: String,
    },
    /// The OS refused to start it.
    #[error("could not start `{executable}`: {source}")]
    Io {
        /// The resolved executable.
        executable: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Opening the stderr file failed.
    #[error("could not open stderr file `{path}`: {source}")]
    StderrFile {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The configuration was refused at spawn, for example a batch file.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The error of a client call.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with a JSON-RPC error.
    #[error("server error: {0}")]
    Server(ErrorObject),
    /// No answer within the call's timeout. `notifications/cancelled` was sent.
    #[error("`{method}` timed out after {after:?}")]
    Timeout {
        /// The method called.
        method: String,
        /// The timeout that elapsed.
        after: Duration,
    },
    /// The request's line is longer than the whole write queue of
    /// `max_write_queue_bytes`: it failed alone, the server was not
    /// disturbed.
    #[error("`{method}`: the request is {bytes} bytes, over the {limit}-byte write queue")]
    RequestTooLarge {
        /// The method called.
        method: String,
        /// The serialised request's length.
        bytes: usize,
        /// `max_write_queue_bytes`.
        limit: usize,
    },
    /// A notification found no room in the write queue, since the server is
    /// not keeping up; it was not sent.
    #[error("write queue full: {queued} bytes unwritten, limit {limit}")]
    WriteQueueFull {
        /// Bytes queued and not yet written.
        queued: usize,
        /// `max_write_queue_bytes`.
        limit: usize,
    },
    /// The call was cancelled by the caller.
    #[error("`{method}` was cancelled")]
    Cancelled {
        /// The method called.
        method: String,
    },
    /// The server's transport closed while the call was in flight. Not retried.
    #[error("connection to the server closed: {0}")]
    Closed(CloseReason),
    /// The Connection actor went down: stopped, killed or crashed.
    #[error("connection went down: {0}")]
    ConnectionDown(String),
    /// The transport says this request will get no answer, while the
    /// connection stays up. Over HTTP, the response ended without one and
    /// could not be resumed, or the answer was over `max_message_bytes`. The
    /// server may or may not have acted on it. Not retried.
    #[error("no answer: {problem}")]
    Unanswered {
        /// What happened.
        problem: String,
    },
    /// The client gave up restarting the server.
    #[error("client gave up after {attempts} failed attempts: {last}")]
    GaveUp {
        /// Deaths of the server counted within
        /// [`restart_period`](crate::client::ClientConfig::restart_period), the
        /// last one included: `max_reconnects` + 1, or fewer when the
        /// handshake failed for good, since restarting would meet the same
        /// server.
        attempts: u32,
        /// The last failure.
        last: String,
    },
    /// The client was stopped.
    #[error("client stopped")]
    Stopped,
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The request could not be encoded, or the result not decoded.
    #[error("`{method}`: {problem}")]
    Codec {
        /// The method called.
        method: String,
        /// What failed.
        problem: String,
    },
    /// The protocol handshake failed: unsupported version, bad discovery answer.
    #[error("handshake failed: {0}")]
    Handshake(String),
    /// A client-side failure that fits no other variant, such as an actor that
    /// could not be spawned.
    #[error("{0}")]
    Internal(String),
    /// A paginated list such as `tools/list` went past one of its caps:
    /// [`max_list_pages`](crate::client::ClientConfig::max_list_pages),
    /// [`max_list_items`](crate::client::ClientConfig::max_list_items) or
    /// [`max_list_bytes`](crate::client::ClientConfig::max_list_bytes). The
    /// server kept sending a `nextCursor`. What was fetched is dropped.
    #[error(
        "`{method}`: the list went past its cap of {limit} {cap} \
         ({pages} pages, {items} items, {bytes} bytes held when it stopped)"
    )]
    ListTooLong {
        /// The list method.
        method: String,
        /// The cap that was reached.
        cap: ListCap,
        /// Its configured value.
        limit: usize,
        /// Pages fetched.
        pages: usize,
        /// Items in them.
        items: usize,
        /// Bytes they hold in memory once parsed, as an estimate.
        bytes: usize,
    },
    /// A paginated list took longer than
    /// [`list_timeout`](crate::client::ClientConfig::list_timeout), all its pages
    /// together. What was fetched is dropped.
    #[error("`{method}`: the list took longer than its list_timeout of {limit:?} ({pages} pages fetched)")]
    ListTimeout {
        /// The list method.
        method: String,
        /// The configured `list_timeout`.
        limit: Duration,
        /// Pages fetched before it ran out.
        pages: usize,
    },
    /// The server sent, in one paginated list, a `nextCursor` it had sent
    /// before: following it would loop. What was fetched is dropped.
    #[error("`{method}`: the server repeated a cursor after {pages} pages (the list would loop)")]
    RepeatedCursor {
        /// The list method.
        method: String,
        /// Pages fetched, the one with the repeated cursor included.
        pages: usize,
    },
    /// The method does not exist in the server's protocol era, for example
    /// `resources/subscribe` with a 2026-07-28 server, or
    /// `subscriptions/listen` with a 2025-11-25 one. Nothing was sent.
    #[error("`{method}` does not exist in the {era} era")]
    Unsupported {
        /// The method.
        method: String,
        /// The session's era.
        era: crate::protocol::Era,
    },
}

/// The cap of a paginated list that was reached, in [`Error::ListTooLong`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListCap {
    /// [`max_list_pages`](crate::client::ClientConfig::max_list_pages).
    Pages,
    /// [`max_list_items`](crate::client::ClientConfig::max_list_items).
    Items,
    /// [`max_list_bytes`](crate::client::ClientConfig::max_list_bytes).
    Bytes,
}

impl fmt::Display for ListCap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ListCap::Pages => "pages",
            ListCap::Items => "items",
            ListCap::Bytes => "bytes",
        })
    }
}

impl Error {
    /// The server's error object, when the server answered with an error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use conduit_mcp::RequestOptions;
    /// use serde_json::json;
    ///
    /// # async fn example(client: conduit_mcp::Client) {
    /// let args = json!({ "timezone": 7 });
    /// match client.call_tool("get_current_time", args, RequestOptions::new()).await {
    ///     Ok(result) => println!("{}", result.joined_text()),
    ///     Err(e) => match e.server_error() {
    ///         Some(obj) => println!("the server answered {}: {}", obj.code, obj.message),
    ///         None => println!("local failure: {e}"), // a timeout, a crash, ...
    ///     },
    /// }
    /// # }
    /// ```
    pub fn server_error(&self) -> Option<&ErrorObject> {
        match self {
            Error::Server(e) => Some(e),
            _ => None,
        }
    }
}
