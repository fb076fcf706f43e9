//! conduit-mcp: the Model Context Protocol stdio transport on ractor.
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod framing;
pub mod jsonrpc;
pub mod protocol;
pub mod server;
