//! The host's event stream: bounded per subscriber, whatever a server
//! makes it carry.

use crate::common;
use crate::host_support;

use conduit_mcp::host::{Host, HostConfig, HostEvent, HostEvents};
use conduit_mcp::{LifecycleEvent, StderrMode};
use host_support::{finish, PATIENCE};
use tokio::sync::mpsc::error::TryRecvError;

/// Reads `events` until `enough(lines seen, events dropped)` holds
/// (`false`) or the stream ends (`true`), counting the stderr lines in
/// `seen`.
async fn read_lines(
    events: &mut HostEvents,
    seen: &mut u64,
    enough: impl Fn(u64, u64) -> bool,
) -> bool {
    while !enough(*seen, events.dropped()) {
        match events.recv().await {
            Some(HostEvent::Lifecycle {
                event: LifecycleEvent::Stderr { .. },
                ..
            }) => *seen += 1,
            Some(_) => {}
            None => return true,
        }
    }
    false
}

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
    tokio::time::timeout(
        PATIENCE,
        read_lines(&mut reader, &mut seen, |seen, dropped| {
            seen + dropped >= lines
        }),
    )
    .await
    .expect("the lines came");
    // A fixed end: the host stopped, and the reading subscriber's stream
    // ended, so the events are gone with the host and no more can reach
    // `unread` while it is counted and drained.
    finish(host).await;
    let ended =
        tokio::time::timeout(PATIENCE, read_lines(&mut reader, &mut seen, |_, _| false)).await;
    assert_eq!(
        ended,
        Ok(true),
        "the host's event stream ended with the host"
    );
    let held_bytes = unread.held_bytes();
    let (mut held, mut bytes) = (0u64, 0usize);
    let end = loop {
        match unread.try_recv() {
            Ok(HostEvent::Lifecycle {
                event: LifecycleEvent::Stderr { line, .. },
                ..
            }) => {
                held += 1;
                bytes += line.len();
            }
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    let dropped = unread.dropped();
    eprintln!(
        "after {seen} lines read by one subscriber ({} dropped), the other held {held} \
         ({bytes} bytes of lines, {held_bytes} counted, limit {limit}) and dropped {dropped}",
        reader.dropped()
    );
    assert_eq!(
        end,
        TryRecvError::Disconnected,
        "every held event was drained"
    );
    assert!(held_bytes <= limit, "{held_bytes} bytes held unread");
    assert!(
        bytes < limit,
        "{held} events, {bytes} bytes of lines held unread"
    );
    assert!(
        bytes <= held_bytes && unread.held_bytes() == 0,
        "{bytes} bytes of lines drained, {held_bytes} counted, {} left counted",
        unread.held_bytes()
    );
    assert!(
        dropped > 0,
        "nothing dropped: the flood did not reach the bound"
    );
    assert!(held + dropped >= seen, "every event was kept or counted");
}
