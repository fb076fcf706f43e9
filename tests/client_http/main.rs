//! The client over Streamable HTTP: the transport, its config, OAuth, and the `mcp` command's HTTP and OAuth paths.
//!
//! One test binary of several modules: one link instead of one per file.

#[path = "../client_http_support/mod.rs"]
mod client_http_support;
#[path = "../client_oauth_support/mod.rs"]
mod client_oauth_support;
#[path = "../common/mod.rs"]
mod common;
#[path = "../server_http_support/mod.rs"]
mod server_http_support;

mod cli;
mod config;
mod oauth;
mod oauth_cli;
mod transport;
