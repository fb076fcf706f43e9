//! Real third-party peers (Node and Python, pinned): servers, clients,
//! hosts and the gateway against them. Ignored where the peers are not
//! installed; CI installs them and runs these with `-- --ignored`.
//!
//! One test binary of several modules: one link instead of one per file.

#[macro_use]
mod peers;

#[path = "../common/mod.rs"]
mod common;
mod example_bin;
#[path = "../gateway_support/mod.rs"]
mod gateway_support;
#[path = "../host_support/mod.rs"]
mod host_support;
#[path = "../server_http_support/mod.rs"]
mod server_http_support;

mod client;
mod client_http;
mod gateway;
mod host;
mod server;
mod server_http;
