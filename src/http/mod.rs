//! What both halves of MCP's Streamable HTTP transport need, written once
//! (feature `http`): the header names and their checks, the base64 sentinel
//! form of header values, and Server-Sent Events framing and parsing.
//!
//! The server ([`crate::server::http`]) uses all of it; a client transport
//! over HTTP reuses the same pieces (it parses what the server frames, and
//! encodes the headers the server checks).
//!
//! - [`headers`]: `MCP-Session-Id`, `MCP-Protocol-Version`, `Mcp-Method`,
//!   `Mcp-Name`, `Mcp-Param-*`, `Last-Event-ID`; which values are valid;
//!   [`headers::encode_value`] / [`headers::decode_value`] for the
//!   `=?base64?...?=` form; the `Mcp-Name` source of a request.
//! - [`sse`]: one event to bytes ([`sse::Event`]), and an incremental
//!   parser ([`sse::Parser`]) that never buffers more than one event.
//! - [`status`]: the HTTP status of a 2026-07-28 error answer.

pub(crate) mod headers;
pub(crate) mod sse;
pub(crate) mod status;
