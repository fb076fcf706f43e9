//! Config files in the formats people keep (Claude Desktop, Cursor, Claude
//! Code's `.mcp.json`, VS Code's `.vscode/mcp.json` and `settings.json`),
//! read from disk, and servers started from them.

use crate::common;
use crate::host_support;

use std::path::{Path, PathBuf};

use conduit_mcp::config_file::{ConfigFileError, ServersFile};
use conduit_mcp::host::{Host, HostConfig, WhenUnavailable};
use conduit_mcp::{EnvValue, EraPreference, StderrMode};
use serde_json::json;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |k| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    }
}

fn load(
    path: &Path,
    vars: &'static [(&'static str, &'static str)],
) -> Result<ServersFile, ConfigFileError> {
    ServersFile::parse(&std::fs::read_to_string(path).unwrap(), path, &env(vars))
}

fn env_of<'a>(file: &'a ServersFile, server: &str, key: &str) -> Option<&'a EnvValue> {
    file.server(server)?
        .transport
        .as_stdio()
        .unwrap()
        .env
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

#[test]
fn claude_desktop_config() {
    let dir = common::tempdir("cfg-claude-desktop");
    let path = write(
        &dir,
        "claude_desktop_config.json",
        r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "literal-token" }
    }
  },
  "globalShortcut": "Ctrl+Space"
}"#,
    );
    let file = load(&path, &[]).unwrap();
    assert_eq!(
        file.servers.keys().collect::<Vec<_>>(),
        ["filesystem", "github"]
    );
    let fs = file.server("filesystem").unwrap();
    assert_eq!(
        fs.transport.as_stdio().unwrap().command,
        "npx",
        "a bare name stays a PATH lookup"
    );
    assert_eq!(
        fs.transport.as_stdio().unwrap().args[2],
        "/Users/me/Desktop"
    );
    assert_eq!(fs.get_name(), Some("filesystem"));
    // The default working directory is the file's.
    assert_eq!(
        fs.transport.as_stdio().unwrap().cd.as_ref().unwrap(),
        dir.to_str().unwrap()
    );
    assert_eq!(
        env_of(&file, "github", "GITHUB_PERSONAL_ACCESS_TOKEN"),
        Some(&EnvValue::Plain("literal-token".into())),
        "written in the file: plain"
    );
    assert!(file.unsupported.is_empty() && file.disabled.is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn cursor_config_with_env_variables_and_a_remote_server() {
    let dir = common::tempdir("cfg-cursor");
    let path = write(
        &dir,
        ".cursor/mcp.json",
        r#"{
  "mcpServers": {
    "api": {
      "command": "${userHome}/bin/api-server",
      "args": ["--region", "${env:REGION}"],
      "env": { "API_KEY": "${env:API_KEY}", "MODE": "fast" }
    },
    "remote": { "url": "https://mcp.example.invalid/sse", "headers": { "Authorization": "Bearer ${env:NOPE}" } }
  }
}"#,
    );
    let file = load(
        &path,
        &[
            ("HOME", "/home/me"),
            ("REGION", "eu"),
            ("API_KEY", "k-123"),
            ("NOPE", "t-456"),
        ],
    )
    .unwrap();
    let api = file.server("api").unwrap();
    assert_eq!(
        api.transport.as_stdio().unwrap().command,
        "/home/me/bin/api-server"
    );
    assert_eq!(api.transport.as_stdio().unwrap().args, ["--region", "eu"]);
    // From the environment: a secret, never shown.
    let key = env_of(&file, "api", "API_KEY").unwrap();
    assert!(matches!(key, EnvValue::Secret(s) if s.expose() == "k-123"));
    assert!(!format!("{api:?}").contains("k-123"));
    assert!(!serde_json::to_string(api).unwrap().contains("k-123"));
    assert_eq!(
        env_of(&file, "api", "MODE"),
        Some(&EnvValue::Plain("fast".into()))
    );
    // A `url` without a type is a Streamable HTTP server; its headers are
    // secrets.
    let remote = file.server("remote").unwrap().transport.as_http().unwrap();
    assert_eq!(remote.url, "https://mcp.example.invalid/sse");
    assert_eq!(remote.headers[0].1.expose(), "Bearer t-456");
    assert!(!format!("{file:?}").contains("t-456"));
    assert!(file.unsupported.is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn claude_code_mcp_json_with_defaults_relative_paths_and_our_options() {
    let dir = common::tempdir("cfg-claude-code");
    let path = write(
        &dir,
        "project/.mcp.json",
        r#"{
  "mcpServers": {
    "local": {
      "command": "./bin/server",
      "args": ["--port", "${PORT:-8080}", "${EMPTY:-fallback}"],
      "cwd": "work",
      "conduit": {
        "request_timeout_ms": 5000,
        "stdin_grace_ms": 250,
        "term_grace_ms": 750,
        "era": "legacy",
        "max_reconnects": 2,
        "backoff": { "initial_ms": 10, "max_ms": 100 },
        "stderr": { "file": "logs/local.log" },
        "revive_after_ms": 0
      }
    },
    "tools": { "command": "bin/tools" },
    "off": { "command": "nothing", "disabled": true }
  },
  "conduit": { "separator": "--", "when_unavailable": "wait", "revive_after_ms": 300000 }
}"#,
    );
    let file = load(&path, &[("EMPTY", "")]).unwrap();
    let project = dir.join("project");
    let local = file.server("local").unwrap();
    assert_eq!(
        local.transport.as_stdio().unwrap().command,
        project.join("bin/server").to_str().unwrap(),
        "relative to the file's directory"
    );
    assert_eq!(
        local.transport.as_stdio().unwrap().args,
        ["--port", "8080", "fallback"]
    );
    assert_eq!(
        local.transport.as_stdio().unwrap().cd.as_ref().unwrap(),
        project.join("work").to_str().unwrap()
    );
    assert_eq!(local.get_request_timeout().as_millis(), 5000);
    assert_eq!(local.get_stdin_grace().as_millis(), 250);
    assert_eq!(local.get_term_grace().as_millis(), 750);
    assert_eq!(local.get_era(), EraPreference::Stateful);
    assert_eq!(local.get_max_reconnects(), 2);
    assert_eq!(local.get_backoff().initial.as_millis(), 10);
    assert_eq!(local.get_backoff().factor, 2.0, "unset: the default");
    assert_eq!(
        local.transport.as_stdio().unwrap().stderr,
        StderrMode::File(project.join("logs/local.log"))
    );
    assert_eq!(
        file.server("tools")
            .unwrap()
            .transport
            .as_stdio()
            .unwrap()
            .command,
        project.join("bin/tools").to_str().unwrap()
    );
    // Options not given keep their defaults.
    assert_eq!(file.server("tools").unwrap().get_max_reconnects(), 5);
    assert_eq!(file.disabled, ["off"]);
    assert!(file.server("off").is_none());
    let host = HostConfig::from_file(&file).unwrap();
    assert_eq!(host.get_separator(), "--");
    assert_eq!(host.get_when_unavailable(), WhenUnavailable::Wait);
    // A server's own pause before a revive, over the host's.
    assert_eq!(host.revive_after_of("local"), std::time::Duration::ZERO);
    assert_eq!(
        host.revive_after_of("tools"),
        std::time::Duration::from_secs(300)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn vscode_mcp_json_with_comments_env_file_inputs_and_types() {
    let dir = common::tempdir("cfg-vscode");
    write(
        &dir,
        ".env",
        "# secrets\nexport TOKEN=from-env-file\nSHARED='file value'\nQUOTED=\"a\\nb\"\n",
    );
    let path = write(
        &dir,
        ".vscode/mcp.json",
        r#"{
  // VS Code: JSON with comments and trailing commas.
  "inputs": [
    { "type": "promptString", "id": "api-key", "description": "API key", "password": true },
  ],
  "servers": {
    "memory": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"],
      "envFile": "${workspaceFolder}/.env",
      "env": { "SHARED": "from env", "WS": "${workspaceFolderBasename}" }, /* env wins */
    },
    "web": { "type": "http", "url": "https://example.invalid/mcp" },
    "sse": { "type": "sse", "url": "https://example.invalid/sse" },
  },
}"#,
    );
    let file = load(&path, &[]).unwrap();
    assert_eq!(file.servers.len(), 2);
    assert!(file.server("web").unwrap().transport.as_http().is_some());
    let memory = file.server("memory").unwrap();
    assert_eq!(
        memory.transport.as_stdio().unwrap().args[1],
        "@modelcontextprotocol/server-memory"
    );
    // Every env-file value is a secret; `env` wins over it.
    assert!(matches!(
        env_of(&file, "memory", "TOKEN"),
        Some(EnvValue::Secret(s)) if s.expose() == "from-env-file"
    ));
    assert!(matches!(
        env_of(&file, "memory", "QUOTED"),
        Some(EnvValue::Secret(s)) if s.expose() == "a\nb"
    ));
    assert_eq!(
        env_of(&file, "memory", "SHARED"),
        Some(&EnvValue::Plain("from env".into()))
    );
    // `${workspaceFolder}` is the folder holding `.vscode`.
    let ws = dir.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        env_of(&file, "memory", "WS"),
        Some(&EnvValue::Plain(ws.into()))
    );
    let debug = format!("{file:?}");
    assert!(!debug.contains("from-env-file"), "{debug}");
    let mut names: Vec<&str> = file.unsupported.iter().map(|u| u.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["sse"]);
    assert!(file.unsupported[0].reason.contains("HTTP+SSE"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn vscode_user_settings_hold_servers_under_mcp() {
    let dir = common::tempdir("cfg-vscode-settings");
    let path = write(
        &dir,
        "settings.json",
        r#"{ "editor.fontSize": 14, "mcp": { "servers": { "time": { "command": "uvx", "args": ["mcp-server-time"] } } } }"#,
    );
    let file = load(&path, &[]).unwrap();
    assert_eq!(
        file.server("time")
            .unwrap()
            .transport
            .as_stdio()
            .unwrap()
            .args,
        ["mcp-server-time"]
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn errors_name_the_file_the_key_and_the_variable() {
    let dir = common::tempdir("cfg-errors");
    let cases: &[(&str, &str, &[&str])] = &[
        (
            r#"{"mcpServers": {"gh": {"command": "x", "env": {"TOKEN": "${GITHUB_TOKEN}"}}}}"#,
            "unset",
            &["mcpServers.gh.env.TOKEN", "GITHUB_TOKEN", "not set"],
        ),
        (
            r#"{"mcpServers": {"gh": {"command": "x", "args": ["${env:MISSING}"]}}}"#,
            "unset-env",
            &["mcpServers.gh.args[0]", "MISSING"],
        ),
        (
            r#"{"mcpServers": {"s": {"args": ["a"]}}}"#,
            "no-command",
            &["mcpServers.s.command", "missing"],
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "args": "a b"}}}"#,
            "args",
            &["mcpServers.s.args", "array"],
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "conduit": {"request_timeout": 5}}}}"#,
            "unknown-option",
            &["mcpServers.s.conduit", "request_timeout"],
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "conduit": {"command": "y"}}}}"#,
            "option-command",
            &["mcpServers.s.conduit.command"],
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "conduit": {"roots": "file:///a"}}}}"#,
            "roots-not-array",
            &["mcpServers.s.conduit.roots", "array"],
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "conduit": {"roots": [{"name": "a"}]}}}}"#,
            "root-without-uri",
            &["mcpServers.s.conduit.roots[0].uri", "missing"],
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "conduit": {"roots": [{"uri": "file:///a", "path": "/a"}]}}}}"#,
            "root-unknown-field",
            &["mcpServers.s.conduit.roots[0].path", "unknown field"],
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "envFile": "missing.env"}}}"#,
            "env-file",
            &["mcpServers.s.envFile", "missing.env"],
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x"}}, "servers": {"s": {"command": "y"}}}"#,
            "duplicate",
            &["`s`", "twice"],
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "conduit": {"revive_after_ms": -1}}}}"#,
            "revive",
            &["mcpServers.s.conduit.revive_after_ms", "milliseconds"],
        ),
        (r#"{"other": {}}"#, "no-servers", &["mcpServers"]),
        (
            r#"{"mcpServers": {"s": {"command": "x"}}, "conduit": {"separatr": "."}}"#,
            "host-option",
            &["conduit", "separatr"],
        ),
        (
            "{\"mcpServers\": {\n  \"s\": {\"command\": \"x\",, }\n}}",
            "syntax",
            &["line 2"],
        ),
    ];
    for (text, tag, needles) in cases {
        let path = write(&dir, &format!("{tag}.json"), text);
        let e = load(&path, &[])
            .and_then(|f| HostConfig::from_file(&f))
            .expect_err(tag)
            .to_string();
        assert!(e.contains(path.to_str().unwrap()), "{tag}: no file in {e}");
        for n in *needles {
            assert!(e.contains(n), "{tag}: {n:?} not in {e}");
        }
    }
    // A bad env file line names the line.
    write(&dir, "bad.env", "GOOD=1\nthis is not a variable\n");
    let path = write(
        &dir,
        "bad-env.json",
        r#"{"mcpServers": {"s": {"command": "x", "envFile": "bad.env"}}}"#,
    );
    match load(&path, &[]).unwrap_err() {
        ConfigFileError::EnvFileSyntax { key, line, .. } => {
            assert_eq!((key.as_str(), line), ("mcpServers.s.envFile", 2));
        }
        other => panic!("{other}"),
    }
    // A missing file.
    let e = ServersFile::load(dir.join("nope.json")).unwrap_err();
    assert!(matches!(e, ConfigFileError::Read { .. }), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A VS Code file's `${input:ID}`: the value supplied, a secret; a server
/// whose input has no value left out, naming it, and the others read.
#[test]
fn a_vscode_input_is_its_supplied_value_and_only_servers_lacking_one_are_left_out() {
    use conduit_mcp::config_file::ReadOptions;
    let dir = common::tempdir("cfg-inputs");
    let path = write(
        &dir,
        ".vscode/mcp.json",
        r#"{
  "inputs": [
    { "type": "promptString", "id": "api-key", "description": "API key", "password": true },
    { "type": "promptString", "id": "wiki-key", "description": "Wiki key", "password": true }
  ],
  "servers": {
    "search": { "command": "search-mcp", "args": ["--key", "${input:api-key}"] },
    "wiki": { "command": "wiki-mcp", "env": { "KEY": "${input:wiki-key}" } },
    "old": { "command": "old-mcp", "env": { "KEY": "${input:wiki-key}" }, "disabled": true },
    "time": { "command": "uvx", "args": ["mcp-server-time"] }
  }
}"#,
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let options = ReadOptions::new().input("api-key", "k3y-s3cr3t");
    let file = ServersFile::parse_with(&text, &path, &env(&[]), &options).unwrap();
    let search = file.server("search").unwrap().transport.as_stdio().unwrap();
    assert!(search.args[1].is_secret() && search.args[1] == "k3y-s3cr3t");
    assert!(file.server("time").is_some());
    assert_eq!(file.disabled, ["old"]);
    assert_eq!(file.unsupported.len(), 1, "{:?}", file.unsupported);
    let wiki = &file.unsupported[0];
    assert_eq!(wiki.name, "wiki");
    assert!(
        wiki.reason.contains("wiki-key") && wiki.reason.contains("servers.wiki.env.KEY"),
        "{wiki}"
    );
    assert!(!format!("{file:?}").contains("k3y-s3cr3t"));
    // Without any value: every server that uses one is left out.
    let file = ServersFile::parse(&text, &path, &env(&[])).unwrap();
    let mut left: Vec<&str> = file.unsupported.iter().map(|u| u.name.as_str()).collect();
    left.sort();
    assert_eq!(left, ["search", "wiki"]);
    assert_eq!(file.servers.keys().collect::<Vec<_>>(), ["time"]);
    let _ = std::fs::remove_dir_all(dir);
}

/// A VS Code file whose server is the fixture, by a relative command (a
/// link next to the file), with an env file: what reaches the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_started_from_a_file_gets_its_command_cwd_and_env() {
    let dir = common::tempdir("cfg-start");
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::os::unix::fs::symlink(common::fixture(), dir.join("bin/fixture")).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    write(&dir, "secrets.env", "FIXTURE_TOKEN=t0p-secret\n");
    let path = write(
        &dir,
        "mcp.json",
        r#"{
  "servers": {
    "fx": {
      "type": "stdio",
      "command": "./bin/fixture",
      "args": ["--print-args"],
      "cwd": "data",
      "envFile": "secrets.env",
      "env": { "FIXTURE_MODE": "${CONDUIT_TEST_UNSET_MODE:-plain}" },
      "conduit": { "stderr": "discard", "stdin_grace_ms": 500, "term_grace_ms": 500 }
    }
  }
}"#,
    );
    let file = ServersFile::load(&path).unwrap();
    let host = Host::start(HostConfig::from_file(&file).unwrap())
        .await
        .unwrap();
    assert!(host.server("fx").unwrap().is_ready());
    let info = host
        .client("fx")
        .unwrap()
        .request("fixture/info", None)
        .await
        .unwrap();
    assert_eq!(info["env"]["FIXTURE_TOKEN"], "t0p-secret");
    assert_eq!(info["env"]["FIXTURE_MODE"], "plain");
    let cwd = std::fs::canonicalize(info["cwd"].as_str().unwrap()).unwrap();
    assert_eq!(cwd, std::fs::canonicalize(dir.join("data")).unwrap());
    assert_eq!(info["args"], json!(["--print-args"]));
    let r = host
        .call_tool("fx__echo", json!({"text": "from a file"}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "from a file");
    host_support::finish(host).await;
    let _ = std::fs::remove_dir_all(dir);
}

// ---------------------------------------- issue 20, item 7: secrets everywhere
//
// A value that came from the environment (`${VAR}`, `${env:VAR}`) or from
// an env file is a secret wherever it lands: `args` (the usual
// `["--token", "${GITHUB_TOKEN}"]`), `command`, `cwd`, `env`. Before the
// fix only `env` kept it: the token was in the Debug of the file and in the
// serialised config.

const TOKEN: &str = "ghp_s3cr3t_token_value_51f0";
const BIN: &str = "/opt/s3cr3t-bin-7f3e/github-mcp";
const DIR: &str = "/srv/s3cr3t-dir-9c1a";

#[test]
fn values_from_the_environment_are_secrets_in_args_command_and_cwd_too() {
    let dir = common::tempdir("cfg-secret-args");
    let path = write(
        &dir,
        ".mcp.json",
        r#"{
  "mcpServers": {
    "gh": {
      "command": "${GH_BIN}",
      "args": ["--token", "${GITHUB_TOKEN}", "--header=Bearer ${env:GITHUB_TOKEN}", "${UNSET_VAR:-plain}"],
      "cwd": "${GH_DIR}",
      "env": { "AUTH": "Bearer ${GITHUB_TOKEN}" }
    }
  }
}"#,
    );
    let file = load(
        &path,
        &[("GITHUB_TOKEN", TOKEN), ("GH_BIN", BIN), ("GH_DIR", DIR)],
    )
    .unwrap();
    let gh = file.server("gh").unwrap();
    let shown = [
        ("Debug of the file", format!("{file:?}")),
        ("Debug of the config", format!("{gh:?}")),
        ("serialised config", serde_json::to_string(gh).unwrap()),
        (
            "serialised host",
            serde_json::to_string(&HostConfig::from_file(&file).unwrap()).unwrap(),
        ),
    ];
    for (what, text) in &shown {
        for secret in [TOKEN, BIN, DIR] {
            assert!(!text.contains(secret), "{what} shows {secret}: {text}");
        }
    }
    // What came from the file itself stays readable; the rest is revealed
    // only to the spawn.
    let redacted = json!({"redacted": true});
    assert_eq!(
        serde_json::to_value(gh).unwrap()["args"],
        json!(["--token", redacted, redacted, "plain"])
    );
    assert!(
        gh.transport.as_stdio().unwrap().args[1].is_secret()
            && !gh.transport.as_stdio().unwrap().args[0].is_secret()
            && !gh.transport.as_stdio().unwrap().args[3].is_secret()
    );
    assert_eq!(
        gh.transport.as_stdio().unwrap().args,
        [
            "--token",
            TOKEN,
            &format!("--header=Bearer {TOKEN}"),
            "plain"
        ]
    );
    assert!(
        gh.transport.as_stdio().unwrap().command.is_secret()
            && gh.transport.as_stdio().unwrap().command == BIN
    );
    let cd = gh.transport.as_stdio().unwrap().cd.as_ref().unwrap();
    assert!(cd.is_secret() && cd == DIR);
    assert!(env_of(&file, "gh", "AUTH").unwrap().is_secret());
    // Validation errors name the key, never the value.
    let e = gh.validate().unwrap_err();
    assert_eq!(e.key, "cd", "{e}");
    assert!(!format!("{e} {e:?}").contains("s3cr3t"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_env_file_syntax_error_names_the_line_and_column_never_the_value() {
    let dir = common::tempdir("cfg-secret-env-file");
    let cases = [
        format!("OK=1\nTOKEN=\"{TOKEN}\" trailing-{TOKEN}\n"),
        format!("TOKEN='{TOKEN}'{TOKEN}\n"),
        format!("TOKEN=\"{TOKEN}\\q{TOKEN}\"\n"),
        format!("TOKEN=\"{TOKEN}\n"),
        format!("{TOKEN}\n"),
    ];
    for (i, text) in cases.iter().enumerate() {
        write(&dir, &format!("{i}.env"), text);
        let config = write(
            &dir,
            &format!("{i}.json"),
            &format!(r#"{{"mcpServers": {{"s": {{"command": "x", "envFile": "{i}.env"}}}}}}"#),
        );
        let e = load(&config, &[]).unwrap_err();
        let shown = format!("{e} {e:?}");
        assert!(
            !shown.contains("s3cr3t"),
            "case {i} shows the value: {shown}"
        );
        assert!(
            matches!(e, ConfigFileError::EnvFileSyntax { .. }),
            "case {i}: {e:?}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
