//! Starting one server of a host, in a task of the host's rather than of
//! the caller's future.
//!
//! `Client::start_with` is not cut short when the caller gives up (a
//! timeout around [`Host::start`](super::Host::start), a dropped
//! [`Host::add`](super::Host::add)): it runs to
//! its end in its own task, and then either fills its reservation or,
//! the reservation being gone, stops the client it got. A dropped `add`
//! takes its reservation back ([`CancelOnDrop`]); a dropped `start`
//! drops the last host handle, which stops the host. Either way nothing
//! it started stays.

use std::sync::Arc;

use ractor::ActorCell;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use super::catalog::{HostShared, Ticket};
use super::{watcher, HostError};
use crate::client::{Client, ClientConfig, StartOptions};

/// What becomes of a server that cannot start.
pub(super) enum OnFailure {
    /// Kept, with its reason (a server of the host's config).
    Keep,
    /// Forgotten (an [`add`](super::Host::add): its caller gets the error).
    Forget,
    /// Forgotten, its next use to start it again (a lazy server's first
    /// use).
    StaysLazy,
}

/// Starts the server of `ticket` with `config` in a task of its own, its
/// client linked under `parent` (the host's actor).
pub(super) fn spawn(
    shared: &Arc<HostShared>,
    parent: ActorCell,
    ticket: Ticket,
    mut config: ClientConfig,
    on_failure: OnFailure,
) -> JoinHandle<Result<(), HostError>> {
    let shared = shared.clone();
    tokio::spawn(async move {
        if config.get_name().is_none() {
            config = config.name(ticket.name());
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let opts = StartOptions {
            handler: shared.handler_of(ticket.name()),
            supervisor: Some(parent),
            events: Some(tx),
        };
        match Client::start_with(config, opts).await {
            Ok(client) => {
                info!(server = %ticket.name(), "host: server started");
                let watcher = watcher::spawn(shared.clone(), ticket.clone(), client.clone(), rx);
                shared.fill(&ticket, client, watcher)?;
                shared.touch();
                Ok(())
            }
            Err(source) => {
                warn!(server = %ticket.name(), error = %source, "host: server could not start");
                let reason = format!("{}: {source}", super::COULD_NOT_START);
                match on_failure {
                    OnFailure::Keep => shared.failed(&ticket, reason, true),
                    OnFailure::Forget => shared.failed(&ticket, reason, false),
                    OnFailure::StaysLazy => shared.failed_lazy(&ticket, &reason),
                }
                Err(HostError::Start {
                    server: ticket.into_name(),
                    source,
                })
            }
        }
    })
}

/// The result of a start; a panic in it is the caller's, as if the start
/// had run in its own future.
pub(super) async fn join(start: JoinHandle<Result<(), HostError>>) -> Result<(), HostError> {
    match start.await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Cancelled: only the runtime's shutdown cancels it.
        Err(_) => Err(HostError::Stopped),
    }
}

/// Takes an `add`'s server back out of the host if its future is dropped
/// before it returned.
pub(super) struct CancelOnDrop {
    shared: Arc<HostShared>,
    ticket: Option<Ticket>,
}

impl CancelOnDrop {
    pub(super) fn new(shared: &Arc<HostShared>, ticket: Ticket) -> Self {
        Self {
            shared: shared.clone(),
            ticket: Some(ticket),
        }
    }

    /// The add returned: its outcome stands.
    pub(super) fn disarm(mut self) {
        self.ticket = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.shared.cancel(&ticket);
        }
    }
}
