//! The host's reviver: one task per host that starts again, after their
//! pause ([`HostConfig::revive_after`](super::HostConfig::revive_after)),
//! the servers that gave up or could not start, as an OTP supervisor
//! restarted by its own parent restarts its `:permanent` children.
//!
//! The catalog keeps when each revive is due; this task wakes at the
//! earliest one, or whenever the catalog changed (a server went down, was
//! removed, or the host stopped), takes the due ones (each reserved again
//! in place) and starts them as the host's first start does: a start that
//! fails keeps the server with its reason and a new revive due. It ends
//! with the host.

use std::sync::Arc;

use ractor::ActorCell;
use tokio::task::JoinHandle;

use super::catalog::HostShared;
use super::start::{self, OnFailure};

/// Starts the reviver of the host of `shared`, whose clients are linked
/// under `parent`.
pub(super) fn spawn(shared: Arc<HostShared>, parent: ActorCell) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = shared.changes();
        loop {
            changes.borrow_and_update();
            let Some(revives) = shared.revives_due() else {
                return;
            };
            let (due, next) = revives.into_parts();
            for (ticket, config) in due {
                // Detached: its outcome is in the catalog, and a host
                // stopped meanwhile stops the client it brings.
                drop(start::spawn(
                    &shared,
                    parent.clone(),
                    ticket,
                    config,
                    OnFailure::Keep,
                ));
            }
            let wake = async {
                match next {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                () = wake => {}
            }
        }
    })
}
