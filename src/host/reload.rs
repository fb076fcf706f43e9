//! Applying a config file read again: the servers whose entries changed
//! start again, added ones start, removed ones stop, the others are left
//! as they are.

use std::collections::BTreeSet;

use super::{Host, HostError};
use crate::config_file::ServersFile;

/// What [`Host::reload`] did, by server name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reload {
    /// Servers whose entry changed: stopped and started again.
    pub restarted: Vec<String>,
    /// New servers, started (or waiting for their first use).
    pub added: Vec<String>,
    /// Servers no longer in the file, stopped.
    pub removed: Vec<String>,
    /// Servers that could not be changed, with the reason.
    pub failed: Vec<(String, String)>,
}

impl Host {
    /// Applies a config file read again: servers whose entry changed stop
    /// and start again, added ones start (a `conduit.lazy` one waits for
    /// its first use), removed ones stop; the others, and their clients,
    /// are untouched. `previous` is the file as last applied (entries are
    /// compared by [`ServersFile::fingerprint`]).
    ///
    /// A server that cannot start stays in [`servers`](Self::servers),
    /// given up with its reason, as one of the first start does; the next
    /// reload tries it again even if its entry is the same. Returns once
    /// every stop is over and every start has begun (see
    /// [`add`](Self::add)).
    ///
    /// ```no_run
    /// # async fn demo(host: conduit_mcp::host::Host, before: conduit_mcp::config_file::ServersFile) -> Result<(), Box<dyn std::error::Error>> {
    /// use conduit_mcp::config_file::ServersFile;
    /// let now = ServersFile::load("servers.json")?;
    /// let done = host.reload(&before, &now).await;
    /// println!("restarted {:?}, added {:?}, removed {:?}", done.restarted, done.added, done.removed);
    /// # Ok(()) }
    /// ```
    ///
    /// Cancel safety: a dropped reload leaves the servers it had reached
    /// changed and the others as they were.
    pub async fn reload(&self, previous: &ServersFile, next: &ServersFile) -> Reload {
        let mut out = Reload::default();
        let names: BTreeSet<&String> = previous.servers.keys().chain(next.servers.keys()).collect();
        for name in names {
            let name = name.as_str();
            // One that never started is tried again, as new.
            let never_started = self.shared.never_started(name);
            let before = previous.fingerprint(name).filter(|_| !never_started);
            let in_host = self.shared.client(name).is_some()
                || self.is_lazy(name)
                || self.server(name).is_some();
            match (next.fingerprint(name), next.servers.get(name)) {
                (Some(after), Some(config)) => {
                    if before == Some(after) && in_host {
                        continue;
                    }
                    let revive_after = next.serve.get(name).and_then(|o| o.revive_after);
                    self.shared.set_revive_after(name, revive_after);
                    if in_host {
                        if let Err(e) = self.stop_one(name).await {
                            out.failed.push((name.to_owned(), e.to_string()));
                            continue;
                        }
                    }
                    let lazy = next.serve.get(name).is_some_and(|o| o.lazy);
                    let added = match lazy {
                        true => self.add_lazy(name, config.clone()),
                        false => self.add_kept(name, config.clone()).await,
                    };
                    match added {
                        Ok(()) if before.is_some() => out.restarted.push(name.to_owned()),
                        Ok(()) => out.added.push(name.to_owned()),
                        Err(e) => out.failed.push((name.to_owned(), e.to_string())),
                    }
                }
                _ if in_host => match self.stop_one(name).await {
                    Ok(()) => out.removed.push(name.to_owned()),
                    Err(e) => out.failed.push((name.to_owned(), e.to_string())),
                },
                _ => {}
            }
        }
        out
    }

    /// Removes `name` and waits until its processes are gone.
    async fn stop_one(&self, name: &str) -> Result<(), HostError> {
        self.remove(name)?.wait().await;
        Ok(())
    }
}
