//! The child spec of one client: how a parent starts it, and starts it
//! again after it gave up.

use std::sync::Arc;

use ractor::ActorCell;
use tokio::sync::mpsc;

use super::events::LifecycleEvent;
use super::group::ChildSpec;
use super::registry::{AlreadyRegistered, ClientRegistry, Slot};
use super::responder::ClientHandler;
use super::{Client, ClientConfig, StartError, StartOptions};

/// How to start one client, as often as its parent restarts it: OTP's
/// child spec of a client. Clones are the same child: they share its
/// current client and its registered name.
///
/// [`start`](Self::start) runs a new client (stopping the one this spec
/// started before, if it still runs); the spec holds it, so it runs until
/// it is stopped, gives up, or its parent actor ends, whoever else holds
/// it. [`register`](Self::register) gives the spec a name in an
/// application's [`ClientRegistry`], which then resolves to the client
/// started last. In a [`ClientGroup`](super::ClientGroup), use it through
/// [`ChildSpec::client`](super::ChildSpec::client); under a supervisor of
/// your own, call `start(Some(myself.get_cell()))` again when the client's
/// actor fails (a give-up reaches you as `ActorFailed` carrying
/// [`Error::GaveUp`](crate::Error::GaveUp)).
///
/// # Examples
///
/// ```no_run
/// use conduit_mcp::client::{ClientRegistry, ClientSpec};
/// use conduit_mcp::ClientConfig;
///
/// # async fn demo(names: ClientRegistry) -> Result<(), Box<dyn std::error::Error>> {
/// let spec = ClientSpec::new(ClientConfig::new("uvx").arg("mcp-server-time").name("time"))
///     .register(&names)?;
/// let first = spec.start(None).await?;
/// // ... it gave up: start it again; `names.whereis("time")` finds the new one.
/// let second = spec.start(None).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ClientSpec {
    config: ClientConfig,
    handler: Option<Arc<dyn ClientHandler>>,
    events: Option<mpsc::UnboundedSender<LifecycleEvent>>,
    slot: Arc<Slot>,
}

impl std::fmt::Debug for ClientSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSpec")
            .field("name", &self.name())
            .field("handler", &self.handler.is_some())
            .finish_non_exhaustive()
    }
}

impl ClientSpec {
    /// A spec that starts clients of `config`, with no handler, no event
    /// subscriber and no registered name.
    pub fn new(config: ClientConfig) -> Self {
        Self {
            config,
            handler: None,
            events: None,
            slot: Slot::new(),
        }
    }

    /// Sets the handler of every client started (see
    /// [`StartOptions::handler`]).
    pub fn handler(mut self, handler: impl ClientHandler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// Sends the lifecycle events of every client started to `events`,
    /// from each one's first spawn on, in one stream (see
    /// [`StartOptions::events`]). A client's final event
    /// ([`GaveUp`](LifecycleEvent::GaveUp) or
    /// [`Stopped`](LifecycleEvent::Stopped)) is then followed by the events
    /// of the next client.
    pub fn events(mut self, events: mpsc::UnboundedSender<LifecycleEvent>) -> Self {
        self.events = Some(events);
        self
    }

    /// Registers the spec in `registry` under its [`name`](Self::name):
    /// the name then resolves to the client the spec started last. Refused
    /// while another spec that claimed the name exists.
    pub fn register(self, registry: &ClientRegistry) -> Result<Self, AlreadyRegistered> {
        registry.claim(&self.name(), &self.slot)?;
        Ok(self)
    }

    /// The clients' name ([`ClientConfig::display_name`]): the child's id
    /// in a group and its registered name.
    pub fn name(&self) -> String {
        self.config.display_name()
    }

    /// The client this spec started last, running or not.
    pub fn current(&self) -> Option<Client> {
        self.slot.current()
    }

    /// Stops the client this spec started before, if it still runs, then
    /// starts a new one, linked under `parent` when given (see
    /// [`Client::start_with`]), and makes it the spec's current client.
    ///
    /// # Errors
    ///
    /// As [`Client::start_with`]: a refused option, or a first server
    /// that could not be spawned.
    pub async fn start(&self, parent: Option<ActorCell>) -> Result<Client, StartError> {
        if let Some(old) = self.slot.current() {
            // Final at once; the old server's shutdown runs detached.
            drop(old.stop());
        }
        let mut options = StartOptions::new();
        options.handler = self.handler.clone();
        options.events = self.events.clone();
        options.supervisor = parent;
        let client = Client::start_with(self.config.clone(), options).await?;
        self.slot.set(client.clone());
        Ok(client)
    }
}

impl ChildSpec {
    /// A client, started by `spec` (its id is the client's name). Set
    /// [`max_reconnects`](crate::ClientConfig::max_reconnects) to 0 to leave
    /// every restart to the group: the first death of the server is then a
    /// give-up, that is a failure of the child.
    pub fn client(spec: ClientSpec) -> Self {
        Self::actor(spec.name(), move |parent| {
            let spec = spec.clone();
            async move { Ok(spec.start(Some(parent)).await?.supervisor()) }
        })
    }
}
