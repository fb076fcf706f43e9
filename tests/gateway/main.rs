//! The gateway (`mcp serve` and `HttpGateway`): admission, its contract, eras, the library, options, the command.
//!
//! One test binary of several modules: one link instead of one per file.

#[path = "../common/mod.rs"]
mod common;
#[path = "../interop/example_bin.rs"]
mod example_bin;
#[path = "../gateway_support/mod.rs"]
mod gateway_support;
#[path = "../server_http_support/mod.rs"]
mod server_http_support;

mod admission;
mod contract;
mod eras;
mod library;
mod options;
mod serve;
mod server_requests;
