//! A `Secret` never appears in Debug, Display, errors or any tracing output.

mod common;

use std::time::Duration;

use common::Capture;
use conduit_mcp::{Client, ClientConfig, Secret};
use serde_json::json;

const SECRET: &str = "s3cr3t-value-4f9a1c";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_leak() {
    let cap = Capture::default();
    let writer = cap.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .init();

    let cfg = common::config(&[]).env("API_TOKEN", Secret::new(SECRET));
    assert!(!format!("{cfg:?}").contains(SECRET));
    let client = Client::start(cfg.clone()).await.unwrap();
    // The child does receive it.
    let info = client.request("fixture/info", None).await.unwrap();
    assert_eq!(info["env"]["API_TOKEN"], SECRET);
    // Errors and every lifecycle step, at every level.
    let e = client
        .request("no/such", Some(json!({})))
        .await
        .unwrap_err();
    assert!(!e.to_string().contains(SECRET));
    assert!(!format!("{e:?}").contains(SECRET));
    assert!(!format!("{client:?}").contains(SECRET));
    let _ = client
        .request("fixture/exit", Some(json!({"code": 3})))
        .await;
    client.ready(Duration::from_secs(10)).await.unwrap();
    crate::common::shutdown(client.stop().wait()).await;
    // A failing start with the secret in the config.
    let bad = ClientConfig::new("missing-binary-xyz").env("API_TOKEN", Secret::new(SECRET));
    let e = Client::start(bad).await.unwrap_err();
    assert!(!format!("{e} {e:?}").contains(SECRET));

    let logs = cap.text();
    assert!(
        logs.contains("server process spawned"),
        "tracing captured nothing"
    );
    assert!(logs.contains("server shut down"));
    assert!(!logs.contains(SECRET), "secret found in logs");
}

/// A token from the environment in `args` (the usual pattern of config
/// files) reaches the server's argv, and nothing else: not the logs, not
/// the client's Debug, not a spawn error. On a current-thread runtime, so
/// that every task logs to this test's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn a_token_in_the_arguments_reaches_the_server_and_nothing_else() {
    let (cap, _guard) = common::capture_trace();

    let dir = common::tempdir("secret-args");
    let path = dir.join("mcp.json");
    let text = json!({
        "mcpServers": {
            "fx": {
                "command": common::fixture(),
                "args": ["--print-args", "--", "--token", "${CONDUIT_TEST_ARG_TOKEN}"],
                "conduit": { "stderr": "discard", "stdin_grace_ms": 500, "term_grace_ms": 500 }
            },
            "missing": { "command": "/no/such/dir/server", "args": ["${CONDUIT_TEST_ARG_TOKEN}"] }
        }
    });
    std::fs::write(&path, text.to_string()).unwrap();
    let token = |k: &str| (k == "CONDUIT_TEST_ARG_TOKEN").then(|| SECRET.to_owned());
    let file = conduit_mcp::config_file::ServersFile::parse(
        &std::fs::read_to_string(&path).unwrap(),
        &path,
        &token,
    )
    .unwrap();
    let cfg = file.server("fx").unwrap().clone();
    assert!(!format!("{cfg:?}").contains(SECRET), "{cfg:?}");
    let text = serde_json::to_string(&cfg).unwrap();
    assert!(
        !text.contains(SECRET) && text.contains(r#"{"redacted":true}"#),
        "{text}"
    );
    let e = serde_json::from_str::<ClientConfig>(&text).unwrap_err();
    assert!(e.to_string().contains("redacted"), "{e}");
    let client = Client::start(cfg).await.unwrap();
    let info = client.request("fixture/info", None).await.unwrap();
    assert_eq!(
        info["args"],
        json!(["--print-args", "--", "--token", SECRET]),
        "the server gets the value"
    );
    assert!(!format!("{client:?}").contains(SECRET));
    crate::common::shutdown(client.stop().wait()).await;
    let e = Client::start(file.server("missing").unwrap().clone())
        .await
        .unwrap_err();
    assert!(!format!("{e} {e:?}").contains(SECRET), "{e}");

    // The same from code: a secret command and argument.
    let cfg = ClientConfig::new(Secret::new("/no/such/dir/server"))
        .arg("--token")
        .arg(Secret::new(SECRET));
    assert!(!format!("{cfg:?}").contains(SECRET));
    let e = Client::start(cfg).await.unwrap_err();
    let shown = format!("{e} {e:?}");
    assert!(
        !shown.contains(SECRET) && !shown.contains("/no/such"),
        "{shown}"
    );

    let logs = cap.text();
    assert!(
        logs.contains("server process spawned"),
        "tracing captured nothing"
    );
    assert!(!logs.contains(SECRET), "secret found in logs");
    let _ = std::fs::remove_dir_all(dir);
}
