//! `mcp --verbose` says which config file it read and which commands it is
//! about to run (a config file runs every command in it), with secrets as
//! `***`. Issue 20, item 8.
//!
//! The program is the `mcp` example, built on demand (see
//! `interop/example_bin.rs`); when it cannot be built, each test says so and
//! passes.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use crate::example_bin;
use example_bin::mcp_bin;

const TOKEN: &str = "verbose-s3cr3t-5e21";

/// Runs `mcp ARGS...` with the token in its environment; (exit code,
/// stderr).
fn mcp(bin: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(bin)
        .args(args)
        .env("CONDUIT_TEST_VERBOSE_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .output()
        .expect("run the mcp example");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn verbose_names_the_config_file_and_every_command_it_is_about_to_run() {
    let bin = mcp_bin().expect("the mcp example builds");
    let dir = common::tempdir("mcp-verbose");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let file = dir.join("mcp.json");
    let config = serde_json::json!({
        "mcpServers": {
            "a": {
                "command": common::fixture(),
                "args": ["--print-args", "--", "${CONDUIT_TEST_VERBOSE_TOKEN}", "two words"],
                "cwd": "work",
                "conduit": { "stderr": "discard" }
            },
            "b": { "command": common::fixture(), "conduit": { "stderr": "discard" } }
        }
    });
    std::fs::write(&file, config.to_string()).unwrap();
    let file_arg = file.to_str().unwrap();
    let a_line = format!(
        "a: {} --print-args -- *** \"two words\" (in {})",
        common::fixture(),
        dir.join("work").display()
    );
    let b_line = format!("b: {} (in {})", common::fixture(), dir.display());

    let (code, stderr) = mcp(&bin, &["--verbose", "servers", "--config", file_arg]);
    common::figure(
        "mcp --verbose servers --config FILE, stderr",
        stderr.lines().take(4).collect::<Vec<_>>().join(" | "),
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(file_arg), "no file named:\n{stderr}");
    assert!(
        stderr.contains("runs every command"),
        "no warning:\n{stderr}"
    );
    assert!(stderr.contains(&a_line), "no {a_line:?} in:\n{stderr}");
    assert!(stderr.contains(&b_line), "no {b_line:?} in:\n{stderr}");
    assert!(!stderr.contains(TOKEN), "the secret was printed:\n{stderr}");

    // One server: only its command.
    let (code, stderr) = mcp(
        &bin,
        &["--verbose", "tools", "--config", file_arg, "--server", "b"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&b_line) && !stderr.contains("mcp: server a:"),
        "{stderr}"
    );

    // Without --verbose: nothing of it.
    let (_, stderr) = mcp(&bin, &["servers", "--config", file_arg]);
    assert!(!stderr.contains("runs every command"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn verbose_names_the_command_after_the_double_dash() {
    let bin = mcp_bin().expect("the mcp example builds");
    let (code, stderr) = mcp(
        &bin,
        &[
            "--verbose",
            "--stderr",
            "discard",
            "tools",
            "--",
            common::fixture(),
            "--print-args",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let cwd = std::env::current_dir().unwrap();
    let line = format!(
        "mcp: running {} --print-args (in {})",
        common::fixture(),
        cwd.display()
    );
    assert!(stderr.contains(&line), "no {line:?} in:\n{stderr}");
}

#[test]
fn help_says_that_a_config_file_runs_every_command_in_it() {
    let bin = mcp_bin().expect("the mcp example builds");
    let out = Command::new(&bin).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for needle in [
        "A config file runs every command in it",
        "no workspace trust",
        "--verbose prints the file and each command",
        "It runs every command in it: read it first",
    ] {
        assert!(help.contains(needle), "{needle:?} not in:\n{help}");
    }
}
