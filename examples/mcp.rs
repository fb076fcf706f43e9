//! `mcp`: talk to local MCP servers over stdio from the command line.
//!
//! ```text
//! cargo run --example mcp -- discover -- npx -y @modelcontextprotocol/server-everything
//! cargo run --example mcp -- call echo '{"message":"hi"}' -- mcp-server-time
//! cargo run --example mcp -- servers --config .mcp.json
//! ```
//!
//! The same program as the installed `mcp` command
//! (`cargo install conduit-mcp --features cli`): see [`conduit_mcp::cli`],
//! or run with `--help` for the whole usage. Exit codes: 0 success, 1 the
//! server answered with an error, 2 usage or configuration error, 3
//! transport failure or timeout.
//!
//! In a crate of your own, this file as `src/main.rs` builds with these
//! dependencies (`.ci/examples-outside.sh` checks it):
//!
//! ```toml
//! [dependencies]
//! conduit-mcp = { version = "0.1", features = ["cli"] }
//! ```

fn main() -> std::process::ExitCode {
    conduit_mcp::cli::main()
}
