//! Who holds a contested resource URI over time: the server that listed it
//! first keeps it through its own restarts, the other claimant's restarts,
//! its `list_changed` re-listings and its `remove` / `add`; it passes on
//! only when its holder stops listing it or leaves the host. Both servers
//! list the URI from the start (`--resource`), so a restart lists it again.

use crate::common;
use crate::host_support;

use std::time::Duration;

use conduit_mcp::host::{Host, HostConfig, HostEvent};
use conduit_mcp::Status;
use host_support::{finish, until};
use serde_json::json;

const URI: &str = "shared://data";

fn claimant() -> conduit_mcp::ClientConfig {
    common::config(&["--resource", URI]).max_reconnects(10)
}

/// The pid of the server whose answer `host.read_resource(URI)` got.
async fn reader(host: &Host) -> u32 {
    let r = host.read_resource(URI).await.expect("the URI reads");
    let text = r.contents[0].as_text().unwrap_or_default().to_owned();
    text.rsplit(' ').next().unwrap().parse().unwrap()
}

fn pid(host: &Host, server: &str) -> u32 {
    host.client(server).unwrap().pid().unwrap()
}

/// Kills `server`'s process (it exits on request) and waits until the
/// host has listed its next one.
async fn restart(host: &Host, server: &str) {
    let old = pid(host, server);
    let mut events = host.events();
    let client = host.client(server).unwrap();
    let _ = client
        .request("fixture/exit", Some(json!({ "code": 9 })))
        .await;
    common::wait_status(
        &client,
        Duration::from_secs(10),
        |s| matches!(s, Status::Ready(r) if r.pid != Some(old)),
    )
    .await;
    until(
        &mut events,
        |e| matches!(e, HostEvent::Listed { server: s, .. } if s == server),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_uri_keeps_its_first_holder_through_restarts_relistings_and_re_adds() {
    let host = Host::start(HostConfig::new().server("first", claimant()))
        .await
        .unwrap();
    let mut events = host.events();
    host.add("second", claimant()).await.unwrap();
    until(&mut events, |e| matches!(e, HostEvent::Collision(_))).await;
    let mut steps = Vec::new();
    let mut check = |step: &str, reader: u32, first: u32| {
        steps.push(format!("{step}: read by {reader} (first is {first})"));
        reader == first
    };
    let mut ok = check("at the start", reader(&host).await, pid(&host, "first"));

    restart(&host, "first").await;
    ok &= check("first restarted", reader(&host).await, pid(&host, "first"));

    restart(&host, "second").await;
    ok &= check("second restarted", reader(&host).await, pid(&host, "first"));

    host.client("second")
        .unwrap()
        .request(
            "fixture/add_resource",
            Some(json!({ "uri": "second://own" })),
        )
        .await
        .unwrap();
    until(
        &mut events,
        |e| matches!(e, HostEvent::Listed { server, resources: 2, .. } if server == "second"),
    )
    .await;
    ok &= check("second re-listed", reader(&host).await, pid(&host, "first"));

    host.remove("second").unwrap().wait().await;
    host.add("second", claimant()).await.unwrap();
    ok &= check(
        "second removed and added",
        reader(&host).await,
        pid(&host, "first"),
    );

    // Many restarts of the holder in a row, reads in between.
    for round in 0..5 {
        restart(&host, "first").await;
        ok &= check(
            &format!("first restarted again ({round})"),
            reader(&host).await,
            pid(&host, "first"),
        );
    }
    let holders: Vec<String> = host
        .resources()
        .iter()
        .filter(|r| r.uri == URI)
        .map(|r| r.server.clone())
        .collect();
    // Its holder gone: the URI passes on.
    host.remove("first").unwrap().wait().await;
    let after = host.resources();
    finish(host).await;
    assert!(ok, "the URI changed owner:\n{}", steps.join("\n"));
    assert_eq!(holders, ["first"]);
    assert!(
        after.iter().any(|r| r.uri == URI && r.server == "second"),
        "{after:?}"
    );
}
