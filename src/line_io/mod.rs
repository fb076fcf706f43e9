//! Newline-delimited JSON-RPC over byte streams: the plumbing both halves
//! share.
//!
//! - [`queue`]: the outbound queue, bounded in bytes (senders wait for
//!   room, or are refused, or push answers whose number is bounded
//!   elsewhere);
//! - [`writer`]: the task that drains it into a stream, many lines per
//!   write;
//! - [`reader`]: the loop that frames a stream into lines (with the size
//!   limit of [`framing`](crate::framing)), skips blank ones and hands the
//!   rest to its owner's policy.
//!
//! The client uses them on a server's stdin and stdout
//! (`transport::stdio`); the server on its own stdin and stdout
//! (`server::stdio::serve_loop`).

pub(crate) mod queue;
pub(crate) mod reader;
pub(crate) mod writer;

pub(crate) use queue::{BurstHint, QueueError, QueueReceiver, WriteQueue};
