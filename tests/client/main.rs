//! The client against the fixture server over stdio: discovery of the era, lifecycle, restarts, limits, requests, shutdown, transports.
//!
//! One test binary of several modules: one link instead of one per file.

#[path = "../common/mod.rs"]
mod common;
#[path = "../interop/example_bin.rs"]
mod example_bin;
#[path = "../host_support/mod.rs"]
mod host_support;

mod discovery;
mod embedding;
mod lifecycle;
mod limits;
mod list_changed_flood;
mod otp;
mod pagination;
mod requests;
mod restart_phases;
mod restarts;
mod shutdown;
mod start_dropped;
mod transport;
mod typed;
