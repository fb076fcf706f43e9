//! Child specs: what a [`ClientGroup`](super::ClientGroup) starts, and
//! when it starts it again.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ractor::{ActorCell, ActorProcessingErr};

use super::{ClientGroup, GroupSpec};

/// When a child is restarted after it ended (OTP's restart type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Restart {
    /// Always: whether it failed or stopped (OTP `:permanent`, the default).
    #[default]
    Permanent,
    /// Only after a failure (`ActorFailed`, or killed): a client that gave
    /// up is restarted, a client that was stopped is not (OTP `:transient`).
    Transient,
    /// Never, and it is not restarted with its siblings either (OTP
    /// `:temporary`).
    Temporary,
}

/// The future of a child's start.
type StartFuture = Pin<Box<dyn Future<Output = Result<ActorCell, ActorProcessingErr>> + Send>>;

/// The start function of a child.
type StartFn = Arc<dyn Fn(ActorCell) -> StartFuture + Send + Sync>;

/// The time a child is given to stop before it is killed, by default (OTP's
/// default `shutdown` of a worker).
pub const DEFAULT_SHUTDOWN: Duration = Duration::from_secs(5);

/// One child of a [`ClientGroup`]: its id, how to start it, its
/// [`Restart`] type and its shutdown time (OTP's child spec).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use conduit_mcp::client::{ChildSpec, ClientSpec, Restart};
/// use conduit_mcp::ClientConfig;
///
/// let child = ChildSpec::client(ClientSpec::new(ClientConfig::new("uvx").name("time")))
///     .restart(Restart::Transient)
///     .shutdown(Duration::from_secs(1));
/// assert_eq!(child.id(), "time");
/// ```
#[derive(Clone)]
pub struct ChildSpec {
    id: String,
    restart: Restart,
    shutdown: Duration,
    start: StartFn,
}

impl std::fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildSpec")
            .field("id", &self.id)
            .field("restart", &self.restart)
            .field("shutdown", &self.shutdown)
            .finish_non_exhaustive()
    }
}

impl ChildSpec {
    /// A group of its own (its id is the group's name): a meltdown of
    /// that group is a failure of this child.
    pub fn group(spec: GroupSpec) -> Self {
        Self::actor(spec.name().to_owned(), move |parent| {
            let spec = spec.clone();
            async move { Ok(ClientGroup::start(spec, Some(parent)).await?.actor()) }
        })
    }

    /// Any actor: `start` spawns it linked under the group it is given
    /// (`Actor::spawn_linked(None, actor, args, parent)`) and returns its
    /// cell. An error is a failed start, counted as a restart.
    ///
    /// ```
    /// use conduit_mcp::client::ChildSpec;
    /// use ractor::Actor;
    ///
    /// struct Worker;
    /// impl Actor for Worker {
    ///     type Msg = ();
    ///     type State = ();
    ///     type Arguments = ();
    ///     async fn pre_start(
    ///         &self,
    ///         _: ractor::ActorRef<()>,
    ///         _: (),
    ///     ) -> Result<(), ractor::ActorProcessingErr> {
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let worker = ChildSpec::actor("worker", |parent| async move {
    ///     let (actor, _) = Actor::spawn_linked(None, Worker, (), parent).await?;
    ///     Ok(actor.get_cell())
    /// });
    /// assert_eq!(worker.id(), "worker");
    /// ```
    pub fn actor<F, Fut>(id: impl Into<String>, start: F) -> Self
    where
        F: Fn(ActorCell) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ActorCell, ActorProcessingErr>> + Send + 'static,
    {
        Self {
            id: id.into(),
            restart: Restart::default(),
            shutdown: DEFAULT_SHUTDOWN,
            start: Arc::new(move |parent| Box::pin(start(parent))),
        }
    }

    /// Sets the restart type (default [`Restart::Permanent`]).
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// Sets the time the child is given to stop when the group stops it
    /// (a sibling's restart, the group's stop or meltdown) before it is
    /// killed (default [`DEFAULT_SHUTDOWN`], 5 s). Killing a client still
    /// shuts its server down.
    pub fn shutdown(mut self, shutdown: Duration) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// The child's id, unique within its group.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The restart type.
    pub fn restart_type(&self) -> Restart {
        self.restart
    }

    /// The shutdown time.
    pub(crate) fn shutdown_time(&self) -> Duration {
        self.shutdown
    }

    /// Starts the child under `parent`.
    pub(crate) fn start(&self, parent: ActorCell) -> StartFuture {
        (self.start)(parent)
    }
}
