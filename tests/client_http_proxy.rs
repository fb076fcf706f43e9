//! Proxies from the environment (`HTTP_PROXY`), and turning them off. Its
//! own test binary: the environment is the process's.

#[path = "client_http_support/mod.rs"]
mod http_support;
#[path = "server_http_support/mod.rs"]
mod support;

use std::sync::atomic::Ordering;

use conduit_mcp::{Client, ClientConfig, HttpOptions};
use http_support::Proxy;
use support::{config, start, PATIENCE};

#[tokio::test]
async fn requests_go_through_the_environment_s_proxy_unless_told_not_to() {
    let server = start(config()).await;
    // A TCP relay to the server stands in for an HTTP proxy: a request in
    // absolute form reaches the server through it all the same.
    let proxy = Proxy::start(server.addr).await;
    for var in [
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
        "http_proxy",
    ] {
        std::env::remove_var(var);
    }
    std::env::set_var("HTTP_PROXY", format!("http://{}", proxy.addr));
    let client = Client::start(ClientConfig::http(&server.url))
        .await
        .unwrap();
    client.ready(PATIENCE).await.unwrap();
    assert!(!client.list_tools().await.unwrap().is_empty());
    client.stop().wait().await;
    let through = proxy.accepted.load(Ordering::SeqCst);
    assert!(through >= 1, "no connection went through the proxy");
    // Turned off: straight to the server.
    let mut http = HttpOptions::new(&server.url);
    http.proxy_from_env = false;
    let client = Client::start(ClientConfig::new("").http_options(http))
        .await
        .unwrap();
    client.ready(PATIENCE).await.unwrap();
    assert!(!client.list_tools().await.unwrap().is_empty());
    client.stop().wait().await;
    assert_eq!(proxy.accepted.load(Ordering::SeqCst), through);
    std::env::remove_var("HTTP_PROXY");
}
