//! Bounds where a server can push, seen through a `Host`: an endless or
//! cycling `nextCursor` ends the listing with an error naming the cap, in
//! bounded time; the host's start does not wait for it, and the other
//! servers serve.

use crate::common;
use crate::host_support;

use std::time::{Duration, Instant};

use conduit_mcp::host::{Host, HostConfig, HostEvent};
use host_support::{finish, until};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_or_cycling_tool_list_fails_with_its_cap_and_the_host_goes_on() {
    for (what, args, cap) in [
        ("endless", &["--endless-tools", "100"][..], "tools/list"),
        (
            "cycling",
            &["--endless-tools", "100", "--repeat-cursor"][..],
            "repeated a cursor",
        ),
    ] {
        // Long enough that a start that waited for the endless listing
        // shows, whatever the machine's load.
        let ready_timeout = Duration::from_secs(120);
        let config = HostConfig::new()
            .server("pusher", common::config(args))
            .server("fine", common::config(&[]))
            .ready_timeout(ready_timeout);
        let t = Instant::now();
        let host = Host::start(config).await.expect("the host starts");
        let mut events = host.events();
        let started = t.elapsed();
        // The listing's end, whether it came before or after the start.
        let error = match host
            .servers()
            .into_iter()
            .find(|s| s.name == "pusher")
            .and_then(|s| s.list_error)
        {
            Some(e) => e,
            None => match until(
                &mut events,
                |e| matches!(e, HostEvent::ListFailed { server, .. } if server == "pusher"),
            )
            .await
            {
                HostEvent::ListFailed { error, .. } => error,
                _ => unreachable!(),
            },
        };
        let listed = t.elapsed();
        let pushed = host.tools().iter().filter(|t| t.server == "pusher").count();
        eprintln!(
            "{what}: Host::start took {started:?}, listing failed after {listed:?} with {pushed} of its tools in the namespace: {error}"
        );
        let r = host.call_tool("fine__echo", json!({"text": "ok"})).await;
        assert_eq!(r.unwrap().joined_text(), "ok", "{what}");
        finish(host).await;
        assert!(
            started < ready_timeout / 2,
            "{what}: Host::start waited {started:?}"
        );
        assert!(error.contains(cap), "{what}: {error}");
    }
}
