//! What `mcp serve` says on stderr of its servers without `--verbose`: one
//! line for each start failure, crash with the exit status, restart,
//! give-up, revive and return to service, naming the server. A return to
//! service is ready and listed again. The start line says which servers
//! are ready and which are not. It says only names, statuses and the
//! library's own reasons, which never hold a secret; never a command line
//! or an environment.

use std::collections::BTreeSet;

use crate::client::{LifecycleEvent, Status};
use crate::error::CloseReason;
use crate::host::{HostEvent, HostEvents, ServerSummary};

/// What was said so far.
#[derive(Default)]
pub(super) struct Said {
    /// The servers whose give-up was said. Their removal from the
    /// namespace is not news.
    gave_up: BTreeSet<String>,
    /// The servers whose end, a give-up or a failed start, was said.
    ended: BTreeSet<String>,
    /// The servers that went down by a crash or a give-up and have not
    /// served since: their next listing is news.
    down: BTreeSet<String>,
}

impl Said {
    /// Says the line of `event`, if it is worth one.
    pub(super) fn say(&mut self, event: &HostEvent) {
        if let Some(line) = self.line(event) {
            eprintln!("mcp serve: {line}");
        }
    }

    /// Whether the end of server `name`, a give-up or a failed start, was
    /// said.
    pub(super) fn told_end(&self, name: &str) -> bool {
        self.ended.contains(name)
    }

    /// Says the line of each event of `events` until the host stops.
    pub(super) async fn go_on(mut self, mut events: HostEvents) {
        while let Some(event) = events.recv().await {
            self.say(&event);
        }
    }

    fn line(&mut self, event: &HostEvent) -> Option<String> {
        match event {
            HostEvent::Lifecycle { server, event } => match event {
                // Stopped or restarted by the gateway itself: no news.
                LifecycleEvent::Closed {
                    reason: CloseReason::ClientClosed,
                    ..
                } => None,
                LifecycleEvent::Closed {
                    pid, reason, exit, ..
                } => {
                    self.down.insert(server.clone());
                    let pid = pid.map(|p| format!(", pid {p}")).unwrap_or_default();
                    Some(match exit.or_else(|| reason.exit_status()) {
                        Some(exit) => format!("server {server} exited ({exit}{pid})"),
                        None => format!("server {server} closed ({reason}{pid})"),
                    })
                }
                LifecycleEvent::Restarting { attempt, delay, .. } => Some(format!(
                    "server {server} restarting (attempt {attempt}, in {} ms)",
                    delay.as_millis()
                )),
                LifecycleEvent::GaveUp { reason, .. } => {
                    self.gave_up.insert(server.clone());
                    self.ended.insert(server.clone());
                    self.down.insert(server.clone());
                    Some(format!("server {server} gave up: {reason}"))
                }
                _ => None,
            },
            // Its give-up was said: when it is tried again is news; a
            // start that failed is said here.
            HostEvent::Down {
                server,
                reason,
                next_try_in,
            } => {
                let again = format!(
                    "started again in {}",
                    crate::host::pause_in_words(*next_try_in)
                );
                self.down.insert(server.clone());
                if self.gave_up.remove(server) {
                    return Some(format!("server {server}: {again}"));
                }
                self.ended.insert(server.clone());
                Some(format!("server {server} {reason}; {again}"))
            }
            HostEvent::Reviving { server } => {
                self.down.insert(server.clone());
                Some(format!("server {server}: starting again after its pause"))
            }
            HostEvent::Listed { server, tools, .. } if self.down.remove(server) => {
                Some(format!("server {server} ready again ({tools} tools)"))
            }
            // A server that could not start at all: it has no lifecycle of
            // its own to say so.
            HostEvent::Removed { server, reason } => {
                if self.gave_up.remove(server) || !reason.starts_with(crate::host::COULD_NOT_START)
                {
                    return None;
                }
                self.ended.insert(server.clone());
                Some(format!("server {server} {reason}"))
            }
            _ => None,
        }
    }
}

/// `N of M servers ready: A, B; not ready: C (gave up); lazy: D`.
pub(super) fn servers(servers: &[ServerSummary], lazy: &[String]) -> String {
    let ready: Vec<&str> = servers
        .iter()
        .filter(|s| s.is_ready())
        .map(|s| s.name.as_str())
        .collect();
    let not: Vec<String> = servers
        .iter()
        .filter(|s| !s.is_ready())
        .map(|s| format!("{} ({})", s.name, status(&s.status)))
        .collect();
    let mut out = format!("{} of {} servers ready", ready.len(), servers.len());
    if !ready.is_empty() {
        out.push_str(": ");
        out.push_str(&ready.join(", "));
    }
    if !not.is_empty() {
        out.push_str("; not ready: ");
        out.push_str(&not.join(", "));
    }
    if !lazy.is_empty() {
        out.push_str("; lazy (started on first use): ");
        out.push_str(&lazy.join(", "));
    }
    out
}

fn status(status: &Status) -> &'static str {
    match status {
        Status::Starting | Status::Ready(_) => "starting",
        Status::Restarting { .. } => "restarting",
        Status::GaveUp(_) => "gave up",
        Status::Stopped => "stopped",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ChildExit;

    #[test]
    fn a_crash_a_restart_and_a_give_up_are_one_line_each_and_a_stop_none() {
        let mut said = Said::default();
        let life = |event| HostEvent::Lifecycle {
            server: "x".into(),
            event,
        };
        let crash = life(LifecycleEvent::Closed {
            name: "x".into(),
            pid: Some(7),
            reason: CloseReason::Exited(ChildExit::Code(3)),
            exit: Some(ChildExit::Code(3)),
        });
        assert_eq!(
            said.line(&crash).as_deref(),
            Some("server x exited (exit status 3, pid 7)")
        );
        let stop = life(LifecycleEvent::Closed {
            name: "x".into(),
            pid: Some(7),
            reason: CloseReason::ClientClosed,
            exit: None,
        });
        assert_eq!(said.line(&stop), None);
        let up = life(LifecycleEvent::GaveUp {
            name: "x".into(),
            reason: "too many restarts".into(),
        });
        assert!(said.line(&up).is_some());
        let removed = HostEvent::Removed {
            server: "x".into(),
            reason: format!("{}: nope", crate::host::COULD_NOT_START),
        };
        assert_eq!(said.line(&removed), None, "said once");
        assert_eq!(
            said.line(&removed).as_deref(),
            Some("server x could not start: nope")
        );
    }

    #[test]
    fn a_revive_is_said_when_due_and_begun_and_a_return_to_service_once() {
        let mut said = Said::default();
        let listed = |server: &str| HostEvent::Listed {
            server: server.into(),
            tools: 3,
            prompts: 0,
            resources: 0,
        };
        assert_eq!(said.line(&listed("x")), None, "a first listing is no news");
        let up = HostEvent::Lifecycle {
            server: "x".into(),
            event: LifecycleEvent::GaveUp {
                name: "x".into(),
                reason: "too many restarts".into(),
            },
        };
        assert!(said.line(&up).is_some());
        let down = |reason: &str| HostEvent::Down {
            server: "x".into(),
            reason: reason.into(),
            next_try_in: std::time::Duration::from_secs(60),
        };
        assert_eq!(
            said.line(&down("too many restarts")).as_deref(),
            Some("server x: started again in 60 s")
        );
        assert_eq!(
            said.line(&HostEvent::Reviving { server: "x".into() })
                .as_deref(),
            Some("server x: starting again after its pause")
        );
        let failed = format!("{}: nope", crate::host::COULD_NOT_START);
        assert_eq!(
            said.line(&down(&failed)).as_deref(),
            Some("server x could not start: nope; started again in 60 s")
        );
        assert_eq!(
            said.line(&listed("x")).as_deref(),
            Some("server x ready again (3 tools)")
        );
        assert_eq!(said.line(&listed("x")), None, "said once");
    }
}
