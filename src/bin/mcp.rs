//! `mcp`: talk to local MCP servers over stdio from the command line.
//! Installed by `cargo install conduit-mcp --features cli`; the program is
//! [`conduit_mcp::cli`].

// The gateway allocates many small buffers per request from every worker
// thread; glibc's allocator serialises them on its arena locks.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    conduit_mcp::cli::main()
}
