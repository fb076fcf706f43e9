//! The protocol models of both eras, and the conformance fixtures.
//!
//! One test binary of several modules: one link instead of one per file.

#[path = "../interop/example_bin.rs"]
mod example_bin;

mod conformance_fixtures;
mod conformance_rounds;
mod models;
