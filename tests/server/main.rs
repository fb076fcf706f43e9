//! Serving a `Router` or a `Handler` over stdio and streams: the actor, budgets, the guard, the router, schemas, transports.
//!
//! One test binary of several modules: one link instead of one per file.

#[path = "../interop/example_bin.rs"]
mod example_bin;
#[path = "../server_support/mod.rs"]
mod server_support;

mod actor;
mod backlog;
mod budget;
mod example;
mod held;
mod own_client;
mod proptest;
mod router;
mod router_params;
mod schema;
mod transport;
