//! Helpers shared by the host tests: waiting for an event, and checking
//! that a stop left no process. Needs `mod common;` beside it.
#![allow(dead_code)]

use std::time::Duration;

use conduit_mcp::host::{Host, HostEvent, HostEvents, ServerShutdown};

use super::common::alive;

/// How long a test waits for an event.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Receives events until `pred` holds for one (within [`PATIENCE`]);
/// returns it.
pub async fn until(events: &mut HostEvents, mut pred: impl FnMut(&HostEvent) -> bool) -> HostEvent {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let e = events.recv().await.expect("host events go on");
            if pred(&e) {
                return e;
            }
        }
    })
    .await
    .expect("the event came in time")
}

/// Every process the shutdowns report is gone, its group too.
pub fn assert_all_gone(shutdowns: &[ServerShutdown]) {
    for s in shutdowns {
        assert!(!s.reports.is_empty(), "{}: no report", s.name);
        for r in &s.reports {
            assert!(!alive(r.pid), "{}: {} survived", s.name, r.pid);
            assert!(!r.group_survivors, "{}: {r:?}", s.name);
        }
    }
}

/// Stops the host, waits, and checks that no process is left.
pub async fn finish(host: Host) {
    assert_all_gone(&crate::common::shutdown(host.stop().wait()).await);
}

/// Receives events until the server `server` was listed; returns that
/// event.
pub async fn listed(events: &mut HostEvents, server: &str) -> HostEvent {
    until(
        events,
        |e| matches!(e, HostEvent::Listed { server: s, .. } if s == server),
    )
    .await
}
