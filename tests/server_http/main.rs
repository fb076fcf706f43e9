//! The Streamable HTTP server: sessions, session-less requests, edges, safety, the stop, the spec's suite.
//!
//! One test binary of several modules: one link instead of one per file.

#[path = "../common/mod.rs"]
mod common;
#[path = "../server_http_support/mod.rs"]
mod server_http_support;

mod edges;
mod safety;
mod service;
mod session;
mod stateless;
mod stop;
mod suite;
