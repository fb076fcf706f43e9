//! Secrets from a config file (`${VAR}` in `command`, `args`, `cwd`, `env`)
//! run through a whole `Host`: a spawn that fails, a server that keeps
//! dying and is given up, the stop. No secret may show in the host's
//! errors, summaries, events, Debug output, or tracing logs at any level.
//! On a current-thread runtime, so that every task logs to this test's
//! subscriber.

use crate::common;

use std::time::Duration;

use conduit_mcp::config_file::ServersFile;
use conduit_mcp::host::{Host, HostConfig};
use conduit_mcp::Status;

const TOKEN: &str = "ghp_s3cr3t_token_8d2e";
const BIN: &str = "/opt/s3cr3t-bin-4b1d/github-mcp";
const DIR_PART: &str = "s3cr3t-dir-77c0";

#[tokio::test(flavor = "current_thread")]
async fn secrets_of_a_config_file_never_show_through_a_host() {
    let (cap, _guard) = common::capture_trace();

    let dir = common::tempdir("cfg-secret-host");
    let cwd = dir.join(DIR_PART);
    std::fs::create_dir_all(&cwd).unwrap();
    let cwd_text = cwd.to_str().unwrap().to_owned();
    let text = serde_json::json!({
        "mcpServers": {
            "gh": { "command": "${GH_BIN}", "args": ["--token", "${TOKEN}"] },
            "fx": {
                "command": common::fixture(),
                "args": ["--exit-after", "1", "--exit-code", "7", "--", "--token=${TOKEN}"],
                "cwd": "${FX_DIR}",
                "env": { "AUTH": "Bearer ${TOKEN}" }
            },
            "ok": {
                "command": common::fixture(),
                "args": ["--", "${TOKEN}"],
                "cwd": "${FX_DIR}"
            }
        }
    })
    .to_string();
    let path = dir.join(".mcp.json");
    std::fs::write(&path, &text).unwrap();
    let vars = [
        ("TOKEN", TOKEN.to_owned()),
        ("GH_BIN", BIN.to_owned()),
        ("FX_DIR", cwd_text.clone()),
    ];
    let lookup = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
    let file = ServersFile::parse(&text, &path, &lookup).unwrap();
    let mut config = HostConfig::from_file(&file).unwrap();
    config = config.ready_timeout(Duration::from_secs(10));
    let mut shown = vec![format!("{config:?}")];
    let started = Host::start(config).await;
    let host = match started {
        Ok(host) => host,
        Err(e) => panic!("the host did not start: {e}"),
    };
    let mut events = host.events();
    // `fx` dies after every answer: wait for its give-up.
    let fx = host.client("fx").expect("fx in the host");
    common::wait_status(&fx, Duration::from_secs(20), Status::is_final).await;
    // `ok` runs with the token in its argv: the server does get it.
    let ok = host.client("ok").expect("ok in the host");
    let info = ok.request("fixture/info", None).await.unwrap();
    assert!(info["args"].to_string().contains(TOKEN), "{info}");
    shown.push(format!("{:?}", host.servers()));
    for s in host.servers() {
        shown.push(format!("{:?} {:?}", s.status, s.list_error));
    }
    shown.push(format!("{host:?}"));
    shown.push(format!(
        "{:?}",
        host.call_tool("gh__x", serde_json::json!({})).await
    ));
    let stopped = crate::common::shutdown(host.stop().wait()).await;
    shown.push(format!("{stopped:?}"));
    while let Ok(e) = events.try_recv() {
        shown.push(format!("{e:?}"));
    }
    let logs = cap.text();
    assert!(logs.contains("gh") && logs.contains("fx"), "nothing logged");
    shown.push(logs);
    let _ = std::fs::remove_dir_all(&dir);
    let leaks: Vec<&String> = shown
        .iter()
        .filter(|s| s.contains(TOKEN) || s.contains(BIN) || s.contains(DIR_PART))
        .collect();
    assert!(
        leaks.is_empty(),
        "{} outputs show a secret:\n{}",
        leaks.len(),
        leaks
            .iter()
            .flat_map(|s| s.lines())
            .filter(|l| l.contains(TOKEN) || l.contains(BIN) || l.contains(DIR_PART))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
