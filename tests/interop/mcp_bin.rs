//! Finds the `mcp` example program for the tests, building it first.
//!
//! `cargo test --all-targets` builds examples only as test harnesses
//! (`examples/mcp-<hash>`), and `cargo test --test X` not at all, so the
//! program `target/<profile>/examples/mcp` may be missing or stale. The tests
//! therefore run `cargo build --example mcp` once (a no-op when it is up to
//! date) with the same profile and target directory, then use the program.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The built `mcp` example, or `None` (with a note printed) if it could not
/// be built or found.
pub fn mcp_bin() -> Option<PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(build).clone()
}

fn build() -> Option<PathBuf> {
    // This test is target/<profile>/deps/<test>.
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?.to_path_buf();
    let bin = profile_dir
        .join("examples")
        .join(format!("mcp{}", std::env::consts::EXE_SUFFIX));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--example", "mcp", "--manifest-path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .arg("--target-dir")
        .arg(profile_dir.parent()?)
        .stdin(Stdio::null());
    match profile_dir.file_name()?.to_str()? {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => eprintln!("note: `cargo build --example mcp` failed ({s})"),
        Err(e) => eprintln!("note: could not run cargo to build the mcp example: {e}"),
    }
    bin.is_file().then_some(bin)
}
