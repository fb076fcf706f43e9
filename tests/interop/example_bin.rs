//! Finds an example program for the tests, building it first.
//!
//! `cargo test --all-targets` builds examples only as test harnesses
//! (`examples/<name>-<hash>`), and `cargo test --test X` not at all, so the
//! program `target/<profile>/examples/<name>` may be missing or stale. The
//! tests therefore run `cargo build --example <name>` once per test binary (a
//! no-op when it is up to date) with the same profile and target directory.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The built `mcp` example, or `None` (with a note printed) if it could not
/// be built or found.
pub fn mcp_bin() -> Option<PathBuf> {
    example_bin("mcp")
}

/// The built example `name`, or `None` (with a note printed) if it could
/// not be built or found.
pub fn example_bin(name: &'static str) -> Option<PathBuf> {
    static BUILT: Mutex<Option<HashMap<&'static str, Option<PathBuf>>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    built
        .get_or_insert_with(HashMap::new)
        .entry(name)
        .or_insert_with(|| build(name))
        .clone()
}

fn build(name: &str) -> Option<PathBuf> {
    // This test is target/<profile>/deps/<test>.
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?.to_path_buf();
    let bin = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--example", name, "--manifest-path"])
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
        Ok(s) => eprintln!("note: `cargo build --example {name}` failed ({s})"),
        Err(e) => eprintln!("note: could not run cargo to build the {name} example: {e}"),
    }
    bin.is_file().then_some(bin)
}
