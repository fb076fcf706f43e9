//! The `mcp` command and the config files it reads.
//!
//! One test binary of several modules: one link instead of one per file.

#[path = "../common/mod.rs"]
mod common;
#[path = "../interop/example_bin.rs"]
mod example_bin;
#[path = "../host_support/mod.rs"]
mod host_support;

mod config_file;
mod config_file_secrets_host;
mod mcp;
mod verbose;
