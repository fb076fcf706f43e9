//! `mcp`: talk to local MCP servers over stdio from the command line.
//! Installed by `cargo install conduit-mcp --features cli`; the program is
//! [`conduit_mcp::cli`].

fn main() -> std::process::ExitCode {
    conduit_mcp::cli::main()
}
