//! The host's event stream: bounded per subscriber, whatever a server
//! makes it carry.

use crate::common;
use crate::host_support;

use conduit_mcp::host::{Host, HostConfig, HostEvent};
use conduit_mcp::{LifecycleEvent, StderrMode};
use host_support::{finish, PATIENCE};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_does_not_read_holds_a_bounded_share_of_a_stderr_flood() {
    // 8 MiB of 64-byte stderr lines, each an event with StderrMode::Log.
    let limit = 1 << 20;
    let chatty = common::config(&["--stderr-flood-mib", "8"]).stderr(StderrMode::Log);
    let host = Host::start(HostConfig::new().max_queued_event_bytes(limit))
        .await
        .unwrap();
    let mut unread = host.events();
    let mut reader = host.events();
    host.add("chatty", chatty).await.unwrap();
    let lines = 100_000;
    let mut seen = 0;
    tokio::time::timeout(PATIENCE, async {
        while seen + reader.dropped() < lines {
            match reader.recv().await {
                Some(HostEvent::Lifecycle {
                    event: LifecycleEvent::Stderr { .. },
                    ..
                }) => seen += 1,
                Some(_) => {}
                None => break,
            }
        }
    })
    .await
    .expect("the lines came");
    let held_bytes = unread.held_bytes();
    let (mut held, mut bytes) = (0u64, 0usize);
    while let Ok(e) = unread.try_recv() {
        if let HostEvent::Lifecycle {
            event: LifecycleEvent::Stderr { line, .. },
            ..
        } = e
        {
            held += 1;
            bytes += line.len();
        }
    }
    let dropped = unread.dropped();
    eprintln!(
        "after {seen} lines read by one subscriber ({} dropped), the other held {held} \
         ({bytes} bytes of lines, {held_bytes} counted, limit {limit}) and dropped {dropped}",
        reader.dropped()
    );
    assert!(held_bytes <= limit, "{held_bytes} bytes held unread");
    assert!(
        bytes < limit,
        "{held} events, {bytes} bytes of lines held unread"
    );
    assert!(
        dropped > 0,
        "nothing dropped: the flood did not reach the bound"
    );
    assert!(held + dropped >= seen, "every event was kept or counted");
    finish(host).await;
}
