//! A host of many servers: lifecycle, lazy servers and reloads, bounds, cancellation, events, namespaces.
//!
//! One test binary of several modules: one link instead of one per file.

#[path = "../common/mod.rs"]
mod common;
#[path = "../interop/example_bin.rs"]
mod example_bin;
#[path = "../host_support/mod.rs"]
mod host_support;

mod bounds;
mod cancel;
mod events;
mod flood;
mod lifecycle;
mod namespace;
mod namespace_owners;
mod start_dropped;
