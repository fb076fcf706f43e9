//! The one request lifecycle of every way this crate serves MCP: stdio,
//! Streamable HTTP sessions and 2026-07-28 HTTP requests are transports on
//! it, each telling the engine where a request's messages and answer go
//! (a [`Reply`]).
//!
//! ```text
//!  transport ──Request──▶ Engine::submit ──▶ Scope (duplicate ids, max_in_flight, waiting)
//!      ▲                                        │ spawn
//!      │ Reply::answer / unanswered             ▼
//!      └──────────────────────────────── request task (handler, panics, the answer line)
//! ```
//!
//! - [`dispatch`]: which revision a request speaks, and the answers the
//!   transport gives itself (`initialize`, `server/discover`, `ping`).
//! - [`run`]: a request's task: its context, the handler, a panic or a
//!   result that cannot be serialised answered -32603, the hints added to a
//!   2026-07-28 result, cancellation without an answer.
//! - [`scope`]: the requests of one client (a stdio session, an HTTP
//!   session, or the 2026-07-28 requests of one principal): ids unique
//!   while in flight (where the revision has sessions), at most
//!   `max_in_flight` running, the others waiting in arrival order, their
//!   bytes held against `max_inbound_bytes` ([`budget`]).
//! - [`stop`](Engine::stop): one drain for every transport.

pub(crate) mod budget;
pub(crate) mod dispatch;
mod run;
mod scope;

#[cfg_attr(not(feature = "http"), allow(unused_imports))]
pub(crate) use run::{Engine, Reply, Unanswered};
#[cfg_attr(not(feature = "http"), allow(unused_imports))]
pub(crate) use scope::duplicate_message;
pub(crate) use scope::{duplicate_error, Duplicate, Scope};
