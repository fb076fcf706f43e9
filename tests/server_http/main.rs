//! The Streamable HTTP server: sessions, session-less requests, edges, safety, the stop.
//!
//! One test binary of several modules: one link instead of one per file.

#[path = "../common/mod.rs"]
mod common;
#[path = "../server_http_support/mod.rs"]
mod server_http_support;

mod edges;
mod owners;
mod safety;
mod service;
mod session;
mod session_record;
mod shares;
mod sse_reader;
mod stateless;
mod stop;
