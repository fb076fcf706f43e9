//! The `mcp` example, run as a program against the fixture server: every
//! subcommand, every exit code, the options, and no server left behind.
//!
//! The program is `target/<profile>/examples/mcp`, built on demand with
//! `cargo build --example mcp` (see `interop/example_bin.rs`). When it cannot be
//! built or found, each test says so and passes.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::example_bin;
use example_bin::mcp_bin;

macro_rules! need_mcp {
    () => {
        mcp_bin().expect("the mcp example builds (target/<profile>/examples/mcp)")
    };
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Out {
    /// stdout as exactly one JSON document.
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Runs `mcp OPTS... -- fixture SERVER_ARGS...` and waits for it (reaped).
fn run_in(bin: &Path, dir: Option<&Path>, opts: &[&str], server: &[&str]) -> Out {
    let mut cmd = Command::new(bin);
    cmd.args(opts)
        .arg("--")
        .arg(common::fixture())
        .args(server)
        .stdin(Stdio::null());
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    run_cmd(cmd)
}

fn run_cmd(mut cmd: Command) -> Out {
    let start = Instant::now();
    let out = cmd.output().expect("run the mcp example");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: start.elapsed(),
    }
}

fn run(bin: &Path, opts: &[&str], server: &[&str]) -> Out {
    run_in(bin, None, opts, server)
}

fn assert_code(out: &Out, code: i32) {
    assert_eq!(
        out.code, code,
        "exit code; stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
}

#[test]
fn help_is_printed_and_exits_0() {
    let bin = need_mcp!();
    let mut cmd = Command::new(&bin);
    cmd.arg("--help");
    let out = run_cmd(cmd);
    assert_code(&out, 0);
    for word in [
        "discover",
        "tools",
        "call TOOL",
        "request METHOD",
        "--timeout-ms",
        "--era",
        "--env",
        "--cd",
        "--stderr",
        "--progress",
        "--verbose",
        "isError",
        "Exit codes",
    ] {
        assert!(out.stdout.contains(word), "--help lacks {word:?}");
    }
}

#[test]
fn discover_reflects_the_era() {
    let bin = need_mcp!();
    for (opts, server, era, version) in [
        (vec![], vec![], "modern", "2026-07-28"),
        (vec!["--era", "modern"], vec![], "modern", "2026-07-28"),
        (vec!["--era", "legacy"], vec![], "legacy", "2025-11-25"),
        (vec!["--era", "stateless"], vec![], "modern", "2026-07-28"),
        (vec!["--era", "stateful"], vec![], "legacy", "2025-11-25"),
        (
            vec!["--era=auto"],
            vec!["--era", "legacy"],
            "legacy",
            "2025-11-25",
        ),
    ] {
        let mut o = opts.clone();
        o.push("discover");
        let out = run(&bin, &o, &server);
        assert_code(&out, 0);
        let v = out.json();
        assert_eq!(v["era"], era, "{opts:?} {server:?}");
        assert_eq!(v["protocolVersion"], version, "{opts:?} {server:?}");
        assert_eq!(v["serverInfo"]["name"], "conduit-mcp-fixture");
        assert!(v["capabilities"]["tools"].is_object(), "{v}");
    }
}

#[test]
fn tools_lists_every_page() {
    let bin = need_mcp!();
    for era in ["modern", "legacy"] {
        let out = run(&bin, &["--era", era, "tools"], &[]);
        assert_code(&out, 0);
        let names: Vec<String> = out.json()["tools"]
            .as_array()
            .expect("tools array")
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        // The fixture serves them in two pages (3 + 2).
        assert_eq!(
            names,
            ["echo", "add", "sleep", "fail", "ask_roots"],
            "{era}"
        );
    }
}

#[test]
fn call_prints_the_tool_result() {
    let bin = need_mcp!();
    let out = run(&bin, &["call", "add", r#"{"a": 2, "b": 40}"#], &[]);
    assert_code(&out, 0);
    assert_eq!(out.json()["content"][0]["text"], "42");

    let out = run(&bin, &["call", "echo", r#"{"text":"héllo"}"#], &[]);
    assert_code(&out, 0);
    assert_eq!(out.json()["content"][0]["text"], "héllo");

    // The largest timeout is accepted (and kept representable).
    let out = run(
        &bin,
        &[
            "--timeout-ms",
            "18446744073709551615",
            "call",
            "add",
            r#"{"a":1,"b":1}"#,
        ],
        &[],
    );
    assert_code(&out, 0);
    assert_eq!(out.json()["content"][0]["text"], "2");

    // A tool that reports a failure is still a successful answer.
    let out = run(&bin, &["call", "fail"], &[]);
    assert_code(&out, 0);
    assert_eq!(out.json()["isError"], true);
}

#[test]
fn request_prints_the_raw_result() {
    let bin = need_mcp!();
    for era in ["modern", "legacy"] {
        let out = run(
            &bin,
            &["--era", era, "request", "echo", r#"{"x":[1,2,{"y":null}]}"#],
            &[],
        );
        assert_code(&out, 0);
        assert_eq!(out.json()["x"], json!([1, 2, {"y": null}]), "{era}");
    }
}

#[test]
fn server_error_exits_1_with_the_error_on_stdout() {
    let bin = need_mcp!();
    let out = run(&bin, &["request", "no/such/method"], &[]);
    assert_code(&out, 1);
    let v = out.json();
    assert_eq!(v["code"], -32601, "{v}");
    assert!(v["message"].is_string(), "{v}");
    // Invalid tool arguments are a JSON-RPC error from the fixture.
    let out = run(&bin, &["--era", "legacy", "call", "add", r#"{"a":1}"#], &[]);
    assert_code(&out, 1);
    assert_eq!(out.json()["code"], -32602);
}

#[test]
fn usage_and_configuration_errors_exit_2_naming_the_problem() {
    let bin = need_mcp!();
    let cases: &[(&[&str], &str)] = &[
        (&["--timeout-ms", "abc", "tools"], "--timeout-ms"),
        (&["--timeout-ms"], "--timeout-ms"),
        (&["--era", "sideways", "tools"], "--era"),
        (&["--env", "NOEQUALS", "tools"], "--env"),
        (&["--stderr", "pipe", "tools"], "--stderr"),
        (&["--bogus", "tools"], "--bogus"),
        (&[], "SUBCOMMAND"),
        (&["frobnicate"], "frobnicate"),
        (&["call"], "TOOL"),
        (&["request"], "METHOD"),
        (&["call", "echo", "{not json"], "JSON_ARGS"),
        (&["call", "echo", "[1]"], "JSON_ARGS"),
        (&["request", "echo", "{\"a\":"], "JSON_PARAMS"),
        (&["tools", "extra"], "extra"),
        (&["--cd", "/definitely/not/a/dir", "tools"], "cd"),
    ];
    for (opts, needle) in cases {
        let out = run(&bin, opts, &[]);
        assert_code(&out, 2);
        assert!(out.stdout.is_empty(), "{opts:?}: stdout {}", out.stdout);
        assert!(
            out.stderr.contains("error:") && out.stderr.contains(needle),
            "{opts:?}: stderr should name {needle:?}: {}",
            out.stderr
        );
    }
    // No `--` and no server command.
    let mut cmd = Command::new(&bin);
    cmd.arg("tools");
    let out = run_cmd(cmd);
    assert_code(&out, 2);
    assert!(out.stderr.contains("--"), "{}", out.stderr);
    // A missing executable is a configuration error.
    let mut cmd = Command::new(&bin);
    cmd.args(["tools", "--", "conduit-mcp-no-such-server-exe", "-x"]);
    let out = run_cmd(cmd);
    assert_code(&out, 2);
    assert!(
        out.stderr.contains("conduit-mcp-no-such-server-exe"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_server_that_exits_at_once_exits_3() {
    let bin = need_mcp!();
    let out = run(&bin, &["tools"], &["--exit-immediately", "1"]);
    assert_code(&out, 3);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(out.stderr.contains("exit status 1"), "{}", out.stderr);
    // Reported, not retried for long.
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
    // A server that dies in the middle of a request.
    let out = run(&bin, &["request", "fixture/exit", r#"{"code":7}"#], &[]);
    assert_code(&out, 3);
}

#[test]
fn a_timeout_exits_3_and_leaves_no_server() {
    let bin = need_mcp!();
    let dir = common::tempdir("cli-timeout");
    let pids = dir.join("pids");
    let out = run(
        &bin,
        &["--timeout-ms", "300", "call", "sleep", r#"{"ms":60000}"#],
        &["--pid-file", pids.to_str().unwrap()],
    );
    assert_code(&out, 3);
    assert!(out.stderr.contains("timed out"), "{}", out.stderr);
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
    let pids = common::read_pids(&pids);
    assert!(!pids.is_empty());
    for pid in pids {
        assert!(!common::alive(pid), "server {pid} survived");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn timeout_bounds_the_wait_for_readiness() {
    let bin = need_mcp!();
    let dir = common::tempdir("cli-ready");
    let pids = dir.join("pids");
    // The server reads nothing for 30 s: neither discovery nor initialize
    // can be answered within --timeout-ms.
    for era in ["auto", "legacy", "modern"] {
        let out = run(
            &bin,
            &["--era", era, "--timeout-ms", "300", "discover"],
            &[
                "--start-delay-ms",
                "30000",
                "--pid-file",
                pids.to_str().unwrap(),
            ],
        );
        assert_code(&out, 3);
        // "timed out after 300ms", or "no answer to initialize within 300ms".
        assert!(out.stderr.contains("300ms"), "{era}: {}", out.stderr);
        // 300 ms, then the shutdown (stdin close, 2 s grace, SIGTERM):
        // not the 30 s the server takes to start.
        assert!(
            out.elapsed < Duration::from_secs(25),
            "{era}: {:?}",
            out.elapsed
        );
        let pids = common::read_pids(&pids);
        assert_eq!(pids.len(), 1, "{pids:?}");
        assert!(!common::alive(pids[0]), "{era}: server {pids:?} survived");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_stubborn_server_and_its_group_are_gone_before_exit() {
    let bin = need_mcp!();
    let dir = common::tempdir("cli-stubborn");
    let pids = dir.join("pids");
    // Ignores stdin EOF and has a grandchild holding the pipes: the example
    // must wait through SIGTERM of the whole group before exiting.
    let out = run(
        &bin,
        &["tools"],
        &[
            "--ignore-eof",
            "--grandchild",
            "--pid-file",
            pids.to_str().unwrap(),
        ],
    );
    assert_code(&out, 0);
    let pids = common::read_pids(&pids);
    assert_eq!(pids.len(), 2, "server and grandchild: {pids:?}");
    for pid in pids {
        assert!(!common::alive(pid), "process {pid} survived the example");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn progress_lines_go_to_stderr() {
    let bin = need_mcp!();
    let out = run(&bin, &["--progress", "call", "sleep", r#"{"ms":100}"#], &[]);
    assert_code(&out, 0);
    assert_eq!(out.json()["content"][0]["text"], "slept 100");
    let progress: Vec<f64> = out
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["progress"].as_f64())
        .collect();
    assert!(progress.len() >= 2, "stderr:\n{}", out.stderr);
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    // Every step, the last one (sent just before the answer) included.
    assert_eq!(progress.last(), Some(&10.0), "{progress:?}");
    // In the legacy era too, and through `request`.
    let out = run(
        &bin,
        &[
            "--era",
            "legacy",
            "--progress",
            "request",
            "sleep",
            r#"{"ms":100}"#,
        ],
        &[],
    );
    assert_code(&out, 0);
    assert_eq!(out.json()["slept"], 100);
    let lines: Vec<Value> = out
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(lines.len(), 10, "{}", out.stderr);
    assert!(lines.iter().all(|l| l["total"] == 10), "{}", out.stderr);
    // Without --progress, nothing of the kind.
    let out = run(&bin, &["call", "sleep", r#"{"ms":100}"#], &[]);
    assert_code(&out, 0);
    assert!(!out.stderr.contains("progressToken"), "{}", out.stderr);
}

#[test]
fn env_cd_and_stderr_file_reach_the_server() {
    let bin = need_mcp!();
    let dir = common::tempdir("cli-env");
    let mut cmd = Command::new(&bin);
    cmd.args([
        "--env",
        "CONDUIT_CLI_A=one=1",
        "--env=CONDUIT_CLI_B=",
        "--cd",
        dir.to_str().unwrap(),
        "--stderr",
        "file:server.log",
        "request",
        "fixture/info",
        "--",
        common::fixture(),
        "--stderr-mib",
        "1",
        "--",
        "-free",
    ])
    .current_dir(&dir)
    // Not in the allowlist: must not reach the server.
    .env("CONDUIT_CLI_LEAK", "secret");
    let out = run_cmd(cmd);
    assert_code(&out, 0);
    let v = out.json();
    assert_eq!(v["env"]["CONDUIT_CLI_A"], "one=1");
    assert_eq!(v["env"]["CONDUIT_CLI_B"], "");
    assert!(v["env"].get("CONDUIT_CLI_LEAK").is_none(), "{v}");
    let cwd = std::fs::canonicalize(v["cwd"].as_str().unwrap()).unwrap();
    assert_eq!(cwd, std::fs::canonicalize(&dir).unwrap());
    assert!(
        v["args"].as_array().unwrap().contains(&json!("-free")),
        "{v}"
    );
    // file:PATH relative to the example's current directory.
    let log = std::fs::metadata(dir.join("server.log")).expect("stderr file");
    assert!(log.len() >= 1024 * 1024, "{} bytes", log.len());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn discard_keeps_server_stderr_off_ours_and_verbose_logs() {
    let bin = need_mcp!();
    let out = run(
        &bin,
        &["--stderr", "discard", "--verbose", "tools"],
        &["--stderr-mib", "1"],
    );
    assert_code(&out, 0);
    assert!(out.stderr.len() < 512 * 1024, "{} bytes", out.stderr.len());
    assert!(!out.stderr.is_empty(), "--verbose printed nothing");
    out.json();
}

// ------------------------------------------------------ the installed `mcp`
//
// The same program as the `mcp` command `cargo install conduit-mcp
// --features cli` installs: the crate's `mcp` binary, built by cargo for the
// tests.

fn installed() -> &'static str {
    env!("CARGO_BIN_EXE_mcp")
}

/// Runs the installed `mcp` with `args`.
fn mcp(args: &[&str]) -> Out {
    let mut cmd = Command::new(installed());
    cmd.args(args).stdin(Stdio::null());
    run_cmd(cmd)
}

/// A `.mcp.json` of fixture servers (`name`, fixture arguments), plus a
/// remote entry and a disabled one.
fn config_file(dir: &Path, servers: &[(&str, &[&str])]) -> String {
    let mut entries: Vec<String> = servers
        .iter()
        .map(|(name, args)| {
            format!(
                r#""{name}": {{ "command": "{}", "args": {}, "conduit": {{ "stderr": "discard", "stdin_grace_ms": 500, "term_grace_ms": 500 }} }}"#,
                common::fixture(),
                json!(args)
            )
        })
        .collect();
    entries.push(r#""remote": { "type": "sse", "url": "https://example.invalid/sse" }"#.into());
    entries.push(r#""off": { "command": "x", "disabled": true }"#.into());
    let path = dir.join(".mcp.json");
    std::fs::write(
        &path,
        format!(
            "{{\n  // test servers\n  \"mcpServers\": {{\n    {}\n  }}\n}}\n",
            entries.join(",\n    ")
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn servers_prints_one_line_per_server_and_exits_0_only_if_all_are_ready() {
    let dir = common::tempdir("cli-servers");
    let file = config_file(
        &dir,
        &[
            ("modern", &[]),
            ("old", &["--era", "legacy"]),
            ("broken", &["--exit-immediately", "4"]),
        ],
    );
    let out = mcp(&["servers", "--config", &file]);
    assert_code(&out, 3);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", out.stdout);
    let line = |name: &str| -> Vec<&str> {
        lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}: {}", out.stdout))
            .split_whitespace()
            .collect()
    };
    assert_eq!(
        line("modern")[1..6],
        ["modern", "2026-07-28", "5", "tools", "ready"]
    );
    assert_eq!(
        line("old")[1..6],
        ["legacy", "2025-11-25", "5", "tools", "ready"]
    );
    let ms: u64 = line("old")[7].parse().unwrap();
    assert!(ms < 20_000, "{ms}");
    assert_eq!(line("old")[8], "ms");
    assert_eq!(line("broken")[1], "error:");
    assert!(
        line("broken").join(" ").contains("exit status 4"),
        "{}",
        out.stdout
    );
    assert_eq!(line("off")[1], "disabled");
    assert_eq!(line("remote")[1], "unsupported:");

    // All ready: exit 0. One server of the file with --server.
    let file = config_file(&dir, &[("modern", &[]), ("old", &["--era", "legacy"])]);
    let out = mcp(&["servers", "--config", &file]);
    assert_code(&out, 0);
    let out = mcp(&["servers", "--config", &file, "--server", "old"]);
    assert_code(&out, 0);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    // `servers` needs a file.
    let out = mcp(&["servers"]);
    assert_code(&out, 2);
    assert!(out.stderr.contains("--config"), "{}", out.stderr);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn tools_with_a_config_file_lists_every_tool_with_its_namespaced_name() {
    let dir = common::tempdir("cli-tools-config");
    let file = config_file(&dir, &[("a", &[]), ("b", &["--era", "legacy"])]);
    let out = mcp(&["tools", "--config", &file]);
    assert_code(&out, 0);
    let v = out.json();
    let tools = v["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 10, "{v}");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for want in ["a__echo", "a__ask_roots", "b__add", "b__sleep"] {
        assert!(names.contains(&want), "{want}: {names:?}");
    }
    let b_add = tools.iter().find(|t| t["name"] == "b__add").unwrap();
    assert_eq!(b_add["server"], "b");
    assert_eq!(b_add["tool"]["name"], "add");
    assert!(b_add["tool"]["inputSchema"].is_object(), "{b_add}");
    // With --server: that server's own list, as without a file.
    let out = mcp(&["--server", "a", "tools", "--config", &file]);
    assert_code(&out, 0);
    assert_eq!(out.json()["tools"][0]["name"], "echo");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn call_and_request_with_a_config_file() {
    let dir = common::tempdir("cli-call-config");
    let file = config_file(&dir, &[("a", &[]), ("b", &["--era", "legacy"])]);
    // A namespaced name starts its server and is routed there.
    let out = mcp(&["call", "b__add", r#"{"a": 40, "b": 2}"#, "--config", &file]);
    assert_code(&out, 0);
    assert_eq!(out.json()["content"][0]["text"], "42");
    // An error answer exits 1 with the error object.
    let out = mcp(&["call", "a__add", r#"{"a": 1}"#, "--config", &file]);
    assert_code(&out, 1);
    assert_eq!(out.json()["code"], -32602);
    // Unknown names are usage errors that say what exists.
    let out = mcp(&["call", "zzz__add", "--config", &file]);
    assert_code(&out, 2);
    assert!(out.stderr.contains("a, b"), "{}", out.stderr);
    let out = mcp(&["call", "a__nope", "--config", &file]);
    assert_code(&out, 2);
    assert!(out.stderr.contains("a__nope"), "{}", out.stderr);
    // One server by name: its own tool names, any request.
    let out = mcp(&[
        "--server",
        "a",
        "call",
        "echo",
        r#"{"text":"own"}"#,
        "--config",
        &file,
    ]);
    assert_code(&out, 0);
    assert_eq!(out.json()["content"][0]["text"], "own");
    let out = mcp(&[
        "--config", &file, "--server", "b", "--era", "legacy", "discover",
    ]);
    assert_code(&out, 0);
    assert_eq!(out.json()["protocolVersion"], "2025-11-25");
    let out = mcp(&[
        "--config",
        &file,
        "--server",
        "a",
        "request",
        "echo",
        r#"{"x":1}"#,
    ]);
    assert_code(&out, 0);
    assert_eq!(out.json()["x"], 1);
    // Which server, when the file has several?
    let out = mcp(&["--config", &file, "discover"]);
    assert_code(&out, 2);
    assert!(out.stderr.contains("--server"), "{}", out.stderr);
    for (name, why) in [
        ("remote", "not supported"),
        ("off", "disabled"),
        ("zzz", "not in the file"),
    ] {
        let out = mcp(&["--config", &file, "--server", name, "discover"]);
        assert_code(&out, 2);
        assert!(out.stderr.contains(why), "{name}: {}", out.stderr);
    }
    // A file and a command are exclusive; a bad file is a usage error.
    let mut cmd = Command::new(installed());
    cmd.args(["--config", &file, "tools", "--", common::fixture()]);
    assert_code(&run_cmd(cmd), 2);
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"mcpServers": {"s": {"command": "x", "env": {"K": "${CONDUIT_TEST_UNSET_VAR}"}}}}"#,
    )
    .unwrap();
    let out = mcp(&["servers", "--config", bad.to_str().unwrap()]);
    assert_code(&out, 2);
    assert!(
        out.stderr.contains("mcpServers.s.env.K") && out.stderr.contains("CONDUIT_TEST_UNSET_VAR"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_installed_command_keeps_the_contract_of_the_example() {
    let out = run(
        Path::new(installed()),
        &["call", "add", r#"{"a": 2, "b": 40}"#],
        &[],
    );
    assert_code(&out, 0);
    assert_eq!(out.json()["content"][0]["text"], "42");
    let out = run(Path::new(installed()), &["request", "no/such/method"], &[]);
    assert_code(&out, 1);
    let out = mcp(&["--help"]);
    assert_code(&out, 0);
    assert!(out.stdout.contains("Exit codes") && out.stdout.contains("--config"));
}

#[test]
fn every_subcommand_has_help_and_completions_are_generated() {
    for (sub, word) in [
        ("discover", "--config"),
        ("tools", "namespaced"),
        ("call", "TOOL"),
        ("request", "METHOD"),
        ("servers", "--config"),
        ("completions", "SHELL"),
    ] {
        let out = mcp(&[sub, "--help"]);
        assert_code(&out, 0);
        assert!(
            out.stdout.contains(word),
            "{sub} --help lacks {word:?}:\n{}",
            out.stdout
        );
    }
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = mcp(&["completions", shell]);
        assert_code(&out, 0);
        for word in ["discover", "servers", "timeout-ms", "config"] {
            assert!(out.stdout.contains(word), "{shell} completion lacks {word}");
        }
    }
    let out = mcp(&["completions", "tcsh"]);
    assert_code(&out, 2);
}

#[test]
fn progress_on_a_terminal_is_a_bar() {
    assert!(
        Path::new("/usr/bin/script").is_file(),
        "`script` (util-linux) is needed to run mcp on a terminal"
    );
    // `script` gives mcp a terminal for stdout and stderr.
    let line = format!(
        "{} --progress call sleep '{{\"ms\":300}}' -- {}",
        installed(),
        common::fixture()
    );
    let mut cmd = Command::new("/usr/bin/script");
    cmd.args(["-q", "-e", "-c", &line, "/dev/null"]);
    let out = run_cmd(cmd);
    assert_code(&out, 0);
    assert!(out.stdout.contains("100%"), "no bar:\n{}", out.stdout);
    assert!(
        !out.stdout.contains("progressToken"),
        "JSON lines on a terminal:\n{}",
        out.stdout
    );
    assert!(out.stdout.contains("slept 300"), "{}", out.stdout);
}

#[test]
fn server_without_a_config_file_is_a_usage_error_not_ignored() {
    let out = mcp(&["tools", "--server", "other", "--", common::fixture()]);
    assert_code(&out, 2);
    assert!(
        out.stderr.contains("--server") && out.stderr.contains("--config"),
        "{}",
        out.stderr
    );
    let out = mcp(&[
        "tools",
        "--server",
        "other",
        "--url",
        "http://127.0.0.1:9/mcp",
    ]);
    assert_code(&out, 2);
}

#[test]
fn a_worker_count_that_is_not_a_number_is_a_usage_error_not_a_panic() {
    for bad in ["0", "two"] {
        let mut cmd = Command::new(installed());
        cmd.args(["tools", "--", common::fixture()])
            .env("TOKIO_WORKER_THREADS", bad)
            .stdin(Stdio::null());
        let out = run_cmd(cmd);
        assert_code(&out, 2);
        assert!(
            out.stderr.contains("TOKIO_WORKER_THREADS"),
            "{}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
    let mut cmd = Command::new(installed());
    cmd.args(["tools", "--", common::fixture()])
        .env("TOKIO_WORKER_THREADS", "1")
        .stdin(Stdio::null());
    let out = run_cmd(cmd);
    assert_code(&out, 0);
    assert!(out.json()["tools"].is_array(), "{}", out.stdout);
}

#[test]
fn a_vscode_input_is_supplied_with_input_and_an_unsupplied_one_leaves_out_its_server_only() {
    let dir = common::tempdir("cli-inputs");
    let file = dir.join("mcp.json");
    let entry =
        |env: serde_json::Value| serde_json::json!({ "command": common::fixture(), "env": env });
    std::fs::write(
        &file,
        serde_json::json!({ "servers": {
            "keyed": entry(serde_json::json!({ "FIXTURE_KEY": "${input:api-key}" })),
            "plain": entry(serde_json::json!({})),
        } })
        .to_string(),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    // Supplied: the server gets the value.
    let out = mcp(&[
        "--input",
        "api-key=k3y-from-the-command-line",
        "request",
        "fixture/info",
        "--config",
        file,
        "--server",
        "keyed",
    ]);
    assert_code(&out, 0);
    assert_eq!(
        out.json()["env"]["FIXTURE_KEY"],
        "k3y-from-the-command-line"
    );
    // Not supplied: that server only is left out, saying why.
    let out = mcp(&["servers", "--config", file]);
    assert_code(&out, 0);
    let line = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
    };
    assert!(line("plain").contains("tools"), "{}", out.stdout);
    assert!(line("keyed").contains("api-key"), "{}", out.stdout);
    let out = mcp(&["tools", "--config", file]);
    assert_code(&out, 0);
    assert!(
        out.stderr.contains("skipped keyed") && out.stderr.contains("api-key"),
        "{}",
        out.stderr
    );
    let out = mcp(&["discover", "--config", file, "--server", "keyed"]);
    assert_code(&out, 2);
    assert!(out.stderr.contains("api-key"), "{}", out.stderr);
    // A malformed --input is refused without showing its value.
    let out = mcp(&[
        "servers",
        "--config",
        file,
        "--input",
        "s3cr3t-without-an-id",
    ]);
    assert_code(&out, 2);
    assert!(!out.stderr.contains("s3cr3t"), "{}", out.stderr);
    let _ = std::fs::remove_dir_all(dir);
}
