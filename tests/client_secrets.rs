//! A `Secret` never appears in Debug, Display, errors or any tracing output.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conduit_mcp::{Client, ClientConfig, Secret};
use serde_json::json;

const SECRET: &str = "s3cr3t-value-4f9a1c";

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

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
    client.stop().wait().await;
    // A failing start with the secret in the config.
    let bad = ClientConfig::new("missing-binary-xyz").env("API_TOKEN", Secret::new(SECRET));
    let e = Client::start(bad).await.unwrap_err();
    assert!(!format!("{e} {e:?}").contains(SECRET));

    let logs = String::from_utf8(cap.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("server process spawned"),
        "tracing captured nothing"
    );
    assert!(logs.contains("server shut down"));
    assert!(!logs.contains(SECRET), "secret found in logs");
}
