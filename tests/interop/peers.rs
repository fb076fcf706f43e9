//! Where the real third-party MCP servers are installed for the tests
//! (`target/peers`, by `.ci/install-client-peers.sh`), and the `need!`
//! macro that fails a test naming the peer it misses. The tests that need
//! peers are `#[ignore]`d, saying why, and run by `.ci/run`
//! with `-- --ignored` once the peers are installed.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What to run to install the peers.
pub const INSTALL: &str = "run .ci/install-client-peers.sh";

pub fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/peers")
}

pub fn on_path(exe: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(exe).is_file()))
        .unwrap_or(false)
}

/// server-everything's entry point, when it and `node` are installed.
pub fn everything_js() -> Option<PathBuf> {
    let js =
        peers().join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    (js.is_file() && on_path("node")).then_some(js)
}

/// The venv's python, when `mcp` 2.x with `mcp.server.mcpserver` is there.
pub fn venv_python() -> Option<PathBuf> {
    let py = peers().join("venv/bin/python");
    let ok = py.is_file()
        && Command::new(&py)
            .args(["-c", "import mcp.server.mcpserver"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    ok.then_some(py)
}

/// `mcp-server-time` from the venv.
pub fn time_server() -> Option<PathBuf> {
    let exe = peers().join("venv/bin/mcp-server-time");
    exe.is_file().then_some(exe)
}

/// `tests/interop/py_server.py`.
pub fn py_server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/py_server.py")
}

/// The value of `$found`, or return from the test saying what is missing
/// (`#[macro_use] mod peers;` brings it in).
#[allow(unused_macros)]
macro_rules! need {
    ($found:expr, $what:expr) => {
        match $found {
            Some(v) => v,
            None => {
                panic!(
                    "missing: {} not installed at target/peers; {}",
                    $what,
                    peers::INSTALL
                );
            }
        }
    };
}
