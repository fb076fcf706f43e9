//! Registered names: the application's own registry, where a name resolves
//! to the client running under it now, as a registered process does in OTP.
//!
//! A name belongs to one [`ClientSpec`](super::ClientSpec) (and its
//! clones) for as long as the spec exists: each start of the spec puts its
//! new client under the name, so holders of the name find the restarted
//! client. The registry is a value the application creates and passes
//! around, never a process-wide table: two registries never collide.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::watch;

use super::Client;
use crate::sync::lock;

/// The client a [`ClientSpec`](super::ClientSpec) started last: what its
/// name resolves to.
pub(crate) struct Slot {
    current: watch::Sender<Option<Client>>,
}

impl Slot {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            current: watch::channel(None).0,
        })
    }

    /// The client started last, running or not.
    pub(crate) fn current(&self) -> Option<Client> {
        self.current.borrow().clone()
    }

    /// Makes `client` the current one.
    pub(crate) fn set(&self, client: Client) {
        self.current.send_replace(Some(client));
    }
}

/// A client if it still runs (its status is not final).
fn running(client: Option<&Client>) -> Option<Client> {
    client.filter(|c| !c.status().is_final()).cloned()
}

/// Why [`ClientSpec::register`](super::ClientSpec::register) refused a name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the name `{name}` is registered to another client spec that still exists")]
#[non_exhaustive]
pub struct AlreadyRegistered {
    /// The name asked for.
    pub name: String,
}

/// The application's names for its clients. Clones share the same names.
///
/// A name is claimed by [`ClientSpec::register`](super::ClientSpec::register)
/// and resolves, through [`whereis`](Self::whereis), to the client the spec
/// started last while that client runs: after a parent restarts the spec,
/// the name resolves to the new client. The name is free again once every
/// clone of the spec is dropped.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use conduit_mcp::client::{ClientRegistry, ClientSpec};
/// use conduit_mcp::ClientConfig;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let names = ClientRegistry::new();
/// let spec = ClientSpec::new(ClientConfig::new("uvx").arg("mcp-server-time").name("time"))
///     .register(&names)?;
/// spec.start(None).await?;
/// // Anywhere the registry is held, across restarts of the spec:
/// if let Some(time) = names.wait_for("time", Duration::from_secs(5)).await {
///     time.request("tools/list", None).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ClientRegistry {
    inner: Arc<Names>,
}

struct Names {
    specs: Mutex<HashMap<String, Weak<Slot>>>,
    /// Changed at every claim, for [`ClientRegistry::wait_for`] on a name
    /// not claimed yet.
    claims: watch::Sender<()>,
}

impl Default for ClientRegistry {
    fn default() -> Self {
        Self {
            inner: Arc::new(Names {
                specs: Mutex::new(HashMap::new()),
                claims: watch::channel(()).0,
            }),
        }
    }
}

impl std::fmt::Debug for ClientRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRegistry")
            .field("names", &self.names())
            .finish()
    }
}

impl ClientRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The client registered under `name`, if it runs now (its status is
    /// not final); `None` while its parent restarts it, and for a name
    /// nobody claimed. Like OTP's `whereis`.
    pub fn whereis(&self, name: &str) -> Option<Client> {
        running(self.slot(name)?.current.borrow().as_ref())
    }

    /// Waits, up to `timeout`, until a running client is registered under
    /// `name` (at once if one is), and returns it: what a holder of the
    /// name calls while the client's parent restarts it. `None` if none
    /// came within `timeout`.
    ///
    /// Cancel safety: cancel safe.
    pub async fn wait_for(&self, name: &str, timeout: Duration) -> Option<Client> {
        tokio::time::timeout(timeout, self.next_running(name))
            .await
            .ok()
    }

    async fn next_running(&self, name: &str) -> Client {
        let mut claims = self.inner.claims.subscribe();
        loop {
            claims.borrow_and_update();
            // The receiver only: holding the slot would keep its spec's
            // name claimed.
            let current = self.slot(name).map(|s| s.current.subscribe());
            match current {
                Some(mut current) => loop {
                    if let Some(c) = running(current.borrow_and_update().as_ref()) {
                        return c;
                    }
                    // The next start, or the spec's end (then the name
                    // may be claimed by another).
                    if current.changed().await.is_err() {
                        break;
                    }
                },
                None => {
                    // The registry holds the sender: this never ends
                    // while `self` lives.
                    let _ = claims.changed().await;
                }
            }
        }
    }

    /// The names claimed by specs that still exist, sorted.
    pub fn names(&self) -> Vec<String> {
        let specs = lock(&self.inner.specs);
        let mut names: Vec<String> = specs
            .iter()
            .filter(|(_, s)| s.strong_count() > 0)
            .map(|(n, _)| n.clone())
            .collect();
        names.sort();
        names
    }

    fn slot(&self, name: &str) -> Option<Arc<Slot>> {
        lock(&self.inner.specs).get(name)?.upgrade()
    }

    /// Claims `name` for `slot`: refused while another spec that claimed
    /// it exists.
    pub(crate) fn claim(&self, name: &str, slot: &Arc<Slot>) -> Result<(), AlreadyRegistered> {
        let mut specs = lock(&self.inner.specs);
        specs.retain(|_, s| s.strong_count() > 0);
        if let Some(held) = specs.get(name) {
            if !std::ptr::eq(held.as_ptr(), Arc::as_ptr(slot)) {
                return Err(AlreadyRegistered {
                    name: name.to_owned(),
                });
            }
        }
        specs.insert(name.to_owned(), Arc::downgrade(slot));
        drop(specs);
        self.inner.claims.send_replace(());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_refused_while_its_spec_exists_and_free_after() {
        let names = ClientRegistry::new();
        let first = Slot::new();
        names.claim("time", &first).unwrap();
        // The same spec again: its own name.
        names.claim("time", &first).unwrap();
        let second = Slot::new();
        assert_eq!(
            names.claim("time", &second),
            Err(AlreadyRegistered {
                name: "time".into()
            })
        );
        assert_eq!(names.names(), ["time"]);
        drop(first);
        assert!(names.names().is_empty());
        names.claim("time", &second).unwrap();
        // Nothing started yet: the name resolves to nothing.
        assert!(names.whereis("time").is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_a_name_nobody_starts_ends_at_its_timeout() {
        let names = ClientRegistry::new();
        assert!(names
            .wait_for("nobody", Duration::from_secs(5))
            .await
            .is_none());
        let slot = Slot::new();
        names.claim("idle", &slot).unwrap();
        assert!(names
            .wait_for("idle", Duration::from_secs(5))
            .await
            .is_none());
    }
}
